# quald's HTTP endpoint end to end (tests/tools/http_test.py): the real quald
# with --http on compile-only slots, real jobs (nvrtc against nvrtc.alt),
# Python's HTTP client, and the metrics read by Prometheus' own text-format
# parser (python3-prometheus-client).
#
#   http_api     the API against the control socket's answers, event streams
#                live and resumed, /metrics counters moved by two jobs, errors
#   http_unix    --http on a Unix socket path
#   http_access  another uid refused on TCP (sock_diag) and Unix (root only:
#                skipped otherwise)
#   http_stop    SIGTERM with an event stream open: quald exits 0
#   http_listen  what --http refuses
#   http_handover a stream opened mid-job: stored then live lines, each once
#   http_host    another Host (DNS rebinding) gets 421; its own names served
#   http_ids     one spelling per job; streams resumed past the end end
# The headless-Chromium test of the pages is tests/browser.cmake.
if(EXISTS ${QUAL_SERVICE_NVRTC} AND EXISTS ${QUAL_SERVICE_NVRTC_ALT})
  foreach(scenario api unix access stop listen handover host ids)
    add_test(NAME http_${scenario}
             COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/http_test.py
                     --quald $<TARGET_FILE:quald>
                     --qualctl $<TARGET_FILE:qualctl>
                     --worker $<TARGET_FILE:qual-run>
                     --compile-helper $<TARGET_FILE:qual-compile>
                     --nvrtc ${QUAL_SERVICE_NVRTC}
                     --nvrtc-alt ${QUAL_SERVICE_NVRTC_ALT}
                     ${scenario})
    set_tests_properties(http_${scenario} PROPERTIES LABELS integration TIMEOUT 120
                         SKIP_RETURN_CODE 77)
  endforeach()
endif()
