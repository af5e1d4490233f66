# Fixture directories through the service (tests/tools/fixture_dirs_test.py):
# the real quald and qualctl with the fake worker (tests/tools/fake_worker.sh,
# which echoes the options quald gives it), compile-only slots; the submit
# checks load the real nvrtc in the real compile helper.
#
#   fixture_dirs_argv     a directory named through a symlink reaches the
#                         worker as --fixtures REALPATH (each, in order);
#                         request.json stores the real paths; qualctl show and
#                         list say them; a job without any gets none
#   fixture_dirs_refused  outside the allowed roots, world-writable, without
#                         fixture.json, not a directory, missing, nine of
#                         them, one twice: qualctl exits 4 with quald's
#                         message naming the directory; no job is made
#   fixture_dirs_recheck  a directory made world-writable while its job is
#                         queued: the job ends when it would start, with an
#                         error line (code usage) and an error verdict naming
#                         it, and no worker runs
if(EXISTS /usr/local/cuda/lib64/libnvrtc.so.13)
  foreach(scenario argv refused recheck)
    add_test(NAME fixture_dirs_${scenario}
             COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/fixture_dirs_test.py
                     --quald $<TARGET_FILE:quald>
                     --qualctl $<TARGET_FILE:qualctl>
                     --worker ${CMAKE_CURRENT_SOURCE_DIR}/tools/fake_worker.sh
                     --compile-helper $<TARGET_FILE:qual-compile>
                     --nvrtc /usr/local/cuda/lib64/libnvrtc.so.13
                     ${scenario})
    set_tests_properties(fixture_dirs_${scenario} PROPERTIES LABELS integration TIMEOUT 120)
  endforeach()
endif()
