# qual-bisect, compile-only, over series of real compilers (nvrtc 13.0 and
# shim_slow, which changes the code): tests/tools/bisect_test.py. The
# procedure's error budget is simulated in tests/unit/stats/test_bisect.c.
#
#   bisect_planted   8 builds, the code changes at the 5th: found, shared runs
#   bisect_run       --run: one bisection of the run over the cases, the
#                    planted build found once
#   bisect_none      no change: one run, exit 0
#   bisect_file      the series from --builds FILE
#   bisect_broken    a library that is no compiler: exit 3, the step named
#   bisect_arch      every case for sm_80: the wgmma cases left out as not
#                    applicable, the rest bisected
#   bisect_usage     bad command lines: exit 4
if(EXISTS ${QUAL_SERVICE_NVRTC} AND EXISTS ${QUAL_SERVICE_NVRTC_ALT})
  foreach(scenario planted run none file broken arch usage)
    add_test(NAME bisect_${scenario}
             COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/bisect_test.py
                     --qual-bisect $<TARGET_FILE:qual-bisect>
                     --nvrtc ${QUAL_SERVICE_NVRTC} --nvrtc-alt ${QUAL_SERVICE_NVRTC_ALT}
                     --shim-slow $<TARGET_FILE:shim_slow>
                     --shim-noabi $<TARGET_FILE:shim_noabi>
                     ${scenario})
    set_tests_properties(bisect_${scenario} PROPERTIES LABELS integration TIMEOUT 300)
  endforeach()
endif()
