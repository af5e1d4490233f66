# The AMD side of the fixtures, compile-only (no AMD GPU runs here).
#
# fixtures_mfma_layout_* (unit): the HIP prelude's lane mapping from NVIDIA's
# mma.sync fragments to MFMA operands and back (fixtures/mfma_layout.h),
# simulated on a 64-lane wavefront against models of v_mfma_f32_16x16x16f16 /
# v_mfma_i32_16x16x16i8 and of NVIDIA's m16n8k16 / m16n8k32.
# rtc_mode_* (unit): the processor mode's options and refusals (compile/rtc_mode.c).
# fixtures_mfma_<family>: every built-in case of the family compiled by the
# real hiprtc for gfx90a (its code must contain v_mfma) and gfx1030 (none),
# disassembled with llvm-objdump (Debian's llvm).
# qual_run_mode: qual-run --mode with the real hiprtc (tests/tools/mode_test.py).

qual_unit_tests(test_mfma_layout ${CMAKE_CURRENT_SOURCE_DIR}/unit/fixtures/test_mfma_layout.c
                LABEL unit PREFIX fixtures_mfma_layout)
qual_unit_tests(test_rtc_mode ${CMAKE_CURRENT_SOURCE_DIR}/unit/compile/test_rtc_mode.c
                LABEL unit LIBS qual_compile)

find_program(QUAL_LLVM_OBJDUMP NAMES llvm-objdump llvm-objdump-14 llvm-objdump-15
             llvm-objdump-16)
set(QUAL_AMD_HIPRTC /usr/lib/x86_64-linux-gnu/libamdhip64.so.5 CACHE FILEPATH
    "The hiprtc that compiles the AMD fixture checks")
if(NOT EXISTS ${QUAL_AMD_HIPRTC} OR NOT SYSTEM_PYTHON)
  message(STATUS "${QUAL_AMD_HIPRTC} or python3 not found: fixtures_mfma_* and "
                 "qual_run_mode are not registered")
  return()
endif()
if(QUAL_LLVM_OBJDUMP)
  foreach(family gemm_f16 gemm_i8 attention_f16 conv3x3_f16)
    add_test(NAME fixtures_mfma_${family}
      COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/mfma_check.py
              $<TARGET_FILE:qual-run> $<TARGET_FILE:fixture-source> ${QUAL_AMD_HIPRTC}
              ${QUAL_LLVM_OBJDUMP} ${family} ${CMAKE_CURRENT_BINARY_DIR}/mfma_${family})
    set_tests_properties(fixtures_mfma_${family} PROPERTIES LABELS unit TIMEOUT 600)
  endforeach()
else()
  message(STATUS "llvm-objdump not found (Debian package llvm): fixtures_mfma_* "
                 "are not registered")
endif()
set(mode_nvrtc "")
if(EXISTS /usr/local/cuda/lib64/libnvrtc.so.13)
  set(mode_nvrtc /usr/local/cuda/lib64/libnvrtc.so.13)
endif()
add_test(NAME qual_run_mode
  COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/mode_test.py
          $<TARGET_FILE:qual-run> ${QUAL_AMD_HIPRTC} ${mode_nvrtc})
set_tests_properties(qual_run_mode PROPERTIES LABELS unit TIMEOUT 300)
