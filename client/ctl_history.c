/* qualctl history and export (ctl.h): one history request (docs/protocol.md,
 * "history"), its reply shown per case as a table, as it came (--json), or
 * written as CSV (RFC 4180) or as LNT reports (format_version 2). Both
 * commands read the same reply: there is no second way to the data. */
#include "client/ctl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "client/view.h"
#include "common/exitcode.h"
#include "common/xalloc.h"
#include "proto/fleet.h"

/* A history reply may hold 10000 jobs of many cases each: far more than a
 * job line, the connection's usual limit. */
#define HISTORY_LINE_MAX ((size_t)1 << 30)

enum {
	OPT_CASE = CTL_OPT_OWN,
	OPT_LABEL,
	OPT_LIMIT,
	OPT_CSV,
	OPT_LNT,
	OPT_MACHINE,
	OPT_GPU_TYPE,
};

enum export_format { EXPORT_NONE, EXPORT_CSV, EXPORT_LNT };

/* export's options; history takes the first HISTORY_NOPTS, the filters. */
static const struct option export_options[] = {
	{"case", required_argument, NULL, OPT_CASE},
	{"label", required_argument, NULL, OPT_LABEL},
	{"limit", required_argument, NULL, OPT_LIMIT},
	{"gpu-type", required_argument, NULL, OPT_GPU_TYPE},
	{"csv", no_argument, NULL, OPT_CSV},
	{"lnt", no_argument, NULL, OPT_LNT},
	{"machine", required_argument, NULL, OPT_MACHINE},
	{NULL, 0, NULL, 0},
};
#define HISTORY_NOPTS 4

struct history_args {
	json_t *req;               /* the history request being built */
	enum export_format format;
	const char *machine;       /* export --lnt: the machine's name */
};

static int take_history(void *st, const struct command *cmd, int opt, const char *arg)
{
	struct history_args *h = st;
	long n;

	switch (opt) {
	case OPT_CASE:
		json_object_set_new(h->req, "case", json_string(arg));
		return 0;
	case OPT_LABEL:
		if (!json_object_get(h->req, "labels"))
			json_object_set_new(h->req, "labels", json_object());
		return ctl_take_label(cmd, json_object_get(h->req, "labels"), arg);
	case OPT_LIMIT:
		if (ctl_parse_long(cmd, "--limit", arg, 1, &n) != 0)
			return QUAL_EXIT_USAGE;
		json_object_set_new(h->req, "limit", json_integer(n));
		return 0;
	case OPT_GPU_TYPE: {
		struct qual_msg m;

		if (fleet_gpu_type_check(arg, &m) < 0)
			return ctl_usage_error(cmd, "--gpu-type: %s", m.text);
		json_object_set_new(h->req, FLEET_GPU_TYPE_KEY, json_string(arg));
		return 0;
	}
	case OPT_CSV:
	case OPT_LNT:
		if (h->format != EXPORT_NONE && h->format != (opt == OPT_CSV ? EXPORT_CSV :
							      EXPORT_LNT))
			return ctl_usage_error(cmd, "%s", "takes one of --csv and --lnt");
		h->format = opt == OPT_CSV ? EXPORT_CSV : EXPORT_LNT;
		return 0;
	case OPT_MACHINE:
		h->machine = arg;
		return 0;
	default:
		return ctl_take_nothing(st, cmd, opt, arg);
	}
}

/* The command line into h and the one request: -1 with the reply in *r,
 * or the exit status. */
static int history_request(struct ctl *ctl, const struct command *cmd, int argc, char **argv,
			   const struct option *own, struct history_args *h, struct reply *r)
{
	int first, rc;

	rc = ctl_parse_args(ctl, cmd, argc, argv, own, take_history, h, &first);
	if (rc < 0)
		rc = ctl_no_operands(cmd, argc, argv, first);
	if (rc < 0 && !strcmp(cmd->name, "export") && h->format == EXPORT_NONE)
		rc = ctl_usage_error(cmd, "%s", "needs --csv or --lnt");
	if (rc < 0 && h->machine && h->format != EXPORT_LNT)
		rc = ctl_usage_error(cmd, "%s", "--machine is for --lnt");
	if (rc >= 0)
		return rc;
	ctl->conn.line_max = HISTORY_LINE_MAX;
	rc = ctl_request(ctl, h->req, r);
	h->req = NULL; /* taken */
	/* Summaries quald is still making (a start after an older store):
	 * those jobs are left out of this reply. */
	if (rc < 0 && json_is_true(json_object_get(r->obj, "incomplete")))
		fprintf(stderr, "qualctl %s: incomplete: quald is still reading the logs of "
			"%lld ended job%s, left out; ask again shortly\n", cmd->name,
			(long long)json_integer_value(json_object_get(r->obj, "pending")),
			json_integer_value(json_object_get(r->obj, "pending")) == 1 ? "" : "s");
	return rc;
}

