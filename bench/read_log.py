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
import json
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "..", "tests", "tools")
sys.path.insert(0, TOOLS)
from stream_test import (bench_parser, bench_qualctl, make_job, request,  # noqa: E402
                         start, stop, write_log)


def main():
    ap = bench_parser(__doc__)
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    qualctl = bench_qualctl(a)
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
