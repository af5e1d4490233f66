/* stats/judge.c: cases that are not applicable to the run's target. They
 * get their own verdict with its reason, stay out of Holm's correction and
 * of the run verdict, never make a timed run not_timed, are counted in the
 * verdict line, and come back the same from stored lines (qual-judge).
 * Block lines: a throttled block's pairs left out, its retake counted, the
 * same verdict from the lines as from the calls; the layout test in the
 * case_verdict and the verdict line. */
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

/* Runs judge_finish under s, returning its lines (a new array) and the
 * verdict. */
static json_t *finish_with(struct judge *j, const struct stats_settings *s,
			   enum run_verdict *v, bool *not_timed)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_t *lines = json_array();

	assert_non_null(f);
	*v = judge_finish(j, s, f, not_timed);
	fclose(f);
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		json_t *o = json_loads(line, 0, NULL);
		assert_non_null(o);
		json_array_append_new(lines, o);
	}
	free(buf);
	return lines;
}

/* judge_finish under the default settings. */
static json_t *finish(struct judge *j, enum run_verdict *v, bool *not_timed)
{
	struct stats_settings s;

	stats_settings_init(&s);
	return finish_with(j, &s, v, not_timed);
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

/* One line of text into the judge, which must take it. */
static void take(struct judge *j, struct stats_settings *s, const char *fmt, ...)
{
	char text[512], why[200];
	va_list ap;
	json_t *o;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	o = json_loads(text, 0, NULL);
	assert_non_null(o);
	if (judge_take_line(j, s, o, why, sizeof why) != 0)
		fail_msg("refused %s: %s", text, why);
	json_decref(o);
}

static void take_pair(struct judge *j, struct stats_settings *s, const char *name,
		      int pair, int block, bool cand_first, double b, double c)
{
	take(j, s, "{\"type\":\"pair\",\"case\":\"%s\",\"pair\":%d,\"block\":%d,"
	     "\"order\":\"%s\",\"baseline_ns\":%.17g,\"candidate_ns\":%.17g}", name, pair,
	     block, cand_first ? "candidate_first" : "baseline_first", b, c);
}

static json_int_t int_at(json_t *o, const char *a, const char *b)
{
	json_t *x = json_object_get(o, a);
	return json_integer_value(b ? json_object_get(x, b) : x);
}

/* 15 blocks of 2 pairs, equal times but in block 3, where the first
 * attempt ran 20% slower (the GPU throttled), its line says so, and its
 * retake ran equal. The case stays at 30 pairs, none of the slow ones. */
static void stored_throttled(struct judge *j, struct stats_settings *s, bool retake)
{
	take(j, s, "{\"type\":\"start\",\"timed\":true,\"settings\":{}}");
	for (int blk = 1; blk <= 15; blk++) {
		for (int k = 0; k < 2; k++) {
			int p = 2 * (blk - 1) + k;
			take_pair(j, s, "t-1", p, blk, (k + blk - 1) % 2, 1000 + p,
				  blk == 3 ? 1200 + p : 1000 + p + (p % 3 == 0));
		}
		take(j, s, "{\"type\":\"block\",\"case\":\"t-1\",\"block\":%d,"
		     "\"throttled\":%s}", blk, blk == 3 ? "true" : "false");
		if (blk == 3 && retake) {
			for (int k = 0; k < 2; k++) {
				int p = 2 * (blk - 1) + k;
				take_pair(j, s, "t-1", p, blk, (k + blk - 1) % 2, 1000 + p,
					  1000 + p);
			}
			take(j, s, "{\"type\":\"block\",\"case\":\"t-1\",\"block\":3,"
			     "\"retake\":1,\"throttled\":false}");
		}
	}
}

static void test_throttled_block_excluded(void **state)
{
	struct stats_settings s;
	struct judge j;
	enum run_verdict v;
	bool not_timed;
	json_t *lines, *cv;

	(void)state;
	/* Not retaken: 28 pairs, one block excluded. */
	stats_settings_init(&s);
	judge_init(&j);
	stored_throttled(&j, &s, false);
	lines = finish(&j, &v, &not_timed);
	cv = case_verdict(lines, "t-1");
	assert_int_equal(int_at(cv, "n", NULL), 28);
	assert_int_equal(int_at(cv, "blocks", NULL), 14);
	assert_int_equal(int_at(cv, "candidate_slower", NULL), 10); /* none of block 3's */
	assert_int_equal(int_at(cv, "throttling", "throttled_blocks"), 1);
	assert_int_equal(int_at(cv, "throttling", "retaken_blocks"), 0);
	assert_int_equal(int_at(cv, "throttling", "excluded_blocks"), 1);
	json_decref(lines);
	judge_release(&j);
	/* Retaken: the retake's pairs are the block's. */
	judge_init(&j);
	stored_throttled(&j, &s, true);
	lines = finish(&j, &v, &not_timed);
	cv = case_verdict(lines, "t-1");
	assert_int_equal(int_at(cv, "n", NULL), 30);
	assert_int_equal(int_at(cv, "blocks", NULL), 15);
	assert_int_equal(int_at(cv, "candidate_slower", NULL), 10);
	assert_int_equal(int_at(cv, "throttling", "throttled_blocks"), 1);
	assert_int_equal(int_at(cv, "throttling", "retaken_blocks"), 1);
	assert_int_equal(int_at(cv, "throttling", "excluded_blocks"), 0);
	json_decref(lines);
	judge_release(&j);
}

/* What qual-run judges as it times (judge_case_add_pair and
 * judge_case_block, the calls time_pairs makes) and what qual-judge gets
 * from the stored lines give the same case_verdict and verdict lines. */
static void test_throttled_same_from_lines(void **state)
{
	struct stats_settings s;
	struct judge live, stored;
	struct judge_case *c;
	enum run_verdict v1, v2;
	bool nt;
	json_t *a, *b;

	(void)state;
	stats_settings_init(&s);
	judge_init(&live);
	live.timed = true;
	c = judge_case_get(&live, "t-1");
	for (int blk = 1; blk <= 15; blk++) {
		for (int k = 0; k < 2; k++) {
			int p = 2 * (blk - 1) + k;
			judge_case_add_pair(c, 1000 + p, blk == 3 ? 1200 + p : 1000 + p + (p % 3 == 0),
					    (k + blk - 1) % 2, blk);
		}
		judge_case_block(c, blk, 0, blk == 3);
		if (blk == 3) {
			for (int k = 0; k < 2; k++) {
				int p = 2 * (blk - 1) + k;
				judge_case_add_pair(c, 1000 + p, 1000 + p, (k + blk - 1) % 2, blk);
			}
			judge_case_block(c, 3, 1, false);
		}
	}
	a = finish(&live, &v1, &nt);
	judge_init(&stored);
	stored_throttled(&stored, &s, true);
	b = finish(&stored, &v2, &nt);
	assert_int_equal(v1, v2);
	assert_true(json_equal(a, b));
	json_decref(a);
	json_decref(b);
	judge_release(&live);
	judge_release(&stored);
}

static void test_block_line_refused(void **state)
{
	struct stats_settings s;
	struct judge j;
	char why[200];
	const char *bad[] = {
		"{\"type\":\"block\",\"case\":\"t-1\",\"block\":0,\"throttled\":true}",
		"{\"type\":\"block\",\"case\":\"t-1\",\"block\":2}",
		"{\"type\":\"block\",\"case\":\"t-1\",\"block\":2,\"throttled\":1}",
		"{\"type\":\"block\",\"case\":\"t-1\",\"block\":2,\"throttled\":false,"
		"\"retake\":-1}",
	};

	(void)state;
	stats_settings_init(&s);
	judge_init(&j);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		json_t *o = json_loads(bad[i], 0, NULL);
		assert_int_equal(judge_take_line(&j, &s, o, why, sizeof why), -1);
		assert_non_null(strstr(why, "block line"));
		json_decref(o);
	}
	judge_release(&j);
}

