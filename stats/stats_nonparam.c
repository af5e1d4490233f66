/* Paired-comparison statistics, the tests and estimates over one sample:
 * the binomial distribution and the exact sign test, Holm's correction, the
 * median and its distribution-free interval, the Wilcoxon signed-rank test,
 * the Hodges-Lehmann estimate, the Mann-Whitney test and the sign test's
 * power. stats.c builds the per-case and per-run verdicts from them. See
 * stats.h for the contract of each function and the scipy call it matches;
 * numerical choices are explained where made. */
#include "stats/stats_internal.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- memory ---- */

void *stats__alloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		abort();
	return p;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Copies the finite values of x[0..n) into a new array, sorted ascending;
 * *m receives their count. The caller frees. */
static double *sorted_finite(const double *x, int n, int *m)
{
	double *v = stats__alloc((size_t)(n > 0 ? n : 0), sizeof *v);
	int k = 0;

	for (int i = 0; i < n; i++)
		if (isfinite(x[i]))
			v[k++] = x[i];
	qsort(v, (size_t)k, sizeof *v, cmp_double);
	*m = k;
	return v;
}

/* Median of an already sorted array, as numpy computes it. */
static double median_sorted(const double *v, int m)
{
	if (m <= 0)
		return NAN;
	if (m % 2)
		return v[m / 2];
	return (v[m / 2 - 1] + v[m / 2]) / 2;
}

/* ---- binomial distribution ---- */

/* ln(sqrt(2 pi)) */
#define LN_SQRT_2PI 0.918938533204672741780329736406

/* Stirling-formula error, ln(x!) - ln(sqrt(2 pi x) (x/e)^x), for x > 0
 * (Loader 2000, "Fast and accurate computation of binomial probabilities").
 * Below 16 it is taken from lgamma directly: the terms there are below 50, so
 * the absolute error stays near 1e-14, which is what matters since it enters
 * an exponent. Above, Loader's truncated asymptotic series. */
static double stirlerr(double x)
{
	const double s0 = 1.0 / 12, s1 = 1.0 / 360, s2 = 1.0 / 1260;
	const double s3 = 1.0 / 1680, s4 = 1.0 / 1188;
	double xx = x * x;

	if (x < 16)
		return lgamma(x + 1) - (x + 0.5) * log(x) + x - LN_SQRT_2PI;
	if (x > 500)
		return (s0 - s1 / xx) / x;
	if (x > 80)
		return (s0 - (s1 - s2 / xx) / xx) / x;
	if (x > 35)
		return (s0 - (s1 - (s2 - s3 / xx) / xx) / xx) / x;
	return (s0 - (s1 - (s2 - (s3 - s4 / xx) / xx) / xx) / xx) / x;
}

/* Deviance term x ln(x / mu) + mu - x, computed without cancellation when x is
 * close to mu (Loader's bd0). */
static double bd0(double x, double mu)
{
	if (fabs(x - mu) < 0.1 * (x + mu)) {
		double v = (x - mu) / (x + mu);
		double s = (x - mu) * v, ej = 2 * x * v;

		if (fabs(s) < DBL_MIN)
			return s;
		v *= v;
		for (int j = 1; j < 1000; j++) {
			double s1;

			ej *= v;
			s1 = s + ej / (2 * j + 1);
			if (s1 == s)
				return s1;
			s = s1;
		}
		return s;
	}
	return x * log(x / mu) + mu - x;
}

/* P(X = x) for X ~ Binomial(n, p), q = 1 - p given separately so that a
 * caller holding both accurately (an erfc pair) loses nothing. Loader's
 * saddle-point form: relative error about 1e-15 for any n. */
static double binom_pmf(int x, int n, double p, double q)
{
	double lc, lf;

	if (x < 0 || x > n)
		return 0;
	if (p == 0.5 && q == 0.5 && (x == 0 || x == n))
		return ldexp(1, -n);  /* exactly, so that small tails are exact */
	if (p == 0)
		return x == 0;
	if (q == 0)
		return x == n;
	if (x == 0) {
		lc = p < 0.1 ? -bd0(n, n * q) - n * p : n * log(q);
		return exp(lc);
	}
	if (x == n) {
		lc = q < 0.1 ? -bd0(n, n * p) - n * q : n * log(p);
		return exp(lc);
	}
	lc = stirlerr(n) - stirlerr(x) - stirlerr(n - x) - bd0(x, n * p) -
	     bd0(n - x, n * q);
	lf = 2 * LN_SQRT_2PI + log(x) + log1p(-(double)x / n);
	return exp(lc - 0.5 * lf);
}

