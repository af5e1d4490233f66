#!/usr/bin/env python3
"""The submit's hash is quald's own: the real quald, qual-run and
qual-compile, compile-only (no GPU), one slot, with shim_pinforge as the
candidate (tests/shims/shim_pinforge.c: its constructor replaces the pin
report of the identify child that loads it; tests/pinforge.cmake says what
each scenario asserts).

usage: pinforge_test.py --quald Q --qualctl C --worker W --compile-helper H
                        --shim-fifo L --shim-hash L --nvrtc L SCENARIO

The candidate is a copy in a fresh folder of the build tree (an allowed
root). Its constructor appends a line to $SHIM_PINFORGE_RECORD each time it
runs: "identify" or "compile", then "fifo" or "forged" once it replaced the
report. Exits 0 when every check holds, 1 with the first failed check."""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pin_test import (FAST, Failure, check, copy_into, run_in_tree,  # noqa: E402
                      run_with_quald, sha256_of)


def record_of(path):
    try:
        with open(path) as f:
            return f.read().split()
    except FileNotFoundError:
        return []


def stored_request(root, job):
    with open(os.path.join(root, "state", "jobs", job, "request.json")) as f:
        return json.load(f)


def status_within(q, limit_s):
    """One `qualctl status`; fails unless it is answered within limit_s."""
    t0 = time.monotonic()
    try:
        r = q.ctl("status", timeout=limit_s + 1)
    except subprocess.TimeoutExpired:
        raise Failure(f"quald did not answer status within {limit_s + 1} s")
    took = time.monotonic() - t0
    check(r.returncode == 0 and took < limit_s,
          f"status: exit {r.returncode} after {took:.2f} s (limit {limit_s} s): {r.stderr}")
    return took


def accepted_with_real_hash(args, q, root, lib, rec, attack):
    """Submits lib as the candidate while asking status every 0.1 s; the
    submit must end, accepted, with the file's own hash stored."""
    want = sha256_of(lib)
    p = subprocess.Popen([args.qualctl, "--socket", q.sock, "submit", args.nvrtc, lib,
                          "--case", FAST, "--compile-only", "--no-follow"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    worst = 0.0
    deadline = time.monotonic() + 30
    while p.poll() is None:
        check(time.monotonic() < deadline, "the submit did not end within 30 s")
        worst = max(worst, status_within(q, 1.0))
        time.sleep(0.1)
    # The attack has been made (and quald still answers after it).
    for _ in range(10):
        worst = max(worst, status_within(q, 1.0))
        time.sleep(0.1)
    out, err = p.communicate()
    check(attack in record_of(rec), f"the shim's constructor did not {attack} the pin "
          f"report (record: {record_of(rec)}): the test proves nothing")
    check(p.returncode == 0, f"the submit was refused: exit {p.returncode}: {out}{err}")
    job = out.split()[-1] if out.split() else ""
    check(job.startswith("j"), f"no job id in {out!r}")
    got = stored_request(root, job).get("candidate_sha256")
    check(got == want, f"job {job} stores candidate_sha256 {got}, not the file's "
          f"sha256 {want}")
    print(f"status answered within {worst * 1000:.0f} ms at worst")


def fifo(args, q, root, lib, rec):
    accepted_with_real_hash(args, q, root, lib, rec, "fifo")


def forged(args, q, root, lib, rec):
    accepted_with_real_hash(args, q, root, lib, rec, "forged")


def quarantined(args, q, root, lib, rec):
    want = sha256_of(lib)
    r = q.ctl("submit", args.nvrtc, lib, "--case", FAST, "--compile-only", "--no-follow")
    check(r.returncode == 4 and f"(sha256 {want}) is quarantined" in r.stderr and
          lib in r.stderr,
          f"a quarantined library was not refused, naming it and its hash: exit "
          f"{r.returncode}: {r.stdout}{r.stderr}")
    check(not os.path.exists(rec), f"the quarantined library was loaded at submit: "
          f"its constructor ran ({record_of(rec)})")
    r = q.ctl("list", "--json")
    jobs = [j for l in r.stdout.splitlines() if l.strip()
            for j in json.loads(l).get("jobs", [])]
    check(r.returncode == 0 and not jobs, f"a job was made: {r.stdout}")


def prepared(scenario):
    """fn(args, root) for run_in_tree: the candidate copied into root/libs,
    the shim's record file named, quarantine.json planted for
    "quarantined", then scenario against a quald in root."""
    def run(args, root):
        libs = os.path.join(root, "libs")
        os.mkdir(libs, 0o755)
        lib = os.path.join(libs, "libcand.so")
        copy_into(args.shim_fifo if args.scenario == "fifo" else args.shim_hash, lib)
        rec = os.path.join(root, "record")
        os.environ["SHIM_PINFORGE_RECORD"] = rec
        if args.scenario == "quarantined":
            os.mkdir(os.path.join(root, "state"), 0o700)
            with open(os.path.join(root, "state", "quarantine.json"), "w") as f:
                json.dump({sha256_of(lib): {"strikes": 3, "library": lib,
                                            "last": "2026-01-01T00:00:00Z"}}, f)
        run_with_quald(args, root, scenario, lib, rec)
    return run


def main():
    ap = argparse.ArgumentParser()
    for o in ("--quald", "--qualctl", "--worker", "--compile-helper", "--shim-fifo",
              "--shim-hash", "--nvrtc"):
        ap.add_argument(o, required=True)
    ap.add_argument("scenario", choices=["fifo", "hash", "quarantined"])
    args = ap.parse_args()
    scenario = {"fifo": fifo, "hash": forged, "quarantined": quarantined}[args.scenario]
    return run_in_tree(args, args.scenario, prepared(scenario), "qual-pinforge-")


if __name__ == "__main__":
    sys.exit(main())
