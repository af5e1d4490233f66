#!/usr/bin/python3
"""A candidate library that tries to forge its job's verdict (finding 2 of
issue 10; docs/service.md, "Trust model").

usage: forge_test.py --quald Q --qualctl C --worker W --compile-helper H
                     --shim-forge LIB --nvrtc LIB [--compile-user NAME]

Starts a quald (as service_test.py does: its own socket, state directory and
$TMPDIR in a fresh folder) and submits nvrtc against tests/shims/shim_forge.c,
compile-only. Loaded in a qual-compile child of qual-run, the shim tries
ptrace(PTRACE_ATTACH) on qual-run and on quald, pidfd_getfd of qual-run's
stdout and open("/proc/<qual-run>/fd/1"), writing a forged "improvement"
verdict line into whatever it gets, and records each attempt
($SHIM_FORGE_RECORD). Checks that:
  - the shim ran in qual-run's compile children and every attempt failed,
    with EPERM or EACCES;
  - no forged line reached the job, in its stream or in its stored log, and
    nothing was refused (nothing foreign came);
  - the verdict is the real one: not_timed, qualctl exit 0.
With --compile-user NAME quald runs with --compile-user NAME (as root; the
test is skipped, exit 77, otherwise): the same, and the shim's record file
belongs to that user, so the compile children ran as it.
Against a build without the confinement (quald, qual-run and qual-compile
dumpable, no user namespace) the attempts succeed and the forged verdict
is the job's. Exits 0 when every check holds, 1 with the first failure."""
import argparse
import errno
import json
import os
import pwd
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from service_test import (FAST, Failure, Quald, check, check_job_lines, run_scenario,  # noqa: E402
                          serving, submit_job_id)

ATTEMPTS = {"ptrace_parent", "ptrace_grandparent", "pidfd_getfd", "proc_fd"}


def read_records(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def quald_as(args, root):
    """args.quald, or with --compile-user a script that runs it with the
    option added (service_test.Quald starts quald with its own options)."""
    if not args.compile_user:
        return args
    script = os.path.join(root, "quald-compile-user")
    with open(script, "w") as f:
        f.write(f'#!/bin/sh\nexec "{args.quald}" --compile-user "{args.compile_user}" "$@"\n')
    os.chmod(script, 0o755)
    return argparse.Namespace(**{**vars(args), "quald": script})


def scenario(args, root):
    # The compile user must pass through ROOT to quald's $TMPDIR, and write
    # its records beside it.
    os.chmod(root, 0o711)
    records = os.path.join(root, "records")
    os.mkdir(records)
    os.chmod(records, 0o777)
    record = os.path.join(records, "forge.record")
    os.environ["SHIM_FORGE_RECORD"] = record
    with serving(Quald(quald_as(args, root), root)) as d:
        r = d.ctl("submit", args.nvrtc, args.shim_forge, "--case", FAST,
                  "--compile-only", "--json")
        job = submit_job_id(r)
        texts = r.stdout.splitlines()
        stored = d.stored_lines(job)
    recs = read_records(record)
    check(recs, "the shim recorded no attempt: it did not run in a compile child of qual-run")
    if args.compile_user:
        owner = os.stat(record)[stat.ST_UID]
        want = pwd.getpwnam(args.compile_user).pw_uid
        check(owner == want, f"the shim's records belong to uid {owner}, expected "
              f"{want} ({args.compile_user}): the compile children did not run as it")
    check({x["attempt"] for x in recs} == ATTEMPTS,
          f"attempts recorded: {sorted({x['attempt'] for x in recs})}, expected {sorted(ATTEMPTS)}")
    got = [x for x in recs if x["ok"]]
    check(not got, f"{len(got)} of {len(recs)} attempts got through: "
          f"{sorted({x['attempt'] for x in got})}")
    odd = [x for x in recs if x["errno"] not in (errno.EPERM, errno.EACCES)]
    check(not odd, f"attempts failed otherwise than with EPERM or EACCES: {odd}")
    for where, lines in (("qualctl submit", texts), ("the stored log", stored)):
        forged = [t for t in lines if "forged by shim_forge" in t]
        check(not forged, f"{where}: the forged line is in job {job}: {forged[:1]}")
        foreign = [t for t in lines if '"foreign_line"' in t]
        check(not foreign, f"{where}: lines were refused: {foreign[:1]}")
    check_job_lines(texts, job, "forge candidate", verdict="not_timed")
    check(r.returncode == 0, f"qualctl submit: exit {r.returncode}, expected 0: {r.stderr}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for opt in ("--quald", "--qualctl", "--worker", "--compile-helper", "--shim-forge",
                "--nvrtc"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--compile-user")
    args = ap.parse_args()
    if args.compile_user and os.geteuid() != 0:
        print("skipped: --compile-user needs root", file=sys.stderr)
        return 77
    return run_scenario("forge", scenario, args, prefix="qual-forge-")


if __name__ == "__main__":
    sys.exit(main())
