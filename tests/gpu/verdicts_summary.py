#!/usr/bin/env python3
"""Summary of tests/gpu/verdicts.sh's jobs: OUTDIR/jobs.txt and
OUTDIR/jobs/NAME.jsonl. Prints, per part, the figures that docs/verdicts.md
states targets for; exits 1 when an A/A job did not pass (exit status 0)."""
import collections
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from lines import parse  # noqa: E402


def load(path):
    with open(path) as f:
        return parse(f.read())


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    out = sys.argv[1]
    jobs = []
    for text in open(os.path.join(out, "jobs.txt")):
        part, name, rc, wall_ms = text.split()
        lines = load(os.path.join(out, "jobs", name + ".jsonl"))
        jobs.append({"part": part, "name": name, "rc": int(rc),
                     "wall": int(wall_ms) / 1000, "lines": lines})
    bad = False

    def cvs(j):
        return [l for l in j["lines"] if l.get("type") == "case_verdict"]

    def verdict(j):
        v = [l for l in j["lines"] if l.get("type") == "verdict"]
        return v[-1] if v else {}

    def session_count(j):
        return (verdict(j).get("time_s") or {}).get("session_count")

    # ---- A/A
    aa = [j for j in jobs if j["part"] == "aa"]
    if aa:
        n = called = covered = decided = pairs = 0
        stopped = collections.Counter()
        per_case = collections.Counter()
        rcs = collections.Counter(j["rc"] for j in aa)
        for j in aa:
            for c in cvs(j):
                tv = c.get("timing_verdict")
                if tv is None:
                    continue
                n += 1
                pairs += c.get("n", 0)
                if tv in ("slower", "faster"):
                    called += 1
                    per_case[c["case"]] += 1
                lo, hi = c.get("ratio_lo"), c.get("ratio_hi")
                if lo is not None and hi is not None and lo <= 1 <= hi:
                    covered += 1
                decided += bool(c.get("decided"))
                stopped[c.get("stopped")] += 1
        print(f"A/A: {len(aa)} jobs (nvrtc 13.0 against itself and against alt, "
              f"--sample-identical), exit statuses {dict(rcs)}")
        print(f"  case comparisons {n}; called slower or faster by the timing {called} "
              f"({100 * called / max(n, 1):.2f}%)" +
              (f": {dict(per_case)}" if per_case else ""))
        print(f"  intervals holding 1: {covered} of {n} ({100 * covered / max(n, 1):.1f}%); "
              f"decided {decided} of {n}; stopped {dict(stopped)}; "
              f"mean pairs per case {pairs / max(n, 1):.1f}")
        if any(j["rc"] != 0 for j in aa):
            bad = True
            print("  FAIL: an A/A job did not exit 0")

    # ---- planted slowdowns
    planted = [j for j in jobs if j["part"] in ("planted", "planted-long")]
    if planted:
        delays = sorted({j["name"].split(".")[0] for j in planted})
        groups = agree = 0
        exit_sets = []
        big = big_slower = 0
        near_walls = []
        for d in delays:
            long = [j for j in planted if j["name"] == d + ".long"]
            reps = [j for j in planted if j["part"] == "planted" and j["name"].startswith(d + ".")]
            truth = {}
            if long:
                for c in cvs(long[0]):
                    if c.get("ratio_median") is not None:
                        truth[c["case"]] = c["ratio_median"]
            verdicts = collections.defaultdict(list)
            for j in reps:
                for c in cvs(j):
                    verdicts[c["case"]].append(c["verdict"])
            print(f"planted {d} cycles: long run {'exit %d' % long[0]['rc'] if long else 'missing'}, "
                  f"{len(reps)} repeats, exit statuses {[j['rc'] for j in reps]}")
            for case in sorted(verdicts):
                t = truth.get(case)
                v = verdicts[case]
                same = len(set(v)) == 1
                # A group of one repeat (the budget ended the delay's
                # repeats) cannot disagree: not counted as a group.
                if len(v) > 1:
                    groups += 1
                    agree += same
                if t is not None and t >= 1.01:
                    big += len(v)
                    big_slower += sum(x == "slower" for x in v)
                print(f"  {case:30s} true {t if t is None else f'{t:.4f}'}  "
                      f"{' '.join(v)}{'' if same else '   (repeats differ)'}")
            if len(reps) > 1:
                exit_sets.append(len({j["rc"] for j in reps}) == 1)
            # Jobs with a case within 0.2% of the margin's edge (its true
            # effect from the long run): what takes longest to decide.
            near = sorted(c for c, t in truth.items()
                          if min(abs(t - 1.01), abs(t - 0.99)) <= 0.002)
            if near and reps:
                near_walls.extend(j["wall"] for j in reps)
                walls = " ".join("%.1f" % j["wall"] for j in reps)
                counts = " ".join(str(session_count(j)) for j in reps)
                print(f"  near the margin's edge: {', '.join(near)}; the repeats' wall "
                      f"{walls} s, sessions {counts}")
        print(f"  case groups (two repeats or more) whose repeats agree: {agree} of {groups}"
              f" ({100 * agree / max(groups, 1):.1f}%); exit statuses agree in "
              f"{sum(exit_sets)} of {len(exit_sets)} delays; cases with a true effect of 1% "
              f"or more called slower in {big_slower} of {big} case runs")
        if near_walls:
            print(f"  jobs with a case near the margin's edge: {len(near_walls)}, wall "
                  f"median {median(near_walls):.1f} s, longest {max(near_walls):.1f} s")

    # ---- single cases whose exit status is in doubt
    ex = [j for j in jobs if j["part"] == "exit"]
    if ex:
        truth = {}
        for j in planted:
            if j["part"] == "planted-long":
                d = j["name"].split(".")[0]
                for c in cvs(j):
                    if c.get("ratio_median") is not None:
                        truth[(d, c["case"])] = c["ratio_median"]
        groups = collections.OrderedDict()
        for j in ex:
            groups.setdefault(j["name"].rsplit(".", 1)[0], []).append(j)
        same = jobs_n = with_mode = 0
        for name, js in groups.items():
            d, case = name[len("exit-"):].split("-", 1)
            t = truth.get((d, case))
            rcs = [j["rc"] for j in js]
            vs = [(cvs(j) or [{}])[0].get("verdict") for j in js]
            secs = [j["wall"] for j in js]
            mode = collections.Counter(rcs).most_common(1)[0][1]
            jobs_n += len(rcs)
            with_mode += mode
            same += len(set(rcs)) == 1
            print(f"exit group {d} {case}: true {t if t is None else f'{t:.4f}'}, "
                  f"exit statuses {rcs}, verdicts {vs}, wall {median(secs):.1f} s median"
                  f"{'' if len(set(rcs)) == 1 else '   (exit statuses differ)'}")
        print(f"  single-case groups whose exit statuses agree: {same} of {len(groups)}; "
              f"jobs with their group's commonest exit status: {with_mode} of {jobs_n} "
              f"({100 * with_mode / max(jobs_n, 1):.1f}%)")

    # ---- a real pair
    pair = [j for j in jobs if j["part"] == "pair"]
    if pair:
        verdicts = collections.defaultdict(list)
        for j in pair:
            for c in cvs(j):
                verdicts[c["case"]].append(c["verdict"])
        starts = [l for l in pair[0]["lines"] if l.get("type") == "start"]
        ver = starts[0]["candidate"].get("version") if starts else "?"
        print(f"real pair (nvrtc 13.0 against {ver}): {len(pair)} jobs, exit statuses "
              f"{[j['rc'] for j in pair]}, verdicts {[verdict(j).get('verdict') for j in pair]}")
        for case in sorted(verdicts):
            v = verdicts[case]
            print(f"  {case:30s} {' '.join(v)}{'' if len(set(v)) == 1 else '   (repeats differ)'}")

    # ---- time, clocks, layout
    tot = collections.defaultdict(list)
    for j in jobs:
        ts = verdict(j).get("time_s") or {}
        for k, v in ts.items():
            if isinstance(v, (int, float)):
                tot[k].append(v)
        tot["wall"].append(j["wall"])
    if jobs:
        keys = ["wall", "total", "identify", "probe", "compile", "fixtures_prebuilt",
                "sessions", "close", "open", "fixtures", "load", "warmup", "blocks", "timing",
                "replays_device", "checks", "judge", "session_count"]
        print("time of a job (median over all jobs, s): " + ", ".join(
            f"{k} {median(tot[k]):.3f}" for k in keys if tot.get(k)))
    blocks = clocked = throttled = 0
    sm = []
    reasons = collections.Counter()
    sensitive = collections.Counter()
    for j in jobs:
        for l in j["lines"]:
            if l.get("type") == "block":
                blocks += 1
                ck = l.get("clocks")
                throttled += bool(l.get("throttled"))
                if ck and ck.get("end"):
                    clocked += 1
                    if ck["end"].get("sm_mhz") is not None:
                        sm.append(ck["end"]["sm_mhz"])
                    for r in ck["end"].get("reasons") or []:
                        reasons[r] += 1
            elif l.get("type") == "case_verdict" and (l.get("layout") or {}).get("sensitive"):
                sensitive[l["case"]] += 1
    print(f"block lines {blocks}: with NVML readings {clocked}, throttled {throttled}; "
          f"SM clock at block ends {min(sm) if sm else '-'} to {max(sm) if sm else '-'} MHz; "
          f"reasons seen {dict(reasons)}")
    print(f"layout-sensitive case runs: {dict(sensitive) if sensitive else 'none'} "
          f"(of {sum(len(cvs(j)) for j in jobs)} case runs)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
