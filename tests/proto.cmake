# proto/: the contracts that cross process boundaries, each against its own
# test file in tests/unit/proto/ (vocab: the shared words and the job id
# rule; line: a line parsed once). Pure; no processes, no files.
foreach(t vocab line)
  qual_unit_tests(test_proto_${t} ${CMAKE_CURRENT_SOURCE_DIR}/unit/proto/test_${t}.c
                  LABEL unit PREFIX proto_${t} TIMEOUT 30 LIBS qual_proto)
endforeach()
