/* Plain text, progress and summary views of a job's lines (view.h). Every
 * field is read defensively: a line may lack what a newer or older engine,
 * or quald's own verdict line, does not write. */
#include <math.h>
#include <stdarg.h>
#include <unistd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/view.h"
#include "stats/stats.h"
#include "common/exitcode.h"
#include "common/lines.h"
#include "common/xalloc.h"

void view_job_init(struct view_job *v, const char *job)
{
	memset(v, 0, sizeof *v);
	snprintf(v->job, sizeof v->job, "%s", job ? job : "");
	v->position = -1;
	v->case_verdicts = json_array();
}

void view_job_release(struct view_job *v)
{
	for (size_t i = 0; i < v->ncases_seen; i++) {
		free(v->cases[i].ns[0]);
		free(v->cases[i].ns[1]);
		json_decref(v->cases[i].statics);
	}
	free(v->cases);
	v->cases = NULL;
	v->ncases_seen = v->capcases = 0;
	json_decref(v->case_verdicts);
	json_decref(v->verdict);
	v->case_verdicts = NULL;
	v->verdict = NULL;
}

static const char *str_field(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* An integer field, or def when absent or not an integer. */
static long long int_field(json_t *o, const char *key, long long def)
{
	json_t *x = json_object_get(o, key);

	return json_is_integer(x) ? json_integer_value(x) : def;
}

/* A number as text: fmt for a finite number, "-" for null or absent. */
static const char *num_text(json_t *x, const char *fmt, char *buf, size_t len)
{
	double d;

	if (!json_is_number(x))
		return "-";
	d = json_number_value(x);
	if (!isfinite(d))
		return "-";
	snprintf(buf, len, fmt, d);
	return buf;
}

/* The case name's record, made when first seen; NULL for no name. */
static struct view_case *case_record(struct view_job *v, const char *name)
{
	struct view_case *c;

	if (!name)
		return NULL;
	for (size_t i = 0; i < v->ncases_seen; i++)
		if (strcmp(v->cases[i].name, name) == 0)
			return &v->cases[i];
	if (v->ncases_seen == v->capcases) {
		v->capcases = v->capcases ? 2 * v->capcases : 16;
		v->cases = xrealloc(v->cases, v->capcases * sizeof *v->cases);
	}
	c = &v->cases[v->ncases_seen++];
	memset(c, 0, sizeof *c);
	snprintf(c->name, sizeof c->name, "%s", name);
	return c;
}

/* Starts a plain line: the job prefix when asked for. */
static void line_start(const struct view_job *v, FILE *out, unsigned flags)
{
	if (flags & VIEW_PREFIX)
		fprintf(out, "[%s] ", v->job);
}

/* The summary of the latest case's pairs, once. */
static void report_pairs(struct view_job *v, FILE *out, unsigned flags)
{
	if (v->pairs_done == 0 || v->pairs_reported)
		return;
	v->pairs_reported = true;
	if (!out)
		return;
	line_start(v, out, flags);
	fprintf(out, "case %s: ", v->case_name);
	if (v->nsessions > 1 && v->session > 0)
		fprintf(out, "session %d of %d: ", v->session, v->nsessions);
	fprintf(out, "%d pairs, candidate faster in %d, slower in %d",
		v->pairs_done, v->faster, v->slower);
	if (v->ties)
		fprintf(out, ", even in %d", v->ties);
	fputc('\n', out);
}

/* "nvrtc 13.0 '/x/libnvrtc.so.13'" for a start line's arm identity. */
static void print_identity(FILE *out, json_t *arm)
{
	const char *abi = str_field(arm, "abi"), *ver = str_field(arm, "version");
	const char *path = str_field(arm, "path");

	fprintf(out, "%s %s '%s'", abi ? abi : "?", ver ? ver : "?", path ? path : "?");
}

static void take_start(struct view_job *v, const struct lines_info *info, json_t *line,
		       FILE *out, unsigned flags)
{
	json_t *settings = json_object_get(line, "settings");
	json_t *device = json_object_get(line, "device");
	const char *arch = str_field(line, "arch");
	const char *why = str_field(line, "not_timed_because");

	(void)info;
	v->started = true;
	snprintf(v->not_timed_because, sizeof v->not_timed_because, "%s",
		 json_is_true(json_object_get(line, "timed")) ? "" : why ? why : "");
	/* Lines of an engine before settings.compile_only: its reason says
	 * whether the run was asked for (runner.c's emit_start()). */
	if (json_is_boolean(json_object_get(settings, "compile_only")))
		v->compile_only_asked = json_is_true(json_object_get(settings, "compile_only"));
	else
		v->compile_only_asked = why && !strcmp(why, "compile-only run requested");
	v->ncases = (int)json_array_size(json_object_get(settings, "cases"));
	v->npairs = (int)int_field(settings, "pairs", 0);
	v->nsessions = (int)int_field(settings, "sessions", 0);
	if (!out)
		return;
	line_start(v, out, flags);
	fprintf(out, "start: %d cases, ", v->ncases);
	if (json_is_true(json_object_get(line, "timed"))) {
		const char *name = str_field(device, "name");
		fprintf(out, "%d pairs each on '%s'", v->npairs, name ? name : "?");
	} else {
		fprintf(out, "not timed (%s)", why ? why : "no device");
	}
	if (arch)
		fprintf(out, " for %s", arch);
	fputs("; baseline ", out);
	print_identity(out, json_object_get(line, "baseline"));
	fputs(", candidate ", out);
	print_identity(out, json_object_get(line, "candidate"));
	fputc('\n', out);
}

/* A case line's static differences (docs/output.md, "static"): the key,
 * how a plain line names it and its unit, and the same for the summary's
 * narrower code column. */
static const struct {
	const char *key, *what, *unit, *short_what, *short_unit;
} static_deltas[] = {
	{"code_bytes_delta", "code", " bytes", "size", " B"},
	{"registers_delta", "registers", "", "regs", ""},
	{"spill_stores_delta", "spill stores", "", "spill st", ""},
	{"spill_loads_delta", "spill loads", "", "spill ld", ""},
	{"stack_bytes_delta", "stack", " bytes", "stack", " B"},
};
#define NSTATIC_DELTAS (sizeof static_deltas / sizeof static_deltas[0])

/* The nonzero static differences of a case line, ", registers +2" each. */
static void print_static_deltas(FILE *out, json_t *st)
{
	bool any = false;

	for (size_t i = 0; i < NSTATIC_DELTAS; i++) {
		long long d = int_field(st, static_deltas[i].key, 0);
		if (d == 0)
			continue;
		fprintf(out, "%s%s %+lld%s", any ? ", " : ": ", static_deltas[i].what, d,
			static_deltas[i].unit);
		any = true;
	}
	if (!any)
		fputs(", same size and registers", out);
}

static void take_case(struct view_job *v, const struct lines_info *info, json_t *line,
		      FILE *out, unsigned flags)
{
	const char *name = info->case_name;
	bool b = json_is_true(json_object_get(json_object_get(line, "baseline"), "compiled"));
	bool c = json_is_true(json_object_get(json_object_get(line, "candidate"), "compiled"));

	struct view_case *rec = case_record(v, name);
	json_t *st = json_object_get(line, "static");

	if (rec && json_is_object(st)) {
		json_decref(rec->statics);
		rec->statics = json_incref(st);
	}
	report_pairs(v, out, flags);
	v->case_index++;
	snprintf(v->case_name, sizeof v->case_name, "%s", name ? name : "?");
	v->case_timed = json_is_true(json_object_get(line, "timed"));
	v->pairs_done = v->faster = v->slower = v->ties = 0;
	v->pairs_reported = false;
	if (!out)
		return;
	line_start(v, out, flags);
	fprintf(out, "case %s: ", v->case_name);
	if (json_is_false(json_object_get(line, "applicable"))) {
		const char *why = str_field(line, "not_applicable_because");
		fprintf(out, "not applicable%s%s", why ? ": " : "", why ? why : "");
	} else if (b && c && json_is_true(json_object_get(line, "identical_code"))) {
		fputs("compiled (identical code)", out);
	} else if (b && c) {
		fputs("compiled (code differs", out);
		print_static_deltas(out, json_object_get(line, "static"));
		fputc(')', out);
	} else if (b) {
		fputs("candidate did not compile", out);
	} else if (c) {
		fputs("baseline did not compile", out);
	} else {
		fputs("neither arm compiled", out);
	}
	fputc('\n', out);
}

static void take_pair(struct view_job *v, const struct lines_info *info, json_t *line,
		      FILE *out, unsigned flags)
{
	const char *name = info->case_name;
	json_t *b = json_object_get(line, "baseline_ns");
	json_t *c = json_object_get(line, "candidate_ns");

	int session = (int)int_field(line, "session", 0);

	if ((name && strcmp(name, v->case_name) != 0) || session != v->session) {
		/* Pairs of a case without its case line, or of the next
		 * session: count them afresh. */
		report_pairs(v, out, flags);
		v->session = session;
		if (name)
			snprintf(v->case_name, sizeof v->case_name, "%s", name);
		v->pairs_done = v->faster = v->slower = v->ties = 0;
		v->pairs_reported = false;
		v->case_timed = true;
	}
	v->pairs_done++;
	if (json_is_number(b) && json_is_number(c)) {
		double tb = json_number_value(b), tc = json_number_value(c);
		struct view_case *rec = case_record(v, name ? name : v->case_name);

		if (rec && isfinite(tb) && isfinite(tc) && tb > 0 && tc > 0) {
			if (rec->n == rec->cap) {
				rec->cap = rec->cap ? 2 * rec->cap : 64;
				rec->ns[0] = xrealloc(rec->ns[0], rec->cap * sizeof *rec->ns[0]);
				rec->ns[1] = xrealloc(rec->ns[1], rec->cap * sizeof *rec->ns[1]);
			}
			rec->ns[0][rec->n] = tb;
			rec->ns[1][rec->n++] = tc;
		}
		if (tc < tb)
			v->faster++;
		else if (tc > tb)
			v->slower++;
		else
			v->ties++;
	}
	if (v->npairs > 0 && v->pairs_done >= v->npairs)
		report_pairs(v, out, flags);
}

static void take_error(struct view_job *v, const struct lines_info *info, json_t *line,
		       FILE *out, unsigned flags)
{
	const char *name = info->case_name, *arm = info->arm;
	const char *stage = str_field(line, "stage"), *message = str_field(line, "message");

	report_pairs(v, out, flags);
	if (!out)
		return;
	line_start(v, out, flags);
	fputs("error: ", out);
	if (name)
		fprintf(out, "case %s: ", name);
	if (arm)
		fprintf(out, "%s ", arm);
	fprintf(out, "%s: %s\n", stage ? stage : "run", message ? message : "(no message)");
}

/* "fail (candidate)", "equivalent", ... for a case_verdict line. */
static void verdict_cell(json_t *cv, char *buf, size_t len)
{
	const char *verdict = str_field(cv, "verdict"), *arm = str_field(cv, "failed_arm");

	if (arm)
		snprintf(buf, len, "%s (%s)", verdict ? verdict : "?", arm);
	else
		snprintf(buf, len, "%s", verdict ? verdict : "?");
}

/* "1.0012 [0.9990, 1.0031]", or "1.0012" when there is no interval (the
 * verdict line's cases), or "-". */
static void ratio_cell(json_t *cv, char *buf, size_t len)
{
	char a[24], b[24], c[24];
	const char *m = num_text(json_object_get(cv, "ratio_median"), "%.4f", a, sizeof a);
	const char *lo = num_text(json_object_get(cv, "ratio_lo"), "%.4f", b, sizeof b);
	const char *hi = num_text(json_object_get(cv, "ratio_hi"), "%.4f", c, sizeof c);

	if (strcmp(m, "-") != 0 && json_object_get(cv, "ratio_lo"))
		snprintf(buf, len, "%s [%s, %s]", m, lo, hi);
	else
		snprintf(buf, len, "%s", m);
}

/* A case that could not run on the target: never compiled, so its
 * identical_code says nothing. */
static bool is_not_applicable(json_t *cv)
{
	const char *verdict = str_field(cv, "verdict");

	return verdict && strcmp(verdict, "not_applicable") == 0;
}

static void take_case_verdict(struct view_job *v, const struct lines_info *info,
			      json_t *line, FILE *out, unsigned flags)
{
	char verdict[64], ratio[96], p[32];
	const char *verdict_name = info->verdict;

	report_pairs(v, out, flags);
	json_array_append(v->case_verdicts, line);
	if (!out || !(flags & VIEW_VERDICTS))
		return;
	verdict_cell(line, verdict, sizeof verdict);
	line_start(v, out, flags);
	fprintf(out, "case %s: ", info->case_name ? info->case_name : "?");
	if (is_not_applicable(line)) {
		const char *why = str_field(line, "not_applicable_because");
		fprintf(out, "verdict %s%s%s", verdict, why ? ": " : "", why ? why : "");
	} else if (verdict_name && (strcmp(verdict_name, "fail") == 0 ||
				    strcmp(verdict_name, "not_timed") == 0)) {
		fprintf(out, "verdict %s", verdict);
	} else {
		ratio_cell(line, ratio, sizeof ratio);
		fprintf(out, "%lld pairs, verdict %s, ratio %s, p_holm %s",
			int_field(line, "n", 0), verdict, ratio,
			num_text(json_object_get(line, "p_holm"), "%.3g", p, sizeof p));
	}
	if (json_is_boolean(json_object_get(line, "identical_code")) && !is_not_applicable(line))
		fputs(json_is_true(json_object_get(line, "identical_code")) ?
		      " (identical code)" : " (code differs)", out);
	fputc('\n', out);
}

/* The rows of the summary: the case_verdict lines, else the verdict line's
 * cases (quald's own verdict lines may have neither). Borrowed. */
static json_t *summary_rows(const struct view_job *v)
{
	if (json_array_size(v->case_verdicts) > 0)
		return v->case_verdicts;
	return json_object_get(v->verdict, "cases");
}

/* "1 slower, 8 equivalent": the case verdicts counted, in order of first
 * appearance. */
static void print_tally(FILE *out, json_t *rows)
{
	size_t n = json_array_size(rows), i, k;
	bool any = false;

	for (i = 0; i < n; i++) {
		const char *vi = str_field(json_array_get(rows, i), "verdict");
		int count = 0;

		if (!vi)
			continue;
		for (k = 0; k < i; k++) {
			const char *vk = str_field(json_array_get(rows, k), "verdict");
			if (vk && strcmp(vk, vi) == 0)
				break;
		}
		if (k < i)
			continue; /* counted at its first appearance */
		for (k = i; k < n; k++) {
			const char *vk = str_field(json_array_get(rows, k), "verdict");
			if (vk && strcmp(vk, vi) == 0)
				count++;
		}
		fprintf(out, "%s%d %s", any ? ", " : "", count, vi);
		any = true;
	}
}

/* The run verdict line, and its message on the next line when it has one. */
static void print_run_verdict(const struct view_job *v, FILE *out, unsigned flags)
{
	struct lines_info info;
	const char *verdict;
	const char *message = str_field(v->verdict, "message");
	json_t *rows = json_object_get(v->verdict, "cases");

	/* The verdict line's cases are all of them; the case_verdict lines
	 * seen may be fewer (a watch that began late). */
	if (json_array_size(rows) == 0)
		rows = v->case_verdicts;
	lines_classify(v->verdict, &info);
	verdict = info.verdict;

	line_start(v, out, flags);
	fprintf(out, "verdict: %s", verdict ? verdict : "?");
	if (json_array_size(rows) > 0) {
		fputs(" (", out);
		print_tally(out, rows);
		fputc(')', out);
	}
	fputc('\n', out);
	if (message) {
		line_start(v, out, flags);
		fprintf(out, "  %s\n", message);
	}
}

static void take_verdict(struct view_job *v, const struct lines_info *info, json_t *line,
			 FILE *out, unsigned flags)
{
	(void)info;
	report_pairs(v, out, flags);
	json_decref(v->verdict);
	v->verdict = json_incref(line);
	if (out && (flags & VIEW_VERDICTS))
		print_run_verdict(v, out, flags);
}

void view_job_take(struct view_job *v, json_t *line, FILE *out, unsigned flags)
{
	/* What each type of line does; other types (newer versions) have no
	 * plain form. */
	static void (*const take[])(struct view_job *v, const struct lines_info *info,
				    json_t *line, FILE *out, unsigned flags) = {
		[LINES_START] = take_start, [LINES_CASE] = take_case, [LINES_PAIR] = take_pair,
		[LINES_CASE_VERDICT] = take_case_verdict, [LINES_VERDICT] = take_verdict,
		[LINES_ERROR] = take_error,
	};
	struct lines_info info;

	lines_classify(line, &info);
	if ((size_t)info.type < sizeof take / sizeof take[0] && take[info.type])
		take[info.type](v, &info, line, out, flags);
}

/* Appends printf-style text to buf, which holds *used bytes. */
static void __attribute__((format(printf, 4, 5)))
append(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*used >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *used, len - *used, fmt, ap);
	va_end(ap);
	if (n > 0)
		*used = *used + (size_t)n < len ? *used + (size_t)n : len - 1;
}

