/* Compiler libraries, run in children: the parent's half. rtc_identify and
 * rtc_compile check what they can without loading the library, then run the
 * helper program qual-compile (qual_compile.c) through child.h in a private
 * temporary folder and a process group of its own, wait for it under a time
 * limit, and read back the files it wrote. No compiler library is ever loaded
 * here. The opening of a library is here too: rtc_pin_library (qual-run's
 * pin, a sealed copy) and rtc_library_open (quald's submit check, which
 * hashes the open file itself, off its loop). */
#include "compile/rtc.h"

#include <elf.h>
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
#include "common/sha256.h"
#include "common/text.h"
#include "common/xalloc.h"

/* Defaults: the slowest real compile of the fixtures measured here is 12 s
 * (attention with ROCm 5.2.3's hiprtc for gfx90a; nvrtc 13.0 takes 0.5 s for
 * it), so 120 s is only reached by a compiler that hangs. 1 MiB holds any real
 * ptxas report many times over (one entry's report is about 300 bytes). */
#define RTC_DEFAULT_TIMEOUT_S 120.0
#define RTC_DEFAULT_LOG_CAP ((size_t)1 << 20)

/* The most of a result or stderr file read back: a result file is a few
 * hundred bytes, and only the last line of stderr is used. */
#define RTC_REPORT_CAP ((size_t)64 * 1024)

static char *helper_override;

void rtc_limits_init(struct rtc_limits *l)
{
	l->timeout_s = RTC_DEFAULT_TIMEOUT_S;
	l->log_cap = RTC_DEFAULT_LOG_CAP;
}

void rtc_set_helper(const char *path)
{
	free(helper_override);
	helper_override = path ? xstrdup(path) : NULL;
}

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

/* Who owns what a child leaves in its folder's RTC__OUT_DIR: the compile
 * user, or we. */
static uid_t child_owner(void)
{
	return compile_user.set ? compile_user.uid : geteuid();
}

/* The qual-compile to run, as a new string: helper when given, else
 * rtc_set_helper()'s, $QUAL_COMPILE, or the one beside our executable. */
static int helper_find(const char *helper, char **out, struct qual_msg *msg)
{
	const char *env = getenv("QUAL_COMPILE");

	if (!helper)
		helper = helper_override ? helper_override : env && *env ? env : NULL;
	*out = helper ? xstrdup(helper) : fs_beside_self("qual-compile");
	if (!*out)
		return qual_fail(msg, QUAL_EIO, "cannot find the running executable: %s",
				 strerror(errno));
	return 0;
}

int rtc_helper_path(char **out, struct qual_msg *msg)
{
	return helper_find(NULL, out, msg);
}

/* ---- pins ------------------------------------------------------------------ */

/* Every seal: the bytes can neither change nor be unsealed. */
#define RTC_PIN_SEALS (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL)

void rtc_pin_init(struct rtc_pin *pin)
{
	memset(pin, 0, sizeof *pin);
	pin->fd = -1;
}

void rtc_pin_release(struct rtc_pin *pin)
{
	if (pin->fd >= 0)
		close(pin->fd);
	pin->fd = -1;
}

/* Opens real once (O_NOFOLLOW: a link there now is refused; O_NONBLOCK:
 * a FIFO swapped in never blocks the open) and checks that it is a regular
 * file and, with checked, the file checked. path names the library in
 * messages. Returns the open file (close-on-exec, blocking again), or a
 * negative code with msg. */
static int library_open(const char *path, const char *real, const struct stat *checked,
			struct stat *st, struct qual_msg *msg)
{
	int fd, flags;

	fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		return qual_fail(msg, e == ENOENT ? QUAL_ENOENT : QUAL_EIO,
				 "cannot load compiler '%s': %s", path,
				 e == ENOENT ? "no such file" : e == ELOOP ?
				 "is a symbolic link now" : strerror(e));
	}
	if (fstat(fd, st) < 0) {
		int e = errno;
		close(fd);
		return qual_fail(msg, QUAL_EIO, "cannot load compiler '%s': %s", path,
				 strerror(e));
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return qual_fail(msg, QUAL_EINVAL, "cannot load compiler '%s': not a regular "
				 "file", path);
	}
	if (checked && (checked->st_dev != st->st_dev || checked->st_ino != st->st_ino)) {
		close(fd);
		return qual_fail(msg, QUAL_EINVAL, "compiler '%s' changed while it was "
				 "checked: '%s' is another file now", path, real);
	}
	/* A regular file: reads of it never wait for a writer. */
	if ((flags = fcntl(fd, F_GETFL)) >= 0)
		(void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return fd;
}

