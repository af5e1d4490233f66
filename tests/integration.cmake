# Integration: the real qual-run and qual-judge end to end, every line they
# print validated against docs/schema/lines.schema.json. Without a GPU these
# are compile-only qualifications with the real compilers and the shims.
set(QT ${CMAKE_CURRENT_SOURCE_DIR}/tools)
set(QO ${CMAKE_CURRENT_BINARY_DIR}/out)
file(MAKE_DIRECTORY ${QO})
set(NVRTC /usr/local/cuda/lib64/libnvrtc.so.13)
set(NVRTC_ALT /usr/local/cuda/lib64/libnvrtc.alt.so.13)
set(HIPRTC /usr/lib/x86_64-linux-gnu/libamdhip64.so.5)

# qual_expect(NAME EXIT [validate options] -- qual-run args...)
function(qual_expect name exit)
  add_test(NAME ${name}
           COMMAND ${QT}/expect_run.sh ${exit} ${QO}/${name}.jsonl ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS integration TIMEOUT 900)
endfunction()

set(RUN $<TARGET_FILE:qual-run>)

if(EXISTS ${NVRTC} AND EXISTS ${NVRTC_ALT})
  # The real nvrtc 13 against its alt build: every case compiles with both.
  qual_expect(run_static_nvrtc_vs_alt 0 --expect-verdict not_timed
              --expect-types start,case,case_verdict -- ${RUN} ${NVRTC} ${NVRTC_ALT} --compile-only)
  # One compiler against itself: byte-identical code in every case.
  qual_expect(run_static_nvrtc_self 0 --expect-verdict not_timed --expect-identical all
              --expect-case-verdict *=not_timed -- ${RUN} ${NVRTC} ${NVRTC} --compile-only)
  # qual-run for a person and for CI: the table on a pseudo-terminal, the
  # report files, JSON lines off a terminal (tests/tools/run_view_test.py).
  add_test(NAME run_view COMMAND ${SYSTEM_PYTHON} ${QT}/run_view_test.py ${RUN} ${NVRTC} ${NVRTC_ALT})
  set_tests_properties(run_view PROPERTIES LABELS integration TIMEOUT 300)
  # Usage errors: exit 4, one error line naming the problem.
  qual_expect(run_usage_pairs 4 --no-verdict --expect-error-code usage --expect-error-substring "at least 30" -- ${RUN} ${NVRTC} ${NVRTC} --pairs 5)
  qual_expect(run_usage_blocks 4 --no-verdict --expect-error-code usage --expect-error-substring "make 5 blocks, too few" -- ${RUN} ${NVRTC} ${NVRTC} --pairs 30 --pairs-per-block 6)
  qual_expect(run_usage_block_seed 4 --expect-stderr "qual-run: --block-seed must be an integer >= 1, got '0'" - -- ${RUN} ${NVRTC} ${NVRTC} --block-seed 0)
  qual_expect(run_usage_sessions 4 --expect-stderr "qual-run: --sessions must be an integer in [1, 64], got '0'" - -- ${RUN} ${NVRTC} ${NVRTC} --sessions 0)
  qual_expect(run_usage_flush 4 --expect-stderr "qual-run: --flush-mib must be an integer in [0, 65536], got '-1'" - -- ${RUN} ${NVRTC} ${NVRTC} --flush-mib -1)
  qual_expect(run_usage_probe_timeout 4 --expect-stderr "qual-run: --probe-timeout must be a number in [0.1, 86400], got '0'" - -- ${RUN} ${NVRTC} ${NVRTC} --probe-timeout 0)
  qual_expect(run_usage_compile_jobs 4 --expect-stderr "qual-run: --compile-jobs must be an integer in [1, 16], got '17'" - -- ${RUN} ${NVRTC} ${NVRTC} --compile-jobs 17)
  qual_expect(run_usage_missing 4 --no-verdict --expect-error-code usage --expect-error-substring "no such file" -- ${RUN} ${NVRTC} /nonexistent/libnvrtc.so)
  qual_expect(run_usage_directory 4 --no-verdict --expect-error-code usage --expect-error-substring "is a directory" -- ${RUN} ${NVRTC} /usr/local/cuda/lib64)
  qual_expect(run_usage_text 4 --no-verdict --expect-error-code usage --expect-error-substring "not an ELF shared object" -- ${RUN} ${NVRTC} ${PROJECT_SOURCE_DIR}/README.md)
  # A library that crashes or hangs while it is identified (the fake
  # qual-compile answers by the library's folder name, tests/tools/
  # fake_compile.sh): a result about the candidate, not a usage error.
  foreach(kind helpercrash helperhang)
    file(MAKE_DIRECTORY ${QO}/${kind})
    file(CREATE_LINK ${NVRTC} ${QO}/${kind}/libnvrtc.so SYMBOLIC)
  endforeach()
  qual_expect(run_identify_crash 2 --expect-verdict fail --expect-error-code compile_crashed
              --expect-error-substring "crashed while loading: killed by signal SIGSEGV"
              -- ${RUN} ${NVRTC} ${QO}/helpercrash/libnvrtc.so --compile-only)
  qual_expect(run_identify_hang 2 --expect-verdict fail --expect-error-code compile_timeout
              --expect-error-substring "did not finish within 1 s"
              -- ${RUN} ${NVRTC} ${QO}/helperhang/libnvrtc.so --compile-only --compile-timeout 1)
  set_tests_properties(run_identify_crash run_identify_hang PROPERTIES
                       ENVIRONMENT QUAL_COMPILE=${QT}/fake_compile.sh)
  # Off sm_90 the wgmma cases are not applicable: reported, never compiled,
  # counted in the verdict line; the other cases compile for sm_80.
  set(wgmma_cases gemm_f16_wgmma-256x1024x1024,gemm_f16_wgmma-256x512x256,gemm_i8_wgmma-256x1024x1024,attention_f16_wgmma-512)
  qual_expect(run_static_nvrtc_sm80 0 --expect-verdict not_timed --expect-identical all
              --expect-not-applicable ${wgmma_cases}
              --expect-case-verdict gemm_f16-256x512x256=not_timed
              -- ${RUN} ${NVRTC} ${NVRTC} --compile-only --arch sm_80
              --case gemm_f16-256x512x256 --case gemm_f16_wgmma-256x1024x1024
              --case gemm_f16_wgmma-256x512x256 --case gemm_i8_wgmma-256x1024x1024
              --case attention_f16_wgmma-512)
  # At the default sm_90 they compile (for sm_90a), like every other case.
  qual_expect(run_static_nvrtc_sm90_wgmma 0 --expect-verdict not_timed --expect-identical all
              --expect-not-applicable=
              --expect-case-verdict *=not_timed
              -- ${RUN} ${NVRTC} ${NVRTC_ALT} --compile-only
              --case gemm_f16_wgmma-256x1024x1024 --case gemm_f16_wgmma-256x512x256
              --case gemm_i8_wgmma-256x1024x1024 --case attention_f16_wgmma-512)
  qual_expect(run_usage_case 4 --no-verdict --expect-error-code usage --expect-error-substring "unknown case" -- ${RUN} ${NVRTC} ${NVRTC} --case no_such_case-1)
