#!/usr/bin/python3
"""Fixture directories through the service: the real quald and qualctl, the
fake worker (tests/tools/fake_worker.sh: it echoes the options quald gives it
in its start line's "args"), the real compile helper and nvrtc for the submit
checks (tests/fixture_dirs.cmake says what each scenario asserts;
docs/quald.md, "Fixture directories", what should happen).

usage: fixture_dirs_test.py --quald Q --qualctl C --worker FAKE
                            --compile-helper H --nvrtc LIB SCENARIO

The fake worker behaves as the name of its candidate's folder says, so the
candidate is a link to the real nvrtc in a folder named "ok" (or "hang").
The fixture directories live under ROOT/allowed, quald's --allow-root.
Exits 0 when every check holds, 1 with the first failed check."""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import service_test as st  # noqa: E402
from service_test import check, log  # noqa: E402

# qualctl show exits with the job's verdict status (0 to 3: docs/qualctl.md)
# once it has one; 4 and 5 are a refusal and no daemon.
SHOW_ANSWERED = (0, 1, 2, 3)


def make_fixture_dir(path, mode=0o755):
    os.makedirs(path)
    with open(os.path.join(path, "fixture.json"), "w") as f:
        f.write('{"cases": []}\n')
    os.chmod(os.path.join(path, "fixture.json"), 0o644)
    os.chmod(path, mode)
    return path


def candidate_as(args, root, kind):
    """The real nvrtc, through a link in a folder the fake worker reads as
    kind."""
    d = os.path.join(root, kind)
    os.makedirs(d, exist_ok=True)
    link = os.path.join(d, os.path.basename(args.nvrtc))
    if not os.path.lexists(link):
        os.symlink(args.nvrtc, link)
    return link


def worker_args(line):
    """The options quald gave the fake worker, from its start line."""
    return line["args"].split()


def quald_in(args, root):
    """quald with ROOT/allowed as an allowed root. root is a real path (the
    messages name real paths of the folders above a directory)."""
    check(root == os.path.realpath(root), f"'{root}' is not a real path")
    allowed = os.path.join(root, "allowed")
    os.makedirs(allowed)
    return st.Quald(args, root, extra=["--allow-root", allowed]), allowed


def scenario_argv(args, root):
    """A fixture directory named through a symbolic link reaches the worker
    as --fixtures REALPATH (the directory itself, the link resolved), in the
    order given; the job's request.json stores the real paths; qualctl show
    and list say them."""
    d, allowed = quald_in(args, root)
    real_a = make_fixture_dir(os.path.join(allowed, "rmsnorm"))
    real_b = make_fixture_dir(os.path.join(allowed, "softmax"))
    os.makedirs(os.path.join(root, "mine"))
    link = os.path.join(root, "mine", "fx")
    os.symlink(os.path.relpath(real_a, os.path.dirname(link)), link)
    cand = candidate_as(args, root, "ok")
    with st.serving(d):
        # Relative to qualctl's directory: qualctl makes it absolute.
        p = subprocess.run([args.qualctl, "--socket", d.sock, "submit", args.nvrtc, cand,
                               "--compile-only", "--json", "--fixtures", "mine/fx",
                               "--fixtures", real_b],
                              cwd=root, env=dict(os.environ, PWD=root),
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=st.JOB_S)
        check(p.returncode == 0, f"submit exited {p.returncode}: {p.stderr}{p.stdout}")
        lines = [json.loads(x) for x in p.stdout.splitlines()]
        start = [x for x in lines if x.get("type") == "start"]
        check(len(start) == 1, f"one start line: {lines}")
        argv = worker_args(start[0])
        log(f"worker options: {' '.join(argv)}")
        got = [argv[i + 1] for i, a in enumerate(argv) if a == "--fixtures"]
        check(got == [os.path.realpath(real_a), os.path.realpath(real_b)],
              f"the worker's --fixtures are {got}, want the real paths "
              f"{[os.path.realpath(real_a), os.path.realpath(real_b)]}")
        check(link not in start[0]["args"], "the link's own name reached the worker")
        job = start[0]["job"]
        with open(os.path.join(d.job_dir(job), "request.json")) as f:
            stored = json.load(f)
        check(stored.get("fixtures") == got, f"request.json stores {stored.get('fixtures')}, "
              f"want {got}")
        r = d.ctl("show", job)
        check(r.returncode in SHOW_ANSWERED and f"\nfixtures: '{got[0]}'\nfixtures: '{got[1]}'\n" in r.stdout,
              f"qualctl show does not list the fixture directories: {r.stdout}")
        listed = d.ctl_json("list")["jobs"]
        check(listed[0].get("fixtures") == got, f"list: {listed[0]}")
        # A job without them: no --fixtures, nothing said.
        r = d.ctl("submit", args.nvrtc, cand, "--compile-only", "--json")
        check(r.returncode == 0, f"submit without fixtures exited {r.returncode}: {r.stderr}")
        start = [json.loads(x) for x in r.stdout.splitlines()
                 if json.loads(x).get("type") == "start"]
        check("--fixtures" not in worker_args(start[0]), f"{start[0]['args']}")
        check("fixtures" not in d.ctl_json("list")["jobs"][0], "list without fixtures")


