# The artifact cache (run/cache.c): hits, misses, bad entries removed,
# concurrent writers, eviction by last use. Files under /tmp; no compiler.
qual_unit_tests(test_cache ${CMAKE_CURRENT_SOURCE_DIR}/unit/run/test_cache.c
                LABEL unit TIMEOUT 60 SOURCES ${PROJECT_SOURCE_DIR}/run/cache.c
                LIBS qual_compile qual_common)
