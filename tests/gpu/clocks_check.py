#!/usr/bin/python3
"""Checks and summarises the block lines' clocks and the layout spread of
qual-run streams (tests/gpu/clocks.sh).

usage: clocks_check.py RUN.jsonl... [--no-clocks RUN.jsonl]

Each RUN must have a start line with clocks.source "nvml" or "rocm_smi" and
block lines whose clocks carry a start and an end reading with numbers for
the SM and memory clocks; the --no-clocks run must say why its clocks are
null, and its block lines must have none. Prints per run and case the SM
clock's range, power and temperature, the reasons seen, throttled /
retaken / excluded blocks, and the layout test; exits 1 on the first
failed check."""
import json
import sys


def lines(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check_run(path):
    ls = lines(path)
    start = ls[0]
    src = (start.get("clocks") or {}).get("source")
    if src not in ("nvml", "rocm_smi"):
        fail(f"{path}: start line's clocks: {start.get('clocks')}")
    blocks = [l for l in ls if l["type"] == "block"]
    if not blocks:
        fail(f"{path}: no block lines")
    per = {}
    for b in blocks:
        ck = b["clocks"]
        if not ck or ck["source"] != src:
            fail(f"{path}: block {b['case']}/{b['block']}: clocks {ck}")
        for end in ("start", "end"):
            r = ck[end]
            if r is None or not isinstance(r["sm_mhz"], (int, float)) or \
                    not isinstance(r["mem_mhz"], (int, float)):
                fail(f"{path}: block {b['case']}/{b['block']} {end}: {r}")
        per.setdefault(b["case"], []).append(b)
    verdicts = {l["case"]: l for l in ls if l["type"] == "case_verdict"}
    final = ls[-1]
    print(f"{path}: clocks from {src}; layout-sensitive: "
          f"{', '.join(final.get('layout_sensitive', [])) or 'none'}")
    print(f"  {'case':28} {'SM MHz':>11} {'mem MHz':>9} {'W':>11} {'C':>7} "
          f"{'thr/ret/exc':>11} {'between':>8} {'within':>8} {'p_holm':>8}  reasons")
    for case, bs in per.items():
        rs = [b["clocks"][e] for b in bs for e in ("start", "end")]
        sm = [r["sm_mhz"] for r in rs]
        mem = [r["mem_mhz"] for r in rs]
        pw = [r["power_w"] for r in rs if r["power_w"] is not None]
        tc = [r["temp_c"] for r in rs if r["temp_c"] is not None]
        reasons = sorted({n for r in rs for n in (r["reasons"] or [])})
        v = verdicts.get(case, {})
        th = v.get("throttling") or {}
        lay = v.get("layout") or {}

        def rng(x, f="%.0f"):
            return (f % min(x) + "-" + f % max(x)) if x else "-"

        def num(x, f="%8.5f"):
            return f % x if isinstance(x, (int, float)) else "       -"
        print(f"  {case:28} {rng(sm):>11} {rng(mem):>9} {rng(pw, '%.0f'):>11} "
              f"{rng(tc):>7} {th.get('throttled_blocks', 0):>3}/"
              f"{th.get('retaken_blocks', 0)}/{th.get('excluded_blocks', 0):<5} "
              f"{num(lay.get('between_sd'))} {num(lay.get('within_sd'))} "
              f"{num(lay.get('p_holm'), '%8.2g')}  {','.join(reasons) or '-'}")


def check_no_clocks(path):
    ls = lines(path)
    ck = ls[0].get("clocks") or {}
    if ck.get("source") is not None or not ck.get("unavailable_because"):
        fail(f"{path}: start line's clocks: {ck}")
    if any(l["type"] == "block" and l["clocks"] is not None for l in ls):
        fail(f"{path}: a block line has clocks")
    print(f"{path}: no clocks, as the start line says: {ck['unavailable_because']}")


def main(argv):
    runs, none = [], None
    i = 1
    while i < len(argv):
        if argv[i] == "--no-clocks":
            none = argv[i + 1]
            i += 2
        else:
            runs.append(argv[i])
            i += 1
    if not runs:
        print(__doc__, file=sys.stderr)
        return 2
    for r in runs:
        check_run(r)
    if none:
        check_no_clocks(none)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
