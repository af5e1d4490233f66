#!/usr/bin/env python3
"""qual-bisect over series of builds, compile-only (docs/bisect.md).

Builds are copies of real compilers in a folder of the test's: nvrtc 13.0
(and its second name) for the builds before the planted one, shim_slow (a
compiler that changes every case's code) from it on.

Scenarios:
  planted   9 builds (the baseline and 8), shim_slow from the 5th: each case
            bisected finds the one step 4 -> 5, in at most 1 + 3 + 1 runs
            shared by the cases; exit 1; every line valid under the schema
  run       the planted series with --run: one bisection of the run over both
            cases finds the step once, in the same runs; per case the run is null
  none      the same compiler throughout: no change, one run, exit 0
  file      the series from --builds FILE (comments and blank lines), the
            step at the 2nd build
  broken    a library that is no compiler in the series: exit 3, and the
            case says which comparison failed
  arch      no --case, for sm_80: the four wgmma cases do not apply and are
            listed as such, never counted as failed; the other nine each
            find the step
  usage     one build only, a missing file, an option after -- that is
            qual-bisect's to set: exit 4 naming the problem
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import service_test as svc  # noqa: E402

check = svc.check
CASES = ["gemm_f16-256x512x256", "conv3x3_f16-7x7x512x512"]


def series(root, args, kinds):
    """Copies of the compilers named by kinds ('base', 'alt', 'slow',
    'noabi'), in order: their paths."""
    src = {"base": args.nvrtc, "alt": args.nvrtc_alt, "slow": args.shim_slow,
           "noabi": args.shim_noabi}
    out = []
    for i, k in enumerate(kinds):
        p = os.path.join(root, f"build{i:02d}-{k}.so")
        shutil.copyfile(src[k], p)
        out.append(p)
    return out


def bisect(args, *argv):
    env = dict(os.environ)
    env.pop("QUAL_NVDISASM", None)
    r = subprocess.run([args.qual_bisect, *argv], capture_output=True, text=True,
                       timeout=600, env=env)
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    return r, lines


def validate(lines):
    for o in lines:
        svc.schema_check(json.dumps(o), f"a {o.get('type')} line")


def case_args():
    return [a for c in CASES for a in ("--case", c)]


def scenario_planted(args, root):
    builds = series(root, args, ["base", "alt", "base", "alt", "base", "slow", "slow",
                                 "slow", "slow"])
    r, lines = bisect(args, "--compile-only", *case_args(), *builds, "--", "--compile-jobs", "2")
    check(r.returncode == 1, f"exit {r.returncode}, expected 1: {r.stderr[-1500:]}")
    validate(lines)
    steps = [o for o in lines if o["type"] == "bisect_step"]
    end = lines[-1]
    check(end["type"] == "bisect" and end["mode"] == "static", f"last line: {end}")
    check(end["runs"] == len(steps), f"runs {end['runs']}, {len(steps)} bisect_step lines")
    # The ends, three halvings, the builds either side, the rest of the
    # series: one run each, shared by both cases.
    pairs = [(s["a"], s["b"]) for s in steps]
    check(pairs == [(0, 8), (0, 4), (0, 6), (0, 5), (4, 5), (5, 8)],
          f"comparisons {pairs}")
    check((steps[0]["a"], steps[0]["b"]) == (0, 8), f"the first comparison is {steps[0]}")
    check(sorted(c["case"] for c in end["cases"]) == sorted(CASES), f"cases {end['cases']}")
    for c in end["cases"]:
        check(c["ends_differ"] and not c["uncertain"] and c["broken"] is None,
              f"{c['case']}: {c}")
        check([(x["from"], x["to"], x["step"]) for x in c["changes"]] == [(4, 5, True)],
              f"{c['case']}: changes {c['changes']}")
        check(c["changes"][0]["to_build"] == builds[5], f"{c['case']}: to_build")
    for s in steps:
        want = "differs" if s["b"] >= 5 > s["a"] else "same"
        check(all(v == want for v in s["cases"].values()),
              f"step {s['a']} -> {s['b']}: {s['cases']}, expected {want}")


def scenario_run(args, root):
    """--run: one bisection of the run over both cases, the same runs as
    per case, the planted build named once; cases empty."""
    builds = series(root, args, ["base", "alt", "base", "alt", "base", "slow", "slow",
                                 "slow", "slow"])
    r, lines = bisect(args, "--compile-only", "--run", *case_args(), *builds, "--",
                      "--compile-jobs", "2")
    check(r.returncode == 1, f"exit {r.returncode}, expected 1: {r.stderr[-1500:]}")
    validate(lines)
    end = lines[-1]
    check(end["by"] == "run" and end["cases"] == [] and end["run"] is not None, f"last line: {end}")
    run = end["run"]
    check("case" not in run and run["ends_differ"] and run["broken"] is None,
          f"the run's bisection: {run}")
    check([(x["from"], x["to"], x["step"]) for x in run["changes"]] == [(4, 5, True)],
          f"the run's changes: {run['changes']}")
    steps = [(s["a"], s["b"]) for s in lines if s["type"] == "bisect_step"]
    check(steps == [(0, 8), (0, 4), (0, 6), (0, 5), (4, 5), (5, 8)], f"comparisons {steps}")
    # Per case (the default) the same series names the step per case, and
    # the run is null.
    r, lines = bisect(args, "--compile-only", *case_args(), *builds[:6])
    check(r.returncode == 1 and lines[-1]["by"] == "case" and lines[-1]["run"] is None,
          f"per case: exit {r.returncode}, {lines[-1] if lines else r.stderr[-800:]}")


def scenario_none(args, root):
    builds = series(root, args, ["base", "alt", "base", "alt"])
    r, lines = bisect(args, "--compile-only", *case_args(), *builds)
    check(r.returncode == 0, f"exit {r.returncode}, expected 0: {r.stderr[-1500:]}")
    end = lines[-1]
    check(end["runs"] == 1 and all(not c["ends_differ"] and c["changes"] == []
                                   for c in end["cases"]), f"no change: {end}")


def scenario_file(args, root):
    builds = series(root, args, ["base", "base", "slow", "slow"])
    f = os.path.join(root, "series.txt")
    with open(f, "w") as fh:
        fh.write("# nightly builds, oldest first\n\n" + "\n".join(builds) + "\n")
    r, lines = bisect(args, "--compile-only", "--case", CASES[0], "--builds", f)
    check(r.returncode == 1, f"exit {r.returncode}: {r.stderr[-1500:]}")
    c = lines[-1]["cases"][0]
    check([(x["from"], x["to"]) for x in c["changes"]] == [(1, 2)], f"changes {c['changes']}")
    check(lines[-1]["builds"] == builds, "the builds read from the file")


def scenario_broken(args, root):
    builds = series(root, args, ["base", "base", "noabi", "slow", "slow"])
    r, lines = bisect(args, "--compile-only", "--case", CASES[0], *builds)
    check(r.returncode == 3, f"exit {r.returncode}, expected 3: {r.stderr[-1500:]}")
    c = lines[-1]["cases"][0]
    check(c["broken"] == [0, 2] and c["changes"] == [],
          f"the broken comparison is not named: {c}")
    step = next(s for s in lines if s["type"] == "bisect_step" and s["b"] == 2)
    check(step["cases"].get(CASES[0], "broken") == "broken" and "exit" in step["exit"],
          f"the failed step: {step}")


def scenario_arch(args, root):
    builds = series(root, args, ["base", "alt", "slow"])
    r, lines = bisect(args, "--compile-only", *builds, "--", "--arch", "sm_80",
                      "--compile-jobs", "2")
    check(r.returncode == 1, f"exit {r.returncode}, expected 1: {r.stderr[-1500:]}")
    validate(lines)
    end = lines[-1]
    check(sorted(end["not_applicable"]) == sorted(
        ["gemm_f16_wgmma-256x1024x1024", "gemm_f16_wgmma-256x512x256",
         "gemm_i8_wgmma-256x1024x1024", "attention_f16_wgmma-512"]),
        f"not applicable: {end['not_applicable']}")
    check(len(end["cases"]) == 9, f"{len(end['cases'])} cases bisected, expected 9")
    for c in end["cases"]:
        check([(x["from"], x["to"]) for x in c["changes"]] == [(1, 2)] and c["broken"] is None,
              f"{c['case']}: {c}")


def scenario_usage(args, root):
    builds = series(root, args, ["base"])
    r, _ = bisect(args, *builds)
    check(r.returncode == 4 and "at least one build" in r.stderr, f"one build: {r.stderr}")
    r, _ = bisect(args, "--builds", os.path.join(root, "no-series.txt"))
    check(r.returncode == 4 and "no-series.txt" in r.stderr, f"missing --builds: {r.stderr}")
    r, _ = bisect(args, builds[0], os.path.join(root, "missing.so"))
    check(r.returncode == 4 and "missing.so" in r.stderr, f"missing build: {r.stderr}")
    r, _ = bisect(args, "--alpha", "2", builds[0], builds[0])
    check(r.returncode == 4 and "--alpha" in r.stderr, f"bad alpha: {r.stderr}")
    r, _ = bisect(args, builds[0], builds[0], "--", "--pairs=600")
    check(r.returncode == 4 and "--pairs after --" in r.stderr, f"--pairs after --: {r.stderr}")
    r, _ = bisect(args, "--pairs", "100000", "--max-effort", "64", builds[0], builds[0])
    check(r.returncode == 4 and "1000000" in r.stderr, f"pairs over the cap: {r.stderr}")


SCENARIOS = {"planted": scenario_planted, "run": scenario_run, "none": scenario_none, "file": scenario_file,
             "broken": scenario_broken, "arch": scenario_arch, "usage": scenario_usage}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for o in ("--qual-bisect", "--nvrtc", "--nvrtc-alt", "--shim-slow", "--shim-noabi"):
        ap.add_argument(o, required=True)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    return svc.run_scenario(args.scenario, SCENARIOS[args.scenario], args,
                            prefix="qual-bisect-", limit=500)


if __name__ == "__main__":
    sys.exit(main())
