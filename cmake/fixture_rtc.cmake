# Compiles of the fixture cases with real compiler libraries, for
# tests/fixtures_*.cmake. Each case's full source is assembled as
# fixture_source() assembles it (tests/tools/fixture_source.c, target
# fixture-source: a generator expression, so the order in which the
# tests/*.cmake files are included does not matter) and compiled in process
# by tests/tools/rtc_check.py.
include_guard(GLOBAL)

set(QUAL_FIXTURE_NVRTC /usr/local/cuda/lib64/libnvrtc.so.13 CACHE FILEPATH
    "The nvrtc that compiles the fixture kernels in tests")
set(QUAL_FIXTURE_HIPRTC /usr/lib/x86_64-linux-gnu/libamdhip64.so.5 CACHE FILEPATH
    "The hiprtc that compiles the fixture kernels in tests")

# qual_fixture_rtc_tests(CASE ENTRY): tests fixtures_rtc_CASE_ARCH compiling
# CASE by nvrtc for sm_90 and by hiprtc for gfx90a and gfx1030 (those whose
# library exists). The code object must contain the symbol ENTRY, and an
# nvrtc compile must show a ptxas report without spills.
function(qual_fixture_rtc_tests case entry)
  foreach(arch sm_90 gfx90a gfx1030)
    if(arch STREQUAL "sm_90")
      set(lib ${QUAL_FIXTURE_NVRTC})
      set(platform cuda)
    else()
      set(lib ${QUAL_FIXTURE_HIPRTC})
      set(platform hip)
    endif()
    set(name fixtures_rtc_${case}_${arch})
    if(NOT EXISTS ${lib})
      message(STATUS "${lib} not found: ${name} is not registered")
      continue()
    endif()
    set(src ${CMAKE_CURRENT_BINARY_DIR}/rtc_${case}_${arch}.cu)
    add_test(NAME ${name}
      COMMAND sh -c "\"$0\" \"$1\" \"$2\" \"$3\" && RTC_CHECK_NO_SPILLS=1 RTC_CHECK_ENTRY=\"$4\" \"$5\" \"$6\" \"$7\" \"$8\" \"$3\""
              $<TARGET_FILE:fixture-source> ${case} ${platform} ${src} ${entry}
              ${SYSTEM_PYTHON} ${PROJECT_SOURCE_DIR}/tests/tools/rtc_check.py
              ${lib} ${arch})
    set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT 300)
  endforeach()
endfunction()

# qual_fixture_bare_test(CASE CONSTANTS...): test fixtures_bare_CASE, CASE's
# kernel compiled by nvrtc without its constant block: the compile must fail
# on the kernel's #error, which must name every one of CONSTANTS.
function(qual_fixture_bare_test case)
  set(name fixtures_bare_${case})
  if(NOT EXISTS ${QUAL_FIXTURE_NVRTC})
    message(STATUS "${QUAL_FIXTURE_NVRTC} not found: ${name} is not registered")
    return()
  endif()
  set(src ${CMAKE_CURRENT_BINARY_DIR}/bare_${case}.cu)
  string(REPLACE ";" " " constants "${ARGN}")
  add_test(NAME ${name}
    COMMAND sh -c [=[
"$0" "$1" cuda "$2" bare || exit 1
if "$3" "$4" "$5" sm_90 "$2" > "$2.log" 2>&1; then
  echo "compiled without its constants"; exit 1
fi
cat "$2.log"
line=$(grep '#error' "$2.log" | head -n 1)
[ -n "$line" ] || { echo "no #error in the log"; exit 1; }
for c in $6; do
  echo "$line" | grep -qw "$c" || { echo "the #error does not name $c"; exit 1; }
done
]=]
            $<TARGET_FILE:fixture-source> ${case} ${src} ${SYSTEM_PYTHON}
            ${PROJECT_SOURCE_DIR}/tests/tools/rtc_check.py ${QUAL_FIXTURE_NVRTC}
            "${constants}")
  set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT 300)
endfunction()
