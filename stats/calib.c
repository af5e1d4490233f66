/* Calibration records (calib.h). */
#include "stats/calib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lines.h"
#include "common/xalloc.h"
#include "stats/stats.h"

double calib_upper_bound(int k, int n, double conf)
{
	double lo, hi;

	if (k < 0 || n < 0 || k > n || !(conf > 0 && conf < 1))
		return NAN;
	if (k == n)
		return 1.0;
	/* P(X <= k) falls from 1 to 0 as p goes from 0 to 1: the bound is
	 * where it crosses 1 - conf. 200 halvings reach the spacing of
	 * doubles near any answer in (0, 1). */
	lo = 0.0;
	hi = 1.0;
	for (int i = 0; i < 200 && hi - lo > 0; i++) {
		double mid = lo + (hi - lo) / 2;

		if (mid <= lo || mid >= hi)
			break;
		if (stats_binom_cdf(k, n, mid) > 1 - conf)
			lo = mid;
		else
			hi = mid;
	}
	return lo + (hi - lo) / 2;
}

void calib_init(struct calib *c)
{
	memset(c, 0, sizeof *c);
}

void calib_release(struct calib *c)
{
	for (int i = 0; i < c->ncases; i++) {
		free(c->cases[i].name);
		free(c->cases[i].detect);
	}
	free(c->cases);
	json_decref(c->device);
	calib_init(c);
}

/* The case called name, added when new; NULL past CALIB_MAX_CASES. */
static struct calib_case *calib_case(struct calib *c, const char *name)
{
	struct calib_case *k;

	for (int i = 0; i < c->ncases; i++)
		if (strcmp(c->cases[i].name, name) == 0)
			return &c->cases[i];
	if (c->ncases >= CALIB_MAX_CASES)
		return NULL;
	if (c->ncases == c->cap) {
		c->cap = (int)xgrow_cap((size_t)c->cap, (size_t)c->ncases + 1, sizeof *c->cases);
		c->cases = xrealloc(c->cases, (size_t)c->cap * sizeof *c->cases);
	}
	k = &c->cases[c->ncases++];
	memset(k, 0, sizeof *k);
	k->name = xstrdup(name);
	return k;
}

static double num_or_nan(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

int calib_take_line(struct calib *c, json_t *line)
{
	const char *type = json_string_value(json_object_get(line, "type"));
	const char *name;
	struct calib_case *k;
	double p, lo, hi, med, d;
	bool inside;

	if (!type)
		return 0;
	if (strcmp(type, "start") == 0) {
		json_t *s = json_object_get(line, "settings");
		double a = num_or_nan(s, "alpha"), m = num_or_nan(s, "margin");

		c->starts++;
		if (!c->device && json_is_object(json_object_get(line, "device")))
			c->device = json_incref(json_object_get(line, "device"));
		c->have_settings = isfinite(a) && isfinite(m);
		c->alpha = a;
		c->margin = m;
		return 0;
	}
	if (strcmp(type, "case_verdict") != 0)
		return 0;
	if (!c->have_settings)
		return QUAL_EINVAL;
	name = json_string_value(json_object_get(line, "case"));
	p = num_or_nan(line, "p_holm");
	if (!name || !isfinite(p))
		return 0; /* not timed: no comparison */
	if (!(k = calib_case(c, name)))
		return QUAL_EINVAL;
	k->comparisons++;
	lo = num_or_nan(line, "ratio_lo");
	hi = num_or_nan(line, "ratio_hi");
	med = num_or_nan(line, "ratio_median");
	/* An interval that is not there is not inside the margin. */
	inside = lo >= 1 - c->margin && hi <= 1 + c->margin;
	if (p < c->alpha && !inside) {
		if (med > 1)
			k->slower++;
		else
			k->faster++;
	}
	d = num_or_nan(line, "detectable_ratio");
	if (isfinite(d)) {
		if (k->ndetect == k->cap) {
			k->cap = (int)xgrow_cap((size_t)k->cap, (size_t)k->ndetect + 1,
						sizeof *k->detect);
			k->detect = xrealloc(k->detect, (size_t)k->cap * sizeof *k->detect);
		}
		k->detect[k->ndetect++] = d;
	}
	return 0;
}

/* The counts' members of a record or of one of its cases, into o. */
static void counts_into(json_t *o, long n, long slower, long faster)
{
	json_object_set_new(o, "comparisons", json_integer(n));
	json_object_set_new(o, "slower", json_integer(slower)); /* vocab:key */
	json_object_set_new(o, "faster", json_integer(faster)); /* vocab:key */
	json_object_set_new(o, "false_alarm_rate",
			    n ? json_real((double)(slower + faster) / (double)n) : json_null());
	/* The counts fit an int: CALIB_MAX_RUNS runs of CALIB_MAX_CASES cases. */
	json_object_set_new(o, "false_alarm_upper", json_real(calib_upper_bound(
		(int)(slower + faster), (int)n, CALIB_UPPER_CONF)));
}

json_t *calib_record(const struct calib *c, const char *device_key, const char *time,
		     int runs)
{
	json_t *rec = json_object(), *cases = json_array();
	long n = 0, slower = 0, faster = 0;

	json_object_set_new(rec, "device_key", json_string(device_key));
	json_object_set_new(rec, "device", c->device ? json_incref(c->device) : json_null());
	json_object_set_new(rec, "time", json_string(time));
	json_object_set_new(rec, "runs", json_integer(runs));
	json_object_set_new(rec, "runs_started", json_integer(c->starts));
	json_object_set_new(rec, "alpha", c->have_settings ? json_real(c->alpha) : json_null());
	json_object_set_new(rec, "margin", c->have_settings ? json_real(c->margin) : json_null());
	json_object_set_new(rec, "upper_conf", json_real(CALIB_UPPER_CONF));
	for (int i = 0; i < c->ncases; i++) {
		const struct calib_case *k = &c->cases[i];
		json_t *o = json_pack("{s:s}", "case", k->name);

		counts_into(o, k->comparisons, k->slower, k->faster);
		json_object_set_new(o, "detectable_ratio", k->ndetect ?
				    lines_real(stats_median(k->detect, k->ndetect)) :
				    json_null());
		json_array_append_new(cases, o);
		n += k->comparisons;
		slower += k->slower;
		faster += k->faster;
	}
	counts_into(rec, n, slower, faster);
	json_object_set_new(rec, "cases", cases);
	return rec;
}
