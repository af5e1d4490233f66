#!/usr/bin/python3
"""The user's own fixtures end to end through the service: the real quald
with its real worker (qual-run) on a compile-only slot, driven by the real
qualctl (docs/fixtures.md, "Your own fixtures"; docs/quald.md, "Fixture
directories"; docs/qualctl.md, "Exit status").

usage: service_fixtures_test.py --quald Q --qualctl C --worker W
                                --compile-helper H --nvrtc LIB --nvrtc-alt LIB
                                --source-dir DIR SCENARIO

Each scenario starts its own quald (tests/tools/service_test.py's Quald and
run_scenario) with ROOT/allowed as an allowed root, and copies
examples/fixtures/rmsnorm_f16 there (as it is, or with the change the
scenario is about). Scenarios:
  example         `qualctl submit NVRTC ALT --fixtures DIR --compile-only`
                  exits 0 (not_timed); every stored line (qualctl show
                  --json) is valid under docs/schema/lines.schema.json; the
                  case lines of rmsnorm_f16-4096x1024 and -1024x4096 have
                  family rmsnorm_f16, their specialization constants, oracle
                  kind host naming the directory's oracle.py, both arms
                  compiled, one artifact per shape; the built-in cases ran too
  oracle_crash    the example with an oracle that kills itself with SIGSEGV:
                  an oracle_failed error line per case naming the oracle, the
                  job's verdict error (exit 3), the built-in cases of the same
                  job compiled in both arms
  bad_manifest    the example with an unknown field in its manifest: the job
                  ends with a bad_fixture error line naming the manifest and
                  the field, its verdict error; quald goes on (the next job
                  passes)
Exits 0 when every check holds, 1 with the first failed check, 77 (skipped)
when the nvrtc libraries are missing. Oracle programs run with /usr/bin first
on PATH (Debian's python3 with numpy), as for tests/tools/user_fixtures_test.py."""
import argparse
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import service_test as st  # noqa: E402
from service_test import check, log  # noqa: E402

# qualctl show exits with the job's verdict status (0 to 3: docs/qualctl.md)
# once it has one; 4 and 5 are a refusal and no daemon.
SHOW_ANSWERED = (0, 1, 2, 3)

# A full job compiles every built-in case and the example's two for each
# arm; on two busy cores that takes far longer than service_test.py's
# single-case jobs.
JOB_S = 90.0
SCENARIO_S = 180  # ctest's TIMEOUT (tests/service_fixtures.cmake) is above it
EXAMPLE_CASES = {
    "rmsnorm_f16-4096x1024": {"ROWS": "4096", "COLS": "1024", "EPS": "1e-5f",
                              "THREADS": "256"},
    "rmsnorm_f16-1024x4096": {"ROWS": "1024", "COLS": "4096", "EPS": "1e-5f",
                              "THREADS": "256"},
}


def quald_with_example(args, root, name, edit=None):
    """quald with ROOT/allowed as an allowed root, and a copy of the example
    in ROOT/allowed/NAME changed by edit(dir). Returns (quald, the copy's
    real path)."""
    check(root == os.path.realpath(root), f"'{root}' is not a real path")
    allowed = os.path.join(root, "allowed")
    os.makedirs(allowed)
    fx = os.path.join(allowed, name)
    shutil.copytree(os.path.join(args.source_dir, "examples", "fixtures", "rmsnorm_f16"), fx)
    if edit:
        edit(fx)
    for dirpath, dirs, files in os.walk(fx):
        for n in dirs + files:
            p = os.path.join(dirpath, n)
            os.chmod(p, os.stat(p).st_mode & ~0o022)
    os.chmod(fx, 0o755)
    return st.Quald(args, root, extra=["--allow-root", allowed]), fx


def submit(d, *argv):
    """qualctl submit ARGV --compile-only --json: (exit status, job id, its
    lines as streamed)."""
    r = d.ctl("submit", *argv, "--compile-only", "--json", timeout=JOB_S)
    check(r.stdout, f"submit printed nothing: exit {r.returncode}: {r.stderr}")
    return r.returncode, st.submit_job_id(r), r.stdout.splitlines(), r.stderr


