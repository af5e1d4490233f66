/* Unit tests for stats/: edge cases and verdict rules, and a comparison
 * against scipy (the test_ref_* tests: the file written by
 * tests/tools/stats_reference.py at test time, named by STATS_REF; without
 * it they skip themselves).
 *
 * Tolerances against scipy, by kind (relative unless said):
 *   exact equality: medians, interval end points, Hodges-Lehmann, order_diff,
 *     ratio medians, the interval rank k and the counts. These are data values
 *     or the same IEEE operations on them, so any difference is a bug.
 *   1e-12: Holm (the same products, min and max) and coverage (a binomial
 *     tail near 0.05 summed two ways, each to ~1e-15).
 *   1e-12: log_ratio_sd (Welford against numpy's two-pass; both ~1e-15).
 *   1e-9: sign test, binomial cdf, Wilcoxon, Mann-Whitney. Exact quantities
 *     computed two ways in double (Loader's saddle point and a tail
 *     recurrence here, boost's incomplete beta in scipy; exact subset counts
 *     here, scipy's float pmf sums) agree to ~1e-13; the approximate tests
 *     use the same normal formula with glibc's erfc here and cephes' ndtr in
 *     scipy, ~1e-15 apart. 1e-9 leaves room without hiding a wrong formula
 *     (a missing tie or continuity correction moves p by > 1e-3).
 *     Below 1e-300 (tails that underflow) an absolute 1e-300 applies.
 *   1e-9 on log(effect): the sign-test minimum detectable effect, a root of
 *     the exact power equation found by bisection here and by brentq
 *     (xtol 1e-15) in scipy.
 *   1e-10: the incomplete beta and the F tail (a continued fraction here,
 *     boost's in scipy; ~1e-13 apart except where lgamma of large arguments
 *     costs a few more digits) and the layout test's p; 1e-12 for its
 *     spreads (Welford against numpy's two-pass). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats/layout.h"
#include "stats/stats.h"
#include "tests/unit/test_main.h"

/* ---- helpers ---- */

/* Largest relative difference seen by close_rel since the last reset, printed
 * per kind so that the log shows how much room each tolerance leaves. */
static double worst_rel;

static bool close_rel(double got, double want, double rtol)
{
	double scale;

	if (isnan(want) || isnan(got))
		return isnan(want) && isnan(got);
	if (isinf(want) || isinf(got))
		return got == want;
	scale = fmax(fabs(got), fabs(want));
	if (scale > 1e-290 && fabs(got - want) / scale > worst_rel)
		worst_rel = fabs(got - want) / scale;
	return fabs(got - want) <= rtol * scale + 1e-300;
}

static bool same(double got, double want)
{
	return (isnan(got) && isnan(want)) || got == want;
}

static struct stats_pair pair(double b, double c, bool cf)
{
	return (struct stats_pair){ .baseline_ns = b, .candidate_ns = c, .candidate_first = cf };
}

/* ---- edge cases ---- */

static void test_sign_edges(void **state)
{
	(void)state;
	assert_true(stats_sign_test_p(0, 0) == 1);
	assert_true(isnan(stats_sign_test_p(-1, 5)));
	assert_true(isnan(stats_sign_test_p(6, 5)));
	assert_true(stats_sign_test_p(3, 6) == 1);
	/* 2 / 2^6 exactly (the end terms are powers of two), 2 * 7 / 2^6 */
	assert_true(stats_sign_test_p(0, 6) == 2.0 / 64);
	assert_true(stats_sign_test_p(6, 6) == 2.0 / 64);
	assert_true(close_rel(stats_sign_test_p(1, 6), 14.0 / 64, 1e-14));
	/* symmetric in k <-> n - k, and finite and tiny for huge n */
	assert_true(stats_sign_test_p(4000, 10000) == stats_sign_test_p(6000, 10000));
	assert_true(stats_sign_test_p(4000, 10000) > 0);
	assert_true(stats_sign_test_p(4000, 10000) < 1e-80);
	assert_true(stats_sign_test_p(5000, 10000) == 1);
	assert_true(stats_sign_test_p(0, 100000) == 0);  /* 2^-99999 underflows */
	assert_true(isnan(stats_binom_cdf(1, 5, 1.5)));
	assert_true(stats_binom_cdf(-1, 5, 0.3) == 0);
	assert_true(stats_binom_cdf(5, 5, 0.3) == 1);
	assert_true(stats_binom_cdf(0, 5, 0.0) == 1);
	assert_true(stats_binom_cdf(4, 5, 1.0) == 0);
}

static void test_holm_edges(void **state)
{
	double p[] = { 0.04, NAN, 0.01, 0.03 };
	double q[] = { NAN, NAN };
	double t[] = { 0.02, 0.02, 0.5 };
	double u[] = { 0.4, 0.5, 0.45 };

	(void)state;
	stats_holm(NULL, 0);  /* nothing to do, no crash */
	/* m' = 3: 0.01 * 3 = 0.03, 0.03 * 2 = 0.06, max(0.06, 0.04) */
	stats_holm(p, 4);
	assert_true(close_rel(p[2], 0.03, 1e-15));
	assert_true(close_rel(p[3], 0.06, 1e-15));
	assert_true(close_rel(p[0], 0.06, 1e-15));  /* monotone: not 0.04 */
	assert_true(isnan(p[1]));
	stats_holm(q, 2);
	assert_true(isnan(q[0]) && isnan(q[1]));
	/* tied p get one adjusted value; the cap is 1 */
	stats_holm(t, 3);
	assert_true(t[0] == t[1]);
	assert_true(close_rel(t[0], 0.06, 1e-15));
	assert_true(t[2] == 0.5);
	stats_holm(u, 3);
	assert_true(u[0] == 1 && u[1] == 1 && u[2] == 1);
}

static void test_median_edges(void **state)
{
	double x[] = { 3, NAN, 1, INFINITY, 2, 10 };
	double lo, hi, cov;

	(void)state;
	assert_true(isnan(stats_median(NULL, 0)));
	assert_true(stats_median(x, 6) == 2.5);  /* 1 2 3 10, NaN and Inf skipped */
	assert_true(stats_median(x, 3) == 2);    /* 3 1 */
	/* n = 5 cannot reach 95%: 1 - 2/32 = 0.9375 */
	assert_int_equal(stats_median_ci_rank(5, 0.95, &cov), 0);
	assert_true(isnan(cov));
	assert_int_equal(stats_median_ci_rank(6, 0.95, &cov), 1);
	assert_true(cov == 1 - 2.0 / 64);
	assert_int_equal(stats_median_ci_rank(6, 1.0, &cov), 0);
	assert_int_equal(stats_median_ci_rank(6, 0.0, NULL), 0);
	stats_median_ci(x, 6, 0.95, &lo, &hi);  /* 4 finite values */
	assert_true(isnan(lo) && isnan(hi));
	/* n = 30 at 95%: k = 10 (coverage 0.9572), not 11 (0.9013) */
	{
		double y[30];

		for (int i = 0; i < 30; i++)
			y[i] = 29 - i;  /* 0..29 reversed */
		assert_int_equal(stats_median_ci_rank(30, 0.95, &cov), 10);
		assert_true(cov > 0.957 && cov < 0.958);
		stats_median_ci(y, 30, 0.95, &lo, &hi);
		assert_true(lo == 9 && hi == 20);
	}
}