void view_progress(const struct view_job *v, char *buf, size_t len, size_t width)
{
	size_t used = 0;
	bool in_pairs = v->case_index > 0 && v->case_timed &&
			(v->npairs == 0 || v->pairs_done < v->npairs);

	if (len == 0)
		return;
	buf[0] = '\0';
	if (v->verdict)
		return;
	append(buf, len, &used, "job %s: ", v->job);
	if (!v->started && v->position > 0) {
		append(buf, len, &used, "queued, position %d", v->position);
	} else if (!v->started) {
		append(buf, len, &used, "starting");
	} else if (in_pairs) {
		append(buf, len, &used, "case %d", v->case_index);
		if (v->ncases > 0)
			append(buf, len, &used, "/%d", v->ncases);
		append(buf, len, &used, " %s: pair %d", v->case_name, v->pairs_done);
		if (v->npairs > 0)
			append(buf, len, &used, "/%d", v->npairs);
		append(buf, len, &used, ", candidate faster %d, slower %d", v->faster, v->slower);
		if (v->ties)
			append(buf, len, &used, ", even %d", v->ties);
	} else if (v->ncases == 0 || v->case_index < v->ncases) {
		append(buf, len, &used, "compiling case %d", v->case_index + 1);
		if (v->ncases > 0)
			append(buf, len, &used, "/%d", v->ncases);
	} else {
		append(buf, len, &used, "judging");
	}
	/* One column short of the width: a line that fills the terminal
	 * exactly wraps on some terminals, and "\r" then redraws the wrong
	 * row. The text is ASCII (case names and numbers), one column a byte. */
	if (width > 1 && used > width - 1)
		buf[width - 1] = '\0';
}

