/* common/child.c: the one way qual starts a child process. Real children
 * (/bin/sh, /bin/cat, /bin/sleep, /bin/ls, and functions in a fork), real
 * pipes and signals: what is asserted is what the child saw (its arguments,
 * environment, streams, process group, signal mask, descriptors) and what
 * was left running afterwards. The test process makes itself a child
 * subreaper, so that a grandchild left behind becomes its child and its end
 * (killed, and by which signal) can be waited for. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/child.h"
#include "common/xalloc.h"
#include "tests/unit/test_main.h"

extern char **environ;

/* Long enough that a child still running at the end of a test was not
 * killed; short enough that a broken kill fails the test within its limit. */
#define SLEEP_ARG "30"
#define READ_SECONDS 10.0

/* Reads fd to its end (within READ_SECONDS) into a new string, closes it. */
static char *read_all(int fd)
{
	char *out = NULL;
	size_t len = 0;

	assert_int_equal(child_read_capped(fd, 1 << 16, child_now() + READ_SECONDS,
					   &out, &len, NULL), 0);
	close(fd);
	return out;
}

/* Starts c (which must succeed), reads its stdout pipe to the end, waits. */
static char *run_capture(struct child *c, struct child_exit *ex)
{
	struct qual_msg msg = { { 0 } };
	char *out;

	c->out = CHILD_PIPE;
	assert_int_equal(child_start(c, &msg), 0);
	out = read_all(c->out_pipe);
	assert_int_equal(child_wait(c, child_now() + READ_SECONDS, ex), 0);
	assert_int_equal(c->pid, -1);
	return out;
}

/* Starts c with argv (c set up by child_init and the caller). */
static void start(struct child *c, const char *const *argv)
{
	c->argv = argv;
	assert_int_equal(child_start(c, NULL), 0);
}

/* Waits for c within READ_SECONDS; returns how it ended. */
static struct child_exit finish(struct child *c)
{
	struct child_exit ex;

	assert_int_equal(child_wait(c, child_now() + READ_SECONDS, &ex), 0);
	return ex;
}

/* Runs fn(arg) in a child with the defaults; returns how it ended. */
static struct child_exit run_fn(int (*fn)(void *), void *arg, enum child_group group)
{
	struct child c;

	child_init(&c);
	c.fn = fn;
	c.arg = arg;
	c.group = group;
	assert_int_equal(child_start(&c, NULL), 0);
	return finish(&c);
}

/* Runs fn(arg) in a child whose stderr is a pipe; returns what it wrote
 * there, and how it ended in *ex. */
static char *run_fn_stderr(int (*fn)(void *), void *arg, struct child_exit *ex)
{
	struct child c;
	char *err;

	child_init(&c);
	c.fn = fn;
	c.arg = arg;
	c.err = CHILD_PIPE;
	assert_int_equal(child_start(&c, NULL), 0);
	err = read_all(c.err_pipe);
	*ex = finish(&c);
	return err;
}

/* Runs argv with the defaults (stdout the caller's); returns how it ended. */
static struct child_exit run_argv(const char *const *argv)
{
	struct child c;

	child_init(&c);
	start(&c, argv);
	return finish(&c);
}

/* Waits up to seconds for pid (a child of ours) to end; true with its status
 * when it did, else kills it and returns false. */
static bool wait_dead(pid_t pid, double seconds, int *status)
{
	double until = child_now() + seconds;
	struct timespec ms = { 0, 1000000 };

	while (child_now() < until) {
		pid_t got = waitpid(pid, status, WNOHANG);
		if (got == pid)
			return true;
		assert_int_equal(got, 0);
		nanosleep(&ms, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, status, 0);
	return false;
}

/* Descriptors of ours above 2 that a child would inherit (no close-on-exec). */
static int inheritable_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);
		int flags;

		if (e->d_name[0] == '.' || fd <= 2 || fd == dirfd(d))
			continue;
		flags = fcntl(fd, F_GETFD);
		if (flags >= 0 && !(flags & FD_CLOEXEC))
			n++;
	}
	closedir(d);
	return n;
}

/* pid, a child of ours, ends killed by SIGKILL within 5 seconds. */
static void assert_killed(pid_t pid)
{
	int st;

	assert_true(wait_dead(pid, 5, &st));
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void become_subreaper(void)
{
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
}

/* ---- exec ---------------------------------------------------------------- */

/* What the child saw of its arguments and environment: argv as given (no
 * word splitting: one argument with a space), and env the whole
 * environment, or the caller's when NULL, or child_env_with's. */
static void test_exec_argv_env(void **state)
{
	const char *argv[] = { "/bin/sh", "-c",
			       "printf '%s|%s|%s|%s' \"$1\" \"${QUAL_T_GIVEN-unset}\" "
			       "\"${QUAL_T_CALLER-unset}\" \"${QUAL_T_DROP-unset}\"",
			       "sh", "one arg", NULL };
	const char *given[] = { "QUAL_T_GIVEN=given", NULL };
	const char *drop[] = { "QUAL_T_DROP=", NULL };
	char **with;
	struct {
		const char *const *env;
		const char *want;
	} cases[] = {
		{ given, "one arg|given|unset|unset" },
		{ NULL, "one arg|unset|caller's|x" },
		{ NULL, "one arg|given|caller's|unset" }, /* child_env_with's */
	};

	(void)state;
	setenv("QUAL_T_CALLER", "caller's", 1);
	setenv("QUAL_T_DROP", "x", 1);
	with = child_env_with(drop, given);
	cases[2].env = (const char *const *)with;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct child c;
		struct child_exit ex;
		char *out;

		child_init(&c);
		c.argv = argv;
		c.env = cases[i].env;
		out = run_capture(&c, &ex);
		assert_string_equal(out, cases[i].want);
		assert_int_equal(child_exit_code(&ex), 0);
		assert_false(ex.timed_out);
		free(out);
	}
	child_env_free(with);
	unsetenv("QUAL_T_CALLER");
	unsetenv("QUAL_T_DROP");
}

