#!/usr/bin/env python3
"""Times what a user would call for each fixture shape on this machine, through
PyTorch: cuBLAS for the GEMMs, cuDNN for the convolutions, PyTorch's fused
scaled-dot-product attention for GQA attention. Timed like qual times a
fixture: a CUDA graph of 32 launches, one replay between device events, the
median over 30 replays, divided by 32. Prints one JSON object per case.

usage: python3 bench/reference.py > reference.jsonl"""
import json
import statistics

import torch

REPLAYS, LAUNCHES = 30, 32


def time_graph(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(LAUNCHES):
            fn()
    for _ in range(5):
        g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPLAYS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e6 / LAUNCHES)
    return statistics.median(times)


def rnd(*shape, dtype=torch.float16):
    return (torch.randint(-8, 9, shape, device="cuda").to(torch.float32) / 8).to(dtype)


def main():
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    out = []
    for t in (128, 512):
        q, k, v = rnd(1, 4, t, 128), rnd(1, 1, t, 128), rnd(1, 1, t, 128)
        f = lambda: torch.nn.functional.scaled_dot_product_attention(
            q, k, v, scale=128 ** -0.5, enable_gqa=True)
        out.append((f"attention_f16-{t}", "torch sdpa (gqa, f16)", time_graph(f)))
    for m, n, k in ((256, 512, 256), (256, 1024, 1024)):
        a, w, bias = rnd(m, k), rnd(n, k), rnd(n)
        out.append((f"gemm_f16-{m}x{n}x{k}", "cublas addmm f16",
                    time_graph(lambda: torch.addmm(bias, a, w.t()))))
        ai = torch.randint(-127, 128, (m, k), device="cuda", dtype=torch.int8)
        wi = torch.randint(-127, 128, (n, k), device="cuda", dtype=torch.int8)
        out.append((f"gemm_i8-{m}x{n}x{k}", "cublaslt int8 _int_mm (s32 out, no epilogue)",
                    time_graph(lambda: torch._int_mm(ai, wi.t()))))
    for h, c, n in ((56, 64, 64), (14, 256, 256), (7, 512, 512)):
        x = rnd(1, c, h, h).to(memory_format=torch.channels_last)
        w = rnd(n, c, 3, 3).to(memory_format=torch.channels_last)
        b = rnd(n)
        out.append((f"conv3x3_f16-{h}x{h}x{c}x{n}", "cudnn conv2d nhwc f16 + bias (no bn/prelu)",
                    time_graph(lambda: torch.nn.functional.conv2d(x, w, b, padding=1))))
    for case, what, ns in out:
        print(json.dumps({"case": case, "reference": what, "ns": ns,
                          "torch": torch.__version__, "device": torch.cuda.get_device_name()}))


if __name__ == "__main__":
    main()
