#!/usr/bin/env python3
"""What a large store costs quald's start and its first history: with
--gib of stored job logs (default 1), the time from quald's start to its
first `status` answer (listening), and a `history` request sent as soon as
it listens while another connection sends `status` every 10 ms: how long
the history reply took, and the slowest `status` answer meanwhile (the
loop's stall). Then, for a quald that keeps summaries, the same at a second
start, with the summaries it wrote.

The store is made by a real quald with tests/tools/fake_worker.sh and
fake_compile.sh (no GPU, no compiler): one job gives request.json and
state.json, then --jobs finished jobs are written beside it, each a log of
pair lines over a few cases (timings that vary), their case_verdict lines
and a verdict line, in the store's record format (tests/tools/store_log.py),
without a summary.json (a store written before summaries). Each quald given
gets the same state directory in turn, its summaries removed before its
first start.

    python3 bench/store_start.py --elf LIB.so --quald OLD/bin/quald \\
        --quald NEW/bin/quald [--gib 1] [--jobs 16] [--runs 3] [--cold]

--cold drops the page cache before each start (root only): the logs are
read from the disk, not from memory. Prints one JSON object per quald, run
and start; for a quald that checks the stored logs off the loop, also how
long that took and the slowest `status` (asked every 10 ms) meanwhile.
Needs --gib and a little more free under $TMPDIR; removes it all
at the end."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "tools"))
import store_log  # noqa: E402
from read_log import make_job, stop  # noqa: E402
from stream_test import bench_parser, bench_qualctl  # noqa: E402

CASES = ["gemm_f16-256x512x256", "gemm_i8-256x512x256", "attention_f16-128",
         "conv_f16-64x64x3x3"]
TOOLS = os.path.join(HERE, "..", "tests", "tools")


def ask(sock, req, timeout=120):
    """One request on a new connection: (seconds to the reply line, reply)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(sock)
    t0 = time.perf_counter()
    s.sendall(json.dumps(req).encode() + b"\n")
    buf = b""
    while b"\n" not in buf:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
    t = time.perf_counter() - t0
    s.close()
    return t, json.loads(buf.split(b"\n")[0])