static void test_rank_tests_edges(void **state)
{
	double z[] = { 0, 0, 0 };
	double one[] = { 0.5 };
	double a[] = { 1, 2 }, b[] = { 3, 4 };

	(void)state;
	assert_true(stats_wilcoxon_p(NULL, 0) == 1);
	assert_true(stats_wilcoxon_p(z, 3) == 1);
	assert_true(stats_wilcoxon_p(one, 1) == 1);  /* 2 * 1/2 capped */
	assert_true(isnan(stats_hodges_lehmann(NULL, 0)));
	assert_true(stats_hodges_lehmann(one, 1) == 0.5);
	assert_true(isnan(stats_mann_whitney_p(a, 2, b, 0)));
	assert_true(isnan(stats_mann_whitney_p(a, 0, b, 2)));
	/* complete separation, 2 x 2: 2 * 1/C(4,2) */
	assert_true(close_rel(stats_mann_whitney_p(a, 2, b, 2), 2.0 / 6, 1e-15));
}

static void test_mde_edges(void **state)
{
	double m30, m60;

	(void)state;
	assert_true(isinf(stats_sign_test_mde(5, 0.01, 0.05, 0.8)));
	assert_true(stats_sign_test_mde(30, 0, 0.05, 0.8) == 1);
	assert_true(isnan(stats_sign_test_mde(0, 0.01, 0.05, 0.8)));
	assert_true(isnan(stats_sign_test_mde(30, -1, 0.05, 0.8)));
	assert_true(isnan(stats_sign_test_mde(30, NAN, 0.05, 0.8)));
	assert_true(isnan(stats_sign_test_mde(30, 0.01, 0, 0.8)));
	assert_true(isnan(stats_sign_test_mde(30, 0.01, 0.05, 1)));
	m30 = stats_sign_test_mde(30, 0.01, 0.05, 0.8);
	m60 = stats_sign_test_mde(60, 0.01, 0.05, 0.8);
	assert_true(m30 > m60 && m60 > 1);
	/* scales with sd in log space */
	assert_true(close_rel(log(stats_sign_test_mde(30, 0.02, 0.05, 0.8)), 2 * log(m30), 1e-9));
}

static void test_case_empty(void **state)
{
	struct stats_settings s;
	struct stats_case c;

	(void)state;
	stats_settings_init(&s);
	stats_case_summarise(NULL, 0, &s, &c);
	assert_int_equal(c.n, 0);
	assert_int_equal(c.invalid, 0);
	assert_true(c.p == 1);
	assert_true(isnan(c.p_holm));
	assert_true(isnan(c.ratio_median) && isnan(c.ratio_lo) && isnan(c.ratio_hi));
	assert_true(isnan(c.ratio_coverage) && isnan(c.wilcoxon_p));
	assert_true(isnan(c.hl_log_ratio) && isnan(c.log_ratio_sd));
	assert_true(isnan(c.order_p) && isnan(c.order_diff));
	assert_int_equal(c.verdict, VERDICT_INCONCLUSIVE);
	stats_judge_run(&c, 1, &s);
	assert_int_equal(c.verdict, VERDICT_INCONCLUSIVE);
	assert_true(c.p_holm == 1);
}

static void test_case_all_ties(void **state)
{
	struct stats_pair pr[40];
	struct stats_settings s;
	struct stats_case c;

	(void)state;
	stats_settings_init(&s);
	for (int i = 0; i < 40; i++)
		pr[i] = pair(1000 + i, 1000 + i, i % 2);
	stats_case_summarise(pr, 40, &s, &c);
	assert_int_equal(c.ties, 40);
	assert_int_equal(c.faster + c.slower, 0);
	assert_true(c.p == 1);
	assert_true(c.wilcoxon_p == 1);
	assert_true(c.ratio_median == 1 && c.ratio_lo == 1 && c.ratio_hi == 1);
	assert_true(c.log_ratio_sd == 0 && c.hl_log_ratio == 0);
	assert_true(c.order_p == 1 && c.order_diff == 0);
	stats_judge_run(&c, 1, &s);
	assert_int_equal(c.verdict, VERDICT_EQUIVALENT);
}

static void test_case_invalid_timings(void **state)
{
	struct stats_pair pr[] = {
		pair(NAN, 100, true), pair(100, NAN, false), pair(INFINITY, 100, true),
		pair(100, -INFINITY, false), pair(0, 100, true), pair(100, -3, false),
		pair(1e-310, 1e300, true),  /* ratio overflows */
		pair(100, 103, true), pair(100, 98, false), pair(100, 100, true),
	};
	struct stats_settings s;
	struct stats_case c;

	(void)state;
	stats_settings_init(&s);
	stats_case_summarise(pr, 10, &s, &c);
	assert_int_equal(c.invalid, 7);
	assert_int_equal(c.n, 3);
	assert_int_equal(c.faster, 1);
	assert_int_equal(c.slower, 1);
	assert_int_equal(c.ties, 1);
	assert_true(c.ratio_median == 1);
	assert_true(isnan(c.ratio_lo));  /* 3 pairs: no 95% interval */
	assert_true(isfinite(c.log_ratio_sd) && isfinite(c.hl_log_ratio));
	/* all invalid: nothing left, nothing crashes */
	stats_case_summarise(pr, 7, &s, &c);
	assert_int_equal(c.invalid, 7);
	assert_int_equal(c.n, 0);
	assert_true(c.p == 1 && isnan(c.ratio_median));
}

/* n pairs with candidate = baseline * factor_slow in the first `slow` pairs
 * and * factor_fast in the rest, baselines varying. */
static void make_pairs(struct stats_pair *pr, int n, int slow, double fs, double ff)
{
	for (int i = 0; i < n; i++) {
		double b = 1000 + 7 * (i % 5);

		pr[i] = pair(b, b * (i < slow ? fs : ff), i % 2);
	}
}

static void test_verdict_identical(void **state)
{
	struct stats_pair pr[30];
	struct stats_settings s;
	struct stats_case c;

	(void)state;
	stats_settings_init(&s);
	make_pairs(pr, 30, 30, 1.05, 1.05);  /* plainly slower */
	stats_case_summarise(pr, 30, &s, &c);
	c.identical_code = true;
	stats_judge_run(&c, 1, &s);
	assert_int_equal(c.verdict, VERDICT_IDENTICAL);
	assert_true(c.p_holm < 1e-8);  /* still timed and reported */
	assert_true(c.ratio_median > 1.049 && c.ratio_median < 1.051);
	/* the same data without identical code is slower */
	c.identical_code = false;
	stats_judge_run(&c, 1, &s);
	assert_int_equal(c.verdict, VERDICT_SLOWER);
	make_pairs(pr, 30, 0, 1, 0.9);
	stats_case_summarise(pr, 30, &s, &c);
	stats_judge_run(&c, 1, &s);
	assert_int_equal(c.verdict, VERDICT_FASTER);
}

/* The A/A run of DESIGN.md: the second module faster in 47 of 60 pairs by
 * 0.08%: p < 0.001, and equivalent. */
static void test_verdict_equivalence_beats_significance(void **state)
{
	struct stats_pair pr[60];
	struct stats_settings s;
	struct stats_case c;

	(void)state;
	stats_settings_init(&s);
	make_pairs(pr, 60, 13, 1.0008, 0.9992);
	stats_case_summarise(pr, 60, &s, &c);
	assert_int_equal(c.faster, 47);
	assert_true(c.p < 0.001);
	stats_judge_run(&c, 1, &s);
	assert_true(c.p_holm < s.alpha);
	assert_int_equal(c.verdict, VERDICT_EQUIVALENT);
	/* narrower margin: the same data is now significantly faster */
	s.margin = 0.0005;
	stats_judge_run(&c, 1, &s);
	assert_int_equal(c.verdict, VERDICT_FASTER);
	/* an interval crossing the band edge is not equivalent */
	make_pairs(pr, 60, 30, 1.02, 0.98);
	s.margin = 0.01;
	stats_case_summarise(pr, 60, &s, &c);
	stats_judge_run(&c, 1, &s);
	assert_int_equal(c.verdict, VERDICT_INCONCLUSIVE);
}