/* A program that does not exist: QUAL_ENOENT and the message, nothing left
 * to reap or kill (no child of ours at all), no descriptor left open. */
static void test_exec_missing(void **state)
{
	const char *argv[] = { "/nonexistent/qual-x", "a", NULL };
	struct qual_msg msg = { { 0 } };
	struct child c;
	int fds = open_fds();

	(void)state;
	child_init(&c);
	c.argv = argv;
	c.in = CHILD_PIPE;
	c.out = CHILD_PIPE;
	c.err = CHILD_PIPE;
	assert_int_equal(child_start(&c, &msg), QUAL_ENOENT);
	assert_string_equal(msg.text,
			    "cannot start '/nonexistent/qual-x': No such file or directory");
	assert_int_equal(c.pid, -1);
	assert_int_equal(c.in_pipe, -1);
	assert_int_equal(c.out_pipe, -1);
	assert_int_equal(c.err_pipe, -1);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	assert_int_equal(open_fds(), fds);
	/* Nothing to wait for or kill. */
	assert_int_equal(child_wait(&c, 0, NULL), QUAL_EINVAL);
	assert_int_equal(child_reap(&c, NULL), QUAL_EINVAL);
	child_kill(&c, SIGKILL);
}

/* A file that is not executable: QUAL_EIO with the reason. */
static void test_exec_not_executable(void **state)
{
	char path[] = "/tmp/qual-child-XXXXXX";
	const char *argv[] = { path, NULL };
	struct qual_msg msg = { { 0 } };
	struct child c;
	char want[128];
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chmod(path, 0644), 0);
	child_init(&c);
	c.argv = argv;
	assert_int_equal(child_start(&c, &msg), QUAL_EIO);
	snprintf(want, sizeof want, "cannot start '%s': Permission denied", path);
	assert_string_equal(msg.text, want);
	assert_int_equal(c.pid, -1);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	unlink(path);
}

static void test_nothing_to_run(void **state)
{
	const char *argv[] = { NULL };
	struct qual_msg msg = { { 0 } };
	struct child c;

	(void)state;
	child_init(&c);
	assert_int_equal(child_start(&c, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "a child needs a program or a function");
	c.argv = argv;
	assert_int_equal(child_start(&c, NULL), QUAL_EINVAL);
	assert_int_equal(c.pid, -1);
}

/* ---- fn ------------------------------------------------------------------ */

static int caller_value;

/* Writes what it sees to stdout; exits 7. */
static int fn_report(void *arg)
{
	char buf[8];
	ssize_t n = read(0, buf, sizeof buf);

	printf("%s %d stdin=%zd", (const char *)arg, caller_value, n);
	fflush(stdout);
	return 7;
}

/* fn runs in the forked copy (it sees the caller's memory as it was), its
 * return value is the exit status, stdin is /dev/null by default. */
static void test_fn(void **state)
{
	struct child c;
	struct child_exit ex;
	char *out;

	(void)state;
	caller_value = 41;
	child_init(&c);
	c.fn = fn_report;
	c.arg = "arg";
	out = run_capture(&c, &ex);
	assert_string_equal(out, "arg 41 stdin=0");
	assert_int_equal(child_exit_code(&ex), 7);
	assert_int_equal(child_exit_signal(&ex), 0);
	free(out);
}

/* 1 when SIGUSR1 is blocked and SIGUSR2 is not. */
static int fn_mask(void *arg)
{
	sigset_t now;

	(void)arg;
	sigprocmask(SIG_SETMASK, NULL, &now);
	return sigismember(&now, SIGUSR1) && !sigismember(&now, SIGUSR2);
}

/* fn runs with the caller's signal mask, as the caller set it up. */
static void test_fn_keeps_mask(void **state)
{
	sigset_t usr1, old;
	struct child_exit ex;

	(void)state;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old);
	ex = run_fn(fn_mask, NULL, CHILD_GROUP_SAME);
	sigprocmask(SIG_SETMASK, &old, NULL);
	assert_int_equal(child_exit_code(&ex), 1);
}

/* ---- streams ------------------------------------------------------------- */

/* Each kind of stream: what the child read from stdin and wrote to stdout
 * and stderr, and which of the caller's pipe ends exist. */
