/* Compiler libraries, run in children: the parent's half. rtc_identify and
 * rtc_compile check what they can without loading the library, then run the
 * helper program qual-compile (qual_compile.c) in a private temporary folder
 * and a process group of its own, wait for it under a time limit, and read
 * back the files it wrote. No compiler library is ever loaded here. */
#include "compile/rtc.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/lifetime.h"
#include "common/sha256.h"
#include "common/xalloc.h"

extern char **environ;

/* Defaults: the slowest real compile of the fixtures measured here is 12 s
 * (attention with ROCm 5.2.3's hiprtc for gfx90a; nvrtc 13.0 takes 0.5 s for
 * it), so 120 s is only reached by a compiler that hangs. 1 MiB holds any real
 * ptxas report many times over (one entry's report is about 300 bytes). */
#define RTC_DEFAULT_TIMEOUT_S 120.0
#define RTC_DEFAULT_LOG_CAP ((size_t)1 << 20)

/* Polling the child: start at 1 ms (an identify finishes in ~50 ms), double
 * up to 20 ms, so a result is noticed within 20 ms and a long compile costs
 * the parent ~50 wakeups a second. */
#define RTC_POLL_FIRST_NS 1000000L
#define RTC_POLL_MAX_NS 20000000L

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

static int helper_path(char *out, size_t cap, struct qual_msg *msg)
{
	const char *env = getenv("QUAL_COMPILE");
	char self[PATH_MAX];
	ssize_t n;
	char *slash;

	if (helper_override || (env && *env)) {
		const char *p = helper_override ? helper_override : env;
		if (strlen(p) >= cap)
			return qual_fail(msg, QUAL_EINVAL, "helper path '%s' is too long", p);
		strcpy(out, p);
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n < 0)
		return qual_fail(msg, QUAL_EIO, "cannot find the running executable: %s",
				 strerror(errno));
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		slash[1] = '\0';
	if ((size_t)snprintf(out, cap, "%squal-compile", slash ? self : "./") >= cap)
		return qual_fail(msg, QUAL_EINVAL, "helper path is too long");
	return 0;
}

/* ---- the private folder ---------------------------------------------------- */