static void test_verdict_nan_interval(void **state)
{
	struct stats_settings s;
	struct stats_case c;

	(void)state;
	stats_settings_init(&s);
	memset(&c, 0, sizeof c);
	c.ratio_lo = c.ratio_hi = NAN;
	c.ratio_median = 1.0001;
	c.p = 0.001;
	c.unit_slower = 10;
	c.slower = 0;   /* the pairs' counts do not decide: the units' do */
	c.faster = 10;
	c.verdict = VERDICT_INCONCLUSIVE;
	stats_judge_run(&c, 1, &s);
	assert_int_equal(c.verdict, VERDICT_SLOWER);
	c.p = 0.2;
	stats_judge_run(&c, 1, &s);
	assert_int_equal(c.verdict, VERDICT_INCONCLUSIVE);
	/* five identical pairs: interval impossible, so not equivalent */
	{
		struct stats_pair pr[5];

		make_pairs(pr, 5, 5, 1.0001, 1);
		stats_case_summarise(pr, 5, &s, &c);
		stats_judge_run(&c, 1, &s);
		assert_true(isnan(c.ratio_lo));
		assert_int_equal(c.verdict, VERDICT_INCONCLUSIVE);
	}
}

static struct stats_case hand_case(double p, int slower, int faster, enum case_verdict v)
{
	struct stats_case c;

	memset(&c, 0, sizeof c);
	c.p = p;
	c.unit_slower = slower;
	c.unit_faster = faster;
	c.ratio_lo = 1.02;  /* outside the band: significance decides */
	c.ratio_hi = 1.05;
	c.verdict = v;
	return c;
}

static void test_verdict_holm(void **state)
{
	struct stats_settings s;
	struct stats_case c[7];

	(void)state;
	stats_settings_init(&s);
	c[0] = hand_case(0.04, 20, 5, VERDICT_INCONCLUSIVE);
	c[1] = hand_case(0.5, 30, 0, VERDICT_FAIL);       /* excluded */
	c[2] = hand_case(0.01, 20, 5, VERDICT_INCONCLUSIVE);
	c[3] = hand_case(0.001, 0, 0, VERDICT_NOT_TIMED); /* excluded */
	c[4] = hand_case(0.03, 5, 20, VERDICT_INCONCLUSIVE);
	c[5] = hand_case(0.01, 5, 20, VERDICT_INCONCLUSIVE);
	c[5].identical_code = true;
	c[6] = hand_case(0.001, 0, 0, VERDICT_NOT_APPLICABLE); /* excluded */
	/* m = 4 timed: 0.01 -> 0.04 (both), 0.03 -> 0.06, 0.04 -> 0.06 */
	stats_judge_run(c, 7, &s);
	assert_true(close_rel(c[2].p_holm, 0.04, 1e-15));
	assert_true(close_rel(c[5].p_holm, 0.04, 1e-15));
	assert_true(close_rel(c[4].p_holm, 0.06, 1e-15));
	assert_true(close_rel(c[0].p_holm, 0.06, 1e-15));
	assert_true(isnan(c[1].p_holm) && isnan(c[3].p_holm) && isnan(c[6].p_holm));
	assert_int_equal(c[2].verdict, VERDICT_SLOWER);
	assert_int_equal(c[5].verdict, VERDICT_IDENTICAL);
	assert_int_equal(c[4].verdict, VERDICT_INCONCLUSIVE);  /* raw p 0.03 */
	assert_int_equal(c[0].verdict, VERDICT_INCONCLUSIVE);
	assert_int_equal(c[1].verdict, VERDICT_FAIL);
	assert_int_equal(c[3].verdict, VERDICT_NOT_TIMED);
	assert_int_equal(c[6].verdict, VERDICT_NOT_APPLICABLE);
}

static void test_run_verdict(void **state)
{
	struct stats_case c[4];

	(void)state;
	for (int i = 0; i < 4; i++)
		c[i] = hand_case(1, 0, 0, VERDICT_EQUIVALENT);
	c[1].verdict = VERDICT_INCONCLUSIVE;
	c[2].verdict = VERDICT_IDENTICAL;
	c[3].verdict = VERDICT_NOT_TIMED;
	assert_int_equal(stats_run_verdict(c, 0, false, false), RUN_NEUTRAL);
	assert_int_equal(stats_run_verdict(c, 4, false, false), RUN_NEUTRAL);
	c[3].verdict = VERDICT_NOT_APPLICABLE;
	assert_int_equal(stats_run_verdict(c, 4, false, false), RUN_NEUTRAL);
	c[0].verdict = VERDICT_FASTER;
	assert_int_equal(stats_run_verdict(c, 4, false, false), RUN_IMPROVEMENT);
	c[1].verdict = VERDICT_SLOWER;
	assert_int_equal(stats_run_verdict(c, 4, false, false), RUN_REGRESSION);
	assert_int_equal(stats_run_verdict(c, 4, false, true), RUN_ERROR);
	assert_int_equal(stats_run_verdict(c, 4, true, true), RUN_FAIL);
	assert_int_equal(stats_run_verdict(c, 4, true, false), RUN_FAIL);
	assert_int_equal(stats_run_verdict(NULL, 0, true, false), RUN_FAIL);
	assert_int_equal(stats_run_verdict(NULL, 0, false, true), RUN_ERROR);
	/* an unattributed failing case fails the run; attributed to the
	 * baseline it is an error */
	c[2].verdict = VERDICT_FAIL;
	assert_int_equal(stats_run_verdict(c, 4, false, false), RUN_FAIL);
	assert_int_equal(stats_run_verdict(c, 4, false, true), RUN_ERROR);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(stats_verdict_name(VERDICT_EQUIVALENT), "equivalent");
	assert_string_equal(stats_verdict_name(VERDICT_FASTER), "faster");
	assert_string_equal(stats_verdict_name(VERDICT_SLOWER), "slower");
	assert_string_equal(stats_verdict_name(VERDICT_INCONCLUSIVE), "inconclusive");
	assert_string_equal(stats_verdict_name(VERDICT_IDENTICAL), "identical");
	assert_string_equal(stats_verdict_name(VERDICT_FAIL), "fail");
	assert_string_equal(stats_verdict_name(VERDICT_NOT_TIMED), "not_timed");
	assert_string_equal(stats_verdict_name(VERDICT_NOT_APPLICABLE), "not_applicable");
	assert_string_equal(stats_verdict_name((enum case_verdict)99), "unknown");
	assert_string_equal(stats_run_verdict_name(RUN_IMPROVEMENT), "improvement");
	assert_string_equal(stats_run_verdict_name(RUN_NEUTRAL), "neutral");
	assert_string_equal(stats_run_verdict_name(RUN_REGRESSION), "regression");
	assert_string_equal(stats_run_verdict_name(RUN_FAIL), "fail");
	assert_string_equal(stats_run_verdict_name(RUN_ERROR), "error");
	assert_string_equal(stats_run_verdict_name((enum run_verdict)99), "unknown");
	assert_string_equal(stats_verdict_name((enum case_verdict)-1), "unknown");
	assert_string_equal(stats_run_verdict_name((enum run_verdict)-1), "unknown");
}

