# Crash safety of quald's state directory (issue 4): the real quald, killed
# with SIGKILL at random moments (seeded) while at least 100 compile-only
# jobs are submitted and run on two slots, and restarted on the same state
# each time (tests/tools/crash_test.py says what it checks: every
# acknowledged job stored and ending with exactly one verdict, every log a
# whole run of valid checked records with seq 0..n-1, show agreeing with
# the files, no process outliving the daemon). Compile-only: no GPU, but the
# real nvrtc (the service tests' two, tests/service.cmake). About a minute on
# the 2-core CI machine.
#
# The store's own unit tests (checks, torn tails, the fatal hook) are
# test_store's, registered in tests/jobs.cmake.

# The real nvrtc pair: tests/CMakeLists.txt.
if(EXISTS ${QUAL_SERVICE_NVRTC} AND EXISTS ${QUAL_SERVICE_NVRTC_ALT})
  add_test(NAME crash_sigkill
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/crash_test.py
                   --quald $<TARGET_FILE:quald>
                   --qualctl $<TARGET_FILE:qualctl>
                   --worker $<TARGET_FILE:qual-run>
                   --compile-helper $<TARGET_FILE:qual-compile>
                   --nvrtc ${QUAL_SERVICE_NVRTC}
                   --nvrtc-alt ${QUAL_SERVICE_NVRTC_ALT}
                   --jobs 100)
  # The driver stops itself at 150 s.
  set_tests_properties(crash_sigkill PROPERTIES LABELS integration TIMEOUT 200)
endif()
