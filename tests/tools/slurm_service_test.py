#!/usr/bin/env python3
"""quald --backend slurm end to end: quald -> qual-slurm -> Slurm -> qual-run,
on a real one-node Slurm cluster with two fake GPU types (fakea:1, fakeb:1)
that the tests start and stop themselves (scripts/slurm-cluster.sh). Each job
is compile-only (the fake GPUs run nothing): the real nvrtc 13.0 pair, or
the hanging shim as the candidate for a job that lasts (its compile time
limit ends it with a fail). See tests/slurm.cmake for what each scenario
asserts.

  slurm_service_test.py --quald Q --qualctl C --hang LIB --cluster DIR
                        --work DIR SCENARIO
  SCENARIO: cluster-start, cluster-stop, types, cancel, drain, node_fail,
            down, restart

Exits 77 (skipped) when the cluster could not be started for want of Slurm
or root."""
import argparse
import csv
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import slurm_bridge_test  # noqa: E402  (its cluster fixture)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "scripts", "slurm-cluster.sh")
SKIP = 77
NVRTC = "/usr/local/cuda/lib64/libnvrtc.so.13"
NVRTC_ALT = "/usr/local/cuda/lib64/libnvrtc.alt.so.13"
CASE = "gemm_f16-256x512x256"
REMOTE_NODE_KEY = "@node"


def fail(msg, *more):
    print("FAIL: " + msg, file=sys.stderr)
    for m in more:
        print(m if isinstance(m, str) else repr(m), file=sys.stderr)
    sys.exit(1)


def check(cond, msg, *more):
    if not cond:
        fail(msg, *more)


