/* qual-run: one qualification of a candidate compiler library against a
 * baseline, as JSON lines on stdout. See docs/output.md. */
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
#include "proto/strv.h"
#include "common/text.h"
#include "common/xalloc.h"
#include "common/fsutil.h"
#include "compile/rtc.h"
#include "fixtures/fixture.h"
#include "gpu/health.h"
#include "run/cache.h"
#include "run/qual_run_args.h"
#include "run/runner.h"
#include "stats/stats.h"

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
		 * would fail a correct candidate, and one arm's for a hang the
		 * other's compile of the case had too would hang on the order
		 * they ran in. */
		char text[1400];

		snprintf(text, sizeof text, "the job's time limit stopped qual-run with compiles "
			 "of both arms unfinished (which one hung cannot be told, and neither is "
			 "blamed): %s", all);
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
 * session runs it too, for its own children. A fault signal that another
 * process sent is no crash of ours: qual-run ends by SIGKILL instead, which
 * quald counts as no crash (docs/quald.md, "Quarantine"). */
static void on_fatal_signal(int sig, siginfo_t *si, void *uc)
{
	static const char sent[] = "qual-run: a fault signal sent by another process "
				   "(not a crash): ending\n";
	sig_atomic_t pub = term_pub;
	struct sigaction dfl;

	(void)uc;
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
	if (qual_fault_signal(sig) && si && !qual_signal_own(si)) {
		(void)!write(STDERR_FILENO, sent, sizeof sent - 1);
		sig = SIGKILL;
	}
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
	sa.sa_sigaction = on_fatal_signal;
	sa.sa_flags = SA_SIGINFO;
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

/* Execs qual-view beside us, which shows the lines of a run of ours (a
 * person's table or a report: client/run_view.h); returns only when it
 * could not, saying so. */
static void exec_view(char **argv)
{
	char *view = fs_beside_self("qual-view");

	if (view) {
		argv[0] = "qual-view";
		execv(view, argv);
	}
	fprintf(stderr, "qual-run: cannot run qual-view%s%s%s: JSON lines instead\n",
		view ? " (" : "", view ? view : "", view ? ")" : "");
	free(view);
}

/* What qual-run does once its options are read: print the table of a
 * job's settings, the cases or the GPU's health, or run the
 * qualification of the two libraries of argv[first..]. Returns the exit
 * status. */
static int run_args(struct qual_run_args *a, int argc, char **argv, int first)
{
	char cache_dir[PATH_MAX];

	if (a->settings_table) {
		json_t *t = settings_table_json();

		lines_emit(stdout, t);
		return QUAL_EXIT_PASS;
	}
	if (a->list) {
		/* After every --fixtures, wherever --list stood. */
		for (int i = 0; i < fixture_count(); i++)
			printf("%s\n", fixture_name(i));
		return QUAL_EXIT_PASS;
	}
	if (a->health) {
		if (argc - first != 0) {
			fprintf(stderr, "qual-run: --health takes no compiler libraries\n");
			return QUAL_EXIT_USAGE;
		}
		return run_health(a->cfg.device);
	}
	if (argc - first != 2) {
		fprintf(stderr, "qual-run: expected BASELINE_LIB and CANDIDATE_LIB, got %d "
			"argument%s\n", argc - first, argc - first == 1 ? "" : "s");
		qual_run_args_usage(stderr);
		return QUAL_EXIT_USAGE;
	}
	if (a->no_cache)
		a->cfg.cache_dir = NULL;
	else if (!a->cfg.cache_dir && cache_default_dir(cache_dir, sizeof cache_dir))
		a->cfg.cache_dir = cache_dir;
	a->cfg.baseline = argv[first];
	a->cfg.candidate = argv[first + 1];
	return runner_run(&a->cfg, stdout, stderr);
}

int main(int argc, char **argv)
{
	struct qual_run_args a;
	struct qual_msg msg;
	struct strv from_fd;
	bool unserved = false;
	int first, status;

	/* quald's workers: the command line on a descriptor (qual-run
	 * --args-fd N, alone), never in /proc/PID/cmdline. */
	strv_init(&from_fd);
	if (strv_args_from_fd(&argc, &argv, &from_fd, &msg) < 0) {
		fprintf(stderr, "qual-run: %s\n", msg.text);
		return QUAL_EXIT_USAGE;
	}

	/* A person's table (or a report) asked for: qual-view, beside us,
	 * shows the lines of a run of ours (client/run_view.h). */
	if (qual_run_args_want_view(argc, argv)) {
		exec_view(argv);
		unserved = true;
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
	qual_run_args_init(&a);
	a.reports_unserved = unserved;
	/* The time limit in a compile writes its line (on_fatal_signal). */
	a.cfg.on_compile = on_compile;
	first = qual_run_args_parse(&a, argc, argv, &msg);
	if (first < 0) {
		fprintf(stderr, "qual-run: %s\n", msg.text);
		if (a.line_code >= 0)
			lines_error(stdout, "setup", (enum lines_code)a.line_code, NULL, NULL,
				    msg.text);
		if (first == QUAL_ENOENT)
			qual_run_args_usage(stderr);
		status = QUAL_EXIT_USAGE;
	} else if (a.help) {
		qual_run_args_usage(stdout);
		status = QUAL_EXIT_PASS;
	} else {
		status = run_args(&a, argc, argv, first);
	}
	qual_run_args_release(&a);
	fixture_unload_all();
	strv_release(&from_fd);
	return status;
}