/* Sum of pmf(i) walking from i = from by step (-1 or +1) away from the mode,
 * where the terms only shrink. Stops once the rest cannot matter: each next
 * ratio is below the current one r < 1, so the remainder is below
 * t r / (1 - r). */
static double binom_tail(int from, int step, int n, double p, double q)
{
	double t = binom_pmf(from, n, p, q), sum = t;

	for (int i = from; t > 0;) {
		double r;

		/* pmf(i - 1) / pmf(i) = i q / ((n - i + 1) p);
		 * pmf(i + 1) / pmf(i) = (n - i) p / ((i + 1) q). */
		if (step < 0) {
			if (i == 0)
				break;
			r = (i * q) / ((n - i + 1) * p);
		} else {
			if (i == n)
				break;
			r = ((n - i) * p) / ((i + 1) * q);
		}
		t *= r;
		sum += t;
		i += step;
		if (r < 1 && t * r / (1 - r) < sum * 1e-17)
			break;
	}
	return sum;
}

/* P(X <= k) with q = 1 - p supplied. Sums whichever side of the mean k is on
 * (terms decrease away from the mode floor((n + 1) p) <= np + p, so from k
 * down when k <= np, from k + 1 up otherwise). */
static double binom_cdf_pq(int k, int n, double p, double q)
{
	if (k < 0)
		return 0;
	if (k >= n)
		return 1;
	if (p == 0)
		return 1;
	if (q == 0)
		return 0;
	if (k <= n * p)
		return binom_tail(k, -1, n, p, q);
	return 1 - binom_tail(k + 1, +1, n, p, q);
}

double stats_binom_cdf(int k, int n, double p)
{
	if (n < 0 || !(p >= 0 && p <= 1))
		return NAN;
	return binom_cdf_pq(k, n, p, 1 - p);
}

double stats_sign_test_p(int k, int n)
{
	int lo;
	double tail;

	if (n < 0 || k < 0 || k > n)
		return NAN;
	if (n == 0 || k == n - k)
		return 1;
	lo = k < n - k ? k : n - k;
	tail = binom_cdf_pq(lo, n, 0.5, 0.5);
	return 2 * tail < 1 ? 2 * tail : 1;
}

/* ---- Holm ---- */

/* Sorts indices by the p they point at; qsort has no context argument, so
 * the values travel with the index. */
struct holm_item {
	double p;
	int i;
};

static int cmp_holm(const void *a, const void *b)
{
	const struct holm_item *x = a, *y = b;

	if (x->p != y->p)
		return (x->p > y->p) - (x->p < y->p);
	return (x->i > y->i) - (x->i < y->i);
}

void stats_holm(double *p, int m)
{
	struct holm_item *it;
	double run = 0;
	int k = 0;

	if (m <= 0)
		return;
	it = stats__alloc((size_t)m, sizeof *it);
	for (int i = 0; i < m; i++)
		if (!isnan(p[i]))
			it[k++] = (struct holm_item){ p[i], i };
	qsort(it, (size_t)k, sizeof *it, cmp_holm);
	for (int j = 0; j < k; j++) {
		double a = (double)(k - j) * it[j].p;

		if (a > 1)
			a = 1;
		if (a > run)
			run = a;  /* step-down: never below an earlier one */
		p[it[j].i] = run;
	}
	free(it);
}

/* ---- median and its interval ---- */

double stats_median(const double *x, int n)
{
	int m;
	double *v = sorted_finite(x, n, &m);
	double med = median_sorted(v, m);

	free(v);
	return med;
}

/* Coverage of (x(k), x(n + 1 - k)): P(k <= B <= n - k) = 1 - 2 P(B <= k - 1). */
static double median_ci_coverage(int k, int n)
{
	return 1 - 2 * binom_cdf_pq(k - 1, n, 0.5, 0.5);
}

int stats_median_ci_rank(int n, double conf, double *coverage)
{
	int lo = 0, hi;

	if (coverage)
		*coverage = NAN;
	if (n < 2 || !(conf > 0 && conf < 1) || median_ci_coverage(1, n) < conf)
		return 0;
	/* Coverage falls as k grows: bisect for the largest k in [1, n/2]
	 * that still reaches conf. Invariant: coverage(lo) >= conf, and the
	 * answer lies in [lo, hi]. */
	lo = 1;
	hi = n / 2;
	while (lo < hi) {
		int mid = lo + (hi - lo + 1) / 2;

		if (median_ci_coverage(mid, n) >= conf)
			lo = mid;
		else
			hi = mid - 1;
	}
	if (coverage)
		*coverage = median_ci_coverage(lo, n);
	return lo;
}

