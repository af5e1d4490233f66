/* proto/fleet.c: a GPU type and a submission's name checked with a message
 * naming the field; a submission's overall verdict by the engine's
 * precedence, whatever order its jobs end in, unknown until all have one. */
#include <string.h>

#include "proto/fleet.h"
#include "proto/vocab.h"
#include "tests/unit/test_main.h"

static void test_words(void **state)
{
	struct qual_msg m;

	(void)state;
	assert_int_equal(fleet_gpu_type_check("h100_sxm-80.gb", &m), 0);
	assert_int_equal(fleet_gpu_type_check("a:b", &m), QUAL_EINVAL);
	assert_non_null(strstr(m.text, "'gpu_type' must be 1 to 64 characters"));
	assert_int_equal(fleet_gpu_type_check("", &m), QUAL_EINVAL);
	assert_int_equal(fleet_submission_check("s-0123456789ab", &m), 0);
	assert_int_equal(fleet_submission_check("s/../x", &m), QUAL_EINVAL);
	assert_non_null(strstr(m.text, "'submission'"));
}

/* The overall of verdicts given in order vs (n of them), from neutral. */
static int overall(const int *vs, int n)
{
	int o = RUN_NEUTRAL;

	for (int i = 0; i < n; i++)
		o = fleet_overall(o, vs[i]);
	return o;
}

static void test_overall(void **state)
{
	const int a[] = {RUN_NEUTRAL, RUN_REGRESSION, RUN_IMPROVEMENT};
	const int b[] = {RUN_IMPROVEMENT, RUN_NEUTRAL};
	const int c[] = {RUN_FAIL, RUN_CANCELLED};
	const int d[] = {RUN_CANCELLED, RUN_FAIL};
	const int e[] = {RUN_CANCELLED, RUN_REGRESSION};
	const int f[] = {RUN_NOT_TIMED, RUN_IMPROVEMENT};
	const int g[] = {RUN_FAIL, RUN_VERDICT_UNKNOWN, RUN_NEUTRAL};

	(void)state;
	assert_int_equal(overall(a, 3), RUN_REGRESSION);
	assert_int_equal(overall(b, 2), RUN_IMPROVEMENT);
	assert_int_equal(overall(c, 2), RUN_FAIL);
	assert_int_equal(overall(d, 2), RUN_FAIL);
	assert_int_equal(overall(e, 2), RUN_ERROR);
	assert_int_equal(overall(f, 2), RUN_NOT_TIMED);
	assert_int_equal(overall(g, 3), RUN_VERDICT_UNKNOWN);
}

QUAL_TESTS(
	cmocka_unit_test(test_words),
	cmocka_unit_test(test_overall),
)
