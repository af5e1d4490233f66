/* The summary of a job's lines (view.h), for a terminal, markdown and
 * JUnit (view_internal.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/view.h"
#include "client/view_internal.h"
#include "stats/stats.h"
#include "common/lines.h"
#include "common/xalloc.h"
#include "proto/vocab.h"

enum { SUM_CASE, SUM_VERDICT, SUM_CODE, SUM_BASE, SUM_CAND, SUM_CHANGE, SUM_P, SUM_DETECT,
       SUM_NCOL };

static const char *const sum_head[SUM_NCOL] = {
	"case", "verdict", "code", "baseline us", "candidate us", "change [lo, hi]", "p_holm",
	"detectable",
};

/* The summary's rows, as text, and the geometric mean of its timed cases. */
struct summary {
	json_t *rows;                 /* borrowed: view__summary_rows() */
	size_t n;
	char (*cells)[SUM_NCOL][112];
	int ngeo;                     /* timed cases in the geometric mean */
	double geo;                   /* their geometric mean ratio */
};

/* "+1.23%" of a ratio, "-" when it is not a finite positive number. */
static const char *change_text(json_t *ratio, char *buf, size_t len)
{
	double r = json_number_value(ratio);

	if (!json_is_number(ratio) || !isfinite(r) || !(r > 0))
		return "-";
	snprintf(buf, len, "%+.2f%%", 100 * (r - 1));
	return buf;
}

void view_change_cell(json_t *ratio, json_t *lo, json_t *hi, char *buf, size_t len)
{
	char a[32], l[32], h[32];
	const char *r = change_text(ratio, a, sizeof a);

	if (strcmp(r, "-") != 0 && lo)
		snprintf(buf, len, "%s [%s, %s]", r, change_text(lo, l, sizeof l),
			 change_text(hi, h, sizeof h));
	else
		snprintf(buf, len, "%s", r);
}

/* The code column: identical, or the differences of the case line's static
 * ("regs +2, code +64 B"), "differs" when it has none to say. */
static void code_cell(const struct view_job *v, json_t *cv, char *buf, size_t len)
{
	json_t *ident = json_object_get(cv, "identical_code"), *st = NULL;
	const char *name = view__str_field(cv, "case");
	size_t used = 0;

	if (!json_is_boolean(ident) || view__is_not_applicable(cv)) {
		snprintf(buf, len, "-");
		return;
	}
	if (json_is_true(ident)) {
		snprintf(buf, len, "%s", vocab_case_verdict_name(VERDICT_IDENTICAL));
		return;
	}
	for (size_t i = 0; name && i < v->ncases_seen; i++)
		if (strcmp(v->cases[i].name, name) == 0)
			st = v->cases[i].statics;
	buf[0] = '\0';
	for (size_t i = 0; i < VIEW__NSTATIC_DELTAS && used < len; i++) {
		long long d = view__int_field(st, view__static_deltas[i].key, 0);
		int k;

		if (d == 0)
			continue;
		k = snprintf(buf + used, len - used, "%s%s %+lld%s", used ? ", " : "",
			     view__static_deltas[i].short_what, d,
			     view__static_deltas[i].short_unit);
		used += k > 0 ? (size_t)k : 0;
	}
	if (!buf[0])
		snprintf(buf, len, "differs");
}

/* Whether a case verdict's ratio is a timing to count in the geometric
 * mean: timed, not failed. */
static bool counts_in_geomean(json_t *cv)
{
	enum case_verdict verdict = view__case_verdict(cv);
	double r = json_number_value(json_object_get(cv, "ratio_median"));

	return verdict != CASE_VERDICT_UNKNOWN && vocab_case_verdict_kind(verdict) == CASE_MEASURED &&
	       json_is_number(json_object_get(cv, "ratio_median")) && isfinite(r) && r > 0;
}

