/* common/lines.c: the error codes (names as docs/output.md lists them, and
 * the mapping from QUAL_E* and stage), writing lines, what a line says
 * (lines_classify), and the splitter that cuts a stream into lines with a
 * cap on their length. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/err.h"
#include "common/lines.h"
#include "proto/line.h"
#include "common/timesplit.h"
#include "tests/unit/test_main.h"

/* ---- codes --------------------------------------------------------------- */

/* Every code's name, written out here (the wire format: a reader elsewhere
 * decides from these strings). */
static const struct {
	enum lines_code code;
	const char *name;
} names[] = {
	{ LINES_CODE_COMPILE_FAILED, "compile_failed" },
	{ LINES_CODE_COMPILE_CRASHED, "compile_crashed" },
	{ LINES_CODE_COMPILE_KILLED, "compile_killed" },
	{ LINES_CODE_COMPILE_TIMEOUT, "compile_timeout" },
	{ LINES_CODE_COMPILE_LIMIT, "compile_limit" },
	{ LINES_CODE_COMPILE_NO_REPORT, "compile_no_report" },
	{ LINES_CODE_NO_ABI, "no_abi" },
	{ LINES_CODE_LIBRARY_CHANGED, "library_changed" },
	{ LINES_CODE_LOAD_FAILED, "load_failed" },
	{ LINES_CODE_WRONG_OUTPUT, "wrong_output" },
	{ LINES_CODE_GPU_FAULT, "gpu_fault" },
	{ LINES_CODE_GPU_HANG, "gpu_hang" },
	{ LINES_CODE_USAGE, "usage" },
	{ LINES_CODE_NO_DEVICE, "no_device" },
	{ LINES_CODE_SESSION_FAILED, "session_failed" },
	{ LINES_CODE_CUT_OFF, "cut_off" },
	{ LINES_CODE_BAD_LINE, "bad_line" },
	{ LINES_CODE_FOREIGN_LINE, "foreign_line" },
	{ LINES_CODE_INTERRUPTED, "interrupted" },
	{ LINES_CODE_INTERNAL, "internal" },
	{ LINES_CODE_ORACLE_FAILED, "oracle_failed" },
	{ LINES_CODE_BAD_FIXTURE, "bad_fixture" },
};

static void test_code_names(void **state)
{
	(void)state;
	/* Every code between NONE and COUNT has its name, and only those. */
	assert_int_equal(sizeof names / sizeof names[0], LINES_CODE_COUNT - 1);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		assert_string_equal(vocab_code_name(names[i].code), names[i].name);
		assert_int_equal(vocab_code_parse(names[i].name), names[i].code);
	}
	assert_null(vocab_code_name(LINES_CODE_NONE));
	assert_null(vocab_code_name(LINES_CODE_COUNT));
	assert_null(vocab_code_name((enum lines_code)-1));
	assert_int_equal(vocab_code_parse(NULL), LINES_CODE_NONE);
	assert_int_equal(vocab_code_parse(""), LINES_CODE_NONE);
	assert_int_equal(vocab_code_parse("no_such_code"), LINES_CODE_NONE);
	assert_int_equal(vocab_code_parse("GPU_FAULT"), LINES_CODE_NONE);
	assert_int_equal(vocab_code_parse("gpu_fault "), LINES_CODE_NONE);
}

/* Round trip over the whole enum, whatever names says. */
static void test_code_round_trip(void **state)
{
	(void)state;
	for (int c = LINES_CODE_NONE + 1; c < LINES_CODE_COUNT; c++) {
		const char *name = vocab_code_name((enum lines_code)c);
		assert_non_null(name);
		assert_int_equal(vocab_code_parse(name), c);
		for (int d = LINES_CODE_NONE + 1; d < c; d++)
			assert_string_not_equal(name, vocab_code_name((enum lines_code)d));
	}
}

