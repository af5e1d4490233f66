/* Paired-comparison statistics for qual: exact sign test, Holm correction,
 * distribution-free confidence interval of the median ratio, Wilcoxon
 * signed-rank test and Hodges-Lehmann estimate, order effect, and the
 * per-case and per-run verdicts built from them. No GPU, no I/O; links only
 * libm and the gate's words (common/gate.h).
 *
 * Conventions: functions that take a sample skip its non-finite entries (NaN,
 * +-Inf) as if they were absent; a statistic that cannot be computed (empty
 * sample, too few values) is NaN unless its comment says otherwise. Scratch
 * memory comes from malloc; if that fails the process aborts (the programs'
 * policy for allocation failure: there is no error path to report it on, and a
 * silently wrong verdict would be worse).
 *
 * Each test's behaviour is pinned to scipy 1.10 (Debian 12's python3-scipy),
 * whose output the unit tests compare against; the matching scipy call is
 * named in each comment. */
#ifndef QUAL_STATS_H
#define QUAL_STATS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/gate.h"
#include "proto/vocab.h"

/* Exact two-sided sign test: the probability, under Binomial(n, 1/2), of a
 * split at least as uneven as k of n, min(1, 2 P(X <= min(k, n - k))).
 * Equals scipy.stats.binomtest(k, n, 0.5).pvalue. Returns 1 when n == 0 and
 * NaN when k is outside [0, n]. Computed in double without overflow for any n
 * (Loader's saddle-point binomial term, then a recurrence over the tail);
 * tails below about 1e-308 underflow to 0. */
double stats_sign_test_p(int k, int n);

/* P(X <= k) for X ~ Binomial(n, p), 0 <= p <= 1: 0 when k < 0, 1 when
 * k >= n, NaN for a p outside [0, 1]. Relative accuracy about 1e-13 in the
 * tail that is summed (the smaller side of the mean). */
double stats_binom_cdf(int k, int n, double p);

/* Holm step-down adjustment of m p-values, in place, order preserved:
 * p_(i) (i-th smallest, 1-based) becomes max over j <= i of
 * min(1, (m' - j + 1) p_(j)), where m' counts the non-NaN entries. NaN entries
 * are skipped (left NaN) and not counted. */
void stats_holm(double *p, int m);

/* Sample sd (n - 1) of x[0..n) by Welford's running update (all values
 * taken, finite or not); NaN below 2. */
double stats_sample_sd(const double *x, int n);

/* Sample median of the finite values among x[0..n) (copies; input untouched):
 * the middle value, or the mean of the two middle values. NaN when there are
 * none. */
double stats_median(const double *x, int n);

/* Rank k (1-based) of the distribution-free confidence interval of the median
 * of n values: the narrowest symmetric pair of order statistics
 * (x(k), x(n + 1 - k)) whose coverage, P(k <= B <= n - k) for
 * B ~ Binomial(n, 1/2), is at least conf. Stores that exact coverage in
 * *coverage (may be NULL). Returns 0, with coverage NaN, when no pair reaches
 * conf (n too small: n = 5 reaches at most 0.9375, n = 6 0.96875) or conf is
 * outside (0, 1). */
int stats_median_ci_rank(int n, double conf, double *coverage);

/* Distribution-free confidence interval for the median of the finite values
 * among x[0..n): (x(k), x(n + 1 - k)) of the sorted sample with k from
 * stats_median_ci_rank. lo/hi are NaN when n is too small for conf. */
void stats_median_ci(const double *x, int n, double conf, double *lo, double *hi);

/* Wilcoxon signed-rank test on the finite d[0..n), two-sided, zeros dropped
 * first (zero_method 'wilcox'). With m nonzero values left: the exact null
 * distribution when m <= 50 and no two |d| are equal; otherwise the normal
 * approximation with the tie correction of the variance and a continuity
 * correction of 0.5 toward the mean. Equals
 * scipy.stats.wilcoxon(d[d != 0], method='exact' or 'approx',
 * correction=True).pvalue with the method chosen by that rule. Returns 1 when
 * no nonzero d. */
double stats_wilcoxon_p(const double *d, int n);

