/* qual-run for a person: on a terminal (or with --format table), or with
 * a report file asked for, qual-run runs itself under a pipe with
 * --format=json and shows its lines through the renderer (client/view.c):
 * plain lines as they come, then the summary table; --json-out, --junit
 * and --markdown (client/report.h) beside it. quald's workers and scripts,
 * whose stdout is no terminal, get the JSON lines as always. */
#ifndef QUAL_RUN_VIEW_H
#define QUAL_RUN_VIEW_H

/* qual-view's main: qual-run execs it with its own arguments when a table
 * or a report is asked for (run/qual_run.c wants_view()); it runs the
 * qual-run beside it with them, less its own options, and --format=json
 * (and QUAL_VIEW_CHILD set, so that it never execs qual-view again), and
 * returns that run's exit status (report_status() when a report cannot be
 * written), or ends by the signal that ended the run. */
int run_view_main(int argc, char **argv);

#endif
