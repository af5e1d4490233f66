/* The settings table and its codecs (settings.h). Every door turns what it
 * was given into a JSON value first (a request's member, or an option's
 * text read as JSON would read it) and hands it to take(), so that one
 * function checks, words and stores every value. */
#include "proto/settings.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gate.h"
#include "common/sampling.h"
#include "common/xalloc.h"

/* The processor mode's words (compile/rtc_mode.h's enum rtc_mode, in its
 * order), said here because quald's request parser and qual-run's options
 * read them from this table, and compile/ names its modes by them. */
const char *const settings_mode_words[] = {"default", "cu", "wgp", NULL};

#define OFF(m) offsetof(struct qual_settings, m)
#define MAX_PATH 4095   /* PATH_MAX less its NUL */

/* The bounds, each said once. pairs: QUAL_MIN_PAIRS is the product's floor
 * (common/sampling.h), 10^6 more than any run has time for. alpha: 1e-9,
 * the engine's floor since its first version, below which no run of up to
 * 10^6 pairs could reject anything. margin: 0 (any change counts), or at
 * least 1e-6, a millionth of a case's time and well below what the timer
 * resolves (the narrowest A/A intervals are +/-0.09%): a margin of 1e-320
 * is no margin, and its text would not read back as a number. seconds: a
 * millisecond to a day, the span of any timer quald or qual-run keeps.
 * Cases are named in under 40 bytes by every fixture; 128 leaves room. */
static const struct settings_field fields[] = {
	{.key = "pairs", .option = "pairs", .kind = SETTINGS_INT, .doors = SETTINGS_BOTH,
	 .lo = QUAL_MIN_PAIRS, .hi = 1000000, .def = QUAL_DEFAULT_PAIRS,
	 .note = "a case is timed in at least 30 pairs", .offset = OFF(pairs)},
	{.key = "alpha", .option = "alpha", .kind = SETTINGS_REAL, .doors = SETTINGS_BOTH,
	 .lo = 0, .lo_open = true, .hi = 0.5, .floor = 1e-9, .def = 0.05,
	 .offset = OFF(alpha)},
	{.key = "margin", .option = "margin", .kind = SETTINGS_REAL, .doors = SETTINGS_BOTH,
	 .lo = 0, .hi = 0.5, .floor = 1e-6, .def = 0.01, .offset = OFF(margin)},
	{.key = "seed", .option = "seed", .kind = SETTINGS_I64, .doors = SETTINGS_BOTH,
	 .lo = 0, .hi = 2147483647.0, .offset = OFF(seed)},
	{.key = "compile_timeout", .option = "compile-timeout", .kind = SETTINGS_REAL,
	 .doors = SETTINGS_BOTH, .lo = 0.1, .hi = 86400, .unit = "seconds",
	 .offset = OFF(compile_timeout_s)},
	{.key = "mode", .option = "mode", .kind = SETTINGS_WORD, .doors = SETTINGS_BOTH,
	 .words = settings_mode_words, .type_first = true, .offset = OFF(mode)},
	{.key = "max_pairs", .option = "max-pairs", .kind = SETTINGS_INT,
	 .doors = SETTINGS_BOTH, .lo = QUAL_MIN_PAIRS, .hi = 1000000,
	 .offset = OFF(max_pairs)},
	{.key = "max_seconds", .option = "max-seconds", .kind = SETTINGS_REAL,
	 .doors = SETTINGS_BOTH, .lo = 0, .lo_open = true, .hi = 86400, .floor = 0.001,
	 .unit = "seconds", .offset = OFF(max_seconds)},
	{.key = "gate_slower", .option = "gate-slower", .kind = SETTINGS_WORD,
	 .doors = SETTINGS_BOTH, .words = gate_rule_words, .offset = OFF(gate_slower)},
	{.key = "gate_faster", .option = "gate-faster", .kind = SETTINGS_WORD,
	 .doors = SETTINGS_BOTH, .words = gate_rule_words, .offset = OFF(gate_faster)},
	{.key = "undecided", .option = "undecided", .kind = SETTINGS_WORD,
	 .doors = SETTINGS_BOTH, .words = gate_undecided_words, .offset = OFF(undecided)},
	{.key = "compile_only", .option = "compile-only", .kind = SETTINGS_BOOL,
	 .doors = SETTINGS_BOTH, .offset = OFF(compile_only)},
	{.key = "follow", .kind = SETTINGS_BOOL, .doors = SETTINGS_QUALD, .def = 1,
	 .offset = OFF(follow)},
	{.key = "cases", .option = "case", .kind = SETTINGS_LIST, .doors = SETTINGS_BOTH,
	 .max_len = 128, .max_n = SETTINGS_MAX_LIST, .offset = OFF(cases)},
	{.key = "baseline_options", .option = "baseline-opt", .kind = SETTINGS_LIST,
	 .doors = SETTINGS_BOTH, .max_len = MAX_PATH, .max_n = SETTINGS_MAX_LIST,
	 .max_json = SETTINGS_MAX_OPTIONS_JSON, .allow_empty = true,
	 .offset = OFF(baseline_options)},
	{.key = "candidate_options", .option = "candidate-opt", .kind = SETTINGS_LIST,
	 .doors = SETTINGS_BOTH, .max_len = MAX_PATH, .max_n = SETTINGS_MAX_LIST,
	 .max_json = SETTINGS_MAX_OPTIONS_JSON, .allow_empty = true,
	 .offset = OFF(candidate_options)},
	{.key = "fixtures", .option = "fixtures", .kind = SETTINGS_LIST,
	 .doors = SETTINGS_BOTH, .max_len = MAX_PATH, .max_n = SETTINGS_MAX_FIXTURES,
	 .offset = OFF(fixtures)},
};
#define NFIELDS (sizeof fields / sizeof fields[0])

