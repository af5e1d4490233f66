# proto/: the contracts that cross process boundaries, each against its own
# test file in tests/unit/proto/ (settings: the table and its codecs; vocab:
# the shared words and the job id rule; line: a line parsed once; strv:
# arguments out of sight of /proc/PID/cmdline; remote: the Slurm bridge's
# status lines, spool paths and exit file; fleet: GPU types, submissions and
# their overall verdict). Pure but for strv's pipes and
# memfds and remote's one Slurm id file; no processes.
foreach(t settings vocab line strv remote fleet)
  qual_unit_tests(test_proto_${t} ${CMAKE_CURRENT_SOURCE_DIR}/unit/proto/test_${t}.c
                  LABEL unit PREFIX proto_${t} TIMEOUT 60 LIBS qual_proto)
endforeach()

# The vocabulary's words are written only in proto/vocab.{c,h}
# (tests/tools/vocab_words.py): vocab_words checks the tree, and
# vocab_words_planted that the check finds a literal planted in a scratch
# tree and passes a clean one.
add_test(NAME vocab_words
         COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/vocab_words.py
                 ${PROJECT_SOURCE_DIR})
set_tests_properties(vocab_words PROPERTIES LABELS unit TIMEOUT 60)
add_test(NAME vocab_words_planted
         COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/vocab_words.py --plant)
set_tests_properties(vocab_words_planted PROPERTIES LABELS unit TIMEOUT 30)
