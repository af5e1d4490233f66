#!/usr/bin/python3
"""bench/lines.py's timed_pairs: the pairs of a throttled block attempt are
left out, as the judge leaves them out; its retake, other sessions' blocks
of the same number and other cases are kept. Exits 0 when all hold."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from lines import timed_pairs  # noqa: E402


def pair(case, p, block, session=None, retake=None):
    d = {"type": "pair", "case": case, "pair": p, "block": block,
         "baseline_ns": 1.0, "candidate_ns": 1.0}
    if session:
        d["session"] = session
    if retake:
        d["retake"] = retake
    return d


def block(case, b, throttled, session=None, retake=None):
    d = {"type": "block", "case": case, "block": b, "throttled": throttled}
    if session:
        d["session"] = session
    if retake:
        d["retake"] = retake
    return d


lines = [
    pair("a", 0, 1, 1), pair("a", 1, 1, 1), block("a", 1, False, 1),
    pair("a", 2, 2, 1), pair("a", 3, 2, 1), block("a", 2, True, 1),
    pair("a", 2, 2, 1, 1), pair("a", 3, 2, 1, 1), block("a", 2, False, 1, 1),
    pair("a", 2, 2, 2), block("a", 2, False, 2),
    pair("b", 2, 2, 1), block("b", 2, False, 1),
]
got = timed_pairs(lines)
want_a = [(0, 1, 1, 0), (1, 1, 1, 0), (2, 2, 1, 1), (3, 2, 1, 1), (2, 2, 2, 0)]
seen_a = [(d["pair"], d["block"], d.get("session", 0), d.get("retake", 0)) for d in got["a"]]
ok = seen_a == want_a and len(got["b"]) == 1
print("timed_pairs:", "PASS" if ok else f"FAIL: a {seen_a}, b {len(got.get('b', []))}")
sys.exit(0 if ok else 1)
