#!/usr/bin/env python3
"""What clients that ask for a large job log and never read cost quald
(issue 28: memory per client is bounded and logs are streamed): a job's
stored log is written anew as MIB MiB of pair lines (as bench/read_log.py
does), then CLIENTS HTTP GETs of /api/jobs/ID and, in a second round on a
fresh quald, CLIENTS control `show`s connect, ask, and never read. For each
round: quald's peak resident memory (VmHWM, /proc) before and after, and the
time of control `status` requests sent meanwhile (one every 50 ms for
SECONDS), the worst, the 95th percentile and the median; a first round with
no clients gives the machine's own noise.

    python3 bench/log_clients.py --elf LIB.so --quald BUILD/bin/quald \\
        [--quald OTHER/bin/quald ...] [--mib 60] [--clients 64] [--seconds 5]

Prints one JSON object per quald and round. Fake workers
(tests/tools/fake_worker.sh, fake_compile.sh): no GPU, no compiler.
"""
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "tools"))
from stream_test import (bench_parser, bench_qualctl, hold_show, http_get,  # noqa: E402
                         make_job, request, start, stop, vm_hwm, write_log)


def round_of(quald, root, job, kind, clients, seconds):
    http = os.path.join(root, "http.sock")
    p, sock = start(quald, root, ["--http", http])
    held = []
    try:
        base = vm_hwm(p.pid)
        t0 = time.perf_counter()
        for _ in range(clients):
            if kind == "http":
                held.append(http_get(http, f"/api/jobs/{job}", read=False))
            else:
                held.append(hold_show(sock, job))
        opened = time.perf_counter() - t0
        times = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t, lines = request(sock, {"op": "status"}, lambda ls: len(ls) >= 1, timeout=120)
            if not lines:
                sys.exit("no status reply")
            times.append(t)
            time.sleep(0.05)
        return {"quald": quald, "clients": clients, "kind": kind,
                "vm_hwm_before_mib": round(base / 1024, 1),
                "vm_hwm_after_mib": round(vm_hwm(p.pid) / 1024, 1),
                "connect_s": round(opened, 3), "status_n": len(times),
                "status_max_ms": round(max(times) * 1000, 1),
                "status_p95_ms": round(sorted(times)[int(len(times) * 0.95)] * 1000, 1),
                "status_median_ms": round(statistics.median(times) * 1000, 1)}
    finally:
        for s in held:
            s.close()
        stop(p)


def main():
    ap = bench_parser(__doc__)
    ap.add_argument("--mib", type=int, default=60)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=5)
    a = ap.parse_args()
    qualctl = bench_qualctl(a)
    root = tempfile.mkdtemp(prefix="qual-log-clients-")
    try:
        job = make_job(a.quald[0], qualctl, root, a.elf)
        n, size = write_log(root, job, a.mib)
        for quald in a.quald:
            for kind, clients in (("none", 0), ("http", a.clients), ("show", a.clients)):
                r = round_of(quald, root, job, kind, clients, a.seconds)
                r.update({"log_bytes": size, "lines": n})
                print(json.dumps(r), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
