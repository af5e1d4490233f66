#!/usr/bin/env bash
# Faults through the service, on the GPU: quald with the GPU as its slot;
# jobs in order: a candidate whose kernel writes out of bounds (fail), a
# normal job (must pass: quald health-checks the GPU first), a candidate
# whose kernel never ends (fail within the deadline), a normal job (pass).
#
#     bash tests/gpu/service_faults.sh OUTDIR [BUILD]
set -u
out=${1:?usage: service_faults.sh OUTDIR [BUILD]}
build=${2:-build}
mkdir -p "$out"
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
# shellcheck source=tests/gpu/quald_start.sh
. "$(dirname "$0")/quald_start.sh"
status=0
quald_start "$build" --allow-root "$(cd "$build" && pwd)"

# expect NAME WANT -- qualctl submit arguments
expect() {
  local name=$1 want=$2
  shift 3
  local t0
  t0=$(date +%s%N)
  ctl submit "$@" >"$out/$name.txt" 2>&1
  local got=$?
  echo "== $name: qualctl exit $got (want $want) in $(( ($(date +%s%N) - t0) / 1000000 )) ms" \
    | tee -a "$out/summary.txt"
  grep -E "^error|^verdict|wrong|did not finish" "$out/$name.txt" | head -n 4 | tee -a "$out/summary.txt"
  [ "$got" = "$want" ] || status=1
}
case=gemm_f16-256x512x256
expect oob 2 -- "$nvrtc" "$build/shims/libshim_oob.so" --case "$case"
expect after_oob 0 -- "$nvrtc" "$nvrtc" --case "$case"
expect spin 2 -- "$nvrtc" "$build/shims/libshim_spin.so" --case "$case"
expect after_spin 0 -- "$nvrtc" "$nvrtc" --case "$case"
ctl status | tee -a "$out/summary.txt"
ctl list | tee -a "$out/summary.txt"
kill -TERM "$qpid"; wait "$qpid"
echo "quald exit $? after SIGTERM" | tee -a "$out/summary.txt"
grep -i -E "health|out of service" "$out/quald.log" | head -n 10 | tee -a "$out/summary.txt"
echo "service faults: $([ $status = 0 ] && echo PASS || echo FAIL)" | tee -a "$out/summary.txt"
cp -r "$tmp/state" "$out/state" 2>/dev/null
tar -czf "$out/service_faults.tar.gz" -C "$out" --exclude service_faults.tar.gz . 2>/dev/null
rm -rf "$tmp"
exit $status
