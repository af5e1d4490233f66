/* The operator's log (oplog.h). */
#include "daemon/oplog.h"

#include <stdarg.h>
#include <stdio.h>

void oplog_warn(const char *fmt, ...)
{
	va_list ap;

	fputs("quald: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
