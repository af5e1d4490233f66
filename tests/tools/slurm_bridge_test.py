#!/usr/bin/env python3
"""qual-slurm, quald's bridge to Slurm, against a real one-node Slurm cluster
(scripts/slurm-cluster.sh) with a trivial worker (a shell script printing
JSON lines): see tests/slurm.cmake for what each scenario asserts.

  slurm_bridge_test.py --bridge PATH --cluster DIR --work DIR
                       [--qual-run PATH --nvrtc LIB --nvrtc-alt LIB] SCENARIO
  SCENARIO: cluster-start, cluster-stop, relay, signal_exit, attach_skip,
            pending, pin_refused, stage_refused, sbatch_refused, sigterm, time_limit, lost,
            stopped, ctld_restart, qual_run

Exits 77 (skipped) when the cluster could not be started for want of Slurm
or root (the cluster script's own 77)."""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import hashlib

PREFIX = "qual-remote: "
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "scripts", "slurm-cluster.sh")
SKIP = 77

WORKER = r"""#!/bin/sh
# N lines, D seconds apart, then a cut-off line (no newline) unless CUT=0,
# then exit CODE ("kill" ends it by SIGKILL; "hang" waits for a signal,
# which ends it: qual-run's own way). SPLIT=1: the second line is
# written in two halves, 1.5 s apart.
n=$1 d=$2 code=$3 cut=${4:-1} split=${5:-0}
i=1
while [ $i -le $n ]; do
  if [ "$split" = 1 ] && [ $i = 2 ]; then
    printf '{"type":"case",'; sleep 1.5; printf '"i":2}\n'; i=3; continue
  fi
  printf '{"type":"case","i":%d,"cuda":"%s","tmp":"%s","parent":"%s","pid":%d}\n' \
    $i "$CUDA_VISIBLE_DEVICES" "$TMPDIR" "$QUAL_DIE_WITH_PARENT" $$
  [ -n "$TMPDIR" ] && touch "$TMPDIR/mark"
  sleep $d
  i=$((i+1))
done
[ "$code" = hang ] && exec sleep 600
[ "$cut" = 1 ] && printf '{"type":"cut'
[ "$code" = kill ] && kill -9 $$
exit $code
"""


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


class Ctx:
    def __init__(self, args):
        self.bridge = args.bridge
        self.cluster = args.cluster
        self.work = args.work
        self.spool = os.path.join(args.work, "spool")
        os.makedirs(self.spool, exist_ok=True)
        self.worker = os.path.join(args.work, "worker.sh")
        with open(self.worker, "w") as f:
            f.write(WORKER)
        os.chmod(self.worker, 0o755)
        self.env = dict(os.environ)
        self.env["SLURM_CONF"] = os.path.join(args.cluster, "etc", "slurm.conf")
        self.env["QUAL_SLURM_POLL_MS"] = "200"
        self.env.pop("QUAL_DIE_WITH_PARENT", None)
        self.jobs = 0
        self.extra = {"qual_run": args.qual_run, "nvrtc": args.nvrtc,
                      "nvrtc_alt": args.nvrtc_alt}

    def job_id(self):
        """A job id of its own for each run (ids are per state folder)."""
        self.jobs += 1
        return "j%06d" % (os.getpid() % 100000 * 10 + self.jobs)

    def job_dir(self, job):
        return os.path.join(self.spool, "jobs", job)

    def slurm(self, *cmd):
        return subprocess.run(list(cmd), env=self.env, capture_output=True, text=True,
                              timeout=60)


