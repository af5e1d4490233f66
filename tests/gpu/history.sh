#!/usr/bin/env bash
# What of the cases timed before a case moves its ratio (docs/verdicts.md,
# "The same conditions at every look"): case X at a fixed sample among all
# cases, alone, after all the cases the table puts before it, before all
# those it puts after, after each one case before it, and alone and among
# all at pads of $HISTORY_PADS MiB (qual-run --pad-mib) and in one session
# (--sessions 1), against the
# toolkit's nvrtc (13.0). From the repository root after scripts/pack-gpu.sh:
#
#     bash tests/gpu/history.sh OUTDIR BUILD CANDIDATE X [-- OPTIONS]
#
# Lines in OUTDIR/jobs/ (bench/neighbours.py reads them), wall times in
# OUTDIR/jobs.txt, the summary in OUTDIR/summary.txt.
set -u
out=${1:?usage: history.sh OUTDIR BUILD CANDIDATE X [-- OPTIONS]}
build=${2:?} cand=${3:?no candidate: did tests/gpu/unpack-nvrtc.sh find one?} x=${4:?}
shift 4
[ "${1:-}" = "--" ] && shift
mkdir -p "$out/jobs"
: >"$out/jobs.txt"
. "$(dirname "$0")/job.sh"
job() { gpu_fixed_job "$out" "$1" "$build" "$cand" "${HISTORY_PAIRS:-480}" "${@:2}"; }
mapfile -t all < <("$build/bin/qual-run" --list)
before=() after=() seen=0
for c in "${all[@]}"; do
  if [ "$c" = "$x" ]; then seen=1
  elif [ $seen = 0 ]; then before+=("$c")
  else after+=("$c"); fi
done
[ "$seen" = 1 ] || { echo "history.sh: no case '$x' in qual-run --list" >&2; exit 2; }
prior=() later=()
for c in "${before[@]}"; do prior+=(--case "$c"); done
for c in "${after[@]}"; do later+=(--case "$c"); done
job among "$@"
job alone --case "$x" "$@"
job after_all "${prior[@]}" --case "$x" "$@"
job before_all --case "$x" "${later[@]}" "$@"
for c in "${before[@]}"; do
  job "after.$c" --case "$c" --case "$x" "$@"
done
for p in ${HISTORY_PADS:-8 64 512}; do
  job "alone.pad$p" --case "$x" --pad-mib "$p" "$@"
  job "among.pad$p" --pad-mib "$p" "$@"
done
job among.s1 --sessions 1 "$@"
job alone.s1 --case "$x" --sessions 1 "$@"
job among.2 "$@"
job alone.2 --case "$x" "$@"
python3 "$(dirname "$0")/../../bench/neighbours.py" "$x" "$out/jobs" | tee "$out/summary.txt"
