#!/usr/bin/python3
"""End-to-end tests of the service: the real quald, driven by the real qualctl.

usage: service_test.py --quald Q --qualctl C --worker W --compile-helper H
                       --shim-crash LIB --shim-hang LIB --shim-noabi LIB
                       --nvrtc LIB --nvrtc-alt LIB [--hiprtc LIB] SCENARIO

Every scenario starts its own quald on a socket and a state directory in a
fresh temporary folder (also its $TMPDIR, so that the compile folders of its
workers land there), waits until `qualctl status` answers, runs, and always
stops quald with SIGTERM and checks that it exited 0 (the sigkill scenario
also SIGKILLs it in the middle, then restarts it). The folder is removed at
the end, kept when $QUAL_KEEP_TMP is set. Compile-only: no GPU is needed.

Scenarios (docs/protocol.md, docs/quald.md, docs/qualctl.md say what each
behaviour should be):
  full          all the built-in cases, nvrtc against nvrtc.alt, with --json and plain
  concurrent    two submits at once on one slot: both pass, one after the other
  watch         a watcher sees both jobs' lines, in order, seq without gaps
  cancel        cancel a queued and a running job; the next job still passes
  sigkill       SIGKILL quald mid-job, restart: interrupted, queued ones run,
                no acknowledged line lost, no worker or compile child left
  shim_crash    a crashing candidate ends its job as fail; the next passes
  shim_hang     a hanging candidate ends its job as fail; the next passes
  bad_requests  each bad request gets one refused line; quald serves on
  history       labels through list, show, history (filters, order, limit),
                export --csv and --lnt
  retention     --keep-jobs 2: the oldest of three pruned, ids never reused,
                a restart keeps it so
Exits 0 when every check holds, 1 with the first failed check otherwise."""
import argparse
import contextlib
import json
import os
import re
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
SCHEMA = os.path.join(HERE, "..", "..", "docs", "schema", "lines.schema.json")
VALIDATE = os.path.join(HERE, "validate_lines.py")

# The fastest case to compile (about 0.2 s per arm with nvrtc 13.0), and a
# second one, where a job needs a little more length.
FAST = "gemm_i8-256x512x256"
SECOND = "gemm_f16-256x512x256"
BUILTIN_CASES = 13  # the built-in cases: nine, and four for sm_90 (docs/fixtures.md)
# Bounds on waits. A whole scenario must stay well under a minute; these
# only turn a hang into a clear failure.
START_S = 10.0    # quald answering `qualctl status`
STOP_S = 20.0     # quald exiting after SIGTERM (workers get 5 s of grace)
JOB_S = 40.0      # one compile-only job
SCENARIO_S = 100  # the whole scenario (ctest's TIMEOUT is above it)


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def log(text):
    print(text, flush=True)


