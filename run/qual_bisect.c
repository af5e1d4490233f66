/* qual-bisect: which builds of a series change a case (docs/bisect.md).
 *
 *   qual-bisect [options] BASELINE BUILD_1 ... BUILD_n [-- QUAL_RUN_OPTIONS]
 *
 * Builds are compiler libraries, oldest first (or --builds FILE, a path a
 * line). Each comparison of two builds is one qual-run (the one beside this
 * program, or --worker) of the one against the other, at the significance
 * the procedure gives it (stats/bisect.h); per case, the procedure finds
 * every change beyond the margin (timed) or every change of the code
 * (--compile-only, or no GPU: the static bisection). Runs are shared between
 * cases: a comparison already made is not made again. Prints a bisect_step
 * line after each run and one bisect line at the end (docs/output.md). Exit
 * status: 0 no change, 1 a change found, 3 a comparison failed (a build did
 * not compile, a run error), 4 a bad command line. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/child.h"
#include "common/exitcode.h"
#include "common/fsutil.h"
#include "common/lines.h"
#include "common/text.h"
#include "common/xalloc.h"
#include "proto/line.h"
#include "proto/strv.h"
#include "proto/vocab.h"
#include "stats/bisect.h"

/* A comparison made: qual-run of build a against build b at an effort, and
 * what it said of each case. */
struct cmp {
	int a, b, effort;
	json_t *cases;          /* case name -> outcome (an integer) */
};

struct prog {
	char **builds;
	int nbuilds;            /* the baseline and n builds */
	const char *worker;
	bool compile_only;
	bool by_run;            /* --run: one bisection of the run */
	double margin;
	long pairs;
	struct strv cases;      /* --case, in order */
	char **extra;           /* after --: qual-run's own options */
	struct cmp *made;
	int nmade, capmade;
	int runs;
	bool timed;             /* a run timed something */
};

/* What one qual-run said, read from its lines. */
struct reading {
	json_t *cases;          /* name -> outcome */
	bool timed;
};

/* A case that does not apply to the target: left out of the bisection. */
#define OUTCOME_NOT_APPLICABLE (-1)

static int outcome_of(json_t *cv, bool compile_only)
{
	enum case_verdict v = vocab_case_verdict_parse(json_string_value(
		json_object_get(cv, "verdict")));
	const char *arm = json_string_value(json_object_get(cv, "failed_arm"));

	if (v == VERDICT_NOT_APPLICABLE)
		return OUTCOME_NOT_APPLICABLE;
	/* The later build failed where the earlier did not (it no longer
	 * compiles, or computes wrongly): a change, and the one to find. */
	if (v == VERDICT_FAIL && arm && !strcmp(arm, "candidate"))
		return BISECT_DIFFERS;
	if (v == VERDICT_FAIL || v == CASE_VERDICT_UNKNOWN)
		return BISECT_BROKEN;
	if (compile_only || v == VERDICT_NOT_TIMED)
		return json_is_true(json_object_get(cv, "identical_code")) ? BISECT_SAME :
		       BISECT_DIFFERS;
	if (v == VERDICT_IDENTICAL)
		return BISECT_SAME;
	if (!json_is_true(json_object_get(cv, "decided")))
		return BISECT_UNDECIDED;
	return json_is_true(json_object_get(cv, "beyond_margin")) ? BISECT_DIFFERS : BISECT_SAME;
}

struct take_ctx {
	struct prog *p;
	struct reading *r;
};

static int take_line(void *ctx, const char *text, size_t len)
{
	struct take_ctx *t = ctx;
	struct line *l = NULL;

	if (line_parse(text, len, &l) < 0 || !l)
		return 0;
	if (l->type == LINES_CASE_VERDICT && l->info.case_name)
		json_object_set_new(t->r->cases, l->info.case_name,
				    json_integer(outcome_of(l->obj, t->p->compile_only)));
	else if (l->type == LINES_START)
		t->r->timed = json_is_true(json_object_get(l->obj, "timed"));
	line_unref(l);
	return 0;
}

static const char *const outcome_words[] = { "same", "differs", "undecided", "broken" };

