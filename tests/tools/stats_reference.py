#!/usr/bin/python3
"""Expected values for stats/stats*.c, computed independently with scipy.

Usage: stats_reference.py OUT

Writes OUT, one test case a line, read by tests/unit/stats/test_stats.c
(which says how each kind is compared). Every number is written with repr(),
so the C side reads back the exact double. Lines:

  sign K N P                         scipy.stats.binomtest(K, N, 0.5).pvalue
  cdf K N PROB P                     scipy.stats.binom.cdf(K, N, PROB)
  holm M p_1..p_M a_1..a_M           Holm written out below, NaN skipped
  median N x_1..x_N MED              numpy.median
  cirank N CONF K COV                K and coverage from scipy.stats.binom
  ci N CONF LO HI x_1..x_N           order statistics K and N+1-K of numpy.sort
  wilcoxon N d_1..d_N P              scipy.stats.wilcoxon on the nonzero d
  mwu NX NY x.. y.. P                scipy.stats.mannwhitneyu
  hl N d_1..d_N HL                   numpy.median of all Walsh averages
  mde N SD ALPHA POWER EFFECT        exact binomial power, scipy brentq
  case N (b c first block)*N n invalid faster slower ties pair_p units
       unit_faster unit_slower unit_ties p ratio_median ratio_lo ratio_hi
       coverage wilcoxon_p hl_log_ratio log_ratio_sd unit_log_ratio_sd
       order_p order_diff            a whole stats_case_summarise (conf 0.95)
  betainc A B X P                    scipy.special.betainc(A, B, X)
  fsf F D1 D2 P                      scipy.stats.f.sf(F, D1, D2)
  layout N (b c first block)*N blocks between_sd within_sd f p
                                     stats/layout.h's test written out below

The rules that pick an exact or an approximate method (stats.h) are applied
here as written in the header: wilcoxon exact when at most 50 nonzero d and no
ties among |d|; Mann-Whitney exact when both samples have at most 50 values
and the pooled sample has no ties. Must run under Debian's /usr/bin/python3
(python3-scipy); scipy 1.10 is what the values were checked against.
"""

import math
import sys
import warnings

import numpy as np
from scipy import optimize, stats

WILCOXON_EXACT_MAX = 50
MWU_EXACT_MAX = 50

warnings.simplefilter("ignore")  # scipy's "sample size too small" notes
rng = np.random.default_rng(20261129)
out = []


def r(x):
    """Exact text of a double (repr round-trips; nan and inf for strtod)."""
    return repr(float(x))


def emit(*fields):
    out.append(" ".join(str(f) for f in fields))


def sign_p(k, n):
    if n == 0:
        return 1.0
    return stats.binomtest(k, n, 0.5).pvalue


