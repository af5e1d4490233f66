/* Bisection over a series of builds (bisect.h). */
#include "stats/bisect.h"

#include <string.h>

void bisect_settings_init(struct bisect_settings *s)
{
	s->alpha = 0.05;
	s->max_effort = 4;
}

static int log2_ceil(int n)
{
	int k = 0;

	while ((1 << k) < n)
		k++;
	return k;
}

int bisect_planned(int n)
{
	return 1 + BISECT_MAX_CHANGES * (log2_ceil(n) + 2);
}

double bisect_alpha_step(int n, const struct bisect_settings *s)
{
	int looks = 0;

	for (int effort = 1; effort <= s->max_effort; effort *= 2)
		looks++;
	return s->alpha / (bisect_planned(n) * (looks > 0 ? looks : 1));
}

struct run {
	const struct bisect_settings *s;
	bisect_compare_fn compare;
	void *ctx;
	struct bisect_result *out;
};

/* One comparison, asked again with more effort while undecided. */
static enum bisect_outcome compare(struct run *r, int a, int b)
{
	enum bisect_outcome o = BISECT_UNDECIDED;

	for (int effort = 1; effort <= r->s->max_effort && o == BISECT_UNDECIDED; effort *= 2) {
		o = r->compare(r->ctx, a, b, r->out->alpha_step, effort);
		r->out->comparisons++;
	}
	if (o == BISECT_BROKEN && !r->out->broken) {
		r->out->broken = true;
		r->out->broken_a = a;
		r->out->broken_b = b;
	}
	if (o == BISECT_UNDECIDED)
		r->out->uncertain = true;
	return o;
}

/* The first build in (lo, hi] that differs from lo, knowing hi does; -1 when
 * a comparison failed. */
static int first_differing(struct run *r, int lo, int hi)
{
	int l = lo, h = hi;

	while (h - l > 1) {
		int mid = l + (h - l) / 2;
		enum bisect_outcome o = compare(r, lo, mid);

		if (o == BISECT_BROKEN)
			return -1;
		if (o == BISECT_DIFFERS)
			h = mid;
		else
			l = mid;
	}
	return h;
}

void bisect_run(int n, const struct bisect_settings *s, bisect_compare_fn fn, void *ctx,
		struct bisect_result *out)
{
	struct run r = { s, fn, ctx, out };
	int lo = 0;
	enum bisect_outcome o;

	memset(out, 0, sizeof *out);
	out->alpha_step = bisect_alpha_step(n, s);
	if (n < 1)
		return;
	o = compare(&r, 0, n);
	out->ends_differ = o == BISECT_DIFFERS;
	while (o == BISECT_DIFFERS && out->nchanges < BISECT_MAX_CHANGES) {
		int k = first_differing(&r, lo, n);
		struct bisect_change *c = &out->changes[out->nchanges];

		if (k < 0)
			return;
		c->to = k;
		c->from = k - 1;
		if (k - 1 == lo) {
			/* lo and k compared already: they differ. */
			c->step = true;
		} else {
			o = compare(&r, k - 1, k);
			if (o == BISECT_BROKEN)
				return;
			c->step = o == BISECT_DIFFERS;
			if (!c->step)
				c->from = lo;
		}
		out->nchanges++;
		lo = k;
		if (lo == n)
			break;
		o = compare(&r, lo, n);
	}
	out->more = o == BISECT_DIFFERS && out->nchanges == BISECT_MAX_CHANGES && lo < n;
}