/* Runs qual-run of build a against build b; its cases' outcomes into c. */
static void compare_run(struct prog *p, struct cmp *c, double alpha, struct child_exit *ex)
{
	struct strv argv;
	struct reading r = { json_object(), false };
	struct take_ctx t = { p, &r };
	struct lines_splitter split;
	struct qual_msg msg;
	struct child ch;
	char buf[65536];
	ssize_t n;

	strv_init(&argv);
	strv_push(&argv, p->worker);
	strv_push(&argv, p->builds[c->a]);
	strv_push(&argv, p->builds[c->b]);
	if (p->compile_only)
		strv_push(&argv, "--compile-only");
	strv_pushf(&argv, "--alpha=%.17g", alpha);
	strv_pushf(&argv, "--margin=%.17g", p->margin);
	strv_pushf(&argv, "--pairs=%ld", p->pairs * c->effort);
	for (char **s = p->cases.v; *s; s++)
		strv_pushf(&argv, "--case=%s", *s);
	if (p->extra)
		strv_pushv(&argv, (const char *const *)p->extra);
	memset(ex, 0, sizeof *ex);
	child_init(&ch);
	ch.argv = (const char *const *)argv.v;
	ch.out = CHILD_PIPE;
	ch.die_with_parent = true;
	if (child_start(&ch, &msg) < 0) {
		fprintf(stderr, "qual-bisect: %s\n", msg.text);
		ex->status = 3 << 8;
	} else {
		lines_splitter_init(&split, LINES_MAX);
		while ((n = read(ch.out_pipe, buf, sizeof buf)) != 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 || lines_splitter_feed(&split, buf, (size_t)n, take_line, &t) < 0)
				break;
		}
		(void)lines_splitter_finish(&split, take_line, &t);
		lines_splitter_release(&split);
		close(ch.out_pipe);
		(void)child_wait(&ch, 0, ex);
	}
	strv_release(&argv);
	p->runs++;
	p->timed |= r.timed;
	/* Its verdicts stand only when it ended as qual-run ends with them (0
	 * pass, 1 regression, 2 fail): else every case's comparison failed. */
	if (child_exit_signal(ex) || child_exit_code(ex) < 0 || child_exit_code(ex) > 2) {
		const char *name;
		json_t *v;
		char how[64];

		fprintf(stderr, "qual-bisect: qual-run of build %d against build %d %s: its "
			"comparisons count as failed\n", c->a, c->b,
			child_exit_text(ex, how, sizeof how));
		json_object_foreach(r.cases, name, v)
			json_object_set_new(r.cases, name, json_integer(BISECT_BROKEN));
	}
	c->cases = r.cases;
}

static int emit_step(const struct prog *p, const struct cmp *c, double alpha,
		     const struct child_exit *ex)
{
	json_t *line = lines_new("bisect_step"), *cases = json_object(), *v;
	const char *key;
	char how[64];

	json_object_foreach(c->cases, key, v)
		json_object_set_new(cases, key, json_string(json_integer_value(v) < 0 ?
			vocab_case_verdict_name(VERDICT_NOT_APPLICABLE) :
			outcome_words[json_integer_value(v)]));
	json_object_set_new(line, "a", json_integer(c->a));
	json_object_set_new(line, "b", json_integer(c->b));
	json_object_set_new(line, "baseline", text_json_str(p->builds[c->a]));
	json_object_set_new(line, "candidate", text_json_str(p->builds[c->b]));
	json_object_set_new(line, "effort", json_integer(c->effort));
	json_object_set_new(line, "alpha", json_real(alpha));
	json_object_set_new(line, "exit", json_string(child_exit_text(ex, how, sizeof how)));
	json_object_set_new(line, "cases", cases);
	return lines_emit(stdout, line) < 0 || fflush(stdout) ? QUAL_EIO : 0;
}

/* The procedure's comparison of one case: from a run already made, or a
 * new one (which says every selected case's outcome). name NULL: the run
 * (--run). */
struct case_ctx {
	struct prog *p;
	const char *name;
};

/* The run's outcome from its cases' (--run, docs/bisect.md): it differs
 * when any case differs (what the verdict says under the default gate: a
 * case beyond the margin either way, or the later build failing); else it
 * is broken when a case is, undecided when a case is, and the same when
 * every case is. */
static enum bisect_outcome run_outcome(json_t *cases)
{
	bool seen[BISECT_BROKEN + 1] = {false};
	const char *name;
	json_t *v;

