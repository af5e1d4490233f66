/* Paired-comparison statistics, per case and per run: the verdicts' names,
 * the settings and their looks, each case's summary of its pairs (with the
 * sequential looks) and the run's verdict and gates, built on the tests of
 * stats_nonparam.c. See stats.h for the contract of each function and the
 * scipy call it matches; numerical choices are explained where made. */
#include "stats/stats_internal.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/vocab.h"

/* ---- per case ---- */

/* A verdict's word is the vocabulary's (proto/vocab.h); "unknown" outside
 * it, for a reader that prints whatever it is given. */
const char *stats_verdict_name(enum case_verdict v)
{
	const char *w = vocab_case_verdict_name(v);

	return w ? w : "unknown";
}

const char *stats_run_verdict_name(enum run_verdict v)
{
	const char *w = vocab_verdict_name(v);

	return w ? w : "unknown";
}

void stats_settings_init(struct stats_settings *s)
{
	s->alpha = 0.05;
	s->margin = 0.01;
	s->conf = 0.95;
	s->first_look = 0;
	s->last_look = 0;
	s->look_growth = STATS_LOOK_GROWTH_UNSTATED;
	s->gate_slower = GATE_BEYOND;
	s->gate_faster = GATE_BEYOND;
	s->undecided = UNDECIDED_PASS;
	s->sample_identical = false;
}

void stats_set_looks(struct stats_settings *s, int pairs, int per, int max_pairs)
{
	s->first_look = s->last_look = 0;
	if (per > 0 && pairs > 0 && max_pairs >= pairs) {
		s->first_look = (int)(((long)pairs + per - 1) / per);
		s->last_look = (int)(((long)max_pairs + per - 1) / per);
	}
}

int stats_looks(const struct stats_settings *s, int at[STATS_MAX_LOOKS],
		double w[STATS_MAX_LOOKS])
{
	int k = 0;
	long growth = s->look_growth >= STATS_LOOK_GROWTH_MIN ? s->look_growth :
		      STATS_LOOK_GROWTH_MIN;

	if (s->first_look <= 0 || s->last_look <= s->first_look) {
		at[0] = 0;
		w[0] = 1;
		return 1;
	}
	/* Growing from the first look, then the cap; a growth that would pass
	 * the cap is the cap. */
	for (long n = s->first_look; n < s->last_look && k < STATS_MAX_LOOKS - 1; n *= growth)
		at[k++] = (int)n;
	at[k++] = s->last_look;
	/* Half the error at the first look, where most cases are decided,
	 * so that its test is the fixed-sample one at alpha / 2; the other
	 * half shared equally by the later looks. */
	w[0] = 0.5;
	for (int i = 1; i < k; i++)
		w[i] = 0.5 / (k - 1);
	return k;
}

/* A pair is usable when both timings are finite and positive and their ratio
 * is a finite positive double (its log is then finite). */
static bool pair_ratio(const struct stats_pair *pr, double *ratio)
{
	double b = pr->baseline_ns, c = pr->candidate_ns, q;

	if (!isfinite(b) || !isfinite(c) || !(b > 0) || !(c > 0))
		return false;
	q = c / b;
	if (!isfinite(q) || !(q > 0))
		return false;
	*ratio = q;
	return true;
}

/* A valid pair as summarise sees it. */
struct valid_pair {
	int block;
	int sign;       /* -1 candidate faster, +1 slower, 0 tie (by the ns) */
	double ratio, logr;
};

static int by_block(const void *a, const void *b)
{
	const struct valid_pair *x = a, *y = b;

	return (x->block > y->block) - (x->block < y->block);
}

double stats_sample_sd(const double *x, int n)
{
	double mean = 0, m2 = 0;

	for (int i = 0; i < n; i++) {
		double delta = x[i] - mean;
		mean += delta / (i + 1);
		m2 += delta * (x[i] - mean);
	}
	return n >= 2 ? sqrt(m2 / (n - 1)) : NAN;
}

/* The rounds test (stats.h, struct stats_case): ulogr[0..u) in block
 * order, ublock their blocks; the first look's are those with block <=
 * s->first_look. */
