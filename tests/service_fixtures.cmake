# The user's own fixtures end to end through the service
# (tests/tools/service_fixtures_test.py): the real quald with its real worker
# qual-run on a compile-only slot, driven by the real qualctl, a copy of
# examples/fixtures/rmsnorm_f16 under an --allow-root of quald's, nvrtc 13.0
# against its alt copy. Skipped (77) when those libraries are missing.
#
#   service_fixtures_example       qualctl submit --fixtures DIR --compile-only
#                                  exits 0; the stored lines hold the example's
#                                  two case lines (family, specialization,
#                                  oracle kind host) and validate
#   service_fixtures_oracle_crash  an oracle killed by SIGSEGV: oracle_failed
#                                  error lines, verdict error (exit 3), the
#                                  built-in cases still compile
#   service_fixtures_bad_manifest  an unknown manifest field: an error line
#                                  naming the file and the field, verdict
#                                  error; the next job passes
#
# tests/gpu/fixtures_user.sh runs the same job on a GPU slot.
if(SYSTEM_PYTHON)
  foreach(scenario example oracle_crash bad_manifest)
    add_test(NAME service_fixtures_${scenario}
             COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/service_fixtures_test.py
                     --quald $<TARGET_FILE:quald>
                     --qualctl $<TARGET_FILE:qualctl>
                     --worker $<TARGET_FILE:qual-run>
                     --compile-helper $<TARGET_FILE:qual-compile>
                     --nvrtc /usr/local/cuda/lib64/libnvrtc.so.13
                     --nvrtc-alt /usr/local/cuda/lib64/libnvrtc.alt.so.13
                     --source-dir ${PROJECT_SOURCE_DIR}
                     ${scenario})
    # The driver stops itself at 180 s (full compile-only jobs, about 5 s each here).
    set_tests_properties(service_fixtures_${scenario} PROPERTIES LABELS integration
                         TIMEOUT 240 SKIP_RETURN_CODE 77)
  endforeach()
endif()

# The service step of tests/gpu/fixtures_user.sh itself, on a compile-only
# slot (QUAL_FIXTURES_SERVICE_COMPILE_ONLY=1), so that the GPU suite's script
# is run in CI too: quald and qualctl of this build, verdict not_timed, the
# example's two case lines, the stored lines the streamed ones.
if(EXISTS /usr/local/cuda/lib64/libnvrtc.so.13 AND EXISTS /usr/local/cuda/lib64/libnvrtc.alt.so.13)
  add_test(NAME service_fixtures_gpu_script
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpu/fixtures_user.sh
                   ${CMAKE_CURRENT_BINARY_DIR}/service_fixtures_gpu_script ${CMAKE_BINARY_DIR})
  set_tests_properties(service_fixtures_gpu_script PROPERTIES LABELS integration TIMEOUT 240
                       ENVIRONMENT QUAL_FIXTURES_SERVICE_COMPILE_ONLY=1)
endif()
