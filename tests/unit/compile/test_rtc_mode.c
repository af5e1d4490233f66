/* The processor mode (compile/rtc_mode.c): names, and which option each mode adds
 * for which compiler and target, or why it is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/unit/test_main.h"

#include <string.h>

#include "compile/rtc_mode.h"

static void test_names_round_trip(void **state)
{
	static const char *const names[] = {"default", "cu", "wgp"};
	enum rtc_mode m;

	(void)state;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(rtc_mode_parse(names[i], &m), 0);
		assert_int_equal(m, i);
		assert_string_equal(rtc_mode_name(m), names[i]);
	}
	assert_int_equal(rtc_mode_parse("CU", &m), -1);
	assert_int_equal(rtc_mode_parse("", &m), -1);
	assert_int_equal(rtc_mode_parse("wgp ", &m), -1);
}

/* Targets with workgroup processors (gfx10 and later, target features
 * allowed) get -mcumode for cu and -mno-cumode for wgp; default adds
 * nothing anywhere, nvrtc included. */
static void test_option_where_the_target_has_wgps(void **state)
{
	static const char *const archs[] = {"gfx1030", "gfx1100", "gfx1010:xnack-", "gfx1201"};
	const char *opt = "unset";
	char why[200] = "";

	(void)state;
	for (int i = 0; i < 4; i++) {
		assert_int_equal(rtc_mode_option(RTC_MODE_CU, RTC_ABI_HIPRTC, archs[i],
						    &opt, why, sizeof why), 0);
		assert_string_equal(opt, "-mcumode");
		assert_int_equal(rtc_mode_option(RTC_MODE_WGP, RTC_ABI_HIPRTC, archs[i],
						    &opt, why, sizeof why), 0);
		assert_string_equal(opt, "-mno-cumode");
		assert_int_equal(rtc_mode_option(RTC_MODE_DEFAULT, RTC_ABI_HIPRTC,
						    archs[i], &opt, why, sizeof why), 0);
		assert_null(opt);
	}
	assert_int_equal(rtc_mode_option(RTC_MODE_DEFAULT, RTC_ABI_NVRTC, "sm_90", &opt,
					    why, sizeof why), 0);
	assert_null(opt);
}

/* gfx9 (CDNA included) has no WGP mode: cu and wgp are refused naming the
 * target; nvrtc has no mode at all; an unreadable target name is refused
 * too, never guessed. */
static void test_refusals_name_the_problem(void **state)
{
	static const char *const gfx9[] = {"gfx90a", "gfx942", "gfx908", "gfx900", "gfx90a:sramecc+"};
	const char *opt;
	char why[200];

	(void)state;
	for (int i = 0; i < 5; i++)
		for (int m = RTC_MODE_CU; m <= RTC_MODE_WGP; m++) {
			why[0] = '\0';
			assert_int_equal(rtc_mode_option((enum rtc_mode)m, RTC_ABI_HIPRTC,
							    gfx9[i], &opt, why, sizeof why), -1);
			assert_null(opt);
			assert_non_null(strstr(why, gfx9[i]));
			assert_non_null(strstr(why, "workgroup processors"));
		}
	assert_int_equal(rtc_mode_option(RTC_MODE_WGP, RTC_ABI_NVRTC, "sm_90", &opt, why,
					    sizeof why), -1);
	assert_non_null(strstr(why, "nvrtc"));
	assert_non_null(strstr(why, "'wgp'"));
	assert_int_equal(rtc_mode_option(RTC_MODE_CU, RTC_ABI_HIPRTC, "gfx", &opt, why,
					    sizeof why), -1);
	assert_non_null(strstr(why, "'gfx'"));
	assert_int_equal(rtc_mode_option(RTC_MODE_CU, RTC_ABI_HIPRTC, "sm_90", &opt, why,
					    sizeof why), -1);
}

QUAL_TESTS(
	cmocka_unit_test(test_names_round_trip),
	cmocka_unit_test(test_option_where_the_target_has_wgps),
	cmocka_unit_test(test_refusals_name_the_problem),
)
