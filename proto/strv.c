/* A growable vector of strings (strv.h). Allocation failure aborts
 * (common/xalloc.h), as everywhere in the programs. */
#include "proto/strv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

char *strv_join_nul(const char *const *v, size_t *len)
{
	size_t n = 0, at = 0;
	char *buf;

	for (size_t i = 0; v[i]; i++)
		n += strlen(v[i]) + 1;
	buf = xmalloc(n + 1);
	for (size_t i = 0; v[i]; i++) {
		size_t k = strlen(v[i]) + 1;

		memcpy(buf + at, v[i], k);
		at += k;
	}
	*len = n;
	return buf;
}

void strv_push_nul(struct strv *sv, const char *data, size_t len)
{
	size_t at = 0;

	while (at < len) {
		const char *end = memchr(data + at, '\0', len - at);
		size_t k = end ? (size_t)(end - (data + at)) : len - at;
		char *s = xmalloc(k + 1);

		memcpy(s, data + at, k);
		s[k] = '\0';
		strv_push_owned(sv, s);
		at += k + 1;
	}
}

int strv_read_nul_fd(struct strv *sv, int fd, size_t cap, struct qual_msg *msg)
{
	char *buf = xmalloc(cap + 1);
	ssize_t got = 0, n;
	int rc = 0;

	/* To its end, through short reads and EINTR (one byte past cap says
	 * it is over). */
	while ((size_t)got <= cap && (n = read(fd, buf + got, cap + 1 - (size_t)got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			got = -1;
			break;
		}
		got += n;
	}

	if (got < 0)
		rc = qual_fail(msg, QUAL_EIO, "cannot read the arguments on descriptor %d: %s",
			       fd, strerror(errno));
	else if ((size_t)got > cap)
		rc = qual_fail(msg, QUAL_ELIMIT, "the arguments on descriptor %d are over "
			       "%zu bytes", fd, cap);
	else
		strv_push_nul(sv, buf, (size_t)got);
	free(buf);
	return rc;
}
