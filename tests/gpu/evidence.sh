#!/usr/bin/env bash
# One device call's evidence for the verdicts and a job's fixed cost, on
# the GPU machine after scripts/pack-gpu.sh, from the repository root:
#
#     bash tests/gpu/evidence.sh OUTDIR [BUILD]
#
# The parts of $EVIDENCE_PARTS (default "cost aa planted suites"), in that
# order, each into OUTDIR/PART.out (what it printed) and OUTDIR/PART.tar.gz
# (its files, the inner verdicts.tar.gz left out: its jobs are there):
#
#   cost     bench/cost.sh -n $COST_RUNS (default 5): a full job's split,
#            uncached and with the baseline cached
#   aa       tests/gpu/verdicts.sh's A/A jobs for $AA_BUDGET_S s (default 150)
#   planted  its planted jobs (PLANT_BLOCKS=first, $PLANT_DELAYS, default 16,
#            three repeats) and, with $EXIT_GROUPS, its single-case jobs of
#            exit statuses in doubt, for $PLANTED_BUDGET_S s (default 90)
#   pair     a real nvrtc of another version against the toolkit's, three
#            jobs: the first pack of $PAIR_PACKS (default .carry-n12, from
#            scripts/fetch-nvrtc.sh) unpacked by tests/gpu/unpack-nvrtc.sh
#   suites   tests/gpu/suites.sh, ended after $SUITES_S s (default 200)
#   blocks   tests/gpu/blocks.sh, $BLOCKS_REPEATS (default 8) rounds of
#            $BLOCKS_CONFIGS (default "aalt_ppb2 aalt_ppb4 aalt_ppb8
#            plant_ppb2 plant_ppb4 plant_ppb8": 15 blocks of 2, 4 and 8 pairs)
#   costppb  bench/cost.sh -n $COST_RUNS at 15 blocks of each K of
#            $COST_PPB (default "2 4 8") pairs: --pairs-per-block K --pairs 15K
#   ctxopen  bench/ctx_open.py $CTX_OPEN_REPEATS (default 3): what opening
#            sessions' contexts side by side costs against one after another
#
# Every part runs even when one before it failed; the exit status is 1 when
# any did.
set -u
out=${1:?usage: evidence.sh OUTDIR [BUILD]}
build=${2:-.carry}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$out"
failed=0

# part NAME COMMAND...: COMMAND's output into OUTDIR/NAME.out, its folder
# OUTDIR/NAME packed into OUTDIR/NAME.tar.gz and removed.
part() {
  local name=$1 t0=$SECONDS rc
  shift
  echo "==== $name" | tee "$out/$name.out"
  "$@" >>"$out/$name.out" 2>&1
  rc=$?
  echo "==== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$out/$name.out"
  [ $rc = 0 ] || failed=1
  if [ -d "$out/$name" ]; then
    rm -f "$out/$name/verdicts.tar.gz" "$out/$name/blocks.tar.gz"
    tar czf "$out/$name.tar.gz" -C "$out" "$name" && rm -rf "${out:?}/$name"
  fi
}

for p in ${EVIDENCE_PARTS:-cost aa planted suites}; do
  case $p in
  cost)
    part cost bash "$root/bench/cost.sh" -n "${COST_RUNS:-5}" "$out/cost" "$build" ;;
  aa)
    part aa env VERDICTS_BUDGET_S="${AA_BUDGET_S:-150}" AA_REPEATS="${AA_REPEATS:-40}" EXIT_GROUPS= \
      PLANT_DELAYS=" " bash "$here/verdicts.sh" "$out/aa" "$build" ;;
  planted)
    part planted env VERDICTS_BUDGET_S="${PLANTED_BUDGET_S:-90}" PLANT_BLOCKS=first \
      PLANT_DELAYS="${PLANT_DELAYS:-16}" PLANT_REPEATS="${PLANT_REPEATS:-3}" AA_REPEATS=0 \
      EXIT_GROUPS="${EXIT_GROUPS:-}" EXIT_REPEATS="${EXIT_REPEATS:-5}" \
      bash "$here/verdicts.sh" "$out/planted" "$build" ;;
  pair)
    lib=$(bash "$here/unpack-nvrtc.sh" "${PAIR_PACKS:-.carry-n12}" | head -n 1 | cut -d' ' -f2)
    if [ -z "$lib" ]; then
      echo "evidence.sh: no nvrtc pack in ${PAIR_PACKS:-.carry-n12}" >&2
      failed=1
      continue
    fi
    part pair env VERDICTS_BUDGET_S=120 AA_REPEATS=0 PLANT_DELAYS=" " EXIT_GROUPS= PAIR_LIB="$lib" \
      bash "$here/verdicts.sh" "$out/pair" "$build" ;;
  blocks)
    part blocks bash "$here/blocks.sh" "$out/blocks" "$build" "${BLOCKS_REPEATS:-8}" \
      "${BLOCKS_CONFIGS:-aalt_ppb2 aalt_ppb4 aalt_ppb8 plant_ppb2 plant_ppb4 plant_ppb8}" ;;
  costppb)
    part costppb bash -c 'for k in $1; do
        echo "---- $((15 * k)) pairs in blocks of $k"
        COST_ARGS="--pairs-per-block $k --pairs $((15 * k))" bash "$2" -n "$3" "$4/ppb$k" "$5" || exit 1
      done' costppb "${COST_PPB:-2 4 8}" "$root/bench/cost.sh" "${COST_RUNS:-5}" "$out/costppb" "$build" ;;
  ctxopen)
    part ctxopen python3 "$root/bench/ctx_open.py" "${CTX_OPEN_REPEATS:-3}" ;;
  suites)
    part suites timeout "${SUITES_S:-200}" bash "$here/suites.sh" "$out/suites" "$build" ;;
  *)
    echo "evidence.sh: no part '$p'" >&2
    failed=1 ;;
  esac
done
exit $failed
