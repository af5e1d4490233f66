#!/usr/bin/python3
"""Calibration end to end (docs/quald.md, "Calibration"): the real quald and
qualctl, with a fake worker whose A/A lines have known false alarms
(tests/tools/fake_calib_worker.sh) where the record's numbers are checked,
and the real compile-only qual-run where the record only has to travel.

usage: calibration_test.py --quald Q --qualctl C --worker W --compile-helper H
                           --calibrator K --fake-worker F --nvrtc LIB SCENARIO

Scenarios (tests/calibration.cmake says what each asserts):
  counts        calibrate --runs 4: four runs, the record's counts
  restart       the record survives a restart; a later job's verdict line
                (the real qual-run) carries it; before it, null with why
  bad_file      qual-run --calibration refuses a bad record naming it
  roots         a library outside the allowed roots: refused as by submit;
                a slot quald does not have: refused
  schedule      --calibrate-every: one calibration per stale slot, not a
                second while it runs
  unstored      a record that cannot be written is not the latest: the
                next job is given none, with why
  untimed       runs that timed nothing store no record, and the verdict
                line says why; a stored record stays the latest
  bounded       what a run adds to the log does not grow with its pairs or
                its errors; the GPU's fault is passed on
Exits 0 when every check holds, 1 with the first failed check."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import service_test as st  # noqa: E402
from service_test import FAST, Quald, check, serving, wait_until  # noqa: E402

CASES = ("gemm_f16-256x512x256", "gemm_i8-256x512x256", "conv2d_f32-64x64")


def scipy_upper(k, n):
    """scipy.stats.beta.ppf(0.95, k + 1, n - k), or None without scipy."""
    try:
        from scipy.stats import beta
    except ImportError:
        return None
    return 1.0 if k == n else float(beta.ppf(0.95, k + 1, n - k))


def fake_args(args, root):
    """args with the fake worker, its folder in root and in the environment
    quald passes on to its workers."""
    a = argparse.Namespace(**vars(args))
    a.worker = args.fake_worker
    d = os.path.join(root, "fake")
    os.makedirs(d, exist_ok=True)
    os.environ["FAKE_CALIB_DIR"] = d
    return a, d


def record_file(d, key="slot-0"):
    with open(os.path.join(d.state, "calibration", key + ".json")) as f:
        return json.load(f)


def check_counts(rec, runs):
    check(rec["runs"] == runs and rec["runs_started"] == runs,
          f"record runs {rec['runs']}/{rec['runs_started']}, expected {runs}")
    check(rec["alpha"] == 0.05 and rec["margin"] == 0.01, f"record settings {rec}")
    check(rec["device"] and rec["device"]["name"] == "Fake GPU", f"record device {rec['device']}")
    cases = {c["case"]: c for c in rec["cases"]}
    check(sorted(cases) == sorted(CASES), f"record cases {sorted(cases)}")
    a, b, c = (cases[n] for n in CASES)
    faster_c = runs // 2
    want = {CASES[0]: (runs, runs, 0), CASES[1]: (runs, 0, 0), CASES[2]: (runs, 0, faster_c)}
    for name, (n, slower, faster) in want.items():
        got = cases[name]
        check((got["comparisons"], got["slower"], got["faster"]) == (n, slower, faster),
              f"case {name}: {got}, expected comparisons {n}, slower {slower}, faster {faster}")
        check(abs(got["false_alarm_rate"] - (slower + faster) / n) < 1e-12,
              f"case {name}: rate {got['false_alarm_rate']}")
        up = scipy_upper(slower + faster, n)
        if up is not None:
            check(abs(got["false_alarm_upper"] - up) < 1e-9 * up,
                  f"case {name}: upper {got['false_alarm_upper']}, scipy {up}")
    # detectable_ratio 1 + k/100 in run k: the median of 1.01 .. 1.0N
    med = sorted(1 + k / 100 for k in range(1, runs + 1))
    m = (med[(runs - 1) // 2] + med[runs // 2]) / 2
    check(abs(a["detectable_ratio"] - m) < 1e-9, f"detectable {a['detectable_ratio']}, want {m}")
    check(b["detectable_ratio"] == 1.02 and c["detectable_ratio"] is None,
          f"detectable {b['detectable_ratio']}, {c['detectable_ratio']}")
    check((rec["comparisons"], rec["slower"], rec["faster"]) == (3 * runs, runs, faster_c),
          f"record totals {rec['comparisons']} {rec['slower']} {rec['faster']}")
    up = scipy_upper(runs + faster_c, 3 * runs)
    if up is not None:
        check(abs(rec["false_alarm_upper"] - up) < 1e-9 * up,
              f"record upper {rec['false_alarm_upper']}, scipy {up}")


def calibrate_watch(d, *argv):
    r = d.ctl("calibrate", *argv, "--watch", "--json")
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    return r, lines


def scenario_counts(args, root):
    a, fdir = fake_args(args, root)
    os.environ["FAKE_CALIB_SAMPLE"] = "1"
    with serving(Quald(a, root, extra=["--calibrator", args.calibrator])) as d:
        r, lines = calibrate_watch(d, args.nvrtc, "--runs", "4")
        check(r.returncode == 0, f"calibrate exit {r.returncode}: {r.stderr}")
        starts = [x for x in lines if x.get("type") == "start"]
        verdicts = [x for x in lines if x.get("type") == "verdict"]
        check(len(starts) == 4, f"{len(starts)} start lines, expected 4 runs")
        check(len(verdicts) == 1, f"{len(verdicts)} verdict lines, expected 1")
        with open(os.path.join(fdir, "args")) as f:
            runs = f.read().splitlines()
        check(len(runs) == 4, f"the worker ran {len(runs)} times, expected 4")
        check(all("--sample-identical" in x.split() for x in runs),
              f"a run without --sample-identical though --help lists it: {runs}")
        types = sorted({x.get("type") for x in lines if x.get("job")})
        check(types == ["calibration_run", "case_verdict", "start", "verdict"],
              f"the calibration passed on lines of types {types}")
        runs_ = [x for x in lines if x.get("type") == "calibration_run"]
        check([(x["run"], x["runs"], x["verdict"], x["timed"], x["errors_left_out"],
                x["lines_left_out"]) for x in runs_] ==
              [(k, 4, "regression", True, 0, 6) for k in (1, 2, 3, 4)],
              f"the calibration_run lines: {runs_}")
        for x in runs_:
            st.schema_check(json.dumps(x), "a calibration_run line")
        rec = record_file(d)
        check_counts(rec, 4)
        check(verdicts[0]["calibration"] == rec, "the verdict line's record is not the stored one")
        shown = d.ctl_json("calibration")["calibrations"]
        check(len(shown) == 1 and shown[0]["record"] == rec,
              f"qualctl calibration --json: {shown}")
        plain = d.ctl("calibration")
        check(plain.returncode == 0 and "12 A/A comparisons, 4 slower, 2 faster" in plain.stdout,
              f"qualctl calibration: {plain.stdout!r}")
        jobs = d.ctl_json("list")["jobs"]
        check(jobs[0].get("kind") == "calibration" and jobs[0].get("runs") == 4,
              f"list does not say the job is a calibration: {jobs[0]}")
        # The fake's own lines are not the engine's; qual-calibrate's are.
        st.schema_check(json.dumps(verdicts[0]), "the calibration's verdict line")
    os.environ.pop("FAKE_CALIB_SAMPLE")


def scenario_restart(args, root):
    a, fdir = fake_args(args, root)
    extra = ["--calibrator", args.calibrator]
    with serving(Quald(args, root, extra=extra)) as d:
        r = d.ctl("submit", "--case", FAST, "--compile-only", "--json", args.nvrtc, args.nvrtc)
        v = [json.loads(x) for x in r.stdout.splitlines() if '"verdict"' in x][-1]
        check(v.get("calibration", "absent") is None and
              v.get("calibration_because") == "no calibration of this device yet",
              f"before any calibration the verdict line says {v}")
    with serving(Quald(a, root, extra=extra)) as d:
        r, _ = calibrate_watch(d, args.nvrtc, "--runs", "2")
        check(r.returncode == 0, f"calibrate exit {r.returncode}: {r.stderr}")
        rec = record_file(d)
        check_counts(rec, 2)
    # Restarted with the real qual-run: the record is read back, and a job's
    # verdict line carries it.
    with serving(Quald(args, root, extra=extra)) as d:
        shown = d.ctl_json("calibration")["calibrations"]
        check(shown[0]["record"] == rec, f"after a restart: {shown}")
        r = d.ctl("submit", "--case", FAST, "--compile-only", "--json", args.nvrtc, args.nvrtc)
        check(r.returncode == 0, f"submit exit {r.returncode}: {r.stderr}")
        lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
        v = [x for x in lines if x.get("type") == "verdict"][-1]
        check(v.get("calibration") == rec, f"the job's verdict line carries {v.get('calibration')}")
        st.validate_stream(root, "job", [json.dumps(x) for x in lines if x.get("job")])
        # qual-judge keeps it as it was written.
        show = d.ctl("show", v["job"], "--json")
        stored = [x for x in show.stdout.splitlines()[1:]]
        j = subprocess.run([os.path.join(os.path.dirname(args.qualctl), "qual-judge")],
                           input="\n".join(stored) + "\n", capture_output=True, text=True)
        jv = [json.loads(x) for x in j.stdout.splitlines() if '"verdict"' in x][-1]
        check(jv.get("calibration") == rec, f"qual-judge's verdict line: {jv.get('calibration')}")


def scenario_bad_file(args, root):
    bad = os.path.join(root, "bad.json")
    good = {"device_key": "slot-0", "device": None, "time": "2026-01-01T00:00:00Z", "runs": 1,
            "alpha": 0.05, "margin": 0.01, "comparisons": 1, "slower": 0, "faster": 0,
            "false_alarm_rate": 0.0, "false_alarm_upper": 0.95,
            "cases": [{"case": FAST, "comparisons": 1, "slower": 0, "faster": 0,
                       "false_alarm_rate": 0.0, "false_alarm_upper": 0.95,
                       "detectable_ratio": None}]}
    cases = [
        (lambda r: r["cases"][0].update(slower="1"), "'cases[0].slower'"),
        (lambda r: r.pop("false_alarm_upper"), "'false_alarm_upper' is missing"),
        (lambda r: r.update(runs=1000), "'runs'"),
    ]
    for mutate, want in cases:
        rec = json.loads(json.dumps(good))
        mutate(rec)
        with open(bad, "w") as f:
            json.dump(rec, f)
        r = subprocess.run([args.worker, "--compile-only", "--case", FAST, "--calibration", bad,
                            args.nvrtc, args.nvrtc], capture_output=True, text=True, timeout=60)
        check(r.returncode == 4, f"a bad record: exit {r.returncode}, expected 4")
        check(f"calibration file '{bad}'" in r.stderr and want in r.stderr,
              f"the refusal does not name the file and {want}: {r.stderr!r}")
    with open(bad, "w") as f:
        f.write("[1, 2")
    r = subprocess.run([args.worker, "--compile-only", "--case", FAST, "--calibration", bad,
                        args.nvrtc, args.nvrtc], capture_output=True, text=True, timeout=60)
    check(r.returncode == 4 and "not JSON" in r.stderr, f"not JSON: {r.returncode} {r.stderr!r}")
    with open(bad, "w") as f:
        json.dump(good, f)
    r = subprocess.run([args.worker, "--compile-only", "--case", FAST, "--calibration", bad,
                        args.nvrtc, args.nvrtc], capture_output=True, text=True, timeout=60)
    v = json.loads(r.stdout.splitlines()[-1])
    check(r.returncode == 0 and v.get("calibration") == good, f"a good record: {r.returncode} {v}")


def scenario_roots(args, root):
    lib = os.path.join(root, "libnvrtc.so.13")
    shutil.copyfile(args.nvrtc, lib)
    with serving(Quald(args, root, extra=["--calibrator", args.calibrator])) as d:
        s = d.ctl("submit", "--no-follow", lib, lib)
        c = d.ctl("calibrate", lib)
        check(s.returncode == 4 and c.returncode == 4,
              f"outside the roots: submit exit {s.returncode}, calibrate {c.returncode}")
        check(s.stderr.strip() and s.stderr == c.stderr,
              f"calibrate's refusal {c.stderr!r} is not submit's {s.stderr!r}")
        check(d.job_ids() == [], f"jobs stored: {d.job_ids()}")
        c = d.ctl("calibrate", args.nvrtc, "--device", "1")
        check(c.returncode == 4 and "'slot' must be one of quald's slots, 0 to 0, got 1"
              in c.stderr, f"a slot quald does not have: {c.returncode} {c.stderr!r}")


def scenario_schedule(args, root):
    a, fdir = fake_args(args, root)
    os.environ["FAKE_CALIB_SLEEP"] = "3"
    extra = ["--calibrator", args.calibrator, "--calibrate-every", "0.0003",
             "--calibrate-lib", args.nvrtc, "--calibrate-runs", "1"]
    try:
        with serving(Quald(a, root, slots=2, extra=extra)) as d:
            wait_until(lambda: len(d.job_ids()) >= 2, 20, "two scheduled calibrations")
            t0 = time.monotonic()
            # The period is about 1 s: the timer looks three times while the
            # two run (each sleeps 3 s), and must not queue a second one.
            while time.monotonic() - t0 < 2.5:
                check(len(d.job_ids()) == 2, f"jobs while the calibrations run: {d.job_ids()}")
                time.sleep(0.1)
            jobs = d.ctl_json("list")["jobs"]
            check(sorted(j.get("slot") for j in jobs) == [0, 1] and
                  all(j.get("kind") == "calibration" for j in jobs),
                  f"the scheduled jobs: {jobs}")
            for j in jobs:
                d.wait_job_state(j["job"], ("done",))
                ran = d.stored_state(j["job"]).get("slot")
                check(ran == j["slot"], f"{j['job']}, pinned to slot {j['slot']}, ran in {ran}")
            for key in ("slot-0", "slot-1"):
                check(record_file(d, key)["runs"] == 1, f"no record of {key}")
    finally:
        os.environ.pop("FAKE_CALIB_SLEEP")


def worker_runs(fdir):
    """The fake worker's command lines, one a run (its arguments joined by
    spaces)."""
    with open(os.path.join(fdir, "args")) as f:
        return f.read().splitlines()


def scenario_unstored(args, root):
    a, fdir = fake_args(args, root)
    with serving(Quald(a, root, extra=["--calibrator", args.calibrator])) as d:
        # The record's file cannot be replaced: a folder stands in its place.
        os.makedirs(os.path.join(d.state, "calibration", "slot-0.json", "in-the-way"))
        r, lines = calibrate_watch(d, args.nvrtc, "--runs", "1")
        verdicts = [x for x in lines if x.get("type") == "verdict"]
        check(len(verdicts) == 1 and verdicts[0].get("calibration"),
              f"the calibration's verdict lines: {verdicts}")
        shown = d.ctl_json("calibration")["calibrations"]
        check(shown[0].get("record") is None,
              f"a record that could not be written is shown as the latest: {shown}")
        job = d.ctl("submit", "--no-follow", args.nvrtc, args.nvrtc).stdout.strip()
        d.wait_job_state(job, ("done",))
        argv = worker_runs(fdir)[-1]
        check("--calibration=" not in argv,
              f"the next job was given a record that is not stored: {argv}")
        check("--no-calibration-because=no calibration of this device is stored: the last "
              "one could not be written (cannot rename" in argv,
              f"the next job is not told why it has no record: {argv}")


def scenario_untimed(args, root):
    a, fdir = fake_args(args, root)
    with serving(Quald(a, root, extra=["--calibrator", args.calibrator])) as d:
        r, _ = calibrate_watch(d, args.nvrtc, "--runs", "1")
        check(r.returncode == 0, f"calibrate exit {r.returncode}: {r.stderr}")
        rec = record_file(d)
        open(os.path.join(fdir, "untimed"), "w").close()
        r, lines = calibrate_watch(d, args.nvrtc, "--runs", "2")
        v = [x for x in lines if x.get("type") == "verdict"]
        check(len(v) == 1 and v[0]["verdict"] == "not_timed" and v[0]["timed"] is False and
              v[0].get("calibration", "absent") is None and
              "nothing to store: run 1 of 2 timed nothing" in v[0].get("calibration_because", ""),
              f"an untimed calibration's verdict lines: {v}")
        st.schema_check(json.dumps(v[0]), "an untimed calibration's verdict line")
        check(record_file(d) == rec, "an untimed calibration replaced the stored record")
        shown = d.ctl_json("calibration")["calibrations"]
        check(shown[0].get("record") == rec,
              f"an untimed calibration replaced the latest record: {shown}")
        c = d.ctl("calibrate", args.nvrtc, "--compile-only")
        check(c.returncode == 4, f"calibrate --compile-only: exit {c.returncode}, expected 4")


def scenario_bounded(args, root):
    a, fdir = fake_args(args, root)
    open(os.path.join(fdir, "noisy"), "w").close()
    os.environ["FAKE_CALIB_PAIRS"] = "2000"
    try:
        with serving(Quald(a, root, extra=["--calibrator", args.calibrator])) as d:
            r, lines = calibrate_watch(d, args.nvrtc, "--runs", "3")
            check(r.returncode == 0, f"calibrate exit {r.returncode}: {r.stderr}")
            jl = [x for x in lines if x.get("job")]
            check(not [x for x in jl if x.get("type") in ("pair", "case", "block",
                                                          "session_time")],
                  "a calibration passed on its runs' timing detail")
            errors = [x for x in jl if x.get("type") == "error"]
            check(len(errors) == 3 * 33 and
                  sum(1 for x in errors if x.get("gpu") == "faulted") == 3,
                  f"{len(errors)} error lines passed on, expected 32 and the fault per run")
            runs_ = [x for x in jl if x.get("type") == "calibration_run"]
            check([(x["errors_left_out"], x["lines_left_out"]) for x in runs_] ==
                  [(8, 2003)] * 3, f"the calibration_run lines: {runs_}")
            check(len(jl) == 3 * (1 + 33 + 3 + 1) + 1, f"{len(jl)} lines in the job's log")
            # The fake's own lines are not the engine's; qual-calibrate's are.
            for x in runs_ + [jl[-1]]:
                st.schema_check(json.dumps(x), f"qual-calibrate's {x['type']} line")
    finally:
        os.environ.pop("FAKE_CALIB_PAIRS")


def scenario_hostile(args, root):
    """Lines a worker should not write: with a NUL byte (a false alarm of an
    extra case, a verdict ending the run early) and 40 that are not JSON.
    The record counts only the real case_verdicts, the runs' verdicts are
    their real ones, and the lines that are not JSON stop being passed on
    after 32 a run."""
    a, fdir = fake_args(args, root)
    open(os.path.join(fdir, "hostile"), "w").close()
    with serving(Quald(a, root, extra=["--calibrator", args.calibrator])) as d:
        r, lines = calibrate_watch(d, args.nvrtc, "--runs", "2")
        check(r.returncode == 0, f"calibrate exit {r.returncode}: {r.stderr}")
        rec = record_file(d)
        check_counts(rec, 2)
        runs_ = [x for x in lines if x.get("type") == "calibration_run"]
        check([x["verdict"] for x in runs_] == ["regression"] * 2,
              f"a run's verdict was taken from a NUL line: {runs_}")
        # The run's six timing lines, and 10 of its 42 lines that are not
        # JSON objects (the two with a NUL byte and the 40 others).
        check([x["lines_left_out"] for x in runs_] == [6 + 10] * 2,
              f"lines not passed on: {runs_}")


SCENARIOS = {"hostile": scenario_hostile, "counts": scenario_counts, "restart": scenario_restart,
             "bad_file": scenario_bad_file, "roots": scenario_roots,
             "schedule": scenario_schedule, "unstored": scenario_unstored,
             "untimed": scenario_untimed, "bounded": scenario_bounded}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for opt in ("--quald", "--qualctl", "--worker", "--compile-helper", "--calibrator",
                "--fake-worker", "--nvrtc"):
        ap.add_argument(opt, required=True)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    return st.run_scenario(args.scenario, SCENARIOS[args.scenario], args, prefix="qual-cal-")


if __name__ == "__main__":
    sys.exit(main())