void view_table(FILE *out, const char *const *head, size_t ncols,
		const char *const *cells, size_t nrows)
{
	size_t *w = xcalloc(ncols, sizeof *w);

	for (size_t k = 0; k < ncols; k++)
		w[k] = strlen(head[k]);
	for (size_t i = 0; i < nrows; i++)
		for (size_t k = 0; k < ncols; k++)
			if (strlen(cells[i * ncols + k]) > w[k])
				w[k] = strlen(cells[i * ncols + k]);
	for (size_t k = 0; k + 1 < ncols; k++)
		fprintf(out, "%-*s  ", (int)w[k], head[k]);
	fprintf(out, "%s\n", head[ncols - 1]);
	for (size_t i = 0; i < nrows; i++) {
		for (size_t k = 0; k + 1 < ncols; k++)
			fprintf(out, "%-*s  ", (int)w[k], cells[i * ncols + k]);
		fprintf(out, "%s\n", cells[i * ncols + ncols - 1]);
	}
	free(w);
}

/* ---- the summary, for a terminal, markdown and JUnit ------------------- */

enum { SUM_CASE, SUM_VERDICT, SUM_CODE, SUM_BASE, SUM_CAND, SUM_CHANGE, SUM_P, SUM_DETECT,
       SUM_NCOL };

