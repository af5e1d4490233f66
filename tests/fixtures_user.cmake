# The user's own fixtures (fixtures/manifest.c, fixtures/user.c; docs/fixtures.md,
# "Your own fixtures"): the tolerance kinds and the differential check, and
# qual-run --fixtures without a GPU: broken manifests, misbehaving oracles, the
# example under examples/fixtures compiled with the real nvrtc and hiprtc, its
# oracle against a float64 re-computation, and the manifest's JSON Schema.
# tests/gpu/fixtures_user.sh runs the example on the GPU.

qual_unit_tests(test_fixtures_check ${CMAKE_CURRENT_SOURCE_DIR}/unit/fixtures/test_check.c
                LABEL unit LIBS qual_fixtures m)

qual_unit_tests(test_fixtures_user ${CMAKE_CURRENT_SOURCE_DIR}/unit/fixtures/test_user.c
                LABEL unit LIBS qual_fixtures m)
target_compile_definitions(test_fixtures_user PRIVATE
  USER_TEST_FIXTURES="${CMAKE_CURRENT_SOURCE_DIR}/data/fixtures")

qual_unit_tests(test_fixtures_manifest ${CMAKE_CURRENT_SOURCE_DIR}/unit/fixtures/test_manifest.c
                LABEL unit LIBS qual_fixtures m)

# rng.c built into the test with signed overflow trapping (no runtime
# library needed: an overflow is an illegal instruction).
qual_unit_tests(test_fixtures_rng ${CMAKE_CURRENT_SOURCE_DIR}/unit/fixtures/test_rng.c
                LABEL unit LIBS qual_oracles m)
target_compile_options(test_fixtures_rng PRIVATE -fsanitize=signed-integer-overflow
                       -fsanitize-undefined-trap-on-error)

find_file(QUAL_USER_NVRTC libnvrtc.so.13 PATHS /usr/local/cuda/lib64 NO_DEFAULT_PATH)
find_file(QUAL_USER_HIPRTC libamdhip64.so.5
          PATHS /usr/lib/x86_64-linux-gnu /opt/rocm/lib NO_DEFAULT_PATH)
if(SYSTEM_PYTHON)
  set(driver ${CMAKE_CURRENT_SOURCE_DIR}/tools/user_fixtures_test.py)
  foreach(t manifest schema oracle)
    add_test(NAME fixtures_user_${t}
             COMMAND ${SYSTEM_PYTHON} ${driver} ${t} $<TARGET_FILE:qual-run> ${PROJECT_SOURCE_DIR})
    set_tests_properties(fixtures_user_${t} PROPERTIES LABELS integration TIMEOUT 300)
  endforeach()
  if(QUAL_USER_NVRTC)
    set(hip "")
    if(QUAL_USER_HIPRTC)
      set(hip ${QUAL_USER_HIPRTC})
    endif()
    foreach(t oracles example oracle_user compile_error)
      add_test(NAME fixtures_user_${t}
               COMMAND ${SYSTEM_PYTHON} ${driver} ${t} $<TARGET_FILE:qual-run>
                       ${PROJECT_SOURCE_DIR} ${QUAL_USER_NVRTC} ${hip})
      set_tests_properties(fixtures_user_${t} PROPERTIES LABELS integration TIMEOUT 600
                           SKIP_RETURN_CODE 77)
    endforeach()
    set_tests_properties(fixtures_user_compile_error PROPERTIES
                         ENVIRONMENT "QUAL_TEST_SHIM_REJECT=$<TARGET_FILE:shim_hugelog>")
  endif()
endif()
