/* Disassembling a kernel's code (disasm.h). */
#include "compile/disasm.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/child.h"
#include "common/fsutil.h"
#include "common/text.h"
#include "common/xalloc.h"

const char *const disasm_class_names[DISASM_NCLASSES] = {
#define X(e, s) s,
	LINES_CODE_MIX(X)
#undef X
};

/* ---- finding the tool ---------------------------------------------------- */

static bool executable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The line of a --version text that says the version ("Cuda compilation
 * tools, release 13.5, V13.5.37", "Debian LLVM version 14.0.6"), trimmed;
 * else its last line. */
static void version_line(const char *text, size_t len, char *out, size_t cap)
{
	const char *s = text, *end = text + len;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		char line[256];

		snprintf(line, sizeof line, "%.*s", (int)(n < 255 ? n : 255), s);
		if (strstr(line, "release") || strstr(line, "version")) {
			text_last_line(line, strlen(line), out, cap);
			while (*out == ' ')
				memmove(out, out + 1, strlen(out));
			return;
		}
		s += n + (nl != NULL);
	}
	text_last_line(text, len, out, cap);
}

/* The version line of what `path --version` prints (5 s at most). */
static void tool_version(const char *path, char *out, size_t cap)
{
	const char *argv[] = { path, "--version", NULL };
	struct child c;
	struct child_exit ex;
	struct qual_msg msg;
	double deadline = child_now() + 5;
	char *text = NULL;
	size_t len = 0;

	out[0] = '\0';
	child_init(&c);
	c.argv = argv;
	c.out = CHILD_PIPE;
	c.err = CHILD_TO_OUT;
	c.group = CHILD_GROUP_NEW;
	if (child_start(&c, &msg) < 0)
		return;
	(void)child_read_capped(c.out_pipe, 1 << 16, deadline, &text, &len, NULL);
	close(c.out_pipe);
	(void)child_wait(&c, deadline, &ex);
	if (text && !ex.timed_out && child_exit_code(&ex) == 0)
		version_line(text, len, out, cap);
	free(text);
}

static bool found(struct disasm_tool *t, const char *path)
{
	if (!executable(path) || strlen(path) >= sizeof t->path)
		return false;
	snprintf(t->path, sizeof t->path, "%s", path);
	tool_version(path, t->version, sizeof t->version);
	return true;
}

static bool in_path(struct disasm_tool *t, const char *name)
{
	char *path = fs_find_on_path(name);
	bool ok = path && found(t, path);

	free(path);
	return ok;
}

/* Debian's /usr/lib/llvm-N/bin/llvm-objdump, the newest N first. */
static bool in_debian_llvm(struct disasm_tool *t)
{
	DIR *d = opendir("/usr/lib");
	struct dirent *e;
	int best = -1;
	char path[PATH_MAX];

	if (!d)
		return false;
	while ((e = readdir(d))) {
		int v;
		char rest;

		if (sscanf(e->d_name, "llvm-%d%c", &v, &rest) == 1 && v > best) {
			snprintf(path, sizeof path, "/usr/lib/llvm-%d/bin/llvm-objdump", v);
			if (executable(path))
				best = v;
		}
	}
	closedir(d);
	if (best < 0)
		return false;
	snprintf(path, sizeof path, "/usr/lib/llvm-%d/bin/llvm-objdump", best);
	return found(t, path);
}

/* LIBDIR/../bin/name for the folder of lib. */
static bool beside_lib(struct disasm_tool *t, const char *lib, const char *name)
{
	char dir[PATH_MAX], path[PATH_MAX];
	char *real = realpath(lib, NULL), *slash;

	if (!real)
		return false;
	snprintf(dir, sizeof dir, "%s", real);
	free(real);
	if (!(slash = strrchr(dir, '/')))
		return false;
	*slash = '\0';
	return snprintf(path, sizeof path, "%s/../bin/%s", dir, name) < (int)sizeof path &&
	       found(t, path);
}

int disasm_find(enum rtc_abi abi, const char *const *libs, int nlib, struct disasm_tool *out,
		struct qual_msg *msg)
{
	bool nv = abi == RTC_ABI_NVRTC;
	const char *name = nv ? "nvdisasm" : "llvm-objdump";
	const char *env = nv ? DISASM_ENV_NVDISASM : DISASM_ENV_OBJDUMP;
	const char *given = getenv(env);

