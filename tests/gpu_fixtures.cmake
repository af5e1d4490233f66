# gpu_fixtures_tools (unit): the host side of the fixture suite on the GPU
# (tests/gpu/fixtures.sh) and of the library comparison (bench/compare.py),
# without a GPU: the run and SASS checks of tests/gpu/fixtures_check.py on a
# stored H200 run and on made-up lines and SASS that each break one
# expectation, tests/gpu/unpack-nvrtc.sh on a small pack, bench/library.py's
# case-to-shape mapping and compare.py's 1.3x limit
# (tests/tools/gpu_fixtures_tools_test.py).
add_test(NAME gpu_fixtures_tools
         COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/gpu_fixtures_tools_test.py)
set_tests_properties(gpu_fixtures_tools PROPERTIES LABELS unit TIMEOUT 60)
