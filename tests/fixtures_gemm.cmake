# Fixtures: the f16 / bf16 conversions, the GEMM oracles and fixtures, the
# shared fixture code (case table, specialization, source assembly,
# checking), and compiles of the GEMM cases with real compiler libraries.

qual_unit_tests(test_half ${CMAKE_CURRENT_SOURCE_DIR}/unit/oracles/test_half.c
                LABEL unit TIMEOUT 300 LIBS qual_oracles m)
qual_unit_tests(test_fixtures_gemm ${CMAKE_CURRENT_SOURCE_DIR}/unit/fixtures/test_gemm.c
                LABEL unit TIMEOUT 300 LIBS qual_fixtures m)
# fixture_spec runs no oracle and makes no inputs: the oracles and the input
# generator wrapped at link time, to count the calls.
qual_unit_tests(test_fixture_spec ${CMAKE_CURRENT_SOURCE_DIR}/unit/fixtures/test_spec.c
                LABEL unit PREFIX fixtures_spec TIMEOUT 300 LIBS qual_fixtures m)
target_link_options(test_fixture_spec PRIVATE
  -Wl,--wrap=oracle_attention_compute -Wl,--wrap=oracle_conv3x3_compute
  -Wl,--wrap=oracle_gemm_f16 -Wl,--wrap=oracle_gemm_i8 -Wl,--wrap=rng_init_buffer)

# fixture-source CASE cuda|hip OUT [bare]: a case's full source as
# fixture_source() assembles it (bare: without its constant block), for
# compiling with rtc_check.py.
add_executable(fixture-source ${CMAKE_CURRENT_SOURCE_DIR}/tools/fixture_source.c)
target_link_libraries(fixture-source PRIVATE qual_fixtures)

# Every GEMM case compiled by nvrtc (sm_90) and hiprtc (gfx90a, gfx1030),
# each its own program; and a kernel without its constants refuses to
# compile (cmake/fixture_rtc.cmake).
include(${PROJECT_SOURCE_DIR}/cmake/fixture_rtc.cmake)
foreach(family gemm_f16 gemm_i8)
  foreach(shape 256x512x256 256x1024x1024)
    qual_fixture_rtc_tests(${family}-${shape} ${family})
  endforeach()
endforeach()
qual_fixture_bare_test(gemm_f16-256x512x256 GF_M GF_N GF_K GF_ROW_BYTES GF_OUT_ROW_BYTES
                       GF_KTILES)
qual_fixture_bare_test(gemm_i8-256x512x256 GI_M GI_N GI_K GI_ROW_BYTES GI_OUT_ROW_BYTES
                       GI_KTILES)

# The Hopper cases (the GEMMs and the attention) compile for sm_90a only
# (wgmma), without spills.
if(EXISTS ${QUAL_FIXTURE_NVRTC})
  foreach(pair gemm_f16_wgmma-256x1024x1024:gemm_f16_wgmma
               gemm_f16_wgmma-256x512x256:gemm_f16_wgmma
               gemm_i8_wgmma-256x1024x1024:gemm_i8_wgmma
               attention_f16_wgmma-512:attention_gqa_f16_wgmma)
    string(REPLACE ":" ";" pair ${pair})
    list(GET pair 0 case)
    list(GET pair 1 entry)
    set(src ${CMAKE_CURRENT_BINARY_DIR}/rtc_${case}_sm_90a.cu)
    add_test(NAME fixtures_rtc_${case}_sm_90a
      COMMAND sh -c "\"$0\" \"$1\" \"$2\" \"$3\" && RTC_CHECK_NO_SPILLS=1 RTC_CHECK_ENTRY=\"$4\" \"$5\" \"$6\" \"$7\" \"$8\" \"$3\""
              $<TARGET_FILE:fixture-source> ${case} cuda ${src} ${entry}
              ${SYSTEM_PYTHON} ${PROJECT_SOURCE_DIR}/tests/tools/rtc_check.py
              ${QUAL_FIXTURE_NVRTC} sm_90a)
    set_tests_properties(fixtures_rtc_${case}_sm_90a PROPERTIES LABELS unit TIMEOUT 300)
  endforeach()
endif()
