#include "common/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void __attribute__((noreturn)) die(size_t size)
{
	fprintf(stderr, "qual: out of memory allocating %zu bytes\n", size);
	abort();
}

/* For n items of size bytes: their bytes when those fit in a size_t, else
 * both numbers (the product would wrap). */
static void __attribute__((noreturn)) die_items(size_t n, size_t size)
{
	if (size == 0 || n <= SIZE_MAX / size)
		die(n * size);
	fprintf(stderr, "qual: out of memory allocating %zu items of %zu bytes\n", n, size);
	abort();
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);
	if (!p)
		die(size);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		die_items(n, size);
	return p;
}

void *xrealloc(void *p, size_t size)
{
	void *q = realloc(p, size ? size : 1);
	if (!q)
		die(size);
	return q;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = xmalloc(n);
	memcpy(p, s, n);
	return p;
}

size_t xgrow_cap(size_t cap, size_t need, size_t size)
{
	/* malloc refuses more than PTRDIFF_MAX bytes (pointer differences
	 * within one object must fit a ptrdiff_t). */
	size_t most = (size_t)PTRDIFF_MAX / (size ? size : 1);
	size_t n = cap < 8 ? 16 : cap;

	if (need > most)
		die_items(need, size);
	if (n > most)
		n = most;
	while (n < need)
		n = n > most / 2 ? most : n * 2;
	return n;
}
