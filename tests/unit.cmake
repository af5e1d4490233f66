# Unit tests: one main and one test list for every cmocka test file.
#
# tests/unit mirrors the source tree: the test of a layer's module stands in
# that layer's folder (tests/unit/daemon/test_jobs.c tests daemon/jobs.c),
# and tests/unit itself holds only this mechanism (test_main.h and its own
# test, test_main_self.c).
#
# The test list is written once, in the C file, as tests/unit/test_main.h
# says: a QUAL_TESTS( block at the start of a line, one entry a line, closed
# by ")" alone at the start of a line. The main it defines runs every test,
# or the one named by its argument. qual_unit_tests() builds the test program
# and reads the block to add one ctest entry a test. To adopt it, a test file
# replaces its main() by
#
#     #include "tests/unit/test_main.h"
#     ...
#     QUAL_TESTS(
#     	cmocka_unit_test(test_relay_and_log),
#     	cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
#     )
#
# and its tests/<area>.cmake replaces add_executable, target_link_libraries
# and the foreach of add_test by
#
#     qual_unit_tests(test_jobs ${CMAKE_CURRENT_SOURCE_DIR}/unit/daemon/test_jobs.c
#                     LABEL unit TIMEOUT 30 LIBS qual_daemon)
#     target_compile_definitions(test_jobs PRIVATE ...)   # as before
#
# which adds jobs_relay_and_log (`test_jobs relay_and_log`), jobs_cancel, ...
# (test_main.h is all there is to the main: a file that adopts it still
# builds and runs under its old add_executable and add_test lines.)
#
#   qual_unit_tests(TARGET SOURCE LABEL label
#                   [PREFIX prefix]     ctest names are prefix_NAME; the
#                                       default is TARGET less "test_"
#                   [TIMEOUT seconds]   each entry's limit (default 60)
#                   [SOURCES file...]   more sources of the program
#                   [LIBS lib...]       what it links besides cmocka
#                   [TESTS_VAR var])    var gets the ctest names added, for
#                                       set_tests_properties on some of them
#
# Every entry has SKIP_RETURN_CODE 77: a test that calls qual_test_skip()
# shows as skipped. The test file is a configure dependency, so a test added
# to the list is registered by the next build.

# Sets out (in the caller) to the names in SOURCE's QUAL_TESTS( block, each
# less "test_". Stops the configure step on a block it cannot read, so that
# a test is never silently left out of ctest.
function(qual_unit_test_names source out)
  file(READ ${source} text)
  string(FIND "${text}" "\nQUAL_TESTS(\n" begin)
  if(begin EQUAL -1)
    message(FATAL_ERROR "${source}: no QUAL_TESTS( block (tests/unit/test_main.h)")
  endif()
  math(EXPR begin "${begin} + 12")
  string(SUBSTRING "${text}" ${begin} -1 block)
  string(FIND "${block}" "\n)" end)
  if(end EQUAL -1)
    message(FATAL_ERROR "${source}: the QUAL_TESTS( block has no closing line \")\"")
  endif()
  string(SUBSTRING "${block}" 0 ${end} block)
  if(block MATCHES "[][;#]")
    message(FATAL_ERROR "${source}: the QUAL_TESTS( block may hold test entries only")
  endif()
  string(REPLACE "\n" ";" lines "${block}")
  set(names "")
  foreach(line ${lines})
    string(STRIP "${line}" line)
    if(line STREQUAL "" OR line MATCHES "^(//|/\\*|\\*)")
      continue()
    endif()
    if(NOT line MATCHES "^[A-Za-z_][A-Za-z0-9_]*\\([ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*[,)]")
      message(FATAL_ERROR "${source}: '${line}' in QUAL_TESTS( is not one test entry")
    endif()
    string(REGEX REPLACE "^test_" "" name "${CMAKE_MATCH_1}")
    if(name IN_LIST names)
      message(FATAL_ERROR "${source}: test '${name}' is listed twice")
    endif()
    list(APPEND names ${name})
  endforeach()
  if(NOT names)
    message(FATAL_ERROR "${source}: the QUAL_TESTS( block lists no test")
  endif()
  set(${out} ${names} PARENT_SCOPE)
endfunction()

function(qual_unit_tests target source)
  cmake_parse_arguments(PARSE_ARGV 2 U "" "LABEL;PREFIX;TIMEOUT;TESTS_VAR"
                        "SOURCES;LIBS")
  if(NOT U_LABEL)
    message(FATAL_ERROR "qual_unit_tests(${target}): LABEL is required")
  endif()
  if(U_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "qual_unit_tests(${target}): unknown arguments ${U_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT DEFINED U_PREFIX)
    string(REGEX REPLACE "^test_" "" U_PREFIX ${target})
  endif()
  if(NOT U_TIMEOUT)
    set(U_TIMEOUT 60)
  endif()
  add_executable(${target} ${source} ${U_SOURCES})
  target_link_libraries(${target} PRIVATE PkgConfig::CMOCKA ${U_LIBS})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${source})
  qual_unit_test_names(${source} names)
  set(added "")
  foreach(name ${names})
    add_test(NAME ${U_PREFIX}_${name} COMMAND ${target} ${name})
    set_tests_properties(${U_PREFIX}_${name} PROPERTIES LABELS ${U_LABEL}
                         TIMEOUT ${U_TIMEOUT} SKIP_RETURN_CODE 77)
    list(APPEND added ${U_PREFIX}_${name})
  endforeach()
  if(U_TESTS_VAR)
    set(${U_TESTS_VAR} ${added} PARENT_SCOPE)
  endif()
endfunction()

# The mechanism itself. The parser reads the list of test_main_self.c as
# written (an entry of each form, a comment); the program, run alone on a
# test that passes and one that skips itself, exits 0 and 77; a name not in
# the list and a second argument exit 2; the whole list runs, the skip not
# counted as a failure. (Built by hand, not by qual_unit_tests(), so that
# the suite does not show a test skipped on purpose.)
qual_unit_test_names(${CMAKE_CURRENT_LIST_DIR}/unit/test_main_self.c self_names)
if(NOT self_names STREQUAL "passes;fixture;skips")
  message(FATAL_ERROR "qual_unit_test_names: read '${self_names}' from test_main_self.c")
endif()
add_executable(test_main_self ${CMAKE_CURRENT_LIST_DIR}/unit/test_main_self.c)
target_link_libraries(test_main_self PRIVATE PkgConfig::CMOCKA)
add_test(NAME main_self_exits
         COMMAND sh -c "\"$0\" passes && \"$0\" test_passes && \"$0\" fixture || exit 1
\"$0\" skips; test $? -eq 77 || exit 1
\"$0\" no_such_test 2>&1 | grep -q \"no test named 'no_such_test'\" || exit 1
\"$0\" no_such_test; test $? -eq 2 || exit 1
\"$0\" passes skips; test $? -eq 2 || exit 1
\"$0\""
         $<TARGET_FILE:test_main_self>)
set_tests_properties(main_self_exits PROPERTIES LABELS unit TIMEOUT 60)