int rtc_pin_library(const char *path, struct rtc_pin *pin, struct qual_msg *msg)
{
	struct stat st;
	size_t got = 0;
	int fd, rc;

	rtc_pin_init(pin);
	if ((fd = library_open(path, path, NULL, &st, msg)) < 0)
		return fd;
	pin->fd = memfd_create("qual-compiler", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (pin->fd < 0) {
		rc = qual_fail(msg, QUAL_EIO, "cannot pin compiler '%s': memfd: %s",
			       path, strerror(errno));
		goto out;
	}
	if ((rc = sha256_hash_fd(fd, pin->fd, path, pin->sha256, &got, msg)))
		goto out;
	if (fcntl(pin->fd, F_ADD_SEALS, RTC_PIN_SEALS) < 0) {
		rc = qual_fail(msg, QUAL_EIO, "cannot pin compiler '%s': seal: %s", path,
			       strerror(errno));
		goto out;
	}
	pin->dev = st.st_dev;
	pin->ino = st.st_ino;
	pin->size = (off_t)got;
	rc = 0;
out:
	close(fd);
	if (rc)
		rtc_pin_release(pin);
	return rc;
}

int rtc_library_open(const char *path, const char *real_path, const struct stat *checked,
		     struct rtc_pin *pin, struct qual_msg *msg)
{
	struct stat st;
	int fd;

	rtc_pin_init(pin);
	if ((fd = library_open(path, real_path, checked, &st, msg)) < 0)
		return fd;
	pin->fd = fd;
	pin->dev = st.st_dev;
	pin->ino = st.st_ino;
	pin->size = st.st_size;
	return 0;
}

/* ---- the private folder ---------------------------------------------------- */

/* A compile folder, made by workdir_new():
 *
 *   qual-rtc-XXXXXX/   ours; 0700, or 0711 with a compile user: its name
 *                      may be seen in $TMPDIR, what is in it may not
 *     c-XXXXXX/        the compile folder proper ("dir"); ours, 0700, or
 *                      0710 and group the compile user's: it may pass
 *                      through, never add, remove or rename a name here,
 *                      so no name we create, write or hand over can be a
 *                      link of its
 *       source.txt     ours, written once (O_EXCL); group-readable with a
 *                      compile user (workdir_put)
 *       stderr.txt     ours (O_EXCL), the child's stdout and stderr by
 *                      descriptor (helper_start)
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

/* Creates a new compile folder (above) in $TMPDIR into dir (cap at least
 * PATH_MAX). On failure dir is "" and nothing is left behind. */
static int workdir_new(char *dir, size_t cap, struct qual_msg *msg)
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

/* Writes data into name, a new file of the compile folder dir that the
 * child may read (the source), and its path into path. */
static int workdir_put(const char *dir, const char *name, const char *data, size_t len,
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

/* The path of what the child left as name in its folder's RTC__OUT_DIR. */
static int workdir_out_path(char *path, size_t cap, const char *dir, const char *name,
			    struct qual_msg *msg)
{
	char out[PATH_MAX];
	int rc;

	if ((rc = fs_path_join(out, sizeof out, dir, RTC__OUT_DIR, msg)))
		return rc;
	return fs_path_join(path, cap, out, name, msg);
}

/* ---- running the child ----------------------------------------------------- */

/* What the child reported in its result file. */
struct child_report {
	bool complete;  /* the file exists and ends with end=1 */
	int status;
	char message[512];
	char abi[16];
	char version[32];
	double compile_ms;
	size_t log_size;
	size_t log_kept;
	size_t code_size;
};

/* The environment for the child: ours, with the library's own folder first
 * on LD_LIBRARY_PATH (its sibling libraries, e.g. libnvrtc-builtins, must win
 * over any other copy with the same soname), TMPDIR inside the private
 * folder dir, CUDA_CACHE_DISABLE=1, QUAL_DIE_WITH_PARENT naming us, and
 * where the child reports and what it compiles (RTC__OUT_ENV and
 * RTC__SRC_ENV: in the environment, never in its arguments, so that the
 * folder's name is not in /proc/PID/cmdline, which every process may read;
 * only a process that may trace the child reads its environment). nvrtc
 * 12.9 and later keep compiled code in the driver's disk cache when a driver
 * is present: on the H200 a second compile of the same source returned in
 * 32 ms instead of 472 ms with no ptxas report, and a cache shared by two
 * nvrtc builds would hand the candidate the baseline's code. Every compile
 * must be the compiler's own. Returns a new array; child_env_free() frees
 * it. */
static char **child_env_for(const char *libdir, const char *dir)
{
	static const char *const drop[] = { "LD_LIBRARY_PATH=", "TMPDIR=",
					    "CUDA_CACHE_DISABLE=", QUAL_PARENT_ENV "=",
					    RTC__OUT_ENV "=", RTC__SRC_ENV "=", NULL };
	const char *old = getenv("LD_LIBRARY_PATH");
	char *add[7] = { NULL };
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
	    asprintf(&add[5], RTC__SRC_ENV "=%s/" RTC__SOURCE_FILE, dir) < 0)
		abort();
	env = child_env_with(drop, (const char *const *)add);
	for (int i = 0; add[i]; i++)
		free(add[i]);
	return env;
}

/* Starts the helper argv[0] for the library in folder libdir, in the private
 * folder dir: its own process group, stdin from lib_fd (a pin's memfd, which
 * it loads as /proc/self/fd/0: a descriptor of ours the child gets without
 * any other; -1: /dev/null), stdout and stderr into the folder's
 * RTC__STDERR_FILE (made new here, handed over by descriptor), its --out
 * and --src in its environment (child_env_for). Returns 0 with c running,
 * or a negative code; then nothing runs. */
static int helper_start(struct child *c, const char *const *argv, const char *libdir,
			const char *dir, int lib_fd, struct qual_msg *msg)
{
	char name[PATH_MAX + 32];
	char **env = NULL;
	int out = -1, rc;

	child_init(c);
	/* Ours, new: the child writes it through the descriptor only. */
	if ((out = workdir_create(dir, RTC__STDERR_FILE, false, msg)) < 0)
		return out;
	env = child_env_for(libdir, dir);
	c->argv = argv;
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

static void report_read(const char *dir, struct child_report *rep)
{
	char path[PATH_MAX];
	char *text = NULL, *line, *save = NULL;
	size_t size;

	memset(rep, 0, sizeof *rep);
	if (workdir_out_path(path, sizeof path, dir, RTC__RESULT_FILE, NULL) ||
	    fs_read_capped_placed(path, child_owner(), RTC_REPORT_CAP, &text, &size, NULL))
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

/* Decides what became of the child. A complete result file is trusted even
 * when the child then died by a signal or was killed: it writes its results
 * and then _exit()s, and ROCm's hiprtc can crash in the runtime's teardown
 * at process exit, after the compile has succeeded and been reported.
 * Otherwise: timeout, signal, or an exit without a report. */
static int outcome_status(const struct child_exit *ex,
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
	if (sig) {
		snprintf(message, cap, "compiler '%s' crashed %s: %s (%s)", lib, doing,
			 how, strsignal(sig));
		return QUAL_ECRASH;
	}
	stderr_tail(dir, tail, sizeof tail);
	snprintf(message, cap, "compiler '%s' %s %s without reporting%s%s", lib, how,
		 doing, tail[0] ? ": " : "", tail);
	return QUAL_EEXIT;
}

/* ---- identify -------------------------------------------------------------- */

int rtc_check_library(const char *path, struct qual_msg *msg)
{
	struct stat st;

	if (!path || !*path)
		return qual_fail(msg, QUAL_EINVAL, "no compiler library given");
	Elf64_Ehdr eh;
	ssize_t got;
	int fd;

	/* Looked at before it is opened (a device is never opened), and again
	 * once open: a FIFO swapped in after the stat would block quald's loop
	 * in open or read. O_NONBLOCK makes that open return, and fstat
	 * refuses what it is. */
	if (stat(path, &st) < 0) {
		int e = errno;
		return qual_fail(msg, e == ENOENT ? QUAL_ENOENT : QUAL_EIO,
				 "cannot load compiler '%s': %s", path,
				 e == ENOENT ? "no such file" : strerror(e));
	}
	if (!S_ISREG(st.st_mode))
		return qual_fail(msg, QUAL_EINVAL, "cannot load compiler '%s': %s", path,
				 S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		return qual_fail(msg, e == ENOENT ? QUAL_ENOENT : QUAL_EIO,
				 "cannot load compiler '%s': %s", path,
				 e == ENOENT ? "no such file" : strerror(e));
	}
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return qual_fail(msg, QUAL_EIO, "cannot load compiler '%s': %s", path,
				 strerror(e));
	}
	if (S_ISDIR(st.st_mode) || !S_ISREG(st.st_mode)) {
		close(fd);
		return qual_fail(msg, QUAL_EINVAL, "cannot load compiler '%s': %s", path,
				 S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
	}
	got = read(fd, &eh, sizeof eh);
	close(fd);
	if (got != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
		return qual_fail(msg, QUAL_EINVAL,
				 "cannot load compiler '%s': not an ELF shared object", path);
	if (eh.e_ident[EI_CLASS] != ELFCLASS64)
		return qual_fail(msg, QUAL_EINVAL,
				 "cannot load compiler '%s': not a 64-bit ELF shared object",
				 path);
	if (eh.e_type != ET_DYN)
		return qual_fail(msg, QUAL_EINVAL,
				 "cannot load compiler '%s': not an ELF shared object "
				 "(ELF type %u)", path, (unsigned)eh.e_type);
	return 0;
}

static void dir_of(const char *path, char *out, size_t cap)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(out, cap, ".");
	else if (slash == path)
		snprintf(out, cap, "/");
	else
		snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

/* p's names: path (as given) and real (the file). */
static int pending_init(struct rtc_pending *p, const char *path, const char *real,
			struct qual_msg *msg)
{
	memset(p, 0, sizeof *p);
	child_init(&p->child);
	p->lib_fd = -1;
	if (!path || !*path)
		return qual_fail(msg, QUAL_EINVAL, "no compiler library given");
	if (strlen(path) >= sizeof p->path)
		return qual_fail(msg, QUAL_EINVAL, "compiler path '%s' is too long", path);
	strcpy(p->path, path);
	if (real) {
		if (strlen(real) >= sizeof p->real_path)
			return qual_fail(msg, QUAL_EINVAL, "compiler path '%s' is too long",
					 real);
		strcpy(p->real_path, real);
	}
	return 0;
}

/* rtc_identify's checks, before any child: p->path, p->real_path (real:
 * the one given, else realpath(path)). Only the real path is looked at:
 * path may name something else by now. */
static int identify_check(const char *path, const char *real, struct rtc_pending *p,
			  struct qual_msg *msg)
{
	int rc;

	if ((rc = pending_init(p, path, real, msg)))
		return rc;
	if (real)
		return rtc_check_library(real, msg);
	if ((rc = rtc_check_library(path, msg)))
		return rc;
	if (!realpath(path, p->real_path))
		return qual_fail(msg, QUAL_EIO, "cannot load compiler '%s': %s", path,
				 strerror(errno));
	return 0;
}

/* Starts the identify child of p, which loads p->lib_fd (its stdin, as
 * /proc/self/fd/0): the bytes its caller hashed. */
static int identify_spawn(struct rtc_pending *p, const char *helper, struct qual_msg *msg)
{
	char libdir[PATH_MAX];
	char *exe = NULL;
	int rc;

	if ((rc = helper_find(helper, &exe, msg)) ||
	    (rc = workdir_new(p->dir, sizeof p->dir, msg)))
		goto out;
	dir_of(p->real_path, libdir, sizeof libdir);
	{
		const char *argv[] = { exe, "identify", "--lib-fd", "0",
				       "--label", p->path, NULL };
		rc = helper_start(&p->child, argv, libdir, p->dir, p->lib_fd, msg);
	}
out:
	free(exe);
	if (rc) {
		rtc_workdir_remove(p->dir);
		p->dir[0] = '\0';
	}
	return rc;
}

int rtc_identify_start(const char *path, const char *real_path, int lib_fd,
		       const char *helper, struct rtc_pending *p, struct qual_msg *msg)
{
	int rc = pending_init(p, path, real_path, msg);

	if (!rc && (!real_path || lib_fd < 0))
		rc = qual_fail(msg, QUAL_EINVAL, "compiler '%s' is not open", p->path);
	if (rc)
		return rc;
	p->lib_fd = lib_fd;
	return identify_spawn(p, helper, msg);
}

int rtc_identify_finish(struct rtc_pending *p, const struct child_exit *ex,
			double timeout_s, struct rtc_identity *id, struct qual_msg *msg)
{
	struct child_report rep;
	char message[512];
	int rc;

	id->abi = RTC_ABI_NONE;
	id->abi_name[0] = '\0';
	id->version[0] = '\0';
	id->sha256[0] = '\0';
	id->dev = 0;
	id->ino = 0;
	id->size = 0;
	id->pinned = false;
	id->lib_fd = -1;
	snprintf(id->path, sizeof id->path, "%s", p->path);
	snprintf(id->real_path, sizeof id->real_path, "%s", p->real_path);
	report_read(p->dir, &rep);
	rc = outcome_status(ex, &rep, p->path, "while loading", timeout_s, p->dir,
			    message, sizeof message);
	if (rc) {
		qual_fail(msg, rc, "%s", message);
		goto out;
	}
	if (!strcmp(rep.abi, "nvrtc"))
		id->abi = RTC_ABI_NVRTC;
	else if (!strcmp(rep.abi, "hiprtc"))
		id->abi = RTC_ABI_HIPRTC;
	else {
		rc = qual_fail(msg, QUAL_EABI, "cannot load compiler '%s': no nvrtc or "
			       "hiprtc entry points", p->path);
		goto out;
	}
	strcpy(id->abi_name, id->abi == RTC_ABI_NVRTC ? "nvrtc" : "hiprtc");
	snprintf(id->version, sizeof id->version, "%s", rep.version);
out:
	if (!p->keep_dir) {
		rtc_workdir_remove(p->dir);
		p->dir[0] = '\0';
	}
	return rc;
}

void rtc_identify_abort(struct rtc_pending *p)
{
	if (p->child.pid > 0) {
		child_kill(&p->child, SIGKILL);
		(void)child_wait(&p->child, 0, NULL);
	}
	if (!p->keep_dir) {
		rtc_workdir_remove(p->dir);
		p->dir[0] = '\0';
	}
}

void rtc_identity_release(struct rtc_identity *id)
{
	if (id->pinned && id->lib_fd >= 0)
		close(id->lib_fd);
	id->pinned = false;
	id->lib_fd = -1;
}

int rtc_identify(const char *path, const char *real_path, const char *expect_sha256,
		 const struct rtc_limits *lim, struct rtc_identity *id,
		 struct qual_msg *msg)
{
	struct rtc_limits defaults;
	struct rtc_pending p;
	struct rtc_pin pin;
	struct child_exit ex;
	int rc;

	memset(id, 0, sizeof *id);
	id->lib_fd = -1;
	rtc_pin_init(&pin);
	if (!lim) {
		rtc_limits_init(&defaults);
		lim = &defaults;
	}
	rc = identify_check(path, real_path, &p, msg);
	snprintf(id->path, sizeof id->path, "%s", p.path);
	snprintf(id->real_path, sizeof id->real_path, "%s", p.real_path);
	if (rc || (rc = rtc_pin_library(p.real_path, &pin, msg)))
		goto out;
	snprintf(id->sha256, sizeof id->sha256, "%s", pin.sha256);
	/* Checked before any child loads them: bytes that are not the ones
	 * checked never run. */
	if (expect_sha256 && strcmp(expect_sha256, pin.sha256) != 0) {
		rc = qual_fail(msg, QUAL_ECHECK, "compiler '%s' is not the library that "
			       "was checked: '%s' has sha256 %s now, %s expected", p.path,
			       p.real_path, pin.sha256, expect_sha256);
		goto out;
	}
	p.lib_fd = pin.fd;
	if ((rc = identify_spawn(&p, NULL, msg)))
		goto out;
	if ((rc = child_wait(&p.child, child_now() + lim->timeout_s, &ex))) {
		rc = qual_fail(msg, rc, "cannot wait for compiler helper: %s",
			       strerror(errno));
		rtc_identify_abort(&p);
		goto out;
	}
	rc = rtc_identify_finish(&p, &ex, lim->timeout_s, id, msg);
	/* The child loaded our pin: its hash is ours. */
	snprintf(id->sha256, sizeof id->sha256, "%s", pin.sha256);
	id->dev = pin.dev;
	id->ino = pin.ino;
	id->size = pin.size;
	if (rc == 0 || rc == QUAL_ECRASH || rc == QUAL_ETIMEOUT || rc == QUAL_EEXIT) {
		id->pinned = true;
		id->lib_fd = pin.fd;
		pin.fd = -1;
	}
out:
	rtc_pin_release(&pin);
	return rc;
}

/* ---- compile --------------------------------------------------------------- */

/* Final machine code only: a real architecture, never a virtual one
 * (compute_90 would give PTX, which the driver compiles again at load time).
 * nvrtc: sm_ and digits, with an optional feature-set letter (sm_90a).
 * hiprtc: gfx and a processor id, with optional target features
 * (gfx90a:xnack-). */
static bool arch_valid(enum rtc_abi abi, const char *arch)
{
	const char *p;

	if (abi == RTC_ABI_NVRTC) {
		if (strncmp(arch, "sm_", 3) != 0)
			return false;
		for (p = arch + 3; *p >= '0' && *p <= '9'; p++)
			;
		if (p == arch + 3)
			return false;
		if (*p >= 'a' && *p <= 'z')
			p++;
		return *p == '\0';
	}
	if (abi == RTC_ABI_HIPRTC) {
		if (strncmp(arch, "gfx", 3) != 0 || !arch[3])
			return false;
		for (p = arch + 3; *p; p++)
			if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
			      *p == ':' || *p == '+' || *p == '-'))
				return false;
		return true;
	}
	return false;
}

static int request_check(const struct rtc_request *req, struct qual_msg *msg)
{
	const struct rtc_identity *c = req->compiler;

	if (!c || (c->abi != RTC_ABI_NVRTC && c->abi != RTC_ABI_HIPRTC))
		return qual_fail(msg, QUAL_EINVAL, "compiler not identified");
	if (!req->source || !req->program_name || !req->arch)
		return qual_fail(msg, QUAL_EINVAL, "incomplete compile request");
	if (req->noptions < 0 || (req->noptions > 0 && !req->options))
		return qual_fail(msg, QUAL_EINVAL, "bad compile options");
	if (!arch_valid(c->abi, req->arch))
		return qual_fail(msg, QUAL_EINVAL,
				 "cannot compile for '%s': %s needs a real architecture "
				 "such as %s (final machine code only)", req->arch,
				 c->abi_name, c->abi == RTC_ABI_NVRTC ? "sm_90" : "gfx90a");
	return 0;
}

/* Reads the child's log and code into out. */
static int outputs_read(const char *dir, const struct child_report *rep,
			size_t log_cap, struct rtc_result *out,
			struct qual_msg *msg)
{
	char path[PATH_MAX];
	size_t got;
	int rc;

	if ((rc = workdir_out_path(path, sizeof path, dir, RTC__LOG_FILE, msg)))
		return rc;
	if (fs_read_capped_placed(path, child_owner(), log_cap, &out->log, &got, NULL) == 0) {
		out->log_size = rep->log_size > got ? rep->log_size : got;
		out->log_truncated = out->log_size > got;
	}
	if (out->status)
		return 0;
	if (rep->code_size == 0) {
		/* A success without code: the child guarantees this cannot
		 * happen, so the result file was not the child's. */
		out->status = QUAL_EEXIT;
		snprintf(out->message, sizeof out->message,
			 "compiler helper reported success without code");
		return 0;
	}
	if (rep->code_size > RTC_OUTPUT_LIMIT)
		return qual_fail(msg, QUAL_ELIMIT, "code object of %zu bytes is over the "
				 "limit", rep->code_size);
	if ((rc = workdir_out_path(path, sizeof path, dir, RTC__CODE_FILE, msg)) ||
	    (rc = fs_read_capped_placed(path, child_owner(), rep->code_size,
					(char **)&out->code, &got, msg)))
		return rc;
	if (got != rep->code_size)
		return qual_fail(msg, QUAL_EIO, "code file holds %zu bytes, %zu reported",
				 got, rep->code_size);
	out->code_size = got;
	return 0;
}

int rtc_compile(const struct rtc_request *req, const struct rtc_limits *lim,
		struct rtc_result *out, struct qual_msg *msg)
{
	struct rtc_limits defaults;
	struct child_report rep;
	struct child_exit ex;
	struct child child;
	const struct rtc_identity *c;
	char dir[PATH_MAX] = "", libdir[PATH_MAX];
	char src_path[PATH_MAX], cap_text[32], doing[PATH_MAX + 64];
	const char **argv = NULL;
	char *exe = NULL;
	int rc, i, k = 0;

	memset(out, 0, sizeof *out);
	rtc_parse_resources(RTC_ABI_NONE, NULL, &out->res);
	if (!lim) {
		rtc_limits_init(&defaults);
		lim = &defaults;
	}
	if ((rc = request_check(req, msg)))
		return rc;
	c = req->compiler;
	if ((rc = helper_find(NULL, &exe, msg)) ||
	    (rc = workdir_new(dir, sizeof dir, msg)) ||
	    (rc = workdir_put(dir, RTC__SOURCE_FILE, req->source, strlen(req->source),
			      src_path, sizeof src_path, msg)))
		goto out;

	dir_of(c->real_path, libdir, sizeof libdir);
	snprintf(cap_text, sizeof cap_text, "%zu", lim->log_cap);
	argv = xcalloc(20 + (size_t)req->noptions, sizeof *argv);
	argv[k++] = exe;
	argv[k++] = "compile";
	/* A pinned identity's bytes, never its path again. */
	argv[k++] = c->pinned ? "--lib-fd" : "--lib";
	argv[k++] = c->pinned ? "0" : c->real_path;
	argv[k++] = "--abi";
	argv[k++] = c->abi_name;
	argv[k++] = "--arch";
	argv[k++] = req->arch;
	/* --src and --out are in its environment (child_env_for). */
	argv[k++] = "--name";
	argv[k++] = req->program_name;
	argv[k++] = "--label";
	argv[k++] = c->path;
	argv[k++] = "--log-cap";
	argv[k++] = cap_text;
	argv[k++] = "--";
	for (i = 0; i < req->noptions; i++)
		argv[k++] = req->options[i];
	argv[k] = NULL;
	if ((rc = helper_start(&child, argv, libdir, dir, c->pinned ? c->lib_fd : -1, msg)))
		goto out;
	if ((rc = child_wait(&child, child_now() + lim->timeout_s, &ex))) {
		rc = qual_fail(msg, rc, "cannot wait for compiler helper: %s",
			       strerror(errno));
		child_kill(&child, SIGKILL);
		(void)child_wait(&child, 0, NULL);
		goto out;
	}

	report_read(dir, &rep);
	snprintf(doing, sizeof doing, "compiling '%s'", req->program_name);
	out->status = outcome_status(&ex, &rep, c->path, doing, lim->timeout_s, dir,
				     out->message, sizeof out->message);
	out->compile_ms = rep.compile_ms;
	if ((rc = outputs_read(dir, &rep, lim->log_cap, out, msg)))
		goto out;
	if (!out->log)
		out->log = xstrdup("");
	if (out->status == 0) {
		if ((rc = sha256_hash_buffer(out->code, out->code_size,
					     out->code_sha256, msg)))
			goto out;
		rtc_parse_resources(c->abi, out->log, &out->res);
		rtc_parse_code_resources(c->abi, out->code, out->code_size, &out->res);
	}
out:
	free(argv);
	free(exe);
	rtc_workdir_remove(dir);
	if (rc)
		rtc_result_release(out);
	return rc;
}

void rtc_result_release(struct rtc_result *r)
{
	free(r->code);
	free(r->log);
	r->code = NULL;
	r->log = NULL;
	r->code_size = 0;
	r->log_size = 0;
}