static void summary_build(const struct view_job *v, struct summary *sm)
{
	double logsum = 0;

	sm->rows = view__summary_rows(v);
	sm->n = json_array_size(sm->rows);
	sm->cells = xcalloc(sm->n ? sm->n : 1, sizeof *sm->cells);
	sm->ngeo = 0;
	for (size_t i = 0; i < sm->n; i++) {
		json_t *cv = json_array_get(sm->rows, i);
		char (*c)[112] = sm->cells[i];
		const char *name = view__str_field(cv, "case");
		char a[32], p[32];

		snprintf(c[SUM_CASE], sizeof c[0], "%s", name ? name : "?");
		view__verdict_cell(cv, c[SUM_VERDICT], sizeof c[0]);
		code_cell(v, cv, c[SUM_CODE], sizeof c[0]);
		snprintf(c[SUM_BASE], sizeof c[0], "-");
		snprintf(c[SUM_CAND], sizeof c[0], "-");
		for (size_t k = 0; name && k < v->ncases_seen; k++) {
			struct view_case *rec = &v->cases[k];

			if (strcmp(rec->name, name) != 0 || rec->n == 0)
				continue;
			for (int arm = 0; arm < 2; arm++)
				snprintf(c[SUM_BASE + arm], sizeof c[0], "%.3f",
					 stats_median(rec->ns[arm], (int)rec->n) / 1000);
		}
		if (!counts_in_geomean(cv))
			snprintf(c[SUM_CHANGE], sizeof c[0], "-");
		else
			view_change_cell(json_object_get(cv, "ratio_median"),
					 json_object_get(cv, "ratio_lo"),
					 json_object_get(cv, "ratio_hi"), c[SUM_CHANGE], sizeof c[0]);
		snprintf(c[SUM_P], sizeof c[0], "%s",
			 view__num_text(json_object_get(cv, "p_holm"), "%.3g", p, sizeof p));
		snprintf(c[SUM_DETECT], sizeof c[0], "%s",
			 change_text(json_object_get(cv, "detectable_ratio"), a, sizeof a));
		if (counts_in_geomean(cv)) {
			logsum += log(json_number_value(json_object_get(cv, "ratio_median")));
			sm->ngeo++;
		}
	}
	sm->geo = sm->ngeo ? exp(logsum / sm->ngeo) : NAN;
}

/* The SGR colour of a case's verdict on a terminal, "" for none. */
static const char *verdict_color(enum case_verdict verdict)
{
	switch (verdict) {
	case VERDICT_FAIL:
	case VERDICT_SLOWER:
		return "\033[31m";      /* red */
	case VERDICT_FASTER:
		return "\033[32m";      /* green */
	case VERDICT_INCONCLUSIVE:
		return "\033[33m";      /* yellow */
	default:
		return "";
	}
}

/* "geomean over 9 timed cases: +1.23% (candidate against baseline)". */
static void geomean_text(const struct summary *sm, char *buf, size_t len)
{
	char g[32];

	if (sm->ngeo == 0) {
		snprintf(buf, len, "geomean: no timed case");
		return;
	}
	snprintf(g, sizeof g, "%+.2f%%", 100 * (sm->geo - 1));
	snprintf(buf, len, "geomean over %d timed case%s: %s (candidate against baseline)",
		 sm->ngeo, sm->ngeo == 1 ? "" : "s", g);
}

void view_summary(FILE *out, const struct view_job *v)
{
	struct summary sm;
	size_t w[SUM_NCOL];
	char geo[160];

	summary_build(v, &sm);
	if (sm.n > 0) {
		for (int k = 0; k < SUM_NCOL; k++) {
			w[k] = strlen(sum_head[k]);
			for (size_t i = 0; i < sm.n; i++)
				if (strlen(sm.cells[i][k]) > w[k])
					w[k] = strlen(sm.cells[i][k]);
		}
		for (int k = 0; k + 1 < SUM_NCOL; k++)
			fprintf(out, "%-*s  ", (int)w[k], sum_head[k]);
		fprintf(out, "%s\n", sum_head[SUM_NCOL - 1]);
		for (size_t i = 0; i < sm.n; i++) {
			for (int k = 0; k < SUM_NCOL; k++) {
				const char *cell = sm.cells[i][k];
				const char *col = k == SUM_VERDICT && v->color ?
					verdict_color(view__case_verdict(json_array_get(sm.rows, i))) :
					"";

				/* The colour codes around the text, the padding
				 * after them: columns line up as without. */
				fprintf(out, "%s%s%s", col, cell, col[0] ? "\033[0m" : "");
				if (k + 1 < SUM_NCOL)
					fprintf(out, "%*s", (int)(w[k] - strlen(cell) + 2), "");
			}
			fputc('\n', out);
		}
		geomean_text(&sm, geo, sizeof geo);
		fprintf(out, "%s\n", geo);
	}
	free(sm.cells);
	if (v->verdict)
		view__print_run_verdict(v, out, 0);
}

