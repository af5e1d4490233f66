/* stats/calib.c: the Clopper-Pearson bound against scipy, the counts a
 * record takes from case_verdict lines, and the checks of a record. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include "tests/unit/test_main.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "stats/calib.h"

/* scipy.stats.beta.ppf(0.95, k + 1, n - k), scipy 1.10.1 (k < n). */
static const struct {
	int k, n;
	double upper;
} scipy_upper[] = {
	{0, 1, 0.95},
	{0, 10, 0.2588655508930522},
	{1, 10, 0.39416330243650466},
	{0, 100, 0.02951304960703993},
	{3, 100, 0.07571079374983004},
	{5, 1000, 0.010484076911415651},
	{0, 1000, 0.0029912495450952954},
	{50, 100, 0.5863782853690883},
	{9, 10, 0.9948838031081763},
	{0, 9900, 0.0003025534410247035},
	{12, 9900, 0.0019631576695740157},
};

static void test_upper_bound_scipy(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof scipy_upper / sizeof scipy_upper[0]; i++) {
		double u = calib_upper_bound(scipy_upper[i].k, scipy_upper[i].n, 0.95);

		if (fabs(u - scipy_upper[i].upper) > 1e-9 * scipy_upper[i].upper) {
			fprintf(stderr, "k=%d n=%d: got %.17g, scipy %.17g\n", scipy_upper[i].k,
				scipy_upper[i].n, u, scipy_upper[i].upper);
			fail();
		}
	}
	assert_true(calib_upper_bound(4, 4, 0.95) == 1.0);
	assert_true(calib_upper_bound(0, 0, 0.95) == 1.0);
	assert_true(isnan(calib_upper_bound(5, 4, 0.95)));
	assert_true(isnan(calib_upper_bound(-1, 4, 0.95)));
	assert_true(isnan(calib_upper_bound(1, 4, 1.0)));
}

static void take(struct calib *c, const char *text)
{
	json_error_t e;
	json_t *o = json_loads(text, 0, &e);

	assert_non_null(o);
	assert_int_equal(calib_take_line(c, o), 0);
	json_decref(o);
}

static json_t *case_of(json_t *rec, const char *name)
{
	json_t *cases = json_object_get(rec, "cases");

	for (size_t i = 0; i < json_array_size(cases); i++)
		if (!strcmp(json_string_value(json_object_get(json_array_get(cases, i),
							      "case")), name))
			return json_array_get(cases, i);
	fail_msg("no case '%s' in the record", name);
	return NULL;
}

static long long int_of(json_t *o, const char *key)
{
	assert_true(json_is_integer(json_object_get(o, key)));
	return json_integer_value(json_object_get(o, key));
}

