#!/usr/bin/env python3
"""Replies that carry a job's log, and lists, stay bounded (docs/quald.md,
"Limits"), end to end with the real quald and qualctl, fake workers
(tests/tools/fake_worker.sh, fake_compile.sh: no GPU, no compiler):

  memory  a job whose stored log is written anew as LOG_MIB of pair lines
          (tests/tools/store_log.py's record format); CLIENTS control `show`s
          and CLIENTS HTTP GETs of /api/jobs/ID, and a few event streams,
          that never read: quald's peak resident memory (VmHWM) grows by
          less than a bound far below what the clients asked for, a control
          `status` is answered meanwhile, and then a show, a GET and an event
          stream that read get every line, the GET's JSON text byte for byte
          what the control socket's lines make; a HEAD of the job reads
          nothing of its log (/proc/PID/io)
  replay  a watch's replay of that log, drained, reads it about once (quald's
          /proc/PID/io), not again from its start at each pause; a watch
          and an event stream resumed 3 lines before its end read little
          of it
  list    jobs whose list entries are 128 KiB each (each arm's options at
          their bound): no list reply line is over 512 KiB, a page cut short
          names the next, and `qualctl list --json` gathers every page

    stream_test.py --quald Q --qualctl C --elf LIB.so SCENARIO

Also the library of bench/log_clients.py (start, make_job, write_log,
vm_hwm). Exits 0 when the scenario holds, 1 with what did not.
"""
import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time

TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TOOLS)
import store_log  # noqa: E402


def start(quald, root, extra=(), nofile=None):
    """quald on root's state directory (fake workers), answering status;
    (process, control socket path). nofile: its RLIMIT_NOFILE, soft and
    hard, when given."""
    sock = os.path.join(root, "quald.sock")
    log = open(os.path.join(root, "quald.log"), "ab")
    env = {k: v for k, v in os.environ.items()
           if k not in ("QUAL_SOCKET", "NOTIFY_SOCKET", "LISTEN_PID", "LISTEN_FDS")}
    # An ASan build keeps freed memory in a quarantine (256 MiB by default),
    # which would count in its peak as if quald held it: a small one.
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"),
                                                 "quarantine_size_mb=4"]))
    p = subprocess.Popen([quald, "--socket", sock, "--state-dir", os.path.join(root, "state"),
                          "--slots", "1", "--worker", os.path.join(TOOLS, "fake_worker.sh"),
                          "--compile-helper", os.path.join(TOOLS, "fake_compile.sh"),
                          "--allow-root", os.path.join(root, "libs"), *extra],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                         preexec_fn=(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, nofile))
                         if nofile else None)
    for _ in range(600):
        if os.path.exists(sock):
            try:
                request(sock, {"op": "status"}, lambda lines: True)
                return p, sock
            except OSError:
                pass
        if p.poll() is not None:
            break
        time.sleep(0.05)
    p.kill()
    sys.exit(f"quald {quald} did not answer; see {root}/quald.log")


def stop(p):
    p.terminate()
    p.wait(30)


