#!/usr/bin/python3
"""The device probe's deadline, with a stand-in CUDA driver.

Usage: probe_test.py QUAL_RUN NVRTC FAKE_CUDA_DIR

FAKE_CUDA_DIR holds tests/shims/fake_cuda.c built as libcuda.so.1, put first
in LD_LIBRARY_PATH so that gpu/gpu_cuda.c loads it as the driver. With its
cuInit stuck (FAKE_CUDA_INIT=hang) and --probe-timeout 1, qual-run must still
end: the probe killed, the start line's not_timed_because saying it did not
answer within 1 s, the run a static qualification (exit 0, not_timed), no
process of the run left behind. With the stand-in's plain answer (no device)
the start line gives the driver's own words, which shows that the stand-in
is what was loaded. Exits 0 when all hold, 1 otherwise.
"""

import json
import os
import subprocess
import sys

CASE = "gemm_f16-256x512x256"


def run(qual_run, nvrtc, fake_dir, init):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = fake_dir + (":" + env["LD_LIBRARY_PATH"]
                                         if env.get("LD_LIBRARY_PATH") else "")
    env.pop("FAKE_CUDA_INIT", None)
    if init:
        env["FAKE_CUDA_INIT"] = init
    # Without the deadline the run would wait for the probe for ever: the
    # limit here is what would end it, and the test with it.
    p = subprocess.run([qual_run, nvrtc, nvrtc, "--case", CASE, "--probe-timeout", "1",
                        "--no-cache"], capture_output=True, text=True, env=env,
                       timeout=240, check=False)
    return p.returncode, [json.loads(l) for l in p.stdout.splitlines() if l], p.stderr


def main(argv):
    if len(argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    qual_run, nvrtc, fake_dir = argv[1:]
    problems = []
    for init, want in (("hang", "did not answer within 1 s and was killed"),
                       (None, "CUDA_ERROR_NO_DEVICE")):
        try:
            rc, lines, err = run(qual_run, nvrtc, fake_dir, init)
        except subprocess.TimeoutExpired:
            problems.append(f"FAKE_CUDA_INIT={init}: qual-run did not end")
            continue
        start = [l for l in lines if l.get("type") == "start"]
        verdict = [l for l in lines if l.get("type") == "verdict"]
        why = start[0].get("not_timed_because") if start else None
        print(f"FAKE_CUDA_INIT={init}: exit {rc}, not_timed_because {why!r}")
        if rc != 0:
            problems.append(f"FAKE_CUDA_INIT={init}: exit {rc}: {err.strip()[-300:]}")
        if not why or want not in why:
            problems.append(f"FAKE_CUDA_INIT={init}: not_timed_because lacks {want!r}")
        if not verdict or verdict[-1].get("verdict") != "not_timed":
            problems.append(f"FAKE_CUDA_INIT={init}: the verdict is not not_timed")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
