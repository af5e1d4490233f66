#!/usr/bin/env bash
# A labelled series of real compiler builds through quald on the GPU, with
# its dashboard: the evidence of docs/http.md on the H200. From the
# repository root after scripts/pack-gpu.sh and scripts/fetch-nvrtc.sh
# (carry .carry and .carry-nvrtc; and .carry-state from an earlier call to
# go on with its jobs):
#
#     bash tests/gpu/series.sh OUTDIR [BUILD]
#
# Starts quald on GPU 0 with --http on a free loopback port, and submits, one
# job per build, the CUDA toolkit's nvrtc (13.0) as baseline against each
# nvrtc build unpacked from .carry-nvrtc (PyPI wheels: 12.x, 13.x) and
# against the toolkit's libnvrtc.alt (13.0, an A/A control) unless
# QUAL_SERIES_ALT=0, each labelled series=nvrtc-h200, build=VERSION,
# baseline=13.0. Each job is followed live on the HTTP endpoint as the job
# page does (capture_live.py); at the end the series' history (qualctl
# history, export --csv and --lnt, /api/history), /metrics before and after,
# and the state directory (OUTDIR/state.tar.gz: a later call, or a quald on
# the development machine, serves the same jobs: its dashboard's screenshots)
# are kept (QUAL_SERIES_SLOTS="--slots 1": a dry run without a GPU). Exit 0 when every job ended with a verdict, every live stream
# ended properly, and quald stopped cleanly.
set -u
out=${1:?usage: series.sh OUTDIR [BUILD]}
build=${2:-.carry}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
status=0
note() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu \
  --format=csv >"$out/nvidia-smi.txt" 2>&1
note "device: $(tail -n 1 "$out/nvidia-smi.txt")"
# What could take a screenshot here (the development machine takes them).
{ command -v chromium chromium-browser google-chrome firefox 2>&1
  ls /opt/torch/.venv/lib/python3*/site-packages 2>/dev/null | grep -i -E 'playwright|selenium|pyppeteer'
  command -v curl python3; } >"$out/browsers.txt" 2>&1
note "browsers here: $(grep -c -E 'chrom|firefox|playwright|selenium|pyppeteer' "$out/browsers.txt")"

bash "$here/unpack-nvrtc.sh" .carry-nvrtc /tmp/nvrtc >"$out/nvrtc.txt" || status=1
state=$(mktemp -d)/state
if [ -f .carry-state/state.tar.gz ]; then
  mkdir -p "$state" && tar -xzf .carry-state/state.tar.gz -C "$state"
  note "state: $(ls "$state/jobs" | wc -l) jobs carried in"
fi
"$build/bin/quald" --socket "$out/q.sock" --state-dir "$state" ${QUAL_SERIES_SLOTS:---devices 0} \
  --worker "$build/bin/qual-run" --compile-helper "$build/bin/qual-compile" \
  --allow-root /tmp/nvrtc --http 127.0.0.1:0 >"$out/quald.log" 2>&1 &
qpid=$!
ctl() { "$build/bin/qualctl" --socket "$out/q.sock" "$@"; }
for _ in $(seq 100); do ctl status >/dev/null 2>&1 && break; sleep 0.1; done
base=$(grep -o 'http on http://[0-9.:]*/' "$out/quald.log" | head -n 1 | sed 's/^http on //')
note "quald: $(head -n 2 "$out/quald.log" | tail -n 1)"
[ -n "$base" ] || { note "no http endpoint"; kill $qpid; exit 1; }
python3 - "$base" >"$out/metrics-before.txt" <<'PY'
import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1] + "metrics").read().decode())
PY

nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
builds=()
while read -r version lib; do builds+=("$version $lib"); done <"$out/nvrtc.txt"
[ "${QUAL_SERIES_ALT:-1}" = 0 ] || builds+=("13.0-alt /usr/local/cuda/lib64/libnvrtc.alt.so.13")
jobs=()
for b in "${builds[@]}"; do
  version=${b%% *} lib=${b#* }
  job=$(ctl submit --no-follow --label series=nvrtc-h200 --label "build=$version" \
        --label baseline=13.0 "$nvrtc" "$lib" 2>>"$out/submit.err" | grep -o 'j[0-9]\{6,\}' | head -n 1)
  [ -n "$job" ] || { note "submit of $version refused: $(tail -n 1 "$out/submit.err")"; status=1; continue; }
  jobs+=("$job $version")
  # Each job's stream opens while it waits in the queue: all it gets is live.
  python3 "$here/capture_live.py" "$base" "$job" "$out" >"$out/live-$job.txt" 2>&1 &
done
for j in "${jobs[@]}"; do
  job=${j%% *} version=${j#* }
  start=$SECONDS
  timeout 300 "$build/bin/qualctl" --socket "$out/q.sock" wait "$job" --json >"$out/job-$job.jsonl" 2>"$out/job-$job.err"
  rc=$?
  note "job $job build=$version: exit $rc, waited $((SECONDS - start)) s; $(grep -o '"type":"verdict","verdict":"[a-z_]*"' "$out/job-$job.jsonl" | tail -n 1 | sed 's/.*"verdict":/verdict /')"
  [ $rc -le 3 ] || status=1
done
# The verdict line comes before the worker has exited and the job's state is
# written: the counts below are taken once no job runs.
for _ in $(seq 300); do
  ctl status --json 2>/dev/null | grep -q '"running":\[\]' && break
  sleep 0.1
done
for j in "${jobs[@]}"; do
  job=${j%% *}
  for _ in $(seq 100); do [ -s "$out/live-$job.txt" ] && break; sleep 0.1; done
  note "$(cat "$out/live-$job.txt")"
  grep -q 'ended after the verdict' "$out/live-$job.txt" || status=1
done
ctl history --label series=nvrtc-h200 >"$out/history.txt" 2>&1
ctl export --csv --label series=nvrtc-h200 >"$out/history.csv" 2>&1
ctl export --lnt --label series=nvrtc-h200 --machine h200 >"$out/history-lnt.json" 2>&1
ctl list --json >"$out/list.json" 2>&1
python3 - "$base" "$out" <<'PY'
import sys, urllib.request
base, out = sys.argv[1], sys.argv[2]
for path, name in (("metrics", "metrics-after.txt"), ("api/history?label=series=nvrtc-h200", "api-history.json"),
                   ("api/status", "api-status.json"), ("", "index.html"), ("history", "history.html")):
    open(f"{out}/{name}", "wb").write(urllib.request.urlopen(base + path).read())
PY
note "history rows: $(grep -c . "$out/history.csv") (csv, header included)"
note "metrics after: $(grep -E '^qual_(jobs_ended_total|lines_relayed_total|job_duration_seconds_count|http_requests_total)' "$out/metrics-after.txt" | grep -v ' 0$' | tr '\n' ' ')"
kill -TERM $qpid
wait $qpid
rc=$?
note "quald stopped: exit $rc"
[ $rc = 0 ] || status=1
tar -czf "$out/state.tar.gz" --exclude=./cache -C "$state" .
note "state: $(ls "$state/jobs" | wc -l) jobs in state.tar.gz ($(du -h "$out/state.tar.gz" | cut -f1))"
exit $status
