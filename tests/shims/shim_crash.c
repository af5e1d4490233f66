/* shim_crash: dies by SIGSEGV inside nvrtcCompileProgram, as a compiler with
 * a memory bug would. */
#include "shim.h"

#include <stddef.h>

static int crash_compile(shim_program prog, int nopts, const char *const *opts)
{
	/* volatile on both sides, so the store is neither removed nor turned
	 * into a trap instruction: a real write to address 0. */
	volatile int *volatile p = NULL;

	(void)prog;
	(void)nopts;
	(void)opts;
	*p = 1;
	return SHIM_NVRTC_SUCCESS;
}

const struct shim_ops shim_ops = { .compile = crash_compile };
