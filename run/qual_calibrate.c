/* qual-calibrate: one calibration job (docs/quald.md, "Calibration"): runs
 * the worker (qual-run) RUNS times one after the other, each an A/A
 * qualification of one compiler library against itself, with
 * --sample-identical whenever the worker's --help lists it (with
 * byte-identical code, cases are then still sampled and judged). Of each
 * run's lines only what a reader of a calibration needs is passed on,
 * unchanged (pass_on: its start and case_verdict lines, its error lines up
 * to a bound), then one calibration_run line says how the run ended; the
 * case_verdict lines build the calibration record (stats/calib.h), and
 * one verdict line of its own, carrying the record as "calibration", ends
 * the output; when a run timed nothing, or the runs made no A/A comparison,
 * there is no record: the line is not_timed with calibration null and
 * calibration_because.
 *
 *   qual-calibrate --runs N --device-key KEY -- WORKER [WORKER'S ARGS...]
 *
 * It runs in the worker's session: a cancel or the job's time limit reaches
 * it and the run in progress with one signal (both then die by it). Exit
 * status: 0 when every run ended with a verdict other than error, else 3
 * (QUAL_EXIT_ERROR); 4 for a bad command line. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/child.h"
#include "common/exitcode.h"
#include "common/lifetime.h"
#include "common/lines.h"
#include "proto/line.h"
#include "proto/strv.h"
#include "common/text.h"
#include "common/xalloc.h"
#include "proto/vocab.h"
#include "stats/calib.h"

/* The worker's --help is a few KiB; it must answer within this. */
#define CALIBRATE_HELP_CAP (256 * 1024)
#define CALIBRATE_HELP_S 30.0

/* Error lines passed on per run (beyond them only those that say the GPU
 * is suspect, "gpu"): with the start and case_verdict lines and its
 * calibration_run line, what a run adds to the job's log is bounded by its
 * cases. */
#define CALIBRATE_MAX_ERRORS 32

struct run_state {
	struct calib *cal;
	enum run_verdict verdict;   /* its verdict line's; RUN_VERDICT_UNKNOWN:
				     * none (a word of no run verdict is
				     * RUN_ERROR) */
	char message[512];          /* its verdict line's message, clipped */
	bool timed;
	int errors;                 /* error lines seen */
	long errors_left_out;       /* of them, not passed on */
	long lines_left_out;        /* other lines not passed on (case, pair,
				     * block, session_time, ...) */
	int foreign;                /* lines that are not JSON objects seen */
};

/* A run's verdict as the worker may write it: the engine's own (not quald's
 * cancelled or interrupted); anything else is an error. */
static enum run_verdict known_verdict(enum run_verdict r)
{
	return r <= RUN_NOT_TIMED ? r : RUN_ERROR;
}

/* Whether the worker's --help lists --sample-identical. */
static bool worker_samples_identical(const char *worker)
{
	const char *argv[] = {worker, "--help", NULL};
	struct child ch;
	struct child_exit ex;
	struct qual_msg m;
	char *out = NULL;
	size_t len = 0;
	bool yes;

	child_init(&ch);
	ch.argv = argv;
	ch.out = CHILD_PIPE;
	ch.err = CHILD_NULL;
	ch.die_with_parent = true;
	if (child_start(&ch, &m) < 0)
		return false;
	(void)child_read_capped(ch.out_pipe, CALIBRATE_HELP_CAP,
				child_now() + CALIBRATE_HELP_S, &out, &len, NULL);
	close(ch.out_pipe);
	(void)child_wait(&ch, child_now() + CALIBRATE_HELP_S, &ex);
	yes = out && strstr(out, "--sample-identical") != NULL;
	free(out);
	return yes;
}

/* Whether a run's line is passed on: its start and case_verdict lines, its
 * first CALIBRATE_MAX_ERRORS error lines and every one that says the GPU is
 * suspect (quald's health check reads them); the rest is counted. */
static bool pass_on(struct run_state *rs, const struct line *l)
{
	const struct lines_info info = l->info;

	switch (info.type) {
	case LINES_START:
	case LINES_CASE_VERDICT:
		return true;
	case LINES_ERROR:
		if (++rs->errors <= CALIBRATE_MAX_ERRORS || info.gpu_faulted || info.gpu_hung)
			return true;
		rs->errors_left_out++;
		return false;
	default:
		rs->lines_left_out++;
		return false;
	}
}

/* One line of a run: counted into the record, and passed on when a reader
 * of a calibration needs it; its verdict line is kept for the run's
 * calibration_run line. */
