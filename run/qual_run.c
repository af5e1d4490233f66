/* qual-run: one qualification of a candidate compiler library against a
 * baseline, as JSON lines on stdout. See docs/output.md. */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/calib_record.h"
#include "common/child.h"
#include "common/confine.h"
#include "common/exitcode.h"
#include "common/lifetime.h"
#include "common/lines.h"
#include "proto/line.h"
#include "common/text.h"
#include "common/xalloc.h"
#include "common/fsutil.h"
#include "compile/rtc.h"
#include "fixtures/fixture.h"
#include "gpu/health.h"
#include "run/cache.h"
#include "run/runner.h"
#include "stats/stats.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: qual-run BASELINE_LIB CANDIDATE_LIB [options]\n"
		"       qual-run --health [--device N]\n"
		"\n"
		"Compiles every fixture case with both compiler libraries (nvrtc or hiprtc\n"
		"ABI), checks each arm against a float64 oracle, times the arms in paired\n"
		"alternating order on the GPU and prints JSON lines ending in a verdict.\n"
		"Without a GPU it compiles only and says that nothing was timed.\n"
		"\n"
		"  --pairs N            timed pairs per case before any sampling (default 60:\n"
		"                       15 blocks of 4; at least 30)\n"
		"  --pairs-per-block K  pairs per load of both arms' code (default 4); the\n"
		"                       blocks, each the median of its pairs, are the units\n"
		"                       of the test and the interval\n"
		"  --max-pairs N        sample until decided: the undecided cases get more\n"
		"                       blocks, up to N pairs per case (default 64 x --pairs;\n"
		"                       equal to --pairs: no sampling beyond them; needs\n"
		"                       --sessions 2 or more)\n"
		"  --max-seconds S      no round of sampling, nor a session of one, starts\n"
		"                       after S seconds of timing (default 20)\n"
		"  --gate-slower R      which slower cases make a regression: beyond (the\n"
		"                       interval wholly above 1 + margin; default) or\n"
		"                       significant (any slower case)\n"
		"  --gate-faster R      the same for an improvement (default beyond)\n"
		"  --undecided U        a case still undecided at the cap: pass (default) or\n"
		"                       regression\n"
		"  --sample-identical   sample and decide identical code by its timing like\n"
		"                       any other case (its verdict stays identical; the\n"
		"                       case_verdict's timing_verdict is the A/A outcome)\n"
		"  --alpha A            significance level after Holm (default 0.05)\n"
		"  --margin M           equivalence margin on the median ratio (default 0.01)\n"
		"  --case NAME          run only this case (repeatable); --list shows them\n"
		"  --baseline-opt OPT   extra compiler option for the baseline (repeatable)\n"
		"  --candidate-opt OPT  extra compiler option for the candidate (repeatable)\n"
		"  --compile-only       never use a GPU: static comparison only\n"
		"  --compile-only-because WHY  the same, saying WHY in the start line\n"
		"                       (quald's compile-only slots)\n"
		"  --calibration FILE   copy the device's calibration record (a JSON object,\n"
		"                       docs/output.md) into the verdict line\n"
		"  --no-calibration-because WHY  the verdict line's calibration is null,\n"
		"                       with WHY (quald: no calibration of the device yet)\n"
		"  --arch ARCH          target when nothing is timed (default sm_90 / gfx90a)\n"
		"  --mode M             processor mode, default, cu or wgp (default: default);\n"
		"                       cu / wgp add -mcumode / -mno-cumode to both arms on\n"
		"                       hiprtc targets with workgroup processors (gfx10+)\n"
		"  --device N           GPU ordinal (default 0)\n"
		"  --seed S             fixture input seed (default 0: the fixed default)\n"
		"  --block-seed S       seed of the blocks' load orders and buffer shifts\n"
		"                       (default: drawn per run; the start line says it)\n"
		"  --sessions K         processes that share the blocks, one after the other,\n"
		"                       each with its own GPU context (default 4; 1: none)\n"
		"  --flush-mib N        MiB overwritten before each timed replay, so that\n"
		"                       each starts with a cold cache (default 0: none;\n"
		"                       512 exceeds the last-level cache of current GPUs)\n"
		"  --one-load           time every pair under one load and judge each pair\n"
		"                       alone (the old way, to measure the instrument; its\n"
		"                       intervals do not cover load-to-load variation)\n"
		"  --baseline-sha256 H  the sha256 (64 lower-case hex digits) the baseline's\n"
		"                       bytes must have; another is refused before it is\n"
		"                       loaded (error); quald passes its submit's hash\n"
		"  --candidate-sha256 H the same for the candidate (another: fail)\n"
		"  --baseline-real-path P, --candidate-real-path P\n"
		"                       the file to read for the arm instead of resolving\n"
		"                       its path again (quald passes the path it checked);\n"
		"                       each library is read once into a sealed memfd,\n"
		"                       which every compile loads\n"
		"  --compile-timeout S  seconds per compile before it is killed (default 120)\n"
		"  --compile-jobs N     compiles at once, each its own child (default: the\n"
		"                       online CPUs, at most 16; 1: one after the other;\n"
		"                       16 at most)\n"
		"  --cache DIR          artifact cache: successful compiles kept by content\n"
		"                       (default $XDG_CACHE_HOME/qual/artifacts, else\n"
		"                       $HOME/.cache/qual/artifacts)\n"
		"  --no-cache           compile everything, read and write no cache\n"
		"  --cache-max-mib N    bound on the cache's size; the least recently used\n"
		"                       entries go beyond it (default 4096)\n"
		"  --compile-user NAME  run the compile children, which load the libraries,\n"
		"                       and the fixtures' oracle programs as this\n"
		"                       unprivileged user (qual-run must be root)\n"
		"  --hang-floor-ms MS   least time a graph may take before it counts as hung\n"
		"                       (default 2000)\n"
		"  --hang-factor F      a graph may take F x the baseline's time if that is\n"
		"                       longer than the floor (default 100)\n"
		"  --health             check the GPU (--device) with a tiny kernel of qual's\n"
		"                       own and print one JSON line; exit 0 when healthy, 3 not\n"
		"  --fixtures DIR       also run the cases of the fixture directory DIR\n"
		"                       (DIR/fixture.json, docs/fixtures.md; repeatable);\n"
		"                       a bad manifest is a usage error\n"
		"  --only-fixtures      run only the cases of the --fixtures directories\n"
		"  --oracle-timeout S   seconds a fixture's oracle program may run per case\n"
		"                       (default 300; a manifest may ask for less)\n"
		"  --probe-timeout S    seconds the device probe may take before it is\n"
		"                       killed and the run goes on without a GPU (default 60)\n"
		"  --list               print the case names and exit\n"
		"  --format F           table: plain lines as they come and the summary a\n"
		"                       person reads (time per arm, change in percent,\n"
		"                       geomean; colour unless NO_COLOR); json: the JSON\n"
		"                       lines. Default: table when stdout is a terminal\n"
		"  --json-out FILE      also write the JSON lines to FILE\n"
		"  --junit FILE         also write a JUnit XML report of the verdict\n"
		"  --markdown FILE      also write the summary as a markdown table\n"
		"\n"
		"exit status: 0 improvement, neutral or compile-only pass; 1 regression;\n"
		"2 fail (candidate wrong, did not compile, faulted or hung); 3 error\n"
		"(baseline or machine); 4 usage\n");
}

