#!/usr/bin/python3
"""quald's dashboard in a real browser: the real quald with --http, a live
job, and Debian's headless Chromium (tests/tools/browser_test.py checks the
pages against the API).

usage: dashboard_test.py --quald Q --qualctl C --compile-helper H
                         --nvrtc LIB --nvrtc-alt LIB --out DIR [--chromium PATH]

quald's worker is tests/tools/replay_worker.py, which replays a real H200 job
(nvrtc 13.0 against 12.4, nine cases, 780 pairs) over QUAL_REPLAY_SECONDS:
with no GPU here, it is how a job with pairs runs live. A compile-only job
replays tests/data/compile-only-code-job.jsonl instead (nvrtc 13.0 against
a shim that changes the code, three cases with their code lines; one diff
carries markup, one case has a disassembler's error). Three jobs are
submitted to one slot: a labelled one of series ci, the compile-only one,
a second of the series. The browser starts while the first runs: / lists
them; the compile-only job's page is loaded while it waits, so its code
lines arrive over the event stream, and again once it has ended; the
second's /jobs/ID grows as its lines arrive and ends showing its verdicts;
/history and /history?label=series=ci plot the series.
The screenshots stay in DIR (the test's artefacts). Exits as browser_test.py
does: 0 pass, 1 a check failed, 2 the browser or quald unusable."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from service_test import Failure, Quald  # noqa: E402
from http_test import http_where, submit_job  # noqa: E402

REPLAY_S = "30"
CODE_JOB = os.path.join(HERE, "..", "data", "compile-only-code-job.jsonl")
CODE_REPLAY_S = "4"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quald", required=True)
    ap.add_argument("--qualctl", required=True)
    ap.add_argument("--compile-helper", required=True)
    ap.add_argument("--nvrtc", required=True)
    ap.add_argument("--nvrtc-alt", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--chromium", default="chromium")
    args = ap.parse_args()
    args.worker = os.path.join(HERE, "replay_worker.py")
    os.makedirs(args.out, exist_ok=True)
    root = tempfile.mkdtemp(prefix="qual-dash-")
    os.environ["QUAL_REPLAY_SECONDS"] = REPLAY_S
    os.environ["QUAL_REPLAY_COMPILE_ONLY_FILE"] = CODE_JOB
    os.environ["QUAL_REPLAY_COMPILE_ONLY_SECONDS"] = CODE_REPLAY_S
    d = Quald(args, root, extra=["--http", "127.0.0.1:0"]).start()
    try:
        base = http_where(d).rstrip("/")
        first = submit_job(d, ("--label", "series=ci", "--label", "build=12.4-nightly.1"),
                           compile_only=False)
        code = submit_job(d, compile_only=True)
        second = submit_job(d, ("--label", "series=ci", "--label", "build=12.4-nightly.2"),
                            compile_only=False)
        d.wait_job_state(first, ("running",), timeout=10)
        r = subprocess.run([sys.executable, os.path.join(HERE, "browser_test.py"),
                            "--base", base, "--job", second, "--code-job", code, "--out", args.out,
                            "--chromium", args.chromium, "--expect-live",
                            "--label", "series=ci", "--timeout", "90"])
        d.stop()
        return r.returncode
    except Failure as e:
        print(f"FAIL: dashboard: {e}", file=sys.stderr)
        d.stop_quietly()
        return 1
    finally:
        if not os.environ.get("QUAL_KEEP_TMP"):
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
