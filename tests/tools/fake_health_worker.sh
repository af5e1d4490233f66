#!/bin/sh
# A stand-in for qual-run in quald's GPU health tests
# (tests/unit/daemon/test_jobs.c, jobs_health_*). `--health --device N`
# appends "N" to $FAKE_DIR/health-calls and exits with $FAKE_HEALTH_EXIT
# (default 0; qual-run's "not healthy" is 3).
# A candidate under a folder named gpuhung gets an error line with
# "gpu":"hung" and an error verdict (what qual-run prints when a kernel
# hangs); any other kind is fake_worker.sh's.
. "$(dirname "$0")/args_fd.sh"
health=0
dev=
prev=
for a in "$@"; do
  [ "$a" = --health ] && health=1
  [ "$prev" = --device ] && dev=$a
  prev=$a
done
if [ $health = 1 ]; then
  echo "$dev" >> "$FAKE_DIR/health-calls"
  exit "${FAKE_HEALTH_EXIT:-0}"
fi
for cand; do :; done
if [ "$(basename "$(dirname "$cand")")" = gpuhung ]; then
  echo '{"type":"start","schema_version":3,"tool":"fake","version":"0","time":"2026-01-01T00:00:00Z","device":null,"timed":true,"arch":"sm_90","baseline":{},"candidate":{},"settings":{}}'
  echo '{"type":"error","stage":"time","code":"gpu_hang","arm":null,"case":"gemm_f16-256x512x256","message":"kernel did not finish","gpu":"hung"}'
  echo '{"type":"verdict","verdict":"error","timed":false,"message":"gpu hung"}'
  exit 3
fi
exec "$(dirname "$0")/fake_worker.sh" "$@"