/* Hodges-Lehmann estimate: the median of the Walsh averages (d_i + d_j) / 2,
 * i <= j, of the finite d (as numpy's median of those averages would give it,
 * bit for bit). O(n) memory: selection by bisection over the doubles, not by
 * listing the n(n+1)/2 averages. NaN when there are no finite d. */
double stats_hodges_lehmann(const double *d, int n);

/* Mann-Whitney U test, two-sided, of the finite x[0..nx) against the finite
 * y[0..ny). Exact null distribution of U when there are no ties in the pooled
 * sample and both sizes are <= 50; otherwise the normal approximation with the
 * tie correction and the continuity correction. Equals
 * scipy.stats.mannwhitneyu(x, y, use_continuity=True,
 * method='exact' or 'asymptotic').pvalue with the method chosen by that rule.
 * NaN when either sample is empty. */
double stats_mann_whitney_p(const double *x, int nx, const double *y, int ny);

/* Smallest slowdown, as a ratio (> 1, e.g. 1.004), that the n-pair two-sided
 * exact sign test at level alpha (reject when p < alpha) detects with
 * probability >= power when the per-pair log ratios are
 * Normal(log(effect), sd^2): exact binomial power, the shift solved by
 * bisection. By symmetry the same ratio's inverse is the smallest speed-up.
 * INFINITY when no split of n pairs reaches p < alpha (n < 6 at alpha 0.05);
 * 1 when sd == 0 (every pair shows any effect); NaN for bad arguments. */
double stats_sign_test_mde(int n, double sd, double alpha, double power);

struct stats_pair {
	double baseline_ns;
	double candidate_ns;
	bool candidate_first;
	/* The load both arms' code was timed in (block > 0), or 0: a unit of
	 * its own. The pairs of one block share whatever a load fixes for its
	 * length (where the code and the buffers lie, the graphs), so they are
	 * not independent of each other; the blocks are (docs/verdicts.md). */
	int block;
};

/* A case's verdict is the shared vocabulary's (proto/vocab.h: enum
 * case_verdict, VERDICT_EQUIVALENT, ...): its word, "unknown" for a value
 * outside the enum. */
const char *stats_verdict_name(enum case_verdict v);

struct stats_settings {
	double alpha;   /* default 0.05 */
	double margin;  /* default 0.01: equivalence band 1 +/- margin */
	double conf;    /* confidence of the ratio interval; default 0.95 */
	/* The planned looks of sequential sampling, in units (blocks): the
	 * first after first_look blocks, then at look_growth times as many
	 * each time (2, 4, 8 ... x first_look by default), the last at
	 * last_look (the cap).
	 * first_look 0, or last_look <= first_look: one look over every unit
	 * (the fixed-sample rule; the default). stats_looks() says which. */
	int first_look;
	int last_look;
	/* Each planned look after the first at look_growth times the blocks
	 * of the one before, STATS_LOOK_GROWTH_MIN to STATS_LOOK_GROWTH_MAX
	 * (default STATS_LOOK_GROWTH_UNSTATED). */
	int look_growth;
	/* The gate (common/gate.h). */
	enum gate_rule gate_slower;    /* default GATE_BEYOND */
	enum gate_rule gate_faster;    /* default GATE_BEYOND */
	enum gate_undecided undecided; /* default UNDECIDED_PASS */
	/* Identical code is sampled and decided by its timing like any other
	 * case (its verdict still says identical): for A/A measurement of the
	 * rule itself (qual-run --sample-identical, calibrations). Default
	 * false: identical code is decided at once. */
	bool sample_identical;
};
void stats_settings_init(struct stats_settings *s);

/* The planned looks of a run of pairs pairs (the first look) in blocks of
 * per, sampled up to max_pairs pairs: first_look and last_look in blocks
 * (each rounded up; equal ones make one look, the fixed-sample rule), or
 * both 0 (one look too) when max_pairs is below pairs or a count is not
 * positive. The one rule qual-run and the judge of stored lines share. */
void stats_set_looks(struct stats_settings *s, int pairs, int per, int max_pairs);

#define STATS_LOOK_GROWTH_MIN 2
#define STATS_LOOK_GROWTH_MAX 16
/* The growth of the looks of a line that does not say (every line written
 * before look_growth existed, and qual-run's default): doubling. Fixed for
 * good, since stored lines are judged by it. */
