#!/usr/bin/python3
"""Every built-in case is its own program: a compile-only qualification of two
compiler libraries, checked case by case.

usage: specialization_test.py QUAL_RUN FIXTURE_SOURCE VALIDATE SCHEMA OUT
                              cuda|hip LIB LIB [qual-run options...]

Runs `QUAL_RUN --compile-only LIB LIB [options]` with stdout to OUT (the
libraries nvrtc builds for cuda, hiprtc for hip), validates every
line against SCHEMA with VALIDATE (tests/tools/validate_lines.py), then
asserts, for the nine built-in cases:
  - one case line each, both arms compiled;
  - per arm, nine distinct artifact_sha256 (attention_f16-128 and -512, the
    two GEMM shapes of each type and the three convolutions differ only in
    their constants);
  - a "specialization" object of strings whose constants carry the family's
    prefix and agree with the shape in the case's name;
  - the same constants, in the same order, are the constant block of the
    source the case compiles (FIXTURE_SOURCE CASE PLATFORM FILE: the source
    as fixture_source() assembles it);
  - a "target": the start line's arch, with "a" for the wgmma cases (sm_90a).
Exits 0 when all hold, 1 with the reason otherwise."""
import json
import os
import re
import subprocess
import sys
import tempfile

CASES = [
    "attention_f16-128", "attention_f16-512",
    "gemm_f16-256x512x256", "gemm_f16-256x1024x1024",
    "gemm_i8-256x512x256", "gemm_i8-256x1024x1024",
    "conv3x3_f16-56x56x64x64", "conv3x3_f16-14x14x256x256",
    "conv3x3_f16-7x7x512x512",
]
# Hopper's own (sm_90a): compiled on cuda targets, not applicable on hip.
WGMMA_CASES = [
    "gemm_f16_wgmma-256x1024x1024", "gemm_f16_wgmma-256x512x256",
    "gemm_i8_wgmma-256x1024x1024", "attention_f16_wgmma-512",
]


def fail(why):
    sys.exit("FAIL: " + why)


def shape_constants(case):
    """The constants a case's name fixes: family prefix and name -> value."""
    family, dims = case.split("-")
    d = [int(x) for x in dims.split("x")]
    if family == "attention_f16_wgmma":
        return "GA_", {"GA_TOKENS": d[0]}
    if family in ("gemm_f16_wgmma", "gemm_i8_wgmma"):
        return "GW_", {"GW_M": d[0], "GW_N": d[1], "GW_K": d[2]}
    if family == "attention_f16":
        return "AT_", {"AT_TOKENS": d[0], "AT_KV_TILES": d[0] // 64}
    if family in ("gemm_f16", "gemm_i8"):
        p = "GF_" if family == "gemm_f16" else "GI_"
        return p, {p + "M": d[0], p + "N": d[1], p + "K": d[2]}
    return "CV_", {"CV_H": d[0], "CV_W": d[1], "CV_CIN": d[2], "CV_COUT": d[3],
                   "CV_K": 9 * d[2]}


def constant_block(fixture_source, case, platform):
    """The (name, value) pairs of the constant block of case's source."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "case.cu")
        subprocess.run([fixture_source, case, platform, path], check=True)
        with open(path) as f:
            text = f.read()
    marker = "/* qual: case %s, specialized */\n" % case
    at = text.find(marker)
    if at < 0:
        fail("%s: no constant block in its source" % case)
    pairs = []
    for line in text[at + len(marker):].splitlines():
        m = re.fullmatch(r"#define (\w+) (.+)", line)
        if not m:
            break
        pairs.append((m.group(1), m.group(2)))
    return pairs


def main(argv):
    if len(argv) < 9 or argv[6] not in ("cuda", "hip"):
        sys.stderr.write(__doc__)
        return 2
    qual_run, fixture_source, validate, schema, out, platform, lib_a, lib_b = argv[1:9]
    with open(out, "w") as f:
        rc = subprocess.run([qual_run, "--compile-only", lib_a, lib_b] + argv[9:],
                            stdout=f).returncode
    if rc != 0:
        fail("qual-run exited %d" % rc)
    subprocess.run([sys.executable, validate, schema, out, "--expect-verdict", "not_timed"],
                   check=True)
    with open(out) as f:
        lines = [json.loads(l) for l in f]
    start = lines[0]
    every = {l["case"]: l for l in lines if l["type"] == "case"}
    if sorted(every) != sorted(CASES + WGMMA_CASES) or len(every) != sum(
            l["type"] == "case" for l in lines):
        fail("expected one case line for each of %s, got %s" % (CASES + WGMMA_CASES,
                                                                sorted(every)))
    names = CASES + WGMMA_CASES if platform == "cuda" else CASES
    for name in WGMMA_CASES:
        if platform == "hip" and every[name].get("applicable") is not False:
            fail("%s: applicable on a hip target" % name)
    cases = {name: every[name] for name in names}
    for arm in ("baseline", "candidate"):
        shas = {}
        for name, l in cases.items():
            if not l[arm]["compiled"]:
                fail("%s: the %s arm did not compile" % (name, arm))
            shas.setdefault(l[arm]["artifact_sha256"], []).append(name)
        shared = [names for names in shas.values() if len(names) > 1]
        if shared:
            fail("%s arm: cases share an artifact: %s" % (arm, shared))
    for name in names:
        l = cases[name]
        spec = l.get("specialization")
        if not isinstance(spec, dict) or not spec:
            fail("%s: no specialization in its case line" % name)
        prefix, want = shape_constants(name)
        for k, v in spec.items():
            if not k.startswith(prefix) or not isinstance(v, str) or not v:
                fail("%s: constant %s = %r" % (name, k, v))
        for k, v in want.items():
            if spec.get(k) != str(v):
                fail("%s: %s is %r, the shape says %d" % (name, k, spec.get(k), v))
        block = constant_block(fixture_source, name, platform)
        if block != list(spec.items()):
            fail("%s: the case line lists %s, the source defines %s" %
                 (name, list(spec.items()), block))
        want_target = start["arch"] + ("a" if name in WGMMA_CASES else "")
        if l.get("target") != want_target:
            fail("%s: target %r, the run's arch is %r" % (name, l.get("target"),
                                                          start["arch"]))
    print("ok: %d cases, %d distinct artifacts per arm, each with its constants"
          % (len(cases), len(cases)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
