#include "common/lines.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/text.h"
#include "common/xalloc.h"

int lines_emit(FILE *out, json_t *line)
{
	int rc = 0;

	if (json_dumpf(line, out, JSON_COMPACT | JSON_ENSURE_ASCII |
		       JSON_REAL_PRECISION(LINES_REAL_DIGITS)) != 0 ||
	    fputc('\n', out) == EOF || fflush(out) != 0)
		rc = QUAL_EIO;
	json_decref(line);
	return rc;
}

void lines_round_reals(json_t *v)
{
	const char *key;
	json_t *x;
	size_t i;

	if (json_is_real(v)) {
		char text[64];

		/* jansson writes "%.*g" (then ".0" where it would read as an
		 * integer), which strtod reads back to this. */
		snprintf(text, sizeof text, "%.*g", LINES_REAL_DIGITS, json_real_value(v));
		json_real_set(v, strtod(text, NULL));
	} else if (json_is_object(v)) {
		json_object_foreach(v, key, x)
			lines_round_reals(x);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x)
			lines_round_reals(x);
	}
}

json_t *lines_new(const char *type)
{
	return json_pack("{s:s}", "type", type);
}

json_t *lines_real(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

json_t *lines_text(const char *s)
{
	return text_json_str(s);
}

static const char *const code_names[LINES_CODE_COUNT] = {
	[LINES_CODE_COMPILE_FAILED] = "compile_failed",
	[LINES_CODE_COMPILE_CRASHED] = "compile_crashed",
	[LINES_CODE_COMPILE_TIMEOUT] = "compile_timeout",
	[LINES_CODE_COMPILE_LIMIT] = "compile_limit",
	[LINES_CODE_COMPILE_NO_REPORT] = "compile_no_report",
	[LINES_CODE_NO_ABI] = "no_abi",
	[LINES_CODE_LIBRARY_CHANGED] = "library_changed",
	[LINES_CODE_LOAD_FAILED] = "load_failed",
	[LINES_CODE_WRONG_OUTPUT] = "wrong_output",
	[LINES_CODE_GPU_FAULT] = "gpu_fault",
	[LINES_CODE_GPU_HANG] = "gpu_hang",
	[LINES_CODE_USAGE] = "usage",
	[LINES_CODE_NO_DEVICE] = "no_device",
	[LINES_CODE_SESSION_FAILED] = "session_failed",
	[LINES_CODE_CUT_OFF] = "cut_off",
	[LINES_CODE_BAD_LINE] = "bad_line",
	[LINES_CODE_FOREIGN_LINE] = "foreign_line",
	[LINES_CODE_INTERRUPTED] = "interrupted",
	[LINES_CODE_INTERNAL] = "internal",
	[LINES_CODE_ORACLE_FAILED] = "oracle_failed",
	[LINES_CODE_BAD_FIXTURE] = "bad_fixture",
};

const char *lines_code_name(enum lines_code code)
{
	return code > LINES_CODE_NONE && code < LINES_CODE_COUNT ? code_names[code] : NULL;
}

enum lines_code lines_code_parse(const char *name)
{
	if (!name)
		return LINES_CODE_NONE;
	for (int c = LINES_CODE_NONE + 1; c < LINES_CODE_COUNT; c++)
		if (!strcmp(name, code_names[c]))
			return (enum lines_code)c;
	return LINES_CODE_NONE;
}

enum lines_code lines_code_of(const char *stage, int err)
{
	bool load = stage && !strcmp(stage, "load");

	/* Crashes, timeouts and limits are those of compiler children: GPU
	 * waits end in QUAL_EHANG, sessions are judged by their own code. */
	switch (err) {
	case QUAL_ECOMPILE:
		return LINES_CODE_COMPILE_FAILED;
	case QUAL_ECRASH:
		return LINES_CODE_COMPILE_CRASHED;
	case QUAL_ETIMEOUT:
		return LINES_CODE_COMPILE_TIMEOUT;
	case QUAL_ELIMIT:
		return LINES_CODE_COMPILE_LIMIT;
	case QUAL_EEXIT:
		return LINES_CODE_COMPILE_NO_REPORT;
	case QUAL_EORACLE:
		return LINES_CODE_ORACLE_FAILED;
	case QUAL_EABI:
		return LINES_CODE_NO_ABI;
	case QUAL_ECHECK:
		return LINES_CODE_WRONG_OUTPUT;
	case QUAL_EHANG:
		return LINES_CODE_GPU_HANG;
	case QUAL_EGPU:
		return load ? LINES_CODE_LOAD_FAILED : LINES_CODE_GPU_FAULT;
	case QUAL_ENODEV:
		return LINES_CODE_NO_DEVICE;
	default:
		return LINES_CODE_INTERNAL;
	}
}

json_t *lines_error_new(const char *stage, enum lines_code code, const char *arm,
			const char *case_name, const char *message)
{
	json_t *line = lines_new("error");
	const char *name = lines_code_name(code);

	json_object_set_new(line, "stage", json_string(stage));
	json_object_set_new(line, "code", json_string(name ? name : "internal"));
	json_object_set_new(line, "arm", arm ? json_string(arm) : json_null());
	json_object_set_new(line, "case", case_name ? json_string(case_name) : json_null());
	json_object_set_new(line, "message", lines_text(message));
	return line;
}

int lines_error(FILE *out, const char *stage, enum lines_code code, const char *arm,
		const char *case_name, const char *message)
{
	return lines_emit(out, lines_error_new(stage, code, arm, case_name, message));
}

static const char *string_of(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

void lines_classify(json_t *line, struct lines_info *info)
{
	static const struct {
		const char *name;
		enum lines_type type;
	} types[] = {
		{ "start", LINES_START }, { "case", LINES_CASE }, { "pair", LINES_PAIR },
		{ "case_verdict", LINES_CASE_VERDICT }, { "verdict", LINES_VERDICT },
		{ "error", LINES_ERROR }, { "block", LINES_BLOCK },
		{ "session_time", LINES_SESSION_TIME },
		{ "calibration_run", LINES_CALIBRATION_RUN },
	};
	const char *type, *gpu;

	memset(info, 0, sizeof *info);
	if (!json_is_object(line) || !(type = string_of(line, "type")))
		return;
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (!strcmp(type, types[i].name))
			info->type = types[i].type;
	info->case_name = string_of(line, "case");
	switch (info->type) {
	case LINES_VERDICT:
		info->verdict = string_of(line, "verdict");
		break;
	case LINES_CASE_VERDICT:
		info->verdict = string_of(line, "verdict");
		info->arm = string_of(line, "failed_arm");
		break;
	case LINES_ERROR:
		info->arm = string_of(line, "arm");
		info->code = lines_code_parse(string_of(line, "code"));
		gpu = string_of(line, "gpu");
		info->gpu_faulted = gpu && !strcmp(gpu, "faulted");
		info->gpu_hung = gpu && !strcmp(gpu, "hung");
		break;
	default:
		break;
	}
}

/* JSON kinds a field may have, for lines_check(). */
enum {
	K_STR = 1 << 0, K_BOOL = 1 << 1, K_NUM = 1 << 2, K_INT = 1 << 3,
	K_OBJ = 1 << 4, K_NULL = 1 << 5, K_ANY = 0xff,
};

struct field_rule {
	const char *key;
	int kinds;
	const char *const *values; /* NULL-terminated set of a string's values,
				    * or NULL for any */
};

static const char *const verdict_names[] = {
	"improvement", "neutral", "regression", "fail", "error", "not_timed",
	"cancelled", "interrupted", NULL,
};
static const char *const case_verdict_names[] = {
	"equivalent", "faster", "slower", "inconclusive", "identical", "fail",
	"not_timed", NULL,
};
static const char *const stage_names[] = {
	"setup", "compile", "load", "check", "time", NULL,
};
static const char *const arm_names[] = { "baseline", "candidate", NULL };
static const char *const gpu_states[] = { "faulted", "hung", NULL };

/* The fields each type requires (the schema's "required", less "type"). */
static const struct field_rule start_rules[] = {
	{ "schema_version", K_INT, NULL }, { "tool", K_STR, NULL },
	{ "version", K_STR, NULL }, { "time", K_STR, NULL }, { "device", K_ANY, NULL },
	{ "timed", K_BOOL, NULL }, { "arch", K_STR, NULL }, { "baseline", K_OBJ, NULL },
	{ "candidate", K_OBJ, NULL }, { "settings", K_OBJ, NULL }, { NULL, 0, NULL },
};
static const struct field_rule case_rules[] = {
	{ "case", K_STR, NULL }, { "family", K_STR, NULL }, { "kernel", K_STR, NULL },
	{ "baseline", K_OBJ, NULL }, { "candidate", K_OBJ, NULL },
	{ "identical_code", K_BOOL, NULL }, { "tolerance", K_NUM, NULL },
	{ "timed", K_BOOL, NULL }, { "replays", K_INT, NULL }, { NULL, 0, NULL },
};
static const struct field_rule pair_rules[] = {
	{ "case", K_STR, NULL }, { "pair", K_INT, NULL }, { "order", K_STR, NULL },
	{ "baseline_ns", K_NUM, NULL }, { "candidate_ns", K_NUM, NULL },
	{ NULL, 0, NULL },
};
static const struct field_rule block_rules[] = {
	{ "case", K_STR, NULL }, { "block", K_INT, NULL }, { "throttled", K_BOOL, NULL },
	{ NULL, 0, NULL },
};
static const struct field_rule case_verdict_rules[] = {
	{ "case", K_STR, NULL }, { "verdict", K_STR, case_verdict_names },
	{ "identical_code", K_BOOL, NULL }, { "n", K_INT, NULL }, { NULL, 0, NULL },
};
static const struct field_rule verdict_rules[] = {
	{ "verdict", K_STR, verdict_names }, { "timed", K_BOOL, NULL }, { NULL, 0, NULL },
};
static const struct field_rule error_rules[] = {
	{ "stage", K_STR, stage_names }, { "arm", K_STR | K_NULL, arm_names },
	{ "case", K_STR | K_NULL, NULL }, { "message", K_STR, NULL }, { NULL, 0, NULL },
};
static const struct field_rule session_time_rules[] = {
	{ "session", K_INT, NULL }, { "time_s", K_OBJ, NULL }, { NULL, 0, NULL },
};

static const struct field_rule calibration_run_rules[] = {
	{ "run", K_INT, NULL }, { "runs", K_INT, NULL },
	{ "verdict", K_STR | K_NULL, verdict_names }, { "timed", K_BOOL, NULL },
	{ NULL, 0, NULL },
};

static int kinds_of(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		return K_STR;
	case JSON_TRUE:
	case JSON_FALSE:
		return K_BOOL;
	case JSON_INTEGER:
		return K_NUM | K_INT;
	case JSON_REAL:
		return K_NUM;
	case JSON_OBJECT:
		return K_OBJ;
	case JSON_NULL:
		return K_NULL;
	default:
		return 0;
	}
}

static bool in_set(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(s, *set))
			return true;
	return false;
}

