# client/: qualctl and qual-judge's shared modules. client_<test>
# (test_qualctl.c) drive the views and the connection's line reader directly
# (cmocka); client_fake_* run the real qualctl against a fake quald
# (tests/tools/qualctl_fake.py) that replays canned job lines on a temporary
# socket and checks the requests qualctl sends, its output and its exit
# status. None needs the real daemon or a GPU; the integration tier runs
# qualctl with the real quald.
qual_unit_tests(test_qualctl ${CMAKE_CURRENT_SOURCE_DIR}/unit/client/test_qualctl.c
                LABEL unit PREFIX client LIBS qual_client)

# One ctest entry per case of the fake-daemon script (its --list).
set(QUALCTL_FAKE_CASES
  submit_request submit_compile_only_plain submit_json_passthrough
  submit_verdict_exit submit_quald_verdict submit_timed_plain
  submit_refused submit_no_follow submit_connection_lost submit_interrupted
  no_daemon socket_from_environment tcp reply_timeout status_list
  show_cancel watch usage_errors judge_shared submit_reports show_reports wait_job
  history_export export_formulas)
# The terminal case needs script(1) (util-linux) for a pseudo-terminal.
find_program(QUAL_SCRIPT_PROGRAM script)
if(QUAL_SCRIPT_PROGRAM)
  list(APPEND QUALCTL_FAKE_CASES submit_progress_tty)
endif()
foreach(c ${QUALCTL_FAKE_CASES})
  add_test(NAME client_fake_${c}
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/qualctl_fake.py
                   $<TARGET_FILE:qualctl> $<TARGET_FILE:qual-judge>
                   ${CMAKE_CURRENT_SOURCE_DIR}/data/client ${c})
  set_tests_properties(client_fake_${c} PROPERTIES LABELS unit TIMEOUT 120)
endforeach()

# qualctl judge and qual-judge as a person (a pseudo-terminal: the summary
# table, times per arm, percent, geomean, colour and NO_COLOR) and a CI job
# (--json-out, --junit parsed as XML, --markdown) see a stored H200 run
# (tests/tools/judge_view_test.py).
add_test(NAME client_judge_view
         COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/judge_view_test.py
                 $<TARGET_FILE:qualctl> $<TARGET_FILE:qual-judge>
                 ${CMAKE_SOURCE_DIR}/docs/gpu-runs/2026-11-29/slow.jsonl)
set_tests_properties(client_judge_view PROPERTIES LABELS unit)
