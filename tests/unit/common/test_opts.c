/* common/opts.c: options read by a table into a struct (each kind, the
 * last value counting, operands left last, a stop option), the messages of
 * an unknown option, a missing value a value given to a flag and a value out of range, and the help
 * listing made from the same table. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/opts.h"
#include "tests/unit/test_main.h"

struct args {
	const char *path;
	bool flag, help;
	int n;
	double x;
	int calls;
	const char *last_call;
};

static int take_call(void *ctx, const char *arg, struct qual_msg *msg)
{
	struct args *a = ctx;

	if (!strcmp(arg, "bad"))
		return qual_fail(msg, QUAL_EINVAL, "--call refuses '%s'", arg);
	a->calls++;
	a->last_call = arg;
	return 0;
}

#define AT(m) offsetof(struct args, m)

static const struct opts_entry table[] = {
	{"path", "PATH", OPTS_STRING, AT(path), .help = "a path"},
	{"flag", NULL, OPTS_FLAG, AT(flag), .help = "a flag\non two lines"},
	{"number", "N", OPTS_INT, AT(n), 1, 10, .help = "a whole number"},
	{"real", "X", OPTS_REAL, AT(x), 0, 0.5, .help = "a number"},
	{"call", "V", OPTS_CALL, .fn = take_call, .help = "a call"},
	{"listed", "DIR", OPTS_LISTED, .help = "read elsewhere"},
	{"a-very-long-option", "VALUE", OPTS_STRING, AT(path), .help = "long"},
	{"help", NULL, OPTS_FLAG, AT(help), .stop = true, .letter = 'h'},
};

#define N (sizeof table / sizeof table[0])

/* Parses the NULL-terminated words after a program name into *a. */
static int parse(struct args *a, struct qual_msg *msg, char **words, int *argc)
{
	static char *argv[16];
	static char prog[] = "prog";
	int n = 0;

	argv[n++] = prog;
	while (*words)
		argv[n++] = *words++;
	argv[n] = NULL;
	*argc = n;
	memset(a, 0, sizeof *a);
	return opts_parse(table, N, n, argv, a, msg);
}

#define PARSE(...) parse(&a, &msg, (char *[]){__VA_ARGS__, NULL}, &argc)

static void test_kinds(void **state)
{
	struct qual_msg msg = {{0}};
	struct args a;
	int argc, first;

	(void)state;
	first = PARSE("--path", "/a", "op1", "--flag", "--number=7", "--real", "0.25",
		      "--call", "one", "--call", "two", "--path=/b", "op2");
	assert_int_equal(first, argc - 2);
	assert_string_equal(a.path, "/b"); /* the last one counts */
	assert_true(a.flag);
	assert_int_equal(a.n, 7);
	assert_true(a.x == 0.25);
	assert_int_equal(a.calls, 2);
	assert_string_equal(a.last_call, "two");
	first = PARSE("--num", "3", "--", "--flag");
	assert_int_equal(a.n, 3); /* abbreviated */
	assert_false(a.flag);    /* after "--": an operand */
	assert_int_equal(first, argc - 1);
	first = PARSE("-h", "--bogus");
	assert_true(a.help);      /* stops: --bogus is not looked at */
	assert_true(first > 0);
}

static void test_refusals(void **state)
{
	struct qual_msg msg = {{0}};
	struct args a;
	int argc;

	(void)state;
	assert_int_equal(PARSE("--bogus"), QUAL_ENOENT);
	assert_string_equal(msg.text, "unknown option '--bogus'");
	assert_int_equal(PARSE("-x"), QUAL_ENOENT);
	assert_string_equal(msg.text, "unknown option '-x'");
	assert_int_equal(PARSE("--listed", "/d"), QUAL_ENOENT); /* read elsewhere */
	assert_int_equal(PARSE("--path"), QUAL_EINVAL);
	assert_string_equal(msg.text, "option '--path' needs a value");
	assert_int_equal(PARSE("--number", "11"), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "--number must be an integer in [1, 10], got '11'"));
	assert_int_equal(PARSE("--real", "x"), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "--real must be a number"));
	assert_int_equal(PARSE("--call", "bad"), QUAL_EINVAL);
	assert_string_equal(msg.text, "--call refuses 'bad'");
	assert_int_equal(PARSE("--flag=1"), QUAL_EINVAL);
	assert_string_equal(msg.text, "option '--flag' takes no value");
}

static void test_help(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	opts_help(f, table, N, 16);
	fclose(f);
	assert_string_equal(text,
		"  --path PATH   a path\n"
		"  --flag        a flag\n"
		"                on two lines\n"
		"  --number N    a whole number\n"
		"  --real X      a number\n"
		"  --call V      a call\n"
		"  --listed DIR  read elsewhere\n"
		"  --a-very-long-option VALUE  long\n");
	free(text);
}

QUAL_TESTS(
	cmocka_unit_test(test_kinds),
	cmocka_unit_test(test_refusals),
	cmocka_unit_test(test_help),
)