static const char *const sum_head[SUM_NCOL] = {
	"case", "verdict", "code", "baseline us", "candidate us", "change [lo, hi]", "p_holm",
	"detectable",
};

/* The summary's rows, as text, and the geometric mean of its timed cases. */
struct summary {
	json_t *rows;                 /* borrowed: summary_rows() */
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
	const char *name = str_field(cv, "case");
	size_t used = 0;

	if (!json_is_boolean(ident) || is_not_applicable(cv)) {
		snprintf(buf, len, "-");
		return;
	}
	if (json_is_true(ident)) {
		snprintf(buf, len, "identical");
		return;
	}
	for (size_t i = 0; name && i < v->ncases_seen; i++)
		if (strcmp(v->cases[i].name, name) == 0)
			st = v->cases[i].statics;
	buf[0] = '\0';
	for (size_t i = 0; i < NSTATIC_DELTAS && used < len; i++) {
		long long d = int_field(st, static_deltas[i].key, 0);
		int k;

		if (d == 0)
			continue;
		k = snprintf(buf + used, len - used, "%s%s %+lld%s", used ? ", " : "",
			     static_deltas[i].short_what, d, static_deltas[i].short_unit);
		used += k > 0 ? (size_t)k : 0;
	}
	if (!buf[0])
		snprintf(buf, len, "differs");
}

