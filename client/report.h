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
	bool made;              /* junit and markdown made (empty) by
				 * report_open(), not yet written */
	bool failed;            /* a write failed (said once) */
};

/* Opens json_out for writing (nothing when it is NULL) and makes the
 * junit and markdown files (empty until report_finish()): 0, or -1 with
 * why on stderr (prog names the program). Call before the lines come, so
 * that a file that cannot be made fails the command at once. */
int report_open(const char *prog, struct report_files *r);

/* The exit status of a command whose verdict gave status and whose report
 * could not be written: a pass becomes a usage error (4), so that a CI job
 * does not go green without the report it asked for; a failing status
 * stays (a regression is still a regression). */
int report_status(int status);

/* One line (text, len bytes, no newline) appended to json_out's file. */
void report_line(struct report_files *r, const char *text, size_t len);

/* Closes json_out's file and writes the JUnit and markdown reports of v
 * (suite "qual"): 0, or -1 with why on stderr for any file that could not
 * be written in full. */
int report_finish(const char *prog, struct report_files *r, const struct view_job *v);

/* Closes json_out's file without writing the reports (a command that
 * ended before its job's verdict), and removes the junit and markdown
 * files report_open() made, so that no empty report is left to pass for
 * one; after report_finish() it only closes what is open. */
void report_abandon(struct report_files *r);

#endif
