#!/usr/bin/python3
"""The real quald under valgrind memcheck, driven through its socket.

usage: quald_valgrind.py --valgrind V --quald Q --qualctl C --worker W
                         --compile-helper H --shim-noabi LIB --shim-hang LIB
                         --nvrtc LIB --nvrtc-alt LIB

quald runs under `valgrind --error-exitcode=99 --leak-check=full
--errors-for-leak-kinds=definite,indirect --track-fds=no` on a socket and a
state directory in a fresh temporary folder; its workers (qual-run) and
submit checks (qual-compile) are its children and run natively (valgrind
does not follow them). While it serves:

  - bad requests on raw connections: each gets exactly one refused line and
    the connection answers its next request; blank and CRLF lines, a line
    over 1 MiB, invalid UTF-8, a NUL byte, deep nesting, a request cut off by
    the client closing;
  - a submit of a library that is not a compiler (refused by the check
    children) and a compile-only job of one case (nvrtc against nvrtc.alt)
    through qualctl, followed to its verdict: exit 0;
  - status, list, show and a watch resuming after the job; a second job
    cancelled while it runs; a third left running and a watcher left
    connected when SIGTERM comes (both with a candidate whose compile hangs,
    so that each is still running when the driver looks: quald hashes every
    submitted library itself, which valgrind makes slow enough for a normal
    job to end before the next submit is answered).

Then quald must exit 0 (it exits nonzero when uv_loop_close() does not
return 0: daemon/main.c) and valgrind must report no error: no invalid
access, no use of uninitialised memory, no definite or indirect leak (still
reachable memory is not an error). Exits 0 when every check holds, 1 with the
first failed one and valgrind's log otherwise."""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

FAST = "gemm_i8-256x512x256"   # the fastest case to compile
START_S = 60.0                  # quald under valgrind answering a status
STOP_S = 60.0                   # quald exiting after SIGTERM (workers: 5 s)
JOB_S = 120.0                   # one compile-only job


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def log(text):
    print(text, flush=True)