enum {
	OPT_PAIRS = 256, OPT_ALPHA, OPT_MARGIN, OPT_CASE, OPT_BOPT, OPT_COPT,
	OPT_COMPILE_ONLY, OPT_ARCH, OPT_DEVICE, OPT_SEED, OPT_TIMEOUT, OPT_LIST,
	OPT_HELP, OPT_CALIBRATION, OPT_NO_CALIBRATION, OPT_COMPILE_ONLY_BECAUSE, OPT_HANG_FLOOR, OPT_HANG_FACTOR, OPT_HEALTH, OPT_PER_BLOCK, OPT_BLOCK_SEED, OPT_ONE_LOAD, OPT_FLUSH, OPT_SESSIONS,
	OPT_COMPILE_USER, OPT_BSHA, OPT_CSHA, OPT_BREAL, OPT_CREAL,
	OPT_FIXTURES, OPT_ONLY_FIXTURES, OPT_ORACLE_TIMEOUT, OPT_COMPILE_JOBS,
	OPT_CACHE, OPT_NO_CACHE, OPT_CACHE_MAX, OPT_MODE, OPT_MAX_PAIRS, OPT_MAX_SECONDS,
	OPT_GATE_SLOWER, OPT_GATE_FASTER, OPT_UNDECIDED, OPT_SAMPLE_IDENTICAL,
	OPT_PROBE_TIMEOUT, OPT_FORMAT, OPT_REPORT,
};

