/* Exit statuses of qual's programs (qual-run, qual-judge, and later qualctl),
 * one place for every program and for the CI scripts that gate on them. */
#ifndef QUAL_EXITCODE_H
#define QUAL_EXITCODE_H

#include <signal.h>

enum qual_exit {
	QUAL_EXIT_PASS = 0,       /* improvement, neutral, or compile-only with no failure */
	QUAL_EXIT_REGRESSION = 1, /* some case slower, nothing failed */
	QUAL_EXIT_FAIL = 2,       /* the candidate is wrong, did not compile, or faulted */
	QUAL_EXIT_ERROR = 3,      /* the baseline or the machine failed */
	QUAL_EXIT_USAGE = 4,      /* bad command line or bad input files */
	QUAL_EXIT_NO_DAEMON = 5,  /* qualctl: quald could not be reached (no socket, refused, timed out) */
	QUAL_EXIT_NOT_TIMED = 6,  /* qualctl submit: the job passed but nothing was timed, and
				   * it did not ask for --compile-only: a gate must not pass
				   * what was never measured */
};

/* The signal quald sends a worker (qual-run) whose job ran past its time
 * limit, where a cancel or a shutdown sends SIGTERM: only the time limit
 * makes qual-run name the compile in flight as timed out (and so blame its
 * arm); a cancel or a shutdown blames no one. SIGKILL follows either after
 * a grace. */
#define QUAL_SIGNAL_TIME_LIMIT SIGUSR1

#endif