/* A markdown table cell as its text: '|' and control characters would
 * break the row, and the markdown characters that act inside a word ('*',
 * '`', '\\', '<') are escaped so that a case name shows as it is ('_' and
 * brackets do not act there in GitHub's markdown, and stay readable). */
static void md_cell(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (strchr("|\\*`", *s))
			fprintf(out, "\\%c", *s);
		else if (*s == '<')
			fputs("&lt;", out);
		else if ((unsigned char)*s < 0x20)
			fputc(' ', out);
		else
			fputc(*s, out);
	}
}

void view_markdown(FILE *out, const struct view_job *v)
{
	struct summary sm;
	char geo[160];
	const char *verdict = view__str_field(v->verdict, "verdict");

	summary_build(v, &sm);
	fprintf(out, "### qual: %s\n\n", verdict ? verdict : "no verdict");
	if (sm.n > 0) {
		fputs("|", out);
		for (int k = 0; k < SUM_NCOL; k++)
			fprintf(out, " %s |", sum_head[k]);
		fputs("\n|", out);
		for (int k = 0; k < SUM_NCOL; k++)
			fputs(k >= SUM_BASE && k != SUM_CHANGE ? " ---: |" : " --- |", out);
		fputc('\n', out);
		for (size_t i = 0; i < sm.n; i++) {
			fputs("|", out);
			for (int k = 0; k < SUM_NCOL; k++) {
				fputc(' ', out);
				md_cell(out, sm.cells[i][k]);
				fputs(" |", out);
			}
			fputc('\n', out);
		}
		geomean_text(&sm, geo, sizeof geo);
		fprintf(out, "\n%s\n", geo);
	}
	if (v->verdict) {
		const char *message = view__str_field(v->verdict, "message");

		fputs("\nverdict: ", out);
		md_cell(out, verdict ? verdict : "?");
		if (message) {
			fputs(": ", out);
			md_cell(out, message);
		}
		fputc('\n', out);
	}
	free(sm.cells);
}

/* Text as XML character data or an attribute value (quotes escaped);
 * control characters XML 1.0 does not allow become spaces. */
static void xml_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		/* U+FFFE and U+FFFF (EF BF BE, EF BF BF) are no XML
		 * characters either. */
		if (ch == 0xEF && (unsigned char)s[1] == 0xBF &&
		    ((unsigned char)s[2] == 0xBE || (unsigned char)s[2] == 0xBF)) {
			fputc(' ', out);
			s += 2;
			continue;
		}
		switch (ch) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default:
			fputc(ch < 0x20 && ch != '\t' && ch != '\n' ? ' ' : ch, out);
		}
	}
}

/* Whether case verdict cv made the run a regression: in the verdict line's
 * gate.regression_cases; a verdict line without a gate (lines of an older
 * engine) counts every slower case of a run that is a regression. */
static bool is_regression_case(const struct view_job *v, json_t *cv)
{
	json_t *gate = json_object_get(v->verdict, "gate"), *x;
	const char *name = view__str_field(cv, "case");
	size_t i;

	if (!json_is_object(gate))
		return view__case_verdict(cv) == VERDICT_SLOWER &&
		       view__run_verdict(v) == RUN_REGRESSION;
	json_array_foreach(json_object_get(gate, "regression_cases"), i, x)
		if (name && json_is_string(x) && strcmp(json_string_value(x), name) == 0)
			return true;
	return false;
}

