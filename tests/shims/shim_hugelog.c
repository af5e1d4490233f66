/* shim_hugelog: every compile fails with a 64 MiB log of error lines, to
 * prove the log cap: qual keeps the first log_cap bytes, reports the full
 * size, and still reports a compile error. $QUAL_SHIM_HUGELOG_BYTES sets
 * another size (to test the refusal of logs over 256 MiB, which qual must
 * turn down without fetching them). */
#include "shim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The log text's length, without the terminating NUL the ABI counts in its
 * size. */
static size_t hugelog_bytes(void)
{
	const char *env = getenv("QUAL_SHIM_HUGELOG_BYTES");

	return env && *env ? (size_t)strtoull(env, NULL, 10) : (size_t)64 << 20;
}

static int hugelog_compile(shim_program prog, int nopts, const char *const *opts)
{
	(void)prog;
	(void)nopts;
	(void)opts;
	return SHIM_NVRTC_ERROR_COMPILATION;
}

static int hugelog_size(shim_program prog, size_t *size)
{
	(void)prog;
	*size = hugelog_bytes() + 1;
	return SHIM_NVRTC_SUCCESS;
}

static int hugelog_text(shim_program prog, char *log)
{
	char line[64];
	size_t off = 0, n, total = hugelog_bytes();
	unsigned i = 0;

	(void)prog;
	while (off < total) {
		snprintf(line, sizeof line, "shim_hugelog: error: line %08u of a 64 MiB log\n",
			 i++);
		n = strlen(line);
		if (n > total - off)
			n = total - off;
		memcpy(log + off, line, n);
		off += n;
	}
	log[off] = '\0';
	return SHIM_NVRTC_SUCCESS;
}

const struct shim_ops shim_ops = {
	.compile = hugelog_compile,
	.log_size = hugelog_size,
	.log = hugelog_text,
};
