/* The files a person's summary also goes to, for CI: --json-out (the job's
 * lines as they come), --junit and --markdown (client/view.c's reports,
 * written once the verdict is in). One implementation for qualctl judge,
 * qual-judge, qualctl submit, show and wait. */
#ifndef QUAL_REPORT_H
#define QUAL_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "client/view.h"

struct report_files {
	const char *json_out, *junit, *markdown; /* paths, NULL: not asked for */
	FILE *lines;            /* json_out open, from report_open() */
	bool failed;            /* a write failed (said once) */
};

/* Opens json_out for writing (nothing when it is NULL): 0, or -1 with why
 * on stderr (prog names the program). Call before the lines come, so that
 * a file that cannot be made fails the command at once. */
int report_open(const char *prog, struct report_files *r);

/* One line (text, len bytes, no newline) appended to json_out's file. */
void report_line(struct report_files *r, const char *text, size_t len);

/* Closes json_out's file and writes the JUnit and markdown reports of v
 * (suite "qual"): 0, or -1 with why on stderr for any file that could not
 * be written in full. */
int report_finish(const char *prog, struct report_files *r, const struct view_job *v);

/* Closes json_out's file without writing the reports (a command that
 * ended before its job's verdict). */
void report_abandon(struct report_files *r);

#endif
