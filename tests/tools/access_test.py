#!/usr/bin/python3
"""Who may talk to quald: the real quald and the real qualctl (issue 4).

usage: access_test.py --quald Q --qualctl C SCENARIO

Scenarios (docs/quald.md, "Who may talk to quald", says what each should be):
  peer        over the Unix socket, a user that is not root, not quald's
              user and not in --group is refused with one line naming its
              uid, and qualctl exits 4; a member of the group is served.
              Needs root (to create the users and act as them); skipped
              otherwise (ctest sees exit 77).
  tcp         over TCP: no token, a wrong token, or a first line shaped like
              HTTP is refused with one line and the connection closed; the
              right token (--token-file or $QUAL_TOKEN_FILE) is served.
  token_file  quald refuses to start with --tcp but no --tcp-token-file, or
              with a token file whose mode is looser than 0640.
  flood       refused peers cost nothing lasting: connections refused on the
              TCP port (a wrong token) and held open never push out an
              unauthenticated one that then authenticates; with root, a
              flood of held connections by a user that is not allowed, on
              the Unix socket (quald's open file limit low) and on --http,
              leaves every request of an allowed user served.
Every scenario starts its own quald in a fresh temporary folder and stops it
with SIGTERM, checking that it exits 0. Exits 0 when every check holds, 1
with the first failed check, 77 when skipped."""
import argparse
import grp
import http.client
import os
import pwd
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

START_S = 10.0
STOP_S = 20.0

# Users and group the peer scenario creates once (system accounts, no home).
OUTSIDER = "qualtest_nobody"
MEMBER = "qualtest_member"
GROUP = "qualtest_grp"


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def log(text):
    print(text, flush=True)


