#!/usr/bin/env bash
# Where a case's ratio moves with its neighbours (docs/verdicts.md, "The same
# conditions at every look"): one case X timed at a fixed sample, among all
# cases, alone, after one other case, and before one, each twice, against
# the toolkit's nvrtc (13.0). From the repository root after
# scripts/pack-gpu.sh:
#
#     bash tests/gpu/neighbours.sh OUTDIR BUILD CANDIDATE X BEFORE AFTER [-- OPTIONS]
#
# BEFORE is a case the table puts before X, AFTER one it puts after. Every
# job's lines in OUTDIR/jobs/, wall times in OUTDIR/jobs.txt; the per-block
# figures (ratio, position in its session, clocks, power) are for
# bench/neighbours.py, run where the lines come back.
set -u
out=${1:?usage: neighbours.sh OUTDIR BUILD CANDIDATE X BEFORE AFTER [-- OPTIONS]}
build=${2:?} cand=${3:?no candidate: did tests/gpu/unpack-nvrtc.sh find one?} x=${4:?} before=${5:?} after=${6:?}
shift 6
[ "${1:-}" = "--" ] && shift
mkdir -p "$out/jobs"
: >"$out/jobs.txt"
. "$(dirname "$0")/job.sh"
job() { gpu_fixed_job "$out" "$1" "$build" "$cand" "${NEIGHBOURS_PAIRS:-480}" "${@:2}"; }
for r in 1 2; do
  job "among.$r" "$@"
  job "alone.$r" --case "$x" "$@"
  job "after_other.$r" --case "$before" --case "$x" "$@"
  job "before_other.$r" --case "$x" --case "$after" "$@"
done
python3 "$(dirname "$0")/../../bench/neighbours.py" "$x" "$out/jobs" | tee "$out/summary.txt"