def wait_until(pred, timeout, what, step=0.02):
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            raise Failure(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(step)


# ---- processes ----------------------------------------------------------

def proc_stat(pid, zombies=False):
    """(state, ppid, comm) of a live process, or None for one gone or a
    zombie (a zombie has exited; only its reaping is pending) unless
    zombies."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    if fields[0] in ("Z", "X") and not zombies:
        return None
    return fields[0], int(fields[1]), comm


def children(ppid, comm):
    """Live processes with parent ppid named comm."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = proc_stat(int(name))
        if st and st[1] == ppid and st[2] == comm:
            out.append(int(name))
    return sorted(out)


def alive(pid):
    return proc_stat(pid) is not None


# ---- the daemon ---------------------------------------------------------

class Quald:
    """One quald on ROOT/quald.sock with its state in ROOT/state."""

    def __init__(self, args, root, slots=1, extra=(), journal=False):
        """slots None: no --slots (quald's default, --devices auto); extra:
        more options of quald's; journal: $JOURNAL_STREAM names its stderr,
        as systemd's does when stderr is the journal."""
        self.journal = journal
        self.args = args
        self.root = root
        self.sock = os.path.join(root, "quald.sock")
        self.state = os.path.join(root, "state")
        self.tmp = os.path.join(root, "tmp")
        self.pidfile = os.path.join(root, "shim.pids")
        self.log = os.path.join(root, "quald.log")
        self.slots = slots
        self.extra = list(extra)
        self.proc = None
        os.makedirs(self.tmp, exist_ok=True)

    def start(self):
        env = dict(os.environ)
        env["TMPDIR"] = self.tmp
        # shim_hang writes the pids of its compiling process and of the
        # process it forks there (tests/shims/shim_hang.c).
        env["QUAL_SHIM_PIDFILE"] = self.pidfile
        for k in ("QUAL_SOCKET", "RUNTIME_DIRECTORY", "STATE_DIRECTORY",
                  "NOTIFY_SOCKET", "LISTEN_PID", "LISTEN_FDS"):
            env.pop(k, None)
        with open(self.log, "ab") as errf:
            if self.journal:
                st = os.fstat(errf.fileno())
                env["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
            else:
                env.pop("JOURNAL_STREAM", None)
            self.proc = subprocess.Popen(
                [self.args.quald, "--socket", self.sock, "--state-dir", self.state,
                 *(["--slots", str(self.slots)] if self.slots else []),
                 "--worker", self.args.worker,
                 "--compile-helper", self.args.compile_helper, *self.extra],
                stdin=subprocess.DEVNULL, stdout=errf, stderr=errf, env=env)

        def answers():
            if self.proc.poll() is not None:
                raise Failure(f"quald exited with status {self.proc.returncode} "
                              f"before answering:\n{self.log_text()}")
            return self.ctl("status").returncode == 0
        wait_until(answers, START_S, "quald to answer 'qualctl status'", step=0.05)
        return self

    def log_text(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        """SIGTERM; quald must exit 0 and remove its socket file."""
        p, self.proc = self.proc, None
        check(p.poll() is None, f"quald exited on its own with status {p.returncode}:\n"
              f"{self.log_text()}")
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(STOP_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise Failure(f"quald did not exit within {STOP_S:g} s of SIGTERM:\n"
                          f"{self.log_text()}")
        check(rc == 0, f"quald exited with status {rc} after SIGTERM, expected 0:\n"
              f"{self.log_text()}")
        check(not os.path.exists(self.sock),
              "quald left its socket file behind after a clean stop")

    def stop_quietly(self):
        p, self.proc = self.proc, None
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(STOP_S)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        print(f"quald (stopped after the failure) exited with {p.returncode}",
              file=sys.stderr)

    def kill(self):
        p, self.proc = self.proc, None
        p.send_signal(signal.SIGKILL)
        p.wait()

    def pid(self):
        return self.proc.pid

    def ctl(self, *argv, timeout=JOB_S):
        return run_ctl(self.args, self.sock, argv, timeout)

    def ctl_json(self, *argv):
        r = self.ctl(*argv, "--json")
        check(r.returncode == 0, f"qualctl {' '.join(argv)} --json: exit {r.returncode}: "
              f"{r.stderr}")
        return json.loads(r.stdout)

    def spawn_ctl(self, *argv):
        return subprocess.Popen([self.args.qualctl, "--socket", self.sock, *argv],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    # The state directory (docs/quald.md).
    def job_dir(self, job):
        return os.path.join(self.state, "jobs", job)

    def stored_lines(self, job):
        """The job's stored lines as appended: each record's check verified
        and taken off (daemon/store.h; tests/tools/store_log.py)."""
        import store_log
        lg = store_log.read(os.path.join(self.job_dir(job), "log.jsonl"))
        check(lg.torn_bytes == 0, f"job {job}: log torn at byte {lg.good_bytes} ({lg.why})")
        check(lg.unchecked == 0, f"job {job}: {lg.unchecked} log records without a check")
        return [line.decode() for line in lg.lines]

    def stored_state(self, job):
        with open(os.path.join(self.job_dir(job), "state.json")) as f:
            return json.load(f)

    def job_ids(self):
        """The jobs stored, in order; not the folder of a job being made
        (the store makes it under another name and renames it)."""
        d = os.path.join(self.state, "jobs")
        names = os.listdir(d) if os.path.isdir(d) else []
        return sorted(n for n in names if re.fullmatch(r"j[0-9]+", n))

    def reported_state(self, job):
        """The state quald reports the job in (list), or None when it does
        not answer or does not list it."""
        r = self.ctl("list", "--json")
        if r.returncode != 0:
            return None
        return next((j["state"] for j in json.loads(r.stdout)["jobs"] if j["job"] == job),
                    None)

    def wait_job_state(self, job, states, timeout=JOB_S):
        """The job's state file in one of states, and quald reporting it so:
        the file is on disk a moment before quald's writer has finished with
        it (a directory sync), and quald reports an ended job as ended only
        from then on, its verdict line written (daemon/jobs_reply.c)."""
        def ended():
            st = self.stored_state(job)
            if st["state"] not in states:
                return None
            return st if self.reported_state(job) == st["state"] else None
        return wait_until(ended, timeout, f"job {job} to reach state {'/'.join(states)}",
                          step=0.05)

    def shim_pids(self):
        """The hang shim's (compiling process, forked process), once written."""
        try:
            with open(self.pidfile) as f:
                text = f.read()
        except OSError:
            return None
        if not text.endswith("\n"):
            return None
        a, b = text.split()
        return int(a), int(b)


@contextlib.contextmanager
def serving(d):
    """Starts d; at the end stops it with SIGTERM and checks that it exited
    0. When the scenario failed, stops it all the same (SIGKILL if SIGTERM
    does not do) and lets the scenario's failure through."""
    d.start()
    try:
        yield d
    except BaseException:
        if d.proc:
            d.stop_quietly()
        raise
    if d.proc:
        d.stop()


@contextlib.contextmanager
def cleanup(fn):
    """Runs fn at the end, whatever happened."""
    try:
        yield
    finally:
        fn()


def end(p):
    """Ends a process we started, if it still runs."""
    if p is not None and p.poll() is None:
        p.kill()
        p.wait()


def communicate(p, timeout, what):
    try:
        return p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        end(p)
        raise Failure(f"{what} did not finish within {timeout:g} s")


def run_ctl(args, sock, argv, timeout):
    try:
        return subprocess.run([args.qualctl, "--socket", sock, *argv],
                              stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure(f"qualctl {' '.join(argv)} did not finish within {timeout:g} s")


class Watcher:
    """`qualctl watch --json [ARGS]` in the background; every line it prints
    is kept with the time it arrived."""

    def __init__(self, d, *argv):
        self.proc = d.spawn_ctl("watch", "--json", *argv)
        self.lines = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for raw in self.proc.stdout:
            with self.lock:
                self.lines.append((time.monotonic(), raw.rstrip("\n")))

    def texts(self, job=None):
        with self.lock:
            texts = [t for _, t in self.lines]
        return [t for t in texts if job is None or json.loads(t)["job"] == job]

    def has_verdict(self, job):
        return any(json.loads(t)["type"] == "verdict" for t in self.texts(job))

    def stop(self):
        """Ends the watch (SIGTERM: `qualctl watch` then exits 0); returns
        its exit status and stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.wait_exit()

    def wait_exit(self):
        try:
            rc = self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Failure("qualctl watch did not end within 10 s")
        self.thread.join(5)
        return rc, self.proc.stderr.read()


def ready_watcher(d, args):
    """A watcher that is surely registered with quald: a watch sees only the
    lines that come after its request, so a probe job is submitted until the
    watcher has seen one's verdict line. Returns (watcher, probe job ids)."""
    w = Watcher(d)
    probes = []
    for _ in range(5):
        r = d.ctl("submit", args.nvrtc, args.nvrtc, "--case", FAST, "--compile-only",
                  "--json")
        check(r.returncode == 0, f"probe job: exit {r.returncode}: {r.stderr}")
        job = json.loads(r.stdout.splitlines()[0])["job"]
        probes.append(job)
        try:
            wait_until(lambda: w.has_verdict(job), 5, "the watcher to see a probe job")
            return w, probes
        except Failure:
            continue
    raise Failure("qualctl watch saw none of five probe jobs")


# ---- checking lines -------------------------------------------------------

_validator = None


def schema_check(text, where):
    """One line: JSON, valid under docs/schema/lines.schema.json."""
    global _validator
    if _validator is None:
        with open(SCHEMA) as f:
            _validator = jsonschema.Draft202012Validator(
                json.load(f), format_checker=jsonschema.FormatChecker())
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise Failure(f"{where}: not json: {e}: {text[:200]!r}")
    errors = list(_validator.iter_errors(obj))
    if errors:
        best = jsonschema.exceptions.best_match(errors)
        raise Failure(f"{where}: schema: {best.message} at {list(best.absolute_path)}: "
                      f"{text[:300]}")
    return obj


def check_job_lines(texts, job, where, verdict=None):
    """A job's whole stream: every line valid, carrying job JOB and seq 0,
    1, 2, ... without gaps, exactly one verdict line and it is the last.
    Returns the parsed lines."""
    check(texts, f"{where}: no lines of job {job}")
    objs = [schema_check(t, f"{where} line {i + 1}") for i, t in enumerate(texts)]
    for i, o in enumerate(objs):
        check(o.get("job") == job, f"{where} line {i + 1}: job {o.get('job')!r}, expected {job}")
        check(o.get("seq") == i, f"{where} line {i + 1}: seq {o.get('seq')!r}, expected {i} "
              f"(seq must run 0, 1, 2, ... without gaps)")
    types = [o["type"] for o in objs]
    check(types.count("verdict") == 1 and types[-1] == "verdict",
          f"{where}: job {job} must end with exactly one verdict line; types: {types}")
    if verdict is not None:
        check(objs[-1]["verdict"] == verdict,
              f"{where}: job {job}: verdict {objs[-1]['verdict']}, expected {verdict}: {texts[-1]}")
    return objs


def validate_stream(root, name, texts, *opts):
    """validate_lines.py on a stream (a run's lines) with its --expect options."""
    path = os.path.join(root, name + ".jsonl")
    with open(path, "w") as f:
        f.write("".join(t + "\n" for t in texts))
    r = subprocess.run([sys.executable, VALIDATE, SCHEMA, path, *opts],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"validate_lines.py {name} {' '.join(opts)}: "
          f"{r.stdout}{r.stderr}")


def submit_job_id(r):
    """The job id of `qualctl submit --json` output (its first line's)."""
    check(r.stdout, f"submit printed nothing: exit {r.returncode}: {r.stderr}")
    return json.loads(r.stdout.splitlines()[0])["job"]


def check_tmp_empty(d):
    left = os.listdir(d.tmp)
    check(not left, f"the workers left compile folders in $TMPDIR: {left}")


# ---- scenarios --------------------------------------------------------------

def scenario_full(args, root):
    """A compile-only qualification of nvrtc against nvrtc.alt, all the built-in cases:
    exit 0, every line valid with job and seq, verdict not_timed; the plain
    output ends with the summary table; show --json gives the same lines."""
    with serving(Quald(args, root)) as d:
        r = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--compile-only", "--json")
        check(r.returncode == 0, f"submit --json: exit {r.returncode}, expected 0: {r.stderr}")
        check(r.stderr == "", f"submit --json wrote to stderr: {r.stderr}")
        texts = r.stdout.splitlines()
        job = submit_job_id(r)
        objs = check_job_lines(texts, job, "submit --json", verdict="not_timed")
        validate_stream(root, "full", texts, "--expect-verdict", "not_timed",
                        "--expect-types", "start,case,case_verdict",
                        "--expect-case-verdict", "*=not_timed")
        cases = [o["case"] for o in objs if o["type"] == "case_verdict"]
        check(len(cases) == BUILTIN_CASES and len(set(cases)) == BUILTIN_CASES,
              f"expected {BUILTIN_CASES} case verdicts, got {cases}")
        start = objs[0]
        check(start["type"] == "start" and start["baseline"]["path"] == args.nvrtc and
              start["candidate"]["path"] == args.nvrtc_alt,
              f"the start line does not name the two libraries: {texts[0][:300]}")
        # The stored log is what was streamed, byte for byte.
        check(d.stored_lines(job) == texts, "the stored log differs from what submit streamed")
        s = d.ctl("show", job, "--json")
        check(s.returncode == 0 and s.stdout.splitlines() == texts,
              f"show {job} --json differs from the submit's lines (exit {s.returncode})")

        # Plain: progress lines, then the table and the verdict.
        p = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--compile-only")
        check(p.returncode == 0, f"plain submit: exit {p.returncode}, expected 0: {p.stderr}")
        out = p.stdout.splitlines()
        check(re.fullmatch(r"job j\d{6,}: queued, position 0", out[0]),
              f"plain submit's first line: {out[0]!r}")
        check(out[1].startswith(f"start: {BUILTIN_CASES} cases, not timed"),
              f"plain submit's start line: {out[1]!r}")
        head = [i for i, l in enumerate(out)
                if re.match(r"case\s+verdict\s+code\s+baseline us\s+candidate us\s+change", l)]
        check(len(head) == 1, f"no summary table header in the plain output:\n{p.stdout}")
        rows = out[head[0] + 1:head[0] + 1 + BUILTIN_CASES]
        # Compile-only: no times, no change; the code column says what
        # differs (identical, or the static differences).
        for c, row in zip(cases, rows):
            check(re.match(rf"{re.escape(c)}\s+not_timed\s+(identical|.*[-+]\d+.*)\s+-\s+-\s+-\s+-\s+-$",
                           row), f"summary row for {c}: {row!r}")
        check(out[head[0] + 1 + BUILTIN_CASES] == "geomean: no timed case",
              f"no geomean line after the rows:\n{p.stdout}")
        check(f"verdict: not_timed ({BUILTIN_CASES} not_timed)" in out[head[0] + 1 + BUILTIN_CASES:],
              f"no run verdict line after the table:\n{p.stdout}")
        # A job's state is written when its worker exits, just after its
        # verdict line went out: wait for both, then compare.
        def both_done():
            jobs = d.ctl_json("list")["jobs"]
            return jobs if all(j["state"] == "done" for j in jobs) else None
        jobs = wait_until(both_done, 15, "both jobs to be done")
        check([(j["state"], j["verdict"]) for j in jobs] == [("done", "not_timed")] * 2,
              f"list: {jobs}")
    check_tmp_empty(d)


def scenario_concurrent(args, root):
    """Two qualctl submits started together on one slot: both exit 0, and
    their workers never run at the same time."""
    seen, most = set(), [0]
    stop = threading.Event()

    def sample(pid):
        # Every 5 ms: quald's qual-run children (its workers).
        while not stop.is_set():
            now = children(pid, "qual-run")
            seen.update(now)
            most[0] = max(most[0], len(now))
            time.sleep(0.005)
    with serving(Quald(args, root, slots=1)) as d:
        t = threading.Thread(target=sample, args=(d.pid(),), daemon=True)
        t.start()
        argv = ("submit", args.nvrtc, args.nvrtc_alt, "--case", FAST, "--case", SECOND,
                "--compile-only", "--json")
        procs = [d.spawn_ctl(*argv), d.spawn_ctl(*argv)]
        outs = []
        for p in procs:
            out, err = communicate(p, 2 * JOB_S, "a concurrent submit")
            check(p.returncode == 0, f"concurrent submit: exit {p.returncode}, expected 0: {err}")
            outs.append(out.splitlines())
        stop.set()
        t.join()
        jobs = [json.loads(o[0])["job"] for o in outs]
        check(jobs[0] != jobs[1], f"both submits got job {jobs[0]}")
        for job, texts in zip(jobs, outs):
            check_job_lines(texts, job, f"submit of {job}", verdict="not_timed")
            validate_stream(root, job, texts, "--expect-verdict", "not_timed")
        check(len(seen) == 2, f"expected two workers, saw {len(seen)}: {sorted(seen)}")
        check(most[0] == 1, f"{most[0]} workers ran at once on one slot")
        # One after the other in the stored state too (times in seconds).
        # (A worker's verdict line is relayed once written; the state
        # after it follows from the writer thread a moment later.)
        # Sorted by start, then end: within one second both may read the same.
        st = sorted((d.wait_job_state(j, ("done",), timeout=5) for j in jobs),
                    key=lambda s: (s["started"], s["finished"]))
        check(all(s["state"] == "done" and s["slot"] == 0 for s in st), f"states: {st}")
        check(st[0]["finished"] <= st[1]["started"],
              f"the jobs overlap: {st[0]} and {st[1]}")
    check_tmp_empty(d)


def scenario_watch(args, root):
    """A watcher started before two concurrent submits sees both jobs' lines,
    each job's seq in order without gaps, each ending with its verdict, the
    second job's after the first's verdict; the same lines the submits got."""
    w = None
    with serving(Quald(args, root, slots=1)) as d:
        w, probes = ready_watcher(d, args)
        argv = ("submit", args.nvrtc, args.nvrtc_alt, "--case", FAST, "--case", SECOND,
                "--compile-only", "--json")
        procs = [d.spawn_ctl(*argv), d.spawn_ctl(*argv)]
        outs = {}
        for p in procs:
            out, err = communicate(p, 2 * JOB_S, "a concurrent submit")
            check(p.returncode == 0, f"submit: exit {p.returncode}, expected 0: {err}")
            lines = out.splitlines()
            outs[json.loads(lines[0])["job"]] = lines
        jobs = sorted(outs)
        wait_until(lambda: all(w.has_verdict(j) for j in jobs), 10,
                   "the watcher to see both verdicts")
        rc, err = w.stop()
        check(rc == 0, f"qualctl watch ended with {rc} on SIGTERM, expected 0: {err}")
        texts = w.texts()
        for t in texts:
            schema_check(t, "watcher")
        order = [json.loads(t)["job"] for t in texts]
        for job in jobs:
            mine = w.texts(job)
            check_job_lines(mine, job, f"watcher, job {job}", verdict="not_timed")
            check(mine == outs[job], f"the watcher's lines of {job} differ from its submit's")
            check(mine == d.stored_lines(job), f"the watcher's lines of {job} differ from "
                  f"its stored log")
        # One slot: the later job's lines all come after the earlier one's.
        first, second = jobs
        last_first = max(i for i, j in enumerate(order) if j == first)
        first_second = min(i for i, j in enumerate(order) if j == second)
        check(last_first < first_second,
              f"the lines of {first} and {second} interleave in the watch: {order}")
        check(set(order) <= set(jobs) | set(probes),
              f"the watcher saw jobs {sorted(set(order))}, not only {probes} and {jobs}")
    check_tmp_empty(d)


def scenario_cancel(args, root):
    """Cancel a queued job (its follower exits 3) and a running one (its
    compile hangs); both end with a cancelled verdict line; then the next job
    passes."""
    follower = None
    with serving(Quald(args, root, slots=1)) as d, cleanup(lambda: end(follower)):
        # Surely running: the hang shim's compile never returns and the
        # compile time limit is the engine's default, 120 s.
        r = d.ctl("submit", args.nvrtc, args.shim("hang"), "--case", FAST,
                  "--compile-only", "--no-follow")
        check(r.returncode == 0, f"submit --no-follow: exit {r.returncode}: {r.stderr}")
        running = r.stdout.strip()
        check(re.fullmatch(r"j\d{6,}", running), f"submit --no-follow printed {r.stdout!r}")
        follower = d.spawn_ctl("submit", args.nvrtc, args.nvrtc_alt, "--case", FAST,
                               "--compile-only", "--json")

        def two_jobs():
            st = d.ctl_json("status")
            return st if st["running"] == [running] and len(st["queued"]) == 1 else None
        status = wait_until(two_jobs, 10, "one job running and one queued")
        queued = status["queued"][0]
        wait_until(d.shim_pids, 10, "the hanging compile to start")
        compiling, _ = d.shim_pids()
        check(alive(compiling), "the hanging compile is not running")
        check(d.stored_state(running)["state"] == "running", "the hang job is not running")

        # The queued job: cancelled at once; its follower exits 3.
        c = d.ctl_json("cancel", queued)
        check(c.get("type") == "reply" and c.get("job") == queued and
              c.get("state") == "cancelled", f"cancel {queued}: {c}")
        out, err = follower.communicate(timeout=10)
        check(follower.returncode == 3, f"the follower of the cancelled queued job exited "
              f"{follower.returncode}, expected 3: {err}")
        follower = None
        check_job_lines(out.splitlines(), queued, "follower", verdict="cancelled")
        check_job_lines(d.stored_lines(queued), queued, "stored log", verdict="cancelled")
        check(d.stored_state(queued)["state"] == "cancelled", "queued job's state")

        # The running job: its worker is stopped, its log ends cancelled.
        worker = children(d.pid(), "qual-run")
        check(len(worker) == 1, f"expected one worker, found {worker}")
        t0 = time.monotonic()
        c = d.ctl("cancel", running)
        check(c.returncode == 0, f"cancel {running}: exit {c.returncode}: {c.stderr}")
        st = d.wait_job_state(running, ("cancelled", "done", "interrupted"), 15)
        check(st["state"] == "cancelled" and st["verdict"] == "cancelled",
              f"the running job after cancel: {st}")
        log(f"running job cancelled in {time.monotonic() - t0:.2f} s")
        stored = d.stored_lines(running)
        objs = check_job_lines(stored, running, "stored log", verdict="cancelled")
        check(objs[0]["type"] == "start", f"the cancelled job's log begins with {stored[0]}")
        check("message" in objs[-1], f"the cancelled verdict has no message: {stored[-1]}")
        wait_until(lambda: not alive(worker[0]) and not alive(compiling), 10,
                   "the cancelled job's worker and compile child to end")
        s = d.ctl("show", running)
        # show exits with the job's verdict status: cancelled is 3.
        check(s.returncode == 3 and "cancelled" in s.stdout.splitlines()[0],
              f"show {running}: exit {s.returncode}: {s.stdout[:300]}")
        check(any(l.startswith("verdict: cancelled") for l in s.stdout.splitlines()),
              f"show {running} does not give the cancelled verdict:\n{s.stdout}")
        again = d.ctl("cancel", running)
        check(again.returncode == 4, f"a second cancel of {running}: exit "
              f"{again.returncode}, expected 4: {again.stderr}")
        unknown = d.ctl("cancel", "j999999")
        check(unknown.returncode == 4 and "j999999" in unknown.stderr,
              f"cancel of an unknown job: exit {unknown.returncode}: {unknown.stderr}")

        # The slot is free again: the next job runs and passes.
        n = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--case", FAST, "--compile-only",
                  "--json")
        check(n.returncode == 0, f"the job after the cancels: exit {n.returncode}: {n.stderr}")
        check_job_lines(n.stdout.splitlines(), submit_job_id(n), "next job",
                        verdict="not_timed")
        # The verdict line reaches the client just before the worker exits
        # and the job's state is written: wait for that, then list.
        d.wait_job_state(submit_job_id(n), ("done",), 15)
        states = {j["job"]: j["state"] for j in d.ctl_json("list")["jobs"]}
        check(states == {running: "cancelled", queued: "cancelled",
                         submit_job_id(n): "done"}, f"list: {states}")
    kill_shim_leftover(d)
    check_tmp_empty(d)


def kill_shim_leftover(d):
    """The process shim_hang forks (it is the compiler's, not the engine's):
    nothing of ours kills it once its compile child is gone; end it here."""
    pids = d.shim_pids()
    if pids and alive(pids[1]):
        os.kill(pids[1], signal.SIGKILL)


def scenario_sigkill(args, root):
    """SIGKILL quald while one job runs mid-stream and another hangs in a
    compile, with two jobs queued; then restart it on the same state: the two
    running jobs end interrupted with their earlier lines intact, the queued
    ones run to completion, every line the watcher had is in the logs, and no
    worker or compile child outlived the daemon."""
    d = Quald(args, root, slots=2)
    w = None

    def tidy():
        # Whatever happened: no watcher, no daemon, no shim process left.
        if w:
            end(w.proc)
        if d.proc:
            d.kill()
        kill_shim_leftover(d)
    with cleanup(tidy):
        d.start()
        w, probes = ready_watcher(d, args)
        # The hanging job: a compile that never returns.
        r = d.ctl("submit", args.nvrtc, args.shim("hang"), "--case", FAST,
                  "--compile-only", "--no-follow")
        check(r.returncode == 0, f"submit hang: exit {r.returncode}: {r.stderr}")
        hang = r.stdout.strip()
        wait_until(d.shim_pids, 10, "the hanging compile to start")
        # The streaming job: all the built-in cases, killed once some are through.
        r = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--compile-only", "--no-follow")
        check(r.returncode == 0, f"submit full: exit {r.returncode}: {r.stderr}")
        stream = r.stdout.strip()
        queued = []
        for case in (FAST, SECOND):
            r = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--case", case,
                      "--compile-only", "--no-follow")
            check(r.returncode == 0, f"submit queued: exit {r.returncode}: {r.stderr}")
            queued.append(r.stdout.strip())
        st = d.ctl_json("status")
        check(sorted(st["running"]) == sorted([hang, stream]) and st["queued"] == queued,
              f"status before the kill: {st}")

        # A compile-only run writes its start line, then compiles every case
        # (26 compiles: seconds), then writes its case lines, built once
        # beside the compiles, all at once: killed while it compiles (a
        # compile child of its own beside the hanging one), it is mid-stream.
        def compiling():
            started = any(json.loads(t)["type"] == "start" for t in w.texts(stream))
            compiles = [c for wk in children(d.pid(), "qual-run")
                        for c in children(wk, "qual-compile")]
            return started and len(compiles) >= 2
        wait_until(compiling, 20, "the streaming job's start line and its compiles")
        workers = children(d.pid(), "qual-run")
        check(len(workers) == 2, f"expected two workers, found {workers}")
        compiling, forked = d.shim_pids()
        check(alive(compiling), "the hanging compile is not running")
        compile_children = [c for wk in workers for c in children(wk, "qual-compile")]

        d.kill()
        t_kill = time.monotonic()
        acknowledged = w.texts()
        # quald went away: the watch ends by itself, with 5.
        rc, err = w.wait_exit()
        w = None
        check(rc == 5, f"qualctl watch exited {rc} when quald died, expected 5: {err}")
        streamed = [t for t in acknowledged if json.loads(t)["job"] == stream]
        log(f"killed quald: the watcher had {len(acknowledged)} lines "
            f"({len(streamed)} of {stream})")
        check(json.loads(streamed[-1])["type"] != "verdict",
              f"{stream} had ended before the kill: the scenario needs a job mid-stream")
        # The workers and their compile children die with the daemon
        # (PR_SET_PDEATHSIG), within a moment.
        gone = workers + [compiling] + compile_children
        wait_until(lambda: not any(alive(p) for p in gone), 5,
                   f"workers and compile children {gone} to die with quald")
        log(f"workers and compile children gone {time.monotonic() - t_kill:.2f} s after "
            f"the kill; the hang shim's own forked process {forked} is "
            f"{'still running' if alive(forked) else 'gone'}")
        kill_shim_leftover(d)

        # Restart on the same socket path and state.
        with serving(Quald(args, root, slots=2)) as d2:
            for job in queued:
                d2.wait_job_state(job, ("done", "cancelled", "interrupted"))
            listed = {j["job"]: (j["state"], j["verdict"]) for j in d2.ctl_json("list")["jobs"]}
            want = {p: ("done", "not_timed") for p in probes}
            want.update({hang: ("interrupted", "interrupted"),
                         stream: ("interrupted", "interrupted")})
            want.update({q: ("done", "not_timed") for q in queued})
            check(listed == want, f"jobs after the restart: {listed}, expected {want}")
            for q in queued:
                texts = d2.stored_lines(q)
                check_job_lines(texts, q, f"stored log of {q}", verdict="not_timed")
                validate_stream(root, q, texts, "--expect-verdict", "not_timed")
            for job in (hang, stream):
                stored = d2.stored_lines(job)
                objs = check_job_lines(stored, job, f"stored log of {job}",
                                       verdict="interrupted")
                seen = [t for t in acknowledged if json.loads(t)["job"] == job]
                # The streaming job may have logged a line the watcher had
                # not yet received; the hanging one was idle at the kill.
                kept = stored[:len(seen)] if job == stream else stored[:-1]
                check(seen and kept == seen,
                      f"{job}: the lines the watcher had are not the stored log's lines "
                      f"before its verdict:\nwatcher: {seen}\nstored: {stored}")
                check(objs[-1].get("message"), f"{job}: interrupted verdict has no message")
                validate_stream(root, job, stored, "--expect-verdict", "interrupted")
            # Nothing the daemon acknowledged is missing.
            stored_all = set()
            for job in d2.job_ids():
                stored_all.update(d2.stored_lines(job))
            missing = [t for t in acknowledged if t not in stored_all]
            check(not missing, f"lines the watcher received are missing from the logs: "
                  f"{missing[:3]}")
            s = d2.ctl("show", hang)
            # show exits with the job's verdict status: interrupted is 3.
            check(s.returncode == 3 and "interrupted" in s.stdout,
                  f"show {hang}: exit {s.returncode}: {s.stdout[:300]}")


def check_next_job(args, d, what):
    """A plain compile-only job on d ends not_timed: quald is whole again
    after what came before."""
    r = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--case", FAST, "--compile-only")
    check(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stderr}")
    check("verdict: not_timed (1 not_timed)" in r.stdout.splitlines(),
          f"{what}:\n{r.stdout}")


def scenario_shim_crash(args, root):
    """A candidate whose compile crashes: the job's verdict is fail (exit 2),
    naming SIGSEGV; as the baseline it is the machine's error (exit 3); the
    next job passes."""
    with serving(Quald(args, root)) as d:
        r = d.ctl("submit", args.nvrtc, args.shim("crash"), "--case", FAST,
                  "--compile-only", "--json")
        check(r.returncode == 2, f"crash shim as candidate: exit {r.returncode}, "
              f"expected 2: {r.stderr}")
        texts = r.stdout.splitlines()
        check_job_lines(texts, submit_job_id(r), "crash candidate", verdict="fail")
        validate_stream(root, "crash", texts, "--expect-verdict", "fail",
                        "--expect-error-substring", "SIGSEGV",
                        "--expect-case-verdict", "*=fail")
        r = d.ctl("submit", args.shim("crash"), args.nvrtc, "--case", FAST,
                  "--compile-only", "--json")
        check(r.returncode == 3, f"crash shim as baseline: exit {r.returncode}, "
              f"expected 3: {r.stderr}")
        check_job_lines(r.stdout.splitlines(), submit_job_id(r), "crash baseline",
                        verdict="error")
        check_next_job(args, d, "the job after the crashes")
    check_tmp_empty(d)


def scenario_shim_hang(args, root):
    """A candidate whose compile hangs: with a 2 s compile time limit the job
    ends fail (exit 2) within seconds, its compile child killed; the next job
    passes."""
    with serving(Quald(args, root)) as d:
        t0 = time.monotonic()
        r = d.ctl("submit", args.nvrtc, args.shim("hang"), "--case", FAST,
                  "--compile-only", "--compile-timeout", "2", "--json")
        took = time.monotonic() - t0
        check(r.returncode == 2, f"hang shim as candidate: exit {r.returncode}, "
              f"expected 2: {r.stderr}")
        texts = r.stdout.splitlines()
        job = submit_job_id(r)
        check_job_lines(texts, job, "hang candidate", verdict="fail")
        validate_stream(root, "hang", texts, "--expect-verdict", "fail",
                        "--expect-error-substring", "did not finish within 2 s",
                        "--expect-case-verdict", "*=fail")
        start = json.loads(texts[0])
        check(start["settings"]["compile_timeout_s"] == 2,
              f"the worker did not get the compile time limit: {start['settings']}")
        check(took < 20, f"the hanging job took {took:.1f} s with a 2 s compile limit")
        log(f"hanging candidate: fail after {took:.2f} s")
        pids = d.shim_pids()
        check(pids, "the hang shim never ran its compile")
        wait_until(lambda: not alive(pids[0]) and not alive(pids[1]), 5,
                   "the hung compile's process group to be killed")
        check_next_job(args, d, "the job after the hang")
    check_tmp_empty(d)


def scenario_bad_requests(args, root):
    """Each bad request, sent raw on a connection of its own, gets exactly one
    refused line naming the problem (with the request's id), the connection
    answers its next request, and a fresh `qualctl status` works; the file
    checks also through qualctl (exit 4, quald's message). No job is made."""
    d = Quald(args, root)
    nv = args.nvrtc
    text_file = os.path.join(HERE, "..", "..", "README.md")

    def submit(**kw):
        return json.dumps(dict({"op": "submit", "id": 7, "baseline": nv, "candidate": nv}, **kw))
    big = '{"op":"status","id":7,"pad":"' + "x" * (2 << 20) + '"}'
    cases = [
        ("malformed json", '{"op":"status","id":7', None, "malformed json at column"),
        ("not an object", '[1,2]', None, "a request must be a json object"),
        ("2 MiB line", big, None, "request line over 1048576 bytes"),
        ("unknown op", '{"op":"frobnicate","id":7}', 7, "unknown op 'frobnicate'"),
        ("missing op", '{"id":7}', 7, "missing 'op'"),
        ("op not a string", '{"op":3,"id":7}', 7, "'op' must be a string"),
        ("missing baseline", '{"op":"submit","id":7,"candidate":"%s"}' % nv, 7,
         "missing 'baseline'"),
        ("missing candidate", '{"op":"submit","id":7,"baseline":"%s"}' % nv, 7,
         "missing 'candidate'"),
        ("missing job", '{"op":"show","id":7}', 7, "missing 'job'"),
        ("baseline not a string", submit(baseline=1), 7, "'baseline' must be a string"),
        ("pairs a string", submit(pairs="30"), 7, "'pairs' must be an integer"),
        ("pairs 5", submit(pairs=5), 7, "'pairs' must be an integer >= 30, got 5"),
        ("pairs a real", submit(pairs=30.5), 7, "'pairs' must be an integer"),
        ("follow not a bool", submit(follow=1), 7, "'follow'"),
        ("cases not a list", submit(cases="gemm"), 7, "'cases'"),
        ("unknown case", submit(cases=["no_such_case-1"]), 7, "unknown case 'no_such_case-1'"),
        ("unknown field", submit(pair=30), 7, "unknown field 'pair'"),
        ("compile_timeout too small", submit(compile_timeout=0.01), 7,
         "'compile_timeout' must be a number of seconds in [0.1, 86400], got 0.01"),
        ("compile_timeout a string", submit(compile_timeout="2"), 7, "'compile_timeout'"),
        ("mode unknown", submit(mode="WGP"), 7, "'mode' must be default, cu or wgp, got 'WGP'"),
        ("job not a string", '{"op":"cancel","id":7,"job":5}', 7, "'job' must be a string"),
        ("unknown job", '{"op":"show","id":7,"job":"j999999"}', 7, "no job 'j999999'"),
        ("missing path", submit(candidate="/nonexistent/libnvrtc.so"), 7,
         "cannot load compiler '/nonexistent/libnvrtc.so': no such file"),
        ("directory", submit(candidate=os.path.dirname(nv)), 7,
         f"cannot load compiler '{os.path.dirname(nv)}': is a directory"),
        ("text file", submit(candidate=text_file), 7, "not an ELF shared object"),
        ("neither abi", submit(candidate=args.shim("noabi")), 7,
         "no nvrtc or hiprtc entry points"),
    ]
    if args.hiprtc and os.path.exists(args.hiprtc):
        cases.append(("abi mismatch", submit(candidate=args.hiprtc), 7,
                      "baseline is nvrtc but candidate is hiprtc: both must use one abi"))
    with serving(d):
        for name, line, want_id, want in cases:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(40)
                s.connect(d.sock)
                f = s.makefile("rb")
                s.sendall(line.encode() + b"\n")
                reply = json.loads(f.readline())
                check(reply.get("type") == "refused",
                      f"{name}: expected a refused line, got {reply}")
                check(want in reply.get("message", ""),
                      f"{name}: refusal {reply.get('message')!r} does not say {want!r}")
                check("id" in reply and reply["id"] == want_id,
                      f"{name}: refusal id {reply.get('id')!r}, expected {want_id!r}")
                # The connection lives on.
                s.sendall(b'{"op":"status","id":"next"}\n')
                nxt = json.loads(f.readline())
                check(nxt.get("type") == "reply" and nxt.get("op") == "status" and
                      nxt.get("id") == "next",
                      f"{name}: the next request on the connection got {nxt}")
            r = d.ctl("status")
            check(r.returncode == 0, f"after '{name}': qualctl status exited {r.returncode}: "
                  f"{r.stderr}")
            log(f"ok: {name}: {reply['message'][:100]}")

        # The same refusals through qualctl: exit 4 and quald's message.
        ctl_cases = [
            ("missing path", [nv, "/nonexistent/libnvrtc.so"], "no such file"),
            ("directory", [nv, os.path.dirname(nv)], "is a directory"),
            ("text file", [nv, text_file], "not an ELF shared object"),
            ("neither abi", [nv, args.shim("noabi")], "no nvrtc or hiprtc entry points"),
            ("pairs 5", [nv, nv, "--pairs", "5"], "'pairs' must be an integer >= 30, got 5"),
        ]
        for name, argv, want in ctl_cases:
            r = d.ctl("submit", *argv, "--compile-only")
            check(r.returncode == 4, f"qualctl submit, {name}: exit {r.returncode}, expected 4: "
                  f"{r.stderr}")
            check(want in r.stderr, f"qualctl submit, {name}: {r.stderr!r} does not say {want!r}")
            check(r.stdout == "", f"qualctl submit, {name}: printed {r.stdout!r}")
            check(d.ctl("status").returncode == 0, f"after qualctl '{name}': status fails")
            log(f"ok: qualctl {name}: {r.stderr.strip()[:100]}")
        check(d.ctl_json("list")["jobs"] == [] and d.job_ids() == [],
              f"refused requests made jobs: {d.job_ids()}")
        # Still serving real work.
        r = d.ctl("submit", nv, args.nvrtc_alt, "--case", FAST, "--compile-only")
        check(r.returncode == 0, f"a good submit after the bad ones: exit {r.returncode}: "
              f"{r.stderr}")
        # A mode reaches the worker: qual-run refuses cu for nvrtc, and
        # the job says so.
        r = d.ctl("submit", nv, args.nvrtc_alt, "--case", FAST, "--compile-only",
                  "--mode", "cu", "--json")
        check("mode 'cu' applies to hiprtc targets only" in r.stdout,
              f"a submit with --mode cu for nvrtc: exit {r.returncode}, lines {r.stdout!r}")
        log(f"ok: --mode cu for nvrtc: exit {r.returncode}")


def scenario_journal(args, root):
    """The admin's journal: one line per job event (submitted with its
    libraries, started on its slot, its verdict and how long it ran), with
    sd-daemon priority prefixes when $JOURNAL_STREAM names quald's stderr
    and without them otherwise; no line for a client that went away."""
    for journal in (True, False):
        sub = os.path.join(root, "journal" if journal else "plain")
        os.makedirs(sub)
        with serving(Quald(args, sub, slots=1, journal=journal)) as d:
            w, probes = ready_watcher(d, args)
            # The watcher goes away without a word (killed), and quald then
            # writes the next job's lines to it: an ordinary end.
            w.proc.kill()
            w.proc.wait()
            r = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--case", FAST, "--compile-only",
                      "--json")
            check(r.returncode == 0, f"submit: exit {r.returncode}: {r.stderr}")
            job = json.loads(r.stdout.splitlines()[0])["job"]
            wait_until(lambda: d.ctl_json("list")["jobs"][0]["state"] == "done", 15,
                       "the job to be done")
        text = d.log_text()
        p = "<6>" if journal else ""
        for want in (rf"{p}quald: job {job}: submitted, baseline {re.escape(json.dumps(args.nvrtc))}, "
                     rf"candidate {re.escape(json.dumps(args.nvrtc_alt))}, queue position 0",
                     rf"{p}quald: job {job}: started on slot 0 \(compile only\)",
                     rf"{p}quald: job {job}: verdict not_timed after \d+\.\d s on slot 0"):
            check(re.search("^" + want + "$", text, re.M),
                  f"journal={journal}: no line {want!r} in quald's log:\n{text}")
        check(not re.search(r"closed: (broken pipe|connection reset)", text),
              f"journal={journal}: a line for a client that went away:\n{text}")
        if not journal:
            check(not re.search(r"^<\d>", text, re.M),
                  f"priority prefixes with stderr not the journal:\n{text}")
        log(f"ok: journal={journal}: the job's three lines, none for the client that left")


def raw_request(d, request):
    """One request (a dict) on a connection of its own: its first reply line."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(JOB_S)
        s.connect(d.sock)
        f = s.makefile("rb")
        s.sendall(json.dumps(request).encode() + b"\n")
        return json.loads(f.readline())


# The three jobs of the history scenario: a nightly series on main, and one
# on another branch whose url needs CSV quoting.
SERIES = [
    ({"branch": "main", "build": "n1", "commit": "aaa"}, (FAST, SECOND)),
    ({"branch": "main", "build": "n2", "commit": "bbb"}, (FAST,)),
    ({"branch": "dev", "build": "n3", "url": 'https://ci/x?a=1,b="2"'}, (FAST, SECOND)),
]


def submit_series(args, d):
    """Submits SERIES one job after the other (each followed to its
    verdict); returns their ids."""
    jobs = []
    for labels, cases in SERIES:
        argv = ["submit", args.nvrtc, args.nvrtc_alt, "--compile-only", "--json"]
        for c in cases:
            argv += ["--case", c]
        for k, v in labels.items():
            argv += ["--label", f"{k}={v}"]
        r = d.ctl(*argv)
        check(r.returncode == 0, f"submit with labels: exit {r.returncode}: {r.stderr}")
        jobs.append(submit_job_id(r))
        # Each to its end before the next is submitted: under --keep-jobs
        # a job waited for only after the later ones could already be
        # pruned, its folder gone.
        d.wait_job_state(jobs[-1], ("done",), timeout=10)
    return jobs


def scenario_history(args, root):
    """Labels round-trip through list, show and history; history filters by
    label and by case, oldest first, newest `limit`; export --csv parses
    with its label columns, export --lnt has LNT's report shape."""
    import csv
    import io
    with serving(Quald(args, root, slots=1)) as d:
        # A key twice is qualctl's usage error; a bad key is quald's refusal.
        r = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--compile-only",
                  "--label", "a=1", "--label", "a=2")
        check(r.returncode == 4 and "--label 'a' is given twice" in r.stderr,
              f"a repeated --label: exit {r.returncode}: {r.stderr}")
        r = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--compile-only", "--label", "a b=1")
        check(r.returncode == 4 and "'labels' key 'a b' must be 1 to 64" in r.stderr,
              f"a bad label key: exit {r.returncode}: {r.stderr}")
        r = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--label", "novalue")
        check(r.returncode == 4 and "--label must be KEY=VALUE" in r.stderr,
              f"--label without '=': exit {r.returncode}: {r.stderr}")
        jobs = submit_series(args, d)
        check(len(set(jobs)) == 3, f"job ids: {jobs}")

        # list: labels and the settings summary, newest first.
        listed = d.ctl_json("list")["jobs"]
        check([j["job"] for j in listed] == jobs[::-1], f"list order: {listed}")
        for j, (labels, cases) in zip(listed[::-1], SERIES):
            check(j["labels"] == labels, f"list labels of {j['job']}: {j['labels']}")
            st = j["settings"]
            check(st["compile_only"] is True and st["pairs"] == 60 and
                  st["cases"] == list(cases), f"list settings of {j['job']}: {st}")
        plain = d.ctl("list")
        check(plain.returncode == 0 and "branch=main build=n1 commit=aaa" in plain.stdout and
              "compile-only" in plain.stdout and "labels" in plain.stdout.splitlines()[0],
              f"plain list:\n{plain.stdout}")

        # show: the reply carries the labels; plain show prints them.
        rep = raw_request(d, {"op": "show", "job": jobs[0]})
        check(rep.get("labels") == SERIES[0][0], f"show reply: {rep}")
        sh = d.ctl("show", jobs[0])
        check("labels: branch=main build=n1 commit=aaa" in sh.stdout, f"plain show:\n{sh.stdout}")

        # history: oldest first, every job, each case's entry.
        h = d.ctl_json("history")
        check(h["type"] == "reply" and h["op"] == "history", f"history reply: {h}")
        check([j["job"] for j in h["jobs"]] == jobs, f"history order: {h['jobs']}")
        for j, (labels, cases) in zip(h["jobs"], SERIES):
            check(j["labels"] == labels and j["state"] == "done" and
                  j["verdict"] == "not_timed" and j["finished"] and j["submitted"],
                  f"history job: {j}")
            check(j["baseline"]["path"] == args.nvrtc and
                  re.fullmatch(r"[0-9a-f]{64}", j["baseline"]["sha256"]) and
                  j["candidate"]["path"] == args.nvrtc_alt, f"history arms: {j}")
            check([c["case"] for c in j["cases"]] == list(cases), f"history cases: {j}")
            for c in j["cases"]:
                check(c["verdict"] == "not_timed" and c["timed"] is False and
                      c["ratio"] is None and c["baseline_ns"] is None and
                      c["candidate_ns"] is None and "ci_low" in c and "ci_high" in c and
                      "p_holm" in c, f"history case entry: {c}")
        # by label (every given one must match), by case, and the limit.
        h = d.ctl_json("history", "--label", "branch=main")
        check([j["job"] for j in h["jobs"]] == jobs[:2], f"history --label branch=main: {h}")
        h = d.ctl_json("history", "--label", "branch=main", "--label", "build=n2")
        check([j["job"] for j in h["jobs"]] == [jobs[1]], f"two labels: {h}")
        h = d.ctl_json("history", "--label", "branch=nope")
        check(h["jobs"] == [], f"no match: {h}")
        h = d.ctl_json("history", "--case", SECOND)
        check([j["job"] for j in h["jobs"]] == [jobs[0], jobs[2]] and
              all([c["case"] for c in j["cases"]] == [SECOND] for j in h["jobs"]),
              f"history --case {SECOND}: {h}")
        h = d.ctl_json("history", "--limit", "2")
        check([j["job"] for j in h["jobs"]] == jobs[1:], f"history --limit 2: {h}")
        t = d.ctl("history", "--case", FAST)
        check(t.returncode == 0 and t.stdout.startswith(f"case {FAST}\n") and
              all(j in t.stdout for j in jobs) and "build=n3" in t.stdout and
              "not_timed" in t.stdout, f"plain history:\n{t.stdout}")

        # export --csv: one row per job and case, a label column per key.
        e = d.ctl("export", "--csv")
        check(e.returncode == 0, f"export --csv: exit {e.returncode}: {e.stderr}")
        rows = list(csv.reader(io.StringIO(e.stdout, newline="")))
        head, body = rows[0], rows[1:]
        check(head[-4:] == ["label:branch", "label:build", "label:commit", "label:url"],
              f"csv header: {head}")
        check(len(body) == 5 and all(len(r) == len(head) for r in body), f"csv rows: {rows}")
        col = {name: i for i, name in enumerate(head)}
        got = [(r[col["job"]], r[col["case"]]) for r in body]
        want = [(j, c) for j, (_, cases) in zip(jobs, SERIES) for c in cases]
        check(got == want, f"csv job x case rows: {got}, expected {want}")
        check(body[-1][col["label:url"]] == SERIES[2][0]["url"] and
              body[0][col["label:url"]] == "" and body[0][col["label:commit"]] == "aaa",
              f"csv label cells: {body}")
        check(all(r[col["case_verdict"]] == "not_timed" and r[col["timed"]] == "false"
                  for r in body), f"csv case cells: {body}")
        raw = subprocess.run([args.qualctl, "--socket", d.sock, "export", "--csv"],
                             capture_output=True, timeout=JOB_S).stdout
        check(raw.count(b"\r\n") == len(rows) and raw.endswith(b"\r\n"),
              "csv rows do not end with CRLF (RFC 4180)")
        e = d.ctl("export", "--csv", "--label", "build=n2", "--case", FAST)
        rows = list(csv.reader(io.StringIO(e.stdout, newline="")))
        check(len(rows) == 2 and rows[1][0] == jobs[1], f"filtered csv: {rows}")

        # export --lnt: a report per job, LNT's format_version 2.
        e = d.ctl("export", "--lnt", "--machine", "h200-nightly")
        check(e.returncode == 0, f"export --lnt: exit {e.returncode}: {e.stderr}")
        reports = json.loads(e.stdout)
        check(isinstance(reports, list) and len(reports) == 3, f"lnt: {e.stdout[:500]}")
        for rep, job, (labels, cases) in zip(reports, jobs, SERIES):
            check(rep["format_version"] == "2" and rep["machine"] == {"name": "h200-nightly"},
                  f"lnt report head: {rep}")
            run = rep["run"]
            for k in ("start_time", "end_time"):
                check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", run[k]),
                      f"lnt {k}: {run}")
            check(all(run[k] == v for k, v in labels.items()) and run["qual_job"] == job and
                  run["llvm_project_revision"] == str(int(job[1:])), f"lnt run info: {run}")
            check([t["name"] for t in rep["tests"]] == [f"qual.{c}" for c in cases] and
                  all("execution_time" not in t for t in rep["tests"]),
                  f"lnt tests (compile-only: no time): {rep['tests']}")
        e = d.ctl("export", "--case", FAST)
        check(e.returncode == 4 and "needs --csv or --lnt" in e.stderr, f"export: {e.stderr}")
        e = d.ctl("export", "--csv", "--lnt")
        check(e.returncode == 4 and "one of --csv and --lnt" in e.stderr, f"export: {e.stderr}")


def scenario_retention(args, root):
    """quald --keep-jobs 2 after three jobs keeps the newest two; the pruned
    job is unknown to show; a new job gets a new id; a restart keeps it so."""
    d = Quald(args, root, slots=1, extra=("--keep-jobs", "2"))
    with serving(d):
        jobs = submit_series(args, d)

        def pruned():
            return d.job_ids() == jobs[1:] and \
                [j["job"] for j in d.ctl_json("list")["jobs"]] == jobs[:0:-1]
        wait_until(pruned, 10, f"job {jobs[0]} to be pruned")
        r = d.ctl("show", jobs[0])
        check(r.returncode == 4 and f"no job '{jobs[0]}'" in r.stderr,
              f"show of a pruned job: exit {r.returncode}: {r.stderr}")
        h = d.ctl_json("history")
        check([j["job"] for j in h["jobs"]] == jobs[1:], f"history after pruning: {h}")
        left = [n for n in os.listdir(os.path.join(d.state, "jobs")) if n.startswith(".")]
        check(not left, f"a pruned job left a folder: {left}")
    # A restart: the pruned job stays gone; the next id is new.
    with serving(d):
        check(d.job_ids() == jobs[1:], f"after a restart: {d.job_ids()}")
        r = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--compile-only", "--case", FAST,
                  "--json")
        check(r.returncode == 0, f"submit after a restart: exit {r.returncode}: {r.stderr}")
        new = submit_job_id(r)
        check(int(new[1:]) == int(jobs[-1][1:]) + 1, f"new job {new} after {jobs}")
        d.wait_job_state(new, ("done",), timeout=10)
        wait_until(lambda: d.job_ids() == [jobs[2], new], 10,
                   f"the newest two jobs to be kept: {d.job_ids()}")
        r = d.ctl("show", jobs[1])
        check(r.returncode == 4 and f"no job '{jobs[1]}'" in r.stderr,
              f"show of a pruned job: exit {r.returncode}: {r.stderr}")
        # watch's resume skips what is gone: the kept jobs' lines only.
        w = Watcher(d, "--after", f"{jobs[0]}:-1")
        with cleanup(w.stop):
            wait_until(lambda: w.has_verdict(new), 10, "the watcher to reach the new job")
            seen = {json.loads(t)["job"] for t in w.texts()}
        check(seen == {jobs[2], new}, f"watch --after a pruned job saw {seen}")


