/* Confinement of quald's workers (confine.h). */
#include "common/confine.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

bool qual_confine_worker(char *desc, size_t cap)
{
	const char *e = getenv(QUAL_CONFINE_ENV);
	struct rlimit rl;
	bool net = false;
	char why[128] = "";

	if (!e || strcmp(e, "1") != 0) {
		snprintf(desc, cap, "none");
		return false;
	}
	rl.rlim_cur = rl.rlim_max = 0;
	if (setrlimit(RLIMIT_CORE, &rl) != 0)
		fprintf(stderr, "qual-run: cannot turn off core dumps: %s\n", strerror(errno));
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > QUAL_CONFINE_NOFILE)
			rl.rlim_max = QUAL_CONFINE_NOFILE;
		if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > rl.rlim_max)
			rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			fprintf(stderr, "qual-run: cannot limit open files: %s\n", strerror(errno));
	}
	if (unshare(CLONE_NEWNET) == 0) {
		net = true;
	} else {
		snprintf(why, sizeof why, "%s", strerror(errno));
		fprintf(stderr, "qual-run: no network namespace for this worker (%s): "
			"running with the host's network\n", why);
	}
	snprintf(desc, cap, "%s; open files <= %d; no core dumps",
		 net ? "network namespace" : "host network", QUAL_CONFINE_NOFILE);
	return net;
}
