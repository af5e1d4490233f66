# What the compilers made of each case: qual-run's code lines and `qualctl
# explain` (tests/tools/explain_test.py), with real nvrtc, shim_slow (a
# compiler that changes the code) and hiprtc, compile-only. The figures are
# checked against NVIDIA's own tools (nvdisasm and cuobjdump, from PyPI:
# scripts/fetch-cuda-tools.sh, which install-deps.sh runs) and llvm-objdump.
#
#   explain_figures    every built-in case, each figure against cuobjdump
#   explain_identical  the same code in both arms: identical, no diff
#   explain_no_tool    no disassembler: the compiler's figures, and why not
#   explain_amd        hiprtc's gfx90a code, against llvm-objdump
#   explain_cli        qualctl explain through quald, under a pty
#   explain_kept       the analysis kept in the artifact cache: a second run
#                      disassembles nothing, a damaged one is read again
#   explain_compile_user  as root, --compile-user nobody: the disassembler
#                      runs as nobody too (skipped when not root)
find_program(QUAL_NVDISASM NAMES nvdisasm PATHS /opt/qual-cuda-tools/bin /usr/local/cuda/bin)
find_program(QUAL_CUOBJDUMP NAMES cuobjdump PATHS /opt/qual-cuda-tools/bin /usr/local/cuda/bin)
find_program(QUAL_EXPLAIN_OBJDUMP NAMES llvm-objdump llvm-objdump-14 llvm-objdump-15
             llvm-objdump-16)
find_library(QUAL_EXPLAIN_HIPRTC NAMES libamdhip64.so.5 libamdhip64.so.6 amdhip64)

if(QUAL_NVDISASM AND QUAL_CUOBJDUMP AND EXISTS ${QUAL_SERVICE_NVRTC}
   AND EXISTS ${QUAL_SERVICE_NVRTC_ALT})
  set(scenarios figures identical no_tool cli compile_user kept)
  if(QUAL_EXPLAIN_OBJDUMP AND QUAL_EXPLAIN_HIPRTC)
    list(APPEND scenarios amd)
  endif()
  foreach(scenario ${scenarios})
    add_test(NAME explain_${scenario}
             COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/explain_test.py
                     --quald $<TARGET_FILE:quald> --qualctl $<TARGET_FILE:qualctl>
                     --worker $<TARGET_FILE:qual-run>
                     --compile-helper $<TARGET_FILE:qual-compile>
                     --nvrtc ${QUAL_SERVICE_NVRTC} --nvrtc-alt ${QUAL_SERVICE_NVRTC_ALT}
                     --shim-slow $<TARGET_FILE:shim_slow>
                     --nvdisasm ${QUAL_NVDISASM} --cuobjdump ${QUAL_CUOBJDUMP}
                     --hiprtc "${QUAL_EXPLAIN_HIPRTC}" --objdump "${QUAL_EXPLAIN_OBJDUMP}"
                     ${scenario})
    set_tests_properties(explain_${scenario} PROPERTIES LABELS integration TIMEOUT 200
                         SKIP_RETURN_CODE 77)
  endforeach()
else()
  # The tools come with install-deps.sh: a machine without them has not run
  # it, and the tests must not pass unseen.
  add_test(NAME explain_tools
           COMMAND ${CMAKE_COMMAND} -E echo "explain tests: nvdisasm, cuobjdump or nvrtc 13.0 "
                   "missing: run scripts/install-deps.sh")
  set_tests_properties(explain_tools PROPERTIES LABELS integration WILL_FAIL TRUE)
endif()