static int take_line(void *ctx, const char *line, size_t len)
{
	struct run_state *rs = ctx;
	/* The one parse of the line (proto/line.h). One that is not a JSON
	 * object (a NUL byte included, as quald's relay rules) is neither
	 * counted nor taken for the verdict. */
	struct line *l = NULL;
	bool pass;

	(void)line_parse(line, len, &l);
	if (l && l->type == LINES_VERDICT) {
		const char *msg = json_string_value(json_object_get(l->obj, "message"));

		rs->verdict = known_verdict(l->verdict);
		snprintf(rs->message, sizeof rs->message, "%s", msg ? msg : "");
		rs->timed = json_is_true(json_object_get(l->obj, "timed"));
		line_unref(l);
		return 0;
	}
	if (l)
		(void)calib_take_line(rs->cal, l->obj);
	/* The first lines that are not JSON objects are passed on (quald
	 * refuses them, and says so); the rest are counted, so that a
	 * misbehaving worker's log stays bounded. */
	if (!l && ++rs->foreign > CALIBRATE_MAX_ERRORS) {
		rs->lines_left_out++;
		return 0;
	}
	pass = !l || pass_on(rs, l);
	line_unref(l);
	if (pass && (fwrite(line, 1, len, stdout) != len || putchar('\n') == EOF ||
		     fflush(stdout)))
		return QUAL_EIO;
	return 0;
}

/* The calibration_run line of run (from 1) of runs: how it ended (its
 * verdict, null without one), and what of its lines was not passed on. */
static int emit_run(const struct run_state *rs, int run, long runs,
		    const struct child_exit *ex)
{
	json_t *line = lines_new("calibration_run");
	char how[64];

	json_object_set_new(line, "run", json_integer(run));
	json_object_set_new(line, "runs", json_integer(runs));
	json_object_set_new(line, "verdict", rs->verdict != RUN_VERDICT_UNKNOWN ?
				  json_string(vocab_verdict_name(rs->verdict)) : json_null());
	json_object_set_new(line, "timed", json_boolean(rs->timed));
	if (rs->message[0])
		json_object_set_new(line, "message", text_json_str(rs->message));
	if (ex)
		json_object_set_new(line, "exit", json_string(child_exit_text(ex, how,
										sizeof how)));
	json_object_set_new(line, "errors_left_out", json_integer(rs->errors_left_out));
	json_object_set_new(line, "lines_left_out", json_integer(rs->lines_left_out));
	if (lines_emit(stdout, line) < 0 || fflush(stdout))
		return QUAL_EIO;
	return 0;
}

/* Runs the worker once; its lines go through take_line. Returns 0, or
 * QUAL_EIO with msg when it could not be started. */
static int run_once(const char *const *argv, const char *const *env,
		    struct run_state *rs, struct child_exit *ex, struct qual_msg *msg)
{
	struct lines_splitter split;
	struct child ch;
	char buf[65536];
	ssize_t n;
	int rc;

	const char *shown[] = { argv[0], "--args-fd", "0", NULL };
	int args;

