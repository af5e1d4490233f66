/* Unit tests for daemon/request.c: the data-driven cases in
 * tests/data/requests/ (bad.txt: refusals and their messages; good.txt:
 * parsed fields, defaults included), plus what a text file cannot hold (a
 * line over 1 MiB, a NUL byte, invalid UTF-8) and the stored form's round
 * trip. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "daemon/request.h"
#include "tests/unit/test_main.h"

#ifndef REQUEST_TEST_DATA
#error "REQUEST_TEST_DATA must name tests/data/requests"
#endif

static const char *const op_names[] = {
	[OP_SUBMIT] = "submit", [OP_WATCH] = "watch", [OP_STATUS] = "status",
	[OP_LIST] = "list", [OP_SHOW] = "show", [OP_CANCEL] = "cancel",
	[OP_AUTH] = "auth", [OP_QUARANTINE] = "quarantine", [OP_CALIBRATION] = "calibration",
	[OP_HISTORY] = "history",
};

/* ---- data files: cases of (request line, expectation line) ---- */

struct tcase {
	char *request;
	char *expect;   /* after "=> " */
	int lineno;     /* of the request */
};

static char *chomp(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

static int read_cases(const char *name, struct tcase **out)
{
	char path[1024], *line = NULL;
	size_t cap = 0;
	struct tcase *cases = NULL;
	int n = 0, lineno = 0;
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", REQUEST_TEST_DATA, name);
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open '%s'", path);
	while (getline(&line, &cap, f) >= 0) {
		lineno++;
		chomp(line);
		if (line[0] == '\0' || line[0] == '#')
			continue;
		if (!strncmp(line, "=> ", 3)) {
			if (n == 0 || cases[n - 1].expect)
				fail_msg("%s:%d: expectation without a request", name, lineno);
			cases[n - 1].expect = strdup(line + 3);
			continue;
		}
		if (n > 0 && !cases[n - 1].expect)
			fail_msg("%s:%d: request without an expectation", name, cases[n - 1].lineno);
		cases = realloc(cases, (size_t)(n + 1) * sizeof *cases);
		cases[n] = (struct tcase){.request = strdup(line), .lineno = lineno};
		n++;
	}
	if (n > 0 && !cases[n - 1].expect)
		fail_msg("%s:%d: request without an expectation", name, cases[n - 1].lineno);
	free(line);
	fclose(f);
	*out = cases;
	return n;
}

static void free_cases(struct tcase *cases, int n)
{
	for (int i = 0; i < n; i++) {
		free(cases[i].request);
		free(cases[i].expect);
	}
	free(cases);
}

static json_t *list_json(char **list)
{
	json_t *a;

	if (!list)
		return json_null();
	a = json_array();
	for (char **p = list; *p; p++)
		json_array_append_new(a, json_string(*p));
	return a;
}

/* Every field of a parsed request that its op uses. */
static json_t *dump_request(const struct request *r)
{
	json_t *o = json_object();
	const struct submit_args *s = &r->submit;

	json_object_set_new(o, "op", json_string(op_names[r->op]));
	if (r->id)
		json_object_set(o, "id", r->id);
	switch (r->op) {
	case OP_SUBMIT:
		json_object_set_new(o, "baseline", json_string(s->baseline));
		json_object_set_new(o, "candidate", json_string(s->candidate));
		json_object_set_new(o, "pairs", json_integer(s->settings.pairs));
		json_object_set_new(o, "alpha", json_real(s->settings.alpha));
		json_object_set_new(o, "margin", json_real(s->settings.margin));
		json_object_set_new(o, "seed", json_integer(s->settings.seed));
		json_object_set_new(o, "compile_only", json_boolean(s->settings.compile_only));
		json_object_set_new(o, "follow", json_boolean(s->settings.follow));
		json_object_set_new(o, "cases", list_json(s->settings.cases));
		json_object_set_new(o, "baseline_options", list_json(s->settings.baseline_options));
		json_object_set_new(o, "candidate_options", list_json(s->settings.candidate_options));
		/* Only when given: the cases without it need not spell it. */
		if (s->settings.fixtures)
			json_object_set_new(o, "fixtures", list_json(s->settings.fixtures));
		if (s->settings.mode != RTC_MODE_DEFAULT) /* only then, as request_submit_to_json */
			json_object_set_new(o, "mode", json_string(rtc_mode_name(s->settings.mode)));
		/* Sampling and the gate: likewise only when not the default. */
		if (s->settings.max_pairs)
			json_object_set_new(o, "max_pairs", json_integer(s->settings.max_pairs));
		if (s->settings.max_seconds > 0)
			json_object_set_new(o, "max_seconds", json_real(s->settings.max_seconds));
		if (s->settings.gate_slower != GATE_BEYOND)
			json_object_set_new(o, "gate_slower",
					    json_string(gate_rule_name(s->settings.gate_slower)));
		if (s->settings.gate_faster != GATE_BEYOND)
			json_object_set_new(o, "gate_faster",
					    json_string(gate_rule_name(s->settings.gate_faster)));
		if (s->settings.undecided != UNDECIDED_PASS)
			json_object_set_new(o, "undecided",
					    json_string(gate_undecided_name(s->settings.undecided)));
		if (s->calibrate) /* only for a calibration */
			json_object_set_new(o, "calibrate", json_integer(s->calibrate));
		if (s->has_slot)
			json_object_set_new(o, "slot", json_integer(s->slot));
		if (s->labels) /* only when given */
			json_object_set(o, "labels", s->labels);
		break;
	case OP_HISTORY:
		json_object_set_new(o, "case",
				    r->case_name ? json_string(r->case_name) : json_null());
		json_object_set(o, "labels", r->labels ? r->labels : json_null());
		json_object_set_new(o, "limit", json_integer(r->limit));
		break;
	case OP_WATCH:
		json_object_set_new(o, "after_job",
				    r->after_job ? json_string(r->after_job) : json_null());
		json_object_set_new(o, "after_seq", json_integer(r->after_seq));
		break;
	case OP_LIST:
		json_object_set_new(o, "limit", json_integer(r->limit));
		if (r->before)
			json_object_set_new(o, "before", json_string(r->before));
		break;
	case OP_SHOW:
	case OP_CANCEL:
		json_object_set_new(o, "job", json_string(r->job));
		break;
	case OP_STATUS:
	case OP_CALIBRATION:
		break;
	case OP_AUTH:
		json_object_set_new(o, "token", json_string(r->token));
		break;
	case OP_QUARANTINE:
		json_object_set_new(o, "action", json_string(r->action == QUARANTINE_CLEAR
							      ? "clear" : "list"));
		json_object_set_new(o, "sha256",
				    r->sha256 ? json_string(r->sha256) : json_null());
		break;
	}
	return o;
}

/* ---- the data-driven cases ---- */

static void test_bad_requests(void **state)
{
	struct tcase *cases;
	int n = read_cases("bad.txt", &cases), failures = 0;

	(void)state;
	assert_true(n >= 50);
	for (int i = 0; i < n; i++) {
		struct tcase *t = &cases[i];
		struct qual_msg msg = {{0}};
		const char *op = (const char *)1, *want_msg;
		struct request r;
		char want_op[32];
		json_t *want_id = NULL;
		int rc, k;

		/* "OP [id=JSON] MESSAGE" */
		k = (int)strcspn(t->expect, " ");
		snprintf(want_op, sizeof want_op, "%.*s", k, t->expect);
		want_msg = t->expect + k + 1;
		if (!strncmp(want_msg, "id=", 3)) {
			json_error_t e;

			want_id = json_loads(want_msg + 3, JSON_DISABLE_EOF_CHECK |
					     JSON_DECODE_ANY, &e);
			if (!want_id)
				fail_msg("bad.txt:%d: bad id in the expectation", t->lineno);
			want_msg += 3 + e.position + 1;
		}
		rc = request_parse(t->request, strlen(t->request), &r, &op, &msg);
		if (rc != QUAL_EINVAL) {
			print_error("bad.txt:%d: accepted (rc %d): %s\n", t->lineno, rc, t->request);
			failures++;
		} else if (!strstr(msg.text, want_msg)) {
			print_error("bad.txt:%d: message '%s' lacks '%s'\n", t->lineno,
				    msg.text, want_msg);
			failures++;
		} else if (strcmp(op ? op : "-", want_op)) {
			print_error("bad.txt:%d: op %s, expected %s\n", t->lineno,
				    op ? op : "-", want_op);
			failures++;
		} else if (!json_equal(r.id, want_id) && (r.id || want_id)) {
			print_error("bad.txt:%d: id not echoed as expected\n", t->lineno);
			failures++;
		}
		json_decref(want_id);
		request_release(&r);
	}
	free_cases(cases, n);
	assert_int_equal(failures, 0);
}

static void test_good_requests(void **state)
{
	struct tcase *cases;
	int n = read_cases("good.txt", &cases), failures = 0;

	(void)state;
	assert_true(n >= 10);
	for (int i = 0; i < n; i++) {
		struct tcase *t = &cases[i];
		struct qual_msg msg = {{0}};
		const char *op = NULL;
		struct request r;
		json_t *want, *got;
		json_error_t e;

		want = json_loads(t->expect, 0, &e);
		if (!want)
			fail_msg("good.txt:%d: bad expectation: %s", t->lineno + 1, e.text);
		if (request_parse(t->request, strlen(t->request), &r, &op, &msg) < 0) {
			print_error("good.txt:%d: refused: %s\n", t->lineno, msg.text);
			failures++;
			json_decref(want);
			continue;
		}
		assert_string_equal(op, op_names[r.op]);
		got = dump_request(&r);
		if (!json_equal(got, want)) {
			char *g = json_dumps(got, JSON_COMPACT);

			print_error("good.txt:%d: parsed as %s\n", t->lineno, g);
			free(g);
			failures++;
		}
		json_decref(got);
		json_decref(want);
		request_release(&r);
	}
	free_cases(cases, n);
	assert_int_equal(failures, 0);
}

/* ---- what a text file cannot hold ---- */

static void expect_refusal(const char *line, size_t len, const char *want)
{
	struct qual_msg msg = {{0}};
	const char *op = NULL;
	struct request r;

	assert_int_not_equal(request_parse(line, len, &r, &op, &msg), 0);
	if (!strstr(msg.text, want))
		fail_msg("message '%s' lacks '%s'", msg.text, want);
	request_release(&r);
}

static void test_oversize(void **state)
{
	size_t n = REQUEST_MAX_LINE + 1;
	char *line = malloc(n);
	struct qual_msg msg;
	const char *op;
	struct request r;

	(void)state;
	/* A valid request padded with spaces to one byte over the limit. */
	memset(line, ' ', n);
	memcpy(line, "{\"op\":\"status\"}", 15);
	expect_refusal(line, n, "request line over 1048576 bytes");
	/* Exactly at the limit it is accepted. */
	assert_int_equal(request_parse(line, n - 1, &r, &op, &msg), 0);
	assert_int_equal(r.op, OP_STATUS);
	request_release(&r);
	free(line);
}

static void test_nul_and_utf8(void **state)
{
	static const char nul[] = "{\"op\":\"status\"\0}";
	static const char nul_number[] = "{\"op\":\"list\",\"limit\":3\0}";
	static const char esc[] = "{\"op\":\"sta\\u0000tus\"}";
	static const char bad8[] = "{\"op\":\"st\xff\xfe\"}";
	static const char deep[] = "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[";

	(void)state;
	expect_refusal(nul, sizeof nul - 1, "malformed json at column");
	/* jansson itself skips a NUL after a number or a literal. */
	expect_refusal(nul_number, sizeof nul_number - 1,
		       "malformed json at column 23: nul byte");
	expect_refusal(esc, sizeof esc - 1, "malformed json at column");
	expect_refusal(bad8, sizeof bad8 - 1, "malformed json at column");
	/* Unclosed nesting is refused by depth before jansson sees it. */
	expect_refusal(deep, sizeof deep - 1, "json nested deeper than 16 levels");
	/* Brackets and escaped quotes in strings do not count. */
	{
		const char *s = "{\"op\":\"status\",\"id\":\"\\\"[[[[[[[[[[[[[[[[[[[[[[[[\"}";
		struct qual_msg msg;
		const char *op;
		struct request r;

		assert_int_equal(request_parse(s, strlen(s), &r, &op, &msg), 0);
		request_release(&r);
	}
}

/* A refusal keeps the id for the refused line and releases the rest. */
static void test_refusal_keeps_id(void **state)
{
	const char *s = "{\"op\":\"submit\",\"id\":{\"k\":[1,2]},\"baseline\":\"/a\","
			"\"candidate\":\"/b\",\"cases\":[\"x\"],\"pairs\":2}";
	struct qual_msg msg;
	const char *op = NULL;
	struct request r;
	json_t *want = json_pack("{s:[i,i]}", "k", 1, 2);

	(void)state;
	assert_int_equal(request_parse(s, strlen(s), &r, &op, &msg), QUAL_EINVAL);
	assert_string_equal(op, "submit");
	assert_true(json_equal(r.id, want));
	assert_null(r.submit.baseline);
	assert_null(r.submit.settings.cases);
	request_release(&r);
	assert_null(r.id);
	json_decref(want);
}

static void test_submit_round_trip(void **state)
{
	const char *s = "{\"op\":\"submit\",\"baseline\":\"/a\",\"candidate\":\"/b\","
			"\"pairs\":64,\"alpha\":0.01,\"margin\":0.02,\"seed\":9,"
			"\"compile_only\":true,\"follow\":false,\"cases\":[\"c1\",\"c2\"],"
			"\"candidate_options\":[\"-G\"],\"mode\":\"wgp\",\"fixtures\":[\"/srv/fx\",\"/srv/fy\"],"
			"\"max_pairs\":128,\"max_seconds\":12.5,\"gate_slower\":\"significant\","
			"\"gate_faster\":\"significant\",\"undecided\":\"regression\","
			"\"labels\":{\"commit\":\"0123abc\",\"url\":\"https://ci/1?a=b\"}}";
	struct submit_args back;
	struct qual_msg msg;
	const char *op;
	struct request r, r2;
	json_t *stored, *d1, *d2;

	(void)state;
	assert_int_equal(request_parse(s, strlen(s), &r, &op, &msg), 0);
	stored = request_submit_to_json(&r.submit);
	/* A field a later version might store is ignored. */
	json_object_set_new(stored, "submitted", json_string("2026-01-01T00:00:00Z"));
	assert_int_equal(request_submit_from_json(stored, &back, &msg), 0);

	/* Everything but follow (not stored: it belongs to the connection)
	 * survives exactly. */
	r2 = (struct request){.op = OP_SUBMIT, .submit = back};
	r2.submit.settings.follow = r.submit.settings.follow;
	d1 = dump_request(&r);
	d2 = dump_request(&r2);
	assert_true(json_equal(d1, d2));
	assert_true(back.settings.follow);
	assert_string_equal(json_string_value(json_object_get(back.labels, "url")),
			    "https://ci/1?a=b");

	/* Stored labels get the request's checks too. */
	json_object_set_new(json_object_get(stored, "labels"), "bad key", json_string("x"));
	assert_int_equal(request_submit_from_json(stored, &back, &msg), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "'labels' key 'bad key' must be 1 to 64"));
	json_object_del(json_object_get(stored, "labels"), "bad key");

	/* Stored files get the request's checks. */
	json_object_set_new(stored, "pairs", json_integer(3));
	assert_int_equal(request_submit_from_json(stored, &back, &msg), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "'pairs' must be an integer >= 30, got 3"));
	assert_null(back.baseline);
	assert_int_equal(request_submit_from_json(json_null(), &back, &msg), QUAL_EINVAL);

	json_decref(d1);
	json_decref(d2);
	json_decref(stored);
	request_release(&r2);
	request_release(&r);
}

