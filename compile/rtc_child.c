/* Compiler libraries, run in children: the child's side of the parent's
 * half (rtc.c). The private folder a compile child works in, made so that
 * the compile user can neither read nor plant what it must not, and the
 * child itself: its environment, its start through child.h, and what it
 * reported back. rtc.c's identify and compile use these. */
#include "compile/rtc_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/lifetime.h"
#include "common/text.h"
#include "common/xalloc.h"
#include "proto/strv.h"

/* The most of a result or stderr file read back: a result file is a few
 * hundred bytes, and only the last line of stderr is used. */
#define RTC_REPORT_CAP ((size_t)64 * 1024)

/* rtc_set_compile_user()'s: children run as uid and gid when set. */
static struct {
	bool set;
	uid_t uid;
	gid_t gid;
} compile_user;

void rtc_set_compile_user(bool set, uid_t uid, gid_t gid)
{
	compile_user.set = set;
	compile_user.uid = uid;
	compile_user.gid = gid;
}

bool rtc_compile_user(uid_t *uid, gid_t *gid)
{
	if (compile_user.set) {
		*uid = compile_user.uid;
		*gid = compile_user.gid;
	}
	return compile_user.set;
}

uid_t rtc__child_owner(void)
{
	return compile_user.set ? compile_user.uid : geteuid();
}

/* ---- the private folder ---------------------------------------------------- */

/* A compile folder, made by rtc__workdir_new():
 *
 *   qual-rtc-XXXXXX/   ours; 0700, or 0711 with a compile user: its name
 *                      may be seen in $TMPDIR, what is in it may not
 *     c-XXXXXX/        the compile folder proper ("dir"); ours, 0700, or
 *                      0710 and group the compile user's: it may pass
 *                      through, never add, remove or rename a name here,
 *                      so no name we create, write or hand over can be a
 *                      link of its
 *       source.txt     ours, written once (O_EXCL); group-readable with a
 *                      compile user (rtc__workdir_put)
 *       stderr.txt     ours (O_EXCL), the child's stdout and stderr by
 *                      descriptor (rtc__helper_start)
 *       out/           the child's (RTC__OUT_ENV): result, log, code;
 *                      read back with fs_read_capped_placed() as the
 *                      child's
 *       tmp/           the child's $TMPDIR
 *
 * Two levels, so that another process of the compile user (another job's
 * compile child) that lists $TMPDIR does not learn where this child
 * writes: it would have to guess c-XXXXXX while the compile runs.
 * Everything we make in it is made through the folder's descriptor with
 * O_EXCL | O_NOFOLLOW and given away by descriptor (fchown), never by path.
 * rtc_workdir_remove() removes it without following anything the child left. */
#define RTC_TMP_DIR "tmp"

/* Opens dir (ours) as a folder, not following a link. */
static int workdir_open(const char *dir, struct qual_msg *msg)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return qual_fail(msg, QUAL_EIO, "cannot open '%s': %s", dir, strerror(errno));
	return fd;
}

/* Makes the child's folder name in the open folder dfd (dir names it in
 * messages), given to the compile user when there is one. */
static int workdir_child_dir(int dfd, const char *dir, const char *name,
			     struct qual_msg *msg)
{
	int fd, rc = 0;

	if (mkdirat(dfd, name, 0700) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot create '%s/%s': %s", dir, name,
				 strerror(errno));
	if (!compile_user.set)
		return 0;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchown(fd, compile_user.uid, compile_user.gid) < 0)
		rc = qual_fail(msg, QUAL_EIO, "cannot give '%s/%s' to the compile user: %s",
			       dir, name, strerror(errno));
	if (fd >= 0)
		close(fd);
	return rc;
}

/* mkdtemp() of template (PATH_MAX bytes) with mode: 0 or a negative code
 * with msg; on failure template is "". */