	json_object_foreach(cases, name, v)
		if (json_integer_value(v) >= 0 && json_integer_value(v) <= BISECT_BROKEN)
			seen[json_integer_value(v)] = true;
	return seen[BISECT_DIFFERS] ? BISECT_DIFFERS : seen[BISECT_BROKEN] ? BISECT_BROKEN :
	       seen[BISECT_UNDECIDED] ? BISECT_UNDECIDED : BISECT_SAME;
}

static enum bisect_outcome compare(void *ctx, int a, int b, double alpha, int effort)
{
	struct case_ctx *cc = ctx;
	struct prog *p = cc->p;
	struct cmp *c = NULL;
	struct child_exit ex;
	json_t *o;

	/* A static comparison says the same at any effort. */
	for (int i = 0; i < p->nmade && !c; i++)
		if (p->made[i].a == a && p->made[i].b == b &&
		    (p->made[i].effort == effort || p->compile_only || !p->timed))
			c = &p->made[i];
	if (!c) {
		XGROW(p->made, p->nmade + 1, p->capmade);
		c = &p->made[p->nmade++];
		*c = (struct cmp){ a, b, effort, NULL };
		compare_run(p, c, alpha, &ex);
		(void)emit_step(p, c, alpha, &ex);
	}
	if (!cc->name)
		return run_outcome(c->cases);
	o = json_object_get(c->cases, cc->name);
	return o && json_integer_value(o) >= 0 ? (enum bisect_outcome)json_integer_value(o) :
	       BISECT_BROKEN;
}

static json_t *case_json(const struct prog *p, const char *name, const struct bisect_result *r)
{
	json_t *changes = json_array();

	for (int i = 0; i < r->nchanges; i++) {
		const struct bisect_change *c = &r->changes[i];

		json_array_append_new(changes, json_pack("{s:i,s:i,s:o,s:o,s:b}", "from", c->from,
			"to", c->to, "from_build", text_json_str(p->builds[c->from]),
			"to_build", text_json_str(p->builds[c->to]), "step", c->step));
	}
	return json_pack("{s:s,s:b,s:b,s:o,s:o,s:b,s:i}", "case", name, "ends_differ",
			 r->ends_differ, "uncertain", r->uncertain, "broken", r->broken ?
			 json_pack("[i,i]", r->broken_a, r->broken_b) : json_null(),
			 "changes", changes, "more_changes", r->more,
			 "comparisons", r->comparisons);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: qual-bisect [options] BASELINE BUILD_1 ... BUILD_n [-- QUAL_RUN_OPTIONS]\n"
		"       qual-bisect [options] --builds FILE [-- QUAL_RUN_OPTIONS]\n"
		"\n"
		"Finds, per case, each build of the series (oldest first) that changes the\n"
		"case beyond the margin (timed) or changes its code (--compile-only, or no\n"
		"GPU): confirms the last build differs from the baseline, halves the series\n"
		"with qual-run's sequential test at an error budget split over the\n"
		"comparisons, asks an undecided comparison again with twice the pairs, and\n"
		"checks the builds either side of each change (a step, or a diffuse change:\n"
		"each build within the margin of the one before, the span beyond it).\n"
		"Prints a bisect_step line per qual-run and a bisect line at the end.\n"
		"\n"
		"  --builds FILE        the series, a library path a line ('#' comments)\n"
		"  --case NAME          bisect this case (repeatable; default: every case)\n"
		"  --compile-only       a static bisection: the first build whose code differs\n"
		"  --run                bisect the run, not each case: a build changes the run\n"
		"                       when it changes any case\n"
		"  --alpha A            the bisection's false-change rate (default 0.05)\n"
		"  --margin M           equivalence margin on the ratio (default 0.01)\n"
		"  --pairs N            qual-run's pairs at the first effort (default 60)\n"
		"  --max-effort E       an undecided comparison is asked at 2x, 4x ... the\n"
		"                       pairs up to E x (default 4)\n"
		"  --worker PATH        the qual-run to use (default: the one beside this)\n"
		"  -h, --help           this text\n"
		"\n"
		"Exit status: 0 no change, 1 a change found, 3 a comparison failed, 4 usage.\n");
}