#define STATS_LOOK_GROWTH_UNSTATED 2

/* The most planned looks: first_look x 2^(STATS_MAX_LOOKS - 2) is the last
 * one planned by doubling, which is far beyond any cap a run can afford. */
#define STATS_MAX_LOOKS 24

/* The planned looks of s: their unit counts into at[] (ascending, the last
 * at s->last_look) and their weights into w[] (summing to 1), at most
 * STATS_MAX_LOOKS of each; returns their number (1 for the fixed-sample rule,
 * with at[0] = 0 meaning "every unit" and w[0] = 1). The first look has half
 * the weight, the later ones share the other half equally
 * (docs/verdicts.md, "Sampling until decided", says why). */
int stats_looks(const struct stats_settings *s, int at[STATS_MAX_LOOKS],
		double w[STATS_MAX_LOOKS]);

/* A case's units are its blocks: the valid pairs that share a block > 0
 * form one unit, whose log ratio is the median of theirs and whose ratio is
 * exp of that; a valid pair with block 0 is a unit of its own (its ratio and
 * its sign exactly the pair's). Counts and the order effect are over pairs;
 * the test, the interval and the estimates over units. */
struct stats_case {
	int n;                 /* valid pairs used (faster + slower + ties) */
	int invalid;           /* pairs excluded: a timing NaN, Inf or <= 0 */
	int faster, slower, ties; /* pairs: candidate faster / slower / equal */
	double pair_p;         /* sign test on the pairs, for information */
	int units;             /* blocks (and lone pairs) with a valid pair */
	int unit_faster, unit_slower, unit_ties; /* by the unit's log ratio */
	double p;              /* sign test on (unit_faster, unit_slower) */
	double p_holm;         /* filled by stats_judge_run */
	double ratio_median;   /* median of the units' candidate / baseline */
	double ratio_lo, ratio_hi; /* order-statistic interval of that median */
	double ratio_coverage; /* guaranteed coverage of [ratio_lo, ratio_hi] (>= conf) */
	double wilcoxon_p;     /* on the units' log ratios, for information */
	double hl_log_ratio;   /* Hodges-Lehmann estimate over the units */
	double order_p;        /* Mann-Whitney p: do candidate-first pairs' log
				* ratios differ from baseline-first pairs'? */
	double order_diff;     /* median log ratio cand-first minus base-first */
	double log_ratio_sd;   /* sample sd (n - 1) of the per-pair log ratio */
	double unit_log_ratio_sd; /* sample sd of the units' log ratios */
	bool identical_code;
	enum case_verdict verdict;
	/* Sequential sampling (stats_looks()): with more than one planned
	 * look, p is the sequential p-value, min over the looks taken of
	 * min(1, p_k / w_k), and [ratio_lo, ratio_hi] the running intersection
	 * of the looks' intervals, look k's at level 1 - (1 - conf) w_k;
	 * ratio_coverage is then the lower bound 1 - sum over every planned
	 * look of its exact miss probability (a look not taken at its planned
	 * blocks): optional stopping may stop at any look, so the bound is the
	 * union over all of them (about conf). With one look all three are as
	 * before. */
	int looks;             /* looks taken: planned looks the data reached */
	double look_p;         /* sign test of the last look taken, unweighted */
	/* Filled by stats_judge_run: whether the case is decided (identical,
	 * untimed, equivalent, or slower / faster with the interval wholly
	 * beyond the margin); within_margin +1 (-1) when equivalent with the
	 * interval above (below) 1, else 0; beyond_margin when the interval
	 * lies wholly above 1 + margin or below 1 - margin. */
	bool decided;
	int within_margin;
	bool beyond_margin;
	/* What the timing alone says (equivalent, slower, faster or
	 * inconclusive), set for every timed case: for one with identical
	 * code, the verdict its timing would have had (an A/A false alarm when
	 * slower or faster). */
	enum case_verdict timing_verdict;
	/* Whether the rounds agree (docs/verdicts.md, "The same conditions at
	 * every look"): with more than one planned look, the units of the
	 * first look (block <= first_look) against those of the later rounds,
	 * by the Mann-Whitney test of their log ratios. rounds_first and
	 * rounds_later count them; rounds_shift is exp(median later - median
	 * first log ratio); rounds_p NaN when either side has fewer than
	 * STATS_ROUNDS_MIN units. stats_judge_run Holm-adjusts it over the
	 * run's cases, like p. */
	int rounds_first, rounds_later;
	double rounds_first_ratio, rounds_later_ratio, rounds_shift, rounds_p;
	/* Filled by stats_judge_run: rounds_p Holm-adjusted over the run's
	 * timed cases (NaN where there is none), and whether that is below
	 * alpha: the case's rounds disagree. */
	double rounds_p_holm;
	bool rounds_disagree;
};