const struct settings_field *settings_fields(size_t *n)
{
	*n = NFIELDS;
	return fields;
}

const struct settings_field *settings_find_key(const char *key)
{
	for (size_t i = 0; i < NFIELDS; i++)
		if (!strcmp(fields[i].key, key))
			return &fields[i];
	return NULL;
}

const struct settings_field *settings_find_option(const char *option)
{
	for (size_t i = 0; i < NFIELDS; i++)
		if (fields[i].option && !strcmp(fields[i].option, option))
			return &fields[i];
	return NULL;
}

#define AT(s, f, type) ((type *)((char *)(s) + (f)->offset))

void settings_list_free(char **list)
{
	for (char **p = list; p && *p; p++)
		free(*p);
	free(list);
}

void settings_init(struct qual_settings *s)
{
	memset(s, 0, sizeof *s);
	for (size_t i = 0; i < NFIELDS; i++) {
		const struct settings_field *f = &fields[i];

		switch (f->kind) {
		case SETTINGS_INT: *AT(s, f, int) = (int)f->def; break;
		case SETTINGS_I64: *AT(s, f, int64_t) = (int64_t)f->def; break;
		case SETTINGS_REAL: *AT(s, f, double) = f->def; break;
		case SETTINGS_BOOL: *AT(s, f, bool) = f->def != 0; break;
		case SETTINGS_WORD: *AT(s, f, int) = (int)f->def; break;
		case SETTINGS_LIST: break;
		}
	}
}

void settings_release(struct qual_settings *s)
{
	for (size_t i = 0; i < NFIELDS; i++)
		if (fields[i].kind == SETTINGS_LIST)
			settings_list_free(*AT(s, &fields[i], char **));
	memset(s, 0, sizeof *s);
}

bool settings_in_range(const struct settings_field *f, double x)
{
	return isfinite(x) && (f->lo_open ? x > f->lo : x >= f->lo) &&
	       (f->hi_open ? x < f->hi : x <= f->hi) && !(x > f->lo && x < f->floor);
}

/* A real as JSON text that reads as one (30.0, not 30): "must be an
 * integer, got 30" would be a riddle. */
static const char *describe_real(double x, char *buf, size_t n)
{
	snprintf(buf, n, "%.15g", x);
	if (strtod(buf, NULL) != x)
		snprintf(buf, n, "%.17g", x);
	if (!strpbrk(buf, ".eEn"))
		strncat(buf, ".0", n - strlen(buf) - 1);
	return buf;
}

const char *settings_describe(const json_t *v, char *buf, size_t n)
{
	switch (json_typeof(v)) {
	case JSON_INTEGER:
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
		return buf;
	case JSON_REAL: return describe_real(json_real_value(v), buf, n);
	case JSON_STRING: return "a string";
	case JSON_ARRAY: return "an array";
	case JSON_OBJECT: return "an object";
	case JSON_TRUE: return "true";
	case JSON_FALSE: return "false";
	case JSON_NULL: return "null";
	}
	return "something else";
}

