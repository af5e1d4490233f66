/* A line parsed once (line.h). */
#include "proto/line.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/xalloc.h"

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
	case QUAL_EKILLED:
		return LINES_CODE_COMPILE_KILLED;
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
	const char *name = vocab_code_name(code);

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
		{ "calibration_run", LINES_CALIBRATION_RUN }, { "code", LINES_CODE },
		{ "bisect_step", LINES_BISECT_STEP }, { "bisect", LINES_BISECT },
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
		info->code = vocab_code_parse(string_of(line, "code"));
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
	bool (*known)(const char *s); /* whether a string value s is one of
				       * its set; NULL for any */
};

/* The vocabulary's verdicts (proto/vocab.h) as a field's set of values. */
static bool verdict_known(const char *s)
{
	return vocab_verdict_parse(s) != RUN_VERDICT_UNKNOWN;
}

static bool case_verdict_known(const char *s)
{
	return vocab_case_verdict_parse(s) != CASE_VERDICT_UNKNOWN;
}

static const char *const stage_names[] = {
	"setup", "compile", "load", "check", "time", NULL,
};
static const char *const arm_names[] = { "baseline", "candidate", NULL };
static const char *const gpu_states[] = { "faulted", "hung", NULL };

static bool in_set(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(s, *set))
			return true;
	return false;
}

static bool stage_known(const char *s)
{
	return in_set(s, stage_names);
}

static bool arm_known(const char *s)
{
	return in_set(s, arm_names);
}

static bool gpu_known(const char *s)
{
	return in_set(s, gpu_states);
}

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
	{ "case", K_STR, NULL }, { "verdict", K_STR, case_verdict_known },
	{ "identical_code", K_BOOL, NULL }, { "n", K_INT, NULL }, { NULL, 0, NULL },
};
static const struct field_rule verdict_rules[] = {
	{ "verdict", K_STR, verdict_known }, { "timed", K_BOOL, NULL }, { NULL, 0, NULL },
};
static const struct field_rule error_rules[] = {
	{ "stage", K_STR, stage_known }, { "arm", K_STR | K_NULL, arm_known },
	{ "case", K_STR | K_NULL, NULL }, { "message", K_STR, NULL }, { NULL, 0, NULL },
};
static const struct field_rule session_time_rules[] = {
	{ "session", K_INT, NULL }, { "time_s", K_OBJ, NULL }, { NULL, 0, NULL },
};

static const struct field_rule calibration_run_rules[] = {
	{ "run", K_INT, NULL }, { "runs", K_INT, NULL },
	{ "verdict", K_STR | K_NULL, verdict_known }, { "timed", K_BOOL, NULL },
	{ NULL, 0, NULL },
};

static const struct field_rule code_rules[] = {
	{ "case", K_STR, NULL }, { "target", K_STR, NULL }, { "baseline", K_OBJ, NULL },
	{ "candidate", K_OBJ, NULL }, { "identical_code", K_BOOL, NULL },
	{ "diff", K_OBJ | K_NULL, NULL }, { NULL, 0, NULL },
};

static const struct field_rule bisect_step_rules[] = {
	{ "a", K_INT, NULL }, { "b", K_INT, NULL }, { "effort", K_INT, NULL },
	{ "cases", K_OBJ, NULL }, { NULL, 0, NULL },
};
static const struct field_rule bisect_rules[] = {
	{ "mode", K_STR, NULL }, { "runs", K_INT, NULL }, { NULL, 0, NULL },
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
	if (r->known && json_is_string(v) && !r->known(json_string_value(v)))
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
		{ LINES_CODE, code_rules }, { LINES_BISECT_STEP, bisect_step_rules },
		{ LINES_BISECT, bisect_rules },
	};
	static const struct field_rule failed_arm = { "failed_arm", K_STR, arm_known };
	static const struct field_rule gpu = { "gpu", K_STR, gpu_known };
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
		return field_check(line, type, &failed_arm,
				   vocab_case_verdict_parse(info.verdict) == VERDICT_FAIL, msg);
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


/* Fills l's fields from its object. */
static void line_read(struct line *l)
{
	const struct lines_info *info = &l->info;
	const char *job = json_string_value(json_object_get(l->obj, "job"));
	json_t *seq = json_object_get(l->obj, "seq");

	lines_classify(l->obj, &l->info);
	l->type = info->type;
	l->code = info->code;
	l->verdict = RUN_VERDICT_UNKNOWN;
	l->case_verdict = CASE_VERDICT_UNKNOWN;
	if (info->type == LINES_VERDICT)
		l->verdict = vocab_verdict_parse(info->verdict);
	else if (info->type == LINES_CASE_VERDICT)
		l->case_verdict = vocab_case_verdict_parse(info->verdict);
	l->seq = json_is_integer(seq) && json_integer_value(seq) >= 0 ?
		 (long)json_integer_value(seq) : -1;
	snprintf(l->job, sizeof l->job, "%s", job && strlen(job) < sizeof l->job ? job : "");
}

struct line *line_take(json_t *obj, char *text, size_t len)
{
	struct line *l = xcalloc(1, sizeof *l);

	l->refs = 1;
	l->obj = obj;
	l->text = text;
	l->len = len;
	line_read(l);
	return l;
}

int line_parse(const char *text, size_t len, struct line **out)
{
	json_t *o;
	char *copy;

	*out = NULL;
	o = memchr(text, '\0', len) ? NULL : json_loadb(text, len, 0, NULL);
	if (!json_is_object(o)) {
		json_decref(o);
		return QUAL_EINVAL;
	}
	copy = xmalloc(len + 1);
	memcpy(copy, text, len);
	copy[len] = '\0';
	*out = line_take(o, copy, len);
	return 0;
}

void line_reread(struct line *l)
{
	line_read(l);
}

struct line *line_ref(struct line *l)
{
	l->refs++;
	return l;
}

void line_unref(struct line *l)
{
	if (!l || --l->refs > 0)
		return;
	json_decref(l->obj);
	free(l->text);
	free(l);
}

bool line_is_verdict(const struct line *l)
{
	return l->type == LINES_VERDICT;
}

long line_tail_seq(const char *text, size_t len)
{
	static const char key[] = ",\"seq\":";
	size_t end, i;
	long v = 0;

	if (len < 2 || text[len - 1] != '}')
		return -1;
	end = len - 1;
	for (i = end; i > 0 && text[i - 1] >= '0' && text[i - 1] <= '9'; i--)
		;
	/* A seq has no leading zero, and fits a long. */
	if (i == end || (end - i > 1 && text[i] == '0'))
		return -1;
	if (i < sizeof key - 1 || memcmp(text + i - (sizeof key - 1), key, sizeof key - 1))
		return -1;
	for (; i < end; i++) {
		if (v > (LONG_MAX - (text[i] - '0')) / 10)
			return -1;
		v = v * 10 + (text[i] - '0');
	}
	return v;
}
