# What runs is what was checked (issue 10, finding 1; docs/quald.md, "Pinned
# libraries"): the real quald, qual-run and qual-compile, compile-only (no
# GPU), with the real nvrtc (tests/tools/pin_test.py).
#
#   pin_link_swap     while a job is queued behind a hanging one, its
#                     candidate's link (in an allowed root) is retargeted to a
#                     crashing library in a world-writable folder, which
#                     submit refuses directly, and another job's candidate
#                     file is replaced by that library: the first job
#                     compiles the pinned bytes (pass, the start line's
#                     real_path and sha256 are nvrtc.alt's), the second is
#                     refused by its worker before anything loads them
#                     (fail, library_changed naming both hashes; no crash,
#                     no strike)
#   pin_strike_swap   after the start line of a job whose candidate (a link)
#                     crashes late, the link is swapped to nvrtc.alt: the
#                     strike is charged to the crashing library's hash, and
#                     nvrtc.alt's is never struck
#
# shim_crash_late (sleeps 2 s in its compile, then SIGSEGV) is built here,
# beside tests/rtc.cmake's shims. This file is read before rtc.cmake
# (alphabetically), so it sets the forwarded nvrtc's cache entry the same way.
set(QUAL_SHIM_REAL_NVRTC /usr/local/cuda/lib64/libnvrtc.so.13 CACHE FILEPATH
    "The real nvrtc the shim compilers forward to")
add_library(shim_crash_late SHARED
  ${CMAKE_CURRENT_SOURCE_DIR}/shims/shim_forward.c
  ${CMAKE_CURRENT_SOURCE_DIR}/shims/shim_crash_late.c)
target_compile_definitions(shim_crash_late PRIVATE
  SHIM_REAL_NVRTC="${QUAL_SHIM_REAL_NVRTC}")
target_link_libraries(shim_crash_late PRIVATE ${CMAKE_DL_LIBS})
target_compile_options(shim_crash_late PRIVATE -fno-sanitize=all)
set_target_properties(shim_crash_late PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/shims)

if(EXISTS /usr/local/cuda/lib64/libnvrtc.so.13 AND
   EXISTS /usr/local/cuda/lib64/libnvrtc.alt.so.13)
  foreach(scenario link_swap strike_swap)
    add_test(NAME pin_${scenario}
             COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/pin_test.py
                     --quald $<TARGET_FILE:quald>
                     --qualctl $<TARGET_FILE:qualctl>
                     --worker $<TARGET_FILE:qual-run>
                     --compile-helper $<TARGET_FILE:qual-compile>
                     --shim-crash $<TARGET_FILE:shim_crash>
                     --shim-crash-late $<TARGET_FILE:shim_crash_late>
                     --shim-hang $<TARGET_FILE:shim_hang>
                     --shim-oob $<TARGET_FILE:shim_oob>
                     --nvrtc /usr/local/cuda/lib64/libnvrtc.so.13
                     --nvrtc-alt /usr/local/cuda/lib64/libnvrtc.alt.so.13
                     ${scenario})
    set_tests_properties(pin_${scenario} PROPERTIES LABELS integration TIMEOUT 120)
  endforeach()
endif()
