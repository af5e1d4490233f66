/* Child processes (child.h). */
#include "common/child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/lifetime.h"
#include "common/xalloc.h"

extern char **environ;

void child_init(struct child *c)
{
	memset(c, 0, sizeof *c);
	c->in = CHILD_NULL;
	c->out = CHILD_INHERIT;
	c->err = CHILD_INHERIT;
	c->fd3 = -1;
	c->pid = -1;
	c->in_pipe = c->out_pipe = c->err_pipe = -1;
}

double child_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* In the child, before exec or fn: only async-signal-safe calls. Makes fd
 * target the child's stream as the caller asked: src is the descriptor it
 * comes from (the pipe's end, the caller's descriptor, or stdout for
 * CHILD_TO_OUT); lift_sources() has made sure that no earlier stream's dup2
 * closed it. */
static int stream_to(int asked, int target, int src)
{
	int fd, rc;

	switch (asked) {
	case CHILD_INHERIT:
		return 0;
	case CHILD_NULL:
		/* Its own descriptor goes once it is the target: neither fn nor
		 * the program run gets a stray /dev/null. */
		fd = open("/dev/null", (target == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
		if (fd < 0)
			return -1;
		if (fd == target)
			break;
		rc = dup2(fd, target) < 0 ? -1 : 0;
		close(fd);
		return rc;
	default:
		fd = src;
	}
	if (fd == target) {
		/* dup2 onto itself keeps close-on-exec: clear it. */
		int flags = fcntl(fd, F_GETFD);
		return flags < 0 ? -1 : fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC);
	}
	return dup2(fd, target) < 0 ? -1 : 0;
}

/* In the child, before the streams are set up. A caller with some of 0-2
 * closed has its own descriptors, our pipes and the exec report land there,
 * and then the dup2 of one stream can close the source of another (stdout
 * into a pipe whose write end is 1 while stderr's pipe end is 2 is fine;
 * stderr's pipe end on 1 is closed by stdout's dup2). So every source that
 * sits on 0-2 but not on its own target moves above 2 first (close-on-exec,
 * like every descriptor of ours), and so does the report: src[i] is then
 * stream i's source. The pipe ends and the report are ours, so their old
 * number is closed; a descriptor of the caller's is left as it is. */
static int lift_sources(const struct child *c, int ends[3][2], int src[3], int *report)
{
	const int asked[3] = { c->in, c->out, c->err };

	for (int i = 0; i < 3; i++) {
		int side = i == 0 ? 0 : 1; /* the child's end of stream i's pipe */
		int fd;

		src[i] = asked[i] == CHILD_PIPE ? ends[i][side] :
			 asked[i] == CHILD_TO_OUT ? 1 : asked[i] >= 0 ? asked[i] : -1;
		if (asked[i] == CHILD_TO_OUT || src[i] < 0 || src[i] > 2 || src[i] == i)
			continue;
		fd = fcntl(src[i], F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return -1;
		if (asked[i] == CHILD_PIPE) {
			close(src[i]);
			ends[i][side] = fd;
		}
		src[i] = fd;
	}
	if (*report >= 0 && *report <= 3) {
		int fd = fcntl(*report, F_DUPFD_CLOEXEC, 4);

		if (fd < 0)
			return -1;
		close(*report);
		*report = fd;
	}
	return 0;
}

/* In the child, once its streams are set: c->fd3 (the caller's, above 2:
 * child_start() refuses one below) becomes its descriptor 3, open across
 * exec. lift_sources() has moved the report off 3. */
static int fd3_to(const struct child *c)
{
	int flags;

	if (c->fd3 < 0)
		return 0;
	if (c->fd3 != 3)
		return dup2(c->fd3, 3) < 0 ? -1 : 0;
	flags = fcntl(3, F_GETFD);
	return flags < 0 ? -1 : fcntl(3, F_SETFD, flags & ~FD_CLOEXEC);
}

/* The forked child: never returns. Reports a failure before exec as an errno
 * value on report (close-on-exec, so a successful exec closes it empty).
 * Every signal is blocked on entry (child_start), so that no handler of the
 * caller's runs in the child: fn gets the caller's mask (old) back, a program
 * run gets default dispositions and then an empty mask. */
static void __attribute__((noreturn))
child_body(struct child *c, pid_t parent, const int pin[2], const int pout[2],
	   const int perr[2], int report, const sigset_t *old)
{
	int ends[3][2] = { { pin[0], pin[1] }, { pout[0], pout[1] }, { perr[0], perr[1] } };
	const int asked[3] = { c->in, c->out, c->err };
	int src[3], e;

	if (c->group == CHILD_GROUP_NEW && setpgid(0, 0) < 0)
		goto fail;
	if (c->group == CHILD_SESSION_NEW && setsid() < 0)
		goto fail;
	/* Groups first, while we may still change them. Raw system calls:
	 * glibc's wrappers signal every thread of the process, and the child
	 * of a process with threads (a GPU runtime's) has one, which the
	 * kernel's calls change alone. Before the parent-death signal, which
	 * a change of uid clears. */
	if (c->set_ids &&
	    (syscall(SYS_setgroups, 1, &c->gid) < 0 || syscall(SYS_setgid, c->gid) < 0 ||
	     syscall(SYS_setuid, c->uid) < 0))
		goto fail;
	/* qual_die_with() is two system calls: safe here. */
	if (c->die_with_parent && !qual_die_with(parent))
		_exit(127);
	if (lift_sources(c, ends, src, &report) < 0)
		goto fail;
	if (c->cwd && chdir(c->cwd) < 0)
		goto fail;
	for (int i = 0; i < 3; i++)
		if (stream_to(asked[i], i, src[i]) < 0)
			goto fail;
	if (fd3_to(c) < 0)
		goto fail;
	if (c->fn) {
		/* No exec closes them: the pipes' own descriptors go now, so that
		 * fn sees its streams and nothing else of them. One on 0-2 is a
		 * stream now, unless that stream is inherited: then it is ours
		 * on a number the caller had closed. A moved copy of a caller's
		 * descriptor goes too. */
		for (int i = 0; i < 3; i++) {
			for (int k = 0; k < 2; k++) {
				int fd = ends[i][k];

				if (fd > 2 || (fd >= 0 && asked[fd] == CHILD_INHERIT))
					close(fd);
			}
			if (asked[i] >= 0 && src[i] != asked[i])
				close(src[i]);
		}
		if (report >= 0)
			close(report);
		sigprocmask(SIG_SETMASK, old, NULL);
		_exit(c->fn(c->arg));
	}
	{
		struct sigaction sa;
		sigset_t none;

		memset(&sa, 0, sizeof sa);
		sa.sa_handler = SIG_DFL;
		for (int sig = 1; sig < NSIG; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				(void)sigaction(sig, &sa, NULL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
	}
	execve(c->argv[0], (char *const *)c->argv,
	       c->env ? (char *const *)c->env : environ);
fail:
	e = errno;
	if (report >= 0)
		(void)!write(report, &e, sizeof e);
	_exit(127);
}

int child_start(struct child *c, struct qual_msg *msg)
{
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
	int report[2] = { -1, -1 };
	char what[PATH_MAX + 64];
	pid_t parent = getpid(), pid;
	sigset_t all, old;
	int rc = 0, e = 0;
	ssize_t n;

	c->pid = -1;
	c->in_pipe = c->out_pipe = c->err_pipe = -1;
	if (c->name)
		snprintf(what, sizeof what, "%s", c->name);
	else if (c->argv && c->argv[0])
		snprintf(what, sizeof what, "'%s'", c->argv[0]);
	else
		snprintf(what, sizeof what, "a child process");
	if ((!c->argv || !c->argv[0]) && !c->fn)
		return qual_fail(msg, QUAL_EINVAL, "a child needs a program or a function");
	if (c->fd3 >= 0 && (c->fd3 <= 2 || c->fn))
		return qual_fail(msg, QUAL_EINVAL, "%s: a descriptor 3 is for a program, from "
				 "a descriptor above 2", what);
	if ((c->in == CHILD_PIPE && pipe2(pin, O_CLOEXEC) < 0) ||
	    (c->out == CHILD_PIPE && pipe2(pout, O_CLOEXEC) < 0) ||
	    (c->err == CHILD_PIPE && pipe2(perr, O_CLOEXEC) < 0) ||
	    pipe2(report, O_CLOEXEC) < 0) {
		rc = qual_fail(msg, QUAL_EIO, "cannot start %s: pipe: %s", what,
			       strerror(errno));
		goto fail;
	}
	/* Output the caller has buffered must not be written twice. */
	fflush(NULL);
	/* A signal that arrives between fork and exec must not run one of the
	 * caller's handlers in the child (a handler that writes to a loop's
	 * signal pipe would write to the caller's). */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid == 0) {
		close_fd(&report[0]);
		child_body(c, parent, pin, pout, perr, report[1], &old);
	}
	e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		rc = qual_fail(msg, QUAL_EIO, "cannot start %s: fork: %s", what,
			       strerror(e));
		goto fail;
	}
	e = 0;
	close_fd(&report[1]);
	while ((n = read(report[0], &e, sizeof e)) < 0 && errno == EINTR)
		;
	close_fd(&report[0]);
	if (n == (ssize_t)sizeof e) {
		/* It never ran: reap it here, the caller has nothing to wait for. */
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		rc = qual_fail(msg, e == ENOENT ? QUAL_ENOENT : QUAL_EIO,
			       "cannot start %s: %s", what, strerror(e));
		goto fail;
	}
	c->pid = pid;
	c->in_pipe = pin[1];
	c->out_pipe = pout[0];
	c->err_pipe = perr[0];
	close_fd(&pin[0]);
	close_fd(&pout[1]);
	close_fd(&perr[1]);
	return 0;
fail:
	close_fd(&pin[0]);
	close_fd(&pin[1]);
	close_fd(&pout[0]);
	close_fd(&pout[1]);
	close_fd(&perr[0]);
	close_fd(&perr[1]);
	close_fd(&report[0]);
	close_fd(&report[1]);
	return rc;
}

void child_kill(struct child *c, int sig)
{
	if (c->pid <= 0)
		return;
	if (c->group != CHILD_GROUP_SAME)
		kill(-c->pid, sig);
	else
		kill(c->pid, sig);
}

bool child_exited(struct child *c)
{
	siginfo_t si;

	if (c->pid <= 0)
		return false;
	memset(&si, 0, sizeof si);
	while (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		if (errno != EINTR)
			return true; /* no such child to wait for (ECHILD): it is
				      * gone, and child_reap() says so */
	return si.si_pid == c->pid;
}

int child_reap(struct child *c, struct child_exit *ex)
{
	int status = 0;

	if (c->pid <= 0)
		return QUAL_EINVAL;
	/* The leader has exited but is not reaped, so the group id is still
	 * its own: kill whatever it left running there, then reap it. */
	if (c->group != CHILD_GROUP_SAME)
		kill(-c->pid, SIGKILL);
	while (waitpid(c->pid, &status, 0) < 0) {
		if (errno != EINTR) {
			c->pid = -1;
			return QUAL_EIO;
		}
	}
	c->pid = -1;
	if (ex)
		ex->status = status;
	return 0;
}

/* First poll interval and its cap while waiting for a child: short at first
 * (a compile of a cached case ends within milliseconds), then backing off. */
#define CHILD_POLL_FIRST_NS 200000L
#define CHILD_POLL_MAX_NS 20000000L

int child_wait(struct child *c, double deadline, struct child_exit *ex)
{
	long step = CHILD_POLL_FIRST_NS;
	struct child_exit local;

	if (!ex)
		ex = &local;
	memset(ex, 0, sizeof *ex);
	if (c->pid <= 0)
		return QUAL_EINVAL;
	for (;;) {
		struct timespec ts = { 0, step };
		siginfo_t si;

		memset(&si, 0, sizeof si);
		if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
			if (errno == EINTR)
				continue;
			return QUAL_EIO;
		}
		if (si.si_pid == c->pid)
			break;
		if (deadline > 0 && child_now() >= deadline) {
			ex->timed_out = true;
			if (c->group != CHILD_GROUP_SAME)
				kill(-c->pid, SIGKILL);
			kill(c->pid, SIGKILL);
			deadline = 0;
			continue;
		}
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		step = step * 2 > CHILD_POLL_MAX_NS ? CHILD_POLL_MAX_NS : step * 2;
	}
	{
		bool timed_out = ex->timed_out;
		int rc = child_reap(c, ex);
		ex->timed_out = timed_out;
		return rc;
	}
}

int child_become_subreaper(struct qual_msg *msg)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot adopt orphaned processes "
				 "(PR_SET_CHILD_SUBREAPER): %s", strerror(errno));
	return 0;
}