static int workdir_mkdtemp(char *template, mode_t mode, struct qual_msg *msg)
{
	char name[PATH_MAX];
	int fd;

	snprintf(name, sizeof name, "%s", template);
	if (!mkdtemp(template)) {
		template[0] = '\0';
		return qual_fail(msg, QUAL_EIO, "cannot create temporary folder '%s': %s",
				 name, strerror(errno));
	}
	if (mode == 0700)
		return 0;
	/* chmod by descriptor: the folder is new and ours, in a folder that
	 * no compile user may write (its parent, or $TMPDIR). */
	if ((fd = workdir_open(template, msg)) < 0 || fchmod(fd, mode) < 0) {
		if (fd >= 0) {
			qual_fail(msg, QUAL_EIO, "cannot let the compile user into '%s': %s",
				  template, strerror(errno));
			close(fd);
		}
		rmdir(template);
		template[0] = '\0';
		return QUAL_EIO;
	}
	close(fd);
	return 0;
}

void rtc_workdir_remove(const char *dir)
{
	char outer[PATH_MAX], *slash;

	if (!dir || !dir[0])
		return;
	fs_rm_tree(dir);
	snprintf(outer, sizeof outer, "%s", dir);
	if ((slash = strrchr(outer, '/')) && slash != outer) {
		*slash = '\0';
		rmdir(outer);
	}
}

int rtc__workdir_new(char *dir, size_t cap, struct qual_msg *msg)
{
	const char *tmp = getenv("TMPDIR");
	char outer[PATH_MAX];
	int fd = -1, rc;

	dir[0] = '\0';
	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (cap < PATH_MAX ||
	    (size_t)snprintf(outer, sizeof outer, "%s/qual-rtc-XXXXXX/c-XXXXXX", tmp) >=
	    sizeof outer)
		return qual_fail(msg, QUAL_EINVAL, "temporary folder name is too long");
	outer[strlen(outer) - strlen("/c-XXXXXX")] = '\0';
	if ((rc = workdir_mkdtemp(outer, compile_user.set ? 0711 : 0700, msg)))
		return rc;
	snprintf(dir, cap, "%s/c-XXXXXX", outer);
	if ((rc = workdir_mkdtemp(dir, 0700, msg)))
		goto out;
	if ((rc = fd = workdir_open(dir, msg)) < 0)
		goto out;
	/* The compile user may pass through to its own folders, and no one
	 * else may (another user's process cannot reach them at all). */
	if (compile_user.set &&
	    (fchown(fd, (uid_t)-1, compile_user.gid) < 0 || fchmod(fd, 0710) < 0)) {
		rc = qual_fail(msg, QUAL_EIO, "cannot let the compile user into '%s': %s",
			       dir, strerror(errno));
		goto out;
	}
	/* The child's own TMPDIR, so whatever the compiler leaves behind (comgr
	 * writes its inputs to $TMPDIR/comgr-XXXXXX) goes when the folder does,
	 * even when the child is killed. */
	if ((rc = workdir_child_dir(fd, dir, RTC_TMP_DIR, msg)) ||
	    (rc = workdir_child_dir(fd, dir, RTC__OUT_DIR, msg)))
		goto out;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (rc) {
		if (dir[0])
			fs_rm_tree(dir);
		rmdir(outer);
		dir[0] = '\0';
	}
	return rc;
}

/* Creates name in the compile folder dir, new (never one that exists, never
 * through a link), for writing, mode 0600 (0640 and the compile user's
 * group when readable and there is one). Returns the descriptor, or a
 * negative code with msg. */
static int workdir_create(const char *dir, const char *name, bool readable,
			  struct qual_msg *msg)
{
	int dfd = workdir_open(dir, msg), fd;

	if (dfd < 0)
		return dfd;
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	close(dfd);
	if (fd < 0)
		return qual_fail(msg, QUAL_EIO, "cannot create '%s/%s': %s", dir, name,
				 strerror(errno));
	if (readable && compile_user.set &&
	    (fchown(fd, (uid_t)-1, compile_user.gid) < 0 || fchmod(fd, 0640) < 0)) {
		int e = errno;
		close(fd);
		return qual_fail(msg, QUAL_EIO, "cannot give '%s/%s' to the compile user: %s",
				 dir, name, strerror(e));
	}
	return fd;
}

int rtc__workdir_put(const char *dir, const char *name, const char *data, size_t len,
		     char *path, size_t cap, struct qual_msg *msg)
{
	int rc, fd;

	if ((rc = fs_path_join(path, cap, dir, name, msg)))
		return rc;
	if ((fd = workdir_create(dir, name, true, msg)) < 0)
		return fd;
	rc = 0;
	if (fs_write_all(fd, data, len) < 0)
		rc = qual_fail(msg, QUAL_EIO, "cannot write '%s': %s", path, strerror(errno));
	if (close(fd) < 0 && !rc)
		rc = qual_fail(msg, QUAL_EIO, "cannot write '%s': %s", path, strerror(errno));
	return rc;
}