/* Case "p" has a placement effect (each block its own offset, 8x the
 * noise), case "q" none (the same noise, and an order effect): "p" alone
 * is layout-sensitive, and the verdict line lists it. */
static void test_layout_in_verdicts(void **state)
{
	struct judge j;
	enum run_verdict v;
	bool nt;
	json_t *lines, *p, *q, *last;
	uint64_t x = 12345;

	(void)state;
	judge_init(&j);
	j.timed = true;
	for (int blk = 1; blk <= 20; blk++) {
		double place = (double)(blk * 7919 % 11) - 5; /* -5..5 ns per 1000 */
		for (int k = 0; k < 2; k++) {
			bool cf = (k + blk - 1) % 2;
			double noise;

			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			noise = (double)(x >> 40) / (double)(1ULL << 24) - 0.5; /* +-0.5 ns */
			judge_case_add_pair(judge_case_get(&j, "p-1"), 1000, 1000 + 8 * place / 5 +
					    noise, cf, blk);
			judge_case_add_pair(judge_case_get(&j, "q-1"), 1000, 1000 + noise +
					    (cf ? 3 : 0), cf, blk);
		}
	}
	lines = finish(&j, &v, &nt);
	p = json_object_get(case_verdict(lines, "p-1"), "layout");
	q = json_object_get(case_verdict(lines, "q-1"), "layout");
	assert_int_equal(json_integer_value(json_object_get(p, "blocks")), 20);
	assert_true(json_is_true(json_object_get(p, "sensitive")));
	assert_true(json_is_false(json_object_get(q, "sensitive")));
	assert_true(json_number_value(json_object_get(p, "between_sd")) >
		    4 * json_number_value(json_object_get(p, "within_sd")));
	assert_true(json_number_value(json_object_get(p, "p_holm")) >=
		    json_number_value(json_object_get(p, "p")));
	last = json_array_get(lines, json_array_size(lines) - 1);
	assert_int_equal(json_array_size(json_object_get(last, "layout_sensitive")), 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(last,
				"layout_sensitive"), 0)), "p-1");
	json_decref(lines);
	judge_release(&j);
}