	memset(out, 0, sizeof *out);
	out->abi = abi;
	snprintf(out->name, sizeof out->name, "%s", name);
	if (abi != RTC_ABI_NVRTC && abi != RTC_ABI_HIPRTC)
		return qual_fail(msg, QUAL_ENOENT, "no disassembler for this compiler's code");
	if (given && *given) {
		if (found(out, given))
			return 0;
		return qual_fail(msg, QUAL_ENOENT, "%s names '%s', which is not an executable file",
				 env, given);
	}
	if (in_path(out, name))
		return 0;
	if (nv ? found(out, "/usr/local/cuda/bin/nvdisasm") ||
		 found(out, DISASM_TOOLS_DIR "/nvdisasm") :
		 found(out, "/opt/rocm/llvm/bin/llvm-objdump") || in_debian_llvm(out))
		return 0;
	for (int i = 0; i < nlib; i++)
		if (libs[i] && beside_lib(out, libs[i], name))
			return 0;
	return qual_fail(msg, QUAL_ENOENT, "no %s found (looked at %s, PATH, %s and beside the "
			 "compiler libraries): install %s, or name it with %s", name, env,
			 nv ? "/usr/local/cuda/bin, " DISASM_TOOLS_DIR :
			 "/opt/rocm/llvm/bin, /usr/lib/llvm-N/bin",
			 nv ? "the CUDA toolkit or PyPI's nvidia-cuda-nvdisasm" :
			 "Debian's llvm or ROCm's llvm", env);
}

/* ---- classes ----------------------------------------------------------------- */

static bool one_of(const char *base, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(base, *set))
			return true;
	return false;
}

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* SASS: by the opcode's base, the part before its first '.'. */
static enum disasm_class classify_sass(const char *opcode)
{
	static const char *const mma[] = { "HMMA", "IMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA",
					   "BMMA", "DMMA", "OMMA", "QMMA", NULL };
	static const char *const global[] = { "LDG", "STG", "LDGSTS", "RED", "REDG", "ATOM",
					      "ATOMG", "LD", "ST", "UTMALDG", "UTMASTG", "UTMAPF",
					      "UTMAREDG", "UBLKCP", "UBLKRED", "UBLKPF", NULL };
	static const char *const shared[] = { "LDS", "STS", "LDSM", "STSM", "ATOMS", "REDAS",
					      NULL };
	static const char *const local[] = { "LDL", "STL", NULL };
	static const char *const convert[] = { "F2F", "F2I", "I2F", "I2I", "F2FP", "I2FP",
					       "F2IP", "FRND", NULL };
	static const char *const branch[] = { "BRA", "BRX", "BRXU", "JMP", "JMX", "JMXU",
					      "CALL", "RET", "EXIT", "BSSY", "BSYNC", "BREAK",
					      "BPT", "KILL", NULL };
	static const char *const barrier[] = { "BAR", "MEMBAR", "DEPBAR", "LDGDEPBAR", "SYNCS",
					       "WARPSYNC", "WARPGROUP", "ERRBAR", "FENCE",
					       "ARRIVES", "UCGABAR_ARV", "UCGABAR_WAIT", NULL };
	char base[32];
	size_t n = strcspn(opcode, ".");

	if (n >= sizeof base)
		return DISASM_OTHER;
	memcpy(base, opcode, n);
	base[n] = '\0';
	return one_of(base, mma) ? DISASM_MMA : one_of(base, global) ? DISASM_GLOBAL :
	       one_of(base, shared) ? DISASM_SHARED : one_of(base, local) ? DISASM_LOCAL :
	       one_of(base, convert) ? DISASM_CONVERT : one_of(base, branch) ? DISASM_BRANCH :
	       one_of(base, barrier) ? DISASM_BARRIER : DISASM_OTHER;
}

