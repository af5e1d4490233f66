#!/usr/bin/python3
"""The host side of the fixture suite and the library comparison, without a
GPU: tests/gpu/fixtures_check.py (run and sass), tests/gpu/unpack-nvrtc.sh,
bench/compare.py and bench/library.py's case-to-shape mapping. Runs on the
lines of a real H200 run (docs/gpu-runs/2026-12-01/fixtures/) and on made-up
lines and SASS that each break one expectation.

usage: gpu_fixtures_tools_test.py"""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tests", "gpu", "fixtures_check.py")
UNPACK = os.path.join(ROOT, "tests", "gpu", "unpack-nvrtc.sh")
COMPARE = os.path.join(ROOT, "bench", "compare.py")
RUNS = os.path.join(ROOT, "docs", "gpu-runs", "2026-12-01", "fixtures")
sys.path.insert(0, os.path.join(ROOT, "bench"))
from library import read_cases, shape_key  # noqa: E402

failures = []


def expect(what, cond, detail=""):
    if not cond:
        failures.append(what + (": " + detail if detail else ""))


def run(*argv):
    p = subprocess.run(list(argv), capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def arm(err):
    return {"compiled": True, "artifact_sha256": "0" * 64, "registers": 80, "max_abs_error": err}


def write_lines(path, lines):
    with open(path, "w") as f:
        for d in lines:
            f.write(json.dumps(d) + "\n")


def good_run(case="gemm_f16-256x512x256", verdict="identical", job="neutral",
             base_err=0.0, cand_err=0.0, identical=True, ns=(3000.0, 3010.0)):
    lines = [{"type": "start"},
             {"type": "case", "case": case, "baseline": arm(base_err),
              "candidate": arm(cand_err), "identical_code": identical}]
    for i, n in enumerate(ns):
        lines.append({"type": "pair", "case": case, "pair": i, "baseline_ns": n,
                      "candidate_ns": n})
    lines.append({"type": "case_verdict", "case": case, "verdict": verdict})
    lines.append({"type": "verdict", "verdict": job})
    return lines


def main():
    tmp = tempfile.mkdtemp(prefix="gpu_fixtures_tools.")
    # The real H200 runs: the A/A run passes with --identical; the run
    # against another nvrtc passes, but not as identical.
    aa, other = os.path.join(RUNS, "aa.jsonl"), os.path.join(RUNS, "nvrtc-13.5.37.jsonl")
    rc, out = run(CHECK, "run", aa, "--identical")
    expect("the H200 A/A run passes --identical", rc == 0, out)
    rc, out = run(CHECK, "run", other)
    expect("the H200 run against nvrtc 13.5 passes", rc == 0, out)
    rc, out = run(CHECK, "run", other, "--identical")
    expect("nvrtc 13.5's code is not identical", rc == 1 and "code differs" in out, out)

    # Made-up runs that each break one expectation.
    p = os.path.join(tmp, "run.jsonl")
    write_lines(p, good_run())
    rc, out = run(CHECK, "run", p, "--identical")
    expect("a good made-up run passes", rc == 0, out)
    bad = {
        "an arm without an oracle check": good_run(cand_err=None),
        "a failed case": good_run(verdict="fail"),
        "a case not applicable": good_run(verdict="not_applicable"),
        "a run not timed": good_run(verdict="not_timed", job="not_timed"),
        "a run without a verdict line": good_run()[:-1],
    }
    for what, lines in bad.items():
        write_lines(p, lines)
        rc, out = run(CHECK, "run", p)
        expect(what + " fails the run check", rc == 1 and "FAIL" in out, out)
    lines = good_run()
    lines.insert(2, {"type": "error", "case": "gemm_f16-256x512x256", "message": "wrong output"})
    write_lines(p, lines)
    rc, out = run(CHECK, "run", p)
    expect("an error line naming the case fails it", rc == 1 and "wrong output" in out, out)
    write_lines(p, good_run(identical=False))
    rc, out = run(CHECK, "run", p, "--identical")
    expect("different code fails --identical", rc == 1, out)
    write_lines(p, good_run(job="regression"))
    rc, out = run(CHECK, "run", p, "--identical")
    expect("an A/A run that is not neutral fails --identical", rc == 1, out)
    rc, _ = run(CHECK, "run", p)
    expect("any verdict is fine without --identical", rc == 0)

    # SASS: a wgmma case must show HGMMA or IGMMA; the others need nothing.
    sass = os.path.join(tmp, "sass")
    os.makedirs(sass)
    rc, out = run(CHECK, "sass", sass)
    expect("no SASS at all fails", rc == 1, out)

    def dump(name, text):
        with open(os.path.join(sass, name + ".sass"), "w") as f:
            f.write(text)

    dump("gemm_f16-256x512x256", "  /*0100*/  HMMA.16816.F32 R4, R8, R12, R4 ;\n")
    dump("gemm_i8-256x512x256", "  /*0100*/  IMMA.16832.S8.S8 R4, R8, R12, R4 ;\n")
    rc, out = run(CHECK, "sass", sass)
    expect("mma.sync cases pass", rc == 0 and "HMMA 1" in out and "IMMA 1" in out, out)
    dump("gemm_f16_wgmma-256x512x256", "  /*0100*/  HMMA.16816.F32 R4, R8, R12, R4 ;\n")
    rc, out = run(CHECK, "sass", sass)
    expect("a wgmma case without HGMMA fails", rc == 1 and "FAIL" in out, out)
    dump("gemm_f16_wgmma-256x512x256",
         "  /*0100*/  HGMMA.64x64x16.F32 R24, gdesc[UR4], R24 ;\n")
    dump("gemm_i8_wgmma-256x512x256",
         "  /*0100*/  IGMMA.64x64x32.S8.S8 R24, gdesc[UR4], R24 ;\n")
    rc, out = run(CHECK, "sass", sass)
    expect("wgmma cases with HGMMA and IGMMA pass", rc == 0, out)

    # unpack-nvrtc.sh: one line per pack, naming the library.
    packs, dest = os.path.join(tmp, "packs"), os.path.join(tmp, "nvrtc")
    os.makedirs(os.path.join(packs, "src", "nvrtc-12.4.127"))
    for f in ("libnvrtc.so.12", "libnvrtc-builtins.so.12.4"):
        open(os.path.join(packs, "src", "nvrtc-12.4.127", f), "w").close()
    with tarfile.open(os.path.join(packs, "nvrtc-12.4.127.tar.xz"), "w:xz") as t:
        t.add(os.path.join(packs, "src", "nvrtc-12.4.127"), arcname="nvrtc-12.4.127")
    rc, out = run("bash", UNPACK, packs, dest)
    want = "12.4.127 %s/nvrtc-12.4.127/libnvrtc.so.12" % dest
    expect("unpack-nvrtc prints the version and the library", rc == 0 and out.strip() == want,
           out)
    expect("the builtins come along",
           os.path.exists(os.path.join(dest, "nvrtc-12.4.127", "libnvrtc-builtins.so.12.4")))

    # library.py's names: a variant is timed at the family's shape.
    expect("wgmma case maps to its shape",
           shape_key("gemm_f16_wgmma-256x512x256") == "gemm_f16-256x512x256")
    expect("built-in case maps to itself",
           shape_key("conv3x3_f16-7x7x512x512") == "conv3x3_f16-7x7x512x512")
    expect("unknown family has no shape", shape_key("rmsnorm_f16-4096") is None)
    expect("read_cases takes qual-run lines", read_cases(aa)[:2] ==
           ["attention_f16-128", "attention_f16-512"], str(read_cases(aa)[:2]))

    # compare.py: median baseline_ns against the library, 1.3x the limit.
    q, lib = os.path.join(tmp, "q.jsonl"), os.path.join(tmp, "lib.jsonl")
    lines = good_run("gemm_f16_wgmma-256x512x256", ns=(2500.0, 2600.0, 2700.0))
    write_lines(q, lines)
    write_lines(lib, [{"shape": "gemm_f16-256x512x256", "ns": 2000.0, "library": "F.linear"}])
    rc, out = run(COMPARE, q, lib)
    expect("1.30x is within", rc == 0 and " 1.30 " in out and "yes" in out, out)
    write_lines(lib, [{"shape": "gemm_f16-256x512x256", "ns": 1999.0, "library": "F.linear"}])
    rc, out = run(COMPARE, q, lib)
    expect("above 1.3x is not within", rc == 1 and " no " in out, out)
    with open(lib, "w") as f:
        f.write('{"shape": "gemm_f16-256x512x256"}\n')
    rc, out = run(COMPARE, q, lib)
    expect("a library line without ns is refused, naming file and line",
           rc != 0 and lib + ":1" in out, out)

    shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        for f in failures:
            print("FAIL:", f)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