def scenario_refused(args, root):
    """What the policy refuses reaches qualctl as a refusal naming the
    directory and why (exit 4), and no job is made."""
    d, allowed = quald_in(args, root)
    cand = candidate_as(args, root, "ok")
    outside = make_fixture_dir(os.path.join(root, "outside"))
    writable = make_fixture_dir(os.path.join(allowed, "ww"), 0o777)
    empty = os.path.join(allowed, "empty")
    os.makedirs(empty)
    afile = os.path.join(allowed, "fixture.json")
    with open(afile, "w") as f:
        f.write("{}\n")
    cases = [
        ("outside the roots", outside,
         f"fixture directory '{outside}' is outside the allowed roots"),
        ("world-writable", writable,
         f"fixture directory '{writable}' refused: '{writable}' is world-writable"),
        ("no manifest", empty,
         f"cannot use fixture directory '{empty}': it holds no fixture.json"),
        ("not a directory", afile,
         f"cannot use fixture directory '{afile}': not a directory"),
        ("missing", os.path.join(allowed, "nope"),
         f"cannot use fixture directory '{allowed}/nope': no such directory"),
    ]
    with st.serving(d):
        for name, fx, want in cases:
            r = d.ctl("submit", args.nvrtc, cand, "--compile-only", "--fixtures", fx)
            check(r.returncode == 4, f"{name}: qualctl exited {r.returncode}, want 4: "
                  f"{r.stderr}")
            check(f"quald refused the request: {want}" in r.stderr,
                  f"{name}: qualctl said {r.stderr!r}, want {want!r}")
            log(f"ok: {name}: {r.stderr.strip()}")
        nine = [make_fixture_dir(os.path.join(allowed, f"f{i}")) for i in range(9)]
        r = d.ctl("submit", args.nvrtc, cand, *[x for f in nine for x in ("--fixtures", f)])
        check(r.returncode == 4 and "'fixtures' has 9 entries, at most 8 are allowed"
              in r.stderr, f"nine directories: exit {r.returncode}: {r.stderr}")
        r = d.ctl("submit", args.nvrtc, cand, "--fixtures", nine[0], "--fixtures",
                  nine[0] + "/.")
        check(r.returncode == 4 and "is given twice" in r.stderr,
              f"one directory twice: exit {r.returncode}: {r.stderr}")
        check(d.job_ids() == [], f"refused submits made jobs: {d.job_ids()}")


def scenario_recheck(args, root):
    """A fixture directory that became writable by others while its job was
    queued ends the job when it would start: an error line (code usage)
    naming the directory and why, an error verdict, and no worker."""
    d, allowed = quald_in(args, root)
    fx = make_fixture_dir(os.path.join(allowed, "rmsnorm"))
    with st.serving(d):
        r = d.ctl("submit", args.nvrtc, candidate_as(args, root, "hang"), "--compile-only",
                  "--no-follow")
        check(r.returncode == 0, f"the hanging job: exit {r.returncode}: {r.stderr}")
        first = r.stdout.strip()
        d.wait_job_state(first, ("running",))
        ok = candidate_as(args, root, "ok")
        # Followed: its submitter sees the end as it comes.
        follower = d.spawn_ctl("submit", args.nvrtc, ok, "--compile-only", "--fixtures", fx)
        with st.cleanup(lambda: st.end(follower)):
            st.wait_until(lambda: len(d.job_ids()) == 2, st.JOB_S, "the second job")
            second = d.job_ids()[1]
            d.wait_job_state(second, ("queued",))
            os.chmod(fx, 0o777)
            r = d.ctl("cancel", first)
            check(r.returncode == 0, f"cancel: exit {r.returncode}: {r.stderr}")
            out, err = st.communicate(follower, st.JOB_S, "the follower")
        d.wait_job_state(second, ("done",))
        want = f"fixture directory '{fx}' refused: '{fx}' is world-writable"
        check(follower.returncode == 3 and want in out,
              f"the follower exited {follower.returncode}, want 3 (error), and said "
              f"{out!r} {err!r}")
        lines = [json.loads(x) for x in d.stored_lines(second)]
        log(f"{second}: {lines}")
        check([x["type"] for x in lines] == ["error", "verdict"],
              f"the job's lines are {[x['type'] for x in lines]}, want an error line and "
              f"the verdict, no worker's")
        err, verdict = lines
        check(err.get("code") == "usage" and err.get("stage") == "setup" and
              want in err.get("message", ""), f"error line: {err}")
        check(verdict.get("verdict") == "error" and want in verdict.get("message", ""),
              f"verdict line: {verdict}")
        r = d.ctl("show", second)
        check(want in r.stdout, f"qualctl show does not say why: {r.stdout}")
        # The slot was left free: once allowed again, the next job runs.
        os.chmod(fx, 0o755)
        r = d.ctl("submit", args.nvrtc, ok, "--compile-only", "--json", "--fixtures", fx)
        check(r.returncode == 0 and f"--fixtures {fx}" in r.stdout,
              f"the next job: exit {r.returncode}: {r.stdout}{r.stderr}")


SCENARIOS = {"argv": scenario_argv, "refused": scenario_refused, "recheck": scenario_recheck}


def main():
    ap = argparse.ArgumentParser()
    for o in ("--quald", "--qualctl", "--worker", "--compile-helper", "--nvrtc"):
        ap.add_argument(o, required=True)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    fn = SCENARIOS[args.scenario]
    return st.run_scenario(args.scenario, lambda a, root: fn(a, os.path.realpath(root)), args,
                           prefix="qual-fxd-")


if __name__ == "__main__":
    sys.exit(main())
