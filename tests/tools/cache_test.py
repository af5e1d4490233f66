#!/usr/bin/python3
"""The compile phase and the artifact cache of qual-run, end to end.

usage: cache_test.py --run QUAL_RUN --nvrtc LIB --nvrtc-alt LIB --out DIR
                     [--shim-hang LIB]

Compile-only runs of the real nvrtc against its alt build, in a fresh
folder under DIR:

  - a first run with --cache C compiles every arm (cached false) and leaves
    entries in C; its start line names C and the compile jobs in force;
  - a second run with the same cache compiles no baseline: every baseline
    arm says cached true, with the first run's artifact_sha256, and every
    candidate arm cached false (the candidate is always compiled);
  - the library's folder is in the key: a baseline copied with its
    builtins into a folder of its own is cached, then a change of the
    builtins file (its mtime, then its bytes truncated) is a miss, and
    the truncated builtins are not covered up by the cache;
  - entries whose code was changed are misses: warned about once on
    stderr, recompiled (cached false for every baseline arm, the same
    artifacts), and stored again (the next run hits every baseline);
  - an entry whose compile_ms is past this run's --compile-timeout is a
    miss (compiled again, under the limit), and a hit under a longer one;
  - --no-cache writes nothing (not in $XDG_CACHE_HOME, not in $HOME) and
    the start line's cache is null; without --cache, $XDG_CACHE_HOME/qual/
    artifacts is the cache; with neither XDG_CACHE_HOME nor HOME, none;
  - --compile-jobs 1 and --compile-jobs 4 print the same lines apart from
    times (time, compile_ms, block_seed) and the compile_jobs setting;
  - with --shim-hang (a candidate whose every compile hangs) and
    --compile-jobs 4: once four candidate compiles hang at once, the job's
    time limit (QUAL_SIGNAL_TIME_LIMIT, SIGUSR1) gets exactly one
    compile_timeout line, naming the candidate of the first case, and exit
    status 2 (fail); with the shim as baseline too, compiles of both arms
    hang at once: one compile_timeout line of neither arm, listing the four
    compiles, and exit status 3 (error).

Exits 0 when every check holds, 1 with the failed check otherwise."""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TWO_CASES = ["--case", "attention_f16-128", "--case", "gemm_i8-256x512x256"]


def check(cond, what):
    if not cond:
        print(f"FAIL: {what}", file=sys.stderr)
        sys.exit(1)


def run(args, extra, env=None):
    e = dict(os.environ if env is None else env)
    r = subprocess.run([args.run, args.nvrtc, args.nvrtc_alt, "--compile-only", *extra],
                       capture_output=True, text=True, env=e, timeout=600)
    check(r.returncode == 0, f"qual-run {' '.join(extra)}: exit {r.returncode}: {r.stderr}")
    return [json.loads(l) for l in r.stdout.splitlines()], r.stderr


def cases(lines):
    return [l for l in lines if l["type"] == "case"]


def arms(lines):
    """(case, arm) -> the arm's object, for every case line."""
    return {(c["case"], a): c[a] for c in cases(lines) for a in ("baseline", "candidate")}


def settings(lines):
    return lines[0]["settings"]


def files_under(path):
    return [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs]


def without_times(lines):
    out = []
    for l in lines:
        l = json.loads(json.dumps(l))
        l.pop("time", None)
        l.pop("time_s", None)  # the verdict line's time split
        s = l.get("settings")
        if s:
            s.pop("block_seed", None)
            s.pop("compile_jobs", None)
        for a in ("baseline", "candidate"):
            if isinstance(l.get(a), dict):
                l[a].pop("compile_ms", None)
        out.append(l)
    return out


