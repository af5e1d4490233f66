# qual-judge and `qualctl judge` on outside input (tests/data/judge): the
# settings a stored start line carries are checked (alpha in (0, 0.5],
# margin in [0, 0.5]: docs/verdicts.md), a bad one is a usage error (4) that
# names the field and the file, and a run whose pairs are all invalid is an
# error (3, "no valid pair"), not neutral. Each entry: name, exit status,
# the text stderr must hold, the file. Both programs run each entry (one
# judge, judge_cmd.c). No [ or ] in an entry: cmake lists treat them as
# brackets.
set(JI ${CMAKE_CURRENT_SOURCE_DIR}/data/judge)
set(JI_OUT ${CMAKE_CURRENT_BINARY_DIR}/out)
file(MAKE_DIRECTORY ${JI_OUT})
set(JI_CASES
  "alpha_too_big|4|alpha_too_big.jsonl' line 1: start line's settings.alpha must be a number in (0, 0.5|alpha_too_big.jsonl"
  "alpha_zero|4|alpha_zero.jsonl' line 1: start line's settings.alpha must be|alpha_zero.jsonl"
  "margin_negative|4|margin_negative.jsonl' line 1: start line's settings.margin must be|margin_negative.jsonl"
  "margin_string|4|settings.margin must be a number|margin_string.jsonl"
  "no_valid_pair|3|no_valid_pair.jsonl': no valid pair|no_valid_pair.jsonl"
  "valid_settings|0|-|valid_settings.jsonl")
foreach(entry ${JI_CASES})
  string(REPLACE "|" ";" fields "${entry}")
  list(GET fields 0 name)
  list(GET fields 1 status)
  list(GET fields 2 want)
  list(GET fields 3 file)
  if(want STREQUAL "-")
    set(want_args)
  else()
    set(want_args --expect-stderr "${want}")
  endif()
  foreach(prog qual-judge qualctl)
    if(prog STREQUAL "qualctl")
      set(cmd $<TARGET_FILE:qualctl> judge)
    else()
      set(cmd $<TARGET_FILE:qual-judge>)
    endif()
    add_test(NAME judge_input_${prog}_${name}
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tools/expect_run.sh ${status}
                     ${JI_OUT}/judge_input_${prog}_${name}.jsonl ${want_args} -
                     -- ${cmd} ${JI}/${file})
    set_tests_properties(judge_input_${prog}_${name} PROPERTIES LABELS integration TIMEOUT 60)
  endforeach()
endforeach()
# The command line's alpha has the file's range: 0 is refused too.
foreach(prog qual-judge qualctl)
  if(prog STREQUAL "qualctl")
    set(cmd $<TARGET_FILE:qualctl> judge)
  else()
    set(cmd $<TARGET_FILE:qual-judge>)
  endif()
  add_test(NAME judge_input_${prog}_cli_alpha_zero
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tools/expect_run.sh 4
                   ${JI_OUT}/judge_input_${prog}_cli_alpha_zero.jsonl
                   --expect-stderr "'alpha' must be a number with 0 < alpha <= 0.5, got 0" -
                   -- ${cmd} --alpha 0 ${JI}/valid_settings.jsonl)
  set_tests_properties(judge_input_${prog}_cli_alpha_zero PROPERTIES LABELS integration TIMEOUT 60)
  # The gate's words are the settings table's, worded as qual-run and quald
  # word them.
  add_test(NAME judge_input_${prog}_cli_gate_word
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tools/expect_run.sh 4
                   ${JI_OUT}/judge_input_${prog}_cli_gate_word.jsonl
                   --expect-stderr "'gate_slower' must be beyond or significant, got 'always'" -
                   -- ${cmd} --gate-slower always ${JI}/valid_settings.jsonl)
  set_tests_properties(judge_input_${prog}_cli_gate_word PROPERTIES LABELS integration TIMEOUT 60)
endforeach()

# The time split (docs/output.md, time_s) recomputed from session_time lines.
add_test(NAME judge_time_split
         COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/timesplit_judge_test.py
                 $<TARGET_FILE:qual-judge> ${JI}/valid_settings.jsonl)
set_tests_properties(judge_time_split PROPERTIES LABELS integration TIMEOUT 60)
