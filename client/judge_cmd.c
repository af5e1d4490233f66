/* The judge command (judge_cmd.h): reads stored qual lines, feeds the pair
 * and failure lines to the engine's judge, and lets it write the verdicts. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/exitcode.h"
#include "common/opts.h"
#include "common/timesplit.h"
#include "proto/settings.h"
#include "stats/judge.h"
#include "client/judge_cmd.h"
#include "client/report.h"
#include "client/view.h"

/* What the command line asks of the judge (options[]). */
struct judge_args {
	double alpha, margin;      /* -1: the file's */
	/* The gate's rules given here, or -1: the file's. */
	int gate_slower, gate_faster, undecided;
	int table;                 /* -1: table on a terminal, json otherwise;
				    * 0 json; 1 table */
	struct report_files rep;   /* --json-out, --junit, --markdown */
	bool help;
};

/* A setting of the run given here instead of the file's (alpha and margin
 * are doubles, the gate's words ints): read, checked and worded by its
 * field in proto/settings.h (settings_from_option()), as qual-run reads
 * its option and judge_take_line() a start line's value, so that one value
 * has one range and one refusal everywhere. */
static int take_setting(const char *key, void *to, const char *s, struct qual_msg *msg)
{
	const struct settings_field *f = settings_find_key(key);
	struct qual_settings set;
	int rc;

	settings_init(&set);
	rc = settings_from_option(&set, f, s, msg);
	if (rc == 0)
		memcpy(to, (const char *)&set + f->offset,
		       f->kind == SETTINGS_REAL ? sizeof(double) : sizeof(int));
	settings_release(&set);
	return rc;
}

static int take_alpha(void *ctx, const char *s, struct qual_msg *msg)
{
	return take_setting("alpha", &((struct judge_args *)ctx)->alpha, s, msg);
}

static int take_margin(void *ctx, const char *s, struct qual_msg *msg)
{
	return take_setting("margin", &((struct judge_args *)ctx)->margin, s, msg);
}

static int take_gate_slower(void *ctx, const char *s, struct qual_msg *msg)
{
	return take_setting("gate_slower", &((struct judge_args *)ctx)->gate_slower, s, msg);
}

static int take_gate_faster(void *ctx, const char *s, struct qual_msg *msg)
{
	return take_setting("gate_faster", &((struct judge_args *)ctx)->gate_faster, s, msg);
}

static int take_undecided(void *ctx, const char *s, struct qual_msg *msg)
{
	return take_setting("undecided", &((struct judge_args *)ctx)->undecided, s, msg);
}

static int take_format(void *ctx, const char *s, struct qual_msg *msg)
{
	if (strcmp(s, "table") != 0 && strcmp(s, "json") != 0)
		return qual_fail(msg, QUAL_EINVAL, "--format must be table or json, got '%s'", s);
	((struct judge_args *)ctx)->table = strcmp(s, "table") == 0;
	return 0;
}

static int take_json(void *ctx, const char *s, struct qual_msg *msg)
{
	(void)s;
	(void)msg;
	((struct judge_args *)ctx)->table = 0;
	return 0;
}

#define AT(member) offsetof(struct judge_args, member)

/* The judge's options, in the order --help lists them. */
static const struct opts_entry options[] = {
	{"alpha", "A", OPTS_CALL, .fn = take_alpha, .help =
		"significance level of each case's test, 0 < A <= 0.5\n"
		"(at least 1e-09), as qual-run's --alpha"},
	{"margin", "M", OPTS_CALL, .fn = take_margin, .help =
		"equivalence margin on the median ratio, 0 <= M <= 0.5\n"
		"(0 or at least 1e-06), as qual-run's --margin"},
	{"gate-slower", "R", OPTS_CALL, .fn = take_gate_slower, .help =
		"beyond or significant: which slower cases make a\n"
		"regression (docs/verdicts.md, The gate)"},
	{"gate-faster", "R", OPTS_CALL, .fn = take_gate_faster, .help =
		"the same for an improvement"},
	{"undecided", "U", OPTS_CALL, .fn = take_undecided, .help =
		"pass or regression: what a case undecided at the cap does"},
	{"format", "F", OPTS_CALL, .fn = take_format, .help =
		"table: the summary a person reads (per case the verdict,\n"
		"code, time per arm, change with its interval, p, the\n"
		"detectable change; the geomean; colour on a terminal\n"
		"unless NO_COLOR is set); json: the case_verdict and\n"
		"verdict lines. Default: table when stdout is a terminal,\n"
		"json otherwise"},
	{"json", NULL, OPTS_CALL, .fn = take_json, .help = "the same as --format json"},
	{"json-out", "FILE", OPTS_STRING, AT(rep.json_out), .help =
		"also write the lines to FILE, whatever the format"},
	{"junit", "FILE", OPTS_STRING, AT(rep.junit), .help =
		"also write a JUnit XML report: a case that makes the run\n"
		"a regression, or fails, is a failed testcase"},
	{"markdown", "FILE", OPTS_STRING, AT(rep.markdown), .help =
		"also write the summary as a markdown table"},
	{"help", NULL, OPTS_FLAG, AT(help), .stop = true, .letter = 'h'},
};

