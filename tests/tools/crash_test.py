#!/usr/bin/python3
"""Crash safety of quald's state directory: SIGKILL at random moments.

usage: crash_test.py --quald Q --qualctl C --worker W --compile-helper H
                     --nvrtc LIB --nvrtc-alt LIB [--jobs N] [--seed S]
                     [--kill-min S] [--kill-max S] [--kill-for S]
                     [--tear-every K]

Starts quald (--slots 2, compile-only) on a socket and state directory in a
fresh temporary folder. Submitter threads send compile-only submits of one
fast case over raw connections (follow false, each with its own seed, so
that a job id can be matched to the submit that got it), and record which
ones were acknowledged with a job id. Meanwhile the main thread kills quald
with SIGKILL after a random pause (seeded RNG, --kill-min to --kill-max
seconds), checks that every process quald had started (workers, their
compile children, submit checks) dies with it, and restarts it on the same
state. SIGKILL cannot tear a record (the page cache outlives the process),
so at every --tear-every'th kill the test also tears one running job's log
the way a power cut could: its last record cut short at a random byte, or
one byte of it changed (a sector of garbage: only the check tells), or, for
an empty log, half a record written; recovery must cut it off, note
it in the log and end the job interrupted. Submitting stops at --jobs
acknowledged jobs; killing goes on until every acknowledged job has
finished (after --kill-for seconds the rest finish unkilled). Then one
more kill and start, which recovers whatever the last kill left, and:

  - every acknowledged job is in the state directory with the request it
    was acknowledged for (its seed), no job id was acknowledged twice;
  - every torn log got exactly one note of it and a warning on stderr;
  - every job (acknowledged or not: a kill between creating a job and
    replying leaves one nobody heard of) has a final state, and its log,
    read by tests/tools/store_log.py, is whole (no torn tail after the
    recovery), every record's check valid, seq 0..n-1 without gaps, job
    its id, exactly one verdict line, the last, not_timed or interrupted,
    agreeing with state.json; no error line but recovery's own note of a
    torn log; every line valid against docs/schema/lines.schema.json;
  - `qualctl show JOB --json` prints exactly those lines;
  - quald never reported a fatal failure, and stops cleanly (SIGTERM: 0).

Prints the number of kills, jobs, verdicts and the time taken. Exits 0 when
every check holds, 1 with the failed check otherwise."""
import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import store_log  # noqa: E402

# qualctl show exits with the job's verdict status (0 to 3: docs/qualctl.md)
# once it has one; 4 and 5 are a refusal and no daemon.
SHOW_ANSWERED = (0, 1, 2, 3)

SCHEMA = os.path.join(HERE, "..", "..", "docs", "schema", "lines.schema.json")
# The fastest case to compile: a job takes about 0.8 s on the CI machine
# (two compiles of about 0.2 s, and qual-run's start), its submit check 0.2 s.
CASE = "gemm_i8-256x512x256"
FINAL = ("done", "cancelled", "interrupted")
START_S = 10.0      # quald answering after a start
DIE_S = 5.0         # quald's descendants gone after SIGKILL (PR_SET_PDEATHSIG)
REPLY_S = 30.0      # a submit's reply (its checks take up to 30 s)
TOTAL_S = 150.0     # the whole test; ctest's TIMEOUT is above it
SUBMITTERS = 2      # submitter threads, each on its own connection


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def log(text):
    print(text, flush=True)


# ---- processes ------------------------------------------------------------