/* A sha256 as quald stores it: 64 lower-case hex digits. */
static bool sha256_valid(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == 64;
}

/* An option that takes a number: its name, its range, and where it goes
 * (an int, a uint64_t, a size_t given in MiB, or a double). */
struct number_opt {
	int id;
	const char *name;
	enum { NUM_INT, NUM_U64, NUM_MIB, NUM_DOUBLE } kind;
	long lo, hi;        /* integers */
	double dlo, dhi;    /* NUM_DOUBLE */
	void *to;
};

/* Parses s into o's place, or says on stderr what is wrong with it. */
static int number_parse(const struct number_opt *o, const char *s)
{
	struct qual_msg msg;
	long l = 0;
	int rc;

	if (o->kind == NUM_DOUBLE)
		rc = text_parse_double(o->name, s, o->dlo, o->dhi, o->to, &msg);
	else
		rc = text_parse_long(o->name, s, o->lo, o->hi, &l, &msg);
	if (rc < 0) {
		fprintf(stderr, "qual-run: %s\n", msg.text);
		return rc;
	}
	if (o->kind == NUM_INT)
		*(int *)o->to = (int)l;
	else if (o->kind == NUM_U64)
		*(uint64_t *)o->to = (uint64_t)l;
	else if (o->kind == NUM_MIB)
		*(size_t *)o->to = (size_t)l << 20;
	return 0;
}

/* The compile in flight, as the error line (lines_error's, with its newline)
 * qual-run writes when quald stops it for the job time limit
 * (QUAL_SIGNAL_TIME_LIMIT, common/exitcode.h) before the compile ends: an
 * arm's compile that hangs within a longer --compile-timeout. The line names
 * the arm by code (compile_timeout), so quald judges a candidate's hang
 * fail, not error, from the line and not from prose. A cancel or a shutdown
 * (SIGTERM) writes nothing: they blame no one.
 *
 * Written whenever the first compile in flight changes (runner.h,
 * on_compile: from the compile threads, one call at a time), read by the
 * handler (on_fatal_signal), which may run on any thread. Two buffers: on_compile fills the one not published and then
 * publishes it (term_pub: its index and length in one sig_atomic_t), so a
 * handler that read the last one keeps reading bytes nobody rewrites until
 * the compile after next. */
#define TERM_LINE_MAX 2048
static char term_line[2][TERM_LINE_MAX];
static volatile sig_atomic_t term_pub;    /* index * TERM_LINE_MAX + length; 0: none */
static int term_status[2];                /* the exit status that goes with each */
static int term_next;                     /* on_compile's: the buffer to fill next */

static void on_compile(const char *case_name, const char *arm, const char *all)
{
	char *buf = term_line[term_next];
	FILE *f;
	long n;

	term_pub = 0;
	if (!case_name)
		return;
	f = fmemopen(buf, TERM_LINE_MAX, "w");
	if (!f)
		return;
	if (arm) {
		lines_error(f, "compile", LINES_CODE_COMPILE_TIMEOUT, arm, case_name,
			    "the compile was still running when the job's time limit stopped "
			    "qual-run");
	} else {
		/* Neither arm's: blaming the candidate for the baseline's hang
		 * would fail a correct candidate. */
		char text[1400];

		snprintf(text, sizeof text, "compiles of both arms were still running when the "
			 "job's time limit stopped qual-run (which one hung cannot be told): %s",
			 all);
		lines_error(f, "compile", LINES_CODE_COMPILE_TIMEOUT, NULL, NULL, text);
	}
	n = ftell(f);
	fclose(f);
	if (n <= 0 || n >= TERM_LINE_MAX || buf[n - 1] != '\n')
		return; /* cut short: better no line than half of one */
	term_status[term_next] = arm && strcmp(arm, "candidate") == 0 ? QUAL_EXIT_FAIL :
				 QUAL_EXIT_ERROR;
	term_pub = (sig_atomic_t)(term_next * TERM_LINE_MAX + n);
	term_next = 1 - term_next;
}

/* Kills and reaps every process below this one: its children (sessions, a
 * compile child) with their process groups, and what they left behind,
 * which is adopted by this process (a subreaper); quald (a subreaper too)
 * takes over whatever outlasts CHILD_REAP_GRACE_S. Async-signal-safe. */
static void end_below(void)
{
	(void)child_kill_orphans(NULL, 0, child_now() + CHILD_REAP_GRACE_S);
}

