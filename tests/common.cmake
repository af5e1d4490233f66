# common/: the modules every layer uses, each against its own test file in
# tests/unit/common/ (child, text, opts, fsutil, lines, xalloc). Real processes,
# pipes and files under /tmp; no GPU, no network.
foreach(t child text opts fsutil lines xalloc)
  qual_unit_tests(test_common_${t} ${CMAKE_CURRENT_SOURCE_DIR}/unit/common/test_${t}.c
                  LABEL unit PREFIX common_${t} TIMEOUT 60 LIBS qual_common)
endforeach()
# lines' readers (lines_classify, lines_check) and its error codes are
# proto/'s now (proto/line.h, proto/vocab.h); their tests stay here.
target_link_libraries(test_common_lines PRIVATE qual_proto)
target_compile_definitions(test_common_text PRIVATE
  TEXT_TEST_PARSE_CASES="${CMAKE_CURRENT_SOURCE_DIR}/unit/common/parse_numbers.txt")
target_compile_definitions(test_common_fsutil PRIVATE
  FSUTIL_TEST_BIN_DIR="$<TARGET_FILE_DIR:test_common_fsutil>")

# Worker confinement (common/confine.c): rlimits and a network namespace
# (confine_NAME).
qual_unit_tests(test_confine ${CMAKE_CURRENT_SOURCE_DIR}/unit/common/test_confine.c
                LABEL unit TIMEOUT 30 LIBS qual_common)