static int read_builds(const char *path, struct strv *out)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f) {
		fprintf(stderr, "qual-bisect: cannot read '%s': %s\n", path, strerror(errno));
		return QUAL_EXIT_USAGE;
	}
	while ((n = getline(&line, &cap, f)) >= 0) {
		char *s = line;

		while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t'))
			s[--n] = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s && *s != '#')
			strv_push(out, s);
	}
	free(line);
	fclose(f);
	return 0;
}

static int parse(int argc, char **argv, struct prog *p, struct strv *builds,
		 struct bisect_settings *s)
{
	static const struct option opts[] = {
		{"builds", required_argument, NULL, 'b'}, {"case", required_argument, NULL, 'c'},
		{"compile-only", no_argument, NULL, 'o'}, {"alpha", required_argument, NULL, 'a'},
		{"run", no_argument, NULL, 'r'},
		{"margin", required_argument, NULL, 'm'}, {"pairs", required_argument, NULL, 'p'},
		{"max-effort", required_argument, NULL, 'e'},
		{"worker", required_argument, NULL, 'w'}, {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct qual_msg m;
	long effort = 4;
	int opt, rc = 0;

	while (rc == 0 && (opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'b': rc = read_builds(optarg, builds); break;
		case 'c': strv_push(&p->cases, optarg); break;
		case 'o': p->compile_only = true; break;
		case 'r': p->by_run = true; break;
		case 'a': rc = text_parse_double("--alpha", optarg, 1e-9, 0.5, &s->alpha, &m); break;
		case 'm': rc = text_parse_double("--margin", optarg, 0, 0.5, &p->margin, &m); break;
		case 'p': rc = text_parse_long("--pairs", optarg, 30, 100000, &p->pairs, &m); break;
		case 'e': rc = text_parse_long("--max-effort", optarg, 1, 64, &effort, &m); break;
		case 'w': p->worker = optarg; break;
		case 'h': usage(stdout); return QUAL_EXIT_PASS;
		default: usage(stderr); return QUAL_EXIT_USAGE;
		}
		if (rc < 0) {
			fprintf(stderr, "qual-bisect: %s\n", m.text);
			return QUAL_EXIT_USAGE;
		}
		if (rc > 0)
			return rc;
	}
	s->max_effort = (int)effort;
	if (p->pairs * effort > 1000000) {
		fprintf(stderr, "qual-bisect: --pairs %ld x --max-effort %ld is over qual-run's "
			"1000000 pairs\n", p->pairs, effort);
		return QUAL_EXIT_USAGE;
	}
	for (; optind < argc; optind++)
		strv_push(builds, argv[optind]);
	return -1;
}

/* qual-run's options that the bisection sets itself may not follow --: they
 * would change the error budget or stop a retry from adding pairs. */
static int check_extra(char **extra)
{
	static const char *const own[] = { "--alpha", "--margin", "--pairs", "--max-pairs",
					   "--case", "--compile-only", NULL };

	for (; extra && *extra; extra++)
		for (const char *const *o = own; *o; o++) {
			size_t n = strlen(*o);

			if (!strncmp(*extra, *o, n) && ((*extra)[n] == '\0' || (*extra)[n] == '=')) {
				fprintf(stderr, "qual-bisect: %s after -- is qual-bisect's to set: give "
					"it before --\n", *o);
				return QUAL_EXIT_USAGE;
			}
		}
	return -1;
}

/* The series and the worker, checked: -1, or the exit status. */
static int check_builds(struct prog *p, struct strv *builds, const struct bisect_settings *s,
			char **beside)
{
	p->builds = builds->v;
	for (p->nbuilds = 0; p->builds[p->nbuilds]; p->nbuilds++)
		;
	if (p->nbuilds < 2) {
		fprintf(stderr, "qual-bisect: needs a baseline and at least one build, got %d "
			"(qual-bisect --help)\n", p->nbuilds);
		return QUAL_EXIT_USAGE;
	}
	if (bisect_alpha_step(p->nbuilds - 1, s) < 1e-9) {
		fprintf(stderr, "qual-bisect: --alpha %g over %d builds gives each comparison less "
			"than qual-run's smallest alpha, 1e-9\n", s->alpha, p->nbuilds - 1);
		return QUAL_EXIT_USAGE;
	}
	for (int i = 0; i < p->nbuilds; i++)
		if (access(p->builds[i], R_OK) != 0) {
			fprintf(stderr, "qual-bisect: cannot read build %d '%s': %s\n", i,
				p->builds[i], strerror(errno));
			return QUAL_EXIT_USAGE;
		}
	if (!p->worker)
		p->worker = *beside = fs_beside_self("qual-run");
	if (!p->worker) {
		fprintf(stderr, "qual-bisect: no qual-run beside this program: give --worker\n");
		return QUAL_EXIT_USAGE;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct prog p = { .margin = 0.01, .pairs = 60 };
	struct strv builds;
	struct bisect_settings s;
	struct bisect_result r;
	json_t *out_cases = json_array(), *not_applicable = json_array(), *line, *run_obj = NULL;
	char *beside = NULL;
	char **dashdash = NULL;
	int rc, status = QUAL_EXIT_PASS;
	double t0 = child_now();

	bisect_settings_init(&s);
	strv_init(&builds);
	strv_init(&p.cases);
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			dashdash = argv + i + 1;
			argc = i;
			break;
		}
	p.extra = dashdash;
	if ((rc = parse(argc, argv, &p, &builds, &s)) >= 0 || (rc = check_extra(p.extra)) >= 0 ||
	    (rc = check_builds(&p, &builds, &s, &beside)) >= 0) {
		status = rc;
		goto out;
	}
	{
		/* The ends first, for every case: the cases come from it. */
		struct case_ctx first = { &p, "" };
		const char *name;
		json_t *v, *names = json_array();

		(void)compare(&first, 0, p.nbuilds - 1, bisect_alpha_step(p.nbuilds - 1, &s), 1);
		json_object_foreach(p.made[0].cases, name, v)
			json_array_append_new(json_integer_value(v) < 0 ? not_applicable : names,
					      json_string(name));
		/* Per case, or (--run) once for the run over them all. */
		size_t subjects = p.by_run ? json_array_size(names) > 0 : json_array_size(names);

		for (size_t i = 0; i < subjects; i++) {
			struct case_ctx cc = { &p, p.by_run ? NULL :
					       json_string_value(json_array_get(names, i)) };

			bisect_run(p.nbuilds - 1, &s, compare, &cc, &r);
			if (p.by_run) {
				run_obj = case_json(&p, "", &r);
				json_object_del(run_obj, "case");
			} else {
				json_array_append_new(out_cases, case_json(&p, cc.name, &r));
			}
			if (r.broken)
				status = QUAL_EXIT_ERROR;
			else if (r.nchanges && status == QUAL_EXIT_PASS)
				status = QUAL_EXIT_REGRESSION;
		}
		if (json_array_size(names) == 0) {
			fprintf(stderr, "qual-bisect: the comparison of the baseline with the last "
				"build gave no case to bisect\n");
			status = QUAL_EXIT_ERROR;
		}
		json_decref(names);
	}
	line = lines_new("bisect");
	json_object_set_new(line, "mode", json_string(p.compile_only || !p.timed ? "static" :
							 "timed"));
	json_object_set_new(line, "builds", json_array());
	for (int i = 0; i < p.nbuilds; i++)
		json_array_append_new(json_object_get(line, "builds"), text_json_str(p.builds[i]));
	json_object_set_new(line, "alpha", json_real(s.alpha));
	json_object_set_new(line, "alpha_step", json_real(bisect_alpha_step(p.nbuilds - 1, &s)));
	json_object_set_new(line, "margin", json_real(p.margin));
	json_object_set_new(line, "runs", json_integer(p.runs));
	json_object_set_new(line, "wall_s", json_real(child_now() - t0));
	json_object_set_new(line, "by", json_string(p.by_run ? "run" : "case"));
	json_object_set_new(line, "cases", out_cases);
	json_object_set_new(line, "run", run_obj ? run_obj : json_null());
	run_obj = NULL;
	json_object_set_new(line, vocab_case_verdict_name(VERDICT_NOT_APPLICABLE), not_applicable);
	if (lines_emit(stdout, line) < 0 || fflush(stdout))
		status = QUAL_EXIT_ERROR;
	out_cases = not_applicable = NULL; /* the line's */
out:
	json_decref(out_cases);
	json_decref(not_applicable);
	json_decref(run_obj);
	for (int i = 0; i < p.nmade; i++)
		json_decref(p.made[i].cases);
	free(p.made);
	free(beside);
	strv_release(&builds);
	strv_release(&p.cases);
	return status;
}
