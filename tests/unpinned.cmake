# A job stored by a quald before pinned libraries is never run (issue 10;
# docs/quald.md, "Pinned libraries"): the real quald, qual-run and
# qual-compile, compile-only (no GPU), with the real nvrtc.alt
# (tests/tools/unpinned_test.py).
#
#   unpinned_queued   a queued job built from a finished job's files without
#                     the pin fields, its candidate's link retargeted to a
#                     crashing library in a world-writable folder: after
#                     quald starts it is done with the daemon's error (code
#                     usage, "stored without pinned libraries by an older
#                     quald: submit it again"), with no start line, nothing
#                     struck, and a warning in quald's log
if(EXISTS /usr/local/cuda/lib64/libnvrtc.alt.so.13)
  add_test(NAME unpinned_queued
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/unpinned_test.py
                   --quald $<TARGET_FILE:quald>
                   --qualctl $<TARGET_FILE:qualctl>
                   --worker $<TARGET_FILE:qual-run>
                   --compile-helper $<TARGET_FILE:qual-compile>
                   --nvrtc-alt /usr/local/cuda/lib64/libnvrtc.alt.so.13
                   --shim-crash $<TARGET_FILE:shim_crash>)
  set_tests_properties(unpinned_queued PROPERTIES LABELS integration TIMEOUT 120)
endif()
