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
		if (!c->device && json_object_get(line, "device"))
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
	json_object_set_new(o, "slower", json_integer(slower));
	json_object_set_new(o, "faster", json_integer(faster));
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

/* ---- checking a record ----------------------------------------------------- */

enum kind { K_STRING, K_INT, K_NUM, K_NUM_OR_NULL, K_OBJ_OR_NULL };

struct field {
	const char *name;
	enum kind kind;
	double min, max;            /* K_INT, K_NUM: the range */
};

static const char *const kind_text[] = {
	[K_STRING] = "a string",
	[K_INT] = "an integer",
	[K_NUM] = "a number",
	[K_NUM_OR_NULL] = "a number or null",
	[K_OBJ_OR_NULL] = "an object or null",
};

static const struct field record_fields[] = {
	{"device_key", K_STRING, 0, 0},
	{"time", K_STRING, 0, 0},
	{"device", K_OBJ_OR_NULL, 0, 0},
	{"runs", K_INT, 1, CALIB_MAX_RUNS},
	{"alpha", K_NUM_OR_NULL, 0, 1},
	{"margin", K_NUM_OR_NULL, 0, 1},
	{"comparisons", K_INT, 0, 1e15},
	{"slower", K_INT, 0, 1e15},
	{"faster", K_INT, 0, 1e15},
	{"false_alarm_rate", K_NUM_OR_NULL, 0, 1},
	{"false_alarm_upper", K_NUM, 0, 1},
	{NULL, 0, 0, 0},
};

static const struct field case_fields[] = {
	{"case", K_STRING, 0, 0},
	{"comparisons", K_INT, 0, 1e15},
	{"slower", K_INT, 0, 1e15},
	{"faster", K_INT, 0, 1e15},
	{"false_alarm_rate", K_NUM_OR_NULL, 0, 1},
	{"false_alarm_upper", K_NUM, 0, 1},
	{"detectable_ratio", K_NUM_OR_NULL, 0, 1e300},
	{NULL, 0, 0, 0},
};

static bool field_ok(json_t *v, const struct field *f)
{
	double x;

	switch (f->kind) {
	case K_STRING:
		return json_is_string(v);
	case K_OBJ_OR_NULL:
		return json_is_object(v) || json_is_null(v);
	case K_INT:
		if (!json_is_integer(v))
			return false;
		x = (double)json_integer_value(v);
		return x >= f->min && x <= f->max;
	case K_NUM_OR_NULL:
		if (json_is_null(v))
			return true;
		/* fall through */
	case K_NUM:
		if (!json_is_number(v))
			return false;
		x = json_number_value(v);
		return x >= f->min && x <= f->max;
	}
	return false;
}

static int fields_check(json_t *o, const struct field *fields, const char *prefix,
			const char *what, struct qual_msg *msg)
{
	for (const struct field *f = fields; f->name; f++) {
		json_t *v = json_object_get(o, f->name);

		if (!v)
			return qual_fail(msg, QUAL_EINVAL, "%s: field '%s%s' is missing", what,
					 prefix, f->name);
		if (field_ok(v, f))
			continue;
		if (f->kind == K_INT || f->kind == K_NUM || f->kind == K_NUM_OR_NULL)
			return qual_fail(msg, QUAL_EINVAL, "%s: field '%s%s' must be %s in "
					 "[%g, %g]", what, prefix, f->name, kind_text[f->kind],
					 f->min, f->max);
		return qual_fail(msg, QUAL_EINVAL, "%s: field '%s%s' must be %s", what,
				 prefix, f->name, kind_text[f->kind]);
	}
	return 0;
}

int calib_record_check(json_t *rec, const char *what, struct qual_msg *msg)
{
	json_t *cases;
	size_t i;
	int rc;

	if (!json_is_object(rec))
		return qual_fail(msg, QUAL_EINVAL, "%s: not a JSON object", what);
	if ((rc = fields_check(rec, record_fields, "", what, msg)))
		return rc;
	cases = json_object_get(rec, "cases");
	if (!json_is_array(cases) || json_array_size(cases) > CALIB_MAX_CASES)
		return qual_fail(msg, QUAL_EINVAL, "%s: field 'cases' must be an array of at "
				 "most %d objects", what, CALIB_MAX_CASES);
	for (i = 0; i < json_array_size(cases); i++) {
		json_t *k = json_array_get(cases, i);
		char prefix[40];

		snprintf(prefix, sizeof prefix, "cases[%zu].", i);
		if (!json_is_object(k))
			return qual_fail(msg, QUAL_EINVAL, "%s: field 'cases[%zu]' must be an "
					 "object", what, i);
		if ((rc = fields_check(k, case_fields, prefix, what, msg)))
			return rc;
	}
	return 0;
}
