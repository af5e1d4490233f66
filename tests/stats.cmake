# stats/: edge cases and verdict rules (stats_<test>), and every statistic
# against scipy (stats_ref_<kind>). The expected values are computed at test
# time by tests/tools/stats_reference.py under Debian's /usr/bin/python3 with
# python3-scipy (fixture stats_reference), so they come from an independent
# implementation, not from a file this code could have been fitted to.
qual_unit_tests(test_stats ${CMAKE_CURRENT_SOURCE_DIR}/unit/stats/test_stats.c
                LABEL unit TIMEOUT 300 LIBS qual_stats TESTS_VAR stats_tests)

set(STATS_REF ${CMAKE_CURRENT_BINARY_DIR}/stats_reference.txt)
add_test(NAME stats_reference
         COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/stats_reference.py
                 ${STATS_REF})
set_tests_properties(stats_reference PROPERTIES
                     LABELS unit FIXTURES_SETUP stats_reference TIMEOUT 300)
set(stats_ref_tests ${stats_tests})
list(FILTER stats_ref_tests INCLUDE REGEX "^stats_ref_")
set_tests_properties(${stats_ref_tests} PROPERTIES
                     FIXTURES_REQUIRED stats_reference ENVIRONMENT STATS_REF=${STATS_REF})

# stats/judge.c: the not_applicable verdict (tests/unit/stats/test_judge.c).
qual_unit_tests(test_judge ${CMAKE_CURRENT_SOURCE_DIR}/unit/stats/test_judge.c
                LABEL unit TIMEOUT 60 LIBS qual_judge)

# Sampling until decided, simulated (tests/unit/stats/sim_seq.c): whole runs
# of 13 cases through the real stats code with optional stopping at the
# looks; fails when A/A false alarms per run exceed alpha, when the
# sequences' coverage falls below conf (each beyond its binomial slack), or
# when a 3% slowdown is not called. Prints its figures (ctest -V, or
# --output-on-failure).
add_executable(sim_seq ${CMAKE_CURRENT_SOURCE_DIR}/unit/stats/sim_seq.c)
target_link_libraries(sim_seq qual_stats m)
# Under the sanitizers (several times slower) a quarter of the runs, whose
# checks hold at their own binomial slack; `sim_seq 800 margin` also prints
# the margin's edge under session shifts (docs/verdicts.md, "Decided").
if(QUAL_SANITIZE)
  add_test(NAME stats_sim_seq COMMAND sim_seq 200)
else()
  add_test(NAME stats_sim_seq COMMAND sim_seq)
endif()
set_tests_properties(stats_sim_seq PROPERTIES LABELS unit TIMEOUT 600)
# stats/calib.c: the calibration record and its Clopper-Pearson bound
# (tests/unit/stats/test_calib.c; the bound's values are scipy's).
qual_unit_tests(test_calib ${CMAKE_CURRENT_SOURCE_DIR}/unit/stats/test_calib.c
                LABEL unit TIMEOUT 60 LIBS qual_calib)

# stats/bisect.c: the bisection over builds on exact comparisons, and its
# error budget simulated with the judge's statistics (bisect_simulated_budget
# prints the rates it measured).
qual_unit_tests(test_bisect ${CMAKE_CURRENT_SOURCE_DIR}/unit/stats/test_bisect.c
                LABEL unit TIMEOUT 300 LIBS qual_stats)