def shown(d, job, texts):
    """The job's stored lines through qualctl show --json: the lines the
    submit streamed, byte for byte."""
    s = d.ctl("show", job, "--json")
    check(s.returncode in SHOW_ANSWERED, f"qualctl show {job} --json: exit {s.returncode}: {s.stderr}")
    stored = s.stdout.splitlines()
    check(stored == texts, f"show {job} --json differs from the submit's lines:\n"
          f"show: {stored[-3:]}\nsubmit: {texts[-3:]}")
    check(d.stored_lines(job) == texts, f"the stored log of {job} differs from the stream")
    return stored


def by_type(objs, kind):
    return [o for o in objs if o["type"] == kind]


def check_builtin_compiled(objs, where):
    """The built-in cases of the job: at least one, each compiled in both
    arms. Returns their names."""
    builtin = [c for c in by_type(objs, "case") if c["case"] not in EXAMPLE_CASES]
    check(builtin, f"{where}: no built-in case lines")
    for c in builtin:
        check(c["baseline"]["compiled"] and c["candidate"]["compiled"],
              f"{where}: built-in case {c['case']} did not compile in both arms: {c}")
    return [c["case"] for c in builtin]


def scenario_example(args, root):
    d, fx = quald_with_example(args, root, "rmsnorm_f16")
    oracle = os.path.join(fx, "oracle.py")
    with st.serving(d):
        rc, job, texts, err = submit(d, args.nvrtc, args.nvrtc_alt, "--fixtures", fx)
        check(rc == 0, f"submit: exit {rc}, expected 0 (a compile-only pass): {err}\n"
              f"{texts[-3:]}")
        stored = shown(d, job, texts)
        objs = st.check_job_lines(stored, job, "show --json", verdict="not_timed")
        st.validate_stream(root, "example", stored, "--expect-verdict", "not_timed",
                           "--expect-types", "start,case,case_verdict",
                           "--expect-case-verdict", "*=not_timed")
        cases = {c["case"]: c for c in by_type(objs, "case")}
        for name, constants in EXAMPLE_CASES.items():
            c = cases.get(name)
            check(c, f"no case line for {name}; cases: {sorted(cases)}")
            check(c["family"] == "rmsnorm_f16", f"{name}: family {c['family']!r}")
            check(c.get("specialization") == constants,
                  f"{name}: specialization {c.get('specialization')!r}, want {constants}")
            check(c["oracle"] == {"kind": "host", "what": oracle},
                  f"{name}: oracle {c['oracle']!r}, want kind host, what '{oracle}'")
            check(c["baseline"]["compiled"] and c["candidate"]["compiled"],
                  f"{name}: not compiled in both arms: {c}")
        a, b = (cases[n]["baseline"]["artifact_sha256"] for n in EXAMPLE_CASES)
        check(a != b, f"one artifact for both shapes of the example: {a}")
        builtin = check_builtin_compiled(objs, "example")
        verdicts = {v["case"]: v["verdict"] for v in by_type(objs, "case_verdict")}
        check(set(verdicts) == set(cases), f"case verdicts {sorted(verdicts)} are not the "
              f"cases {sorted(cases)}")
        check(not by_type(objs, "error"), f"error lines: {by_type(objs, 'error')}")
        log(f"ok: {job}: {len(builtin)} built-in cases and {sorted(EXAMPLE_CASES)}, not_timed")
    st.check_tmp_empty(d)


def crashing_oracle(fx):
    with open(os.path.join(fx, "oracle.py"), "w") as f:
        f.write("#!/bin/sh\n# An oracle that crashes.\nkill -SEGV $$\n")
    os.chmod(os.path.join(fx, "oracle.py"), 0o755)


