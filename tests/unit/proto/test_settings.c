/* proto/settings.c: the table's words agree with the enums they stand for,
 * both codecs refuse a value with one message, the stored JSON and the argv
 * read back to the same settings, and what may grow a line is bounded. */
#include <stdlib.h>
#include <string.h>

#include "common/gate.h"
#include "common/lines.h"
#include "proto/settings.h"
#include "tests/unit/test_main.h"

/* The refusal of key's value text at quald's door ({"key": text}) and at
 * qual-run's (--option text), which must be one message; "" when both
 * accept. */
static void refusal(const char *key, const char *json_text, const char *opt_text,
		    char *out, size_t n)
{
	const struct settings_field *f = settings_find_key(key);
	struct qual_settings a, b;
	struct qual_msg ma = {{0}}, mb = {{0}};
	char doc[256];
	json_t *o;
	int ra, rb;

	assert_non_null(f);
	snprintf(doc, sizeof doc, "{\"%s\": %s}", key, json_text);
	o = json_loads(doc, JSON_DECODE_ANY, NULL);
	assert_non_null(o);
	settings_init(&a);
	settings_init(&b);
	ra = settings_from_json(&a, o, SETTINGS_QUALD, &ma);
	rb = settings_from_option(&b, f, opt_text, &mb);
	if (rb == 0)
		rb = settings_check(&b, &mb);
	assert_int_equal(ra, rb);
	if (ra < 0)
		assert_string_equal(ma.text, mb.text);
	snprintf(out, n, "%s", ra < 0 ? ma.text : "");
	json_decref(o);
	settings_release(&a);
	settings_release(&b);
}

static void test_words_match_enums(void **state)
{
	const struct settings_field *f;

	(void)state;
	f = settings_find_key("gate_slower");
	assert_string_equal(f->words[GATE_BEYOND], gate_rule_name(GATE_BEYOND));
	assert_string_equal(f->words[GATE_SIGNIFICANT], gate_rule_name(GATE_SIGNIFICANT));
	f = settings_find_key("undecided");
	assert_string_equal(f->words[UNDECIDED_PASS], gate_undecided_name(UNDECIDED_PASS));
	assert_string_equal(f->words[UNDECIDED_REGRESSION],
			    gate_undecided_name(UNDECIDED_REGRESSION));
	assert_ptr_equal(settings_find_option("baseline-opt"),
			 settings_find_key("baseline_options"));
}

static void test_same_refusal(void **state)
{
	char m[1100];

	(void)state;
	refusal("pairs", "5", "5", m, sizeof m);
	assert_non_null(strstr(m, "'pairs' must be an integer >= 30, got 5"));
	assert_non_null(strstr(m, "at least 30"));
	refusal("alpha", "0", "0", m, sizeof m);
	assert_non_null(strstr(m, "'alpha' must be a number with 0 < alpha <= 0.5, got 0"));
	refusal("alpha", "1e-12", "1e-12", m, sizeof m);
	assert_non_null(strstr(m, "'alpha' must be at least 1e-09, got 1e-12"));
	refusal("max_seconds", "0.0005", "0.0005", m, sizeof m);
	assert_non_null(strstr(m, "'max_seconds' must be at least 0.001"));
	refusal("margin", "1e-320", "1e-320", m, sizeof m);
	assert_non_null(strstr(m, "'margin' must be 0 or at least 1e-06"));
	refusal("margin", "-0.1", "-0.1", m, sizeof m);
	assert_non_null(strstr(m, "'margin' must be a number with 0 <= margin <= 0.5, got -0.1"));
	refusal("compile_timeout", "0.01", "0.01", m, sizeof m);
	assert_non_null(strstr(m, "'compile_timeout' must be a number of seconds in [0.1, "
			       "86400], got 0.01"));
	refusal("seed", "2147483648", "2147483648", m, sizeof m);
	assert_non_null(strstr(m, "'seed' must be an integer <= 2147483647, got 2147483648"));
	refusal("mode", "\"WGP\"", "WGP", m, sizeof m);
	assert_string_equal(m, "'mode' must be default, cu or wgp, got 'WGP'");
	refusal("undecided", "\"never\"", "never", m, sizeof m);
	assert_string_equal(m, "'undecided' must be pass or regression, got 'never'");
	/* Accepted at both doors: the extremes. */
	refusal("margin", "0", "0", m, sizeof m);
	assert_string_equal(m, "");
	refusal("max_seconds", "0.001", "0.001", m, sizeof m);
	assert_string_equal(m, "");
	refusal("alpha", "0.5", "0.5", m, sizeof m);
	assert_string_equal(m, "");
}

