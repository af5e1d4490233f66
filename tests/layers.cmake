# The layer rule (cmake/layers.cmake, docs/design.md "Layers"): the source
# tree passes, and a copy of it with one planted bad include fails with the
# file and the rule it breaks (tests/tools/layers_test.cmake). The configure
# step runs the same function on the tree, so a real bad include stops it.
add_test(NAME layers_reject
         COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR}
                 -DWORK=${CMAKE_CURRENT_BINARY_DIR}/layers_reject.d
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/tools/layers_test.cmake)
set_tests_properties(layers_reject PROPERTIES LABELS unit TIMEOUT 120)

# The house limits (docs/style.md): no C source outside tests/ over 1,000
# lines and no function over 150; the checker's own self-test plants one of
# each and must see both.
add_test(NAME source_limits
         COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/source_limits.py
                 ${PROJECT_SOURCE_DIR})
add_test(NAME source_limits_self_test
         COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/source_limits.py
                 --self-test)
set_tests_properties(source_limits source_limits_self_test PROPERTIES LABELS unit TIMEOUT 60)
