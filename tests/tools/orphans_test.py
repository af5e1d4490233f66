#!/usr/bin/python3
"""Every descendant of a job dies with it, and its scratch folder goes: the
real quald, qual-run and qual-compile (compile-only), with shim_orphan as the
candidate (tests/shims/shim_orphan.c: its compile hangs after leaving behind
a forked copy of itself in its process group and the leader of a session of
its own, and writes the three pids to $QUAL_SHIM_PIDFILE).

usage: orphans_test.py --quald Q --qualctl C --worker W --compile-helper H
                       --shim-orphan LIB --nvrtc LIB --nvrtc-alt LIB SCENARIO

Scenarios:
  cancel       qualctl cancel of the running job
  timeout      quald --job-timeout 3
  stop         SIGTERM to quald, which must exit 0
  worker_kill  SIGKILL to the worker (qual-run): quald adopts what it left
      each: within ORPHAN_S seconds none of the job's processes is left (the
      worker, the compile child, its copy, the session leader), not even as
      a zombie of quald's, and quald has no child left at all
  finished     the compile fails at once ($QUAL_SHIM_ORPHAN_END=fail) and the
               job ends by itself (fail, exit 2): the copy and the session
               leader do not outlive it
  run_exit     qual-run alone (no quald above it), the compile failing at
               once: once it has exited (2), nothing it started is left
  run_sigterm  qual-run alone, SIGTERM while the candidate's compile hangs:
               it ends by the signal (a stop blames no one) and nothing it
               started is left
  scratch      a stale worker folder of this state directory's ("a previous
               run", $TMPDIR/quald-<state>-JOB-XXXXXX) is removed when quald
               starts, one of another state directory's and a link under its
               name are not; the folder of a job whose quald was SIGKILLed
               goes when quald starts again; a finished job leaves none
Exits 0 when every check holds, 1 with the first failed check otherwise."""
import argparse
import hashlib
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import service_test as svc  # noqa: E402
from service_test import FAST, Failure, check, wait_until  # noqa: E402

# How long after the stop the job's processes may take to be gone: qual-run
# kills what is below it on its way out (1 s at most), quald what is left.
ORPHAN_S = 5.0
JOB_TIMEOUT_S = 3
SCENARIO_S = 60


def shim_pids(d):
    """shim_orphan's (compiling process, its copy, the session leader), once
    written whole."""
    try:
        with open(d.pidfile) as f:
            text = f.read()
    except OSError:
        return None
    if not text.endswith("\n"):
        return None
    return tuple(int(x) for x in text.split())


def left(pids, quald):
    """The (name, pid, state, ppid) of those of pids still there: running,
    or a zombie that quald (pid quald, while it runs) has not reaped. A
    zombie of someone else's is that one's to reap."""
    out = []
    for name, pid in pids.items():
        st = svc.proc_stat(pid, zombies=True)
        if st and (st[0] not in ("Z", "X") or st[1] == quald):
            out.append((name, pid) + st[:2])
    return out


def children_of(ppid):
    """Every process whose parent is ppid, zombies included."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = svc.proc_stat(int(name), zombies=True)
            if st and st[1] == ppid:
                out.append(int(name))
    return out


class Family:
    """The processes of one job, by name."""

    def __init__(self, pids):
        self.pids = pids

    def check_gone(self, what, quald):
        """Within ORPHAN_S none of them is left."""
        t0 = time.monotonic()
        try:
            wait_until(lambda: not left(self.pids, quald), ORPHAN_S, "")
        except Failure:
            raise Failure(f"after {what}, processes of the job are left after "
                          f"{ORPHAN_S:g} s (name, pid, state, ppid): "
                          f"{left(self.pids, quald)}")
        svc.log(f"{what}: every process of the job gone after "
                f"{time.monotonic() - t0:.2f} s")

    def tidy(self):
        """Whatever happened, nothing of the job outlives the test."""
        for pid in self.pids.values():
            if svc.alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


def shim_family(d, extra=None):
    """The Family of the shim's pids (and extra), once written."""
    got = shim_pids(d)
    check(got and len(got) == 3 and all(p > 0 for p in got),
          f"the shim wrote {got}, expected three pids")
    return Family({**(extra or {}), "compile child": got[0], "its copy": got[1],
                   "the session leader": got[2]})


