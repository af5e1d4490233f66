/* A growable vector of strings (strv.h). Allocation failure aborts
 * (common/xalloc.h), as everywhere in the programs. */
#include "proto/strv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

int strv_args_memfd(const char *const *v, struct qual_msg *msg)
{
	size_t len;
	char *data = strv_join_nul(v[0] ? v + 1 : v, &len);
	int fd = memfd_create("qual-args", MFD_CLOEXEC | MFD_ALLOW_SEALING), e = 0;
	size_t at = 0;

	while (fd >= 0 && at < len) {
		ssize_t n = write(fd, data + at, len - at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			e = n < 0 ? errno : EIO;
			break;
		}
		at += (size_t)n;
	}
	free(data);
	if (fd < 0 || e || lseek(fd, 0, SEEK_SET) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0) {
		if (!e)
			e = errno;
		if (fd >= 0)
			close(fd);
		return qual_fail(msg, QUAL_EIO, "cannot hand a child its arguments: %s",
				 strerror(e));
	}
	return fd;
}

int strv_args_from_fd(int *argc, char ***argv, struct strv *keep, struct qual_msg *msg)
{
	char *end;
	long fd;
	int rc;

	if (*argc < 2 || strcmp((*argv)[1], "--args-fd") != 0)
		return 0;
	if (*argc != 3)
		return qual_fail(msg, QUAL_EINVAL, "--args-fd N takes no other argument: the "
				 "command line is on descriptor N");
	errno = 0;
	fd = strtol((*argv)[2], &end, 10);
	if (end == (*argv)[2] || *end || errno || fd < 0 || fd > 1023)
		return qual_fail(msg, QUAL_EINVAL, "--args-fd must be a descriptor from 0 to "
				 "1023, got '%s'", (*argv)[2]);
	strv_push(keep, (*argv)[0]);
	if ((rc = strv_read_nul_fd(keep, (int)fd, STRV_NUL_MAX, msg)) < 0)
		return rc;
	close((int)fd);
	if (fd == 0 && open("/dev/null", O_RDONLY | O_CLOEXEC) != 0)
		return qual_fail(msg, QUAL_EIO, "cannot open /dev/null: %s", strerror(errno));
	*argc = (int)keep->n;
	*argv = keep->v;
	return 0;
}
