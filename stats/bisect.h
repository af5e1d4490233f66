/* Bisection over a series of compiler builds (qual-bisect, docs/bisect.md):
 * which adjacent builds of BASELINE, BUILD_1 ... BUILD_n change a case (or
 * the run) beyond the margin. The procedure is here, apart from how two
 * builds are compared (a callback: qual-run's sequential test in qual-bisect,
 * code identity for a static bisection, a model in the simulation test), so
 * that the error budget the program relies on is the one the simulation
 * measures.
 *
 * Builds are numbered 0 (the baseline) to n. The procedure first compares 0
 * with n; when they differ, it finds the first build k that differs from 0
 * by halving (k - 1 is the same as 0, k differs), then compares k - 1 with
 * k directly: a step when they differ, a diffuse change (each build within
 * the margin of the one before, the span beyond it) when not. Then it goes
 * on from k, while k and n differ, up to BISECT_MAX_CHANGES changes. An
 * undecided comparison is asked again with twice the effort (more blocks),
 * up to max_effort; one still undecided counts as "the same" in the search
 * and marks the result uncertain. Each look is made at alpha / (planned
 * comparisons x looks a comparison may take) (Bonferroni over every look
 * the procedure may make), so that under no change beyond the margin a
 * change is reported with probability at most alpha. */
#ifndef QUAL_BISECT_H
#define QUAL_BISECT_H

#include <stdbool.h>

#define BISECT_MAX_CHANGES 4

enum bisect_outcome {
	BISECT_SAME,      /* within the margin (or identical code) */
	BISECT_DIFFERS,   /* beyond the margin (or different code) */
	BISECT_UNDECIDED, /* neither, at this effort */
	BISECT_BROKEN,    /* the comparison failed (a build did not compile,
			   * a run error): the bisection stops */
};

/* Compares build a with build b (a < b) at significance alpha, with effort
 * 1, 2, 4 ... (the callback's unit of sampling). */
typedef enum bisect_outcome (*bisect_compare_fn)(void *ctx, int a, int b, double alpha,
						 int effort);

struct bisect_settings {
	double alpha;      /* the whole bisection's (default 0.05) */
	int max_effort;    /* the largest effort asked (default 4) */
};

void bisect_settings_init(struct bisect_settings *s);

struct bisect_change {
	int from, to;      /* builds: to - 1 == from for a step */
	bool step;         /* from and to adjacent and differing */
};

struct bisect_result {
	bool ends_differ;  /* build 0 and build n differ */
	bool uncertain;    /* a comparison stayed undecided */
	bool broken;       /* a comparison failed: no result */
	bool more;         /* BISECT_MAX_CHANGES found and the rest of the
			    * series still differs: there are more */
	int broken_a, broken_b;
	int nchanges;
	struct bisect_change changes[BISECT_MAX_CHANGES];
	int comparisons;   /* compare() calls, efforts counted */
	double alpha_step; /* each comparison's significance */
};

/* The comparisons the procedure may make over n builds: the ends, and per
 * change a halving (ceil(log2 n) at most), the adjacent check and the next
 * ends. */
int bisect_planned(int n);

/* The significance of each look over n builds: alpha / (bisect_planned(n)
 * x the looks at efforts 1, 2, 4 ... up to max_effort). */
double bisect_alpha_step(int n, const struct bisect_settings *s);

/* Runs the bisection over builds 0..n (n >= 1). */
void bisect_run(int n, const struct bisect_settings *s, bisect_compare_fn compare, void *ctx,
		struct bisect_result *out);

#endif