void stats_median_ci(const double *x, int n, double conf, double *lo, double *hi)
{
	int m, k;
	double *v = sorted_finite(x, n, &m);

	k = stats_median_ci_rank(m, conf, NULL);
	*lo = k ? v[k - 1] : NAN;
	*hi = k ? v[m - k] : NAN;
	free(v);
}

/* ---- ranks ---- */

struct ranked {
	double v;  /* value that is ranked */
	int tag;   /* caller's label: index or group */
};

static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	return (x->v > y->v) - (x->v < y->v);
}

/* Sorts r[0..m) by value and writes the average (mid) rank of each into
 * rank[] (rank[i] for the i-th sorted item, 1-based, ties sharing their
 * mean rank as scipy.stats.rankdata does). Returns sum(t^3 - t) over groups
 * of t tied values, the tie term of both rank tests' variances. */
static double rank_sorted(struct ranked *r, int m, double *rank)
{
	double tie = 0;

	qsort(r, (size_t)m, sizeof *r, cmp_ranked);
	for (int i = 0; i < m;) {
		int j = i;

		while (j + 1 < m && r[j + 1].v == r[i].v)
			j++;
		/* items i..j share ranks i+1..j+1 */
		for (int t = i; t <= j; t++)
			rank[t] = (i + 1 + j + 1) / 2.0;
		if (j > i) {
			double t = j - i + 1;

			tie += t * t * t - t;
		}
		i = j + 1;
	}
	return tie;
}

/* Two-sided normal tail 2 P(Z > |z|) = erfc(|z| / sqrt 2), capped at 1. */
static double normal_two_sided(double z)
{
	double p = erfc(fabs(z) / sqrt(2.0));

	return p < 1 ? p : 1;
}

/* ---- Wilcoxon signed-rank ---- */

/* Largest m for which the exact signed-rank distribution is used. Its counts
 * are integers below 2^50 < 2^53, so they and their partial sums are exact in
 * double and the p-value is correctly rounded. scipy's own cut-off. */
#define WILCOXON_EXACT_MAX 50

/* Exact P(W+ <= t) * 2 for m untied nonzero values: the number of subsets of
 * {1..m} with sum <= t over 2^m. Counting subsets by sum is the knapsack
 * recurrence; only sums up to t are needed. */
static double wilcoxon_exact_p(int m, double t)
{
	int tmax = (int)t;  /* no ties, so the rank sum is an integer */
	double *c = stats__alloc((size_t)tmax + 1, sizeof *c);
	double sum = 0, p;

	c[0] = 1;
	for (int i = 1; i <= m; i++)
		for (int s = tmax; s >= i; s--)
			c[s] += c[s - i];
	for (int s = 0; s <= tmax; s++)
		sum += c[s];
	free(c);
	p = 2 * ldexp(sum, -m);
	return p < 1 ? p : 1;
}

double stats_wilcoxon_p(const double *d, int n)
{
	struct ranked *r;
	double *rank, rplus = 0, rminus = 0, t, tie, mean, var, cc;
	int m = 0;
	bool ties = false;

	if (n <= 0)
		return 1;
	r = stats__alloc((size_t)n, sizeof *r);
	rank = stats__alloc((size_t)n, sizeof *rank);
	for (int i = 0; i < n; i++)
		if (isfinite(d[i]) && d[i] != 0)
			r[m++] = (struct ranked){ fabs(d[i]), d[i] > 0 };
	if (m == 0) {
		free(r);
		free(rank);
		return 1;
	}
	tie = rank_sorted(r, m, rank);
	ties = tie > 0;
	for (int i = 0; i < m; i++) {
		if (r[i].tag)
			rplus += rank[i];
		else
			rminus += rank[i];
	}
	free(r);
	free(rank);
	t = rplus < rminus ? rplus : rminus;
	if (m <= WILCOXON_EXACT_MAX && !ties)
		return wilcoxon_exact_p(m, t);

	/* Normal approximation: mean m(m+1)/4, variance
	 * (m(m+1)(2m+1) - sum(t^3 - t)/2) / 24, continuity correction 0.5
	 * toward the mean. */
	mean = m * (m + 1.0) / 4;
	var = (m * (m + 1.0) * (2.0 * m + 1) - 0.5 * tie) / 24;
	cc = t > mean ? 0.5 : t < mean ? -0.5 : 0;
	return normal_two_sided((t - mean - cc) / sqrt(var));
}

