#!/usr/bin/python3
"""qual-run for a person and for CI (client/run_view.h): a compile-only
qualification of the real nvrtc against its alt build.

- on a pseudo-terminal: plain lines as they come, the summary table with a
  row per case and the run verdict, and the exit status of the run;
- --json-out writes the JSON lines (every line a JSON object, start first,
  verdict last), --junit JUnit XML that parses (every case skipped: not
  timed), --markdown a table;
- stdout not a terminal: the JSON lines, as always; --format table there
  prints the table;
- --format yaml is a usage error (4) naming the option.

usage: run_view_test.py QUAL_RUN BASELINE_LIB CANDIDATE_LIB"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from ptyrun import on_pty

run, base, cand = sys.argv[1:4]
CASES = ["gemm_f16-256x512x256", "conv3x3_f16-7x7x512x512"]
args = [base, cand, "--compile-only"] + [x for c in CASES for x in ("--case", c)]


def check(ok, what, detail=""):
    if not ok:
        raise AssertionError(f"{what}\n{detail}")


with tempfile.TemporaryDirectory() as d:
    jo, ju, md = (os.path.join(d, n) for n in ("l.jsonl", "r.xml", "s.md"))
    code, out = on_pty([run] + args + ["--json-out", jo, "--junit", ju, "--markdown", md],
                       dict(os.environ, TERM="xterm", NO_COLOR="1"))
    check(code == 0, "exit 0: a compile-only pass", out)
    rows = out.splitlines()
    check(rows[0].startswith("start: 2 cases, not timed"), "plain start line", out)
    head = [i for i, r in enumerate(rows) if r.startswith("case  ")]
    check(len(head) == 1, "one table", out)
    table = rows[head[0]:]
    check(table[0].split()[:3] == ["case", "verdict", "code"], "table header", out)
    for c, r in zip(CASES, table[1:3]):
        check(r.split()[:2] == [c, "not_timed"], "row of " + c, r)
    check("verdict: not_timed (2 not_timed)" in out, "run verdict", out)
    lines = [json.loads(t) for t in open(jo)]
    check(lines[0]["type"] == "start" and lines[-1]["type"] == "verdict" and
          [x["case"] for x in lines if x["type"] == "case_verdict"] == CASES,
          "--json-out: the run's lines", lines[:2])
    suite = ET.parse(ju).getroot().find("testsuite")
    check([t.get("name") for t in suite.findall("testcase")] == CASES and
          all(t.find("skipped") is not None for t in suite.findall("testcase")),
          "JUnit: a skipped testcase per case", ET.tostring(suite)[:400])
    mdt = open(md).read()
    check(all(f"| {c} | not_timed |" in mdt for c in CASES), "markdown rows", mdt)

r = subprocess.run([run] + args, capture_output=True, text=True)
check(r.returncode == 0 and all(t.startswith("{") for t in r.stdout.splitlines()),
      "not a terminal: JSON lines", r.stdout[:300])
with tempfile.TemporaryDirectory() as d:
    # Off a terminal (CI's case): the JSON lines and the report.
    ju = os.path.join(d, "r.xml")
    r = subprocess.run([run] + args + ["--junit", ju], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0 and all(t.startswith("{") for t in r.stdout.splitlines()) and
          len(ET.parse(ju).getroot().find("testsuite").findall("testcase")) == len(CASES),
          "off a terminal: the lines and the JUnit report", (r.stdout[:300], r.stderr))
    # A report option misspelt or cut short is refused, not left out (and
    # never runs the renderer again and again).
    for bad in ("--junitX=" + ju, "--jun=" + ju):
        r = subprocess.run([run] + args + [bad], capture_output=True, text=True, timeout=60)
        check(r.returncode == 4, f"{bad}: a usage error", (r.returncode, r.stderr))
    # The value of an option is not an option: a case named like one.
    r = subprocess.run([run, base, cand, "--compile-only", "--case", "--junit"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 4 and "unknown case" in r.stdout + r.stderr,
          "--case --junit: the case '--junit', unknown", (r.stdout[-300:], r.stderr))
r = subprocess.run([run] + args + ["--format", "table"], capture_output=True, text=True)
check(r.returncode == 0 and "verdict: not_timed (2 not_timed)" in r.stdout and
      not r.stdout.startswith("{"), "--format table off a terminal", r.stdout[:300])
r = subprocess.run([run] + args + ["--format", "yaml"], capture_output=True, text=True)
check(r.returncode == 4 and "--format must be table or json" in r.stderr, "bad --format",
      r.stderr)
print("run_view: all hold")
