#!/usr/bin/env bash
# The GPU evidence for verdicts one can act on (docs/verdicts.md, "The same
# conditions at every look"; docs/explain.md; docs/bisect.md), in one device
# call from the repository root, carrying BUILD (scripts/pack-gpu.sh) and
# .carry-nvrtc (scripts/fetch-nvrtc.sh -- 12.4):
#
#     bash tests/gpu/act.sh OUTDIR BUILD PART... [-- QUAL_RUN_OPTIONS]
#
# PARTs, in the order given, each under its own time limit:
#   rounds    tests/gpu/rounds.sh: nvrtc 12.4 against 13.0, three cases alone
#             and among all ($ACT_ROUNDS_CASES), QUAL_RUN_OPTIONS to each job
#   explain   tests/gpu/explain.sh on nvrtc 13.0 against 12.4
#   neighbours tests/gpu/neighbours.sh: one case among all, alone, after
#             one other and before one ($ACT_NEIGHBOURS: X BEFORE AFTER)
#   neighboursMS the same with --settle-ms MS (neighbours0: as before it)
#   pads      tests/gpu/pads.sh: one case alone at several pads, and among all
#   history   tests/gpu/history.sh: one case after the cases before it, after
#             each one, at pads, in one session ($ACT_PADS_CASE)
#   contexts  tests/gpu/contexts.sh: three cases ($ACT_ROUNDS_CASES) among all
#             in a shared context and each in its own, alone, after one
#             other; and what contexts of their own cost a job
#   bisect    tests/gpu/bisect.sh: a timed bisection over 8 builds
#   margin    tests/gpu/verdicts.sh's planted part at $ACT_MARGIN_DELAYS
#             (default "128"), first blocks only: jobs with cases near the
#             margin's edge, their wall times
#   marging4  the same with --look-growth 4 (margingG: --look-growth G)
#   verdicts  tests/gpu/verdicts.sh whole ($VERDICTS_* as it reads them)
#   suites    tests/gpu/suites.sh
# Everything of a part in OUTDIR/PART.tar.gz, with OUTDIR/PART.rc and the
# summaries in OUTDIR/summaries.txt.
set -u
out=${1:?usage: act.sh OUTDIR BUILD PART... [-- OPTIONS]}
build=${2:?}
shift 2
parts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do parts+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv >"$out/gpu.txt" 2>&1
bash "$here/unpack-nvrtc.sh" .carry-nvrtc /tmp/nvrtc >"$out/nvrtc.txt" 2>&1
pair=$(awk '$1 ~ /^12\.4/ {print $2}' "$out/nvrtc.txt" | head -n 1)
[ -x "$build/tools/bin/nvdisasm" ] && export QUAL_NVDISASM=$(cd "$build/tools/bin" && pwd)/nvdisasm
cases=${ACT_ROUNDS_CASES:-gemm_f16_wgmma-256x1024x1024 gemm_f16-256x1024x1024 conv3x3_f16-56x56x64x64}
for p in "${parts[@]}"; do
  t0=$SECONDS
  case $p in
    rounds) timeout 240 bash "$here/rounds.sh" "$out/rounds" "$build" "$pair" $cases -- "$@" ;;
    explain) timeout 60 bash "$here/explain.sh" "$out/explain" "$build" "$pair" ;;
    neighbours) timeout 200 bash "$here/neighbours.sh" "$out/neighbours" "$build" "$pair" \
                  ${ACT_NEIGHBOURS:-gemm_f16_wgmma-256x1024x1024 conv3x3_f16-7x7x512x512 attention_f16_wgmma-512} -- "$@" ;;
    neighbours[0-9]*) timeout 200 bash "$here/neighbours.sh" "$out/$p" "$build" "$pair" \
                  ${ACT_NEIGHBOURS:-gemm_f16_wgmma-256x1024x1024 conv3x3_f16-7x7x512x512 attention_f16_wgmma-512} -- --settle-ms "${p#neighbours}" "$@" ;;
    pads) timeout 150 bash "$here/pads.sh" "$out/pads" "$build" "$pair" \
            "${ACT_PADS_CASE:-gemm_f16_wgmma-256x1024x1024}" ;;
    history) timeout 240 bash "$here/history.sh" "$out/history" "$build" "$pair" \
            "${ACT_PADS_CASE:-gemm_f16_wgmma-256x1024x1024}" -- "$@" ;;
    contexts) timeout ${ACT_CONTEXTS_TIMEOUT_S:-330} bash "$here/contexts.sh" "$out/contexts" "$build" "$pair" $cases -- "$@" ;;
    bisect) timeout 150 bash "$here/bisect.sh" "$out/bisect" "$build" ;;
    margin|marging[0-9]*) g=${p#margin} && g=${g#g}
            VERDICTS_OPTS=${g:+--look-growth $g} VERDICTS_BUDGET_S=${ACT_MARGIN_BUDGET_S:-100} PLANT_DELAYS=${ACT_MARGIN_DELAYS:-128} \
            PLANT_BLOCKS=first PLANT_REPEATS=${ACT_MARGIN_REPEATS:-2} AA_REPEATS=0 \
            timeout 140 bash "$here/verdicts.sh" "$out/$p" "$build" ;;
    verdicts) PAIR_LIB=$pair timeout ${ACT_VERDICTS_TIMEOUT_S:-590} bash "$here/verdicts.sh" "$out/verdicts" "$build" ;;
    suites) timeout ${ACT_SUITES_TIMEOUT_S:-400} bash "$here/suites.sh" "$out/suites" "$build" ;;
    *) echo "act.sh: no part '$p'" >&2; exit 2 ;;
  esac
  rc=$?
  echo "$rc" >"$out/$p.rc"
  { echo "==== $p: exit $rc, $((SECONDS - t0)) s"
    cat "$out/$p/summary.txt" "$out/$p/explain/summary.txt" 2>/dev/null; } >>"$out/summaries.txt"
  # What comes back must be few files: each part's folder as a tarball,
  # made as the part ends, so that a call cut short keeps what ran.
  tar -czf "$out/$p.tar.gz" -C "$out" "$p" 2>/dev/null && rm -rf "${out:?}/$p"
done
cat "$out/summaries.txt"
