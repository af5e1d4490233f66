# A verdict cannot be forged (issue 10, finding 2; docs/service.md, "Trust
# model"). tests/shims/shim_forge.c is a candidate compiler that, loaded in
# qual-run's compile child, tries ptrace, pidfd_getfd and /proc/PID/fd on its
# worker and quald to write a forged verdict line into the worker's stdout,
# recording how each attempt ended, and otherwise forwards to the real nvrtc.
#
#   forge_verdict               a job of it through the real quald (tests/
#                               tools/forge_test.py): every attempt fails
#                               (EPERM/EACCES), no forged line in the job,
#                               the verdict is the engine's
#   forge_verdict_compile_user  the same with quald --compile-user nobody:
#                               the compile children ran as nobody (skipped
#                               unless ctest runs as root)
#
# The relay's refusal of lines that are not the engine's is unit-tested in
# test_jobs.c (jobs_foreign_lines) and lines_check() in test_lines.c
# (common_lines_check_*), whose engine lines this file points it at.

# Included before tests/rtc.cmake and tests/service.cmake (alphabetically):
# their nvrtc variables are not set yet.
set(QUAL_FORGE_NVRTC /usr/local/cuda/lib64/libnvrtc.so.13 CACHE FILEPATH
    "The real nvrtc shim_forge forwards to and the forge test qualifies")

add_library(shim_forge SHARED
  ${CMAKE_CURRENT_SOURCE_DIR}/shims/shim_forward.c
  ${CMAKE_CURRENT_SOURCE_DIR}/shims/shim_forge.c)
target_compile_definitions(shim_forge PRIVATE SHIM_REAL_NVRTC="${QUAL_FORGE_NVRTC}")
target_link_libraries(shim_forge PRIVATE ${CMAKE_DL_LIBS})
target_compile_options(shim_forge PRIVATE -fno-sanitize=all)
set_target_properties(shim_forge PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/shims)

target_compile_definitions(test_common_lines PRIVATE
  LINES_TEST_ENGINE_LINES="${CMAKE_CURRENT_SOURCE_DIR}/data/client/compile_only.jsonl")

if(EXISTS ${QUAL_FORGE_NVRTC})
  foreach(variant verdict verdict_compile_user)
    set(extra "")
    if(variant STREQUAL verdict_compile_user)
      set(extra --compile-user nobody)
    endif()
    add_test(NAME forge_${variant}
             COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/forge_test.py
                     --quald $<TARGET_FILE:quald>
                     --qualctl $<TARGET_FILE:qualctl>
                     --worker $<TARGET_FILE:qual-run>
                     --compile-helper $<TARGET_FILE:qual-compile>
                     --shim-forge $<TARGET_FILE:shim_forge>
                     --nvrtc ${QUAL_FORGE_NVRTC} ${extra})
    set_tests_properties(forge_${variant} PROPERTIES LABELS integration TIMEOUT 120
                         SKIP_RETURN_CODE 77)
  endforeach()
endif()
