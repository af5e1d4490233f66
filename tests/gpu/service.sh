#!/usr/bin/env bash
# The service on the GPU, in one call: starts quald on a temporary socket and
# state directory with the GPU as its one worker slot, then qualifies through
# qualctl: nvrtc 13 against nvrtc.alt (expect exit 0) and against the slower
# shim (expect exit 1, regression), while a watcher records every job line.
#
#     bash tests/gpu/service.sh OUTDIR [BUILD]
set -u
out=${1:?usage: service.sh OUTDIR [BUILD]}
build=${2:-build}
mkdir -p "$out"
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
alt=/usr/local/cuda/lib64/libnvrtc.alt.so.13
# shellcheck source=tests/gpu/quald_start.sh
. "$(dirname "$0")/quald_start.sh"
status=0
quald_start "$build"
ctl status | tee "$out/status.txt"

ctl watch --json >"$out/watch.jsonl" 2>/dev/null &
wpid=$!

# expect NAME WANT -- qualctl submit arguments
expect() {
  local name=$1 want=$2
  shift 3
  local t0=$SECONDS
  ctl submit "$@" >"$out/$name.txt" 2>&1
  local got=$?
  echo "== $name: qualctl exit $got (want $want) in $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
  tail -n 14 "$out/$name.txt" | tee -a "$out/summary.txt"
  [ "$got" = "$want" ] || status=1
}
expect alt 0 -- "$nvrtc" "$alt"
expect slow 1 -- "$nvrtc" "$build/shims/libshim_slow.so"

ctl list | tee -a "$out/summary.txt"
kill "$wpid" 2>/dev/null
kill -TERM "$qpid"
wait "$qpid"
echo "quald exit $? after SIGTERM" | tee -a "$out/summary.txt"
cp -r "$tmp/state" "$out/state" 2>/dev/null
echo "watcher saw $(wc -l <"$out/watch.jsonl") lines" | tee -a "$out/summary.txt"
echo "service suite: $([ $status = 0 ] && echo PASS || echo FAIL)" | tee -a "$out/summary.txt"
tar -czf "$out/service.tar.gz" -C "$out" --exclude service.tar.gz . 2>/dev/null
rm -rf "$tmp"
exit $status
