# Hostile TCP clients against local ones (issue 10, finding 3): the real
# quald and the real qualctl (tests/tools/flood_test.py says what each
# checks). flood_idle: 100 idle TCP connections, a Unix client served within
# 1 s; flood_slow_auth: unfinished 1 MiB auth lines and silent clients,
# closed at the byte cap and the auth deadline, quald's peak RSS bounded;
# flood_nofile: quald at a low open file limit, flooded past it, logs the
# accept error and keeps serving its Unix socket. No GPU, no compiler:
# quald's worker is /bin/false and no job is submitted.
foreach(s idle slow_auth nofile)
  add_test(NAME flood_${s}
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/flood_test.py
                   --quald $<TARGET_FILE:quald> --qualctl $<TARGET_FILE:qualctl> ${s})
  set_tests_properties(flood_${s} PROPERTIES LABELS integration TIMEOUT 120)
endforeach()
