#!/usr/bin/python3
"""quald's HTTP endpoint (quald --http; docs/http.md), end to end: the real
quald on compile-only slots, real jobs (nvrtc against nvrtc.alt), HTTP
clients from Python's standard library, the metrics read by Prometheus' own
text-format parser (python3-prometheus-client).

usage: http_test.py --quald Q --qualctl C --worker W --compile-helper H
                    --nvrtc LIB --nvrtc-alt LIB SCENARIO

Scenarios:
  api      /api/status, /api/jobs, /api/jobs/ID, /api/history against the
           control socket's answers; a job's event stream opened before it
           runs gets every line live, ids = seq, then "end"; Last-Event-ID
           and ?after resume; /metrics parses and its counters move by what
           the job did; errors (404, 405, 400) name the problem
  unix     --http on a Unix socket path: served there, removed at the stop
  access   (root only) a peer of another uid is refused with 403 on TCP
           (its socket's owner, by sock_diag) and on the Unix socket;
           qual_http_refused_total counts them
  stop     SIGTERM while an event stream follows a running job: quald ends
           the stream and exits 0
  listen   --http refuses what is not loopback, a bad port, a bad address
  handover a stream opened mid-job (a replayed H200 job): stored lines then
           live ones, each once
  host     DNS rebinding: a request naming another host (Host: evil.example)
           gets 421 on the API, the pages, the event streams and /metrics;
           the listen address, localhost and the --http-host names are
           served (on TCP, on [::1] when the host has it, on a Unix socket);
           no Host at all is 400
  ids      one spelling per job: j0000001 for j000001 is 404 over HTTP and
           refused over the control socket; a stream resumed past the last
           line of a running job (Last-Event-ID, ?after=) ends at its
           verdict; a watch resumed past the end of a finished job goes on
           with the later jobs
Exits 0 when every check holds, 77 when a scenario cannot run here (access
without root), 1 with the first failed check otherwise."""
import argparse
import http.client
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from service_test import (Failure, Quald, check, log, wait_until,  # noqa: E402
                          FAST, SECOND, JOB_S)

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

SKIP = 77


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a Unix socket."""

    def __init__(self, path, timeout=10):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


class Http:
    """Requests to one quald's --http endpoint."""

    def __init__(self, where):
        self.where = where
        # What the endpoint answers to as itself (the Host header).
        m = re.fullmatch(r"http://([^/]+)/", where)
        self.host = m.group(1) if m else "localhost"

    def conn(self, timeout=10):
        if self.where.startswith("/"):
            return UnixHTTPConnection(self.where, timeout)
        m = re.fullmatch(r"http://\[?([0-9a-f.:]+)\]?:([0-9]+)/", self.where)
        check(m, f"not an http url: {self.where!r}")
        return http.client.HTTPConnection(m.group(1), int(m.group(2)), timeout=timeout)

    def get(self, path, method="GET", headers=None):
        """(status, headers dict lower-cased, body bytes)."""
        c = self.conn()
        try:
            c.request(method, path, headers=headers or {})
            r = c.getresponse()
            body = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, body
        finally:
            c.close()

    def json(self, path, status=200):
        st, hdr, body = self.get(path)
        check(st == status, f"GET {path}: status {st}, expected {status}: {body[:300]!r}")
        check(hdr.get("content-type", "").startswith("application/json"),
              f"GET {path}: content-type {hdr.get('content-type')!r}")
        return json.loads(body)

    def metrics(self):
        st, hdr, body = self.get("/metrics")
        check(st == 200, f"GET /metrics: status {st}")
        check(hdr.get("content-type", "").startswith("text/plain; version=0.0.4"),
              f"/metrics content-type {hdr.get('content-type')!r}")
        out = {}
        for fam in text_string_to_metric_families(body.decode()):
            for s in fam.samples:
                key = s.name + "{" + ",".join(f"{k}={v}" for k, v in
                                              sorted(s.labels.items())) + "}"
                out[key] = s.value
        return out


