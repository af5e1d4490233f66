#!/usr/bin/python3
"""A stand-in for qual-run under quald (--worker) that replays a real H200
job: the lines qual-run printed for nvrtc 13.0 against 12.4.127 on the H200
(tests/data/h200-nvrtc-12.4.127-job.jsonl, taken from
pair/jobs/pair.1.jsonl of docs/gpu-runs/2026-12-03/issue12h/call2-pair.tar.gz,
which scripts/gpu-evidence.sh restores: 1,007 lines, 780 pairs of nine cases), paced over $QUAL_REPLAY_SECONDS
(default 8) so that a job's pages can be watched while it runs, with no GPU.
$QUAL_REPLAY_FILE, when set, names another file of such lines to replay
(e.g. a job's lines saved by `qualctl show JOB --json`: their "job" and
"seq" are replaced by quald's as any worker line's are). A compile-only
job (--compile-only on its command line) replays
$QUAL_REPLAY_COMPILE_ONLY_FILE instead, when set, over
$QUAL_REPLAY_COMPILE_ONLY_SECONDS (default $QUAL_REPLAY_SECONDS), so that
one quald can run both kinds (tests/tools/dashboard_test.py). Otherwise it
ignores quald's worker command line (options, --, BASELINE CANDIDATE, on
stdin as `--args-fd 0` says):
quald checks and pins the libraries as for any job; what runs is this
replay. tests/browser.cmake uses it."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "..", "data", "h200-nvrtc-12.4.127-job.jsonl")


def main():
    path = os.environ.get("QUAL_REPLAY_FILE") or JOB
    total = float(os.environ.get("QUAL_REPLAY_SECONDS", "8"))
    args = sys.argv[1:]
    if args == ["--args-fd", "0"]:
        # quald hands a worker its command line on stdin, NUL-terminated
        # arguments (proto/strv.h), never in its argv.
        args = [x.decode() for x in sys.stdin.buffer.read().split(b"\0")[:-1]]
    options = args[:args.index("--")] if "--" in args else args
    if "--compile-only" in options and os.environ.get("QUAL_REPLAY_COMPILE_ONLY_FILE"):
        path = os.environ["QUAL_REPLAY_COMPILE_ONLY_FILE"]
        total = float(os.environ.get("QUAL_REPLAY_COMPILE_ONLY_SECONDS", total))
    with open(path) as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip()]
    step = total / max(len(lines), 1)
    for line in lines:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        time.sleep(step)
    return 0


if __name__ == "__main__":
    sys.exit(main())