def hanging_children(pid, lib):
    """The compile children of pid whose library is lib. A compile child's
    command line names no library (docs/quald.md, "Workers"): its arguments
    are in the file its $QUAL_COMPILE_ARGS names (NUL-separated)."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != pid:
                continue
            with open(f"/proc/{d}/environ", "rb") as f:
                env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
            with open(env[b"QUAL_COMPILE_ARGS"], "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, IndexError, ValueError, KeyError):
            continue
        if lib.encode() in argv:
            found.append(int(d))
    return found


def libdir_in_key(args, root, env):
    """A sibling of the baseline library changed: its entries are misses."""
    lib = os.path.join(root, "lib")
    os.makedirs(lib)
    src = os.path.dirname(os.path.realpath(args.nvrtc))
    base = os.path.join(lib, os.path.basename(args.nvrtc))
    shutil.copy2(os.path.realpath(args.nvrtc), base)
    builtins = [f for f in os.listdir(src) if f.startswith("libnvrtc-builtins.so.")
                and not os.path.islink(os.path.join(src, f))]
    for f in builtins:
        shutil.copy2(os.path.join(src, f), os.path.join(lib, f))
    cache = os.path.join(root, "libdir-cache")
    one = ["--cache", cache, "--case", "gemm_i8-256x512x256"]

    def go():
        r = subprocess.run([args.run, base, args.nvrtc_alt, "--compile-only", *one],
                           capture_output=True, text=True, env=env, timeout=600)
        return r, [json.loads(l) for l in r.stdout.splitlines()]

    go()
    r, lines = go()
    check(all(c["baseline"]["cached"] is True for c in cases(lines)),
          f"the copied baseline was not cached: {r.stdout}")
    check(all(c["candidate"]["cached"] is False for c in cases(lines)),
          f"a candidate arm from the cache: {r.stdout}")
    path = os.path.join(lib, builtins[0])
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
    r, lines = go()
    check(cases(lines) and all(c["baseline"]["cached"] is False for c in cases(lines)),
          f"a touched builtins file still hit the cache: {r.stdout}")
    os.truncate(path, 4096)
    r, lines = go()
    check(not any(c["baseline"].get("cached") for c in cases(lines)),
          f"truncated builtins served from the cache: {r.stdout}")
    check(r.returncode != 0, f"truncated builtins: exit 0: {r.stdout}")
    print("library folder in the key: a touched and a truncated builtins file are misses")


def stopped_in_flight(args, env, baseline):
    """qual-run of baseline against the hanging shim, stopped by the time
    limit once four compiles hang at once: its lines and exit status."""
    p = subprocess.Popen([args.run, baseline, args.shim_hang, "--compile-only",
                          "--no-cache", "--compile-jobs", "4", "--compile-timeout", "600"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 300
    try:
        while len(hanging_children(p.pid, args.shim_hang)) < 4:
            check(p.poll() is None, f"qual-run ended early: {p.returncode}")
            check(time.monotonic() < deadline, "four hanging compiles never ran at once")
            time.sleep(0.1)
        p.send_signal(signal.SIGUSR1)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    lines = [json.loads(l) for l in out.splitlines()]
    blamed = [l for l in lines if l["type"] == "error" and l.get("code") == "compile_timeout"]
    return lines, blamed, p.returncode, err


def time_limit_in_flight(args, env):
    """Four candidate compiles hang at once: the time limit blames the first.
    Compiles of both arms hang at once: it blames neither."""
    lines, blamed, rc, err = stopped_in_flight(args, env, args.nvrtc)
    first = lines[0]["settings"]["cases"][0]
    check(len(blamed) == 1 and blamed[0]["arm"] == "candidate" and blamed[0]["case"] == first,
          f"compile_timeout lines {blamed}, expected one for the candidate of {first}")
    check(rc == 2, f"exit {rc}, expected 2: {err}")
    print(f"time limit with four compiles in flight: the candidate of {first} blamed, exit 2")
    lines, blamed, rc, err = stopped_in_flight(args, env, args.shim_hang)
    second = lines[0]["settings"]["cases"][1]
    check(len(blamed) == 1 and blamed[0]["arm"] is None and
          f"{first} (baseline), {first} (candidate), {second} (baseline), {second} (candidate)"
          in blamed[0]["message"], f"compile_timeout lines {blamed}, expected one of neither "
          "arm listing the four compiles")
    check(rc == 3, f"exit {rc}, expected 3 (error): {err}")
    print("time limit with both arms' compiles in flight: neither blamed, exit 3")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--run", required=True)
    p.add_argument("--nvrtc", required=True)
    p.add_argument("--nvrtc-alt", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--shim-hang")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    root = tempfile.mkdtemp(prefix="cache-", dir=args.out)
    cache = os.path.join(root, "artifacts")
    home = os.path.join(root, "home")
    xdg = os.path.join(root, "xdg")
    os.makedirs(home)
    base_env = dict(os.environ, HOME=home, XDG_CACHE_HOME=xdg)

    # A cold cache: everything compiled, then stored.
    first, _ = run(args, ["--cache", cache], base_env)
    check(settings(first)["cache"] == cache, f"start line's cache: {settings(first)}")
    check(isinstance(settings(first)["compile_jobs"], int) and
          1 <= settings(first)["compile_jobs"] <= 16, f"compile_jobs: {settings(first)}")
    a1 = arms(first)
    check(len(a1) == 2 * len(settings(first)["cases"]), "a case line for every case")
    check(all(a["compiled"] and a["cached"] is False for a in a1.values()),
          f"a cold cache gave cached arms: {a1}")
    entries = [f for f in files_under(cache) if f.endswith("/code")]
    digests = {a["artifact_sha256"] for a in a1.values()}
    check(len(entries) >= len(digests),
          f"entries {entries} for artifacts {digests}")
    print(f"cold cache: {len(a1)} arms compiled, {len(entries)} entries")

    # Warm: no baseline compiled, every candidate compiled, the same artifacts.
    second, _ = run(args, ["--cache", cache], base_env)
    a2 = arms(second)
    check(a2.keys() == a1.keys(), "the same case lines")
    for k, a in a2.items():
        check(a["cached"] is (k[1] == "baseline"), f"{k}: cached {a['cached']}: {a}")
        check(a["artifact_sha256"] == a1[k]["artifact_sha256"],
              f"{k}: cached artifact {a['artifact_sha256']}, compiled {a1[k]['artifact_sha256']}")
    print("warm cache: every baseline arm cached, every candidate compiled, the same artifacts")

    # Corrupted entries (every one, so that the baseline's are among them):
    # misses, recompiled, stored again.
    for victim in entries:
        with open(victim, "r+b") as f:
            f.seek(64)
            b = f.read(1)
            f.seek(64)
            f.write(bytes([b[0] ^ 0xff]))
    third, err = run(args, ["--cache", cache], base_env)
    check("artifact cache entry" in err and "is bad" in err,
          f"no warning about the bad entry: {err!r}")
    check(err.count("is bad") == 1, f"more than one warning: {err!r}")
    a3 = arms(third)
    recompiled = [k for k, a in a3.items() if a["cached"] is False]
    check(all(a3[k]["cached"] is False for k in a3 if k[1] == "baseline"),
          "a corrupted entry was used")
    check(all(a3[k]["artifact_sha256"] == a1[k]["artifact_sha256"] for k in a3),
          "recompiled artifacts differ")
    fourth, err = run(args, ["--cache", cache], base_env)
    check(all(a["cached"] is (k[1] == "baseline") for k, a in arms(fourth).items()) and
          "is bad" not in err,
          f"the recompiled entry was not stored again: {err!r}")
    print(f"corrupted entry: {len(recompiled)} arms recompiled, then cached again")

    # An entry whose compile took longer than this run's limit is a miss.
    for meta in [f for f in files_under(cache) if f.endswith("/meta.json")]:
        with open(meta) as f:
            m = json.load(f)
        m["compile_ms"] = 200000.0
        with open(meta, "w") as f:
            json.dump(m, f)
    lines, _ = run(args, ["--cache", cache, *TWO_CASES], base_env)
    check(all(a["cached"] is False for a in arms(lines).values()),
          f"an entry of a 200 s compile served under a 120 s limit: {arms(lines)}")
    lines, _ = run(args, ["--cache", cache, "--compile-timeout", "300", *TWO_CASES], base_env)
    check(all(a["cached"] is (k[1] == "baseline") for k, a in arms(lines).items()),
          f"an entry of a 200 s compile not served under a 300 s limit: {arms(lines)}")
    print("an entry of a compile longer than --compile-timeout: a miss")

    # --no-cache writes nothing; the default cache is $XDG_CACHE_HOME's.
    lines, _ = run(args, ["--no-cache", *TWO_CASES], base_env)
    check(settings(lines)["cache"] is None, f"--no-cache start line: {settings(lines)}")
    check(all(a["cached"] is False for a in arms(lines).values()), "--no-cache hit")
    check(not os.path.exists(xdg) and not files_under(home),
          f"--no-cache wrote {files_under(xdg) + files_under(home)}")
    lines, _ = run(args, TWO_CASES, base_env)
    want = os.path.join(xdg, "qual", "artifacts")
    check(settings(lines)["cache"] == want, f"default cache {settings(lines)['cache']}")
    check(any(f.endswith("/code") for f in files_under(want)), "default cache empty")
    env = {k: v for k, v in base_env.items() if k not in ("HOME", "XDG_CACHE_HOME")}
    lines, _ = run(args, TWO_CASES, env)
    check(settings(lines)["cache"] is None, "a cache with neither HOME nor XDG_CACHE_HOME")
    print("--no-cache wrote nothing; default $XDG_CACHE_HOME/qual/artifacts; none without")

    # Serial and parallel compiles print the same lines.
    serial, _ = run(args, ["--no-cache", "--compile-jobs", "1", "--block-seed", "7"], base_env)
    parallel, _ = run(args, ["--no-cache", "--compile-jobs", "4", "--block-seed", "7"],
                      base_env)
    check(settings(serial)["compile_jobs"] == 1 and settings(parallel)["compile_jobs"] == 4,
          "compile_jobs settings")
    s, q = without_times(serial), without_times(parallel)
    check(len(s) == len(q), f"{len(s)} lines serial, {len(q)} parallel")
    for x, y in zip(s, q):
        check(x == y, f"serial and parallel differ:\n{x}\n{y}")
    print(f"--compile-jobs 1 and 4: the same {len(s)} lines")
    libdir_in_key(args, root, base_env)
    if args.shim_hang:
        time_limit_in_flight(args, base_env)
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