/* The rounds test (stats.h, struct stats_case): blocks of 2 pairs, the
 * first look at 15 blocks, the cap at 60. Later rounds 1% slower than the
 * first look: the shift found, p small; the same ratio in both with noise:
 * p not small; no later blocks, or sampling off: no test. */
static void rounds_pairs(struct stats_pair *pr, int nblocks, double later)
{
	for (int b = 0; b < nblocks; b++)
		for (int j = 0; j < 2; j++) {
			/* A spread of +-0.2% that repeats every 5 blocks. */
			double noise = 1 + 0.001 * ((b * 7 + j * 3) % 5 - 2);
			double r = (b < 15 ? 1.0 : later) * noise;

			pr[2 * b + j] = pair(1000, 1000 * r, j == 1);
			pr[2 * b + j].block = b + 1;
		}
}

static void test_rounds(void **state)
{
	struct stats_pair pr[120];
	struct stats_settings s;
	struct stats_case c;

	(void)state;
	stats_settings_init(&s);
	stats_set_looks(&s, 30, 2, 120);
	rounds_pairs(pr, 60, 1.01);
	stats_case_summarise(pr, 120, &s, &c);
	assert_int_equal(c.rounds_first, 15);
	assert_int_equal(c.rounds_later, 45);
	assert_true(c.rounds_p < 1e-6);
	assert_true(close_rel(c.rounds_shift, 1.01, 2e-3));
	assert_true(close_rel(c.rounds_first_ratio, 1.0, 2e-3));
	/* stats_judge_run adjusts it (one case: unchanged) and says so. */
	stats_judge_run(&c, 1, &s);
	assert_true(c.rounds_p_holm == c.rounds_p && c.rounds_disagree);
	rounds_pairs(pr, 60, 1.0);
	stats_case_summarise(pr, 120, &s, &c);
	assert_true(c.rounds_p > 0.2);
	stats_judge_run(&c, 1, &s);
	assert_false(c.rounds_disagree);
	assert_true(close_rel(c.rounds_shift, 1.0, 2e-3));
	/* Only the first look's blocks: counted, no test. */
	stats_case_summarise(pr, 30, &s, &c);
	assert_int_equal(c.rounds_first, 15);
	assert_int_equal(c.rounds_later, 0);
	assert_true(isnan(c.rounds_p) && isnan(c.rounds_shift));
	/* Two later blocks are too few for the test. */
	stats_case_summarise(pr, 34, &s, &c);
	assert_int_equal(c.rounds_later, 2);
	assert_true(isnan(c.rounds_p));
	/* Sampling off: one look, no rounds. */
	stats_set_looks(&s, 120, 2, 120);
	stats_case_summarise(pr, 120, &s, &c);
	assert_int_equal(c.rounds_later, 0);
	assert_true(isnan(c.rounds_p));
}

static void test_order_effect(void **state)
{
	struct stats_pair pr[40];
	struct stats_settings s;
	struct stats_case c;

	(void)state;
	stats_settings_init(&s);
	/* candidate-first pairs 2% slow, baseline-first 2% fast: no net
	 * effect, a plain order effect */
	for (int i = 0; i < 40; i++) {
		double b = 1000 + i;

		pr[i] = pair(b, b * (i % 2 ? 1.02 : 0.98), i % 2);
	}
	stats_case_summarise(pr, 40, &s, &c);
	assert_int_equal(c.faster, 20);
	assert_true(c.p == 1);
	assert_true(c.order_p < 1e-6);
	assert_true(close_rel(c.order_diff, log(1.02) - log(0.98), 1e-12));
	/* only one order present: no order statistic */
	for (int i = 0; i < 40; i++)
		pr[i].candidate_first = true;
	stats_case_summarise(pr, 40, &s, &c);
	assert_true(isnan(c.order_p) && isnan(c.order_diff));
	/* Welford sd: log ratios half at mean + a, half at mean - a, where
	 * a = (log 1.02 - log 0.98) / 2; sample sd a sqrt(n / (n - 1)) */
	{
		double a = (log(1.02) - log(0.98)) / 2;

		assert_true(close_rel(c.log_ratio_sd, a * sqrt(40.0 / 39), 1e-12));
	}
}

/* ---- against scipy ---- */

static char **ref_lines;
static size_t ref_count;
static const char *ref_path;

/* Each test_ref_* test's setup: reads the lines of STATS_REF. */
static int ref_load(void **state)
{
	FILE *f;
	char *line = NULL;
	size_t cap = 0, alloc = 0;
	ssize_t len;

	(void)state;
	ref_path = getenv("STATS_REF");
	if (!ref_path || !ref_path[0]) {
		ref_path = NULL;
		return 0;
	}
	f = fopen(ref_path, "r");
	if (!f) {
		fprintf(stderr, "cannot open '%s'\n", ref_path);
		return -1;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		if (len == 0 || line[0] == '#')
			continue;
		if (ref_count == alloc) {
			alloc = alloc ? 2 * alloc : 1024;
			ref_lines = realloc(ref_lines, alloc * sizeof *ref_lines);
			if (!ref_lines)
				abort();
		}
		ref_lines[ref_count++] = strdup(line);
	}
	free(line);
	fclose(f);
	return 0;
}

static int ref_free(void **state)
{
	(void)state;
	for (size_t i = 0; i < ref_count; i++)
		free(ref_lines[i]);
	free(ref_lines);
	ref_lines = NULL;
	ref_count = 0;
	return 0;
}

/* Tokens of one reference line; a malformed line fails the test. */
struct toks {
	char *save;
	const char *line;
};

static const char *tok_next(struct toks *t)
{
	const char *s = strtok_r(NULL, " \t\n", &t->save);

	if (!s)
		fail_msg("reference line too short: %.120s", t->line);
	return s;
}

static double tok_double(struct toks *t)
{
	const char *s = tok_next(t);
	char *end;
	double v = strtod(s, &end);

	if (*end)
		fail_msg("bad number '%s' in: %.120s", s, t->line);
	return v;
}

static int tok_int(struct toks *t)
{
	return (int)tok_double(t);
}

static double *tok_doubles(struct toks *t, int n)
{
	double *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);

	for (int i = 0; i < n; i++)
		v[i] = tok_double(t);
	return v;
}

/* Calls check(line tokens) for every line of the kind; check returns false on
 * a mismatch after printing it. Fails when nothing matched the kind (a test
 * that checks nothing must not pass) or anything mismatched. */
static void ref_each(const char *kind, bool (*check)(struct toks *t))
{
	size_t seen = 0, bad = 0, klen = strlen(kind);

	if (!ref_path)
		qual_test_skip("no reference file: STATS_REF names the output of "
			       "tests/tools/stats_reference.py");
	worst_rel = 0;
	for (size_t i = 0; i < ref_count; i++) {
		char *copy;
		struct toks t;

		if (strncmp(ref_lines[i], kind, klen) || ref_lines[i][klen] != ' ')
			continue;
		copy = strdup(ref_lines[i]);
		t.line = ref_lines[i];
		strtok_r(copy, " \t\n", &t.save);  /* the kind */
		seen++;
		if (!check(&t) && ++bad <= 10)
			fprintf(stderr, "  in: %.200s\n", ref_lines[i]);
		free(copy);
	}
	fprintf(stderr, "%s: %zu checked, %zu mismatched, largest relative difference %.3g\n",
		kind, seen, bad, worst_rel);
	assert_true(seen > 0);
	assert_int_equal(bad, 0);
}

