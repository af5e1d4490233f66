/* common/text.c: bytes into a JSON string (valid UTF-8 as it is, '?' for
 * each byte that is not and for NUL, never dropped or cut short), and the
 * parsers of numbers given as text, with their messages. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include <jansson.h>

#include "common/text.h"
#include "tests/unit/test_main.h"

/* text_json of len bytes must be want (want_len bytes, may hold NUL). */
static void check_text(const char *s, size_t len, const char *want)
{
	json_t *v = text_json(s, len);

	assert_non_null(v);
	assert_true(json_is_string(v));
	/* One byte out for each byte in: nothing dropped, nothing added. */
	assert_int_equal(json_string_length(v), len);
	assert_memory_equal(json_string_value(v), want, len);
	json_decref(v);
}

#define CHECK(in, want) check_text(in, sizeof in - 1, want)

static void test_valid_kept(void **state)
{
	(void)state;
	CHECK("", "");
	CHECK("plain ascii", "plain ascii");
	CHECK("caf\xc3\xa9", "caf\xc3\xa9");                 /* U+00E9, 2 bytes */
	CHECK("\xe2\x82\xac 5", "\xe2\x82\xac 5");           /* U+20AC, 3 bytes */
	CHECK("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80");       /* U+1F600, 4 bytes */
	CHECK("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf");       /* U+10FFFF, the last */
	CHECK("\xed\x9f\xbf", "\xed\x9f\xbf");               /* U+D7FF, below the surrogates */
	CHECK("\xee\x80\x80", "\xee\x80\x80");               /* U+E000, above them */
	CHECK("\xc2\x80", "\xc2\x80");                       /* U+0080, the first of 2 */
	CHECK("\xe0\xa0\x80", "\xe0\xa0\x80");               /* U+0800, the first of 3 */
	CHECK("\xf0\x90\x80\x80", "\xf0\x90\x80\x80");       /* U+10000, the first of 4 */
}

static void test_invalid_replaced(void **state)
{
	(void)state;
	CHECK("a\xff" "b", "a?b");
	CHECK("\x80", "?");                                  /* a lone continuation */
	CHECK("\xe2\x82", "??");                             /* cut short at the end */
	CHECK("\xe2\x82" "x", "??x");                        /* cut short inside */
	CHECK("\xc3\xa9\xff\xc3\xa9", "\xc3\xa9?\xc3\xa9");  /* valid on both sides */
	CHECK("\xf5\x80\x80\x80", "????");                   /* no such lead byte */
}

static void test_overlong_and_surrogates(void **state)
{
	(void)state;
	CHECK("\xc0\xaf", "??");                             /* '/' in 2 bytes */
	CHECK("\xc1\xbf", "??");
	CHECK("\xe0\x80\xaf", "???");                        /* '/' in 3 bytes */
	CHECK("\xe0\x9f\xbf", "???");                        /* U+07FF in 3 bytes */
	CHECK("\xf0\x80\x80\xaf", "????");                   /* '/' in 4 bytes */
	CHECK("\xf0\x8f\xbf\xbf", "????");                   /* U+FFFF in 4 bytes */
	CHECK("\xed\xa0\x80", "???");                        /* U+D800 */
	CHECK("\xed\xbf\xbf", "???");                        /* U+DFFF */
	CHECK("\xf4\x90\x80\x80", "????");                   /* U+110000 */
}

/* NUL would end the text early: each becomes '?', the rest is kept. */
static void test_nul(void **state)
{
	(void)state;
	CHECK("a\0b", "a?b");
	CHECK("\0", "?");
	CHECK("\xc3\xa9\0\xff", "\xc3\xa9??");
}

/* Control characters are kept as they are (JSON escapes them). */
static void test_control_kept(void **state)
{
	json_t *v = text_json("\x01\t\n\x1f\x7f", 5);
	char *dump;

	(void)state;
	CHECK("\x01\t\n\x1f\x7f", "\x01\t\n\x1f\x7f");
	dump = json_dumps(v, JSON_ENCODE_ANY);
	assert_string_equal(dump, "\"\\u0001\\t\\n\\u001F\x7f\"");
	free(dump);
	json_decref(v);
}

static void test_null(void **state)
{
	json_t *v;

	(void)state;
	v = text_json(NULL, 0);
	assert_true(json_is_null(v));
	json_decref(v);
	v = text_json_str(NULL);
	assert_true(json_is_null(v));
	json_decref(v);
	/* Only len bytes are read: the rest may be anything. */
	v = text_json("ab\xff", 2);
	assert_string_equal(json_string_value(v), "ab");
	json_decref(v);
	v = text_json_str("x\xffy");
	assert_string_equal(json_string_value(v), "x?y");
	json_decref(v);
}

/* ---- numbers ------------------------------------------------------------- */