static void test_streams(void **state)
{
	static const char *const cat[] = { "/bin/cat", NULL };
	static const char *const both[] = { "/bin/sh", "-c",
					    "echo out; echo err >&2; echo out2", NULL };
	static const char *const reads[] = { "/bin/sh", "-c", "cat; echo end", NULL };
	static const struct {
		const char *const *argv;
		int in, out, err;
		const char *input, *want_out, *want_err;
	} cases[] = {
		/* CHILD_PIPE both ways: what the caller writes, cat gives back. */
		{ cat, CHILD_PIPE, CHILD_PIPE, CHILD_INHERIT, "to cat\n", "to cat\n", NULL },
		/* CHILD_TO_OUT: stderr goes where stdout goes. */
		{ both, CHILD_NULL, CHILD_PIPE, CHILD_TO_OUT, NULL, "out\nerr\nout2\n", NULL },
		/* stderr in a pipe of its own. */
		{ both, CHILD_NULL, CHILD_PIPE, CHILD_PIPE, NULL, "out\nout2\n", "err\n" },
		/* stdout in /dev/null, stderr in a pipe. */
		{ both, CHILD_NULL, CHILD_NULL, CHILD_PIPE, NULL, NULL, "err\n" },
		/* stdin is /dev/null by default: cat ends at once. */
		{ reads, CHILD_NULL, CHILD_PIPE, CHILD_INHERIT, NULL, "end\n", NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t n = cases[i].input ? strlen(cases[i].input) : 0;
		char *out = NULL, *err = NULL;
		struct child_exit ex;
		struct child c;

		child_init(&c);
		c.in = cases[i].in;
		c.out = cases[i].out;
		c.err = cases[i].err;
		start(&c, cases[i].argv);
		assert_int_equal(c.in_pipe >= 0, cases[i].in == CHILD_PIPE);
		assert_int_equal(c.out_pipe >= 0, cases[i].out == CHILD_PIPE);
		assert_int_equal(c.err_pipe >= 0, cases[i].err == CHILD_PIPE);
		if (c.in_pipe >= 0) {
			assert_int_equal(write(c.in_pipe, cases[i].input, n), (ssize_t)n);
			close(c.in_pipe);
		}
		if (c.out_pipe >= 0)
			out = read_all(c.out_pipe);
		if (c.err_pipe >= 0)
			err = read_all(c.err_pipe);
		ex = finish(&c);
		assert_int_equal(child_exit_code(&ex), 0);
		if (cases[i].want_out)
			assert_string_equal(out, cases[i].want_out);
		if (cases[i].want_err)
			assert_string_equal(err, cases[i].want_err);
		free(out);
		free(err);
	}
}

/* A descriptor of the caller's as the child's stdout. */
static void test_out_to_fd(void **state)
{
	const char *argv[] = { "/bin/sh", "-c", "echo into the file", NULL };
	char path[] = "/tmp/qual-child-XXXXXX", buf[64] = "";
	struct child c;
	struct child_exit ex;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	child_init(&c);
	c.argv = argv;
	c.out = fd;
	assert_int_equal(child_start(&c, NULL), 0);
	assert_int_equal(child_wait(&c, child_now() + READ_SECONDS, &ex), 0);
	assert_int_equal(pread(fd, buf, sizeof buf - 1, 0), 14);
	assert_string_equal(buf, "into the file\n");
	/* The caller keeps its own descriptor. */
	assert_true(fcntl(fd, F_GETFD) >= 0);
	close(fd);
	unlink(path);
}

/* A caller with some of descriptors 0-2 closed (a daemon started so): the
 * pipes child_start makes, the exec report and the caller's own descriptors
 * land on those numbers, and each stream must still get what was asked for.
 * CASE_FILE stands for a file the case opens after closing, so that it
 * lands on the lowest number closed. */
#define CASE_FILE (-100)

struct closed_case {
	const char *name;
	unsigned closed;          /* bit k: descriptor k is closed */
	int in, out, err;         /* as child.in, out, err, or CASE_FILE */
	const char *const *argv;
	const char *input;        /* written to the stdin pipe */
	int want_rc;              /* child_start's */
	const char *want_out, *want_err, *want_file; /* NULL: not read */
};

/* Checks got against want, and says where they differ on report. */
static bool same(int report, const char *name, const char *what, const char *got,
		 const char *want)
{
	if (!want || (got && !strcmp(got, want)))
		return true;
	dprintf(report, "%s: %s is '%s', want '%s'\n", name, what, got ? got : "(none)",
		want);
	return false;
}

/* Reads fd to its end into a new string (NULL on failure), closes it. */
static char *read_end(int fd)
{
	char *s = NULL;
	size_t len;

	if (child_read_capped(fd, 1 << 16, child_now() + READ_SECONDS, &s, &len, NULL) < 0) {
		free(s);
		s = NULL;
	}
	close(fd);
	return s;
}

/* In a fork of the test (cmocka's asserts are not for it): closes the
 * case's descriptors, starts its child and checks what came out. Says what
 * differed on a copy of stderr made first; exits 0 when nothing did. */
static int fn_closed_case(void *arg)
{
	const struct closed_case *k = arg;
	int report = fcntl(2, F_DUPFD_CLOEXEC, 3);
	char path[] = "/tmp/qual-child-XXXXXX";
	char file[64] = "", *out = NULL, *err = NULL;
	struct qual_msg msg = { { 0 } };
	struct child_exit ex;
	struct child c;
	int fd = -1, rc;
	bool ok = true;

	for (int i = 0; i < 3; i++)
		if (k->closed & (1u << i))
			close(i);
	if (k->in == CASE_FILE || k->out == CASE_FILE || k->err == CASE_FILE) {
		fd = mkstemp(path);
		unlink(path);
		if (fd < 0 || fd > 2) {
			dprintf(report, "%s: the file is on %d, not on 0-2\n", k->name, fd);
			return 1;
		}
	}
	child_init(&c);
	c.argv = k->argv;
	c.in = k->in == CASE_FILE ? fd : k->in;
	c.out = k->out == CASE_FILE ? fd : k->out;
	c.err = k->err == CASE_FILE ? fd : k->err;
	rc = child_start(&c, &msg);
	if (rc != k->want_rc) {
		dprintf(report, "%s: child_start is %d (%s), want %d\n", k->name, rc, msg.text,
			k->want_rc);
		return 1;
	}
	if (rc < 0)
		return 0;
	if (c.in_pipe >= 0) {
		size_t n = k->input ? strlen(k->input) : 0;

		ok &= write(c.in_pipe, k->input, n) == (ssize_t)n;
		close(c.in_pipe);
	}
	if (c.out_pipe >= 0)
		out = read_end(c.out_pipe);
	if (c.err_pipe >= 0)
		err = read_end(c.err_pipe);
	if (child_wait(&c, child_now() + READ_SECONDS, &ex) < 0 || child_exit_code(&ex) != 0) {
		dprintf(report, "%s: the child did not exit 0\n", k->name);
		ok = false;
	}
	if (fd >= 0 && pread(fd, file, sizeof file - 1, 0) < 0)
		ok = false;
	ok &= same(report, k->name, "stdout", out, k->want_out);
	ok &= same(report, k->name, "stderr", err, k->want_err);
	ok &= same(report, k->name, "the file", file, k->want_file);
	free(out);
	free(err);
	return ok ? 0 : 1;
}

/* Each case in a fork of the test whose descriptors it closes. The old
 * failures: stderr's pipe end on 1, closed by stdout's dup2 (stderr lost);
 * the caller's file on 0 as stdout, closed by stdin's /dev/null; the exec
 * report on 1, closed by stdout's /dev/null (a missing program "started");
 * the caller's file on 1 as stderr, closed by stdout's pipe. */
static void test_streams_with_closed_fds(void **state)
{
	static const char *const both[] = { "/bin/sh", "-c", "echo out; echo err >&2", NULL };
	static const char *const cat_err[] = { "/bin/sh", "-c", "cat; echo err >&2", NULL };
	static const char *const missing[] = { "/nonexistent/qual-x", NULL };
	static const struct closed_case cases[] = {
		{ "out pipe, err to out", 03, CHILD_NULL, CHILD_PIPE, CHILD_TO_OUT, both, NULL,
		  0, "out\nerr\n", NULL, NULL },
		{ "out null, err pipe", 03, CHILD_NULL, CHILD_NULL, CHILD_PIPE, both, NULL,
		  0, NULL, "err\n", NULL },
		{ "out pipe, err pipe", 03, CHILD_NULL, CHILD_PIPE, CHILD_PIPE, both, NULL,
		  0, "out\n", "err\n", NULL },
		{ "out to the file on 0", 01, CHILD_NULL, CASE_FILE, CHILD_NULL, both, NULL,
		  0, NULL, NULL, "out\n" },
		{ "err to the file on 1", 02, CHILD_NULL, CHILD_PIPE, CASE_FILE, both, NULL,
		  0, "out\n", NULL, "err\n" },
		{ "all three pipes, 0-2 closed", 07, CHILD_PIPE, CHILD_PIPE, CHILD_PIPE, cat_err,
		  "in\n", 0, "in\n", "err\n", NULL },
		{ "missing program, report on 1", 03, CHILD_NULL, CHILD_NULL, CHILD_INHERIT,
		  missing, NULL, QUAL_ENOENT, NULL, NULL, NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct child_exit ex;
		char *err = run_fn_stderr(fn_closed_case, (void *)&cases[i], &ex);

		assert_string_equal(err, "");
		assert_int_equal(child_exit_code(&ex), 0);
		free(err);
	}
}

/* The child has its three streams and what the caller let it inherit, and
 * nothing of child_start's own (pipes, /dev/null, the exec report): ls
 * lists its descriptors, one more being its own listing of them. */
static void test_exec_no_stray_fds(void **state)
{
	const char *argv[] = { "/bin/ls", "/proc/self/fd", NULL };
	struct child c;
	struct child_exit ex;
	int want = 3 + inheritable_fds() + 1, lines = 0;
	char *out;

	(void)state;
	child_init(&c);
	c.argv = argv;
	c.in = CHILD_NULL;
	c.err = CHILD_NULL;
	out = run_capture(&c, &ex);
	for (const char *p = out; *p; p++)
		lines += *p == '\n';
	print_message("child descriptors:\n%s", out);
	assert_int_equal(lines, want);
	free(out);
}

/* ---- groups and sessions ------------------------------------------------- */

static int fn_group(void *arg)
{
	enum child_group g = *(enum child_group *)arg;

	switch (g) {
	case CHILD_GROUP_NEW:
		return getpgrp() == getpid() && getsid(0) != getpid();
	case CHILD_SESSION_NEW:
		return getsid(0) == getpid() && getpgrp() == getpid();
	default:
		return getpgrp() == getpgid(getppid());
	}
}

/* Each kind of group is what it says (fn returns 1 when it is). */
static void test_group_kinds(void **state)
{
	enum child_group kinds[] = { CHILD_GROUP_SAME, CHILD_GROUP_NEW, CHILD_SESSION_NEW };

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		struct child_exit ex = run_fn(fn_group, &kinds[i], kinds[i]);

		assert_int_equal(child_exit_code(&ex), 1);
	}
}

/* A shell that leaves a sleeping grandchild in its group and exits. */
/* Starts c, a shell that runs script in group and exits: the process id
 * the script prints, a grandchild left behind. */
static pid_t start_script(struct child *c, enum child_group group, const char *script)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	char *out;
	pid_t grandchild;

	child_init(c);
	c->argv = argv;
	c->group = group;
	c->out = CHILD_PIPE;
	assert_int_equal(child_start(c, NULL), 0);
	out = read_all(c->out_pipe);
	grandchild = (pid_t)atoi(out);
	free(out);
	assert_true(grandchild > 0);
	c->argv = NULL; /* on our stack */
	return grandchild;
}

