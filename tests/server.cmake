# quald's server side: request parsing (data-driven, tests/data/requests/)
# and the server in-process on a temporary socket, with a scripted stand-in
# for the jobs module (tests/unit/daemon/test_server.c) so that every path
# of the relay (follow, watch resume, slow clients) is driven
# deterministically.
set(QUAL_DAEMON_DIR ${PROJECT_SOURCE_DIR}/daemon)

qual_unit_tests(test_request ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon/test_request.c
                LABEL unit SOURCES ${QUAL_DAEMON_DIR}/request.c
                        ${PROJECT_SOURCE_DIR}/compile/rtc_mode.c
                LIBS qual_proto qual_common PkgConfig::JANSSON)
target_compile_definitions(test_request PRIVATE
  REQUEST_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data/requests")

# test_server.c builds the server's own files (server.c, conn.c, fanout.c,
# looking at a connection's state through server_internal.h) and defines the
# jobs module itself.
qual_unit_tests(test_server ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon/test_server.c
                LABEL unit TIMEOUT 120
                SOURCES ${QUAL_DAEMON_DIR}/server.c ${QUAL_DAEMON_DIR}/conn.c
                        ${QUAL_DAEMON_DIR}/fanout.c ${QUAL_DAEMON_DIR}/replycap.c
                        ${QUAL_DAEMON_DIR}/peer.c
                        ${QUAL_DAEMON_DIR}/listen.c
                        ${QUAL_DAEMON_DIR}/request.c ${QUAL_DAEMON_DIR}/frame.c
                        ${PROJECT_SOURCE_DIR}/compile/rtc_mode.c
                        ${QUAL_DAEMON_DIR}/sd.c ${QUAL_DAEMON_DIR}/oplog.c
                LIBS qual_proto qual_common OpenSSL::Crypto PkgConfig::LIBUV PkgConfig::JANSSON)
add_dependencies(test_server quald)
target_compile_definitions(test_server PRIVATE QUAL_VERSION="${PROJECT_VERSION}"
  QUALD_BIN="$<TARGET_FILE:quald>"
  FAKE_WORKER="${CMAKE_CURRENT_SOURCE_DIR}/tools/fake_worker.sh"
  FAKE_COMPILE="${CMAKE_CURRENT_SOURCE_DIR}/tools/fake_compile.sh")
