# quald's server side: request parsing (data-driven, tests/data/requests/)
# and the server in-process on a temporary socket, with a scripted stand-in
# for the jobs module (tests/unit/test_server.c) so that every path of the
# relay (follow, watch resume, slow clients) is driven deterministically.
set(QUAL_DAEMON_DIR ${PROJECT_SOURCE_DIR}/daemon)

add_executable(test_request ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_request.c
               ${QUAL_DAEMON_DIR}/request.c)
target_link_libraries(test_request PRIVATE qual_common PkgConfig::JANSSON PkgConfig::CMOCKA)
target_compile_definitions(test_request PRIVATE
  REQUEST_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data/requests")
add_test(NAME request_unit COMMAND test_request)
set_tests_properties(request_unit PROPERTIES LABELS unit)

# test_server.c builds the server's own files (server.c, conn.c, fanout.c,
# looking at a connection's state through server_internal.h) and defines the
# jobs module itself.
add_executable(test_server ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_server.c
               ${QUAL_DAEMON_DIR}/server.c ${QUAL_DAEMON_DIR}/conn.c
               ${QUAL_DAEMON_DIR}/fanout.c
               ${QUAL_DAEMON_DIR}/request.c ${QUAL_DAEMON_DIR}/frame.c
               ${QUAL_DAEMON_DIR}/sd.c)
target_link_libraries(test_server PRIVATE qual_common OpenSSL::Crypto PkgConfig::LIBUV PkgConfig::JANSSON
                      PkgConfig::CMOCKA)
add_dependencies(test_server quald)
target_compile_definitions(test_server PRIVATE QUAL_VERSION="${PROJECT_VERSION}"
  QUALD_BIN="$<TARGET_FILE:quald>"
  FAKE_WORKER="${CMAKE_CURRENT_SOURCE_DIR}/tools/fake_worker.sh"
  FAKE_COMPILE="${CMAKE_CURRENT_SOURCE_DIR}/tools/fake_compile.sh")
add_test(NAME server_unit COMMAND test_server)
set_tests_properties(server_unit PROPERTIES LABELS unit TIMEOUT 120)