static bool report(const char *what, double got, double want, bool ok)
{
	if (!ok)
		fprintf(stderr, "%s: got %.17g want %.17g\n", what, got, want);
	return ok;
}

static bool check_sign(struct toks *t)
{
	int k = tok_int(t), n = tok_int(t);
	double want = tok_double(t), got = stats_sign_test_p(k, n);

	return report("sign", got, want, close_rel(got, want, 1e-9));
}

static bool check_cdf(struct toks *t)
{
	int k = tok_int(t), n = tok_int(t);
	double p = tok_double(t), want = tok_double(t), got = stats_binom_cdf(k, n, p);

	return report("cdf", got, want, close_rel(got, want, 1e-9));
}

static bool check_holm(struct toks *t)
{
	int m = tok_int(t);
	double *p = tok_doubles(t, m), *want = tok_doubles(t, m);
	bool ok = true;

	stats_holm(p, m);
	for (int i = 0; i < m; i++)
		ok &= report("holm", p[i], want[i], close_rel(p[i], want[i], 1e-12));
	free(p);
	free(want);
	return ok;
}

static bool check_median(struct toks *t)
{
	int n = tok_int(t);
	double *x = tok_doubles(t, n), want = tok_double(t), got = stats_median(x, n);

	free(x);
	return report("median", got, want, same(got, want));
}

static bool check_cirank(struct toks *t)
{
	int n = tok_int(t);
	double conf = tok_double(t);
	int want_k = tok_int(t);
	double want_cov = tok_double(t), cov;
	int k = stats_median_ci_rank(n, conf, &cov);

	return report("cirank k", k, want_k, k == want_k) &&
	       report("cirank coverage", cov, want_cov, close_rel(cov, want_cov, 1e-12));
}

static bool check_ci(struct toks *t)
{
	int n = tok_int(t);
	double conf = tok_double(t), want_lo = tok_double(t), want_hi = tok_double(t);
	double *x = tok_doubles(t, n), lo, hi;

	stats_median_ci(x, n, conf, &lo, &hi);
	free(x);
	return report("ci lo", lo, want_lo, same(lo, want_lo)) &&
	       report("ci hi", hi, want_hi, same(hi, want_hi));
}

static bool check_wilcoxon(struct toks *t)
{
	int n = tok_int(t);
	double *d = tok_doubles(t, n), want = tok_double(t), got = stats_wilcoxon_p(d, n);

	free(d);
	return report("wilcoxon", got, want, close_rel(got, want, 1e-9));
}

static bool check_mwu(struct toks *t)
{
	int nx = tok_int(t), ny = tok_int(t);
	double *x = tok_doubles(t, nx), *y = tok_doubles(t, ny), want = tok_double(t);
	double got = stats_mann_whitney_p(x, nx, y, ny);

	free(x);
	free(y);
	return report("mwu", got, want, close_rel(got, want, 1e-9));
}

static bool check_hl(struct toks *t)
{
	int n = tok_int(t);
	double *d = tok_doubles(t, n), want = tok_double(t), got = stats_hodges_lehmann(d, n);

	free(d);
	return report("hl", got, want, same(got, want));
}

static bool check_mde(struct toks *t)
{
	int n = tok_int(t);
	double sd = tok_double(t), alpha = tok_double(t), power = tok_double(t);
	double want = tok_double(t), got = stats_sign_test_mde(n, sd, alpha, power);

	if (isinf(want))
		return report("mde", got, want, got == want);
	return report("mde log", log(got), log(want), close_rel(log(got), log(want), 1e-9));
}

static bool check_int(const char *what, int got, struct toks *t)
{
	int want = tok_int(t);

	return report(what, got, want, got == want);
}

static bool check_case(struct toks *t)
{
	int n = tok_int(t);
	struct stats_pair *pr = calloc((size_t)(n > 0 ? n : 1), sizeof *pr);
	struct stats_settings s;
	struct stats_case c;
	double w;
	bool ok = true;

	for (int i = 0; i < n; i++) {
		pr[i].baseline_ns = tok_double(t);
		pr[i].candidate_ns = tok_double(t);
		pr[i].candidate_first = tok_int(t) != 0;
		pr[i].block = tok_int(t);
	}
	stats_settings_init(&s);  /* conf 0.95, as the reference */
	stats_case_summarise(pr, n, &s, &c);
	free(pr);
	ok &= check_int("case n", c.n, t);
	ok &= check_int("case invalid", c.invalid, t);
	ok &= check_int("case faster", c.faster, t);
	ok &= check_int("case slower", c.slower, t);
	ok &= check_int("case ties", c.ties, t);
	w = tok_double(t);
	ok &= report("case pair_p", c.pair_p, w, close_rel(c.pair_p, w, 1e-9));
	ok &= check_int("case units", c.units, t);
	ok &= check_int("case unit_faster", c.unit_faster, t);
	ok &= check_int("case unit_slower", c.unit_slower, t);
	ok &= check_int("case unit_ties", c.unit_ties, t);
	w = tok_double(t);
	ok &= report("case p", c.p, w, close_rel(c.p, w, 1e-9));
	w = tok_double(t);
	ok &= report("case ratio_median", c.ratio_median, w, same(c.ratio_median, w));
	w = tok_double(t);
	ok &= report("case ratio_lo", c.ratio_lo, w, same(c.ratio_lo, w));
	w = tok_double(t);
	ok &= report("case ratio_hi", c.ratio_hi, w, same(c.ratio_hi, w));
	w = tok_double(t);
	ok &= report("case coverage", c.ratio_coverage, w, close_rel(c.ratio_coverage, w, 1e-12));
	w = tok_double(t);
	ok &= report("case wilcoxon_p", c.wilcoxon_p, w, close_rel(c.wilcoxon_p, w, 1e-9));
	w = tok_double(t);
	ok &= report("case hl", c.hl_log_ratio, w, same(c.hl_log_ratio, w));
	w = tok_double(t);
	ok &= report("case sd", c.log_ratio_sd, w, close_rel(c.log_ratio_sd, w, 1e-12));
	w = tok_double(t);
	ok &= report("case unit sd", c.unit_log_ratio_sd, w,
		     close_rel(c.unit_log_ratio_sd, w, 1e-12));
	w = tok_double(t);
	ok &= report("case order_p", c.order_p, w, close_rel(c.order_p, w, 1e-9));
	w = tok_double(t);
	ok &= report("case order_diff", c.order_diff, w, same(c.order_diff, w));
	return ok;
}


static bool check_betainc(struct toks *t)
{
	double a = tok_double(t), b = tok_double(t), x = tok_double(t);
	double want = tok_double(t), got = stats_beta_inc(a, b, x);

	return report("betainc", got, want, close_rel(got, want, 1e-10));
}

static bool check_fsf(struct toks *t)
{
	double f = tok_double(t), d1 = tok_double(t), d2 = tok_double(t);
	double want = tok_double(t), got = stats_f_sf(f, d1, d2);

	return report("fsf", got, want, close_rel(got, want, 1e-10));
}

