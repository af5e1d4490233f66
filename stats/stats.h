/* Paired-comparison statistics for qual: exact sign test, Holm correction,
 * distribution-free confidence interval of the median ratio, Wilcoxon
 * signed-rank test and Hodges-Lehmann estimate, order effect, and the
 * per-case and per-run verdicts built from them. No GPU, no I/O. */
#ifndef QUAL_STATS_H
#define QUAL_STATS_H

#include <stdbool.h>
#include <stddef.h>

/* Exact two-sided sign test: the probability, under Binomial(n, 1/2), of a
 * split at least as uneven as k of n. Returns 1 when n == 0. */
double stats_sign_test_p(int k, int n);

/* Holm step-down adjustment of m p-values, in place order preserved;
 * NaN entries are skipped (left NaN) and not counted in m. */
void stats_holm(double *p, int m);

/* Sample median of n values (copies; input untouched). NaN when n == 0. */
double stats_median(const double *x, int n);

/* Distribution-free confidence interval for the median from order
 * statistics: the widest-coverage-at-least-conf symmetric pair (x(k), x(n-k+1))
 * of the sorted sample. lo/hi are NaN when n is too small for conf. */
void stats_median_ci(const double *x, int n, double conf, double *lo, double *hi);

/* Wilcoxon signed-rank test on d[0..n), two-sided, zeros dropped; exact
 * distribution when there are no ties and n <= 50, normal approximation with
 * tie and continuity correction otherwise. Returns 1 when no nonzero d. */
double stats_wilcoxon_p(const double *d, int n);

/* Hodges-Lehmann estimate: median of the Walsh averages of d. */
double stats_hodges_lehmann(const double *d, int n);

struct stats_pair {
	double baseline_ns;
	double candidate_ns;
	bool candidate_first;
};

enum stats_verdict {
	VERDICT_EQUIVALENT,
	VERDICT_FASTER,
	VERDICT_SLOWER,
	VERDICT_INCONCLUSIVE,
	VERDICT_IDENTICAL,
	VERDICT_FAIL,
	VERDICT_NOT_TIMED,
};
const char *stats_verdict_name(enum stats_verdict v);

struct stats_settings {
	double alpha;   /* default 0.05 */
	double margin;  /* default 0.01: equivalence band 1 +/- margin */
	double conf;    /* confidence of the ratio interval; default 0.95 */
};
void stats_settings_init(struct stats_settings *s);

struct stats_case {
	int n;                 /* pairs */
	int faster, slower, ties; /* candidate faster / slower / equal */
	double p;              /* sign test, two-sided */
	double p_holm;         /* filled by stats_judge_run */
	double ratio_median;   /* candidate / baseline */
	double ratio_lo, ratio_hi;
	double wilcoxon_p;     /* on log ratios, for information */
	double hl_log_ratio;   /* Hodges-Lehmann estimate of log ratio */
	double order_p;        /* do candidate-first pairs differ? (see .c) */
	double order_diff;     /* median log ratio cand-first minus base-first */
	double log_ratio_sd;   /* spread of the per-pair log ratio */
	bool identical_code;
	enum stats_verdict verdict;
};

/* Summarises one case's pairs (no verdict yet). */
void stats_case_summarise(const struct stats_pair *pairs, int n,
			  const struct stats_settings *s, struct stats_case *out);

/* Holm-adjusts the p of every timed case of a run and assigns each its
 * verdict. Cases whose verdict is already VERDICT_FAIL or VERDICT_NOT_TIMED are
 * left as they are and excluded from the correction. */
void stats_judge_run(struct stats_case *cases, int ncases,
		     const struct stats_settings *s);

enum run_verdict {
	RUN_IMPROVEMENT,
	RUN_NEUTRAL,
	RUN_REGRESSION,
	RUN_FAIL,
	RUN_ERROR,
};
const char *stats_run_verdict_name(enum run_verdict v);

#endif
