# The library policy (daemon/policy.c): which compiler libraries quald
# accepts. Temporary folders live in the build folder (under /tmp every path
# would be refused: /tmp is world-writable).
add_executable(test_policy ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_policy.c
               ${PROJECT_SOURCE_DIR}/daemon/policy.c)
target_link_libraries(test_policy PRIVATE qual_common PkgConfig::CMOCKA)
target_compile_definitions(test_policy PRIVATE
  POLICY_TEST_DIR="${CMAKE_CURRENT_BINARY_DIR}")
foreach(t path_under good outside symlink_out symlink_in world_writable_file
          world_writable_folder group_writable other_owner not_regular
          root_resolve args_take)
  add_test(NAME policy_${t} COMMAND test_policy ${t})
  set_tests_properties(policy_${t} PROPERTIES LABELS unit TIMEOUT 30)
endforeach()

# Worker confinement (common/confine.c): rlimits and a network namespace.
add_executable(test_confine ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_confine.c)
target_link_libraries(test_confine PRIVATE qual_common PkgConfig::CMOCKA)
foreach(t confined unconfined)
  add_test(NAME confine_${t} COMMAND test_confine ${t})
  set_tests_properties(confine_${t} PROPERTIES LABELS unit TIMEOUT 30)
endforeach()

# Quarantine through the real service (compile-only, no GPU): three jobs with
# the crashing shim as candidate, then a refusal naming its hash; cleared,
# accepted again.
if(EXISTS /usr/local/cuda/lib64/libnvrtc.so.13)
  add_test(NAME service_quarantine
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/quarantine_test.py
                   --quald $<TARGET_FILE:quald>
                   --qualctl $<TARGET_FILE:qualctl>
                   --worker $<TARGET_FILE:qual-run>
                   --compile-helper $<TARGET_FILE:qual-compile>
                   --shim-crash $<TARGET_FILE:shim_crash>
                   --nvrtc /usr/local/cuda/lib64/libnvrtc.so.13)
  set_tests_properties(service_quarantine PROPERTIES LABELS integration TIMEOUT 120)
endif()
