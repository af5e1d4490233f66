/* shim_overflow: recurses without end inside nvrtcCompileProgram until the
 * thread's stack is gone, as a compiler with a runaway recursion would. The
 * SIGSEGV comes with no stack left: a crash all the same, which qual-compile
 * must tell from a kill sent by another process (its handler runs on a
 * stack of its own). */
#include "shim.h"

#include <stddef.h>

/* Read at each level, so that the recursion's end is not known here. */
static volatile int forever = 1;

static int deeper(volatile char *from, int depth)
{
	volatile char pad[4096];

	if (!forever)
		return 0;
	pad[0] = (char)depth;
	pad[sizeof pad - 1] = from ? from[0] : 0;
	/* Not a tail call: the frame stays. */
	return deeper(pad, depth + 1) + pad[1];
}

static int overflow_compile(shim_program prog, int nopts, const char *const *opts)
{
	(void)prog;
	(void)nopts;
	(void)opts;
	return deeper(NULL, 0) ? SHIM_NVRTC_SUCCESS : SHIM_NVRTC_SUCCESS;
}

const struct shim_ops shim_ops = { .compile = overflow_compile };