static pid_t start_leaver(struct child *c, enum child_group group)
{
	return start_script(c, group, "/bin/sleep " SLEEP_ARG " >/dev/null 2>&1 & echo $!");
}

/* The loop's way: child_exited, then child_reap kills what the child left
 * in its group. */
static void test_group_reap_kills_grandchild(void **state)
{
	struct child c;
	struct child_exit ex;
	pid_t g;

	(void)state;
	become_subreaper();
	g = start_leaver(&c, CHILD_GROUP_NEW);
	for (double until = child_now() + READ_SECONDS; !child_exited(&c);) {
		struct timespec ms = { 0, 1000000 };
		assert_true(child_now() < until);
		nanosleep(&ms, NULL);
	}
	/* Exited, not reaped: asking again says the same. */
	assert_true(child_exited(&c));
	assert_int_equal(child_reap(&c, &ex), 0);
	assert_int_equal(child_exit_code(&ex), 0);
	assert_false(child_exited(&c));
	assert_killed(g);
}

/* The blocking way, with a session: child_wait kills what is left in it. */
static void test_session_wait_kills_grandchild(void **state)
{
	struct child c;
	pid_t g;

	(void)state;
	become_subreaper();
	g = start_leaver(&c, CHILD_SESSION_NEW);
	assert_false(finish(&c).timed_out);
	assert_killed(g);
}

