#!/usr/bin/python3
"""Jobs cannot reach each other (issue 28; docs/service.md, "Trust model").

usage: isolate_test.py SCENARIO --quald Q --qualctl C --worker W
                       --compile-helper H --nvrtc LIB --shim-slow LIB
                       [--shim-hunter LIB] [--compile-user NAME | --compile-users A-B]

hunter: quald (as root) with two compile-only slots and the compile user
setting (--compile-users A-B, or --compile-user NAME) runs a hostile
candidate, tests/shims/shim_hunter.c, which for 10 s finds every
qual-compile and qual-run process and every oracle by /proc, reads its
command line, plants a file in every folder named there and kill()s it with
SIGSEGV; meanwhile two other jobs (the real nvrtc against shim_slow,
compile-only, the second with a fixture directory whose oracle runs) run on
the other slot. Checks that:
  - the hunter found at least four qual-compile processes and an oracle (so
    it saw the other jobs') and no kill() of a process of another uid than
    its own succeeded (EPERM), and no file was planted;
  - both other jobs end as they do alone: exit 0, verdict not_timed, every
    case not_timed, no error line;
  - no quarantine strike landed on their library (`qualctl quarantine
    list --json`: no entry for shim_slow's sha256).
With one compile user for all slots (--compile-user nobody; quald before
--compile-users) the hunter kills the other jobs' compile children: their
verdicts change, and their crashes were strikes against shim_slow.

argv: a job with options, cases, pins and a fixture directory (a copy of
examples/fixtures/rmsnorm_f16, whose oracle program runs) runs while every
process below quald is sampled every 2 ms; no /proc/PID/cmdline of any of
them (worker, compile children, oracle) holds the job's id, a case, an
option, either library's sha256 or path, the fixture directory or the
worker's folder. Before quald passed requests by
descriptor and qual-run by file, all of them were there.

Exits 0 when every check holds, 1 with the first failure, 77 when skipped
(hunter needs root)."""
import argparse
import hashlib
import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from forge_test import read_records  # noqa: E402
from service_test import (FAST, SECOND, JOB_S, Quald, check, communicate, proc_stat,  # noqa: E402
                          run_scenario, serving, submit_job_id, wait_until)

THIRD = "gemm_i8-256x1024x1024"
FX_CASE = "rmsnorm_f16-4096x1024"  # examples/fixtures/rmsnorm_f16's
HERE = os.path.dirname(os.path.abspath(__file__))
HUNT_S = 10


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def quald_extra(args):
    # The shims' folder may lie outside quald's own tree (a build of another
    # version run against this one's shims).
    extra = ["--allow-root", os.path.dirname(os.path.realpath(args.shim_slow))]
    if args.shim_hunter:
        extra += ["--allow-root", os.path.dirname(os.path.realpath(args.shim_hunter))]
    if args.compile_users:
        return extra + ["--compile-users", args.compile_users]
    if args.compile_user:
        return extra + ["--compile-user", args.compile_user]
    return extra


def check_victim(where, out, err, rc):
    texts = out.splitlines()
    check(rc == 0, f"{where}: exit {rc}, expected 0 (as without the hunter): {err}\n"
          f"{out[-2000:]}")
    objs = [json.loads(t) for t in texts]
    errors = [o for o in objs if o.get("type") == "error"]
    check(not errors, f"{where}: error lines (none without the hunter): {errors}")
    verdict = objs[-1]
    check(verdict.get("type") == "verdict" and verdict.get("verdict") == "not_timed",
          f"{where}: verdict {verdict}, expected not_timed")
    cases = [o for o in objs if o.get("type") == "case_verdict"]
    check(len(cases) == 3 and all(c.get("verdict") == "not_timed" for c in cases),
          f"{where}: case verdicts {cases}, expected three not_timed")