static int workdir_new(char *dir, size_t cap, struct qual_msg *msg)
{
	const char *tmp = getenv("TMPDIR");
	char sub[PATH_MAX];

	if (!tmp || !*tmp)
		tmp = "/tmp";
	if ((size_t)snprintf(dir, cap, "%s/qual-rtc-XXXXXX", tmp) >= cap)
		return qual_fail(msg, QUAL_EINVAL, "temporary folder name is too long");
	if (!mkdtemp(dir)) {
		int e = errno;
		snprintf(sub, sizeof sub, "%s", dir);
		dir[0] = '\0';
		return qual_fail(msg, QUAL_EIO, "cannot create temporary folder '%s': %s",
				 sub, strerror(e));
	}
	/* The child's own TMPDIR, so whatever the compiler leaves behind (comgr
	 * writes its inputs to $TMPDIR/comgr-XXXXXX) goes when the folder does,
	 * even when the child is killed. */
	snprintf(sub, sizeof sub, "%s/tmp", dir);
	if (mkdir(sub, 0700) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot create '%s': %s", sub,
				 strerror(errno));
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* Removes the folder and everything in it; dir "" is nothing to remove. */
static void workdir_remove(const char *dir)
{
	if (dir[0])
		nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int path_join(char *out, size_t cap, const char *dir, const char *name,
		     struct qual_msg *msg)
{
	if ((size_t)snprintf(out, cap, "%s/%s", dir, name) >= cap)
		return qual_fail(msg, QUAL_EINVAL, "path '%s/%s' is too long", dir, name);
	return 0;
}

/* Reads at most cap bytes of the file (all of it when it is smaller) into a
 * new NUL-terminated buffer; *size gets the bytes read. */
static int file_read(const char *path, size_t cap, char **out, size_t *size,
		     struct qual_msg *msg)
{
	char *buf = NULL;
	size_t n = 0;
	int fd, rc = 0;
	struct stat st;

	*out = NULL;
	*size = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return qual_fail(msg, errno == ENOENT ? QUAL_ENOENT : QUAL_EIO,
				 "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = qual_fail(msg, QUAL_EIO, "cannot stat '%s': %s", path,
			       strerror(errno));
		goto out;
	}
	if ((size_t)st.st_size < cap)
		cap = (size_t)st.st_size;
	buf = xmalloc(cap + 1);
	while (n < cap) {
		ssize_t got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", path,
				       strerror(errno));
			goto out;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	buf[n] = '\0';
	*out = buf;
	*size = n;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}

static int file_write(const char *path, const void *data, size_t size,
		      struct qual_msg *msg)
{
	const char *p = data;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return qual_fail(msg, QUAL_EIO, "cannot create '%s': %s", path,
				 strerror(errno));
	while (size > 0) {
		ssize_t put = write(fd, p, size);
		if (put < 0 && errno == EINTR)
			continue;
		if (put < 0) {
			int e = errno;
			close(fd);
			return qual_fail(msg, QUAL_EIO, "cannot write '%s': %s", path,
					 strerror(e));
		}
		p += put;
		size -= (size_t)put;
	}
	if (close(fd) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot write '%s': %s", path,
				 strerror(errno));
	return 0;
}

/* ---- running the child ----------------------------------------------------- */

struct child_outcome {
	bool timed_out;
	int wstatus;    /* from waitpid */
};

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

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The environment for the child: ours, with the library's own folder first
 * on LD_LIBRARY_PATH (its sibling libraries, e.g. libnvrtc-builtins, must win
 * over any other copy with the same soname), TMPDIR inside the private
 * folder, and CUDA_CACHE_DISABLE=1. nvrtc 12.9 and later keep compiled code in
 * the driver's disk cache when a driver is present: on the H200 a second
 * compile of the same source returned in 32 ms instead of 472 ms with no
 * ptxas report, and a cache shared by two nvrtc builds would hand the
 * candidate the baseline's code. Every compile must be the compiler's own.
 * Returns a new NULL-terminated array; env_free() frees it. */
static char **env_build(const char *libdir, const char *tmpdir)
{
	size_t n = 0, i, k = 0;
	const char *old = getenv("LD_LIBRARY_PATH");
	char **env;

	while (environ && environ[n])
		n++;
	env = xcalloc(n + 5, sizeof *env);
	for (i = 0; i < n; i++) {
		if (strncmp(environ[i], "LD_LIBRARY_PATH=", 16) == 0 ||
		    strncmp(environ[i], "TMPDIR=", 7) == 0 ||
		    strncmp(environ[i], "CUDA_CACHE_DISABLE=", 19) == 0 ||
		    strncmp(environ[i], QUAL_PARENT_ENV "=", strlen(QUAL_PARENT_ENV) + 1) == 0)
			continue;
		env[k++] = xstrdup(environ[i]);
	}
	if (old && *old) {
		size_t len = strlen(libdir) + strlen(old) + 32;
		env[k] = xmalloc(len);
		snprintf(env[k++], len, "LD_LIBRARY_PATH=%s:%s", libdir, old);
	} else {
		size_t len = strlen(libdir) + 32;
		env[k] = xmalloc(len);
		snprintf(env[k++], len, "LD_LIBRARY_PATH=%s", libdir);
	}
	env[k] = xmalloc(strlen(tmpdir) + 8);
	sprintf(env[k++], "TMPDIR=%s", tmpdir);
	env[k++] = xstrdup("CUDA_CACHE_DISABLE=1");
	env[k] = xmalloc(64);
	snprintf(env[k++], 64, "%s=%ld", QUAL_PARENT_ENV, (long)getpid());
	env[k] = NULL;
	return env;
}

static void env_free(char **env)
{
	size_t i;

	for (i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

static void sleep_ns(long ns)
{
	struct timespec ts = { 0, ns };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Waits until pid has exited, without reaping it (WNOWAIT), so that its
 * process group cannot be reused while we kill what is left in it. Returns 1
 * when it exited, 0 when deadline passed first, or a negative code. */
static int child_wait_exit(pid_t pid, double deadline, struct qual_msg *msg)
{
	long step = RTC_POLL_FIRST_NS;

	for (;;) {
		siginfo_t si;
		memset(&si, 0, sizeof si);
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
			if (errno == EINTR)
				continue;
			return qual_fail(msg, QUAL_EIO, "cannot wait for compiler helper: %s",
					 strerror(errno));
		}
		if (si.si_pid == pid)
			return 1;
		if (deadline > 0 && now_s() >= deadline)
			return 0;
		sleep_ns(step);
		if (step < RTC_POLL_MAX_NS)
			step *= 2;
		if (step > RTC_POLL_MAX_NS)
			step = RTC_POLL_MAX_NS;
	}
}

/* Runs the helper with argv in its own process group, stdin from /dev/null,
 * stdout and stderr into the folder, and waits at most timeout_s. Returns 0
 * when the child ran (whatever became of it: see oc), or a negative code when
 * it could not be started or waited for. */
static int child_run(char *const argv[], const char *libdir, const char *dir,
		     double timeout_s, struct child_outcome *oc,
		     struct qual_msg *msg)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	char out_path[PATH_MAX], tmp_path[PATH_MAX];
	char **env = NULL;
	sigset_t none, all;
	pid_t pid = -1;
	int rc, err;

	memset(oc, 0, sizeof *oc);
	if ((rc = path_join(out_path, sizeof out_path, dir, RTC__STDERR_FILE, msg)) ||
	    (rc = path_join(tmp_path, sizeof tmp_path, dir, "tmp", msg)))
		return rc;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, out_path,
					 O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	/* Its own process group (so a timeout kills everything it started), an
	 * empty signal mask and default dispositions (the caller may ignore
	 * SIGPIPE or block signals; a compiler should see a plain process). */
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
				 POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);

	env = env_build(libdir, tmp_path);
	err = posix_spawn(&pid, argv[0], &fa, &attr, argv, env);
	if (err) {
		rc = qual_fail(msg, err == ENOENT ? QUAL_ENOENT : QUAL_EIO,
			       "cannot start compiler helper '%s': %s", argv[0],
			       strerror(err));
		goto out;
	}
	rc = child_wait_exit(pid, now_s() + timeout_s, msg);
	if (rc == 0) {
		oc->timed_out = true;
		kill(-pid, SIGKILL);
		rc = child_wait_exit(pid, 0, msg);
	}
	/* The leader has exited but is not reaped, so the group id is still
	 * ours: kill whatever it left running in the group, then reap it. */
	kill(-pid, SIGKILL);
	while (waitpid(pid, &oc->wstatus, 0) < 0 && errno == EINTR)
		;
	rc = rc < 0 ? rc : 0;
out:
	env_free(env);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

static void report_read(const char *dir, struct child_report *rep)
{
	char path[PATH_MAX];
	char *text = NULL, *line, *save = NULL;
	size_t size;

	memset(rep, 0, sizeof *rep);
	if (path_join(path, sizeof path, dir, RTC__RESULT_FILE, NULL) ||
	    file_read(path, 64 * 1024, &text, &size, NULL))
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
	char *text = NULL, *end, *start;
	size_t size;

	out[0] = '\0';
	if (path_join(path, sizeof path, dir, RTC__STDERR_FILE, NULL) ||
	    file_read(path, 64 * 1024, &text, &size, NULL))
		return;
	end = text + size;
	while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		end--;
	*end = '\0';
	start = end;
	while (start > text && start[-1] != '\n')
		start--;
	snprintf(out, cap, "%s", start);
	free(text);
}

static const char *signal_name(int sig)
{
	const char *abbrev = sigabbrev_np(sig);
	static __thread char buf[32];

	if (!abbrev)
		return "an unknown signal";
	snprintf(buf, sizeof buf, "SIG%s", abbrev);
	return buf;
}

/* Decides what became of the child. A complete result file is trusted even
 * when the child then died by a signal or was killed: it writes its results
 * and then _exit()s, and ROCm's hiprtc can crash in the runtime's teardown
 * at process exit, after the compile has succeeded and been reported.
 * Otherwise: timeout, signal, or an exit without a report. */
static int outcome_status(const struct child_outcome *oc,
			  const struct child_report *rep, const char *lib,
			  const char *doing, double timeout_s, const char *dir,
			  char *message, size_t cap)
{
	char tail[256];
	int sig;

	if (rep->complete) {
		snprintf(message, cap, "%s", rep->message);
		return rep->status;
	}
	if (oc->timed_out) {
		snprintf(message, cap, "compiler '%s' did not finish within %g s", lib,
			 timeout_s);
		return QUAL_ETIMEOUT;
	}
	if (WIFSIGNALED(oc->wstatus)) {
		sig = WTERMSIG(oc->wstatus);
		snprintf(message, cap, "compiler '%s' crashed %s: killed by signal %s (%s)",
			 lib, doing, signal_name(sig), strsignal(sig));
		return QUAL_ECRASH;
	}
	stderr_tail(dir, tail, sizeof tail);
	snprintf(message, cap, "compiler '%s' exited with status %d %s without reporting%s%s",
		 lib, WIFEXITED(oc->wstatus) ? WEXITSTATUS(oc->wstatus) : -1, doing,
		 tail[0] ? ": " : "", tail);
	return QUAL_ECRASH;
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

	if (stat(path, &st) < 0) {
		int e = errno;
		return qual_fail(msg, e == ENOENT ? QUAL_ENOENT : QUAL_EIO,
				 "cannot load compiler '%s': %s", path,
				 e == ENOENT ? "no such file" : strerror(e));
	}
	if (S_ISDIR(st.st_mode))
		return qual_fail(msg, QUAL_EINVAL, "cannot load compiler '%s': is a directory",
				 path);
	if (!S_ISREG(st.st_mode))
		return qual_fail(msg, QUAL_EINVAL,
				 "cannot load compiler '%s': not a regular file", path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return qual_fail(msg, QUAL_EIO, "cannot load compiler '%s': %s", path,
				 strerror(errno));
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

int rtc_identify(const char *path, const struct rtc_limits *lim,
		 struct rtc_identity *id, struct qual_msg *msg)
{
	struct rtc_limits defaults;
	struct child_outcome oc;
	struct child_report rep;
	char helper[PATH_MAX], dir[PATH_MAX] = "", libdir[PATH_MAX];
	char message[512];
	char *argv[9];
	int rc;

	memset(id, 0, sizeof *id);
	if (!lim) {
		rtc_limits_init(&defaults);
		lim = &defaults;
	}
	if (!path || !*path)
		return qual_fail(msg, QUAL_EINVAL, "no compiler library given");
	if (strlen(path) >= sizeof id->path)
		return qual_fail(msg, QUAL_EINVAL, "compiler path '%s' is too long", path);
	strcpy(id->path, path);
	if ((rc = rtc_check_library(path, msg)))
		return rc;
	if (!realpath(path, id->real_path))
		return qual_fail(msg, QUAL_EIO, "cannot load compiler '%s': %s", path,
				 strerror(errno));
	if ((rc = sha256_hash_file(id->real_path, id->sha256, msg)))
		return rc;
	if ((rc = helper_path(helper, sizeof helper, msg)) ||
	    (rc = workdir_new(dir, sizeof dir, msg)))
		goto out;

	dir_of(id->real_path, libdir, sizeof libdir);
	argv[0] = helper;
	argv[1] = "identify";
	argv[2] = "--lib";
	argv[3] = id->real_path;
	argv[4] = "--out";
	argv[5] = dir;
	argv[6] = "--label";
	argv[7] = (char *)path;
	argv[8] = NULL;
	if ((rc = child_run(argv, libdir, dir, lim->timeout_s, &oc, msg)))
		goto out;
	report_read(dir, &rep);
	rc = outcome_status(&oc, &rep, path, "while loading", lim->timeout_s, dir,
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
			       "hiprtc entry points", path);
		goto out;
	}
	strcpy(id->abi_name, id->abi == RTC_ABI_NVRTC ? "nvrtc" : "hiprtc");
	snprintf(id->version, sizeof id->version, "%s", rep.version);
out:
	workdir_remove(dir);
	if (rc)
		id->abi = RTC_ABI_NONE;
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

	if ((rc = path_join(path, sizeof path, dir, RTC__LOG_FILE, msg)))
		return rc;
	if (file_read(path, log_cap, &out->log, &got, NULL) == 0) {
		out->log_size = rep->log_size > got ? rep->log_size : got;
		out->log_truncated = out->log_size > got;
	}
	if (out->status)
		return 0;
	if (rep->code_size == 0) {
		/* A success without code: the child guarantees this cannot
		 * happen, so the result file was not the child's. */
		out->status = QUAL_ECRASH;
		snprintf(out->message, sizeof out->message,
			 "compiler helper reported success without code");
		return 0;
	}
	if (rep->code_size > RTC_OUTPUT_LIMIT)
		return qual_fail(msg, QUAL_ELIMIT, "code object of %zu bytes is over the "
				 "limit", rep->code_size);
	if ((rc = path_join(path, sizeof path, dir, RTC__CODE_FILE, msg)) ||
	    (rc = file_read(path, rep->code_size, (char **)&out->code, &got, msg)))
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
	struct child_outcome oc;
	struct child_report rep;
	const struct rtc_identity *c;
	char helper[PATH_MAX], dir[PATH_MAX] = "", libdir[PATH_MAX];
	char src_path[PATH_MAX], cap_text[32], doing[PATH_MAX + 64];
	char **argv = NULL;
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
	if ((rc = helper_path(helper, sizeof helper, msg)) ||
	    (rc = workdir_new(dir, sizeof dir, msg)) ||
	    (rc = path_join(src_path, sizeof src_path, dir, RTC__SOURCE_FILE, msg)) ||
	    (rc = file_write(src_path, req->source, strlen(req->source), msg)))
		goto out;

	dir_of(c->real_path, libdir, sizeof libdir);
	snprintf(cap_text, sizeof cap_text, "%zu", lim->log_cap);
	argv = xcalloc(20 + (size_t)req->noptions, sizeof *argv);
	argv[k++] = helper;
	argv[k++] = "compile";
	argv[k++] = "--lib";
	argv[k++] = (char *)c->real_path;
	argv[k++] = "--abi";
	argv[k++] = (char *)c->abi_name;
	argv[k++] = "--arch";
	argv[k++] = (char *)req->arch;
	argv[k++] = "--src";
	argv[k++] = src_path;
	argv[k++] = "--name";
	argv[k++] = (char *)req->program_name;
	argv[k++] = "--out";
	argv[k++] = dir;
	argv[k++] = "--label";
	argv[k++] = (char *)c->path;
	argv[k++] = "--log-cap";
	argv[k++] = cap_text;
	argv[k++] = "--";
	for (i = 0; i < req->noptions; i++)
		argv[k++] = (char *)req->options[i];
	argv[k] = NULL;
	if ((rc = child_run(argv, libdir, dir, lim->timeout_s, &oc, msg)))
		goto out;

	report_read(dir, &rep);
	snprintf(doing, sizeof doing, "compiling '%s'", req->program_name);
	out->status = outcome_status(&oc, &rep, c->path, doing, lim->timeout_s, dir,
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
	workdir_remove(dir);
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