/* 64 options of 4095 bytes of 'é' (each legal alone) are refused at both
 * doors with one message; what is accepted keeps a start line's options
 * within LINES_MAX with room for the rest. */
static void test_options_bound(void **state)
{
	const struct settings_field *f = settings_find_key("baseline_options");
	struct qual_settings a, b;
	struct qual_msg ma = {{0}}, mb = {{0}};
	char *opt = malloc(4096);
	json_t *o = json_object(), *list = json_array();
	int ra = 0, rb = 0;

	(void)state;
	memset(opt, 0, 4096);
	for (int i = 0; i < 2047; i++)
		memcpy(opt + 2 * i, "\xc3\xa9", 2);
	settings_init(&a);
	settings_init(&b);
	for (int i = 0; i < 64; i++) {
		json_array_append_new(list, json_string(opt));
		if (rb == 0)
			rb = settings_from_option(&b, f, opt, &mb);
	}
	json_object_set_new(o, "baseline_options", list);
	ra = settings_from_json(&a, o, SETTINGS_QUALD, &ma);
	if (rb == 0)
		rb = settings_check(&b, &mb);
	assert_true(ra < 0);
	assert_int_equal(ra, rb);
	assert_string_equal(ma.text, mb.text);
	assert_non_null(strstr(ma.text, "'baseline_options' take"));
	/* Both arms, the cases and the fixture folders at their bounds, all
	 * escaped the longest way, stay well under one line. */
	assert_true(2 * SETTINGS_MAX_OPTIONS_JSON + 64 * (128 * 6 + 3) +
		    SETTINGS_MAX_FIXTURES * (4095 * 6 + 3) + 4 * (4095 * 6 + 3) < LINES_MAX / 2);
	json_decref(o);
	settings_release(&a);
	settings_release(&b);
	free(opt);
}

/* The stored JSON and the argv say the same settings. */
static void test_round_trip(void **state)
{
	const char *doc = "{\"pairs\":40,\"alpha\":0.01,\"margin\":0,\"seed\":7,"
			  "\"max_pairs\":80,\"max_seconds\":0.5,\"mode\":\"cu\","
			  "\"gate_slower\":\"significant\",\"compile_only\":true,"
			  "\"cases\":[\"a\",\"b\"],\"candidate_options\":[\"-O0\"],"
			  "\"compile_timeout\":3}";
	struct qual_settings s, t, u;
	struct qual_msg msg = {{0}};
	json_t *o = json_loads(doc, 0, NULL), *back = json_object();
	struct strv argv;

	(void)state;
	settings_init(&s);
	settings_init(&t);
	settings_init(&u);
	assert_int_equal(settings_from_json(&s, o, SETTINGS_QUALD, &msg), 0);
	settings_to_json(&s, back);
	assert_true(json_equal(o, back) || json_object_size(back) >= json_object_size(o));
	assert_int_equal(settings_from_json(&t, back, SETTINGS_QUALD, &msg), 0);
	strv_init(&argv);
	settings_to_argv(&s, &argv);
	for (size_t i = 0; i < argv.n; i++) {
		char *name = argv.v[i] + 2, *eq = strchr(name, '=');
		const char *val = eq ? eq + 1 : NULL;
		const struct settings_field *f;

		if (eq)
			*eq = '\0';
		f = settings_find_option(name);
		assert_non_null(f);
		if (!eq && f->kind == SETTINGS_LIST)
			val = argv.v[++i]; /* --case NAME */
		assert_int_equal(settings_from_option(&u, f, val, &msg), 0);
	}
	assert_int_equal(settings_check(&u, &msg), 0);
	assert_int_equal(t.pairs, 40);
	assert_int_equal(u.pairs, 40);
	assert_true(u.alpha == s.alpha && u.margin == 0 && u.max_seconds == 0.5);
	assert_int_equal(u.mode, 1);
	assert_int_equal(u.gate_slower, GATE_SIGNIFICANT);
	assert_true(u.compile_only);
	assert_string_equal(u.cases[1], "b");
	assert_string_equal(u.candidate_options[0], "-O0");
	assert_null(u.baseline_options);
	assert_true(u.compile_timeout_s == 3);
	strv_release(&argv);
	json_decref(o);
	json_decref(back);
	settings_release(&s);
	settings_release(&t);
	settings_release(&u);
}

QUAL_TESTS(
	cmocka_unit_test(test_words_match_enums),
	cmocka_unit_test(test_same_refusal),
	cmocka_unit_test(test_options_bound),
	cmocka_unit_test(test_round_trip),
)
