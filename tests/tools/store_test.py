#!/usr/bin/python3
"""The state directory under attack and under a bad disk: the real quald,
driven by the real qualctl (service_test.py's harness), compile-only slots.

usage: store_test.py --quald Q --qualctl C --worker W --compile-helper H
                     --nvrtc LIB --nvrtc-alt LIB --stall-shim LIB SCENARIO

Scenarios (daemon/store.h, daemon/writer.h, docs/quald.md):
  stall           a state disk that stalls (tests/shims/store_stall.c, by
                  LD_PRELOAD, for quald only) while a job runs: status and
                  list answer again and again for the whole stall, each
                  within a third of it (ANSWER_S); a submit made meanwhile is not accepted until
                  its job is on disk; after the stall both jobs end with
                  their verdicts and no stored line is lost
  second_daemon   a second quald on one state directory refuses to start,
                  naming the directory and the first's pid, while the first
                  runs a job: that job ends with one verdict, seq unrepeated
  corrupt_middle  one corrupt record in the middle of a finished job's log,
                  restart: the verdict is kept, list says damaged, and the
                  log's last line names the lost bytes
  failed_sync     a log sync that fails (EIO, by the same shim) mid-job:
                  quald stops at once with status 3, its message naming
                  the job and the file's path; after the next start the
                  job ends with one verdict
  long_line       a planted 150 MB line without a newline at the end of a
                  job's log: quald starts, cuts it off, and its peak memory
                  (VmHWM) stays far below the line's size
Exits 0 when every check holds, 1 with the first failed check otherwise."""
import argparse
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import service_test as svc  # noqa: E402
import store_log  # noqa: E402
from service_test import FAST, SECOND, Failure, Quald, check, serving, wait_until  # noqa: E402

# How long an answer may take during the stall. The target is 100 ms (the
# service issue's), which is a speed: this test checks the behaviour, that
# quald's loop does not wait for the stalled disk, and a loop that waited
# would answer only when the stall (STALL_S) ends. A third of the stall
# tells the two apart on a machine loaded by other tests (an answer took
# 146 ms under ASan with the whole suite running); the slowest answer is
# logged.
ANSWER_S = 1.0
STALL_S = 3.0