def write_jobs(root, first, njobs, gib):
    """njobs finished jobs after job `first` (its request and state copied),
    gib GiB of logs in all. Returns the ids."""
    jobs = os.path.join(root, "state", "jobs")
    with open(os.path.join(jobs, first, "request.json"), "rb") as f:
        request = f.read()
    with open(os.path.join(jobs, first, "state.json")) as f:
        state = json.load(f)
    state.update(state="done", verdict="neutral")
    per_job = int(gib * (1 << 30)) // njobs
    ids = []
    for k in range(njobs):
        job = "j%06d" % (int(first[1:]) + 1 + k)
        d = os.path.join(jobs, job)
        os.makedirs(d)
        with open(os.path.join(d, "request.json"), "wb") as f:
            f.write(request)
        with open(os.path.join(d, "state.json"), "w") as f:
            json.dump(state, f)
        tail = b',"job":"%s","seq":%%d}' % job.encode()
        seq = 0
        with open(os.path.join(d, "log.jsonl"), "wb") as f:
            f.write(store_log.record(b'{"type":"start","schema":5' + tail % seq))
            per_case = per_job // len(CASES)
            for c, case in enumerate(CASES):
                end = (c + 1) * per_case
                pair = 0
                while f.tell() < end:
                    seq += 1
                    b = 1000.0 + (pair * 7 + k) % 101 + c
                    cand = 1010.0 + (pair * 13 + k) % 97 + c
                    f.write(store_log.record(
                        b'{"type":"pair","case":"%s","pair":%d,"block":%d,"session":1,'
                        b'"order":"baseline_first","baseline_ns":%.3f,"candidate_ns":%.3f,'
                        b'"baseline_host_ns":%.3f,"candidate_host_ns":%.3f'
                        % (case.encode(), pair, pair // 4, b, cand, b + 120, cand + 120)
                        + tail % seq))
                    pair += 1
                seq += 1
                f.write(store_log.record(
                    b'{"type":"case_verdict","case":"%s","verdict":"equivalent",'
                    b'"identical_code":false,"n":%d,"ratio_median":1.01,"ratio_lo":0.99,'
                    b'"ratio_hi":1.03,"p_holm":0.4' % (case.encode(), pair) + tail % seq))
            seq += 1
            f.write(store_log.record(b'{"type":"verdict","verdict":"neutral"' + tail % seq))
        ids.append(job)
    return ids


def start(quald, root, cold):
    """Starts quald; (process, socket, seconds to its first status answer)."""
    sock = os.path.join(root, "quald.sock")
    if cold:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    log = open(os.path.join(root, "quald.log"), "ab")
    env = {k: v for k, v in os.environ.items()
           if k not in ("QUAL_SOCKET", "NOTIFY_SOCKET", "LISTEN_PID", "LISTEN_FDS")}
    t0 = time.perf_counter()
    p = subprocess.Popen([quald, "--socket", sock, "--state-dir", os.path.join(root, "state"),
                          "--slots", "1", "--worker", os.path.join(TOOLS, "fake_worker.sh"),
                          "--compile-helper", os.path.join(TOOLS, "fake_compile.sh"),
                          "--allow-root", os.path.join(root, "libs")],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
    while time.perf_counter() - t0 < 300:
        try:
            ask(sock, {"op": "status"}, timeout=300)
            return p, sock, time.perf_counter() - t0
        except OSError:
            time.sleep(0.002)
    p.kill()
    sys.exit(f"quald {quald} did not answer; see {root}/quald.log")


def first_history(sock):
    """history sent at once while status is asked every 10 ms on another
    connection: (history seconds, its reply, slowest status seconds,
    statuses answered)."""
    done = threading.Event()
    stat = []

    def poll():
        while not done.is_set():
            stat.append(ask(sock, {"op": "status"})[0])
            time.sleep(0.01)
        stat.append(ask(sock, {"op": "status"})[0])

    th = threading.Thread(target=poll)
    th.start()
    time.sleep(0.02)
    t, reply = ask(sock, {"op": "history", "limit": 10000})
    done.set()
    th.join()
    return t, reply, max(stat), len(stat)


def log_since(root, since):
    with open(os.path.join(root, "quald.log"), "rb") as f:
        f.seek(since)
        return f.read()


def during_check(root, sock, since):
    """While quald checks the stored logs off the loop (a quald that says
    it does), status every 10 ms until its 'checked' line: (the check's
    seconds, the slowest status, statuses answered); (None, None, 0) for a
    quald that checks nothing off the loop."""
    pat = re.compile(rb"checked the stored logs of \d+ finished jobs? off the loop in "
                     rb"([0-9.]+) s")
    if b"checking the stored logs" not in log_since(root, since):
        return None, None, 0
    stat = []
    for _ in range(60000):
        m = pat.search(log_since(root, since))
        if m:
            return float(m.group(1)), max(stat or [0]), len(stat)
        stat.append(ask(sock, {"op": "status"})[0])
        time.sleep(0.01)
    return None, max(stat or [0]), len(stat)


def one_start(quald, root, label, run, cold, njobs, wait_whole):
    since = os.path.getsize(os.path.join(root, "quald.log"))
    p, sock, listen_s = start(quald, root, cold)
    try:
        hist_s, reply, worst, n = first_history(sock)
        check, check_worst, check_n = during_check(root, sock, since)
        out = {"quald": quald, "start": label, "run": run, "cold": cold,
               "listen_s": round(listen_s, 3), "history_s": round(hist_s, 3),
               "history_jobs": len(reply.get("jobs", [])),
               "incomplete": reply.get("incomplete", False),
               "pending": reply.get("pending", 0),
               "status_max_s": round(worst, 4), "statuses": n}
        if check is not None:
            out.update(background_check_s=check, status_max_during_check_s=round(
                check_worst, 4), statuses_during_check=check_n)
        if wait_whole:
            # The whole history once the rebuild is done.
            for _ in range(1200):
                t, reply = ask(sock, {"op": "history", "limit": 10000})
                if not reply.get("incomplete"):
                    break
                time.sleep(0.05)
            out["whole_history_jobs"] = len(reply.get("jobs", []))
        print(json.dumps(out), flush=True)
    finally:
        stop(p)


def main():
    ap = bench_parser(__doc__)
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cold", action="store_true")
    a = ap.parse_args()
    qualctl = bench_qualctl(a)
    root = tempfile.mkdtemp(prefix="qual-store-start-")
    try:
        first = make_job(a.quald[0], qualctl, root, a.elf)
        t0 = time.perf_counter()
        ids = write_jobs(root, first, a.jobs, a.gib)
        size = sum(os.path.getsize(os.path.join(root, "state", "jobs", j, "log.jsonl"))
                   for j in ids)
        print(json.dumps({"jobs": len(ids), "log_bytes": size,
                          "written_s": round(time.perf_counter() - t0, 1)}), flush=True)
        jobs = os.path.join(root, "state", "jobs")
        for quald in a.quald:
            for run in range(a.runs):
                for j in os.listdir(jobs):
                    try:
                        os.unlink(os.path.join(jobs, j, "summary.json"))
                    except FileNotFoundError:
                        pass
                one_start(quald, root, "no summaries", run, a.cold, len(ids), True)
                if os.path.exists(os.path.join(jobs, ids[0], "summary.json")):
                    one_start(quald, root, "summaries stored", run, a.cold, len(ids), True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