def fixture_copy(args, root):
    """A fixture directory of the user's, whose oracle program runs too: a
    copy of examples/fixtures/rmsnorm_f16 in ROOT/allowed, readable by the
    compile users. Returns its path and quald's options with it allowed."""
    allowed = os.path.join(root, "allowed")
    fx = os.path.join(allowed, "isolate_fx")
    shutil.copytree(os.path.join(HERE, "..", "..", "examples", "fixtures", "rmsnorm_f16"), fx)
    # Its oracle, kept alive a moment before it runs, so that the hunter's
    # scans of /proc meet it even on a loaded machine (a python3 oracle
    # that ends within a scan or two was missed under ASan).
    os.rename(os.path.join(fx, "oracle.py"), os.path.join(fx, "oracle_real.py"))
    with open(os.path.join(fx, "oracle.py"), "w") as f:
        f.write("#!/usr/bin/env python3\n"
                "import os, sys, time\n"
                "real = os.path.join(os.path.dirname(os.path.abspath(__file__)), "
                "'oracle_real.py')\n"
                "time.sleep(1.5)\n"
                "os.execv(sys.executable, [sys.executable, real] + sys.argv[1:])\n")
    os.chmod(os.path.join(fx, "oracle.py"), 0o755)
    for dirpath, dirs, files in os.walk(allowed):
        for n in [dirpath] + [os.path.join(dirpath, x) for x in dirs + files]:
            os.chmod(n, os.stat(n).st_mode & ~0o022 | 0o555 if os.path.isdir(n) or
                     n.endswith(".py") else os.stat(n).st_mode & ~0o022 | 0o444)
    # The example's oracle is `#!/usr/bin/env python3` and needs numpy
    # (Debian's python3): quald passes its PATH on to the worker.
    os.environ["PATH"] = "/usr/bin:" + os.environ.get("PATH", "")
    return fx, quald_extra(args) + ["--allow-root", allowed]


def scenario_hunter(args, root):
    # The compile users must pass through ROOT to quald's $TMPDIR, and the
    # hunter write its records beside it.
    os.chmod(root, 0o711)
    records = os.path.join(root, "records")
    os.mkdir(records)
    os.chmod(records, 0o777)
    record = os.path.join(records, "hunter.record")
    os.environ["SHIM_HUNTER_RECORD"] = record
    os.environ["QUAL_SHIM_HUNT_S"] = str(HUNT_S)
    victim_sha = sha256(args.shim_slow)
    fx, extra = fixture_copy(args, root)
    with serving(Quald(args, root, slots=2, extra=extra)) as d:
        hunter = d.spawn_ctl("submit", args.nvrtc, args.shim_hunter, "--case", FAST,
                             "--compile-only", "--json")
        # The hunter hunts once its record has a line (it records quald's
        # own qual-run workers at once).
        wait_until(lambda: os.path.exists(record) and os.path.getsize(record) > 0, JOB_S,
                   "the hunter to start hunting")
        # The second other job runs a fixture directory's oracle too.
        argv = ("submit", args.nvrtc, args.shim_slow, "--case", FAST, "--case", SECOND,
                "--compile-only", "--json")
        victims = [d.spawn_ctl(*argv, "--case", THIRD),
                   d.spawn_ctl(*argv, "--fixtures", fx, "--case", FX_CASE)]
        outs = [communicate(p, 2 * JOB_S, "a victim's submit") for p in victims]
        communicate(hunter, 2 * JOB_S, "the hunter's submit")
        q = d.ctl_json("quarantine", "list")
    recs = read_records(record)
    owner = os.stat(record)[stat.ST_UID]
    # What the other jobs must not have suffered first, then that the hunter
    # did hunt them (else their passing says nothing).
    struck = [e for e in q.get("quarantine", []) if e.get("sha256") == victim_sha]
    check(not struck, f"a strike landed on the victims' library: {struck}")
    planted = [x for x in recs if x["planted"]]
    check(not planted, f"the hunter planted files: {planted}")
    # Processes of uids outside its user namespace read as the overflow uid.
    hits = [x for x in recs if x["kill"]["ok"] and x["uid"] != owner]
    check(not hits, f"the hunter (uid {owner}) signalled {len(hits)} processes of other "
          f"uids: {[(x['pid'], x['comm'], x['uid']) for x in hits]}")
    for i, (out, err) in enumerate(outs):
        check_victim(f"victim {i + 1}", out, err, victims[i].returncode)
    compiles = [x for x in recs if x["comm"] == "qual-compile"]
    check(len(compiles) >= 4, f"the hunter found {len(compiles)} qual-compile processes, "
          f"expected at least 4 (the other jobs'): {recs}")
    oracles = [x for x in recs if x["comm"] not in ("qual-compile", "qual-run")]
    check(oracles, f"the hunter found no oracle of the other jobs': {recs}")