const char *settings_clip(const char *s, char *buf, size_t max)
{
	size_t n = strlen(s);

	if (n <= max)
		return s;
	n = max;
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	memcpy(buf, s, n);
	memcpy(buf + n, "...", 4);
	return buf;
}

#define CLIP_MAX 64

/* "'key' must be ..., got X (note)". */
static int refuse(const struct settings_field *f, const char *got, struct qual_msg *msg,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int refuse(const struct settings_field *f, const char *got, struct qual_msg *msg,
		  const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return qual_fail(msg, QUAL_EINVAL, "'%s' must be %s, got %s%s%s%s", f->key, what, got,
			 f->note ? " (" : "", f->note ? f->note : "", f->note ? ")" : "");
}

int settings_check_number(const struct settings_field *f, double x, const char *got,
			  struct qual_msg *msg)
{
	bool integer = f->kind == SETTINGS_INT || f->kind == SETTINGS_I64;

	if (settings_in_range(f, x))
		return 0;
	if (integer)
		return refuse(f, got, msg, "an integer %s %.0f", x > f->hi ? "<=" : ">=",
			      x > f->hi ? f->hi : f->lo);
	if (isfinite(x) && x > f->lo && x < f->floor) {
		char lo[32] = "";

		if (!f->lo_open)
			snprintf(lo, sizeof lo, "%g or ", f->lo);
		return refuse(f, got, msg, "%sat least %g", lo, f->floor);
	}
	if (f->unit)
		return refuse(f, got, msg, "a number of %s in %c%g, %g%c", f->unit,
			      f->lo_open ? '(' : '[', f->lo, f->hi, f->hi_open ? ')' : ']');
	return refuse(f, got, msg, "a number with %g %s %s %s %g", f->lo,
		      f->lo_open ? "<" : "<=", f->key, f->hi_open ? "<" : "<=", f->hi);
}

size_t settings_json_bytes(const char *s)
{
	size_t n = 2; /* the quotes */

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += *p < 0x20 || *p == 0x7F ? 6 : *p == '"' || *p == '\\' ? 2 :
		     *p >= 0x80 ? 3 : 1;
	return n;
}

static size_t list_len(char **list)
{
	size_t n = 0;

	while (list && list[n])
		n++;
	return n;
}

/* One entry of list field f, checked, appended to *list. */
static int take_entry(const struct settings_field *f, char ***list, json_t *e, size_t i,
		      struct qual_msg *msg)
{
	size_t n = list_len(*list);

	if (!json_is_string(e))
		return qual_fail(msg, QUAL_EINVAL, "'%s' must be an array of strings", f->key);
	if (json_string_length(e) == 0)
		return qual_fail(msg, QUAL_EINVAL, "'%s' entry %zu is empty", f->key, i);
	if (json_string_length(e) > f->max_len)
		return qual_fail(msg, QUAL_EINVAL, "'%s' entry %zu is longer than %zu bytes",
				 f->key, i, f->max_len);
	*list = xrealloc(*list, (n + 2) * sizeof **list);
	(*list)[n] = xstrdup(json_string_value(e));
	(*list)[n + 1] = NULL;
	return 0;
}

/* A whole list (a request's array) of field f into *to, replacing it. */
static int take_list(const struct settings_field *f, char ***to, json_t *v,
		     struct qual_msg *msg)
{
	char **list = NULL;
	size_t i;
	json_t *e;
	int rc;

	if (!json_is_array(v))
		return qual_fail(msg, QUAL_EINVAL, "'%s' must be an array of strings", f->key);
	if (json_array_size(v) == 0 && !f->allow_empty)
		return qual_fail(msg, QUAL_EINVAL, "'%s' must not be empty", f->key);
	json_array_foreach(v, i, e) {
		if ((rc = take_entry(f, &list, e, i, msg)) < 0) {
			settings_list_free(list);
			return rc;
		}
	}
	settings_list_free(*to);
	*to = list;
	return 0;
}

/* The one check of a value v (borrowed) of field f, then into s; a list
 * entry when append (an option's value), else the whole value. */
static int take(struct qual_settings *s, const struct settings_field *f, json_t *v,
		bool append, struct qual_msg *msg)
{
	char got[64], clipped[CLIP_MAX + 4];
	const char *w;
	int rc;

	switch (f->kind) {
	case SETTINGS_INT:
	case SETTINGS_I64:
		if (!json_is_integer(v))
			return refuse(f, settings_describe(v, got, sizeof got), msg,
				      "an integer >= %.0f", f->lo);
		if ((rc = settings_check_number(f, (double)json_integer_value(v),
						 settings_describe(v, got, sizeof got), msg)) < 0)
			return rc;
		if (f->kind == SETTINGS_INT)
			*AT(s, f, int) = (int)json_integer_value(v);
		else
			*AT(s, f, int64_t) = json_integer_value(v);
		return 0;
	case SETTINGS_REAL:
		if (!json_is_number(v))
			return settings_check_number(f, NAN, settings_describe(v, got, sizeof got),
						     msg);
		if ((rc = settings_check_number(f, json_number_value(v),
						 settings_describe(v, got, sizeof got), msg)) < 0)
			return rc;
		*AT(s, f, double) = json_number_value(v);
		return 0;
	case SETTINGS_BOOL:
		if (!json_is_boolean(v))
			return qual_fail(msg, QUAL_EINVAL, "'%s' must be true or false, got %s",
					 f->key, settings_describe(v, got, sizeof got));
		*AT(s, f, bool) = json_is_true(v);
		return 0;
	case SETTINGS_WORD: {
		char words[128] = "";

		for (int i = 0; f->words[i]; i++)
			snprintf(words + strlen(words), sizeof words - strlen(words), "%s%s",
				 i == 0 ? "" : f->words[i + 1] ? ", " : " or ", f->words[i]);
		if (!json_is_string(v) && f->type_first)
			return qual_fail(msg, QUAL_EINVAL, "'%s' must be a string, got %s", f->key,
					 settings_describe(v, got, sizeof got));
		w = json_string_value(v);
		for (int i = 0; w && f->words[i]; i++)
			if (!strcmp(w, f->words[i])) {
				*AT(s, f, int) = i;
				return 0;
			}
		if (w)
			snprintf(got, sizeof got, "'%s'", settings_clip(w, clipped, CLIP_MAX));
		return qual_fail(msg, QUAL_EINVAL, "'%s' must be %s, got %s", f->key, words,
				 w ? got : settings_describe(v, got, sizeof got));
	}
	case SETTINGS_LIST:
		if (append)
			return take_entry(f, AT(s, f, char **), v, list_len(*AT(s, f, char **)),
					  msg);
		return take_list(f, AT(s, f, char **), v, msg);
	}
	return QUAL_EINVAL;
}

int settings_check_value(const struct settings_field *f, double x, struct qual_msg *msg)
{
	char got[64];

	if (x == f->def)
		return 0;
	if (f->kind == SETTINGS_INT || f->kind == SETTINGS_I64)
		snprintf(got, sizeof got, "%.0f", x);
	else
		describe_real(x, got, sizeof got);
	return settings_check_number(f, x, got, msg);
}

int settings_check_max_pairs(int pairs, int max_pairs, struct qual_msg *msg)
{
	if (max_pairs && max_pairs < pairs)
		return qual_fail(msg, QUAL_EINVAL, "'max_pairs' must be an integer >= %d, got %d",
				 pairs, max_pairs);
	return 0;
}

int settings_check(const struct qual_settings *s, struct qual_msg *msg)
{
	int rc;

	if ((rc = settings_check_max_pairs(s->pairs, s->max_pairs, msg)) < 0)
		return rc;
	for (size_t i = 0; i < NFIELDS; i++) {
		const struct settings_field *f = &fields[i];
		size_t n = 0;

		if (f->kind != SETTINGS_LIST)
			continue;
		/* The count is checked here, once every entry is in, at both
		 * doors: a request's array and qual-run's repeated option are
		 * refused for the same first bad entry, or else for the same
		 * count, whatever order their entries came in. */
		if (list_len(*AT(s, f, char **)) > f->max_n)
			return qual_fail(msg, QUAL_EINVAL, "'%s' has %zu entries, at most %zu are "
					 "allowed", f->key, list_len(*AT(s, f, char **)), f->max_n);
		if (!f->max_json)
			continue;
		for (char **p = *AT(s, f, char **); p && *p; p++)
			n += settings_json_bytes(*p) + 1;
		if (n > f->max_json)
			return qual_fail(msg, QUAL_EINVAL, "'%s' take %zu bytes as JSON with every "
					 "character escaped, at most %zu are allowed", f->key, n,
					 f->max_json);
	}
	return 0;
}

int settings_check_values(const struct qual_settings *s, struct qual_msg *msg)
{
	int rc;

	for (size_t i = 0; i < NFIELDS; i++) {
		const struct settings_field *f = &fields[i];
		double x;

		switch (f->kind) {
		case SETTINGS_INT: x = *AT(s, f, int); break;
		case SETTINGS_I64: x = (double)*AT(s, f, int64_t); break;
		case SETTINGS_REAL: x = *AT(s, f, double); break;
		default: continue;
		}
		if ((rc = settings_check_value(f, x, msg)) < 0)
			return rc;
	}
	return settings_check(s, msg);
}

int settings_from_json(struct qual_settings *s, json_t *o, unsigned door,
		       struct qual_msg *msg)
{
	int rc;

	for (size_t i = 0; i < NFIELDS; i++) {
		json_t *v = json_object_get(o, fields[i].key);

		if (v && (fields[i].doors & door) && (rc = take(s, &fields[i], v, false, msg)) < 0)
			return rc;
	}
	return settings_check(s, msg);
}

/* Option text as JSON would read it, so that "--alpha 0" and {"alpha":0}
 * are one value: an integer when it is digits alone, a real when strtod
 * reads all of it as a decimal number, else NULL. */
static json_t *number_json(const char *text)
{
	char *end;

	if (!text[0] || strspn(text, "+-.0123456789eE") != strlen(text))
		return NULL;
	if (strspn(text + (text[0] == '-'), "0123456789") == strlen(text + (text[0] == '-'))) {
		long long x;

		errno = 0;
		x = strtoll(text, &end, 10);
		return errno || *end ? NULL : json_integer(x);
	}
	{
		double x = strtod(text, &end);

		return *end || !isfinite(x) ? NULL : json_real(x);
	}
}

json_t *settings_option_json(const struct settings_field *f, const char *arg)
{
	if (f->kind == SETTINGS_BOOL)
		return json_true();
	if (f->kind == SETTINGS_INT || f->kind == SETTINGS_I64 || f->kind == SETTINGS_REAL) {
		json_t *v = number_json(arg);

		return v ? v : json_string(arg);
	}
	return json_string(arg);
}

int settings_from_option(struct qual_settings *s, const struct settings_field *f,
			 const char *arg, struct qual_msg *msg)
{
	json_t *v = settings_option_json(f, arg);
	char clipped[CLIP_MAX + 4], got[CLIP_MAX + 8];
	int rc;

	if (!v)
		return qual_fail(msg, QUAL_EINVAL, "'%s' must be valid UTF-8 text", f->key);
	if (json_is_string(v) && f->kind != SETTINGS_WORD && f->kind != SETTINGS_LIST) {
		/* Not a number: said as given, as a JSON string is "a string". */
		snprintf(got, sizeof got, "'%s'", settings_clip(arg, clipped, CLIP_MAX));
		rc = f->kind == SETTINGS_REAL ? settings_check_number(f, NAN, got, msg) :
		     refuse(f, got, msg, "an integer >= %.0f", f->lo);
	} else {
		rc = take(s, f, v, true, msg);
	}
	json_decref(v);
	return rc;
}

json_t *settings_list_json(char *const *list)
{
	json_t *a = json_array();

	for (char *const *p = list; p && *p; p++)
		json_array_append_new(a, json_string(*p));
	return a;
}

/* Whether f of s is its default (and so left out where only what was set
 * is written). */
static bool is_default(const struct qual_settings *s, const struct settings_field *f)
{
	switch (f->kind) {
	case SETTINGS_INT: return *AT(s, f, int) == (int)f->def;
	case SETTINGS_I64: return *AT(s, f, int64_t) == (int64_t)f->def;
	case SETTINGS_REAL: return *AT(s, f, double) == f->def;
	case SETTINGS_BOOL: return *AT(s, f, bool) == (f->def != 0);
	case SETTINGS_WORD: return *AT(s, f, int) == (int)f->def;
	case SETTINGS_LIST: return *AT(s, f, char **) == NULL;
	}
	return true;
}

/* Written whatever their value, so that a stored job and a worker's
 * command line say them even where they are the defaults. */
static bool always(const struct settings_field *f)
{
	return !strcmp(f->key, "pairs") || !strcmp(f->key, "alpha") ||
	       !strcmp(f->key, "margin") || !strcmp(f->key, "seed");
}

void settings_to_json(const struct qual_settings *s, json_t *o)
{
	for (size_t i = 0; i < NFIELDS; i++) {
		const struct settings_field *f = &fields[i];
		json_t *v = NULL;

		if (!(f->doors & SETTINGS_QUALD) ||
		    (is_default(s, f) && !always(f) && strcmp(f->key, "compile_only")))
			continue;
		switch (f->kind) {
		case SETTINGS_INT: v = json_integer(*AT(s, f, int)); break;
		case SETTINGS_I64: v = json_integer(*AT(s, f, int64_t)); break;
		case SETTINGS_REAL: v = json_real(*AT(s, f, double)); break;
		case SETTINGS_BOOL: v = json_boolean(*AT(s, f, bool)); break;
		case SETTINGS_WORD: v = json_string(f->words[*AT(s, f, int)]); break;
		case SETTINGS_LIST: v = settings_list_json(*AT(s, f, char **)); break;
		}
		json_object_set_new(o, f->key, v);
	}
}

/* One field of s as qual-run's options. An arm's compiler option is
 * written --OPTION=VALUE, so that one starting with '-' is never taken for
 * an option of qual-run's; a case or a fixture folder as two arguments. */
static void field_to_argv(const struct qual_settings *s, const struct settings_field *f,
			  struct strv *argv)
{
	switch (f->kind) {
	case SETTINGS_INT: strv_pushf(argv, "--%s=%d", f->option, *AT(s, f, int)); break;
	case SETTINGS_I64:
		strv_pushf(argv, "--%s=%lld", f->option, (long long)*AT(s, f, int64_t));
		break;
	case SETTINGS_REAL: strv_pushf(argv, "--%s=%.17g", f->option, *AT(s, f, double)); break;
	case SETTINGS_BOOL:
		if (*AT(s, f, bool))
			strv_pushf(argv, "--%s", f->option);
		break;
	case SETTINGS_WORD:
		strv_pushf(argv, "--%s=%s", f->option, f->words[*AT(s, f, int)]);
		break;
	case SETTINGS_LIST:
		for (char **p = *AT(s, f, char **); *p; p++) {
			if (f->max_json) {
				strv_pushf(argv, "--%s=%s", f->option, *p);
				continue;
			}
			strv_pushf(argv, "--%s", f->option);
			strv_push(argv, *p);
		}
		break;
	}
}

void settings_to_argv(const struct qual_settings *s, struct strv *argv)
{
	/* The fields always written, then the lists, then the rest: the
	 * order quald's workers have always had. */
	for (int pass = 0; pass < 3; pass++)
		for (size_t i = 0; i < NFIELDS; i++) {
			const struct settings_field *f = &fields[i];
			int mine = always(f) ? 0 : f->kind == SETTINGS_LIST ? 1 : 2;

			if (mine != pass || !(f->doors & SETTINGS_RUN) ||
			    (is_default(s, f) && !always(f)))
				continue;
			field_to_argv(s, f, argv);
		}
}

json_t *settings_table_json(void)
{
	static const char *const kinds[] = {"int", "i64", "real", "bool", "word", "list"};
	static const char *const doors[] = {"", "run", "quald", "both"};
	json_t *a = json_array();

	for (size_t i = 0; i < NFIELDS; i++) {
		const struct settings_field *f = &fields[i];
		json_t *o = json_pack("{s:s,s:o,s:s,s:s}", "key", f->key, "option",
				      f->option ? json_string(f->option) : json_null(), "kind",
				      kinds[f->kind], "doors", doors[f->doors]);

		switch (f->kind) {
		case SETTINGS_INT:
		case SETTINGS_I64:
		case SETTINGS_REAL:
			json_object_update_new(o, json_pack("{s:f,s:f,s:b,s:b,s:f,s:f}", "lo", f->lo,
							    "hi", f->hi, "lo_open", f->lo_open,
							    "hi_open", f->hi_open, "floor", f->floor,
							    "default", f->def));
			break;
		case SETTINGS_BOOL:
			json_object_set_new(o, "default", json_boolean(f->def != 0));
			break;
		case SETTINGS_WORD: {
			json_t *w = json_array();

			for (int k = 0; f->words[k]; k++)
				json_array_append_new(w, json_string(f->words[k]));
			json_object_set_new(o, "words", w);
			json_object_set_new(o, "default", json_string(f->words[(int)f->def]));
			break;
		}
		case SETTINGS_LIST:
			json_object_update_new(o, json_pack("{s:I,s:I,s:I,s:b}", "max_len",
							    (json_int_t)f->max_len, "max_n",
							    (json_int_t)f->max_n, "max_json",
							    (json_int_t)f->max_json, "allow_empty",
							    f->allow_empty));
			break;
		}
		json_array_append_new(a, o);
	}
	return a;
}
