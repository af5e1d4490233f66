# The state directory end to end (tests/tools/store_test.py): a stalled
# state disk (an LD_PRELOAD shim, tests/shims/store_stall.c, that holds
# quald's writes and syncs while a flag file exists), a second quald on one
# state directory, a corrupt record in the middle of a finished job's log,
# and a planted 150 MB line. Compile-only slots with the real nvrtc (see
# tests/service.cmake): no GPU.
#
#   store_stall           status and list answer within 100 ms each during
#                         a multi-second stall; a submit is accepted only
#                         once its job is on disk; no line lost
#   store_second_daemon   the second quald exits nonzero naming the holder;
#                         the first's job ends with one verdict
#   store_corrupt_middle  restart keeps the verdict, says damaged, names the
#                         lost bytes
#   store_failed_sync      a failed log sync stops quald (status 3) with a
#                         message naming the job and the log's path
#   store_long_line       the 150 MB line is cut off with quald's VmHWM
#                         under 64 MB
#   store_start_listens   with whole reads of logs held, quald listens and
#                         answers; its check of finished logs ends after
#   store_history_rebuild history answers "incomplete" at once while
#                         summaries are rebuilt; summary.json made again

add_library(store_stall SHARED ${CMAKE_CURRENT_SOURCE_DIR}/shims/store_stall.c)
target_link_libraries(store_stall PRIVATE ${CMAKE_DL_LIBS})
# Interposes libc: never instrumented (the sanitizer build preloads it into
# an instrumented quald).
target_compile_options(store_stall PRIVATE -fno-sanitize=all)
set_target_properties(store_stall PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/shims)

if(EXISTS ${QUAL_SERVICE_NVRTC} AND EXISTS ${QUAL_SERVICE_NVRTC_ALT})
  foreach(scenario stall second_daemon corrupt_middle long_line failed_sync
                   start_listens history_rebuild)
    add_test(NAME store_${scenario}
             COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/store_test.py
                     --quald $<TARGET_FILE:quald>
                     --qualctl $<TARGET_FILE:qualctl>
                     --worker $<TARGET_FILE:qual-run>
                     --compile-helper $<TARGET_FILE:qual-compile>
                     --nvrtc ${QUAL_SERVICE_NVRTC}
                     --nvrtc-alt ${QUAL_SERVICE_NVRTC_ALT}
                     --stall-shim $<TARGET_FILE:store_stall>
                     ${scenario})
    set_tests_properties(store_${scenario} PROPERTIES LABELS integration TIMEOUT 120)
  endforeach()
endif()
