# The library policy (daemon/policy.c): which compiler libraries quald
# accepts. Temporary folders live in the build folder (under /tmp every path
# would be refused: /tmp is world-writable).
qual_unit_tests(test_policy ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon/test_policy.c
                LABEL unit TIMEOUT 30 SOURCES ${PROJECT_SOURCE_DIR}/daemon/policy.c
                LIBS qual_common)
target_compile_definitions(test_policy PRIVATE
  POLICY_TEST_DIR="${CMAKE_CURRENT_BINARY_DIR}")

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
