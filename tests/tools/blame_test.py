#!/usr/bin/env python3
"""Blame only with cause (docs/verdicts.md, "Blame"): a case both arms fail
to compile the same way is the job's error, never the candidate's fail.
Compile-only, with the shims (tests/shims) as both arms, no GPU.

qual-run, each stream validated against the schema:
  crash      shim_crash in both arms: one compile_crashed line, arm null,
             naming both arms' crashes; no line blames the candidate; the
             case's failed_arm baseline, the run error (exit 3); the same with
             --compile-jobs 1 (the arms compiled one after the other)
  hang       shim_hang in both arms, --compile-timeout 1: compile_timeout,
             arm null, error (exit 3)
  rejected   shim_hugelog in both arms (both reject the source):
             compile_failed, arm null, error (exit 3)
  time_limit shim_hang in both arms compiled one after the other: the
             baseline's compile runs past --compile-timeout, the job's time
             limit (SIGUSR1) stops the candidate's: compile_timeout of
             neither arm, error (exit 3), as with both in flight at once
  differ     shim_hang as baseline, shim_crash as candidate (the arms fail
             differently): each arm's own line, the candidate's fail (exit 2)
  candidate  nvrtc as baseline, shim_crash as candidate: the candidate's fail
             (exit 2), its line arm candidate
quald and qualctl (--quald given): the same library twice, both compiles
timing out, and both crashing: `qualctl submit` exits 3, the job's lines hold
the arm-null line naming both arms, and `qualctl quarantine list` is empty
(no strike against either library).

usage: blame_test.py --run QUAL_RUN --shim-crash LIB --shim-hang LIB
                     --shim-hugelog LIB --nvrtc LIB --out DIR
                     [--quald Q --qualctl C --compile-helper H]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from service_test import (FAST as CASE, Failure, Quald, SCHEMA, VALIDATE, check,  # noqa: E402
                          check_job_lines, serving, submit_job_id)


def errors(lines):
    return [o for o in lines if o.get("type") == "error"]


def validate(path, verdict):
    r = subprocess.run([sys.executable, VALIDATE, SCHEMA, path, "--expect-verdict", verdict], capture_output=True, text=True)
    check(r.returncode == 0, f"{path}: {r.stdout}{r.stderr}")


def check_both(name, lines, code, words):
    """One error line of code, arm null, in CASE, naming both arms' failures
    (each arm's word in words); none blames the candidate; the case's
    failed_arm is baseline; the verdict error."""
    errs = errors(lines)
    check(not [e for e in errs if e.get("arm") == "candidate"],
          f"{name}: a line blames the candidate: {errs}")
    both = [e for e in errs if e.get("code") == code]
    check(len(both) == 1 and both[0]["arm"] is None and both[0]["case"] == CASE and
          both[0]["stage"] == "compile",
          f"{name}: want one {code} line, arm null, case {CASE}: {errs}")
    msg = both[0]["message"]
    check(f"baseline: {words[0]}" in msg or ("baseline: " in msg and words[0] in msg),
          f"{name}: the message does not name the baseline's failure: {msg}")
    check("candidate: " in msg and words[1] in msg.split("candidate: ", 1)[1],
          f"{name}: the message does not name the candidate's failure: {msg}")
    cv = [o for o in lines if o.get("type") == "case_verdict"]
    check(len(cv) == 1 and cv[0]["verdict"] == "fail" and cv[0]["failed_arm"] == "baseline",
          f"{name}: case verdict {cv}, want fail charged to the baseline (neither arm)")
    v = [o for o in lines if o.get("type") == "verdict"]
    check(len(v) == 1 and v[0]["verdict"] == "error", f"{name}: verdict {v}, want error")


def run(args, name, base, cand, *extra, want):
    out = os.path.join(args.out, f"blame_{name}.jsonl")
    env = dict(os.environ)
    # An artifact cache of its own, empty: every compile is made.
    cache = out + ".cache"
    shutil.rmtree(cache, ignore_errors=True)
    env["XDG_CACHE_HOME"] = cache
    t0 = time.monotonic()
    with open(out, "w") as f:
        r = subprocess.run([args.run, base, cand, "--compile-only", "--case", CASE, *extra],
                           stdout=f, stderr=subprocess.PIPE, text=True, env=env, timeout=60)
    took = time.monotonic() - t0
    check(r.returncode == want, f"{name}: qual-run exit {r.returncode}, want {want}: "
          f"{r.stderr[-2000:]}")
    with open(out) as f:
        lines = [json.loads(t) for t in f if t.strip()]
    print(f"{name}: exit {r.returncode} in {took:.2f} s")
    return out, lines


FAILED = []


def scenario(name, fn, *a):
    """Runs one scenario; a failure is recorded and the next one runs, so
    that the report names every scenario that fails."""
    try:
        fn(*a)
    except (Failure, subprocess.TimeoutExpired) as e:
        print(f"FAIL: {name}: {e}", file=sys.stderr)
        FAILED.append(name)


def both_fail(args, name, lib, code, words, *extra):
    out, lines = run(args, name, lib, lib, *extra, want=3)
    validate(out, "error")
    check_both(name, lines, code, words)


def differ(args):
    """Different failures: each arm's own, the candidate's outranks."""
    out, lines = run(args, "differ", args.shim_hang, args.shim_crash, "--compile-timeout",
                     "1", want=2)
    validate(out, "fail")
    errs = {(e.get("arm"), e.get("code")) for e in errors(lines)}
    check(errs == {("baseline", "compile_timeout"), ("candidate", "compile_crashed")},
          f"differ: want the baseline's timeout and the candidate's crash, got {errs}")


def candidate_alone(args):
    out, lines = run(args, "candidate", args.nvrtc, args.shim_crash, want=2)
    validate(out, "fail")
    errs = [(e.get("arm"), e.get("code")) for e in errors(lines)]
    check(errs == [("candidate", "compile_crashed")], f"candidate: {errs}")


def read_pids(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def time_limit_sequential(args):
    """The arms compiled one after the other, both hanging: the baseline's
    compile runs past --compile-timeout, then the job's time limit
    (SIGUSR1) stops qual-run in the candidate's. Both arms unfinished the
    same way: one compile_timeout line of neither arm, exit 3, as when both
    are in flight at once."""
    pidfile = os.path.join(args.out, "blame_time_limit.pids")
    if os.path.exists(pidfile):
        os.unlink(pidfile)
    env = dict(os.environ, QUAL_SHIM_PIDFILE=pidfile)
    p = subprocess.Popen([args.run, args.shim_hang, args.shim_hang, "--compile-only",
                          "--no-cache", "--compile-jobs", "1", "--compile-timeout", "1",
                          "--case", CASE],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 30
        while not read_pids(pidfile):
            check(p.poll() is None and time.monotonic() < deadline,
                  "time_limit: the baseline's compile never started")
            time.sleep(0.02)
        first = read_pids(pidfile)
        # The candidate's compile writes its own pids once it runs.
        while read_pids(pidfile) in ("", first):
            check(p.poll() is None and time.monotonic() < deadline,
                  "time_limit: the candidate's compile never started")
            time.sleep(0.02)
        p.send_signal(signal.SIGUSR1)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    lines = [json.loads(t) for t in out.splitlines() if t.strip()]
    errs = errors(lines)
    check(p.returncode == 3, f"time_limit: exit {p.returncode}, want 3 (error): {errs} {err}")
    check(len(errs) == 1 and errs[0]["arm"] is None and errs[0]["code"] == "compile_timeout" and
          f"{CASE} (candidate), after the baseline's compile" in errs[0]["message"],
          f"time_limit: want one compile_timeout line of neither arm: {errs}")
    print("time_limit: exit 3")


def qual_run_cases(args):
    crash = ("compile_crashed", ("SIGSEGV", "SIGSEGV"))
    scenario("crash", both_fail, args, "crash", args.shim_crash, *crash)
    scenario("crash_sequential", both_fail, args, "crash_sequential", args.shim_crash,
             *crash, "--compile-jobs", "1")
    scenario("hang", both_fail, args, "hang", args.shim_hang, "compile_timeout",
             ("did not finish within 1 s",) * 2, "--compile-timeout", "1")
    scenario("rejected", both_fail, args, "rejected", args.shim_hugelog, "compile_failed",
             ("rejected",) * 2)
    scenario("time_limit", time_limit_sequential, args)
    scenario("differ", differ, args)
    scenario("candidate", candidate_alone, args)


# ---- through quald ----

def submit_both(d, name, lib, code, extra):
    r = d.ctl("submit", lib, lib, "--case", CASE, "--compile-only", "--json", *extra)
    check(r.returncode == 3, f"{name}: qualctl submit exit {r.returncode}, want 3 "
          f"(error): {r.stdout[-2000:]}{r.stderr}")
    lines = check_job_lines(r.stdout.splitlines(), submit_job_id(r), name, verdict="error")
    word = "did not finish" if code == "compile_timeout" else "SIGSEGV"
    check_both(name, lines, code, (word, word))
    print(f"{name}: qualctl exit 3")


def no_strike(d):
    q = d.ctl_json("quarantine", "list").get("quarantine")
    check(q == [], f"a strike landed for failures of both arms: {q}")


def through_quald(args):
    args.worker = args.run
    root = tempfile.mkdtemp(prefix="qual-blame-", dir=args.out)
    with serving(Quald(args, root)) as d:
        for name, lib, code, extra in (
                ("quald_hang", args.shim_hang, "compile_timeout", ("--compile-timeout", "1")),
                ("quald_crash", args.shim_crash, "compile_crashed", ())):
            scenario(name, submit_both, d, name, lib, code, extra)
        scenario("quald_no_strike", no_strike, d)
    shutil.rmtree(root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    for o in ("--run", "--shim-crash", "--shim-hang", "--shim-hugelog", "--nvrtc", "--out"):
        ap.add_argument(o, required=True)
    for o in ("--quald", "--qualctl", "--compile-helper"):
        ap.add_argument(o)
    ap.add_argument("--only", choices=["qual-run", "quald"])
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    try:
        if args.only != "quald":
            qual_run_cases(args)
        if args.only != "qual-run":
            check(args.quald and args.qualctl and args.compile_helper,
                  "quald's test needs --quald, --qualctl and --compile-helper")
            through_quald(args)
    except Failure as e:
        if str(e):
            print(f"FAIL: {e}", file=sys.stderr)
        return 1
    if FAILED:
        print(f"FAIL: {', '.join(FAILED)}", file=sys.stderr)
        return 1
    print("blame: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
