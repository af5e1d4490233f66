/* common/text.c: bytes into a JSON string (valid UTF-8 as it is, '?' for
 * each byte that is not and for NUL, never dropped or cut short), and the
 * parsers of numbers given as text, with their messages. */
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/fsutil.h"
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

/* The cases of test_parse, one a line (the file says how). */
#ifndef TEXT_TEST_PARSE_CASES
#error "TEXT_TEST_PARSE_CASES must name tests/unit/common/parse_numbers.txt"
#endif

static long bound_long(const char *s)
{
	if (!strcmp(s, "min"))
		return LONG_MIN;
	return !strcmp(s, "max") ? LONG_MAX : strtol(s, NULL, 10);
}

/* Runs one case line; returns false for a comment. */
static bool parse_case(char *line)
{
	char *f[7];
	struct qual_msg msg = { { 0 } };
	long lx = 5;
	double dx = 5;
	int rc;

	if (line[0] == '#' || line[0] == '\0')
		return false;
	for (int k = 0; k < 7; k++) {
		f[k] = strsep(&line, "|");
		if (!f[k])
			fail_msg("case line with %d fields, want 7", k);
	}
	if (f[0][0] == 'l')
		rc = text_parse_long("--n", f[1], bound_long(f[2]), bound_long(f[3]), &lx, &msg);
	else
		rc = text_parse_double("--n", f[1], strtod(f[2], NULL), strtod(f[3], NULL),
				       &dx, &msg);
	print_message("%s '%s': %d %s\n", f[0], f[1], rc, msg.text);
	assert_int_equal(rc, atoi(f[4]));
	if (f[0][0] == 'l')
		assert_int_equal(lx, strtol(f[5], NULL, 10));
	else
		assert_true(dx == strtod(f[5], NULL));
	if (f[6][0])
		assert_string_equal(msg.text, f[6]);
	return true;
}

static void test_parse(void **state)
{
	char *text, *rest, *line;
	size_t size, n = 0;
	long lx;
	double dx;

	(void)state;
	assert_int_equal(fs_read_capped(TEXT_TEST_PARSE_CASES, 1 << 20, &text, &size, NULL), 0);
	for (rest = text; (line = strsep(&rest, "\n"));)
		n += parse_case(line);
	free(text);
	assert_true(n >= 30);
	/* msg may be NULL. */
	assert_int_equal(text_parse_long("--n", "x", 0, 1, &lx, NULL), QUAL_EINVAL);
	assert_int_equal(text_parse_double("--n", "x", 0, 1, &dx, NULL), QUAL_EINVAL);
}

/* The last line that holds more than white space, trailing spaces and
 * carriage returns cut; only the first len bytes count; a small out cuts. */
static void test_last_line(void **state)
{
	static const char text[] = "noise\nqual-compile: cannot write 'x'  \r\n\n \n";
	char out[64], small[6];

	(void)state;
	text_last_line(text, sizeof text - 1, out, sizeof out);
	assert_string_equal(out, "qual-compile: cannot write 'x'");
	text_last_line(text, 5, out, sizeof out);
	assert_string_equal(out, "noise");
	text_last_line("one line", 8, out, sizeof out);
	assert_string_equal(out, "one line");
	text_last_line("\n\n  \r\n", 6, out, sizeof out);
	assert_string_equal(out, "");
	text_last_line("", 0, out, sizeof out);
	assert_string_equal(out, "");
	text_last_line("a\nlonger line", 13, small, sizeof small);
	assert_string_equal(small, "longe");
}

QUAL_TESTS(
	cmocka_unit_test(test_valid_kept),
	cmocka_unit_test(test_invalid_replaced),
	cmocka_unit_test(test_overlong_and_surrogates),
	cmocka_unit_test(test_nul),
	cmocka_unit_test(test_control_kept),
	cmocka_unit_test(test_null),
	cmocka_unit_test(test_parse),
	cmocka_unit_test(test_last_line),
)
