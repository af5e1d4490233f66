# GPU backends (gpu/gpu*.c).
#
# gpu_nodev_* (unit): both backends built against their headers, and on a
# machine without a GPU each reports QUAL_ENODEV (the no-device checks skip
# themselves where a device is present).
#
# gpu_smoke (label gpu): needs the device; CI runs `ctest -LE gpu`. Its kernels
# are compiled here with nvcc into CUBINs and embedded in the binary, so the
# build folder can be carried to the GPU machine as it is.

# The GPU layer alone (gpu/).
set(QUAL_GPU_LIB qual_gpu)

qual_unit_tests(test_gpu_nodev ${CMAKE_CURRENT_SOURCE_DIR}/unit/gpu/test_gpu_nodev.c
                LABEL unit LIBS ${QUAL_GPU_LIB})

find_program(QUAL_NVCC nvcc HINTS /usr/local/cuda/bin)
set(QUAL_SMOKE_ARCH sm_90 CACHE STRING "GPU architecture of the smoke test's CUBINs")
if(QUAL_NVCC)
  set(GS ${CMAKE_CURRENT_SOURCE_DIR}/gpu)
  set(GB ${CMAKE_CURRENT_BINARY_DIR}/gpu)
  file(MAKE_DIRECTORY ${GB})
  set(smoke_sources)
  foreach(k axpy fault)
    add_custom_command(
      OUTPUT ${GB}/${k}.cubin
      COMMAND ${QUAL_NVCC} -cubin -arch=${QUAL_SMOKE_ARCH} -O3 -o ${GB}/${k}.cubin ${GS}/${k}.cu
      DEPENDS ${GS}/${k}.cu
      COMMENT "nvcc -cubin ${k}.cu")
    add_custom_command(
      OUTPUT ${GB}/${k}_cubin.c
      COMMAND ${CMAKE_COMMAND} -DIN=${GB}/${k}.cubin -DOUT=${GB}/${k}_cubin.c
              -DSYMBOL=smoke_${k}_cubin -P ${GS}/embed_bin.cmake
      DEPENDS ${GB}/${k}.cubin ${GS}/embed_bin.cmake
      COMMENT "Embedding ${k}.cubin")
    list(APPEND smoke_sources ${GB}/${k}_cubin.c)
  endforeach()
  add_executable(gpu_smoke ${GS}/gpu_smoke.c ${smoke_sources})
  target_link_libraries(gpu_smoke PRIVATE ${QUAL_GPU_LIB} m)
  add_test(NAME gpu_smoke COMMAND gpu_smoke)
  set_tests_properties(gpu_smoke PROPERTIES LABELS gpu TIMEOUT 120
                       SKIP_RETURN_CODE 77)
else()
  message(STATUS "nvcc not found: gpu_smoke is not built")
endif()

# gpu_dispatch_* (unit): gpu/gpu.c compiled into the test with two fake
# backends in place of CUDA and HIP (the test defines gpu__cuda_backend and
# gpu__hip_backend, so the real backends are not linked in).
qual_unit_tests(test_gpu_dispatch ${CMAKE_CURRENT_SOURCE_DIR}/unit/gpu/test_gpu_dispatch.c
                LABEL unit LIBS ${QUAL_GPU_LIB})

# clocks_* (unit): gpu/clocks.c and gpu/nvml.c through a fake NVML
# (tests/shims/fake_nvml.c), found, not found, and throttled; gpu/rocm_smi.c
# through a fake ROCm SMI (tests/shims/fake_rocm_smi.c).
add_library(fake_nvml SHARED ${CMAKE_CURRENT_SOURCE_DIR}/shims/fake_nvml.c)
add_library(fake_rocm_smi SHARED ${CMAKE_CURRENT_SOURCE_DIR}/shims/fake_rocm_smi.c)
qual_unit_tests(test_clocks ${CMAKE_CURRENT_SOURCE_DIR}/unit/gpu/test_clocks.c
                LABEL unit LIBS ${QUAL_GPU_LIB} m TESTS_VAR clocks_tests)
add_dependencies(test_clocks fake_nvml fake_rocm_smi)
set_tests_properties(${clocks_tests} PROPERTIES ENVIRONMENT
  "FAKE_NVML=$<TARGET_FILE:fake_nvml>;FAKE_ROCM_SMI=$<TARGET_FILE:fake_rocm_smi>")
