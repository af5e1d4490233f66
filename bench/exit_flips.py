#!/usr/bin/env python3
"""How often two runs of the same pair can give different exit statuses.

Reads the saved evidence of tests/gpu/verdicts.sh (OUTDIR, or its
verdicts.tar.gz as docs/gpu-runs/ keeps it as callN-planted.tar.gz) and
prints, for each cap (max_pairs in the start line):

- sigma: the spread (sample sd, pooled) of a case's median ratio between
  repeats of the same single-case job, over those of its repeats that
  sampled to the cap, the
  noise of the figure the gate compares with 1 + margin when nothing
  decided the case earlier;
- the exit groups (tests/gpu/verdicts.sh EXIT_GROUPS) at that cap: how many
  agree, and how many flips the model below predicts from the groups' true
  effects (the delay's long run);
- the agreement the model gives for true effects spread evenly over a
  range of slowdowns (default 0.25% to 3%, the issue's planted range).

The model: a run's gate (the default, beyond) says regression when its
interval's lower end lies above the margin's edge, that is when its
estimate (a median ratio at the cap, near Normal(t, sigma^2)) lies above
the edge plus the interval's lower half-width h (the median over the runs
at the cap), so a case of true ratio t is a regression with
p = Phi((t - (1 + margin + h)) / sigma), and three repeats all agree with 1 - 3 p (1 - p). Averaged over t
spread evenly over a range R much wider than sigma, the chance that they do
not is 3 sigma / (R sqrt(pi)) (the integral of 3 Phi(z) (1 - Phi(z)) over
z is 3 / sqrt(pi)), whatever the gate's rule (the interval's edge moves
with the estimate, so it has the same sigma). This is a limit of the
instrument's noise, not of a rule: only a smaller sigma (more pairs at the
cap) narrows it, as 1 / sqrt(pairs).

usage: bench/exit_flips.py [--margin M] [--range LO HI] EVIDENCE...
"""
import argparse
import collections
import math
import statistics

from lines import read_evidence


N = statistics.NormalDist()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--margin", type=float, default=0.01)
    ap.add_argument("--range", type=float, nargs=2, default=(0.0025, 0.03))
    ap.add_argument("evidence", nargs="+")
    a = ap.parse_args()
    edge = 1 + a.margin
    width = a.range[1] - a.range[0]

    at_cap = collections.defaultdict(list)    # (cap, src, group, case) -> medians
    groups = collections.defaultdict(list)    # (cap, src, group) -> [(rc, case)]
    truth = {}                                # (src, delay, case) -> ratio
    from_interval = collections.defaultdict(list)  # cap -> sigma of one run
    below = collections.defaultdict(list)  # cap -> estimate minus ratio_lo
    for src in a.evidence:
        rows, jobs = read_evidence(src, "exit_flips")
        for part, name, rc, _ in rows:
            ls = jobs.get(name, [])
            start = next((l for l in ls if l.get("type") == "start"), {})
            cap = start.get("settings", {}).get("max_pairs")
            cvs = [l for l in ls if l.get("type") == "case_verdict"]
            if part == "planted-long":
                for c in cvs:
                    if c.get("ratio_median") is not None:
                        truth[(src, name.split(".")[0], c["case"])] = c["ratio_median"]
            if part != "exit" or len(cvs) != 1 or cap is None:
                continue
            c = cvs[0]
            group = name.rsplit(".", 1)[0]
            groups[(cap, src, group)].append((int(rc), c["case"]))
            if c.get("stopped") == "max_pairs" and c.get("ratio_median") is not None:
                at_cap[(cap, src, group, c["case"])].append(c["ratio_median"])
                looks = c.get("looks") or 1
                w = 1.0 if looks == 1 else 0.5 / (looks - 1)
                z = N.inv_cdf(1 - (1 - c.get("conf", 0.95)) * w / 2)
                if c.get("ratio_lo") and c.get("ratio_hi"):
                    from_interval[cap].append((c["ratio_hi"] - c["ratio_lo"]) / (2 * z))
                    below[cap].append(c["ratio_median"] - c["ratio_lo"])

    caps = sorted({k[0] for k in groups})
    if not caps:
        raise SystemExit("exit_flips: no exit groups (tests/gpu/verdicts.sh EXIT_GROUPS) in the evidence")
    print(f"margin {a.margin}; spread of true effects for the model: "
          f"{100 * a.range[0]:.2f}% to {100 * a.range[1]:.2f}%")
    for cap in caps:
        ss = dof = 0.0
        per_case = collections.defaultdict(list)
        for (c_, _, _, case), xs in at_cap.items():
            if c_ == cap and len(xs) > 1:
                m = statistics.mean(xs)
                ss += sum((x - m) ** 2 for x in xs)
                dof += len(xs) - 1
                per_case[case].append(statistics.stdev(xs))
        fi = from_interval.get(cap, [])
        sigma_iv = statistics.median(fi) if fi else float("nan")
        # The repeats' spread where there are enough of them; else what
        # the intervals at the cap imply.
        sigma = math.sqrt(ss / dof) if dof >= 10 else sigma_iv
        gs = {k: v for k, v in groups.items() if k[0] == cap and len(v) > 1}
        agree = sum(len({rc for rc, _ in v}) == 1 for v in gs.values())
        # The default gate (beyond) needs ratio_lo above the edge: the
        # estimate must clear it by the interval's lower half-width.
        gate_edge = edge + (statistics.median(below[cap]) if below.get(cap) else 0.0)
        predicted = 0.0
        known = 0
        for (_, src, group), v in gs.items():
            delay = group[len("exit-"):].split("-", 1)[0]
            t = truth.get((src, delay, v[0][1]))
            if t is None or not sigma == sigma:
                continue
            known += 1
            p = N.cdf((t - gate_edge) / sigma)
            n = len(v)
            predicted += 1 - p ** n - (1 - p) ** n
        flip = 3 * sigma / (width * math.sqrt(math.pi))
        need = sigma * min(1.0, 0.01 / flip) if flip > 0 else sigma
        print(f"cap {cap} pairs: sigma of the median ratio at the cap {100 * sigma:.3f}%: "
              + (f"between repeats {100 * math.sqrt(ss / dof):.3f}% " if dof else
                 "between repeats none ")
              + f"({int(dof)} degrees of freedom, {sum(1 for k in at_cap if k[0] == cap)} groups "
              f"that sampled to it), from the intervals at the cap {100 * sigma_iv:.3f}% "
              f"(median of {len(fi)} runs: the reported interval, every look's "
              f"intersection, over 2 z of the last look's level)")
        for case in sorted(per_case):
            print(f"  {case:30s} sd between repeats at the cap: "
                  + ", ".join(f"{100 * s:.3f}%" for s in per_case[case]))
        print(f"  exit groups of 2 or more jobs: {agree} of {len(gs)} agree; the model predicts "
              f"{predicted:.2f} flips in the {known} with a measured true effect "
              f"(threshold of the estimate {gate_edge:.4f}: the edge plus the median lower "
              f"half-width at the cap)")
        print(f"  model, true effects spread evenly, three repeats: agree in "
              f"{100 * (1 - flip):.1f}% of groups; 99% needs sigma <= {100 * need:.3f}%, "
              f"about {(sigma / need) ** 2:.1f}x the pairs at the cap ({cap * (sigma / need) ** 2:.0f})")


if __name__ == "__main__":
    main()
