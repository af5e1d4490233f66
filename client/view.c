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
#include "client/view_internal.h"
#include "stats/stats.h"
#include "common/exitcode.h"
#include "common/lines.h"
#include "proto/line.h"
#include "common/xalloc.h"
#include "proto/vocab.h"

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

const char *view__str_field(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

long long view__int_field(json_t *o, const char *key, long long def)
{
	json_t *x = json_object_get(o, key);

	return json_is_integer(x) ? json_integer_value(x) : def;
}

const char *view__num_text(json_t *x, const char *fmt, char *buf, size_t len)
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
	const char *abi = view__str_field(arm, "abi"), *ver = view__str_field(arm, "version");
	const char *path = view__str_field(arm, "path");

	fprintf(out, "%s %s '%s'", abi ? abi : "?", ver ? ver : "?", path ? path : "?");
}

static void take_start(struct view_job *v, const struct lines_info *info, json_t *line,
		       FILE *out, unsigned flags)
{
	json_t *settings = json_object_get(line, "settings");
	json_t *device = json_object_get(line, "device");
	const char *arch = view__str_field(line, "arch");
	const char *why = view__str_field(line, "not_timed_because");

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
	v->npairs = (int)view__int_field(settings, "pairs", 0);
	v->nsessions = (int)view__int_field(settings, "sessions", 0);
	if (!out)
		return;
	line_start(v, out, flags);
	fprintf(out, "start: %d cases, ", v->ncases);
	if (json_is_true(json_object_get(line, "timed"))) {
		const char *name = view__str_field(device, "name");
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

const struct view__static_delta view__static_deltas[VIEW__NSTATIC_DELTAS] = {
	{"code_bytes_delta", "code", " bytes", "size", " B"},
	{"registers_delta", "registers", "", "regs", ""},
	{"spill_stores_delta", "spill stores", "", "spill st", ""},
	{"spill_loads_delta", "spill loads", "", "spill ld", ""},
	{"stack_bytes_delta", "stack", " bytes", "stack", " B"},
};
/* The nonzero static differences of a case line, ", registers +2" each. */
static void print_static_deltas(FILE *out, json_t *st)
{
	bool any = false;

	for (size_t i = 0; i < VIEW__NSTATIC_DELTAS; i++) {
		long long d = view__int_field(st, view__static_deltas[i].key, 0);
		if (d == 0)
			continue;
		fprintf(out, "%s%s %+lld%s", any ? ", " : ": ", view__static_deltas[i].what, d,
			view__static_deltas[i].unit);
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
		const char *why = view__str_field(line, "not_applicable_because");
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

	int session = (int)view__int_field(line, "session", 0);

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
	const char *stage = view__str_field(line, "stage");
	const char *message = view__str_field(line, "message");

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

void view__verdict_cell(json_t *cv, char *buf, size_t len)
{
	const char *verdict = view__str_field(cv, "verdict");
	const char *arm = view__str_field(cv, "failed_arm");

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
	const char *m = view__num_text(json_object_get(cv, "ratio_median"), "%.4f", a, sizeof a);
	const char *lo = view__num_text(json_object_get(cv, "ratio_lo"), "%.4f", b, sizeof b);
	const char *hi = view__num_text(json_object_get(cv, "ratio_hi"), "%.4f", c, sizeof c);

	if (strcmp(m, "-") != 0 && json_object_get(cv, "ratio_lo"))
		snprintf(buf, len, "%s [%s, %s]", m, lo, hi);
	else
		snprintf(buf, len, "%s", m);
}

enum case_verdict view__case_verdict(json_t *cv)
{
	return vocab_case_verdict_parse(view__str_field(cv, "verdict"));
}

enum run_verdict view__run_verdict(const struct view_job *v)
{
	return vocab_verdict_parse(view__str_field(v->verdict, "verdict"));
}

bool view__is_not_applicable(json_t *cv)
{
	return view__case_verdict(cv) == VERDICT_NOT_APPLICABLE;
}

static void take_case_verdict(struct view_job *v, const struct lines_info *info,
			      json_t *line, FILE *out, unsigned flags)
{
	char verdict[64], ratio[96], p[32];
	enum case_verdict cv = vocab_case_verdict_parse(info->verdict);

	report_pairs(v, out, flags);
	json_array_append(v->case_verdicts, line);
	if (!out || !(flags & VIEW_VERDICTS))
		return;
	view__verdict_cell(line, verdict, sizeof verdict);
	line_start(v, out, flags);
	fprintf(out, "case %s: ", info->case_name ? info->case_name : "?");
	if (view__is_not_applicable(line)) {
		const char *why = view__str_field(line, "not_applicable_because");
		fprintf(out, "verdict %s%s%s", verdict, why ? ": " : "", why ? why : "");
	} else if (cv == VERDICT_FAIL || cv == VERDICT_NOT_TIMED) {
		fprintf(out, "verdict %s", verdict);
	} else {
		ratio_cell(line, ratio, sizeof ratio);
		fprintf(out, "%lld pairs, verdict %s, ratio %s, p_holm %s",
			view__int_field(line, "n", 0), verdict, ratio,
			view__num_text(json_object_get(line, "p_holm"), "%.3g", p, sizeof p));
	}
	if (json_is_boolean(json_object_get(line, "identical_code")) &&
	    !view__is_not_applicable(line))
		fputs(json_is_true(json_object_get(line, "identical_code")) ?
		      " (identical code)" : " (code differs)", out);
	fputc('\n', out);
}

json_t *view__summary_rows(const struct view_job *v)
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
		const char *vi = view__str_field(json_array_get(rows, i), "verdict");
		int count = 0;

		if (!vi)
			continue;
		for (k = 0; k < i; k++) {
			const char *vk = view__str_field(json_array_get(rows, k), "verdict");
			if (vk && strcmp(vk, vi) == 0)
				break;
		}
		if (k < i)
			continue; /* counted at its first appearance */
		for (k = i; k < n; k++) {
			const char *vk = view__str_field(json_array_get(rows, k), "verdict");
			if (vk && strcmp(vk, vi) == 0)
				count++;
		}
		fprintf(out, "%s%d %s", any ? ", " : "", count, vi);
		any = true;
	}
}

void view__print_run_verdict(const struct view_job *v, FILE *out, unsigned flags)
{
	struct lines_info info;
	const char *verdict;
	const char *message = view__str_field(v->verdict, "message");
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
		view__print_run_verdict(v, out, flags);
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

bool view_color_wanted(FILE *f)
{
	const char *term = getenv("TERM"), *no = getenv("NO_COLOR");

	return isatty(fileno(f)) && !(term && strcmp(term, "dumb") == 0) && !(no && no[0]);
}

bool view_not_timed(const struct view_job *v)
{
	json_t *timed = json_object_get(v->verdict, "timed");

	if (!v->verdict)
		return false;
	return json_is_false(timed) || view__run_verdict(v) == RUN_NOT_TIMED;
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
	/* An unknown verdict is an error: it must not pass a gate. */
	return vocab_verdict_exit(vocab_verdict_parse(verdict));
}