/* Checks key of line (a line of type type) against its rule: present when
 * required, of one of its kinds, and a string from its set. */
static int field_check(json_t *line, const char *type, const struct field_rule *r,
		       bool required, struct qual_msg *msg)
{
	json_t *v = json_object_get(line, r->key);

	if (!v)
		return required ? qual_fail(msg, QUAL_EINVAL, "a line of type '%s' without '%s'",
					    type, r->key) : 0;
	if (!(kinds_of(v) & r->kinds))
		return qual_fail(msg, QUAL_EINVAL, "a line of type '%s' whose '%s' is of the wrong kind",
				 type, r->key);
	if (r->values && json_is_string(v) && !in_set(json_string_value(v), r->values))
		return qual_fail(msg, QUAL_EINVAL, "a line of type '%s' with an unknown '%s'", type,
				 r->key);
	return 0;
}

int lines_check(json_t *line, struct qual_msg *msg)
{
	static const struct {
		enum lines_type type;
		const struct field_rule *rules;
	} by_type[] = {
		{ LINES_START, start_rules }, { LINES_CASE, case_rules },
		{ LINES_PAIR, pair_rules }, { LINES_CASE_VERDICT, case_verdict_rules },
		{ LINES_VERDICT, verdict_rules }, { LINES_ERROR, error_rules },
		{ LINES_BLOCK, block_rules },
		{ LINES_SESSION_TIME, session_time_rules },
		{ LINES_CALIBRATION_RUN, calibration_run_rules },
	};
	static const struct field_rule failed_arm = { "failed_arm", K_STR, arm_names };
	static const struct field_rule gpu = { "gpu", K_STR, gpu_states };
	struct lines_info info;
	const char *type;
	json_int_t version;
	int rc;

	lines_classify(line, &info);
	if (info.type == LINES_OTHER) {
		type = json_is_object(line) ? string_of(line, "type") : NULL;
		return type ? qual_fail(msg, QUAL_EINVAL, "a line of unknown type '%.40s'", type)
			    : qual_fail(msg, QUAL_EINVAL, "a line without a type");
	}
	type = string_of(line, "type");
	for (size_t i = 0; i < sizeof by_type / sizeof by_type[0]; i++) {
		if (by_type[i].type != info.type)
			continue;
		for (const struct field_rule *r = by_type[i].rules; r->key; r++)
			if ((rc = field_check(line, type, r, true, msg)))
				return rc;
	}
	switch (info.type) {
	case LINES_START:
		version = json_integer_value(json_object_get(line, "schema_version"));
		if (version < 1 || version > QUAL_SCHEMA_VERSION)
			return qual_fail(msg, QUAL_EINVAL, "a line of type 'start' with schema_version %lld",
					 (long long)version);
		break;
	case LINES_CASE_VERDICT:
		return field_check(line, type, &failed_arm, !strcmp(info.verdict, "fail"), msg);
	case LINES_ERROR:
		if (json_object_get(line, "code") && info.code == LINES_CODE_NONE)
			return qual_fail(msg, QUAL_EINVAL, "a line of type 'error' with an unknown 'code'");
		return field_check(line, type, &gpu, false, msg);
	default:
		break;
	}
	return 0;
}

