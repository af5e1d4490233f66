/* Compiler libraries: identify and compile through the qual-compile child
 * with the real nvrtc 13.0 and Debian's hiprtc (ROCm 5.2.3), the shim
 * compilers for every way a compiler can misbehave, and the parsers on logs
 * and code objects captured from those compilers (tests/data/rtc).
 *
 * Run one test with `test_rtc NAME` (ctest: rtc_NAME). Every test runs with
 * TMPDIR set to a folder of its own, and fails if anything is left in it. */
#include "tests/unit/test_main.h"

#include "compile/rtc.c"
#include "compile/rtc_child.c"
#include "compile/rtc_parse.c"

#include <dirent.h>
#include <pthread.h>

#include "common/lines.h"
#include "proto/line.h"

#define AXPY_SOURCE                                                       \
	"extern \"C\" __global__ void axpy(float a, const float *x, float *y, int n)\n" \
	"{\n"                                                             \
	"	int i = blockIdx.x * blockDim.x + threadIdx.x;\n"          \
	"	if (i < n)\n"                                          \
	"		y[i] = a * x[i] + y[i];\n"                     \
	"}\n"

/* An entry kernel marked as the fixtures mark theirs (the prelude's
 * "#define QUAL_KERNEL" before it, the marker at the start of a line), which
 * shim_oob and shim_spin rewrite. */
#define ENTRY_SOURCE                                                      \
	"#define QUAL_KERNEL extern \"C\" __global__\n"                   \
	"__device__ float twice(float v) { return 2.0f * v; }\n"          \
	"QUAL_KERNEL void axpy(float a, const float *x, float *y, int n)\n" \
	"{\n"                                                             \
	"	int i = blockIdx.x * blockDim.x + threadIdx.x;\n"          \
	"	if (i < n)\n"                                          \
	"		y[i] = a * twice(x[i]) + y[i];\n"              \
	"}\n"

static char test_tmp[PATH_MAX];

/* ---- helpers --------------------------------------------------------------- */

static char *data_read(const char *name, size_t *size)
{
	char path[PATH_MAX];
	char *text = NULL;
	size_t n = 0;

	snprintf(path, sizeof path, "%s/%s", RTC_TEST_DATA, name);
	assert_int_equal(fs_read_capped(path, RTC_OUTPUT_LIMIT, &text, &n, NULL), 0);
	if (size)
		*size = n;
	return text;
}

/* sha256sum's answer for a file: computed outside our code. */
static void sha256sum_file(const char *path, char hex[65])
{
	char cmd[PATH_MAX + 32];
	FILE *p;

	snprintf(cmd, sizeof cmd, "sha256sum '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%64s", hex), 1);
	pclose(p);
	hex[64] = '\0';
}

static void sha256sum_buffer(const void *data, size_t size, char hex[65])
{
	char path[PATH_MAX + 8];

	snprintf(path, sizeof path, "%s.bin", test_tmp);
	assert_int_equal(fs_write_synced(path, data, size, 0600, NULL, NULL), 0);
	sha256sum_file(path, hex);
	unlink(path);
}

static void identify_ok(const char *path, struct rtc_identity *id)
{
	struct qual_msg msg = { "" };
	int rc = rtc_identify(path, NULL, NULL, NULL, id, &msg);

	if (rc)
		fail_msg("identify '%s': %s", path, msg.text);
}

static int compile_with(const struct rtc_identity *id, const char *source,
			const char *name, const char *arch,
			const struct rtc_limits *lim, struct rtc_result *out)
{
	struct rtc_request req = { id, source, name, arch, NULL, 0 };
	struct qual_msg msg = { "" };
	int rc = rtc_compile(&req, lim, out, &msg);

	if (rc)
		print_error("rtc_compile: %s\n", msg.text);
	return rc;
}

static uint16_t elf_machine_of(const void *code)
{
	uint16_t m;
	memcpy(&m, (const char *)code + 18, 2); /* e_machine */
	return m;
}

static bool process_gone(pid_t pid)
{
	char path[64], state = '?';
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	/* "pid (comm) S ...": a zombie has exited and only awaits reaping. */
	if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		state = '?';
	fclose(f);
	return state == 'Z' || state == 'X';
}

/* True when a live (not zombie) process is in process group pgid. */
static bool group_alive(pid_t pgid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	bool alive = false;

	assert_non_null(d);
	while (!alive && (e = readdir(d))) {
		char path[300], state;
		int pgrp;
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		/* "pid (comm) state ppid pgrp ..." */
		if (fscanf(f, "%*d (%*[^)]) %c %*d %d", &state, &pgrp) == 2 &&
		    pgrp == pgid && state != 'Z' && state != 'X')
			alive = true;
		fclose(f);
	}
	closedir(d);
	return alive;
}

static int tmp_setup(void **state)
{
	(void)state;
	snprintf(test_tmp, sizeof test_tmp, "/tmp/qual-rtc-test-XXXXXX");
	if (!mkdtemp(test_tmp))
		return -1;
	setenv("TMPDIR", test_tmp, 1);
	rtc_set_helper(RTC_TEST_HELPER);
	return 0;
}

/* Fails the test when a temporary folder or file was left behind. */
static int tmp_teardown(void **state)
{
	DIR *d = opendir(test_tmp);
	struct dirent *e;
	int left = 0;

	(void)state;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		print_error("left behind in TMPDIR: %s\n", e->d_name);
		left++;
	}
	closedir(d);
	fs_rm_tree(test_tmp);
	unsetenv("TMPDIR");
	return left ? -1 : 0;
}

/* ---- pure functions -------------------------------------------------------- */

static void test_sha256(void **state)
{
	char hex[SHA256_HEX_SIZE], want[65], path[PATH_MAX];
	struct qual_msg msg;

	(void)state;
	/* FIPS 180-2 test vector. */
	assert_int_equal(sha256_hash_buffer("abc", 3, hex, NULL), 0);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_int_equal(sha256_hash_buffer(NULL, 0, hex, NULL), 0);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	snprintf(path, sizeof path, "%s/hiprtc52_gfx90a_spill.co", RTC_TEST_DATA);
	assert_int_equal(sha256_hash_file(path, hex, NULL), 0);
	sha256sum_file(path, want);
	assert_string_equal(hex, want);
	assert_int_equal(sha256_hash_file("/nonexistent/x", hex, &msg), QUAL_ENOENT);
	assert_string_equal(msg.text, "cannot open '/nonexistent/x': No such file or directory");
}

static void test_parse_nvrtc_logs(void **state)
{
	struct rtc_resources r;
	char *log;

	(void)state;
	log = data_read("nvrtc13_sm90_axpy.log", NULL);
	rtc_parse_resources(RTC_ABI_NVRTC, log, &r);
	assert_int_equal(r.registers, 10);
	assert_int_equal(r.sgprs, -1);
	assert_int_equal(r.stack_bytes, 0);
	assert_int_equal(r.spill_stores, 0);
	assert_int_equal(r.spill_loads, 0);
	assert_int_equal(r.shared_bytes, 0); /* ptxas omits "0 bytes smem" */
	free(log);

	/* Two entries: heavy (79 registers, 256 bytes stack, 1024 bytes smem)
	 * and second (8 registers): the larger figures. */
	log = data_read("nvrtc13_sm90_heavy.log", NULL);
	rtc_parse_resources(RTC_ABI_NVRTC, log, &r);
	assert_int_equal(r.registers, 79);
	assert_int_equal(r.stack_bytes, 256);
	assert_int_equal(r.spill_stores, 0);
	assert_int_equal(r.shared_bytes, 1024);
	free(log);

	log = data_read("nvrtc13_sm90_heavy_maxrreg32.log", NULL);
	rtc_parse_resources(RTC_ABI_NVRTC, log, &r);
	assert_int_equal(r.registers, 32);
	assert_int_equal(r.stack_bytes, 832);
	assert_int_equal(r.spill_stores, 676);
	assert_int_equal(r.spill_loads, 684);
	free(log);

	/* -G: a device function's properties block (_Z6helperf) sits between
	 * the entries and is not an entry's. */
	log = data_read("nvrtc13_sm90_heavy_G.log", NULL);
	rtc_parse_resources(RTC_ABI_NVRTC, log, &r);
	assert_int_equal(r.registers, 24);
	assert_int_equal(r.stack_bytes, 256);
	free(log);

	/* A device function reporting more than any entry must not count. */
	rtc_parse_resources(RTC_ABI_NVRTC,
			    "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
			    "ptxas info    : Function properties for k\n"
			    "ptxas         .     8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
			    "ptxas info    : Used 12 registers, used 0 barriers\n"
			    "ptxas info    : Function properties for _Z1fv\n"
			    "ptxas         .     4096 bytes stack frame, 64 bytes spill stores, 64 bytes spill loads\n",
			    &r);
	assert_int_equal(r.registers, 12);
	assert_int_equal(r.stack_bytes, 8);
	assert_int_equal(r.spill_stores, 0);

	log = data_read("nvrtc13_sm90_error.log", NULL);
	rtc_parse_resources(RTC_ABI_NVRTC, log, &r);
	assert_int_equal(r.registers, -1);
	assert_int_equal(r.stack_bytes, -1);
	assert_int_equal(r.shared_bytes, -1);
	free(log);

	/* hiprtc logs carry no report: everything unknown. */
	log = data_read("nvrtc13_sm90_heavy.log", NULL);
	rtc_parse_resources(RTC_ABI_HIPRTC, log, &r);
	assert_int_equal(r.registers, -1);
	free(log);
}

