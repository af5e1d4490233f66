# Who may talk to quald (issue 4): the real quald and the real qualctl.
# access_peer creates two system users and a group (it needs root: skipped,
# exit 77, otherwise) and runs qualctl as each over the Unix socket; access_tcp
# checks the TCP token and the refusal of HTTP; access_token_file checks that
# quald will not start TCP without a token file of mode 0640 or stricter;
# access_flood checks that refused connections held open (TCP, and with root
# the Unix socket and --http as a user that is not allowed) displace no one.
# No GPU, no compiler: quald's worker is /bin/false and no job is submitted.
# The server's limits (watchers, queue, slow readers) are server_* (test_server.c).
foreach(s peer tcp token_file flood)
  add_test(NAME access_${s}
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/access_test.py
                   --quald $<TARGET_FILE:quald> --qualctl $<TARGET_FILE:qualctl> ${s})
  set_tests_properties(access_${s} PROPERTIES LABELS integration TIMEOUT 120
                       SKIP_RETURN_CODE 77)
endforeach()