#undef AT

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [--alpha A] [--margin M] [--gate-slower R] [--gate-faster R]\n"
		"       [--undecided U] [--format table|json] [--json] [--json-out FILE]\n"
		"       [--junit FILE] [--markdown FILE] [FILE]\n"
		"\n"
		"Reads qual JSON lines (qual-run output or a stored job log) from FILE or\n"
		"stdin and recomputes every case verdict and the run verdict from the pair\n"
		"lines. Alpha, margin and the gate default to the run's own settings,\n"
		"which must be in range (alpha in (0, 0.5], margin in [0, 0.5]); the\n"
		"looks of sampling are always the run's.\n"
		"\n", prog);
	opts_help(f, options, sizeof options / sizeof options[0], 19);
	fprintf(f,
		"\n"
		"Exit status: 0 improvement, neutral or not timed; 1 regression; 2 fail;\n"
		"3 error (also: no valid pair); 4 usage (bad options, unreadable file,\n"
		"not qual lines, settings out of range).\n");
}

/* Reads the command line into a (which holds the defaults) and opens the
 * input: *in is stdin or the file named, *path its name. Returns -1 to go
 * on, else the exit status (--help, a usage error). */
static int args_read(const char *prog, int argc, char **argv, struct judge_args *a,
		     FILE **in, const char **path)
{
	struct qual_msg msg = {{0}};
	int first = opts_parse(options, sizeof options / sizeof options[0], argc, argv, a,
			       &msg);

	if (first == QUAL_ENOENT) {
		fprintf(stderr, "%s: %s (see %s --help)\n", prog, msg.text, prog);
		return QUAL_EXIT_USAGE;
	}
	if (first < 0) {
		fprintf(stderr, "%s: %s\n", prog, msg.text);
		return QUAL_EXIT_USAGE;
	}
	if (a->help) {
		usage(stdout, prog);
		return QUAL_EXIT_PASS;
	}
	if (argc - first > 1) {
		fprintf(stderr, "%s: one input file at most, got '%s' and '%s'\n", prog,
			argv[first], argv[first + 1]);
		return QUAL_EXIT_USAGE;
	}
	if (argc - first == 1 && strcmp(argv[first], "-") != 0) {
		*path = argv[first];
		*in = fopen(*path, "r");
		if (!*in) {
			fprintf(stderr, "%s: cannot open '%s': %s\n", prog, *path, strerror(errno));
			return QUAL_EXIT_USAGE;
		}
	}
	if (a->table < 0)
		a->table = isatty(STDOUT_FILENO);
	return -1;
}

/* The judge's on_verdict: the sessions' part of the time split, summed
 * from their session_time lines; the supervisor's phases (probe, compile,
 * judging, the total) are not in the lines, so they are left out. */
static void add_session_split(void *ctx, json_t *line)
{
	const struct timesplit *t = ctx;

	if (t->sessions > 0)
		json_object_set_new(line, "time_s", timesplit_json(t, false));
}

/* The judge's lines (res, len bytes) shown and written: taken into the view
 * (which has the input's start, case and pair lines), then to stdout as the
 * table or as they are, and into the files asked for (rep). -1 when a file
 * could not be written (said). */
static int write_outputs(const char *prog, const char *res, size_t len, struct view_job *v,
			 int table, struct report_files *rep)
{
	const char *at = res, *end = res + len;

	while (at < end) {
		const char *nl = memchr(at, '\n', (size_t)(end - at));
		size_t n = nl ? (size_t)(nl - at) : (size_t)(end - at);
		json_t *line = json_loadb(at, n, 0, NULL);

		report_line(rep, at, n);
		if (line) {
			view_clean(line);
			view_job_take(v, line, NULL, 0);
			json_decref(line);
		}
		at += n + (nl != NULL);
	}
	if (table) {
		v->color = view_color_wanted(stdout);
		view_summary(stdout, v);
	} else {
		fwrite(res, 1, len, stdout);
	}
	return report_finish(prog, rep, v);
}

