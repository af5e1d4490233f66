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
Every scenario starts its own quald in a fresh temporary folder and stops it
with SIGTERM, checking that it exits 0. Exits 0 when every check holds, 1
with the first failed check, 77 when skipped."""
import argparse
import grp
import os
import pwd
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

    def __init__(self, args, dir, extra):
        self.sock = os.path.join(dir, "quald.sock")
        self.err = open(os.path.join(dir, "quald.err"), "w+")
        self.proc = subprocess.Popen(
            [args.quald, "--socket", self.sock, "--state-dir", os.path.join(dir, "state"),
             "--worker", "/bin/false", "--compile-helper", "/bin/false"] + extra,
            stdout=self.err, stderr=self.err)
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


def scenario_peer(args, dir):
    if os.geteuid() != 0:
        log("skipped: the peer scenario needs root to create users and act as them")
        return 77
    try:
        grp.getgrnam(GROUP)
    except KeyError:
        subprocess.run(["groupadd", "--system", GROUP], check=True)
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


SCENARIOS = {"peer": scenario_peer, "tcp": scenario_tcp, "token_file": scenario_token_file}


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
