/* qual-run's command line: its options as one table (common/opts.h), from
 * which the parse and --help are made, where each of a job's settings is
 * read by its field of proto/settings.h (its option, bounds and refusal are
 * quald's), and the rest are qual-run's own. */
#ifndef QUAL_RUN_QUAL_RUN_ARGS_H
#define QUAL_RUN_QUAL_RUN_ARGS_H

#include <stdbool.h>
#include <stdio.h>

#include "common/err.h"
#include "proto/settings.h"
#include "run/runner.h"

struct qual_run_args {
	struct runner_config cfg;
	struct qual_settings set;  /* the settings of a job, as quald's are */
	double oracle_timeout;     /* --oracle-timeout */
	int flush_mib, pad_mib, cache_max_mib;
	bool health, list, help, settings_table, no_cache;
	/* qual-view was asked for (a table or a report) and could not run:
	 * what it would have served is refused, never silently left out. */
	bool reports_unserved;
	/* A refusal's error line on stdout (common/lines.h's enum
	 * lines_code), or -1: stderr only. */
	int line_code;
};

/* The defaults (runner_config_init, settings_init), in caller's storage;
 * qual_run_args_release frees what the parse made. */
void qual_run_args_init(struct qual_run_args *a);
void qual_run_args_release(struct qual_run_args *a);

/* Parses argv's options into a (its strings borrowed from argv), then
 * checks them as a whole and completes a->cfg from a->set: the index in
 * argv of the first operand, or a negative code with msg (a->line_code
 * says whether an error line goes with it). --help, --list, --health and
 * --settings-table are left for the caller (a's flags). */
int qual_run_args_parse(struct qual_run_args *a, int argc, char **argv, struct qual_msg *msg);

/* Whether argv asks for a person's table or a report, which qual-view
 * (client/run_view.h), beside qual-run, serves: --format table, --json-out,
 * --junit or --markdown, or stdout a terminal (TERM not dumb) without
 * --format json; never for --help, --list, --health, nor in qual-view's own
 * run of qual-run (QUAL_VIEW_CHILD). */
bool qual_run_args_want_view(int argc, char **argv);

/* The usage and every option, from the table. */
void qual_run_args_usage(FILE *f);

#endif