/* The input's lines: each to the judge (and the run's settings), and the
 * start, case and pair lines to the view (the verdicts come from the
 * judge), session_time lines to the time split. 0, or -1 after saying
 * why (invalid json, not qual lines, a read error, no case at all). */
static int read_input(const char *prog, const char *path, FILE *in, struct judge *j,
		      struct stats_settings *run_settings, struct view_job *view,
		      struct timesplit *split)
{
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	long lineno = 0;
	int rc = -1;

	while ((n = getline(&buf, &cap, in)) > 0) {
		json_error_t e;
		const char *type;
		json_t *line;
		char why[256];

		lineno++;
		if (n == 1 && buf[0] == '\n')
			continue;
		line = json_loadb(buf, (size_t)n, JSON_DECODE_ANY, &e);
		if (!line) {
			fprintf(stderr, "%s: '%s' line %ld: invalid json: %s\n", prog, path, lineno, e.text);
			goto out;
		}
		if (judge_take_line(j, run_settings, line, why, sizeof why) < 0) {
			fprintf(stderr, "%s: '%s' line %ld: %s\n", prog, path, lineno, why);
			json_decref(line);
			goto out;
		}
		type = json_string_value(json_object_get(line, "type"));
		/* The view takes what the judge does not write again: the
		 * start, case and pair lines give it the arms' times and the
		 * static differences; the verdicts come from the judge. */
		if (type && (!strcmp(type, "start") || !strcmp(type, "case") || !strcmp(type, "pair"))) {
			view_clean(line);
			view_job_take(view, line, NULL, 0);
		}
		if (type && !strcmp(type, "session_time") && timesplit_take_line(split, line) < 0) {
			fprintf(stderr, "%s: '%s' line %ld: session_time line's time_s must hold "
				"finite numbers >= 0\n", prog, path, lineno);
			json_decref(line);
			goto out;
		}
		json_decref(line);
	}
	if (ferror(in)) {
		fprintf(stderr, "%s: cannot read '%s': %s\n", prog, path, strerror(errno));
		goto out;
	}
	if (j->ncases == 0) {
		fprintf(stderr, "%s: '%s' holds no case or pair lines\n", prog, path);
		goto out;
	}
	rc = 0;
out:
	free(buf);
	return rc;
}

int judge_cmd_main(const char *prog, int argc, char **argv)
{
	struct judge_args a = {
		.alpha = -1, .margin = -1,
		.gate_slower = -1, .gate_faster = -1, .undecided = -1,
		.table = -1,
	};
	struct stats_settings run_settings, s;
	const char *path = "-";
	FILE *in = stdin;
	struct judge j;
	struct timesplit split;
	bool not_timed;
	int status;
	struct view_job view;
	char *res = NULL;
	size_t reslen = 0;
	FILE *resf;

	status = args_read(prog, argc, argv, &a, &in, &path);
	if (status >= 0)
		return status;
	status = QUAL_EXIT_USAGE;
	stats_settings_init(&run_settings);
	view_job_init(&view, NULL);
	judge_init(&j);
	timesplit_init(&split);
	j.on_verdict = add_session_split;
	j.on_verdict_ctx = &split;
	if (read_input(prog, path, in, &j, &run_settings, &view, &split) < 0)
		goto out;
	s = run_settings;
	if (a.alpha >= 0)
		s.alpha = a.alpha;
	if (a.margin >= 0)
		s.margin = a.margin;
	if (a.gate_slower >= 0)
		s.gate_slower = (enum gate_rule)a.gate_slower;
	if (a.gate_faster >= 0)
		s.gate_faster = (enum gate_rule)a.gate_faster;
	if (a.undecided >= 0)
		s.undecided = (enum gate_undecided)a.undecided;
	if (report_open(prog, &a.rep) < 0)
		goto out;
	resf = open_memstream(&res, &reslen);
	if (!resf) {
		fprintf(stderr, "%s: out of memory\n", prog);
		goto out;
	}
	status = judge_exit_status(judge_finish(&j, &s, resf, &not_timed));
	fclose(resf);
	if (write_outputs(prog, res, reslen, &view, a.table, &a.rep) < 0)
		status = report_status(status);
	if (j.no_valid_pair)
		fprintf(stderr, "%s: '%s': no valid pair: every timed pair has a timing that is "
			"not finite and positive, so nothing was measured\n", prog, path);
out:
	report_abandon(&a.rep);
	free(res);
	view_job_release(&view);
	judge_release(&j);
	if (in != stdin)
		fclose(in);
	return status;
}
