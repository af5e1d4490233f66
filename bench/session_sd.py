#!/usr/bin/env python3
"""How much a session shifts the ratio of the blocks it times.

Reads the saved evidence of tests/gpu/verdicts.sh (OUTDIR, or its tarball
as docs/gpu-runs/ keeps it) and, for every timed case of every job, takes
each block's median log ratio (candidate over baseline, its pairs as the
verdict counts them: bench/lines.py timed_pairs) and splits their spread
into a part between the job's sessions and a part within them (one-way
analysis of variance, sessions of two blocks or more, three such sessions
or more). Runs differ in their blocks' spread (one case's blocks are ten
times as noisy as another's), so each run is judged on its own scale and
the runs are pooled standardised: F = sum of dfB_i F_i over sum of dfB_i,
F_i = MSB_i / MSW_i of run i (each run's sessions against its own blocks;
summing raw sums of squares instead would let the noisy runs with fewer
blocks a session make a session effect of nothing), and the session's
share rho = sum of dfB_i (F_i - 1) / n0_i over sum of dfB_i, the variance of
a session's shift over a block's (0 when negative). Pooled over the case
runs whose ratio lies in each bin (half a percent wide), it prints the case
runs, sessions and blocks, the blocks' sd within a session (root mean
square over the runs), F with its degrees of freedom, sqrt(rho) and the
session's sd, sqrt(rho) times that within sd; and the same over the runs
whose ratio lies within --near of either edge of the margin, 1 - margin or
1 + margin: the cases that sample on (docs/verdicts.md, "Sampling until
decided"), whose later rounds time more blocks to a session. An F near 1
is a session that adds nothing to the blocks' own spread.

usage: bench/session_sd.py [--margin M] [--near D] EVIDENCE...
"""
import argparse
import collections
import math
import statistics

from lines import read_evidence, timed_pairs


def anova(sessions):
    """(SSB, dfB, SSW, dfW, n0) of lists of block values, or None."""
    groups = [v for v in sessions if len(v) >= 2]
    if len(groups) < 3:
        return None
    n = sum(len(v) for v in groups)
    grand = sum(sum(v) for v in groups) / n
    ssb = sum(len(v) * (statistics.fmean(v) - grand) ** 2 for v in groups)
    ssw = sum((x - statistics.fmean(v)) ** 2 for v in groups for x in v)
    n0 = (n - sum(len(v) ** 2 for v in groups) / n) / (len(groups) - 1)
    return ssb, len(groups) - 1, ssw, n - len(groups), n0, grand, n


def case_runs(lines):
    """{case: (ANOVA tuple)} of one job's lines."""
    out = {}
    for case, pairs in timed_pairs(lines).items():
        blocks = collections.defaultdict(list)
        for d in pairs:
            b, c = d.get("baseline_ns"), d.get("candidate_ns")
            if b and c and b > 0 and c > 0:
                key = (d.get("session", 0), d.get("block", 0), d.get("retake", 0))
                blocks[key].append(math.log(c / b))
        sessions = collections.defaultdict(list)
        for (s, _, _), v in blocks.items():
            sessions[s].append(statistics.median(v))
        a = anova(list(sessions.values()))
        if a:
            out[case] = a
    return out


def pooled(runs):
    """The runs pooled standardised (module docstring); runs whose blocks
    have no spread within a session (MSW 0) say nothing and are left out."""
    runs = [r for r in runs if r[3] > 0 and r[2] > 0]
    dfb = sum(r[1] for r in runs)
    dfw = sum(r[3] for r in runs)
    if dfb == 0:
        return None
    fs = [(r[0] / r[1]) / (r[2] / r[3]) for r in runs]
    f = sum(r[1] * fi for r, fi in zip(runs, fs)) / dfb
    rho = max(0.0, sum(r[1] * (fi - 1) / r[4] for r, fi in zip(runs, fs)) / dfb)
    within = math.sqrt(sum(r[2] for r in runs) / dfw)
    return {"runs": len(runs), "sessions": dfb + len(runs), "blocks": sum(r[6] for r in runs),
            "within": within, "f": f, "dfb": dfb, "dfw": dfw, "ratio": math.sqrt(rho),
            "session": math.sqrt(rho) * within}


def show(label, p):
    if p:
        print(f"{label:>16} {p['runs']:6d} {p['sessions']:8d} {p['blocks']:7d} "
              f"{100 * p['within']:9.3f}% {p['f']:7.3f} ({p['dfb']}, {p['dfw']}) "
              f"{p['ratio']:7.3f} {100 * p['session']:9.4f}%")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--margin", type=float, default=0.01)
    ap.add_argument("--near", type=float, default=0.005,
                    help="the band around 1 + margin pooled on its own (default 0.005)")
    ap.add_argument("evidence", nargs="+")
    a = ap.parse_args()
    runs = []
    for src in a.evidence:
        _, jobs = read_evidence(src, "session_sd")
        for lines in jobs.values():
            runs.extend(case_runs(lines).values())
    if not runs:
        raise SystemExit("session_sd: no case run with three sessions of two blocks or more "
                         "in the evidence")
    bins = collections.defaultdict(list)
    for r in runs:
        bins[math.floor(200 * (math.exp(r[5]) - 1) + 0.5) / 2].append(r)
    print("   ratio bin (%)  case runs sessions blocks  within sd  F (d.f.)  "
          "session/block  session sd")
    for b in sorted(bins):
        show(f"{b:+.1f}", pooled(bins[b]))
    near = [r for r in runs if abs(abs(math.exp(r[5]) - 1) - a.margin) <= a.near]
    if near:
        show(f"near +-{100 * (a.margin - a.near):.1f}-{100 * (a.margin + a.near):.1f}%",
             pooled(near))
    show("all", pooled(runs))


if __name__ == "__main__":
    main()
