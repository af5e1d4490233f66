/* shim_leaver: forwards every call, and when loaded by a submit check of
 * quald (its parent is quald: the identify child) leaves two processes in
 * that child's process group, as a candidate's constructor that double
 * forks would: a middle process forks them and exits at once, so both are
 * adopted by quald (a child subreaper) while still in the identify child's
 * group, which they do not lead. One exits after 0.3 s (so quald, seeing an
 * exited child no one watches, sweeps its orphans), the other sleeps. The
 * constructor then waits 2 s before the check goes on, so that the sweep
 * comes while the identify child still runs. A sweep that killed the
 * orphan's group would kill the identify child with it and the submit would
 * go on without its result; one that kills the orphan alone lets the check
 * finish. Having waited, the constructor appends "survived\n" to the file
 * $SHIM_LEAVER_RECORD, which tests/tools/leftover_test.py reads. Loaded
 * anywhere else, it does nothing. */
#include "shim.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const struct shim_ops shim_ops = { 0 };

static void pause_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) < 0)
		;
}

/* A process that keeps none of the identify child's descriptors (its report
 * pipe must reach end of file when the child exits), lives s seconds and
 * exits. */
static void leave(double s)
{
	if (fork() != 0)
		return;
	syscall(SYS_close_range, 0U, ~0U, 0U);
	pause_s(s);
	_exit(0);
}

__attribute__((constructor)) static void leaver(void)
{
	char path[64], comm[32] = "";
	pid_t mid;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%ld/comm", (long)getppid());
	if ((f = fopen(path, "r"))) {
		if (fgets(comm, sizeof comm, f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	if (strcmp(comm, "quald"))
		return;
	mid = fork();
	if (mid == 0) {
		leave(0.3);
		leave(60);
		_exit(0);
	}
	if (mid > 0)
		waitpid(mid, NULL, 0);
	pause_s(2);
	{
		const char *record = getenv("SHIM_LEAVER_RECORD");
		int fd = record ? open(record, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) :
			 -1;

		if (fd >= 0) {
			if (write(fd, "survived\n", 9) != 9)
				perror("shim_leaver: write");
			close(fd);
		}
	}
}
