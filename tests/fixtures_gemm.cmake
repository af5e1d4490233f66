# Fixtures: the f16 / bf16 conversions, the GEMM oracles and fixtures, the
# shared fixture code (case table, source assembly, checking), and compiles of
# the GEMM kernels with real compiler libraries.

qual_unit_tests(test_half ${CMAKE_CURRENT_SOURCE_DIR}/unit/oracles/test_half.c
                LABEL unit TIMEOUT 300 LIBS qual_oracles m)
qual_unit_tests(test_fixtures_gemm ${CMAKE_CURRENT_SOURCE_DIR}/unit/fixtures/test_gemm.c
                LABEL unit TIMEOUT 300 LIBS qual_fixtures m)

# fixture-source CASE cuda|hip OUT: a case's full source as fixture_source()
# assembles it, for compiling with rtc_check.py.
add_executable(fixture-source ${CMAKE_CURRENT_SOURCE_DIR}/tools/fixture_source.c)
target_link_libraries(fixture-source PRIVATE qual_fixtures)

# qual_fixture_rtc_test(NAME CASE PLATFORM LIB ARCH ENTRY): compiles CASE's
# source with compiler library LIB for ARCH via tests/tools/rtc_check.py; the
# code object must contain the symbol ENTRY, and an nvrtc compile must show
# a ptxas report without spills.
function(qual_fixture_rtc_test name case platform lib arch entry)
  set(src ${CMAKE_CURRENT_BINARY_DIR}/rtc_${name}.cu)
  add_test(NAME ${name}
    COMMAND sh -c "\"$0\" \"$1\" \"$2\" \"$3\" && RTC_CHECK_NO_SPILLS=1 RTC_CHECK_ENTRY=\"$4\" \"$5\" \"$6\" \"$7\" \"$8\" \"$3\""
            $<TARGET_FILE:fixture-source> ${case} ${platform} ${src} ${entry}
            ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/rtc_check.py
            ${lib} ${arch})
  set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT 300)
endfunction()

find_file(QUAL_TEST_NVRTC libnvrtc.so.13 PATHS /usr/local/cuda/lib64 NO_DEFAULT_PATH)
find_file(QUAL_TEST_HIPRTC libamdhip64.so.5
          PATHS /usr/lib/x86_64-linux-gnu /opt/rocm/lib NO_DEFAULT_PATH)
foreach(family gemm_f16 gemm_i8)
  set(case ${family}-256x1024x1024)
  if(QUAL_TEST_NVRTC)
    qual_fixture_rtc_test(fixtures_rtc_${family}_sm_90 ${case} cuda
                          ${QUAL_TEST_NVRTC} sm_90 ${family})
  endif()
  if(QUAL_TEST_HIPRTC)
    foreach(arch gfx90a gfx1030)
      qual_fixture_rtc_test(fixtures_rtc_${family}_${arch} ${case} hip
                            ${QUAL_TEST_HIPRTC} ${arch} ${family})
    endforeach()
  endif()
endforeach()

# The Hopper cases (the GEMMs and the attention) compile for sm_90a only
# (wgmma), without spills.
if(QUAL_TEST_NVRTC)
  foreach(case gemm_f16_wgmma-256x1024x1024 gemm_f16_wgmma-256x512x256
               gemm_i8_wgmma-256x1024x1024)
    string(REGEX REPLACE "-.*" "" family ${case})
    string(REGEX REPLACE "[^a-z0-9_]" "_" tag ${case})
    qual_fixture_rtc_test(fixtures_rtc_${tag}_sm_90a ${case} cuda
                          ${QUAL_TEST_NVRTC} sm_90a ${family})
  endforeach()
  qual_fixture_rtc_test(fixtures_rtc_attention_f16_wgmma_512_sm_90a attention_f16_wgmma-512
                        cuda ${QUAL_TEST_NVRTC} sm_90a attention_gqa_f16_wgmma)
endif()
