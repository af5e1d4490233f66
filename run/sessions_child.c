/* Sessions (runner.h, "Sessions"): the child's side. A session is forked
 * from the supervisor (sessions.c) with its share of the blocks; it opens
 * the GPU, waits for its go, finds the compiled code in its work file when
 * it was started before the compiles, runs every case it was given
 * (runner_case.c) and writes its lines into its pipe, then, when asked to,
 * keeps its context idle until the supervisor lets it close. */
#include "run/runner_internal.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/child.h"
#include "common/exitcode.h"
#include "common/fsutil.h"
#include "common/lifetime.h"
#include "common/lines.h"
#include "proto/line.h"
#include "common/xalloc.h"

/* The work of a session started before the compiles, as the supervisor
 * writes it (write_work()): how many cases to run and their indices (of
 * the cases that compiled and apply), then run->cache
 * (runner__cache_pack()). Reads it from a->work_fd into a's cases (cases,
 * owned by the caller) and run->cache: 0, or -1. */
static int read_work(struct session_arg *a, int **cases)
{
	struct stat st;
	unsigned char *buf;
	const unsigned char *at, *end;
	size_t got = 0;
	int n, rc = -1;

	if (fstat(a->work_fd, &st) < 0 || st.st_size < (off_t)sizeof n)
		return -1;
	buf = xmalloc((size_t)st.st_size);
	while (got < (size_t)st.st_size) {
		ssize_t r = pread(a->work_fd, buf + got, (size_t)st.st_size - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			goto out;
		got += (size_t)r;
	}
	at = buf;
	end = buf + got;
	memcpy(&n, at, sizeof n);
	at += sizeof n;
	if (n < 0 || n > a->nsel || (size_t)(end - at) < (size_t)n * sizeof **cases)
		goto out;
	*cases = xcalloc((size_t)n + 1, sizeof **cases);
	memcpy(*cases, at, (size_t)n * sizeof **cases);
	at += (size_t)n * sizeof **cases;
	if (runner__cache_unpack(a->run, &at, end) < 0 || at != end) {
		free(*cases);
		*cases = NULL;
		goto out;
	}
	a->sel = *cases;
	a->nsel = n;
	rc = 0;
out:
	free(buf);
	return rc;
}

/* Waits for the supervisor's go: it closes this session's stdin once the
 * session before this one has ended, context and all, or, lingering, has
 * closed its output, its work over (a close, which
 * cannot raise SIGPIPE in the supervisor as a write to a dead session
 * would). A session not to run is killed instead; one whose supervisor
 * died (its end closed too) is killed with it (die_with_parent), and goes
 * no further should the close come first. */
static bool wait_for_go(pid_t supervisor)
{
	char b;
	ssize_t n;

	while ((n = read(STDIN_FILENO, &b, 1)) < 0 && errno == EINTR)
		;
	return n == 0 && getppid() == supervisor;
}

/* SIGTERM alone, a lingering session's request to close its context. */
static void close_request_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
}

/* Blocks the request in this thread, and so in every thread the GPU
 * runtime and NVML start from it later (they inherit the mask): only
 * linger()'s wait takes it, wherever the kernel would have delivered it. */
static void hold_close_request(void)
{
	sigset_t term;

	close_request_set(&term);
	pthread_sigmask(SIG_BLOCK, &term, NULL);
}

/* A lingering session's last line is out: its pipe is closed (the
 * supervisor's end of file, which it takes as the session's end) and it
 * waits, its context open and idle, until the supervisor asks it to close
 * (SIGTERM, held since the session started: hold_close_request()), kills
 * it, or dies. */
static void linger(FILE *out)
{
	sigset_t term;

	fclose(out);
	close_request_set(&term);
	while (sigwaitinfo(&term, NULL) < 0 && errno == EINTR)
		;
}

int runner__session_body(void *arg)
{
	struct session_arg *a = arg;
	struct run *run = a->run;
	struct qual_msg msg = {{0}};
	FILE *out = fdopen(runner__pipe_off_stdout(), "w");
	double t = child_now();
	pid_t supervisor = getppid();
	int *cases = NULL, rc;
	bool lingers;

	if (!out)
		return QUAL_EXIT_ERROR;
	if (a->linger)
		hold_close_request();  /* before any thread is started */
	for (int i = 0; i < a->ninherited_go; i++)
		close(a->inherited_go[i]);
	/* This session's own phases, for its session_time line. */
	timesplit_init(&run->split);
	run->out = out;
	run->session = a->session;
	run->settle = a->settle;
	run->block_lo = a->block_lo;
	run->block_hi = a->block_hi;
	rc = runner__open_gpu(run, &msg);
	if (rc == 0) {
		/* NVML started here too, off the path between sessions. */
		runner__clocks_open(run, gpu_get_info(run->gpu));
		timesplit_add(&run->split, TS_OPEN, t);
	}
	(void)fs_write_all(fileno(out), &(char){ SESSION_OPENED }, 1);
	if (!wait_for_go(supervisor)) {
		if (rc == 0) {
			runner__clocks_close(run);
			gpu_close(run->gpu);
		}
		return 0;
	}
	if (rc < 0) {
		t = child_now();
		memset(&msg, 0, sizeof msg);
		rc = runner__open_gpu(run, &msg);
		if (rc == 0)
			runner__clocks_open(run, gpu_get_info(run->gpu));
		timesplit_add(&run->split, TS_OPEN, t);
	}
	if (rc < 0) {
		char text[sizeof msg.text + 64];
		snprintf(text, sizeof text, "session %d cannot open the gpu: %s",
			 run->session + 1, msg.text);
		runner__emit(run, lines_error_new("setup", LINES_CODE_NO_DEVICE, NULL, NULL, text));
		fflush(out);
		return QUAL_EXIT_ERROR;
	}
	if (a->work_fd >= 0) {
		rc = read_work(a, &cases);
		close(a->work_fd);
		fixture_keep_seal();
		if (rc < 0) {
			char text[96];
			snprintf(text, sizeof text, "session %d cannot read the compiled code "
				 "it was handed", run->session + 1);
			runner__emit(run, lines_error_new("setup", LINES_CODE_INTERNAL, NULL, NULL,
							  text));
			fflush(out);
			return QUAL_EXIT_ERROR;
		}
	}
	for (int i = 0; i < a->nsel && !run->gpu_dead; i++)
		if (judge_case_get(&run->judge, fixture_name(a->sel[i]))->failure == JUDGE_OK)
			runner__run_case(run, a->sel[i]);
	runner__clocks_close(run);
	if (run->gpu_dead)
		runner__emit_stop(run);
	free(cases);
	lingers = a->linger && !run->hung && !run->gpu_dead;
	/* The last line: the supervisor starts the next session on it. */
	runner__emit(run, timesplit_session_line(&run->split, run->session + 1));
	fflush(out);
	if (lingers)
		linger(out);
	if (!run->hung)
		gpu_close(run->gpu);
	return 0;
}
