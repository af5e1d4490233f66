#!/usr/bin/env python3
"""Prints the benchmark table from an A/A qual-run (JSON lines) and the
library timings (bench/library.py output): per case, ns per kernel, the
spread of the within-pair log ratio, the smallest effect the sign test over
the run's pairs would detect with 80% power at that spread, and the fixture's
time against the library call a user would make for the same shape.

usage: python3 bench/report.py AA.jsonl [LIBRARY.jsonl]"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from library import shape_key  # noqa: E402
from lines import timed_pairs  # noqa: E402


def main():
    aa = [json.loads(l) for l in open(sys.argv[1])]
    ref = {}
    if len(sys.argv) > 2:
        for l in open(sys.argv[2]):
            d = json.loads(l)
            ref[d["shape"]] = d
    pairs, verdicts, flops = timed_pairs(aa), {}, {}
    for d in aa:
        if d["type"] == "case_verdict":
            verdicts[d["case"]] = d
        elif d["type"] == "case":
            flops[d["case"]] = d.get("flops", 0)
    print(f"{'case':30} {'ns/kernel':>10} {'TFLOP/s':>8} {'sd(log r)':>10} {'MDE(80%)':>9} "
          f"{'ref ns':>9} {'fixture/ref':>11}  reference")
    for case, ps in pairs.items():
        ns = statistics.median([p["baseline_ns"] for p in ps] + [p["candidate_ns"] for p in ps])
        v = verdicts.get(case, {})
        sd, mde = v.get("log_ratio_sd"), v.get("detectable_ratio")
        r = ref.get(shape_key(case) or "")
        tf = flops.get(case, 0) / ns / 1e3 if ns else 0
        print(f"{case:30} {ns:10.0f} {tf:8.1f} "
              f"{(sd * 100 if sd is not None else float('nan')):9.3f}% "
              f"{((mde - 1) * 100 if mde else float('nan')):8.2f}% "
              f"{(r['ns'] if r else float('nan')):9.0f} "
              f"{(ns / r['ns'] if r else float('nan')):11.2f}  {r['library'] if r else '-'}")


if __name__ == "__main__":
    main()