static void test_parse_long(void **state)
{
	struct qual_msg msg = { { 0 } };
	long x = -5;

	(void)state;
	assert_int_equal(text_parse_long("--pairs", "42", 1, 100, &x, &msg), 0);
	assert_int_equal(x, 42);
	assert_int_equal(text_parse_long("--pairs", "1", 1, 100, &x, &msg), 0);
	assert_int_equal(x, 1);
	assert_int_equal(text_parse_long("--pairs", "100", 1, 100, &x, &msg), 0);
	assert_int_equal(x, 100);
	assert_int_equal(text_parse_long("--n", "-7", -10, 10, &x, &msg), 0);
	assert_int_equal(x, -7);
	assert_int_equal(text_parse_long("--n", "9223372036854775807", 0, LONG_MAX, &x, &msg), 0);
	assert_int_equal(x, LONG_MAX);

	/* Out of range, garbage, overflow: an error, *out untouched. */
	x = -5;
	assert_int_equal(text_parse_long("--pairs", "0", 1, 100, &x, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "--pairs must be an integer in [1, 100], got '0'");
	assert_int_equal(text_parse_long("--pairs", "101", 1, 100, &x, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "--pairs must be an integer in [1, 100], got '101'");
	assert_int_equal(text_parse_long("--pairs", "x", 1, 100, &x, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "--pairs must be an integer in [1, 100], got 'x'");
	assert_int_equal(text_parse_long("--pairs", "", 1, 100, &x, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "--pairs must be an integer in [1, 100], got ''");
	assert_int_equal(text_parse_long("--pairs", "12x", 1, 100, &x, &msg), QUAL_EINVAL);
	assert_int_equal(text_parse_long("--pairs", "1.5", 1, 100, &x, &msg), QUAL_EINVAL);
	assert_int_equal(text_parse_long("--pairs", "0x10", 1, 100, &x, &msg), QUAL_EINVAL);
	assert_int_equal(text_parse_long("--pairs", "12 ", 1, 100, &x, &msg), QUAL_EINVAL);
	assert_int_equal(text_parse_long("--pairs", " 12", 1, 100, &x, &msg), QUAL_EINVAL);
	assert_int_equal(text_parse_long("--slots", "99999999999999999999", 1, LONG_MAX, &x,
					 &msg), QUAL_EINVAL);
	assert_string_equal(msg.text,
			    "--slots must be an integer >= 1, got '99999999999999999999'");
	assert_int_equal(text_parse_long("--slots", "-99999999999999999999", LONG_MIN, LONG_MAX,
					 &x, &msg), QUAL_EINVAL);
	assert_int_equal(x, -5);
	/* msg may be NULL. */
	assert_int_equal(text_parse_long("--n", "x", 0, 1, &x, NULL), QUAL_EINVAL);
}

static void test_parse_double(void **state)
{
	struct qual_msg msg = { { 0 } };
	double x = -5;

	(void)state;
	assert_int_equal(text_parse_double("--alpha", "0.05", 0, 1, &x, &msg), 0);
	assert_true(x == 0.05);
	assert_int_equal(text_parse_double("--alpha", "0", 0, 1, &x, &msg), 0);
	assert_true(x == 0);
	assert_int_equal(text_parse_double("--alpha", "1", 0, 1, &x, &msg), 0);
	assert_true(x == 1);
	assert_int_equal(text_parse_double("--margin", "2.5e3", 0, INFINITY, &x, &msg), 0);
	assert_true(x == 2500);
	assert_int_equal(text_parse_double("--any", "-1e300", -INFINITY, INFINITY, &x, &msg), 0);
	assert_true(x == -1e300);

	x = -5;
	assert_int_equal(text_parse_double("--alpha", "1.5", 0, 1, &x, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "--alpha must be a number in [0, 1], got '1.5'");
	assert_int_equal(text_parse_double("--alpha", "-0.1", 0, 1, &x, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "--alpha must be a number in [0, 1], got '-0.1'");
	assert_int_equal(text_parse_double("--alpha", "abc", 0, 1, &x, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "--alpha must be a number in [0, 1], got 'abc'");
	assert_int_equal(text_parse_double("--alpha", "", 0, 1, &x, &msg), QUAL_EINVAL);
	assert_int_equal(text_parse_double("--alpha", "0.5x", 0, 1, &x, &msg), QUAL_EINVAL);
	assert_int_equal(text_parse_double("--alpha", " 0.5", 0, 1, &x, &msg), QUAL_EINVAL);
	assert_int_equal(text_parse_double("--margin", "-1", 0, INFINITY, &x, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "--margin must be a number >= 0, got '-1'");
	/* Not finite, or overflowing: never a number here. */
	assert_int_equal(text_parse_double("--any", "nan", -INFINITY, INFINITY, &x, &msg),
			 QUAL_EINVAL);
	assert_string_equal(msg.text, "--any must be a number, got 'nan'");
	assert_int_equal(text_parse_double("--any", "inf", -INFINITY, INFINITY, &x, &msg),
			 QUAL_EINVAL);
	assert_int_equal(text_parse_double("--any", "-inf", -INFINITY, INFINITY, &x, &msg),
			 QUAL_EINVAL);
	assert_int_equal(text_parse_double("--any", "1e999", -INFINITY, INFINITY, &x, &msg),
			 QUAL_EINVAL);
	assert_string_equal(msg.text, "--any must be a number, got '1e999'");
	assert_true(x == -5);
	assert_int_equal(text_parse_double("--any", "x", 0, 1, &x, NULL), QUAL_EINVAL);
}

QUAL_TESTS(
	cmocka_unit_test(test_valid_kept),
	cmocka_unit_test(test_invalid_replaced),
	cmocka_unit_test(test_overlong_and_surrogates),
	cmocka_unit_test(test_nul),
	cmocka_unit_test(test_control_kept),
	cmocka_unit_test(test_null),
	cmocka_unit_test(test_parse_long),
	cmocka_unit_test(test_parse_double),
)
