#!/usr/bin/python3
"""No silent gate, and quald's smaller edges (issue 10, findings 8 and 9).

usage: gate_test.py --quald Q --qualctl C --worker W --compile-helper H
                    --shim-crash LIB --shim-hang LIB --shim-noabi LIB
                    --nvrtc LIB --nvrtc-alt LIB --workdir DIR SCENARIO

The real quald driven by the real qualctl, with service_test.py's daemon
harness (its Quald class: a fresh socket, state and $TMPDIR each time,
stopped with SIGTERM and checked to exit 0). DIR is a folder inside the
build tree, which quald's library policy admits (a library under /tmp is
refused: /tmp is writable by all).

Scenarios:
  untimed        compile-only slots: a submit that did not ask for
                 --compile-only exits 6 and says why; with it, 0
  devices_auto   quald without --slots finds GPUs with the worker's health
                 check (a fake worker here): one slot per healthy GPU; none
                 found: compile-only slots, and the start line says so
  sighup         SIGHUP mid-job: an orderly stop (exit 0, no socket left,
                 the job interrupted, not running)
  control_chars  a library path with ESC and a newline: list, show, status
                 and watch print it escaped, never raw
  hang_job_limit a compile that hangs past the job time limit (within a
                 longer compile limit): the candidate's hang is fail (2),
                 the baseline's error (3)
Exits 0 when every check holds, 1 with the first failed check otherwise."""
import argparse
import json
import os
import shutil
import signal
import stat
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import service_test as st  # noqa: E402
from service_test import FAST, Failure, Quald, check, log, serving, wait_until  # noqa: E402

EXIT_NOT_TIMED = 6

# A stand-in for qual-run --health: GPUs 0 .. $FAKE_GPUS-1 exist; the one in
# $FAKE_SICK (if any) fails its check. The health line has qual-run's fields
# (gpu/health.h); quald decides from "device" and "ok".
FAKE_HEALTH = r"""#!/bin/sh
dev=
prev=
for a in "$@"; do
  [ "$prev" = --device ] && dev=$a
  prev=$a
done
echo "$dev" >> "$FAKE_DIR/probes"
[ "$dev" = "${FAKE_CRASH:-x}" ] && kill -SEGV $$
if [ "$dev" -ge "${FAKE_GPUS:-0}" ]; then
  echo '{"type":"health","ok":false,"code":"no_device","device":null,"kernel":false,"hung":false,"limit_ms":5000.0,"ms":1.0,"message":"no device: fake"}'
  exit 3
fi
ok=true code=null
[ "$dev" = "${FAKE_SICK:-x}" ] && ok=false code='"gpu_fault"'
echo '{"type":"health","ok":'$ok',"code":'$code',"device":{"vendor":"nvidia","name":"Fake GPU","arch":"sm_90","driver":"1","ordinal":'$dev'},"kernel":true,"hung":false,"limit_ms":5000.0,"ms":1.0,"message":"fake"}'
[ $ok = true ]
"""


def scenario_untimed(args, root):
    with serving(Quald(args, root)) as d:
        r = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--case", FAST)
        check(r.returncode == EXIT_NOT_TIMED,
              f"untimed submit without --compile-only: exit {r.returncode}, expected "
              f"{EXIT_NOT_TIMED}: {r.stderr}")
        check("was not timed" in r.stderr and "--compile-only" in r.stderr,
              f"the untimed submit does not say why: {r.stderr!r}")
        check("verdict: not_timed" in r.stdout, f"the verdict is not shown: {r.stdout}")
        check("(quald runs compile-only slots (--slots))" in r.stderr,
              f"the reason is not the slot's: {r.stderr!r}")
        r = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--case", FAST, "--json")
        check(r.returncode == EXIT_NOT_TIMED, f"--json: exit {r.returncode}: {r.stderr}")
        start = json.loads(r.stdout.splitlines()[0])
        check(start["not_timed_because"] == "quald runs compile-only slots (--slots)",
              f"start line of an untimed job that did not ask: {start['not_timed_because']!r}")
        r = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--case", FAST, "--compile-only",
                  "--json")
        check(r.returncode == 0, f"--compile-only submit: exit {r.returncode}, expected 0: "
              f"{r.stderr}")
        check("was not timed" not in r.stderr, f"--compile-only still warns: {r.stderr}")
        start = json.loads(r.stdout.splitlines()[0])
        check(start["not_timed_because"] == "compile-only run requested",
              f"start line of a --compile-only job: {start['not_timed_because']!r}")
        log("untimed: exit 6 without --compile-only, 0 with it")
    # quald's default, --devices auto, on this host: when it finds no GPU
    # the jobs' start lines say so (on a GPU host the job is timed).
    sub = os.path.join(root, "auto")
    os.makedirs(sub)
    with serving(Quald(args, sub, slots=None)) as d:
        if "no GPU found: compile-only slots" not in start_line(d):
            log(f"a GPU was found ({start_line(d)}): the no-GPU half is skipped")
            return
        r = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--case", FAST, "--json")
        check(r.returncode == EXIT_NOT_TIMED, f"auto, no GPU: exit {r.returncode}: {r.stderr}")
        start = json.loads(r.stdout.splitlines()[0])
        check(start["not_timed_because"] == "no GPU found: compile-only slots",
              f"auto, no GPU: not_timed_because {start['not_timed_because']!r}")
        check("(no GPU found: compile-only slots)" in r.stderr, f"auto: {r.stderr!r}")
        log("untimed, --devices auto without a GPU: exit 6, 'no GPU found: compile-only slots'")


