/* The processor mode of a run's compiles (qual-run --mode, qualctl submit
 * --mode, which quald passes on to qual-run), the counterpart of
 * patch_bench's ProcessorMode. On hiprtc targets of gfx10 and later (RDNA),
 * a workgroup runs either on one compute unit (CU mode) or across the two of
 * a workgroup processor (WGP mode), and the compiler schedules and
 * allocates for the one it is told: cu adds -mcumode and wgp -mno-cumode to
 * both arms' options. ROCm 5.2's hiprtc compiles gfx1030 in CU mode by
 * default (-mcumode gave the same code object as no option, -mno-cumode
 * another). default adds nothing. cu and wgp are refused for a target
 * without workgroup processors (gfx9 and earlier, e.g. CDNA's gfx90a) and
 * for nvrtc, which has no such setting. */
#ifndef QUAL_COMPILE_RTC_MODE_H
#define QUAL_COMPILE_RTC_MODE_H

#include <stddef.h>

#include "compile/rtc.h"

enum rtc_mode {
	RTC_MODE_DEFAULT,
	RTC_MODE_CU,
	RTC_MODE_WGP,
};

/* "default", "cu" or "wgp". */
const char *rtc_mode_name(enum rtc_mode mode);

/* The mode named s: 0 with *mode set, or -1 (s is none of the three). */
int rtc_mode_parse(const char *s, enum rtc_mode *mode);

/* The compiler option that mode adds for compiles of abi for target arch:
 * 0 with *opt set to it (a static string) or to NULL (nothing to add), or
 * -1 with why (lower case, no period) when the target has no such mode. */
int rtc_mode_option(enum rtc_mode mode, enum rtc_abi abi, const char *arch,
		       const char **opt, char *why, size_t whylen);

#endif