/* The most children one pass of child_kill_orphans() waits for; more are
 * killed all the same and reaped by the next pass. On the stack: the scan
 * must not allocate (a signal handler calls it). */
#define CHILD_ORPHANS_BATCH 256

/* Parses the decimal number at *p (no sign), moving *p past it. */
static long parse_decimal(const char **p, const char *end)
{
	long v = 0;

	while (*p < end && **p >= '0' && **p <= '9')
		v = v * 10 + (*(*p)++ - '0');
	return v;
}

/* From /proc/<pid>/stat: its state letter, parent and process group. The
 * name in parentheses may hold anything, ')' too: the fields start after
 * the last ')'. False when it is gone or unreadable. */
static bool proc_stat_read(pid_t pid, char *state, pid_t *ppid, pid_t *pgrp)
{
	char path[32] = "/proc/", digits[16], buf[512];
	const char *p, *end;
	size_t k = 6, nd = 0;
	ssize_t n;
	int fd;

	do
		digits[nd++] = (char)('0' + pid % 10);
	while ((pid /= 10) > 0 && nd < sizeof digits);
	while (nd > 0)
		path[k++] = digits[--nd];
	memcpy(path + k, "/stat", sizeof "/stat");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while ((n = read(fd, buf, sizeof buf)) < 0 && errno == EINTR)
		;
	close(fd);
	if (n <= 0)
		return false;
	end = buf + n;
	p = memrchr(buf, ')', (size_t)n);
	/* ") S 123 456": the state, the parent, the group. */
	if (!p || end - p < 6)
		return false;
	p += 2;
	*state = *p++;
	if (p >= end || *p++ != ' ')
		return false;
	*ppid = (pid_t)parse_decimal(&p, end);
	if (p >= end || *p++ != ' ')
		return false;
	*pgrp = (pid_t)parse_decimal(&p, end);
	return true;
}