class Job(Family):
    """A job of shim_orphan hanging in its compile, and its processes."""

    def __init__(self, d, args):
        r = d.ctl("submit", args.nvrtc, args.shim_orphan, "--case", FAST,
                  "--compile-only", "--no-follow")
        check(r.returncode == 0, f"submit: exit {r.returncode}: {r.stderr}")
        self.id = r.stdout.strip()
        wait_until(lambda: shim_pids(d), 20, "the hanging compile to start")
        workers = svc.children(d.pid(), "qual-run")
        check(len(workers) == 1, f"expected one worker, found {workers}")
        super().__init__(shim_family(d, {"worker": workers[0]}).pids)
        for name, pid in self.pids.items():
            check(svc.alive(pid), f"{name} ({pid}) is not running before the stop")


def check_no_children(d):
    """quald, idle, has no child left: none unreaped, none adopted."""
    try:
        wait_until(lambda: not children_of(d.pid()), ORPHAN_S, "")
    except Failure:
        raise Failure(f"quald still has children: {children_of(d.pid())}")


def prefix(state):
    """The names of the workers' folders of the quald on state begin so
    (daemon/worker.c, "Scratch")."""
    real = os.path.realpath(state).encode()
    return f"quald-{hashlib.sha256(real).hexdigest()[:16]}-"


def check_no_scratch(d, what, keep=()):
    """Nothing in $TMPDIR but keep (a worker's folder goes once its handles
    are closed, just after its job's state is written)."""
    try:
        wait_until(lambda: set(os.listdir(d.tmp)) <= set(keep), ORPHAN_S, "")
    except Failure:
        raise Failure(f"{what}: left in $TMPDIR: {sorted(os.listdir(d.tmp))}")


def stop_then_check(args, root, options, stop, what, state):
    """Starts a hanging job, stops it with stop(d, job), and checks that
    everything of it is gone and the job ends in state."""
    d = svc.Quald(args, root, extra=options)
    job = None
    try:
        with svc.serving(d):
            job = Job(d, args)
            stop(d, job)
            job.check_gone(what, d.pid())
            d.wait_job_state(job.id, (state,), 20)
            check_no_children(d)
            check_no_scratch(d, what)
    finally:
        if job:
            job.tidy()


def scenario_cancel(args, root):
    def cancel(d, job):
        r = d.ctl("cancel", job.id)
        check(r.returncode == 0, f"cancel: exit {r.returncode}: {r.stderr}")
    stop_then_check(args, root, (), cancel, "a cancel", "cancelled")


def scenario_timeout(args, root):
    def time_limit(d, job):
        # The limit counts from the worker's start, before the compile.
        time.sleep(JOB_TIMEOUT_S)
        wait_until(lambda: not svc.alive(job.pids["worker"]), ORPHAN_S,
                   "the worker to be stopped at its time limit")
    stop_then_check(args, root, ("--job-timeout", str(JOB_TIMEOUT_S)), time_limit,
                    "the job time limit", "done")


def scenario_worker_kill(args, root):
    def kill(d, job):
        os.kill(job.pids["worker"], signal.SIGKILL)
    stop_then_check(args, root, (), kill, "SIGKILL of the worker", "done")


def scenario_finished(args, root):
    os.environ["QUAL_SHIM_ORPHAN_END"] = "fail"
    d = svc.Quald(args, root)
    family = None
    try:
        with svc.serving(d):
            r = d.ctl("submit", args.nvrtc, args.shim_orphan, "--case", FAST,
                      "--compile-only")
            check(r.returncode == 2, f"a candidate that does not compile: exit "
                  f"{r.returncode}, expected 2: {r.stdout[-2000:]}{r.stderr}")
            family = shim_family(d)
            family.check_gone("the end of the job", d.pid())
            check_no_children(d)
            check_no_scratch(d, "the end of the job")
    finally:
        if family:
            family.tidy()