static void rounds_test(const double *ulogr, const int *ublock, int u,
			const struct stats_settings *s, struct stats_case *out)
{
	int nf = 0;

	out->rounds_first = out->rounds_later = 0;
	out->rounds_first_ratio = out->rounds_later_ratio = NAN;
	out->rounds_shift = out->rounds_p = NAN;
	if (s->first_look <= 0 || s->last_look <= s->first_look)
		return;
	while (nf < u && ublock[nf] <= s->first_look)
		nf++;
	out->rounds_first = nf;
	out->rounds_later = u - nf;
	if (nf > 0)
		out->rounds_first_ratio = exp(stats_median(ulogr, nf));
	if (u - nf > 0)
		out->rounds_later_ratio = exp(stats_median(ulogr + nf, u - nf));
	if (nf < STATS_ROUNDS_MIN || u - nf < STATS_ROUNDS_MIN)
		return;
	out->rounds_shift = out->rounds_later_ratio / out->rounds_first_ratio;
	out->rounds_p = stats_mann_whitney_p(ulogr, nf, ulogr + nf, u - nf);
}

/* The test and the interval over the looks (stats.h, struct stats_case):
 * uratio[0..u) are the units' ratios in block order (lone pairs, block 0,
 * first), with their blocks and signs, so that look k's units are the prefix
 * of those with block <= at[k]. A look is taken when the data reach past the
 * look before it; the last planned look also holds any unit beyond it (a
 * run qual-run made never has one). Sets p, look_p, looks, ratio_lo,
 * ratio_hi and ratio_coverage (1 - the misses of every planned look: those
 * taken at their blocks, the others at their planned blocks). */
static void sequential(const double *uratio, const int *ublock, const int *usign, int u,
		       const struct stats_settings *s, struct stats_case *out)
{
	int at[STATS_MAX_LOOKS], nlooks, maxblock = u ? ublock[u - 1] : 0;
	int n = 0, faster = 0, slower = 0;
	double w[STATS_MAX_LOOKS], lo = -INFINITY, hi = INFINITY, miss = 0;
	double last_lo = NAN, last_hi = NAN, one_cov = NAN;
	int intervals = 0;

	nlooks = stats_looks(s, at, w);
	out->p = 1;
	out->looks = 0;
	for (int k = 0; k < nlooks; k++) {
		double level, klo, khi, cov, pk;

		if (k > 0 && maxblock <= at[k - 1])
			break;  /* the data stopped at the look before */
		while (n < u && (k == nlooks - 1 || nlooks == 1 || ublock[n] <= at[k])) {
			faster += usign[n] < 0;
			slower += usign[n] > 0;
			n++;
		}
		/* With one look its level is conf itself, bit for bit. */
		level = w[k] == 1 ? s->conf : 1 - (1 - s->conf) * w[k];
		pk = stats_sign_test_p(faster, faster + slower);
		out->look_p = pk;
		pk = pk / w[k] < 1 ? pk / w[k] : 1;
		if (pk < out->p)
			out->p = pk;
		stats_median_ci(uratio, n, level, &klo, &khi);
		if (stats_median_ci_rank(n, level, &cov) > 0 && !isnan(klo)) {
			intervals++;
			one_cov = cov;
			miss += 1 - cov;
			lo = klo > lo ? klo : lo;
			hi = khi < hi ? khi : hi;
			last_lo = klo;
			last_hi = khi;
		}
		out->looks++;
	}
	if (!intervals) {
		out->ratio_lo = out->ratio_hi = out->ratio_coverage = NAN;
		return;
	}
	/* The guarantee under optional stopping is the union bound over every
	 * planned look, not only those taken: a look not reached adds the
	 * miss of its interval over its planned n_k blocks. */
	for (int k = out->looks; k < nlooks && nlooks > 1; k++) {
		double cov;

		if (stats_median_ci_rank(at[k], 1 - (1 - s->conf) * w[k], &cov) > 0)
			miss += 1 - cov;
	}
	/* An empty intersection can only come of a look whose interval
	 * missed: the latest look's interval stands for the sequence then. */
	if (lo > hi) {
		lo = last_lo;
		hi = last_hi;
	}
	out->ratio_lo = lo;
	out->ratio_hi = hi;
	out->ratio_coverage = nlooks == 1 ? one_cov : 1 - miss;
}

