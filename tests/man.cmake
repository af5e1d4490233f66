# The man pages (docs/man/): each program's options, read from the built
# program's --help (and qualctl's commands and their --help), must all be in
# its page (man_options_PROGRAM), and groff must format every page without a
# warning (man_lint). qual-view takes qual-run's options and its page says
# so: it is linted only. tests/tools/man_test.py does both. groff comes with
# Debian's groff-base (scripts/install-deps.sh).
set(QUAL_MAN_DIR ${PROJECT_SOURCE_DIR}/docs/man)
foreach(page quald.8 qualctl.1 qual-run.1 qual-judge.1 qual-compile.1 qual-calibrate.1
             qual-bisect.1)
  string(REGEX REPLACE "\\.[1-8]$" "" program ${page})
  set(extra "")
  if(program STREQUAL "qualctl")
    set(extra --subcommands)
  endif()
  add_test(NAME man_options_${program}
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/man_test.py
                   options ${QUAL_MAN_DIR}/${page} $<TARGET_FILE:${program}> ${extra})
  set_tests_properties(man_options_${program} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
file(GLOB QUAL_MAN_PAGES_ALL ${QUAL_MAN_DIR}/*.[1-8])
add_test(NAME man_lint
         COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/man_test.py
                 lint ${QUAL_MAN_PAGES_ALL})
set_tests_properties(man_lint PROPERTIES LABELS unit TIMEOUT 60)
