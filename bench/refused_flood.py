#!/usr/bin/env python3
"""What a flood of refused connections costs the users quald allows.

A user that is not allowed (NOBODY's uid, by setpriv) keeps up to CONNS
connections to one of quald's doors open without reading, opening new ones
for the whole run; meanwhile root, who is allowed, sends REQUESTS requests
to the same door one after another (for SECONDS at most) and counts those
that fail. Doors:

  http   GETs of /api/status on quald --http 127.0.0.1:0
  unix   `status` requests on the control socket, quald's open file limit
         lowered to 100 (as a small LimitNOFILE= would), --max-connections 16

Needs root (to be another user). Each quald given runs the same floods in
turn; prints one JSON object per quald and door: the requests, how many
failed (and the kinds of error), the slowest answer in seconds, and whether quald ran out of file
descriptors (its log says so).

    sudo python3 bench/refused_flood.py --quald BUILD/bin/quald \\
        [--quald OTHER/bin/quald ...] [--requests 156] [--conns 400] [--seconds 60]
"""
import argparse
import http.client
import json
import os
import pwd
import re
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "tools"))
from access_test import FLOODER  # noqa: E402


def start(quald, dir, extra, low_nofile):
    err = open(os.path.join(dir, "quald.err"), "w+")

    def limit():
        if low_nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE,
                               (100, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    p = subprocess.Popen([quald, "--socket", os.path.join(dir, "quald.sock"),
                          "--state-dir", os.path.join(dir, "state"), "--slots", "1",
                          "--worker", "/bin/false", "--compile-helper", "/bin/false",
                          "--group", "qual-no-such-group", *extra],
                         stdout=err, stderr=err, preexec_fn=limit)
    deadline = time.monotonic() + 10
    while "listening on" not in open(err.name).read():
        if p.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"{quald} did not start: {open(err.name).read()}")
        time.sleep(0.02)
    return p, err.name


def http_get(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", "/api/status")
        r = c.getresponse()
        r.read()
        return r.status == 200
    finally:
        c.close()


def unix_status(path):
    with socket.socket(socket.AF_UNIX) as s:
        # A blocking connect, as qualctl's: it waits for room in a full
        # backlog instead of failing at once, here for 10 s at most.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 10, 0))
        s.connect(path)
        s.settimeout(10)
        s.sendall(b'{"op":"status"}\n')
        return b'"op":"status"' in s.makefile("rb").readline()


def run_door(quald, door, nobody, args):
    dir = tempfile.mkdtemp(prefix="qual-flood-")
    os.chmod(dir, 0o755)
    extra = ["--http", "127.0.0.1:0"] if door == "http" else ["--max-connections", "16"]
    p, log = start(quald, dir, extra, door == "unix")
    try:
        if door == "http":
            port = int(re.search(r"http on http://127\.0\.0\.1:([0-9]+)/", open(log).read())[1])
            addr, ask = f"127.0.0.1:{port}", lambda: http_get(port)
        else:
            addr = os.path.join(dir, "quald.sock")
            os.chmod(addr, 0o666)
            ask = lambda: unix_status(addr)  # noqa: E731
        f = subprocess.Popen(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}",
                              "--clear-groups", sys.executable, "-c", FLOODER, addr,
                              str(args.conns), "600"], stdout=subprocess.PIPE, text=True)
        f.stdout.readline()
        failed, slowest, why, done = 0, 0.0, set(), 0
        end = time.monotonic() + args.seconds
        while done < args.requests and time.monotonic() < end:
            done += 1
            t0 = time.monotonic()
            try:
                ok = ask()
            except (OSError, http.client.HTTPException) as e:
                ok = False
                why.add(type(e).__name__)
            slowest = max(slowest, time.monotonic() - t0)
            failed += not ok
            time.sleep(0.05)
        f.kill()
        f.wait()
        return {"quald": quald, "door": door, "requests": done, "failed": failed,
                "slowest_s": round(slowest, 3), "errors": sorted(why),
                "out_of_descriptors": "Too many open files" in open(log).read()}
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(20)
        shutil.rmtree(dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quald", action="append", required=True)
    ap.add_argument("--requests", type=int, default=156)
    ap.add_argument("--conns", type=int, default=400)
    ap.add_argument("--seconds", type=float, default=60,
                    help="stop asking after this long (a door that stalls)")
    ap.add_argument("--nobody", default="nobody")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("refused_flood.py needs root: the flood is another user's")
    nobody = pwd.getpwnam(args.nobody)
    for quald in args.quald:
        for door in ("http", "unix"):
            print(json.dumps(run_door(quald, door, nobody, args)), flush=True)


if __name__ == "__main__":
    main()
