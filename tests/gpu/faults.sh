#!/usr/bin/env bash
# GPU faults and hangs, in one call on a machine with an NVIDIA GPU (the H200
# the device tool lends). Run from the repository root after
# scripts/pack-gpu.sh (the build folder is carried):
#
#     bash tests/gpu/faults.sh OUTDIR [BUILD]
#
# Steps, each a qual-run with its own timeout so that a run that never exits
# is a failure here, not a stuck suite:
#   oob        nvrtc vs shim_oob (its kernel stores to an address no
#              allocation covers): exit 2, fail, an error line naming the
#              candidate, the case and the illegal address
#   health     qual-run --health: exit 0, ok
#   after_oob  nvrtc vs nvrtc on the same case: exit 0
#   spin       nvrtc vs shim_spin (its kernel never ends), --hang-floor-ms 2000:
#              exit 2 within the deadline, the error naming candidate, case
#              and "did not finish within 2000 ms"; the seconds it took
#   spin_500   the same with a 500 ms floor: the deadline is what decides
#   gone_*     after each hang, no process left on the GPU (nvidia-smi)
#   health2    --health again: exit 0, ok
#   after_spin nvrtc vs nvrtc: exit 0
# and prints a summary table last. Exit status 0 only when every expectation
# held. Everything is also packed into OUTDIR/faults.tar.gz.
set -u
out=${1:?usage: faults.sh OUTDIR [BUILD]}
build=${2:-build}
mkdir -p "$out"
run="$build/bin/qual-run"
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
shims="$build/shims"
case_name=gemm_f16-256x512x256
status=0
rows=()

note() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# row STEP WANT GOT SECONDS OK DETAIL
row() {
  rows+=("$(printf '%-10s %-22s %-22s %7s s  %-4s %s' "$1" "$2" "$3" "$4" "$5" "$6")")
  [ "$5" = "PASS" ] || status=1
}

# check_json FILE PYTHON-EXPR-ON-LINES: prints "ok" or why not. lines is the
# list of parsed lines.
check_json() {
  python3 - "$1" "$2" <<'PY'
import json, sys
path, expr = sys.argv[1], sys.argv[2]
try:
    lines = [json.loads(l) for l in open(path) if l.strip()]
except Exception as e:
    print("unreadable: %s" % e); sys.exit(0)
errors = [l for l in lines if l.get("type") == "error"]
verdict = lines[-1] if lines and lines[-1].get("type") == "verdict" else {}
try:
    ok = eval(expr)
except Exception as e:
    print("check failed: %r" % e); sys.exit(0)
print("ok" if ok else "not as expected")
PY
}

# qualify STEP WANT_EXIT EXPR CAND [qual-run options]: nvrtc vs CAND on one case.
qualify() {
  local step=$1 want=$2 expr=$3 cand=$4
  shift 4
  local t0 t1 got took verdict chk
  t0=$(now)
  timeout -k 5 300 "$run" "$nvrtc" "$cand" --case "$case_name" "$@" \
    >"$out/$step.jsonl" 2>"$out/$step.err"
  got=$?
  t1=$(now)
  took=$(secs "$t0" "$t1")
  verdict=$(tail -n 1 "$out/$step.jsonl" | grep -o '"verdict":"[a-z_]*"' | head -n 1 | cut -d'"' -f4)
  chk=$(check_json "$out/$step.jsonl" "$expr")
  note "== $step: exit $got (want $want), verdict ${verdict:-none}, $took s, check: $chk"
  grep '"type":"error"' "$out/$step.jsonl" | tee -a "$out/summary.txt"
  if [ "$got" = 124 ] || [ "$got" = 137 ]; then
    row "$step" "exit $want" "no exit in 300 s" "$took" FAIL "qual-run did not end"
  elif [ "$got" = "$want" ] && [ "$chk" = ok ]; then
    row "$step" "exit $want" "exit $got ${verdict}" "$took" PASS ""
  else
    row "$step" "exit $want" "exit $got ${verdict}" "$took" FAIL "$chk"
  fi
  LAST_SECONDS=$took
}