/* Whether a case verdict's ratio is a timing to count in the geometric
 * mean: timed, not failed. */
static bool counts_in_geomean(json_t *cv)
{
	const char *verdict = str_field(cv, "verdict");
	double r = json_number_value(json_object_get(cv, "ratio_median"));

	return verdict && strcmp(verdict, "fail") != 0 && strcmp(verdict, "not_timed") != 0 &&
	       strcmp(verdict, "not_applicable") != 0 &&
	       json_is_number(json_object_get(cv, "ratio_median")) && isfinite(r) && r > 0;
}

static void summary_build(const struct view_job *v, struct summary *sm)
{
	double logsum = 0;

	sm->rows = summary_rows(v);
	sm->n = json_array_size(sm->rows);
	sm->cells = xcalloc(sm->n ? sm->n : 1, sizeof *sm->cells);
	sm->ngeo = 0;
	for (size_t i = 0; i < sm->n; i++) {
		json_t *cv = json_array_get(sm->rows, i);
		char (*c)[112] = sm->cells[i];
		const char *name = str_field(cv, "case");
		char a[32], p[32];

		snprintf(c[SUM_CASE], sizeof c[0], "%s", name ? name : "?");
		verdict_cell(cv, c[SUM_VERDICT], sizeof c[0]);
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
			 num_text(json_object_get(cv, "p_holm"), "%.3g", p, sizeof p));
		snprintf(c[SUM_DETECT], sizeof c[0], "%s",
			 change_text(json_object_get(cv, "detectable_ratio"), a, sizeof a));
		if (counts_in_geomean(cv)) {
			logsum += log(json_number_value(json_object_get(cv, "ratio_median")));
			sm->ngeo++;
		}
	}
	sm->geo = sm->ngeo ? exp(logsum / sm->ngeo) : NAN;
}

