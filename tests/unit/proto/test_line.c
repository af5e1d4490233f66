/* proto/line.c: a line parsed once carries its type, seq, job, verdict and
 * code; what is not one JSON object is refused; references. */
#include <limits.h>
#include <string.h>

#include "common/err.h"
#include "common/xalloc.h"
#include "proto/line.h"
#include "tests/unit/test_main.h"

static struct line *parse_ok(const char *text)
{
	struct line *l = NULL;

	assert_int_equal(line_parse(text, strlen(text), &l), 0);
	assert_non_null(l);
	assert_int_equal(l->len, strlen(text));
	assert_memory_equal(l->text, text, l->len + 1);
	return l;
}

static void test_verdict_line(void **state)
{
	struct line *l = parse_ok("{\"type\":\"verdict\",\"verdict\":\"regression\","
				  "\"timed\":true,\"job\":\"j000042\",\"seq\":17}");

	(void)state;
	assert_int_equal(l->type, LINES_VERDICT);
	assert_true(line_is_verdict(l));
	assert_int_equal(l->verdict, RUN_REGRESSION);
	assert_int_equal(l->case_verdict, CASE_VERDICT_UNKNOWN);
	assert_int_equal(l->seq, 17);
	assert_string_equal(l->job, "j000042");
	assert_true(json_is_object(l->obj));
	line_unref(l);
}

static void test_case_verdict_line(void **state)
{
	struct line *l = parse_ok("{\"type\":\"case_verdict\",\"case\":\"c\",\"verdict\":\"fail\","
				  "\"failed_arm\":\"candidate\",\"identical_code\":false,\"n\":0}");

	(void)state;
	assert_int_equal(l->type, LINES_CASE_VERDICT);
	assert_false(line_is_verdict(l));
	assert_int_equal(l->case_verdict, VERDICT_FAIL);
	assert_int_equal(l->verdict, RUN_VERDICT_UNKNOWN);
	assert_int_equal(l->seq, -1);
	assert_string_equal(l->job, "");
	line_unref(l);
}

static void test_error_line(void **state)
{
	struct line *l = parse_ok("{\"type\":\"error\",\"stage\":\"compile\",\"code\":\"compile_crashed\","
				  "\"arm\":\"candidate\",\"case\":null,\"message\":\"m\",\"seq\":0}");

	(void)state;
	assert_int_equal(l->type, LINES_ERROR);
	assert_int_equal(l->code, LINES_CODE_COMPILE_CRASHED);
	assert_int_equal(l->seq, 0);
	line_unref(l);
}

/* A verdict word of none of the table's is no verdict a reader may act on. */
static void test_unknown_words(void **state)
{
	struct line *l = parse_ok("{\"type\":\"verdict\",\"verdict\":\"great\",\"seq\":-3,"
				  "\"job\":7}");

	(void)state;
	assert_true(line_is_verdict(l));
	assert_int_equal(l->verdict, RUN_VERDICT_UNKNOWN);
	assert_int_equal(l->seq, -1);
	assert_string_equal(l->job, "");
	line_unref(l);
	l = parse_ok("{\"x\":1}");
	assert_int_equal(l->type, LINES_OTHER);
	line_unref(l);
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"", "[1]", "\"verdict\"", "{\"type\":", "{} {}", "not json", "null",
	};
	static const char nul[] = "{\"n\":1\0}";
	struct line *l = (struct line *)1;

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(line_parse(bad[i], strlen(bad[i]), &l), QUAL_EINVAL);
		assert_null(l);
	}
	assert_int_equal(line_parse(nul, sizeof nul - 1, &l), QUAL_EINVAL);
	assert_null(l);
}

/* line_take keeps the bytes as given (the relay's splice) and reads the
 * object; references keep the line until the last is dropped. */
static void test_take_and_refs(void **state)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:I}", "type", "start", "job", "j000003",
			      "tool", "qual-run", "seq", (json_int_t)0);
	struct line *l = line_take(o, xstrdup("{bytes}"), 7);

	(void)state;
	assert_int_equal(l->type, LINES_START);
	assert_string_equal(l->job, "j000003");
	assert_int_equal(l->seq, 0);
	assert_string_equal(l->text, "{bytes}");
	assert_ptr_equal(line_ref(l), l);
	assert_int_equal(l->refs, 2);
	line_unref(l);
	assert_int_equal(l->refs, 1);
	assert_ptr_equal(l->obj, o);
	line_unref(l);
	line_unref(NULL);
}

/* line_tail_seq reads the seq quald puts last in every line it writes, and
 * nothing else: a line that does not end so gets -1 (its reader parses it). */
static void test_tail_seq(void **state)
{
	static const struct {
		const char *text;
		long seq;
	} cases[] = {
		{ "{\"type\":\"start\",\"job\":\"j000001\",\"seq\":0}", 0 },
		{ "{\"type\":\"pair\",\"job\":\"j000001\",\"seq\":1234567}", 1234567 },
		{ "{\"job\":\"j1\",\"seq\":999999999999999999}", 999999999999999999L },
		/* Ids where the worker had them (an older quald's rewrite). */
		{ "{\"seq\":3,\"type\":\"case\",\"job\":\"j1\"}", -1 },
		{ "{\"type\":\"case\",\"x\":{\"seq\":3}}", -1 },
		{ "{\"seq\":3}", -1 },
		{ "{\"job\":\"j1\",\"seq\":07}", -1 },
		{ "{\"job\":\"j1\",\"seq\":}", -1 },
		{ "{\"job\":\"j1\",\"seq\":-1}", -1 },
		{ "{\"job\":\"j1\",\"seq\":1 }", -1 },
		{ "{\"job\":\"j1\",\"seq\":1", -1 },
		{ "{\"job\":\"j1\",\"seq\":9223372036854775807}", LONG_MAX },
		{ "{\"job\":\"j1\",\"seq\":9223372036854775808}", -1 },
		{ "{\"job\":\"j1\",\"seq\":12345678901234567890}", -1 },
		{ "{\"job\":\"j1\",\"xseq\":1}", -1 },
		{ "", -1 },
		{ "}", -1 },
		{ "7}", -1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_int_equal(line_tail_seq(cases[i].text, strlen(cases[i].text)),
				 cases[i].seq);
}

QUAL_TESTS(
	cmocka_unit_test(test_verdict_line),
	cmocka_unit_test(test_case_verdict_line),
	cmocka_unit_test(test_error_line),
	cmocka_unit_test(test_unknown_words),
	cmocka_unit_test(test_refused),
	cmocka_unit_test(test_take_and_refs),
	cmocka_unit_test(test_tail_seq),
)
