#!/usr/bin/env bash
# quald's default --devices auto on a GPU machine, in one call: quald started
# with neither --devices nor --slots must find the GPUs (the worker's health
# check, in children), give each a slot and time a job; qualctl submit
# without --compile-only then exits with the verdict (0 for nvrtc against
# nvrtc.alt), not 6. Then a quald with --slots 1 on the same machine: the
# same submit is not timed and exits 6, saying why.
#
#     bash tests/gpu/devices_auto.sh OUTDIR [BUILD]
set -u
out=${1:?usage: devices_auto.sh OUTDIR [BUILD]}
build=${2:-build}
mkdir -p "$out"
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
alt=/usr/local/cuda/lib64/libnvrtc.alt.so.13
case=gemm_f16-256x512x256
status=0

# run NAME WANT [quald options] -- qualctl submit options
run() {
  local name=$1 want=$2 tmp qpid got
  shift 2
  local qopts=()
  while [ "$1" != -- ]; do qopts+=("$1"); shift; done
  shift
  tmp=$(mktemp -d)
  "$build/bin/quald" --socket "$tmp/s" --state-dir "$tmp/state" "${qopts[@]}" \
    --worker "$build/bin/qual-run" --compile-helper "$build/bin/qual-compile" \
    >"$out/$name.quald.log" 2>&1 &
  qpid=$!
  for _ in $(seq 100); do "$build/bin/qualctl" --socket "$tmp/s" status >/dev/null 2>&1 && break; sleep 0.1; done
  "$build/bin/qualctl" --socket "$tmp/s" status >"$out/$name.status.txt" 2>&1
  "$build/bin/qualctl" --socket "$tmp/s" submit "$nvrtc" "$alt" --case "$case" --json \
    >"$out/$name.jsonl" 2>"$out/$name.stderr"
  got=$?
  kill -TERM "$qpid"
  wait "$qpid"
  echo "== $name: qualctl exit $got (want $want); quald exit $? after SIGTERM" | tee -a "$out/summary.txt"
  grep -h "listening\|GPU\|gpu" "$out/$name.quald.log" | tee -a "$out/summary.txt"
  head -c 600 "$out/$name.jsonl" | tee -a "$out/summary.txt"; echo | tee -a "$out/summary.txt"
  tail -n 1 "$out/$name.jsonl" | head -c 400 | tee -a "$out/summary.txt"; echo | tee -a "$out/summary.txt"
  cat "$out/$name.stderr" | tee -a "$out/summary.txt"
  [ "$got" = "$want" ] || status=1
  rm -rf "$tmp"
}
run auto 0 --
run slots 6 --slots 1 --
echo "devices auto: $([ $status = 0 ] && echo PASS || echo FAIL)" | tee -a "$out/summary.txt"
exit $status
