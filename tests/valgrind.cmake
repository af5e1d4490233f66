# The daemon under valgrind memcheck (tests/tools/quald_valgrind.py): the
# real quald on a temporary socket, bad requests, a compile-only job through
# qualctl, a cancel, a watcher and a running job at SIGTERM; quald must exit
# 0 (uv_loop_close() == 0, daemon/main.c) and valgrind must report no error
# and no definite or indirect leak. Label valgrind (scripts/test.sh runs it
# with the rest). Not in a sanitizer build: ASan and valgrind do not mix.
# Needs the real nvrtc and its alt build, like the service tests.
find_program(QUAL_VALGRIND valgrind)
set(QUAL_VALGRIND_NVRTC /usr/local/cuda/lib64/libnvrtc.so.13)
set(QUAL_VALGRIND_NVRTC_ALT /usr/local/cuda/lib64/libnvrtc.alt.so.13)

if(QUAL_VALGRIND AND NOT QUAL_SANITIZE AND EXISTS ${QUAL_VALGRIND_NVRTC}
   AND EXISTS ${QUAL_VALGRIND_NVRTC_ALT})
  add_test(NAME quald_valgrind
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/quald_valgrind.py
                   --valgrind ${QUAL_VALGRIND}
                   --quald $<TARGET_FILE:quald>
                   --qualctl $<TARGET_FILE:qualctl>
                   --worker $<TARGET_FILE:qual-run>
                   --compile-helper $<TARGET_FILE:qual-compile>
                   --shim-noabi $<TARGET_FILE:shim_noabi>
                   --shim-hang $<TARGET_FILE:shim_hang>
                   --nvrtc ${QUAL_VALGRIND_NVRTC}
                   --nvrtc-alt ${QUAL_VALGRIND_NVRTC_ALT})
  # Alone: under valgrind quald's identify children hash the real nvrtc
  # within its 30 s submit check, which a CPU-bound test beside it (the
  # sampling simulation) can push past on a machine of two cores.
  set_tests_properties(quald_valgrind PROPERTIES LABELS valgrind TIMEOUT 600 RUN_SERIAL TRUE)
elseif(NOT QUAL_SANITIZE AND NOT QUAL_VALGRIND)
  message(STATUS "valgrind not found: no quald_valgrind test (scripts/install-deps.sh installs it)")
endif()
