#!/usr/bin/env python3
"""Per-block figures of tests/gpu/neighbours.sh's jobs (docs/verdicts.md,
"The same conditions at every look"):

    python3 bench/neighbours.py CASE JOBS_DIR

For each job (JOBS_DIR/*.jsonl) that timed CASE: its ratio and interval,
the baseline's median time a launch, the median ratio of the blocks by
their place in a session's stretch of the case (p0 ... p4 the first five,
p5 the 6th-15th, p15 the rest), each session's median ratio, and the
median SM clock, memory clock and board power over the case's blocks."""
import collections
import glob
import json
import math
import statistics
import sys


def main():
    case, folder = sys.argv[1], sys.argv[2]
    for path in sorted(glob.glob(folder + "/*.jsonl")):
        lines = [json.loads(t) for t in open(path) if t.strip()]
        cv = next((l for l in lines if l.get("type") == "case_verdict" and l["case"] == case), None)
        if not cv or cv.get("ratio_median") is None:
            continue
        blocks = collections.defaultdict(list)
        base = collections.defaultdict(list)
        for l in lines:
            if l.get("type") == "pair" and l["case"] == case:
                key = (l.get("session") or 0, l.get("block") or 0)
                blocks[key].append(math.log(l["candidate_ns"] / l["baseline_ns"]))
                base[key].append(l["baseline_ns"])
        sessions = collections.defaultdict(list)
        for key in sorted(blocks):
            sessions[key[0]].append(statistics.median(blocks[key]))
        place = collections.defaultdict(list)
        for v in sessions.values():
            for i, x in enumerate(v):
                place[i if i < 5 else 5 if i < 15 else 15].append(x)
        clocks = collections.defaultdict(list)
        for l in lines:
            if l.get("type") == "block" and l["case"] == case and isinstance(l.get("clocks"), dict):
                for end in ("start", "end"):
                    r = l["clocks"].get(end) or {}
                    for k in ("sm_mhz", "mem_mhz", "power_w"):
                        if isinstance(r.get(k), (int, float)):
                            clocks[k].append(r[k])
        base_ns = statistics.median(statistics.median(v) for v in base.values())
        print(f"{path.split('/')[-1]:<24} {cv['ratio_median']:.5f} "
              f"[{cv['ratio_lo']:.5f}, {cv['ratio_hi']:.5f}] baseline {base_ns:.1f} ns  "
              + " ".join(f"p{k} {math.exp(statistics.median(v)):.5f} ({len(v)})"
                         for k, v in sorted(place.items()))
              + "  sessions " + " ".join(f"{math.exp(statistics.median(v)):.4f}"
                                         for _, v in sorted(sessions.items()))
              + "  " + " ".join(f"{k} {statistics.median(v):.0f}" for k, v in sorted(clocks.items())))


if __name__ == "__main__":
    main()