/* ---- history: a table per case ---- */

static const char *str_of(json_t *o, const char *key, const char *none)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : none;
}

/* The cases of the reply's jobs, in the order first seen (new array). */
static json_t *case_names(json_t *jobs)
{
	json_t *names = json_array(), *job, *c;
	size_t i, k, m;

	json_array_foreach(jobs, i, job) {
		json_array_foreach(json_object_get(job, "cases"), k, c) {
			const char *name = str_of(c, "case", NULL);
			bool seen = false;

			for (m = 0; name && m < json_array_size(names) && !seen; m++)
				seen = !strcmp(json_string_value(json_array_get(names, m)), name);
			if (name && !seen)
				json_array_append_new(names, json_string(name));
		}
	}
	return names;
}

#define HISTORY_CELL 512
enum { H_JOB, H_FINISHED, H_LABELS, H_VERDICT, H_CHANGE, H_NCOLS };

static void print_case(json_t *jobs, const char *name)
{
	static const char *const head[H_NCOLS] = {"job", "finished", "labels", "verdict",
						  "change [interval]"};
	size_t n = 0, rows = 0, i, k;
	char (*text)[HISTORY_CELL];
	const char **cells;
	json_t *job, *c;

	/* One row per matching case entry (a reply may name a case twice). */
	json_array_foreach(jobs, i, job)
		json_array_foreach(json_object_get(job, "cases"), k, c)
			n += strcmp(str_of(c, "case", ""), name) == 0;
	text = xcalloc(n * H_NCOLS + 1, sizeof *text);
	cells = xcalloc(n * H_NCOLS + 1, sizeof *cells);

	json_array_foreach(jobs, i, job) {
		json_array_foreach(json_object_get(job, "cases"), k, c) {
			char (*row)[HISTORY_CELL] = &text[rows * H_NCOLS];

			if (strcmp(str_of(c, "case", ""), name) != 0)
				continue;
			/* A typed job's GPU type beside it (the Slurm backend). */
			snprintf(row[H_JOB], HISTORY_CELL, "%s%s%s", str_of(job, "job", "?"),
				 json_object_get(job, FLEET_GPU_TYPE_KEY) ? " " : "",
				 str_of(job, FLEET_GPU_TYPE_KEY, ""));
			/* The date of a "YYYY-MM-DDTHH:MM:SSZ" time. */
			snprintf(row[H_FINISHED], HISTORY_CELL, "%.10s",
				 str_of(job, "finished", "-"));
			ctl_labels_text(json_object_get(job, "labels"), row[H_LABELS], HISTORY_CELL);
			snprintf(row[H_VERDICT], HISTORY_CELL, "%s", str_of(c, "verdict", "?"));
			view_change_cell(json_object_get(c, "ratio"), json_object_get(c, "ci_low"),
					 json_object_get(c, "ci_high"), row[H_CHANGE], HISTORY_CELL);
			for (int col = 0; col < H_NCOLS; col++)
				cells[rows * H_NCOLS + (size_t)col] = row[col];
			rows++;
		}
	}
	printf("case %s\n", name);
	view_table(stdout, head, H_NCOLS, cells, rows);
	free(cells);
	free(text);
}

