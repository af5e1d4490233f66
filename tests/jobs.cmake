# The daemon's job queue and state directory (daemon/jobs*.c, daemon/store*.c):
# unit tests with a real libuv loop and fake workers (tests/tools/fake_worker.sh).

# The store alone: its own source and the operator's log, nothing else of
# the daemon.
qual_unit_tests(test_store ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon/test_store.c
                LABEL unit TIMEOUT 30
                SOURCES ${PROJECT_SOURCE_DIR}/daemon/store.c ${PROJECT_SOURCE_DIR}/daemon/store_log.c
                        ${PROJECT_SOURCE_DIR}/daemon/oplog.c
                LIBS qual_proto qual_common PkgConfig::JANSSON OpenSSL::Crypto)

# Jobs: a real loop, fake workers and a fake compile helper (the folder name
# of the candidate library picks what they do), and the real qual-compile
# once, on shim_noabi (built by tests/rtc.cmake) and the real nvrtc when
# present.
qual_unit_tests(test_jobs ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon/test_jobs.c
                LABEL unit TIMEOUT 30 LIBS qual_daemon)
add_dependencies(test_jobs qual-compile shim_noabi)
target_compile_definitions(test_jobs PRIVATE
  JOBS_TEST_WORKER="${CMAKE_CURRENT_SOURCE_DIR}/tools/fake_worker.sh"
  JOBS_TEST_HEALTH_WORKER="${CMAKE_CURRENT_SOURCE_DIR}/tools/fake_health_worker.sh"
  JOBS_TEST_HELPER="${CMAKE_CURRENT_SOURCE_DIR}/tools/fake_compile.sh"
  JOBS_REAL_HELPER="$<TARGET_FILE:qual-compile>"
  JOBS_TEST_ELF="$<TARGET_FILE:shim_noabi>"
  JOBS_TEST_NVRTC="/usr/local/cuda/lib64/libnvrtc.so.13")
