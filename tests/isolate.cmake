# Jobs cannot reach each other (issue 28; docs/service.md, "Trust model"):
# tests/tools/isolate_test.py through the real quald, qual-run and
# qual-compile, compile-only.
#
#   isolate_hunter  quald as root with --compile-users and two compile-only
#                   slots; a hostile candidate (tests/shims/shim_hunter.c)
#                   signals and plants into every qual-compile and qual-run
#                   it finds while two other jobs run: their verdicts are
#                   unchanged and no strike lands on their library (skipped
#                   unless ctest runs as root)
#   isolate_argv    no /proc/PID/cmdline below quald holds a job's id, case,
#                   option, sha256, library path or folder
#   isolate_argv_compile_users  the same with --compile-users (as root)
#   isolate_refusals  --compile-users refuses what gives no separation
#   isolate_worker  qual-run sent SIGSEGV by another process ends by SIGKILL
#                   (no crash, no strike), saying so
#
# Each test as root has a range of compile users of its own (ctest -j runs
# them at once, and the hunter signals whatever its uid may).
#
# A compile child killed by another process's signal is no crash:
# rtc_shim_killed (tests/unit/compile/test_rtc.c).

# Included before tests/rtc.cmake and tests/service.cmake (alphabetically).
set(QUAL_ISOLATE_NVRTC /usr/local/cuda/lib64/libnvrtc.so.13 CACHE FILEPATH
    "The real nvrtc the isolation tests qualify")

if(EXISTS ${QUAL_ISOLATE_NVRTC})
  set(isolate_common
      --quald $<TARGET_FILE:quald> --qualctl $<TARGET_FILE:qualctl>
      --worker $<TARGET_FILE:qual-run> --compile-helper $<TARGET_FILE:qual-compile>
      --nvrtc ${QUAL_ISOLATE_NVRTC} --shim-slow $<TARGET_FILE:shim_slow>)
  add_test(NAME isolate_hunter
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/isolate_test.py hunter
                   ${isolate_common} --shim-hunter $<TARGET_FILE:shim_hunter>
                   --compile-users 61900-61902)
  add_test(NAME isolate_argv
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/isolate_test.py argv
                   ${isolate_common})
  add_test(NAME isolate_argv_compile_users
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/isolate_test.py argv
                   ${isolate_common} --compile-users 61910-61912)
  set_tests_properties(isolate_hunter isolate_argv isolate_argv_compile_users PROPERTIES
                       LABELS integration TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()
if(EXISTS ${QUAL_ISOLATE_NVRTC})
  add_test(NAME isolate_worker
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/isolate_test.py worker
                   ${isolate_common} --shim-hang $<TARGET_FILE:shim_hang>)
  set_tests_properties(isolate_worker PROPERTIES LABELS integration TIMEOUT 120)
endif()
if(EXISTS ${QUAL_ISOLATE_NVRTC})
  add_test(NAME isolate_refusals
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/isolate_test.py refusals
                   ${isolate_common})
  set_tests_properties(isolate_refusals PROPERTIES LABELS integration TIMEOUT 60
                       SKIP_RETURN_CODE 77)
endif()
