#!/usr/bin/env bash
# Whether a case's ratio depends on the cases timed beside it
# (docs/verdicts.md, "The same conditions at every look"), in one call on a
# machine with an NVIDIA GPU, after scripts/pack-gpu.sh:
#
#     bash tests/gpu/rounds.sh OUTDIR BUILD CANDIDATE CASE... [-- QUAL_RUN_OPTIONS]
#
# Against the toolkit's nvrtc (13.0) as baseline, for CANDIDATE (a real
# nvrtc of another version: tests/gpu/unpack-nvrtc.sh):
#   among.fixed    every case, $ROUNDS_PAIRS pairs (default 480) and no
#                  sampling beyond them: each case interleaved with all the
#                  others throughout;
#   alone.CASE     each CASE alone (--case), the same pairs;
#   among.N        $ROUNDS_SAMPLED (default 2) jobs of every case with the
#                  default sampling: the first look's blocks against the later
#                  rounds';
#   aloneS.CASE    each CASE alone with the default sampling.
# QUAL_RUN_OPTIONS go to every job (the setting under test). Prints per case
# each job's ratio and interval, the first look's blocks against the later
# rounds', the clocks, power and temperature over the case's blocks, and
# whether the alone and among ratios lie within each other's intervals
# (OUTDIR/summary.txt; the jobs' lines in OUTDIR/jobs/). Exit 1 when a CASE's
# alone and among fixed ratios do not.
set -u
out=${1:?usage: rounds.sh OUTDIR BUILD CANDIDATE CASE... [-- OPTIONS]}
build=${2:?}
cand=${3:?}
shift 3
cases=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do cases+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
here=$(cd "$(dirname "$0")" && pwd)
run="$build/bin/qual-run"
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
pairs=${ROUNDS_PAIRS:-480}
mkdir -p "$out/jobs"
: >"$out/jobs.txt"

. "$here/job.sh"
job() {
  local name=$1
  shift
  gpu_job "$out" "$name" "$run" "$nvrtc" "$cand" "$@"
}

job among.fixed --pairs "$pairs" --max-pairs "$pairs" "$@"
for c in "${cases[@]}"; do
  job "alone.$c" --case "$c" --pairs "$pairs" --max-pairs "$pairs" "$@"
done
for r in $(seq "${ROUNDS_SAMPLED:-2}"); do
  job "among.$r" "$@"
done
for c in "${cases[@]}"; do
  job "aloneS.$c" --case "$c" "$@"
done
python3 "$here/rounds_summary.py" "$out" "${cases[@]}" | tee "$out/summary.txt"
exit "${PIPESTATUS[0]}"
