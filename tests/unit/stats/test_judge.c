/* stats/judge.c: cases that are not applicable to the run's target. They
 * get their own verdict with its reason, stay out of Holm's correction and
 * of the run verdict, never make a timed run not_timed, are counted in the
 * verdict line, and come back the same from stored lines (qual-judge). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include "tests/unit/test_main.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "stats/judge.h"

#define WHY "case 'w' runs on sm_90a only, the target is sm_80"

/* 30 pairs in 15 blocks, the candidate slower in every one by slow. */
static void add_pairs(struct judge_case *c, double slow)
{
	for (int p = 0; p < 30; p++)
		judge_case_add_pair(c, 1000.0 + p, (1000.0 + p) * slow, p % 2, 1 + p / 2);
}

/* Runs judge_finish, returning its lines (a new array) and the verdict. */
static json_t *finish(struct judge *j, enum run_verdict *v, bool *not_timed)
{
	struct stats_settings s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_t *lines = json_array();

	assert_non_null(f);
	stats_settings_init(&s);
	*v = judge_finish(j, &s, f, not_timed);
	fclose(f);
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		json_t *o = json_loads(line, 0, NULL);
		assert_non_null(o);
		json_array_append_new(lines, o);
	}
	free(buf);
	return lines;
}

/* The case_verdict line of name in lines (borrowed), or NULL. */
static json_t *case_verdict(json_t *lines, const char *name)
{
	size_t i;
	json_t *o;

	json_array_foreach(lines, i, o)
		if (strcmp(json_string_value(json_object_get(o, "type")), "case_verdict") == 0 &&
		    strcmp(json_string_value(json_object_get(o, "case")), name) == 0)
			return o;
	return NULL;
}

static const char *str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* p_holm of case "a" when "a" and "b" are timed, with or without a third,
 * not applicable case "w" between them. */
static double p_holm_of_a(bool with_w, json_t **out)
{
	struct judge j;
	enum run_verdict v;
	bool not_timed;
	double p;

	judge_init(&j);
	j.timed = true;
	add_pairs(judge_case_get(&j, "a"), 1.05);
	if (with_w)
		judge_case_not_applicable(judge_case_get(&j, "w"), WHY);
	add_pairs(judge_case_get(&j, "b"), 1.0);
	*out = finish(&j, &v, &not_timed);
	assert_false(not_timed);
	assert_int_equal(v, RUN_REGRESSION);
	p = json_number_value(json_object_get(case_verdict(*out, "a"), "p_holm"));
	judge_release(&j);
	return p;
}

static void test_not_applicable_verdict(void **state)
{
	json_t *with, *without, *w, *last;
	double p_with, p_without;

	(void)state;
	p_without = p_holm_of_a(false, &without);
	p_with = p_holm_of_a(true, &with);
	/* Holm over the two timed cases only. */
	assert_true(p_with == p_without);
	assert_true(p_with > 0 && p_with < 0.05);
	w = case_verdict(with, "w");
	assert_non_null(w);
	assert_string_equal(str(w, "verdict"), "not_applicable");
	assert_string_equal(str(w, "not_applicable_because"), WHY);
	assert_null(json_object_get(w, "p_holm"));
	assert_null(json_object_get(w, "failed_arm"));
	/* The verdict line lists it and counts it. */
	last = json_array_get(with, json_array_size(with) - 1);
	assert_string_equal(str(last, "type"), "verdict");
	assert_string_equal(str(last, "verdict"), "regression");
	assert_int_equal(json_array_size(json_object_get(last, "cases")), 3);
	assert_string_equal(str(json_array_get(json_object_get(last, "cases"), 1), "verdict"),
			    "not_applicable");
	assert_int_equal(json_integer_value(json_object_get(last, "not_applicable")), 1);
	last = json_array_get(without, json_array_size(without) - 1);
	assert_null(json_object_get(last, "not_applicable"));
	json_decref(with);
	json_decref(without);
}

static void test_not_applicable_not_timed(void **state)
{
	struct judge j;
	enum run_verdict v;
	bool not_timed;
	json_t *lines;

	(void)state;
	/* Timed cases beside it: the run is judged on them, even where the
	 * judge was not told the run had a GPU (stored lines without one). */
	judge_init(&j);
	add_pairs(judge_case_get(&j, "a"), 1.0);
	judge_case_not_applicable(judge_case_get(&j, "w"), WHY);
	lines = finish(&j, &v, &not_timed);
	assert_false(not_timed);
	assert_int_equal(v, RUN_NEUTRAL);
	assert_string_equal(str(json_array_get(lines, json_array_size(lines) - 1), "verdict"),
			    "neutral");
	json_decref(lines);
	judge_release(&j);

	/* A compile-only run: still not_timed, the case still not_applicable. */
	judge_init(&j);
	judge_case_get(&j, "a");
	judge_case_not_applicable(judge_case_get(&j, "w"), WHY);
	lines = finish(&j, &v, &not_timed);
	assert_true(not_timed);
	assert_string_equal(str(case_verdict(lines, "w"), "verdict"), "not_applicable");
	assert_string_equal(str(case_verdict(lines, "a"), "verdict"), "not_timed");
	json_decref(lines);
	judge_release(&j);

	/* A failure recorded against the case outranks it. */
	judge_init(&j);
	judge_case_not_applicable(judge_case_get(&j, "w"), WHY);
	judge_case_fail(judge_case_get(&j, "w"), JUDGE_FAIL_CANDIDATE);
	lines = finish(&j, &v, &not_timed);
	assert_int_equal(v, RUN_FAIL);
	assert_string_equal(str(case_verdict(lines, "w"), "verdict"), "fail");
	json_decref(lines);
	judge_release(&j);
}

static void test_not_applicable_from_lines(void **state)
{
	static const char *stored[] = {
		"{\"type\":\"start\",\"timed\":false}",
		"{\"type\":\"case\",\"case\":\"g-1\",\"identical_code\":true}",
		"{\"type\":\"case\",\"case\":\"w-1\",\"applicable\":false,"
		"\"not_applicable_because\":\"" WHY "\",\"identical_code\":false}",
	};
	struct stats_settings s;
	struct judge j;
	enum run_verdict v;
	bool not_timed;
	char why[128];
	json_t *lines;

	(void)state;
	stats_settings_init(&s);
	judge_init(&j);
	for (size_t i = 0; i < sizeof stored / sizeof stored[0]; i++) {
		json_t *o = json_loads(stored[i], 0, NULL);
		assert_int_equal(judge_take_line(&j, &s, o, why, sizeof why), 0);
		json_decref(o);
	}
	lines = finish(&j, &v, &not_timed);
	assert_true(not_timed);
	assert_string_equal(str(case_verdict(lines, "w-1"), "verdict"), "not_applicable");
	assert_string_equal(str(case_verdict(lines, "w-1"), "not_applicable_because"), WHY);
	assert_string_equal(str(case_verdict(lines, "g-1"), "verdict"), "not_timed");
	json_decref(lines);
	judge_release(&j);
}

QUAL_TESTS(
	cmocka_unit_test(test_not_applicable_verdict),
	cmocka_unit_test(test_not_applicable_not_timed),
	cmocka_unit_test(test_not_applicable_from_lines),
)