def descendants(pid):
    """Every live process below pid."""
    kids = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st:
                kids.setdefault(st[1], []).append((int(name), st[2]))
    out, todo = [], [pid]
    while todo:
        for child, comm in kids.get(todo.pop(), []):
            out.append((child, comm))
            todo.append(child)
    return out


def scenario_argv(args, root):
    seen = {}
    stop = threading.Event()
    os.chmod(root, 0o711)  # the compile users pass through to quald's $TMPDIR

    def sample(pid):
        while not stop.is_set():
            for child, comm in descendants(pid):
                try:
                    with open(f"/proc/{child}/cmdline", "rb") as f:
                        cmd = f.read()
                except OSError:
                    continue
                if cmd:
                    seen.setdefault((child, comm), cmd.split(b"\0")[:-1])
            time.sleep(0.002)
    opt = "-DQUAL_ISOLATE_OPTION=1"
    fx, extra = fixture_copy(args, root)
    with serving(Quald(args, root, slots=1, extra=extra)) as d:
        t = threading.Thread(target=sample, args=(d.pid(),), daemon=True)
        t.start()
        r = d.ctl("submit", args.nvrtc, args.shim_slow, "--case", FAST, "--case", SECOND,
                  "--fixtures", fx, "--case", FX_CASE,
                  f"--candidate-opt={opt}", "--compile-only", "--json")
        stop.set()
        t.join()
        check(r.returncode == 0, f"submit: exit {r.returncode}: {r.stderr}\n{r.stdout[-3000:]}")
        job = str(submit_job_id(r))
    comms = {comm for _, comm in seen}
    oracles = [c for c in seen.values() if any(w.endswith(b"case.json") for w in c)]
    check({"qual-run", "qual-compile"} <= comms and oracles,
          f"sampled no worker, compile child or oracle: {sorted(comms)}")
    secrets = [FAST, SECOND, FX_CASE, fx, opt, sha256(args.nvrtc), sha256(args.shim_slow),
               args.nvrtc, args.shim_slow, os.path.realpath(args.nvrtc),
               os.path.realpath(args.shim_slow), "quald-", os.path.join(root, "tmp")]
    for (pid, comm), cmd in sorted(seen.items()):
        words = [w.decode(errors="replace") for w in cmd]
        check(job not in words and not any(f"-{job}-" in w for w in words),
              f"{comm} {pid}: job {job} in its command line {words}")
        leaked = [s for s in secrets if any(s in w for w in words)]
        check(not leaked, f"{comm} {pid}: its command line {words} shows {leaked}")


