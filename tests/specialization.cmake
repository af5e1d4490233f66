# Specialization, end to end: every built-in case is its own program.
#
# specialization_nvrtc (integration): a compile-only qual-run of the real
# nvrtc 13 against its alt build gives nine case lines with nine distinct
# artifacts per arm (attention_f16-128 and -512 differ), each listing the
# constants it was specialized with (those of the source it compiled) and its
# target, every line valid under docs/schema/lines.schema.json
# (tests/tools/specialization_test.py). specialization_hiprtc_gfx90a: the
# same with Debian's hiprtc against itself for gfx90a.
set(QUAL_SPEC_NVRTC /usr/local/cuda/lib64/libnvrtc.so.13)
set(QUAL_SPEC_NVRTC_ALT /usr/local/cuda/lib64/libnvrtc.alt.so.13)
set(QUAL_SPEC_HIPRTC /usr/lib/x86_64-linux-gnu/libamdhip64.so.5)

# qual_specialization_test(NAME PLATFORM LIB LIB [qual-run options...])
function(qual_specialization_test name platform lib_a lib_b)
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/out)
  add_test(NAME ${name}
    COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/specialization_test.py
            $<TARGET_FILE:qual-run> $<TARGET_FILE:fixture-source>
            ${CMAKE_CURRENT_SOURCE_DIR}/tools/validate_lines.py
            ${PROJECT_SOURCE_DIR}/docs/schema/lines.schema.json
            ${CMAKE_CURRENT_BINARY_DIR}/out/${name}.jsonl ${platform} ${lib_a} ${lib_b}
            ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS integration TIMEOUT 900)
endfunction()

if(NOT SYSTEM_PYTHON)
  message(STATUS "no python3: the specialization tests are not registered")
  return()
endif()
if(EXISTS ${QUAL_SPEC_NVRTC} AND EXISTS ${QUAL_SPEC_NVRTC_ALT})
  qual_specialization_test(specialization_nvrtc cuda ${QUAL_SPEC_NVRTC} ${QUAL_SPEC_NVRTC_ALT})
else()
  message(STATUS "nvrtc 13 and its alt build not found: specialization_nvrtc is not registered")
endif()
if(EXISTS ${QUAL_SPEC_HIPRTC})
  qual_specialization_test(specialization_hiprtc_gfx90a hip ${QUAL_SPEC_HIPRTC}
                           ${QUAL_SPEC_HIPRTC} --arch gfx90a)
else()
  message(STATUS "${QUAL_SPEC_HIPRTC} not found: specialization_hiprtc_gfx90a is not registered")
endif()