/* /proc's entries in the layout getdents64() fills in. */
struct proc_dirent {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* The most kept children whose groups one pass reads up front; the groups
 * of any more are read as each orphan is looked at. On the stack, as above. */
#define CHILD_KEPT_GROUPS 64

/* True when group is the group of one of the nkeep kept children: the first
 * ngroups of them read into groups, the rest read now. */
static bool group_kept(pid_t group, const pid_t *keep, size_t nkeep, const pid_t *groups,
		       size_t ngroups)
{
	for (size_t i = 0; i < nkeep; i++)
		if ((i < ngroups ? groups[i] : getpgid(keep[i])) == group)
			return true;
	return false;
}

/* One pass: kills every child not in keep, and puts up to cap of the
 * children seen into found. Returns 0, or -1 when /proc cannot be read;
 * *seen counts every child seen.
 *
 * A group is killed only when the orphan leads it (its pgrp is its pid) and
 * it is neither ours nor a kept child's: an orphan's group may be one it
 * was left in (a kept child's grandchild, adopted, stays in the kept
 * child's group) or one it joined (setpgid() into any group of our
 * session), and a kill of such a group would kill what it holds for the
 * orphan. Then only the orphan is killed; what it started is adopted in
 * turn once it dies, and killed by a later pass. A zombie leader's group
 * is killed while it still holds the group's id. */
static int orphans_pass(const pid_t *keep, size_t nkeep, pid_t *found, size_t cap,
			size_t *nfound, size_t *seen)
{
	pid_t self = getpid(), own_group = getpgrp();
	pid_t groups[CHILD_KEPT_GROUPS];
	size_t ngroups = nkeep < CHILD_KEPT_GROUPS ? nkeep : CHILD_KEPT_GROUPS;
	char buf[4096];
	int fd;
	ssize_t n;

	*nfound = *seen = 0;
	for (size_t i = 0; i < ngroups; i++)
		groups[i] = getpgid(keep[i]);
	fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((n = getdents64(fd, buf, sizeof buf)) > 0) {
		for (ssize_t off = 0; off < n;) {
			const struct proc_dirent *e = (const void *)(buf + off);
			const char *name = e->name;
			pid_t pid, ppid, pgrp;
			bool kept = false;
			char state;

			off += e->reclen;
			if (*name < '1' || *name > '9')
				continue;
			pid = (pid_t)parse_decimal(&name, name + 16);
			if (*name || pid == self || !proc_stat_read(pid, &state, &ppid, &pgrp) ||
			    ppid != self)
				continue;
			for (size_t i = 0; i < nkeep && !kept; i++)
				kept = keep[i] == pid;
			if (kept)
				continue;
			/* Its group first, while it still holds the group's id. */
			if (pgrp == pid && pgrp > 1 && pgrp != own_group &&
			    !group_kept(pgrp, keep, nkeep, groups, ngroups))
				kill(-pgrp, SIGKILL);
			if (state != 'Z' && state != 'X')
				kill(pid, SIGKILL);
			if (*nfound < cap)
				found[(*nfound)++] = pid;
			++*seen;
		}
	}
	close(fd);
	return n < 0 ? -1 : 0;
}

int child_kill_orphans(const pid_t *keep, size_t nkeep, double deadline)
{
	int saved = errno;
	long step = CHILD_POLL_FIRST_NS;

	for (;;) {
		pid_t found[CHILD_ORPHANS_BATCH];
		size_t nfound, seen, left = 0;
		if (orphans_pass(keep, nkeep, found, CHILD_ORPHANS_BATCH, &nfound, &seen) < 0) {
			errno = saved;
			return QUAL_EIO;
		}
		/* Reap what has exited; with a deadline, wait for the rest of
		 * this pass before looking again. */
		for (;;) {
			left = 0;
			for (size_t i = 0; i < nfound; i++) {
				pid_t r;

				if (found[i] <= 0)
					continue;
				while ((r = waitpid(found[i], NULL, WNOHANG)) < 0 && errno == EINTR)
					;
				if (r == 0)
					left++;
				else
					found[i] = -1; /* reaped, or not ours to wait for */
			}
			if (!left || deadline <= 0 || child_now() >= deadline)
				break;
			{
				struct timespec ts = { 0, step };

				while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
					;
				step = step * 2 > CHILD_POLL_MAX_NS ? CHILD_POLL_MAX_NS : step * 2;
			}
		}
		if (!seen || deadline <= 0 || child_now() >= deadline)
			break;
	}
	errno = saved;
	return 0;
}

int child_exit_signal(const struct child_exit *ex)
{
	return WIFSIGNALED(ex->status) ? WTERMSIG(ex->status) : 0;
}

int child_exit_code(const struct child_exit *ex)
{
	return WIFEXITED(ex->status) ? WEXITSTATUS(ex->status) : -1;
}

const char *child_signal_name(int sig, char *buf, size_t cap)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, cap, "SIG%s", abbrev);
	else
		snprintf(buf, cap, "signal %d", sig);
	return buf;
}