static void test_record_counts(void **state)
{
	struct calib c;
	json_t *rec, *k;
	struct qual_msg m;

	(void)state;
	calib_init(&c);
	for (int run = 0; run < 3; run++) {
		take(&c, "{\"type\":\"start\",\"device\":{\"name\":\"H200\"},"
			 "\"settings\":{\"alpha\":0.05,\"margin\":0.01}}");
		/* significant and outside the margin: slower */
		take(&c, "{\"type\":\"case_verdict\",\"case\":\"a\",\"p_holm\":0.001,"
			 "\"ratio_median\":1.03,\"ratio_lo\":1.02,\"ratio_hi\":1.04,"
			 "\"detectable_ratio\":1.0" "1}");
		/* significant but inside the margin: no alarm */
		take(&c, "{\"type\":\"case_verdict\",\"case\":\"b\",\"p_holm\":0.001,"
			 "\"ratio_median\":1.001,\"ratio_lo\":0.995,\"ratio_hi\":1.005,"
			 "\"detectable_ratio\":1.02}");
		/* outside the margin but not significant: no alarm */
		take(&c, "{\"type\":\"case_verdict\",\"case\":\"c\",\"p_holm\":0.2,"
			 "\"ratio_median\":0.97,\"ratio_lo\":0.95,\"ratio_hi\":0.99}");
		/* untimed: no comparison */
		take(&c, "{\"type\":\"case_verdict\",\"case\":\"d\",\"p_holm\":null}");
	}
	/* once: faster (alpha exactly is not below alpha: no alarm the 2nd) */
	take(&c, "{\"type\":\"case_verdict\",\"case\":\"c\",\"p_holm\":0.01,"
		 "\"ratio_median\":0.97,\"ratio_lo\":0.95,\"ratio_hi\":0.985}");
	take(&c, "{\"type\":\"case_verdict\",\"case\":\"c\",\"p_holm\":0.05,"
		 "\"ratio_median\":0.97,\"ratio_lo\":0.95,\"ratio_hi\":0.985}");
	rec = calib_record(&c, "gpu-0", "2026-12-01T00:00:00Z", 3);
	assert_int_equal(calib_record_check(rec, "x", &m), 0);
	assert_int_equal(int_of(rec, "comparisons"), 11);
	assert_int_equal(int_of(rec, "slower"), 3);
	assert_int_equal(int_of(rec, "faster"), 1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(rec, "device"),
							      "name")), "H200");
	k = case_of(rec, "a");
	assert_int_equal(int_of(k, "comparisons"), 3);
	assert_int_equal(int_of(k, "slower"), 3);
	assert_true(json_real_value(json_object_get(k, "false_alarm_upper")) == 1.0);
	assert_true(fabs(json_number_value(json_object_get(k, "detectable_ratio")) - 1.01) < 1e-12);
	k = case_of(rec, "b");
	assert_int_equal(int_of(k, "slower") + int_of(k, "faster"), 0);
	assert_true(fabs(json_real_value(json_object_get(k, "false_alarm_upper")) -
			 0.6315968501359612) < 1e-9); /* scipy beta.ppf(0.95, 1, 3) */
	k = case_of(rec, "c");
	assert_int_equal(int_of(k, "comparisons"), 5);
	assert_int_equal(int_of(k, "faster"), 1);
	assert_true(json_is_null(json_object_get(k, "detectable_ratio")));
	assert_true(fabs(json_real_value(json_object_get(k, "false_alarm_rate")) - 0.2) < 1e-15);
	json_decref(rec);
	calib_release(&c);
}

static void test_record_check_names_field(void **state)
{
	struct calib c;
	json_t *rec;
	struct qual_msg m;

	(void)state;
	calib_init(&c);
	take(&c, "{\"type\":\"start\",\"settings\":{\"alpha\":0.05,\"margin\":0.01}}");
	take(&c, "{\"type\":\"case_verdict\",\"case\":\"a\",\"p_holm\":0.5,"
		 "\"ratio_lo\":0.99,\"ratio_hi\":1.01}");
	rec = calib_record(&c, "gpu-0", "t", 1);
	json_object_set_new(json_array_get(json_object_get(rec, "cases"), 0), "slower",
			    json_string("3"));
	assert_int_equal(calib_record_check(rec, "calibration file 'f.json'", &m), QUAL_EINVAL);
	assert_non_null(strstr(m.text, "calibration file 'f.json'"));
	assert_non_null(strstr(m.text, "'cases[0].slower'"));
	json_object_del(rec, "runs");
	assert_int_equal(calib_record_check(rec, "f", &m), QUAL_EINVAL);
	assert_non_null(strstr(m.text, "'runs' is missing"));
	json_decref(rec);
	rec = json_array();
	assert_int_equal(calib_record_check(rec, "f", &m), QUAL_EINVAL);
	assert_non_null(strstr(m.text, "not a JSON object"));
	json_decref(rec);
	calib_release(&c);
}

QUAL_TESTS(
	cmocka_unit_test(test_upper_bound_scipy),
	cmocka_unit_test(test_record_counts),
	cmocka_unit_test(test_record_check_names_field),
)