/* Each library's pin (docs/quald.md, "Pinned libraries") is stored with a
 * job and read back, checked like a request's fields; a client cannot send
 * one; a job stored before pins loads without them. */
static void test_submit_pins(void **state)
{
	static const char sha_b[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	static const char sha_c[] = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
	const char *s = "{\"op\":\"submit\",\"baseline\":\"/a\",\"candidate\":\"/b\"}";
	const char *forged = "{\"op\":\"submit\",\"baseline\":\"/a\",\"candidate\":\"/b\","
			     "\"candidate_sha256\":\"0123456789abcdef0123456789abcdef"
			     "0123456789abcdef0123456789abcdef\"}";
	struct submit_args back;
	struct qual_msg msg;
	const char *op;
	struct request r, f;
	json_t *stored, *again;

	(void)state;
	assert_int_equal(request_parse(forged, strlen(forged), &f, &op, &msg), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "candidate_sha256"));
	request_release(&f);

	assert_int_equal(request_parse(s, strlen(s), &r, &op, &msg), 0);
	stored = request_submit_to_json(&r.submit);
	/* Stored before pins: loads, unpinned. */
	assert_int_equal(request_submit_from_json(stored, &back, &msg), 0);
	assert_null(back.baseline_sha256);
	assert_null(back.candidate_real);
	request_release(&(struct request){.submit = back});

	request_submit_set_pin(stored, 0, "/opt/real/base.so", sha_b);
	request_submit_set_pin(stored, 1, "/opt/real/cand.so", sha_c);
	assert_int_equal(request_submit_from_json(stored, &back, &msg), 0);
	assert_string_equal(back.baseline_real, "/opt/real/base.so");
	assert_string_equal(back.baseline_sha256, sha_b);
	assert_string_equal(back.candidate_real, "/opt/real/cand.so");
	assert_string_equal(back.candidate_sha256, sha_c);
	/* And again from what it stores. */
	again = request_submit_to_json(&back);
	assert_true(json_equal(again, stored));
	json_decref(again);
	request_release(&(struct request){.submit = back});

	json_object_set_new(stored, "candidate_sha256", json_string("ABC"));
	assert_int_equal(request_submit_from_json(stored, &back, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "'candidate_sha256' must be 64 lower-case hex digits");
	json_object_set_new(stored, "candidate_sha256", json_string(
		"FEDCBA9876543210FEDCBA9876543210FEDCBA9876543210FEDCBA9876543210"));
	assert_int_equal(request_submit_from_json(stored, &back, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "'candidate_sha256' must be 64 lower-case hex digits");
	json_object_del(stored, "candidate_sha256");
	assert_int_equal(request_submit_from_json(stored, &back, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "stored request has 'candidate_real_path' without "
			    "'candidate_sha256'");
	json_object_set_new(stored, "candidate_sha256", json_string(sha_c));
	json_object_set_new(stored, "candidate_real_path", json_string("rel/cand.so"));
	assert_int_equal(request_submit_from_json(stored, &back, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "'candidate_real_path' must be an absolute path");
	json_decref(stored);
	request_release(&r);
}

/* A stored job's fixture directories are the real paths submit checked
 * (request_submit_set_fixtures replaces those given), read back with the
 * request's checks. */
static void test_submit_fixtures(void **state)
{
	const char *s = "{\"op\":\"submit\",\"baseline\":\"/a\",\"candidate\":\"/b\","
			"\"fixtures\":[\"/home/u/link\",\"/srv/fy\"]}";
	char *real[] = {"/srv/real/fx", "/srv/fy", NULL};
	struct submit_args back;
	struct qual_msg msg;
	const char *op;
	struct request r;
	json_t *stored, *want;

	(void)state;
	assert_int_equal(request_parse(s, strlen(s), &r, &op, &msg), 0);
	stored = request_submit_to_json(&r.submit);
	request_submit_set_fixtures(stored, real);
	want = json_pack("[s,s]", "/srv/real/fx", "/srv/fy");
	assert_true(json_equal(json_object_get(stored, "fixtures"), want));
	assert_int_equal(request_submit_from_json(stored, &back, &msg), 0);
	assert_non_null(back.settings.fixtures);
	assert_string_equal(back.settings.fixtures[0], "/srv/real/fx");
	assert_string_equal(back.settings.fixtures[1], "/srv/fy");
	assert_null(back.settings.fixtures[2]);
	request_release(&(struct request){.submit = back});
	/* Without fixtures nothing is stored for them. */
	request_release(&r);
	s = "{\"op\":\"submit\",\"baseline\":\"/a\",\"candidate\":\"/b\"}";
	assert_int_equal(request_parse(s, strlen(s), &r, &op, &msg), 0);
	json_decref(stored);
	stored = request_submit_to_json(&r.submit);
	assert_null(json_object_get(stored, "fixtures"));
	/* A stored file gets the request's checks. */
	json_object_set_new(stored, "fixtures", json_pack("[s]", "rel/fx"));
	assert_int_equal(request_submit_from_json(stored, &back, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "'fixtures' entry 0 must be an absolute path");
	json_decref(want);
	json_decref(stored);
	request_release(&r);
}

QUAL_TESTS(
	cmocka_unit_test(test_bad_requests),
	cmocka_unit_test(test_good_requests),
	cmocka_unit_test(test_oversize),
	cmocka_unit_test(test_nul_and_utf8),
	cmocka_unit_test(test_refusal_keeps_id),
	cmocka_unit_test(test_submit_round_trip),
	cmocka_unit_test(test_submit_pins),
	cmocka_unit_test(test_submit_fixtures),
)
