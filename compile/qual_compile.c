/* qual-compile: the child that loads one compiler library and uses it once.
 *
 *   qual-compile identify --lib PATH|--lib-fd N --out DIR [--label NAME]
 *   qual-compile compile --lib PATH|--lib-fd N --abi nvrtc|hiprtc --arch ARCH
 *                --src FILE --name NAME --out DIR [--log-cap N] [--label NAME]
 *                -- OPTIONS...
 *
 * It is started by rtc.c (rtc_identify, rtc_compile) in a process group of
 * its own, with the library's folder first on LD_LIBRARY_PATH, and reports
 * through files in DIR (see RTC__RESULT_FILE in rtc.h): the log, the code,
 * then the result file, renamed into place so that it is complete when it
 * exists. Then it _exit()s without running destructors or atexit handlers:
 * ROCm's hiprtc can crash in its runtime teardown, and nothing a compiler does
 * after the results are written may change them. --label is the library's
 * name as the user gave it, for messages (default: --lib).
 *
 * --lib-fd N: the library is the bytes of descriptor N (rtc.c passes it as
 * stdin, N = 0: qual-run's pinned, sealed memfd, or the file quald opened
 * and hashed for its submit check), loaded as /proc/self/fd/N, so that what
 * runs is exactly what the parent hashed; its siblings still come from
 * LD_LIBRARY_PATH. The child reports no hash: the parent knows what it gave,
 * and the library, which runs here, could rewrite anything this process
 * writes. --lib PATH loads the path (by hand; rtc.c never passes it).
 *
 * --out and --src may be given in the environment instead ($QUAL_COMPILE_OUT,
 * $QUAL_COMPILE_SRC; an argument wins), and every argument after the
 * command in a file named by $QUAL_COMPILE_ARGS (NUL-terminated strings,
 * taken before those on the command line), as rtc.c does: the arguments of
 * a process are readable by every other (/proc/PID/cmdline), its
 * environment only by one that may trace it, so no other process learns
 * where this one reports, nor which library, program or options it
 * compiles.
 *
 * Every failure of the library is reported as a status in the result file;
 * the exit status is 0 when a result file was written, 2 for a usage error and
 * 3 when the result could not be written. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/confine.h"
#include "common/fsutil.h"
#include "common/lifetime.h"
#include "common/xalloc.h"
#include "compile/rtc.h"
#include "proto/strv.h"

/* The two ABIs share one shape: an opaque program handle, int result codes
 * (0 = success), and the same argument lists. Declared here rather than
 * taken from nvrtc.h / hiprtc.h so that the helper builds without either
 * toolkit; these signatures are stable C ABI since nvrtc 11.1 (which added
 * nvrtcGetCUBIN) and ROCm 4. */
typedef int (*rtc_create_fn)(void **prog, const char *src, const char *name,
			     int nheaders, const char *const *headers,
			     const char *const *include_names);
typedef int (*rtc_destroy_fn)(void **prog);
typedef int (*rtc_compile_fn)(void *prog, int nopts, const char *const *opts);
typedef int (*rtc_size_fn)(void *prog, size_t *size);
typedef int (*rtc_get_fn)(void *prog, char *out);
typedef int (*rtc_version_fn)(int *major, int *minor);
typedef const char *(*rtc_errstr_fn)(int result);

/* Entry points in the order of struct compiler_api's members. */
enum { API_CREATE, API_DESTROY, API_COMPILE, API_CODE_SIZE, API_CODE,
       API_LOG_SIZE, API_LOG, API_VERSION, API_ERRSTR, API_COUNT };
/* The required ones: all but the error string, which only improves messages. */
#define API_REQUIRED API_ERRSTR

static const char *const nvrtc_names[API_COUNT] = {
	"nvrtcCreateProgram", "nvrtcDestroyProgram", "nvrtcCompileProgram",
	"nvrtcGetCUBINSize", "nvrtcGetCUBIN", "nvrtcGetProgramLogSize",
	"nvrtcGetProgramLog", "nvrtcVersion", "nvrtcGetErrorString",
};
static const char *const hiprtc_names[API_COUNT] = {
	"hiprtcCreateProgram", "hiprtcDestroyProgram", "hiprtcCompileProgram",
	"hiprtcGetCodeSize", "hiprtcGetCode", "hiprtcGetProgramLogSize",
	"hiprtcGetProgramLog", "hiprtcVersion", "hiprtcGetErrorString",
};