endif()
if(EXISTS ${HIPRTC})
  # Debian's hiprtc (ROCm 5.2) for gfx90a, the same sources as for nvrtc.
  # The CUDA-only wgmma cases are not applicable there.
  qual_expect(run_static_hiprtc_self 0 --expect-verdict not_timed --expect-identical all
              --expect-not-applicable gemm_f16_wgmma-256x1024x1024,gemm_f16_wgmma-256x512x256,gemm_i8_wgmma-256x1024x1024,attention_f16_wgmma-512
              -- ${RUN} ${HIPRTC} ${HIPRTC} --compile-only --arch gfx90a)
  # The processor mode: WGP mode on gfx1030 (RDNA2); none on gfx90a.
  qual_expect(run_static_hiprtc_wgp 0 --expect-verdict not_timed --expect-identical all
              -- ${RUN} ${HIPRTC} ${HIPRTC} --compile-only --arch gfx1030 --mode wgp)
  qual_expect(run_usage_mode_gfx90a 4 --no-verdict --expect-error-code usage
              --expect-error-substring "'gfx90a' has none"
              -- ${RUN} ${HIPRTC} ${HIPRTC} --compile-only --arch gfx90a --mode cu)
  if(EXISTS ${NVRTC})
    qual_expect(run_usage_abi_mismatch 4 --no-verdict --expect-error-code usage --expect-error-substring "both must use one abi" -- ${RUN} ${NVRTC} ${HIPRTC})
  endif()
