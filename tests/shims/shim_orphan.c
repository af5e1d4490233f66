/* shim_orphan: never returns from nvrtcCompileProgram, and first leaves
 * behind two processes that a process-group kill or PR_SET_PDEATHSIG does
 * not reach: a forked copy in the compiling process's group (no death signal:
 * it is not inherited across fork), and a grandchild that is the leader of a
 * session of its own (setsid() in a middle process that exits at once, the
 * daemon double fork), so that a test can check that every descendant of a
 * job dies with it however the job ends (tests/tools/orphans_test.py).
 *
 * When $QUAL_SHIM_PIDFILE is set, the three process ids are written there
 * before the compile hangs: "<compiling process> <forked copy> <session
 * leader>\n", complete when the line has its newline (written under a
 * temporary name and renamed). With $QUAL_SHIM_ORPHAN_END=fail the compile
 * fails at once instead of hanging (NVRTC_ERROR_COMPILATION), so that the
 * job ends by itself with what it left behind still running. */
#include "shim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void __attribute__((noreturn)) sleep_forever(void)
{
	for (;;)
		pause();
}

/* Forks a middle process that starts a new session, forks the leader that
 * stays, sends its pid up the pipe and exits. Returns the leader's pid, or
 * -1. */
static pid_t spawn_session_leader(void)
{
	int p[2];
	pid_t mid, leader = -1;

	if (pipe(p) < 0)
		return -1;
	mid = fork();
	if (mid == 0) {
		pid_t grand;

		close(p[0]);
		if (setsid() < 0)
			_exit(1);
		grand = fork();
		if (grand == 0) {
			close(p[1]);
			sleep_forever();
		}
		(void)!write(p[1], &grand, sizeof grand);
		_exit(0);
	}
	close(p[1]);
	if (mid > 0) {
		if (read(p[0], &leader, sizeof leader) != (ssize_t)sizeof leader)
			leader = -1;
		while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	close(p[0]);
	return leader;
}

static int orphan_compile(shim_program prog, int nopts, const char *const *opts)
{
	const char *pidfile = getenv("QUAL_SHIM_PIDFILE");
	pid_t copy, leader;

	(void)prog;
	(void)nopts;
	(void)opts;
	copy = fork();
	if (copy == 0)
		sleep_forever();
	leader = spawn_session_leader();
	if (pidfile && *pidfile) {
		char tmp[4096];
		FILE *f;

		snprintf(tmp, sizeof tmp, "%s.tmp", pidfile);
		f = fopen(tmp, "w");
		if (f) {
			fprintf(f, "%d %d %d\n", (int)getpid(), (int)copy, (int)leader);
			if (fclose(f) == 0)
				rename(tmp, pidfile);
		}
	}
	{
		const char *end = getenv("QUAL_SHIM_ORPHAN_END");

		if (end && !strcmp(end, "fail"))
			return SHIM_NVRTC_ERROR_COMPILATION;
	}
	sleep_forever();
}

const struct shim_ops shim_ops = { .compile = orphan_compile };