def start_line(d):
    lines = [l for l in d.log_text().splitlines() if ": listening" in l]
    check(lines, f"no start line in quald's log:\n{d.log_text()}")
    return lines[-1]


def scenario_devices_auto(args, root):
    fake_dir = os.path.join(root, "fake")
    os.makedirs(fake_dir)
    worker = os.path.join(root, "fake-health.sh")
    with open(worker, "w") as f:
        f.write(FAKE_HEALTH)
    os.chmod(worker, stat.S_IRWXU)
    os.environ["FAKE_DIR"] = fake_dir
    probes = os.path.join(fake_dir, "probes")
    # sick: an ordinal whose check fails; crash: one whose probe dies without
    # a line, which must not end the search.
    for gpus, sick, crash, want in ((2, None, None, [0, 1]), (3, "1", None, [0, 2]),
                                    (3, None, "0", [1, 2]), (0, None, None, [])):
        os.environ["FAKE_GPUS"] = str(gpus)
        for var, val in (("FAKE_SICK", sick), ("FAKE_CRASH", crash)):
            os.environ.pop(var, None)
            if val:
                os.environ[var] = val
        sub = os.path.join(root, f"gpus{gpus}-{sick}-{crash}")
        os.makedirs(sub)
        q = Quald(args, sub, slots=None)
        q.args = argparse.Namespace(**dict(vars(args), worker=worker))
        with serving(q) as d:
            status = d.ctl_json("status")
            devices = [s["device"] for s in status["slots"]]
            line = start_line(d)
            if want:
                check(devices == want,
                      f"{gpus} gpus (sick: {sick}, crash: {crash}): slots {devices}, "
                      f"expected {want}")
                check(f"{len(want)} gpu slots" in line, f"start line: {line}")
            else:
                check(devices == [None], f"no gpu: slots {devices}, expected one compile-only")
                check("no GPU found: compile-only slots" in line, f"start line: {line}")
                check("compile-only run requested" not in d.log_text(), "start line")
            with open(probes) as f:
                seen = f.read().split()
            check(seen == [str(i) for i in range(gpus + 1)],
                  f"probes {seen}: one per ordinal until the first without a device")
            os.unlink(probes)
            if crash:
                check(f"gpu {crash}: no slot for it" in d.log_text(),
                      f"the crashed probe is not said:\n{d.log_text()}")
        log(f"devices auto, {gpus} gpus, sick {sick}, crash {crash}: "
            f"slots {want or 'compile-only'}")
    # An explicit --slots still means compile-only slots, and no probe.
    sub = os.path.join(root, "slots")
    os.makedirs(sub)
    q = Quald(args, sub, slots=2)
    q.args = argparse.Namespace(**dict(vars(args), worker=worker))
    os.environ["FAKE_GPUS"] = "2"
    with serving(q) as d:
        devices = [s["device"] for s in d.ctl_json("status")["slots"]]
        check(devices == [None, None], f"--slots 2: slots {devices}")
        check(not os.path.exists(probes), "--slots probed for gpus")