static void test_parse_amdgpu_metadata(void **state)
{
	struct rtc_resources r;
	size_t size;
	char *co;

	(void)state;
	/* Expected figures: hiprtc52_gfx90a_heavy.notes.txt (llvm-readelf). */
	co = data_read("hiprtc52_gfx90a_heavy.co", &size);
	rtc_parse_resources(RTC_ABI_HIPRTC, "", &r);
	assert_int_equal(rtc_parse_code_resources(RTC_ABI_HIPRTC, co, size, &r), 0);
	assert_int_equal(r.registers, 85);
	assert_int_equal(r.sgprs, 14);
	assert_int_equal(r.stack_bytes, 0);
	assert_int_equal(r.shared_bytes, 1024);
	assert_int_equal(r.spill_stores, 0);
	assert_int_equal(r.spill_loads, -1);
	free(co);

	co = data_read("hiprtc52_gfx90a_spill.co", &size);
	rtc_parse_resources(RTC_ABI_HIPRTC, "", &r);
	assert_int_equal(rtc_parse_code_resources(RTC_ABI_HIPRTC, co, size, &r), 0);
	assert_int_equal(r.registers, 128);
	assert_int_equal(r.sgprs, 19);
	assert_int_equal(r.stack_bytes, 752);
	assert_int_equal(r.shared_bytes, 0);
	assert_int_equal(r.spill_stores, 4 * 149);
	free(co);

	/* A CUBIN has no AMDGPU note; for nvrtc the call does nothing. */
	co = data_read("nvrtc13_sm90_axpy.cubin", &size);
	rtc_parse_resources(RTC_ABI_HIPRTC, "", &r);
	assert_int_equal(rtc_parse_code_resources(RTC_ABI_HIPRTC, co, size, &r),
			 QUAL_EINVAL);
	assert_int_equal(r.registers, -1);
	assert_int_equal(rtc_parse_code_resources(RTC_ABI_NVRTC, co, size, &r), 0);
	assert_int_equal(r.registers, -1);
	free(co);
}

/* Cut and corrupted inputs must neither crash nor read out of bounds (the
 * ASan build checks the latter), and a cut note must not yield figures. */
static void test_parse_hostile_input(void **state)
{
	struct rtc_resources r;
	size_t size, i, len, off;
	unsigned seed = 12345;
	char *co, *copy;
	int ok = 0;

	(void)state;
	co = data_read("hiprtc52_gfx90a_heavy.co", &size);
	for (len = 0; len <= size; len += 7) {
		copy = xmalloc(len ? len : 1);
		memcpy(copy, co, len);
		rtc_parse_resources(RTC_ABI_HIPRTC, "", &r);
		if (rtc_parse_code_resources(RTC_ABI_HIPRTC, copy, len, &r) == 0)
			ok++;
		free(copy);
	}
	/* The note sits near the start; most cuts past it still parse. */
	assert_true(ok > 0);
	rtc_parse_resources(RTC_ABI_HIPRTC, "", &r);
	assert_int_equal(rtc_parse_code_resources(RTC_ABI_HIPRTC, co, 64, &r), QUAL_EINVAL);
	assert_int_equal(r.registers, -1);

	copy = xmalloc(size);
	for (i = 0; i < 20000; i++) {
		memcpy(copy, co, size);
		seed = seed * 1103515245u + 12345u;
		off = (seed >> 8) % 2048; /* headers and the note */
		seed = seed * 1103515245u + 12345u;
		copy[off] = (char)(seed >> 16);
		rtc_parse_resources(RTC_ABI_HIPRTC, "", &r);
		rtc_parse_code_resources(RTC_ABI_HIPRTC, copy, size, &r);
		rtc_parse_resources(RTC_ABI_NVRTC, "", &r);
	}
	free(copy);
	free(co);

	/* Garbage logs: nothing parsed, nothing crashes. */
	rtc_parse_resources(RTC_ABI_NVRTC, "Used registers\nUsed 99999999999999999999 registers\n", &r);
	assert_int_equal(r.registers, -1); /* no entry function seen */
	rtc_parse_resources(RTC_ABI_NVRTC,
			    "ptxas info    : Compiling entry function 'k\n"
			    "ptxas info    : Used 99999999999999999999 registers\n", &r);
	assert_int_equal(r.registers, INT_MAX);
}

static void test_check_code(void **state)
{
	static const char ptx[] = "//\n// Generated by NVIDIA NVVM Compiler\n.version 9.0\n";
	struct qual_msg msg;
	size_t cubin_size, co_size, off, len, bsize, boff;
	char *cubin, *co, *bundle;
	const char *host = "host-x86_64-unknown-linux-gnu";
	const char *dev = "hipv4-amdgcn-amd-amdhsa--gfx90a";
	uint64_t v;

	(void)state;
	cubin = data_read("nvrtc13_sm90_axpy.cubin", &cubin_size);
	co = data_read("hiprtc52_gfx90a_heavy.co", &co_size);
	assert_int_equal(rtc_check_code(RTC_ABI_NVRTC, "sm_90", cubin, cubin_size,
					&off, &len, &msg), 0);
	assert_int_equal(off, 0);
	assert_int_equal(len, cubin_size);
	assert_int_equal(rtc_check_code(RTC_ABI_NVRTC, "sm_90", ptx, sizeof ptx - 1,
					&off, &len, &msg), QUAL_ECOMPILE);
	assert_string_equal(msg.text, "code for 'sm_90' is ptx text, not a cubin");
	assert_int_equal(rtc_check_code(RTC_ABI_NVRTC, "sm_90", co, co_size,
					&off, &len, &msg), QUAL_ECOMPILE);
	assert_string_equal(msg.text, "code for 'sm_90' is not a cubin (elf machine 224)");
	assert_int_equal(rtc_check_code(RTC_ABI_NVRTC, "sm_90", NULL, 0,
					&off, &len, &msg), QUAL_ECOMPILE);

	assert_int_equal(rtc_check_code(RTC_ABI_HIPRTC, "gfx90a", co, co_size,
					&off, &len, &msg), 0);
	assert_int_equal(rtc_check_code(RTC_ABI_HIPRTC, "gfx90a", cubin, cubin_size,
					&off, &len, &msg), QUAL_ECOMPILE);
	assert_string_equal(msg.text, "code for 'gfx90a' is neither an amdgpu code "
			    "object nor an offload bundle");

	/* A clang offload bundle: host entry (empty) then the gfx90a object. */
	boff = 24 + 8 + 2 * 24 + strlen(host) + strlen(dev);
	bsize = boff + co_size;
	bundle = xcalloc(1, bsize);
	memcpy(bundle, "__CLANG_OFFLOAD_BUNDLE__", 24);
	v = 2; memcpy(bundle + 24, &v, 8);
	off = 32;
	v = boff; memcpy(bundle + off, &v, 8);
	v = 0; memcpy(bundle + off + 8, &v, 8);
	v = strlen(host); memcpy(bundle + off + 16, &v, 8);
	memcpy(bundle + off + 24, host, strlen(host));
	off += 24 + strlen(host);
	v = boff; memcpy(bundle + off, &v, 8);
	v = co_size; memcpy(bundle + off + 8, &v, 8);
	v = strlen(dev); memcpy(bundle + off + 16, &v, 8);
	memcpy(bundle + off + 24, dev, strlen(dev));
	memcpy(bundle + boff, co, co_size);
	assert_int_equal(rtc_check_code(RTC_ABI_HIPRTC, "gfx90a", bundle, bsize,
					&off, &len, &msg), 0);
	assert_int_equal(off, boff);
	assert_int_equal(len, co_size);
	assert_memory_equal(bundle + off, co, co_size);
	assert_int_equal(rtc_check_code(RTC_ABI_HIPRTC, "gfx1030", bundle, bsize,
					&off, &len, &msg), QUAL_ECOMPILE);
	assert_string_equal(msg.text, "offload bundle holds no code object for 'gfx1030'");
	/* Cut short: the entry points past the end. */
	assert_int_equal(rtc_check_code(RTC_ABI_HIPRTC, "gfx90a", bundle, bsize - 1,
					&off, &len, &msg), QUAL_ECOMPILE);
	assert_int_equal(rtc_check_code(RTC_ABI_HIPRTC, "gfx90a", bundle, 30,
					&off, &len, &msg), QUAL_ECOMPILE);
	assert_int_equal(bundle_triple_matches(dev, strlen(dev), "gfx90"), false);
	assert_int_equal(bundle_triple_matches("hip-amdgcn-amd-amdhsa-gfx90a:xnack-", 35,
					       "gfx90a"), true);
	assert_int_equal(bundle_triple_matches("hip-amdgcn-amd-amdhsa-gfx90a:xnack-", 35,
					       "gfx90a:xnack+"), false);
	free(bundle);
	free(co);
	free(cubin);
}

