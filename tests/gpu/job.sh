# shellcheck shell=bash
# Sourced by the GPU scripts that run series of qual-run jobs (rounds.sh,
# neighbours.sh, pads.sh, history.sh):
#
#     gpu_job OUTDIR NAME COMMAND...
#
# runs COMMAND with its stdout in OUTDIR/jobs/NAME.jsonl and its stderr in
# OUTDIR/jobs/NAME.err, and adds "NAME EXIT WALL_MS" to OUTDIR/jobs.txt.
#
#     gpu_fixed_job OUTDIR NAME BUILD CANDIDATE PAIRS QUAL_RUN_ARGS...
#
# is gpu_job of BUILD's qual-run, the toolkit's nvrtc (13.0) against
# CANDIDATE at PAIRS pairs and no sampling beyond them.
gpu_job() {
  local out=$1 name=$2 t0 rc
  shift 2
  mkdir -p "$out/jobs"
  t0=$(date +%s%N)
  "$@" >"$out/jobs/$name.jsonl" 2>"$out/jobs/$name.err"
  rc=$?
  echo "$name $rc $(( ($(date +%s%N) - t0) / 1000000 ))" >>"$out/jobs.txt"
}

gpu_fixed_job() {
  local out=$1 name=$2 build=$3 cand=$4 pairs=$5
  shift 5
  gpu_job "$out" "$name" "$build/bin/qual-run" /usr/local/cuda/lib64/libnvrtc.so.13 "$cand" \
    --pairs "$pairs" --max-pairs "$pairs" "$@"
}
