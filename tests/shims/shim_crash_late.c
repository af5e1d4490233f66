/* shim_crash_late: sleeps 2 s inside nvrtcCompileProgram, then dies by
 * SIGSEGV, so that a test can act between a job's start and its crash line
 * (tests/tools/pin_test.py swaps a link there). */
#include "shim.h"

#include <stddef.h>
#include <unistd.h>

static int crash_late_compile(shim_program prog, int nopts, const char *const *opts)
{
	volatile int *volatile p = NULL;

	(void)prog;
	(void)nopts;
	(void)opts;
	sleep(2);
	*p = 1;
	return SHIM_NVRTC_SUCCESS;
}

const struct shim_ops shim_ops = { .compile = crash_late_compile };