/* Without a group of its own, a grandchild is not the child's to kill: it
 * is left running (and killed here by the test). */
static void test_group_same_leaves_grandchild(void **state)
{
	struct child c;
	pid_t g;
	int st;

	(void)state;
	become_subreaper();
	g = start_leaver(&c, CHILD_GROUP_SAME);
	(void)finish(&c);
	assert_int_equal(waitpid(g, &st, WNOHANG), 0);
	kill(g, SIGKILL);
	assert_int_equal(waitpid(g, &st, 0), g);
}

/* ---- orphans ------------------------------------------------------------- */

/* True when pid is no process at all (not even a zombie of ours). */
static bool gone(pid_t pid)
{
	return kill(pid, 0) < 0 && errno == ESRCH;
}

/* A grandchild that left its group and session (setsid) survives the
 * child's group kill; a subreaper adopts it, and child_kill_orphans() kills
 * and reaps it (it waits: a deadline). */
static void test_kill_orphans_adopted(void **state)
{
	struct qual_msg msg = { { 0 } };
	struct child c;
	pid_t g;

	(void)state;
	assert_int_equal(child_become_subreaper(&msg), 0);
	/* The grandchild says its pid once it has left the group. */
	g = start_script(&c, CHILD_GROUP_NEW,
			 "/usr/bin/setsid /bin/sh -c 'echo $$; exec /bin/sleep " SLEEP_ARG
			 " >/dev/null 2>&1' &");
	(void)finish(&c);
	/* Out of reach of the group kill, and ours now. */
	assert_int_equal(waitpid(g, NULL, WNOHANG), 0);
	assert_int_equal(child_kill_orphans(NULL, 0, child_now() + 5), 0);
	assert_true(gone(g));
}

/* A child not kept is killed with its group (a grandchild there, not ours
 * until adopted, dies too and is reaped); a kept one is left running. */
static void test_kill_orphans_group_and_keep(void **state)
{
	static const char *argv[] = { "/bin/sh", "-c",
				      "/bin/sleep " SLEEP_ARG " >/dev/null 2>&1 & echo $!; "
				      "exec /bin/sleep " SLEEP_ARG " >/dev/null", NULL };
	const char *sleeper[] = { "/bin/sleep", SLEEP_ARG, NULL };
	struct qual_msg msg = { { 0 } };
	struct child c, kept;
	struct child_exit ex;
	char buf[32] = "";
	ssize_t n;
	pid_t g, pid;

	(void)state;
	assert_int_equal(child_become_subreaper(&msg), 0);
	child_init(&kept);
	start(&kept, sleeper);
	child_init(&c);
	c.argv = argv;
	c.group = CHILD_GROUP_NEW;
	c.out = CHILD_PIPE;
	assert_int_equal(child_start(&c, NULL), 0);
	/* The first line only: the exec'd sleep keeps the pipe open. */
	n = read(c.out_pipe, buf, sizeof buf - 1);
	assert_true(n > 0);
	close(c.out_pipe);
	g = (pid_t)atoi(buf);
	assert_true(g > 0);
	pid = c.pid;
	c.pid = -1; /* child_kill_orphans() reaps it */
	assert_int_equal(child_kill_orphans(&kept.pid, 1, child_now() + 5), 0);
	assert_true(gone(pid));
	assert_true(gone(g));
	assert_int_equal(waitpid(kept.pid, NULL, WNOHANG), 0);
	child_kill(&kept, SIGKILL);
	ex = finish(&kept);
	assert_int_equal(child_exit_signal(&ex), SIGKILL);
}

/* A kept child K leads its own group; its child leaves a grandchild in K's
 * group and exits, so the grandchild is adopted here while still in K's
 * group (a library's constructor double-forking in quald's identify
 * child). The sweep kills the grandchild alone: K, kept, lives. */
