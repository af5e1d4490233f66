#!/usr/bin/env python3
"""What opening a session's GPU costs when several processes open at once.

A session (run/sessions.c) is a process that opens the device the way
gpu/gpu_cuda.c does (libcuda.so.1 by dlopen, cuInit, cuDeviceGet, the
primary context retained and made current) and NVML (nvmlInit_v2). This
starts N such processes together (N of $CTX_OPEN_N, default "1 2 4 8 16"),
each released at the same moment through a pipe, and N processes one after
the other, and prints per N: the wall time from the release until the last
of them had its context open (CLOCK_MONOTONIC, one clock for every process
of the machine), the median process's own time, and the same one after the
other. It says whether the sessions of a round gain by opening their
contexts side by side, ahead of their turns, instead of each while the one
before it closes.

    python3 bench/ctx_open.py [REPEATS]       (on the GPU machine)
"""
import os
import statistics
import subprocess
import sys
import time

CHILD = r"""
import ctypes, os, sys, time
sys.stdin.read(1)
t0 = time.clock_gettime(time.CLOCK_MONOTONIC)
cu = ctypes.CDLL("libcuda.so.1")
assert cu.cuInit(0) == 0, "cuInit"
dev = ctypes.c_int()
assert cu.cuDeviceGet(ctypes.byref(dev), 0) == 0, "cuDeviceGet"
ctx = ctypes.c_void_p()
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0, "retain"
assert cu.cuCtxSetCurrent(ctx) == 0, "current"
free, total = ctypes.c_size_t(), ctypes.c_size_t()
assert cu.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)) == 0, "meminfo"
t1 = time.clock_gettime(time.CLOCK_MONOTONIC)
try:
    nv = ctypes.CDLL("libnvidia-ml.so.1")
    nv.nvmlInit_v2()
except OSError:
    pass
t2 = time.clock_gettime(time.CLOCK_MONOTONIC)
print(t0, t1, t2, flush=True)
"""


def batch(n, side_by_side):
    """n processes; returns (release, [(t0, t1, t2)]) for each."""
    if side_by_side:
        procs = [subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True) for _ in range(n)]
        time.sleep(0.5)  # every interpreter started and waiting
        release = time.clock_gettime(time.CLOCK_MONOTONIC)
        for p in procs:
            p.stdin.write("g")
            p.stdin.flush()
        times = []
        for p in procs:
            out, _ = p.communicate()
            times.append(tuple(float(x) for x in out.split()))
        return release, times
    times = []
    release = None
    for _ in range(n):
        p = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        out, _ = p.communicate("g")
        t = tuple(float(x) for x in out.split())
        release = release if release is not None else t[0]
        times.append(t)
    return release, times


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    ns = [int(x) for x in os.environ.get("CTX_OPEN_N", "1 2 4 8 16").split()]
    print("| n | way | to the last context, s | per process ctx, s | per process nvml, s |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for n in ns:
        for side in (True, False):
            if n == 1 and not side:
                continue
            last, ctx, nvml = [], [], []
            for _ in range(repeats):
                release, times = batch(n, side)
                last.append(max(t[1] for t in times) - release)
                ctx.extend(t[1] - t[0] for t in times)
                nvml.extend(t[2] - t[1] for t in times)
            print(f"| {n} | {'together' if side else 'one after another'} | "
                  f"{statistics.median(last):.3f} | {statistics.median(ctx):.3f} | "
                  f"{statistics.median(nvml):.3f} |", flush=True)


if __name__ == "__main__":
    main()
