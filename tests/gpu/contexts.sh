#!/usr/bin/env bash
# Each case in a GPU context of its own (qual-run --case-contexts;
# docs/verdicts.md, "The same conditions at every look"), against the
# toolkit's nvrtc (13.0), from the repository root after scripts/pack-gpu.sh:
#
#     bash tests/gpu/contexts.sh OUTDIR BUILD CANDIDATE X OTHER... [-- OPTIONS]
#
# $CONTEXTS_REPEATS times (default 2), at $CONTEXTS_PAIRS pairs (default 480,
# no sampling beyond them): every case among all in one shared context a
# session and each in its own; each of X OTHER... alone (--case); X after
# $CONTEXTS_PREV (default conv3x3_f16-14x14x256x256) shared and in contexts
# of their own; and X alone in a process started just after one that timed
# $CONTEXTS_PREV alone (does the state outlive its context?). Then
# $CONTEXTS_COST_REPEATS (default 3) ordinary jobs (default sampling and
# gate) of every case, shared and in contexts of their own: wall times and
# the sessions' time opening the GPU. Lines in OUTDIR/jobs/, wall times in
# OUTDIR/jobs.txt, bench/open_cost.c's reopen and create in
# OUTDIR/open_cost.jsonl, the summary in OUTDIR/summary.txt.
set -u
out=${1:?usage: contexts.sh OUTDIR BUILD CANDIDATE X OTHER... [-- OPTIONS]}
build=${2:?} cand=${3:?no candidate: did tests/gpu/unpack-nvrtc.sh find one?}
shift 3
cases=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do cases+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#cases[@]} -gt 0 ] || { echo "contexts.sh: no case named" >&2; exit 2; }
mkdir -p "$out/jobs"
: >"$out/jobs.txt"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/job.sh"
job() { gpu_fixed_job "$out" "$1" "$build" "$cand" "${CONTEXTS_PAIRS:-480}" "${@:2}"; }
x=${cases[0]} prev=${CONTEXTS_PREV:-conv3x3_f16-14x14x256x256}
# What a context costs within one process: released and retained again,
# and made beside the primary one (bench/open_cost.c).
{ timeout 60 "$build/bin/open_cost" reopen 12; timeout 60 "$build/bin/open_cost" create 12; } \
  >"$out/open_cost.jsonl" 2>&1
for r in $(seq 1 "${CONTEXTS_REPEATS:-2}"); do
  job "among.shared.$r" --shared-context "$@"
  job "among.own.$r" --case-contexts "$@"
  for c in "${cases[@]}"; do job "alone.$c.$r" --case "$c" "$@"; done
  job "after.shared.$r" --shared-context --case "$prev" --case "$x" "$@"
  job "after.own.$r" --case-contexts --case "$prev" --case "$x" "$@"
  job "prevproc.$r" --case "$prev" "$@"
  job "afterproc.$r" --case "$x" "$@"
done
{
  for c in "${cases[@]}"; do
    echo "== $c"
    python3 "$here/../../bench/neighbours.py" "$c" "$out/jobs"
  done
  echo "== a context within one process (bench/open_cost.c reopen and create)"
  cat "$out/open_cost.jsonl"
} | tee "$out/summary.txt"
for r in $(seq 1 "${CONTEXTS_COST_REPEATS:-3}"); do
  for m in shared-context case-contexts; do
    gpu_job "$out" "cost.$m.$r" "$build/bin/qual-run" /usr/local/cuda/lib64/libnvrtc.so.13 \
      "$cand" "--$m" "$@"
  done
done
{
  echo "== cost (wall ms, sessions, the sessions' open s, verdict, exit)"
  python3 "$here/../../bench/contexts_cost.py" "$out/jobs.txt" "$out/jobs" cost.
} | tee -a "$out/summary.txt"
