#!/usr/bin/python3
"""Do a case's ratio intervals hold up from run to run? Reads repeated runs
(qual-run JSON lines) and prints, per configuration:

  A/A runs (both arms the same compiler, byte-identical code): how many of
  the cases' intervals hold 1, which every honest 95% interval of identical
  code does about 95% of the time, and how often the sign test says p < 0.05.

  A/B runs (repeats of one comparison): for every case, how many pairs of
  repeats have overlapping intervals, the spread of the median ratio over the
  repeats, and the intervals' mean half-width.

Each run is judged two ways: by blocks (the case_verdict line of a schema 2
run, which is what qual reports) and pair by pair (every pair its own unit,
as schema 1 judged; recomputed here with the same order-statistic interval
and exact sign test).

usage: intervals.py DIR      files DIR/CONFIG.REPEAT.jsonl; CONFIG names
                             starting with "aa" are A/A runs
"""
import glob
import itertools
import json
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lines import timed_pairs  # noqa: E402

CONF = 0.95


def binom_cdf(k, n):
    return sum(math.comb(n, i) for i in range(0, k + 1)) / 2 ** n


def ci_rank(n, conf=CONF):
    """Largest k with coverage P(k <= B <= n - k) >= conf, or 0."""
    best = 0
    for k in range(1, n // 2 + 1):
        if 1 - 2 * binom_cdf(k - 1, n) >= conf:
            best = k
    return best


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def interval(ratios):
    s = sorted(ratios)
    k = ci_rank(len(s))
    return (s[k - 1], s[len(s) - k]) if k else (math.nan, math.nan)


def sign_p(k, n):
    if n == 0:
        return 1.0
    k = min(k, n - k)
    return min(1.0, 2 * binom_cdf(k, n))


def read(path):
    lines = [json.loads(line) for line in open(path) if line.strip()]
    verdicts = {}
    settings = {}
    settings["time_s"] = {}
    for d in lines:
        if d["type"] == "start":
            settings = dict(d["settings"], time_s={})
        elif d["type"] == "case_verdict":
            verdicts[d["case"]] = d
        elif d["type"] == "verdict":
            settings["time_s"] = d.get("time_s", {})
    return settings, timed_pairs(lines), verdicts


def by_pairs(prs):
    q = [p["candidate_ns"] / p["baseline_ns"] for p in prs]
    lo, hi = interval(q)
    slower = sum(p["candidate_ns"] > p["baseline_ns"] for p in prs)
    faster = sum(p["candidate_ns"] < p["baseline_ns"] for p in prs)
    return median(q), lo, hi, sign_p(faster, faster + slower)


def by_blocks(cv):
    return cv["ratio_median"], cv["ratio_lo"], cv["ratio_hi"], cv["p"]


def main():
    folder = sys.argv[1]
    runs = defaultdict(list)  # config -> [(settings, pairs, verdicts)]
    for path in sorted(glob.glob(os.path.join(folder, "*.jsonl"))):
        name = os.path.basename(path).split(".")
        if len(name) != 3:
            continue
        runs[name[0]].append(read(path))
    for config in sorted(runs):
        rs = runs[config]
        per = rs[0][0].get("pairs_per_block")
        npairs = rs[0][0].get("pairs")
        methods = [("pairs alone", lambda prs, cv: by_pairs(prs))]
        if per and per < npairs:
            methods.insert(0, ("blocks", lambda prs, cv: by_blocks(cv)))
        print(f"{config}: {len(rs)} runs, {npairs} pairs, " +
              (f"in blocks of {per}" if per else "one load (schema 1)"))
        times = defaultdict(list)
        for settings, _, _ in rs:
            for k, v in settings["time_s"].items():
                times[k].append(v)
        if times:
            print("  time_s medians: " + ", ".join(
                f"{k} {median(times[k]):.3f}" for k in
                ("total", "sessions", "blocks", "timing", "warmup", "checks") if k in times))
        for label, judge in methods:
            est = defaultdict(list)  # case -> [(median, lo, hi, p)]
            for settings, pairs, verdicts in rs:
                for case, prs in pairs.items():
                    if case in verdicts:
                        est[case].append(judge(prs, verdicts[case]))
            halves = [(hi - lo) / 2 / m for v in est.values() for m, lo, hi, _ in v]
            if halves:
                print(f"  {label:12s} half-widths: mean {100 * sum(halves) / len(halves):.3f}%, "
                      f"median {100 * median(halves):.3f}% over {len(halves)} case runs")
            if config.startswith("aa"):
                n = max(1, sum(len(v) for v in est.values()))
                hold = sum(lo <= 1 <= hi for v in est.values() for _, lo, hi, _ in v)
                sig = sum(p < 0.05 for v in est.values() for *_, p in v)
                print(f"  {label:12s} A/A: {hold} of {n} intervals hold 1 "
                      f"({100 * hold / n:.0f}%), sign test p < 0.05 in {sig} of {n}")
                for case in sorted(est):
                    miss = [f"[{lo:.4f}, {hi:.4f}]" for _, lo, hi, _ in est[case]
                            if not lo <= 1 <= hi]
                    if miss:
                        print(f"    {case:28s} misses: {' '.join(miss)}")
            else:
                tot = ovl = 0
                rows = []
                for case in sorted(est):
                    v = est[case]
                    pairs_ = list(itertools.combinations(v, 2))
                    o = sum(max(a[1], b[1]) <= min(a[2], b[2]) for a, b in pairs_)
                    tot += len(pairs_)
                    ovl += o
                    meds = [m for m, *_ in v]
                    spread = max(meds) / min(meds) - 1
                    half = sum((hi - lo) / 2 / m for m, lo, hi, _ in v) / len(v)
                    rows.append(f"    {case:28s} overlap {o:2d}/{len(pairs_):2d}  medians "
                                f"{min(meds):.4f}..{max(meds):.4f} (spread {100 * spread:.2f}%)"
                                f"  mean half-width {100 * half:.2f}%")
                print(f"  {label:12s} repeats: {ovl} of {tot} pairs of intervals overlap "
                      f"({100 * ovl / max(tot, 1):.0f}%)")
                print("\n".join(rows))


if __name__ == "__main__":
    main()
