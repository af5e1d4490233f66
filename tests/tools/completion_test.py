#!/usr/bin/python3
"""The shell completions (dist/completion/) against the built programs.

usage: completion_test.py BIN_DIR COMPLETION_DIR bash|zsh

Both run in a scratch folder holding libfoo.so, libnvrtc.so.13, notes.txt and
a folder sub/, with BIN_DIR first on PATH, beside a fake quald on a Unix
socket that answers `list` with two jobs (j000007, j000003).

  bash  sources qual.bash and calls the completion functions with
        COMP_WORDS and COMP_CWORD set, as bash does, checking COMPREPLY:
        qualctl's commands (those `qualctl help` lists), an option of
        submit, libraries for submit's operands and qual-run's (not
        notes.txt), folders for quald --allow-root, the values of
        --gate-slower, the job ids for show (none without a daemon).
  zsh   zsh -n on _qual, then a real compsys run: an interactive zsh on a
        pseudo-terminal with _qual in its fpath and compinit loaded gets the
        start of a command line and a Tab; what zle prints must hold the
        completion (a command, an option, a library, the job ids).

Exits 0 when every case holds, 1 naming those that do not."""
import json
import os
import pty
import re
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time

JOBS = ["j000007", "j000003"]
failures = []


def check(ok, what, got):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else f": got {got!r}"))
    if not ok:
        failures.append(what)


