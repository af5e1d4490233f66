#!/usr/bin/python3
"""Writes synthetic stored runs (qual JSON lines) for the qual-judge tests.

Timings are drawn from a seeded generator: each pair's log ratio is
Normal(log(effect), sd), so the verdict each case must get follows from the
effect and the spread, not from the judge under test."""
import json
import math
import random
import sys

SHA = "0" * 64


def identity():
    return {"abi": "nvrtc", "version": "13.0", "path": "/x/libnvrtc.so.13",
            "real_path": "/x/libnvrtc.so.13", "sha256": SHA, "options": []}


def start(cases):
    return {"type": "start", "schema_version": 1, "tool": "qual-run", "version": "0.1.0",
            "time": "2026-11-29T00:00:00Z", "device": None, "timed": True, "arch": "sm_90",
            "baseline": identity(), "candidate": identity(),
            "settings": {"pairs": 30, "warmup": 5, "replays": 32, "alpha": 0.05,
                         "margin": 0.01, "conf": 0.95, "seed": 0, "cases": cases}}


def case_line(name, identical):
    arm = {"compiled": True}
    return {"type": "case", "case": name, "family": "gemm_f16", "kernel": "k",
            "baseline": arm, "candidate": arm, "identical_code": identical,
            "tolerance": 0, "timed": True, "replays": 32}


def pairs(rng, name, effect, sd, n=30, base=10000.0):
    out = []
    for i in range(n):
        b = base * math.exp(rng.gauss(0, 0.002))
        c = b * math.exp(rng.gauss(math.log(effect), sd))
        out.append({"type": "pair", "case": name, "pair": i,
                    "order": "baseline_first" if i % 2 == 0 else "candidate_first",
                    "baseline_ns": b, "candidate_ns": c})
    return out


def write(path, specs, errors=()):
    rng = random.Random(20261129)
    names = [s[0] for s in specs]
    lines = [start(names)]
    for name, effect, sd, identical in specs:
        lines.append(case_line(name, identical))
        lines += pairs(rng, name, effect, sd)
    for case, arm in errors:
        lines.append({"type": "error", "stage": "check", "arm": arm, "case": case,
                      "message": "wrong output after warm-up: element 3"})
    with open(path, "w") as f:
        for l in lines:
            f.write(json.dumps(l) + "\n")


out = sys.argv[1]
# 5% slower, 0.5% spread: every pair slower; interval far outside 1 +/- 1%.
# 0.05% slower, 0.1% spread: interval inside 1 +/- 1%: equivalent.
write(f"{out}/run_slower.jsonl", [("gemm_f16-1", 1.05, 0.005, False),
                                  ("gemm_f16-2", 1.0005, 0.001, False)])
write(f"{out}/run_faster.jsonl", [("gemm_f16-1", 0.95, 0.005, False),
                                  ("gemm_f16-2", 1.0, 0.001, False)])
# Identical code is reported as identical even when its timings differ.
write(f"{out}/run_identical.jsonl", [("gemm_f16-1", 1.05, 0.005, True)])
write(f"{out}/run_fail.jsonl", [("gemm_f16-1", 1.0, 0.001, False),
                                ("gemm_f16-2", 1.0, 0.001, False)],
      errors=[("gemm_f16-2", "candidate")])


