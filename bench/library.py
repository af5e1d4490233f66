#!/usr/bin/env python3
"""Times the library call a user would make for each fixture case's work, on
this machine's GPU through PyTorch, the way qual times a fixture: a CUDA graph
of 32 launches, one replay between device events, the median over 30 replays,
divided by 32 (ns per launch). Prints one JSON line per shape.

The operands have the fixtures' shapes and memory layouts (fixtures/*.c,
fixtures/kernels/*.cu), so the library does the same work:
  gemm_f16-MxNxK   a [M][K], w [N][K] f16: F.linear(a, w, bias), f16 out
                   (cuBLAS/cuBLASLt; the bias in f16, as linear wants one type)
  gemm_i8-MxNxK    a [M][K], w [N][K] s8: torch._int_mm(a, w.t()) (cuBLASLt,
                   s32 out), then f16(bf16(acc * col_scale[n] * row_scale[m]))
                   as PyTorch element-wise kernels; ns_matmul is _int_mm alone
  attention_f16-T  q [T][4][128], k, v [T][128], o like q: SDPA with 4 query
                   heads over one K/V head (enable_gqa; expanded K/V where
                   enable_gqa is refused), scale 1/sqrt(128), non-causal
  conv3x3_f16-HxWxCxN  x [H][W][C], w [N][3][3][C] (NHWC, channels_last):
                   F.conv2d(x, w, bias, padding=1) (cuDNN, benchmark mode);
                   the fixture also fuses batch norm and PReLU, which
                   ns_with_epilogue adds as PyTorch element-wise kernels

usage: python3 bench/library.py [CASE... | --cases FILE]

CASE names a fixture case (qual-run --list); a name with a variant after the
family (gemm_f16_wgmma-256x512x256) is timed at its shape, once per shape.
--cases FILE reads the names from qual-run --list output or a qual-run JSON
lines file. Without either: the nine built-in cases."""
import json
import re
import statistics
import sys

REPLAYS, LAUNCHES, WARMUP = 30, 32, 5

BUILTIN = [
    "attention_f16-128", "attention_f16-512",
    "gemm_f16-256x512x256", "gemm_f16-256x1024x1024",
    "gemm_i8-256x512x256", "gemm_i8-256x1024x1024",
    "conv3x3_f16-56x56x64x64", "conv3x3_f16-14x14x256x256", "conv3x3_f16-7x7x512x512",
]

# family, an optional variant (_wgmma, ...), then the shape.
CASE_RE = re.compile(r"(attention_f16|gemm_f16|gemm_i8|conv3x3_f16)(?:_[a-z0-9_]+)?-(\d+(?:x\d+)*)")


def shape_key(case):
    """The shape a case is timed at (its name without a variant), or None for
    a case of no built-in family."""
    m = CASE_RE.fullmatch(case)
    return f"{m.group(1)}-{m.group(2)}" if m else None


def read_cases(path):
    names = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            if line.startswith("{"):
                d = json.loads(line)
                if d.get("type") == "case":
                    names.append(d["case"])
            else:
                names.append(line)
    return names


def time_graph(torch, fn):
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
    for _ in range(WARMUP):
        g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPLAYS):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e6 / LAUNCHES)
    return statistics.median(times)


def small(torch, *shape, lo=-32, hi=32, scale=2.0 ** -5, dtype=None):
    """Dyadic values like the fixtures' inputs (the magnitudes keep f16 finite)."""
    x = torch.randint(lo, hi + 1, shape, device="cuda").to(torch.float32) * scale
    return x.to(dtype or torch.float16)


def gemm_f16(torch, F, m, n, k):
    a, w, bias = small(torch, m, k), small(torch, n, k), small(torch, n)
    ns = time_graph(torch, lambda: F.linear(a, w, bias))
    return {"library": "F.linear f16 + bias (cuBLAS)", "ns": ns}


