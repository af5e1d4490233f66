# The service end to end: the real quald, driven by the real qualctl
# (tests/tools/service_test.py). Each entry starts its own quald on a socket
# and state directory in a fresh temporary folder, waits until `qualctl
# status` answers, runs one scenario, and stops quald with SIGTERM, checking
# that it exits 0. Compile-only slots: no GPU is needed, but the real nvrtc
# is (the jobs compile with it), and the shim compilers tests/rtc.cmake
# builds.
#
#   service_full          nine cases, nvrtc against nvrtc.alt: exit 0, valid
#                         lines with job and seq, not_timed; the summary table
#   service_concurrent    two submits at once on one slot: both pass, their
#                         workers never overlap
#   service_watch         a watcher sees both jobs' lines, in order, seq
#                         without gaps, ending with their verdicts
#   service_cancel        cancel a queued and a running job: cancelled; the
#                         next job passes
#   service_sigkill       SIGKILL quald mid-job, restart: interrupted, the
#                         queued jobs run, no acknowledged line lost, no worker
#                         or compile child outlives the daemon
#   service_shim_crash    crashing candidate: fail (2); as baseline: error (3)
#   service_shim_hang     hanging candidate (2 s compile limit): fail (2)
#   service_bad_requests  each bad request gets one refused line; quald keeps
#                         serving; qualctl exits 4 with quald's message
#   service_history       three labelled jobs: labels in list and show;
#                         history by label, by case, oldest first, limit;
#                         export --csv (parsed) and --lnt (LNT's shape)
#   service_retention     --keep-jobs 2: the oldest of three pruned, show
#                         says unknown job, a new id after a restart
#   service_parse_once    each job line parsed once in quald and once in
#                         qualctl (jansson's parses counted by count_loads)
#
# The shim libraries are named by generator expressions, which resolve when
# the build system is generated, so this file does not depend on being
# included after tests/rtc.cmake (it is, alphabetically).

set(QUAL_SERVICE_HIPRTC /usr/lib/x86_64-linux-gnu/libamdhip64.so.5 CACHE FILEPATH
    "A hiprtc, for the mismatched-abi refusal (skipped when missing)")

# service_parse_once: each line of a job parsed once in quald and once in
# qualctl (proto/line.h), counted by tests/shims/count_loads.c, an
# LD_PRELOAD library that records every json_loadb and json_loads call.
add_library(count_loads SHARED ${CMAKE_CURRENT_SOURCE_DIR}/shims/count_loads.c)
target_include_directories(count_loads PRIVATE ${JANSSON_INCLUDE_DIRS})
target_link_libraries(count_loads PRIVATE ${CMAKE_DL_LIBS})

if(EXISTS ${QUAL_SERVICE_NVRTC} AND EXISTS ${QUAL_SERVICE_NVRTC_ALT})
  foreach(scenario full journal concurrent watch cancel sigkill shim_crash shim_hang bad_requests
                   history retention parse_once)
    add_test(NAME service_${scenario}
             COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/service_test.py
                     --quald $<TARGET_FILE:quald>
                     --qualctl $<TARGET_FILE:qualctl>
                     --worker $<TARGET_FILE:qual-run>
                     --compile-helper $<TARGET_FILE:qual-compile>
                     --shim-crash $<TARGET_FILE:shim_crash>
                     --shim-hang $<TARGET_FILE:shim_hang>
                     --shim-noabi $<TARGET_FILE:shim_noabi>
                     --nvrtc ${QUAL_SERVICE_NVRTC}
                     --nvrtc-alt ${QUAL_SERVICE_NVRTC_ALT}
                     --hiprtc ${QUAL_SERVICE_HIPRTC}
                     --count-loads $<TARGET_FILE:count_loads>
                     ${scenario})
    # Each scenario stays under a minute (the driver stops itself at 100 s).
    set_tests_properties(service_${scenario} PROPERTIES LABELS integration TIMEOUT 120)
  endforeach()
endif()