def scenario_worker(args, root):
    """qual-run sent SIGSEGV by another process while it runs (a compile of
    shim_hang in flight) ends by SIGKILL, saying why, so that quald counts
    no crash against the job's candidate (docs/quald.md, "Quarantine"): by
    kill(), and by rt_sigqueueinfo() with si_pid forged to qual-run's own
    (SI_QUEUE's si_pid is the sender's to choose). Before, it died by
    SIGSEGV, a strike."""
    pidfile = os.path.join(root, "hang.pids")
    env = dict(os.environ, TMPDIR=root, QUAL_SHIM_PIDFILE=pidfile)
    hows = ["kill"] + (["sigqueue"] if os.uname().machine == "x86_64" else [])
    for who in hows:
        try:
            os.unlink(pidfile)
        except FileNotFoundError:
            pass
        p = subprocess.Popen([args.worker, args.nvrtc, args.shim_hang, "--case", FAST,
                              "--compile-only", "--no-cache", "--format", "json"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=env, text=True)
        wait_until(lambda: os.path.exists(pidfile) and os.path.getsize(pidfile) > 0, JOB_S,
                   "shim_hang's compile to start")
        if who == "sigqueue":
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)

            class SigInfo(ctypes.Structure):  # x86_64's siginfo_t, kill's fields
                _fields_ = [("signo", ctypes.c_int), ("errno", ctypes.c_int),
                            ("code", ctypes.c_int), ("pad", ctypes.c_int),
                            ("pid", ctypes.c_int), ("uid", ctypes.c_uint),
                            ("rest", ctypes.c_byte * 104)]
            si = SigInfo(signo=signal.SIGSEGV, code=-1, pid=p.pid, uid=0)
            rc = libc.syscall(129, p.pid, signal.SIGSEGV, ctypes.byref(si))  # rt_sigqueueinfo
            check(rc == 0, f"rt_sigqueueinfo: errno {ctypes.get_errno()}")
        else:
            os.kill(p.pid, signal.SIGSEGV)
        _, err = communicate(p, JOB_S, "qual-run")
        check(p.returncode == -signal.SIGKILL,
              f"qual-run sent SIGSEGV by {who}: ended {p.returncode}, expected "
              f"-{int(signal.SIGKILL)} (SIGKILL): {err}")
        check("fault signal sent by another process" in err,
              f"qual-run sent SIGSEGV by {who} did not say why it ends: {err}")


def scenario_refusals(args, root):
    """--compile-users refuses what gives no separation, naming it: a range
    that is not one, uid 0, more uids than slots can use, an account's uid,
    too few uids for the slots, and --compile-user with it."""
    nobody = pwd.getpwnam("nobody").pw_uid
    cases = [
        (["--compile-users", "61900"], "must be a range of uids FIRST-LAST"),
        (["--compile-users", "0-3"], "0 < FIRST <= LAST"),
        (["--compile-users", "61903-61900"], "0 < FIRST <= LAST"),
        (["--compile-users", "61000-61099"], "at most 65 uids"),
        (["--compile-users", f"{nobody - 1}-{nobody}"], f"uid {nobody} is user 'nobody's"),
        (["--slots", "2", "--compile-users", "61900-61901"],
         "--compile-users gives 2 uids, but 2 slots need 3"),
        (["--compile-user", "nobody", "--compile-users", "61900-61902"],
         "--compile-user and --compile-users cannot be combined"),
    ]
    for extra, want in cases:
        r = subprocess.run([args.quald, "--socket", os.path.join(root, "s"), "--state-dir",
                            os.path.join(root, "state"), "--worker", args.worker,
                            "--compile-helper", args.compile_helper, *extra],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=JOB_S)
        check(r.returncode == 4 and want in r.stderr,
              f"quald {' '.join(extra)}: exit {r.returncode}, expected 4 saying '{want}': "
              f"{r.stderr}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenario", choices=("hunter", "argv", "worker", "refusals"))
    for opt in ("--quald", "--qualctl", "--worker", "--compile-helper", "--nvrtc",
                "--shim-slow"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--shim-hunter")
    ap.add_argument("--shim-hang")
    ap.add_argument("--compile-user")
    ap.add_argument("--compile-users")
    args = ap.parse_args()
    if args.scenario == "hunter":
        if os.geteuid() != 0:
            print("skipped: the compile user setting needs root", file=sys.stderr)
            return 77
        check(args.shim_hunter, "hunter needs --shim-hunter")
        check(args.compile_user or args.compile_users,
              "hunter needs --compile-user or --compile-users")
        return run_scenario("hunter", scenario_hunter, args, prefix="qual-isolate-")
    if args.scenario == "refusals":
        if os.geteuid() != 0:
            print("skipped: --compile-users needs root", file=sys.stderr)
            return 77
        return run_scenario("refusals", scenario_refusals, args, prefix="qual-isolate-")
    if args.scenario == "worker":
        check(args.shim_hang, "worker needs --shim-hang")
        return run_scenario("worker", scenario_worker, args, prefix="qual-isolate-")
    return run_scenario("argv", scenario_argv, args, prefix="qual-isolate-")


if __name__ == "__main__":
    sys.exit(main())