def gemm_i8(torch, F, m, n, k):
    a = torch.randint(-128, 128, (m, k), device="cuda", dtype=torch.int8)
    w = torch.randint(-128, 128, (n, k), device="cuda", dtype=torch.int8)
    col = torch.pow(2.0, -torch.randint(5, 10, (n,), device="cuda").float())
    row = torch.pow(2.0, -torch.randint(4, 9, (m, 1), device="cuda").float())

    def full():
        acc = torch._int_mm(a, w.t())
        return (acc.float() * col * row).to(torch.bfloat16).to(torch.float16)

    ns = time_graph(torch, full)
    ns_mm = time_graph(torch, lambda: torch._int_mm(a, w.t()))
    return {"library": "torch._int_mm (cuBLASLt, s32) + scales, bf16, f16", "ns": ns,
            "ns_matmul": ns_mm}


def attention(torch, F, t):
    q = small(torch, 1, t, 4, 128, lo=-72, hi=72).transpose(1, 2)  # [1][4][t][128] view
    k = small(torch, 1, 1, t, 128, lo=-72, hi=72)
    v = small(torch, 1, 1, t, 128, lo=-64, hi=64, scale=2.0 ** -6)
    try:
        fn = lambda: F.scaled_dot_product_attention(q, k, v, scale=128 ** -0.5, enable_gqa=True)
        fn()
        how = "torch SDPA, enable_gqa, f16"
    except (TypeError, RuntimeError):
        ke, ve = k.expand(1, 4, t, 128), v.expand(1, 4, t, 128)
        fn = lambda: F.scaled_dot_product_attention(q, ke, ve, scale=128 ** -0.5)
        how = "torch SDPA, K/V expanded to 4 heads, f16"
    return {"library": how, "ns": time_graph(torch, fn)}


def conv3x3(torch, F, h, wd, c, n):
    x = small(torch, 1, h, wd, c, lo=-16, hi=16).permute(0, 3, 1, 2)  # NHWC in memory
    w = small(torch, n, 3, 3, c, lo=-16, hi=16).permute(0, 3, 1, 2)
    assert x.is_contiguous(memory_format=torch.channels_last)
    bias = small(torch, n, lo=-128, hi=128, scale=2.0 ** -6)
    bn_scale = small(torch, 1, n, 1, 1, lo=1, hi=2, scale=1.0)
    bn_shift = small(torch, 1, n, 1, 1, lo=-128, hi=128, scale=2.0 ** -6)
    slope = small(torch, n, lo=1, hi=1, scale=0.25)
    ns = time_graph(torch, lambda: F.conv2d(x, w, bias, padding=1))
    ns_epi = time_graph(torch, lambda: F.prelu(F.conv2d(x, w, bias, padding=1) * bn_scale
                                                + bn_shift, slope))
    return {"library": "F.conv2d NHWC f16 + bias (cuDNN)", "ns": ns, "ns_with_epilogue": ns_epi}


def main(argv):
    if argv[:1] == ["--cases"] and len(argv) == 2:
        cases = read_cases(argv[1])
    elif argv and argv[0].startswith("-"):
        sys.exit(__doc__)
    else:
        cases = argv or BUILTIN
    shapes = []
    for case in cases:
        key = shape_key(case)
        if key is None:
            print(f"library.py: no library call for case '{case}' (not a built-in family)",
                  file=sys.stderr)
        elif key not in shapes:
            shapes.append(key)
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    status = 0
    for key in shapes:
        family, dims = key.split("-")
        d = [int(x) for x in dims.split("x")]
        try:
            if family == "gemm_f16":
                r = gemm_f16(torch, F, *d)
            elif family == "gemm_i8":
                r = gemm_i8(torch, F, *d)
            elif family == "attention_f16":
                r = attention(torch, F, *d)
            else:
                r = conv3x3(torch, F, *d)
        except Exception as e:  # one shape failing must not lose the others
            print(f"library.py: {key}: {type(e).__name__}: {e}", file=sys.stderr)
            status = 1
            continue
        print(json.dumps(dict({"shape": key}, **r, torch=torch.__version__,
                              device=torch.cuda.get_device_name(),
                              replays=REPLAYS, launches=LAUNCHES)), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
