# The daemon's job queue and state directory (daemon/jobs.c, daemon/store.c):
# unit tests with a real libuv loop and fake workers (tests/tools/fake_worker.sh).

# The store alone: its own source and the operator's log, nothing else of
# the daemon.
add_executable(test_store ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_store.c
               ${PROJECT_SOURCE_DIR}/daemon/store.c ${PROJECT_SOURCE_DIR}/daemon/oplog.c)
target_link_libraries(test_store PRIVATE qual_common PkgConfig::JANSSON PkgConfig::CMOCKA
                      OpenSSL::Crypto)
foreach(t ids create_and_state log_append_read log_torn_tail log_flipped_byte
          log_garbage log_repair_after_verdict log_legacy log_line_shape
          fatal_write fatal_sync fatal_state fatal_log_open create_not_fatal
          fatal_default scan open_errors)
  add_test(NAME store_${t} COMMAND test_store ${t})
  set_tests_properties(store_${t} PROPERTIES LABELS unit TIMEOUT 30)
endforeach()

# Jobs: a real loop, fake workers and a fake compile helper (the folder name
# of the candidate library picks what they do), and the real qual-compile
# once, on shim_noabi (built by tests/rtc.cmake) and the real nvrtc when
# present.
add_executable(test_jobs ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_jobs.c)
target_link_libraries(test_jobs PRIVATE qual_daemon PkgConfig::CMOCKA)
add_dependencies(test_jobs qual-compile shim_noabi)
target_compile_definitions(test_jobs PRIVATE
  JOBS_TEST_WORKER="${CMAKE_CURRENT_SOURCE_DIR}/tools/fake_worker.sh"
  JOBS_TEST_HEALTH_WORKER="${CMAKE_CURRENT_SOURCE_DIR}/tools/fake_health_worker.sh"
  JOBS_TEST_HELPER="${CMAKE_CURRENT_SOURCE_DIR}/tools/fake_compile.sh"
  JOBS_REAL_HELPER="$<TARGET_FILE:qual-compile>"
  JOBS_TEST_ELF="$<TARGET_FILE:shim_noabi>"
  JOBS_TEST_NVRTC="/usr/local/cuda/lib64/libnvrtc.so.13")
set(QUAL_JOBS_TESTS relay_and_log worker_args one_slot_serial two_slots_parallel
    cancel crash blame timeout exits odd_lines sigkill recovery submit_refusals
    submit_real_helper close_running close_during_check spawn_failure close_idle
    log_limit policy quarantine crash_code health_pass health_fail)
foreach(t ${QUAL_JOBS_TESTS})
  add_test(NAME jobs_${t} COMMAND test_jobs ${t})
  set_tests_properties(jobs_${t} PROPERTIES LABELS unit TIMEOUT 30)
endforeach()