# health STEP: qual-run --health must say ok and exit 0.
health() {
  local step=$1 t0 t1 got took
  t0=$(now)
  timeout -k 5 60 "$run" --health >"$out/$step.jsonl" 2>"$out/$step.err"
  got=$?
  t1=$(now)
  took=$(secs "$t0" "$t1")
  note "== $step: exit $got: $(cat "$out/$step.jsonl")"
  if [ "$got" = 0 ] && [ "$(check_json "$out/$step.jsonl" \
      'lines[0]["ok"] is True and lines[0]["kernel"] is True')" = ok ]; then
    row "$step" "exit 0 ok" "exit $got ok" "$took" PASS ""
  else
    row "$step" "exit 0 ok" "exit $got" "$took" FAIL "$(head -c 200 "$out/$step.jsonl")"
  fi
}

# Nothing may still hold the GPU after a hang: the driver must have torn the
# process's context down with it (the machine is ours alone, so any compute
# app listed is a leftover).
leftovers() {
  local step=$1 apps
  if ! apps=$(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader 2>&1); then
    note "== $step: nvidia-smi failed: $apps"
    row "$step" "no app on the gpu" "nvidia-smi failed" "-" FAIL "$apps"
    return
  fi
  note "== $step: compute apps on the GPU: ${apps:-none}"
  if [ -n "$apps" ]; then
    row "$step" "no app on the gpu" "still there" "-" FAIL "$apps"
  else
    row "$step" "no app on the gpu" "none" "-" PASS ""
  fi
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,utilization.gpu \
  --format=csv >"$out/nvidia-smi.txt" 2>&1
note "device: $(tail -n 1 "$out/nvidia-smi.txt")"

# The candidate's kernel faults: fail, naming the candidate, the case and the
# illegal address.
qualify oob 2 \
  "verdict.get('verdict') == 'fail' and any(e['arm'] == 'candidate' and e['case'] == '$case_name' and 'ILLEGAL_ADDRESS' in e['message'] for e in errors) and not any(e['arm'] == 'baseline' for e in errors) and any(e.get('gpu') == 'faulted' for e in errors)" \
  "$shims/libshim_oob.so"
health health
qualify after_oob 0 "verdict.get('verdict') in ('neutral', 'improvement')" "$nvrtc"

# The candidate's kernel never ends: stopped at the deadline.
qualify spin 2 \
  "verdict.get('verdict') == 'fail' and any(e['arm'] == 'candidate' and e['case'] == '$case_name' and 'did not finish within 2000 ms' in e['message'] for e in errors) and any(e.get('gpu') == 'hung' for e in errors)" \
  "$shims/libshim_spin.so" --hang-floor-ms 2000
spin_s=$LAST_SECONDS
leftovers gone_2000
qualify spin_500 2 \
  "verdict.get('verdict') == 'fail' and any(e['arm'] == 'candidate' and 'did not finish within 500 ms' in e['message'] for e in errors)" \
  "$shims/libshim_spin.so" --hang-floor-ms 500
spin500_s=$LAST_SECONDS
leftovers gone_500
health health2
qualify after_spin 0 "verdict.get('verdict') in ('neutral', 'improvement')" "$nvrtc"

# The hang must end the run within the deadline plus what a run costs anyway
# (two compiles, the context, the baseline's warm-up, process exit): 20 s of
# slack, far below the 300 s timeout, and the 500 ms run must be quicker than
# the 2000 ms one.
if awk -v s="$spin_s" 'BEGIN { exit !(s < 22) }'; then
  row spin_time "< 2 s + 20 s" "$spin_s s" "$spin_s" PASS ""
else
  row spin_time "< 2 s + 20 s" "$spin_s s" "$spin_s" FAIL "slower than the deadline allows"
fi
if awk -v a="$spin500_s" -v b="$spin_s" 'BEGIN { exit !(a < b) }'; then
  row spin_floor "500 ms run quicker" "$spin500_s < $spin_s" "-" PASS ""
else
  row spin_floor "500 ms run quicker" "$spin500_s >= $spin_s" "-" FAIL "the floor did not decide"
fi

note ""
note "$(printf '%-10s %-22s %-22s %9s  %-4s %s' step want got time result detail)"
for r in "${rows[@]}"; do note "$r"; done
note "faults suite: $([ $status = 0 ] && echo PASS || echo FAIL)"
tar -czf "$out/faults.tar.gz" -C "$out" --exclude faults.tar.gz . 2>/dev/null
exit $status