class Events:
    """A server-sent event stream read in a thread: each event as
    (id or None, event name, data text)."""

    def __init__(self, h, path, headers=None):
        self.c = h.conn(timeout=JOB_S)
        self.c.request("GET", path, headers=headers or {})
        self.r = self.c.getresponse()
        if self.r.status != 200:
            raise Failure(f"GET {path}: status {self.r.status}: {self.r.read()[:300]!r}")
        ct = self.r.getheader("content-type", "")
        check(ct.startswith("text/event-stream"), f"{path}: content-type {ct!r}")
        self.events = []
        self.closed = False
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        ev = {"id": None, "event": "message", "data": []}
        try:
            for raw in self.r:
                line = raw.decode().rstrip("\n")
                if line == "":
                    if ev["data"]:
                        with self.lock:
                            self.events.append((ev["id"], ev["event"], "\n".join(ev["data"])))
                    ev = {"id": None, "event": "message", "data": []}
                elif line.startswith(":"):
                    continue
                else:
                    field, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if field == "data":
                        ev["data"].append(value)
                    elif field in ("id", "event"):
                        ev[field] = value
        except (OSError, http.client.HTTPException):
            pass
        self.closed = True

    def wait_closed(self, timeout):
        self.t.join(timeout)
        check(not self.t.is_alive(), f"event stream still open after {timeout:g} s")
        return list(self.events)

    def close(self):
        self.c.close()


def raw(h, request, timeout=10):
    """Sends request bytes as they are and reads until the server closes:
    the whole answer, bytes."""
    c = h.conn(timeout)
    c.connect()
    c.sock.sendall(request)
    return read_to_end(c.sock)


def read_to_end(sock):
    """What sock gives until the peer closes, then closes it."""
    out = b""
    while True:
        b = sock.recv(65536)
        if not b:
            break
        out += b
    sock.close()
    return out


def http_where(d):
    def found():
        m = re.search(r"http on (\S+);", d.log_text())
        return m.group(1) if m else None
    return wait_until(found, 10, "quald's 'http on' line")


def submit_job(d, extra=(), compile_only=True, cases=()):
    """Submits nvrtc against nvrtc.alt without following; the job's id."""
    r = d.ctl("submit", "--no-follow", *(["--compile-only"] if compile_only else []),
              *[a for c in cases for a in ("--case", c)], *extra,
              d.args.nvrtc, d.args.nvrtc_alt)
    check(r.returncode == 0, f"qualctl submit: exit {r.returncode}: {r.stderr}")
    m = re.search(r"\b(j[0-9]{6,})\b", r.stdout + r.stderr)
    check(m, f"qualctl submit printed no job id: {r.stdout!r} {r.stderr!r}")
    return m.group(1)


def submit(d, *extra, case=FAST):
    return submit_job(d, extra, cases=(case,))