def preload(shim):
    """quald (and only quald: the driver starts it with this environment
    and takes it back afterwards) with the stall shim preloaded. In the
    ASan build the sanitizer's runtime must come first among the libraries
    a program loads; a preloaded shim comes before it, which ASan refuses
    unless told that this order is meant."""
    os.environ["LD_PRELOAD"] = shim
    asan = os.environ.get("ASAN_OPTIONS")
    os.environ["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"


def submit(d, *extra):
    r = d.ctl("submit", d.args.nvrtc, d.args.nvrtc_alt, "--case", FAST, "--case", SECOND,
              "--compile-only", "--no-follow", *extra)
    check(r.returncode == 0, f"submit: exit {r.returncode}: {r.stderr}")
    return r.stdout.strip()


def timed_ctl(d, *argv):
    t0 = time.monotonic()
    r = d.ctl(*argv, "--json", timeout=5)
    took = time.monotonic() - t0
    check(r.returncode == 0, f"qualctl {' '.join(argv)}: exit {r.returncode}: {r.stderr}")
    return json.loads(r.stdout), took


def job_state(d, job):
    for j in d.ctl_json("list")["jobs"]:
        if j["job"] == job:
            return j
    raise Failure(f"job {job} is not in qualctl list")


def wait_done(d, job):
    return wait_until(lambda: job_state(d, job)["state"] not in ("queued", "running")
                      and job_state(d, job), svc.JOB_S, f"job {job} to end")


def stored_ok(d, job):
    """The job's stored log: every record checks out, seq 0.. without a gap
    or a repeat, one verdict line and it is the last."""
    texts = d.stored_lines(job)
    svc.check_job_lines(texts, job, f"stored log of {job}")
    return texts


def scenario_stall(args, root):
    flag = os.path.join(root, "stall")
    d = Quald(args, root)
    preload(args.stall_shim)
    os.environ["QUAL_STALL_FLAG"] = flag
    os.environ["QUAL_STALL_DIR"] = os.path.realpath(d.state)
    late = None
    try:
        with serving(d):
            a = submit(d)
            wait_until(lambda: job_state(d, a)["state"] == "running", svc.JOB_S,
                       f"job {a} to run")
            open(flag, "w").close()
            # A submit during the stall: not accepted before its job is
            # stored.
            late = d.spawn_ctl("submit", args.nvrtc, args.nvrtc_alt, "--case", FAST,
                               "--compile-only", "--no-follow")
            t_end = time.monotonic() + STALL_S
            slowest, n = 0.0, 0
            while time.monotonic() < t_end:
                st, took = timed_ctl(d, "status")
                slowest = max(slowest, took)
                check(took <= ANSWER_S, f"qualctl status took {took * 1000:.0f} ms during "
                      f"a stalled disk (bound {ANSWER_S * 1000:.0f} ms)")
                lst, took = timed_ctl(d, "list")
                slowest = max(slowest, took)
                check(took <= ANSWER_S, f"qualctl list took {took * 1000:.0f} ms during "
                      f"a stalled disk (bound {ANSWER_S * 1000:.0f} ms)")
                n += 1
                time.sleep(0.05)
            check(os.path.exists(flag + ".hit"), "the stall was never reached: no write "
                  "or sync of quald's state directory during the job")
            check(late.poll() is None, "a submit was accepted while the disk stalled: "
                  "its job cannot have been on disk")
            svc.log(f"stall: {n} status+list pairs in {STALL_S:g} s, slowest "
                    f"{slowest * 1000:.1f} ms")
            os.unlink(flag)
            out, err = svc.communicate(late, svc.JOB_S, "the submit made during the stall")
            check(late.returncode == 0, f"the submit made during the stall: exit "
                  f"{late.returncode}: {err}")
            b = out.strip()
            for job in (a, b):
                # Compile-only: nothing is timed.
                check(wait_done(d, job)["verdict"] == "not_timed",
                      f"job {job} after the stall: {job_state(d, job)}")
                texts = stored_ok(d, job)
                shown = d.ctl("show", job, "--json")
                check(shown.returncode in (0, 1),
                      f"show {job}: exit {shown.returncode}: {shown.stderr}")
                shown_lines = [t for t in shown.stdout.splitlines() if t.strip()]
                check(shown_lines == texts, f"show {job} differs from its stored log")
    finally:
        svc.end(late)
        for k in ("LD_PRELOAD", "ASAN_OPTIONS", "QUAL_STALL_FLAG", "QUAL_STALL_DIR"):
            os.environ.pop(k, None)


def scenario_second_daemon(args, root):
    d = Quald(args, root)
    with serving(d):
        a = submit(d)
        wait_until(lambda: job_state(d, a)["state"] == "running", svc.JOB_S,
                   f"job {a} to run")
        second = os.path.join(root, "second")
        os.makedirs(second, exist_ok=True)
        p = subprocess.Popen([args.quald, "--socket", os.path.join(second, "q.sock"),
                              "--state-dir", d.state, "--worker", args.worker,
                              "--compile-helper", args.compile_helper],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            _, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
            raise Failure("a second quald on the same state directory started and "
                          f"kept running:\n{err}")
        check(p.returncode != 0, "a second quald on the same state directory started "
              f"(exit {p.returncode}):\n{err}")
        want = (f"state directory '{d.state}' is in use by another quald "
                f"(pid {d.pid()})")
        check(want in err, f"the second quald's message lacks {want!r}:\n{err}")
        check(not os.path.exists(os.path.join(second, "q.sock")),
              "the second quald left a socket")
        wait_done(d, a)
        stored_ok(d, a)
        b = submit(d)
        wait_done(d, b)
        stored_ok(d, b)


def scenario_corrupt_middle(args, root):
    d = Quald(args, root)
    with serving(d):
        a = submit(d)
        verdict = wait_done(d, a)["verdict"]
    path = os.path.join(d.job_dir(a), "log.jsonl")
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    check(len(lines) > 4, f"job {a} has too few lines to corrupt one in the middle")
    mid = len(lines) // 2
    at = sum(len(x) + 1 for x in lines[:mid])
    end = at + len(lines[mid]) + 1
    bad = bytearray(data)
    bad[at + 5] ^= 0x01
    with open(path, "wb") as f:
        f.write(bytes(bad))
    lg = store_log.read(path)
    check(len(lg.lines) == len(lines) - 2 and lg.torn_bytes == 0 and
          lg.lost == [(at, end - at, 1, "check mismatch")],
          f"the corrupted byte did not make one lost record (store_log.py): {lg.lost}")
    with serving(d):
        e = job_state(d, a)
        check(e["state"] == "done" and e["verdict"] == verdict,
              f"after the restart job {a} reads {e}, expected done with {verdict}")
        check(e.get("damaged") is True, f"qualctl list does not say job {a} is damaged: {e}")
        plain = d.ctl("list")
        row = [l for l in plain.stdout.splitlines() if l.startswith(a)]
        check(row and "done, damaged" in row[0],
              f"plain qualctl list does not say job {a} is damaged: {plain.stdout}")
        shown = d.ctl("show", a, "--json")
        texts = [t for t in shown.stdout.splitlines() if t.strip()]
        objs = [json.loads(t) for t in texts]
        types = [o["type"] for o in objs]
        check(types.count("verdict") == 1, f"show {a}: {types.count('verdict')} verdict "
              "lines, expected 1 (the stored one, kept)")
        check(any(o["type"] == "verdict" and o["verdict"] == verdict for o in objs),
              f"show {a}: its verdict line {verdict} is gone")
        note = objs[-1]
        check(note["type"] == "error" and note["code"] == "internal",
              f"show {a}: the last line is not the damage note: {texts[-1]}")
        where = f"bytes {at}-{end} (check mismatch)"
        check("lost 1 record" in note["message"] and where in note["message"],
              f"the damage note does not name '{where}': {note['message']}")
        seqs = [o["seq"] for o in objs]
        check(mid not in seqs and seqs == sorted(set(seqs)),
              f"show {a}: seqs {seqs} (the lost seq {mid} must be missing, none repeated)")
        check(d.stored_state(a).get("damaged") is True, "state.json does not say damaged")


def scenario_failed_sync(args, root):
    flag = os.path.join(root, "eio")
    d = Quald(args, root)
    preload(args.stall_shim)
    os.environ["QUAL_STALL_FLAG"] = flag
    os.environ["QUAL_STALL_EIO"] = "1"
    os.environ["QUAL_STALL_DIR"] = os.path.realpath(d.state)
    try:
        d.start()
        try:
            a = submit(d)
            open(flag, "w").close()
            rc = d.proc.wait(svc.JOB_S)
        except BaseException:
            d.stop_quietly()
            raise
        d.proc = None
    finally:
        for k in ("LD_PRELOAD", "ASAN_OPTIONS", "QUAL_STALL_FLAG", "QUAL_STALL_DIR",
                  "QUAL_STALL_EIO"):
            os.environ.pop(k, None)
    text = d.log_text()
    check(rc == 3, f"quald exited with status {rc} after a failed sync, expected 3:\n{text}")
    # The first sync after the flag: the job's log or its state file.
    where = os.path.join(os.path.realpath(d.state), "jobs", a)
    want = re.compile(rf"quald: fatal: job '{a}': cannot sync '{re.escape(where)}/"
                      r"(log\.jsonl|state\.json\.tmp)': Input/output error; stopping")
    check(want.search(text), f"the fatal message does not name the job and the path "
          f"({want.pattern!r}):\n{text}")
    os.unlink(flag)
    with serving(d):
        # Stopped before its start was stored, it runs again; after, it
        # was interrupted. Either way one verdict, no seq repeated.
        e = wait_done(d, a)
        check(e["state"] in ("interrupted", "done"), f"job {a} after the restart: {e}")
        stored_ok(d, a)


def vm_hwm_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise Failure("no VmHWM in /proc/PID/status")


def scenario_long_line(args, root):
    d = Quald(args, root)
    with serving(d):
        a = submit(d)
        wait_done(d, a)
    path = os.path.join(d.job_dir(a), "log.jsonl")
    good = os.path.getsize(path)
    big = 150 << 20
    with open(path, "ab") as f:
        chunk = b"x" * (1 << 20)
        for _ in range(big >> 20):
            f.write(chunk)
    with serving(d):
        hwm = vm_hwm_kb(d.pid())
        svc.log(f"long_line: quald's VmHWM after reading a 150 MB line: {hwm} kB")
        check(hwm < 64 * 1024, f"quald's peak memory is {hwm} kB after reading a log with "
              "a 150 MB line: the line was read whole")
        check(os.path.getsize(path) == good, f"the torn 150 MB tail was not cut off: "
              f"{os.path.getsize(path)} bytes, expected {good}")
        check("incomplete over-long record" in d.log_text(),
              "quald did not report the over-long record")
        stored_ok(d, a)


SCENARIOS = {
    "stall": scenario_stall,
    "second_daemon": scenario_second_daemon,
    "corrupt_middle": scenario_corrupt_middle,
    "long_line": scenario_long_line,
    "failed_sync": scenario_failed_sync,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for opt in ("--quald", "--qualctl", "--worker", "--compile-helper", "--nvrtc",
                "--nvrtc-alt", "--stall-shim"):
        ap.add_argument(opt, required=True)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    return svc.run_scenario(args.scenario, SCENARIOS[args.scenario], args,
                            prefix="qual-store-")


if __name__ == "__main__":
    sys.exit(main())
