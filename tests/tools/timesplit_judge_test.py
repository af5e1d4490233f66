#!/usr/bin/python3
"""qual-judge on stored lines with session_time lines (docs/output.md,
time_s): the verdict's time_s sums the sessions' phases and has
session_count, and leaves out qual-run's own phases, which the lines do not
hold; lines without session_time lines give no time_s; a session_time line
with a negative phase is refused (exit 4, naming the line).

usage: timesplit_judge_test.py QUAL_JUDGE STORED_RUN.jsonl"""
import json
import subprocess
import sys
import tempfile


def judge(prog, lines):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
        f.write("".join(json.dumps(l) + "\n" for l in lines))
        f.flush()
        p = subprocess.run([prog, f.name], capture_output=True, text=True)
    out = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    return p.returncode, out, p.stderr


def main():
    prog, stored = sys.argv[1], sys.argv[2]
    base = [json.loads(l) for l in open(stored) if l.strip()]
    base = [l for l in base if l["type"] not in ("case_verdict", "verdict")]
    s1 = {"type": "session_time", "session": 1,
          "time_s": {"open": 0.25, "fixtures": 0.5, "timing": 0.125, "replays_device": 0.0625}}
    s2 = {"type": "session_time", "session": 2,
          "time_s": {"open": 0.5, "fixtures": 0.25, "timing": 0.125, "blocks": 1.0}}

    rc, out, err = judge(prog, base + [s1, s2])
    ts = out[-1].get("time_s")
    if rc != 0 or ts is None:
        sys.exit(f"want exit 0 and time_s, got {rc}, {out[-1]}; {err}")
    want = {"open": 0.75, "fixtures": 0.75, "timing": 0.25, "replays_device": 0.0625,
            "blocks": 1.0, "warmup": 0, "session_count": 2}
    for k, v in want.items():
        if abs(ts.get(k, -1) - v) > 1e-9:
            sys.exit(f"time_s.{k}: want {v}, got {ts.get(k)}")
    for k in ("compile", "probe", "total", "judge", "identify"):
        if k in ts:
            sys.exit(f"time_s.{k} is not in the lines, yet qual-judge wrote it: {ts}")

    rc, out, err = judge(prog, base)
    if rc != 0 or "time_s" in out[-1]:
        sys.exit(f"no session_time line: want no time_s, got {rc}, {out[-1]}")

    bad = dict(s2, time_s={"open": -1})
    rc, out, err = judge(prog, base + [s1, bad])
    if rc != 4 or "line %d" % (len(base) + 2) not in err or "session_time" not in err:
        sys.exit(f"negative phase: want exit 4 naming the line, got {rc}: {err}")
    print("ok")


if __name__ == "__main__":
    main()