/* The fewest units on each side for the rounds test. */
#define STATS_ROUNDS_MIN 3

/* Summarises one case's pairs (no verdict yet): overwrites all of *out, with
 * identical_code false, p_holm NaN and verdict VERDICT_INCONCLUSIVE; the caller
 * sets identical_code (and FAIL / NOT_TIMED for cases it did not time) before
 * stats_judge_run. A pair is invalid, counted in out->invalid and otherwise
 * ignored, when either timing is not finite and positive (or their ratio
 * over- or underflows). n == 0 valid pairs gives p = 1 and NaN for the rest. */
void stats_case_summarise(const struct stats_pair *pairs, int n,
			  const struct stats_settings *s, struct stats_case *out);

/* Holm-adjusts the p of every timed case of a run and assigns each its
 * verdict and whether it is decided (struct stats_case). Cases whose verdict is already VERDICT_FAIL, VERDICT_NOT_TIMED or
 * VERDICT_NOT_APPLICABLE are left as they are (p_holm NaN) and excluded from the correction. Then, in
 * order: IDENTICAL when identical_code (the timing is still reported: a free
 * A/A control); EQUIVALENT when [ratio_lo, ratio_hi] lies inside
 * [1 - margin, 1 + margin], whatever the p-value (a NaN interval is never
 * equivalent); SLOWER or FASTER when p_holm < alpha, by the side that won the
 * sign test over the units; INCONCLUSIVE otherwise. */
void stats_judge_run(struct stats_case *cases, int ncases,
		     const struct stats_settings *s);

/* A run's verdict is the shared vocabulary's (proto/vocab.h: enum
 * run_verdict); a run is judged RUN_IMPROVEMENT to RUN_ERROR, the others are
 * its owner's (not_timed) or quald's. */
/* v's word (proto/vocab.h); "unknown" for a value outside the enum. */
const char *stats_run_verdict_name(enum run_verdict v);

/* The run verdict, by precedence fail > error > regression > improvement >
 * neutral: RUN_FAIL when candidate_failed; RUN_ERROR when
 * baseline_or_machine_failed; RUN_FAIL when a case is VERDICT_FAIL although
 * neither flag is set (a VERDICT_FAIL does not say which arm failed, so the
 * caller attributes it with the flags; unattributed, it must not pass);
 * RUN_REGRESSION when any case is SLOWER; RUN_IMPROVEMENT when some case is
 * FASTER; RUN_NEUTRAL otherwise (equivalent, identical, inconclusive,
 * not-timed and not-applicable cases are neutral). */
enum run_verdict stats_run_verdict(const struct stats_case *cases, int n,
				   bool candidate_failed,
				   bool baseline_or_machine_failed);

/* Whether the judged case c counts toward a regression (an improvement)
 * under s's gate: SLOWER (FASTER), with beyond_margin under GATE_BEYOND;
 * under UNDECIDED_REGRESSION, also an undecided timed case whose interval
 * does not rule out a slowdown beyond the margin (ratio_hi above
 * 1 + margin, or NaN). */
bool stats_gate_regression(const struct stats_case *c, const struct stats_settings *s);
bool stats_gate_improvement(const struct stats_case *c, const struct stats_settings *s);

/* The run verdict under s's gate: stats_run_verdict's precedence, with
 * "any case SLOWER" read as "any case stats_gate_regression()" and "some
 * case FASTER" as "some case stats_gate_improvement()". */
enum run_verdict stats_run_verdict_gate(const struct stats_case *cases, int n,
					const struct stats_settings *s,
					bool candidate_failed,
					bool baseline_or_machine_failed);

#endif