def fake_quald(path):
    """Answers every request with a list reply naming JOBS (qualctl's list
    is the only request a completion sends)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(16)

    def serve():
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            with c:
                req = json.loads(c.makefile("rb").readline() or b"{}")
                jobs = [{"job": j, "state": "done", "verdict": "neutral"} for j in JOBS]
                reply = {"type": "reply", "op": req.get("op"), "id": req.get("id", 1),
                         "jobs": jobs}
                c.sendall(json.dumps(reply, separators=(",", ":")).encode() + b"\n")

    threading.Thread(target=serve, daemon=True).start()
    return s


def bash_cases(comp, bindir, sock):
    commands = subprocess.run([os.path.join(bindir, "qualctl"), "help"], text=True,
                              stdout=subprocess.PIPE).stdout
    commands = sorted(set(re.findall(r"^\s+qualctl ([a-z][a-z-]*)", commands, re.M)))
    # words (the last is the one completed), function, check, what
    cases = [
        (["qualctl", ""], "_qualctl", lambda r: sorted(r) == commands,
         "qualctl: the commands qualctl help lists"),
        (["qualctl", "--socket", sock, "sh"], "_qualctl", lambda r: r == ["show"],
         "qualctl after a global option: show"),
        (["qualctl", "submit", "--no-f"], "_qualctl", lambda r: r == ["--no-follow"],
         "qualctl submit --no-f: --no-follow"),
        (["qualctl", "submit", "--pa"], "_qualctl", lambda r: r == ["--pairs"],
         "qualctl submit --pa: --pairs"),
        (["qualctl", "submit", ""], "_qualctl",
         lambda r: sorted(r) == ["libfoo.so", "libnvrtc.so.13", "sub"],
         "qualctl submit: libraries and folders, not notes.txt"),
        (["qualctl", "submit", "libfoo.so", "libnvrtc.so.13", ""], "_qualctl",
         lambda r: r == [], "qualctl submit after two libraries: nothing"),
        (["qualctl", "submit", "--gate-slower", ""], "_qualctl",
         lambda r: sorted(r) == ["beyond", "significant"], "--gate-slower: its values"),
        (["qualctl", "submit", "--case", "gemm_i8-256x5"], "_qualctl",
         lambda r: r == ["gemm_i8-256x512x256"], "--case: qual-run --list's cases"),
        (["qualctl", "--socket", sock, "show", ""], "_qualctl",
         lambda r: sorted(r) == sorted(JOBS), "qualctl show: quald's job ids"),
        (["qualctl", "--socket", sock + ".none", "cancel", ""], "_qualctl",
         lambda r: r == [], "qualctl cancel without a daemon: nothing"),
        (["qualctl", "quarantine", ""], "_qualctl",
         lambda r: sorted(r) == ["clear", "list"], "qualctl quarantine: list, clear"),
        (["quald", "--allow-r"], "_qual_program", lambda r: r == ["--allow-root"],
         "quald --allow-r: --allow-root"),
        (["quald", "--allow-root", ""], "_qual_program", lambda r: r == ["sub"],
         "quald --allow-root: folders"),
        (["quald", "--calibrate-lib", "lib"], "_qual_program",
         lambda r: sorted(r) == ["libfoo.so", "libnvrtc.so.13"], "quald --calibrate-lib: libraries"),
        (["qual-run", "libn"], "_qual_program", lambda r: r == ["libnvrtc.so.13"],
         "qual-run: libraries"),
        (["qual-run", "--compile-o"], "_qual_program",
         lambda r: sorted(r) == ["--compile-only", "--compile-only-because"],
         "qual-run --compile-o: its options"),
        (["qual-judge", "no"], "_qual_program", lambda r: r == ["notes.txt"],
         "qual-judge: any file"),
        (["qual-judge", "--format", ""], "_qual_program",
         lambda r: sorted(r) == ["json", "table"], "qual-judge --format: table, json"),
    ]
    script = [f"source {comp}/qual.bash"]
    for n, (words, fn, _, _) in enumerate(cases):
        quoted = " ".join("'" + w + "'" for w in words)
        script.append(f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; COMPREPLY=(); "
                      f"{fn}; printf '%s\\n' '<{n}>' \"${{COMPREPLY[@]}}\"")
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", "\n".join(script)],
                         text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=120).stdout
    parts = re.split(r"^<(\d+)>\n", out, flags=re.M)
    if parts[0].strip():
        check(False, "bash: nothing on stderr", parts[0])
    got = {int(parts[i]): [l for l in parts[i + 1].split("\n") if l]
           for i in range(1, len(parts), 2)}
    for n, (words, _, ok, what) in enumerate(cases):
        r = got.get(n)
        check(r is not None and ok(r), "bash: " + what, r)


ANSI = re.compile(r"\x1b(\[[0-9;?]*[a-zA-Z]|[()][A-Z0-9]|[=>])|[\x00-\x08\x0e-\x1f]")


def zsh_cases(comp, sock):
    p = subprocess.run(["zsh", "-n", os.path.join(comp, "_qual")], text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    check(p.returncode == 0 and not p.stdout, "zsh -n _qual", p.stdout)
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp("zsh", ["zsh", "-f", "-i"])

    def read(until=None, seconds=5.0):
        out, end = "", time.monotonic() + seconds
        while time.monotonic() < end:
            r, _, _ = select.select([fd], [], [], 0.1)
            if r:
                try:
                    out += os.read(fd, 65536).decode(errors="replace")
                except OSError:
                    break
            elif until and until(ANSI.sub("", out)):
                break
        return ANSI.sub("", out)

    os.write(fd, (f"fpath=({comp} $fpath); autoload -Uz compinit; compinit -u -D; "
                  "zstyle ':completion:*' list-prompt ''; LISTMAX=0; "
                  "unsetopt list_ambiguous; "
                  "print READY$((6*7))\n").encode())
    check("READY42" in read(lambda o: "READY42" in o, 20), "zsh: compinit", "")
    cases = [
        ("qualctl su", lambda o: "submit" in o, "qualctl su: submit"),
        ("qualctl submit --no-f", lambda o: "--no-follow" in o, "qualctl submit: --no-follow"),
        (f"qualctl --socket {sock} show ",
         lambda o: all(j in o for j in JOBS), "qualctl show: quald's job ids"),
        ("qualctl submit libf", lambda o: "libfoo.so" in o, "qualctl submit: a library"),
        ("qual-run libn", lambda o: "libnvrtc.so.13" in o, "qual-run: a library"),
        ("qual-run not", lambda o: "notes.txt" not in o, "qual-run: no notes.txt"),
        ("quald --allow-r", lambda o: "--allow-root" in o, "quald: --allow-root"),
        ("qual-judge --format t", lambda o: "table" in o, "qual-judge --format: table"),
    ]
    for line, ok, what in cases:
        os.write(fd, line.encode() + b"\t")
        out = read(ok, 5.0)
        # Ctrl-C: drop the line (and any listing) for the next case.
        os.write(fd, b"\x03")
        read(None, 0.3)
        check(ok(out), "zsh: " + what, out[-300:])
    os.write(fd, b"exit\n")
    read(None, 0.5)
    os.close(fd)
    os.waitpid(pid, 0)


def main(argv):
    if len(argv) != 3 or argv[2] not in ("bash", "zsh"):
        sys.exit(__doc__)
    bindir, comp, shell = (os.path.abspath(argv[0]), os.path.abspath(argv[1]), argv[2])
    with tempfile.TemporaryDirectory(prefix="qual-completion-") as tmp:
        for name in ("libfoo.so", "libnvrtc.so.13", "notes.txt"):
            open(os.path.join(tmp, name), "w").close()
        os.mkdir(os.path.join(tmp, "sub"))
        sock = os.path.join(tmp, "q.sock")
        server = fake_quald(sock)
        os.chdir(tmp)
        os.environ.update(PATH=bindir + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
                          HOME=tmp, TERM="xterm", LC_ALL="C.UTF-8")
        os.environ.pop("QUAL_SOCKET", None)
        if shell == "bash":
            bash_cases(comp, bindir, sock)
        else:
            zsh_cases(comp, sock)
        server.close()
    if failures:
        print(f"{len(failures)} failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
