/* An LD_PRELOAD library that records every call of jansson's json_loadb and
 * json_loads (the parses of a line) in the file named by $QUAL_COUNT_LOADS:
 * a record "PID LEN\n", then the LEN bytes parsed, then "\n", written with
 * one write() each (O_APPEND: records of several processes do not mix). The
 * service scenario parse_once (tests/tools/service_test.py) counts from it
 * how often quald and qualctl parse each line of a job: once in each. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

static void note(const char *buf, size_t len)
{
	const char *path = getenv("QUAL_COUNT_LOADS");
	char head[64];
	int n, fd;
	char *rec;

	if (!path || !buf)
		return;
	n = snprintf(head, sizeof head, "%ld %zu\n", (long)getpid(), len);
	rec = malloc((size_t)n + len + 1);
	if (!rec)
		return;
	memcpy(rec, head, (size_t)n);
	memcpy(rec + n, buf, len);
	rec[(size_t)n + len] = '\n';
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0) {
		(void)!write(fd, rec, (size_t)n + len + 1);
		close(fd);
	}
	free(rec);
}

json_t *json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *error)
{
	json_t *(*real)(const char *, size_t, size_t, json_error_t *);

	*(void **)&real = dlsym(RTLD_NEXT, "json_loadb");
	note(buffer, buflen);
	return real(buffer, buflen, flags, error);
}

json_t *json_loads(const char *input, size_t flags, json_error_t *error)
{
	json_t *(*real)(const char *, size_t, json_error_t *);

	*(void **)&real = dlsym(RTLD_NEXT, "json_loads");
	note(input, input ? strlen(input) : 0);
	return real(input, flags, error);
}