void stats_case_summarise(const struct stats_pair *pairs, int n,
			  const struct stats_settings *s, struct stats_case *out)
{
	size_t cap = (size_t)(n > 0 ? n : 0);
	struct valid_pair *v = stats__alloc(cap, sizeof *v);
	double *logr = stats__alloc(cap, sizeof *logr);
	double *uratio = stats__alloc(cap, sizeof *uratio);
	double *ulogr = stats__alloc(cap, sizeof *ulogr);
	double *first_c = stats__alloc(cap, sizeof *first_c);
	double *first_b = stats__alloc(cap, sizeof *first_b);
	int *ublock = stats__alloc(cap, sizeof *ublock);
	int *usign = stats__alloc(cap, sizeof *usign);
	int m = 0, nc = 0, nb = 0, u = 0;

	memset(out, 0, sizeof *out);
	for (int i = 0; i < n; i++) {
		struct valid_pair *vp = &v[m];
		double q;

		if (!pair_ratio(&pairs[i], &q)) {
			out->invalid++;
			continue;
		}
		vp->block = pairs[i].block > 0 ? pairs[i].block : 0;
		vp->sign = pairs[i].candidate_ns < pairs[i].baseline_ns ? -1 :
			   pairs[i].candidate_ns > pairs[i].baseline_ns;
		vp->ratio = q;
		vp->logr = log(q);
		out->faster += vp->sign < 0;
		out->slower += vp->sign > 0;
		out->ties += vp->sign == 0;
		logr[m] = vp->logr;
		if (pairs[i].candidate_first)
			first_c[nc++] = vp->logr;
		else
			first_b[nb++] = vp->logr;
		m++;
	}
	out->n = m;
	out->pair_p = stats_sign_test_p(out->faster, out->faster + out->slower);
	out->log_ratio_sd = stats_sample_sd(logr, m);
	out->order_p = stats_mann_whitney_p(first_c, nc, first_b, nb);
	out->order_diff = nc && nb ? stats_median(first_c, nc) - stats_median(first_b, nb)
				   : NAN;

	/* The units: lone pairs as they are, each block by the median of its
	 * pairs' log ratios. logr is reused for one block's values. */
	qsort(v, (size_t)m, sizeof *v, by_block);
	for (int i = 0; i < m;) {
		int j = i + 1, sign;

		if (v[i].block > 0)
			while (j < m && v[j].block == v[i].block)
				j++;
		if (j - i == 1) {
			uratio[u] = v[i].ratio;
			ulogr[u] = v[i].logr;
			sign = v[i].sign;
		} else {
			for (int k = i; k < j; k++)
				logr[k - i] = v[k].logr;
			ulogr[u] = stats_median(logr, j - i);
			uratio[u] = exp(ulogr[u]);
			sign = (ulogr[u] > 0) - (ulogr[u] < 0);
		}
		out->unit_faster += sign < 0;
		out->unit_slower += sign > 0;
		out->unit_ties += sign == 0;
		ublock[u] = v[i].block;
		usign[u] = sign;
		u++;
		i = j;
	}
	out->units = u;
	out->p_holm = NAN;
	out->ratio_median = stats_median(uratio, u);
	sequential(uratio, ublock, usign, u, s, out);
	out->wilcoxon_p = u ? stats_wilcoxon_p(ulogr, u) : NAN;
	out->hl_log_ratio = stats_hodges_lehmann(ulogr, u);
	out->unit_log_ratio_sd = stats_sample_sd(ulogr, u);
	rounds_test(ulogr, ublock, u, s, out);
	out->identical_code = false;
	out->verdict = VERDICT_INCONCLUSIVE;
	free(v);
	free(logr);
	free(uratio);
	free(ulogr);
	free(first_c);
	free(first_b);
	free(ublock);
	free(usign);
}

static bool case_is_timed(const struct stats_case *c)
{
	return c->verdict != VERDICT_FAIL && c->verdict != VERDICT_NOT_TIMED &&
	       c->verdict != VERDICT_NOT_APPLICABLE;
}

