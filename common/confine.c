/* Confinement of quald's workers (confine.h). */
#include "common/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

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

void qual_confine_nondumpable(const char *prog)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		fprintf(stderr, "%s: cannot make this process non-dumpable: %s\n", prog,
			strerror(errno));
}

/* Writes text to /proc/self/NAME (uid_map, gid_map, setgroups). Returns 0 or
 * an errno value. */
static int proc_self_write(const char *name, const char *text)
{
	char path[64];
	size_t len = strlen(text);
	ssize_t n;
	int fd, e = 0;

	snprintf(path, sizeof path, "/proc/self/%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = write(fd, text, len);
	if (n < 0)
		e = errno;
	else if ((size_t)n != len)
		e = EIO;
	close(fd);
	return e;
}

bool qual_confine_userns(const char *prog)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char map[64];
	const char *step = "unshare(CLONE_NEWUSER)";
	int e = 0;

	if (unshare(CLONE_NEWUSER) != 0) {
		e = errno;
		goto refused;
	}
	/* One line each, our own ids: what a process may map without any
	 * capability in the parent namespace. setgroups must be denied first
	 * for the gid map to be written. */
	step = "its uid map";
	snprintf(map, sizeof map, "%lu %lu 1\n", (unsigned long)uid, (unsigned long)uid);
	if ((e = proc_self_write("uid_map", map)))
		goto refused;
	step = "setgroups";
	if ((e = proc_self_write("setgroups", "deny")))
		goto refused;
	step = "its gid map";
	snprintf(map, sizeof map, "%lu %lu 1\n", (unsigned long)gid, (unsigned long)gid);
	if ((e = proc_self_write("gid_map", map)))
		goto refused;
	return true;
refused:
	/* Inside a namespace whose maps could not be written the process would
	 * be nobody; that has not happened on any kernel we know (our own ids
	 * may always be mapped), and then file access fails loudly. */
	fprintf(stderr, "%s: no user namespace of its own (%s: %s): the compiler "
		"library runs with this process's privileges\n", prog, step, strerror(e));
	return false;
}

int qual_confine_user(const char *name, uid_t *uid, gid_t *gid, struct qual_msg *msg)
{
	struct passwd *pw;

	if (geteuid() != 0)
		return qual_fail(msg, QUAL_EINVAL, "--compile-user '%s' needs root: only root "
				 "may run children as another user", name);
	errno = 0;
	if (!(pw = getpwnam(name)))
		return qual_fail(msg, QUAL_EINVAL, "no user '%s'%s%s", name,
				 errno ? ": " : "", errno ? strerror(errno) : "");
	if (pw->pw_uid == 0)
		return qual_fail(msg, QUAL_EINVAL, "--compile-user '%s' is root: it must be "
				 "an unprivileged user", name);
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}