static bool check_layout(struct toks *t)
{
	int n = tok_int(t);
	struct stats_pair *pairs = calloc((size_t)(n > 0 ? n : 1), sizeof *pairs);
	struct stats_layout l;
	double w;
	bool ok = true;

	for (int i = 0; i < n; i++) {
		pairs[i].baseline_ns = tok_double(t);
		pairs[i].candidate_ns = tok_double(t);
		pairs[i].candidate_first = tok_int(t) != 0;
		pairs[i].block = tok_int(t);
	}
	stats_layout_test(pairs, n, &l);
	ok &= report("layout blocks", l.blocks, tok_int(t), true);
	w = tok_double(t);
	ok &= report("layout between", l.between_sd, w, close_rel(l.between_sd, w, 1e-12));
	w = tok_double(t);
	ok &= report("layout within", l.within_sd, w, close_rel(l.within_sd, w, 1e-12));
	w = tok_double(t);
	ok &= report("layout f", l.f, w, close_rel(l.f, w, 1e-12));
	w = tok_double(t);
	ok &= report("layout p", l.p, w, close_rel(l.p, w, 1e-10));
	free(pairs);
	return ok;
}

/* A normal deviate from a xorshift stream (Box-Muller), for simulations. */
static double sim_normal(uint64_t *s)
{
	double u[2];

	for (int k = 0; k < 2; k++) {
		*s ^= *s << 13;
		*s ^= *s >> 7;
		*s ^= *s << 17;
		u[k] = ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
	}
	return sqrt(-2 * log(u[0])) * cos(2 * M_PI * u[1]);
}

/* The layout p of one simulated case: blocks of two pairs of opposite
 * order, noise sd, order effect order, placement effect sd psd; with
 * outliers, one pair in 20 is slower by 10 sd more (a slow replay). */
static double sim_layout_p(uint64_t *s, int blocks, double sd, double order, double psd,
			   bool outliers)
{
	struct stats_pair pairs[400];
	struct stats_layout l;

	for (int b = 0; b < blocks; b++) {
		double place = psd * sim_normal(s);
		for (int j = 0; j < 2; j++) {
			bool cf = (j + b) % 2 == 1;
			double lr = 0.001 + place + sd * sim_normal(s) + (cf ? order : -order) / 2;
			if (outliers && (*s >> 20) % 20 == 0)
				lr += 10 * sd;
			pairs[2 * b + j] = (struct stats_pair){ 1000, 1000 * exp(lr), cf, b + 1 };
		}
	}
	stats_layout_test(pairs, 2 * blocks, &l);
	return l.p;
}

/* With no placement effect the p is uniform, whatever the order effect
 * (an order effect 10x the noise, as the H200 shows, must not leak into
 * the between-block spread): each decile of 4000 simulated p holds close
 * to a tenth of them (binomial sd 19; the bounds are 5 sd). A planted
 * placement effect twice the noise is found in nearly every case. One
 * replay in 20 slowed by 10 sd does not raise the false calls above 6%. */
static void test_layout_null_uniform(void **state)
{
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	int bins[10] = {0}, below = 0, found = 0;

	(void)state;
	for (int i = 0; i < 4000; i++) {
		double p = sim_layout_p(&s, 15, 0.002, i % 2 ? 0.02 : 0, 0, false);
		assert_true(p >= 0 && p <= 1);
		bins[p >= 1 ? 9 : (int)(p * 10)]++;
		below += p < 0.05;
	}
	for (int k = 0; k < 10; k++) {
		fprintf(stderr, "layout null: decile %d holds %d of 4000\n", k, bins[k]);
		assert_in_range(bins[k], 305, 495);
	}
	fprintf(stderr, "layout null: %d of 4000 below 0.05\n", below);
	assert_in_range(below, 150, 250);
	for (int i = 0; i < 200; i++)
		found += sim_layout_p(&s, 15, 0.002, 0.02, 0.004, false) < 0.05;
	fprintf(stderr, "layout planted (placement sd = 2 x noise sd): %d of 200 at p < 0.05\n",
		found);
	assert_true(found >= 190);
	/* Slow replays do not make false calls: they add alike to both
	 * spreads (stats/layout.h). */
	below = 0;
	for (int i = 0; i < 2000; i++)
		below += sim_layout_p(&s, 15, 0.002, 0.02, 0, true) < 0.05;
	fprintf(stderr, "layout null with outliers: %d of 2000 below 0.05\n", below);
	assert_true(below <= 120);
}

static void test_layout_edges(void **state)
{
	struct stats_pair one[2] = { { 1000, 1001, true, 1 }, { 1000, 1002, false, 1 } };
	struct stats_pair flat[4] = { { 1000, 1001, true, 1 }, { 1000, 1002, false, 1 },
				      { 1000, 1001, false, 2 }, { 1000, 1002, true, 2 } };
	struct stats_pair same_order[4] = { { 1000, 1001, true, 1 }, { 1000, 1002, true, 1 },
					    { 1000, 1001, true, 2 }, { 1000, 1002, true, 2 } };
	struct stats_layout l;

	(void)state;
	stats_layout_test(one, 2, &l);
	assert_int_equal(l.blocks, 1);
	assert_true(isnan(l.p) && isnan(l.between_sd) && isnan(l.p_holm) && !l.sensitive);
	/* Blocks that differ only by the order effect: no placement effect. */
	stats_layout_test(flat, 4, &l);
	assert_int_equal(l.blocks, 2);
	assert_true(l.p == 1 || l.p > 0.5);
	/* No pair of each order: no block to use. */
	stats_layout_test(same_order, 4, &l);
	assert_int_equal(l.blocks, 0);
	assert_true(isnan(l.p));
	assert_true(stats_f_sf(0, 3, 3) == 1 && stats_f_sf(INFINITY, 3, 3) == 0);
	assert_true(isnan(stats_f_sf(NAN, 3, 3)) && isnan(stats_f_sf(1, 0, 3)));
	assert_true(isnan(stats_beta_inc(1, 1, 1.5)) && stats_beta_inc(2, 3, 0) == 0);
	assert_true(close_rel(stats_beta_inc(1, 1, 0.3), 0.3, 1e-14));
}

static void test_ref_sign(void **state) { (void)state; ref_each("sign", check_sign); }
static void test_ref_cdf(void **state) { (void)state; ref_each("cdf", check_cdf); }
static void test_ref_holm(void **state) { (void)state; ref_each("holm", check_holm); }
static void test_ref_median(void **state) { (void)state; ref_each("median", check_median); }
static void test_ref_cirank(void **state) { (void)state; ref_each("cirank", check_cirank); }
static void test_ref_ci(void **state) { (void)state; ref_each("ci", check_ci); }
static void test_ref_wilcoxon(void **state) { (void)state; ref_each("wilcoxon", check_wilcoxon); }
static void test_ref_mwu(void **state) { (void)state; ref_each("mwu", check_mwu); }
static void test_ref_hl(void **state) { (void)state; ref_each("hl", check_hl); }
static void test_ref_mde(void **state) { (void)state; ref_each("mde", check_mde); }
static void test_ref_case(void **state) { (void)state; ref_each("case", check_case); }
static void test_ref_betainc(void **state) { (void)state; ref_each("betainc", check_betainc); }
static void test_ref_fsf(void **state) { (void)state; ref_each("fsf", check_fsf); }
static void test_ref_layout(void **state) { (void)state; ref_each("layout", check_layout); }

#define REF(name) cmocka_unit_test_setup_teardown(test_##name, ref_load, ref_free)


/* ---- sequential sampling ---- */