static void test_code_of(void **state)
{
	static const char *const stages[] = { "setup", "compile", "load", "check", "time",
					      NULL };

	(void)state;
	for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++) {
		const char *s = stages[i];
		bool load = s && !strcmp(s, "load");

		assert_int_equal(lines_code_of(s, QUAL_ECOMPILE), LINES_CODE_COMPILE_FAILED);
		assert_int_equal(lines_code_of(s, QUAL_ECRASH), LINES_CODE_COMPILE_CRASHED);
		assert_int_equal(lines_code_of(s, QUAL_ETIMEOUT), LINES_CODE_COMPILE_TIMEOUT);
		assert_int_equal(lines_code_of(s, QUAL_ELIMIT), LINES_CODE_COMPILE_LIMIT);
		assert_int_equal(lines_code_of(s, QUAL_EEXIT), LINES_CODE_COMPILE_NO_REPORT);
		assert_int_equal(lines_code_of(s, QUAL_EABI), LINES_CODE_NO_ABI);
		assert_int_equal(lines_code_of(s, QUAL_ECHECK), LINES_CODE_WRONG_OUTPUT);
		assert_int_equal(lines_code_of(s, QUAL_EHANG), LINES_CODE_GPU_HANG);
		assert_int_equal(lines_code_of(s, QUAL_EGPU),
				 load ? LINES_CODE_LOAD_FAILED : LINES_CODE_GPU_FAULT);
		assert_int_equal(lines_code_of(s, QUAL_ENODEV), LINES_CODE_NO_DEVICE);
		assert_int_equal(lines_code_of(s, QUAL_EIO), LINES_CODE_INTERNAL);
		assert_int_equal(lines_code_of(s, QUAL_ENOMEM), LINES_CODE_INTERNAL);
		assert_int_equal(lines_code_of(s, QUAL_EINVAL), LINES_CODE_INTERNAL);
		assert_int_equal(lines_code_of(s, QUAL_ENOENT), LINES_CODE_INTERNAL);
		assert_int_equal(lines_code_of(s, -1000), LINES_CODE_INTERNAL);
	}
}

/* ---- writing ------------------------------------------------------------- */

/* Runs emit into a memory stream; returns what it wrote (a new string). */
static char *capture(int (*emit)(FILE *, void *), void *arg, int *rc)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	assert_non_null(f);
	*rc = emit(f, arg);
	assert_int_equal(fclose(f), 0);
	return text;
}

static int emit_line(FILE *f, void *arg)
{
	return lines_emit(f, arg);
}

