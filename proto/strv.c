/* A growable vector of strings (strv.h). Allocation failure aborts
 * (common/xalloc.h), as everywhere in the programs. */
#include "proto/strv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/xalloc.h"

static char *strv_empty[] = {NULL};

void strv_init(struct strv *sv)
{
	sv->v = strv_empty;
	sv->n = 0;
	sv->alloc = 0;
}

void strv_release(struct strv *sv)
{
	if (sv->v != strv_empty) {
		for (size_t i = 0; i < sv->n; i++)
			free(sv->v[i]);
		free(sv->v);
	}
	strv_init(sv);
}

static void strv_push_owned(struct strv *sv, char *s)
{
	if (sv->v == strv_empty)
		sv->v = NULL;
	XGROW(sv->v, sv->n + 2, sv->alloc);
	sv->v[sv->n++] = s;
	sv->v[sv->n] = NULL;
}

void strv_push(struct strv *sv, const char *s)
{
	strv_push_owned(sv, xstrdup(s));
}

void strv_pushf(struct strv *sv, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		fprintf(stderr, "out of memory formatting '%s'\n", fmt);
		abort();
	}
	strv_push_owned(sv, s);
}

void strv_pushv(struct strv *sv, const char *const *list)
{
	for (; *list; list++)
		strv_push(sv, *list);
}

char **strv_detach(struct strv *sv)
{
	char **v = sv->v;

	if (v == strv_empty) {
		v = xmalloc(sizeof *v);
		v[0] = NULL;
	}
	sv->v = strv_empty;
	sv->n = sv->alloc = 0;
	return v;
}

void strv_free_array(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}
