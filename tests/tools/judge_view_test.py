#!/usr/bin/python3
"""qualctl judge and qual-judge as a person and a CI job see them, on a
stored H200 run (docs/gpu-runs/2026-11-29/slow.jsonl by default):

- under a pseudo-terminal the summary table: per case the verdict, the
  code's differences, the median time per kernel of each arm in us (checked
  against the medians of the file's pair lines), the change in percent with
  its interval (against the lines --json-out wrote), p and the detectable
  change; the geomean of the median ratios; the verdicts in colour, and
  not with NO_COLOR set;
- --json-out writes the judge's lines, the same as stdout gives when it is
  not a terminal (the default there stays the lines);
- --junit writes JUnit XML that parses, one testcase per case, failures the
  verdict line's regression cases;
- --markdown writes a table with a row per case;
- a bad --format, and a report that cannot be written, are usage errors
  (exit 4) that name the problem.

usage: judge_view_test.py QUALCTL QUAL_JUDGE [RUN.jsonl]"""
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from ptyrun import on_pty

qualctl, qual_judge = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
run = sys.argv[3] if len(sys.argv) > 3 else os.path.join(here, "..", "..", "docs", "gpu-runs",
                                                         "2026-11-29", "slow.jsonl")


def check(ok, what, detail=""):
    if not ok:
        raise AssertionError(f"{what}\n{detail}")


lines = [json.loads(t) for t in open(run) if t.strip()]
pairs = {}
for d in lines:
    if d.get("type") == "pair":
        pairs.setdefault(d["case"], ([], []))
        pairs[d["case"]][0].append(d["baseline_ns"])
        pairs[d["case"]][1].append(d["candidate_ns"])

with tempfile.TemporaryDirectory() as tmp:
    jo, ju, md = (os.path.join(tmp, n) for n in ("lines.jsonl", "junit.xml", "summary.md"))
    env = dict(os.environ, TERM="xterm")
    env.pop("NO_COLOR", None)
    code, out = on_pty([qualctl, "judge", run, "--json-out", jo, "--junit", ju,
                        "--markdown", md], env)
    judged = [json.loads(t) for t in open(jo) if t.strip()]
    cvs = [d for d in judged if d["type"] == "case_verdict"]
    verdict = [d for d in judged if d["type"] == "verdict"][0]
    check(code == {"regression": 1, "neutral": 0, "improvement": 0, "fail": 2}[verdict["verdict"]],
          "exit status is the verdict's", (code, verdict["verdict"]))
    check("\033[31m" in out or "\033[32m" in out, "colour on a terminal", out)
    plain = re.sub(r"\033\[[0-9;]*m", "", out)
    rows = plain.splitlines()
    check(rows[0].split() == ["case", "verdict", "code", "baseline", "us", "candidate", "us",
                              "change", "[lo,", "hi]", "p_holm", "detectable"], "header", plain)
    col_base = rows[0].index("baseline us")
    col_cand = rows[0].index("candidate us")
    col_change = rows[0].index("change [lo, hi]")
    check(len(cvs) == len(pairs) and len(cvs) >= 1, "a case_verdict per timed case", plain)
    for cv, row in zip(cvs, rows[1:]):
        b, c = pairs[cv["case"]]
        check(row.startswith(cv["case"] + " "), "row of " + cv["case"], row)
        check(row[col_base:].split()[0] == f"{statistics.median(b) / 1000:.3f}",
              "baseline us is the median of the pair lines", (row, statistics.median(b)))
        check(row[col_cand:].split()[0] == f"{statistics.median(c) / 1000:.3f}",
              "candidate us is the median of the pair lines", (row, statistics.median(c)))
        want = (f"{100 * (cv['ratio_median'] - 1):+.2f}% [{100 * (cv['ratio_lo'] - 1):+.2f}%, "
                f"{100 * (cv['ratio_hi'] - 1):+.2f}%]")
        check(row[col_change:].startswith(want), "change in percent with its interval",
              (row, want))
    geo = math.exp(statistics.fmean(math.log(cv["ratio_median"]) for cv in cvs))
    want = f"geomean over {len(cvs)} timed cases: {100 * (geo - 1):+.2f}% (candidate against baseline)"
    check(want in rows, "geomean line", (want, plain))
    check(f"verdict: {verdict['verdict']} (" in plain, "run verdict line", plain)

    # JUnit: parses, a testcase per case, failures the regression cases.
    root = ET.parse(ju).getroot()
    check(root.tag == "testsuites", "JUnit root")
    suite = root.find("testsuite")
    tcs = suite.findall("testcase")
    check([t.get("name") for t in tcs] == [cv["case"] for cv in cvs], "a testcase per case")
    failed = [t.get("name") for t in tcs if t.find("failure") is not None]
    check(failed == verdict["gate"]["regression_cases"] or
          sorted(failed) == sorted(verdict["gate"]["regression_cases"]),
          "failures are the regression cases", (failed, verdict["gate"]))
    check(int(suite.get("failures")) == len(failed) and int(suite.get("tests")) == len(tcs),
          "suite counts", ET.tostring(suite)[:300])

    # Markdown: a header, its rule and a row per case, the same cells.
    mdl = open(md).read().splitlines()
    trows = [t for t in mdl if t.startswith("|")]
    check(len(trows) == 2 + len(cvs), "markdown rows", "\n".join(mdl))
    check(trows[2].split("|")[1].strip() == cvs[0]["case"], "markdown first row", trows[2])
    check(any(t.startswith("geomean over ") for t in mdl), "markdown geomean", "\n".join(mdl))

    # NO_COLOR: no colour codes, the same table.
    code2, out2 = on_pty([qualctl, "judge", run], dict(env, NO_COLOR="1"))
    check("\033[" not in out2 and out2 == plain, "NO_COLOR: the same table uncoloured",
          out2)

    # Not a terminal: the lines, as before, the same as --json-out's.
    r = subprocess.run([qual_judge, run], capture_output=True, text=True)
    check(r.stdout == open(jo).read(), "stdout not a terminal: the lines", r.stdout[:300])
    r2 = subprocess.run([qual_judge, "--format", "table", run], capture_output=True, text=True)
    check(r2.stdout == plain, "--format table off a terminal, without colour", r2.stdout)
    r3 = subprocess.run([qualctl, "judge", "--format", "yaml", run], capture_output=True,
                        text=True)
    check(r3.returncode == 4 and "--format must be table or json, got 'yaml'" in r3.stderr,
          "bad --format", r3)
    bad = os.path.join(tmp, "no", "such", "dir", "j.xml")
    r4 = subprocess.run([qual_judge, "--junit", bad, run], capture_output=True, text=True)
    check(r4.returncode == 4 and f"cannot write the JUnit report to '{bad}'" in r4.stderr,
          "unwritable report", r4)
print("judge_view: all hold")