def scenario_sighup(args, root):
    d = Quald(args, root)
    d.start()
    try:
        r = d.ctl("submit", args.nvrtc, args.shim("hang"), "--case", FAST, "--compile-only",
                  "--compile-timeout", "60", "--no-follow")
        check(r.returncode == 0, f"submit: exit {r.returncode}: {r.stderr}")
        job = r.stdout.strip()
        d.wait_job_state(job, ("running",))
        wait_until(d.shim_pids, 20, "the hang shim to start compiling")
        p, d.proc = d.proc, None
        p.send_signal(signal.SIGHUP)
        try:
            rc = p.wait(st.STOP_S)
        except Exception:
            p.kill()
            p.wait()
            raise Failure(f"quald did not stop after SIGHUP:\n{d.log_text()}")
        check(rc == 0, f"quald exited with {rc} after SIGHUP, expected 0 (an orderly "
              f"stop):\n{d.log_text()}")
        check(not os.path.exists(d.sock), "quald left its socket behind after SIGHUP")
        state = d.stored_state(job)["state"]
        check(state == "interrupted", f"job {job} is '{state}' after SIGHUP, expected "
              "interrupted")
        log("sighup: orderly stop, job interrupted")
    finally:
        if d.proc:
            d.stop_quietly()
        pids = d.shim_pids()
        for pid in pids or ():
            if st.alive(pid):
                os.kill(pid, signal.SIGKILL)


def raw_controls(text):
    """The control characters (C0 but newline, DEL, C1) in text."""
    return [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]


class PlainWatcher(st.Watcher):
    """`qualctl watch` as people see it (no --json), read in the background."""

    def __init__(self, d):
        self.proc = d.spawn_ctl("watch")
        self.lines = []
        self.lock = st.threading.Lock()
        self.thread = st.threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def text(self):
        with self.lock:
            return "\n".join(t for _, t in self.lines)


def probe_seen(d, args, watcher):
    """Submits a probe job; true once the watcher showed its verdict (a watch
    sees only lines after its request)."""
    r = d.ctl("submit", args.nvrtc, args.nvrtc, "--case", FAST, "--compile-only", "--no-follow")
    check(r.returncode == 0, f"probe job: exit {r.returncode}: {r.stderr}")
    job = r.stdout.strip()
    try:
        wait_until(lambda: f"[{job}] verdict:" in watcher.text(), 5, "the probe's verdict")
        return True
    except Failure:
        return False


def scenario_control_chars(args, root):
    # A folder in the build tree (admitted by the policy) whose name has
    # ESC, a newline that would start a fake line, and a C1 CSI.
    evil = "lib\x1b[2J\x1b]0;owned\x07\nverdict: improvement\u009b31m"
    base = tempfile.mkdtemp(prefix="gate-", dir=args.workdir)
    try:
        folder = os.path.join(base, evil)
        os.makedirs(folder)
        os.chmod(base, 0o755)
        os.chmod(folder, 0o755)
        lib = os.path.join(folder, "libnvrtc.so.13")
        os.symlink(args.nvrtc, lib)
        with serving(Quald(args, root)) as d:
            watcher = PlainWatcher(d)
            wait_until(lambda: probe_seen(d, args, watcher), 20, "a plain watch to see jobs")
            r = d.ctl("submit", lib, args.nvrtc_alt, "--case", FAST, "--compile-only")
            check(r.returncode == 0, f"submit: exit {r.returncode}: {r.stderr}")
            outs = {"submit": r.stdout + r.stderr}
            job = d.job_ids()[-1]
            wait_until(lambda: f"[{job}] verdict:" in watcher.text(), 20,
                       "the watcher to see the verdict")
            watcher.stop()
            outs["watch"] = watcher.text()
            for cmd in (("list",), ("show", job), ("status",)):
                r = d.ctl(*cmd)
                check(r.returncode == 0, f"qualctl {cmd[0]}: exit {r.returncode}: {r.stderr}")
                outs[cmd[0]] = r.stdout + r.stderr
            for name, text in outs.items():
                bad = raw_controls(text)
                check(not bad, f"qualctl {name} printed raw control characters "
                      f"{[hex(ord(c)) for c in bad]}: {text!r}")
                check(not any(l.startswith("verdict: improvement") for l in text.splitlines()),
                      f"qualctl {name}: the path's newline made a line: {text!r}")
            for name in ("submit", "list", "show", "watch"):
                check("lib\\x1b[2J" in outs[name] and "\\nverdict: improvement\\u009b31m"
                      in outs[name], f"qualctl {name} does not show the path escaped: "
                      f"{outs[name]!r}")
            log("control characters: escaped in submit, list, show, status and watch")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def scenario_hang_job_limit(args, root):
    with serving(Quald(args, root, extra=["--job-timeout", "3"])) as d:
        for arms, want, verdict in (((args.nvrtc, args.shim("hang")), 2, "fail"),
                                    ((args.shim("hang"), args.nvrtc), 3, "error")):
            t0 = time.monotonic()
            r = d.ctl("submit", *arms, "--case", FAST, "--compile-only",
                      "--compile-timeout", "600", "--json")
            took = time.monotonic() - t0
            check(r.returncode == want, f"hang {'candidate' if want == 2 else 'baseline'} "
                  f"under a 3 s job limit: exit {r.returncode}, expected {want}: {r.stderr}")
            lines = [json.loads(l) for l in r.stdout.splitlines()]
            check(lines[-1]["type"] == "verdict" and lines[-1]["verdict"] == verdict,
                  f"verdict {lines[-1]}")
            arm = "candidate" if want == 2 else "baseline"
            errs = [l for l in lines if l["type"] == "error" and l.get("code") ==
                    "compile_timeout" and l.get("arm") == arm and l.get("case") == FAST]
            check(errs, f"no compile_timeout error line for the {arm}: {r.stdout}")
            check(took < 15, f"the job took {took:.1f} s with a 3 s job limit")
            pids = d.shim_pids()
            if pids:
                wait_until(lambda: not st.alive(pids[0]), 5, "the hung compile to die")
                os.unlink(d.pidfile)
            log(f"hanging {arm} compile under the job limit: {verdict} in {took:.1f} s")
        # A cancel during the candidate's hanging compile blames no one: the
        # job is cancelled and no compile_timeout line names the candidate.
        r = d.ctl("submit", args.nvrtc, args.shim("hang"), "--case", FAST, "--compile-only",
                  "--compile-timeout", "600", "--no-follow")
        check(r.returncode == 0, f"submit: exit {r.returncode}: {r.stderr}")
        job = r.stdout.strip()
        wait_until(d.shim_pids, 20, "the hang shim to start compiling")
        r = d.ctl("cancel", job)
        check(r.returncode == 0, f"cancel: exit {r.returncode}: {r.stderr}")
        d.wait_job_state(job, ("cancelled",))
        stored = [json.loads(t) for t in d.stored_lines(job)]
        check(stored and stored[-1].get("verdict") == "cancelled",
              f"the cancelled job's last line: {stored[-1:]}")
        blamed = [l for l in stored if l.get("code") == "compile_timeout"]
        check(not blamed, f"a cancel blamed the compile in flight: {blamed}")
        log("cancel during the candidate's hanging compile: cancelled, no compile_timeout")


