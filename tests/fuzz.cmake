# Fuzz tier: libFuzzer targets on what quald parses from outside
# (docs/fuzzing.md).
#
#   fuzz_request  a client's bytes: framing (daemon/frame.c) and request
#                 parsing (daemon/request.c)
#   fuzz_relay    a worker's stdout: the relay of its lines (daemon/relay.c)
#   fuzz_manifest a user fixture's DIR/fixture.json (fixtures/manifest.c)
#   fuzz_http     an HTTP client's bytes: quald's HTTP endpoint
#                 (daemon/http*.c, metrics.c) on H2O, over a real jobs module
#   fuzz_log      a job's stored log read through a cursor paused, put back
#                 and resumed anywhere (daemon/store_log.c)
#   fuzz_remote   the Slurm bridge's status lines and the node's exit file
#                 (proto/remote.c)
#
# With -DQUAL_FUZZ=ON (clang only) each target is a libFuzzer binary with
# ASan and UBSan, and ctest runs it for QUAL_FUZZ_SECONDS on its seed corpus
# (tests/fuzz/corpus/<name>/; what it finds new goes to the build folder)
# with its dictionary (tests/fuzz/<name>.dict),
# label fuzz; any finding (a failed invariant, a sanitizer report, a leak, an
# input slower than 10 s, more than 2 GiB) fails the test and leaves the input
# in <build>/tests/fuzz/<name>/. Without it, every build runs the targets once
# over their seed corpus instead (replay_main.c; label unit), so the gcc
# build, the ASan+UBSan build and valgrind all check the corpus too.
option(QUAL_FUZZ "Build the libFuzzer targets (needs clang)" OFF)
set(QUAL_FUZZ_SECONDS 20 CACHE STRING
    "Seconds each fuzz target runs under ctest (label fuzz)")

