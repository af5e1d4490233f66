/* Confinement of quald's workers (confine.h). */
#include "common/confine.h"

#include "common/child.h"

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

/* Enters the namespace: 0, or an errno value with *step (may be NULL)
 * saying what failed. */
static int userns_enter(const char **step)
{
	const char *ignored;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char map[64];
	int e;

	if (!step)
		step = &ignored;
	*step = "unshare(CLONE_NEWUSER)";
	if (unshare(CLONE_NEWUSER) != 0)
		return errno;
	/* One line each, our own ids: what a process may map without any
	 * capability in the parent namespace. setgroups must be denied first
	 * for the gid map to be written. Inside a namespace whose maps could
	 * not be written the process would be nobody; that has not happened
	 * on any kernel we know (our own ids may always be mapped), and then
	 * file access fails loudly. */
	*step = "its uid map";
	snprintf(map, sizeof map, "%lu %lu 1\n", (unsigned long)uid, (unsigned long)uid);
	if ((e = proc_self_write("uid_map", map)))
		return e;
	*step = "setgroups";
	if ((e = proc_self_write("setgroups", "deny")))
		return e;
	*step = "its gid map";
	snprintf(map, sizeof map, "%lu %lu 1\n", (unsigned long)gid, (unsigned long)gid);
	return proc_self_write("gid_map", map);
}

static bool userns_known_off(void)
{
	const char *e = getenv(QUAL_CONFINE_USERNS_ENV);

	return e && !strcmp(e, "0");
}

bool qual_confine_userns(const char *prog)
{
	const char *step;
	int e;

	if (userns_known_off())
		return false;
	if (!(e = userns_enter(&step)))
		return true;
	fprintf(stderr, "%s: no user namespace of its own (%s: %s): the compiler "
		"library runs with this process's privileges\n", prog, step, strerror(e));
	return false;
}

/* The probe's child: its exit status is 0 or the errno value. It tries
 * what qual-compile does, in qual-compile's order: a forked copy of quald or
 * qual-run is non-dumpable as they are, where qual-compile starts dumpable
 * (execve resets it), and for a non-dumpable process /proc/self/uid_map
 * belongs to root, so a probe that kept it would fail where qual-compile
 * succeeds. It holds none of its parent's descriptors while it is dumpable
 * (closed first: stdin, stdout and stderr are /dev/null), and ends
 * non-dumpable before it exits. */
static int userns_try(void *arg)
{
	int e;

	(void)arg;
	closefrom(3);
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
		return errno & 0xff;
	e = userns_enter(NULL);
	qual_confine_nondumpable("the user namespace probe");
	if (!e && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
		e = EPERM;
	return e & 0xff;
}

bool qual_confine_userns_probe(const char *prog)
{
	struct child c;
	struct child_exit ex;
	struct qual_msg m;
	int code;

	if (userns_known_off())
		return false;
	child_init(&c);
	c.fn = userns_try;
	c.out = CHILD_NULL;
	c.err = CHILD_NULL;
	c.name = "the user namespace probe";
	if (child_start(&c, &m) < 0) {
		fprintf(stderr, "%s: %s\n", prog, m.text);
		return false;
	}
	if (child_wait(&c, 0, &ex) < 0)
		return false;
	if ((code = child_exit_code(&ex)) == 0)
		return true;
	fprintf(stderr, "%s: user namespaces are refused here (%s): compile children "
		"will run without one of their own (docs/service.md, \"Trust model\")\n",
		prog, code > 0 ? strerror(code) : "the probe died");
	setenv(QUAL_CONFINE_USERNS_ENV, "0", 1);
	return false;
}

int qual_confine_user(const char *name, uid_t *uid, gid_t *gid, struct qual_msg *msg)
{
	struct passwd *pw;

	if (geteuid() != 0)
		return qual_fail(msg, QUAL_EINVAL, "--compile-user '%s' needs root: only root "
				 "may run children as another user", name);
	errno = 0;
	if (!(pw = getpwnam(name))) {
		int e = errno;
		char *end;
		long v;

		/* A bare uid (quald's --compile-users: one per slot, no account
		 * needed) is its own gid too, so that no two of them share a
		 * group. */
		errno = 0;
		v = strtol(name, &end, 10);
		if (end != name && !*end && !errno && v > 0 && v < 0x7fffffff) {
			*uid = (uid_t)v;
			*gid = (gid_t)v;
			return 0;
		}
		return qual_fail(msg, QUAL_EINVAL, "no user '%s'%s%s", name,
				 e ? ": " : "", e ? strerror(e) : "");
	}
	if (pw->pw_uid == 0)
		return qual_fail(msg, QUAL_EINVAL, "--compile-user '%s' is root: it must be "
				 "an unprivileged user", name);
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}