def request(sock, req, done, timeout=60):
    """Sends req (a request, or a list of them), reads lines until
    done(lines) says so; (seconds taken, lines)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(sock)
    buf, lines = b"", []
    reqs = req if isinstance(req, list) else [req]
    t0 = time.perf_counter()
    s.sendall(b"".join(json.dumps(r).encode() + b"\n" for r in reqs))
    while not done(lines):
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
        *whole, buf = buf.split(b"\n")
        lines.extend(whole)
    t = time.perf_counter() - t0
    s.close()
    return t, lines


def libs_of(root, elf):
    libs = []
    for kind in ("base", "ok"):
        d = os.path.join(root, "libs", kind)
        os.makedirs(d, exist_ok=True)
        libs.append(os.path.join(d, "libcompiler.so"))
        shutil.copy(elf, libs[-1])
    return libs


def wait_done(sock, job):
    for _ in range(1200):
        _, lines = request(sock, {"op": "show", "job": job}, lambda ls: len(ls) >= 1)
        if json.loads(lines[0])["state"] == "done":
            return
        time.sleep(0.05)
    sys.exit(f"job {job} did not end")


def make_job(quald, qualctl, root, elf):
    """One finished compile-only job in root's state directory; its id."""
    libs = libs_of(root, elf)
    p, sock = start(quald, root)
    try:
        r = subprocess.run([qualctl, "--socket", sock, "submit", *libs, "--compile-only",
                            "--json"], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            sys.exit(f"submit: exit {r.returncode}: {r.stderr}")
        job = json.loads(r.stdout.splitlines()[0])["job"]
        wait_done(sock, job)
    finally:
        stop(p)
    return job


def write_log(root, job, mib):
    """Writes job's log anew (quald stopped): its start line, mib MiB of pair
    lines, its verdict line; (lines, bytes)."""
    path = os.path.join(root, "state", "jobs", job, "log.jsonl")
    lines = store_log.read(path).lines
    start_line = lines[0][:lines[0].rindex(b',"job"')]
    verdict = lines[-1][:lines[-1].rindex(b',"job"')]
    pair = (b'{"type":"pair","case":"gemm_f16-256x512x256","pair":%d,'
            b'"order":"baseline_first","baseline_ns":1.5,"candidate_ns":1.25,'
            b'"placement":{"sm":[1,2,3,4],"clock_mhz":1980}')
    seq = 0
    with open(path, "wb") as f:
        f.write(store_log.record(start_line + b',"job":"%s","seq":%d}' % (job.encode(), seq)))
        while f.tell() < mib << 20:
            seq += 1
            f.write(store_log.record(pair % seq + b',"job":"%s","seq":%d}' % (job.encode(), seq)))
        seq += 1
        f.write(store_log.record(verdict + b',"job":"%s","seq":%d}' % (job.encode(), seq)))
    return seq + 1, os.path.getsize(path)


def vm_hwm(pid):
    """quald's peak resident memory so far, in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def rchar(pid):
    """Bytes quald has read (files and sockets), /proc/PID/io."""
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return 0


def http_get(path, target, read=True, method="GET"):
    """A GET of target over the Unix socket path: the socket (read False) or
    (status line, body)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(b"%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
              % (method.encode(), target.encode()))
    if not read:
        return s
    s.settimeout(60)
    data = b""
    while True:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        out, rest = b"", body
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            n = int(size, 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        body = out
    return head.split(b"\r\n")[0].decode(), body


def hold_show(sock, job):
    """A control connection that asks for a show and never reads."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(sock)
    s.sendall(json.dumps({"op": "show", "job": job}).encode() + b"\n")
    return s


def bench_parser(doc):
    """The arguments every bench of quald's logs takes (bench/read_log.py,
    log_clients.py, store_start.py): --quald (repeatable), --qualctl, --elf."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--quald", action="append", required=True)
    ap.add_argument("--qualctl", help="qualctl (default: beside the first quald)")
    ap.add_argument("--elf", required=True, help="any ELF shared library")
    return ap