/* One compact line, ASCII only, NaN as null, the reference stolen. */
static void test_emit(void **state)
{
	json_t *line = lines_new("pair");
	char *text;
	int rc;

	(void)state;
	json_object_set_new(line, "x", lines_real(NAN));
	json_object_set_new(line, "y", lines_real(1.5));
	json_object_set_new(line, "z", lines_real(-INFINITY));
	json_object_set_new(line, "s", lines_text("caf\xc3\xa9\xff"));
	json_object_set_new(line, "n", lines_text(NULL));
	text = capture(emit_line, line, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(text, "{\"type\":\"pair\",\"x\":null,\"y\":1.5,\"z\":null,"
				  "\"s\":\"caf\\u00E9?\",\"n\":null}\n");
	free(text);
}

/* A stream that cannot take the line: QUAL_EIO, the reference still
 * stolen (the leak check of the sanitizer build sees it). */
static void test_emit_fails(void **state)
{
	FILE *f = fopen("/dev/full", "w");

	(void)state;
	assert_non_null(f);
	assert_int_equal(lines_emit(f, lines_new("start")), QUAL_EIO);
	fclose(f);
}

struct error_args {
	const char *stage, *arm, *case_name, *message;
	enum lines_code code;
};

static int emit_error(FILE *f, void *arg)
{
	struct error_args *a = arg;

	return lines_error(f, a->stage, a->code, a->arm, a->case_name, a->message);
}

static void test_error_line(void **state)
{
	struct error_args a = { "time", "candidate", "gemm_f16-1", "it \"faulted\"",
				LINES_CODE_GPU_FAULT };
	struct lines_info info;
	json_t *line;
	char *text;
	int rc;

	(void)state;
	text = capture(emit_error, &a, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(text, "{\"type\":\"error\",\"stage\":\"time\",\"code\":\"gpu_fault\","
				  "\"arm\":\"candidate\",\"case\":\"gemm_f16-1\","
				  "\"message\":\"it \\\"faulted\\\"\"}\n");
	/* What it wrote reads back as what was said. */
	line = json_loads(text, 0, NULL);
	lines_classify(line, &info);
	assert_int_equal(info.type, LINES_ERROR);
	assert_int_equal(info.code, LINES_CODE_GPU_FAULT);
	assert_string_equal(info.arm, "candidate");
	assert_string_equal(info.case_name, "gemm_f16-1");
	assert_true(lines_blames_candidate(&info));
	json_decref(line);
	free(text);

	/* No arm, no case, no code: nulls, and "internal". */
	a = (struct error_args){ "setup", NULL, NULL, "x", LINES_CODE_NONE };
	text = capture(emit_error, &a, &rc);
	assert_string_equal(text, "{\"type\":\"error\",\"stage\":\"setup\",\"code\":\"internal\","
				  "\"arm\":null,\"case\":null,\"message\":\"x\"}\n");
	free(text);
}

/* ---- reading ------------------------------------------------------------- */

static void classify(const char *text, struct lines_info *info, json_t **line)
{
	*line = json_loads(text, JSON_DECODE_ANY, NULL);
	assert_non_null(*line);
	/* Filled from nothing: earlier contents must not show through. */
	memset(info, 0x5a, sizeof *info);
	lines_classify(*line, info);
}

static void test_classify_types(void **state)
{
	static const struct {
		const char *text;
		enum lines_type type;
	} cases[] = {
		{ "{\"type\":\"start\",\"schema_version\":3}", LINES_START },
		{ "{\"type\":\"case\",\"case\":\"c\"}", LINES_CASE },
		{ "{\"type\":\"pair\",\"case\":\"c\"}", LINES_PAIR },
		{ "{\"type\":\"case_verdict\",\"case\":\"c\"}", LINES_CASE_VERDICT },
		{ "{\"type\":\"verdict\"}", LINES_VERDICT },
		{ "{\"type\":\"error\"}", LINES_ERROR },
		{ "{\"type\":\"health\"}", LINES_OTHER },
		{ "{\"type\":\"Error\"}", LINES_OTHER },
		{ "{\"type\":7}", LINES_OTHER },
		{ "{\"verdict\":\"fail\"}", LINES_OTHER },
		{ "[\"error\"]", LINES_OTHER },
		{ "\"error\"", LINES_OTHER },
	};
	struct lines_info info;
	json_t *line;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		classify(cases[i].text, &info, &line);
		assert_int_equal(info.type, cases[i].type);
		if (info.type == LINES_OTHER) {
			assert_null(info.verdict);
			assert_null(info.arm);
			assert_int_equal(info.code, LINES_CODE_NONE);
			assert_false(info.gpu_faulted);
			assert_false(info.gpu_hung);
		}
		json_decref(line);
	}
	memset(&info, 0x5a, sizeof info);
	lines_classify(NULL, &info);
	assert_int_equal(info.type, LINES_OTHER);
	assert_null(info.case_name);
}

static void test_classify_fields(void **state)
{
	struct lines_info info;
	json_t *line;

	(void)state;
	classify("{\"type\":\"verdict\",\"verdict\":\"regression\",\"arm\":\"candidate\"}",
		 &info, &line);
	assert_string_equal(info.verdict, "regression");
	assert_null(info.arm);   /* a verdict line has no arm of its own */
	assert_null(info.case_name);
	json_decref(line);

	classify("{\"type\":\"case_verdict\",\"case\":\"k\",\"verdict\":\"fail\","
		 "\"failed_arm\":\"baseline\"}", &info, &line);
	assert_string_equal(info.verdict, "fail");
	assert_string_equal(info.arm, "baseline");
	assert_string_equal(info.case_name, "k");
	assert_false(lines_blames_candidate(&info));
	json_decref(line);

	classify("{\"type\":\"case_verdict\",\"case\":3,\"verdict\":\"fail\",\"failed_arm\":null}",
		 &info, &line);
	assert_null(info.arm);
	assert_null(info.case_name);
	assert_false(lines_blames_candidate(&info));
	json_decref(line);

	/* An error: its arm, code and gpu fields; its verdict is no field. */
	classify("{\"type\":\"error\",\"arm\":\"candidate\",\"code\":\"gpu_hang\","
		 "\"gpu\":\"hung\",\"verdict\":\"fail\"}", &info, &line);
	assert_int_equal(info.code, LINES_CODE_GPU_HANG);
	assert_true(info.gpu_hung);
	assert_false(info.gpu_faulted);
	assert_null(info.verdict);
	assert_true(lines_blames_candidate(&info));
	json_decref(line);

	classify("{\"type\":\"error\",\"code\":\"gpu_fault\",\"gpu\":\"faulted\"}", &info, &line);
	assert_int_equal(info.code, LINES_CODE_GPU_FAULT);
	assert_true(info.gpu_faulted);
	assert_false(info.gpu_hung);
	assert_null(info.arm);
	json_decref(line);

	/* A line of schema 2 (no code) and unknown values. */
	classify("{\"type\":\"error\",\"gpu\":\"melted\",\"arm\":\"both\"}", &info, &line);
	assert_int_equal(info.code, LINES_CODE_NONE);
	assert_false(info.gpu_faulted);
	assert_false(info.gpu_hung);
	assert_string_equal(info.arm, "both");
	assert_false(lines_blames_candidate(&info));
	json_decref(line);

	classify("{\"type\":\"error\",\"code\":\"nonsense\",\"gpu\":true}", &info, &line);
	assert_int_equal(info.code, LINES_CODE_NONE);
	assert_false(info.gpu_faulted);
	json_decref(line);

	/* Fields of other types are not read from lines that do not have them. */
	classify("{\"type\":\"pair\",\"code\":\"gpu_fault\",\"gpu\":\"hung\",\"verdict\":\"x\"}",
		 &info, &line);
	assert_int_equal(info.code, LINES_CODE_NONE);
	assert_false(info.gpu_hung);
	assert_null(info.verdict);
	json_decref(line);
}

/* ---- the splitter -------------------------------------------------------- */

/* The splitter under test (max 64 unless a test starts another) and what
 * it passed on; each test starts from split_setup. */
static struct lines_splitter sp;
static struct {
	char lines[16][32];
	size_t n;
	int stop_at;        /* return 5 for this line (0-based), or -1 */
	const char *chunk;  /* the data of the feed in progress */
	size_t chunk_len;
	bool in_chunk[16];  /* the line was passed from the chunk itself */
} got;

/* A new splitter of max bytes, nothing passed on yet; fn returns 5 for
 * line stop_at. */
static void restart(size_t max, int stop_at)
{
	lines_splitter_release(&sp);
	lines_splitter_init(&sp, max);
	memset(&got, 0, sizeof got);
	got.stop_at = stop_at;
}

static int split_setup(void **state)
{
	(void)state;
	restart(64, -1);
	return 0;
}

static int split_teardown(void **state)
{
	(void)state;
	lines_splitter_release(&sp);
	return 0;
}

static int take(void *ctx, const char *line, size_t len)
{
	(void)ctx;
	assert_true(got.n < 16 && len < 32);
	memcpy(got.lines[got.n], line, len);
	got.lines[got.n][len] = '\0';
	got.in_chunk[got.n] = line >= got.chunk && line + len <= got.chunk + got.chunk_len;
	return (int)got.n++ == got.stop_at ? 5 : 0;
}

static int feed(const char *data)
{
	got.chunk = data;
	got.chunk_len = strlen(data);
	return lines_splitter_feed(&sp, data, strlen(data), take, NULL);
}

/* Exactly the lines given (NULL-terminated) were passed on, in order. */
static void assert_lines(const char *first, ...)
{
	va_list ap;
	size_t n = 0;

	va_start(ap, first);
	for (const char *want = first; want; want = va_arg(ap, const char *)) {
		assert_true(n < got.n);
		assert_string_equal(got.lines[n], want);
		n++;
	}
	va_end(ap);
	assert_int_equal(got.n, n);
}

static void test_split_across_chunks(void **state)
{
	(void)state;
	assert_int_equal(feed("ab"), 0);
	assert_int_equal(got.n, 0);
	assert_int_equal(lines_splitter_rest(&sp), 2);
	assert_int_equal(feed("c\nde"), 0);
	assert_int_equal(feed(""), 0);
	assert_int_equal(feed("f"), 0);
	assert_int_equal(feed("\n"), 0);
	assert_lines("abc", "def", NULL);
	assert_false(got.in_chunk[0]);
	assert_int_equal(lines_splitter_rest(&sp), 0);
}

/* Lines wholly inside one chunk are passed from it, without a copy; empty
 * lines are lines. */
static void test_split_in_one_chunk(void **state)
{
	(void)state;
	assert_int_equal(feed("one\ntwo\n\nthree\nfo"), 0);
	assert_lines("one", "two", "", "three", NULL);
	for (size_t i = 0; i < 4; i++)
		assert_true(got.in_chunk[i]);
	/* The rest of an unfinished last line: not passed on by a feed. */
	assert_int_equal(lines_splitter_rest(&sp), 2);
	assert_int_equal(feed("ur\n"), 0);
	assert_lines("one", "two", "", "three", "four", NULL);
	assert_false(got.in_chunk[4]);
}

/* max bytes is a line; one more is QUAL_ELIMIT, and then nothing more is
 * taken, even lines that would fit. */
static void test_split_cap(void **state)
{
	(void)state;
	restart(4, -1);
	assert_int_equal(feed("abcd\n"), 0);
	assert_lines("abcd", NULL);
	assert_int_equal(feed("ok\nabcde\nlater\n"), QUAL_ELIMIT);
	assert_true(sp.over);
	assert_int_equal(feed("x\n"), QUAL_ELIMIT);
	assert_lines("abcd", "ok", NULL);

	/* Over the cap across chunks, before any newline. */
	restart(4, -1);
	assert_int_equal(feed("abc"), 0);
	assert_int_equal(feed("de"), QUAL_ELIMIT);
	assert_int_equal(feed("\n"), QUAL_ELIMIT);
	assert_int_equal(got.n, 0);
	assert_int_equal(lines_splitter_rest(&sp), 0);
}

/* fn's nonzero return stops the feed there and is returned, for a line
 * from the chunk and for one copied (begun in an earlier feed). */
static void test_split_fn_stops(void **state)
{
	(void)state;
	restart(64, 1);
	assert_int_equal(feed("a\nb\nc\n"), 5);
	assert_lines("a", "b", NULL);

	restart(64, 0);
	assert_int_equal(feed("x"), 0);
	assert_int_equal(feed("y\nz\n"), 5);
	assert_lines("xy", NULL);
}

/* A stream byte by byte gives the lines it gives all at once. */
static void test_split_byte_by_byte(void **state)
{
	const char *text = "{\"type\":\"start\"}\n{\"type\":\"pair\"}\n\n{\"x\":1}\n";
	char one[2] = "";

	(void)state;
	restart(LINES_MAX, -1);
	for (const char *p = text; *p; p++) {
		one[0] = *p;
		assert_int_equal(feed(one), 0);
	}
	assert_lines("{\"type\":\"start\"}", "{\"type\":\"pair\"}", "", "{\"x\":1}", NULL);
}

/* At the end of a stream a last line without its newline is a line when it
 * is one whole JSON object, and cut off otherwise: never passed on then,
 * and its length still told. */
static void test_split_finish(void **state)
{
	(void)state;
	assert_int_equal(lines_splitter_finish(&sp, take, NULL), 0);
	assert_int_equal(feed("{\"a\":1}\n{\"type\":\"verdict\"}"), 0);
	assert_lines("{\"a\":1}", NULL);
	assert_int_equal(lines_splitter_finish(&sp, take, NULL), 0);
	assert_lines("{\"a\":1}", "{\"type\":\"verdict\"}", NULL);
	assert_int_equal(lines_splitter_rest(&sp), 0);

	restart(64, -1);
	assert_int_equal(feed("{\"type\":\"pa"), 0);
	assert_int_equal(lines_splitter_finish(&sp, take, NULL), QUAL_EINVAL);
	assert_int_equal(lines_splitter_rest(&sp), 11);
	assert_int_equal(got.n, 0);
	/* JSON that is no object, and an object with text after it. */
	restart(64, -1);
	assert_int_equal(feed("[1,2]"), 0);
	assert_int_equal(lines_splitter_finish(&sp, take, NULL), QUAL_EINVAL);
	restart(64, -1);
	assert_int_equal(feed("{} x"), 0);
	assert_int_equal(lines_splitter_finish(&sp, take, NULL), QUAL_EINVAL);
	/* fn's value is returned for the last line too. */
	restart(64, 0);
	assert_int_equal(feed("{}"), 0);
	assert_int_equal(lines_splitter_finish(&sp, take, NULL), 5);
	assert_int_equal(got.n, 1);
}

/* ---- lines_check --------------------------------------------------------- */

/* Every line of a real qual-run's output (tests/data/client/compile_only.jsonl,
 * schema 1) is the engine's. */
static void test_check_engine_lines(void **state)
{
	FILE *f = fopen(LINES_TEST_ENGINE_LINES, "r");
	char buf[1 << 16];
	struct qual_msg m = { "" };
	int n = 0;

	(void)state;
	assert_non_null(f);
	while (fgets(buf, sizeof buf, f)) {
		json_t *o = json_loads(buf, 0, NULL);

		assert_non_null(o);
		if (lines_check(o, &m) != 0)
			fail_msg("line %d refused: %s", n + 1, m.text);
		json_decref(o);
		n++;
	}
	fclose(f);
	assert_int_equal(n, 20);
}

/* Objects that are not: each with lines_check()'s reason. */
static void test_check_refusals(void **state)
{
	static const struct {
		const char *line, *why;
	} cases[] = {
		{ "{}", "a line without a type" },
		{ "{\"type\":7}", "a line without a type" },
		{ "{\"type\":\"bogus\"}", "a line of unknown type 'bogus'" },
		{ "{\"type\":\"verdict\",\"verdict\":\"improvement\"}",
		  "a line of type 'verdict' without 'timed'" },
		{ "{\"type\":\"verdict\",\"verdict\":\"improvement\",\"timed\":\"yes\"}",
		  "a line of type 'verdict' whose 'timed' is of the wrong kind" },
		{ "{\"type\":\"verdict\",\"verdict\":\"great\",\"timed\":true}",
		  "a line of type 'verdict' with an unknown 'verdict'" },
		{ "{\"type\":\"verdict\",\"verdict\":1,\"timed\":true}",
		  "a line of type 'verdict' whose 'verdict' is of the wrong kind" },
		{ "{\"type\":\"case_verdict\",\"case\":\"a-1\",\"verdict\":\"fail\","
		  "\"identical_code\":false,\"n\":0}", "a line of type 'case_verdict' without 'failed_arm'" },
		{ "{\"type\":\"case_verdict\",\"case\":\"a-1\",\"verdict\":\"fail\","
		  "\"identical_code\":false,\"n\":0,\"failed_arm\":\"both\"}",
		  "a line of type 'case_verdict' with an unknown 'failed_arm'" },
		{ "{\"type\":\"case_verdict\",\"case\":\"a-1\",\"verdict\":\"faster\","
		  "\"identical_code\":false,\"n\":1.5}",
		  "a line of type 'case_verdict' whose 'n' is of the wrong kind" },
		{ "{\"type\":\"error\",\"stage\":\"setup\",\"arm\":null,\"case\":null}",
		  "a line of type 'error' without 'message'" },
		{ "{\"type\":\"error\",\"stage\":\"run\",\"arm\":null,\"case\":null,"
		  "\"message\":\"x\"}", "a line of type 'error' with an unknown 'stage'" },
		{ "{\"type\":\"error\",\"stage\":\"setup\",\"arm\":\"both\",\"case\":null,"
		  "\"message\":\"x\"}", "a line of type 'error' with an unknown 'arm'" },
		{ "{\"type\":\"error\",\"stage\":\"setup\",\"arm\":null,\"case\":null,"
		  "\"message\":\"x\",\"code\":\"oops\"}", "a line of type 'error' with an unknown 'code'" },
		{ "{\"type\":\"error\",\"stage\":\"setup\",\"arm\":null,\"case\":null,"
		  "\"message\":\"x\",\"gpu\":\"fine\"}", "a line of type 'error' with an unknown 'gpu'" },
		{ "{\"type\":\"pair\",\"case\":\"a-1\",\"pair\":0,\"order\":\"baseline_first\","
		  "\"baseline_ns\":1}", "a line of type 'pair' without 'candidate_ns'" },
		{ "{\"type\":\"start\",\"schema_version\":6,\"tool\":\"t\",\"version\":\"v\","
		  "\"time\":\"t\",\"device\":null,\"timed\":false,\"arch\":\"sm_90\","
		  "\"baseline\":{},\"candidate\":{},\"settings\":{}}",
		  "a line of type 'start' with schema_version 6" },
		{ "{\"type\":\"block\",\"case\":\"a-1\",\"block\":1}",
		  "a line of type 'block' without 'throttled'" },
		{ "{\"type\":\"session_time\",\"session\":1}",
		  "a line of type 'session_time' without 'time_s'" },
		{ "{\"type\":\"session_time\",\"session\":\"1\",\"time_s\":{}}",
		  "a line of type 'session_time' whose 'session' is of the wrong kind" },
		{ "{\"type\":\"calibration_run\",\"run\":1,\"runs\":2,\"verdict\":null}",
		  "a line of type 'calibration_run' without 'timed'" },
		{ "{\"type\":\"calibration_run\",\"run\":1,\"runs\":2,\"verdict\":\"ok\","
		  "\"timed\":true}",
		  "a line of type 'calibration_run' with an unknown 'verdict'" },
	};
	struct qual_msg m;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *o = json_loads(cases[i].line, 0, NULL);

		assert_non_null(o);
		m.text[0] = '\0';
		if (lines_check(o, &m) != QUAL_EINVAL)
			fail_msg("'%s' was taken", cases[i].line);
		assert_string_equal(m.text, cases[i].why);
		json_decref(o);
	}
	/* A block line with what a reader decides from passes. */
	{
		json_t *o = json_pack("{s:s,s:s,s:i,s:b}", "type", "block", "case", "a-1",
				      "block", 3, "throttled", 1);
		struct lines_info info;

		assert_int_equal(lines_check(o, &m), 0);
		lines_classify(o, &info);
		assert_int_equal(info.type, LINES_BLOCK);
		json_decref(o);
	}
	/* A session's time split, as timesplit_session_line() writes it,
	 * passes: quald relays it. */
	{
		struct timesplit t;
		json_t *o;

		timesplit_init(&t);
		o = timesplit_session_line(&t, 2);
		assert_int_equal(lines_check(o, &m), 0);
		json_decref(o);
	}
	/* Ours, as lines_error() writes it, passes. */
	{
		json_t *o = json_pack("{s:s,s:s,s:s,s:n,s:n,s:s}", "type", "error", "stage",
				      "setup", "code", "foreign_line", "arm", "case", "message", "x");
		assert_int_equal(lines_check(o, &m), 0);
		json_decref(o);
	}
}

#define SPLIT(name) cmocka_unit_test_setup_teardown(test_##name, split_setup, split_teardown)

QUAL_TESTS(
	cmocka_unit_test(test_code_names),
	cmocka_unit_test(test_code_round_trip),
	cmocka_unit_test(test_code_of),
	cmocka_unit_test(test_emit),
	cmocka_unit_test(test_emit_fails),
	cmocka_unit_test(test_error_line),
	cmocka_unit_test(test_classify_types),
	cmocka_unit_test(test_classify_fields),
	cmocka_unit_test(test_check_engine_lines),
	cmocka_unit_test(test_check_refusals),
	SPLIT(split_across_chunks),
	SPLIT(split_in_one_chunk),
	SPLIT(split_cap),
	SPLIT(split_fn_stops),
	SPLIT(split_byte_by_byte),
	SPLIT(split_finish),
)