/* The SGR colour of a verdict on a terminal, "" for none. */
static const char *verdict_color(const char *verdict)
{
	if (!verdict)
		return "";
	if (!strncmp(verdict, "fail", 4) || !strcmp(verdict, "slower"))
		return "\033[31m";      /* red */
	if (!strcmp(verdict, "faster"))
		return "\033[32m";      /* green */
	if (!strcmp(verdict, "inconclusive"))
		return "\033[33m";      /* yellow */
	return "";
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
				const char *col = k == SUM_VERDICT && v->color ? verdict_color(cell) : "";

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
		print_run_verdict(v, out, 0);
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
	const char *verdict = str_field(v->verdict, "verdict");

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
		const char *message = str_field(v->verdict, "message");

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
	const char *name = str_field(cv, "case"), *verdict = str_field(cv, "verdict");
	const char *run = str_field(v->verdict, "verdict");
	size_t i;

	if (!json_is_object(gate))
		return verdict && run && !strcmp(verdict, "slower") && !strcmp(run, "regression");
	json_array_foreach(json_object_get(gate, "regression_cases"), i, x)
		if (name && json_is_string(x) && strcmp(json_string_value(x), name) == 0)
			return true;
	return false;
}

void view_junit(FILE *out, const struct view_job *v, const char *suite)
{
	struct summary sm;
	int failures = 0, skipped = 0, errors = 0;
	const char *run_verdict = str_field(v->verdict, "verdict");
	const char *message = str_field(v->verdict, "message");
	bool run_error = run_verdict && strcmp(run_verdict, "error") == 0;
	char geo[160];

	summary_build(v, &sm);
	for (size_t i = 0; i < sm.n; i++) {
		json_t *cv = json_array_get(sm.rows, i);
		const char *verdict = str_field(cv, "verdict");

		if (is_regression_case(v, cv) ||
		    (verdict && strcmp(verdict, "fail") == 0))
			failures++;
		else if (verdict && (!strcmp(verdict, "not_timed") || !strcmp(verdict, "not_applicable")))
			skipped++;
	}
	/* A run that did not end in a verdict of its own (error, or quald's
	 * cancelled and interrupted) is an error, never a green suite. */
	errors = run_error || !v->verdict ||
		 (run_verdict && (!strcmp(run_verdict, "cancelled") ||
				  !strcmp(run_verdict, "interrupted")));
	geomean_text(&sm, geo, sizeof geo);
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
	fprintf(out, "<testsuites tests=\"%zu\" failures=\"%d\" errors=\"%d\" skipped=\"%d\">\n",
		sm.n + (size_t)errors, failures, errors, skipped);
	fputs("  <testsuite name=\"", out);
	xml_text(out, suite);
	fprintf(out, "\" tests=\"%zu\" failures=\"%d\" errors=\"%d\" skipped=\"%d\">\n",
		sm.n + (size_t)errors, failures, errors, skipped);
	fputs("    <properties>\n      <property name=\"verdict\" value=\"", out);
	xml_text(out, run_verdict ? run_verdict : "none");
	fputs("\"/>\n      <property name=\"geomean\" value=\"", out);
	xml_text(out, geo);
	fputs("\"/>\n    </properties>\n", out);
	for (size_t i = 0; i < sm.n; i++) {
		json_t *cv = json_array_get(sm.rows, i);
		const char *verdict = str_field(cv, "verdict");
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
		} else if (verdict && strcmp(verdict, "fail") == 0) {
			fputs("      <failure type=\"fail\" message=\"", out);
			xml_text(out, sm.cells[i][SUM_VERDICT]);
			fputs("\"/>\n", out);
		} else if (verdict && (!strcmp(verdict, "not_timed") || !strcmp(verdict, "not_applicable"))) {
			fputs("      <skipped message=\"", out);
			xml_text(out, verdict);
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
			  run_verdict);
		fputs("\"/>\n    </testcase>\n", out);
	}
	fputs("  </testsuite>\n</testsuites>\n", out);
	free(sm.cells);
}

