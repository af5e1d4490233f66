# What an older quald stored and what a candidate leaves behind (issue 10):
# the real quald, qual-run and qual-compile, compile-only (no GPU), with the
# real nvrtc and nvrtc.alt (tests/tools/leftover_test.py).
#
#   leftover_unpinned  a queued job built from a finished job's files without
#                      the pin fields, its candidate's link retargeted to a
#                      crashing library in a world-writable folder: after
#                      quald starts it is done with the daemon's error (code
#                      usage, "stored without pinned libraries by an older
#                      quald: submit it again"), with no start line, nothing
#                      struck, and a warning in quald's log
#   leftover_leaver    a candidate whose constructor, in quald's identify
#                      child, leaves an orphan in that child's process group
#                      (shim_leaver): the submit is accepted and the identify
#                      child lives through the sweep that kills the orphan
#                      (alone, not the identify child's group), the job ends
#                      with the engine's verdict, nothing is left below quald
#
# shim_leaver is built here, beside tests/rtc.cmake's shims; the real nvrtc
# it forwards to is set the same way (this file is read before rtc.cmake).
set(QUAL_SHIM_REAL_NVRTC /usr/local/cuda/lib64/libnvrtc.so.13 CACHE FILEPATH
    "The real nvrtc the shim compilers forward to")
add_library(shim_leaver SHARED
  ${CMAKE_CURRENT_SOURCE_DIR}/shims/shim_forward.c
  ${CMAKE_CURRENT_SOURCE_DIR}/shims/shim_leaver.c)
target_compile_definitions(shim_leaver PRIVATE SHIM_REAL_NVRTC="${QUAL_SHIM_REAL_NVRTC}")
target_link_libraries(shim_leaver PRIVATE ${CMAKE_DL_LIBS})
target_compile_options(shim_leaver PRIVATE -fno-sanitize=all)
set_target_properties(shim_leaver PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/shims)

if(EXISTS /usr/local/cuda/lib64/libnvrtc.so.13 AND
   EXISTS /usr/local/cuda/lib64/libnvrtc.alt.so.13)
  foreach(scenario unpinned leaver)
    add_test(NAME leftover_${scenario}
             COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/leftover_test.py
                     --quald $<TARGET_FILE:quald>
                     --qualctl $<TARGET_FILE:qualctl>
                     --worker $<TARGET_FILE:qual-run>
                     --compile-helper $<TARGET_FILE:qual-compile>
                     --nvrtc /usr/local/cuda/lib64/libnvrtc.so.13
                     --nvrtc-alt /usr/local/cuda/lib64/libnvrtc.alt.so.13
                     --shim-crash $<TARGET_FILE:shim_crash>
                     --shim-leaver $<TARGET_FILE:shim_leaver>
                     ${scenario})
    set_tests_properties(leftover_${scenario} PROPERTIES LABELS integration TIMEOUT 120)
  endforeach()
endif()
