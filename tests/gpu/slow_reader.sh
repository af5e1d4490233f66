#!/usr/bin/env bash
# A big job log read slowly while another job runs, in one call on the GPU
# machine (issue 28's done-when): quald with the GPU as its one slot and its
# HTTP API on a Unix socket. Job A (nvrtc 13.0 against its alt copy with
# -lineinfo for the candidate, so that the code is not byte-identical and is
# timed as two builds, every case, margin 1e-6 so that no case can be shown
# equivalent) samples on to its cap (--max-seconds, default 150 here:
# QUAL_SLOW_A_SECONDS). Then slow
# readers take job A's log (HTTP /api/jobs/A and /api/jobs/A/events, control
# show: QUAL_SLOW_READERS of each, default 4) at a rate that makes each read
# last about a minute, while job B (nvrtc against the slower shim: a
# regression, exit 1, as in service.sh) runs, and a control `status` is
# timed every 0.2 s. PASS when job B is a regression, every reader got job
# A's stored lines exactly (its verdict line included), and quald exits 0.
# Prints quald's peak RSS (VmHWM) and the worst status latency.
#
#     bash tests/gpu/slow_reader.sh OUTDIR [BUILD]
set -u
out=${1:?usage: slow_reader.sh OUTDIR [BUILD]}
build=${2:-build}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
alt=/usr/local/cuda/lib64/libnvrtc.alt.so.13
a_seconds=${QUAL_SLOW_A_SECONDS:-150}
readers=${QUAL_SLOW_READERS:-4}
py=python3
# shellcheck source=tests/gpu/quald_start.sh
. "$here/quald_start.sh"
status=0
say() { echo "$*" | tee -a "$out/summary.txt"; }
hdir=$(mktemp -d)
http=$hdir/http.sock
quald_start "$build" --http "$http"

t0=$SECONDS
ctl --timeout 600 submit "$nvrtc" "$alt" --candidate-opt -lineinfo --margin 0.000001 --max-pairs 1000000 \
  --max-seconds "$a_seconds" --json >"$out/a.jsonl" 2>"$out/a.err"
a_rc=$?
a=$(head -n 1 "$out/a.jsonl" | sed -n 's/.*"job":"\(j[0-9]*\)".*/\1/p')
ctl show "$a" --json >"$out/a.stored.jsonl"
bytes=$(wc -c <"$out/a.stored.jsonl")
grep '"type":"case_verdict"' "$out/a.stored.jsonl" |
  sed 's/.*"case":"\([^"]*\)","verdict":"\([^"]*\)".*"n":\([0-9]*\).*"stopped":"\([^"]*\)".*/  \1 \2 n=\3 stopped=\4/' >>"$out/summary.txt"
say "job A $a: exit $a_rc in $((SECONDS - t0)) s, $(wc -l <"$out/a.stored.jsonl") stored lines, $bytes bytes, $(grep -c '"type":"pair"' "$out/a.stored.jsonl") pairs"
rate=$((bytes / 60))
[ "$rate" -ge 65536 ] || rate=65536

pids=()
for i in $(seq "$readers"); do
  $py "$here/slow_reader.py" http "$http" "/api/jobs/$a" "$rate" "$out/r$i.job" >"$out/r$i.job.log" 2>&1 &
  pids+=($!)
  $py "$here/slow_reader.py" http "$http" "/api/jobs/$a/events" "$rate" "$out/r$i.events" >"$out/r$i.events.log" 2>&1 &
  pids+=($!)
  $py "$here/slow_reader.py" show "$sock" "$a" "$rate" "$out/r$i.show" >"$out/r$i.show.log" 2>&1 &
  pids+=($!)
done
$py "$here/slow_reader.py" status "$sock" 75 "$out/status_ms.txt" >"$out/status.log" 2>&1 &
spid=$!

t1=$SECONDS
ctl --timeout 600 submit "$nvrtc" "$build/shims/libshim_slow.so" >"$out/b.txt" 2>&1
b_rc=$?
say "job B (nvrtc against the slower shim) while $((readers * 3)) slow readers read job A: exit $b_rc (want 1) in $((SECONDS - t1)) s"
tail -n 16 "$out/b.txt" >>"$out/summary.txt"
[ "$b_rc" = 1 ] || status=1

wait "${pids[@]}"
say "readers done $((SECONDS - t1)) s after job B was submitted, at $rate bytes/s each"
wait "$spid"
cat "$out/status.log" | tee -a "$out/summary.txt"
say "quald $(grep -E 'VmHWM|VmRSS' /proc/$qpid/status | tr -s ' \t' ' ' | paste -sd, -)"
specs=()
for i in $(seq "$readers"); do specs+=("job:$out/r$i.job" "events:$out/r$i.events" "show:$out/r$i.show"); done
$py "$here/slow_reader.py" check "$out/a.stored.jsonl" "${specs[@]}" | tee -a "$out/summary.txt"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
ctl show "$a" --json | tail -n 1 | cmp -s - <(tail -n 1 "$out/a.stored.jsonl") ||
  { say "job A's verdict line changed"; status=1; }

kill -TERM "$qpid"
wait "$qpid"
q_rc=$?
say "quald exit $q_rc after SIGTERM (want 0)"
[ "$q_rc" = 0 ] || status=1
rm -f "$out"/r*.job "$out"/r*.events "$out"/r*.show
gzip -f "$out/a.stored.jsonl" "$out/a.jsonl"
tar -czf "$out/logs.tar.gz" -C "$out" --exclude '*.gz' --exclude summary.txt . 2>/dev/null &&
  find "$out" -maxdepth 1 -type f ! -name '*.gz' ! -name summary.txt -delete
say "slow reader suite: $([ $status = 0 ] && echo PASS || echo FAIL)"
rm -rf "$tmp" "$hdir"
exit $status
