# The GQA attention and 3x3 convolution fixtures (fixtures/attention.c,
# fixtures/conv.c, their kernels and oracles/attention.c, oracles/conv.c).
#
# fixtures_attention_*, fixtures_conv_* (unit): each oracle against a naive
# reference written differently, the builders for every case, the inputs,
# and the tolerance (attention: against an f32 emulation of the kernel's
# arithmetic and against plausible kernel bugs; conv: exactness).
#
# fixtures_rtc_<case>_<arch>: every case's full source (prelude, constants,
# kernel) compiled by the real nvrtc for sm_90 (the ptxas report must show
# registers and no spills) and the real hiprtc for gfx90a and gfx1030,
# through tests/tools/rtc_check.py; the code object must hold the entry
# symbol. fixtures_bare_<case>: the kernel without its constants fails on its
# #error, which names them (cmake/fixture_rtc.cmake).

foreach(t attention conv)
  qual_unit_tests(test_${t} ${CMAKE_CURRENT_SOURCE_DIR}/unit/fixtures/test_${t}.c
                  LABEL unit PREFIX fixtures_${t} TIMEOUT 300 LIBS qual_fixtures m)
endforeach()

include(${PROJECT_SOURCE_DIR}/cmake/fixture_rtc.cmake)
foreach(case attention_f16-128 attention_f16-512)
  qual_fixture_rtc_tests(${case} attention_gqa_f16)
endforeach()
foreach(case conv3x3_f16-56x56x64x64 conv3x3_f16-14x14x256x256 conv3x3_f16-7x7x512x512)
  qual_fixture_rtc_tests(${case} conv3x3_f16)
endforeach()
qual_fixture_bare_test(attention_f16-128 AT_TOKENS AT_HEADS AT_DIM AT_KV_TILES AT_SCALE_LOG2)
qual_fixture_bare_test(conv3x3_f16-7x7x512x512 CV_H CV_W CV_CIN CV_COUT CV_K CV_MTILES
                       CV_SPLITS CV_KPER)
