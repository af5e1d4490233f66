#!/bin/sh
# A stand-in for qual-run in the calibration tests (tests/tools/
# calibration_test.py): each run writes a start line (alpha 0.05, margin
# 0.01) and three timed case_verdict lines whose false alarms are known, then
# its verdict. Run k (counted in $FAKE_CALIB_DIR/runs) gives:
#   gemm_f16-256x512x256  slower: p_holm 0.001, interval [1.02, 1.04],
#                         detectable_ratio 1 + k/100
#   gemm_i8-256x512x256   equivalent: p_holm 0.5, [0.995, 1.005]
#   conv2d_f32-64x64         k even: faster (p_holm 0.01, [0.95, 0.985]);
#                         k odd: inconclusive (p_holm 0.3, [0.95, 1.01])
# While $FAKE_CALIB_DIR/untimed exists it times nothing: a start line "timed":
# false, one not_timed case_verdict and a not_timed verdict.
# It sleeps $FAKE_CALIB_SLEEP seconds (default 0) before its verdict, and
# answers --help with qual-run's --sample-identical line when
# $FAKE_CALIB_SAMPLE is set; every argument is appended to
# $FAKE_CALIB_DIR/args, one run a line.
. "$(dirname "$0")/args_fd.sh"
for a in "$@"; do
  [ "$a" = "--help" ] && {
    echo "usage: fake"
    [ -n "$FAKE_CALIB_SAMPLE" ] && echo "  --sample-identical   sample byte-identical code"
    exit 0
  }
done
dir=${FAKE_CALIB_DIR:?}
echo "$*" >> "$dir/args"
k=$(( $(cat "$dir/runs" 2>/dev/null || echo 0) + 1 ))
echo "$k" > "$dir/runs"
# While $FAKE_CALIB_DIR/untimed exists, each run times nothing (a
# compile-only one).
if [ -e "$dir/untimed" ]; then
  echo '{"type":"start","schema_version":4,"tool":"fake","version":"0","time":"2026-01-01T00:00:00Z","timed":false,"arch":"sm_90","baseline":{},"candidate":{},"device":null,"settings":{"pairs":30,"warmup":5,"replays":32,"alpha":0.05,"margin":0.01,"conf":0.95,"seed":0,"cases":3}}'
  echo '{"type":"case_verdict","case":"gemm_i8-256x512x256","verdict":"not_timed","identical_code":true}'
  echo '{"type":"verdict","verdict":"not_timed","timed":false,"message":"fake"}'
  exit 6
fi
echo '{"type":"start","schema_version":4,"tool":"fake","version":"0","time":"2026-01-01T00:00:00Z","timed":true,"arch":"sm_90","baseline":{},"candidate":{},"device":{"vendor":"nvidia","name":"Fake GPU","arch":"sm_90","driver":"0","ordinal":0},"settings":{"pairs":30,"warmup":5,"replays":32,"alpha":0.05,"margin":0.01,"conf":0.95,"seed":0,"cases":3}}'
# The timing detail a calibration does not pass on: a case line, its pairs
# ($FAKE_CALIB_PAIRS, default 3), a block line and a session_time line.
echo '{"type":"case","case":"gemm_f16-256x512x256","family":"gemm","kernel":"k","baseline":{"compiled":true},"candidate":{"compiled":true},"identical_code":true,"tolerance":0,"timed":true,"replays":32}'
i=0
while [ "$i" -lt "${FAKE_CALIB_PAIRS:-3}" ]; do
  i=$((i + 1))
  echo "{\"type\":\"pair\",\"case\":\"gemm_f16-256x512x256\",\"pair\":$i,\"order\":\"ab\",\"baseline_ns\":1000,\"candidate_ns\":1030}"
done
echo '{"type":"block","case":"gemm_f16-256x512x256","block":1,"throttled":false}'
echo '{"type":"session_time","session":1,"time_s":{}}'
# While $FAKE_CALIB_DIR/noisy exists: 40 error lines, then one that says
# the GPU faulted.
if [ -e "$dir/noisy" ]; then
  i=0
  while [ "$i" -lt 40 ]; do
    i=$((i + 1))
    echo "{\"type\":\"error\",\"stage\":\"check\",\"arm\":null,\"case\":null,\"message\":\"noise $i\"}"
  done
  echo '{"type":"error","stage":"time","arm":null,"case":null,"gpu":"faulted","message":"the GPU faulted"}'
fi
# While $FAKE_CALIB_DIR/hostile exists: lines with a NUL byte after a
# literal (jansson 2.14 would skip it): a case_verdict with a false alarm of
# its own and a verdict that would end the run early, neither of which may
# count; then 40 lines that are not JSON.
if [ -e "$dir/hostile" ]; then
  printf '{"type":"case_verdict","case":"extra-1","verdict":"slower","identical_code":true,"n":30,"p_holm":0.001,"ratio_lo":1.02,"ratio_hi":1.04,"timed":true\000}\n'
  printf '{"type":"verdict","verdict":"neutral","timed":true\000}\n'
  i=0
  while [ "$i" -lt 40 ]; do
    i=$((i + 1))
    echo "not json $i"
  done
fi
echo "{\"type\":\"case_verdict\",\"case\":\"gemm_f16-256x512x256\",\"verdict\":\"slower\",\"identical_code\":true,\"n\":30,\"p_holm\":0.001,\"ratio_median\":1.03,\"ratio_lo\":1.02,\"ratio_hi\":1.04,\"detectable_ratio\":1.0$k}"
echo '{"type":"case_verdict","case":"gemm_i8-256x512x256","verdict":"equivalent","identical_code":true,"n":30,"p_holm":0.5,"ratio_median":1.0,"ratio_lo":0.995,"ratio_hi":1.005,"detectable_ratio":1.02}'
if [ $((k % 2)) -eq 0 ]; then
  echo '{"type":"case_verdict","case":"conv2d_f32-64x64","verdict":"faster","identical_code":true,"n":30,"p_holm":0.01,"ratio_median":0.97,"ratio_lo":0.95,"ratio_hi":0.985}'
else
  echo '{"type":"case_verdict","case":"conv2d_f32-64x64","verdict":"inconclusive","identical_code":true,"n":30,"p_holm":0.3,"ratio_median":0.98,"ratio_lo":0.95,"ratio_hi":1.01}'
fi
sleep "${FAKE_CALIB_SLEEP:-0}"
echo '{"type":"verdict","verdict":"regression","timed":true,"message":"fake"}'
exit 1
