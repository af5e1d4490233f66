# proto/: the contracts that cross process boundaries, each against its own
# test file in tests/unit/proto/ (settings: the table and its codecs).
qual_unit_tests(test_proto_settings ${CMAKE_CURRENT_SOURCE_DIR}/unit/proto/test_settings.c
                LABEL unit PREFIX proto_settings TIMEOUT 60 LIBS qual_proto)