def write_blocked(path, with_blocks):
    """One case in 15 blocks of 2 pairs (schema 2) whose blocks carry their
    own offset: +0.5% in 12 blocks, -0.5% in 3, pairs within 0.05% of it.
    Over the blocks that is 12 of 15 (sign test p 0.035), inconclusive at
    alpha 0.02 (the test's); pair by pair (the field dropped) 24 of 30
    (p 0.0014), slower. qual-judge must honour the field."""
    rng = random.Random(7)
    lines = [start(["gemm_f16-1"])]
    lines[0]["schema_version"] = 2
    lines[0]["settings"]["pairs_per_block"] = 2
    lines.append(case_line("gemm_f16-1", False))
    offsets = [0.005] * 12 + [-0.005] * 3
    rng.shuffle(offsets)
    for i in range(30):
        b = 10000.0 * math.exp(rng.gauss(0, 0.002))
        c = b * math.exp(offsets[i // 2] + rng.gauss(0, 0.0005))
        p = {"type": "pair", "case": "gemm_f16-1", "pair": i,
             "order": "baseline_first" if i % 2 == 0 else "candidate_first",
             "baseline_ns": b, "candidate_ns": c}
        if with_blocks:
            p["block"] = i // 2 + 1
        lines.append(p)
    with open(path, "w") as f:
        for l in lines:
            f.write(json.dumps(l) + "\n")


write_blocked(f"{out}/run_blocked.jsonl", True)
write_blocked(f"{out}/run_unblocked.jsonl", False)


def write_throttled(path, with_block_lines):
    """One case in 15 blocks of 2 pairs (schema 5): equal timings within
    0.05%, but 8 first attempts timed while the GPU throttled ran the
    candidate 20% slower. Their block lines say "throttled": true and each
    is followed by its retake (equal again). Honouring the block lines, the
    case is equivalent at 30 pairs; ignoring them (the lines dropped), 8 of
    the 15 blocks are 20% slower: the median ratio is 1.2 with an interval
    from 1.0 to 1.2, inconclusive (and layout-sensitive)."""
    rng = random.Random(11)
    lines = [start(["gemm_f16-1"])]
    lines[0]["schema_version"] = 5
    lines[0]["settings"]["pairs_per_block"] = 2
    lines.append(case_line("gemm_f16-1", False))
    throttled = set(rng.sample(range(1, 16), 8))

    def block_pairs(blk, retake, slow):
        for k in range(2):
            i = 2 * (blk - 1) + k
            b = 10000.0 * math.exp(rng.gauss(0, 0.002))
            c = b * math.exp((math.log(1.2) if slow else 0) + rng.gauss(0, 0.0005))
            p = {"type": "pair", "case": "gemm_f16-1", "pair": i, "block": blk,
                 "order": "baseline_first" if (k + blk - 1) % 2 == 0 else "candidate_first",
                 "baseline_ns": b, "candidate_ns": c}
            if retake:
                p["retake"] = retake
            lines.append(p)
        if with_block_lines:
            bl = {"type": "block", "case": "gemm_f16-1", "block": blk, "pairs": 2,
                  "buffer_set": 0, "shifts": [0, 0, 0], "load": "baseline_first",
                  "clocks": None, "throttled": slow}
            if retake:
                bl["retake"] = retake
            lines.append(bl)

    for blk in range(1, 16):
        block_pairs(blk, 0, blk in throttled)
        if blk in throttled and with_block_lines:
            block_pairs(blk, 1, False)
    with open(path, "w") as f:
        for l in lines:
            f.write(json.dumps(l) + "\n")


def write_sampled(path, undecided, only_undecided=False):
    """A run that sampled until decided (max_pairs 120 of 30: looks at 15,
    30 and 60 blocks): gemm_f16-1 4% slower, decided beyond the margin at
    the first look (15 blocks); gemm_f16-2 0.8% slower with a 1% spread per pair,
    never decided (its interval straddles 1.01), timed to the cap, 60
    blocks. Under the default gate (beyond, undecided pass) the first makes
    the regression. With only the undecided case, a stored undecided of
    pass makes the run neutral and one of regression a regression. qual-judge must read the looks and
    the gate back."""
    rng = random.Random(11)
    specs = (("gemm_f16-1", 1.04, 15), ("gemm_f16-2", 1.008, 60))
    if only_undecided:
        specs = specs[1:]
    lines = [start([s[0] for s in specs])]
    lines[0]["schema_version"] = 4
    lines[0]["settings"].update({"pairs_per_block": 2, "max_pairs": 120,
                                 "max_seconds": 20.0, "gate_slower": "beyond",
                                 "gate_faster": "beyond", "undecided": undecided})
    for name, effect, blocks in specs:
        lines.append(case_line(name, False))
        for i in range(2 * blocks):
            b = 10000.0
            c = b * effect * math.exp(rng.gauss(0, 0.01))
            lines.append({"type": "pair", "case": name, "pair": i, "block": i // 2 + 1,
                          "order": "baseline_first" if (i + i // 2) % 2 == 0
                          else "candidate_first", "baseline_ns": b, "candidate_ns": c})
    with open(path, "w") as f:
        for l in lines:
            f.write(json.dumps(l) + "\n")


write_throttled(f"{out}/run_throttled.jsonl", True)
write_throttled(f"{out}/run_throttled_unmarked.jsonl", False)
write_sampled(f"{out}/run_sampled.jsonl", "pass")
write_sampled(f"{out}/run_sampled_undecided.jsonl", "pass", True)
write_sampled(f"{out}/run_sampled_strict.jsonl", "regression", True)