def scenario_api(args, root):
    d = Quald(args, root, extra=["--http", "127.0.0.1:0"]).start()
    try:
        h = Http(http_where(d))
        st = h.json("/api/status")
        check("version" in st and isinstance(st.get("slots"), list) and len(st["slots"]) == 1,
              f"/api/status: {st}")
        check(st["slots"] == d.ctl_json("status")["slots"],
              "/api/status's slots differ from `qualctl status --json`'s")
        m0 = h.metrics()
        check(m0.get("qual_queue_length{}") == 0.0, f"qual_queue_length {m0.get('qual_queue_length{}')}")
        check(m0.get("qual_slot_up{device=none,slot=0}") == 1.0, "qual_slot_up of slot 0 is not 1")

        # Two jobs on one slot: the second's event stream opens while it is
        # queued, so every line it gets comes live.
        # The all-jobs stream has new lines only: it opens before the jobs.
        all_ev = Events(h, "/api/events")
        j1 = submit(d, "--label", "build=a1", "--label", "series=nightly")
        j2 = submit(d, "--label", "build=a2", "--label", "series=nightly", case=SECOND)
        ev = Events(h, f"/api/jobs/{j2}/events")
        d.wait_job_state(j1, ("done",))
        d.wait_job_state(j2, ("done",))
        got = ev.wait_closed(JOB_S)
        stored = d.stored_lines(j2)
        data = [e for e in got if e[1] == "message"]
        check([x[2] for x in data] == stored,
              f"the event stream of {j2} differs from its stored lines: "
              f"{len(data)} events, {len(stored)} lines")
        check([x[0] for x in data] == [str(i) for i in range(len(stored))],
              f"event ids are not the lines' seq: {[x[0] for x in data]}")
        check(got[-1][1] == "end", f"the stream did not end with an 'end' event: {got[-1]}")
        # The all-jobs stream had both jobs' lines, each once, in each job's order.
        wait_until(lambda: sum(1 for e in all_ev.events if '"type":"verdict"' in e[2]) >= 2,
                   10, "both verdict lines on /api/events")
        for j in (j1, j2):
            seqs = [json.loads(e[2])["seq"] for e in all_ev.events if json.loads(e[2])["job"] == j]
            check(seqs == list(range(len(d.stored_lines(j)))),
                  f"/api/events: job {j}'s seqs {seqs}")
        all_ev.close()

        # A finished job's stream: stored lines, then end; resumed after a seq.
        for how, headers, path in (("Last-Event-ID", {"Last-Event-ID": "1"}, f"/api/jobs/{j2}/events"),
                                   ("?after", {}, f"/api/jobs/{j2}/events?after=1")):
            got = Events(h, path, headers).wait_closed(10)
            ids = [e[0] for e in got if e[1] == "message"]
            check(ids == [str(i) for i in range(2, len(stored))],
                  f"{how} 1: ids {ids}, expected 2..{len(stored) - 1}")
            check(got[-1][1] == "end", f"{how}: no end event")

        # Resumed at its verdict, a finished job's stream ends at once; of
        # ?after and Last-Event-ID the later one counts (an EventSource
        # reconnects to its URL with both).
        last = len(stored) - 1
        got = Events(h, f"/api/jobs/{j2}/events?after={last}").wait_closed(10)
        check([e[1] for e in got] == ["end"], f"?after={last}: {got}")
        got = Events(h, f"/api/jobs/{j2}/events?after=0", {"Last-Event-ID": "2"}).wait_closed(10)
        ids = [e[0] for e in got if e[1] == "message"]
        check(ids == [str(i) for i in range(3, len(stored))],
              f"?after=0 with Last-Event-ID 2: ids {ids}")
        # HEAD: headers, no body, also for a stream, and the connection ends.
        for path in ("/api/status", f"/api/jobs/{j2}/events", "/api/events"):
            ans = raw(h, f"HEAD {path} HTTP/1.1\r\nHost: {h.host}\r\n\r\n".encode())
            head, sep, body = ans.partition(b"\r\n\r\n")
            check(head.startswith(b"HTTP/1.1 200") and sep and body == b"",
                  f"HEAD {path}: {ans[:200]!r}")

        # /api/jobs/ID: the job's show, with its lines parsed.
        one = h.json(f"/api/jobs/{j2}")
        check(one["job"] == j2 and one["state"] == "done", f"/api/jobs/{j2}: {one.get('state')}")
        check([json.dumps(x, separators=(",", ":")) for x in one["lines"]] ==
              [json.dumps(json.loads(x), separators=(",", ":")) for x in stored],
              f"/api/jobs/{j2}'s lines differ from the stored ones")
        check(one.get("labels") == {"build": "a2", "series": "nightly"},
              f"/api/jobs/{j2} labels: {one.get('labels')}")
        lst = h.json("/api/jobs?limit=1")["jobs"]
        check([x["job"] for x in lst] == [j2], f"/api/jobs?limit=1: {[x['job'] for x in lst]}")
        check(h.json("/api/jobs")["jobs"] == d.ctl_json("list")["jobs"],
              "/api/jobs differs from `qualctl list --json`")
        hist = h.json("/api/history?label=build%3Da1")["jobs"]
        check([x["job"] for x in hist] == [j1], f"/api/history?label=build=a1: {hist}")
        hist = h.json(f"/api/history?label=series=nightly&case={SECOND}")["jobs"]
        check([x["job"] for x in hist] == [j2],
              f"/api/history by label and case: {[x['job'] for x in hist]}")
        hist = h.json("/api/history?label=series=nightly")["jobs"]
        check([x["job"] for x in hist] == [j1, j2], f"/api/history oldest first: {hist}")

        # The metrics moved by what the two jobs did.
        m1 = h.metrics()
        # A submit that followed its job to the verdict line finds it in the
        # history at once (its worker may still be exiting).
        r = d.ctl("submit", "--compile-only", "--case", FAST, "--label", "build=a3",
                  args.nvrtc, args.nvrtc_alt)
        check(r.returncode == 0, f"followed compile-only submit: exit {r.returncode}: {r.stderr}")
        hist = h.json("/api/history?label=build=a3")["jobs"]
        check(len(hist) == 1 and hist[0]["verdict"] == "not_timed" and hist[0]["cases"],
              f"/api/history right after a followed submit: {hist}")

        def moved(key):
            return m1.get(key, 0) - m0.get(key, 0)
        nlines = len(stored) + len(d.stored_lines(j1))
        check(moved("qual_jobs_ended_total{verdict=not_timed}") == 2,
              f"qual_jobs_ended_total{{verdict=not_timed}} moved by {moved('qual_jobs_ended_total{verdict=not_timed}')}")
        check(moved("qual_job_duration_seconds_count{}") == 2, "job duration count did not move by 2")
        check(moved("qual_job_duration_seconds_bucket{le=+Inf}") == 2, "+Inf bucket did not move by 2")
        check(moved("qual_job_duration_seconds_sum{}") > 0, "job duration sum did not grow")
        check(moved("qual_lines_relayed_total{}") == nlines,
              f"qual_lines_relayed_total moved by {moved('qual_lines_relayed_total{}')}, "
              f"the jobs wrote {nlines} lines")
        check(m1.get("qual_jobs{state=done}") == 2, f"qual_jobs{{state=done}} {m1.get('qual_jobs{state=done}')}")
        check(m1.get("qual_jobs_by_verdict{verdict=not_timed}") == 2, "qual_jobs_by_verdict not 2")
        check(moved("qual_http_requests_total{}") >= 8, "qual_http_requests_total hardly moved")

        # Errors name the problem.
        for path, status, text in (
                ("/api/jobs/j999999", 404, "unknown job 'j999999'"),
                ("/api/jobs/j999999/events", 404, "unknown job 'j999999'"),
                ("/api/jobs/nope", 404, "not a job id"),
                ("/nowhere", 404, "no such page"),
                ("/api/jobs?limit=0", 400, "'limit' must be an integer"),
                (f"/api/jobs/{j1}/events?after=x", 400, "'after' must be"),
                ("/api/history?label=nokey", 400, "'label' must be KEY=VALUE"),
                ("/api/history?case=%zz", 400, "malformed query parameter"),
                ("/nope%ff", 404, "no such page"),
                ("/api/jobs/j000001%00/events", 404, "not a job id")):
            st, hdr, body = h.get(path)
            check(st == status, f"GET {path}: status {st}, expected {status}")
            check(text in json.loads(body)["error"], f"GET {path}: {body!r} lacks {text!r}")
        st, hdr, body = h.get("/api/status", method="POST")
        check(st == 405 and hdr.get("allow") == "GET, HEAD" and b"read-only" in body,
              f"POST: {st} {hdr.get('allow')} {body!r}")
        st, hdr, body = h.get("/api/status")
        check(hdr.get("connection", "").lower() == "close", "responses keep their connection")
        # The pages, when built in, say what they may load.
        st, hdr, body = h.get("/")
        if st == 200:
            check("default-src 'self'" in hdr.get("content-security-policy", ""),
                  f"/ has no content-security-policy: {hdr}")
            check(hdr.get("content-type", "").startswith("text/html"), "/ is not html")
        d.stop()
    except Exception:
        d.stop_quietly()
        raise