/* Applies the line text to j and s; returns judge_take_line's result. */
static int take_ret(struct judge *j, struct stats_settings *s, const char *text,
		    char *why, size_t whylen)
{
	json_t *o = json_loads(text, 0, NULL);
	int rc;

	assert_non_null(o);
	rc = judge_take_line(j, s, o, why, whylen);
	json_decref(o);
	return rc;
}

/* The start line's pairs, pairs_per_block and max_pairs give the looks, its
 * gate_* and undecided the gate; bad ones are refused by name; a line
 * without max_pairs (or under one_load) keeps one look. */
static void test_sampling_settings_from_lines(void **state)
{
	struct stats_settings s;
	struct judge j;
	char why[256];

	(void)state;
	judge_init(&j);
	stats_settings_init(&s);
	assert_int_equal(take_ret(&j, &s, "{\"type\":\"start\",\"timed\":true,\"settings\":"
			      "{\"pairs\":30,\"pairs_per_block\":2,\"max_pairs\":240,"
			      "\"max_seconds\":20.0,\"gate_slower\":\"significant\","
			      "\"gate_faster\":\"beyond\",\"undecided\":\"regression\"}}",
			      why, sizeof why), 0);
	assert_int_equal(s.first_look, 15);
	assert_int_equal(s.last_look, 120);
	assert_int_equal(s.gate_slower, GATE_SIGNIFICANT);
	assert_int_equal(s.gate_faster, GATE_BEYOND);
	assert_int_equal(s.undecided, UNDECIDED_REGRESSION);
	assert_false(s.sample_identical);
	assert_int_equal(take_ret(&j, &s, "{\"type\":\"start\",\"settings\":"
				  "{\"sample_identical\":true}}", why, sizeof why), 0);
	assert_true(s.sample_identical);
	assert_int_equal(take_ret(&j, &s, "{\"type\":\"start\",\"settings\":"
				  "{\"sample_identical\":1}}", why, sizeof why), -1);
	assert_non_null(strstr(why, "settings.sample_identical must be a boolean"));
	assert_int_equal(take_ret(&j, &s, "{\"type\":\"start\",\"settings\":{\"pairs\":31,"
			      "\"pairs_per_block\":2,\"max_pairs\":31}}", why, sizeof why), 0);
	assert_int_equal(s.first_look, 16);
	assert_int_equal(s.last_look, 16);
	/* look_growth as written; a line without it doubles. */
	assert_int_equal(take_ret(&j, &s, "{\"type\":\"start\",\"settings\":{\"pairs\":60,"
			      "\"pairs_per_block\":4,\"max_pairs\":3840,\"look_growth\":4}}",
			      why, sizeof why), 0);
	assert_int_equal(s.look_growth, 4);
	assert_int_equal(take_ret(&j, &s, "{\"type\":\"start\",\"settings\":{\"pairs\":60,"
			      "\"pairs_per_block\":4,\"max_pairs\":3840}}", why, sizeof why), 0);
	assert_int_equal(s.look_growth, 2);
	assert_int_equal(take_ret(&j, &s, "{\"type\":\"start\",\"settings\":{\"pairs\":60,"
			      "\"look_growth\":1}}", why, sizeof why), -1);
	assert_non_null(strstr(why, "settings.look_growth must be an integer from 2 to 16"));
	assert_int_equal(take_ret(&j, &s, "{\"type\":\"start\",\"settings\":{\"pairs\":30,"
			      "\"pairs_per_block\":30,\"max_pairs\":240,\"one_load\":true}}",
			      why, sizeof why), 0);
	assert_int_equal(s.first_look, 0);
	assert_int_equal(take_ret(&j, &s, "{\"type\":\"start\",\"settings\":{\"pairs\":30}}",
			      why, sizeof why), 0);
	assert_int_equal(s.first_look, 0);
	assert_int_equal(s.last_look, 0);
	assert_int_equal(take_ret(&j, &s, "{\"type\":\"start\",\"settings\":{\"gate_slower\":"
			      "\"always\"}}", why, sizeof why), -1);
	assert_non_null(strstr(why, "settings.gate_slower must be \"beyond\" or \"significant\""));
	assert_int_equal(take_ret(&j, &s, "{\"type\":\"start\",\"settings\":{\"undecided\":3}}",
			      why, sizeof why), -1);
	assert_non_null(strstr(why, "settings.undecided must be \"pass\" or \"regression\""));
	assert_int_equal(take_ret(&j, &s, "{\"type\":\"start\",\"settings\":{\"pairs\":30,"
			      "\"max_pairs\":20}}", why, sizeof why), -1);
	assert_non_null(strstr(why, "settings.max_pairs (20) is below its pairs (30)"));
	assert_int_equal(take_ret(&j, &s, "{\"type\":\"start\",\"settings\":{\"max_pairs\":"
			      "\"many\"}}", why, sizeof why), -1);
	assert_non_null(strstr(why, "settings.max_pairs must be an integer"));
	judge_release(&j);
}

