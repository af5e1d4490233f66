/* Confinement (common/confine.c): with QUAL_CONFINE=1, no core dumps, at
 * most QUAL_CONFINE_NOFILE open files, and (where the kernel allows: as
 * root, as ctest runs here) a network namespace of its own, in which only
 * the loopback interface exists; without the variable, nothing changes. A
 * non-dumpable process cannot be reached (ptrace, pidfd_getfd, /proc/PID/fd)
 * by a child of its that entered a user namespace of its own, even as root.
 * Each test runs in a child process: confinement cannot be undone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/unit/test_main.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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

/* In a child of a non-dumpable process, after qual_confine_userns(): each
 * way to its parent's stdout fails with EPERM or EACCES. Exit status 0, or
 * which attempt got through (or failed otherwise). */
static int reach_parent(void)
{
	pid_t parent = getppid();
	char path[64];
	int pidfd, fd;

	if (!qual_confine_userns("test_confine"))
		return 30;
	if (ptrace(PTRACE_ATTACH, parent, NULL, NULL) == 0 || errno != EPERM)
		return 31;
	pidfd = (int)syscall(SYS_pidfd_open, parent, 0);
	if (pidfd < 0)
		return 32;
	fd = (int)syscall(SYS_pidfd_getfd, pidfd, 1, 0);
	if (fd >= 0 || errno != EPERM)
		return 33;
	close(pidfd);
	snprintf(path, sizeof path, "/proc/%ld/fd/1", (long)parent);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0 || (errno != EACCES && errno != EPERM))
		return 34;
	return 0;
}

static int nondumpable_parent(void)
{
	pid_t pid;
	int st;

	qual_confine_nondumpable("test_confine");
	if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
		return 40;
	pid = fork();
	if (pid == 0)
		_exit(reach_parent());
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return 41;
	return WEXITSTATUS(st);
}

static void test_userns(void **state)
{
	(void)state;
	/* Needs user namespaces, which this machine and CI allow (a kernel
	 * without them gets the warning and no protection: docs/service.md). */
	assert_int_equal(run_child(nondumpable_parent), 0);
}

/* The probe finds user namespaces here and leaves the environment alone;
 * after a parent found them refused ($QUAL_CONFINE_USERNS=0) neither the
 * probe nor qual_confine_userns() tries. */
static int probe_child(void)
{
	unsetenv(QUAL_CONFINE_USERNS_ENV);
	if (!qual_confine_userns_probe("test_confine") || getenv(QUAL_CONFINE_USERNS_ENV))
		return 50;
	setenv(QUAL_CONFINE_USERNS_ENV, "0", 1);
	if (qual_confine_userns_probe("test_confine") || qual_confine_userns("test_confine"))
		return 51;
	return 0;
}

static void test_userns_probe(void **state)
{
	(void)state;
	assert_int_equal(run_child(probe_child), 0);
}

/* Whether this kernel lets an unprivileged process have a user namespace:
 * user.max_user_namespaces above 0, and Debian's
 * kernel.unprivileged_userns_clone not 0 where it exists. */
static bool userns_unprivileged_allowed(void)
{
	static const char *const knobs[] = { "/proc/sys/user/max_user_namespaces",
					     "/proc/sys/kernel/unprivileged_userns_clone" };

	for (size_t i = 0; i < 2; i++) {
		FILE *f = fopen(knobs[i], "r");
		long v = 1;

		if (!f)
			continue;
		if (fscanf(f, "%ld", &v) != 1)
			v = 1;
		fclose(f);
		if (v <= 0)
			return false;
	}
	return true;
}

/* Becomes nobody, as a compile child or a quald of its own user is: its
 * only group nogroup. 0 or an exit status. */
static int become_nobody(void)
{
	struct passwd *pw = getpwnam("nobody");

	if (!pw || setgroups(0, NULL) != 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) ||
	    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid))
		return 60;
	return 0;
}

/* As a user other than root, non-dumpable first thing as quald and
 * qual-run are: the probe still finds the namespace that qual-compile
 * (dumpable when it starts) will get, and leaves $QUAL_CONFINE_USERNS
 * alone. A probe that kept its parent's non-dumpable state could not write
 * its uid map (/proc/self belongs to root then) and said "refused". */
static int probe_as_user(void)
{
	int rc;

	unsetenv(QUAL_CONFINE_USERNS_ENV);
	if ((rc = become_nobody()))
		return rc;
	qual_confine_nondumpable("test_confine");
	if (!qual_confine_userns_probe("test_confine"))
		return 61;
	if (getenv(QUAL_CONFINE_USERNS_ENV))
		return 62;
	return 0;
}

static void test_userns_probe_user(void **state)
{
	(void)state;
	if (geteuid() != 0)
		qual_test_skip("needs root, to become another user");
	if (!userns_unprivileged_allowed())
		qual_test_skip("user namespaces are refused to unprivileged users here");
	assert_int_equal(run_child(probe_as_user), 0);
}

/* --compile-user's user: an unprivileged one (nobody here), never root, and
 * only when we are root (as ctest runs here). */
static void test_compile_user(void **state)
{
	struct qual_msg m;
	uid_t uid = 0;
	gid_t gid = 0;

	(void)state;
	if (geteuid() != 0) {
		assert_int_equal(qual_confine_user("nobody", &uid, &gid, &m), QUAL_EINVAL);
		assert_string_equal(m.text, "--compile-user 'nobody' needs root: only root may "
				    "run children as another user");
		return;
	}
	assert_int_equal(qual_confine_user("nobody", &uid, &gid, &m), 0);
	assert_true(uid != 0);
	assert_int_equal(qual_confine_user("root", &uid, &gid, &m), QUAL_EINVAL);
	assert_string_equal(m.text, "--compile-user 'root' is root: it must be an "
			    "unprivileged user");
	assert_int_equal(qual_confine_user("no-such-user-h2", &uid, &gid, &m), QUAL_EINVAL);
	assert_string_equal(m.text, "no user 'no-such-user-h2'");
}

QUAL_TESTS(
	cmocka_unit_test(test_confined),
	cmocka_unit_test(test_unconfined),
	cmocka_unit_test(test_userns),
	cmocka_unit_test(test_userns_probe),
	cmocka_unit_test(test_userns_probe_user),
	cmocka_unit_test(test_compile_user),
)