static void test_kill_orphans_kept_group(void **state)
{
	static const char *argv[] = { "/bin/sh", "-c",
				      "/bin/sh -c '/bin/sleep " SLEEP_ARG " >/dev/null 2>&1 & "
				      "echo $!'; exec /bin/sleep " SLEEP_ARG " >/dev/null", NULL };
	struct qual_msg msg = { { 0 } };
	struct child k;
	struct child_exit ex;
	char *out;
	pid_t g;

	(void)state;
	assert_int_equal(child_become_subreaper(&msg), 0);
	child_init(&k);
	k.argv = argv;
	k.group = CHILD_GROUP_NEW;
	k.out = CHILD_PIPE;
	assert_int_equal(child_start(&k, NULL), 0);
	/* End of file once the inner shell has exited and K has exec'd. */
	out = read_all(k.out_pipe);
	g = (pid_t)atoi(out);
	free(out);
	assert_true(g > 0);
	/* Adopted (ours to wait for) and still in K's group. */
	for (double until = child_now() + READ_SECONDS; waitpid(g, NULL, WNOHANG) < 0;) {
		struct timespec ms = { 0, 1000000 };
		assert_true(child_now() < until);
		nanosleep(&ms, NULL);
	}
	assert_int_equal(getpgid(g), k.pid);
	assert_int_equal(child_kill_orphans(&k.pid, 1, child_now() + 5), 0);
	assert_true(gone(g));
	assert_int_equal(waitpid(k.pid, NULL, WNOHANG), 0);
	child_kill(&k, SIGKILL);
	ex = finish(&k);
	assert_int_equal(child_exit_signal(&ex), SIGKILL);
}

static int fn_pause(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return 0;
}

/* An orphan that joined a kept child's group (setpgid into any group of
 * the session) is killed alone: it cannot have the sweep kill that group
 * for it. */
static void test_kill_orphans_joined_group(void **state)
{
	const char *sleeper[] = { "/bin/sleep", SLEEP_ARG, NULL };
	struct qual_msg msg = { { 0 } };
	struct child k, o;
	struct child_exit ex;
	pid_t pid;

	(void)state;
	assert_int_equal(child_become_subreaper(&msg), 0);
	child_init(&k);
	k.group = CHILD_GROUP_NEW;
	start(&k, sleeper);
	child_init(&o);
	o.fn = fn_pause;
	assert_int_equal(child_start(&o, NULL), 0);
	/* It has not exec'd: its parent may move it. */
	assert_int_equal(setpgid(o.pid, k.pid), 0);
	assert_int_equal(getpgid(o.pid), k.pid);
	pid = o.pid;
	o.pid = -1; /* child_kill_orphans() reaps it */
	assert_int_equal(child_kill_orphans(&k.pid, 1, child_now() + 5), 0);
	assert_true(gone(pid));
	assert_int_equal(waitpid(k.pid, NULL, WNOHANG), 0);
	child_kill(&k, SIGKILL);
	ex = finish(&k);
	assert_int_equal(child_exit_signal(&ex), SIGKILL);
}

/* Without a deadline it never waits: the child it killed is reaped by a
 * later call once it has exited (its zombie). */
static void test_kill_orphans_no_wait(void **state)
{
	const char *sleeper[] = { "/bin/sleep", SLEEP_ARG, NULL };
	struct child c;
	siginfo_t si;
	pid_t pid;

	(void)state;
	child_init(&c);
	start(&c, sleeper);
	pid = c.pid;
	c.pid = -1;
	assert_int_equal(child_kill_orphans(NULL, 0, 0), 0);
	/* Killed: a zombie now, unless the call reaped it already. */
	memset(&si, 0, sizeof si);
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) == 0) {
		assert_int_equal(si.si_code, CLD_KILLED);
		assert_int_equal(si.si_status, SIGKILL);
		assert_false(gone(pid));
		assert_int_equal(child_kill_orphans(NULL, 0, 0), 0);
	} else {
		assert_int_equal(errno, ECHILD);
	}
	assert_true(gone(pid));
}

/* ---- deadlines, kills, exits --------------------------------------------- */

/* Past the deadline the child is killed and timed_out is set. */
static void test_deadline_kills(void **state)
{
	const char *argv[] = { "/bin/sleep", SLEEP_ARG, NULL };
	struct child c;
	struct child_exit ex;
	double t0 = child_now();

	(void)state;
	child_init(&c);
	start(&c, argv);
	assert_int_equal(child_wait(&c, t0 + 0.2, &ex), 0);
	assert_true(ex.timed_out);
	assert_int_equal(child_exit_signal(&ex), SIGKILL);
	assert_true(child_now() - t0 >= 0.2);
	assert_true(child_now() - t0 < 5);
}

/* A child that ends before its deadline is not timed out. */
static void test_deadline_not_reached(void **state)
{
	const char *argv[] = { "/bin/sh", "-c", "exit 3", NULL };
	struct child_exit ex = run_argv(argv);

	(void)state;
	assert_false(ex.timed_out);
	assert_int_equal(child_exit_code(&ex), 3);
	assert_int_equal(child_exit_signal(&ex), 0);
}