struct compiler_api {
	enum rtc_abi abi;
	const char *name;
	rtc_create_fn create;
	rtc_destroy_fn destroy;
	rtc_compile_fn compile;
	rtc_size_fn code_size;
	rtc_get_fn code;
	rtc_size_fn log_size;
	rtc_get_fn log;
	rtc_version_fn version;
	rtc_errstr_fn errstr;
};

struct report {
	int status;
	char message[512];
	const char *abi;
	char version[32];
	double compile_ms;
	size_t log_size;
	size_t log_kept;
	size_t code_size;
};

struct args {
	const char *cmd;
	const char *lib;
	int lib_fd;             /* --lib-fd, or -1 */
	const char *label;
	const char *abi;
	const char *arch;
	const char *src;
	const char *name;
	const char *out;
	size_t log_cap;
	char **options;
	int noptions;
};

static void fail(struct report *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(struct report *r, int status, const char *fmt, ...)
{
	va_list ap;

	r->status = status;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof r->message, fmt, ap);
	va_end(ap);
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "qual-compile: %s '%s': %s\n", what, path, strerror(errno));
	_exit(3);
}

static void write_file(const char *dir, const char *name, const void *data,
		       size_t size)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		die("cannot create", path);
	if ((size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
		die("cannot write", path);
}

/* Writes the result file, last, by fs_write_atomic() (under a temporary
 * name, renamed into place: a result file that exists is complete), then
 * ends the process at once (see the top of this file). */
static void report_finish(const char *dir, struct report *r)
{
	char path[4096], *text = NULL, *c;
	struct qual_msg msg;
	size_t len = 0;
	FILE *f;

	/* The message is one line of the result file. */
	for (c = r->message; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	snprintf(path, sizeof path, "%s/%s", dir, RTC__RESULT_FILE);
	f = open_memstream(&text, &len);
	if (!f)
		die("cannot write", path);
	fprintf(f, "status=%d\nmessage=%s\n", r->status, r->message);
	if (r->abi)
		fprintf(f, "abi=%s\nversion=%s\n", r->abi, r->version);
	fprintf(f, "compile_ms=%.3f\nlog_size=%zu\nlog_kept=%zu\ncode_size=%zu\nend=1\n",
		r->compile_ms, r->log_size, r->log_kept, r->code_size);
	if (fclose(f) != 0)
		die("cannot write", path);
	if (fs_write_atomic(path, text, len, 0600, NULL, &msg) < 0) {
		fprintf(stderr, "qual-compile: %s\n", msg.text);
		_exit(3);
	}
	_exit(0);
}

/* Finds the entry points of one ABI. Returns how many required ones exist;
 * *missing names the first required one that does not. */
static int api_find(void *lib, const char *const names[API_COUNT], void *fns[API_COUNT],
		    const char **missing)
{
	int i, found = 0;

	*missing = NULL;
	for (i = 0; i < API_COUNT; i++) {
		fns[i] = dlsym(lib, names[i]);
		if (i < API_REQUIRED) {
			if (fns[i])
				found++;
			else if (!*missing)
				*missing = names[i];
		}
	}
	return found;
}

static void api_fill(struct compiler_api *api, enum rtc_abi abi, const char *name,
		     void *fns[API_COUNT])
{
	api->abi = abi;
	api->name = name;
	/* dlsym returns data pointers; POSIX guarantees they convert to
	 * function pointers. */
	api->create = (rtc_create_fn)fns[API_CREATE];
	api->destroy = (rtc_destroy_fn)fns[API_DESTROY];
	api->compile = (rtc_compile_fn)fns[API_COMPILE];
	api->code_size = (rtc_size_fn)fns[API_CODE_SIZE];
	api->code = (rtc_get_fn)fns[API_CODE];
	api->log_size = (rtc_size_fn)fns[API_LOG_SIZE];
	api->log = (rtc_get_fn)fns[API_LOG];
	api->version = (rtc_version_fn)fns[API_VERSION];
	api->errstr = (rtc_errstr_fn)fns[API_ERRSTR];
}

/* Loads the library and finds which ABI it exposes. Returns 0 or a status
 * with r->message set. */
static int compiler_load(const struct args *a, struct compiler_api *api,
			 struct report *r)
{
	void *fns_nv[API_COUNT], *fns_hip[API_COUNT];
	const char *miss_nv, *miss_hip;
	int nv, hip, major = -1, minor = -1, fd = a->lib_fd;
	char fd_path[64];
	void *lib;

	if (fd >= 0) {
		/* The descriptor stays open for the life of the process: the
		 * loader maps it, and nothing else may take its number. */
		snprintf(fd_path, sizeof fd_path, "/proc/self/fd/%d", fd);
		lib = dlopen(fd_path, RTLD_NOW | RTLD_LOCAL);
	} else {
		lib = dlopen(a->lib, RTLD_NOW | RTLD_LOCAL);
	}
	if (!lib) {
		fail(r, QUAL_EINVAL, "cannot load compiler '%s': %s", a->label, dlerror());
		return r->status;
	}
	nv = api_find(lib, nvrtc_names, fns_nv, &miss_nv);
	hip = api_find(lib, hiprtc_names, fns_hip, &miss_hip);
	if (nv == API_REQUIRED && hip == API_REQUIRED) {
		fail(r, QUAL_EABI, "cannot load compiler '%s': exposes both nvrtc and "
		     "hiprtc entry points", a->label);
		return r->status;
	}
	if (nv == API_REQUIRED) {
		api_fill(api, RTC_ABI_NVRTC, "nvrtc", fns_nv);
	} else if (hip == API_REQUIRED) {
		api_fill(api, RTC_ABI_HIPRTC, "hiprtc", fns_hip);
	} else if (nv == 0 && hip == 0) {
		fail(r, QUAL_EABI, "cannot load compiler '%s': no nvrtc or hiprtc entry "
		     "points", a->label);
		return r->status;
	} else {
		/* nvrtc before 11.1 has no nvrtcGetCUBIN: it can only give PTX. */
		fail(r, QUAL_EABI, "cannot load compiler '%s': %s entry point %s missing",
		     a->label, nv >= hip ? "nvrtc" : "hiprtc",
		     nv >= hip ? miss_nv : miss_hip);
		return r->status;
	}
	r->abi = api->name;
	if (api->version(&major, &minor) != 0) {
		fail(r, QUAL_EABI, "cannot load compiler '%s': %sVersion failed",
		     a->label, api->name);
		return r->status;
	}
	snprintf(r->version, sizeof r->version, "%d.%d", major, minor);
	return 0;
}

static const char *result_text(const struct compiler_api *api, int result)
{
	static char buf[32];
	const char *s = api->errstr ? api->errstr(result) : NULL;

	if (s)
		return s;
	snprintf(buf, sizeof buf, "result %d", result);
	return buf;
}

/* The first line of the log that reports an error, for the message. */
static void first_error(const char *log, size_t len, char *out, size_t cap)
{
	const char *s = log, *end = log + len;

	out[0] = '\0';
	while (s < end) {
		const char *eol = memchr(s, '\n', (size_t)(end - s));
		size_t n = eol ? (size_t)(eol - s) : (size_t)(end - s);
		if (memmem(s, n, "error", 5)) {
			snprintf(out, cap, "%.*s", (int)n, s);
			return;
		}
		s += n + 1;
	}
}

/* The source the parent wrote, whole (fs_read_capped), refused over
 * RTC_OUTPUT_LIMIT. */
static char *source_read(const char *path, struct report *r)
{
	struct qual_msg msg;
	char *buf;
	size_t n;

	if (fs_read_capped(path, RTC_OUTPUT_LIMIT + 1, &buf, &n, &msg) < 0) {
		fail(r, QUAL_EIO, "cannot read source: %s", msg.text);
		return NULL;
	}
	if (n > RTC_OUTPUT_LIMIT) {
		fail(r, QUAL_ELIMIT, "source '%s' is over the limit", path);
		free(buf);
		return NULL;
	}
	return buf;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* The log: fetched whole (the ABIs have no partial read), refused without
 * allocating when the compiler reports more than RTC_OUTPUT_LIMIT, written
 * capped. Returns the log (NUL-terminated; NULL when refused) and its text
 * length in *len. */
static char *log_fetch(const struct args *a, const struct compiler_api *api,
		       void *prog, size_t *len, struct report *r)
{
	size_t size = 0, n;
	char *log;

	*len = 0;
	if (api->log_size(prog, &size) != 0 || size == 0)
		return xstrdup("");
	if (size > RTC_OUTPUT_LIMIT) {
		r->log_size = size;
		fail(r, QUAL_ELIMIT, "compiler '%s' reported a log of %zu bytes for '%s', "
		     "over the %zu MiB limit", a->label, size, a->name,
		     RTC_OUTPUT_LIMIT >> 20);
		return NULL;
	}
	log = xmalloc(size + 1);
	if (api->log(prog, log) != 0)
		size = 0;
	log[size] = '\0';
	/* The reported size counts the terminating NUL. */
	n = size;
	while (n > 0 && log[n - 1] == '\0')
		n--;
	r->log_size = n;
	r->log_kept = n < a->log_cap ? n : a->log_cap;
	write_file(a->out, RTC__LOG_FILE, log, r->log_kept);
	*len = n;
	return log;
}

static void compile_run(const struct args *a, const struct compiler_api *api,
			struct report *r)
{
	const char **opts = NULL;
	char arch_opt[128], err_line[320], trunc[96] = "";
	char *src = NULL, *log = NULL, *code = NULL;
	void *prog = NULL;
	size_t log_len = 0, code_size = 0, off, len;
	struct qual_msg msg;
	double t0;
	int res, i, n = 0;

	if (strcmp(a->abi, api->name) != 0) {
		fail(r, QUAL_EABI, "compiler '%s' exposes %s, not %s", a->label,
		     api->name, a->abi);
		return;
	}
	if (!(src = source_read(a->src, r)))
		return;
	/* Final machine code for the exact architecture, with the resource
	 * report in the log; the arm's own options come after ours, so they
	 * can add to them (and, for -O levels, override them). Verified with
	 * nvrtc 13.0 (both -Xptxas=-v and --ptxas-options=-v print the report)
	 * and ROCm 5.2.3's hiprtc (-O3; it prints no resource report). */
	opts = xcalloc((size_t)a->noptions + 3, sizeof *opts);
	if (api->abi == RTC_ABI_NVRTC) {
		snprintf(arch_opt, sizeof arch_opt, "-arch=%s", a->arch);
		opts[n++] = arch_opt;
		opts[n++] = "-Xptxas=-v";
	} else {
		snprintf(arch_opt, sizeof arch_opt, "--offload-arch=%s", a->arch);
		opts[n++] = arch_opt;
		opts[n++] = "-O3";
	}
	for (i = 0; i < a->noptions; i++)
		opts[n++] = a->options[i];

	res = api->create(&prog, src, a->name, 0, NULL, NULL);
	if (res != 0) {
		fail(r, QUAL_ECOMPILE, "compiler '%s' cannot create program '%s': %s",
		     a->label, a->name, result_text(api, res));
		goto out;
	}
	t0 = now_ms();
	res = api->compile(prog, n, opts);
	r->compile_ms = now_ms() - t0;
	if (!(log = log_fetch(a, api, prog, &log_len, r)))
		goto out;
	if (r->log_kept < r->log_size)
		snprintf(trunc, sizeof trunc, " (log of %zu bytes, first %zu kept)",
			 r->log_size, r->log_kept);
	if (res != 0) {
		first_error(log, log_len, err_line, sizeof err_line);
		fail(r, QUAL_ECOMPILE, "compiler '%s' rejected '%s' for %s: %s%s",
		     a->label, a->name, a->arch,
		     err_line[0] ? err_line : result_text(api, res), trunc);
		goto out;
	}
	/* Never PTX: no CUBIN is a failure of the compile, not a fallback. */
	if ((res = api->code_size(prog, &code_size)) != 0 || code_size == 0) {
		fail(r, QUAL_ECOMPILE, "compiler '%s' returned no %s for '%s' on %s%s%s",
		     a->label, api->abi == RTC_ABI_NVRTC ? "cubin" : "code object",
		     a->name, a->arch, res ? ": " : "", res ? result_text(api, res) : "");
		goto out;
	}
	if (code_size > RTC_OUTPUT_LIMIT) {
		fail(r, QUAL_ELIMIT, "compiler '%s' reported code of %zu bytes for '%s', "
		     "over the %zu MiB limit", a->label, code_size, a->name,
		     RTC_OUTPUT_LIMIT >> 20);
		goto out;
	}
	code = xmalloc(code_size);
	if ((res = api->code(prog, code)) != 0) {
		fail(r, QUAL_ECOMPILE, "compiler '%s' cannot return code for '%s': %s",
		     a->label, a->name, result_text(api, res));
		goto out;
	}
	if (rtc_check_code(api->abi, a->arch, code, code_size, &off, &len, &msg)) {
		fail(r, QUAL_ECOMPILE, "compiler '%s' compiled '%s': %s", a->label,
		     a->name, msg.text);
		goto out;
	}
	write_file(a->out, RTC__CODE_FILE, code + off, len);
	r->code_size = len;
	r->status = 0;
	r->message[0] = '\0';
out:
	/* The program is not destroyed: the process ends at once, and a
	 * destroy call is one more place for a compiler under test to crash. */
	free(code);
	free(log);
	free(opts);
	free(src);
}

/* In the sanitizer build, a compiler's crash must still kill the child by
 * its signal (rtc.c reports the signal), not become AddressSanitizer's report
 * and exit status 1. Read by the ASan runtime only; unused otherwise. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_abort=0";
}

/* The fault note (RTC__FAULT_FILE, rtc.h): which fault signal was this
 * process's own. Open from before the library loads until the process ends. */
static int fault_fd = -1;

/* A fault signal: noted when this process caused it (qual_signal_own():
 * the kernel raised it, or this process did, as abort() does), never when
 * another process sent it. Then the signal takes its default course.
 * Async-signal-safe. */
static void on_fault(int sig, siginfo_t *si, void *uc)
{
	char text[32] = "self ", digits[12];
	size_t n = 5, k = 0;
	struct sigaction dfl;

	(void)uc;
	if (qual_signal_own(si) && fault_fd >= 0) {
		for (unsigned v = (unsigned)sig; k == 0 || v; v /= 10)
			digits[k++] = (char)('0' + v % 10);
		while (k)
			text[n++] = digits[--k];
		text[n++] = '\n';
		(void)!write(fault_fd, text, n);
	}
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
	/* Blocked until the handler returns, then delivered (a fault also
	 * recurs at the faulting instruction). */
	raise(sig);
}

/* Opens the fault note in out (ours) and catches the fault signals, before
 * the library is loaded. Without the note every death by a signal reads as
 * another process's doing, never as a crash. The handler runs on a stack of
 * its own: a library that overflows the thread's stack (a recursion without
 * end) faults with no stack left to run a handler on, and the kernel would
 * kill the child without the note, reading as a kill from outside. */
static void fault_watch(const char *out)
{
	static char alt[64 * 1024];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt };
	char path[4096];
	struct sigaction sa;

	snprintf(path, sizeof path, "%s/%s", out, RTC__FAULT_FILE);
	fault_fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fault_fd < 0)
		fprintf(stderr, "qual-compile: cannot create '%s': %s\n", path,
			strerror(errno));
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO;
	if (sigaltstack(&ss, NULL) == 0)
		sa.sa_flags |= SA_ONSTACK;
	sigfillset(&sa.sa_mask);
	for (int sig = 1; sig < NSIG; sig++)
		if (qual_fault_signal(sig))
			sigaction(sig, &sa, NULL);
}

static int usage(const char *why)
{
	fprintf(stderr, "qual-compile: %s\n"
		"usage: qual-compile identify --lib PATH|--lib-fd N --out DIR [--label NAME]\n"
		"       qual-compile compile --lib PATH|--lib-fd N --abi nvrtc|hiprtc "
		"--arch ARCH --src FILE --name NAME --out DIR [--log-cap N] [--label NAME] "
		"-- OPTIONS...\n"
		"(--out and --src may be given as $" RTC__OUT_ENV " and $" RTC__SRC_ENV ")\n",
		why);
	return 2;
}

/* The arguments after the command that rtc.c put in a file
 * ($RTC__ARGS_ENV, rtc.h), before any on the command line, into all (whose
 * strings a->options may point to until the end). Returns the argument
 * count, argv's own when there is no such file; -1 when it cannot be read. */
static int args_from_file(int argc, char **argv, struct strv *all)
{
	const char *path = getenv(RTC__ARGS_ENV);
	struct qual_msg msg;
	size_t size;
	char *text;

	if (!path || !*path || argc < 2)
		return argc;
	if (fs_read_capped(path, STRV_NUL_MAX, &text, &size, &msg) < 0) {
		fprintf(stderr, "qual-compile: %s\n", msg.text);
		return -1;
	}
	strv_push(all, argv[0]);
	strv_push(all, argv[1]);
	strv_push_nul(all, text, size);
	free(text);
	for (int i = 2; i < argc; i++)
		strv_push(all, argv[i]);
	return (int)all->n;
}

static int args_parse(int argc, char **argv, struct args *a)
{
	int i;

	memset(a, 0, sizeof *a);
	a->log_cap = (size_t)1 << 20;
	a->lib_fd = -1;
	if (argc < 2)
		return -1;
	a->cmd = argv[1];
	for (i = 2; i < argc; i++) {
		const char *k = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(k, "--")) {
			a->options = argv + i + 1;
			a->noptions = argc - i - 1;
			break;
		}
		if (!v)
			return -1;
		if (!strcmp(k, "--lib")) a->lib = v;
		else if (!strcmp(k, "--lib-fd")) {
			char *end;
			long fd = strtol(v, &end, 10);
			if (*end || fd < 0 || fd > 1023)
				return -1;
			a->lib_fd = (int)fd;
		}
		else if (!strcmp(k, "--label")) a->label = v;
		else if (!strcmp(k, "--abi")) a->abi = v;
		else if (!strcmp(k, "--arch")) a->arch = v;
		else if (!strcmp(k, "--src")) a->src = v;
		else if (!strcmp(k, "--name")) a->name = v;
		else if (!strcmp(k, "--out")) a->out = v;
		else if (!strcmp(k, "--log-cap")) a->log_cap = strtoull(v, NULL, 10);
		else return -1;
		i++;
	}
	if (!a->out && (a->out = getenv(RTC__OUT_ENV)) && !*a->out)
		a->out = NULL;
	if (!a->src && (a->src = getenv(RTC__SRC_ENV)) && !*a->src)
		a->src = NULL;
	if ((a->lib != NULL) == (a->lib_fd >= 0) || !a->out)
		return -1;
	if (!a->label)
		a->label = a->lib ? a->lib : "(pinned library)";
	if (!strcmp(a->cmd, "compile") &&
	    (!a->abi || !a->arch || !a->src || !a->name))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct compiler_api api;
	struct report r;
	struct strv all;
	struct args a;

	/* Descriptors the parent leaked to us are none of a compiler's business. */
	closefrom(3);
	/* The library under test runs here: it must reach neither us (not
	 * dumpable) nor, by any capability, our worker or quald (a user
	 * namespace of our own; confine.h). Before any thread starts, and in
	 * this order: the namespace's maps are written through /proc/self,
	 * which a non-dumpable process other than root may not write; nothing
	 * of the library's is loaded yet. */
	qual_confine_userns("qual-compile");
	qual_confine_nondumpable("qual-compile");
	/* A compile whose parent (worker or daemon) is gone is of no use. */
	if (!qual_die_with_parent())
		_exit(1);
	strv_init(&all);
	if ((argc = args_from_file(argc, argv, &all)) < 0)
		return 2;
	if (all.n)
		argv = all.v;
	if (args_parse(argc, argv, &a))
		return usage("missing or unknown arguments");
	if (strcmp(a.cmd, "identify") && strcmp(a.cmd, "compile"))
		return usage("unknown command");
	memset(&r, 0, sizeof r);
	memset(&api, 0, sizeof api);
	fault_watch(a.out);
	if (compiler_load(&a, &api, &r) == 0 && !strcmp(a.cmd, "compile"))
		compile_run(&a, &api, &r);
	report_finish(a.out, &r);
	return 0;
}