/* A signal that ends this process (a stop from quald or a terminal, or a
 * crash): everything below goes first, then the signal takes its default
 * course, so that whoever waits for qual-run sees what ended it. A forked
 * session runs it too, for its own children. */
static void on_fatal_signal(int sig)
{
	sig_atomic_t pub = term_pub;
	struct sigaction dfl;

	if (sig == QUAL_SIGNAL_TIME_LIMIT && pub > 0) {
		/* Stopped by the time limit in a compile: the line that says
		 * so, then the exit status that goes with it (term_line). */
		ssize_t w = write(STDOUT_FILENO, term_line[pub / TERM_LINE_MAX],
				  (size_t)(pub % TERM_LINE_MAX));
		/* Read before end_below(): once it kills the compiles, their
		 * threads go on and on_compile rewrites the buffers. */
		int status = term_status[pub / TERM_LINE_MAX];

		(void)w;
		end_below();
		_exit(status);
	}
	if (sig == QUAL_SIGNAL_TIME_LIMIT)
		sig = SIGTERM; /* outside a compile, the time limit is a stop */
	end_below();
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
	/* Blocked until this handler returns, then delivered (a fault
	 * signal also recurs at the faulting instruction). */
	raise(sig);
}

/* Every descendant dies with qual-run, whatever ends it (docs/quald.md,
 * "Process lifetime"): it adopts what its children leave behind, kills all
 * of it on exit() and on each signal that ends a process and can be caught.
 * SIGKILL cannot be: quald, a subreaper too, then adopts the rest. */
static void die_with_everything_below(void)
{
	static const int sigs[] = { SIGTERM, QUAL_SIGNAL_TIME_LIMIT, SIGINT, SIGHUP, SIGQUIT,
				    SIGPIPE, SIGXCPU,
				    SIGXFSZ, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT,
				    SIGSYS, SIGTRAP };
	struct qual_msg msg;
	struct sigaction sa;

	if (child_become_subreaper(&msg) < 0)
		fprintf(stderr, "qual-run: %s\n", msg.text);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_fatal_signal;
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction old;

		/* A signal ignored by whoever started us stays ignored. */
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
	}
	atexit(end_below);
}

/* The verdict line's calibration (runner_config.verdict_extra, new
 * reference in *out): the record in file (qual-run --calibration), checked
 * to have a record's shape (common/calib_record.h), or, with file NULL, null with
 * because. Fails naming the file and the field. */
static int calibration_extra(const char *file, const char *because, json_t **out,
			     struct qual_msg *msg)
{
	json_t *rec;
	int rc;

	*out = json_object();
	if (!file) {
		json_object_set_new(*out, "calibration", json_null());
		json_object_set_new(*out, "calibration_because", json_string(because));
		return 0;
	}
	if ((rc = calib_record_load(file, &rec, msg)))
		return rc;
	json_object_set_new(*out, "calibration", rec);
	return 0;
}

/* qual-run --health: one JSON line, exit 0 when healthy and 3 when not. After
 * a hang the process ends with _exit at once (gpu.h, Deadlines). */
static int run_health(int device)
{
	struct health_report r;
	int rc = health_check(device, HEALTH_LIMIT_MS, &r);
	int status = rc == 0 ? QUAL_EXIT_PASS : QUAL_EXIT_ERROR;

	lines_emit(stdout, health_json(&r));
	if (!r.ok)
		fprintf(stderr, "qual-run: gpu %d is not healthy: %s\n", device, r.message);
	if (r.hung) {
		fflush(NULL);
		_exit(status);
	}
	return status;
}

/* Whether a person's table or a report is asked for, so that qual-view
 * (client/run_view.h) is to show this run: --format table, --json-out,
 * --junit or --markdown, or stdout a terminal (TERM not dumb) without
 * --format json; never for --help, --list, --health, nor in qual-view's
 * own run of us (--format=json). */
/* Whether a is option name, alone or as NAME=VALUE. */
static bool is_opt(const char *a, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(a, name, n) && (a[n] == '\0' || a[n] == '=');
}

/* Whether a is a long option of opts that takes a value ("--case"). */
static bool option_takes_value(const char *a, const struct option *opts)
{
	for (; opts->name; opts++)
		if (a[0] == '-' && a[1] == '-' && !strcmp(a + 2, opts->name))
			return opts->has_arg == required_argument;
	return false;
}