bool view_color_wanted(FILE *f)
{
	const char *term = getenv("TERM"), *no = getenv("NO_COLOR");

	return isatty(fileno(f)) && !(term && strcmp(term, "dumb") == 0) && !(no && no[0]);
}

bool view_not_timed(const struct view_job *v)
{
	struct lines_info info;
	json_t *timed = json_object_get(v->verdict, "timed");

	if (!v->verdict)
		return false;
	lines_classify(v->verdict, &info);
	return json_is_false(timed) || (info.verdict && strcmp(info.verdict, "not_timed") == 0);
}

/* The length of the control character at s (n bytes left), 0 for none:
 * C0 and DEL one byte, C1 (U+0080..U+009F, UTF-8 C2 80..C2 9F) two. */
static size_t control_len(const unsigned char *s, size_t n)
{
	if (s[0] < 0x20 || s[0] == 0x7f)
		return 1;
	if (n >= 2 && s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f)
		return 2;
	return 0;
}

/* s's text with its control characters escaped, as a new string, or NULL
 * when it has none. */
static char *escape_controls(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i, k, out = 0;
	bool any = false;
	char *t;

	for (i = 0; i < n; i++)
		any |= control_len(u + i, n - i) > 0;
	if (!any)
		return NULL;
	t = xmalloc(6 * n + 1); /* "\u0085" is 6 bytes for 2 */
	for (i = 0; i < n; i += k ? k : 1) {
		k = control_len(u + i, n - i);
		if (k == 2)
			out += (size_t)sprintf(t + out, "\\u%04x", u[i + 1]);
		else if (k == 1 && u[i] == '\n')
			out += (size_t)sprintf(t + out, "\\n");
		else if (k == 1 && u[i] == '\t')
			out += (size_t)sprintf(t + out, "\\t");
		else if (k == 1 && u[i] == '\r')
			out += (size_t)sprintf(t + out, "\\r");
		else if (k == 1)
			out += (size_t)sprintf(t + out, "\\x%02x", u[i]);
		else
			t[out++] = s[i];
	}
	t[out] = '\0';
	return t;
}

