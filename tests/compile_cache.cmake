# The compile phase and the artifact cache of qual-run (run/compile_all.c,
# run/cache.c), end to end with the real nvrtc and its alt build,
# compile-only: a warm cache compiles nothing and gives the same artifacts, a
# corrupted entry is recompiled, --no-cache writes nothing, and serial and
# parallel compiles print the same lines, and the job's time limit with
# several compiles in flight blames the first (tests/tools/cache_test.py). The
# cache's own unit tests are tests/cache.cmake's.
set(QUAL_CACHE_NVRTC /usr/local/cuda/lib64/libnvrtc.so.13)
set(QUAL_CACHE_NVRTC_ALT /usr/local/cuda/lib64/libnvrtc.alt.so.13)
if(EXISTS ${QUAL_CACHE_NVRTC} AND EXISTS ${QUAL_CACHE_NVRTC_ALT} AND SYSTEM_PYTHON)
  add_test(NAME compile_cache
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/cache_test.py
                   --run $<TARGET_FILE:qual-run>
                   --nvrtc ${QUAL_CACHE_NVRTC} --nvrtc-alt ${QUAL_CACHE_NVRTC_ALT}
                   --out ${CMAKE_CURRENT_BINARY_DIR}/cache_out
                   $<$<TARGET_EXISTS:shim_hang>:--shim-hang=$<TARGET_FILE:shim_hang>>)
  set_tests_properties(compile_cache PROPERTIES LABELS integration TIMEOUT 600)
endif()