bool lines_blames_candidate(const struct lines_info *info)
{
	return info->arm && !strcmp(info->arm, "candidate");
}

void lines_splitter_init(struct lines_splitter *s, size_t max)
{
	memset(s, 0, sizeof *s);
	s->max = max;
}

void lines_splitter_release(struct lines_splitter *s)
{
	free(s->buf);
	memset(s, 0, sizeof *s);
}

int lines_splitter_feed(struct lines_splitter *s, const char *data, size_t n,
			int (*fn)(void *ctx, const char *line, size_t len), void *ctx)
{
	const char *p = data, *end = data + n;
	int rc;

	while (p < end && !s->over) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t take = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (s->len + take > s->max) {
			s->over = true;
			s->len = 0;
			return QUAL_ELIMIT;
		}
		if (nl && s->len == 0) {
			/* The whole line is in data: no copy. */
			if ((rc = fn(ctx, p, take)) != 0)
				return rc;
		} else {
			XGROW(s->buf, s->len + take, s->cap);
			memcpy(s->buf + s->len, p, take);
			s->len += take;
			if (nl) {
				size_t len = s->len;
				s->len = 0;
				if ((rc = fn(ctx, s->buf, len)) != 0)
					return rc;
			}
		}
		p += take + (nl ? 1 : 0);
	}
	return s->over ? QUAL_ELIMIT : 0;
}

size_t lines_splitter_rest(const struct lines_splitter *s)
{
	return s->len;
}

int lines_splitter_finish(struct lines_splitter *s,
			  int (*fn)(void *ctx, const char *line, size_t len), void *ctx)
{
	size_t len = s->len;
	json_t *o;
	bool whole;

	if (s->over || len == 0)
		return 0;
	o = json_loadb(s->buf, len, JSON_REJECT_DUPLICATES, NULL);
	whole = json_is_object(o);
	json_decref(o);
	if (!whole)
		return QUAL_EINVAL;
	s->len = 0;
	return fn(ctx, s->buf, len);
}
