/* Allocation for programs: failure aborts with the size logged, rather than
 * every path handling ENOMEM. */
#ifndef QUAL_XALLOC_H
#define QUAL_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
char *xstrdup(const char *s);

#endif