static void test_looks(void **state)
{
	struct stats_settings s;
	int at[STATS_MAX_LOOKS], k;
	double w[STATS_MAX_LOOKS];

	(void)state;
	stats_settings_init(&s);
	k = stats_looks(&s, at, w);
	assert_int_equal(k, 1);
	assert_int_equal(at[0], 0);
	assert_true(w[0] == 1);
	s.first_look = 15;
	s.last_look = 15;   /* the cap at the minimum: no sampling */
	assert_int_equal(stats_looks(&s, at, w), 1);
	s.last_look = 120;
	k = stats_looks(&s, at, w);
	assert_int_equal(k, 4);
	assert_int_equal(at[0], 15);
	assert_int_equal(at[1], 30);
	assert_int_equal(at[2], 60);
	assert_int_equal(at[3], 120);
	assert_true(w[0] == 0.5);
	assert_true(close_rel(w[1] + w[2] + w[3], 0.5, 1e-15));
	assert_true(w[1] == w[3]);
	s.last_look = 100;  /* a cap between doublings is the last look */
	k = stats_looks(&s, at, w);
	assert_int_equal(k, 4);
	assert_int_equal(at[3], 100);
	s.last_look = 16;
	k = stats_looks(&s, at, w);
	assert_int_equal(k, 2);
	assert_true(w[0] == 0.5 && w[1] == 0.5);
	/* Growing by 4: 15, 60, 240, then the cap. */
	s.first_look = 15;
	s.last_look = 960;
	s.look_growth = 4;
	k = stats_looks(&s, at, w);
	assert_int_equal(k, 4);
	assert_int_equal(at[1], 60);
	assert_int_equal(at[2], 240);
	assert_int_equal(at[3], 960);
	assert_true(w[1] == w[3] && close_rel(w[1] * 3, 0.5, 1e-15));
	s.look_growth = 2;
	s.first_look = 1;
	s.last_look = 1 << 30;  /* capped in number */
	assert_int_equal(stats_looks(&s, at, w), STATS_MAX_LOOKS);
	assert_int_equal(at[STATS_MAX_LOOKS - 1], 1 << 30);
}

/* n blocks of one pair each, the candidate's log ratio drawn from a fixed
 * sequence around log(1 + shift). */
static void blocks_of(struct stats_pair *pr, int n, double shift)
{
	for (int i = 0; i < n; i++) {
		double x = log(1 + shift) + 0.004 * sin(1.7 * i + 0.3) + 0.001 * ((i * 7) % 5 - 2);

		pr[i] = (struct stats_pair){ .baseline_ns = 1000, .candidate_ns = 1000 * exp(x),
					     .candidate_first = i % 2, .block = i + 1 };
	}
}

/* With one planned look (the fixed-sample rule), the test and the interval
 * are the fixed-sample ones: the sign test over the blocks, the interval at
 * conf. */
static void test_sequential_one_look(void **state)
{
	struct stats_pair pr[30];
	double r[30], lo, hi, cov;
	struct stats_settings s;
	struct stats_case c;

	(void)state;
	blocks_of(pr, 30, 0.001);
	for (int i = 0; i < 30; i++)
		r[i] = pr[i].candidate_ns / pr[i].baseline_ns;
	stats_settings_init(&s);
	stats_case_summarise(pr, 30, &s, &c);
	stats_median_ci(r, 30, 0.95, &lo, &hi);
	stats_median_ci_rank(30, 0.95, &cov);
	assert_int_equal(c.looks, 1);
	assert_true(c.p == stats_sign_test_p(c.unit_faster, c.unit_faster + c.unit_slower));
	assert_true(c.look_p == c.p);
	assert_true(c.ratio_lo == lo && c.ratio_hi == hi && c.ratio_coverage == cov);
}

/* Over two looks (15 and 30 blocks of the plan 15, 30, 60, 120): p is the
 * smaller of p1 / (1/2) and p2 / (1/6); the interval the intersection of
 * look 1's at 1 - 0.05/2 and look 2's at 1 - 0.05/6; the coverage bound 1
 * minus the misses of every planned look, those not taken (60 and 120
 * blocks) at their planned blocks: whichever looks a case stops at, the
 * guarantee is the union bound over all (at least conf, and not more than
 * a little above it). */
static void test_sequential_two_looks(void **state)
{
	struct stats_pair pr[30];
	double r[30], lo1, hi1, lo2, hi2, cov1, cov2, cov3, cov4, p1, p2;
	struct stats_settings s;
	struct stats_case c;
	int f1 = 0, s1 = 0, f2 = 0, s2 = 0;

	(void)state;
	blocks_of(pr, 30, 0.002);
	for (int i = 0; i < 30; i++) {
		r[i] = pr[i].candidate_ns / pr[i].baseline_ns;
		f2 += r[i] < 1;
		s2 += r[i] > 1;
		if (i < 15) {
			f1 += r[i] < 1;
			s1 += r[i] > 1;
		}
	}
	stats_settings_init(&s);
	s.first_look = 15;
	s.last_look = 120;
	stats_case_summarise(pr, 30, &s, &c);
	p1 = fmin(1, stats_sign_test_p(f1, f1 + s1) / 0.5);
	p2 = fmin(1, stats_sign_test_p(f2, f2 + s2) / (0.5 / 3));
	stats_median_ci(r, 15, 1 - 0.05 * 0.5, &lo1, &hi1);
	stats_median_ci(r, 30, 1 - 0.05 * 0.5 / 3, &lo2, &hi2);
	stats_median_ci_rank(15, 1 - 0.05 * 0.5, &cov1);
	stats_median_ci_rank(30, 1 - 0.05 * 0.5 / 3, &cov2);
	assert_int_equal(c.looks, 2);
	assert_true(close_rel(c.p, fmin(p1, p2), 1e-12));
	assert_true(close_rel(c.look_p, stats_sign_test_p(f2, f2 + s2), 1e-12));
	assert_true(c.ratio_lo == fmax(lo1, lo2));
	assert_true(c.ratio_hi == fmin(hi1, hi2));
	stats_median_ci_rank(60, 1 - 0.05 * 0.5 / 3, &cov3);
	stats_median_ci_rank(120, 1 - 0.05 * 0.5 / 3, &cov4);
	assert_true(close_rel(c.ratio_coverage, 1 - (1 - cov1) - (1 - cov2) - (1 - cov3) -
			      (1 - cov4), 1e-12));
	assert_true(c.ratio_coverage >= 0.95 && c.ratio_coverage < 0.98);
	/* Only the first look's blocks: one look taken, at its weight; the
	 * coverage the same bound over the four planned looks. */
	stats_case_summarise(pr, 15, &s, &c);
	assert_int_equal(c.looks, 1);
	assert_true(close_rel(c.p, p1, 1e-12));
	assert_true(c.ratio_lo == lo1 && c.ratio_hi == hi1);
	stats_median_ci_rank(30, 1 - 0.05 * 0.5 / 3, &cov2);
	assert_true(close_rel(c.ratio_coverage, 1 - (1 - cov1) - (1 - cov2) - (1 - cov3) -
			      (1 - cov4), 1e-12));
	assert_true(c.ratio_coverage < cov1);
}

/* Decided: equivalent (and within_margin when the interval excludes 1),
 * slower beyond the margin, identical, untimed; undecided: significant
 * but not beyond, or nothing. */