def load_records(path):
    """(pid, bytes) of every parse tests/shims/count_loads.c recorded."""
    recs = []
    with open(path, "rb") as f:
        data = f.read()
    i = 0
    while i < len(data):
        nl = data.index(b"\n", i)
        pid, n = (int(x) for x in data[i:nl].split())
        recs.append((pid, data[nl + 1:nl + 1 + n]))
        i = nl + 1 + n + 1
    return recs


def scenario_parse_once(args, root):
    """Each line a worker prints is parsed once in quald (where its relay takes
    it in) and once in qualctl (where its connection reads it): a compile-only
    submit with --follow, with jansson's json_loadb and json_loads counted by
    tests/shims/count_loads.c (LD_PRELOAD) per process. A line of the job as
    stored is the worker's bytes with quald's ,"job":...,"seq":N spliced in;
    quald's parses of either count."""
    check(args.count_loads and os.path.exists(args.count_loads),
          "parse_once needs --count-loads (tests/shims/count_loads.c, built)")
    loads = os.path.join(root, "loads")
    os.environ["LD_PRELOAD"] = args.count_loads
    os.environ["QUAL_COUNT_LOADS"] = loads
    # In the ASan build the sanitizer's runtime must come first among the
    # libraries a program loads; the preloaded counter comes before it,
    # which ASan refuses unless told that this order is meant.
    asan = os.environ.get("ASAN_OPTIONS")
    os.environ["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"
    try:
        with serving(Quald(args, root)) as d:
            p = d.spawn_ctl("submit", args.nvrtc, args.nvrtc_alt, "--case", FAST,
                            "--compile-only")
            out, err = p.communicate(timeout=JOB_S)
            check(p.returncode == 0, f"submit: exit {p.returncode}, expected 0: {err}")
            m = re.search(r"job (j\d{6,})", out)
            check(m, f"no job id in the submit's output:\n{out}")
            job = m.group(1)
            texts = d.stored_lines(job)
            qpid = d.pid()
    finally:
        del os.environ["LD_PRELOAD"]
        del os.environ["QUAL_COUNT_LOADS"]
        if asan is None:
            del os.environ["ASAN_OPTIONS"]
        else:
            os.environ["ASAN_OPTIONS"] = asan
    recs = load_records(loads)
    check(len(texts) >= 3, f"job {job} has {len(texts)} lines, expected start, cases, verdict")
    for text in texts:
        line = text.encode()
        worker = re.sub(rb',"job":"j\d+","seq":\d+}$', b"}", line)
        in_quald = sum(1 for pid, b in recs if pid == qpid and b in (line, worker))
        in_client = sum(1 for pid, b in recs if pid == p.pid and b == line)
        check(in_quald == 1, f"quald parsed this line {in_quald} times, expected once: "
              f"{text[:200]}")
        check(in_client == 1, f"qualctl parsed this line {in_client} times, expected once: "
              f"{text[:200]}")


SCENARIOS = {
    "parse_once": scenario_parse_once,
    "history": scenario_history,
    "retention": scenario_retention,
    "full": scenario_full,
    "journal": scenario_journal,
    "concurrent": scenario_concurrent,
    "watch": scenario_watch,
    "cancel": scenario_cancel,
    "sigkill": scenario_sigkill,
    "shim_crash": scenario_shim_crash,
    "shim_hang": scenario_shim_hang,
    "bad_requests": scenario_bad_requests,
}


def on_alarm(signum, frame):
    """SIGALRM's handler for a driver that sets its own alarm at SCENARIO_S
    (run_scenario sets one itself)."""
    raise Failure(f"the scenario ran over {SCENARIO_S} s")


def run_scenario(name, fn, args, prefix="qual-svc-", limit=SCENARIO_S, parent=None):
    """Runs fn(args, root) in a fresh folder root (in parent, default the
    temporary folder) within limit seconds; on a failed check, or a command
    that ran past its timeout, prints it and the end of every quald.log
    under root. Returns the exit status: 0, or 1 after a failure. The folder
    is removed at the end, kept when $QUAL_KEEP_TMP is set."""
    root = tempfile.mkdtemp(prefix=prefix, dir=parent)

    def over(signum, frame):
        raise Failure(f"the scenario ran over {limit} s")
    signal.signal(signal.SIGALRM, over)
    signal.alarm(limit)
    t0 = time.monotonic()
    try:
        fn(args, root)
    except (Failure, subprocess.TimeoutExpired) as e:
        signal.alarm(0)
        print(f"FAIL: {name}: {e}", file=sys.stderr)
        for dirpath, _, files in os.walk(root):
            if "quald.log" in files:
                with open(os.path.join(dirpath, "quald.log"), errors="replace") as f:
                    print("quald's stderr:\n" + f.read()[-4000:], file=sys.stderr)
        return 1
    finally:
        signal.alarm(0)
        if os.environ.get("QUAL_KEEP_TMP"):
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    print(f"ok: {name} in {time.monotonic() - t0:.1f} s")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quald", required=True)
    ap.add_argument("--qualctl", required=True)
    ap.add_argument("--worker", required=True)
    ap.add_argument("--compile-helper", required=True)
    ap.add_argument("--shim-crash", required=True)
    ap.add_argument("--shim-hang", required=True)
    ap.add_argument("--shim-noabi", required=True)
    ap.add_argument("--nvrtc", required=True)
    ap.add_argument("--nvrtc-alt", required=True)
    ap.add_argument("--hiprtc")
    ap.add_argument("--count-loads", help="tests/shims/count_loads.c's library (parse_once)")
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    args.shim = lambda kind: getattr(args, f"shim_{kind}")
    for p in (args.quald, args.qualctl, args.worker, args.compile_helper, args.nvrtc,
              args.nvrtc_alt, args.shim("hang"), args.shim("crash"), args.shim("noabi")):
        if not os.path.exists(p):
            sys.exit(f"FAIL: '{p}' does not exist: build it first")

    return run_scenario(args.scenario, SCENARIOS[args.scenario], args)


if __name__ == "__main__":
    sys.exit(main())
