/* Calibration records' shape (calib_record.h). */
#include "common/calib_record.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/fsutil.h"

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
	{"slower", K_INT, 0, 1e15}, /* vocab:key */
	{"faster", K_INT, 0, 1e15}, /* vocab:key */
	{"false_alarm_rate", K_NUM_OR_NULL, 0, 1},
	{"false_alarm_upper", K_NUM, 0, 1},
	{NULL, 0, 0, 0},
};

static const struct field case_fields[] = {
	{"case", K_STRING, 0, 0},
	{"comparisons", K_INT, 0, 1e15},
	{"slower", K_INT, 0, 1e15}, /* vocab:key */
	{"faster", K_INT, 0, 1e15}, /* vocab:key */
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

int calib_record_load(const char *path, json_t **out, struct qual_msg *msg)
{
	char what[PATH_MAX + 32];
	json_error_t e;
	json_t *rec;
	char *text;
	size_t size;
	int rc;

	*out = NULL;
	snprintf(what, sizeof what, "calibration file '%s'", path);
	/* A regular file, never through a link, never a FIFO that would block
	 * the reader (a record may lie in a spool that jobs' nodes write). */
	if ((rc = fs_read_capped_regular(path, CALIB_FILE_MAX + 1, &text, &size, msg)))
		return rc;
	if (size > CALIB_FILE_MAX) {
		free(text);
		return qual_fail(msg, QUAL_EINVAL, "%s: over %d bytes", what, CALIB_FILE_MAX);
	}
	rec = json_loadb(text, size, JSON_REJECT_DUPLICATES, &e);
	free(text);
	if (!rec)
		return qual_fail(msg, QUAL_EINVAL, "%s: not JSON: %s (line %d)", what, e.text,
				 e.line);
	if ((rc = calib_record_check(rec, what, msg))) {
		json_decref(rec);
		return rc;
	}
	*out = rec;
	return 0;
}
