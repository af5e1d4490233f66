#!/usr/bin/env python3
"""A job stored by a quald before pinned libraries is never run (issue 10,
finding 1 after an upgrade; docs/quald.md, "Pinned libraries"): the real
quald, qual-run and qual-compile, compile-only (no GPU), one slot.

usage: unpinned_test.py --quald Q --qualctl C --worker W --compile-helper H
                        --nvrtc-alt L --shim-crash L

A job runs normally (its candidate a link to nvrtc.alt in an allowed root);
quald stops; the driver builds from that job's files a second one, queued,
whose request.json lacks the pin fields (as an older quald stored it), and
retargets the candidate's link to a crashing library in a world-writable
folder, which submit refuses directly. At the next start that job must be
done with the daemon's error ("stored without pinned libraries by an older
quald: submit it again"), with no start line (no worker ran it), no strike,
and a warning in quald's log. Exits 0 when every check holds, 1 with the
first failed check."""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FAST = "gemm_i8-256x512x256"
WHY = "stored without pinned libraries by an older quald: submit it again"
PINS = ("baseline_real_path", "baseline_sha256", "candidate_real_path", "candidate_sha256")


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Quald:
    def __init__(self, args, root):
        self.args = args
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

    def lines(self, job, wait_s=90):
        """The job's stored lines once it has its verdict."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            r = self.ctl("show", job, "--json")
            if r.returncode == 0:
                lines = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
                if any(l.get("type") == "verdict" for l in lines):
                    return lines
            time.sleep(0.2)
        raise Failure(f"job {job} has no verdict after {wait_s} s")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        check(self.proc.wait(30) == 0, f"quald exited with {self.proc.returncode} after "
              "SIGTERM")
        self.log.close()


def of_type(lines, kind):
    return [l for l in lines if l.get("type") == kind]


def run(args, root):
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


def main():
    ap = argparse.ArgumentParser()
    for o in ("--quald", "--qualctl", "--worker", "--compile-helper", "--nvrtc-alt",
              "--shim-crash"):
        ap.add_argument(o, required=True)
    args = ap.parse_args()
    # In the tree quald runs from (an allowed root), owned by us, not /tmp.
    tree = os.path.dirname(os.path.dirname(os.path.realpath(args.quald)))
    root = tempfile.mkdtemp(prefix="qual-unpinned-", dir=tree)
    os.chmod(root, 0o755)
    try:
        run(args, root)
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        try:
            with open(os.path.join(root, "quald.log"), errors="replace") as f:
                sys.stderr.write(f.read()[-4000:])
        except OSError:
            pass
        return 1
    shutil.rmtree(root, ignore_errors=True)
    print("unpinned: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