def scenario_unix(args, root):
    path = os.path.join(root, "http.sock")
    d = Quald(args, root, extra=["--http", path]).start()
    try:
        check(http_where(d) == path, f"'http on' names {http_where(d)!r}, not {path!r}")
        check(os.stat(path).st_mode & 0o777 == 0o660, f"{path}: mode {oct(os.stat(path).st_mode)}")
        st = Http(path).json("/api/status")
        check(isinstance(st.get("slots"), list), f"/api/status on {path}: {st}")
        d.stop()
        check(not os.path.exists(path), f"quald left {path} behind")
    except Exception:
        d.stop_quietly()
        raise


def as_user(uid, fn):
    """Runs fn() in a child as uid (and its own group), returning what it
    printed to the pipe."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            out = fn()
        except Exception as e:  # noqa: BLE001
            out = f"error: {e!r}"
        os.write(wfd, out.encode())
        os._exit(0)
    os.close(wfd)
    with os.fdopen(rfd) as f:
        out = f.read()
    os.waitpid(pid, 0)
    return out


def scenario_access(args, root):
    if os.geteuid() != 0:
        log("skipped: refusing another uid needs root to be another uid")
        return SKIP
    nobody = 65534
    path = os.path.join(root, "http.sock")
    tcp = Quald(args, os.path.join(root, "a"), extra=["--http", "127.0.0.1:0",
                                                      "--group", "qual-no-such-group"]).start()
    try:
        h = Http(http_where(tcp))

        def fetch():
            try:
                st, hdr, body = h.get("/api/status")
                return f"{st} {body.decode(errors='replace')}"
            except Exception as e:  # noqa: BLE001
                return f"error: {e!r}"
        out = as_user(nobody, fetch)
        check(out.startswith("403 ") and f"uid {nobody} is not allowed" in out,
              f"a peer of uid {nobody} on TCP got: {out!r}")
        check(h.json("/api/status")["slots"], "root was not served")
        check(h.metrics().get("qual_http_refused_total{}") == 1, "qual_http_refused_total is not 1")
        tcp.stop()
    except Exception:
        tcp.stop_quietly()
        raise
    os.makedirs(os.path.join(root, "u"), exist_ok=True)
    os.chmod(root, 0o755)
    os.chmod(os.path.join(root, "u"), 0o755)
    d = Quald(args, os.path.join(root, "u"), extra=["--http", path,
                                                    "--group", "qual-no-such-group"]).start()
    try:
        os.chmod(path, 0o666)  # let the kernel's rule be quald's, not the file mode's

        def fetch_unix():
            try:
                st, hdr, body = Http(path).get("/api/status")
                return f"{st} {body.decode(errors='replace')}"
            except Exception as e:  # noqa: BLE001
                return f"error: {e!r}"
        out = as_user(nobody, fetch_unix)
        check(out.startswith("403 ") and f"uid {nobody} is not allowed" in out,
              f"a peer of uid {nobody} on the unix socket got: {out!r}")
        d.stop()
    except Exception:
        d.stop_quietly()
        raise


def scenario_stop(args, root):
    # A compile-only job of every case takes seconds: long enough to stop
    # quald while its stream follows it.
    d = Quald(args, root, extra=["--http", "127.0.0.1:0"]).start()
    try:
        h = Http(http_where(d))
        job = submit_job(d)
        ev = Events(h, f"/api/jobs/{job}/events")
        wait_until(lambda: len(ev.events) >= 2, JOB_S, "two lines on the stream")
        # HTTP/1.0 streams (no chunked framing: their last send ends them
        # at once) on the job and on every job, open at the stop too.
        olds = []
        for path in (f"/api/jobs/{job}/events", "/api/events"):
            c = h.conn(JOB_S)
            c.connect()
            c.sock.sendall(f"GET {path} HTTP/1.0\r\nHost: {h.host}\r\n\r\n".encode())
            olds.append(c.sock)
        time.sleep(0.3)
        t0 = time.monotonic()
        d.stop()
        got = ev.wait_closed(5)
        check(time.monotonic() - t0 < 15, "quald took over 15 s to stop with a stream open")
        check(got, "the stream got nothing")
        for sock in olds:
            sock.settimeout(5)
            data = read_to_end(sock)
            check(data.startswith(b"HTTP/1.1 200"), f"an HTTP/1.0 stream got {data[:80]!r}")
    except Exception:
        if d.proc:
            d.stop_quietly()
        raise


def replaying_quald(args, root, seconds):
    """A quald with --http whose worker replays a real H200 job (1007
    lines) over seconds (tests/tools/replay_worker.py), started."""
    os.environ["QUAL_REPLAY_SECONDS"] = str(seconds)
    args.worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "replay_worker.py")
    return Quald(args, root, extra=["--http", "127.0.0.1:0"]).start()


def scenario_handover(args, root):
    """A stream opened while its job runs: stored lines, then live ones,
    none missed, none twice."""
    d = replaying_quald(args, root, 6)
    try:
        h = Http(http_where(d))
        job = submit_job(d, compile_only=False)
        wait_until(lambda: len(d.stored_lines(job)) >= 200, JOB_S, "200 stored lines")
        ev = Events(h, f"/api/jobs/{job}/events")
        got = ev.wait_closed(JOB_S)
        stored = d.stored_lines(job)
        check(len(stored) == 1007, f"{len(stored)} stored lines, the replay has 1007")
        ids = [int(e[0]) for e in got if e[1] == "message"]
        check(ids == list(range(len(stored))), f"ids {ids[:5]}..{ids[-5:]}: lines missed or repeated")
        check([e[2] for e in got if e[1] == "message"] == stored, "the stream differs from the log")
        check(got[-1][1] == "end", "no end event")
        d.stop()
    except Exception:
        d.stop_quietly()
        raise


def status_of(h, path, host, method="GET"):
    """The status and body of one request naming host (None: no Host
    header, HTTP/1.0)."""
    if host is None:
        req = f"{method} {path} HTTP/1.0\r\n\r\n"
    else:
        req = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n\r\n"
    ans = raw(h, req.encode())
    m = re.match(rb"HTTP/1\.1 ([0-9]{3}) ", ans)
    check(m, f"{method} {path} (Host {host!r}): no status line: {ans[:120]!r}")
    return int(m.group(1)), ans.partition(b"\r\n\r\n")[2]


def check_names(h, good, bad):
    """Every page kind answers the good Host names and refuses the bad ones
    with 421 (naming the host), and a request without Host with 400."""
    paths = ("/api/status", "/api/jobs", "/api/jobs/j000001", "/api/events",
             "/api/jobs/j000001/events", "/", "/history", "/jobs/j000001", "/metrics")
    for host in bad:
        for path in paths:
            for method in ("GET", "HEAD"):
                st, body = status_of(h, path, host, method)
                check(st == 421, f"{method} {path} with Host {host!r}: {st}, expected 421")
            st, body = status_of(h, path, host)
            check(f"host '{host}' is not this endpoint's".encode() in body,
                  f"GET {path} with Host {host!r}: {body[:200]!r}")
    for host in good:
        # A stream's answer is its first bytes: HEAD says whether it opens.
        for path in ("/api/status", "/api/events", "/metrics"):
            method = "HEAD" if path == "/api/events" else "GET"
            st, body = status_of(h, path, host, method)
            check(st == 200, f"{method} {path} with Host {host!r}: {st} {body[:200]!r}")
    st, body = status_of(h, "/api/status", None)
    check(st == 400 and b"no Host header" in body, f"GET without Host: {st} {body[:200]!r}")


def has_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def scenario_host(args, root):
    extra = ["--http-host", "qual.example.org", "--http-host", "Proxy.Example:8443"]
    d = Quald(args, os.path.join(root, "tcp"), extra=["--http", "127.0.0.1:0", *extra]).start()
    try:
        h = Http(http_where(d))
        port = int(h.host.rsplit(":", 1)[1])
        check_names(h, good=(h.host, f"localhost:{port}", f"LOCALHOST:{port}",
                             "qual.example.org", f"qual.example.org:{port}",
                             "proxy.example:8443"),
                    bad=("evil.example", f"evil.example:{port}", f"127.0.0.1:{port + 1}",
                         "127.0.0.2:%d" % port, "proxy.example:8444", "proxy.example",
                         "qual.example.org.evil.example", f"[::1]:{port}"))
        d.stop()
    except Exception:
        d.stop_quietly()
        raise
    if has_ipv6_loopback():
        d = Quald(args, os.path.join(root, "v6"), extra=["--http", "[::1]:0"]).start()
        try:
            h = Http(http_where(d))
            port = int(h.host.rsplit(":", 1)[1])
            check_names(h, good=(f"[::1]:{port}", f"[0:0:0:0:0:0:0:1]:{port}",
                                 f"localhost:{port}"),
                        bad=("evil.example", f"127.0.0.1:{port}", "[::1]"))
            d.stop()
        except Exception:
            d.stop_quietly()
            raise
    else:
        log("no ipv6 loopback here: [::1] not checked")
    path = os.path.join(root, "http.sock")
    d = Quald(args, os.path.join(root, "unix"), extra=["--http", path]).start()
    try:
        check_names(Http(path), good=("localhost",), bad=("evil.example", "127.0.0.1:80"))
        d.stop()
    except Exception:
        d.stop_quietly()
        raise
    # What --http-host refuses.
    for value, text in (("a b", "--http-host 'a b': give a host name"),
                        ("x:0", "--http-host 'x:0': give a host name"),
                        ("[nope]:80", "--http-host '[nope]:80': give a host name")):
        p = subprocess.run([args.quald, "--socket", os.path.join(root, "q.sock"),
                            "--state-dir", os.path.join(root, "state"), "--slots", "1",
                            "--worker", args.worker, "--compile-helper", args.compile_helper,
                            "--http", "127.0.0.1:0", "--http-host", value],
                           capture_output=True, text=True, timeout=30)
        check(p.returncode != 0 and text in p.stderr,
              f"--http-host {value!r}: exit {p.returncode}, stderr {p.stderr!r}")
    p = subprocess.run([args.quald, "--socket", os.path.join(root, "q.sock"),
                        "--state-dir", os.path.join(root, "state"), "--http-host", "x"],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode != 0 and "--http-host needs --http" in p.stderr,
          f"--http-host without --http: exit {p.returncode}, stderr {p.stderr!r}")


def noncanonical(job):
    """job's id with one zero more: the same number, another spelling."""
    return "j0" + job[1:]