/* child_kill sends the signal asked for; after the reap it does nothing. */
static void test_kill(void **state)
{
	const char *argv[] = { "/bin/sleep", SLEEP_ARG, NULL };
	struct child c;
	struct child_exit ex;
	char text[64];

	(void)state;
	child_init(&c);
	start(&c, argv);
	child_kill(&c, SIGTERM);
	ex = finish(&c);
	assert_false(ex.timed_out);
	assert_string_equal(child_exit_text(&ex, text, sizeof text),
			    "killed by signal SIGTERM");
	child_kill(&c, SIGTERM);
	assert_int_equal(child_wait(&c, 0, &ex), QUAL_EINVAL);
}

/* The one wording of how a child ended. */
static void test_exit_text(void **state)
{
	const char *exit3[] = { "/bin/sh", "-c", "exit 3", NULL };
	const char *segv[] = { "/bin/sh", "-c", "kill -SEGV $$", NULL };
	struct child_exit ex;
	char text[64];

	(void)state;
	ex = run_argv(exit3);
	assert_string_equal(child_exit_text(&ex, text, sizeof text), "exited with status 3");

	ex = run_argv(segv);
	assert_int_equal(child_exit_code(&ex), -1);
	assert_int_equal(child_exit_signal(&ex), SIGSEGV);
	assert_string_equal(child_exit_text(&ex, text, sizeof text),
			    "killed by signal SIGSEGV");
	/* A short buffer is cut, still terminated. */
	assert_string_equal(child_exit_text(&ex, text, 7), "killed");

	assert_string_equal(child_signal_name(SIGKILL, text, sizeof text), "SIGKILL");
	assert_string_equal(child_signal_name(77, text, sizeof text), "signal 77");
}

/* ---- what an exec'd child inherits --------------------------------------- */

/* The value of a "Name:\t<hex>" line of /proc/<pid>/status text. */
static unsigned long long status_mask(const char *status, const char *name)
{
	const char *p = strstr(status, name);

	assert_non_null(p);
	return strtoull(p + strlen(name), NULL, 16);
}

static void on_usr2(int sig)
{
	(void)sig;
}

/* The caller blocks SIGUSR1 and SIGTERM, ignores SIGPIPE and SIGINT and
 * handles SIGUSR2; the exec'd child sees an empty mask and nothing ignored
 * (so a write to a closed pipe kills it, as it would a plain process). */
static void test_exec_resets_signals(void **state)
{
	const char *argv[] = { "/bin/cat", "/proc/self/status", NULL };
	struct sigaction ign, usr2, old_pipe, old_int, old_usr2;
	sigset_t block, old_mask;
	struct child c;
	struct child_exit ex;
	char *out;

	(void)state;
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	memset(&usr2, 0, sizeof usr2);
	usr2.sa_handler = on_usr2;
	sigaction(SIGPIPE, &ign, &old_pipe);
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGUSR2, &usr2, &old_usr2);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old_mask);

	child_init(&c);
	c.argv = argv;
	c.out = CHILD_PIPE;
	assert_int_equal(child_start(&c, NULL), 0);

	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGUSR2, &old_usr2, NULL);

	out = read_all(c.out_pipe);
	assert_int_equal(child_wait(&c, child_now() + READ_SECONDS, &ex), 0);
	assert_int_equal(status_mask(out, "\nSigBlk:"), 0);
	assert_int_equal(status_mask(out, "\nSigIgn:"), 0);
	free(out);
}

static int fn_start_sleeper(void *arg)
{
	const char *argv[] = { "/bin/sleep", SLEEP_ARG, NULL };
	struct child g;

	child_init(&g);
	g.argv = argv;
	g.out = CHILD_NULL; /* not our stdout: the test reads it to its end */
	g.die_with_parent = *(bool *)arg;
	if (child_start(&g, NULL) < 0)
		return 1;
	printf("%d\n", (int)g.pid);
	fflush(stdout);
	return 0; /* leaves g running, unreaped */
}

/* die_with_parent: when the process that started it ends, the child is
 * killed (SIGKILL); without it, it keeps running. */
static void test_die_with_parent(void **state)
{
	(void)state;
	become_subreaper();
	for (int with = 1; with >= 0; with--) {
		bool die = with;
		struct child c;
		struct child_exit ex;
		char *out;
		pid_t g;
		int st;

		child_init(&c);
		c.fn = fn_start_sleeper;
		c.arg = &die;
		out = run_capture(&c, &ex);
		assert_int_equal(child_exit_code(&ex), 0);
		g = (pid_t)atoi(out);
		free(out);
		assert_true(g > 0);
		if (die)
			assert_killed(g);
		else
			assert_false(wait_dead(g, 0.3, &st));
	}
}

/* ---- child_read_capped --------------------------------------------------- */

/* The first cap bytes are kept and terminated, the rest read and counted. */
static void test_read_capped_cap(void **state)
{
	unsigned char data[10000];
	char *out;
	size_t len, total;
	int p[2];

	(void)state;
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (unsigned char)(1 + i % 251);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], data, sizeof data), (ssize_t)sizeof data);
	close(p[1]);
	assert_int_equal(child_read_capped(p[0], 100, 0, &out, &len, &total), 0);
	assert_int_equal(len, 100);
	assert_int_equal(total, sizeof data);
	assert_memory_equal(out, data, 100);
	assert_int_equal(out[100], '\0');
	free(out);
	close(p[0]);

	/* Under the cap: all of it; total may be NULL. */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "abc", 3), 3);
	close(p[1]);
	assert_int_equal(child_read_capped(p[0], 100, 0, &out, &len, NULL), 0);
	assert_int_equal(len, 3);
	assert_string_equal(out, "abc");
	free(out);
	close(p[0]);
}

