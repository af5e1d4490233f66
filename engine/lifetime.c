#include "lifetime.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

bool qual_die_with_parent(void)
{
	const char *want = getenv(QUAL_PARENT_ENV);

	if (!want)
		return true;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* The parent may have died before prctl took effect. */
	return getppid() == (pid_t)atol(want);
}