def scenario_ids(args, root):
    d = replaying_quald(args, root, 4)
    try:
        h = Http(http_where(d))
        job = submit_job(d, compile_only=False)
        wait_until(lambda: len(d.stored_lines(job)) >= 2, JOB_S, "the job's first lines")
        other = noncanonical(job)
        # Resumed past the end while the job runs: nothing of it until the
        # verdict, then the end.
        past = [Events(h, f"/api/jobs/{job}/events", {"Last-Event-ID": "100000"}),
                Events(h, f"/api/jobs/{job}/events?after=100000")]
        for path in (f"/api/jobs/{other}", f"/api/jobs/{other}/events"):
            st, hdr, body = h.get(path)
            check(st == 404 and b"not a job id" in body, f"GET {path}: {st} {body[:200]!r}")
        for op in ("show", "cancel"):
            r = d.ctl(op, other)
            check(r.returncode != 0 and f"must be a job id like 'j000001', got '{other}'"
                  in r.stderr, f"qualctl {op} {other}: exit {r.returncode}: {r.stderr!r}")
        d.wait_job_state(job, ("done",))
        for ev in past:
            got = ev.wait_closed(10)
            check([e[1] for e in got] == ["end"],
                  f"a stream resumed past the end got {got[:3]} (want only its end)")
        # A watch resumed past the end of the finished job: the later job's
        # lines, none of the first's.
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(JOB_S)
        s.connect(d.sock)
        s.sendall(json.dumps({"op": "watch", "after_job": job,
                              "after_seq": 100000}).encode() + b"\n")
        f = s.makefile("rb")
        first = json.loads(f.readline())
        check(first.get("type") == "reply" and first.get("op") == "watch", f"watch: {first}")
        job2 = submit_job(d, compile_only=False)
        seen = []
        while True:
            line = json.loads(f.readline())
            seen.append(line)
            if line.get("type") == "verdict":
                break
        check({x.get("job") for x in seen} == {job2} and
              [x["seq"] for x in seen] == list(range(len(seen))),
              f"a watch past the end of {job} got {[(x.get('job'), x.get('seq')) for x in seen][:5]}")
        s.close()
        d.stop()
    except Exception:
        d.stop_quietly()
        raise