void stats_judge_run(struct stats_case *cases, int ncases,
		     const struct stats_settings *s)
{
	double *p;
	int k = 0;

	if (ncases <= 0)
		return;
	p = stats__alloc((size_t)ncases, sizeof *p);
	for (int i = 0; i < ncases; i++)
		if (case_is_timed(&cases[i]))
			p[k++] = cases[i].p;
	stats_holm(p, k);
	k = 0;
	for (int i = 0; i < ncases; i++) {
		struct stats_case *c = &cases[i];

		if (!case_is_timed(c)) {
			c->p_holm = NAN;
			c->decided = true;  /* nothing more to time */
			c->within_margin = 0;
			c->beyond_margin = false;
			continue;
		}
		c->p_holm = p[k++];
		/* Both false for a NaN interval. */
		c->beyond_margin = c->ratio_lo > 1 + s->margin || c->ratio_hi < 1 - s->margin;
		c->within_margin = 0;
		if (c->ratio_lo >= 1 - s->margin && c->ratio_hi <= 1 + s->margin) {
			c->timing_verdict = VERDICT_EQUIVALENT;
			c->within_margin = c->ratio_lo > 1 ? 1 : c->ratio_hi < 1 ? -1 : 0;
		} else if (c->p_holm < s->alpha && c->unit_slower > c->unit_faster) {
			c->timing_verdict = VERDICT_SLOWER;
		} else if (c->p_holm < s->alpha && c->unit_faster > c->unit_slower) {
			c->timing_verdict = VERDICT_FASTER;
		} else {
			c->timing_verdict = VERDICT_INCONCLUSIVE;
		}
		c->decided = c->timing_verdict == VERDICT_EQUIVALENT ||
			     ((c->timing_verdict == VERDICT_SLOWER ||
			       c->timing_verdict == VERDICT_FASTER) && c->beyond_margin);
		c->verdict = c->timing_verdict;
		if (c->identical_code) {
			c->verdict = VERDICT_IDENTICAL;
			c->within_margin = 0;
			c->decided |= !s->sample_identical;
		}
	}
	/* The rounds test, over the same cases as p. */
	k = 0;
	for (int i = 0; i < ncases; i++)
		if (case_is_timed(&cases[i]))
			p[k++] = cases[i].rounds_p;
	stats_holm(p, k);
	k = 0;
	for (int i = 0; i < ncases; i++) {
		struct stats_case *c = &cases[i];

		c->rounds_p_holm = case_is_timed(c) ? p[k++] : NAN;
		c->rounds_disagree = !isnan(c->rounds_p_holm) && c->rounds_p_holm < s->alpha;
	}
	free(p);
}

enum run_verdict stats_run_verdict(const struct stats_case *cases, int n,
				   bool candidate_failed,
				   bool baseline_or_machine_failed)
{
	struct stats_settings any;

	stats_settings_init(&any);
	any.gate_slower = any.gate_faster = GATE_SIGNIFICANT;
	any.undecided = UNDECIDED_PASS;
	return stats_run_verdict_gate(cases, n, &any, candidate_failed,
				      baseline_or_machine_failed);
}

bool stats_gate_regression(const struct stats_case *c, const struct stats_settings *s)
{
	if (c->verdict == VERDICT_SLOWER &&
	    (s->gate_slower == GATE_SIGNIFICANT || c->beyond_margin))
		return true;
	/* Undecided, and a slowdown beyond the margin not ruled out (a NaN
	 * interval rules nothing out). */
	return !c->decided && case_is_timed(c) && c->verdict != VERDICT_IDENTICAL &&
	       s->undecided == UNDECIDED_REGRESSION &&
	       !(c->ratio_hi <= 1 + s->margin);
}

bool stats_gate_improvement(const struct stats_case *c, const struct stats_settings *s)
{
	return c->verdict == VERDICT_FASTER &&
	       (s->gate_faster == GATE_SIGNIFICANT || c->beyond_margin);
}

enum run_verdict stats_run_verdict_gate(const struct stats_case *cases, int n,
					const struct stats_settings *s,
					bool candidate_failed,
					bool baseline_or_machine_failed)
{
	bool failed = false, slower = false, faster = false;

	for (int i = 0; i < n; i++) {
		failed |= cases[i].verdict == VERDICT_FAIL;
		slower |= stats_gate_regression(&cases[i], s);
		faster |= stats_gate_improvement(&cases[i], s);
	}
	if (candidate_failed)
		return RUN_FAIL;
	if (baseline_or_machine_failed)
		return RUN_ERROR;
	if (failed)
		return RUN_FAIL;
	if (slower)
		return RUN_REGRESSION;
	if (faster)
		return RUN_IMPROVEMENT;
	return RUN_NEUTRAL;
}