/* A writer that keeps the pipe open: the deadline ends the read, with what
 * came before it kept. */
static void test_read_capped_deadline(void **state)
{
	char *out;
	size_t len, total;
	double t0;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "abc", 3), 3);
	t0 = child_now();
	assert_int_equal(child_read_capped(p[0], 100, t0 + 0.2, &out, &len, &total),
			 QUAL_ETIMEOUT);
	assert_true(child_now() - t0 >= 0.2);
	assert_true(child_now() - t0 < 5);
	assert_int_equal(len, 3);
	assert_int_equal(total, 3);
	assert_string_equal(out, "abc");
	free(out);
	close(p[0]);
	close(p[1]);
}

/* A descriptor that is not open, or none at all (-1, a pipe never asked
 * for), is an error at once, not a wait. */
static void test_read_capped_bad_fd(void **state)
{
	char *out;
	size_t len;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	close(p[1]);
	assert_int_equal(child_read_capped(p[0], 10, 0, &out, &len, NULL), QUAL_EIO);
	assert_int_equal(len, 0);
	free(out);
	assert_int_equal(child_read_capped(-1, 10, 0, &out, &len, NULL), QUAL_EIO);
	assert_int_equal(len, 0);
	assert_string_equal(out, "");
	free(out);
}

/* ---- child_env_with ------------------------------------------------------ */

static size_t env_count(char *const *env)
{
	size_t n = 0;

	while (env[n])
		n++;
	return n;
}

static int env_find(char *const *env, const char *entry)
{
	for (size_t i = 0; env[i]; i++)
		if (!strcmp(env[i], entry))
			return (int)i;
	return -1;
}

static void test_env_with(void **state)
{
	const char *drop[] = { "QUAL_T_DROP=", "QUAL_T_ALSO=", NULL };
	const char *add[] = { "QUAL_T_ADD=1", "QUAL_T_ADD2=2", NULL };
	size_t n;
	char **env;

	(void)state;
	setenv("QUAL_T_DROP", "x", 1);
	setenv("QUAL_T_DROPPED_NOT", "y", 1); /* a longer name is not dropped */
	setenv("QUAL_T_ALSO", "z", 1);
	setenv("QUAL_T_KEEP", "k", 1);
	n = env_count(environ);

	env = child_env_with(drop, add);
	assert_int_equal(env_count(env), n - 2 + 2);
	assert_int_equal(env_find(env, "QUAL_T_DROP=x"), -1);
	assert_int_equal(env_find(env, "QUAL_T_ALSO=z"), -1);
	assert_true(env_find(env, "QUAL_T_DROPPED_NOT=y") >= 0);
	assert_true(env_find(env, "QUAL_T_KEEP=k") >= 0);
	/* The additions last, in order. */
	assert_string_equal(env[n - 2], "QUAL_T_ADD=1");
	assert_string_equal(env[n - 1], "QUAL_T_ADD2=2");
	assert_null(env[n]);
	/* A copy: changing ours later does not change it. */
	setenv("QUAL_T_KEEP", "changed", 1);
	assert_true(env_find(env, "QUAL_T_KEEP=k") >= 0);
	child_env_free(env);

	/* Neither: a copy of the whole environment. */
	env = child_env_with(NULL, NULL);
	assert_int_equal(env_count(env), env_count(environ));
	for (size_t i = 0; environ[i]; i++) {
		assert_string_equal(env[i], environ[i]);
		assert_ptr_not_equal(env[i], environ[i]);
	}
	child_env_free(env);
	child_env_free(NULL);

	unsetenv("QUAL_T_DROP");
	unsetenv("QUAL_T_DROPPED_NOT");
	unsetenv("QUAL_T_ALSO");
	unsetenv("QUAL_T_KEEP");
}

QUAL_TESTS(
	cmocka_unit_test(test_exec_missing),
	cmocka_unit_test(test_exec_not_executable),
	cmocka_unit_test(test_nothing_to_run),
	cmocka_unit_test(test_exec_argv_env),
	cmocka_unit_test(test_fn),
	cmocka_unit_test(test_fn_keeps_mask),
	cmocka_unit_test(test_streams),
	cmocka_unit_test(test_out_to_fd),
	cmocka_unit_test(test_streams_with_closed_fds),
	cmocka_unit_test(test_exec_no_stray_fds),
	cmocka_unit_test(test_group_kinds),
	cmocka_unit_test(test_group_reap_kills_grandchild),
	cmocka_unit_test(test_session_wait_kills_grandchild),
	cmocka_unit_test(test_group_same_leaves_grandchild),
	cmocka_unit_test(test_kill_orphans_adopted),
	cmocka_unit_test(test_kill_orphans_group_and_keep),
	cmocka_unit_test(test_kill_orphans_kept_group),
	cmocka_unit_test(test_kill_orphans_joined_group),
	cmocka_unit_test(test_kill_orphans_no_wait),
	cmocka_unit_test(test_deadline_kills),
	cmocka_unit_test(test_deadline_not_reached),
	cmocka_unit_test(test_kill),
	cmocka_unit_test(test_exit_text),
	cmocka_unit_test(test_exec_resets_signals),
	cmocka_unit_test(test_die_with_parent),
	cmocka_unit_test(test_read_capped_cap),
	cmocka_unit_test(test_read_capped_deadline),
	cmocka_unit_test(test_read_capped_bad_fd),
	cmocka_unit_test(test_env_with),
)
