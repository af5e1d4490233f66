/* The test main itself (tests/unit/test_main.h), driven by the ctest entry
 * main_self_exits (tests/unit.cmake): a test that passes, one whose fixture
 * must have run, and one that skips itself. */
#include <stdbool.h>

#include "tests/unit/test_main.h"

static bool set_up;

static int setup(void **state)
{
	(void)state;
	set_up = true;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	set_up = false;
	return 0;
}

static void test_passes(void **state)
{
	(void)state;
	assert_false(set_up);
}

static void test_fixture(void **state)
{
	(void)state;
	assert_true(set_up);
}

static void test_skips(void **state)
{
	(void)state;
	qual_test_skip("skipped on purpose");
	fail_msg("qual_test_skip returned");
}

#define T(name) cmocka_unit_test(test_##name)

QUAL_TESTS(
	cmocka_unit_test(test_passes),
	/* An entry with a fixture, and one through a macro. */
	cmocka_unit_test_setup_teardown(test_fixture, setup, teardown),
	T(skips),
)
