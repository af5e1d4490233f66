# The shell completions (dist/completion/), driven by
# tests/tools/completion_test.py against the built programs and a fake quald:
#
#   completion_bash  the completion functions called as bash calls them
#                    (COMP_WORDS, COMP_CWORD): commands, options, option
#                    values, libraries, job ids
#   completion_zsh   zsh -n, then compsys for real: an interactive zsh on a
#                    pseudo-terminal completes command lines ending in a Tab
#
# zsh comes from scripts/install-deps.sh.
foreach(shell bash zsh)
  add_test(NAME completion_${shell}
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/completion_test.py
                   ${QUAL_BIN_DIR} ${PROJECT_SOURCE_DIR}/dist/completion ${shell})
  set_tests_properties(completion_${shell} PROPERTIES LABELS unit TIMEOUT 120)
endforeach()