# ---- sign test ----
def gen_sign():
    for n in range(0, 61):
        for k in range(0, n + 1):
            emit("sign", k, n, r(sign_p(k, n)))
    for n in (99, 100, 101, 250, 499, 777, 1000, 1999, 2000):
        ks = set(range(0, 6)) | set(range(n // 2 - 5, n // 2 + 6))
        ks |= {int(n / 2 - c * math.sqrt(n) / 2) for c in (1, 1.5, 1.96, 2, 2.5, 3, 4, 6, 10)}
        ks |= {n - k for k in list(ks)}
        for k in sorted(x for x in ks if 0 <= x <= n):
            emit("sign", k, n, r(sign_p(k, n)))
    for n in (5000, 9999, 10000, 20001):
        for k in (0, 10, n // 2 - 300, n // 2 - 100, n // 2 - 30, n // 2 - 1, n // 2,
                  n // 2 + 1, n // 2 + 60, n - 2):
            emit("sign", k, n, r(sign_p(k, n)))


def gen_cdf():
    for n in (1, 2, 7, 30, 57, 300, 2000, 10000):
        for p in (0.001, 0.05, 0.3, 0.5, 0.6180339887, 0.95, 0.999):
            mean = n * p
            sdv = math.sqrt(n * p * (1 - p))
            ks = {0, 1, n - 1, n, int(mean), int(mean) + 1}
            ks |= {int(mean + c * sdv) for c in (-6, -3, -2, -1, -0.5, 0.5, 1, 2, 3, 6)}
            for k in sorted(x for x in ks if 0 <= x <= n):
                emit("cdf", k, n, r(p), r(stats.binom.cdf(k, n, p)))


# ---- Holm ----
def holm(p):
    """Holm's step-down procedure written out (Holm 1979)."""
    p = list(p)
    idx = [i for i in range(len(p)) if not math.isnan(p[i])]
    idx.sort(key=lambda i: p[i])
    m = len(idx)
    adj = [float("nan")] * len(p)
    running = 0.0
    for j, i in enumerate(idx):
        running = max(running, min(1.0, (m - j) * p[i]))
        adj[i] = running
    return adj


def gen_holm():
    fixed = [
        [0.01, 0.04, 0.03, 0.005],
        [0.5, 0.5, 0.5],
        [0.02, 0.02, 0.9, float("nan"), 0.001],
        [float("nan")],
        [float("nan"), float("nan"), 0.2],
        [1.0, 0.0, 0.3],
        [0.049, 0.0125, 0.025, 0.01],
    ]
    for p in fixed:
        emit("holm", len(p), *map(r, p), *map(r, holm(p)))
    for _ in range(60):
        m = int(rng.integers(1, 15))
        p = rng.uniform(0, 0.2, m) ** rng.uniform(0.5, 3)
        p[rng.uniform(size=m) < 0.1] = float("nan")
        if m > 2 and rng.uniform() < 0.3:
            p[1] = p[0]  # a tie
        emit("holm", m, *map(r, p), *map(r, holm(p)))


# ---- median and its interval ----
def ci_rank(n, conf):
    """Largest k with P(k <= B <= n-k) >= conf, B ~ Binomial(n, 1/2)."""
    ks = np.arange(1, n // 2 + 1)
    cov = stats.binom.cdf(n - ks, n, 0.5) - stats.binom.cdf(ks - 1, n, 0.5)
    # The two implementations must not disagree on which side of conf a
    # coverage falls: keep the cases well clear of the boundary.
    assert np.all(np.abs(cov - conf) > 1e-12), (n, conf)
    ok = np.nonzero(cov >= conf)[0]  # coverage falls with k
    if len(ok) == 0:
        return 0, float("nan")
    return int(ks[ok[-1]]), float(cov[ok[-1]])


def sample(n, kind):
    if kind == 0:
        return rng.normal(0, 1, n)
    if kind == 1:  # ties
        return np.round(rng.normal(0, 3, n))
    return rng.lognormal(0, 0.01, n)


def gen_median_ci():
    for n in list(range(0, 30)) + [50, 51, 200, 1001]:
        for kind in range(3):
            x = sample(n, kind)
            emit("median", n, *map(r, x), r(np.median(x)) if n else "nan")
    for conf in (0.6, 0.8, 0.9, 0.95, 0.99, 0.999):
        for n in list(range(0, 201)) + [500, 999, 1000, 2000, 5000]:
            k, cov = ci_rank(n, conf)
            emit("cirank", n, r(conf), k, r(cov))
    for conf in (0.9, 0.95, 0.99):
        for n in (1, 2, 5, 6, 7, 8, 9, 10, 15, 30, 31, 60, 200, 1000):
            for kind in range(3):
                x = sample(n, kind)
                k, _ = ci_rank(n, conf)
                s = np.sort(x)
                lo, hi = (s[k - 1], s[n - k]) if k else (float("nan"),) * 2
                emit("ci", n, r(conf), r(lo), r(hi), *map(r, x))


# ---- Wilcoxon ----
def wilcoxon_p(d):
    d = np.asarray(d, dtype=float)
    nz = d[d != 0]
    if len(nz) == 0:
        return 1.0
    ties = len(np.unique(np.abs(nz))) != len(nz)
    method = "exact" if len(nz) <= WILCOXON_EXACT_MAX and not ties else "approx"
    return stats.wilcoxon(nz, zero_method="wilcox", correction=True,
                          method=method).pvalue


def gen_wilcoxon():
    for n in list(range(1, 61)) + [100, 300]:
        for kind in range(4):
            if kind == 0:    # continuous, maybe shifted
                d = rng.normal(rng.choice([0, 0.3, 1.0]), 1, n)
            elif kind == 1:  # ties and zeros
                d = np.round(rng.normal(0.5, 2, n))
            elif kind == 2:  # small log ratios
                d = rng.normal(0.002, 0.005, n)
            else:            # all one sign
                d = np.abs(rng.normal(0, 1, n)) + 0.01
            emit("wilcoxon", n, *map(r, d), r(wilcoxon_p(d)))
    emit("wilcoxon", 3, "0.0", "0.0", "0.0", r(1.0))


# ---- Mann-Whitney ----
def mwu_p(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    pooled = np.concatenate([x, y])
    ties = len(np.unique(pooled)) != len(pooled)
    exact = len(x) <= MWU_EXACT_MAX and len(y) <= MWU_EXACT_MAX and not ties
    return stats.mannwhitneyu(x, y, use_continuity=True, alternative="two-sided",
                              method="exact" if exact else "asymptotic").pvalue


def gen_mwu():
    sizes = [(1, 1), (1, 5), (2, 2), (3, 4), (5, 5), (8, 9), (10, 3), (15, 15),
             (15, 16), (20, 27), (30, 30), (50, 50), (51, 10), (80, 80), (200, 150)]
    for nx, ny in sizes:
        for kind in range(3):
            shift = rng.choice([0, 0.5, 2])
            if kind == 1:
                x, y = np.round(rng.normal(0, 2, nx)), np.round(rng.normal(shift, 2, ny))
            else:
                x, y = rng.normal(0, 1, nx), rng.normal(shift, 1, ny)
            if kind == 2 and nx > 1:
                x[0] = y[0]  # one tie across the samples
            emit("mwu", nx, ny, *map(r, x), *map(r, y), r(mwu_p(x, y)))
    emit("mwu", 2, 2, "1.0", "1.0", "1.0", "1.0", r(mwu_p([1, 1], [1, 1])))


# ---- Hodges-Lehmann ----
def hl(d):
    d = np.asarray(d, float)
    i, j = np.triu_indices(len(d))
    return np.median((d[i] + d[j]) / 2)


def gen_hl():
    for n in list(range(1, 40)) + [100, 257, 600]:
        for kind in range(3):
            d = sample(n, kind)
            if kind == 2:
                d = np.log(d)
            emit("hl", n, *map(r, d), r(hl(d)))


# ---- power of the sign test ----
def mde(n, sd, alpha, power):
    # Critical count: the largest c < n/2 with binomtest p < alpha (p grows
    # with c), by bisection over c.
    if n == 0 or sign_p(0, n) >= alpha:
        return float("inf")
    lo, hi = 0, (n - 1) // 2  # invariant: p(lo) < alpha; c in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sign_p(mid, n) < alpha:
            lo = mid
        else:
            hi = mid - 1
    c = lo

    def pw(z):
        q = stats.norm.cdf(z)  # P(pair slower)
        return stats.binom.cdf(c, n, q) + stats.binom.cdf(c, n, 1 - q) - power

    z = optimize.brentq(pw, 0, 40, xtol=1e-15, rtol=1e-15, maxiter=500)
    return math.exp(z * sd)


def mde_monte_carlo_check():
    """The exact power model against a simulation of the normal model."""
    n, sd, alpha = 30, 0.01, 0.05
    effect = mde(n, sd, alpha, 0.8)
    lr = rng.normal(math.log(effect), sd, size=(40000, n))
    slower = (lr > 0).sum(axis=1)
    p = np.array([sign_p(int(s), n) for s in range(n + 1)])
    hit = (p[slower] < alpha).mean()
    assert abs(hit - 0.8) < 0.01, hit  # sd of the estimate 0.002


def gen_mde():
    for n in (1, 5, 6, 7, 10, 17, 30, 31, 60, 100, 200, 1000, 5000):
        for sd in (0.001, 0.005, 0.013):
            for alpha in (0.05, 0.01):
                for power in (0.5, 0.8, 0.95):
                    emit("mde", n, r(sd), r(alpha), r(power), r(mde(n, sd, alpha, power)))
    mde_monte_carlo_check()


# ---- whole case summaries ----
def summarise(b, c, first, block, conf=0.95):
    b, c = np.asarray(b, float), np.asarray(c, float)
    with np.errstate(all="ignore"):
        q = c / b
        valid = (np.isfinite(b) & np.isfinite(c) & (b > 0) & (c > 0)
                 & np.isfinite(q) & (q > 0))
    bv, cv, qv, fv = b[valid], c[valid], q[valid], np.asarray(first)[valid]
    blk = np.asarray(block)[valid]
    n = int(valid.sum())
    faster, slower = int((cv < bv).sum()), int((cv > bv).sum())
    ties = n - faster - slower
    lr = np.array([math.log(x) for x in qv])  # libm's log, as the C code
    nan = float("nan")
    # Units: a pair with block 0 alone (its ratio, its sign by the ns); the
    # pairs of one block > 0 together, by the median of their log ratios.
    uq, ul, usign = [], [], []
    for i in range(n):
        if blk[i] == 0:
            uq.append(qv[i]), ul.append(lr[i])
            usign.append(int(np.sign(cv[i] - bv[i])))
    for g in sorted(set(int(x) for x in blk if x > 0)):
        idx = np.flatnonzero(blk == g)
        if len(idx) == 1:
            i = idx[0]
            uq.append(qv[i]), ul.append(lr[i])
            usign.append(int(np.sign(cv[i] - bv[i])))
        else:
            m = float(np.median(lr[idx]))
            uq.append(math.exp(m)), ul.append(m)
            usign.append(int(np.sign(m)))
    uq, ul, usign = np.array(uq), np.array(ul), np.array(usign)
    u = len(uq)
    uf, us = int((usign < 0).sum()), int((usign > 0).sum())
    k, cov = ci_rank(u, conf)
    s = np.sort(uq)
    cf, bf = lr[fv == 1], lr[fv == 0]
    return [n, int((~valid).sum()), faster, slower, ties,
            r(sign_p(faster, faster + slower)),
            u, uf, us, u - uf - us, r(sign_p(uf, uf + us)),
            r(np.median(uq) if u else nan),
            r(s[k - 1] if k else nan), r(s[u - k] if k else nan), r(cov),
            r(wilcoxon_p(ul) if u else nan),
            r(hl(ul) if u else nan),
            r(np.std(lr, ddof=1) if n >= 2 else nan),
            r(np.std(ul, ddof=1) if u >= 2 else nan),
            r(mwu_p(cf, bf) if len(cf) and len(bf) else nan),
            r(np.median(cf) - np.median(bf) if len(cf) and len(bf) else nan)]


def gen_case():
    specs = [  # n, slowdown, noise sd, order effect, quantum (ns), invalid,
               # pairs per block (0: every pair alone), block sd
        (0, 0, 0, 0, 0, 0, 0, 0), (1, 0, 0.01, 0, 0, 0, 0, 0),
        (5, 0.02, 0.01, 0, 0, 0, 0, 0),
        (30, 0, 0.005, 0, 0, 0, 0, 0), (30, 0.03, 0.005, 0, 0, 0, 0, 0),
        (30, -0.02, 0.01, 0.004, 0, 0, 0, 0), (60, 0.0008, 0.001, 0, 0, 0, 0, 0),
        (60, 0, 0.01, 0.01, 0, 3, 0, 0), (40, 0.001, 0.002, 0, 1.0, 0, 0, 0),
        (40, 0, 0.0, 0, 0, 0, 0, 0), (100, 0.004, 0.003, 0, 0.5, 2, 0, 0),
        (200, -0.001, 0.004, 0.002, 0, 0, 0, 0), (31, 0.1, 0.05, 0, 0, 31, 0, 0),
        # blocked: a shared offset per block (block sd) on top of the noise
        (30, 0.002, 0.001, 0, 0, 0, 2, 0.003), (30, 0, 0.001, 0.001, 0, 0, 2, 0.002),
        (31, 0.01, 0.002, 0, 0, 0, 2, 0.004), (60, -0.004, 0.002, 0, 0, 5, 2, 0.001),
        (60, 0.001, 0.001, 0, 0, 0, 3, 0.002), (60, 0.0, 0.003, 0, 0, 0, 6, 0.0),
        (40, 0.002, 0.001, 0, 1.0, 0, 4, 0.001), (12, 0.05, 0.01, 0, 0, 11, 2, 0.01),
        (30, 0, 0.0, 0, 0, 0, 2, 0),
    ]
    for n, shift, sd, order, quantum, invalid, per, bsd in specs:
        b = rng.uniform(900, 1100, n) * 1.0
        first = np.arange(n) % 2
        block = np.arange(n) // per + 1 if per else np.zeros(n, int)
        offset = rng.normal(0, bsd, n // per + 1)[np.arange(n) // per] if per and bsd else 0
        lr = (rng.normal(shift, sd, n) + offset
              + np.where(first == 1, order / 2, -order / 2))
        c = b * np.exp(lr)
        if quantum:
            b, c = np.round(b / quantum) * quantum, np.round(c / quantum) * quantum
        if sd == 0:
            c = b.copy()  # every pair a tie
        bad = [float("nan"), 0.0, -5.0, float("inf")]
        for i in rng.choice(n, size=invalid, replace=False) if invalid else []:
            if rng.uniform() < 0.5:
                b[i] = bad[int(rng.integers(4))]
            else:
                c[i] = bad[int(rng.integers(4))]
        fields = []
        for i in range(n):
            fields += [r(b[i]), r(c[i]), int(first[i]), int(block[i])]
        emit("case", n, *fields, *summarise(b, c, first, block))


# ---- the F distribution and the layout test (stats/layout.h) ----
nan = float("nan")
def gen_f():
    from scipy import special
    for a in (0.5, 1, 2.5, 7, 14.5, 50, 300, 2000):
        for b in (0.5, 1, 3, 14.5, 60, 1000):
            for x in (1e-6, 0.01, 0.2, 0.5, 0.77, 0.99, 1 - 1e-6):
                emit("betainc", r(a), r(b), r(x), r(special.betainc(a, b, x)))
    for d in (1, 2, 3, 5, 7, 14, 29, 59, 149, 499):
        for f in (0.0, 0.05, 0.5, 0.9, 1.0, 1.3, 2.0, 3.7, 8.0, 25.0, 300.0):
            emit("fsf", r(f), d, d, r(stats.f.sf(f, d, d)))
    for d1, d2 in ((1, 10), (4, 30), (30, 4), (12.5, 7.5), (100, 3)):
        for f in (0.2, 1.0, 2.5, 10.0):
            emit("fsf", r(f), r(d1), r(d2), r(stats.f.sf(f, d1, d2)))


def layout(b, c, first, block):
    """One pair of each order per block (the first of each), as layout.h."""
    ok = np.isfinite(b) & np.isfinite(c) & (b > 0) & (c > 0) & (block > 0)
    lr = np.log(c / b)
    m, d = [], []
    for blk in sorted(set(block[ok].tolist())):
        idx = [i for i in range(len(b)) if ok[i] and block[i] == blk]
        cf = [lr[i] for i in idx if first[i] == 1]
        bf = [lr[i] for i in idx if first[i] == 0]
        if cf and bf:
            m.append((cf[0] + bf[0]) / 2)
            d.append(cf[0] - bf[0])
    nb = len(m)
    if nb < 2:
        return [nb, r(nan), r(nan), r(nan), r(nan)]
    vm, vd = np.var(m, ddof=1), np.var(d, ddof=1)
    f = vm / (vd / 4) if vd > 0 else (float("inf") if vm > 0 else nan)
    p = stats.f.sf(f, nb - 1, nb - 1) if vd > 0 else (0.0 if vm > 0 else 1.0)
    return [nb, r(np.sqrt(vm)), r(np.sqrt(vd) / 2), r(f), r(p)]


def gen_layout():
    # n, per block, noise sd, order effect, placement sd, invalid
    specs = [(2, 2, 0.01, 0, 0, 0), (4, 2, 0.01, 0, 0, 0), (30, 2, 0.002, 0.004, 0, 0),
             (30, 2, 0.002, 0.004, 0.004, 0), (60, 2, 0.001, 0, 0.0005, 3),
             (31, 2, 0.003, 0, 0, 0), (60, 3, 0.002, 0.001, 0.002, 0),
             (120, 2, 0.001, 0.01, 0.0, 2), (24, 4, 0.002, 0, 0.003, 1)]
    for n, per, sd, order, psd, invalid in specs:
        b = rng.uniform(900, 1100, n)
        bl = np.arange(n) // per
        first = (np.arange(n) % per + bl) % 2
        block = bl + 1
        lr = (rng.normal(0.001, sd, n) + rng.normal(0, psd, n // per + 1)[bl]
              + np.where(first == 1, order / 2, -order / 2))
        c = b * np.exp(lr)
        for i in rng.choice(n, size=invalid, replace=False) if invalid else []:
            c[i] = float("nan")
        fields = []
        for i in range(n):
            fields += [r(b[i]), r(c[i]), int(first[i]), int(block[i])]
        emit("layout", n, *fields, *layout(b, c, first, block))


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: stats_reference.py OUT\n")
        return 2
    for gen in (gen_sign, gen_cdf, gen_holm, gen_median_ci, gen_wilcoxon,
                gen_mwu, gen_hl, gen_mde, gen_case, gen_f, gen_layout):
        gen()
    with open(sys.argv[1], "w") as f:
        f.write("# generated by tests/tools/stats_reference.py with scipy %s\n"
                % __import__("scipy").__version__)
        f.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