/* n blocks of two pairs each for c, block b's ratio ratio(b), blocks
 * numbered from first. */
static void add_blocks(struct judge_case *c, int first, int n, double centre, double spread)
{
	for (int b = first; b < first + n; b++) {
		double r = centre + spread * sin(1.7 * b + 0.4);

		judge_case_add_pair(c, 1000.0, 1000.0 * r, false, b);
		judge_case_add_pair(c, 1000.0, 1000.0 * r, true, b);
	}
}

/* Between rounds, judge_undecided names the cases that need more blocks;
 * at the end, the case_verdict says whether a case is decided and why
 * sampling stopped, and the verdict line's gate names the rules and the
 * cases that made the verdict. */
static void test_undecided_and_gate(void **state)
{
	struct stats_settings s;
	struct judge j;
	enum run_verdict v;
	bool need[3], not_timed;
	json_t *lines, *last, *gate;

	(void)state;
	judge_init(&j);
	j.timed = true;
	stats_settings_init(&s);
	s.first_look = 15;
	s.last_look = 60;
	add_blocks(judge_case_get(&j, "fast"), 1, 15, 1.08, 0.01);  /* slower, beyond */
	add_blocks(judge_case_get(&j, "edge"), 1, 15, 1.01, 0.02);  /* straddles 1.01 */
	add_blocks(judge_case_get(&j, "same"), 1, 15, 1.0, 0.002);  /* equivalent */
	assert_int_equal(judge_undecided(&j, &s, need, 3), 1);
	assert_false(need[0]);
	assert_true(need[1]);
	assert_false(need[2]);
	/* Stopped short of the last look: the time cap. */
	lines = finish_with(&j, &s, &v, &not_timed);
	assert_int_equal(v, RUN_REGRESSION);
	assert_true(json_is_true(json_object_get(case_verdict(lines, "fast"), "decided")));
	assert_true(json_is_true(json_object_get(case_verdict(lines, "fast"), "beyond_margin")));
	assert_string_equal(str(case_verdict(lines, "fast"), "stopped"), "decided");
	assert_true(json_is_false(json_object_get(case_verdict(lines, "edge"), "decided")));
	assert_string_equal(str(case_verdict(lines, "edge"), "stopped"), "max_seconds");
	assert_string_equal(str(case_verdict(lines, "same"), "verdict"), "equivalent");
	last = json_array_get(lines, json_array_size(lines) - 1);
	gate = json_object_get(last, "gate");
	assert_string_equal(str(gate, "slower"), "beyond");
	assert_string_equal(str(gate, "undecided"), "pass");
	assert_int_equal(json_array_size(json_object_get(gate, "regression_cases")), 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(gate,
				"regression_cases"), 0)), "fast");
	json_decref(lines);
	/* The edge case timed to the last look: stopped at max_pairs; under
	 * undecided=regression it makes a regression of its own. */
	add_blocks(judge_case_get(&j, "edge"), 16, 45, 1.01, 0.02);
	j.cases[0].npairs = 0;  /* drop "fast": untimed now */
	s.undecided = UNDECIDED_REGRESSION;
	lines = finish_with(&j, &s, &v, &not_timed);
	if (json_is_false(json_object_get(case_verdict(lines, "edge"), "decided"))) {
		assert_string_equal(str(case_verdict(lines, "edge"), "stopped"), "max_pairs");
		assert_int_equal(v, RUN_REGRESSION);
		gate = json_object_get(json_array_get(lines, json_array_size(lines) - 1), "gate");
		assert_string_equal(json_string_value(json_array_get(json_object_get(gate,
					"regression_cases"), 0)), "edge");
	} else {
		fail_msg("the edge case was decided: %s",
			 str(case_verdict(lines, "edge"), "verdict"));
	}
	json_decref(lines);
	judge_release(&j);
}

