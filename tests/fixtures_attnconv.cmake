# The GQA attention and 3x3 convolution fixtures (fixtures/attention.c,
# fixtures/conv.c, their kernels and oracles/attention.c, oracles/conv.c).
#
# fixtures_attention_*, fixtures_conv_* (unit): each oracle against a naive
# reference written differently, the builders for every case, the inputs,
# and the tolerance (attention: against an f32 emulation of the kernel's
# arithmetic and against plausible kernel bugs; conv: exactness).
#
# fixtures_rtc_<kernel>_<arch>: a case's full source (prelude + kernel)
# compiled by the real nvrtc for sm_90 (the ptxas report must show registers
# and no spills) and the real hiprtc for gfx90a and gfx1030, through
# tests/tools/rtc_check.py; the code object must hold the entry symbol.

foreach(t attention conv)
  qual_unit_tests(test_${t} ${CMAKE_CURRENT_SOURCE_DIR}/unit/fixtures/test_${t}.c
                  LABEL unit PREFIX fixtures_${t} TIMEOUT 300 LIBS qual_fixtures m)
endforeach()

# Compiles use the real case sources as fixture_source() assembles them
# (tools/fixture_source.c, target fixture-source, defined in
# fixtures_gemm.cmake; a generator expression, so the order in which the
# tests/*.cmake files are included does not matter).
set(QUAL_FIXTURE_NVRTC /usr/local/cuda/lib64/libnvrtc.so.13 CACHE FILEPATH
    "The nvrtc that compiles the fixture kernels in tests")
set(QUAL_FIXTURE_HIPRTC /usr/lib/x86_64-linux-gnu/libamdhip64.so.5 CACHE FILEPATH
    "The hiprtc that compiles the fixture kernels in tests")
foreach(k attention conv3x3)
  if(k STREQUAL "attention")
    set(case attention_f16-512)
    set(entry attention_gqa_f16)
  else()
    set(case conv3x3_f16-7x7x512x512)
    set(entry conv3x3_f16)
  endif()
  foreach(arch sm_90 gfx90a gfx1030)
    if(arch STREQUAL "sm_90")
      set(lib ${QUAL_FIXTURE_NVRTC})
      set(platform cuda)
    else()
      set(lib ${QUAL_FIXTURE_HIPRTC})
      set(platform hip)
    endif()
    if(NOT EXISTS ${lib})
      message(STATUS "${lib} not found: fixtures_rtc_${k}_${arch} is not registered")
      continue()
    endif()
    set(src ${CMAKE_CURRENT_BINARY_DIR}/rtc_${k}_${arch}.cu)
    add_test(NAME fixtures_rtc_${k}_${arch}
      COMMAND sh -c "\"$0\" \"$1\" \"$2\" \"$3\" && RTC_CHECK_NO_SPILLS=1 RTC_CHECK_ENTRY=\"$4\" \"$5\" \"$6\" \"$7\" \"$8\" \"$3\""
              $<TARGET_FILE:fixture-source> ${case} ${platform} ${src} ${entry}
              ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/rtc_check.py
              ${lib} ${arch})
    set_tests_properties(fixtures_rtc_${k}_${arch} PROPERTIES LABELS unit TIMEOUT 300)
  endforeach()
endforeach()
