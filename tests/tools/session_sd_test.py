#!/usr/bin/python3
"""bench/session_sd.py on evidence made up here: a case whose sessions are
shifted, pooled with one ten times as noisy and not shifted, gets the
standardised F and session share worked out by hand below (raw sums of
squares would give others); a block is the median of its pairs; cases near
either edge of the margin with no shift get 0 and are pooled in the near
line; a throttled block's pairs are left out as the judge leaves them out;
evidence with no case of three sessions is refused by name. Exits 0 when
all hold."""
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
    for k, dev in enumerate((-D, 0.0, D)):
        block += 1
        # Three pairs a block, the block its median: an outlier in the
        # first block of each session moves a mean, not the median.
        for extra in (0.0, 0.0, 0.03 if k == 0 else 0.0):
            lines.append(pair("shifted", s, block, m + dev + extra))
        lines.append(pair("near", s, block, 0.01 + dev))
        # The same bin as shifted (mean log ratio 0.002), ten times the
        # spread, no shift: pooled standardised, it pulls F to the mean
        # of the two runs' F; raw sums of squares would not.
        lines.append(pair("wide", s, block, 0.002 + 10 * dev))
        # Near the margin's other edge, -1%: the near line takes it too.
        lines.append(pair("below", s, block, -0.01 + dev))
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
                     r"\((\d+), (\d+)\)\s+([0-9.]+)\s+([0-9.]+)%$", t)
        assert m, (t, out)
        rows[m.group(1)] = m.groups()[1:]
    # Shifted alone: MSW = D^2 (deviations -D, 0, D in each of 4 sessions,
    # 8 d.f.), MSB = 3 x the sample variance of the session means (3 d.f.),
    # F = MSB / MSW; wide: the same deviations x 10, no shift, F = 0.
    var_means = sum((m - 0.002) ** 2 for m in SHIFTED) / 3
    f_shifted = 3 * var_means / D ** 2
    f_want = (3 * f_shifted + 3 * 0.0) / 6
    rho = (3 * (f_shifted - 1) / 3 + 3 * (0.0 - 1) / 3) / 6
    within = math.sqrt((8 * D ** 2 + 8 * (10 * D) ** 2) / 16)
    runs, sessions, blocks, wsd, f, dfb, dfw, ratio, sd = rows["+0.0"]
    assert (runs, sessions, blocks, dfb, dfw) == ("2", "8", "24", "6", "16"), rows["+0.0"]
    assert abs(float(wsd) - 100 * within) < 0.001, (wsd, within)
    assert abs(float(f) - f_want) < 0.002, (f, f_want)
    assert abs(float(ratio) - math.sqrt(rho)) < 0.002, (ratio, rho)
    assert abs(float(sd) - 100 * math.sqrt(rho) * within) < 0.0002, (sd, rho, within)
    # Near either edge of the margin, no shift: F 0, nothing between
    # sessions, and the near line pools the two.
    for b in ("+1.0", "-1.0"):
        assert rows[b][4] == "0.000" and float(rows[b][8]) == 0, rows[b]
    assert rows["near +-0.5-1.5%"][0] == "2" and rows["near +-0.5-1.5%"][4] == "0.000", out
    assert rows["all"][0] == "4" and rows["all"][2] == "48", rows["all"]

with tempfile.TemporaryDirectory() as d:
    write(d, [pair("few", 1, 1, 0.0), pair("few", 1, 2, 0.0), pair("few", 2, 3, 0.0)])
    r = subprocess.run([sys.executable, script, d], capture_output=True, text=True)
    assert r.returncode == 1 and "no case run with three sessions" in r.stderr, r
print("session_sd: all hold")
