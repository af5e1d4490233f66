#!/usr/bin/env python3
"""Summary of tests/gpu/rounds.sh: per case, each job's ratio and interval,
its first look's blocks against its later rounds' blocks, the clocks over
its blocks, and whether the alone and among fixed runs' ratios lie within
each other's intervals. Exit 1 when they do not for a case named."""
import collections
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from lines import parse  # noqa: E402


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def job_figures(lines):
    start = next((l for l in lines if l.get("type") == "start"), {})
    settings = start.get("settings", {})
    pairs = settings.get("pairs", 60)
    per = settings.get("pairs_per_block", 4)
    first_blocks = -(-pairs // per)
    ratios = collections.defaultdict(lambda: collections.defaultdict(list))
    clocks = collections.defaultdict(lambda: collections.defaultdict(list))
    for l in lines:
        t = l.get("type")
        if t == "pair" and l.get("baseline_ns") and l.get("candidate_ns"):
            ratios[l["case"]][l.get("block", 0)].append(l["candidate_ns"] / l["baseline_ns"])
        elif t == "block" and isinstance(l.get("clocks"), dict):
            for end in ("start", "end"):
                r = l["clocks"].get(end) or {}
                for k in ("sm_mhz", "mem_mhz", "power_w", "temp_c"):
                    if isinstance(r.get(k), (int, float)):
                        clocks[l["case"]][k].append(r[k])
    out = {}
    for l in lines:
        if l.get("type") != "case_verdict" or l.get("ratio_median") is None:
            continue
        c = l["case"]
        bm = {b: med(v) for b, v in ratios[c].items()}
        first = [v for b, v in bm.items() if b <= first_blocks]
        later = [v for b, v in bm.items() if b > first_blocks]
        out[c] = {"verdict": l.get("verdict"), "ratio": l["ratio_median"],
                  "lo": l.get("ratio_lo"), "hi": l.get("ratio_hi"), "blocks": l.get("blocks"),
                  "stopped": l.get("stopped"), "rounds_p": (l.get("rounds") or {}).get("p"),
                  "rounds_agree": (l.get("rounds") or {}).get("agree"),
                  "first": med(first), "nfirst": len(first), "later": med(later),
                  "nlater": len(later),
                  "clocks": {k: med(v) for k, v in clocks[c].items()}}
    return out


def main():
    out, cases = sys.argv[1], sys.argv[2:]
    jobs = {}
    for text in open(os.path.join(out, "jobs.txt")):
        name, rc, wall = text.split()
        with open(os.path.join(out, "jobs", name + ".jsonl")) as f:
            jobs[name] = {"rc": int(rc), "wall": int(wall) / 1000,
                          "cases": job_figures(parse(f.read()))}
    for name, j in jobs.items():
        print(f"job {name}: exit {j['rc']}, wall {j['wall']:.1f} s")
    bad = False
    for c in cases:
        print(f"\n{c}")
        for name, j in jobs.items():
            f = j["cases"].get(c)
            if not f:
                continue
            ck = f["clocks"]
            print(f"  {name:<44} {f['verdict'] or '-':<12} {f['ratio']:.5f} "
                  f"[{f['lo'] or 0:.5f}, {f['hi'] or 0:.5f}] blocks {f['blocks']} "
                  f"first {f['first']:.5f} ({f['nfirst']}) later {f['later']:.5f} "
                  f"({f['nlater']}) rounds p {f['rounds_p']} agree {f['rounds_agree']} sm {ck.get('sm_mhz', 0):.0f} "
                  f"power {ck.get('power_w', 0):.0f} W temp {ck.get('temp_c', 0):.0f} C")
        a = jobs.get("among.fixed", {}).get("cases", {}).get(c)
        b = jobs.get("alone." + c, {}).get("cases", {}).get(c)
        if a and b and None not in (a["lo"], a["hi"], b["lo"], b["hi"]):
            ok = a["lo"] <= b["ratio"] <= a["hi"] and b["lo"] <= a["ratio"] <= b["hi"]
            print(f"  alone {b['ratio']:.5f} vs among {a['ratio']:.5f}: "
                  f"{'within each other' if ok else 'NOT within each other'}'s intervals")
            bad |= not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
