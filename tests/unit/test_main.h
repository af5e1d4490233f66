/* The one main of a cmocka unit test, and its one test list.
 *
 * A test file ends with its list, one entry a line, in a QUAL_TESTS(...)
 * block whose closing parenthesis stands alone at the start of a line:
 *
 *	#include "tests/unit/test_main.h"
 *	...
 *	QUAL_TESTS(
 *		cmocka_unit_test(test_one),
 *		cmocka_unit_test_setup_teardown(test_two, setup, teardown),
 *		T(three),
 *	)
 *
 * The first argument of each entry is the test's name, with or without
 * "test_" (a macro such as T(three) above must make the cmocka name
 * "test_three"). QUAL_TESTS defines main(): `prog` runs every test, `prog
 * NAME` the one named NAME or test_NAME, and a NAME not in the list is an
 * error (exit 2). tests/unit.cmake's qual_unit_tests() reads the same block
 * from the source and adds one ctest entry a test, so the names are written
 * once; its header says how to register a test file.
 *
 * A test that cannot run here (no device, no tool) calls qual_test_skip():
 * run alone, a skipped test exits 77, which ctest shows as skipped.
 *
 * All of it is in this header, so that a test program needs nothing more
 * to link than cmocka. */
#ifndef QUAL_TEST_MAIN_H
#define QUAL_TEST_MAIN_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* The exit status of a test run alone that skipped itself (ctest's
 * SKIP_RETURN_CODE, automake's convention). */
#define QUAL_TEST_SKIPPED 77

/* Whether the running test skipped itself (qual_test_skip()). */
static inline bool *qual_test__skipped(void)
{
	static bool skipped;

	return &skipped;
}

/* Skips the running test with a reason printed (printf-style). */
#define qual_test_skip(...)                                                   \
	do {                                                                  \
		print_message(__VA_ARGS__);                                   \
		print_message("\n");                                          \
		*qual_test__skipped() = true;                                 \
		skip();                                                       \
	} while (0)

/* Runs tests[0..n) or the one named by argv[1] (see above). Returns main's
 * exit status: cmocka's count of failed tests, QUAL_TEST_SKIPPED, or 2 for
 * a bad command line. */
static inline int qual_test_main(const struct CMUnitTest *tests, size_t n, int argc,
				 char **argv)
{
	const char *prog = argc > 0 ? argv[0] : "test";
	const char *slash = strrchr(prog, '/');

	if (slash)
		prog = slash + 1;
	if (argc > 2) {
		fprintf(stderr, "usage: %s [TEST]\n", prog);
		return 2;
	}
	if (argc < 2)
		return _cmocka_run_group_tests(prog, tests, n, NULL, NULL);
	for (size_t i = 0; i < n; i++) {
		const char *name = tests[i].name;
		int failed;

		/* The command line names a test with or without "test_". */
		if (strcmp(name, argv[1]) != 0 &&
		    (strncmp(name, "test_", 5) != 0 || strcmp(name + 5, argv[1]) != 0))
			continue;
		*qual_test__skipped() = false;
		failed = _cmocka_run_group_tests(prog, &tests[i], 1, NULL, NULL);
		return failed == 0 && *qual_test__skipped() ? QUAL_TEST_SKIPPED : failed;
	}
	fprintf(stderr, "%s: no test named '%s'\n", prog, argv[1]);
	return 2;
}

/* The test list and main() (see above). */
#define QUAL_TESTS(...)                                                       \
	static const struct CMUnitTest qual_tests__[] = { __VA_ARGS__ };      \
	int main(int argc, char **argv)                                       \
	{                                                                     \
		return qual_test_main(qual_tests__,                           \
				      sizeof qual_tests__ / sizeof qual_tests__[0], \
				      argc, argv);                            \
	}

#endif
