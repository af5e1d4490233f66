#!/usr/bin/env bash
# How verdicts behave on the GPU (docs/verdicts.md), in one call on a machine
# with an NVIDIA GPU, after scripts/pack-gpu.sh:
#
#     bash tests/gpu/verdicts.sh OUTDIR [BUILD]
#
# Three parts, each a series of whole qual-run jobs with the default
# sampling and gate, stopped from starting new jobs once $VERDICTS_BUDGET_S
# seconds (default 500) have passed so that the summary is always written;
# they run in the order planted, pair, aa, so that the A/A jobs take what
# the budget leaves:
#
#   aa       nvrtc against itself and against its alt copy (byte-identical
#            code), with --sample-identical so that every case is sampled and
#            judged by its timing: A/A case comparisons, how many were called
#            slower or faster by the timing (timing_verdict), interval
#            coverage of 1, decided / stopped. $AA_REPEATS rounds (default 10).
#   planted  the shim_delay candidate (tests/shims/shim_delay.c) at each of
#            $PLANT_DELAYS cycles (default "64 256"): first one long run
#            (--pairs $PLANT_LONG_PAIRS, default 240, no sampling beyond them)
#            whose median ratio per case stands for the case's true effect,
#            then $PLANT_REPEATS (default 3) ordinary jobs: per case, whether
#            every repeat gave the same verdict, and whether the exit statuses
#            agree; cases whose true effect is 1% or more called slower.
#            $PLANT_BLOCKS "first" sets QUAL_SHIM_DELAY_BLOCKS=first (only the
#            grid's first block waits: smaller effects; jobs delayNfirst.*).
#   exit     single-case jobs whose exit status is in doubt: for each
#            DELAY:CASE of $EXIT_GROUPS (none by default; a case whose true
#            effect at that delay lies near the margin), $EXIT_REPEATS
#            (default 5) jobs of that case alone (--case) with shim_delay at
#            DELAY cycles (and $PLANT_BLOCKS): whether the group's exit
#            statuses agree. Run after the planted part, whose long runs give
#            the true effects. EXIT_GROUPS=all: every case of each delay's
#            long run at that delay, delay by delay (every case's exit
#            status, not only those in doubt).
#   pair     a real nvrtc of another version ($PAIR_LIB, e.g. a wheel that
#            tests/gpu/unpack-nvrtc.sh unpacked; skipped when unset)
#            against the toolkit's: $PAIR_REPEATS (default 3) jobs, their exit
#            statuses and case verdicts.
#
# $VERDICTS_OPTS (split on spaces, and globbed: plain options only) go to
# every job's qual-run.
# Every job's wall time and its verdict line's time_s are kept; the block
# lines' clocks are counted (with and without NVML readings, throttled).
# Prints the summary (also OUTDIR/summary.txt); every job's lines are in
# OUTDIR/verdicts.tar.gz. Exit status 1 when an A/A job did not pass.
set -u
out=${1:?usage: verdicts.sh OUTDIR [BUILD]}
build=${2:-.carry}
here=$(cd "$(dirname "$0")" && pwd)
run="$build/bin/qual-run"
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
alt=/usr/local/cuda/lib64/libnvrtc.alt.so.13
delay=$(ls "$build"/shims/libshim_delay.so 2>/dev/null || ls "$build"/shims/shim_delay.so 2>/dev/null)
budget=${VERDICTS_BUDGET_S:-500}
mkdir -p "$out/jobs"
: >"$out/jobs.txt"
start=$SECONDS

# job PART NAME ARGS...: one qual-run job into jobs/NAME.jsonl, recorded in
# jobs.txt as "PART NAME EXIT WALL_S"; refused (returns 1) past the budget.
job() {
  local part=$1 name=$2 t0 rc
  shift 2
  [ $((SECONDS - start)) -lt "$budget" ] || return 1
  t0=$(date +%s%N)
  # shellcheck disable=SC2086 # $VERDICTS_OPTS: qual-run options, split
  "$run" "$@" ${VERDICTS_OPTS:-} >"$out/jobs/$name.jsonl" 2>"$out/jobs/$name.err"
  rc=$?
  echo "$part $name $rc $(( ($(date +%s%N) - t0) / 1000000 ))" >>"$out/jobs.txt"
  return 0
}

blocks=${PLANT_BLOCKS:-all}
case $blocks in
  all) tag= ;;
  first) tag=first ;;
  *) echo "verdicts.sh: PLANT_BLOCKS is all or first, not '$blocks'" >&2; exit 2 ;;
esac
export QUAL_SHIM_DELAY_BLOCKS=$blocks
if [ -n "$delay" ]; then
  for d in ${PLANT_DELAYS:-64 256}; do
    long=${PLANT_LONG_PAIRS:-240}
    QUAL_SHIM_DELAY_CYCLES=$d job planted-long "delay$d$tag.long" "$nvrtc" "$delay" \
      --pairs "$long" --max-pairs "$long" || break
    for r in $(seq "${PLANT_REPEATS:-3}"); do
      QUAL_SHIM_DELAY_CYCLES=$d job planted "delay$d$tag.$r" "$nvrtc" "$delay" || break
    done
  done
  groups=${EXIT_GROUPS:-}
  if [ "$groups" = all ]; then
    groups=
    for d in ${PLANT_DELAYS:-64 256}; do
      for c in $(grep -o '"type":"case_verdict","case":"[^"]*"' "$out/jobs/delay$d$tag.long.jsonl" \
                 2>/dev/null | sed 's/.*"case":"//; s/"$//'); do
        groups="$groups $d:$c"
      done
    done
  fi
  for g in $groups; do
    d=${g%%:*} c=${g#*:}
    for r in $(seq "${EXIT_REPEATS:-5}"); do
      QUAL_SHIM_DELAY_CYCLES=$d job exit "exit-delay$d$tag-$c.$r" "$nvrtc" "$delay" \
        --case "$c" || break 2
    done
  done
else
  echo "no shim_delay in $build/shims: the planted part is skipped" >>"$out/jobs.txt.note"
fi
if [ -n "${PAIR_LIB:-}" ]; then
  for r in $(seq "${PAIR_REPEATS:-3}"); do
    job pair "pair.$r" "$nvrtc" "$PAIR_LIB" || break
  done
fi

# A/A last: it takes what the budget leaves.
for r in $(seq "${AA_REPEATS:-10}"); do
  job aa "aa-self.$r" "$nvrtc" "$nvrtc" --sample-identical || break
  job aa "aa-alt.$r" "$nvrtc" "$alt" --sample-identical || break
done
python3 "$here/verdicts_summary.py" "$out" | tee "$out/summary.txt"
status=${PIPESTATUS[0]}
tar -czf "$out/verdicts.tar.gz" -C "$out" jobs jobs.txt summary.txt
exit "$status"