set(QUAL_FUZZ_SRC ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
set(QUAL_FUZZ_OUT ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
# What each target drives, compiled into it (so that it is instrumented with
# the target) with the error space and allocation it stands on.
set(QUAL_FUZZ_COMMON ${PROJECT_SOURCE_DIR}/common/err.c ${PROJECT_SOURCE_DIR}/common/xalloc.c)
set(QUAL_FUZZ_DRIVES_request ${PROJECT_SOURCE_DIR}/daemon/frame.c
    ${PROJECT_SOURCE_DIR}/daemon/request.c ${PROJECT_SOURCE_DIR}/compile/rtc_mode.c
    ${PROJECT_SOURCE_DIR}/common/gate.c ${PROJECT_SOURCE_DIR}/proto/settings.c
    ${PROJECT_SOURCE_DIR}/proto/strv.c ${PROJECT_SOURCE_DIR}/proto/vocab.c
    ${PROJECT_SOURCE_DIR}/proto/fleet.c)
set(QUAL_FUZZ_DRIVES_relay ${PROJECT_SOURCE_DIR}/daemon/relay.c ${PROJECT_SOURCE_DIR}/daemon/oplog.c
    ${PROJECT_SOURCE_DIR}/common/lines.c ${PROJECT_SOURCE_DIR}/common/text.c
    ${PROJECT_SOURCE_DIR}/proto/line.c ${PROJECT_SOURCE_DIR}/proto/vocab.c)
# The endpoint itself is compiled into its target; the jobs module and what
# it stands on come from quald's library (not instrumented).
set(QUAL_FUZZ_DRIVES_http ${PROJECT_SOURCE_DIR}/daemon/http.c
    ${PROJECT_SOURCE_DIR}/daemon/http_respond.c ${PROJECT_SOURCE_DIR}/daemon/http_api.c
    ${PROJECT_SOURCE_DIR}/daemon/http_events.c ${PROJECT_SOURCE_DIR}/daemon/http_host.c
    ${PROJECT_SOURCE_DIR}/daemon/metrics.c ${PROJECT_SOURCE_DIR}/daemon/peer.c
    ${PROJECT_SOURCE_DIR}/daemon/listen.c)
set(QUAL_FUZZ_DRIVES_log ${PROJECT_SOURCE_DIR}/daemon/store_log.c
    ${PROJECT_SOURCE_DIR}/daemon/store.c ${PROJECT_SOURCE_DIR}/daemon/oplog.c
    ${PROJECT_SOURCE_DIR}/common/fsutil.c ${PROJECT_SOURCE_DIR}/common/lines.c
    ${PROJECT_SOURCE_DIR}/common/sha256.c
    ${PROJECT_SOURCE_DIR}/common/text.c ${PROJECT_SOURCE_DIR}/proto/line.c
    ${PROJECT_SOURCE_DIR}/proto/vocab.c)
set(QUAL_FUZZ_DRIVES_manifest ${PROJECT_SOURCE_DIR}/fixtures/manifest.c
    ${PROJECT_SOURCE_DIR}/fixtures/check.c ${PROJECT_SOURCE_DIR}/oracles/half.c
    ${PROJECT_SOURCE_DIR}/common/fsutil.c)

set(QUAL_FUZZ_DRIVES_remote ${PROJECT_SOURCE_DIR}/proto/remote.c
    ${PROJECT_SOURCE_DIR}/proto/vocab.c ${PROJECT_SOURCE_DIR}/common/text.c
    ${PROJECT_SOURCE_DIR}/common/fsutil.c)

if(QUAL_FUZZ AND NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "QUAL_FUZZ needs clang (libFuzzer): configure with CC=clang")
endif()

foreach(name request relay manifest http log remote)
  if(QUAL_FUZZ)
    set(exe fuzz_${name})
    add_executable(${exe} ${QUAL_FUZZ_SRC}/fuzz_${name}.c
                   ${QUAL_FUZZ_DRIVES_${name}} ${QUAL_FUZZ_COMMON})
    # -fno-sanitize-recover: undefined behaviour stops the run like a
    # crash, so libFuzzer keeps the input.
    target_compile_options(${exe} PRIVATE -fsanitize=fuzzer,address,undefined
                           -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_link_options(${exe} PRIVATE -fsanitize=fuzzer,address,undefined)
  else()
    set(exe fuzz_${name}_replay)
    add_executable(${exe} ${QUAL_FUZZ_SRC}/fuzz_${name}.c ${QUAL_FUZZ_SRC}/replay_main.c
                   ${QUAL_FUZZ_DRIVES_${name}} ${QUAL_FUZZ_COMMON})
  endif()
  target_include_directories(${exe} PRIVATE ${QUAL_FUZZ_SRC})
  target_link_libraries(${exe} PRIVATE PkgConfig::JANSSON)
  if(name STREQUAL "http")
    target_link_libraries(${exe} PRIVATE qual_daemon PkgConfig::H2O)
  endif()
  if(name STREQUAL "log")
    target_link_libraries(${exe} PRIVATE OpenSSL::Crypto Threads::Threads)
  endif()

  if(QUAL_FUZZ)
    # The corpus folder it writes (the first) and the seeds (read only).
    file(MAKE_DIRECTORY ${QUAL_FUZZ_OUT}/${name}/corpus)
    add_test(NAME fuzz_${name}
             COMMAND ${exe} -max_total_time=${QUAL_FUZZ_SECONDS} -timeout=10
                     -rss_limit_mb=2048 -print_final_stats=1
                     -dict=${QUAL_FUZZ_SRC}/${name}.dict
                     -artifact_prefix=${QUAL_FUZZ_OUT}/${name}/
                     ${QUAL_FUZZ_OUT}/${name}/corpus ${QUAL_FUZZ_SRC}/corpus/${name})
    math(EXPR limit "${QUAL_FUZZ_SECONDS} + 120")
    set_tests_properties(fuzz_${name} PROPERTIES LABELS fuzz TIMEOUT ${limit})
  else()
    add_test(NAME fuzz_${name}_corpus COMMAND ${exe} ${QUAL_FUZZ_SRC}/corpus/${name})
    set_tests_properties(fuzz_${name}_corpus PROPERTIES LABELS unit TIMEOUT 60)
  endif()
endforeach()
