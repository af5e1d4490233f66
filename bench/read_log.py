#!/usr/bin/env python3
"""What reading one large stored job log costs quald's loop: a `show`, a
`watch` that resumes before the job (its existence check and its replay,
drained as fast as the client reads) and a `watch` that resumes after the
job's last line (the check, and a replay with nothing to send, which a
`status` sent after it waits for), each
timed from the request to the last byte of its answer over the Unix socket.
quald reads a log synchronously on its loop, so each time is a stall of
every other client of that quald.

The job is made by a real quald with tests/tools/fake_worker.sh and
fake_compile.sh (no GPU, no compiler), then its log is written anew as
START, SIZE bytes of pair lines, VERDICT, in the store's record format
(tests/tools/store_log.py), and quald is started again on it (each quald
given gets the same state directory in turn).

    python3 bench/read_log.py --elf LIB.so --quald BUILD/bin/quald \\
        [--quald OTHER/bin/quald ...] [--mib 64] [--runs 3]

Prints one JSON object per quald and request: the best and median seconds.
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "..", "tests", "tools")
sys.path.insert(0, TOOLS)
import store_log  # noqa: E402


def start(quald, root):
    sock = os.path.join(root, "quald.sock")
    log = open(os.path.join(root, "quald.log"), "ab")
    env = {k: v for k, v in os.environ.items()
           if k not in ("QUAL_SOCKET", "NOTIFY_SOCKET", "LISTEN_PID", "LISTEN_FDS")}
    p = subprocess.Popen([quald, "--socket", sock, "--state-dir", os.path.join(root, "state"),
                          "--slots", "1", "--worker", os.path.join(TOOLS, "fake_worker.sh"),
                          "--compile-helper", os.path.join(TOOLS, "fake_compile.sh"),
                          "--allow-root", os.path.join(root, "libs")],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
    for _ in range(600):
        if os.path.exists(sock):
            try:
                request(sock, {"op": "status"}, lambda lines: True)
                return p, sock
            except OSError:
                pass
        time.sleep(0.05)
    p.kill()
    sys.exit(f"quald {quald} did not answer; see {root}/quald.log")


def stop(p):
    p.terminate()
    p.wait(30)


def request(sock, req, done):
    """Sends req (a request, or a list of them), reads lines until
    done(lines) says so; the seconds taken and the lines."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    buf, lines = b"", []
    reqs = req if isinstance(req, list) else [req]
    t0 = time.perf_counter()
    s.sendall(b"".join(json.dumps(r).encode() + b"\n" for r in reqs))
    while not done(lines):
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
        *whole, buf = buf.split(b"\n")
        lines.extend(whole)
    t = time.perf_counter() - t0
    s.close()
    return t, lines


def make_job(quald, qualctl, root, elf):
    libs = []
    for kind in ("base", "ok"):
        d = os.path.join(root, "libs", kind)
        os.makedirs(d)
        libs.append(os.path.join(d, "libcompiler.so"))
        shutil.copy(elf, libs[-1])
    p, sock = start(quald, root)
    try:
        r = subprocess.run([qualctl, "--socket", sock, "submit", *libs, "--compile-only",
                            "--json"], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            sys.exit(f"submit: exit {r.returncode}: {r.stderr}")
        job = json.loads(r.stdout.splitlines()[0])["job"]
        for _ in range(600):
            t, lines = request(sock, {"op": "show", "job": job}, lambda ls: len(ls) >= 1)
            if json.loads(lines[0])["state"] == "done":
                break
            time.sleep(0.05)
    finally:
        stop(p)
    return job


def write_log(root, job, mib):
    path = os.path.join(root, "state", "jobs", job, "log.jsonl")
    lines = store_log.read(path).lines
    start_line = lines[0][:lines[0].rindex(b',"job"')]
    verdict = lines[-1][:lines[-1].rindex(b',"job"')]
    pair = (b'{"type":"pair","case":"gemm_f16-256x512x256","pair":%d,'
            b'"order":"baseline_first","baseline_ns":1.5,"candidate_ns":1.25,'
            b'"placement":{"sm":[1,2,3,4],"clock_mhz":1980}')
    seq = 0
    with open(path, "wb") as f:
        f.write(store_log.record(start_line + b',"job":"%s","seq":%d}' % (job.encode(), seq)))
        while f.tell() < mib << 20:
            seq += 1
            f.write(store_log.record(pair % seq + b',"job":"%s","seq":%d}' % (job.encode(), seq)))
        seq += 1
        f.write(store_log.record(verdict + b',"job":"%s","seq":%d}' % (job.encode(), seq)))
    return seq + 1, os.path.getsize(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quald", action="append", required=True)
    ap.add_argument("--qualctl", help="qualctl (default: beside the first quald)")
    ap.add_argument("--elf", required=True, help="any ELF shared library")
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    qualctl = a.qualctl or os.path.join(os.path.dirname(a.quald[0]), "qualctl")
    root = tempfile.mkdtemp(prefix="qual-read-log-")
    try:
        job = make_job(a.quald[0], qualctl, root, a.elf)
        n, size = write_log(root, job, a.mib)
        for quald in a.quald:
            p, sock = start(quald, root)
            try:
                cases = {
                    "show": ({"op": "show", "job": job}, lambda ls: len(ls) >= n + 1),
                    "watch_replay": ({"op": "watch", "after_job": job, "after_seq": -1},
                                     lambda ls: len(ls) >= n + 1),
                    # The status request is answered once the watch's
                    # replay, which has nothing to send, has read the log.
                    "watch_after_last": ([{"op": "watch", "after_job": job,
                                           "after_seq": n - 1}, {"op": "status"}],
                                         lambda ls: len(ls) >= 2),
                }
                for name, (req, done) in cases.items():
                    times = []
                    for _ in range(a.runs):
                        t, lines = request(sock, req, done)
                        assert done(lines), (name, len(lines))
                        times.append(t)
                    print(json.dumps({"quald": quald, "request": name, "lines": n,
                                      "log_bytes": size, "best_s": round(min(times), 4),
                                      "median_s": round(statistics.median(times), 4)}),
                          flush=True)
            finally:
                stop(p)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