def bench_qualctl(a):
    """The qualctl a bench's arguments name, or the one beside the first quald."""
    return a.qualctl or os.path.join(os.path.dirname(a.quald[0]), "qualctl")


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def scenario_memory(a, root):
    job = make_job(a.quald, a.qualctl, root, a.elf)
    n, size = write_log(root, job, a.log_mib)
    http = os.path.join(root, "http.sock")
    p, sock = start(a.quald, root, ["--http", http])
    held = []
    try:
        base = vm_hwm(p.pid)
        for _ in range(a.clients):
            held.append(hold_show(sock, job))
            held.append(http_get(http, f"/api/jobs/{job}", read=False))
        for _ in range(4):
            held.append(http_get(http, f"/api/jobs/{job}/events", read=False))
        time.sleep(1.5)
        t, lines = request(sock, {"op": "status"}, lambda ls: len(ls) >= 1, timeout=30)
        grown = vm_hwm(p.pid) - base
        asked = (2 * a.clients + 4) * size // 1024
        print(json.dumps({"log_bytes": size, "lines": n, "clients": 2 * a.clients + 4,
                          "vm_hwm_grown_kib": grown, "asked_kib": asked,
                          "status_s": round(t, 3)}))
        check(lines and json.loads(lines[0]).get("op") == "status",
              f"no status reply: {lines[:1]}")
        check(t < 2.0, f"status took {t:.3f} s with {len(held)} clients not reading")
        _, metrics = http_get(http, "/metrics")
        queued = [int(m.split()[1]) for m in metrics.decode().splitlines()
                  if m.startswith("qual_reply_queued_bytes ")]
        print(json.dumps({"reply_queued_bytes": queued}))
        check(queued and 0 < queued[0] <= len(held) * (256 << 10),
              f"qual_reply_queued_bytes {queued}: want some, at most 256 KiB a client")
        check(grown < a.max_grown_mib * 1024,
              f"quald's peak memory grew by {grown} KiB with {len(held)} clients of a "
              f"{size}-byte log not reading (bound {a.max_grown_mib} MiB)")
        # Readers get everything: the show's header and its n lines, the
        # GET's JSON text made of the same lines.
        _, shown = request(sock, {"op": "show", "job": job}, lambda ls: len(ls) >= n + 1)
        head = json.loads(shown[0])
        check(head["lines"] == n and len(shown) == n + 1,
              f"show: header says {head['lines']}, {len(shown) - 1} lines came, {n} stored")
        status, body = http_get(http, f"/api/jobs/{job}")
        check(" 200 " in status, f"GET /api/jobs/{job}: {status}")
        want = (b'{"job":"%s","labels":{},"lines":[' % job.encode() + b",".join(shown[1:]) +
                b'],"state":"done"}')
        check(body == want, f"GET /api/jobs/{job}: {len(body)} bytes, not the "
                            f"{len(want)} the show's lines make")
        # A HEAD reads nothing of the log.
        before = settled_rchar(p.pid)
        for _ in range(3):
            status, body = http_get(http, f"/api/jobs/{job}", method="HEAD")
            check(" 200 " in status and body == b"", f"HEAD /api/jobs/{job}: {status} {body[:40]!r}")
        read = rchar(p.pid) - before
        check(read < size // 4, f"3 HEADs of /api/jobs/{job} read {read} bytes (its log: {size})")
        status, body = http_get(http, f"/api/jobs/{job}/events")
        events = [e for e in body.split(b"\n\n") if e.startswith(b"id: ")]
        check(len(events) == n and body.endswith(b"event: end\ndata: {}\n\n"),
              f"event stream: {len(events)} events of {n}, ends {body[-40:]!r}")
    finally:
        for s in held:
            s.close()
        stop(p)


def settled_rchar(pid):
    """rchar once what quald reads by itself (as after a start) is read."""
    before = rchar(pid)
    for _ in range(50):
        time.sleep(0.1)
        now, before = before, rchar(pid)
        if now == before:
            break
    return before


def scenario_replay(a, root):
    job = make_job(a.quald, a.qualctl, root, a.elf)
    n, size = write_log(root, job, a.log_mib)
    http = os.path.join(root, "http.sock")
    p, sock = start(a.quald, root, ["--http", http])
    try:
        # A watch's replay of the whole log, drained: the log is read about
        # once, not again from its start at each pause.
        before = settled_rchar(p.pid)
        _, lines = request(sock, {"op": "watch", "after_job": job, "after_seq": -1},
                           lambda ls: len(ls) >= n + 1)
        read = rchar(p.pid) - before
        print(json.dumps({"log_bytes": size, "watch_replay_read": read}))
        check(len(lines) == n + 1, f"watch replay: {len(lines) - 1} lines of {n}")
        check(read < 2 * size, f"a watch replay of a {size}-byte log read {read} bytes")
        # Resumed near the end (watch, event stream): the lines before the
        # point are not read.
        before = settled_rchar(p.pid)
        _, lines = request(sock, [{"op": "watch", "after_job": job, "after_seq": n - 3},
                                  {"op": "status"}], lambda ls: len(ls) >= 4)
        read = rchar(p.pid) - before
        check([json.loads(x).get("seq") for x in lines[1:3]] == [n - 2, n - 1],
              f"watch after {n - 3}: {lines[1:3]}")
        check(read < size // 4, f"a watch resumed at line {n - 3} read {read} bytes")
        before = settled_rchar(p.pid)
        _, body = http_get(http, f"/api/jobs/{job}/events?after={n - 3}")
        read = rchar(p.pid) - before
        events = [e for e in body.split(b"\n\n") if e.startswith(b"id: ")]
        check(len(events) == 2, f"event stream after {n - 3}: {len(events)} events")
        check(read < size // 4, f"an event stream resumed at line {n - 3} read {read} bytes")
        print(json.dumps({"resumed_read": read}))
    finally:
        stop(p)


def scenario_list(a, root):
    libs = libs_of(root, a.elf)
    p, sock = start(a.quald, root)
    try:
        opts = ["-D%s" % ("x" * 3990) for _ in range(16)]
        jobs = []
        for i in range(a.jobs):
            _, lines = request(sock, {"op": "submit", "baseline": libs[0], "candidate": libs[1],
                                      "compile_only": True, "baseline_options": opts,
                                      "candidate_options": opts,
                                      "labels": {"n": str(i)}},
                               lambda ls: len(ls) >= 1)
            reply = json.loads(lines[0])
            check(reply.get("type") == "reply", f"submit: {lines[0][:200]!r}")
            jobs.append(reply["job"])
        for job in jobs:
            wait_done(sock, job)
        # Page by page by hand: each line within the bound, every job once.
        seen, before, pages = [], None, 0
        while True:
            req = {"op": "list", "limit": 1000}
            if before:
                req["before"] = before
            _, lines = request(sock, req, lambda ls: len(ls) >= 1)
            check(len(lines[0]) <= 512 << 10,
                  f"a list reply line of {len(lines[0])} bytes (bound 512 KiB)")
            reply = json.loads(lines[0])
            seen += [j["job"] for j in reply["jobs"]]
            pages += 1
            before = reply.get("next")
            if not before:
                break
            check(before == seen[-1], f"next {before} is not the last job listed {seen[-1]}")
        check(seen == jobs[::-1], f"pages listed {seen}, not {jobs[::-1]}")
        check(pages > 1, "one page held every job: the test's jobs are too small")
        r = subprocess.run([a.qualctl, "--socket", sock, "list", "--limit", "1000", "--json"],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, f"qualctl list: exit {r.returncode}: {r.stderr}")
        got = [j["job"] for j in json.loads(r.stdout)["jobs"]]
        check(got == jobs[::-1], f"qualctl list --json: {got}")
        r = subprocess.run([a.qualctl, "--socket", sock, "list", "--limit", "3"],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and sum(j in r.stdout for j in jobs) == 3,
              f"qualctl list --limit 3: exit {r.returncode}: {r.stdout}{r.stderr}")
        print(json.dumps({"jobs": len(jobs), "pages": pages}))
    finally:
        stop(p)


def scenario_nofile(a, root):
    """A show's cursor keeps its log open while the client drains it: at an
    open file limit that would fit the default 1024 connections at one
    descriptor each, quald must count two, so that every connection it
    admits can be served. 700 non-reading shows of a 2 MiB log: each gets
    its show, or the clear refusal of a connection over the (lowered)
    limit, never "out of file descriptors" (a quald that counted one
    admitted connections it had no descriptors left for); then, with them
    closed, a job runs."""
    limit = 1200
    job = make_job(a.quald, a.qualctl, root, a.elf)
    write_log(root, job, 2)
    want = resource.getrlimit(resource.RLIMIT_NOFILE)
    if want[1] != resource.RLIM_INFINITY and want[1] < limit + 200:
        print(f"SKIP: the hard open file limit here is {want[1]}")
        return 77
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit + 200, want[1]))
    p, sock = start(a.quald, root, nofile=(limit, limit))
    held, got = [], {}
    try:
        for _ in range(700):
            held.append(hold_show(sock, job))
        time.sleep(2)
        for s in held:
            s.settimeout(10)
            first = s.recv(4096).split(b"\n")[0]
            kind = json.loads(first).get("type") + ": " + json.loads(first).get(
                "message", "show")[:40] if first else "closed"
            got[kind] = got.get(kind, 0) + 1
        print(json.dumps({"shows": got}))
        check(p.poll() is None, f"quald exited ({p.returncode}): {tail(root)}")
        bad = {k: n for k, n in got.items()
               if k != "reply: show" and not k.startswith("refused: too many connections")}
        check(not bad and got.get("reply: show", 0) >= 100,
              f"700 shows at an open file limit of {limit}: {got}")
        for s in held:
            s.close()
        held = []
        libs = libs_of(root, a.elf)
        r = subprocess.run([a.qualctl, "--socket", sock, "submit", *libs, "--compile-only",
                            "--json"], capture_output=True, text=True, timeout=60)
        check(p.poll() is None, f"quald exited ({p.returncode}): {tail(root)}")
        check(r.returncode == 0, f"submit after the shows: exit {r.returncode}: "
                                 f"{r.stderr.strip()[-300:]}")
    finally:
        for s in held:
            s.close()
        if p.poll() is None:
            stop(p)


def tail(root):
    with open(os.path.join(root, "quald.log"), "rb") as f:
        return f.read()[-400:].decode(errors="replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quald", required=True)
    ap.add_argument("--qualctl", required=True)
    ap.add_argument("--elf", required=True, help="any ELF shared library")
    ap.add_argument("--log-mib", type=int, default=8)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--max-grown-mib", type=int, default=48)
    ap.add_argument("--jobs", type=int, default=6)
    ap.add_argument("scenario", choices=["memory", "replay", "list", "nofile"])
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="qual-stream-")
    try:
        rc = {"memory": scenario_memory, "replay": scenario_replay,
              "list": scenario_list, "nofile": scenario_nofile}[a.scenario](a, root)
    except AssertionError as e:
        print(f"FAIL {a.scenario}: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return rc or 0


if __name__ == "__main__":
    sys.exit(main())
