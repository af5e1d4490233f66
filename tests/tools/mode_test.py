#!/usr/bin/python3
"""qual-run --mode with the real hiprtc, compile-only.

Usage: mode_test.py QUAL_RUN HIPRTC [NVRTC]

For gfx1030 (RDNA2, which has workgroup processors) each mode is recorded in
the start line's settings, cu and wgp add -mcumode / -mno-cumode to both
arms' options, and wgp gives another code object than cu and than default
(the compiler really compiled for the mode). For gfx90a (no workgroup
processors) cu and wgp are usage errors naming the target; with NVRTC given,
any mode but default is a usage error naming nvrtc. Exits 0 when all hold,
1 otherwise.
"""

import json
import subprocess
import sys

CASE = "gemm_f16-256x512x256"
USAGE = 4


def run(qual_run, lib, arch, mode):
    p = subprocess.run([qual_run, "--compile-only", "--arch", arch, "--mode", mode,
                        "--case", CASE, lib, lib], capture_output=True, text=True,
                       check=False)
    return p.returncode, [json.loads(l) for l in p.stdout.splitlines() if l], p.stderr


def main(argv):
    if len(argv) not in (3, 4):
        sys.stderr.write(__doc__)
        return 2
    qual_run, hiprtc = argv[1], argv[2]
    problems = []
    artifacts = {}
    for mode, opt in (("default", None), ("cu", "-mcumode"), ("wgp", "-mno-cumode")):
        rc, lines, err = run(qual_run, hiprtc, "gfx1030", mode)
        start = [l for l in lines if l["type"] == "start"]
        case = [l for l in lines if l["type"] == "case"]
        if not start or not case:
            problems.append("gfx1030 %s: no start or case line (rc %d): %s" % (mode, rc, err))
            continue
        if start[0]["settings"].get("mode") != mode:
            problems.append("gfx1030 %s: settings.mode is %r" %
                            (mode, start[0]["settings"].get("mode")))
        for arm in ("baseline", "candidate"):
            opts = start[0][arm].get("options", [])
            want = [opt] if opt else []
            if [o for o in opts if o in ("-mcumode", "-mno-cumode")] != want:
                problems.append("gfx1030 %s: %s options %r, want %r" % (mode, arm, opts, want))
            if not case[0][arm].get("compiled"):
                problems.append("gfx1030 %s: %s did not compile" % (mode, arm))
        artifacts[mode] = case[0]["baseline"].get("artifact_sha256")
        print("gfx1030 %s: artifact %s" % (mode, artifacts[mode]))
    if artifacts.get("wgp") in (None, artifacts.get("cu"), artifacts.get("default")):
        problems.append("gfx1030: wgp's code object is not another than cu's and "
                        "default's: %r" % artifacts)
    for mode in ("cu", "wgp"):
        rc, lines, err = run(qual_run, hiprtc, "gfx90a", mode)
        if rc != USAGE or "'gfx90a'" not in err or any(l["type"] == "case" for l in lines):
            problems.append("gfx90a %s: want usage error naming 'gfx90a', got rc %d: %s" %
                            (mode, rc, err.strip()))
    if len(argv) == 4:
        rc, lines, err = run(qual_run, argv[3], "sm_90", "cu")
        if rc != USAGE or "nvrtc" not in err:
            problems.append("nvrtc cu: want usage error naming nvrtc, got rc %d: %s" %
                            (rc, err.strip()))
        rc, lines, err = run(qual_run, argv[3], "sm_90", "default")
        start = [l for l in lines if l["type"] == "start"]
        if not start or start[0]["settings"].get("mode") != "default":
            problems.append("nvrtc default: no start line with mode default (rc %d)" % rc)
    for p in problems:
        print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