static void test_arch_valid(void **state)
{
	(void)state;
	assert_true(arch_valid(RTC_ABI_NVRTC, "sm_90"));
	assert_true(arch_valid(RTC_ABI_NVRTC, "sm_90a"));
	assert_true(arch_valid(RTC_ABI_NVRTC, "sm_100"));
	assert_false(arch_valid(RTC_ABI_NVRTC, "compute_90"));
	assert_false(arch_valid(RTC_ABI_NVRTC, "sm_"));
	assert_false(arch_valid(RTC_ABI_NVRTC, "sm_90ab"));
	assert_false(arch_valid(RTC_ABI_NVRTC, "sm_90 -G"));
	assert_false(arch_valid(RTC_ABI_NVRTC, "gfx90a"));
	assert_true(arch_valid(RTC_ABI_HIPRTC, "gfx90a"));
	assert_true(arch_valid(RTC_ABI_HIPRTC, "gfx90a:xnack-"));
	assert_false(arch_valid(RTC_ABI_HIPRTC, "gfx"));
	assert_false(arch_valid(RTC_ABI_HIPRTC, "sm_90"));
	assert_false(arch_valid(RTC_ABI_HIPRTC, "gfx90a -O0"));
}

static int env_count(char **env, const char *prefix, const char **found)
{
	int n = 0;

	for (; *env; env++)
		if (!strncmp(*env, prefix, strlen(prefix))) {
			*found = *env;
			n++;
		}
	return n;
}

static void test_child_env(void **state)
{
	const char *v = NULL;
	char **env;

	(void)state;
	setenv("LD_LIBRARY_PATH", "/a:/b", 1);
	setenv("CUDA_CACHE_DISABLE", "0", 1);
	env = rtc__child_env_for("/opt/cand/lib", "/tmp/q");
	/* nvrtc's disk cache is off in every compile child, whatever we had. */
	assert_int_equal(env_count(env, "CUDA_CACHE_DISABLE=", &v), 1);
	assert_string_equal(v, "CUDA_CACHE_DISABLE=1");
	unsetenv("CUDA_CACHE_DISABLE");
	assert_int_equal(env_count(env, "LD_LIBRARY_PATH=", &v), 1);
	assert_string_equal(v, "LD_LIBRARY_PATH=/opt/cand/lib:/a:/b");
	assert_int_equal(env_count(env, "TMPDIR=", &v), 1);
	assert_string_equal(v, "TMPDIR=/tmp/q/tmp");
	/* Where it reports and what it compiles: not in its arguments. */
	assert_int_equal(env_count(env, RTC__OUT_ENV "=", &v), 1);
	assert_string_equal(v, RTC__OUT_ENV "=/tmp/q/" RTC__OUT_DIR);
	assert_int_equal(env_count(env, RTC__SRC_ENV "=", &v), 1);
	assert_string_equal(v, RTC__SRC_ENV "=/tmp/q/" RTC__SOURCE_FILE);
	assert_int_equal(env_count(env, "PATH=", &v), getenv("PATH") ? 1 : 0);
	/* qual-compile dies with us. */
	assert_int_equal(env_count(env, QUAL_PARENT_ENV "=", &v), 1);
	assert_int_equal(atol(v + strlen(QUAL_PARENT_ENV "=")), (long)getpid());
	child_env_free(env);
	unsetenv("LD_LIBRARY_PATH");
	env = rtc__child_env_for("/opt/cand/lib", "/tmp/q");
	assert_int_equal(env_count(env, "LD_LIBRARY_PATH=", &v), 1);
	assert_string_equal(v, "LD_LIBRARY_PATH=/opt/cand/lib");
	child_env_free(env);
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];

	assert_int_equal(fs_path_join(path, sizeof path, dir, name, NULL), 0);
	assert_int_equal(fs_write_synced(path, text, strlen(text), 0600, NULL, NULL), 0);
}

/* The result file protocol, and what the parent makes of each way a child
 * can end. */
static void test_child_report(void **state)
{
	struct child_report rep;
	struct child_exit oc;
	char dir[PATH_MAX], out[PATH_MAX + 8], message[512];

	(void)state;
	assert_int_equal(rtc__workdir_new(dir, sizeof dir, NULL), 0);
	/* The child reports in its own folder; its stderr is ours. */
	snprintf(out, sizeof out, "%s/" RTC__OUT_DIR, dir);
	write_text(out, RTC__RESULT_FILE, "status=-7\nmessage=compiler 'x' rejected 'k.cu'\n"
		   "abi=nvrtc\nversion=13.0\ncompile_ms=12.5\nlog_size=300\n"
		   "log_kept=200\ncode_size=0\nend=1\n");
	rtc__report_read(dir, &rep);
	assert_true(rep.complete);
	assert_int_equal(rep.status, QUAL_ECOMPILE);
	assert_string_equal(rep.message, "compiler 'x' rejected 'k.cu'");
	assert_string_equal(rep.abi, "nvrtc");
	assert_string_equal(rep.version, "13.0");
	assert_true(rep.compile_ms == 12.5);
	assert_int_equal(rep.log_size, 300);
	assert_int_equal(rep.log_kept, 200);

	/* A complete report counts even when the child then died by a signal
	 * (hiprtc's teardown) or was killed at the time limit. */
	memset(&oc, 0, sizeof oc);
	oc.status = SIGSEGV; /* as waitpid reports death by SIGSEGV */
	assert_true(WIFSIGNALED(oc.status));
	assert_int_equal(rtc__outcome_status(&oc, &rep, "x", "compiling 'k.cu'", 5, dir,
					     message, sizeof message), QUAL_ECOMPILE);
	assert_string_equal(message, "compiler 'x' rejected 'k.cu'");
	oc.timed_out = true;
	assert_int_equal(rtc__outcome_status(&oc, &rep, "x", "compiling 'k.cu'", 5, dir,
					     message, sizeof message), QUAL_ECOMPILE);

	/* Without the end line the report is not trusted. */
	write_text(out, RTC__RESULT_FILE, "status=0\nmessage=\ncode_size=10\n");
	rtc__report_read(dir, &rep);
	assert_false(rep.complete);
	assert_int_equal(rtc__outcome_status(&oc, &rep, "/x/lib.so", "compiling 'k.cu'", 2.5,
					     dir, message, sizeof message), QUAL_ETIMEOUT);
	assert_string_equal(message, "compiler '/x/lib.so' did not finish within 2.5 s");
	oc.timed_out = false;
	oc.status = SIGABRT;
	/* A death by a signal that the child did not note as its own (the
	 * fault note, RTC__FAULT_FILE): another process sent it, no crash. */
	assert_int_equal(rtc__outcome_status(&oc, &rep, "/x/lib.so", "while loading", 2.5,
					     dir, message, sizeof message), QUAL_EKILLED);
	assert_string_equal(message, "compiler '/x/lib.so' was killed by signal SIGABRT while "
			    "loading, a signal it did not raise itself (sent by another "
			    "process): not a crash of the library's");
	/* A note of another signal is not this one's. */
	write_text(out, RTC__FAULT_FILE, "self 11\n");
	assert_int_equal(rtc__outcome_status(&oc, &rep, "/x/lib.so", "while loading", 2.5,
					     dir, message, sizeof message), QUAL_EKILLED);
	write_text(out, RTC__FAULT_FILE, "self 6\n");
	assert_int_equal(rtc__outcome_status(&oc, &rep, "/x/lib.so", "while loading", 2.5,
					     dir, message, sizeof message), QUAL_ECRASH);
	assert_string_equal(message, "compiler '/x/lib.so' crashed while loading: "
			    "killed by signal SIGABRT (Aborted)");
	oc.status = 3 << 8; /* exit status 3: no crash (lines.h, compile_no_report) */
	write_text(dir, RTC__STDERR_FILE, "noise\nqual-compile: cannot write 'x': No space left on device\n\n");
	assert_int_equal(rtc__outcome_status(&oc, &rep, "/x/lib.so", "compiling 'k.cu'", 2.5,
					     dir, message, sizeof message), QUAL_EEXIT);
	assert_string_equal(message, "compiler '/x/lib.so' exited with status 3 compiling "
			    "'k.cu' without reporting: qual-compile: cannot write 'x': No "
			    "space left on device");

	/* A status outside the error space is garbage. */
	write_text(out, RTC__RESULT_FILE, "status=5\nend=1\n");
	rtc__report_read(dir, &rep);
	assert_false(rep.complete);
	rtc_workdir_remove(dir);
}