int ctl_history(struct ctl *ctl, const struct command *cmd, int argc, char **argv)
{
	struct history_args h = { json_pack("{s:s}", "op", "history"), EXPORT_NONE, NULL };
	struct option own[HISTORY_NOPTS + 1];
	struct reply r = {0};
	json_t *jobs, *names;
	size_t i;
	int rc;

	memcpy(own, export_options, HISTORY_NOPTS * sizeof *own);
	own[HISTORY_NOPTS] = (struct option){NULL, 0, NULL, 0};
	rc = history_request(ctl, cmd, argc, argv, own, &h, &r);
	json_decref(h.req);
	if (rc >= 0)
		return rc;
	jobs = json_object_get(r.obj, "jobs");
	if (ctl->json) {
		ctl_print_raw(&r);
	} else if (json_array_size(jobs) == 0) {
		printf("no jobs\n");
	} else {
		names = case_names(jobs);
		for (i = 0; i < json_array_size(names); i++) {
			if (i)
				printf("\n");
			print_case(jobs, json_string_value(json_array_get(names, i)));
		}
		if (json_array_size(names) == 0)
			printf("no case verdicts in %zu job%s\n", json_array_size(jobs),
			       json_array_size(jobs) == 1 ? "" : "s");
		json_decref(names);
	}
	ctl_reply_release(&r);
	return QUAL_EXIT_PASS;
}

/* ---- export --csv ---- */

/* Whether a spreadsheet would read a text cell as a formula: it begins
 * with one of OWASP's formula triggers (CSV injection): = + - @, a tab or a
 * carriage return. */
static bool csv_formula_like(const char *s)
{
	return *s && strchr("=+-@\t\r", *s);
}

/* One CSV field (RFC 4180): quoted, with its quotes doubled, when it holds
 * a comma, a semicolon (the separator of some spreadsheets' locales), a
 * quote, CR or LF. A text cell that a spreadsheet would take for a formula
 * is neutralised as OWASP recommends: a single quote before it, and the
 * whole cell quoted. text is false for what the reply holds as a number
 * (or true, false, null), which is written as it is: a spreadsheet reads
 * -0.97 as the number it is. */
