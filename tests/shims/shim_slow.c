/* shim_slow: forwards, adding options that give correct but slower code for
 * sm_90: at most 32 registers per thread (a kernel that needs more spills to
 * local memory) and no ptxas optimisation. Checked with nvrtc 13.0: the
 * heavy kernel of tests/data/rtc goes from 79 registers and no spills to 32
 * registers and 376 bytes of spill stores (676 with --maxrregcount=32
 * alone; -Xptxas=-O0 alone gives 84 registers and no spills, but 2.3 times
 * the code). */
#include "shim.h"

#include <stddef.h>

static const char *const slow_options[] = {
	"--maxrregcount=32", "-Xptxas=-O0", NULL,
};

const struct shim_ops shim_ops = { .extra_options = slow_options };
