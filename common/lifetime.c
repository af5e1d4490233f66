#include "common/lifetime.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

bool qual_die_with(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		return false;
	/* The parent may have died before prctl took effect. */
	return getppid() == parent;
}

bool qual_die_with_parent(void)
{
	const char *want = getenv(QUAL_PARENT_ENV);

	if (!want)
		return true;
	(void)qual_die_with((pid_t)atol(want));
	return getppid() == (pid_t)atol(want);
}

bool qual_fault_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
	       sig == SIGABRT || sig == SIGSYS || sig == SIGTRAP;
}

bool qual_signal_own(const siginfo_t *si)
{
	return si->si_code > 0 ||
	       ((si->si_code == SI_USER || si->si_code == SI_TKILL) && si->si_pid == getpid());
}