/* ---- Hodges-Lehmann ---- */

/* Doubles mapped to unsigned integers in the same order, so that bisection
 * over the integers walks every double between two finite ones. */
static uint64_t double_key(double x)
{
	uint64_t b;

	memcpy(&b, &x, sizeof b);
	return (b >> 63) ? ~b : b | (UINT64_C(1) << 63);
}

static double key_double(uint64_t k)
{
	uint64_t b = (k >> 63) ? k & ~(UINT64_C(1) << 63) : ~k;
	double x;

	memcpy(&x, &b, sizeof x);
	return x;
}

/* Number of Walsh averages (v_i + v_j) / 2, i <= j, of the sorted v that are
 * <= t, each rounded as computed. Rounding is monotone, so the average grows
 * with i and j and two pointers count in O(m). */
static uint64_t walsh_count_le(const double *v, int m, double t)
{
	uint64_t count = 0;
	int j = m - 1;

	for (int i = 0; i < m; i++) {
		while (j >= i && (v[i] + v[j]) / 2 > t)
			j--;
		if (j < i)
			break;
		count += (uint64_t)(j - i + 1);
	}
	return count;
}

/* The k-th smallest (1-based) Walsh average: the smallest double t with at
 * least k averages <= t, found by bisection over the ordered doubles between
 * the smallest average v[0] and the largest v[m-1] (at most 64 steps). */
static double walsh_kth(const double *v, int m, uint64_t k)
{
	uint64_t lo = double_key(v[0]), hi = double_key(v[m - 1]);

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (walsh_count_le(v, m, key_double(mid)) >= k)
			hi = mid;
		else
			lo = mid + 1;
	}
	return key_double(lo);
}

double stats_hodges_lehmann(const double *d, int n)
{
	int m;
	double *v = sorted_finite(d, n, &m), hl;
	uint64_t total;

	if (m == 0) {
		free(v);
		return NAN;
	}
	total = (uint64_t)m * (uint64_t)(m + 1) / 2;
	if (total % 2)
		hl = walsh_kth(v, m, total / 2 + 1);
	else
		hl = (walsh_kth(v, m, total / 2) + walsh_kth(v, m, total / 2 + 1)) / 2;
	free(v);
	return hl;
}

/* ---- Mann-Whitney ---- */

/* Largest sample size for the exact U distribution: the table below is
 * (n + 1)(u + 1) doubles with u <= n1 n2 / 2, about 1 MB and 3 M additions at
 * 50 x 50. Beyond, the normal approximation is within 1e-3 of it anyway. */
#define MWU_EXACT_MAX 50

/* Exact 2 P(U <= u) for sample sizes n1, n2 with no ties. f(i, j, k), the
 * number of arrangements of i x's and j y's with U = k, obeys
 * f(i, j, k) = f(i - 1, j, k - j) + f(i, j - 1, k) (Mann and Whitney 1947),
 * with f(i, 0, k) = f(0, j, k) = [k == 0]. Counts reach C(100, 50) ~ 1e29, so
 * they are held in double: all terms are positive, so the relative error stays
 * near (n1 + n2) eps. Only k <= u is needed. */
static double mwu_exact_p(int n1, int n2, int u)
{
	size_t w = (size_t)u + 1;
	double *prev = stats__alloc((size_t)(n2 + 1) * w, sizeof *prev);
	double *cur = stats__alloc((size_t)(n2 + 1) * w, sizeof *cur);
	double sum = 0, total = 1, p;

	for (int j = 0; j <= n2; j++)
		prev[(size_t)j * w] = 1;  /* i = 0 */
	for (int i = 1; i <= n1; i++) {
		double *tmp;

		memset(cur, 0, (size_t)(n2 + 1) * w * sizeof *cur);
		cur[0] = 1;  /* j = 0 */
		for (int j = 1; j <= n2; j++) {
			double *c = cur + (size_t)j * w;
			const double *left = cur + (size_t)(j - 1) * w;
			const double *up = prev + (size_t)j * w;

			for (int k = 0; k <= u; k++)
				c[k] = left[k] + (k >= j ? up[k - j] : 0);
		}
		tmp = prev;
		prev = cur;
		cur = tmp;
	}
	for (int k = 0; k <= u; k++)
		sum += prev[(size_t)n2 * w + k];
	/* C(n1 + n2, n1), the number of arrangements, built the same way as
	 * scipy's special.binom to within a few ulp. */
	for (int i = 1; i <= n1; i++)
		total = total * (n2 + i) / i;
	free(prev);
	free(cur);
	p = 2 * sum / total;
	return p < 1 ? p : 1;
}