int rtc__workdir_out_path(char *path, size_t cap, const char *dir, const char *name,
			  struct qual_msg *msg)
{
	char out[PATH_MAX];
	int rc;

	if ((rc = fs_path_join(out, sizeof out, dir, RTC__OUT_DIR, msg)))
		return rc;
	return fs_path_join(path, cap, out, name, msg);
}

/* ---- running the child ----------------------------------------------------- */

char **rtc__child_env_for(const char *libdir, const char *dir)
{
	static const char *const drop[] = { "LD_LIBRARY_PATH=", "TMPDIR=",
					    "CUDA_CACHE_DISABLE=", QUAL_PARENT_ENV "=",
					    RTC__OUT_ENV "=", RTC__SRC_ENV "=",
					    RTC__ARGS_ENV "=", NULL };
	const char *old = getenv("LD_LIBRARY_PATH");
	char *add[8] = { NULL };
	char **env;

	if (old && *old) {
		if (asprintf(&add[0], "LD_LIBRARY_PATH=%s:%s", libdir, old) < 0)
			abort();
	} else if (asprintf(&add[0], "LD_LIBRARY_PATH=%s", libdir) < 0)
		abort();
	if (asprintf(&add[1], "TMPDIR=%s/" RTC_TMP_DIR, dir) < 0 ||
	    asprintf(&add[2], "CUDA_CACHE_DISABLE=1") < 0 ||
	    asprintf(&add[3], "%s=%ld", QUAL_PARENT_ENV, (long)getpid()) < 0 ||
	    asprintf(&add[4], RTC__OUT_ENV "=%s/" RTC__OUT_DIR, dir) < 0 ||
	    asprintf(&add[5], RTC__SRC_ENV "=%s/" RTC__SOURCE_FILE, dir) < 0 ||
	    asprintf(&add[6], RTC__ARGS_ENV "=%s/" RTC__ARGS_FILE, dir) < 0)
		abort();
	env = child_env_with(drop, (const char *const *)add);
	for (int i = 0; add[i]; i++)
		free(add[i]);
	return env;
}

int rtc__helper_start(struct child *c, const char *const *argv, const char *libdir,
		      const char *dir, int lib_fd, struct qual_msg *msg)
{
	char name[PATH_MAX + 32], path[PATH_MAX];
	const char *shown[3] = { argv[0], argv[0] ? argv[1] : NULL, NULL };
	char **env = NULL, *args;
	size_t len;
	int out = -1, rc;

	child_init(c);
	/* Its arguments after the command go in a file of its folder, out of
	 * sight of every other process (RTC__ARGS_ENV). */
	args = strv_join_nul(shown[1] ? argv + 2 : argv + 1, &len);
	rc = rtc__workdir_put(dir, RTC__ARGS_FILE, args, len, path, sizeof path, msg);
	free(args);
	if (rc)
		return rc;
	/* Ours, new: the child writes it through the descriptor only. */
	if ((out = workdir_create(dir, RTC__STDERR_FILE, false, msg)) < 0)
		return out;
	env = rtc__child_env_for(libdir, dir);
	c->argv = shown;
	c->env = (const char *const *)env;
	c->in = lib_fd >= 0 ? lib_fd : CHILD_NULL;
	c->out = out;
	c->err = CHILD_TO_OUT;
	/* A group of its own, so a timeout kills everything it started. */
	c->group = CHILD_GROUP_NEW;
	c->set_ids = compile_user.set;
	c->uid = compile_user.uid;
	c->gid = compile_user.gid;
	snprintf(name, sizeof name, "compiler helper '%s'", argv[0]);
	c->name = name;
	rc = child_start(c, msg);
	/* None outlives the start: argv is the caller's, env and name ours. */
	close(out);
	child_env_free(env);
	c->argv = NULL;
	c->env = NULL;
	c->name = NULL;
	return rc;
}

