/* The operator's log (oplog.h). */
#include "daemon/oplog.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* Whether stderr is the stream $JOURNAL_STREAM ("DEV:INO") names: then
 * journald reads the priority prefixes. Decided once. */
static bool to_journal(void)
{
	static int known = -1;

	if (known < 0) {
		const char *js = getenv("JOURNAL_STREAM");
		unsigned long long dev, ino;
		struct stat st;

		known = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0 &&
			(unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
	}
	return known == 1;
}

static void vlog(int prio, const char *fmt, va_list ap)
{
	/* One line whole: the reads off the loop (history.c) warn from
	 * libuv's thread pool. */
	flockfile(stderr);
	if (to_journal())
		fprintf(stderr, "<%d>", prio & LOG_PRIMASK);
	fputs("quald: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

void oplog(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(prio, fmt, ap);
	va_end(ap);
}

void oplog_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_WARNING, fmt, ap);
	va_end(ap);
}
