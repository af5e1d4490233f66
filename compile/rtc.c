/* Compiler libraries, run in children: the parent's half. rtc_identify and
 * rtc_compile check what they can without loading the library, then run the
 * helper program qual-compile (qual_compile.c) through child.h in a private
 * temporary folder and a process group of its own, wait for it under a time
 * limit, and read back the files it wrote. No compiler library is ever loaded
 * here. The opening of a library is here too: rtc_pin_library (qual-run's
 * pin, a sealed copy) and rtc_library_open (quald's submit check, which
 * hashes the open file itself, off its loop). */
#include "compile/rtc_internal.h"

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
	    (rc = rtc__workdir_new(p->dir, sizeof p->dir, msg)))
		goto out;
	dir_of(p->real_path, libdir, sizeof libdir);
	{
		const char *argv[] = { exe, "identify", "--lib-fd", "0",
				       "--label", p->path, NULL };
		rc = rtc__helper_start(&p->child, argv, libdir, p->dir, p->lib_fd, msg);
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
	rtc__report_read(p->dir, &rep);
	rc = rtc__outcome_status(ex, &rep, p->path, "while loading", timeout_s, p->dir,
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
	if (rc == 0 || rc == QUAL_ECRASH || rc == QUAL_EKILLED || rc == QUAL_ETIMEOUT ||
	    rc == QUAL_EEXIT) {
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

	if ((rc = rtc__workdir_out_path(path, sizeof path, dir, RTC__LOG_FILE, msg)))
		return rc;
	if (fs_read_capped_placed(path, rtc__child_owner(), log_cap, &out->log, &got, NULL) == 0) {
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
	if ((rc = rtc__workdir_out_path(path, sizeof path, dir, RTC__CODE_FILE, msg)) ||
	    (rc = fs_read_capped_placed(path, rtc__child_owner(), rep->code_size,
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
	    (rc = rtc__workdir_new(dir, sizeof dir, msg)) ||
	    (rc = rtc__workdir_put(dir, RTC__SOURCE_FILE, req->source, strlen(req->source),
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
	/* --src and --out are in its environment (rtc__child_env_for). */
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
	if ((rc = rtc__helper_start(&child, argv, libdir, dir, c->pinned ? c->lib_fd : -1, msg)))
		goto out;
	if ((rc = child_wait(&child, child_now() + lim->timeout_s, &ex))) {
		rc = qual_fail(msg, rc, "cannot wait for compiler helper: %s",
			       strerror(errno));
		child_kill(&child, SIGKILL);
		(void)child_wait(&child, 0, NULL);
		goto out;
	}

	rtc__report_read(dir, &rep);
	snprintf(doing, sizeof doing, "compiling '%s'", req->program_name);
	out->status = rtc__outcome_status(&ex, &rep, c->path, doing, lim->timeout_s, dir,
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
