/* The main() of a cmocka unit runner that takes one test's name: `runner
 * NAME` runs test_NAME alone (ctest runs each test so, as PREFIX_NAME), and
 * no argument runs them all. Include after <cmocka.h>. */
#ifndef QUAL_TESTS_UNIT_MAIN_H
#define QUAL_TESTS_UNIT_MAIN_H

#include <stdio.h>
#include <string.h>

/* Runs tests[0, n) (the group named prog), or only the one named by argv[1];
 * 2 when there is no test of that name. */
static inline int unit_main(const char *prog, const struct CMUnitTest *tests, size_t n,
			    int argc, char **argv)
{
	static char filter[128];
	size_t i;

	if (argc > 1) {
		snprintf(filter, sizeof filter, "test_%s", argv[1]);
		for (i = 0; i < n && strcmp(tests[i].name, filter); i++)
			;
		if (i == n) {
			fprintf(stderr, "%s: no test named '%s'\n", prog, argv[1]);
			return 2;
		}
		cmocka_set_test_filter(filter);
	}
	return _cmocka_run_group_tests(prog, tests, n, NULL, NULL);
}

#endif
