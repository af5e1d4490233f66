# The submit's hash is quald's, not the hostile library's (issue 10; the
# submit checks, daemon/submit.c): the real quald, qual-run and
# qual-compile, compile-only (no GPU), with the real nvrtc behind
# shim_pinforge (tests/shims/shim_pinforge.c), whose constructor replaces
# its identify child's pin report (tests/tools/pinforge_test.py).
#
#   pinforge_fifo         the report becomes a FIFO: quald answers
#                         `qualctl status` within 1 s all along, and the
#                         submit is accepted with the real sha256 of the
#                         file in request.json
#   pinforge_hash         the report claims a fake sha256: the job's stored
#                         candidate_sha256 is the file's real one
#   pinforge_quarantined  the library's real hash is quarantined
#                         (quarantine.json before quald starts): the submit
#                         is refused, naming it, and the library was never
#                         loaded (its constructor recorded nothing)
#
# Both variants are built here, beside tests/rtc.cmake's shims. This file is
# read before rtc.cmake (alphabetically), so it sets the forwarded nvrtc's
# cache entry the same way.
set(QUAL_SHIM_REAL_NVRTC /usr/local/cuda/lib64/libnvrtc.so.13 CACHE FILEPATH
    "The real nvrtc the shim compilers forward to")
foreach(variant fifo hash)
  add_library(shim_pinforge_${variant} SHARED
    ${CMAKE_CURRENT_SOURCE_DIR}/shims/shim_forward.c
    ${CMAKE_CURRENT_SOURCE_DIR}/shims/shim_pinforge.c)
  if(variant STREQUAL "fifo")
    set(fifo 1)
  else()
    set(fifo 0)
  endif()
  target_compile_definitions(shim_pinforge_${variant} PRIVATE
    SHIM_REAL_NVRTC="${QUAL_SHIM_REAL_NVRTC}" SHIM_PINFORGE_FIFO=${fifo})
  target_link_libraries(shim_pinforge_${variant} PRIVATE ${CMAKE_DL_LIBS})
  target_compile_options(shim_pinforge_${variant} PRIVATE -fno-sanitize=all)
  set_target_properties(shim_pinforge_${variant} PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/shims)
endforeach()

if(EXISTS /usr/local/cuda/lib64/libnvrtc.so.13)
  foreach(scenario fifo hash quarantined)
    add_test(NAME pinforge_${scenario}
             COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/pinforge_test.py
                     --quald $<TARGET_FILE:quald>
                     --qualctl $<TARGET_FILE:qualctl>
                     --worker $<TARGET_FILE:qual-run>
                     --compile-helper $<TARGET_FILE:qual-compile>
                     --shim-fifo $<TARGET_FILE:shim_pinforge_fifo>
                     --shim-hash $<TARGET_FILE:shim_pinforge_hash>
                     --nvrtc /usr/local/cuda/lib64/libnvrtc.so.13
                     ${scenario})
    set_tests_properties(pinforge_${scenario} PROPERTIES LABELS integration TIMEOUT 120)
  endforeach()
endif()