class Ctx:
    def __init__(self, args):
        self.args = args
        self.work = args.work
        self.sock = os.path.join(self.work, "s")
        self.state = os.path.join(self.work, "state")
        self.spool = os.path.join(self.work, "spool")
        self.env = dict(os.environ)
        self.env["SLURM_CONF"] = os.path.join(args.cluster, "etc", "slurm.conf")
        self.env["QUAL_SLURM_POLL_MS"] = "300"
        self.env["QUAL_SOCKET"] = self.sock
        self.quald = None
        self.log = os.path.join(self.work, "quald.log")

    def start(self, *extra):
        # A quald that was killed leaves its socket: wait for the new one.
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        logf = open(self.log, "a")
        self.quald = subprocess.Popen(
            [self.args.quald, "--socket", self.sock, "--state-dir", self.state,
             "--backend", "slurm", "--slurm-spool", self.spool, "--slurm-jobs", "4",
             "--slurm-partition", "qual", "--job-timeout", "120", *extra],
            env=self.env, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
        logf.close()
        for _ in range(200):
            if os.path.exists(self.sock):
                return
            if self.quald.poll() is not None:
                fail("quald exited", self.read_log())
            time.sleep(0.05)
        fail("quald never listened", self.read_log())

    def stop(self, sig=signal.SIGTERM):
        if self.quald and self.quald.poll() is None:
            self.quald.send_signal(sig)
            try:
                self.quald.wait(30)
            except subprocess.TimeoutExpired:
                self.quald.kill()
                fail("quald did not stop within 30 s of SIGTERM", self.read_log())
        self.quald = None

    def read_log(self):
        try:
            with open(self.log) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def ctl(self, *argv, timeout=120, check_rc=None):
        r = subprocess.run([self.args.qualctl, *argv], env=self.env, capture_output=True,
                           text=True, timeout=timeout)
        if check_rc is not None and r.returncode != check_rc:
            fail("qualctl %s: exit %d, not %d" % (" ".join(argv), r.returncode, check_rc),
                 r.stdout, r.stderr, self.read_log())
        return r

    def ctl_json(self, *argv):
        r = self.ctl(*argv, "--json", check_rc=0)
        return [json.loads(l) for l in r.stdout.splitlines() if l.strip()]

    def submit(self, *extra, candidate=None, timeout_s=None):
        argv = ["submit", "--no-follow", "--compile-only", "--case", CASE]
        if timeout_s:
            argv += ["--compile-timeout", str(timeout_s)]
        r = self.ctl(*argv, *extra, NVRTC, candidate or NVRTC_ALT, check_rc=0)
        return r.stdout.split()

    def slurm(self, *cmd):
        try:
            return subprocess.run(list(cmd), env=self.env, capture_output=True, text=True,
                                  timeout=30).stdout
        except (FileNotFoundError, subprocess.TimeoutExpired):
            return ""  # no Slurm here, or no controller answering

    def cluster(self, *what):
        r = subprocess.run(["bash", CLUSTER, what[0], self.args.cluster, *what[1:]],
                           env=self.env, capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "slurm-cluster.sh %s: exit %d" % (what[0], r.returncode),
              r.stdout, r.stderr)

    def resume(self):
        """The node back in service, when Slurm has not put it back itself
        (ReturnToService=2 does once slurmd answers again)."""
        def state():
            return self.slurm("sinfo", "-h", "-o", "%t").strip()
        if any(w in state() for w in ("down", "drain", "drng", "fail")):
            self.cluster("resume")
        self.wait_for("the node idle again", lambda: state() in ("idle", "mix", "alloc"), 60)

    def entry(self, job):
        """The job's list entry."""
        for reply in self.ctl_json("list"):
            for e in reply.get("jobs", []):
                if e["job"] == job:
                    return e
        fail("job %s not in the list" % job)

    def wait_for(self, what, pred, limit=60):
        end = time.time() + limit
        while time.time() < end:
            v = pred()
            if v:
                return v
            time.sleep(0.3)
        fail("timed out (%d s) waiting for %s" % (limit, what), self.read_log())

    def lines(self, job):
        out = self.ctl("show", job, "--json", check_rc=None).stdout
        return [json.loads(l) for l in out.splitlines() if l.strip()]

    def verdict(self, job, limit=90):
        r = self.ctl("wait", job, timeout=limit)
        lines = self.lines(job)
        v = [l for l in lines if l.get("type") == "verdict"]
        check(len(v) == 1, "job %s: one verdict line" % job, lines, self.read_log())
        seqs = [l["seq"] for l in lines if "seq" in l]
        check(seqs == list(range(len(seqs))), "job %s: seqs 0.. without gap or repeat" % job,
              seqs)
        return v[0], r

    def slurm_id(self, job):
        e = self.entry(job)
        return (e.get("slurm") or {}).get("id")

    def running_in_slurm(self, job):
        e = self.entry(job)
        s = e.get("slurm") or {}
        return s if s.get("state") == "RUNNING" and e["state"] == "running" else None


def node():
    return socket.gethostname().split(".")[0]


def types(ctx):
    """Two GPU types at once, an overall verdict, and a typed job's lines,
    history and export."""
    ctx.start()
    # The real pair, one type: a pass, every line with its type and node.
    r = ctx.ctl("submit", "--compile-only", "--case", CASE, "--gpu-type", "fakea", NVRTC,
                NVRTC_ALT, check_rc=0)
    job = r.stdout.split()[1].rstrip(":")
    lines = ctx.lines(job)
    check(lines and all(l.get("gpu_type") == "fakea" and l.get("node") == node()
                        for l in lines), "every line carries gpu_type fakea and the node",
          lines)
    check(lines[-1]["type"] == "verdict" and lines[-1]["verdict"] == "not_timed",
          "the compile-only pair's verdict", lines)
    e = ctx.entry(job)
    check(e["gpu_type"] == "fakea" and e["slurm"]["id"] and e["slurm"]["node"] == node(),
          "list names the type, the Slurm job and the node", e)
    blobs = os.listdir(os.path.join(ctx.spool, "blobs"))
    check(len(blobs) == 2, "both libraries staged once each, by content", blobs)

    # Two types of the hanging candidate: both run at once (one GPU of each
    # type), each ends with its own verdict: fakea's compile time limit
    # fails it, fakeb is cancelled mid-way (error, exit 3); the overall
    # verdict is the worse by the engine's precedence, fail (exit 2), not
    # the larger exit status.
    hang = ctx.args.hang
    p = subprocess.Popen([ctx.args.qualctl, "submit", "--compile-only", "--case", CASE,
                          "--compile-timeout", "6", "--gpu-type", "fakea", "--gpu-type",
                          "fakeb", NVRTC, hang], env=ctx.env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)

    def both():
        st = ctx.ctl_json("status")[0]
        run = [s for s in st["slots"] if "RUNNING" in (s["device"] or {}).get("name", "")]
        return run if len(run) == 2 else None
    run = ctx.wait_for("both types running in Slurm at once", both, 40)
    jobs = sorted(s["job"] for s in run)
    ctx.ctl("cancel", jobs[1], check_rc=0)
    out, err = p.communicate(timeout=120)
    check(p.returncode == 2, "fail and cancelled: exit 2, got %d" % p.returncode, out, err)
    check("overall: fail" in out and "fakea fail" in out and "fakeb error" in out,
          "a verdict per type and the overall one", out)
    for j, t, want in zip(jobs, ("fakea", "fakeb"), ("fail", "cancelled")):
        v, _ = ctx.verdict(j)
        check(v["verdict"] == want and v.get("gpu_type", t) == t,
              "job %s of type %s: %s" % (j, t, want), v)
    # One submission: list and history give its overall verdict on each of
    # its jobs (fail outranks cancelled, which reads as error), null until
    # both have ended (a verdict line comes before its worker's end).
    ctx.wait_for("both jobs ended", lambda: all(ctx.entry(x)["state"] in ("done", "cancelled")
                                                for x in jobs), 30)
    e0, e1 = ctx.entry(jobs[0]), ctx.entry(jobs[1])
    check(e0.get("submission") and e0["submission"] == e1.get("submission") and
          e0["submission"].startswith("s-") and e0.get("overall") == "fail" and
          e1.get("overall") == "fail", "list: one submission, overall fail", e0, e1)
    check("submission" not in ctx.entry(job), "a single-type submit is no submission",
          ctx.entry(job))
    # History per type, and the export's columns.
    h = ctx.ctl_json("history", "--gpu-type", "fakeb")[0]["jobs"]
    check([x["job"] for x in h] == [jobs[1]] and h[0]["gpu_type"] == "fakeb" and
          h[0].get("overall") == "fail", "history --gpu-type fakeb: that type's job, with "
          "its submission's overall verdict", h)
    rows = list(csv.DictReader(io.StringIO(ctx.ctl("export", "--csv", check_rc=0).stdout)))
    check({r["job"]: r["gpu_type"] for r in rows} ==
          {job: "fakea", jobs[0]: "fakea", jobs[1]: "fakeb"}, "export: gpu_type per job", rows)
    check({r["job"]: r["overall"] for r in rows} == {job: "", jobs[0]: "fail", jobs[1]: "fail"},
          "export: the submission's overall verdict", rows)
    check(all(r["node"] == node() for r in rows), "export: the node", rows)
    # A type the cluster does not have: sbatch's refusal, an error verdict.
    j = ctx.submit("--gpu-type", "nosuch")[0]
    v, _ = ctx.verdict(j)
    check(v["verdict"] == "error" and "sbatch refused the job" in v.get("message", ""),
          "an unknown GPU type: error naming sbatch's refusal", v)
    print("types: %s fakea not_timed, %d lines with gpu_type and node %s; %s fakea and %s "
          "fakeb ran at once, fakeb cancelled; qualctl: %s; unknown type: %s" %
          (job, len(lines), node(), jobs[0], jobs[1],
           " | ".join(l for l in out.splitlines() if l.startswith(("gpu types", "overall"))),
           v["message"]))
    ctx.stop()


def cancel(ctx):
    """qualctl cancel ends the Slurm job and what it ran on the node."""
    ctx.start()
    job = ctx.submit("--gpu-type", "fakea", candidate=ctx.args.hang, timeout_s=60)[0]
    s = ctx.wait_for("the job running in Slurm", lambda: ctx.running_in_slurm(job), 40)
    t0 = time.time()
    ctx.ctl("cancel", job, check_rc=0)
    v, _ = ctx.verdict(job)
    check(v["verdict"] == "cancelled", "cancelled", v)
    check(time.time() - t0 < 30, "the cancel took %.1f s" % (time.time() - t0))
    ctx.wait_for("Slurm job %s gone from squeue" % s["id"],
                 lambda: s["id"] not in ctx.slurm("squeue", "-h", "-o", "%i").split(), 30)
    left = subprocess.run(["pgrep", "-f", os.path.join(ctx.spool, "jobs", job)],
                          capture_output=True, text=True).stdout
    check(not left.strip(), "nothing of the job runs on the node", left)
    print("cancel: %s (slurm job %s) cancelled in %.1f s, gone from squeue, nothing left on "
          "the node" % (job, s["id"], time.time() - t0))
    ctx.stop()


def drain(ctx):
    """A drained node: the job waits in Slurm's queue, shown queued with
    Slurm's reason; resumed, it runs to its verdict."""
    ctx.start()
    ctx.cluster("drain", "maintenance")
    try:
        job = ctx.submit("--gpu-type", "fakeb")[0]

        def pending():
            e = ctx.entry(job)
            s = e.get("slurm") or {}
            return e if s.get("state") == "PENDING" and s.get("reason") else None
        e = ctx.wait_for("the job pending in Slurm with a reason", pending, 30)
        check(e["state"] == "queued", "a job pending in Slurm is shown queued", e)
        st = ctx.ctl_json("status")[0]
        check(job in st["queued"] and job not in st["running"], "status: queued", st)
        reason = e["slurm"]["reason"]
        out = ctx.ctl("status", check_rc=0).stdout
        check(reason in out, "status shows Slurm's reason", out)
    finally:
        ctx.resume()
    v, _ = ctx.verdict(job)
    check(v["verdict"] == "not_timed", "resumed, the job ran", v)
    print("drained: pending reason %r" % reason)
    ctx.stop()


def lost(ctx, how):
    """The node fails (slurmd and the job's processes killed) or is set
    down mid-job: an error verdict naming Slurm's state and reason, and the
    next job runs once the node is back."""
    ctx.start()
    job = ctx.submit("--gpu-type", "fakea", candidate=ctx.args.hang, timeout_s=100)[0]
    ctx.wait_for("the job running in Slurm", lambda: ctx.running_in_slurm(job), 40)
    t0 = time.time()
    if how == "crash":
        ctx.cluster("kill-slurmd", "--crash")
    else:
        ctx.cluster("down", "qual-test-down")
    try:
        v, _ = ctx.verdict(job, limit=150)
    finally:
        if how == "crash":
            ctx.cluster("start-slurmd")
        ctx.resume()
    took = time.time() - t0
    msg = v.get("message", "")
    check(v["verdict"] == "error" and "slurm job" in msg and "before qual-run finished" in msg,
          "an error verdict naming the Slurm job's end", v)
    if how == "down":
        check("qual-test-down" in msg or "NODE_FAIL" in msg or "CANCELLED" in msg,
              "the message carries Slurm's state or reason", msg)
    print("%s: verdict after %.1f s: %s" % (how, took, msg))
    job2 = ctx.submit("--gpu-type", "fakea")[0]
    v2, _ = ctx.verdict(job2, limit=120)
    check(v2["verdict"] == "not_timed", "the next job runs on the node again", v2)
    ctx.stop()


def node_fail(ctx):
    lost(ctx, "crash")


def down(ctx):
    lost(ctx, "down")


def once(lines):
    """Each of a re-attached job's lines once: one start line, the compile
    time limit's error line once, one verdict."""
    kinds = [l.get("type") for l in lines]
    errs = [l for l in lines if l.get("type") == "error"]
    check(kinds.count("start") == 1 and kinds.count("verdict") == 1,
          "one start line and one verdict line", kinds)
    check(len(errs) == 1 and errs[0].get("code") == "compile_timeout",
          "the compile time limit's error line, once", lines)


def node_tmpdir(ctx, job):
    """The TMPDIR of the job's qual-run on the node (a child of qual-slurm
    --node for the job's folder)."""
    folder = os.path.join(ctx.spool, "jobs", job)

    def find():
        for pid in subprocess.run(["pgrep", "-f", "--", "--node " + folder], capture_output=True,
                                  text=True).stdout.split():
            for kid in subprocess.run(["pgrep", "-P", pid], capture_output=True,
                                      text=True).stdout.split():
                try:
                    with open("/proc/%s/environ" % kid, "rb") as f:
                        env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
                except OSError:
                    continue
                if b"TMPDIR" in env:
                    return env[b"TMPDIR"].decode()
        return None
    return ctx.wait_for("qual-run running on the node", find, 20)


def restart(ctx):
    """quald stopped mid-job leaves the Slurm job running; started again,
    it follows the job from the lines stored: its verdict, nothing lost or
    repeated."""
    ctx.start()
    job = ctx.submit("--gpu-type", "fakeb", candidate=ctx.args.hang, timeout_s=10)[0]
    s = ctx.wait_for("the job running in Slurm", lambda: ctx.running_in_slurm(job), 40)
    ctx.wait_for("its start line stored", lambda: len(ctx.lines(job)) >= 1, 20)
    tmp = node_tmpdir(ctx, job)
    ctx.stop()
    check(s["id"] in ctx.slurm("squeue", "-h", "-o", "%i").split(),
          "the Slurm job runs on without quald", ctx.slurm("squeue"))
    with open(os.path.join(ctx.state, "jobs", job, "state.json")) as f:
        state = json.load(f)
    check(state["state"] == "running" and state["slurm"]["id"] == s["id"],
          "its state stays running with the Slurm id", state)
    ctx.start()
    time.sleep(1)
    check(os.path.isdir(tmp), "qual-run's TMPDIR on the node outlives quald's restart "
          "(quald removes its own workers' folders when it stops and starts)", tmp)
    v, _ = ctx.verdict(job)
    lines = ctx.lines(job)
    check(v["verdict"] == "fail", "the hanging candidate's verdict, after the restart", v)
    once(lines)
    check("following its slurm job again" in ctx.read_log(), "quald says it re-attached",
          ctx.read_log())
    # quald killed (SIGKILL: no orderly stop) after its state was saved
    # with the Slurm job RUNNING and lines taken since: the next start
    # skips exactly the lines stored, none twice, none lost.
    job2 = ctx.submit("--gpu-type", "fakea", candidate=ctx.args.hang, timeout_s=10)[0]
    ctx.wait_for("the job running in Slurm", lambda: ctx.running_in_slurm(job2), 40)
    ctx.wait_for("its start line stored", lambda: len(ctx.lines(job2)) >= 1, 20)
    ctx.stop(signal.SIGKILL)
    ctx.start()
    v2, _ = ctx.verdict(job2)
    check(v2["verdict"] == "fail", "after a crash: the hanging candidate's verdict", v2)
    once(ctx.lines(job2))
    print("restart: %s (slurm job %s) ran on while quald was stopped; re-attached, verdict %s, "
          "seqs 0..%d without a gap or a repeat, node TMPDIR %s kept; %s after quald was "
          "killed: verdict %s, each line once" %
          (job, s["id"], v["verdict"], lines[-1]["seq"], tmp, job2, v2["verdict"]))
    ctx.stop()


def calibrate(ctx):
    """A calibration through Slurm stores the record of the node's GPU it
    ran on in the spool; a later job on that GPU carries it in its verdict
    line, one on the other GPU says it has none."""
    fake = os.path.join(ctx.work, "fake")
    os.makedirs(fake)
    ctx.env["FAKE_CALIB_DIR"] = fake
    ctx.start("--worker", ctx.args.fake_worker, "--calibrator", ctx.args.calibrator)
    r = ctx.ctl("calibrate", NVRTC, "--runs", "2", "--gpu-type", "fakeb", "--watch",
                check_rc=0)
    key = node() + "-gpu1"  # fakeb is the node's GPU 1 (gres.conf: /dev/tty1)
    path = os.path.join(ctx.spool, "calibration", key + ".json")
    ctx.wait_for("the record in the spool", lambda: os.path.exists(path), 20)
    with open(path) as f:
        rec = json.load(f)
    check(rec["device_key"] == key and rec["runs"] == 2, "the record of %s" % key, rec)
    with open(os.path.join(fake, "args")) as f:
        runs = f.read().splitlines()
    check(len(runs) == 2 and all(REMOTE_NODE_KEY not in x for x in runs),
          "two runs on the node, the placeholder filled in", runs)
    shown = ctx.ctl_json("calibration")[0]["calibrations"]
    check([c["device_key"] for c in shown] == [key] and shown[0]["record"] == rec,
          "qualctl calibration lists the spool's record", shown)
    ctx.stop()
    ctx.start()
    j1 = ctx.submit("--gpu-type", "fakeb")[0]
    v1, _ = ctx.verdict(j1)
    check(v1.get("calibration") == rec, "a job on that GPU carries its record", v1)
    j0 = ctx.submit("--gpu-type", "fakea")[0]
    v0, _ = ctx.verdict(j0)
    check(v0.get("calibration") is None and
          ("no calibration of %s-gpu0" % node()) in (v0.get("calibration_because") or ""),
          "a job on the other GPU says it has none", v0)
    print("calibrate: record %s (%d runs) in the spool; %s on fakeb carries it; %s on fakea: "
          "%s" % (key, rec["runs"], j1, j0, v0["calibration_because"]))
    ctx.stop()


def local(ctx):
    """Without --backend slurm: a GPU type is refused at both doors, the
    --slurm-* options and a Slurm quald's calibration too."""
    r = subprocess.run([ctx.args.quald, "--slurm-jobs", "2", "--state-dir", ctx.state],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 4 and "--slurm-jobs needs --backend slurm" in r.stderr,
          "--slurm-jobs without --backend slurm: usage", r.returncode, r.stderr)
    r = subprocess.run([ctx.args.quald, "--backend", "slurm", "--slots", "2", "--state-dir",
                        ctx.state], capture_output=True, text=True, timeout=30)
    check(r.returncode == 4 and "--backend slurm takes no --slots:" in r.stderr,
          "--backend slurm with --slots: usage", r.returncode, r.stderr)
    r = ctx.ctl("submit", "--gpu-type", "a:b", NVRTC, NVRTC_ALT)
    check(r.returncode == 4 and "'gpu_type' must be 1 to 64 characters" in r.stderr,
          "qualctl refuses a GPU type Slurm cannot name", r.stderr)
    logf = open(ctx.log, "a")
    ctx.quald = subprocess.Popen([ctx.args.quald, "--socket", ctx.sock, "--state-dir", ctx.state,
                                  "--slots", "1"], env=ctx.env, stdout=logf,
                                 stderr=subprocess.STDOUT, start_new_session=True)
    logf.close()
    ctx.wait_for("quald listening", lambda: os.path.exists(ctx.sock), 20)
    r = ctx.ctl("submit", "--compile-only", "--gpu-type", "fakea", NVRTC, NVRTC_ALT)
    check(r.returncode == 4 and "'gpu_type' needs quald --backend slurm" in r.stderr,
          "a local quald refuses a GPU type, naming why", r.returncode, r.stderr)
    ctx.stop()
    ctx.start()
    r = ctx.ctl("calibrate", NVRTC, "--device", "0")
    check(r.returncode == 4 and "'slot' names one of quald's own GPUs" in r.stderr,
          "a Slurm quald refuses a calibration of a slot, naming why", r.returncode, r.stderr)
    ctx.stop()


SCENARIOS = {f.__name__: f for f in (types, cancel, drain, node_fail, down, restart, calibrate,
                                     local)}


def main():
    ap = argparse.ArgumentParser()
    for a in ("--quald", "--qualctl", "--hang", "--cluster", "--work", "--calibrator",
              "--fake-worker"):
        ap.add_argument(a, required=True)
    ap.add_argument("scenario")
    args = ap.parse_args()
    if args.scenario in ("cluster-start", "cluster-stop"):
        return slurm_bridge_test.cluster(args, args.scenario.split("-")[1], "fakea:1,fakeb:1")
    if args.scenario != "local" and os.path.exists(os.path.join(args.cluster, "skipped")):
        print("skipped: no Slurm cluster (slurm-cluster.sh said so at start)")
        return SKIP
    if not os.path.exists(NVRTC) or not os.path.exists(NVRTC_ALT):
        print("skipped: no nvrtc 13.0 pair in /usr/local/cuda/lib64")
        return SKIP
    args.work = os.path.join(args.work, args.scenario)
    subprocess.run(["rm", "-rf", args.work])
    os.makedirs(args.work)
    ctx = Ctx(args)
    try:
        SCENARIOS[args.scenario](ctx)
    finally:
        ctx.stop(signal.SIGKILL)
        # What a failed scenario left in Slurm must not hold the next one's
        # GPUs (the local scenario has no cluster to ask).
        if args.scenario != "local":
            ctx.slurm("scancel", "--partition=qual")
    print("%s: ok" % args.scenario)
    return 0


if __name__ == "__main__":
    sys.exit(main())