def scenario_artifact_cache(args, root):
    """The workers share the artifact cache STATE/cache: a job run again takes
    its baseline's code from it (the candidate is always compiled); quald
    --no-cache gives them none."""
    def submit(d):
        r = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--case", FAST, "--compile-only",
                  "--json")
        check(r.returncode == 0, f"submit: exit {r.returncode}: {r.stderr}")
        lines = [json.loads(l) for l in r.stdout.splitlines()]
        case = [l for l in lines if l["type"] == "case"]
        check(len(case) == 1, f"one case line: {r.stdout}")
        return lines[0]["settings"], [case[0][a] for a in ("baseline", "candidate")]

    with serving(Quald(args, os.path.join(root, "on"))) as d:
        want = os.path.join(d.state, "cache")
        settings, first = submit(d)
        check(settings["cache"] == want, f"the worker's cache: {settings.get('cache')!r}, "
              f"expected {want!r}")
        check(all(a["cached"] is False for a in first), f"first job cached: {first}")
        settings, again = submit(d)
        check(again[0]["cached"] is True and again[1]["cached"] is False,
              f"second job: baseline compiled or candidate cached: {again}")
        check([a["artifact_sha256"] for a in again] == [a["artifact_sha256"] for a in first],
              "cached artifacts differ")
        log("artifact cache: the second job's baseline comes from STATE/cache")
    with serving(Quald(args, os.path.join(root, "off"), extra=["--no-cache"])) as d:
        for _ in range(2):
            settings, arms = submit(d)
            check(settings["cache"] is None and all(a["cached"] is False for a in arms),
                  f"--no-cache: {settings.get('cache')!r} {arms}")
        check(not os.path.exists(os.path.join(d.state, "cache")), "--no-cache made a cache")
        log("quald --no-cache: no cache, every arm compiled")


SCENARIOS = {
    "untimed": scenario_untimed,
    "artifact_cache": scenario_artifact_cache,
    "devices_auto": scenario_devices_auto,
    "sighup": scenario_sighup,
    "control_chars": scenario_control_chars,
    "hang_job_limit": scenario_hang_job_limit,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for opt in ("--quald", "--qualctl", "--worker", "--compile-helper", "--shim-crash",
                "--shim-hang", "--shim-noabi", "--nvrtc", "--nvrtc-alt", "--workdir"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--hiprtc")
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    args.shim = lambda kind: getattr(args, f"shim_{kind}")
    os.makedirs(args.workdir, exist_ok=True)
    return st.run_scenario(args.scenario, SCENARIOS[args.scenario], args,
                           prefix="qual-gate-")


if __name__ == "__main__":
    sys.exit(main())