class Bridge:
    """A running qual-slurm: stdout collected, stderr lines collected and
    status lines parsed as they come."""

    def __init__(self, ctx, args, stdin_data=None):
        self.p = subprocess.Popen([ctx.bridge] + args, env=ctx.env,
                                  stdin=subprocess.PIPE if stdin_data is not None
                                  else subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if stdin_data is not None:
            self.p.stdin.write(stdin_data)
            self.p.stdin.close()
        self.out = b""
        self.err_lines = []
        self.status = []
        self.lock = threading.Lock()
        self.t_out = threading.Thread(target=self._read_out, daemon=True)
        self.t_err = threading.Thread(target=self._read_err, daemon=True)
        self.t_out.start()
        self.t_err.start()

    def _read_out(self):
        while True:
            b = self.p.stdout.read1(65536)
            if not b:
                return
            with self.lock:
                self.out += b

    def _read_err(self):
        for raw in self.p.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            with self.lock:
                self.err_lines.append(line)
                if line.startswith(PREFIX):
                    self.status.append(json.loads(line[len(PREFIX):]))

    def wait_for(self, what, pred, limit=30):
        end = time.time() + limit
        while time.time() < end:
            with self.lock:
                if pred(self):
                    return
            if self.p.poll() is not None:
                time.sleep(0.3)
                with self.lock:
                    if pred(self):
                        return
                fail("bridge exited (%s) before %s; stderr:\n%s" %
                     (self.p.returncode, what, "\n".join(self.err_lines)))
            time.sleep(0.05)
        fail("no %s within %d s; stderr:\n%s" % (what, limit, "\n".join(self.err_lines)))

    def finish(self, limit=60):
        try:
            rc = self.p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            self.p.kill()
            fail("bridge still running after %d s; stderr:\n%s" %
                 (limit, "\n".join(self.err_lines)))
        self.t_out.join(5)
        self.t_err.join(5)
        return rc

    def states(self):
        return [s["state"] for s in self.status]


def submit_args(ctx, job, worker_args, extra=(), gpu=("--gpu-type", "fake")):
    return (["--spool", ctx.spool, "--job", job] + list(gpu) + list(extra) +
            ["--", ctx.worker] + [str(a) for a in worker_args])


def slurm_id_of(ctx, job):
    with open(os.path.join(ctx.job_dir(job), "slurm_id")) as f:
        return f.read().strip()


def squeue_state(ctx, sid):
    r = ctx.slurm("squeue", "-h", "-j", sid, "-o", "%T")
    return r.stdout.strip()


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def sha256(path):
    return hashlib.sha256(read(path, "rb")).hexdigest()


# --- scenarios --------------------------------------------------------------

def relay(ctx):
    job = ctx.job_id()
    lib = os.path.join(ctx.work, "lib.so")
    with open(lib, "wb") as f:
        f.write(os.urandom(100000))
    fix = os.path.join(ctx.work, "fixture")
    os.makedirs(os.path.join(fix, "sub"), exist_ok=True)
    with open(os.path.join(fix, "a.json"), "w") as f:
        f.write("{}\n")
    with open(os.path.join(fix, "sub", "b.cu"), "w") as f:
        f.write("// b\n")
    args = submit_args(ctx, job, [3, 0.5, 2, 1, 1], ["--stage", "%s=%s" % (lib, sha256(lib)),
                                               "--stage-dir", "%s=0" % fix,
                                               "--time-limit", "300"])
    # As quald runs it: the arguments on a descriptor, out of sight.
    b = Bridge(ctx, ["--args-fd", "0"], stdin_data=b"".join(a.encode() + b"\0" for a in args))
    jd = ctx.job_dir(job)
    out_path = os.path.join(jd, "out.jsonl")
    # While the second line is half written: only the first goes out.
    b.wait_for("the half line in out.jsonl", lambda b: os.path.exists(out_path) and
               read(out_path, "rb").endswith(b'{"type":"case",'))
    time.sleep(0.6)
    with b.lock:
        check(b.out.count(b"\n") == 1 and b.out.endswith(b"\n"),
              "a line went out before its newline: %r" % b.out)
    rc = b.finish()
    out_file = read(os.path.join(jd, "out.jsonl"), "rb")
    check(rc == 2, "exit status %s, not the worker's 2; stderr:\n%s" % (rc, "\n".join(b.err_lines)))
    check(b.out == out_file, "stdout is not out.jsonl byte for byte:\n%r\n%r" % (b.out, out_file))
    lines = b.out.split(b"\n")
    check(len(lines) == 4 and lines[3] == b'{"type":"cut', "not 3 lines and the cut: %r" % b.out)
    recs = [json.loads(x) for x in lines[:3]]
    check([r["i"] for r in recs] == [1, 2, 3], "lines out of order: %r" % recs)
    check(all(r["cuda"] in ("0", "1") for r in (recs[0], recs[2])),
          "no CUDA_VISIBLE_DEVICES: %r" % recs)
    tmp = recs[0]["tmp"]
    check(tmp.startswith("/") and "qual-node-" in tmp, "TMPDIR not the node's own: %r" % tmp)
    check(not os.path.exists(tmp), "the node's TMPDIR '%s' was left behind" % tmp)
    check(recs[0]["parent"] and int(recs[0]["parent"]) > 1, "QUAL_DIE_WITH_PARENT unset")
    # The status lines: right after sbatch, then RUNNING on our node.
    check(b.status, "no status line")
    sid = slurm_id_of(ctx, job)
    check(all(s["backend"] == "slurm" and s["id"] == sid for s in b.status),
          "status lines name another job: %r" % b.status)
    check(b.status[0]["state"] in ("PENDING", "RUNNING"), "first status %r" % b.status[0])
    running = [s for s in b.status if s["state"] == "RUNNING"]
    check(running and running[0]["node"] == socket.gethostname().split(".")[0],
          "no RUNNING status with the node: %r" % b.status)
    check(read(os.path.join(jd, "exit")) == "2\n", "exit file %r" % read(os.path.join(jd, "exit")))
    # Staged by content: the blob, the fixture copy, a pin for each.
    blob = os.path.join(ctx.spool, "blobs", sha256(lib))
    check(read(blob, "rb") == read(lib, "rb"), "blob differs from the library")
    pins = read(os.path.join(jd, "pins")).splitlines()
    copy_b = os.path.join(jd, "fixtures", "0", "sub", "b.cu")
    check(read(copy_b) == "// b\n", "fixture not copied")
    want = {"%s %s" % (sha256(blob), blob), "%s %s" % (sha256(copy_b), copy_b)}
    check(want <= set(pins), "pins %r lack %r" % (pins, want))
    argv = read(os.path.join(jd, "argv"), "rb").split(b"\0")
    check(argv[0] == ctx.worker.encode(), "argv file %r" % argv)
    # The job is named after the qual job.
    r = ctx.slurm("scontrol", "show", "job", "-o", sid)
    check("JobName=qual-%s " % job in r.stdout, "job name: %s" % r.stdout[:300])
    # --time-limit 300: Slurm's limit a minute over, in minutes; one GPU of
    # the type; never requeued.
    for want in ("TimeLimit=00:06:00 ", "TresPerNode=gres:gpu:fake:1", "Requeue=0 "):
        check(want in r.stdout, "no %r in: %s" % (want, r.stdout))
    print("relay: exit 2, %d bytes as in out.jsonl, statuses %s" % (len(b.out), b.states()))


def signal_exit(ctx):
    job = ctx.job_id()
    b = Bridge(ctx, submit_args(ctx, job, [1, 0, "kill", 0], gpu=["--no-gpu"]))
    rc = b.finish()
    check(rc == 128 + 9, "exit %s, not 137 for a worker killed by SIGKILL; stderr:\n%s" %
          (rc, "\n".join(b.err_lines)))
    check(read(os.path.join(ctx.job_dir(job), "exit")) == "signal 9\n", "exit file")
    check(b.out.count(b"\n") == 1, "stdout %r" % b.out)
    print("signal_exit: 137")


def attach_skip(ctx):
    job = ctx.job_id()
    b = Bridge(ctx, submit_args(ctx, job, [4, 1.0, 1, 0]))
    b.wait_for("the first line", lambda b: b.out.count(b"\n") >= 1)
    # quald's shutdown: SIGKILL, and the Slurm job goes on.
    b.p.kill()
    b.finish()
    sid = slurm_id_of(ctx, job)
    check(squeue_state(ctx, sid) == "RUNNING", "the job did not go on after the bridge died")
    a = Bridge(ctx, ["--spool", ctx.spool, "--job", job, "--attach", sid, "--skip", "1"])
    rc = a.finish()
    full = read(os.path.join(ctx.job_dir(job), "out.jsonl"), "rb")
    want = b"".join(x + b"\n" for x in full.split(b"\n")[1:4])
    check(rc == 1, "attached exit %s, not 1; stderr:\n%s" % (rc, "\n".join(a.err_lines)))
    check(a.out == want, "attach --skip 1 wrote %r, not %r" % (a.out, want))
    check(a.status and a.status[0]["state"] == "RUNNING", "attach status %r" % a.status)
    # Once the job has ended (its exit file there): the rest, the status.
    a2 = Bridge(ctx, ["--spool", ctx.spool, "--job", job, "--attach", sid, "--skip", "3"])
    rc = a2.finish()
    check(rc == 1 and a2.out == full.split(b"\n")[3] + b"\n",
          "attach after the end: %s %r" % (rc, a2.out))
    # A Slurm id that is not this job's is refused.
    a3 = Bridge(ctx, ["--spool", ctx.spool, "--job", job, "--attach", str(int(sid) + 1000)])
    rc = a3.finish()
    check(rc == 4 and "was submitted as slurm job" in a3.err_lines[-1], "wrong id: %s" % rc)
    # A job with no folder in the spool is refused, not followed blindly.
    a4 = Bridge(ctx, ["--spool", ctx.spool, "--job", "j9999999", "--attach", sid])
    rc = a4.finish()
    check(rc == 4 and "has no spool folder" in a4.err_lines[-1], "no folder: %s" % rc)
    print("attach_skip: running and ended, skip honoured")


def occupy(ctx, n, seconds):
    ids = []
    for _ in range(n):
        r = ctx.slurm("sbatch", "--parsable", "--gres=gpu:fake:1", "-o", "/dev/null",
                      "--wrap", "sleep %d" % seconds)
        check(r.returncode == 0, "sbatch: %s" % r.stderr)
        ids.append(r.stdout.strip().split(";")[0])
    end = time.time() + 20
    while time.time() < end:
        if all(squeue_state(ctx, i) == "RUNNING" for i in ids):
            return ids
        time.sleep(0.2)
    fail("the occupying jobs did not start")


def pending(ctx):
    hogs = occupy(ctx, 2, 6)
    job = ctx.job_id()
    b = Bridge(ctx, submit_args(ctx, job, [2, 1, 0, 0]))
    b.wait_for("PENDING with reason Resources",
               lambda b: any(s["state"] == "PENDING" and s["reason"] == "Resources" and
                             s["node"] is None for s in b.status), 20)
    # quald restarted while the job waits: attach to a pending job.
    b.p.kill()
    b.finish()
    sid = slurm_id_of(ctx, job)
    check(squeue_state(ctx, sid) == "PENDING", "not pending after the bridge died")
    a = Bridge(ctx, ["--spool", ctx.spool, "--job", job, "--attach", sid])
    rc = a.finish()
    check(rc == 0, "attached to a pending job: exit %s; stderr:\n%s" % (rc, "\n".join(a.err_lines)))
    check(a.status[0]["state"] == "PENDING" and "RUNNING" in a.states(),
          "statuses %s" % a.states())
    check(a.out.count(b"\n") == 2, "lines %r" % a.out)
    for h in hogs:
        ctx.slurm("scancel", h)
    print("pending: %s" % a.states())


def pin_refused(ctx):
    job = ctx.job_id()
    lib = os.path.join(ctx.work, "pinned.so")
    with open(lib, "wb") as f:
        f.write(b"the pinned bytes\n")
    sha = sha256(lib)
    blobs = os.path.join(ctx.spool, "blobs")
    os.makedirs(blobs, exist_ok=True)
    # The blob on shared storage no longer holds what was pinned.
    with open(os.path.join(blobs, sha), "wb") as f:
        f.write(b"other bytes\n")
    b = Bridge(ctx, submit_args(ctx, job, [1, 0, 0], ["--stage", "%s=%s" % (lib, sha)]))
    rc = b.finish()
    jd = ctx.job_dir(job)
    last = b.err_lines[-1] if b.err_lines else ""
    check(rc == 4, "exit %s, not 4; stderr:\n%s" % (rc, "\n".join(b.err_lines)))
    check("pin check failed" in last and sha in last and "blobs/" + sha in last,
          "last stderr line does not name the pin: %r" % last)
    check(read(os.path.join(jd, "exit")).startswith("refused pin check failed"), "exit file")
    check(not os.path.exists(os.path.join(jd, "out.jsonl")), "qual-run started all the same")
    os.unlink(os.path.join(blobs, sha))
    print("pin_refused: %s" % last)


def stage_refused(ctx):
    job = ctx.job_id()
    lib = os.path.join(ctx.work, "lib2.so")
    with open(lib, "wb") as f:
        f.write(b"bytes\n")
    wrong = "0" * 64
    b = Bridge(ctx, submit_args(ctx, job, [1, 0, 0], ["--stage", "%s=%s" % (lib, wrong)]))
    rc = b.finish()
    last = b.err_lines[-1] if b.err_lines else ""
    check(rc == 4 and "not the pinned " + wrong in last and sha256(lib) in last,
          "staging a wrong hash: %s %r" % (rc, last))
    check(not os.path.exists(os.path.join(ctx.spool, "blobs", wrong)), "a wrong blob was kept")
    check(not os.path.exists(os.path.join(ctx.job_dir(job), "slurm_id")), "submitted anyway")
    # A link in a fixture folder is refused.
    fix = os.path.join(ctx.work, "fixture_link")
    os.makedirs(fix, exist_ok=True)
    if not os.path.lexists(os.path.join(fix, "l")):
        os.symlink("/etc/passwd", os.path.join(fix, "l"))
    b = Bridge(ctx, submit_args(ctx, ctx.job_id(), [1, 0, 0], ["--stage-dir", fix + "=0"]))
    rc = b.finish()
    last = b.err_lines[-1] if b.err_lines else ""
    check(rc == 4 and "links are refused" in last, "a link staged: %s %r" % (rc, last))
    # A worker of a quald that is gone (QUAL_DIE_WITH_PARENT not our parent)
    # submits nothing.
    ctx.env["QUAL_DIE_WITH_PARENT"] = "1"
    job = ctx.job_id()
    b = Bridge(ctx, submit_args(ctx, job, [1, 0, 0]))
    rc = b.finish()
    del ctx.env["QUAL_DIE_WITH_PARENT"]
    check(rc == 4 and "parent that started us is gone" in b.err_lines[-1] and
          not os.path.exists(ctx.job_dir(job)), "an orphan submitted: %s %r" % (rc, b.err_lines))
    print("stage_refused: %s" % last)


def sbatch_refused(ctx):
    job = ctx.job_id()
    b = Bridge(ctx, submit_args(ctx, job, [1, 0, 0], gpu=["--gpu-type", "nosuchtype"]))
    rc = b.finish()
    last = b.err_lines[-1] if b.err_lines else ""
    check(rc == 4, "exit %s, not 4" % rc)
    check("sbatch refused the job: sbatch: error:" in last, "last stderr line %r" % last)
    check(not b.status, "a status line for a job never submitted: %r" % b.status)
    print("sbatch_refused: %s" % last)


def wait_ended(ctx, sid, limit=15):
    end = time.time() + limit
    while time.time() < end:
        if squeue_state(ctx, sid) in ("", "CANCELLED", "COMPLETED", "FAILED"):
            return
        time.sleep(0.2)
    fail("slurm job %s still %s" % (sid, squeue_state(ctx, sid)))


def sigterm(ctx):
    job = ctx.job_id()
    b = Bridge(ctx, submit_args(ctx, job, [1, 0, "hang"]))
    b.wait_for("the first line", lambda b: b.out.count(b"\n") >= 1)
    pid = json.loads(b.out.split(b"\n")[0])["pid"]
    b.p.send_signal(signal.SIGTERM)
    rc = b.finish(20)
    sid = slurm_id_of(ctx, job)
    check(rc == -signal.SIGTERM, "bridge ended %s, not by SIGTERM" % rc)
    wait_ended(ctx, sid)
    r = ctx.slurm("scontrol", "show", "job", "-o", sid)
    check("JobState=CANCELLED" in r.stdout, "not cancelled: %s" % r.stdout[:200])
    end = time.time() + 10
    while os.path.exists("/proc/%d" % pid) and time.time() < end:
        time.sleep(0.1)
    check(not os.path.exists("/proc/%d" % pid), "the worker outlived the cancel")
    # While it waits in Slurm's queue: cancelled as well.
    hogs = occupy(ctx, 2, 30)
    job = ctx.job_id()
    b = Bridge(ctx, submit_args(ctx, job, [1, 0, 0]))
    b.wait_for("PENDING", lambda b: "PENDING" in b.states(), 20)
    b.p.send_signal(signal.SIGINT)
    rc = b.finish(20)
    check(rc == -signal.SIGINT, "pending bridge ended %s, not by SIGINT" % rc)
    wait_ended(ctx, slurm_id_of(ctx, job))
    for h in hogs:
        ctx.slurm("scancel", h)
    print("sigterm: cancelled running and pending")


def time_limit(ctx):
    job = ctx.job_id()
    b = Bridge(ctx, submit_args(ctx, job, [1, 0, "hang"]))
    b.wait_for("the first line and RUNNING", lambda b: b.out.count(b"\n") >= 1 and
               "RUNNING" in b.states())
    # quald's job time limit: SIGUSR1 goes on to qual-run (here a shell,
    # which it ends); the bridge relays to the end and exits with its status.
    b.p.send_signal(signal.SIGUSR1)
    rc = b.finish(20)
    check(rc == 128 + signal.SIGUSR1, "exit %s, not %d; stderr:\n%s" %
          (rc, 128 + signal.SIGUSR1, "\n".join(b.err_lines)))
    check(read(os.path.join(ctx.job_dir(job), "exit")) == "signal %d\n" % signal.SIGUSR1,
          "exit file")
    print("time_limit: SIGUSR1 reached the worker")


def lost(ctx):
    job = ctx.job_id()
    b = Bridge(ctx, submit_args(ctx, job, [1, 0, "hang"]))
    b.wait_for("the first line", lambda b: b.out.count(b"\n") >= 1)
    sid = slurm_id_of(ctx, job)
    # The node's side of the job SIGKILLed (qual-run dies with it): no
    # exit file can be written.
    r = ctx.slurm("scancel", "--batch", "--signal=KILL", sid)
    check(r.returncode == 0, "scancel: %s" % r.stderr)
    rc = b.finish(30)
    last = b.err_lines[-1] if b.err_lines else ""
    check(rc == 70, "exit %s, not 70; stderr:\n%s" % (rc, "\n".join(b.err_lines)))
    check(("slurm job %s ended " % sid) in last and "before qual-run finished" in last,
          "last stderr line %r" % last)
    check(b.status[-1]["state"] not in ("PENDING", "RUNNING"), "last status %r" % b.status[-1])
    check(not os.path.exists(os.path.join(ctx.job_dir(job), "exit")), "an exit file")
    print("lost: %s" % last)


def stopped(ctx):
    """qual-run stopped by Slurm (it ends by SIGTERM, its exit file says
    so): an admin's scancel, then the node set down."""
    for how, state in (("scancel", "CANCELLED"), ("down", "NODE_FAIL")):
        job = ctx.job_id()
        b = Bridge(ctx, submit_args(ctx, job, [1, 0, "hang"]))
        b.wait_for("the first line", lambda b: b.out.count(b"\n") >= 1)
        sid = slurm_id_of(ctx, job)
        if how == "scancel":
            r = ctx.slurm("scancel", sid)
        else:
            r = ctx.slurm("bash", CLUSTER, "down", ctx.cluster, "qual test")
        check(r.returncode == 0, "%s: %s" % (how, r.stderr))
        rc = b.finish(30)
        if how == "down":
            r = ctx.slurm("bash", CLUSTER, "resume", ctx.cluster)
            check(r.returncode == 0, "resume: %s" % r.stderr)
        last = b.err_lines[-1] if b.err_lines else ""
        check(rc == 70, "%s: exit %s, not 70; stderr:\n%s" % (how, rc, "\n".join(b.err_lines)))
        check(read(os.path.join(ctx.job_dir(job), "exit")) == "signal 15\n", "exit file")
        check(("slurm job %s ended %s (reason: " % (sid, state)) in last and
              "before qual-run finished" in last, "%s: last stderr line %r" % (how, last))
        check(b.status[-1]["state"] == state, "%s: last status %r" % (how, b.status[-1]))
        print("stopped: %s" % last)
    end = time.time() + 30
    while time.time() < end:
        r = ctx.slurm("sinfo", "-h", "-o", "%t")
        if r.stdout.strip() == "idle":
            return
        time.sleep(0.5)
    fail("the node is not idle again: %s" % r.stdout)


def slurmctld_pid(ctx):
    """The cluster's slurmctld: its pid file, or, where the file is not
    there (seen in CI with the daemon running), the slurmctld process whose
    command line names the cluster's folder, as scripts/slurm-cluster.sh's
    pid_of tells its own from another cluster's."""
    path = os.path.join(ctx.cluster, "run", "slurmctld.pid")
    if os.path.exists(path):
        return int(read(path).strip())
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % p) as f:
                comm = f.read().strip()
            with open("/proc/%s/cmdline" % p, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if comm == "slurmctld" and (ctx.cluster.rstrip("/") + "/") in cmd:
            return int(p)
    fail("no slurmctld of %s: no %s and no such process" % (ctx.cluster, path))


def stop_slurmctld(ctx):
    """A restart's stop (SIGTERM: it saves its state; a SIGKILL right after
    a launch can make Slurm forget it and launch the job again)."""
    pid = slurmctld_pid(ctx)
    os.kill(pid, signal.SIGTERM)
    end = time.time() + 20
    while os.path.exists("/proc/%d" % pid) and time.time() < end:
        time.sleep(0.1)
    check(not os.path.exists("/proc/%d" % pid), "slurmctld did not stop")


def ctld_restart(ctx):
    """slurmctld stopped mid-job (restarting): the node goes on, and so does
    the bridge, asking again. One job: slurmctld stopped and started again
    after its first line, then stopped for good after its third, so that
    the job ends while it is gone (the exit file says how)."""
    job = ctx.job_id()
    b = Bridge(ctx, submit_args(ctx, job, [6, 1, 1]))
    b.wait_for("the first line and RUNNING", lambda b: b.out.count(b"\n") >= 1 and
               "RUNNING" in b.states())
    stop_slurmctld(ctx)
    try:
        time.sleep(1)
        r = ctx.slurm("bash", CLUSTER, "start-slurmctld", ctx.cluster)
        check(r.returncode == 0, "start-slurmctld: %s" % r.stderr)
        b.wait_for("the third line", lambda b: b.out.count(b"\n") >= 3)
        stop_slurmctld(ctx)
        rc = b.finish(40)
        took = time.time() - os.stat(os.path.join(ctx.job_dir(job), "exit")).st_mtime
    finally:
        ctx.slurm("bash", CLUSTER, "start-slurmctld", ctx.cluster)
    out = read(os.path.join(ctx.job_dir(job), "out.jsonl"), "rb")
    check(rc == 1, "exit %s, not 1; stderr:\n%s" % (rc, "\n".join(b.err_lines)))
    check(b.out == out and out.count(b"\n") == 6, "lines lost: %r" % b.out)
    # The exit file ends the wait for a slurmctld that does not answer.
    check(took < 1.5, "the bridge took %.1f s to end after the exit file" % took)
    print("ctld_restart: relayed through a slurmctld restart; ended %.1f s after "
          "the exit file" % took)


def qual_run(ctx):
    """The real qual-run on the node, compile-only, on the real nvrtc pair
    staged by content."""
    if not all(ctx.extra.get(k) and os.path.exists(ctx.extra[k])
               for k in ("qual_run", "nvrtc", "nvrtc_alt")):
        print("skipped: no qual-run or no nvrtc pair")
        sys.exit(SKIP)
    job = ctx.job_id()
    libs = [ctx.extra["nvrtc"], ctx.extra["nvrtc_alt"]]
    shas = [sha256(x) for x in libs]
    blobs = [os.path.join(ctx.spool, "blobs", h) for h in shas]
    args = (["--spool", ctx.spool, "--job", job, "--no-gpu"] +
            sum((["--stage", "%s=%s" % (l, h)] for l, h in zip(libs, shas)), []) +
            ["--", ctx.extra["qual_run"], blobs[0], blobs[1], "--compile-only",
             "--case", "gemm_f16-256x512x256"])
    b = Bridge(ctx, args)
    rc = b.finish(60)
    out = read(os.path.join(ctx.job_dir(job), "out.jsonl"), "rb")
    check(rc == 0, "exit %s; stderr:\n%s" % (rc, "\n".join(b.err_lines)))
    check(b.out == out, "stdout is not out.jsonl")
    recs = [json.loads(x) for x in out.splitlines()]
    check(recs[0]["type"] == "start" and recs[-1]["type"] == "verdict" and
          recs[-1]["verdict"] == "not_timed", "lines: %r" % [r["type"] for r in recs])
    check(all(read(x, "rb") == read(l, "rb") for x, l in zip(blobs, libs)), "blobs differ")
    print("qual_run: %d lines, verdict %s" % (len(recs), recs[-1]["verdict"]))


def cluster(ctx_args, what, types=None):
    """The tests' cluster in ctx_args.cluster: what is "start" (a fresh one,
    with GPU types types, e.g. "fakea:1,fakeb:1"; default the script's) or
    "stop". slurm_service_test.py uses it too."""
    marker = os.path.join(ctx_args.cluster, "skipped")
    if what == "stop":
        if not os.path.exists(marker):
            subprocess.run(["bash", CLUSTER, "stop", ctx_args.cluster])
        return 0
    # A cluster an interrupted run left behind goes first, and its state
    # (a fresh cluster each run: no jobs or node state of an earlier one).
    subprocess.run(["bash", CLUSTER, "stop", ctx_args.cluster], stderr=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL)
    shutil.rmtree(ctx_args.cluster, ignore_errors=True)
    os.makedirs(ctx_args.cluster)
    r = subprocess.run(["bash", CLUSTER, "start", ctx_args.cluster] +
                       (["--types", types] if types else []))
    if r.returncode == SKIP:
        # The scenarios skip; this step itself passes (a skipped fixture
        # setup would mark them not run, as failures).
        open(marker, "w").close()
        return 0
    return r.returncode


SCENARIOS = {f.__name__: f for f in (relay, signal_exit, attach_skip, pending, pin_refused,
                                     stage_refused, sbatch_refused, sigterm, time_limit,
                                     lost, stopped, ctld_restart, qual_run)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bridge", required=True)
    ap.add_argument("--cluster", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--qual-run")
    ap.add_argument("--nvrtc")
    ap.add_argument("--nvrtc-alt")
    ap.add_argument("scenario")
    args = ap.parse_args()
    if args.scenario in ("cluster-start", "cluster-stop"):
        return cluster(args, args.scenario.split("-")[1])
    if os.path.exists(os.path.join(args.cluster, "skipped")):
        print("skipped: no Slurm cluster (slurm-cluster.sh said so at start)")
        return SKIP
    if not os.path.exists(os.path.join(args.cluster, "etc", "slurm.conf")):
        fail("no cluster in '%s'" % args.cluster)
    work = os.path.join(args.work, args.scenario)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    args.work = work
    SCENARIOS[args.scenario](Ctx(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
