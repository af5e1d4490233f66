#!/usr/bin/python3
"""What a job's code lines cost its dashboard page: a real quald --http runs
one compile-only job whose worker (tests/tools/replay_worker.py) replays
--lines FILE (a compile-only job's lines, e.g. qual-run's stdout or
`qualctl show JOB --json`'s lines, with its code lines), then headless
Chromium loads /jobs/ID once the job has ended, --runs times: the time
from navigation to the page drawn (body[data-done] and every code line's
block) and the size of the DOM. The same job with its code lines left out
gives the baseline.

    python3 bench/dashboard_code.py --build build --lines FILE [--runs 5]

Needs the build's quald, qualctl and qual-compile, the nvrtc pair of the
service tests (QUAL_SERVICE_NVRTC and _ALT in the build's CMakeCache.txt:
quald checks and pins them; the replay runs nothing) and chromium. Prints
one JSON object per variant and run, then the medians."""
import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "tools"))
from browser_test import Browser  # noqa: E402
from service_test import Quald  # noqa: E402
from http_test import http_where, submit_job  # noqa: E402

# Set before the page's own script runs: when body[data-done] appears.
STAMP = """new MutationObserver((_, o) => {
  if (document.body && document.body.dataset.done === '1' && !window.__doneAt) {
    window.__doneAt = performance.now(); o.disconnect(); }
}).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-done']});"""


def measure(b, url, ncode):
    b.goto(url)
    if not b.wait("window.__doneAt && document.querySelectorAll('[data-code-case]').length >= %d" % ncode, 60):
        raise SystemExit("%s: not drawn within 60 s" % url)
    time.sleep(0.5)   # the page draws every 200 ms: let the last batch land
    return b.eval("""({done_ms: window.__doneAt,
        nodes: document.getElementsByTagName('*').length,
        diff_spans: document.querySelectorAll('pre.diff span').length,
        code_blocks: document.querySelectorAll('[data-code-case]').length})""")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--lines", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    a = ap.parse_args()
    cache = open(os.path.join(a.build, "CMakeCache.txt")).read()
    a.quald = os.path.join(a.build, "bin", "quald")
    a.qualctl = os.path.join(a.build, "bin", "qualctl")
    a.compile_helper = os.path.join(a.build, "bin", "qual-compile")
    a.nvrtc = re.search(r"QUAL_SERVICE_NVRTC:\w+=(.*)", cache).group(1)
    a.nvrtc_alt = re.search(r"QUAL_SERVICE_NVRTC_ALT:\w+=(.*)", cache).group(1)
    a.worker = os.path.join(HERE, "..", "tests", "tools", "replay_worker.py")
    root = tempfile.mkdtemp(prefix="qual-bench-dash-")
    with open(a.lines) as f:
        lines = [ln for ln in f if ln.strip()]
    plain = os.path.join(root, "without-code.jsonl")
    with open(plain, "w") as f:
        f.writelines(ln for ln in lines if json.loads(ln).get("type") != "code")
    ncode = sum(1 for ln in lines if json.loads(ln).get("type") == "code")
    os.environ["QUAL_REPLAY_COMPILE_ONLY_SECONDS"] = "0.5"
    results = {}
    browser = d = None
    try:
        browser = Browser(a.chromium, root)
        browser.call("Page.addScriptToEvaluateOnNewDocument", {"source": STAMP})
        for name, path, n in (("without code lines", plain, 0), ("with code lines", a.lines, ncode)):
            os.environ["QUAL_REPLAY_COMPILE_ONLY_FILE"] = path
            qroot = os.path.join(root, name.replace(" ", "-"))
            os.makedirs(qroot)
            d = Quald(a, qroot, extra=["--http", "127.0.0.1:0"]).start()
            base = http_where(d).rstrip("/")
            job = submit_job(d, compile_only=True)
            d.wait_job_state(job, ("done",), timeout=30)
            size = len(urllib.request.urlopen(base + "/api/jobs/" + job).read())
            runs = []
            for i in range(a.runs):
                r = measure(browser, base + "/jobs/" + job, n)
                r.update(variant=name, run=i, api_bytes=size)
                print(json.dumps(r), flush=True)
                runs.append(r)
            results[name] = runs
            d.stop()
            d = None
    finally:
        if d:
            d.stop_quietly()
        if browser:
            browser.close()
        shutil.rmtree(root, ignore_errors=True)
    for name, runs in results.items():
        print(json.dumps({"variant": name, "runs": len(runs), "api_bytes": runs[0]["api_bytes"],
                          "median_done_ms": round(statistics.median(r["done_ms"] for r in runs), 1),
                          "max_done_ms": round(max(r["done_ms"] for r in runs), 1),
                          "nodes": runs[0]["nodes"], "diff_spans": runs[0]["diff_spans"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
