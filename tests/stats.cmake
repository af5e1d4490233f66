# stats/: edge cases and verdict rules (stats_unit), and every statistic
# against scipy (stats_scipy). The expected values are computed at test time
# by tests/tools/stats_reference.py under Debian's /usr/bin/python3 with
# python3-scipy (fixture stats_reference), so they come from an independent
# implementation, not from a file this code could have been fitted to.
add_executable(test_stats ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_stats.c)
target_link_libraries(test_stats PRIVATE qual_stats PkgConfig::CMOCKA)

add_test(NAME stats_unit COMMAND test_stats)
set_tests_properties(stats_unit PROPERTIES LABELS unit)

set(STATS_REF ${CMAKE_CURRENT_BINARY_DIR}/stats_reference.txt)
add_test(NAME stats_reference
         COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/stats_reference.py
                 ${STATS_REF})
set_tests_properties(stats_reference PROPERTIES
                     LABELS unit FIXTURES_SETUP stats_reference TIMEOUT 300)
add_test(NAME stats_scipy COMMAND test_stats ${STATS_REF})
set_tests_properties(stats_scipy PROPERTIES
                     LABELS unit FIXTURES_REQUIRED stats_reference TIMEOUT 300)