void view_junit(FILE *out, const struct view_job *v, const char *suite)
{
	struct summary sm;
	int failures = 0, skipped = 0, errors = 0;
	enum run_verdict run_verdict = view__run_verdict(v);
	const char *run_word = view__str_field(v->verdict, "verdict"); /* as given */
	const char *message = view__str_field(v->verdict, "message");
	bool run_error = run_verdict == RUN_ERROR;
	char geo[160];

	summary_build(v, &sm);
	for (size_t i = 0; i < sm.n; i++) {
		json_t *cv = json_array_get(sm.rows, i);
		enum case_verdict verdict = view__case_verdict(cv);

		if (is_regression_case(v, cv) || verdict == VERDICT_FAIL)
			failures++;
		else if (verdict == VERDICT_NOT_TIMED || verdict == VERDICT_NOT_APPLICABLE)
			skipped++;
	}
	/* A run that did not end in a verdict of its own (error, or quald's
	 * cancelled and interrupted) is an error, never a green suite. */
	errors = run_error || !v->verdict ||
		 run_verdict == RUN_CANCELLED || run_verdict == RUN_INTERRUPTED;
	geomean_text(&sm, geo, sizeof geo);
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
	fprintf(out, "<testsuites tests=\"%zu\" failures=\"%d\" errors=\"%d\" skipped=\"%d\">\n",
		sm.n + (size_t)errors, failures, errors, skipped);
	fputs("  <testsuite name=\"", out);
	xml_text(out, suite);
	fprintf(out, "\" tests=\"%zu\" failures=\"%d\" errors=\"%d\" skipped=\"%d\">\n",
		sm.n + (size_t)errors, failures, errors, skipped);
	fputs("    <properties>\n      <property name=\"verdict\" value=\"", out);
	xml_text(out, run_word ? run_word : "none");
	fputs("\"/>\n      <property name=\"geomean\" value=\"", out);
	xml_text(out, geo);
	fputs("\"/>\n    </properties>\n", out);
	for (size_t i = 0; i < sm.n; i++) {
		json_t *cv = json_array_get(sm.rows, i);
		enum case_verdict verdict = view__case_verdict(cv);
		char row[SUM_NCOL * 120];
		size_t used = 0;

		for (int k = 0; k < SUM_NCOL; k++) {
			int m = snprintf(row + used, sizeof row - used, "%s%s: %s", k ? ", " : "",
					 sum_head[k], sm.cells[i][k]);
			used += m > 0 && (size_t)m < sizeof row - used ? (size_t)m : 0;
		}
		fputs("    <testcase classname=\"", out);
		xml_text(out, suite);
		fputs("\" name=\"", out);
		xml_text(out, sm.cells[i][SUM_CASE]);
		fputs("\">\n", out);
		if (is_regression_case(v, cv)) {
			fputs("      <failure type=\"regression\" message=\"", out);
			xml_text(out, sm.cells[i][SUM_VERDICT]);
			fputs(" ", out);
			xml_text(out, sm.cells[i][SUM_CHANGE]);
			fputs("\"/>\n", out);
		} else if (verdict == VERDICT_FAIL) {
			fputs("      <failure type=\"fail\" message=\"", out);
			xml_text(out, sm.cells[i][SUM_VERDICT]);
			fputs("\"/>\n", out);
		} else if (verdict == VERDICT_NOT_TIMED || verdict == VERDICT_NOT_APPLICABLE) {
			fputs("      <skipped message=\"", out);
			xml_text(out, vocab_case_verdict_name(verdict));
			fputs("\"/>\n", out);
		}
		fputs("      <system-out>", out);
		xml_text(out, row);
		fputs("</system-out>\n    </testcase>\n", out);
	}
	if (errors) {
		fputs("    <testcase classname=\"", out);
		xml_text(out, suite);
		fputs("\" name=\"run\">\n      <error type=\"error\" message=\"", out);
		xml_text(out, message ? message : !v->verdict ? "the lines end with no verdict" :
			  run_word);
		fputs("\"/>\n    </testcase>\n", out);
	}
	fputs("  </testsuite>\n</testsuites>\n", out);
	free(sm.cells);
}
