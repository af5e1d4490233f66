/* The layout test and the F distribution (layout.h). */
#include "stats/layout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One step of Lentz's method with partial numerator aa: updates c and d,
 * returns the factor of the convergent, guarding against zero divisors. */
static double lentz_step(double aa, double *c, double *d)
{
	const double tiny = 1e-300;

	*d = 1 + aa * *d;
	if (fabs(*d) < tiny)
		*d = tiny;
	*c = 1 + aa / *c;
	if (fabs(*c) < tiny)
		*c = tiny;
	*d = 1 / *d;
	return *d * *c;
}

/* Lentz's method for the continued fraction of I_x(a, b) (Numerical
 * Recipes' betacf, with the tiny-value guard of Lentz's algorithm), to
 * convergence within about 1e-15. Converges quickly for x < (a+1)/(a+b+2),
 * in O(sqrt(max(a, b))) terms. */
static double beta_cf(double a, double b, double x)
{
	double qab = a + b, qap = a + 1, qam = a - 1, c = 1, d = 1, h;

	/* The first term: d = 1 / (1 - qab x / qap), c = 1, h = d. */
	(void)lentz_step(-qab * x / qap, &c, &d);
	c = 1;
	h = d;
	for (int m = 1; m <= 10000; m++) {
		double m2 = 2.0 * m, del;

		h *= lentz_step(m * (b - m) * x / ((qam + m2) * (a + m2)), &c, &d);
		del = lentz_step(-(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)), &c, &d);
		h *= del;
		if (fabs(del - 1) < 1e-16)
			break;
	}
	return h;
}

/* x^a (1-x)^b / (a B(a, b)) times the continued fraction, on the side of x
 * where it converges; the other side by symmetry. */
double stats_beta_inc(double a, double b, double x)
{
	double lbt;

	if (!(a > 0) || !(b > 0) || !(x >= 0) || !(x <= 1) || isinf(a) || isinf(b))
		return NAN;
	if (x == 0 || x == 1)
		return x;
	lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
	if (x < (a + 1) / (a + b + 2))
		return exp(lbt) * beta_cf(a, b, x) / a;
	return 1 - exp(lbt) * beta_cf(b, a, 1 - x) / b;
}

double stats_f_sf(double f, double d1, double d2)
{
	if (isnan(f) || !(d1 > 0) || !(d2 > 0) || isinf(d1) || isinf(d2))
		return NAN;
	if (f <= 0)
		return 1;
	if (isinf(f))
		return 0;
	return stats_beta_inc(d2 / 2, d1 / 2, d2 / (d2 + d1 * f));
}

/* One pair as the test needs it. */
struct lpair {
	int block, index;
	bool cand_first;
	double logr;
};

static int by_block_then_index(const void *pa, const void *pb)
{
	const struct lpair *a = pa, *b = pb;

	if (a->block != b->block)
		return a->block < b->block ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

void stats_layout_test(const struct stats_pair *pairs, int n, struct stats_layout *out)
{
	struct lpair *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
	double *m = calloc((size_t)(n > 0 ? n : 1), sizeof *m);
	double *d = calloc((size_t)(n > 0 ? n : 1), sizeof *d);
	double vm, vd;
	int k = 0, nb = 0;

	if (!v || !m || !d)
		abort();
	memset(out, 0, sizeof *out);
	out->between_sd = out->within_sd = out->f = out->p = out->p_holm = NAN;
	for (int i = 0; i < n; i++) {
		double b = pairs[i].baseline_ns, c = pairs[i].candidate_ns, r = c / b;

		if (pairs[i].block <= 0 || !isfinite(b) || !isfinite(c) || b <= 0 || c <= 0 ||
		    !isfinite(r) || !(r > 0))
			continue;
		v[k++] = (struct lpair){ pairs[i].block, i, pairs[i].candidate_first, log(r) };
	}
	qsort(v, (size_t)k, sizeof *v, by_block_then_index);
	for (int i = 0; i < k;) {
		int j = i;
		double cf = NAN, bf = NAN;

		for (; j < k && v[j].block == v[i].block; j++) {
			if (v[j].cand_first && isnan(cf))
				cf = v[j].logr;
			else if (!v[j].cand_first && isnan(bf))
				bf = v[j].logr;
		}
		if (!isnan(cf) && !isnan(bf)) {
			m[nb] = (cf + bf) / 2;
			d[nb] = cf - bf;
			nb++;
		}
		i = j;
	}
	out->blocks = nb;
	if (nb >= 2) {
		out->between_sd = stats_sample_sd(m, nb);
		out->within_sd = stats_sample_sd(d, nb) / 2;
		vm = out->between_sd * out->between_sd;
		vd = 4 * out->within_sd * out->within_sd;
		if (vd > 0) {
			out->f = vm / (vd / 4);
			out->p = stats_f_sf(out->f, nb - 1, nb - 1);
		} else if (vm > 0) {
			out->f = INFINITY;
			out->p = 0;
		} else {
			out->p = 1;
		}
	}
	free(v);
	free(m);
	free(d);
}
