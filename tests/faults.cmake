# GPU faults and hangs (docs/faults.md), in CI without a GPU.
#
# health_* (unit): gpu/health.c on a fake backend (healthy, a wrong word, a
# hang, no PTX, no device); health_ptx: the health kernel's PTX assembles with
# the real ptxas (skipped without one); health_no_device: `qual-run --health` here says "no device"
# and exits 3. The deadline policy and the hang path of the runner are tested
# with the runner's fake GPU (tests/unit/run/test_runner.c, runner_*), the
# shims that fault and spin compile (rtc_shim_oob, rtc_shim_spin), and every
# fixture kernel is rewritten by them (run_shim_oob_static, run_shim_spin_static).
# On the GPU itself: tests/gpu/faults.sh.

find_program(QUAL_PTXAS ptxas HINTS /usr/local/cuda/bin)
qual_unit_tests(test_health ${CMAKE_CURRENT_SOURCE_DIR}/unit/gpu/test_health.c
                LABEL unit LIBS qual_gpu)
if(QUAL_PTXAS)
  set_tests_properties(health_ptx PROPERTIES ENVIRONMENT QUAL_PTXAS=${QUAL_PTXAS})
endif()

add_test(NAME health_no_device
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tools/expect_health.sh $<TARGET_FILE:qual-run>)
set_tests_properties(health_no_device PROPERTIES LABELS unit TIMEOUT 60 SKIP_RETURN_CODE 77)

# The rewriting shims change every fixture's entry kernel: no case compiles
# to the real compiler's code.
set(NVRTC13 /usr/local/cuda/lib64/libnvrtc.so.13)
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/out)
# (tests/rtc.cmake, included after this file, defines the shim targets.)
if(EXISTS ${NVRTC13})
  foreach(kind oob spin)
    add_test(NAME run_shim_${kind}_static
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tools/expect_run.sh 0
                     ${CMAKE_CURRENT_BINARY_DIR}/out/run_shim_${kind}_static.jsonl
                     --expect-verdict not_timed --expect-identical none
                     -- $<TARGET_FILE:qual-run> ${NVRTC13} $<TARGET_FILE:shim_${kind}> --compile-only)
    set_tests_properties(run_shim_${kind}_static PROPERTIES LABELS integration TIMEOUT 900)
  endforeach()
endif()
