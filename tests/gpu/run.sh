#!/usr/bin/env bash
# The GPU suite, in one call on a machine with an NVIDIA GPU (the H200 the
# device tool lends). Run from the repository root after building (the build
# folder is carried; build with -DQUAL_STATIC_DEPS=ON so it needs no packages):
#
#     bash tests/gpu/run.sh OUTDIR [BUILD]
#
# It writes each run's JSON lines and stderr under OUTDIR and prints a summary
# table last. Steps: the backend smoke test; nvrtc against itself (every case
# must pass its oracle in both arms: an A/A control); nvrtc against nvrtc.alt
# (no case may be slower or faster); nvrtc against a shim known to be slower
# (slower where it slows, nothing faster); nvrtc against the miscompiling shim
# (fail). Exit status 0 only when every expectation held.
set -u
out=${1:?usage: run.sh OUTDIR [BUILD]}
build=${2:-build}
mkdir -p "$out"
run="$build/bin/qual-run"
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
alt=/usr/local/cuda/lib64/libnvrtc.alt.so.13
shims="$build/shims"
status=0
summary=()

note() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu \
  --format=csv >"$out/nvidia-smi.txt" 2>&1
note "device: $(tail -n 1 "$out/nvidia-smi.txt")"

if [ -x "$build/tests/gpu_smoke" ]; then
  if "$build/tests/gpu_smoke" >"$out/smoke.txt" 2>&1; then
    note "smoke: PASS"
  else
    note "smoke: FAIL (see smoke.txt)"; status=1
  fi
  tail -n 15 "$out/smoke.txt"
fi

# qualify NAME EXPECT_EXIT BASE CAND [qual-run options]
qualify() {
  local name=$1 want=$2 base=$3 cand=$4
  shift 4
  local t0=$SECONDS
  "$run" "$base" "$cand" "$@" >"$out/$name.jsonl" 2>"$out/$name.err"
  local got=$?
  local verdict
  verdict=$(tail -n 1 "$out/$name.jsonl" | grep -o '"verdict":"[a-z_]*"' | head -n 1)
  note "$name: exit $got (want $want) $verdict in $((SECONDS - t0)) s"
  [ "$got" = "$want" ] || status=1
  # Per case: verdict, median ratio and interval, counts.
  grep '"type":"case_verdict"' "$out/$name.jsonl" | python3 -c '
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    f = lambda k: ("%.4f" % d[k]) if isinstance(d.get(k), (int, float)) else "-"
    print("  %-28s %-12s ratio %s [%s, %s] faster %s slower %s p_holm %s sd %s" % (
        d["case"], d["verdict"], f("ratio_median"), f("ratio_lo"), f("ratio_hi"),
        d.get("candidate_faster", "-"), d.get("candidate_slower", "-"), f("p_holm"), f("log_ratio_sd")))
' | tee -a "$out/summary.txt"
  grep '"type":"error"' "$out/$name.jsonl" | head -n 5 | tee -a "$out/summary.txt"
  # Every nvrtc compile must be the compiler's own work, with its ptxas
  # report: a compile served from a cache has none.
  local missing
  missing=$(grep '"type":"case"' "$out/$name.jsonl" | python3 -c '
import json, sys
print(" ".join(d["case"] + "/" + arm for d in map(json.loads, sys.stdin)
      for arm in ("baseline", "candidate")
      if d[arm].get("compiled") and d[arm].get("registers") is None))')
  if [ -n "$missing" ]; then
    note "  resource report missing (a compile served from a cache?): $missing"
    status=1
  fi
}

qualify aa 0 "$nvrtc" "$nvrtc"
qualify alt 0 "$nvrtc" "$alt"
qualify slow 1 "$nvrtc" "$shims/libshim_slow.so"
qualify miscompile 2 "$nvrtc" "$shims/libshim_miscompile.so"
[ -n "${QUAL_GPU_EXTRA:-}" ] && eval "$QUAL_GPU_EXTRA"
note "gpu suite: $([ $status = 0 ] && echo PASS || echo FAIL)"
# The device tool brings back at most 8 files: everything also goes in one tarball.
tar -czf "$out/gpu-suite.tar.gz" -C "$out" --exclude gpu-suite.tar.gz . 2>/dev/null
exit $status
