/* The judge command (judge_cmd.h): reads stored qual lines, feeds the pair
 * and failure lines to the engine's judge, and lets it write the verdicts. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/exitcode.h"
#include "common/text.h"
#include "common/timesplit.h"
#include "stats/judge.h"
#include "client/judge_cmd.h"
#include "client/report.h"
#include "client/view.h"

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
		"\n"
		"  --alpha A        significance level of each case's test, 0 < A <= 0.5\n"
		"  --margin M       equivalence margin on the median ratio, 0 <= M <= 0.5\n"
		"  --gate-slower R  beyond or significant: which slower cases make a\n"
		"                   regression (docs/verdicts.md, The gate)\n"
		"  --gate-faster R  the same for an improvement\n"
		"  --undecided U    pass or regression: what a case undecided at the cap does\n"
		"  --format F       table: the summary a person reads (per case the verdict,\n"
		"                   code, time per arm, change with its interval, p, the\n"
		"                   detectable change; the geomean; colour on a terminal\n"
		"                   unless NO_COLOR is set); json: the case_verdict and\n"
		"                   verdict lines. Default: table when stdout is a terminal,\n"
		"                   json otherwise\n"
		"  --json           the same as --format json\n"
		"  --json-out FILE  also write the lines to FILE, whatever the format\n"
		"  --junit FILE     also write a JUnit XML report: a case that makes the run\n"
		"                   a regression, or fails, is a failed testcase\n"
		"  --markdown FILE  also write the summary as a markdown table\n"
		"\n"
		"Exit status: 0 improvement, neutral or not timed; 1 regression; 2 fail;\n"
		"3 error (also: no valid pair); 4 usage (bad options, unreadable file,\n"
		"not qual lines, settings out of range).\n",
		prog);
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

static int parse_unit(const char *prog, const char *opt, const char *s, double hi,
		      double *out)
{
	struct qual_msg m;

	if (text_parse_double(opt, s, 0, hi, out, &m) < 0) {
		fprintf(stderr, "%s: %s\n", prog, m.text);
		return -1;
	}
	return 0;
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

int judge_cmd_main(const char *prog, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"alpha", required_argument, NULL, 'a'},
		{"margin", required_argument, NULL, 'm'},
		{"gate-slower", required_argument, NULL, 'S'},
		{"gate-faster", required_argument, NULL, 'F'},
		{"undecided", required_argument, NULL, 'U'},
		{"format", required_argument, NULL, 'f'},
		{"json", no_argument, NULL, 'j'},
		{"json-out", required_argument, NULL, 'o'},
		{"junit", required_argument, NULL, 'J'},
		{"markdown", required_argument, NULL, 'M'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct stats_settings run_settings, s;
	double alpha = -1, margin = -1;
	/* The gate's rules given here, or -1: the file's. */
	int gate_slower = -1, gate_faster = -1, undecided = -1;
	enum gate_rule rule;
	enum gate_undecided und;
	const char *path = "-";
	FILE *in = stdin;
	struct judge j;
	struct timesplit split;
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	long lineno = 0;
	bool not_timed;
	int opt, status = QUAL_EXIT_USAGE;
	/* -1: table on a terminal, json otherwise; 0 json; 1 table. */
	int table = -1;
	struct report_files rep = {0};
	struct view_job view;
	char *res = NULL;
	size_t reslen = 0;
	FILE *resf;

	optind = 0; /* GNU: start afresh, whatever parsed argv before */
	opterr = 0; /* our own message, naming the option */
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			if (parse_unit(prog, "--alpha", optarg, 0.5, &alpha) < 0)
				return QUAL_EXIT_USAGE;
			if (alpha == 0) {
				/* As a file's alpha: a test at level 0 rejects nothing. */
				fprintf(stderr, "%s: --alpha must be a number in (0, 0.5], got '%s'\n",
					prog, optarg);
				return QUAL_EXIT_USAGE;
			}
			break;
		case 'm':
			if (parse_unit(prog, "--margin", optarg, 0.5, &margin) < 0)
				return QUAL_EXIT_USAGE;
			break;
		case 'S':
		case 'F':
			if (gate_rule_parse(optarg, &rule) < 0) {
				fprintf(stderr, "%s: --gate-%s must be beyond or significant, got '%s'\n",
					prog, opt == 'S' ? "slower" : "faster", optarg);
				return QUAL_EXIT_USAGE;
			}
			*(opt == 'S' ? &gate_slower : &gate_faster) = (int)rule;
			break;
		case 'U':
			if (gate_undecided_parse(optarg, &und) < 0) {
				fprintf(stderr, "%s: --undecided must be pass or regression, got '%s'\n",
					prog, optarg);
				return QUAL_EXIT_USAGE;
			}
			undecided = (int)und;
			break;
		case 'f':
			if (strcmp(optarg, "table") != 0 && strcmp(optarg, "json") != 0) {
				fprintf(stderr, "%s: --format must be table or json, got '%s'\n",
					prog, optarg);
				return QUAL_EXIT_USAGE;
			}
			table = strcmp(optarg, "table") == 0;
			break;
		case 'j':
			table = 0;
			break;
		case 'o':
			rep.json_out = optarg;
			break;
		case 'J':
			rep.junit = optarg;
			break;
		case 'M':
			rep.markdown = optarg;
			break;
		case 'h':
			usage(stdout, prog);
			return QUAL_EXIT_PASS;
		case ':':
			fprintf(stderr, "%s: option '%s' needs a value\n", prog, argv[optind - 1]);
			return QUAL_EXIT_USAGE;
		default:
			if (optopt)
				fprintf(stderr, "%s: unknown option '-%c' (see %s --help)\n", prog,
					optopt, prog);
			else
				fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", prog,
					argv[optind - 1], prog);
			return QUAL_EXIT_USAGE;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, "%s: one input file at most, got '%s' and '%s'\n", prog,
			argv[optind], argv[optind + 1]);
		return QUAL_EXIT_USAGE;
	}
	if (argc - optind == 1 && strcmp(argv[optind], "-") != 0) {
		path = argv[optind];
		in = fopen(path, "r");
		if (!in) {
			fprintf(stderr, "%s: cannot open '%s': %s\n", prog, path, strerror(errno));
			return QUAL_EXIT_USAGE;
		}
	}
	if (table < 0)
		table = isatty(STDOUT_FILENO);
	stats_settings_init(&run_settings);
	view_job_init(&view, NULL);
	judge_init(&j);
	timesplit_init(&split);
	j.on_verdict = add_session_split;
	j.on_verdict_ctx = &split;
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
		if (judge_take_line(&j, &run_settings, line, why, sizeof why) < 0) {
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
			view_job_take(&view, line, NULL, 0);
		}
		if (type && !strcmp(type, "session_time") && timesplit_take_line(&split, line) < 0) {
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
	if (j.ncases == 0) {
		fprintf(stderr, "%s: '%s' holds no case or pair lines\n", prog, path);
		goto out;
	}
	s = run_settings;
	if (alpha >= 0)
		s.alpha = alpha;
	if (margin >= 0)
		s.margin = margin;
	if (gate_slower >= 0)
		s.gate_slower = (enum gate_rule)gate_slower;
	if (gate_faster >= 0)
		s.gate_faster = (enum gate_rule)gate_faster;
	if (undecided >= 0)
		s.undecided = (enum gate_undecided)undecided;
	if (report_open(prog, &rep) < 0)
		goto out;
	resf = open_memstream(&res, &reslen);
	if (!resf) {
		fprintf(stderr, "%s: out of memory\n", prog);
		goto out;
	}
	status = judge_exit_status(judge_finish(&j, &s, resf, &not_timed));
	fclose(resf);
	if (write_outputs(prog, res, reslen, &view, table, &rep) < 0)
		status = report_status(status);
	if (j.no_valid_pair)
		fprintf(stderr, "%s: '%s': no valid pair: every timed pair has a timing that is "
			"not finite and positive, so nothing was measured\n", prog, path);
out:
	report_abandon(&rep);
	free(buf);
	free(res);
	view_job_release(&view);
	judge_release(&j);
	if (in != stdin)
		fclose(in);
	return status;
}
