/* Where the buffers lie (docs/verdicts.md, "Layout"): does the ratio of a
 * case change with the placement of its buffers beyond what the noise of
 * one placement explains? Each block is timed over one placement (a buffer
 * set and a shift per buffer), so the blocks are the placements and the
 * pairs of one block are repeats under one placement. And the F
 * distribution that test needs. Pure: libm only; the conventions of
 * stats.h (NaN for what cannot be computed; scipy names the reference). */
#ifndef QUAL_STATS_LAYOUT_H
#define QUAL_STATS_LAYOUT_H

#include <stdbool.h>

#include "stats/stats.h"

/* The regularized incomplete beta function I_x(a, b), a > 0, b > 0,
 * 0 <= x <= 1 (scipy.special.betainc(a, b, x)); NaN for other arguments.
 * Lentz's continued fraction on the side of x where it converges fast;
 * relative accuracy about 1e-12 for a and b up to 1e4. */
double stats_beta_inc(double a, double b, double x);

/* The upper tail P(X >= f) of X ~ F(d1, d2), d1, d2 > 0
 * (scipy.stats.f.sf(f, d1, d2)): 1 for f <= 0, 0 for f = +Inf, NaN for a
 * NaN f or bad degrees of freedom. Computed as I_y(d2/2, d1/2) with
 * y = d2 / (d2 + d1 f), so a small tail keeps its relative accuracy. */
double stats_f_sf(double f, double d1, double d2);

/* The layout test of one case.
 *
 * Model: the log ratio of pair j of block b is y = mu + L_b + o s + e,
 * with L_b the placement's effect, o the order effect (s = +1/2 when the
 * candidate ran first, -1/2 when the baseline did) and e independent
 * Normal(0, sigma^2) noise. From each block take one valid pair of each
 * order (the first of each; blocks without both are left out): its mean
 * m_b = mu + L_b + (e1 + e2) / 2 carries no order effect, and its
 * difference d_b = y_cand_first - y_base_first = o + e1 - e2 carries no
 * placement effect. Centred on their means, var(d) estimates 2 sigma^2, so
 * with no placement effect var(m) = sigma^2 / 2 = var(d) / 4; m_b and d_b
 * are independent (the sum and the difference of two independent normals
 * of one variance). So F = var(m) / (var(d) / 4), both sample variances
 * over the B blocks, is F(B - 1, B - 1) under no placement effect, and a
 * placement effect can only make it larger: p = P(F(B-1, B-1) >= F).
 *
 * The noise is taken as normal. One outlying pair (a slow replay) moves
 * its block's m_b and d_b / 2 by the same amount, so it adds alike to both
 * variances and pulls F toward 1: an outlier makes the test conservative,
 * never a false call by itself. Without normality m_b and d_b are still
 * uncorrelated but not independent, and the F distribution is then an
 * approximation: the p is a screen for placements that disagree, read
 * beside the two spreads, not a verdict. */
struct stats_layout {
	int blocks;          /* B: blocks with a valid pair of each order */
	double between_sd;   /* sd of the block means m_b (log ratio) */
	double within_sd;    /* sd(d) / 2: what between_sd would be from
			      * the noise within one placement alone */
	double f;            /* (between_sd / within_sd)^2; +Inf when
			      * within_sd is 0 and between_sd is not */
	double p;            /* P(F(B-1, B-1) >= f); NaN when B < 2; 1 when
			      * both spreads are 0 */
	double p_holm;       /* set by the caller, over the run's cases */
	bool sensitive;      /* set by the caller: p_holm < alpha */
};

/* Fills *out from a case's pairs (stats.h's struct stats_pair; block 0 is
 * no placement and is left out, as are invalid pairs), p_holm NaN and
 * sensitive false. */
void stats_layout_test(const struct stats_pair *pairs, int n, struct stats_layout *out);

#endif
