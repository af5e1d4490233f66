/* shim_hang: never returns from nvrtcCompileProgram. Before it sleeps it
 * forks a second process (which sleeps too), so that a test can check that a
 * timeout kills the whole process group, not just the child it started. When
 * $QUAL_SHIM_PIDFILE is set, both process ids are written there first
 * ("<compiling process> <forked process>\n"). */
#include "shim.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void sleep_forever(void)
{
	for (;;)
		pause();
}

static int hang_compile(shim_program prog, int nopts, const char *const *opts)
{
	const char *pidfile = getenv("QUAL_SHIM_PIDFILE");
	pid_t other;

	(void)prog;
	(void)nopts;
	(void)opts;
	other = fork();
	if (other == 0)
		sleep_forever();
	if (pidfile && *pidfile) {
		FILE *f = fopen(pidfile, "w");
		if (f) {
			fprintf(f, "%d %d\n", (int)getpid(), (int)other);
			fclose(f);
		}
	}
	sleep_forever();
	return SHIM_NVRTC_SUCCESS;
}

const struct shim_ops shim_ops = { .compile = hang_compile };