/* AMDGPU: by the mnemonic's prefix. */
static enum disasm_class classify_amdgpu(const char *m)
{
	if (starts(m, "v_mfma") || starts(m, "v_smfmac") || starts(m, "v_wmma") ||
	    starts(m, "v_swmmac"))
		return DISASM_MMA;
	if (starts(m, "global_") || starts(m, "buffer_load") || starts(m, "buffer_store") ||
	    starts(m, "buffer_atomic") || starts(m, "flat_") || starts(m, "s_load_") ||
	    starts(m, "s_buffer_load_") || starts(m, "s_store_") || starts(m, "s_atomic"))
		return DISASM_GLOBAL;
	if (starts(m, "ds_"))
		return DISASM_SHARED;
	if (starts(m, "scratch_"))
		return DISASM_LOCAL;
	if (starts(m, "v_cvt_"))
		return DISASM_CONVERT;
	if (starts(m, "s_branch") || starts(m, "s_cbranch") || starts(m, "s_setpc") ||
	    starts(m, "s_swappc") || starts(m, "s_call") || starts(m, "s_endpgm"))
		return DISASM_BRANCH;
	if (starts(m, "s_barrier") || starts(m, "s_waitcnt") || starts(m, "buffer_wbl2") ||
	    starts(m, "buffer_inv") || starts(m, "buffer_wbinvl1"))
		return DISASM_BARRIER;
	return DISASM_OTHER;
}

enum disasm_class disasm_classify(enum rtc_abi abi, const char *opcode)
{
	return abi == RTC_ABI_HIPRTC ? classify_amdgpu(opcode) : classify_sass(opcode);
}

/* ---- running it --------------------------------------------------------------- */

/* The code on a sealed memfd of its own, which the tool reads as /dev/fd/3:
 * no file in a folder, nothing left behind when qual-run is killed, and a
 * tool run as the compile user can read it without reaching anything of
 * ours. */
static int code_fd(const void *code, size_t size, struct qual_msg *msg)
{
	int fd = memfd_create("qual-disasm", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return qual_fail(msg, QUAL_EIO, "cannot make a memfd: %s", strerror(errno));
	if (fs_write_all(fd, code, size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0) {
		int e = errno;

		close(fd);
		return qual_fail(msg, QUAL_EIO, "cannot write the code to a memfd: %s", strerror(e));
	}
	return fd;
}

int disasm_run(const struct disasm_tool *t, const char *target, const void *code, size_t size,
	       double timeout_s, struct disasm_listing *out, struct qual_msg *msg)
{
	char last[240], how[64];
	size_t off = 0, len = size, got = 0, total = 0;
	const char *argv[4];
	int fd;
	struct child c;
	struct child_exit ex = { 0 };
	double deadline = child_now() + timeout_s;
	char *text = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	/* An offload bundle's entry for the target (hiprtc). */
	if ((rc = rtc_check_code(t->abi, target, code, size, &off, &len, msg)) < 0)
		return rc;
	if ((fd = code_fd((const char *)code + off, len, msg)) < 0)
		return fd;
	argv[0] = t->path;
	argv[1] = t->abi == RTC_ABI_NVRTC ? "-c" : "-d";
	argv[2] = "/dev/fd/3";
	argv[3] = NULL;
	child_init(&c);
	c.argv = argv;
	c.name = t->name;
	c.out = CHILD_PIPE;
	c.err = CHILD_TO_OUT;
	c.fd3 = fd;
	c.group = CHILD_GROUP_NEW;
	c.die_with_parent = true;
	/* The code is the candidate compiler's: the tool reads it as the
	 * compile user, as the compiler ran (rtc.h). */
	c.set_ids = rtc_compile_user(&c.uid, &c.gid);
	rc = child_start(&c, msg);
	close(fd);
	if (rc < 0)
		return rc;
	rc = child_read_capped(c.out_pipe, DISASM_OUTPUT_MAX, deadline, &text, &got, &total);
	close(c.out_pipe);
	(void)child_wait(&c, deadline, &ex);
	text_last_line(text ? text : "", got, last, sizeof last);
	if (rc == QUAL_ETIMEOUT || ex.timed_out)
		rc = qual_fail(msg, QUAL_ETIMEOUT, "%s did not finish within %g s", t->name,
			       timeout_s);
	else if (total > DISASM_OUTPUT_MAX)
		rc = qual_fail(msg, QUAL_ELIMIT, "%s printed over %zu bytes", t->name,
			       DISASM_OUTPUT_MAX);
	else if (rc < 0 || child_exit_code(&ex) != 0)
		rc = qual_fail(msg, QUAL_EIO, "%s %s%s%s", t->name,
			       child_exit_text(&ex, how, sizeof how), last[0] ? ": " : "", last);
	else
		rc = disasm_parse(t->abi, text, got, out, msg);
	free(text);
	return rc;
}
