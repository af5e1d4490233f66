/* shim_spin: forwards, but rewrites the entry kernel so that it never
 * finishes: every thread first spins in a loop whose condition reads a
 * volatile local that stays 1 and the cycle counter, which stays positive (it
 * would take 2^63 cycles, a century, to wrap). What a miscompiled loop bound
 * does to a kernel: the engine must stop waiting at its deadline, end the job
 * with fail, and leave the GPU healthy for the next job.
 *
 * Why the loop survives optimisation: nvrtc 13 keeps the volatile local in a
 * register, but the clock64() read is an asm volatile (mov.u64 %rd, %clock64
 * in the PTX, checked by hand), which neither NVVM nor ptxas may drop or hoist,
 * so the loop stays and cannot be proved to end. */
#include "shim.h"
#include "shim_entry.h"

static const char spin_statement[] =
	"\n\t{ /* shim_spin */\n"
	"\t\tvolatile int qual_spin = 1;\n"
	"\t\twhile (qual_spin && clock64() >= 0) {\n"
	"\t\t}\n"
	"\t}\n";

static char *spin_rewrite(const char *src)
{
	return shim_insert_at_entry(src, spin_statement);
}

const struct shim_ops shim_ops = { .rewrite_source = spin_rewrite };