double stats_mann_whitney_p(const double *x, int nx, const double *y, int ny)
{
	struct ranked *r;
	double *rank, r1 = 0, u1, u2, u, tie, mu, s, n1n2;
	int n1 = 0, n2 = 0, nn;

	if (nx < 0 || ny < 0)
		return NAN;
	r = stats__alloc((size_t)nx + (size_t)ny, sizeof *r);
	rank = stats__alloc((size_t)nx + (size_t)ny, sizeof *rank);
	for (int i = 0; i < nx; i++)
		if (isfinite(x[i]))
			r[n1++] = (struct ranked){ x[i], 1 };
	for (int i = 0; i < ny; i++) {
		if (isfinite(y[i])) {
			r[n1 + n2] = (struct ranked){ y[i], 0 };
			n2++;
		}
	}
	if (n1 == 0 || n2 == 0) {
		free(r);
		free(rank);
		return NAN;
	}
	nn = n1 + n2;
	tie = rank_sorted(r, nn, rank);
	for (int i = 0; i < nn; i++)
		if (r[i].tag)
			r1 += rank[i];
	free(r);
	free(rank);
	n1n2 = (double)n1 * n2;
	u1 = r1 - n1 * (n1 + 1.0) / 2;
	u2 = n1n2 - u1;
	if (tie == 0 && n1 <= MWU_EXACT_MAX && n2 <= MWU_EXACT_MAX)
		return mwu_exact_p(n1, n2, (int)(u1 < u2 ? u1 : u2));

	/* Normal approximation on U = max(U1, U2): mean n1 n2 / 2, variance
	 * n1 n2 / 12 ((N + 1) - sum(t^3 - t) / (N (N - 1))), continuity 0.5
	 * subtracted (scipy's _get_mwu_z). With every value tied the
	 * variance is 0 and nothing is learnt: p = 1. */
	u = u1 > u2 ? u1 : u2;
	mu = n1n2 / 2;
	s = sqrt(n1n2 / 12 * ((nn + 1) - tie / ((double)nn * (nn - 1))));
	if (!(s > 0))
		return 1;
	{
		double z = (u - mu - 0.5) / s;
		double p = erfc(z / sqrt(2.0));  /* 2 P(Z > z), z may be < 0 */

		return p < 1 ? p : 1;
	}
}

/* ---- sign-test power ---- */

/* Power of the two-sided exact sign test with critical count c (reject when
 * min(faster, slower) <= c) when each pair is slower with probability q_slow
 * (and faster with q_fast = 1 - q_slow, given separately for accuracy). */
static double sign_power(int n, int c, double q_slow, double q_fast)
{
	/* slower <= c, or faster <= c */
	return binom_cdf_pq(c, n, q_slow, q_fast) + binom_cdf_pq(c, n, q_fast, q_slow);
}

double stats_sign_test_mde(int n, double sd, double alpha, double power)
{
	int c = -1;
	double lo, hi;

	if (n < 1 || !(sd >= 0) || !isfinite(sd) || !(alpha > 0 && alpha < 1) ||
	    !(power > 0 && power < 1))
		return NAN;
	/* Critical region: the largest c < n/2 whose p-value is below alpha;
	 * the p-value grows with c, so bisect. Invariant: p(c) < alpha and
	 * the answer lies in [c, top]. */
	if (stats_sign_test_p(0, n) < alpha) {
		int top = (n - 1) / 2;

		c = 0;
		while (c < top) {
			int mid = c + (top - c + 1) / 2;

			if (stats_sign_test_p(mid, n) < alpha)
				c = mid;
			else
				top = mid - 1;
		}
	}
	if (c < 0)
		return INFINITY;
	if (sd == 0)
		return 1;
	/* Bisection on the shift in units of sd, z = log(effect) / sd: the
	 * power rises with z from below alpha at z = 0 to 1. At z = 40 a pair
	 * is faster with probability ~1e-350, so the power there is 1 in
	 * double for every n. 200 halvings reach the resolution of double. */
	lo = 0;
	hi = 40;
	for (int it = 0; it < 200; it++) {
		double mid = (lo + hi) / 2;
		double q_slow = 0.5 * erfc(-mid / sqrt(2.0));
		double q_fast = 0.5 * erfc(mid / sqrt(2.0));

		if (mid <= lo || mid >= hi)
			break;
		if (sign_power(n, c, q_slow, q_fast) >= power)
			hi = mid;
		else
			lo = mid;
	}
	return exp(hi * sd);
}