def wait_until(pred, timeout, what, step=0.05):
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            raise Failure(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(step)


class Conn:
    """A raw connection to quald: send bytes, read reply lines."""

    def __init__(self, path, timeout=JOB_S):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.f = self.s.makefile("rb")

    def send(self, data):
        self.s.sendall(data)

    def line(self):
        raw = self.f.readline()
        check(raw.endswith(b"\n"), f"connection closed or cut a line: {raw!r}")
        return json.loads(raw)

    def close(self):
        self.f.close()
        self.s.close()


def bad_requests(sock):
    """Each bad request gets one refused line; the connection lives on."""
    deep = b"[" * 40 + b"]" * 40
    cases = [
        ("malformed json", b'{"op":"status"', "malformed json"),
        ("not an object", b"[1,2]", "a request must be a json object"),
        ("unknown op", b'{"op":"frobnicate","id":1}', "unknown op"),
        ("unknown field", b'{"op":"list","limt":3}', "unknown field 'limt'"),
        ("pairs 5", b'{"op":"submit","baseline":"/a","candidate":"/b","pairs":5}',
         "'pairs' must be an integer >= 30"),
        ("deep nesting", b'{"op":"status","id":' + deep + b"}", "nested deeper"),
        ("invalid utf-8", b'{"op":"show","job":"\xff\xfe"}', "malformed json"),
        ("nul byte", b'{"op":"status"\x00}', "malformed json"),
        ("bad job id", b'{"op":"show","job":"' + b"x" * 500 + b'"}', "must be a job id"),
        ("unknown job", b'{"op":"cancel","job":"j999999"}', "j999999"),
        ("over 1 MiB", b'{"op":"status","pad":"' + b"x" * (1 << 20) + b'"}',
         "request line over 1048576 bytes"),
    ]
    c = Conn(sock)
    for name, data, want in cases:
        # Blank and CRLF lines around the request are not requests.
        c.send(b"\n \t\r\n" + data + b"\r\n")
        reply = c.line()
        check(reply.get("type") == "refused" and want in reply.get("message", ""),
              f"{name}: expected a refusal saying {want!r}, got {str(reply)[:300]}")
        c.send(b'{"op":"status","id":"next"}\n')
        nxt = c.line()
        check(nxt.get("type") == "reply" and nxt.get("id") == "next",
              f"{name}: the next request got {str(nxt)[:300]}")
        log(f"ok: refused {name}: {reply['message'][:80]}")
    # A line that outgrows the buffer before its newline (sent in pieces).
    c.send(b'{"op":"status","pad":"')
    for _ in range(17):
        c.send(b"y" * 65536)
    reply = c.line()
    check(reply.get("type") == "refused" and "over 1048576" in reply.get("message", ""),
          f"an endless line: got {str(reply)[:300]}")
    c.send(b'"}\n{"op":"status","id":"after"}\n')
    nxt = c.line()
    check(nxt.get("id") == "after", f"after an endless line: got {str(nxt)[:300]}")
    log("ok: refused a line that outgrew the buffer; the rest of it was skipped")
    c.close()
    # A last request without its newline, then EOF: answered, then closed.
    c = Conn(sock)
    c.send(b'{"op":"list","id":"last"}')
    c.s.shutdown(socket.SHUT_WR)
    reply = c.line()
    check(reply.get("id") == "last", f"a request ended by EOF: got {str(reply)[:300]}")
    check(c.f.readline() == b"", "quald did not close a finished connection")
    c.close()
    # A client that goes away with a request half sent.
    c = Conn(sock)
    c.send(b'{"op":"submit","baseline":')
    c.close()
    log("ok: a request ended by EOF; a client gone mid-request")


def main():
    ap = argparse.ArgumentParser()
    for opt in ("valgrind", "quald", "qualctl", "worker", "compile-helper",
                "shim-noabi", "shim-hang", "nvrtc", "nvrtc-alt"):
        ap.add_argument("--" + opt, required=True)
    args = ap.parse_args()

    root = tempfile.mkdtemp(prefix="qual-valgrind-")
    sock = os.path.join(root, "quald.sock")
    vglog = os.path.join(root, "valgrind.log")
    qlog = os.path.join(root, "quald.log")
    env = dict(os.environ, TMPDIR=root)
    for k in ("QUAL_SOCKET", "RUNTIME_DIRECTORY", "STATE_DIRECTORY", "NOTIFY_SOCKET",
              "LISTEN_PID", "LISTEN_FDS"):
        env.pop(k, None)
    argv = [args.valgrind, "--error-exitcode=99", "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect", "--track-fds=no",
            "--trace-children=no", "--num-callers=30", f"--log-file={vglog}",
            args.quald, "--socket", sock, "--state-dir", os.path.join(root, "state"),
            "--slots", "1", "--worker", args.worker,
            "--compile-helper", args.compile_helper]
    errf = open(qlog, "wb")
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=errf, stderr=errf,
                            env=env)
    watcher = None
    ok = False

    def ctl(*a, timeout=JOB_S):
        return subprocess.run([args.qualctl, "--socket", sock, "--timeout", "100", *a],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, env=env)

    def job_state(job):
        c = Conn(sock)
        c.send(json.dumps({"op": "show", "job": job}).encode() + b"\n")
        reply = c.line()
        c.close()
        check(reply.get("type") == "reply", f"show {job}: got {str(reply)[:300]}")
        return reply["state"]

    try:
        def answers():
            if proc.poll() is not None:
                raise Failure(f"quald exited with {proc.returncode} before answering")
            return os.path.exists(sock) and ctl("status").returncode == 0
        wait_until(answers, START_S, "quald under valgrind to answer a status")
        log("ok: quald answers under valgrind")

        bad_requests(sock)

        r = ctl("submit", args.nvrtc, args.shim_noabi, "--compile-only")
        check(r.returncode == 4 and "no nvrtc or hiprtc entry points" in r.stderr,
              f"a submit of a library that is not a compiler: exit {r.returncode}: "
              f"{r.stderr}")
        log("ok: the check children refused a library that is not a compiler")

        r = ctl("submit", args.nvrtc, args.nvrtc_alt, "--compile-only", "--case", FAST,
                "--json")
        check(r.returncode == 0, f"a compile-only job: exit {r.returncode}: {r.stderr}")
        lines = [json.loads(x) for x in r.stdout.splitlines()]
        check(lines and lines[-1].get("type") == "verdict" and
              lines[-1].get("verdict") == "not_timed",
              f"a compile-only job ended with {str(lines[-1:])[:300]}")
        job = lines[-1]["job"]
        check([x["seq"] for x in lines if "seq" in x] ==
              list(range(len([x for x in lines if "seq" in x]))),
              "the job's lines do not have seq 0, 1, 2, ...")
        log(f"ok: job {job} compiled and ended not_timed ({len(lines)} lines)")

        for a in (("status", "--json"), ("list", "--json"), ("show", job, "--json")):
            r = ctl(*a)
            check(r.returncode == 0, f"qualctl {' '.join(a)}: exit {r.returncode}: {r.stderr}")
        c = Conn(sock)
        c.send(json.dumps({"op": "watch", "after_job": job, "after_seq": 1}).encode() + b"\n")
        check(c.line().get("op") == "watch", "watch: no reply")
        got = c.line()
        check(got.get("job") == job and got.get("seq") == 2,
              f"watch after ({job}, 1): got {str(got)[:300]}")
        c.close()
        log("ok: status, list, show, and a watch resuming inside the job")

        # A job cancelled while it runs, then one left running at SIGTERM
        # with a watcher connected.
        watcher = Conn(sock)
        watcher.send(b'{"op":"watch"}\n')
        check(watcher.line().get("op") == "watch", "watch: no reply")
        jobs = []
        for _ in range(2):
            r = ctl("submit", args.nvrtc, args.shim_hang, "--compile-only", "--no-follow",
                    "--compile-timeout", "600")
            check(r.returncode == 0, f"submit --no-follow: exit {r.returncode}: {r.stderr}")
            jobs.append(r.stdout.strip())
        wait_until(lambda: job_state(jobs[0]) == "running", JOB_S, f"{jobs[0]} to run")
        r = ctl("cancel", jobs[0])
        check(r.returncode == 0, f"cancel {jobs[0]}: exit {r.returncode}: {r.stderr}")
        wait_until(lambda: job_state(jobs[0]) == "cancelled", JOB_S,
                   f"{jobs[0]} to be cancelled")
        wait_until(lambda: job_state(jobs[1]) == "running", JOB_S, f"{jobs[1]} to run")
        log(f"ok: {jobs[0]} cancelled while running; {jobs[1]} running")
        ok = True
    except Exception as e:  # every failure still stops quald and reads valgrind's log
        log(f"FAIL: {type(e).__name__}: {e}")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(STOP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
            log(f"FAIL: quald did not exit within {STOP_S:g} s of SIGTERM")
            ok = False
        if watcher:
            watcher.close()
        errf.close()

    with open(vglog, errors="replace") as f:
        vg = f.read()
    summary = [x for x in vg.splitlines() if "ERROR SUMMARY" in x]
    if rc == 99:
        log("FAIL: valgrind found errors (exit 99)")
        ok = False
    elif rc != 0:
        log(f"FAIL: quald exited with {rc} after SIGTERM, expected 0")
        ok = False
    if not summary or " 0 errors" not in summary[-1]:
        log(f"FAIL: valgrind's summary: {summary}")
        ok = False
    if ok:
        log(f"ok: quald exited 0 after SIGTERM; valgrind: {summary[-1].split('== ')[-1]}")
        shutil.rmtree(root, ignore_errors=True)
        return 0
    with open(qlog, errors="replace") as f:
        sys.stdout.write("---- quald's stderr ----\n" + f.read()[-20000:])
    sys.stdout.write("---- valgrind ----\n" + vg[-40000:])
    log(f"(kept {root})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
