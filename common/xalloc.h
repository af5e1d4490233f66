/* Allocation for programs: failure aborts with the size logged, rather than
 * every path handling ENOMEM. */
#ifndef QUAL_XALLOC_H
#define QUAL_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
char *xstrdup(const char *s);

/* The room, in items of size bytes, to grow an array to so that it holds
 * need items: at least twice cap (16 at first), so that appending n items
 * costs O(n) in all, and never more bytes than an allocation can have
 * (PTRDIFF_MAX). Aborts with the size logged when need items of size bytes
 * are more than that, so that the caller's n * size cannot wrap. */
size_t xgrow_cap(size_t cap, size_t need, size_t size);

/* Makes array p (of *p-sized items, room for cap of them) hold at least
 * need items, growing p and cap (any integer type) together; new room is
 * not cleared. The one way an array grows here. */
#define XGROW(p, need, cap)                                                   \
	do {                                                                  \
		if ((size_t)(need) > (size_t)(cap)) {                         \
			size_t xgrow_n_ = xgrow_cap((size_t)(cap), (size_t)(need), \
						    sizeof *(p));             \
			(p) = xrealloc((p), xgrow_n_ * sizeof *(p));          \
			(cap) = xgrow_n_;                                     \
		}                                                             \
	} while (0)

#endif