void view_clean(json_t *x)
{
	const char *key;
	json_t *val;
	size_t i;
	char *t;

	if (json_is_object(x)) {
		json_object_foreach(x, key, val)
			view_clean(val);
	} else if (json_is_array(x)) {
		json_array_foreach(x, i, val)
			view_clean(val);
	} else if (json_is_string(x)) {
		t = escape_controls(json_string_value(x), json_string_length(x));
		if (t)
			json_string_set(x, t);
		free(t);
	}
}

int view_exit_status(const char *verdict)
{
	static const struct {
		const char *name;
		int status;
	} map[] = {
		{"improvement", QUAL_EXIT_PASS},
		{"neutral", QUAL_EXIT_PASS},
		{"not_timed", QUAL_EXIT_PASS},
		{"regression", QUAL_EXIT_REGRESSION},
		{"fail", QUAL_EXIT_FAIL},
		{"error", QUAL_EXIT_ERROR},
		{"cancelled", QUAL_EXIT_ERROR},
		{"interrupted", QUAL_EXIT_ERROR},
	};

	for (size_t i = 0; verdict && i < sizeof map / sizeof map[0]; i++)
		if (strcmp(verdict, map[i].name) == 0)
			return map[i].status;
	return QUAL_EXIT_ERROR; /* an unknown verdict must not pass a gate */
}