def run_alone(args, root, end):
    """qual-run on the shim, started here (no subreaper above it); end(p)
    ends it and checks how. Then nothing it started may be left."""
    d = svc.Quald(args, root)  # its folders and pidfile only; never started
    env = dict(os.environ, TMPDIR=d.tmp, QUAL_SHIM_PIDFILE=d.pidfile,
               QUAL_COMPILE=args.compile_helper)
    for k in ("QUAL_DIE_WITH_PARENT", "QUAL_CONFINE"):
        env.pop(k, None)
    p = subprocess.Popen([args.worker, "--compile-only", "--case", FAST, "--",
                          args.nvrtc, args.shim_orphan], env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    family = None
    try:
        wait_until(lambda: shim_pids(d) or p.poll() is not None, 20,
                   "the compile to start")
        family = shim_family(d)
        end(p)
        family.check_gone("the end of qual-run", None)
    finally:
        svc.end(p)
        if family:
            family.tidy()


def scenario_run_exit(args, root):
    os.environ["QUAL_SHIM_ORPHAN_END"] = "fail"

    def exits(p):
        check(p.wait(20) == 2, f"qual-run exited with {p.returncode}, expected 2")
    run_alone(args, root, exits)


def scenario_run_sigterm(args, root):
    def term(p):
        # Stopped in the candidate's compile by SIGTERM (a cancel, a stop):
        # it blames no one and ends by the signal (the job time limit's
        # signal is gate_hang_job_limit's).
        p.send_signal(signal.SIGTERM)
        check(p.wait(20) == -signal.SIGTERM,
              f"qual-run ended with {p.returncode} after SIGTERM in the candidate's "
              f"compile, expected {-signal.SIGTERM}")
    run_alone(args, root, term)


def scenario_stop(args, root):
    d = svc.Quald(args, root)
    job = None
    try:
        d.start()
        job = Job(d, args)
        pid = d.pid()
        d.stop()  # SIGTERM; exit 0, the socket removed
        job.check_gone("SIGTERM to quald", pid)
        check(not children_of(pid), f"quald's children outlived it: {children_of(pid)}")
    finally:
        if d.proc:
            d.stop_quietly()
        if job:
            job.tidy()


def scenario_scratch(args, root):
    d = svc.Quald(args, root)
    os.makedirs(d.state, mode=0o700)
    ours = prefix(d.state)
    # What a worker of a daemon that died on this state directory left; a
    # folder of another state directory's daemon; a link under our name to
    # a folder that is not ours to empty.
    stale = os.path.join(d.tmp, ours + "j000099-AbCdEf")
    os.makedirs(os.path.join(stale, "qual-rtc-x"))
    with open(os.path.join(stale, "qual-rtc-x", "out.cubin"), "w") as f:
        f.write("left by a worker of a daemon that died\n")
    other = prefix(os.path.join(root, "other")) + "j000001-GhIjKl"
    os.makedirs(os.path.join(d.tmp, other))
    victim = os.path.join(root, "victim")
    os.makedirs(victim)
    with open(os.path.join(victim, "keep"), "w") as f:
        f.write("not quald's\n")
    link = ours + "j000098-MnOpQr"
    os.symlink(victim, os.path.join(d.tmp, link))
    planted = (other, link)
    job = None
    try:
        with svc.serving(d):
            check(not os.path.exists(stale), f"the stale folder '{stale}' is still "
                  "there after quald started")
            check(sorted(os.listdir(d.tmp)) == sorted(planted) and
                  os.path.exists(os.path.join(victim, "keep")),
                  f"quald removed what was not its own: $TMPDIR holds "
                  f"{sorted(os.listdir(d.tmp))}, the victim {os.listdir(victim)}")
            r = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--case", FAST,
                      "--compile-only")
            check(r.returncode == 0, f"a passing job: exit {r.returncode}: {r.stderr}")
            check_no_scratch(d, "a finished job", planted)

            # A job whose daemon dies under it leaves its folder; the next
            # start removes it.
            job = Job(d, args)
            with open(f"/proc/{job.pids['worker']}/environ", "rb") as f:
                env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
            tmpdir = env.get(b"TMPDIR", b"").decode()
            check(os.path.dirname(tmpdir) == d.tmp and
                  os.path.basename(tmpdir).startswith(f"{ours}{job.id}-") and
                  os.path.isdir(tmpdir),
                  f"the worker's TMPDIR is '{tmpdir}', expected a folder "
                  f"'{d.tmp}/{ours}{job.id}-XXXXXX'")
            d.kill()
            job.tidy()
            check(os.path.isdir(tmpdir), "the killed job's folder went with quald")
            d.start()
            check(not os.path.exists(tmpdir), f"'{tmpdir}' of the job whose quald was "
                  "killed is still there after quald started again")
            d.wait_job_state(job.id, ("interrupted",), 10)
            check_no_scratch(d, "the restart", planted)
    finally:
        if job:
            job.tidy()


SCENARIOS = {
    "cancel": scenario_cancel,
    "timeout": scenario_timeout,
    "stop": scenario_stop,
    "worker_kill": scenario_worker_kill,
    "finished": scenario_finished,
    "run_exit": scenario_run_exit,
    "run_sigterm": scenario_run_sigterm,
    "scratch": scenario_scratch,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for o in ("--quald", "--qualctl", "--worker", "--compile-helper", "--shim-orphan",
              "--nvrtc", "--nvrtc-alt"):
        ap.add_argument(o, required=True)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    return svc.run_scenario(args.scenario, SCENARIOS[args.scenario], args,
                            prefix="qual-orphans-", limit=SCENARIO_S)


if __name__ == "__main__":
    sys.exit(main())
