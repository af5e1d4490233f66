#!/usr/bin/env python3
"""Quarantine through the real service: quald, qual-run and qual-compile on
the crashing shim (tests/shims: its compile dies by SIGSEGV) as the
candidate, compile-only (no GPU).

Three jobs with the crashing candidate each end fail (exit 2) and count a
strike against its SHA-256; the fourth submit is refused at once, naming the
library, its hash and how to clear it, and no job is made. The strikes are in
`qualctl quarantine list` (3 strikes, quarantined; the only entry: the
baseline, the real nvrtc, is never struck); `qualctl quarantine clear HASH`
forgets them (STATE/quarantine.json too), a malformed or unknown hash being
refused, and the same submit is accepted again without a restart.

usage: quarantine_test.py --quald Q --qualctl C --worker W --compile-helper H
                          --shim-crash LIB --nvrtc LIB
"""
import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FAST = "gemm_i8-256x512x256"


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def start(args, root):
    sock = os.path.join(root, "quald.sock")
    env = dict(os.environ)
    env["TMPDIR"] = os.path.join(root, "tmp")
    os.makedirs(env["TMPDIR"], exist_ok=True)
    for k in ("QUAL_SOCKET", "RUNTIME_DIRECTORY", "STATE_DIRECTORY", "NOTIFY_SOCKET",
              "LISTEN_PID", "LISTEN_FDS"):
        env.pop(k, None)
    log = open(os.path.join(root, "quald.log"), "ab")
    p = subprocess.Popen([args.quald, "--socket", sock, "--state-dir",
                          os.path.join(root, "state"), "--worker", args.worker,
                          "--compile-helper", args.compile_helper],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        check(p.poll() is None, f"quald exited with {p.returncode}")
        if ctl(args, sock, "status").returncode == 0:
            return p, sock
        time.sleep(0.05)
    raise Failure("quald did not answer within 10 s")


def stop(p):
    p.send_signal(signal.SIGTERM)
    check(p.wait(20) == 0, f"quald exited with {p.returncode} after SIGTERM")


def ctl(args, sock, *argv):
    return subprocess.run([args.qualctl, "--socket", sock, *argv], capture_output=True,
                          text=True, timeout=60)


def submit(args, sock):
    return ctl(args, sock, "submit", args.nvrtc, args.shim_crash, "--case", FAST,
               "--compile-only")


def main():
    ap = argparse.ArgumentParser()
    for o in ("--quald", "--qualctl", "--worker", "--compile-helper", "--shim-crash",
              "--nvrtc"):
        ap.add_argument(o, required=True)
    args = ap.parse_args()
    with open(os.path.realpath(args.shim_crash), "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    root = tempfile.mkdtemp(prefix="qual-quarantine-")
    p = None
    try:
        p, sock = start(args, root)
        for i in range(3):
            r = submit(args, sock)
            check(r.returncode == 2, f"crashing candidate, job {i + 1}: exit "
                  f"{r.returncode}, expected 2 (fail): {r.stdout}{r.stderr}")
        r = submit(args, sock)
        check(r.returncode != 0 and r.returncode != 2,
              f"the fourth submit was not refused: exit {r.returncode}: {r.stdout}")
        want = (f"(sha256 {sha}) is quarantined after 3 crashes; "
                f"clear with: qualctl quarantine clear {sha}")
        check(want in r.stderr + r.stdout,
              f"the refusal does not say '{want}': {r.stderr}{r.stdout}")
        check(args.shim_crash in r.stderr + r.stdout, f"the refusal does not name "
              f"'{args.shim_crash}': {r.stderr}")
        jobs = sorted(os.listdir(os.path.join(root, "state", "jobs")))
        check(len(jobs) == 3, f"the refused submit made a job: {jobs}")

        # qualctl quarantine list: the table row, then the raw reply.
        r = ctl(args, sock, "quarantine", "list")
        check(r.returncode == 0, f"quarantine list: exit {r.returncode}: {r.stderr}")
        rows = [l.split() for l in r.stdout.splitlines()]
        check(rows and rows[0] == ["sha256", "strikes", "quarantined", "library", "last"],
              f"quarantine list: header: {r.stdout}")
        row = [x for x in rows[1:] if x and x[0] == sha[:16]]
        check(len(row) == 1 and row[0][1:3] == ["3", "yes"] and
              row[0][3] in (args.shim_crash, os.path.realpath(args.shim_crash)),
              f"quarantine list: no row '{sha[:16]} 3 yes {args.shim_crash}': {r.stdout}")
        check(len(rows) == 2, f"only the candidate is struck, got {r.stdout}")
        r = ctl(args, sock, "quarantine", "list", "--json")
        check(r.returncode == 0, f"quarantine list --json: exit {r.returncode}: {r.stderr}")
        o = json.loads(r.stdout)
        check(o.get("type") == "reply" and o.get("op") == "quarantine" and
              o.get("action") == "list", f"quarantine list --json: {o}")
        q = o.get("quarantine")
        check(isinstance(q, list) and len(q) == 1 and q[0].get("sha256") == sha and
              q[0].get("strikes") == 3 and q[0].get("quarantined") is True,
              f"quarantine list --json: {o}")

        # Malformed and unknown hashes are refused (exit 4); the real one is
        # cleared, in quarantine.json too.
        r = ctl(args, sock, "quarantine", "clear", sha.upper())
        check(r.returncode == 4 and "64 lower-case hex digits" in r.stderr,
              f"clear of an upper-case hash: exit {r.returncode}: {r.stderr}")
        other = hashlib.sha256(b"never struck").hexdigest()
        r = ctl(args, sock, "quarantine", "clear", other)
        check(r.returncode == 4 and
              f"no quarantined library with sha256 '{other}'" in r.stderr,
              f"clear of an unknown hash: exit {r.returncode}: {r.stderr}")
        r = ctl(args, sock, "quarantine", "clear", sha)
        check(r.returncode == 0 and sha in r.stdout,
              f"quarantine clear: exit {r.returncode}: {r.stdout}{r.stderr}")
        # quald replaces the file in its writer's thread, after the reply.
        def cleared_on_disk():
            with open(os.path.join(root, "state", "quarantine.json")) as f:
                return sha not in json.load(f)
        deadline = time.monotonic() + 10
        while not cleared_on_disk() and time.monotonic() < deadline:
            time.sleep(0.05)
        check(cleared_on_disk(), "quarantine.json still holds the cleared hash")
        r = ctl(args, sock, "quarantine", "list")
        check(r.returncode == 0 and sha[:16] not in r.stdout,
              f"quarantine list after clear: {r.stdout}{r.stderr}")

        r = submit(args, sock)
        check(r.returncode == 2, f"after clearing: exit {r.returncode}, expected 2: "
              f"{r.stdout}{r.stderr}")
        stop(p)
        p = None
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        try:
            with open(os.path.join(root, "quald.log"), errors="replace") as f:
                sys.stderr.write(f.read()[-4000:])
        except OSError:
            pass
        return 1
    finally:
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()
    shutil.rmtree(root, ignore_errors=True)
    print("quarantine: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
