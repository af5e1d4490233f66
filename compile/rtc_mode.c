/* The processor mode of compiles (rtc_mode.h). */
#include "compile/rtc_mode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/settings.h"

/* The modes' words are the settings table's (proto/settings.h), in the
 * enum's order: one spelling for the option, the request and the lines. */
#define RTC_MODE_COUNT (RTC_MODE_WGP + 1)

const char *rtc_mode_name(enum rtc_mode mode)
{
	return (unsigned)mode < RTC_MODE_COUNT ? settings_mode_words[mode] : "?";
}

int rtc_mode_parse(const char *s, enum rtc_mode *mode)
{
	for (size_t i = 0; i < RTC_MODE_COUNT && settings_mode_words[i]; i++)
		if (strcmp(s, settings_mode_words[i]) == 0) {
			*mode = (enum rtc_mode)i;
			return 0;
		}
	return -1;
}

/* The major version of an AMDGPU processor name, gfxMMms (major, minor,
 * stepping: gfx90a is 9, gfx1030 10), target features after a ':' ignored;
 * -1 if arch is not of that form. */
static int gfx_major(const char *arch)
{
	char digits[16];
	size_t n;

	if (strncmp(arch, "gfx", 3) != 0)
		return -1;
	arch += 3;
	n = strcspn(arch, ":");
	if (n < 3 || n - 2 >= sizeof digits)
		return -1;
	memcpy(digits, arch, n - 2);
	digits[n - 2] = '\0';
	if (strspn(digits, "0123456789") != n - 2)
		return -1;
	return atoi(digits);
}

int rtc_mode_option(enum rtc_mode mode, enum rtc_abi abi, const char *arch,
		       const char **opt, char *why, size_t whylen)
{
	int major;

	*opt = NULL;
	if (mode == RTC_MODE_DEFAULT)
		return 0;
	if (abi != RTC_ABI_HIPRTC) {
		snprintf(why, whylen, "mode '%s' applies to hiprtc targets only: the "
			 "compilers are nvrtc", rtc_mode_name(mode));
		return -1;
	}
	major = gfx_major(arch);
	if (major < 0) {
		snprintf(why, whylen, "mode '%s': cannot tell whether target '%s' has "
			 "workgroup processors", rtc_mode_name(mode), arch);
		return -1;
	}
	if (major < 10) {
		snprintf(why, whylen, "mode '%s' needs a target with workgroup processors "
			 "(gfx10 or later): '%s' has none", rtc_mode_name(mode), arch);
		return -1;
	}
	*opt = mode == RTC_MODE_CU ? "-mcumode" : "-mno-cumode";
	return 0;
}