def ppid_map():
    """{pid: ppid} of the live processes (zombies left out)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                text = f.read()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        if fields[0] not in ("Z", "X"):
            out[int(name)] = int(fields[1])
    return out


def descendants(pid):
    kids, found, todo = {}, [], [pid]
    for p, pp in ppid_map().items():
        kids.setdefault(pp, []).append(p)
    while todo:
        for k in kids.get(todo.pop(), []):
            found.append(k)
            todo.append(k)
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return False
    return text[text.rindex(")") + 2:].split()[0] not in ("Z", "X")


class Quald:
    def __init__(self, args, root):
        self.args = args
        self.sock = os.path.join(root, "quald.sock")
        self.state = os.path.join(root, "state")
        self.tmp = os.path.join(root, "tmp")
        self.log = os.path.join(root, "quald.log")
        self.proc = None
        os.makedirs(self.tmp, exist_ok=True)

    def start(self):
        env = dict(os.environ)
        env["TMPDIR"] = self.tmp
        for k in ("QUAL_SOCKET", "RUNTIME_DIRECTORY", "STATE_DIRECTORY",
                  "NOTIFY_SOCKET", "LISTEN_PID", "LISTEN_FDS"):
            env.pop(k, None)
        with open(self.log, "ab") as errf:
            self.proc = subprocess.Popen(
                [self.args.quald, "--socket", self.sock, "--state-dir", self.state,
                 "--slots", "2", "--worker", self.args.worker,
                 "--compile-helper", self.args.compile_helper],
                stdin=subprocess.DEVNULL, stdout=errf, stderr=errf, env=env)
        deadline = time.monotonic() + START_S
        while True:
            check(self.proc.poll() is None,
                  f"quald exited with status {self.proc.returncode} at start:\n"
                  f"{self.log_tail()}")
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.connect(self.sock)
                return
            except OSError:
                pass
            check(time.monotonic() < deadline, "quald did not listen within "
                  f"{START_S:g} s of its start:\n{self.log_tail()}")
            time.sleep(0.01)

    def kill(self):
        """SIGKILL; then every process quald had started must die with it."""
        victims = descendants(self.proc.pid)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None
        deadline = time.monotonic() + DIE_S
        while any(alive(p) for p in victims):
            check(time.monotonic() < deadline,
                  f"processes {[p for p in victims if alive(p)]} outlived quald by "
                  f"{DIE_S:g} s")
            time.sleep(0.01)
        return len(victims)

    def stop(self):
        p, self.proc = self.proc, None
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise Failure("quald did not stop within 20 s of SIGTERM")
        check(rc == 0, f"quald exited {rc} after SIGTERM:\n{self.log_tail()}")

    def log_tail(self, n=30):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def job_dir(self, job):
        return os.path.join(self.state, "jobs", job)

    def state_of(self, job):
        try:
            with open(os.path.join(self.job_dir(job), "state.json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None


# ---- submitting -------------------------------------------------------------

class Submits:
    """The submits sent and what came of them, shared by the threads."""

    def __init__(self, args, d, target):
        self.args = args
        self.d = d
        self.target = target
        self.lock = threading.Lock()
        self.next_seed = 0
        self.acked = {}        # job id -> seed
        self.lost = 0          # submits whose connection died before a reply
        self.refused = []      # (seed, message): must stay empty
        self.stop = threading.Event()

    def enough(self):
        with self.lock:
            return len(self.acked) >= self.target

    def one(self):
        """Sends one submit on a new connection; records what came back."""
        with self.lock:
            seed = self.next_seed
            self.next_seed += 1
        req = {"op": "submit", "id": seed, "baseline": self.args.nvrtc,
               "candidate": self.args.nvrtc_alt, "cases": [CASE],
               "compile_only": True, "follow": False, "seed": seed}
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(REPLY_S)
                s.connect(self.d.sock)
                s.sendall((json.dumps(req) + "\n").encode())
                buf = b""
                while b"\n" not in buf:
                    got = s.recv(65536)
                    if not got:
                        break
                    buf += got
        except (ConnectionError, FileNotFoundError, socket.timeout, OSError):
            buf = b""
        if b"\n" not in buf:
            # quald died (or was not there): not acknowledged. A job may
            # exist all the same; the checks cover every job.
            with self.lock:
                self.lost += 1
            time.sleep(0.05)
            return
        reply = json.loads(buf.split(b"\n", 1)[0])
        with self.lock:
            if reply.get("type") == "reply" and reply.get("op") == "submit":
                job = reply["job"]
                if job in self.acked:
                    raise Failure(f"job id {job} acknowledged twice (seeds "
                                  f"{self.acked[job]} and {seed})")
                self.acked[job] = seed
            else:
                self.refused.append((seed, reply.get("message")))

    def run(self, index):
        rng = random.Random(self.args.seed * 1000 + index)
        try:
            while not self.stop.is_set() and not self.enough():
                self.one()
                # Spread the submits over the run, a little faster than
                # two slots finish them.
                time.sleep(rng.uniform(0.0, 0.3))
        except Failure as e:
            self.refused.append((-1, str(e)))


def tear_one(d, rng):
    """Tears the log of one running job (state.json says running, the log
    does not end with a verdict: a synced verdict is never torn). Returns
    the job, or None when there is none."""
    jobs_dir = os.path.join(d.state, "jobs")
    running = [j for j in sorted(os.listdir(jobs_dir))
               if not j.startswith(".") and (d.state_of(j) or {}).get("state") == "running"]
    rng.shuffle(running)
    for job in running:
        path = os.path.join(d.job_dir(job), "log.jsonl")
        lg = store_log.read(path)
        if lg.torn_bytes or (lg.lines and json.loads(lg.lines[-1])["type"] == "verdict"):
            continue
        if lg.lines:
            last = len(store_log.record(lg.lines[-1]))
            at = lg.good_bytes - last + rng.randrange(1, last - 1)
            with open(path, "r+b") as f:
                if rng.random() < 0.5:
                    f.truncate(at)
                else:
                    f.seek(at)
                    byte = f.read(1)[0]
                    f.seek(at)
                    # Another printable byte, never a newline.
                    f.write(bytes([0x20 + (byte - 0x20 + rng.randrange(1, 95)) % 95]))
        else:
            with open(path, "ab") as f:
                f.write(b'{"type":"start","schema_ver')
        return job
    return None


# ---- the checks -------------------------------------------------------------

def check_job(d, job, validator, show_text, counts):
    st = d.state_of(job)
    check(st is not None, f"{job}: no readable state.json")
    check(st["state"] in FINAL, f"{job}: state {st['state']} after the last recovery")
    lg = store_log.read(os.path.join(d.job_dir(job), "log.jsonl"))
    check(lg.torn_bytes == 0, f"{job}: log torn at byte {lg.good_bytes} ({lg.why}) "
          "after the last recovery")
    check(lg.unchecked == 0, f"{job}: {lg.unchecked} records without a check")
    texts = [b.decode() for b in lg.lines]
    objs = [json.loads(t) for t in texts]
    check(len(objs) > 0, f"{job}: empty log")
    verdicts = [i for i, o in enumerate(objs) if o["type"] == "verdict"]
    check(len(verdicts) == 1, f"{job}: {len(verdicts)} verdict lines")
    check(verdicts[0] == len(objs) - 1, f"{job}: its verdict is not its last line")
    for i, o in enumerate(objs):
        check(o.get("seq") == i and o.get("job") == job,
              f"{job}: line {i} has job {o.get('job')} seq {o.get('seq')}")
        validator.validate(o)
        if o["type"] == "error":
            check(o.get("code") == "interrupted" and
                  o["message"].startswith("stored log was torn at byte "),
                  f"{job}: unexpected error line {texts[i][:300]}")
            counts["torn_notes"] += 1
    v = objs[-1]["verdict"]
    check(v in ("not_timed", "interrupted"), f"{job}: verdict {v}")
    check(st["verdict"] == v, f"{job}: state.json says {st['verdict']}, the log {v}")
    check(st["state"] == ("done" if v == "not_timed" else "interrupted"),
          f"{job}: state {st['state']} with verdict {v}")
    check(show_text.splitlines() == texts,
          f"{job}: qualctl show --json differs from the stored log")
    counts[v] += 1


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--quald", "--qualctl", "--worker", "--compile-helper", "--nvrtc",
                "--nvrtc-alt"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--kill-min", type=float, default=0.2)
    # Up to 2.5 s: with 1.5 s nine jobs in ten end interrupted (a job takes
    # 0.8 s and both slots are busy); with 2.5 s about 40% finish, so that
    # kills also land between a verdict line and its state.json, and while
    # no job runs.
    ap.add_argument("--kill-max", type=float, default=2.5)
    ap.add_argument("--kill-for", type=float, default=45.0,
                    help="seconds after which quald is no longer killed")
    ap.add_argument("--tear-every", type=int, default=4,
                    help="tear a running job's log at every K-th kill (0: never)")
    args = ap.parse_args()

    t0 = time.monotonic()
    root = tempfile.mkdtemp(prefix="quald-crash-")
    d = Quald(args, root)
    rng = random.Random(args.seed)
    subs = Submits(args, d, args.jobs)
    threads = []
    kills = victims = 0
    torn = []
    try:
        d.start()
        threads = [threading.Thread(target=subs.run, args=(i,), daemon=True)
                   for i in range(SUBMITTERS)]
        for t in threads:
            t.start()

        def unfinished():
            with subs.lock:
                jobs = list(subs.acked)
            return [j for j in jobs if (d.state_of(j) or {}).get("state") not in FINAL]

        while True:
            check(time.monotonic() - t0 < TOTAL_S,
                  f"not done after {TOTAL_S:g} s: {len(subs.acked)} acknowledged, "
                  f"{len(unfinished())} unfinished, {kills} kills")
            pause = rng.uniform(args.kill_min, args.kill_max)
            time.sleep(pause)
            check(d.proc.poll() is None,
                  f"quald exited by itself ({d.proc.returncode}):\n{d.log_tail()}")
            killing = time.monotonic() - t0 < args.kill_for
            if subs.enough() and not unfinished():
                break
            if killing:
                victims += d.kill()
                kills += 1
                if args.tear_every and kills % args.tear_every == 0:
                    job = tear_one(d, rng)
                    if job:
                        torn.append(job)
                d.start()
        subs.stop.set()
        for t in threads:
            t.join(REPLY_S)
        t_run = time.monotonic() - t0
        check(not subs.refused, f"submits refused: {subs.refused[:3]}")

        # A last restart: recovery over everything the last kill left.
        victims += d.kill()
        kills += 1
        d.start()
        jobs = sorted(os.listdir(os.path.join(d.state, "jobs")))
        check(all(not j.startswith(".") for j in jobs),
              f"temporary job folders left after recovery: {jobs}")
        for job, seed in subs.acked.items():
            check(job in jobs, f"acknowledged job {job} (seed {seed}) is not stored")
            with open(os.path.join(d.job_dir(job), "request.json")) as f:
                got = json.load(f).get("seed")
            check(got == seed, f"{job} was acknowledged for seed {seed} but stores "
                  f"seed {got}")
        with open(SCHEMA) as f:
            schema = json.load(f)
        validator = jsonschema.Draft202012Validator(schema)
        counts = {"not_timed": 0, "interrupted": 0, "torn_notes": 0}
        for job in jobs:
            r = subprocess.run([args.qualctl, "--socket", d.sock, "show", job, "--json"],
                               stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=30)
            check(r.returncode in SHOW_ANSWERED, f"qualctl show {job} --json: exit {r.returncode}: "
                  f"{r.stderr}")
            check_job(d, job, validator, r.stdout, counts)
        d.stop()
        with open(d.log, errors="replace") as f:
            text = f.read()
        check("fatal" not in text, "quald reported a fatal failure:\n" + "\n".join(
            ln for ln in text.splitlines() if "fatal" in ln))
        torn_warnings = sum(1 for ln in text.splitlines() if "is torn at byte" in ln)
        check(counts["torn_notes"] == len(torn),
              f"{len(torn)} logs torn ({torn}) but {counts['torn_notes']} notes of it")
        check(torn_warnings >= len(torn),
              f"{len(torn)} logs torn but {torn_warnings} warnings on stderr")
        log(f"{kills} kills (SIGKILL every {args.kill_min:g}-{args.kill_max:g} s, "
            f"{victims} child processes died with quald); {len(subs.acked)} jobs "
            f"acknowledged, {len(jobs) - len(subs.acked)} stored but not acknowledged, "
            f"{subs.lost} submits cut off; verdicts: {counts['not_timed']} not_timed, "
            f"{counts['interrupted']} interrupted; {len(torn)} logs torn, "
            f"{counts['torn_notes']} notes, {torn_warnings} warnings; "
            f"{t_run:.1f} s of kills, {time.monotonic() - t0:.1f} s in all")
        check(len(subs.acked) >= args.jobs, f"only {len(subs.acked)} jobs acknowledged")
    except Failure as e:
        subs.stop.set()
        print(f"FAIL: {e}", file=sys.stderr)
        print(f"(state kept in {root}; quald's log:)\n{d.log_tail()}", file=sys.stderr)
        if d.proc and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()
        return 1
    finally:
        subs.stop.set()
        if d.proc and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()
    if not os.environ.get("QUAL_KEEP_TMP"):
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
