#!/usr/bin/python3
"""bench/exit_flips.py on evidence made up here: the spread between repeats
at the cap is the pooled sample sd of their median ratios, groups whose
exit statuses differ are counted as such, the model's flips come from the
long run's true effects, and a directory without jobs.txt is refused with
its name. Exits 0 when all hold."""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
script = os.path.join(here, "..", "..", "bench", "exit_flips.py")


def job(d, name, cap, cases, rows, part, rc):
    start = {"type": "start", "settings": {"max_pairs": cap}}
    with open(os.path.join(d, "jobs", name + ".jsonl"), "w") as f:
        f.write(json.dumps(start) + "\n")
        for c in cases:
            f.write(json.dumps(dict({"type": "case_verdict", "conf": 0.95, "looks": 3}, **c)) + "\n")
    rows.append(f"{part} {name} {rc} 1000")


with tempfile.TemporaryDirectory() as d:
    os.mkdir(os.path.join(d, "jobs"))
    rows = []
    job(d, "delay8.long", 240, [{"case": "k", "ratio_median": 1.0120},
                                {"case": "m", "ratio_median": 1.03}], rows, "planted-long", 1)
    a = [1.010, 1.012, 1.014, 1.010, 1.012, 1.014]
    b = [1.000, 1.002, 1.004, 1.000, 1.002, 1.004]
    for i, x in enumerate(a):
        job(d, f"exit-delay8-k.{i + 1}", 240,
            [{"case": "k", "ratio_median": x, "stopped": "max_pairs",
              "ratio_lo": x - 0.002, "ratio_hi": x + 0.002}], rows, "exit", int(x > 1.011))
    for i, x in enumerate(b):
        job(d, f"exit-delay9-k.{i + 1}", 240,
            [{"case": "k", "ratio_median": x, "stopped": "max_pairs",
              "ratio_lo": x - 0.002, "ratio_hi": x + 0.002}], rows, "exit", 0)
    # Decided early: not at the cap, so not in sigma; agrees.
    for i in range(3):
        job(d, f"exit-delay8-m.{i + 1}", 240,
            [{"case": "m", "ratio_median": 1.03, "stopped": "decided"}], rows, "exit", 1)
    with open(os.path.join(d, "jobs.txt"), "w") as f:
        f.write("\n".join(rows) + "\n")
    r = subprocess.run([sys.executable, script, d], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    sd = math.sqrt(2 * 4 * 0.002 ** 2 / 10)  # each set: 4 of 6 at +-0.002 from its mean
    m = re.search(r"between repeats ([0-9.]+)% \((\d+) degrees of freedom", out)
    assert m, out
    assert abs(float(m.group(1)) - 100 * sd) < 0.0006 and m.group(2) == "10", (m.groups(), sd, out)
    m = re.search(r"exit groups of 2 or more jobs: (\d+) of (\d+) agree; the model predicts "
                  r"([0-9.]+) flips in the (\d+)", out)
    assert m, out
    assert m.group(1) == "2" and m.group(2) == "3", out
    # Only delay8's groups have a true effect; k sits exactly at the
    # gate's threshold for the estimate (1.01 plus the intervals' lower
    # half-width, 0.002) and flips with 1 - 2 / 2^6 among six repeats; m
    # far beyond does not.
    assert "threshold of the estimate 1.0120" in out, out
    assert m.group(4) == "2" and abs(float(m.group(3)) - (1 - 2 / 64)) < 0.01, out
    bad = os.path.join(d, "jobs")
    r = subprocess.run([sys.executable, script, bad], capture_output=True, text=True)
    assert r.returncode != 0 and bad in r.stderr and "jobs.txt" in r.stderr, r.stderr
    with open(os.path.join(d, "jobs.txt"), "a") as f:
        f.write("exit torn-row\n")
    r = subprocess.run([sys.executable, script, d], capture_output=True, text=True)
    assert r.returncode != 0 and "row 17" in r.stderr and "torn-row" in r.stderr, r.stderr
print("exit_flips: all hold")