static void csv_field(FILE *f, const char *s, bool text, bool first)
{
	bool neutralise = text && csv_formula_like(s);

	if (!first)
		fputc(',', f);
	if (!neutralise && !strpbrk(s, ",;\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	if (neutralise)
		fputc('\'', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* A value of the reply as a CSV field's text: strings as they are, numbers
 * as few digits as give back the same double, true/false, null empty.
 * Returns whether it is text (a string of the reply). */
static bool value_text(json_t *v, char *buf, size_t len)
{
	if (json_is_string(v)) {
		snprintf(buf, len, "%s", json_string_value(v));
		return true;
	}
	if (json_is_integer(v)) {
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	} else if (json_is_real(v)) {
		double x = json_real_value(v);

		snprintf(buf, len, "%.15g", x);
		if (strtod(buf, NULL) != x)
			snprintf(buf, len, "%.17g", x);
	} else if (json_is_boolean(v)) {
		snprintf(buf, len, "%s", json_is_true(v) ? "true" : "false");
	} else {
		buf[0] = '\0';
	}
	return false;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The label keys of every job, sorted (pointers into the reply). */
static const char **label_keys(json_t *jobs, size_t *n)
{
	json_t *seen = json_object(), *job, *v;
	const char **keys;
	const char *key;
	size_t i, k = 0;

	json_array_foreach(jobs, i, job)
		json_object_foreach(json_object_get(job, "labels"), key, v)
			json_object_set_new(seen, key, json_true());
	keys = xcalloc(json_object_size(seen) + 1, sizeof *keys);
	json_array_foreach(jobs, i, job)
		json_object_foreach(json_object_get(job, "labels"), key, v) {
			bool dup = false;

			for (size_t m = 0; m < k && !dup; m++)
				dup = !strcmp(keys[m], key);
			if (!dup)
				keys[k++] = key;
		}
	json_decref(seen);
	qsort(keys, k, sizeof *keys, cmp_str);
	*n = k;
	return keys;
}

/* The job's members, then the case's, of each row (docs/qualctl.md). */
static const char *const csv_job_cols[] = {"job", "state", "verdict", "submitted",
					   "finished"};
/* Only when some job has a GPU type (quald's Slurm backend): after the
 * case's columns, so that an export of a local quald keeps its shape. */
static const char *const csv_fleet_cols[] = {FLEET_GPU_TYPE_KEY, FLEET_NODE_KEY,
					     FLEET_SUBMISSION_KEY, FLEET_OVERALL_KEY};
#define NFLEETCOLS (sizeof csv_fleet_cols / sizeof csv_fleet_cols[0])
static const char *const csv_case_cols[] = {"case", "verdict", "ratio", "ci_low",
					    "ci_high", "p_holm", "baseline_ns",
					    "candidate_ns", "timed"};
#define NJOBCOLS (sizeof csv_job_cols / sizeof csv_job_cols[0])
#define NCASECOLS (sizeof csv_case_cols / sizeof csv_case_cols[0])

/* The value of key in o as the next field of the row. */
static void csv_value(FILE *f, json_t *o, const char *key, bool first)
{
	/* Room for the longest field quald stores: a path (PATH_MAX) or a
	 * label value (1024 bytes); nothing is cut. */
	char buf[PATH_MAX + 64];
	bool text = value_text(json_object_get(o, key), buf, sizeof buf);

	csv_field(f, buf, text, first);
}

static void csv_row(FILE *f, json_t *job, json_t *c, const char **keys, size_t nkeys,
		    bool fleet)
{
	for (size_t k = 0; k < NJOBCOLS; k++)
		csv_value(f, job, csv_job_cols[k], k == 0);
	for (int arm = 0; arm < 2; arm++) {
		json_t *a = json_object_get(job, arm ? "candidate" : "baseline");

		csv_value(f, a, "path", false);
		csv_value(f, a, "sha256", false);
	}
	for (size_t k = 0; k < NCASECOLS; k++)
		csv_value(f, c, csv_case_cols[k], false);
	for (size_t k = 0; fleet && k < NFLEETCOLS; k++)
		csv_value(f, job, csv_fleet_cols[k], false);
	for (size_t k = 0; k < nkeys; k++)
		csv_value(f, json_object_get(job, "labels"), keys[k], false);
	fputs("\r\n", f);
}

/* One header row, then a row per job and case (a job without cases: one
 * row with the case columns empty), oldest job first; the label columns
 * "label:KEY", one per key any job has, sorted. */
static void export_csv(FILE *f, json_t *jobs)
{
	static const char *const arm_cols[] = {"baseline", "baseline_sha256", "candidate",
					       "candidate_sha256"};
	size_t nkeys, i, k;
	const char **keys = label_keys(jobs, &nkeys);
	bool fleet = false;
	char head[128];
	json_t *job, *c;

	json_array_foreach(jobs, i, job)
		fleet |= json_is_string(json_object_get(job, FLEET_GPU_TYPE_KEY));
	for (k = 0; k < NJOBCOLS; k++)
		csv_field(f, csv_job_cols[k], true, k == 0);
	for (k = 0; k < 4; k++)
		csv_field(f, arm_cols[k], true, false);
	for (k = 0; k < NCASECOLS; k++)
		csv_field(f, k == 1 ? "case_verdict" : csv_case_cols[k], true, false);
	for (k = 0; fleet && k < NFLEETCOLS; k++)
		csv_field(f, csv_fleet_cols[k], true, false);
	for (k = 0; k < nkeys; k++) {
		snprintf(head, sizeof head, "label:%s", keys[k]);
		csv_field(f, head, true, false);
	}
	fputs("\r\n", f);
	json_array_foreach(jobs, i, job) {
		json_t *cases = json_object_get(job, "cases");

		if (json_array_size(cases) == 0)
			csv_row(f, job, NULL, keys, nkeys, fleet);
		json_array_foreach(cases, k, c)
			csv_row(f, job, c, keys, nkeys, fleet);
	}
	free(keys);
}

/* ---- export --lnt ---- */

/* An LNT time ("%Y-%m-%dT%H:%M:%S") of ours ("...SSZ"). */
static json_t *lnt_time(json_t *t)
{
	const char *s = json_string_value(t);

	return s ? json_stringn(s, strcspn(s, "Z")) : json_null();
}

/* One LNT report (format_version 2) of a history job: the machine, the run
 * (its times, the job's labels as run info (a label named like one of
 * the run's own fields is overridden), its order field and what identifies
 * the job), a test "qual.CASE" per case, with the candidate's
 * median time in seconds as execution_time where it was timed. */
static json_t *lnt_report(json_t *job, const char *machine)
{
	json_t *run = json_object(), *tests = json_array(), *c, *v;
	json_t *labels = json_object_get(job, "labels");
	const char *key, *id = str_of(job, "job", "j0");
	size_t i;

	/* The labels first: the run's own fields win over a label of the
	 * same name. */
	json_object_foreach(labels, key, v)
		json_object_set(run, key, v);
	json_object_set_new(run, "start_time", lnt_time(json_object_get(job, "submitted")));
	json_object_set_new(run, "end_time", lnt_time(json_object_get(job, "finished")));
	/* LNT orders runs by this field: the job's number, which increases
	 * with submission, unless the labels give one. */
	if (!json_object_get(run, "llvm_project_revision"))
		json_object_set_new(run, "llvm_project_revision",
				    json_string(id + strspn(id, "j0")));
	json_object_set_new(run, "qual_job", json_string(id));
	/* A typed job's GPU type and node (the Slurm backend). */
	if (json_is_string(json_object_get(job, FLEET_GPU_TYPE_KEY)))
		json_object_set(run, "qual_gpu_type", json_object_get(job, FLEET_GPU_TYPE_KEY));
	if (json_is_string(json_object_get(job, FLEET_NODE_KEY)))
		json_object_set(run, "qual_node", json_object_get(job, FLEET_NODE_KEY));
	if (json_is_string(json_object_get(job, FLEET_SUBMISSION_KEY)))
		json_object_set(run, "qual_submission", json_object_get(job, FLEET_SUBMISSION_KEY));
	if (json_is_string(json_object_get(job, FLEET_OVERALL_KEY)))
		json_object_set(run, "qual_overall", json_object_get(job, FLEET_OVERALL_KEY));
	json_object_set_new(run, "qual_verdict", json_string(str_of(job, "verdict", "")));
	json_object_set_new(run, "baseline_sha256", json_string(
		str_of(json_object_get(job, "baseline"), "sha256", "")));
	json_object_set_new(run, "candidate_sha256", json_string(
		str_of(json_object_get(job, "candidate"), "sha256", "")));
	json_array_foreach(json_object_get(job, "cases"), i, c) {
		char name[256];
		json_t *t, *ns = json_object_get(c, "candidate_ns");

		snprintf(name, sizeof name, "qual.%s", str_of(c, "case", "?"));
		t = json_pack("{s:s}", "name", name);
		if (json_is_number(ns))
			json_object_set_new(t, "execution_time",
					    json_pack("[f]", json_number_value(ns) * 1e-9));
		json_array_append_new(tests, t);
	}
	/* A machine per GPU type: LNT keeps a series per machine, and one
	 * type's times are no baseline for another's. */
	if (json_is_string(json_object_get(job, FLEET_GPU_TYPE_KEY)))
		return json_pack("{s:s,s:{s:s++},s:o,s:o}", "format_version", "2", "machine",
				 "name", machine, "-", str_of(job, FLEET_GPU_TYPE_KEY, ""), "run",
				 run, "tests", tests);
	return json_pack("{s:s,s:{s:s},s:o,s:o}", "format_version", "2", "machine", "name",
			 machine, "run", run, "tests", tests);
}

static void export_lnt(FILE *f, json_t *jobs, const char *machine)
{
	json_t *all = json_array(), *job;
	char *text;
	size_t i;

	json_array_foreach(jobs, i, job)
		json_array_append_new(all, lnt_report(job, machine));
	text = json_dumps(all, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
	if (text)
		fprintf(f, "%s\n", text);
	free(text);
	json_decref(all);
}

int ctl_export(struct ctl *ctl, const struct command *cmd, int argc, char **argv)
{
	struct history_args h = { json_pack("{s:s}", "op", "history"), EXPORT_NONE, NULL };
	struct reply r = {0};
	json_t *raw, *jobs;
	int rc;

	rc = history_request(ctl, cmd, argc, argv, export_options, &h, &r);
	json_decref(h.req);
	if (rc >= 0)
		return rc;
	/* The data as quald sent it: the parsed reply's strings were made safe
	 * for a terminal (view_clean), which a file must not get. */
	raw = json_loadb(r.text, r.len, 0, NULL);
	jobs = json_object_get(raw, "jobs");
	if (!json_is_array(jobs)) {
		fprintf(stderr, "qualctl export: quald at %s sent a history reply without "
			"jobs\n", ctl->conn.where);
		rc = QUAL_EXIT_ERROR;
	} else {
		if (h.format == EXPORT_CSV)
			export_csv(stdout, jobs);
		else
			export_lnt(stdout, jobs, h.machine ? h.machine : "qual");
		rc = QUAL_EXIT_PASS;
	}
	json_decref(raw);
	ctl_reply_release(&r);
	return rc;
}
