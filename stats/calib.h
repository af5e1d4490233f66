/* Calibration: what A/A qualifications (a compiler library against itself)
 * say about a device's false alarms (docs/output.md, "Calibration"). Pure:
 * takes qual lines as parsed JSON, gives the record as JSON; no I/O. Shared
 * by qual-calibrate (which builds a record from its runs' lines), qual-run
 * (which checks a record before copying it into its verdict line) and
 * quald (which stores the latest record per device). */
#ifndef QUAL_CALIB_H
#define QUAL_CALIB_H

#include <stdbool.h>

#include <jansson.h>

#include "common/calib_record.h"
#include "common/err.h"

/* The exact (Clopper-Pearson) one-sided upper confidence bound, at conf, on
 * the probability of an event seen k times in n trials: the p at which
 * P(X <= k) = 1 - conf for X ~ Binomial(n, p), i.e.
 * scipy.stats.beta.ppf(conf, k + 1, n - k); 1 when k == n (and when n == 0:
 * nothing was seen), NaN when k is outside [0, n] or conf outside (0, 1).
 * Solved by bisection on stats_binom_cdf to about 1e-15. */
double calib_upper_bound(int k, int n, double conf);

struct calib_case {
	char *name;
	long comparisons;           /* timed A/A case_verdicts */
	long slower, faster;        /* of them: false alarms, by direction */
	double *detect;             /* their finite detectable_ratio values */
	int ndetect, cap;
};

struct calib {
	double alpha, margin;       /* the latest start line's settings */
	bool have_settings;         /* a start line with both was seen */
	json_t *device;             /* the first start line's "device" (own
				     * reference), or NULL */
	int starts;                 /* start lines seen: runs begun */
	struct calib_case *cases;
	int ncases, cap;
};

void calib_init(struct calib *c);
void calib_release(struct calib *c);

/* Applies one qual line (borrowed): a start line sets alpha and margin (for
 * the case_verdict lines after it), a case_verdict line with a numeric
 * p_holm is one comparison of its case, a false alarm when p_holm < alpha
 * and its ratio interval [ratio_lo, ratio_hi] is not inside
 * [1 - margin, 1 + margin] (slower when ratio_median > 1, else faster).
 * Other lines are ignored. Returns 0, or QUAL_EINVAL for a case_verdict
 * before any start line, or one over CALIB_MAX_CASES cases. */
int calib_take_line(struct calib *c, json_t *line);

/* The record (new reference; docs/output.md, "Calibration"): device_key and
 * time (UTC, RFC 3339) as given, the runs asked for, the settings, the
 * totals and each case's counts, false-alarm rate (null with no
 * comparison), its upper bound and the median detectable_ratio (null with
 * none). */
json_t *calib_record(const struct calib *c, const char *device_key, const char *time,
		     int runs);

#endif
