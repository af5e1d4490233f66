# The pair runner (run/runner.c) on a fake GPU, in CI without one.
#
# runner_* (unit): tests/unit/run/test_runner.c defines the backend symbols
# gpu__cuda_backend and gpu__hip_backend itself (a fake whose device memory is
# host memory), so the run layer is built here again without gpu_cuda.c and
# gpu_hip.c. Compiles are real: qual-compile children running the real nvrtc.
# Every stream the runner writes is kept in <build>/tests/runner_out and
# validated against docs/schema/lines.schema.json.

set(QUAL_RUNNER_TEST_NVRTC /usr/local/cuda/lib64/libnvrtc.so.13 CACHE FILEPATH
    "The nvrtc both arms of the runner test compile with")

# test_runner.c includes run/sessions.c to reach the relay, so it is not in
# this library (the rest of the sessions, sessions_*.c, are).
set(S ${PROJECT_SOURCE_DIR})
add_library(qual_runner_test_lib STATIC
  ${S}/compile/rtc.c ${S}/compile/rtc_child.c ${S}/compile/rtc_parse.c
  ${S}/gpu/gpu.c ${S}/gpu/clocks.c
  ${S}/gpu/nvml.c ${S}/gpu/rocm_smi.c ${S}/run/runner.c ${S}/run/runner_setup.c
  ${S}/run/runner_case.c ${S}/run/runner_check.c ${S}/run/runner_time.c
  ${S}/run/runner_emit.c ${S}/run/sessions_probe.c ${S}/run/sessions_child.c
  ${S}/run/sessions_plan.c ${S}/run/compile_all.c ${S}/run/cache.c
  ${S}/compile/rtc_mode.c ${S}/compile/disasm.c ${S}/compile/disasm_parse.c
  ${S}/compile/occupancy.c ${S}/run/explain.c)
find_package(Threads REQUIRED)
target_link_libraries(qual_runner_test_lib PUBLIC qual_common qual_fixtures qual_judge
                      Threads::Threads ${CMAKE_DL_LIBS} m)

if(EXISTS ${QUAL_RUNNER_TEST_NVRTC})
  set(RO ${CMAKE_CURRENT_BINARY_DIR}/runner_out)
  file(MAKE_DIRECTORY ${RO})
  if(SYSTEM_PYTHON)
    set(runner_python ${SYSTEM_PYTHON})
  else()
    set(runner_python "")
  endif()
  qual_unit_tests(test_runner ${CMAKE_CURRENT_SOURCE_DIR}/unit/run/test_runner.c
                  LABEL unit TIMEOUT 300 LIBS qual_runner_test_lib)
  add_dependencies(test_runner qual-compile fake_nvml)
  target_compile_definitions(test_runner PRIVATE
    RUNNER_TEST_HELPER="$<TARGET_FILE:qual-compile>"
    RUNNER_TEST_NVRTC="${QUAL_RUNNER_TEST_NVRTC}"
    RUNNER_TEST_FAKE_NVML="$<TARGET_FILE:fake_nvml>"
    RUNNER_TEST_OUT="${RO}"
    RUNNER_TEST_PYTHON="${runner_python}"
    RUNNER_TEST_VALIDATE="${CMAKE_CURRENT_SOURCE_DIR}/tools/validate_lines.py"
    RUNNER_TEST_SCHEMA="${PROJECT_SOURCE_DIR}/docs/schema/lines.schema.json"
    RUNNER_TEST_FIXTURES="${CMAKE_CURRENT_SOURCE_DIR}/data/fixtures")
else()
  message(STATUS "${QUAL_RUNNER_TEST_NVRTC} not found: test_runner is not built")
endif()