	/* The worker's arguments on its stdin, not in its command line. */
	if ((args = strv_args_memfd(argv, msg)) < 0)
		return args;
	child_init(&ch);
	ch.argv = shown;
	ch.env = env;
	ch.in = args;
	ch.out = CHILD_PIPE;
	ch.die_with_parent = true;
	rc = child_start(&ch, msg);
	close(args);
	if (rc < 0)
		return rc;
	lines_splitter_init(&split, LINES_MAX);
	for (;;) {
		n = read(ch.out_pipe, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (lines_splitter_feed(&split, buf, (size_t)n, take_line, rs) < 0) {
			child_kill(&ch, SIGKILL);
			break;
		}
	}
	(void)lines_splitter_finish(&split, take_line, rs);
	lines_splitter_release(&split);
	close(ch.out_pipe);
	return child_wait(&ch, 0, ex) < 0 ? qual_fail(msg, QUAL_EIO, "cannot wait for "
						      "the worker") : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: qual-calibrate --runs N --device-key KEY -- WORKER [ARGS...]\n"
		   "       qual-calibrate --args-fd N (the same, NUL-terminated, on descriptor N)\n"
		   "Runs WORKER (qual-run) N times (1 to %d), each an A/A qualification,\n"
		   "passes on its lines but for each run's verdict line, and ends with a\n"
		   "verdict line carrying the calibration record of device KEY.\n",
		CALIB_MAX_RUNS);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"runs", required_argument, NULL, 'r'},
		{"device-key", required_argument, NULL, 'k'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *key = NULL;
	long runs = CALIB_DEFAULT_RUNS;
	char **wargv, **env, pid[64], stamp[32], text[1600];
	const char *add[] = {pid, NULL}, *drop[] = {QUAL_PARENT_ENV "=", NULL};
	struct calib cal;
	struct strv from_fd;
	struct qual_msg m;
	json_t *line, *rec = NULL;
	int opt, nw, k = 0, done = 0, status = QUAL_EXIT_PASS;
	int untimed = 0; /* the first run that timed nothing (from 1), or 0 */
	const char *failed = NULL;

	if (!qual_die_with_parent())
		return QUAL_EXIT_ERROR;
	/* quald: the command line on a descriptor (--args-fd N, alone), never
	 * in /proc/PID/cmdline; each run of the worker gets its own so. */
	strv_init(&from_fd);
	if (strv_args_from_fd(&argc, &argv, &from_fd, &m) < 0) {
		fprintf(stderr, "qual-calibrate: %s\n", m.text);
		return QUAL_EXIT_USAGE;
	}
	while ((opt = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			if (text_parse_long("--runs", optarg, 1, CALIB_MAX_RUNS, &runs, &m)) {
				fprintf(stderr, "qual-calibrate: %s\n", m.text);
				return QUAL_EXIT_USAGE;
			}
			break;
		case 'k':
			key = optarg;
			break;
		case 'h':
			usage(stdout);
			return QUAL_EXIT_PASS;
		default:
			usage(stderr);
			return QUAL_EXIT_USAGE;
		}
	}
	if (!key || optind >= argc) {
		usage(stderr);
		return QUAL_EXIT_USAGE;
	}
	nw = argc - optind;
	wargv = xcalloc((size_t)nw + 2, sizeof *wargv);
	wargv[k++] = argv[optind];
	if (worker_samples_identical(argv[optind]))
		wargv[k++] = "--sample-identical";
	for (int i = optind + 1; i < argc; i++)
		wargv[k++] = argv[i];
	wargv[k] = NULL;
	/* Each run dies with us, as we die with quald. */
	snprintf(pid, sizeof pid, QUAL_PARENT_ENV "=%ld", (long)getpid());
	env = child_env_with(drop, add);

	calib_init(&cal);
	for (done = 0; done < runs; done++) {
		struct run_state rs = {.cal = &cal, .verdict = RUN_VERDICT_UNKNOWN};
		struct child_exit ex;

		if (run_once((const char *const *)wargv, (const char *const *)env, &rs, &ex,
			     &m) < 0) {
			snprintf(text, sizeof text, "calibration stopped at run %d of %ld: %s",
				 done + 1, runs, m.text);
			failed = text;
			(void)emit_run(&rs, done + 1, runs, NULL);
			break;
		}
		(void)emit_run(&rs, done + 1, runs, &ex);
		if (rs.verdict == RUN_VERDICT_UNKNOWN || rs.verdict == RUN_ERROR ||
		    rs.verdict == RUN_FAIL) {
			char how[64];
			bool said = rs.verdict != RUN_VERDICT_UNKNOWN;

			snprintf(text, sizeof text, "calibration stopped at run %d of %ld: it "
				 "ended %s%s (%s)", done + 1, runs, said ? "with verdict " :
				 "without a verdict", said ? vocab_verdict_name(rs.verdict) : "",
				 child_exit_text(&ex, how, sizeof how));
			failed = text;
			break;
		}
		if (!rs.timed && !untimed)
			untimed = done + 1;
	}
	{
		time_t now = time(NULL);
		struct tm tm;

		strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	}
	if (!failed)
		rec = calib_record(&cal, key, stamp, (int)runs);
	line = lines_new("verdict");
	if (failed) {
		status = QUAL_EXIT_ERROR;
		json_object_set_new(line, "verdict", json_string(vocab_verdict_name(RUN_ERROR)));
		json_object_set_new(line, "timed", json_boolean(false));
		json_object_set_new(line, "message", json_string(failed));
		json_object_set_new(line, "calibration", json_null());
	} else if (untimed || json_integer_value(json_object_get(rec, "comparisons")) <= 0) {
		/* Only a record of timed A/A comparisons is one: nothing is
		 * stored, and the line says why. */
		if (untimed)
			snprintf(text, sizeof text, "calibration of %s: nothing to store: run %d "
				 "of %ld timed nothing", key, untimed, runs);
		else
			snprintf(text, sizeof text, "calibration of %s: nothing to store: the "
				 "runs made no A/A comparisons", key);
		json_decref(rec);
		rec = NULL;
		json_object_set_new(line, "verdict", json_string(vocab_verdict_name(RUN_NOT_TIMED)));
		json_object_set_new(line, "timed", json_boolean(false));
		json_object_set_new(line, "message", json_string(text));
		json_object_set_new(line, "calibration", json_null());
		json_object_set_new(line, "calibration_because", json_string(text));
	} else {
		json_object_set_new(line, "verdict", json_string(vocab_verdict_name(RUN_NEUTRAL)));
		json_object_set_new(line, "timed", json_boolean(true));
		snprintf(text, sizeof text, "calibration of %s: %ld run%s, %lld A/A "
			 "comparisons, %lld called slower or faster", key, runs,
			 runs == 1 ? "" : "s",
			 (long long)json_integer_value(json_object_get(rec, "comparisons")),
			 (long long)(json_integer_value(json_object_get(rec, "slower")) + /* vocab:key */
				     json_integer_value(json_object_get(rec, "faster")))); /* vocab:key */
		json_object_set_new(line, "message", json_string(text));
		if (cal.have_settings) {
			json_object_set_new(line, "alpha", json_real(cal.alpha));
			json_object_set_new(line, "margin", json_real(cal.margin));
		}
		json_object_set_new(line, "calibration", rec);
	}
	if (lines_emit(stdout, line) < 0 || fflush(stdout))
		status = QUAL_EXIT_ERROR;
	calib_release(&cal);
	child_env_free(env);
	free(wargv);
	strv_release(&from_fd);
	return status;
}
