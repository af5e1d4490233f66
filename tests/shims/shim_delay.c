/* shim_delay: forwards, but rewrites the entry kernel so that every thread
 * first waits a fixed number of cycles on the cycle counter: correct code,
 * slower by a small planted amount, for measuring how verdicts behave at
 * effects near the margin (tests/gpu/planted.sh). The cycles come from
 * $QUAL_SHIM_DELAY_CYCLES when the source is rewritten (a whole number from
 * 1 to 10000000; default 256); 0, or a value that is not such a number,
 * leaves the source as it is, so that the shim is then its real compiler.
 * All the threads of a block wait at once, so a launch gets longer by about
 * the delay once per wave of blocks: what that is as a fraction of a case's
 * time depends on the case, and is measured, not assumed. With
 * $QUAL_SHIM_DELAY_BLOCKS=first only the threads of the grid's first block
 * wait (the others pass one uniform branch), so that a launch of several
 * waves gets longer by the delay about once, not once per wave: smaller
 * planted effects than the wait's own least cost allows for every block.
 * clock64() is an asm volatile read (see shim_spin.c), so the loop is not
 * optimised away. */
#include "shim.h"
#include "shim_entry.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long delay_cycles(void)
{
	const char *s = getenv("QUAL_SHIM_DELAY_CYCLES");
	char *end;
	long v;

	if (!s || !*s)
		return 256;
	v = strtol(s, &end, 10);
	if (*end || v < 1 || v > 10000000)
		return 0;
	return v;
}

/* Whether only the grid's first block waits ($QUAL_SHIM_DELAY_BLOCKS "first";
 * unset or "all": every block). */
static bool first_block_only(void)
{
	const char *s = getenv("QUAL_SHIM_DELAY_BLOCKS");

	return s && strcmp(s, "first") == 0;
}

static char *delay_rewrite(const char *src)
{
	char stmt[384];
	long cycles = delay_cycles();

	if (cycles == 0)
		return NULL;
	snprintf(stmt, sizeof stmt,
		 "\n\t%s{ /* shim_delay */\n"
		 "\t\tlong long qual_delay_t0 = clock64();\n"
		 "\t\twhile (clock64() - qual_delay_t0 < %ldLL) {\n"
		 "\t\t}\n"
		 "\t}\n",
		 first_block_only() ?
		 "if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0) " : "", cycles);
	return shim_insert_at_entry(src, stmt);
}

const struct shim_ops shim_ops = { .rewrite_source = delay_rewrite };