/* ---- identify -------------------------------------------------------------- */

static void test_identify_nvrtc(void **state)
{
	struct rtc_identity a, b;
	char want[65];

	(void)state;
	identify_ok(RTC_TEST_NVRTC, &a);
	identify_ok(RTC_TEST_NVRTC_ALT, &b);
	assert_int_equal(a.abi, RTC_ABI_NVRTC);
	assert_int_equal(b.abi, RTC_ABI_NVRTC);
	assert_string_equal(a.abi_name, "nvrtc");
	assert_string_equal(a.version, "13.0");
	assert_string_equal(b.version, "13.0");
	assert_string_equal(a.path, RTC_TEST_NVRTC);
	assert_string_not_equal(a.real_path, b.real_path);
	sha256sum_file(RTC_TEST_NVRTC, want);
	assert_string_equal(a.sha256, want);
	sha256sum_file(RTC_TEST_NVRTC_ALT, want);
	assert_string_equal(b.sha256, want);
	assert_string_not_equal(a.sha256, b.sha256);
}

static void test_identify_hiprtc(void **state)
{
	struct rtc_identity id;
	char want[65], real[PATH_MAX];

	(void)state;
	identify_ok(RTC_TEST_HIPRTC, &id);
	assert_int_equal(id.abi, RTC_ABI_HIPRTC);
	assert_string_equal(id.abi_name, "hiprtc");
	/* ROCm 5.2.3's hiprtcVersion reports 9.0, whatever that means; what
	 * matters is that we record what the library says. */
	assert_true(strlen(id.version) >= 3);
	assert_non_null(realpath(RTC_TEST_HIPRTC, real));
	assert_string_equal(id.real_path, real);
	sha256sum_file(real, want);
	assert_string_equal(id.sha256, want);
}

static void expect_identify_error(const char *path, int code, const char *why)
{
	struct rtc_identity id;
	struct qual_msg msg = { "" };
	char want[PATH_MAX + 128];

	assert_int_equal(rtc_identify(path, NULL, NULL, NULL, &id, &msg), code);
	snprintf(want, sizeof want, "cannot load compiler '%s': %s", path, why);
	assert_string_equal(msg.text, want);
	assert_int_equal(id.abi, RTC_ABI_NONE);
}

static void test_identify_bad_paths(void **state)
{
	(void)state;
	expect_identify_error("/nonexistent/libnvrtc.so.13", QUAL_ENOENT, "no such file");
	expect_identify_error(RTC_TEST_DATA, QUAL_EINVAL, "is a directory");
	expect_identify_error("/dev/null", QUAL_EINVAL, "not a regular file");
	expect_identify_error(RTC_TEST_DATA "/axpy.cu", QUAL_EINVAL,
			      "not an ELF shared object");
	/* An ELF file, but an executable (a CUBIN is ET_EXEC). */
	expect_identify_error(RTC_TEST_DATA "/nvrtc13_sm90_axpy.cubin", QUAL_EINVAL,
			      "not an ELF shared object (ELF type 2)");
}

static void test_identify_noabi(void **state)
{
	(void)state;
	expect_identify_error(RTC_SHIM_NOABI, QUAL_EABI,
			      "no nvrtc or hiprtc entry points");
}

/* ---- an identify in flight (start, finish, abort) ------------------------- */

static bool folder_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Started, waited for and finished by the caller, the identify of the real
 * nvrtc, opened by the caller (rtc_library_open), says what rtc_identify()
 * says but no hash (the caller hashes what it opened, not the child), runs
 * the helper it was given over rtc_set_helper()'s, and removes its
 * folder. */
