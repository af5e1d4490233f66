#!/usr/bin/env python3
"""Prints each fixture case's time against the library call at its shape:
case, qual ns (the median baseline_ns of the run's pair lines: ns per launch),
library ns (bench/library.py's ns at the case's shape), their ratio, and
whether the fixture is within 1.3x of the library (ratio <= 1.3). A case with
no pairs (not timed, failed) or no library figure is listed with '-'.

usage: python3 bench/compare.py QUAL.jsonl LIBRARY.jsonl [--markdown]

Exit status 0 when every timed case with a library figure is within 1.3x,
1 otherwise, 2 for bad input (naming the file and line)."""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from library import shape_key  # noqa: E402

LIMIT = 1.3


def load(path):
    out = []
    with open(path) as f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"compare.py: {path}:{no}: not JSON: {e}")
    return out


def main(argv):
    markdown = "--markdown" in argv
    args = [a for a in argv if a != "--markdown"]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    qual, lib = load(args[0]), load(args[1])
    cases, pairs = [], {}
    for d in qual:
        if d.get("type") == "case":
            cases.append(d["case"])
        elif d.get("type") == "pair":
            if not isinstance(d.get("baseline_ns"), (int, float)):
                sys.exit(f"compare.py: {args[0]}: pair line of {d.get('case')} has no baseline_ns")
            pairs.setdefault(d["case"], []).append(d["baseline_ns"])
    library = {}
    for no, d in enumerate(lib, 1):
        if not isinstance(d.get("shape"), str) or not isinstance(d.get("ns"), (int, float)):
            sys.exit(f"compare.py: {args[1]}:{no}: needs 'shape' and 'ns'")
        library[d["shape"]] = d
    rows, ok = [], True
    for case in cases:
        ns = statistics.median(pairs[case]) if case in pairs else None
        ref = library.get(shape_key(case) or "")
        ratio = ns / ref["ns"] if ns is not None and ref else None
        within = "-" if ratio is None else ("yes" if ratio <= LIMIT else "no")
        if ratio is not None and ratio > LIMIT:
            ok = False
        rows.append((case, "-" if ns is None else "%.0f" % ns,
                     "-" if not ref else "%.0f" % ref["ns"],
                     "-" if ratio is None else "%.2f" % ratio, within,
                     ref["library"] if ref else "-"))
    head = ("case", "qual ns", "library ns", "ratio", "within 1.3x", "library call")
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("| --- | ---: | ---: | ---: | --- | --- |")
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        print("%-32s %9s %11s %6s %11s  %s" % head)
        for r in rows:
            print("%-32s %9s %11s %6s %11s  %s" % r)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