const char *child_exit_text(const struct child_exit *ex, char *buf, size_t cap)
{
	char name[32];
	int sig = child_exit_signal(ex);

	if (sig)
		snprintf(buf, cap, "killed by signal %s",
			 child_signal_name(sig, name, sizeof name));
	else
		snprintf(buf, cap, "exited with status %d", child_exit_code(ex));
	return buf;
}

int child_read_capped(int fd, size_t cap, double deadline, char **out,
		      size_t *len, size_t *total)
{
	char *buf = xmalloc(cap + 1), sink[4096];
	size_t kept = 0, all = 0;
	int rc = 0;

	/* poll() passes over a negative descriptor: it would wait forever. */
	if (fd < 0)
		rc = QUAL_EIO;
	while (rc == 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int wait_ms = -1;
		ssize_t n;

		if (deadline > 0) {
			double left = deadline - child_now();
			if (left <= 0) {
				rc = QUAL_ETIMEOUT;
				break;
			}
			/* Rounded up, so that the deadline has passed when poll
			 * times out; a long wait in steps poll's int can hold. */
			wait_ms = left < 86400.0 ? (int)(left * 1000.0) + 1 : 86400000;
		}
		if (poll(&p, 1, wait_ms) < 0) {
			if (errno == EINTR)
				continue;
			rc = QUAL_EIO;
			break;
		}
		if (!p.revents)
			continue;
		if (kept < cap)
			n = read(fd, buf + kept, cap - kept);
		else
			n = read(fd, sink, sizeof sink);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			rc = QUAL_EIO;
			break;
		}
		if (n == 0)
			break;
		if (kept < cap)
			kept += (size_t)n;
		all += (size_t)n;
	}
	buf[kept] = '\0';
	*out = buf;
	*len = kept;
	if (total)
		*total = all;
	return rc;
}

char **child_env_with(const char *const *drop, const char *const *add)
{
	size_t n = 0, nadd = 0, k = 0;
	char **env;

	while (environ && environ[n])
		n++;
	while (add && add[nadd])
		nadd++;
	env = xcalloc(n + nadd + 1, sizeof *env);
	for (size_t i = 0; i < n; i++) {
		bool skip = false;
		for (size_t d = 0; drop && drop[d] && !skip; d++)
			skip = strncmp(environ[i], drop[d], strlen(drop[d])) == 0;
		if (!skip)
			env[k++] = xstrdup(environ[i]);
	}
	for (size_t i = 0; i < nadd; i++)
		env[k++] = xstrdup(add[i]);
	env[k] = NULL;
	return env;
}

void child_env_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}
