#!/usr/bin/python3
"""Screenshots of quald's dashboard over jobs that ran elsewhere (the H200,
which has no browser): tests/gpu/series.sh keeps its state directory as
state.tar.gz; this serves it with a quald on compile-only slots and --http,
and Chromium takes the pages.

usage: dashboard_shots.py --build BUILD --state STATE.tar.gz --job JOB
                          --label K=V --out DIR [--chromium PATH]

DIR/history.png      /history?label=K=V: the series across its jobs
DIR/job-JOB.png      /jobs/JOB as it stands, finished
DIR/live-JOB.png     /jobs/JOB-live: the same job's lines replayed by a
                     worker (tests/tools/replay_worker.py with
                     QUAL_REPLAY_FILE = the job's stored lines) through a
                     second quald at the H200's pace, taken while the page
                     has half of them: what the page showed while the job ran
Prints what it took; exit 0 when every page had what the API says."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from browser_test import Browser, check_png  # noqa: E402
from http_test import http_where  # noqa: E402
from service_test import Quald  # noqa: E402

NVRTC = "/usr/local/cuda/lib64/libnvrtc.so.13"
ALT = "/usr/local/cuda/lib64/libnvrtc.alt.so.13"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--job", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--chromium", default="chromium")
    ap.add_argument("--replay-seconds", default="6")
    a = ap.parse_args()
    a.qualctl = os.path.join(a.build, "bin", "qualctl")
    a.quald = os.path.join(a.build, "bin", "quald")
    a.worker = os.path.join(a.build, "bin", "qual-run")
    a.compile_helper = os.path.join(a.build, "bin", "qual-compile")
    os.makedirs(a.out, exist_ok=True)
    root = tempfile.mkdtemp(prefix="qual-shots-")
    ok = True
    try:
        stored = Quald(a, os.path.join(root, "stored"))
        with tarfile.open(a.state) as t:
            t.extractall(stored.state)
        stored.extra = ["--http", "127.0.0.1:0"]
        stored.start()
        base = http_where(stored).rstrip("/")
        lines = stored.ctl("show", a.job, "--json").stdout.splitlines()
        replay = os.path.join(root, "replay.jsonl")
        with open(replay, "w") as f:
            f.write("\n".join(lines) + "\n")
        b = Browser(a.chromium, os.path.join(root, "browser"))
        try:
            b.goto(f"{base}/history?label={a.label}")
            n = b.wait("document.body.dataset.ready && document.querySelectorAll('[data-point]').length", 30)
            print(f"history: {n} points")
            b.screenshot(os.path.join(a.out, "history.png"))
            b.goto(f"{base}/jobs/{a.job}")
            v = b.wait("document.body.dataset.done && document.getElementById('job-verdict').textContent", 30)
            print(f"job {a.job}: verdict {v!r}")
            b.screenshot(os.path.join(a.out, f"job-{a.job}.png"))
            stored.stop()
            # The same lines, live.
            os.environ["QUAL_REPLAY_FILE"] = replay
            os.environ["QUAL_REPLAY_SECONDS"] = a.replay_seconds
            a.worker = os.path.join(HERE, "replay_worker.py")
            live = Quald(a, os.path.join(root, "live"), extra=["--http", "127.0.0.1:0"]).start()
            lbase = http_where(live).rstrip("/")
            r = live.ctl("submit", "--no-follow", "--label", a.label, NVRTC, ALT)
            job = r.stdout.split()[0] if r.stdout.split() else "j000001"
            b.goto(f"{lbase}/jobs/{job}")
            half = len(lines) // 2
            got = b.wait(f"Number(document.body.dataset.lines) >= {half} && "
                         "Number(document.body.dataset.lines)", 60, every=0.05)
            b.screenshot(os.path.join(a.out, f"live-{a.job}.png"))
            print(f"live: screenshot at {got} of {len(lines)} lines")
            b.wait("document.body.dataset.done", 60)
            live.stop()
            if b.console:
                print("console errors:", b.console)
                ok = False
        finally:
            b.close()
        for name in ("history.png", f"job-{a.job}.png", f"live-{a.job}.png"):
            why = check_png(os.path.join(a.out, name))
            if why:
                print(why)
                ok = False
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
