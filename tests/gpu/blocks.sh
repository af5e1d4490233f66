#!/usr/bin/env bash
# Do intervals hold up from run to run? In one call on a machine with an
# NVIDIA GPU, after scripts/pack-gpu.sh (carry .carry):
#
#     bash tests/gpu/blocks.sh OUTDIR [BUILD] [REPEATS] [CONFIGS]
#
# Runs, REPEATS times each and interleaved (so that drift of the GPU's state
# over the call reaches every configuration alike), nvrtc against itself
# (byte-identical code: an A/A control) and nvrtc against the slow shim, each
# both in the default blocks (a fresh load of both arms' code every 2 pairs)
# and under one load for all 30 pairs (CONFIGS, default "aa_blocks aa_one
# slow_blocks slow_one"; a name ending in _noflush runs in blocks without the
# cache flush before each timed replay). A name ending in _ppbK runs 15
# blocks of K pairs, one look (--pairs 15K --max-pairs 15K), for how the
# pairs in a block narrow the intervals; plant_* is the shim_delay
# candidate at $PLANT_CYCLES (default 16) cycles in the grid's first block,
# aalt_* nvrtc against its alt copy with --sample-identical. bench/intervals.py
# then reports how
# many A/A intervals hold 1 and how many pairs of repeats have overlapping
# intervals, judged by blocks and pair by pair. Everything lands in OUTDIR,
# also as one tarball (the device tool brings back at most 8 files).
set -u
out=${1:?usage: blocks.sh OUTDIR [BUILD] [REPEATS]}
build=${2:-build}
repeats=${3:-8}
configs=${4:-aa_blocks aa_one slow_blocks slow_one}
mkdir -p "$out/runs"
run="$build/bin/qual-run"
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
slow="$build/shims/libshim_slow.so"
delay="$build/shims/libshim_delay.so"
alt=/usr/local/cuda/lib64/libnvrtc.alt.so.13
here=$(cd "$(dirname "$0")/../.." && pwd)
status=0

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv >"$out/nvidia-smi.txt" 2>&1
t0=$SECONDS
for r in $(seq "$repeats"); do
  for cfg in $configs; do
    envs=()
    case $cfg in
      aa_*) cand=$nvrtc want=0 ;;
      aalt_*) cand=$alt want=0 ;;
      slow_*) cand=$slow want=1 ;;
      plant_*) cand=$delay want=any
        envs=(QUAL_SHIM_DELAY_CYCLES="${PLANT_CYCLES:-16}" QUAL_SHIM_DELAY_BLOCKS=first) ;;
    esac
    case $cfg in
      *_blocks) opts=() ;;
      *_one) opts=(--one-load) ;;
      *_noflush) opts=(--flush-mib 0) ;;
      *_ppb*) k=${cfg##*_ppb}
        opts=(--pairs-per-block "$k" --pairs $((15 * k)) --max-pairs $((15 * k))) ;;
    esac
    case $cfg in aalt_*) opts+=(--sample-identical) ;; esac
    env "${envs[@]}" "$run" "$nvrtc" "$cand" "${opts[@]}" >"$out/runs/$cfg.$r.jsonl" \
      2>"$out/runs/$cfg.$r.err"
    got=$?
    [ "$want" = any ] && [ "$got" -le 1 ] && got=any
    [ "$got" = "$want" ] || { echo "$cfg.$r: exit $got, want $want"; status=1; }
  done
done
echo "$((repeats * $(echo $configs | wc -w))) runs in $((SECONDS - t0)) s" | tee "$out/summary.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv \
  >>"$out/nvidia-smi.txt" 2>&1
python3 "$here/bench/intervals.py" "$out/runs" | tee -a "$out/summary.txt"
for f in "$out"/runs/*.1.jsonl; do
  python3 "$here/tests/tools/validate_lines.py" "$here/docs/schema/lines.schema.json" "$f" |
    tee -a "$out/summary.txt"
done
tar -czf "$out/blocks.tar.gz" -C "$out" runs nvidia-smi.txt summary.txt
exit $status