endif()

# Shim compilers (tests/rtc.cmake builds them): each ends its run with the
# right verdict and message.
if(TARGET shim_crash AND EXISTS ${NVRTC})
  qual_expect(run_shim_crash 2 --expect-verdict fail --expect-error-substring SIGSEGV
              --expect-error-code compile_crashed
              --expect-case-verdict *=fail
              -- ${RUN} ${NVRTC} $<TARGET_FILE:shim_crash> --compile-only --case gemm_f16-256x512x256)
  qual_expect(run_shim_hang 2 --expect-verdict fail --expect-error-substring "did not finish"
              --expect-error-code compile_timeout
              -- ${RUN} ${NVRTC} $<TARGET_FILE:shim_hang> --compile-only --compile-timeout 2
              --case gemm_f16-256x512x256)
  qual_expect(run_shim_hugelog 2 --expect-verdict fail --expect-case-verdict *=fail
              --expect-error-code compile_failed
              -- ${RUN} ${NVRTC} $<TARGET_FILE:shim_hugelog> --compile-only --case gemm_i8-256x512x256)
  qual_expect(run_shim_miscompile 0 --expect-verdict not_timed --expect-identical none
              -- ${RUN} ${NVRTC} $<TARGET_FILE:shim_miscompile> --compile-only)
  qual_expect(run_shim_slow 0 --expect-verdict not_timed --expect-identical none
              -- ${RUN} ${NVRTC} $<TARGET_FILE:shim_slow> --compile-only)
  # shim_delay's wait at the entry of every case's kernel compiles (wgmma
  # cases included) and changes the code of every case.
  qual_expect(run_shim_delay 0 --expect-verdict not_timed --expect-identical none
              -- ${RUN} ${NVRTC} $<TARGET_FILE:shim_delay> --compile-only)
  qual_expect(run_shim_crash_baseline 3 --expect-verdict error --expect-error-code compile_crashed
              -- ${RUN} $<TARGET_FILE:shim_crash> ${NVRTC} --compile-only --case conv3x3_f16-7x7x512x512)
  qual_expect(run_usage_noabi 4 --no-verdict --expect-error-code no_abi --expect-error-substring "no nvrtc or hiprtc entry points" -- ${RUN} ${NVRTC} $<TARGET_FILE:shim_noabi>)
endif()

# qual-judge recomputes verdicts from stored pair lines.
set(JD ${CMAKE_CURRENT_SOURCE_DIR}/data/judge)
set(JUDGE $<TARGET_FILE:qual-judge>)
add_test(NAME judge_make_runs
         COMMAND ${SYSTEM_PYTHON} ${QT}/make_judge_runs.py ${QO})
