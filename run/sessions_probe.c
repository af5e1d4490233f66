/* Sessions (runner.h, "Sessions"): how a run starts its children, and the
 * first of them, the device probe. Every child of a run (the probe, each
 * session) is a fork of this process through common/child.h in fn mode,
 * killed if this process dies, its answer or its lines in a pipe. */
#include "run/runner_internal.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/child.h"
#include "common/exitcode.h"
#include "common/fsutil.h"

int runner__pipe_off_stdout(void)
{
	int fd = dup(STDOUT_FILENO);

	if (fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		_exit(QUAL_EXIT_ERROR);
	return fd;
}

int runner__start_fn(struct child *c, int (*fn)(void *arg), void *arg, bool gated,
		     struct qual_msg *msg)
{
	child_init(c);
	c->fn = fn;
	c->arg = arg;
	if (gated)
		c->in = CHILD_PIPE;
	c->out = CHILD_PIPE;
	c->die_with_parent = true;
	return child_start(c, msg);
}

const char *runner__describe_end(int wait_rc, const struct child_exit *ex, char *buf,
				 size_t len)
{
	if (wait_rc) {
		snprintf(buf, len, "unseen (cannot wait for it)");
		return buf;
	}
	return child_exit_text(ex, buf, len);
}

/* ---- the device probe ------------------------------------------------- */

struct probe_answer {
	int ok;
	struct gpu_info info;
	char text[1024];
	/* The clocks the sessions will find (runner__clocks_open). */
	char clocks_source[16];
	char clocks_why[1024];
};

/* The probe: what the device is (no context: gpu_describe) and whether its
 * clocks can be read. Its answer is what the compiles wait for; each session
 * then opens the device for itself. */
static int probe_body(void *arg)
{
	struct run *run = arg;
	struct probe_answer answer;
	struct qual_msg msg = {{0}};
	int fd = runner__pipe_off_stdout();

	memset(&answer, 0, sizeof answer);
	if (gpu_describe(run->cfg->device, &answer.info, &msg) < 0) {
		snprintf(answer.text, sizeof answer.text, "%s", msg.text);
	} else {
		answer.ok = 1;
		runner__clocks_open(run, &answer.info);
		runner__clocks_close(run);
		memcpy(answer.clocks_source, run->clocks_source, sizeof answer.clocks_source);
		memcpy(answer.clocks_why, run->clocks_why, sizeof answer.clocks_why);
	}
	return fs_write_all(fd, &answer, sizeof answer) < 0 ? QUAL_EXIT_ERROR : 0;
}

int runner__probe_start(struct run *run, char *why, size_t whylen)
{
	struct qual_msg msg = {{0}};

	if (runner__start_fn(&run->probe, probe_body, run, false, &msg) < 0) {
		snprintf(why, whylen, "%s", msg.text);
		return -1;
	}
	run->probing = true;
	run->probe_started_s = child_now();
	return 0;
}

static double probe_limit(const struct run *run)
{
	return run->cfg->probe_timeout_s > 0 ? run->cfg->probe_timeout_s :
					       RUNNER_PROBE_TIMEOUT_S;
}

/* Waits until fd can be read or the probe's time (from its start) is up:
 * false then. An answer that came in time is found however late this is
 * asked (the identify before it may take longer than the limit): fd is
 * always looked at once. */
static bool probe_answers(const struct run *run, int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	double left;
	int rc;

	do {
		left = run->probe_started_s + probe_limit(run) - child_now();
		rc = poll(&p, 1, left > 0 ? (int)(left * 1000) + 1 : 0);
		if (rc > 0 || (rc < 0 && errno != EINTR))
			return true;  /* a failed poll: the read that follows says it */
	} while (left > 0);
	return false;
}

/* Ends a probe that did not answer: killed, and reaped when it has ended
 * within CHILD_REAP_GRACE_S. A driver stuck in an uninterruptible call may
 * not end even then: it is left to qual-run's exit (child_kill_orphans())
 * rather than waited for; returns false then. */
bool runner__reap_by(struct child *c, double until)
{
	while (!child_exited(c)) {
		if (child_now() >= until)
			return false;
		usleep(2000);
	}
	return child_reap(c, NULL) == 0;
}

static bool probe_kill(struct run *run)
{
	child_kill(&run->probe, SIGKILL);
	return runner__reap_by(&run->probe, child_now() + CHILD_REAP_GRACE_S);
}

int runner__probe_finish(struct run *run, char *why, size_t whylen)
{
	struct probe_answer answer;
	struct child_exit ex;
	char end[96];
	ssize_t n;
	int rc;

	if (!run->probing) {
		snprintf(why, whylen, "the device probe was not started");
		return -1;
	}
	run->probing = false;
	if (!probe_answers(run, run->probe.out_pipe)) {
		close(run->probe.out_pipe);
		snprintf(why, whylen, "the process that finds the gpu (the driver's start, the "
			 "device's attributes and clocks) did not answer within %g s and was "
			 "killed%s", probe_limit(run), probe_kill(run) ? "" :
			 " (it had not ended a second later)");
		return -1;
	}
	n = fs_read_full(run->probe.out_pipe, &answer, sizeof answer);
	close(run->probe.out_pipe);
	rc = child_wait(&run->probe, 0, &ex);
	if (n != (ssize_t)sizeof answer) {
		snprintf(why, whylen, "the process that finds the gpu ended without an "
			 "answer: %s", runner__describe_end(rc, &ex, end, sizeof end));
		return -1;
	}
	if (!answer.ok) {
		snprintf(why, whylen, "%s", answer.text);
		return -1;
	}
	run->probed = answer.info;
	memcpy(run->clocks_source, answer.clocks_source, sizeof run->clocks_source);
	memcpy(run->clocks_why, answer.clocks_why, sizeof run->clocks_why);
	return 0;
}

void runner__probe_abandon(struct run *run)
{
	struct child_exit ex;

	if (!run->probing)
		return;
	run->probing = false;
	close(run->probe.out_pipe);
	child_kill(&run->probe, SIGKILL);
	(void)child_wait(&run->probe, 0, &ex);
}
