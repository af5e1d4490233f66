#!/usr/bin/env python3
"""What an older quald stored and what a candidate leaves behind (issue 10):
the real quald, qual-run and qual-compile, compile-only (no GPU), one slot
(tests/leftover.cmake says what each scenario asserts).

usage: leftover_test.py --quald Q --qualctl C --worker W --compile-helper H
                        --nvrtc L --nvrtc-alt L --shim-crash L --shim-leaver L
                        SCENARIO

unpinned: a job runs normally (its candidate a link to nvrtc.alt in an
allowed root); quald stops; the driver builds from that job's files a second
one, queued, whose request.json lacks the pin fields (as an older quald
stored it), and retargets the candidate's link to a crashing library in a
world-writable folder, which submit refuses directly. At the next start that
job must be done with the daemon's error ("stored without pinned libraries
by an older quald: submit it again"), with no start line (no worker ran it),
nothing struck, and a warning in quald's log (docs/quald.md, "Pinned
libraries").

leaver: the candidate is shim_leaver, whose constructor, in quald's identify
child, leaves an orphan in that child's process group
(tests/shims/shim_leaver.c). The submit must be accepted, the identify child
must have lived through the sweep that killed the orphan (the shim records
that it got past its wait), the job must end with the engine's verdict, and
nothing may be left running below quald (docs/quald.md, "Process lifetime").

Exits 0 when every check holds, 1 with the first failed check."""
import argparse
import json
import os
import shutil
import sys
import time

# The harness of pin_test.py: quald on a private socket and state folder,
# qualctl, and the one failed check.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pin_test import FAST, Quald, check, of_type, run_in_tree  # noqa: E402

WHY = "stored without pinned libraries by an older quald: submit it again"
PINS = ("baseline_real_path", "baseline_sha256", "candidate_real_path", "candidate_sha256")


def unpinned(args, root):
    libs = os.path.join(root, "libs")
    ww = os.path.join(root, "ww")
    os.mkdir(libs, 0o755)
    os.mkdir(ww)
    os.chmod(ww, 0o777)  # world-writable, no sticky bit: anyone may swap here
    evil = os.path.join(ww, "libevil.so")
    shutil.copyfile(args.shim_crash, evil)
    os.chmod(evil, 0o755)
    link = os.path.join(libs, "libcand.so")
    os.symlink(args.nvrtc_alt, link)

    q = Quald(args, root)
    r = q.ctl("submit", args.nvrtc_alt, link, "--case", FAST, "--compile-only",
              "--no-follow")
    check(r.returncode == 0, f"submit: exit {r.returncode}: {r.stdout}{r.stderr}")
    job = r.stdout.split()[-1]
    first = q.lines(job)
    check(len(of_type(first, "start")) == 1, f"{job} has no start line: {first}")
    q.stop()

    # The same job as an older quald stored it, queued: no pins.
    jobs = os.path.join(root, "state", "jobs")
    old = "j%06d" % (int(job[1:]) + 1)
    src, dst = os.path.join(jobs, job), os.path.join(jobs, old)
    os.mkdir(dst, 0o700)
    with open(os.path.join(src, "request.json")) as f:
        request = json.load(f)
    check(all(k in request for k in PINS), f"{job}'s request.json has no pins: {request}")
    for k in PINS:
        del request[k]
    with open(os.path.join(src, "state.json")) as f:
        state = json.load(f)
    with open(os.path.join(dst, "request.json"), "w") as f:
        json.dump(request, f)
    with open(os.path.join(dst, "state.json"), "w") as f:
        json.dump({"state": "queued", "submitted": state["submitted"]}, f)
    open(os.path.join(dst, "log.jsonl"), "w").close()
    # What its worker would resolve again: a library submit refuses.
    os.replace(link, link + ".old")
    os.symlink(evil, link)

    q = Quald(args, root)
    lines = q.lines(old, wait_s=30)
    check(not of_type(lines, "start") and not of_type(lines, "case"),
          f"a worker ran {old}: {lines}")
    errors = of_type(lines, "error")
    check(len(errors) == 1 and errors[0].get("code") == "usage" and
          errors[0].get("message") == WHY, f"{old} lacks the daemon's error: {lines}")
    verdicts = of_type(lines, "verdict")
    check(len(verdicts) == 1 and verdicts[0].get("verdict") == "error" and
          verdicts[0].get("message") == WHY, f"{old}'s verdict is not the error: {lines}")
    r = q.ctl("list", "--json")
    check(r.returncode == 0, f"list: exit {r.returncode}: {r.stderr}")
    listed = [j for o in map(json.loads, r.stdout.splitlines()) for j in o.get("jobs", [])
              if j.get("job") == old]
    check(listed and listed[0].get("state") == "done" and listed[0].get("verdict") == "error",
          f"{old} is not listed done with an error: {listed}")
    r = q.ctl("quarantine", "list", "--json")
    check(r.returncode == 0 and not json.loads(r.stdout).get("quarantine"),
          f"something was struck: {r.stdout}{r.stderr}")
    q.stop()
    with open(os.path.join(root, "quald.log"), errors="replace") as f:
        text = f.read()
    check(f"job '{old}': {WHY}" in text, "quald's log has no warning for the unpinned job")


def children_of(pid):
    """The pids whose parent is pid."""
    out = []
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(e))
    return out


def leaver(args, root):
    record = os.path.join(root, "leaver.record")
    os.environ["SHIM_LEAVER_RECORD"] = record
    q = Quald(args, root)
    r = q.ctl("submit", args.nvrtc, args.shim_leaver, "--case", FAST, "--compile-only",
              "--no-follow")
    check(r.returncode == 0, f"submit of a candidate that leaves an orphan in its "
          f"identify child's group: exit {r.returncode}: {r.stdout}{r.stderr}")
    job = r.stdout.split()[-1]
    try:
        with open(record) as f:
            survived = f.read().count("survived")
    except FileNotFoundError:
        survived = 0
    check(survived == 1, "the candidate's identify child was killed by the sweep that "
          f"killed its orphan ({survived} of 1 survived)")
    lines = q.lines(job)
    verdicts = [l for l in lines if l.get("type") == "verdict"]
    check(len(verdicts) == 1 and verdicts[0].get("verdict") not in ("error", "interrupted"),
          f"{job} did not end with the engine's verdict: {verdicts}")
    # The sleeping orphan (60 s) was killed by a sweep, not left running.
    deadline = time.monotonic() + 5
    while children_of(q.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = children_of(q.proc.pid)
    check(not left, f"processes left below quald: {left}")
    q.stop()


def main():
    ap = argparse.ArgumentParser()
    for o in ("--quald", "--qualctl", "--worker", "--compile-helper", "--nvrtc",
              "--nvrtc-alt", "--shim-crash", "--shim-leaver"):
        ap.add_argument(o, required=True)
    ap.add_argument("scenario", choices=["unpinned", "leaver"])
    args = ap.parse_args()
    scenario = {"unpinned": unpinned, "leaver": leaver}[args.scenario]

    def run(a, root):
        os.chmod(root, 0o755)
        scenario(a, root)
    return run_in_tree(args, args.scenario, run, "qual-leftover-")


if __name__ == "__main__":
    sys.exit(main())