set_tests_properties(judge_make_runs PROPERTIES FIXTURES_SETUP judge_runs)
foreach(t
    "judge_slower 1 --expect-verdict regression --expect-case-verdict gemm_f16-1=slower --expect-case-verdict gemm_f16-2=equivalent -- ${JUDGE} ${QO}/run_slower.jsonl"
    "judge_slower_wide_margin 0 --expect-verdict neutral --expect-case-verdict gemm_f16-1=equivalent -- ${JUDGE} --margin 0.1 ${QO}/run_slower.jsonl"
    "judge_faster 0 --expect-verdict improvement --expect-case-verdict gemm_f16-1=faster -- ${JUDGE} ${QO}/run_faster.jsonl"
    "judge_identical 0 --expect-verdict neutral --expect-case-verdict gemm_f16-1=identical -- ${JUDGE} ${QO}/run_identical.jsonl"
    "judge_fail 2 --expect-verdict fail --expect-case-verdict gemm_f16-2=fail -- ${JUDGE} ${QO}/run_fail.jsonl"
    "judge_strict_alpha 0 --expect-verdict neutral --expect-case-verdict gemm_f16-1=inconclusive -- ${JUDGE} --alpha 1e-9 --margin 0 ${QO}/run_slower.jsonl"
    "judge_blocks 0 --expect-verdict neutral --expect-case-verdict gemm_f16-1=inconclusive -- ${JUDGE} --alpha 0.02 --margin 0.001 ${QO}/run_blocked.jsonl"
    "judge_pairs_alone 1 --expect-verdict regression --expect-case-verdict gemm_f16-1=slower -- ${JUDGE} --alpha 0.02 --margin 0.001 ${QO}/run_unblocked.jsonl"
    "judge_throttled 0 --expect-verdict neutral --expect-case-verdict gemm_f16-1=equivalent -- ${JUDGE} ${QO}/run_throttled.jsonl"
    "judge_throttled_unmarked 0 --expect-verdict neutral --expect-case-verdict gemm_f16-1=inconclusive -- ${JUDGE} ${QO}/run_throttled_unmarked.jsonl"
    "judge_sampled 1 --expect-verdict regression --expect-case-verdict gemm_f16-1=slower --expect-case-verdict gemm_f16-2=slower -- ${JUDGE} ${QO}/run_sampled.jsonl"
    "judge_sampled_undecided 0 --expect-verdict neutral --expect-case-verdict gemm_f16-2=slower -- ${JUDGE} ${QO}/run_sampled_undecided.jsonl"
    "judge_sampled_strict 1 --expect-verdict regression --expect-case-verdict gemm_f16-2=slower -- ${JUDGE} ${QO}/run_sampled_strict.jsonl"
    "judge_sampled_cli_undecided 1 --expect-verdict regression -- ${JUDGE} --undecided regression ${QO}/run_sampled_undecided.jsonl"
    "judge_sampled_cli_gate 0 --expect-verdict neutral -- ${JUDGE} --undecided pass ${QO}/run_sampled_strict.jsonl"
    "judge_slower_significant 1 --expect-verdict regression -- ${JUDGE} --gate-slower significant ${QO}/run_sampled_undecided.jsonl"
    "judge_sampled_wide_margin 0 --expect-verdict neutral --expect-case-verdict gemm_f16-2=equivalent -- ${JUDGE} --margin 0.05 ${QO}/run_sampled.jsonl")
  separate_arguments(args UNIX_COMMAND "${t}")
  list(POP_FRONT args name exit)
  qual_expect(${name} ${exit} ${args})
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED judge_runs)
endforeach()
qual_expect(judge_bad_json 4 - -- ${JUDGE} ${JD}/bad.jsonl)
qual_expect(judge_missing 4 - -- ${JUDGE} /nonexistent.jsonl)

# run_probe_deadline: the device probe killed at --probe-timeout when the
# driver hangs in cuInit (a stand-in libcuda.so.1, tests/shims/fake_cuda.c),
# and the run a static qualification saying why (tests/tools/probe_test.py).
add_library(fake_cuda SHARED ${CMAKE_CURRENT_SOURCE_DIR}/shims/fake_cuda.c)
set_target_properties(fake_cuda PROPERTIES OUTPUT_NAME cuda SOVERSION 1
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fake_cuda)
if(EXISTS ${NVRTC})
  add_test(NAME run_probe_deadline
           COMMAND ${SYSTEM_PYTHON} ${QT}/probe_test.py $<TARGET_FILE:qual-run> ${NVRTC}
                   ${CMAKE_CURRENT_BINARY_DIR}/fake_cuda)
  set_tests_properties(run_probe_deadline PROPERTIES LABELS integration TIMEOUT 600)
endif()

# bench_lines: bench/lines.py leaves out the pairs of throttled block
# attempts, as the judge does (tests/tools/bench_lines_test.py).
add_test(NAME bench_lines COMMAND ${SYSTEM_PYTHON} ${QT}/bench_lines_test.py)
set_tests_properties(bench_lines PROPERTIES LABELS unit)

# exit_flips: bench/exit_flips.py's spread at the cap, exit groups and
# model flips on evidence the test makes (tests/tools/exit_flips_test.py).
add_test(NAME exit_flips COMMAND ${SYSTEM_PYTHON} ${QT}/exit_flips_test.py)
set_tests_properties(exit_flips PROPERTIES LABELS unit)
# session_sd: bench/session_sd.py's analysis of variance between sessions on
# evidence the test makes (tests/tools/session_sd_test.py).
add_test(NAME session_sd COMMAND ${SYSTEM_PYTHON} ${QT}/session_sd_test.py)
set_tests_properties(session_sd PROPERTIES LABELS unit)
