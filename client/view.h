/* What a person sees of a job: its lines (docs/output.md, with quald's "job"
 * and "seq") turned into plain text lines, a one-line progress display for a
 * terminal, the summary table at the end, and the exit status its verdict
 * gives. Pure formatting on FILE streams and buffers: no I/O of its own, so
 * the unit tests drive it directly. */
#ifndef QUAL_VIEW_H
#define QUAL_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#define VIEW_JOB_MAX 64  /* bytes of a job id kept, with its NUL */
#define VIEW_CASE_MAX 64 /* bytes of a case name kept (as the engine's judge) */

/* Which plain lines view_job_take() writes. */
enum view_flags {
	/* case_verdict and verdict lines too: watch shows them as they come;
	 * submit and show print the summary table instead. */
	VIEW_VERDICTS = 1 << 0,
	/* Each line starts with "[JOB] ": watch interleaves jobs. */
	VIEW_PREFIX = 1 << 1,
};

/* What the summary keeps of one case from its case and pair lines: the
 * pair timings (ns per kernel, both finite and positive) for the time per
 * arm, and the case line's static differences for the code column. */
struct view_case {
	char name[VIEW_CASE_MAX];
	double *ns[2];          /* baseline, candidate: n of cap each */
	size_t n, cap;
	json_t *statics;        /* the case line's "static" (own reference), or NULL */
};

/* One job as seen so far. */
struct view_job {
	char job[VIEW_JOB_MAX];
	int position;          /* queue position from the submit reply, -1 unknown */
	bool started;          /* its start line arrived */
	char not_timed_because[256]; /* the start line's reason, "" when timed
				      * or unknown */
	bool compile_only_asked; /* the start line's settings.compile_only:
				  * the run was asked for a static comparison */
	int ncases;            /* cases the run has (start line), 0 unknown */
	int npairs;            /* pairs per timed case (start line), 0 unknown */
	int nsessions;         /* processes timing the run (start line), 0 or 1:
				* one; else pairs come session by session */
	int session;           /* the latest pair's session, 0 for none */
	int case_index;        /* 1-based index of the latest case line, 0 before */
	char case_name[VIEW_CASE_MAX];
	bool case_timed;       /* the latest case will be timed */
	int pairs_done;        /* the latest case's pairs so far, and of them */
	int faster, slower, ties; /* where the candidate was faster / slower / even */
	bool pairs_reported;   /* its pair summary line is written */
	json_t *case_verdicts; /* the case_verdict lines (own references) */
	json_t *verdict;       /* the verdict line (own reference), NULL before */
	struct view_case *cases; /* per case, in the order first seen */
	size_t ncases_seen, capcases;
	bool color;            /* the summary's verdicts in colour (a terminal,
				* NO_COLOR unset: view_color_wanted()) */
};

void view_job_init(struct view_job *v, const char *job);
void view_job_release(struct view_job *v);

/* Takes one line of the job (borrowed): updates what is known and, when out
 * is not NULL, writes the plain text lines it gives (none for most pair
 * lines: a case's pairs are summed up in one line once they are done). */
void view_job_take(struct view_job *v, json_t *line, FILE *out, unsigned flags);

/* The progress display for a terminal: which case, pair k of N and the
 * running tally, in at most width - 1 columns (width 0: no limit), so that
 * it never wraps and "\r" can redraw it. Empty once the verdict is in. */
void view_progress(const struct view_job *v, char *buf, size_t len, size_t width);

/* The summary table and the run verdict line, from the case_verdict lines
 * (or, when there were none, the verdict line's cases): per case the
 * verdict, the code (identical, or the candidate's register, size, spill
 * and stack differences), the median time per kernel of each arm in us
 * (from the pair lines seen), the change in percent with its interval, p
 * after Holm and the detectable change; then the geometric mean of the
 * timed cases' median ratios as a change in percent. Verdicts in colour
 * when v->color. */
void view_summary(FILE *out, const struct view_job *v);

/* The change column of a ratio: "+1.23% [-0.40%, +2.90%]" (the median
 * ratio as a change in percent, its interval when lo is given), "-" when
 * ratio is not a finite positive number. */
void view_change_cell(json_t *ratio, json_t *lo, json_t *hi, char *buf, size_t len);

/* The same summary as a GitHub-flavoured markdown table with the run
 * verdict and the geometric mean, for a CI job's summary page. */
void view_markdown(FILE *out, const struct view_job *v);

/* The same cases as a JUnit XML report (one testsuite named suite, one
 * testcase per case): a case that made the run a regression under its gate
 * (the verdict line's gate.regression_cases) or failed is a failure, one
 * not timed or not applicable is skipped, and every case's row is its
 * system-out; a run that ended in error, cancelled or interrupted, or
 * whose lines have no verdict, has an error testcase "run" besides. */
void view_junit(FILE *out, const struct view_job *v, const char *suite);

/* Whether the summary on stream f should be in colour: f is a terminal,
 * TERM is not "dumb" and NO_COLOR (https://no-color.org) is unset or
 * empty. */
bool view_color_wanted(FILE *f);

/* A table on out: the head row, then nrows rows of ncols cells (row i's
 * cell k is cells[i * ncols + k]), each column as wide as its widest cell
 * and two spaces from the next; the last column is not padded. */
void view_table(FILE *out, const char *const *head, size_t ncols,
		const char *const *cells, size_t nrows);

/* True when the job's verdict line says nothing was timed: its "timed" is
 * false, or its verdict is not_timed. A verdict line without "timed"
 * (quald's own: cancelled, error) says nothing either way: false. */
bool view_not_timed(const struct view_job *v);

/* Makes every string inside x (a line or a reply, recursively through
 * objects and arrays; keys are left) safe to print on a terminal, in place:
 * control characters (C0, DEL and the C1 range U+0080..U+009F, which
 * terminals also obey) become visible escapes, "\n", "\t", "\r" or
 * "\xHH" ("\u0085" for C1), so that a library path or a message holding
 * ESC or a newline can neither drive the terminal nor fake a line of
 * output. Every line or reply qualctl prints for people passes through it
 * first; --json output is the raw text, where JSON escapes them. */
void view_clean(json_t *x);

/* The exit status (common/exitcode.h) for a run verdict name: improvement,
 * neutral and not_timed 0, regression 1, fail 2, and 3 for error, quald's
 * cancelled and interrupted, and anything unknown. */
int view_exit_status(const char *verdict);

#endif