/* Why an undecided case stopped, from the lines: its planned blocks reach
 * the last look even when the last block was throttled and left out
 * (max_pairs); short of it, after a line that stopped GPU work or a
 * machine error (a failed session), gpu_stopped; else max_seconds. */
static void test_stop_reasons(void **state)
{
	static const char *const stops[] = {
		NULL,
		"{\"type\":\"error\",\"stage\":\"time\",\"code\":\"gpu_fault\",\"arm\":null,"
		"\"case\":null,\"message\":\"gpu work stopped\",\"gpu\":\"faulted\"}",
		"{\"type\":\"error\",\"stage\":\"time\",\"code\":\"session_failed\",\"arm\":null,"
		"\"case\":null,\"message\":\"session 6 of 8 ended: status 1\"}",
	};
	static const char *const want[] = {"max_seconds", "gpu_stopped", "gpu_stopped"};
	struct stats_settings s;
	struct judge j;
	enum run_verdict v;
	bool not_timed;
	json_t *lines;

	(void)state;
	stats_settings_init(&s);
	s.first_look = 15;
	s.last_look = 60;
	/* Blocks 1-59 kept, block 60 throttled: its pairs are out, yet the
	 * case was timed to its last look. */
	judge_init(&j);
	j.timed = true;
	add_blocks(judge_case_get(&j, "edge"), 1, 60, 1.01, 0.02);
	take(&j, &s, "{\"type\":\"block\",\"case\":\"edge\",\"block\":60,\"throttled\":true}");
	lines = finish_with(&j, &s, &v, &not_timed);
	assert_int_equal(json_integer_value(json_object_get(case_verdict(lines, "edge"), "blocks")),
			 59);
	assert_true(json_is_false(json_object_get(case_verdict(lines, "edge"), "decided")));
	assert_string_equal(str(case_verdict(lines, "edge"), "stopped"), "max_pairs");
	json_decref(lines);
	judge_release(&j);
	/* Stopped at 30 blocks: by the time cap, a stop of GPU work, or a
	 * failed session. */
	for (int i = 0; i < 3; i++) {
		judge_init(&j);
		j.timed = true;
		add_blocks(judge_case_get(&j, "edge"), 1, 30, 1.01, 0.02);
		if (stops[i])
			take(&j, &s, "%s", stops[i]);
		lines = finish_with(&j, &s, &v, &not_timed);
		assert_true(json_is_false(json_object_get(case_verdict(lines, "edge"), "decided")));
		assert_string_equal(str(case_verdict(lines, "edge"), "stopped"), want[i]);
		json_decref(lines);
		judge_release(&j);
	}
}

QUAL_TESTS(
	cmocka_unit_test(test_stop_reasons),
	cmocka_unit_test(test_not_applicable_verdict),
	cmocka_unit_test(test_not_applicable_not_timed),
	cmocka_unit_test(test_not_applicable_from_lines),
	cmocka_unit_test(test_throttled_block_excluded),
	cmocka_unit_test(test_throttled_same_from_lines),
	cmocka_unit_test(test_block_line_refused),
	cmocka_unit_test(test_layout_in_verdicts),
	cmocka_unit_test(test_sampling_settings_from_lines),
	cmocka_unit_test(test_undecided_and_gate),
)
