/* For shims that change what an entry kernel does: inserts a statement at the
 * start of the body of the kernel that follows the QUAL_KERNEL marker at the
 * start of a line (the fixtures' entry kernels; the prelude's
 * "#define QUAL_KERNEL" is not at the start of a line). Included by the shims
 * that use it, each of which gets its own copy. */
#ifndef QUAL_SHIM_ENTRY_H
#define QUAL_SHIM_ENTRY_H

#include <stdlib.h>
#include <string.h>

/* A new malloc'd copy of src with stmt inserted right after the opening brace
 * of the entry kernel's body, or NULL (keep src) when src has no such kernel
 * or memory runs out. */
static char *shim_insert_at_entry(const char *src, const char *stmt)
{
	static const char marker[] = "\nQUAL_KERNEL";
	const char *k = strstr(src, marker), *brace;
	size_t head, nstmt = strlen(stmt), n = strlen(src);
	char *out;

	if (!k || !(brace = strchr(k, '{')))
		return NULL;
	head = (size_t)(brace - src) + 1;
	out = malloc(n + nstmt + 1);
	if (!out)
		return NULL;
	memcpy(out, src, head);
	memcpy(out + head, stmt, nstmt);
	memcpy(out + head + nstmt, src + head, n - head + 1);
	return out;
}

#endif
