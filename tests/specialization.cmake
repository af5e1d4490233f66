# Specialization, end to end: every built-in case is its own program.
#
# specialization_nvrtc (integration): a compile-only qual-run of the real
# nvrtc 13 against its alt build gives nine case lines with nine distinct
# artifacts per arm (attention_f16-128 and -512 differ), each listing the
# constants it was specialized with (those of the source it compiled) and its
# target, every line valid under docs/schema/lines.schema.json
# (tests/tools/specialization_test.py).
set(QUAL_SPEC_NVRTC /usr/local/cuda/lib64/libnvrtc.so.13)
set(QUAL_SPEC_NVRTC_ALT /usr/local/cuda/lib64/libnvrtc.alt.so.13)
if(EXISTS ${QUAL_SPEC_NVRTC} AND EXISTS ${QUAL_SPEC_NVRTC_ALT} AND SYSTEM_PYTHON)
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/out)
  add_test(NAME specialization_nvrtc
    COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/specialization_test.py
            $<TARGET_FILE:qual-run> $<TARGET_FILE:fixture-source>
            ${CMAKE_CURRENT_SOURCE_DIR}/tools/validate_lines.py
            ${PROJECT_SOURCE_DIR}/docs/schema/lines.schema.json
            ${CMAKE_CURRENT_BINARY_DIR}/out/specialization_nvrtc.jsonl
            ${QUAL_SPEC_NVRTC} ${QUAL_SPEC_NVRTC_ALT})
  set_tests_properties(specialization_nvrtc PROPERTIES LABELS integration TIMEOUT 900)
else()
  message(STATUS "nvrtc 13 and its alt build not found: specialization_nvrtc is not registered")
endif()
