/* What the two files of the views share (view.h is the contract for
 * everyone else):
 *   view.c          a job's lines taken in: plain lines, the progress line,
 *                   tables, cleaning and exit statuses;
 *   view_summary.c  the summary, for a terminal, markdown and JUnit.
 * Names are view__verb. */
#ifndef QUAL_CLIENT_VIEW_INTERNAL_H
#define QUAL_CLIENT_VIEW_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "client/view.h"
#include "proto/vocab.h"

/* A case line's static differences (docs/output.md, "static"): the key,
 * how a plain line names it and its unit, and the same for the summary's
 * narrower code column. */
struct view__static_delta {
	const char *key, *what, *unit, *short_what, *short_unit;
};
#define VIEW__NSTATIC_DELTAS 5
extern const struct view__static_delta view__static_deltas[VIEW__NSTATIC_DELTAS];

/* The string member key of o (borrowed), or NULL. */
const char *view__str_field(json_t *o, const char *key);

/* An integer field, or def when absent or not an integer. */
long long view__int_field(json_t *o, const char *key, long long def);

/* A number as text: fmt for a finite number, "-" for null or absent.
 * Returns buf or a static "-". */
const char *view__num_text(json_t *x, const char *fmt, char *buf, size_t len);

/* "fail (candidate)", "equivalent", ... for a case_verdict line. */
void view__verdict_cell(json_t *cv, char *buf, size_t len);

/* A case that could not run on the target: never compiled, so its
 * identical_code says nothing. */
bool view__is_not_applicable(json_t *cv);

/* The verdict of a case_verdict line (CASE_VERDICT_UNKNOWN for none or a
 * word of no one's), and of a job's verdict line (RUN_VERDICT_UNKNOWN when
 * it has none yet): read from the word once, decided on as an enum. */
enum case_verdict view__case_verdict(json_t *cv);
enum run_verdict view__run_verdict(const struct view_job *v);

/* The rows of the summary: the case_verdict lines, else the verdict line's
 * cases (quald's own verdict lines may have neither). Borrowed. */
json_t *view__summary_rows(const struct view_job *v);

/* The run verdict line, and its message on the next line when it has one. */
void view__print_run_verdict(const struct view_job *v, FILE *out, unsigned flags);

#endif