def scenario_oracle_crash(args, root):
    d, fx = quald_with_example(args, root, "crashing", crashing_oracle)
    oracle = os.path.join(fx, "oracle.py")
    with st.serving(d):
        rc, job, texts, err = submit(d, args.nvrtc, args.nvrtc_alt, "--fixtures", fx)
        check(rc == 3, f"submit: exit {rc}, expected 3 (error): {err}\n{texts[-3:]}")
        stored = shown(d, job, texts)
        objs = st.check_job_lines(stored, job, "show --json", verdict="error")
        st.validate_stream(root, "oracle_crash", stored, "--expect-verdict", "error",
                           "--expect-error-code", "oracle_failed",
                           "--expect-error-substring", "killed by signal SIGSEGV")
        errors = {e["case"]: e for e in by_type(objs, "error") if e.get("case")}
        for name in EXAMPLE_CASES:
            e = errors.get(name)
            check(e, f"no error line for {name}: {by_type(objs, 'error')}")
            check(e["code"] == "oracle_failed" and e["arm"] is None,
                  f"{name}: error line {e}, want code oracle_failed, arm null")
            check(f"oracle '{oracle}'" in e["message"] and
                  "killed by signal SIGSEGV" in e["message"],
                  f"{name}: {e['message']!r} does not name the oracle and its signal")
        builtin = check_builtin_compiled(objs, "oracle_crash")
        verdicts = {v["case"]: v["verdict"] for v in by_type(objs, "case_verdict")}
        for name in builtin:
            check(verdicts.get(name) == "not_timed",
                  f"built-in case {name}: verdict {verdicts.get(name)!r}, want not_timed")
        log(f"ok: {job}: {len(builtin)} built-in cases compiled, the example's "
            f"oracle_failed: {errors[next(iter(EXAMPLE_CASES))]['message']}")
    st.check_tmp_empty(d)


def unknown_field(fx):
    path = os.path.join(fx, "fixture.json")
    with open(path) as f:
        m = json.load(f)
    m["cases"][1]["gird"] = [1, 1, 1]
    with open(path, "w") as f:
        json.dump(m, f)


def scenario_bad_manifest(args, root):
    d, fx = quald_with_example(args, root, "broken", unknown_field)
    want = f"'{os.path.join(fx, 'fixture.json')}': cases[1].gird"
    with st.serving(d):
        rc, job, texts, err = submit(d, args.nvrtc, args.nvrtc_alt, "--fixtures", fx)
        stored = shown(d, job, texts)
        log(f"{job}: exit {rc}: {stored}")
        objs = [st.schema_check(t, f"show --json line {i + 1}") for i, t in enumerate(stored)]
        check(objs[-1]["type"] == "verdict" and objs[-1]["verdict"] == "error",
              f"the job's last line {stored[-1]}, want an error verdict")
        check(rc == 3, f"submit: exit {rc}, expected 3 (error): {err}")
        errors = by_type(objs, "error")
        check(errors and errors[0]["code"] in ("bad_fixture", "usage") and
              errors[0]["stage"] == "setup",
              f"no bad_fixture (or usage) setup error line: {errors}")
        check(want in errors[0]["message"] and "unknown field" in errors[0]["message"],
              f"the error {errors[0]['message']!r} does not name {want!r}")
        check(not by_type(objs, "case"), "a job with a broken manifest compiled cases")
        st.check_next_job(args, d, "the job after the broken manifest")
        log(f"ok: {job}: {errors[0]['code']}: {errors[0]['message']}")
    st.check_tmp_empty(d)


SCENARIOS = {"example": scenario_example, "oracle_crash": scenario_oracle_crash,
             "bad_manifest": scenario_bad_manifest}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for o in ("--quald", "--qualctl", "--worker", "--compile-helper", "--nvrtc",
              "--nvrtc-alt", "--source-dir"):
        ap.add_argument(o, required=True)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    for p in (args.nvrtc, args.nvrtc_alt):
        if not os.path.exists(p):
            print(f"skipped: '{p}' is missing")
            return 77
    for p in (args.quald, args.qualctl, args.worker, args.compile_helper):
        if not os.path.exists(p):
            sys.exit(f"FAIL: '{p}' does not exist: build it first")
    # The example's oracle is `#!/usr/bin/env python3` and needs numpy:
    # quald passes its PATH on to the worker, which runs the oracle.
    os.environ["PATH"] = "/usr/bin:" + os.environ.get("PATH", "")
    fn = SCENARIOS[args.scenario]
    return st.run_scenario(args.scenario, lambda a, root: fn(a, os.path.realpath(root)),
                           args, prefix="qual-svcfx-", limit=SCENARIO_S)


if __name__ == "__main__":
    sys.exit(main())
