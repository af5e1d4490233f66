# Compiler libraries (compile/rtc*, qual-compile): unit tests and the shim
# compiler libraries they use. Tests run real nvrtc (CUDA 13.0 at
# /usr/local/cuda) and Debian's hiprtc (libamdhip64.so.5, ROCm 5.2.3); no GPU
# is needed.

set(QUAL_SHIM_REAL_NVRTC /usr/local/cuda/lib64/libnvrtc.so.13 CACHE FILEPATH
    "The real nvrtc the shim compilers forward to")
set(QUAL_TEST_NVRTC /usr/local/cuda/lib64/libnvrtc.so.13 CACHE FILEPATH
    "A real nvrtc for the compile tests")
set(QUAL_TEST_NVRTC_ALT /usr/local/cuda/lib64/libnvrtc.alt.so.13 CACHE FILEPATH
    "A second real nvrtc of the same version")
set(QUAL_TEST_HIPRTC /usr/lib/x86_64-linux-gnu/libamdhip64.so.5 CACHE FILEPATH
    "A real hiprtc for the compile tests")

# What the rtc modules stand on. test_rtc.c includes rtc.c, rtc_child.c and
# rtc_parse.c to reach their statics, so they are not in this library.
add_library(qual_rtc_test_lib INTERFACE)
target_link_libraries(qual_rtc_test_lib INTERFACE qual_proto qual_common ${CMAKE_DL_LIBS})

# Shim compilers: shared objects in <build>/shims.
set(QUAL_SHIMS crash overflow hang hugelog miscompile slow slow_g sibling oob spin delay hunter)
foreach(kind ${QUAL_SHIMS})
  add_library(shim_${kind} SHARED
    ${CMAKE_CURRENT_SOURCE_DIR}/shims/shim_forward.c
    ${CMAKE_CURRENT_SOURCE_DIR}/shims/shim_${kind}.c)
  target_compile_definitions(shim_${kind} PRIVATE
    SHIM_REAL_NVRTC="${QUAL_SHIM_REAL_NVRTC}")
  target_link_libraries(shim_${kind} PRIVATE ${CMAKE_DL_LIBS})
  # Shims misbehave on purpose (shim_crash stores through a null pointer):
  # never instrumented, so the sanitizer build sees the same misbehaviour.
  target_compile_options(shim_${kind} PRIVATE -fno-sanitize=all)
  set_target_properties(shim_${kind} PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/shims)
endforeach()
add_library(shim_noabi SHARED ${CMAKE_CURRENT_SOURCE_DIR}/shims/shim_noabi.c)
set_target_properties(shim_noabi PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/shims)
# shim_sibling needs libshim_sibling_dep.so from its own folder, with no
# RPATH to find it: only the child's LD_LIBRARY_PATH does.
add_library(shim_sibling_dep SHARED ${CMAKE_CURRENT_SOURCE_DIR}/shims/shim_sibling_dep.c)
set_target_properties(shim_sibling_dep PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/shims)
target_link_libraries(shim_sibling PRIVATE shim_sibling_dep)
set_target_properties(shim_sibling PROPERTIES SKIP_BUILD_RPATH TRUE)
add_custom_target(qual_shims DEPENDS shim_noabi)
foreach(kind ${QUAL_SHIMS})
  add_dependencies(qual_shims shim_${kind})
endforeach()

# rtc_NAME: the tests of test_rtc.c, on every shim and the real qual-compile.
qual_unit_tests(test_rtc ${CMAKE_CURRENT_SOURCE_DIR}/unit/compile/test_rtc.c
                LABEL unit TIMEOUT 120 LIBS qual_rtc_test_lib qual_proto)
add_dependencies(test_rtc qual_shims qual-compile)
target_compile_definitions(test_rtc PRIVATE
  RTC_TEST_HELPER="$<TARGET_FILE:qual-compile>"
  RTC_TEST_FAKE_HELPER="${CMAKE_CURRENT_SOURCE_DIR}/tools/fake_compile.sh"
  RTC_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data/rtc"
  RTC_TEST_NVRTC="${QUAL_TEST_NVRTC}"
  RTC_TEST_NVRTC_ALT="${QUAL_TEST_NVRTC_ALT}"
  RTC_TEST_HIPRTC="${QUAL_TEST_HIPRTC}"
  RTC_SHIM_CRASH="$<TARGET_FILE:shim_crash>"
  RTC_SHIM_OVERFLOW="$<TARGET_FILE:shim_overflow>"
  RTC_SHIM_HANG="$<TARGET_FILE:shim_hang>"
  RTC_SHIM_HUGELOG="$<TARGET_FILE:shim_hugelog>"
  RTC_SHIM_MISCOMPILE="$<TARGET_FILE:shim_miscompile>"
  RTC_SHIM_SLOW="$<TARGET_FILE:shim_slow>"
  RTC_SHIM_SLOW_G="$<TARGET_FILE:shim_slow_g>"
  RTC_SHIM_NOABI="$<TARGET_FILE:shim_noabi>"
  RTC_SHIM_SIBLING="$<TARGET_FILE:shim_sibling>"
  RTC_SHIM_OOB="$<TARGET_FILE:shim_oob>"
  RTC_SHIM_SPIN="$<TARGET_FILE:shim_spin>")

# disasm_NAME: reading a disassembler's listing, running it, the occupancy
# and the diff a code line holds (compile/disasm*.c, compile/occupancy.c,
# common/textdiff.c).
qual_unit_tests(test_disasm ${CMAKE_CURRENT_SOURCE_DIR}/unit/compile/test_disasm.c
                LABEL unit TIMEOUT 60 LIBS qual_compile qual_common)
