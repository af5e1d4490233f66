/* Worker confinement (engine/confine.c): with QUAL_CONFINE=1, no core dumps,
 * at most QUAL_CONFINE_NOFILE open files, and (where the kernel allows: as
 * root, as ctest runs here) a network namespace of its own, in which only
 * the loopback interface exists; without the variable, nothing changes.
 * Each test runs in a child process: confinement cannot be undone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/unit/test_main.h"

#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/confine.h"

/* Interfaces other than "lo" that this process sees. */
static int other_interfaces(void)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	int n = 0;

	if (!ifs)
		return -1;
	for (i = ifs; i->if_index; i++)
		n += strcmp(i->if_name, "lo") != 0;
	if_freenameindex(ifs);
	return n;
}

static int confined_child(void)
{
	char desc[128];
	struct rlimit rl;
	bool net;

	setenv(QUAL_CONFINE_ENV, "1", 1);
	net = qual_confine_worker(desc, sizeof desc);
	if (getrlimit(RLIMIT_CORE, &rl) || rl.rlim_cur != 0 || rl.rlim_max != 0)
		return 10;
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_max > QUAL_CONFINE_NOFILE ||
	    rl.rlim_cur > rl.rlim_max)
		return 11;
	if (!strstr(desc, "no core dumps"))
		return 12;
	if (net && (other_interfaces() != 0 || !strstr(desc, "network namespace")))
		return 13;
	if (!net && !strstr(desc, "host network"))
		return 14;
	/* As root a namespace must be had. */
	if (geteuid() == 0 && !net)
		return 15;
	return 0;
}

static int run_child(int (*fn)(void))
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(fn());
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_confined(void **state)
{
	(void)state;
	assert_int_equal(run_child(confined_child), 0);
}

static int unconfined_child(void)
{
	struct rlimit before, after;
	char desc[128];

	unsetenv(QUAL_CONFINE_ENV);
	getrlimit(RLIMIT_NOFILE, &before);
	if (qual_confine_worker(desc, sizeof desc))
		return 20;
	getrlimit(RLIMIT_NOFILE, &after);
	if (strcmp(desc, "none") || before.rlim_max != after.rlim_max)
		return 21;
	setenv(QUAL_CONFINE_ENV, "0", 1);
	if (qual_confine_worker(desc, sizeof desc) || strcmp(desc, "none"))
		return 22;
	return 0;
}

static void test_unconfined(void **state)
{
	(void)state;
	assert_int_equal(run_child(unconfined_child), 0);
}

QUAL_TESTS(
	cmocka_unit_test(test_confined),
	cmocka_unit_test(test_unconfined),
)