def scenario_listen(args, root):
    for spec, text in (("0.0.0.0:8080", "not a loopback address"),
                       ("192.0.2.1:80", "not a loopback address"),
                       ("127.0.0.1:99999", "the port must be 0 to 65535"),
                       ("example.org:80", "is not an ip address"),
                       ("8080", "give HOST:PORT"),
                       (os.path.join(root, "no", "dir", "h.sock"), "no directory")):
        p = subprocess.run([args.quald, "--socket", os.path.join(root, "q.sock"),
                            "--state-dir", os.path.join(root, "state"), "--slots", "1",
                            "--worker", args.worker, "--compile-helper", args.compile_helper,
                            "--http", spec], capture_output=True, text=True, timeout=30)
        check(p.returncode != 0, f"--http {spec}: quald started")
        check(text in p.stderr, f"--http {spec}: stderr {p.stderr!r} lacks {text!r}")
        check(not os.path.exists(os.path.join(root, "q.sock")),
              f"--http {spec}: the control socket was left behind")


SCENARIOS = {
    "api": scenario_api,
    "unix": scenario_unix,
    "access": scenario_access,
    "stop": scenario_stop,
    "listen": scenario_listen,
    "handover": scenario_handover,
    "host": scenario_host,
    "ids": scenario_ids,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quald", required=True)
    ap.add_argument("--qualctl", required=True)
    ap.add_argument("--worker", required=True)
    ap.add_argument("--compile-helper", required=True)
    ap.add_argument("--nvrtc", required=True)
    ap.add_argument("--nvrtc-alt", required=True)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="qual-http-")
    try:
        rc = SCENARIOS[args.scenario](args, root)
    except Failure as e:
        print(f"FAIL: {args.scenario}: {e}", file=sys.stderr)
        return 1
    finally:
        if not os.environ.get("QUAL_KEEP_TMP"):
            shutil.rmtree(root, ignore_errors=True)
    if rc == SKIP:
        return SKIP
    log(f"PASS: {args.scenario}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