void rtc__report_read(const char *dir, struct child_report *rep)
{
	char path[PATH_MAX];
	char *text = NULL, *line, *save = NULL;
	size_t size;

	memset(rep, 0, sizeof *rep);
	if (rtc__workdir_out_path(path, sizeof path, dir, RTC__RESULT_FILE, NULL) ||
	    fs_read_capped_placed(path, rtc__child_owner(), RTC_REPORT_CAP, &text, &size, NULL))
		return;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		const char *v;
		if (!eq)
			continue;
		*eq = '\0';
		v = eq + 1;
		if (!strcmp(line, "status"))
			rep->status = atoi(v);
		else if (!strcmp(line, "message"))
			snprintf(rep->message, sizeof rep->message, "%s", v);
		else if (!strcmp(line, "abi"))
			snprintf(rep->abi, sizeof rep->abi, "%s", v);
		else if (!strcmp(line, "version"))
			snprintf(rep->version, sizeof rep->version, "%s", v);
		else if (!strcmp(line, "compile_ms"))
			rep->compile_ms = strtod(v, NULL);
		else if (!strcmp(line, "log_size"))
			rep->log_size = strtoull(v, NULL, 10);
		else if (!strcmp(line, "log_kept"))
			rep->log_kept = strtoull(v, NULL, 10);
		else if (!strcmp(line, "code_size"))
			rep->code_size = strtoull(v, NULL, 10);
		else if (!strcmp(line, "end"))
			rep->complete = true;
	}
	/* Statuses are 0 or negative QUAL_E* codes; anything else is garbage. */
	if (rep->status > 0)
		rep->complete = false;
	free(text);
}

/* The last non-empty line the child printed, for messages about a child that
 * ended without reporting (a loader error, a usage error). */
static void stderr_tail(const char *dir, char *out, size_t cap)
{
	char path[PATH_MAX];
	char *text = NULL;
	size_t size;

	out[0] = '\0';
	if (fs_path_join(path, sizeof path, dir, RTC__STDERR_FILE, NULL) ||
	    fs_read_capped_placed(path, geteuid(), RTC_REPORT_CAP, &text, &size, NULL))
		return;
	text_last_line(text, size, out, cap);
	free(text);
}

/* Whether the child noted sig as its own doing (RTC__FAULT_FILE) before it
 * died of it. */
static bool fault_own(const char *dir, int sig)
{
	char path[PATH_MAX], want[32];
	char *text = NULL;
	size_t size;
	bool own;

	if (rtc__workdir_out_path(path, sizeof path, dir, RTC__FAULT_FILE, NULL) ||
	    fs_read_capped_placed(path, rtc__child_owner(), RTC_REPORT_CAP, &text, &size, NULL))
		return false;
	snprintf(want, sizeof want, "self %d\n", sig);
	own = memmem(text, size, want, strlen(want)) != NULL;
	free(text);
	return own;
}

int rtc__outcome_status(const struct child_exit *ex,
			const struct child_report *rep, const char *lib,
			const char *doing, double timeout_s, const char *dir,
			char *message, size_t cap)
{
	char how[64], tail[256];
	int sig = child_exit_signal(ex);

	if (rep->complete) {
		snprintf(message, cap, "%s", rep->message);
		return rep->status;
	}
	if (ex->timed_out) {
		snprintf(message, cap, "compiler '%s' did not finish within %g s", lib,
			 timeout_s);
		return QUAL_ETIMEOUT;
	}
	child_exit_text(ex, how, sizeof how);
	if (sig && fault_own(dir, sig)) {
		snprintf(message, cap, "compiler '%s' crashed %s: %s (%s)", lib, doing,
			 how, strsignal(sig));
		return QUAL_ECRASH;
	}
	if (sig) {
		/* SIGKILL, a signal it does not catch, or a fault signal another
		 * process sent: nothing says the library crashed. */
		snprintf(message, cap, "compiler '%s' was %s %s, a signal it did not raise "
			 "itself (sent by another process): not a crash of the library's", lib,
			 how, doing);
		return QUAL_EKILLED;
	}
	stderr_tail(dir, tail, sizeof tail);
	snprintf(message, cap, "compiler '%s' %s %s without reporting%s%s", lib, how,
		 doing, tail[0] ? ": " : "", tail);
	return QUAL_EEXIT;
}