static bool wants_view(int argc, char **argv, const struct option *opts)
{
	const char *term = getenv("TERM");
	bool json = false, asked = false;

	/* qual-view's own run of us: never again (its --format=json says
	 * so too; this holds whatever else the command line says). */
	if (getenv("QUAL_VIEW_CHILD"))
		return false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *next = i + 1 < argc ? argv[i + 1] : "";

		if (!strcmp(a, "--"))
			break; /* operands from here on */
		if (!strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "--list") ||
		    !strcmp(a, "--health"))
			return false;
		if (!strcmp(a, "--format=json") || (!strcmp(a, "--format") && !strcmp(next, "json")))
			json = true;
		if (!strcmp(a, "--format=table") || (!strcmp(a, "--format") && !strcmp(next, "table")) ||
		    is_opt(a, "--json-out") || is_opt(a, "--junit") || is_opt(a, "--markdown"))
			asked = true;
		/* An option's value is not an option. */
		if (!strchr(a, '=') && option_takes_value(a, opts))
			i++;
	}
	if (asked)
		return true;
	return !json && isatty(STDOUT_FILENO) && !(term && strcmp(term, "dumb") == 0);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"pairs", required_argument, NULL, OPT_PAIRS},
		{"pairs-per-block", required_argument, NULL, OPT_PER_BLOCK},
		{"alpha", required_argument, NULL, OPT_ALPHA},
		{"margin", required_argument, NULL, OPT_MARGIN},
		{"case", required_argument, NULL, OPT_CASE},
		{"baseline-opt", required_argument, NULL, OPT_BOPT},
		{"candidate-opt", required_argument, NULL, OPT_COPT},
		{"compile-only", no_argument, NULL, OPT_COMPILE_ONLY},
		{"compile-only-because", required_argument, NULL, OPT_COMPILE_ONLY_BECAUSE},
		{"calibration", required_argument, NULL, OPT_CALIBRATION},
		{"no-calibration-because", required_argument, NULL, OPT_NO_CALIBRATION},
		{"arch", required_argument, NULL, OPT_ARCH},
		{"mode", required_argument, NULL, OPT_MODE},
		{"device", required_argument, NULL, OPT_DEVICE},
		{"seed", required_argument, NULL, OPT_SEED},
		{"block-seed", required_argument, NULL, OPT_BLOCK_SEED},
		{"one-load", no_argument, NULL, OPT_ONE_LOAD},
		{"flush-mib", required_argument, NULL, OPT_FLUSH},
		{"sessions", required_argument, NULL, OPT_SESSIONS},
		{"max-pairs", required_argument, NULL, OPT_MAX_PAIRS},
		{"max-seconds", required_argument, NULL, OPT_MAX_SECONDS},
		{"gate-slower", required_argument, NULL, OPT_GATE_SLOWER},
		{"gate-faster", required_argument, NULL, OPT_GATE_FASTER},
		{"undecided", required_argument, NULL, OPT_UNDECIDED},
		{"sample-identical", no_argument, NULL, OPT_SAMPLE_IDENTICAL},
		{"compile-timeout", required_argument, NULL, OPT_TIMEOUT},
		{"compile-user", required_argument, NULL, OPT_COMPILE_USER},
		{"compile-jobs", required_argument, NULL, OPT_COMPILE_JOBS},
		{"cache", required_argument, NULL, OPT_CACHE},
		{"no-cache", no_argument, NULL, OPT_NO_CACHE},
		{"cache-max-mib", required_argument, NULL, OPT_CACHE_MAX},
		{"baseline-sha256", required_argument, NULL, OPT_BSHA},
		{"candidate-sha256", required_argument, NULL, OPT_CSHA},
		{"baseline-real-path", required_argument, NULL, OPT_BREAL},
		{"candidate-real-path", required_argument, NULL, OPT_CREAL},
		{"hang-floor-ms", required_argument, NULL, OPT_HANG_FLOOR},
		{"hang-factor", required_argument, NULL, OPT_HANG_FACTOR},
		{"health", no_argument, NULL, OPT_HEALTH},
		{"fixtures", required_argument, NULL, OPT_FIXTURES},
		{"only-fixtures", no_argument, NULL, OPT_ONLY_FIXTURES},
		{"oracle-timeout", required_argument, NULL, OPT_ORACLE_TIMEOUT},
		{"probe-timeout", required_argument, NULL, OPT_PROBE_TIMEOUT},
		{"list", no_argument, NULL, OPT_LIST},
		{"help", no_argument, NULL, OPT_HELP},
		/* What the renderer takes (run_view_main()): checked here,
		 * and the reports have nothing to report with --list,
		 * --health or --help. */
		{"format", required_argument, NULL, OPT_FORMAT},
		{"json-out", required_argument, NULL, OPT_REPORT},
		{"junit", required_argument, NULL, OPT_REPORT},
		{"markdown", required_argument, NULL, OPT_REPORT},
		{NULL, 0, NULL, 0},
	};
	struct runner_config cfg;
	double oracle_timeout = 300;
	/* 1 ms to a day for the hang floor: a floor under a millisecond would
	 * call a fixture's honest graph hung. */
	const struct number_opt numbers[] = {
		{OPT_PAIRS, "--pairs", NUM_INT, 1, 1000000, 0, 0, &cfg.pairs},
		{OPT_PER_BLOCK, "--pairs-per-block", NUM_INT, 1, 1000000, 0, 0, &cfg.pairs_per_block},
		{OPT_MAX_PAIRS, "--max-pairs", NUM_INT, RUNNER_MIN_PAIRS, 1000000, 0, 0,
		 &cfg.max_pairs},
		{OPT_MAX_SECONDS, "--max-seconds", NUM_DOUBLE, 0, 0, 0.001, 86400, &cfg.max_seconds},
		{OPT_ALPHA, "--alpha", NUM_DOUBLE, 0, 0, 1e-9, 0.5, &cfg.stats.alpha},
		{OPT_MARGIN, "--margin", NUM_DOUBLE, 0, 0, 0, 0.5, &cfg.stats.margin},
		{OPT_DEVICE, "--device", NUM_INT, 0, 1023, 0, 0, &cfg.device},
		{OPT_SEED, "--seed", NUM_U64, 0, 0x7fffffffL, 0, 0, &cfg.seed},
		{OPT_BLOCK_SEED, "--block-seed", NUM_U64, 1, LONG_MAX, 0, 0, &cfg.block_seed},
		{OPT_SESSIONS, "--sessions", NUM_INT, 1, 64, 0, 0, &cfg.sessions},
		{OPT_FLUSH, "--flush-mib", NUM_MIB, 0, 65536, 0, 0, &cfg.flush_bytes},
		{OPT_COMPILE_JOBS, "--compile-jobs", NUM_INT, 1, RUNNER_MAX_COMPILE_JOBS, 0, 0,
		 &cfg.compile_jobs},
		{OPT_CACHE_MAX, "--cache-max-mib", NUM_MIB, 1, 16L << 20, 0, 0, &cfg.cache_max_bytes},
		{OPT_TIMEOUT, "--compile-timeout", NUM_DOUBLE, 0, 0, 0.1, 86400,
		 &cfg.limits.timeout_s},
		{OPT_HANG_FLOOR, "--hang-floor-ms", NUM_DOUBLE, 0, 0, 1, 86400e3, &cfg.hang_floor_ms},
		{OPT_HANG_FACTOR, "--hang-factor", NUM_DOUBLE, 0, 0, 1, 1e6, &cfg.hang_factor},
		{OPT_ORACLE_TIMEOUT, "--oracle-timeout", NUM_DOUBLE, 0, 0, 0.1, 86400,
		 &oracle_timeout},
		{OPT_PROBE_TIMEOUT, "--probe-timeout", NUM_DOUBLE, 0, 0, 0.1, 86400,
		 &cfg.probe_timeout_s},
	};
	const char **cases = xcalloc((size_t)argc, sizeof *cases);
	const char **bopts = xcalloc((size_t)argc, sizeof *bopts);
	const char **copts = xcalloc((size_t)argc, sizeof *copts);
	int status = QUAL_EXIT_USAGE, opt;
	bool health = false, list = false, no_cache = false, reports_unserved = false;
	int optidx = 0;
	char cache_dir[PATH_MAX];

	/* A person's table (or a report) asked for: qual-view, beside us,
	 * shows the lines of a run of ours (client/run_view.h). */
	if (wants_view(argc, argv, longopts)) {
		char *view = fs_beside_self("qual-view");

		if (view) {
			argv[0] = "qual-view";
			execv(view, argv);
		}
		fprintf(stderr, "qual-run: cannot run qual-view%s%s%s: JSON lines instead\n",
			view ? " (" : "", view ? view : "", view ? ")" : "");
		free(view);
		reports_unserved = true;
	}
	/* Our stdout is the job's verdict: no compile child may take it
	 * (confine.h). */
	qual_confine_nondumpable("qual-run");
	qual_confine_userns_probe("qual-run");
	/* A worker of quald dies with the daemon. */
	if (!qual_die_with_parent())
		return QUAL_EXIT_ERROR;
	/* A worker of quald runs confined (confine.h), before any thread. */
	{
		char confined[128];
		qual_confine_worker(confined, sizeof confined);
	}
	die_with_everything_below();
	runner_config_init(&cfg);
	/* The time limit in a compile writes its line (on_fatal_signal). */
	cfg.on_compile = on_compile;
	cfg.cases = cases;
	cfg.baseline_opts = bopts;
	cfg.candidate_opts = copts;
	while ((opt = getopt_long(argc, argv, "h", longopts, &optidx)) != -1) {
		const struct number_opt *num = NULL;

		for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++)
			if (numbers[i].id == opt)
				num = &numbers[i];
		if (num) {
			if (number_parse(num, optarg) < 0)
				goto out;
			continue;
		}
		switch (opt) {
		case OPT_CASE:
			cases[cfg.ncases++] = optarg;
			break;
		case OPT_BOPT:
			bopts[cfg.nbaseline_opts++] = optarg;
			break;
		case OPT_COPT:
			copts[cfg.ncandidate_opts++] = optarg;
			break;
		case OPT_COMPILE_ONLY:
			cfg.compile_only = true;
			break;
		case OPT_COMPILE_ONLY_BECAUSE:
			cfg.compile_only = true;
			cfg.compile_only_because = optarg;
			break;
		case OPT_CALIBRATION:
		case OPT_NO_CALIBRATION: {
			struct qual_msg msg;

			json_decref(cfg.verdict_extra);
			if (calibration_extra(opt == OPT_CALIBRATION ? optarg : NULL, optarg,
					      &cfg.verdict_extra, &msg) < 0) {
				fprintf(stderr, "qual-run: %s\n", msg.text);
				lines_error(stdout, "setup", LINES_CODE_USAGE, NULL, NULL, msg.text);
				goto out;
			}
			break;
		}
		case OPT_ARCH:
			cfg.arch = optarg;
			break;
		case OPT_MODE:
			if (rtc_mode_parse(optarg, &cfg.mode) < 0) {
				fprintf(stderr, "qual-run: --mode must be default, cu or wgp, "
					"got '%s'\n", optarg);
				goto out;
			}
			break;
		case OPT_GATE_SLOWER:
		case OPT_GATE_FASTER:
			if (gate_rule_parse(optarg, opt == OPT_GATE_SLOWER ?
						  &cfg.stats.gate_slower : &cfg.stats.gate_faster) < 0) {
				fprintf(stderr, "qual-run: --gate-%s must be beyond or significant, "
					"got '%s'\n", opt == OPT_GATE_SLOWER ? "slower" : "faster", /* vocab:key */
					optarg);
				goto out;
			}
			break;
		case OPT_SAMPLE_IDENTICAL:
			cfg.stats.sample_identical = true;
			break;
		case OPT_UNDECIDED:
			if (gate_undecided_parse(optarg, &cfg.stats.undecided) < 0) {
				fprintf(stderr, "qual-run: --undecided must be pass or regression, "
					"got '%s'\n", optarg);
				goto out;
			}
			break;
		case OPT_ONE_LOAD:
			cfg.one_load = true;
			break;
		case OPT_CACHE:
			cfg.cache_dir = optarg;
			break;
		case OPT_NO_CACHE:
			no_cache = true;
			break;
		case OPT_COMPILE_USER: {
			struct qual_msg msg;
			uid_t uid;
			gid_t gid;

			if (qual_confine_user(optarg, &uid, &gid, &msg) < 0) {
				fprintf(stderr, "qual-run: %s\n", msg.text);
				lines_error(stdout, "setup", LINES_CODE_USAGE, NULL, NULL, msg.text);
				goto out;
			}
			rtc_set_compile_user(true, uid, gid);
			fixture_set_oracle_user(true, uid, gid);
			break;
		}
		case OPT_BSHA:
		case OPT_CSHA:
			if (!sha256_valid(optarg)) {
				fprintf(stderr, "qual-run: --%s-sha256 must be 64 lower-case hex "
					"digits, got '%s'\n", opt == OPT_BSHA ? "baseline" :
					"candidate", optarg);
				goto out;
			}
			cfg.sha256[opt == OPT_CSHA] = optarg;
			break;
		case OPT_BREAL:
		case OPT_CREAL:
			if (optarg[0] != '/') {
				fprintf(stderr, "qual-run: --%s-real-path must be an absolute "
					"path, got '%s'\n", opt == OPT_BREAL ? "baseline" :
					"candidate", optarg);
				goto out;
			}
			cfg.real_path[opt == OPT_CREAL] = optarg;
			break;
		case OPT_FIXTURES: {
			/* Loaded here, so that --list and --case see its cases. */
			struct qual_msg msg;

			if (fixture_load_dir(optarg, &msg) < 0) {
				fprintf(stderr, "qual-run: %s\n", msg.text);
				lines_error(stdout, "setup", LINES_CODE_BAD_FIXTURE, NULL, NULL,
					    msg.text);
				goto out;
			}
			break;
		}
		case OPT_ONLY_FIXTURES:
			cfg.only_fixtures = true;
			break;
		case OPT_HEALTH:
			health = true;
			break;
		case OPT_LIST:
			list = true;
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "table") != 0 && strcmp(optarg, "json") != 0) {
				fprintf(stderr, "qual-run: --format must be table or json, got '%s'\n",
					optarg);
				goto out;
			}
			/* Here only when qual-view did not take it: spelt
			 * short, or qual-view could not run. */
			if (!strcmp(optarg, "table") && !getenv("QUAL_VIEW_CHILD")) {
				fprintf(stderr, "qual-run: --format table %s\n", reports_unserved ?
					"needs qual-view, which could not run" :
					"must be written out in full (--format table)");
				goto out;
			}
			break;
		case OPT_REPORT:
			/* The same: a report qual-view did not take is refused,
			 * never silently left out. */
			fprintf(stderr, "qual-run: --%s %s\n", longopts[optidx].name,
				reports_unserved ? "needs qual-view, which could not run" :
				"is not taken with --help, --list or --health, and must be written "
				"out in full");
			goto out;
		case OPT_HELP:
		case 'h':
			usage(stdout);
			status = QUAL_EXIT_PASS;
			goto out;
		default:
			usage(stderr);
			goto out;
		}
	}
	fixture_set_oracle_timeout(oracle_timeout);
	if (cfg.only_fixtures && fixture_user_count() == 0) {
		fprintf(stderr, "qual-run: --only-fixtures without a --fixtures directory of "
			"cases\n");
		goto out;
	}
	if (list) {
		/* After every --fixtures, wherever --list stood. */
		for (int i = 0; i < fixture_count(); i++)
			printf("%s\n", fixture_name(i));
		status = QUAL_EXIT_PASS;
		goto out;
	}
	if (health) {
		if (argc - optind != 0) {
			fprintf(stderr, "qual-run: --health takes no compiler libraries\n");
			goto out;
		}
		status = run_health(cfg.device);
		goto out;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "qual-run: expected BASELINE_LIB and CANDIDATE_LIB, got %d argument%s\n",
			argc - optind, argc - optind == 1 ? "" : "s");
		usage(stderr);
		goto out;
	}
	{
		/* Fail fast on a block size that leaves too few blocks for the
		 * interval: the run could never say more than inconclusive. */
		int blocks = (cfg.pairs + cfg.pairs_per_block - 1) / cfg.pairs_per_block;
		if (!cfg.one_load && stats_median_ci_rank(blocks, cfg.stats.conf, NULL) == 0) {
			char text[200];
			snprintf(text, sizeof text, "%d pairs in blocks of %d make %d block%s, too "
				 "few for a %g interval of the median (at least 6)", cfg.pairs,
				 cfg.pairs_per_block, blocks, blocks == 1 ? "" : "s", cfg.stats.conf);
			fprintf(stderr, "qual-run: %s\n", text);
			lines_error(stdout, "setup", LINES_CODE_USAGE, NULL, NULL, text);
			goto out;
		}
	}
	if (no_cache)
		cfg.cache_dir = NULL;
	else if (!cfg.cache_dir && cache_default_dir(cache_dir, sizeof cache_dir))
		cfg.cache_dir = cache_dir;
	cfg.baseline = argv[optind];
	cfg.candidate = argv[optind + 1];
	status = runner_run(&cfg, stdout, stderr);
out:
	json_decref(cfg.verdict_extra);
	fixture_unload_all();
	free(cases);
	free(bopts);
	free(copts);
	return status;
}
