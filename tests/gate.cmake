# No silent gate, and quald's smaller edges (issue 10, findings 8 and 9):
# tests/tools/gate_test.py drives the real quald with the real qualctl
# (service_test.py's harness), compile-only with the real nvrtc.
#
#   gate_untimed         compile-only slots: submit without --compile-only
#                        exits 6 and says why; with it, 0
#   gate_devices_auto    quald's default --devices auto: a fake health worker
#                        reports GPUs; one slot per healthy one; none found:
#                        compile-only slots, said in the start line
#   gate_sighup          SIGHUP mid-job: exit 0, no socket, job interrupted
#   gate_control_chars   a library path with ESC and a newline is printed
#                        escaped by submit, list, show, status and watch
#   gate_hang_job_limit  a compile hanging past --job-timeout: candidate fail
#                        (2), baseline error (3)
#   gate_artifact_cache  workers share STATE/cache: a job run again is all
#                        cached; quald --no-cache: none
if(EXISTS ${QUAL_SERVICE_NVRTC} AND EXISTS ${QUAL_SERVICE_NVRTC_ALT})
  foreach(scenario untimed devices_auto sighup control_chars hang_job_limit
                   artifact_cache)
    add_test(NAME gate_${scenario}
             COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/gate_test.py
                     --quald $<TARGET_FILE:quald>
                     --qualctl $<TARGET_FILE:qualctl>
                     --worker $<TARGET_FILE:qual-run>
                     --compile-helper $<TARGET_FILE:qual-compile>
                     --shim-crash $<TARGET_FILE:shim_crash>
                     --shim-hang $<TARGET_FILE:shim_hang>
                     --shim-noabi $<TARGET_FILE:shim_noabi>
                     --nvrtc ${QUAL_SERVICE_NVRTC}
                     --nvrtc-alt ${QUAL_SERVICE_NVRTC_ALT}
                     --workdir ${CMAKE_CURRENT_BINARY_DIR}/out/gate
                     ${scenario})
    set_tests_properties(gate_${scenario} PROPERTIES LABELS integration TIMEOUT 120)
  endforeach()
endif()