static void test_decided(void **state)
{
	struct stats_pair pr[4][120];
	struct stats_settings s;
	struct stats_case c[4];

	(void)state;
	stats_settings_init(&s);
	s.first_look = 15;
	s.last_look = 120;
	blocks_of(pr[0], 15, 0.003);  /* 1.003 +- 0.5%: inside 1 +- 1% */
	blocks_of(pr[1], 15, 0.05);   /* far beyond 1.01 */
	blocks_of(pr[2], 15, 0.012);  /* significant, straddles 1.01 */
	blocks_of(pr[3], 15, 0.0);
	for (int i = 0; i < 4; i++)
		stats_case_summarise(pr[i], 15, &s, &c[i]);
	c[3].identical_code = true;
	stats_judge_run(c, 4, &s);
	assert_int_equal(c[0].verdict, VERDICT_EQUIVALENT);
	assert_true(c[0].decided && !c[0].beyond_margin);
	assert_int_equal(c[0].within_margin, c[0].ratio_lo > 1 ? 1 : 0);
	assert_int_equal(c[1].verdict, VERDICT_SLOWER);
	assert_true(c[1].decided && c[1].beyond_margin);
	assert_true(c[2].ratio_lo < 1.01 && c[2].ratio_hi > 1.01);
	assert_false(c[2].decided);
	assert_int_equal(c[3].verdict, VERDICT_IDENTICAL);
	assert_true(c[3].decided);
	assert_int_equal(c[3].timing_verdict, VERDICT_EQUIVALENT);
	/* Identical code sampled by its timing: the straddling case's
	 * timing, with identical code, is undecided and (under undecided =
	 * regression) still no regression; its timing verdict is slower. */
	c[2].identical_code = true;
	s.sample_identical = true;
	s.undecided = UNDECIDED_REGRESSION;
	stats_judge_run(c, 4, &s);
	assert_int_equal(c[2].verdict, VERDICT_IDENTICAL);
	assert_int_equal(c[2].timing_verdict, VERDICT_SLOWER);
	assert_false(c[2].decided);
	assert_false(stats_gate_regression(&c[2], &s));
	assert_true(c[3].decided);
	s.sample_identical = false;
	stats_judge_run(c, 4, &s);
	assert_true(c[2].decided);
	c[2].identical_code = false;
	s.undecided = UNDECIDED_PASS;
	/* An interval above 1 inside the band: within_margin slower. */
	blocks_of(pr[0], 120, 0.006);
	stats_case_summarise(pr[0], 120, &s, &c[0]);
	stats_judge_run(c, 1, &s);
	assert_true(c[0].ratio_lo > 1 && c[0].ratio_hi < 1.01);
	assert_int_equal(c[0].verdict, VERDICT_EQUIVALENT);
	assert_int_equal(c[0].within_margin, 1);
	c[0].verdict = VERDICT_NOT_TIMED;
	stats_judge_run(c, 1, &s);
	assert_true(c[0].decided);
}

/* The gate: which judged cases make a regression or an improvement. */
static void test_gate(void **state)
{
	struct stats_settings s;
	struct stats_case c[2];

	(void)state;
	stats_settings_init(&s);
	assert_int_equal(s.gate_slower, GATE_BEYOND);
	assert_int_equal(s.gate_faster, GATE_BEYOND);
	assert_int_equal(s.undecided, UNDECIDED_PASS);
	c[0] = hand_case(1, 0, 0, VERDICT_SLOWER);
	c[1] = hand_case(1, 0, 0, VERDICT_EQUIVALENT);
	c[0].beyond_margin = false;
	c[0].decided = false;
	c[1].decided = true;
	/* Slower, not beyond: passes under beyond, a regression under
	 * significant; undecided: a regression under undecided=regression. */
	assert_int_equal(stats_run_verdict_gate(c, 2, &s, false, false), RUN_NEUTRAL);
	assert_false(stats_gate_regression(&c[0], &s));
	s.gate_slower = GATE_SIGNIFICANT;
	assert_int_equal(stats_run_verdict_gate(c, 2, &s, false, false), RUN_REGRESSION);
	s.gate_slower = GATE_BEYOND;
	s.undecided = UNDECIDED_REGRESSION;
	assert_int_equal(stats_run_verdict_gate(c, 2, &s, false, false), RUN_REGRESSION);
	/* ... unless its interval rules out a slowdown beyond the margin. */
	c[0].ratio_lo = 0.98;
	c[0].ratio_hi = 1.005;
	assert_int_equal(stats_run_verdict_gate(c, 2, &s, false, false), RUN_NEUTRAL);
	c[0].ratio_lo = 1.02;
	c[0].ratio_hi = 1.05;
	s.undecided = UNDECIDED_PASS;
	c[0].beyond_margin = c[0].decided = true;
	assert_int_equal(stats_run_verdict_gate(c, 2, &s, false, false), RUN_REGRESSION);
	/* Faster beyond: an improvement; not beyond: only under significant. */
	c[0].verdict = VERDICT_FASTER;
	assert_int_equal(stats_run_verdict_gate(c, 2, &s, false, false), RUN_IMPROVEMENT);
	c[0].beyond_margin = false;
	assert_int_equal(stats_run_verdict_gate(c, 2, &s, false, false), RUN_NEUTRAL);
	s.gate_faster = GATE_SIGNIFICANT;
	assert_int_equal(stats_run_verdict_gate(c, 2, &s, false, false), RUN_IMPROVEMENT);
	/* An undecided untimed case is no regression; failures still rule. */
	s.undecided = UNDECIDED_REGRESSION;
	c[0].verdict = VERDICT_NOT_TIMED;
	c[0].decided = false;
	assert_int_equal(stats_run_verdict_gate(c, 2, &s, false, false), RUN_NEUTRAL);
	assert_int_equal(stats_run_verdict_gate(c, 2, &s, true, false), RUN_FAIL);
	/* The words. */
	{
		enum gate_rule g;
		enum gate_undecided u;

		assert_int_equal(gate_rule_parse("significant", &g), 0);
		assert_int_equal(g, GATE_SIGNIFICANT);
		assert_int_equal(gate_rule_parse("Beyond", &g), -1);
		assert_int_equal(gate_undecided_parse("regression", &u), 0);
		assert_int_equal(u, UNDECIDED_REGRESSION);
		assert_int_equal(gate_undecided_parse(NULL, &u), -1);
		assert_string_equal(gate_rule_name(GATE_BEYOND), "beyond");
		assert_string_equal(gate_undecided_name(UNDECIDED_PASS), "pass");
	}
}

QUAL_TESTS(
	cmocka_unit_test(test_sign_edges),
	cmocka_unit_test(test_holm_edges),
	cmocka_unit_test(test_median_edges),
	cmocka_unit_test(test_rank_tests_edges),
	cmocka_unit_test(test_mde_edges),
	cmocka_unit_test(test_case_empty),
	cmocka_unit_test(test_case_all_ties),
	cmocka_unit_test(test_case_invalid_timings),
	cmocka_unit_test(test_verdict_identical),
	cmocka_unit_test(test_verdict_equivalence_beats_significance),
	cmocka_unit_test(test_verdict_nan_interval),
	cmocka_unit_test(test_verdict_holm),
	cmocka_unit_test(test_run_verdict),
	cmocka_unit_test(test_looks),
	cmocka_unit_test(test_sequential_one_look),
	cmocka_unit_test(test_sequential_two_looks),
	cmocka_unit_test(test_decided),
	cmocka_unit_test(test_gate),
	cmocka_unit_test(test_names),
	cmocka_unit_test(test_order_effect),
	cmocka_unit_test(test_rounds),
	REF(ref_sign),
	REF(ref_cdf),
	REF(ref_holm),
	REF(ref_median),
	REF(ref_cirank),
	REF(ref_ci),
	REF(ref_wilcoxon),
	REF(ref_mwu),
	REF(ref_hl),
	REF(ref_mde),
	REF(ref_case),
	REF(ref_betainc),
	REF(ref_fsf),
	REF(ref_layout),
	cmocka_unit_test(test_layout_null_uniform),
	cmocka_unit_test(test_layout_edges),
)
