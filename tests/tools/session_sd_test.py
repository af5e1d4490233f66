#!/usr/bin/python3
"""bench/session_sd.py on evidence made up here: a case whose sessions are
shifted gets the F ratio and session sd of its one-way analysis of
variance, worked out by hand below; a case near the margin with no shift
gets 0 and is pooled in the near line; a throttled block's pairs are left
out as the judge leaves them out; evidence with no case of three sessions
is refused by name. Exits 0 when all hold."""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
script = os.path.join(here, "..", "..", "bench", "session_sd.py")


def pair(case, session, block, logr):
    return {"type": "pair", "case": case, "session": session, "block": block,
            "baseline_ns": 1000.0, "candidate_ns": 1000.0 * math.exp(logr)}


def write(d, lines):
    os.makedirs(os.path.join(d, "jobs"), exist_ok=True)
    with open(os.path.join(d, "jobs", "exit-delay8-k.1.jsonl"), "w") as f:
        f.write("".join(json.dumps(x) + "\n" for x in lines))
    with open(os.path.join(d, "jobs.txt"), "w") as f:
        f.write("exit exit-delay8-k.1 0 1000\n")


D = 0.003
SHIFTED = [0.0, 0.004, -0.004, 0.008]
lines, block = [], 0
for s, m in enumerate(SHIFTED, 1):
    for dev in (-D, 0.0, D):
        block += 1
        lines.append(pair("shifted", s, block, m + dev))
        lines.append(pair("near", s, block, 0.01 + dev))
# A throttled block of the shifted case, far off: left out.
block += 1
lines.append({"type": "block", "case": "shifted", "session": 1, "block": block,
              "throttled": True})
lines.append(pair("shifted", 1, block, 0.5))

with tempfile.TemporaryDirectory() as d:
    write(d, lines)
    r = subprocess.run([sys.executable, script, d], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    rows = {}
    for t in out.splitlines()[1:]:
        m = re.match(r"\s*(\S+(?: \S+)?)\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9.]+)%\s+([0-9.]+) "
                     r"\((\d+), (\d+)\)\s+([0-9.]+)%$", t)
        assert m, (t, out)
        rows[m.group(1)] = m.groups()[1:]
    # Shifted: MSW = D^2 (deviations -D, 0, D in each of 4 sessions, 8
    # d.f.), MSB = 3 x the sample variance of the session means (3 d.f.),
    # session sd sqrt((MSB - MSW) / 3); its mean log ratio 0.002: bin +0.0.
    var_means = sum((m - 0.002) ** 2 for m in SHIFTED) / 3
    f_want = 3 * var_means / D ** 2
    sd_want = math.sqrt(var_means - D ** 2 / 3)
    runs, sessions, blocks, within, f, dfb, dfw, sd = rows["+0.0"]
    assert (runs, sessions, blocks, dfb, dfw) == ("1", "4", "12", "3", "8"), rows["+0.0"]
    assert abs(float(within) - 100 * D) < 0.001, rows["+0.0"]
    assert abs(float(f) - f_want) < 0.002, (f, f_want)
    assert abs(float(sd) - 100 * sd_want) < 0.0001, (sd, sd_want)
    # Near the margin, no shift: F 0, session sd 0, and the near line is it.
    assert rows["+1.0"][4] == "0.000" and float(rows["+1.0"][7]) == 0, rows["+1.0"]
    assert rows["near 0.5-1.5"] == rows["+1.0"], out
    assert rows["all"][0] == "2" and rows["all"][2] == "24", rows["all"]

with tempfile.TemporaryDirectory() as d:
    write(d, [pair("few", 1, 1, 0.0), pair("few", 1, 2, 0.0), pair("few", 2, 3, 0.0)])
    r = subprocess.run([sys.executable, script, d], capture_output=True, text=True)
    assert r.returncode == 1 and "no case run with three sessions" in r.stderr, r
print("session_sd: all hold")
