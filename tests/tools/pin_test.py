#!/usr/bin/env python3
"""What runs is what was checked: the real quald, qual-run and qual-compile,
compile-only (no GPU), one slot (tests/pin.cmake says what each scenario
asserts; docs/quald.md, "Pinned libraries", what should happen).

usage: pin_test.py --quald Q --qualctl C --worker W --compile-helper H
                   --shim-crash L --shim-crash-late L --shim-hang L
                   --shim-oob L --nvrtc L --nvrtc-alt L SCENARIO

The libraries a scenario swaps live in a fresh folder of the build tree
(quald's default allowed roots hold the tree it runs from; /tmp is
world-writable and refused). Exits 0 when every check holds, 1 with the
first failed check."""
import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import service_test as st  # noqa: E402
from service_test import Failure, check  # noqa: E402

# qualctl show exits with the job's verdict status (0 to 3: docs/qualctl.md)
# once it has one; 4 and 5 are a refusal and no daemon.
SHOW_ANSWERED = (0, 1, 2, 3)

FAST = "gemm_i8-256x512x256"


def sha256_of(path):
    with open(os.path.realpath(path), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def copy_into(src, dst):
    """Replaces dst by a copy of src (through a rename, as an update would)."""
    tmp = dst + ".new"
    shutil.copyfile(src, tmp)
    os.chmod(tmp, 0o755)
    os.replace(tmp, dst)


def retarget(link, target):
    """Points the symlink link at target, atomically."""
    tmp = link + ".new"
    os.symlink(target, tmp)
    os.replace(tmp, link)


class Quald:
    def __init__(self, args, root):
        self.args = args
        self.root = root
        self.sock = os.path.join(root, "quald.sock")
        env = dict(os.environ)
        env["TMPDIR"] = os.path.join(root, "tmp")
        os.makedirs(env["TMPDIR"], exist_ok=True)
        for k in ("QUAL_SOCKET", "RUNTIME_DIRECTORY", "STATE_DIRECTORY", "NOTIFY_SOCKET",
                  "LISTEN_PID", "LISTEN_FDS"):
            env.pop(k, None)
        self.log = open(os.path.join(root, "quald.log"), "ab")
        self.proc = subprocess.Popen(
            [args.quald, "--socket", self.sock, "--state-dir", os.path.join(root, "state"),
             "--worker", args.worker, "--compile-helper", args.compile_helper,
             "--slots", "1"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, env=env)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            check(self.proc.poll() is None, f"quald exited with {self.proc.returncode}")
            if self.ctl("status").returncode == 0:
                return
            time.sleep(0.05)
        raise Failure("quald did not answer within 10 s")

    def ctl(self, *argv, timeout=60):
        return subprocess.run([self.args.qualctl, "--socket", self.sock, *argv],
                              capture_output=True, text=True, timeout=timeout)

    def submit(self, base, cand, *extra):
        """Submits without following; returns the job id."""
        r = self.ctl("submit", base, cand, "--case", FAST, "--compile-only", "--no-follow",
                     *extra)
        check(r.returncode == 0, f"submit {cand}: exit {r.returncode}: {r.stdout}{r.stderr}")
        job = r.stdout.split()[-1] if r.stdout.split() else ""
        check(job.startswith("j"), f"submit {cand}: no job id in {r.stdout!r}")
        return job

    def state(self, job):
        r = self.ctl("list", "--json")
        check(r.returncode == 0, f"list: exit {r.returncode}: {r.stderr}")
        for line in r.stdout.splitlines():
            o = json.loads(line)
            for j in o.get("jobs", []):
                if j.get("job") == job:
                    return j.get("state")
        raise Failure(f"job {job} is not listed: {r.stdout}")

    def lines(self, job, wait_s=90):
        """The job's stored lines once it has its verdict."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            r = self.ctl("show", job, "--json")
            if r.returncode in SHOW_ANSWERED:
                lines = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
                if any(l.get("type") == "verdict" for l in lines):
                    return lines
            time.sleep(0.2)
        raise Failure(f"job {job} has no verdict after {wait_s} s")

    def quarantine(self):
        r = self.ctl("quarantine", "list", "--json")
        check(r.returncode == 0, f"quarantine list: exit {r.returncode}: {r.stderr}")
        return {e["sha256"]: e for e in json.loads(r.stdout).get("quarantine", [])}

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        check(self.proc.wait(30) == 0, f"quald exited with {self.proc.returncode} after "
              "SIGTERM")


def of_type(lines, kind):
    return [l for l in lines if l.get("type") == kind]


def link_swap(args, q, root):
    libs = os.path.join(root, "libs")
    ww = os.path.join(root, "ww")
    os.mkdir(libs, 0o755)
    os.mkdir(ww)
    os.chmod(ww, 0o777)  # world-writable, no sticky bit: anyone may swap here
    evil = os.path.join(ww, "libevil.so")
    copy_into(args.shim_crash, evil)
    r = q.ctl("submit", args.nvrtc, evil, "--case", FAST, "--compile-only", "--no-follow")
    check(r.returncode == 4 and "world-writable" in r.stderr,
          f"a library in a world-writable folder was not refused: exit {r.returncode}: "
          f"{r.stdout}{r.stderr}")

    link = os.path.join(libs, "libcand.so")
    os.symlink(args.nvrtc_alt, link)
    swapped = os.path.join(libs, "libfile.so")
    copy_into(args.shim_oob, swapped)
    want_alt = sha256_of(args.nvrtc_alt)
    want_oob = sha256_of(args.shim_oob)
    found_evil = sha256_of(evil)

    # The only slot is busy with a compile that hangs for 10 s.
    busy = q.submit(args.nvrtc, args.shim_hang, "--compile-timeout", "10")
    j_link = q.submit(args.nvrtc, link)
    j_file = q.submit(args.nvrtc, swapped)
    retarget(link, evil)
    copy_into(evil, swapped)
    for j in (j_link, j_file):
        check(q.state(j) == "queued", f"job {j} was no longer queued when its library "
              f"changed: {q.state(j)}; the busy job {busy} is {q.state(busy)}")

    lines = q.lines(j_link)
    start = of_type(lines, "start")
    verdict = of_type(lines, "verdict")
    check(start and verdict, f"job {j_link}: no start or verdict line: {lines}")
    cand = start[0].get("candidate", {})
    check(cand.get("real_path") == os.path.realpath(args.nvrtc_alt) and
          cand.get("sha256") == want_alt,
          f"job {j_link} did not run the library submit checked: candidate {cand}, "
          f"expected {os.path.realpath(args.nvrtc_alt)} sha256 {want_alt}")
    check(verdict[0].get("verdict") not in ("fail", "error"),
          f"job {j_link}: the swapped link's library ran: {verdict[0]}; errors "
          f"{of_type(lines, 'error')}")
    check(not [e for e in of_type(lines, "error") if e.get("code") == "compile_crashed"],
          f"job {j_link}: the crashing library ran: {of_type(lines, 'error')}")

    lines = q.lines(j_file)
    verdict = of_type(lines, "verdict")
    errors = of_type(lines, "error")
    check(verdict and verdict[0].get("verdict") == "fail",
          f"job {j_file}: a replaced candidate must fail, got {verdict}: {errors}")
    changed = [e for e in errors if e.get("code") == "library_changed"]
    check(changed and changed[0].get("arm") == "candidate",
          f"job {j_file}: no library_changed error line for the candidate: {errors}")
    msg = changed[0].get("message", "")
    check(swapped in msg and want_oob in msg and found_evil in msg,
          f"job {j_file}: the refusal does not name '{swapped}', sha256 {want_oob} "
          f"expected and {found_evil} found: {msg}")
    check(not [e for e in errors if e.get("code") == "compile_crashed"],
          f"job {j_file}: the replaced library was loaded: {errors}")
    check(found_evil not in q.quarantine(), f"a library that never ran was struck: "
          f"{q.quarantine()}")


def strike_swap(args, q, root):
    libs = os.path.join(root, "libs")
    os.mkdir(libs, 0o755)
    late = os.path.join(libs, "libcrashlate.so")
    copy_into(args.shim_crash_late, late)
    link = os.path.join(libs, "libcand.so")
    os.symlink(late, link)
    want = sha256_of(late)
    alt = sha256_of(args.nvrtc_alt)

    p = subprocess.Popen([args.qualctl, "--socket", q.sock, "submit", args.nvrtc, link,
                          "--case", FAST, "--compile-only", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    swapped = False
    seen = []
    for line in p.stdout:
        o = json.loads(line)
        seen.append(o)
        if o.get("type") == "start" and not swapped:
            # The worker has pinned both arms; the crash comes 2 s later.
            retarget(link, args.nvrtc_alt)
            swapped = True
    rc = p.wait(60)
    check(swapped, f"no start line came: {seen} {p.stderr.read()}")
    crashed = [e for e in seen if e.get("type") == "error" and
               e.get("code") == "compile_crashed" and e.get("arm") == "candidate"]
    check(rc == 2 and crashed, f"the late crash did not fail the job: exit {rc}: {seen}")
    qu = q.quarantine()
    check(alt not in qu, f"nvrtc.alt (sha256 {alt}), swapped in after the crash line's "
          f"job started, was struck: {qu}")
    check(want in qu and qu[want].get("strikes") == 1,
          f"the crashing library (sha256 {want}) has no strike: {qu}")


def run_with_quald(args, root, scenario, *extra):
    """scenario(args, q, root, *extra) against a quald started in root
    (made 0755, as a folder of the tree), which is stopped after it (and
    killed when the scenario failed)."""
    os.chmod(root, 0o755)
    q = Quald(args, root)
    try:
        scenario(args, q, root, *extra)
        q.stop()
    finally:
        if q.proc.poll() is None:
            q.proc.kill()
            q.proc.wait()


def run_in_tree(args, name, fn, prefix):
    """st.run_scenario for fn(args, root), root a fresh folder of the tree
    quald runs from (an allowed root, owned by us; /tmp is refused)."""
    tree = os.path.dirname(os.path.dirname(os.path.realpath(args.quald)))
    return st.run_scenario(name, fn, args, prefix=prefix, parent=tree)


def main():
    ap = argparse.ArgumentParser()
    for o in ("--quald", "--qualctl", "--worker", "--compile-helper", "--shim-crash",
              "--shim-crash-late", "--shim-hang", "--shim-oob", "--nvrtc", "--nvrtc-alt"):
        ap.add_argument(o, required=True)
    ap.add_argument("scenario", choices=["link_swap", "strike_swap"])
    args = ap.parse_args()
    scenario = {"link_swap": link_swap, "strike_swap": strike_swap}[args.scenario]
    return run_in_tree(args, args.scenario,
                       lambda a, root: run_with_quald(a, root, scenario), "qual-pin-")


if __name__ == "__main__":
    sys.exit(main())