class Quald:
    """quald on a socket in dir, with extra options; stopped by stop()."""

    def __init__(self, args, dir, extra, preexec_fn=None):
        self.sock = os.path.join(dir, "quald.sock")
        self.err = open(os.path.join(dir, "quald.err"), "w+")
        self.proc = subprocess.Popen(
            [args.quald, "--socket", self.sock, "--state-dir", os.path.join(dir, "state"),
             "--worker", "/bin/false", "--compile-helper", "/bin/false"] + extra,
            stdout=self.err, stderr=self.err, preexec_fn=preexec_fn)
        deadline = time.monotonic() + START_S
        # Ready once it says where it listens (its signal handlers are set
        # by then: a SIGTERM before would kill it).
        while "listening on" not in self.stderr():
            check(self.proc.poll() is None, f"quald exited at start: {self.stderr()}")
            check(time.monotonic() < deadline, "quald did not start listening")
            time.sleep(0.02)

    def stderr(self):
        with open(self.err.name) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(STOP_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise Failure("quald did not stop after SIGTERM")
        check(rc == 0, f"quald exited {rc} after SIGTERM: {self.stderr()}")


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    return p.returncode, p.stdout, p.stderr


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def ensure_account(name, group=None):
    try:
        pwd.getpwnam(name)
    except KeyError:
        cmd = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin"]
        if group:
            cmd += ["--groups", group]
        subprocess.run(cmd + [name], check=True)
    if group and name not in grp.getgrnam(group).gr_mem:
        subprocess.run(["usermod", "--append", "--groups", group, name], check=True)
    return pwd.getpwnam(name)


def ensure_group():
    try:
        grp.getgrnam(GROUP)
    except KeyError:
        subprocess.run(["groupadd", "--system", GROUP], check=True)


def scenario_peer(args, dir):
    if os.geteuid() != 0:
        log("skipped: the peer scenario needs root to create users and act as them")
        return 77
    ensure_group()
    outsider = ensure_account(OUTSIDER)
    member = ensure_account(MEMBER, GROUP)
    check(outsider.pw_gid != grp.getgrnam(GROUP).gr_gid, "the outsider's group is the allowed one")
    # Reachable by the test users: the folder, the socket, and qualctl
    # itself (the build tree may be private).
    os.chmod(dir, 0o755)
    qualctl = os.path.join(dir, "qualctl")
    shutil.copy(args.qualctl, qualctl)
    os.chmod(qualctl, 0o755)
    q = Quald(args, dir, ["--group", GROUP])
    try:
        os.chmod(q.sock, 0o666)
        rc, out, err = run(["setpriv", f"--reuid={outsider.pw_uid}", f"--regid={outsider.pw_gid}",
                            "--clear-groups", qualctl, "--socket", q.sock, "status"])
        log(f"outsider: exit {rc}: {err.strip()}")
        check(rc == 4, f"qualctl as {OUTSIDER} exited {rc}, want 4 (refused)")
        want = (f"quald refused the request: uid {outsider.pw_uid} is not allowed: not root, "
                f"not quald's user, not in group '{GROUP}'")
        check(want in err, f"qualctl as {OUTSIDER} said {err!r}, want {want!r}")
        check(out == "", f"qualctl as {OUTSIDER} printed {out!r}")
        # Raw: exactly one line, then the end.
        rc, out, err = run(["setpriv", f"--reuid={outsider.pw_uid}", f"--regid={outsider.pw_gid}",
                            "--clear-groups", sys.executable, "-c",
                            "import socket,sys\n"
                            "s=socket.socket(socket.AF_UNIX)\n"
                            f"s.connect({q.sock!r})\n"
                            "d=b''\n"
                            "while True:\n"
                            "  try: b=s.recv(4096)\n"
                            "  except ConnectionResetError: b=b''\n"
                            "  if not b: break\n"
                            "  d+=b\n"
                            "sys.stdout.write(d.decode())\n"])
        lines = out.splitlines()
        check(len(lines) == 1 and '"type":"refused"' in lines[0] and '"op":null' in lines[0],
              f"a raw outsider got {out!r}, want one refused line")
        # The member, by a supplementary group only.
        rc, out, err = run(["setpriv", f"--reuid={member.pw_uid}", f"--regid={member.pw_gid}",
                            "--init-groups", qualctl, "--socket", q.sock, "status"])
        log(f"member: exit {rc}")
        check(rc == 0, f"qualctl as {MEMBER} (in {GROUP}) exited {rc}: {err}")
        check("slot" in out, f"qualctl status as {MEMBER} printed {out!r}")
        # Root, still.
        rc, out, err = run([args.qualctl, "--socket", q.sock, "status"])
        check(rc == 0, f"qualctl as root exited {rc}: {err}")
        check(f"uid {outsider.pw_uid} is not allowed" in q.stderr(), "quald did not log the refusal")
    finally:
        q.stop()
    return 0


def tcp_lines(port, data):
    """Sends data on a fresh TCP connection; returns every line until the end."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)  # served connections end after their replies
    got = b""
    while True:
        try:
            b = s.recv(65536)
        except ConnectionResetError:
            b = b""
        if not b:
            break
        got += b
    s.close()
    return got.decode().splitlines()


def scenario_tcp(args, dir):
    token = "tok-" + os.urandom(12).hex()
    tf = os.path.join(dir, "token")
    with open(tf, "w") as f:
        f.write(token + "\n")
    os.chmod(tf, 0o640)
    bad = os.path.join(dir, "bad-token")
    with open(bad, "w") as f:
        f.write(token[:-1] + "x\n")
    port = free_port()
    q = Quald(args, dir, ["--tcp", str(port), "--tcp-token-file", tf])
    try:
        env = dict(os.environ)
        env.pop("QUAL_TOKEN_FILE", None)
        addr = f"127.0.0.1:{port}"
        # Wait for the port (the socket file exists first).
        deadline = time.monotonic() + START_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                check(time.monotonic() < deadline, "quald's tcp port does not answer")
                time.sleep(0.05)
        rc, out, err = run([args.qualctl, "--tcp", addr, "status"], env)
        check(rc == 4 and "authentication required" in err,
              f"no token: exit {rc}, {err!r}; want 4 and 'authentication required'")
        rc, out, err = run([args.qualctl, "--tcp", addr, "--token-file", bad, "status"], env)
        check(rc == 4 and "wrong token" in err, f"wrong token: exit {rc}, {err!r}")
        rc, out, err = run([args.qualctl, "--tcp", addr, "--token-file", tf, "status"], env)
        check(rc == 0 and "slot" in out, f"right token: exit {rc}, {err!r}")
        env["QUAL_TOKEN_FILE"] = tf
        rc, out, err = run([args.qualctl, "--tcp", addr, "list"], env)
        check(rc == 0, f"right token from $QUAL_TOKEN_FILE: exit {rc}, {err!r}")
        for data in (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                     b"POST /api HTTP/1.1\r\nContent-Type: application/json\r\n\r\n"
                     + b'{"op":"auth","token":"' + token.encode() + b'"}\n',
                     b'{"op":"status"}\n'):
            lines = tcp_lines(port, data)
            check(len(lines) == 1 and '"type":"refused"' in lines[0],
                  f"{data[:20]!r}...: got {lines!r}, want one refused line then the end")
        check("http requests are refused" in tcp_lines(port, b"GET / HTTP/1.1\r\n\r\n")[0],
              "an http request's refusal does not say so")
        lines = tcp_lines(port, b'{"op":"auth","token":"' + token.encode() + b'"}\n'
                          b'{"op":"status","id":2}\n')
        check(len(lines) == 2 and '"op":"auth"' in lines[0] and '"op":"status"' in lines[1],
              f"auth then status got {lines!r}")
        # The Unix socket needs no token.
        rc, out, err = run([args.qualctl, "--socket", q.sock, "status"], env)
        check(rc == 0, f"unix socket: exit {rc}, {err!r}")
    finally:
        q.stop()
    return 0


def scenario_token_file(args, dir):
    port = free_port()
    base = [args.quald, "--socket", os.path.join(dir, "s"), "--state-dir",
            os.path.join(dir, "state"), "--worker", "/bin/false", "--compile-helper", "/bin/false"]
    rc, out, err = run(base + ["--tcp", str(port)])
    check(rc == 4 and "--tcp needs --tcp-token-file" in err, f"no token file: exit {rc}, {err!r}")
    tf = os.path.join(dir, "token")
    with open(tf, "w") as f:
        f.write("secret\n")
    for mode in (0o644, 0o660, 0o604, 0o740):
        os.chmod(tf, mode)
        rc, out, err = run(base + ["--tcp", str(port), "--tcp-token-file", tf])
        check(rc == 4 and f"has mode {mode:04o}: it must be 0640 or stricter" in err,
              f"token file mode {mode:04o}: exit {rc}, {err!r}")
    with open(os.path.join(dir, "empty"), "w"):
        pass
    os.chmod(os.path.join(dir, "empty"), 0o600)
    rc, out, err = run(base + ["--tcp", str(port), "--tcp-token-file", os.path.join(dir, "empty")])
    check(rc == 4 and "must hold a token" in err, f"empty token file: exit {rc}, {err!r}")
    # 0640 and 0600 are accepted.
    for mode in (0o640, 0o600):
        os.chmod(tf, mode)
        q = Quald(args, dir, ["--tcp", str(port), "--tcp-token-file", tf])
        q.stop()
    return 0


# Run as a user that is not allowed: keeps up to N connections to ADDR (a
# Unix socket's path, or HOST:PORT) open without reading, opening new ones
# (without waiting on a full backlog) for HOLD seconds; says "ready K" once
# it has tried N.
FLOODER = """
import collections, socket, sys, time
addr, n, hold = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
socks = collections.deque()
tried = 0
end = time.monotonic() + hold
while time.monotonic() < end:
    if addr.startswith("/"):
        s = socket.socket(socket.AF_UNIX)
        target = addr
    else:
        host, port = addr.rsplit(":", 1)
        s = socket.socket()
        target = (host, int(port))
    s.setblocking(False)
    if s.connect_ex(target) in (0, 115):  # connected, or EINPROGRESS
        socks.append(s)
    else:
        s.close()
        time.sleep(0.001)
    if len(socks) > n:
        socks.popleft().close()
    tried += 1
    if tried == n:
        print("ready", len(socks), flush=True)
"""


def flood(user, addr, n, hold, requests):
    """While user holds n connections to addr open, requests() runs; its
    result is returned. The flood is over when this returns."""
    p = subprocess.Popen(["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
                          "--clear-groups", sys.executable, "-c", FLOODER, addr, str(n),
                          str(hold)], stdout=subprocess.PIPE, text=True)
    try:
        ready = p.stdout.readline().split()
        check(ready and ready[0] == "ready", f"the flooder said {ready!r}")
        log(f"flood: {ready[1]} of {n} connections to {addr} open, by uid {user.pw_uid}")
        return requests()
    finally:
        p.kill()
        p.wait()


def flood_tcp(args, dir):
    """Refused TCP connections (a wrong token) held open do not count as
    unauthenticated: with --max-unauthenticated 2, an idle connection
    survives four refused ones and then authenticates."""
    token = "tok-" + os.urandom(12).hex()
    tf = os.path.join(dir, "token")
    with open(tf, "w") as f:
        f.write(token + "\n")
    os.chmod(tf, 0o640)
    port = free_port()
    q = Quald(args, dir, ["--tcp", str(port), "--tcp-token-file", tf,
                          "--max-unauthenticated", "2"])
    try:
        honest = socket.create_connection(("127.0.0.1", port), timeout=10)
        time.sleep(0.2)  # accepted before the refused ones
        held = []
        for i in range(4):
            w = socket.create_connection(("127.0.0.1", port), timeout=10)
            w.sendall(b'{"op":"auth","token":"wrong"}\n')
            line = w.makefile("rb").readline()
            check(b'"wrong token"' in line, f"a wrong token got {line!r}")
            held.append(w)  # open: quald lingers on it
        honest.sendall(b'{"op":"auth","token":"' + token.encode() + b'"}\n')
        line = honest.makefile("rb").readline()
        check(b'"type":"reply"' in line and b'"op":"auth"' in line,
              f"an unauthenticated connection after 4 refused ones got {line!r}")
        for w in held + [honest]:
            w.close()
    finally:
        q.stop()


def flood_unix(args, dir, outsider):
    """Refused Unix connections held open (each lingers) cannot take quald's
    descriptors: with a low open file limit, quald never runs out of them
    (it would say so), and root's requests are served."""
    def low_nofile():
        resource.setrlimit(resource.RLIMIT_NOFILE, (100, resource.getrlimit(
            resource.RLIMIT_NOFILE)[1]))
    q = Quald(args, dir, ["--group", GROUP, "--max-connections", "16", "--slots", "1"],
              preexec_fn=low_nofile)
    try:
        os.chmod(q.sock, 0o666)

        def requests():
            failed = []
            for i in range(10):
                rc, out, err = run([args.qualctl, "--socket", q.sock, "status"])
                if rc != 0:
                    failed.append(err.strip())
                time.sleep(0.1)
            return failed
        failed = flood(outsider, q.sock, 300, 4, requests)
        check(not failed, f"{len(failed)} of 10 statuses failed during the flood: {failed[:2]}")
        emfile = [x for x in q.stderr().splitlines() if "Too many open files" in x]
        check(not emfile, f"refused connections took quald's descriptors: {emfile[:1]}")
    finally:
        q.stop()


def flood_http(args, dir, outsider):
    """Refused HTTP connections held open do not count against the 256
    served: every GET of root's is answered during a flood of 400."""
    q = Quald(args, dir, ["--group", GROUP, "--slots", "1", "--http", "127.0.0.1:0"])
    try:
        port = int(re.search(r"http on http://127\.0\.0\.1:([0-9]+)/", q.stderr()).group(1))

        def requests():
            failed = []
            for i in range(20):
                try:
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                    c.request("GET", "/api/status")
                    r = c.getresponse()
                    r.read()
                    c.close()
                    if r.status != 200:
                        failed.append(f"status {r.status}")
                except (OSError, http.client.HTTPException) as e:
                    failed.append(repr(e))
                time.sleep(0.05)
            return failed
        failed = flood(outsider, f"127.0.0.1:{port}", 400, 4, requests)
        check(not failed, f"{len(failed)} of 20 GETs failed during the flood: {failed[:2]}")
    finally:
        q.stop()


def scenario_flood(args, dir):
    for sub in ("tcp", "unix", "http"):
        os.makedirs(os.path.join(dir, sub))
    flood_tcp(args, os.path.join(dir, "tcp"))
    if os.geteuid() != 0:
        log("the unix and http floods need root to be another user: not run")
        return 0
    ensure_group()
    outsider = ensure_account(OUTSIDER)
    for d in (dir, os.path.join(dir, "unix")):
        os.chmod(d, 0o755)
    flood_unix(args, os.path.join(dir, "unix"), outsider)
    flood_http(args, os.path.join(dir, "http"), outsider)
    return 0


SCENARIOS = {"peer": scenario_peer, "tcp": scenario_tcp, "token_file": scenario_token_file,
             "flood": scenario_flood}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quald", required=True)
    ap.add_argument("--qualctl", required=True)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    dir = tempfile.mkdtemp(prefix="qual-access-")
    try:
        rc = SCENARIOS[args.scenario](args, dir)
    except Failure as e:
        log(f"FAIL: {args.scenario}: {e}")
        return 1
    finally:
        if not os.environ.get("QUAL_KEEP_TMP"):
            shutil.rmtree(dir, ignore_errors=True)
    if rc == 0:
        log(f"ok: {args.scenario}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