static void test_identify_pending_nvrtc(void **state)
{
	struct rtc_identity want, got;
	struct rtc_pending p;
	struct rtc_pin pin;
	struct child_exit ex;
	struct qual_msg msg = { "" };
	char dir[PATH_MAX], sha[SHA256_HEX_SIZE];

	(void)state;
	identify_ok(RTC_TEST_NVRTC, &want);
	if (rtc_library_open(RTC_TEST_NVRTC, want.real_path, NULL, &pin, &msg))
		fail_msg("open: %s", msg.text);
	assert_true(pin.fd >= 0);
	assert_string_equal(pin.sha256, "");
	assert_true(pin.dev == want.dev && pin.ino == want.ino && pin.size == want.size);
	rtc_set_helper("/nonexistent/qual-compile");
	if (rtc_identify_start(RTC_TEST_NVRTC, want.real_path, pin.fd, RTC_TEST_HELPER,
			       &p, &msg))
		fail_msg("start: %s", msg.text);
	rtc_set_helper(RTC_TEST_HELPER);
	assert_true(p.child.pid > 0);
	assert_string_equal(p.path, RTC_TEST_NVRTC);
	assert_string_equal(p.real_path, want.real_path);
	snprintf(dir, sizeof dir, "%s", p.dir);
	assert_true(folder_exists(dir));
	assert_int_equal(child_wait(&p.child, child_now() + 120, &ex), 0);
	assert_false(ex.timed_out);
	memset(&got, 0, sizeof got);
	strcpy(got.sha256, "kept");
	if (rtc_identify_finish(&p, &ex, 120, &got, &msg))
		fail_msg("finish: %s", msg.text);
	assert_int_equal(got.abi, want.abi);
	assert_string_equal(got.abi_name, want.abi_name);
	assert_string_equal(got.version, want.version);
	assert_string_equal(got.path, want.path);
	assert_string_equal(got.real_path, want.real_path);
	assert_string_equal(got.sha256, "");
	assert_true(got.dev == 0 && got.ino == 0 && got.size == 0);
	assert_false(got.pinned);
	assert_false(folder_exists(dir));
	/* The caller's hash of what it opened is the identity's. */
	assert_int_equal(sha256_hash_fd(pin.fd, -1, "nvrtc", sha, NULL, &msg), 0);
	assert_string_equal(sha, want.sha256);
	rtc_identity_release(&want);

	/* What start refuses leaves nothing running and nothing behind (the
	 * teardown checks TMPDIR), in rtc_identify()'s words. */
	assert_int_equal(rtc_library_open(RTC_TEST_DATA, RTC_TEST_DATA, NULL, &pin, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "cannot load compiler '" RTC_TEST_DATA "': not a "
			    "regular file");
	assert_int_equal(pin.fd, -1);
	assert_int_equal(rtc_identify_start(RTC_TEST_NVRTC, want.real_path, -1,
					    RTC_TEST_HELPER, &p, &msg), QUAL_EINVAL);
	assert_int_equal(p.child.pid, -1);
	if (rtc_library_open(RTC_TEST_NVRTC, want.real_path, NULL, &pin, &msg))
		fail_msg("open: %s", msg.text);
	assert_int_equal(rtc_identify_start(RTC_TEST_NVRTC, want.real_path, pin.fd,
					    "/nonexistent/qual-compile", &p, &msg), QUAL_ENOENT);
	rtc_pin_release(&pin);
	assert_string_equal(msg.text, "cannot start compiler helper "
			    "'/nonexistent/qual-compile': No such file or directory");
	assert_int_equal(p.child.pid, -1);
	assert_string_equal(p.dir, "");
}

/* An identify of a library at <TMPDIR>/<kind>/lib.so (a link to an ELF
 * shared object) by the fake helper, which answers by the name of the
 * library's folder. */
struct fake {
	char dir[PATH_MAX + 32];  /* <TMPDIR>/<kind> */
	char lib[PATH_MAX + 64];  /* dir/lib.so */
	char workdir[PATH_MAX];   /* the identify's private folder */
	struct rtc_pending p;
	struct rtc_pin pin;       /* f->lib, open */
};

static void fake_start(struct fake *f, const char *kind)
{
	struct qual_msg msg = { "" };
	char real[PATH_MAX];

	snprintf(f->dir, sizeof f->dir, "%s/%s", test_tmp, kind);
	if (!folder_exists(f->dir)) {
		assert_int_equal(mkdir(f->dir, 0700), 0);
		snprintf(f->lib, sizeof f->lib, "%s/lib.so", f->dir);
		assert_int_equal(symlink(RTC_SHIM_NOABI, f->lib), 0);
	}
	assert_non_null(realpath(f->lib, real));
	if (rtc_library_open(f->lib, real, NULL, &f->pin, &msg))
		fail_msg("open: %s", msg.text);
	if (rtc_identify_start(f->lib, real, f->pin.fd, RTC_TEST_FAKE_HELPER, &f->p, &msg))
		fail_msg("start: %s", msg.text);
	snprintf(f->workdir, sizeof f->workdir, "%s", f->p.dir);
	assert_true(folder_exists(f->workdir));
}

/* Starts the fake helper's identify of kind, waits wait_s for it, and
 * checks that finish gives want_rc with the message "compiler '<lib>'
 * <what>", no abi, and no folder left. Returns how the child ended. */
static struct child_exit fake_finish(struct fake *f, const char *kind, double wait_s,
				     int want_rc, const char *what)
{
	struct rtc_identity id;
	struct child_exit ex;
	struct qual_msg msg = { "" };
	char want[PATH_MAX + 192];

	fake_start(f, kind);
	assert_int_equal(child_wait(&f->p.child, child_now() + wait_s, &ex), 0);
	assert_int_equal(rtc_identify_finish(&f->p, &ex, wait_s, &id, &msg), want_rc);
	rtc_pin_release(&f->pin);
	snprintf(want, sizeof want, "compiler '%s' %s", f->lib, what);
	assert_string_equal(msg.text, want);
	assert_int_equal(id.abi, RTC_ABI_NONE);
	assert_string_equal(id.path, f->lib);
	assert_false(folder_exists(f->workdir));
	return ex;
}

/* A helper that dies by SIGSEGV before it reports: finish says the library
 * crashed while loading, as rtc_identify() does. */
static void test_identify_pending_crash(void **state)
{
	struct fake f;
	struct child_exit ex;

	(void)state;
	ex = fake_finish(&f, "helpercrash", 60, QUAL_ECRASH, "crashed while loading: "
			 "killed by signal SIGSEGV (Segmentation fault)");
	assert_int_equal(child_exit_signal(&ex), SIGSEGV);
	assert_false(ex.timed_out);
	/* What qual-run's error line says of it. */
	assert_int_equal(lines_code_of("setup", QUAL_ECRASH), LINES_CODE_COMPILE_CRASHED);
	fs_rm_tree(f.dir);
}

/* A helper that never finishes: past the caller's deadline finish says so;
 * abort of another leaves no process of its group and no folder. */
static void test_identify_pending_hang(void **state)
{
	struct fake f;
	struct child_exit ex;
	pid_t pid;
	int tries;

	(void)state;
	ex = fake_finish(&f, "helperhang", 0.5, QUAL_ETIMEOUT, "did not finish within 0.5 s");
	assert_true(ex.timed_out);
	assert_int_equal(lines_code_of("setup", QUAL_ETIMEOUT), LINES_CODE_COMPILE_TIMEOUT);

	fake_start(&f, "helperhang");
	pid = f.p.child.pid;
	/* Let the shell start its sleep, so the group holds two processes. */
	for (tries = 0; tries < 100 && !group_alive(pid); tries++)
		usleep(10000);
	usleep(100000);
	assert_true(group_alive(pid));
	rtc_identify_abort(&f.p);
	rtc_pin_release(&f.pin);
	assert_int_equal(f.p.child.pid, -1);
	assert_true(process_gone(pid));
	for (tries = 0; tries < 200 && group_alive(pid); tries++)
		usleep(10000);
	assert_false(group_alive(pid));
	assert_false(folder_exists(f.workdir));
	fs_rm_tree(f.dir);
}

/* ---- compile --------------------------------------------------------------- */

static void test_compile_nvrtc(void **state)
{
	struct rtc_identity id;
	struct rtc_result out;
	char want[65];
	double t0;

	(void)state;
	identify_ok(RTC_TEST_NVRTC, &id);
	t0 = child_now();
	assert_int_equal(compile_with(&id, AXPY_SOURCE, "axpy.cu", "sm_90", NULL, &out), 0);
	print_message("nvrtc sm_90 compile: %.0f ms in the compiler, %.0f ms in all\n",
		      out.compile_ms, 1e3 * (child_now() - t0));
	assert_int_equal(out.status, 0);
	assert_string_equal(out.message, "");
	assert_non_null(out.code);
	assert_true(out.code_size > 64);
	assert_memory_equal(out.code, "\177ELF", 4);
	assert_int_equal(elf_machine_of(out.code), 190); /* EM_CUDA */
	sha256sum_buffer(out.code, out.code_size, want);
	assert_string_equal(out.code_sha256, want);
	assert_non_null(strstr(out.log, "Compiling entry function 'axpy' for 'sm_90'"));
	assert_int_equal(out.log_size, strlen(out.log));
	assert_false(out.log_truncated);
	assert_true(out.res.registers > 0);
	assert_int_equal(out.res.spill_stores, 0);
	assert_true(out.compile_ms > 0);
	rtc_result_release(&out);
}

static void test_compile_hiprtc(void **state)
{
	struct rtc_identity id;
	struct rtc_result out;
	char want[65];
	double t0;

	(void)state;
	identify_ok(RTC_TEST_HIPRTC, &id);
	t0 = child_now();
	assert_int_equal(compile_with(&id, AXPY_SOURCE, "axpy.cpp", "gfx90a", NULL, &out), 0);
	print_message("hiprtc gfx90a compile: %.0f ms in the compiler, %.0f ms in all\n",
		      out.compile_ms, 1e3 * (child_now() - t0));
	if (out.status)
		fail_msg("%s", out.message);
	assert_memory_equal(out.code, "\177ELF", 4);
	assert_int_equal(elf_machine_of(out.code), 224); /* EM_AMDGPU */
	sha256sum_buffer(out.code, out.code_size, want);
	assert_string_equal(out.code_sha256, want);
	assert_true(out.res.registers > 0);
	assert_true(out.res.sgprs > 0);
	assert_int_equal(out.res.stack_bytes, 0);
	assert_int_equal(out.res.shared_bytes, 0);
	assert_int_equal(out.res.spill_stores, 0);
	rtc_result_release(&out);
}

/* A real compiler crash: ROCm 5.2.3's hiprtc aborts inside the compile for
 * gfx1100, a target it predates ("munmap_chunk(): invalid pointer", then
 * SIGABRT; under AddressSanitizer's allocator the same bug is a SIGSEGV). */
static void test_compile_hiprtc_crash(void **state)
{
	struct rtc_identity id;
	struct rtc_result out;
	char want[PATH_MAX + 128];

	(void)state;
	identify_ok(RTC_TEST_HIPRTC, &id);
	assert_int_equal(compile_with(&id, AXPY_SOURCE, "axpy.cpp", "gfx1100", NULL, &out), 0);
	assert_int_equal(out.status, QUAL_ECRASH);
	snprintf(want, sizeof want, "compiler '%s' crashed compiling 'axpy.cpp': "
		 "killed by signal SIG", RTC_TEST_HIPRTC);
	assert_memory_equal(out.message, want, strlen(want));
	assert_null(out.code);
	rtc_result_release(&out);
}

static void test_compile_error(void **state)
{
	struct rtc_identity id;
	struct rtc_result out;
	char *src;
	char want[PATH_MAX + 256];

	(void)state;
	src = data_read("bad.cu", NULL);
	identify_ok(RTC_TEST_NVRTC, &id);
	assert_int_equal(compile_with(&id, src, "bad.cu", "sm_90", NULL, &out), 0);
	assert_int_equal(out.status, QUAL_ECOMPILE);
	snprintf(want, sizeof want, "compiler '%s' rejected 'bad.cu' for sm_90: "
		 "bad.cu(3): error: identifier \"undefined_thing\" is undefined",
		 RTC_TEST_NVRTC);
	assert_string_equal(out.message, want);
	assert_null(out.code);
	assert_non_null(strstr(out.log, "2 errors detected in the compilation of \"bad.cu\""));
	rtc_result_release(&out);

	/* An option the compiler rejects is the arm's compile error too. */
	{
		const char *opts[] = { "--no-such-option" };
		struct rtc_request req = { &id, AXPY_SOURCE, "axpy.cu", "sm_90", opts, 1 };
		struct qual_msg msg;
		assert_int_equal(rtc_compile(&req, NULL, &out, &msg), 0);
		assert_int_equal(out.status, QUAL_ECOMPILE);
		assert_non_null(strstr(out.message, "unrecognized option --no-such-option"));
		rtc_result_release(&out);
	}

	identify_ok(RTC_TEST_HIPRTC, &id);
	assert_int_equal(compile_with(&id, src, "bad.cpp", "gfx90a", NULL, &out), 0);
	assert_int_equal(out.status, QUAL_ECOMPILE);
	assert_non_null(strstr(out.message, "error: use of undeclared identifier 'undefined_thing'"));
	rtc_result_release(&out);
	free(src);
}

static void test_compile_bad_request(void **state)
{
	struct rtc_identity id;
	struct rtc_result out;
	struct rtc_request req;
	struct qual_msg msg;

	(void)state;
	identify_ok(RTC_TEST_NVRTC, &id);
	req = (struct rtc_request){ &id, AXPY_SOURCE, "axpy.cu", "compute_90", NULL, 0 };
	assert_int_equal(rtc_compile(&req, NULL, &out, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "cannot compile for 'compute_90': nvrtc needs a "
			    "real architecture such as sm_90 (final machine code only)");
	assert_null(out.code);
	assert_null(out.log);

	req.arch = "sm_90";
	rtc_set_helper("/nonexistent/qual-compile");
	assert_int_equal(rtc_compile(&req, NULL, &out, &msg), QUAL_ENOENT);
	assert_string_equal(msg.text, "cannot start compiler helper "
			    "'/nonexistent/qual-compile': No such file or directory");
	assert_int_equal(rtc_identify(RTC_TEST_NVRTC, NULL, NULL, NULL, &id, &msg), QUAL_ENOENT);
	rtc_set_helper(RTC_TEST_HELPER);
}

/* ---- shims ----------------------------------------------------------------- */

static void test_shim_crash(void **state)
{
	struct rtc_identity id;
	struct rtc_result out;
	char want[PATH_MAX + 128];

	(void)state;
	identify_ok(RTC_SHIM_CRASH, &id);
	assert_int_equal(id.abi, RTC_ABI_NVRTC);
	assert_int_equal(compile_with(&id, AXPY_SOURCE, "axpy.cu", "sm_90", NULL, &out), 0);
	assert_int_equal(out.status, QUAL_ECRASH);
	snprintf(want, sizeof want, "compiler '%s' crashed compiling 'axpy.cu': "
		 "killed by signal SIGSEGV (Segmentation fault)", RTC_SHIM_CRASH);
	assert_string_equal(out.message, want);
	assert_null(out.code);
	rtc_result_release(&out);
}

/* A compiler whose recursion takes the whole stack crashed: its SIGSEGV
 * comes with no stack left, and qual-compile's handler, on a stack of its
 * own, still notes it as the child's own fault (without that, the death
 * read as a kill from outside: QUAL_EKILLED, no strike). */
static void test_shim_overflow(void **state)
{
	struct rtc_identity id;
	struct rtc_result out;

	(void)state;
	identify_ok(RTC_SHIM_OVERFLOW, &id);
	assert_int_equal(compile_with(&id, AXPY_SOURCE, "axpy.cu", "sm_90", NULL, &out), 0);
	assert_int_equal(out.status, QUAL_ECRASH);
	assert_non_null(strstr(out.message, "killed by signal SIGSEGV"));
	rtc_result_release(&out);
}

static void test_shim_hang(void **state)
{
	struct rtc_identity id;
	struct rtc_result out;
	struct rtc_limits lim;
	char pidfile[PATH_MAX + 8], want[PATH_MAX + 64];
	int pids[2] = { 0, 0 }, i, tries;
	double t0, took;
	FILE *f;

	(void)state;
	snprintf(pidfile, sizeof pidfile, "%s.pids", test_tmp);
	setenv("QUAL_SHIM_PIDFILE", pidfile, 1);
	identify_ok(RTC_SHIM_HANG, &id);
	rtc_limits_init(&lim);
	lim.timeout_s = 2;
	t0 = child_now();
	assert_int_equal(compile_with(&id, AXPY_SOURCE, "axpy.cu", "sm_90", &lim, &out), 0);
	took = child_now() - t0;
	unsetenv("QUAL_SHIM_PIDFILE");
	assert_int_equal(out.status, QUAL_ETIMEOUT);
	snprintf(want, sizeof want, "compiler '%s' did not finish within 2 s", RTC_SHIM_HANG);
	assert_string_equal(out.message, want);
	assert_true(took >= 2.0 && took < 10.0);
	rtc_result_release(&out);

	/* Both the compiling process and the one it forked are gone. */
	f = fopen(pidfile, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d %d", &pids[0], &pids[1]), 2);
	fclose(f);
	unlink(pidfile);
	for (i = 0; i < 2; i++) {
		assert_true(pids[i] > 1);
		for (tries = 0; tries < 200 && !process_gone(pids[i]); tries++)
			usleep(10000);
		assert_true(process_gone(pids[i]));
	}
	assert_false(group_alive(pids[0]));
}

/* What test_shim_killed's killer thread reads and sends. */
struct killer {
	const char *pidfile;
	int sig;
	pid_t pid;       /* the compiling process it signalled; 0: none */
};

/* Waits (up to 20 s) for shim_hang's pidfile and sends its compiling
 * process k->sig, as another process of the compile user would. */
static void *killer_run(void *arg)
{
	struct killer *k = arg;

	for (int tries = 0; tries < 2000 && !k->pid; tries++) {
		FILE *f = fopen(k->pidfile, "r");
		int pid = 0, other = 0;

		if (f) {
			if (fscanf(f, "%d %d", &pid, &other) == 2 && pid > 1) {
				kill(pid, k->sig);
				k->pid = pid;
			}
			fclose(f);
		}
		if (!k->pid)
			usleep(10000);
	}
	return NULL;
}

/* A compile child killed by a fault signal that another process sent
 * (kill(SIGSEGV)) did not crash: QUAL_EKILLED, which blames no arm and is
 * no quarantine strike (compile_killed, arm null), where a real segfault
 * (test_shim_crash) is QUAL_ECRASH. So is one killed by SIGKILL. */
static void test_shim_killed(void **state)
{
	static const int sigs[] = { SIGSEGV, SIGKILL };
	char pidfile[PATH_MAX + 8], want[PATH_MAX + 200], how[64];
	struct rtc_identity id;
	struct rtc_result out;
	struct rtc_limits lim;

	(void)state;
	snprintf(pidfile, sizeof pidfile, "%s.killed", test_tmp);
	setenv("QUAL_SHIM_PIDFILE", pidfile, 1);
	identify_ok(RTC_SHIM_HANG, &id);
	rtc_limits_init(&lim);
	lim.timeout_s = 30;
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct killer k = { pidfile, sigs[i], 0 };
		pthread_t t;

		unlink(pidfile);
		assert_int_equal(pthread_create(&t, NULL, killer_run, &k), 0);
		assert_int_equal(compile_with(&id, AXPY_SOURCE, "axpy.cu", "sm_90", &lim, &out), 0);
		pthread_join(t, NULL);
		assert_true(k.pid > 1);
		assert_int_equal(out.status, QUAL_EKILLED);
		snprintf(want, sizeof want, "compiler '%s' was killed by signal %s compiling "
			 "'axpy.cu', a signal it did not raise itself (sent by another "
			 "process): not a crash of the library's", RTC_SHIM_HANG,
			 child_signal_name(sigs[i], how, sizeof how));
		assert_string_equal(out.message, want);
		assert_int_equal(lines_code_of("compile", out.status), LINES_CODE_COMPILE_KILLED);
		rtc_result_release(&out);
	}
	unsetenv("QUAL_SHIM_PIDFILE");
	unlink(pidfile);
	rtc_identity_release(&id);
}

static void test_shim_hugelog(void **state)
{
	struct rtc_identity id;
	struct rtc_result out;
	struct rtc_limits lim;

	(void)state;
	identify_ok(RTC_SHIM_HUGELOG, &id);
	assert_int_equal(compile_with(&id, AXPY_SOURCE, "axpy.cu", "sm_90", NULL, &out), 0);
	assert_int_equal(out.status, QUAL_ECOMPILE);
	assert_int_equal(out.log_size, (size_t)64 << 20);
	assert_true(out.log_truncated);
	assert_int_equal(strlen(out.log), (size_t)1 << 20);
	assert_non_null(strstr(out.message, "rejected 'axpy.cu' for sm_90: shim_hugelog: "
			       "error: line 00000000 of a 64 MiB log "
			       "(log of 67108864 bytes, first 1048576 kept)"));
	rtc_result_release(&out);

	rtc_limits_init(&lim);
	lim.log_cap = 4096;
	assert_int_equal(compile_with(&id, AXPY_SOURCE, "axpy.cu", "sm_90", &lim, &out), 0);
	assert_int_equal(out.status, QUAL_ECOMPILE);
	assert_int_equal(strlen(out.log), 4096);
	assert_int_equal(out.log_size, (size_t)64 << 20);
	rtc_result_release(&out);

	/* Over RTC_OUTPUT_LIMIT: refused before the log is fetched. */
	setenv("QUAL_SHIM_HUGELOG_BYTES", "314572800", 1);
	assert_int_equal(compile_with(&id, AXPY_SOURCE, "axpy.cu", "sm_90", NULL, &out), 0);
	unsetenv("QUAL_SHIM_HUGELOG_BYTES");
	assert_int_equal(out.status, QUAL_ELIMIT);
	assert_non_null(strstr(out.message, "reported a log of 314572801 bytes for "
			       "'axpy.cu', over the 256 MiB limit"));
	assert_string_equal(out.log, "");
	rtc_result_release(&out);
}

/* Compiles source with the real nvrtc and with shim; both must succeed, with
 * different code. Returns the shim's result in *shim_out. */
static void compile_both(const char *shim, const char *source,
			 struct rtc_result *real_out, struct rtc_result *shim_out)
{
	struct rtc_identity real_id, shim_id;

	identify_ok(RTC_TEST_NVRTC, &real_id);
	identify_ok(shim, &shim_id);
	assert_string_equal(shim_id.version, "13.0");
	assert_int_equal(compile_with(&real_id, source, "k.cu", "sm_90", NULL, real_out), 0);
	assert_int_equal(compile_with(&shim_id, source, "k.cu", "sm_90", NULL, shim_out), 0);
	if (real_out->status)
		fail_msg("%s", real_out->message);
	if (shim_out->status)
		fail_msg("%s", shim_out->message);
	assert_int_equal(elf_machine_of(shim_out->code), 190);
	assert_string_not_equal(real_out->code_sha256, shim_out->code_sha256);
}

static void test_shim_miscompile(void **state)
{
	struct rtc_result a, b;

	(void)state;
	compile_both(RTC_SHIM_MISCOMPILE, AXPY_SOURCE, &a, &b);
	rtc_result_release(&a);
	rtc_result_release(&b);
}

/* shim_oob and shim_spin change the entry kernel of a fixture-like source;
 * a source without the QUAL_KERNEL marker compiles to the real compiler's
 * code, so the change lands only where it is meant to. */
static void test_shim_oob(void **state)
{
	struct rtc_identity real_id, shim_id;
	struct rtc_result a, b;

	(void)state;
	compile_both(RTC_SHIM_OOB, ENTRY_SOURCE, &a, &b);
	rtc_result_release(&a);
	rtc_result_release(&b);
	identify_ok(RTC_TEST_NVRTC, &real_id);
	identify_ok(RTC_SHIM_OOB, &shim_id);
	assert_int_equal(compile_with(&real_id, AXPY_SOURCE, "k.cu", "sm_90", NULL, &a), 0);
	assert_int_equal(compile_with(&shim_id, AXPY_SOURCE, "k.cu", "sm_90", NULL, &b), 0);
	assert_int_equal(a.status, 0);
	assert_int_equal(b.status, 0);
	assert_string_equal(a.code_sha256, b.code_sha256);
	rtc_result_release(&a);
	rtc_result_release(&b);
}

static void test_shim_spin(void **state)
{
	struct rtc_result a, b;

	(void)state;
	compile_both(RTC_SHIM_SPIN, ENTRY_SOURCE, &a, &b);
	rtc_result_release(&a);
	rtc_result_release(&b);
}

static void test_shim_slow(void **state)
{
	struct rtc_result a, b;
	char *src = data_read("heavy.cu", NULL);

	(void)state;
	compile_both(RTC_SHIM_SLOW, src, &a, &b);
	print_message("heavy: real %d registers, %d bytes spilled; slow shim %d "
		      "registers, %d bytes spilled\n", a.res.registers,
		      a.res.spill_stores, b.res.registers, b.res.spill_stores);
	assert_true(a.res.registers > 32);
	assert_int_equal(a.res.spill_stores, 0);
	assert_true(b.res.registers <= 32);
	assert_true(b.res.spill_stores > 0);
	rtc_result_release(&a);
	rtc_result_release(&b);
	free(src);
}

static void test_shim_slow_g(void **state)
{
	struct rtc_result a, b;
	char *src = data_read("heavy.cu", NULL);

	(void)state;
	compile_both(RTC_SHIM_SLOW_G, src, &a, &b);
	assert_true(b.code_size > a.code_size);
	rtc_result_release(&a);
	rtc_result_release(&b);
	free(src);
}

/* The sibling library is found through the folder of the compiler, and
 * forwarding unchanged gives byte-identical code. */
static void test_shim_sibling(void **state)
{
	struct rtc_identity real_id, id;
	struct rtc_result a, b;

	(void)state;
	identify_ok(RTC_SHIM_SIBLING, &id);
	assert_int_equal(id.abi, RTC_ABI_NVRTC);
	identify_ok(RTC_TEST_NVRTC, &real_id);
	assert_int_equal(compile_with(&real_id, AXPY_SOURCE, "axpy.cu", "sm_90", NULL, &a), 0);
	assert_int_equal(compile_with(&id, AXPY_SOURCE, "axpy.cu", "sm_90", NULL, &b), 0);
	assert_int_equal(a.status, 0);
	assert_int_equal(b.status, 0);
	assert_string_equal(a.code_sha256, b.code_sha256);
	assert_int_equal(a.code_size, b.code_size);
	assert_memory_equal(a.code, b.code, a.code_size);
	rtc_result_release(&a);
	rtc_result_release(&b);
}

/* ---- pins ------------------------------------------------------------------ */

/* Copies the file at from to to (mode 0755), through a temporary name
 * renamed into place, as someone replacing a library would. */
static void file_copy(const char *from, const char *to)
{
	char tmp[PATH_MAX + 8], *data = NULL;
	size_t n;

	snprintf(tmp, sizeof tmp, "%s.new", to);
	assert_int_equal(fs_read_capped(from, RTC_OUTPUT_LIMIT, &data, &n, NULL), 0);
	assert_int_equal(fs_write_synced(tmp, data, n, 0755, NULL, NULL), 0);
	assert_int_equal(rename(tmp, to), 0);
	free(data);
}

/* A pin holds the bytes hashed, sealed: they cannot be written, grown,
 * shrunk or unsealed, through its descriptor or a reopened one; a link is
 * refused (the real path is what is read). */
static void test_pin_sealed(void **state)
{
	char path[PATH_MAX + 16], link_path[PATH_MAX + 16], want[65], fd_path[64];
	struct rtc_pin pin;
	struct qual_msg msg;
	int fd, seals;

	(void)state;
	snprintf(path, sizeof path, "%s/lib.so", test_tmp);
	file_copy(RTC_SHIM_NOABI, path);
	assert_int_equal(rtc_pin_library(path, &pin, &msg), 0);
	sha256sum_file(RTC_SHIM_NOABI, want);
	assert_string_equal(pin.sha256, want);
	assert_int_equal(lseek(pin.fd, 0, SEEK_END), pin.size);
	assert_true(pin.size > 0);
	assert_int_equal(fcntl(pin.fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	seals = fcntl(pin.fd, F_GET_SEALS);
	assert_int_equal(seals, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
	assert_int_equal(pwrite(pin.fd, "x", 1, 0), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(ftruncate(pin.fd, 1), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(fcntl(pin.fd, F_ADD_SEALS, 0), -1);
	assert_int_equal(errno, EPERM);
	/* What a compile child gets: the memfd reopened through /proc. */
	snprintf(fd_path, sizeof fd_path, "/proc/self/fd/%d", pin.fd);
	fd = open(fd_path, O_RDWR);
	if (fd >= 0) {
		assert_int_equal(write(fd, "x", 1), -1);
		assert_int_equal(errno, EPERM);
		close(fd);
	}
	/* Changing the file changes nothing pinned. */
	file_copy(RTC_SHIM_CRASH, path);
	{
		char hex[SHA256_HEX_SIZE];
		assert_int_equal(lseek(pin.fd, 0, SEEK_SET), 0);
		assert_int_equal(sha256_hash_fd(pin.fd, -1, "pin", hex, NULL, &msg), 0);
		assert_string_equal(hex, want);
	}
	rtc_pin_release(&pin);
	assert_int_equal(pin.fd, -1);

	snprintf(link_path, sizeof link_path, "%s/link.so", test_tmp);
	assert_int_equal(symlink(path, link_path), 0);
	assert_int_equal(rtc_pin_library(link_path, &pin, &msg), QUAL_EIO);
	assert_non_null(strstr(msg.text, "is a symbolic link now"));
	assert_int_equal(pin.fd, -1);
	unlink(link_path);
	unlink(path);
}

/* An identify with an expected hash refuses other bytes before any child
 * loads them (no helper is even looked for), naming both hashes; an
 * identify's compiles load the pinned bytes, whatever the file holds by
 * then (on main, the compile loaded the path again). */
static void test_pin_identify(void **state)
{
	char path[PATH_MAX + 16], want[65], crash[65], text[2 * PATH_MAX + 400];
	struct rtc_identity id;
	struct rtc_result out;
	struct qual_msg msg;

	(void)state;
	snprintf(path, sizeof path, "%s/lib.so", test_tmp);
	file_copy(RTC_SHIM_OOB, path);
	sha256sum_file(RTC_SHIM_OOB, want);
	sha256sum_file(RTC_SHIM_CRASH, crash);
	identify_ok(path, &id);
	assert_true(id.pinned);
	assert_string_equal(id.sha256, want);

	/* The file is replaced by a crashing compiler: the pinned one runs. */
	file_copy(RTC_SHIM_CRASH, path);
	assert_int_equal(compile_with(&id, AXPY_SOURCE, "axpy.cu", "sm_90", NULL, &out), 0);
	assert_int_equal(out.status, 0);
	assert_true(out.code_size > 0);
	rtc_result_release(&out);
	rtc_identity_release(&id);
	assert_false(id.pinned);

	/* Expected the first, found the second: refused, nothing started. */
	rtc_set_helper("/nonexistent/qual-compile");
	assert_int_equal(rtc_identify(path, path, want, NULL, &id, &msg), QUAL_ECHECK);
	rtc_set_helper(RTC_TEST_HELPER);
	snprintf(text, sizeof text, "compiler '%s' is not the library that was checked: "
		 "'%s' has sha256 %s now, %s expected", path, path, crash, want);
	assert_string_equal(msg.text, text);
	assert_string_equal(id.sha256, crash);
	assert_false(id.pinned);
	/* The right hash is accepted. */
	if (rtc_identify(path, NULL, crash, NULL, &id, &msg))
		fail_msg("identify: %s", msg.text);
	rtc_identity_release(&id);
	unlink(path);
}

/* The file the submit check opens must be the one the caller checked:
 * another one at the real path is refused, and so is a link there now or
 * a FIFO (without waiting for a writer); the file opened is the one whose
 * hash the caller computes. */
static void test_identify_changed(void **state)
{
	char path[PATH_MAX + 16], real[PATH_MAX], want[2 * PATH_MAX + 200], sha[65], got[65];
	struct rtc_pin pin;
	struct qual_msg msg;
	struct stat other, st;
	double t0;

	(void)state;
	snprintf(path, sizeof path, "%s/lib.so", test_tmp);
	file_copy(RTC_SHIM_OOB, path);
	assert_non_null(realpath(path, real));
	snprintf(want, sizeof want, "compiler '%s' changed while it was checked: '%s' is "
		 "another file now", path, real);
	assert_int_equal(stat(RTC_SHIM_NOABI, &other), 0);
	assert_int_equal(rtc_library_open(path, real, &other, &pin, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, want);
	assert_int_equal(pin.fd, -1);

	assert_int_equal(stat(path, &st), 0);
	if (rtc_library_open(path, real, &st, &pin, &msg))
		fail_msg("open: %s", msg.text);
	assert_int_equal(sha256_hash_fd(pin.fd, -1, path, got, NULL, &msg), 0);
	sha256sum_file(RTC_SHIM_OOB, sha);
	assert_string_equal(got, sha);
	assert_true(pin.ino == st.st_ino && pin.size == st.st_size);
	rtc_pin_release(&pin);

	/* A link at the real path now: not followed. */
	unlink(path);
	assert_int_equal(symlink(RTC_SHIM_OOB, path), 0);
	assert_int_equal(rtc_library_open(path, path, NULL, &pin, &msg), QUAL_EIO);
	assert_non_null(strstr(msg.text, "is a symbolic link now"));
	assert_int_equal(pin.fd, -1);
	/* A FIFO: refused at once, nobody writes it. */
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	t0 = child_now();
	assert_int_equal(rtc_library_open(path, path, NULL, &pin, &msg), QUAL_EINVAL);
	assert_true(child_now() - t0 < 1.0);
	assert_non_null(strstr(msg.text, "not a regular file"));
	unlink(path);
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, tmp_setup, tmp_teardown)

QUAL_TESTS(
	T(sha256),
	T(parse_nvrtc_logs),
	T(parse_amdgpu_metadata),
	T(parse_hostile_input),
	T(check_code),
	T(arch_valid),
	T(child_env),
	T(child_report),
	T(identify_nvrtc),
	T(identify_hiprtc),
	T(identify_bad_paths),
	T(identify_noabi),
	T(identify_pending_nvrtc),
	T(identify_pending_crash),
	T(identify_pending_hang),
	T(compile_nvrtc),
	T(compile_hiprtc),
	T(compile_hiprtc_crash),
	T(compile_error),
	T(compile_bad_request),
	T(shim_crash),
	T(shim_overflow),
	T(shim_hang),
	T(shim_killed),
	T(shim_hugelog),
	T(shim_miscompile),
	T(shim_slow),
	T(shim_slow_g),
	T(shim_sibling),
	T(shim_oob),
	T(shim_spin),
	T(pin_sealed),
	T(pin_identify),
	T(identify_changed),
)
