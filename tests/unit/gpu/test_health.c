/* The GPU health check (gpu/health.c) on a fake GPU, and its PTX through
 * the real ptxas. The fake backend's memory is host memory and its "kernel"
 * applies the recurrence the PTX computes (written out again here, not taken
 * from health.c), so a healthy fake passes and each way of being unhealthy
 * (a wrong word, a hang, no device) must be reported as such.
 *
 * test_ptx writes health_ptx to a file and assembles it with the ptxas that
 * QUAL_PTXAS names for sm_75, sm_90 and sm_120: the kernel the GPU machine's
 * driver will compile must at least be valid PTX. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/fsutil.h"
#include "common/lines.h"
#include "proto/line.h"
#include "common/xalloc.h"
#include "gpu/gpu_backend.h"
#include "gpu/health.h"
#include "tests/unit/test_main.h"

/* ---- the fake backend -------------------------------------------------- */

struct fake_graph {
	struct gpu_graph base; /* first: gpu.c's part */
	unsigned *out;
	unsigned n, salt;
	unsigned grid, block;
	int nlaunch;
};

static struct {
	bool cuda_present, hip_present; /* which fake finds a device */
	int wrong_word;                 /* -1, or the word the kernel gets wrong */
	bool hang;                      /* graph runs do not finish */
	bool hung;
	int calls_after_hang;
	int opens, closes, runs, ptx_loads;
	double run_limit_ms;            /* the wait limit at the graph run */
	int nlaunch;
	char kernel[64];
	void *mem[4];
	int nmem;
} fk;

static void fake_call(void)
{
	if (fk.hung)
		fk.calls_after_hang++;
}

static int fake_open(bool present, const char *name, int ordinal, struct gpu **out,
		     struct qual_msg *msg)
{
	struct gpu *g;

	if (!present)
		return qual_fail(msg, QUAL_ENODEV, "fake %s: no device", name);
	g = xcalloc(1, sizeof *g);
	snprintf(g->info.vendor, sizeof g->info.vendor, "%s",
		 strcmp(name, "cuda") == 0 ? "nvidia" : "amd");
	snprintf(g->info.name, sizeof g->info.name, "Fake %s", name);
	snprintf(g->info.arch, sizeof g->info.arch, "sm_90");
	snprintf(g->info.driver, sizeof g->info.driver, "fake");
	g->info.ordinal = ordinal;
	fk.opens++;
	*out = g;
	return 0;
}

static int fake_cuda_open(int ordinal, struct gpu **out, struct qual_msg *msg)
{
	return fake_open(fk.cuda_present, "cuda", ordinal, out, msg);
}

static int fake_hip_open(int ordinal, struct gpu **out, struct qual_msg *msg)
{
	return fake_open(fk.hip_present, "hip", ordinal, out, msg);
}

static void fake_close(struct gpu *g)
{
	fake_call();
	fk.closes++;
	free(g);
}

static int fake_module_load(struct gpu *g, const void *code, size_t size, const char *kernel,
			    struct gpu_module **out, struct qual_msg *msg)
{
	(void)g;
	(void)code;
	(void)size;
	(void)kernel;
	(void)out;
	return qual_fail(msg, QUAL_EINVAL, "the health check loads no cubin");
}

static int fake_module_load_ptx(struct gpu *g, const char *ptx, const char *kernel,
				struct gpu_module **out, struct qual_msg *msg)
{
	(void)g;
	(void)msg;
	fake_call();
	assert_ptr_equal(ptx, health_ptx);
	snprintf(fk.kernel, sizeof fk.kernel, "%s", kernel);
	fk.ptx_loads++;
	*out = xcalloc(1, sizeof **out);
	return 0;
}

static void fake_module_free(struct gpu_module *m)
{
	fake_call();
	free(m);
}

static int fake_alloc(struct gpu *g, size_t bytes, uint64_t *dptr, struct qual_msg *msg)
{
	(void)g;
	(void)msg;
	fake_call();
	assert_true(fk.nmem < 4);
	fk.mem[fk.nmem] = xmalloc(bytes);
	*dptr = (uint64_t)(uintptr_t)fk.mem[fk.nmem++];
	return 0;
}

static int fake_free(struct gpu *g, uint64_t dptr)
{
	(void)g;
	fake_call();
	for (int i = 0; i < fk.nmem; i++) {
		if ((uint64_t)(uintptr_t)fk.mem[i] == dptr) {
			free(fk.mem[i]);
			fk.mem[i] = fk.mem[--fk.nmem];
			return 0;
		}
	}
	fail_msg("free of an unknown address");
	return QUAL_EINVAL;
}

static int fake_upload(struct gpu *g, uint64_t dptr, const void *src, size_t bytes,
		       struct qual_msg *msg)
{
	(void)g;
	(void)msg;
	fake_call();
	memcpy((void *)(uintptr_t)dptr, src, bytes);
	return 0;
}

static int fake_download(struct gpu *g, void *dst, uint64_t dptr, size_t bytes,
			 struct qual_msg *msg)
{
	(void)g;
	(void)msg;
	fake_call();
	memcpy(dst, (const void *)(uintptr_t)dptr, bytes);
	return 0;
}

static int fake_memset(struct gpu *g, uint64_t dptr, int value, size_t bytes,
		       struct qual_msg *msg)
{
	(void)g;
	(void)msg;
	fake_call();
	memset((void *)(uintptr_t)dptr, value, bytes);
	return 0;
}

static int fake_graph_new(struct gpu *g, struct gpu_module *m, const unsigned grid[3],
			  const unsigned block[3], unsigned shared_bytes, void **params,
			  int nlaunch, struct gpu_graph **out, struct qual_msg *msg)
{
	struct fake_graph *gr = xcalloc(1, sizeof *gr);

	(void)g;
	(void)m;
	(void)shared_bytes;
	(void)msg;
	fake_call();
	gr->out = (unsigned *)(uintptr_t)*(const uint64_t *)params[0];
	gr->n = *(const unsigned *)params[1];
	gr->salt = *(const unsigned *)params[2];
	gr->grid = grid[0];
	gr->block = block[0];
	gr->nlaunch = nlaunch;
	fk.nlaunch = nlaunch;
	*out = &gr->base;
	return 0;
}

static void fake_graph_free(struct gpu_graph *gr)
{
	fake_call();
	free(gr);
}

/* The kernel, as the PTX computes it: mad.lo then add, modulo 2^32, on every
 * word the grid covers. */
static int fake_graph_run(struct gpu_graph *g, struct qual_msg *msg)
{
	struct fake_graph *gr = (struct fake_graph *)g;

	fake_call();
	fk.runs++;
	fk.run_limit_ms = g->gpu->wait_limit_ms;
	if (fk.hang) {
		fk.hung = true;
		return qual_fail(msg, QUAL_EHANG, "kernel did not finish within %.0f ms",
				 g->gpu->wait_limit_ms);
	}
	for (int k = 0; k < gr->nlaunch; k++)
		for (unsigned i = 0; i < gr->grid * gr->block; i++)
			if (i < gr->n)
				gr->out[i] = (uint32_t)(gr->out[i] * 1664525u + (i ^ gr->salt) +
							1013904223u);
	if (fk.wrong_word >= 0)
		gr->out[fk.wrong_word] ^= 0x100u;
	return 0;
}

static int fake_graph_time(struct gpu_graph *gr, double *device_ns, double *host_ns,
			   struct qual_msg *msg)
{
	(void)gr;
	(void)device_ns;
	(void)host_ns;
	return qual_fail(msg, QUAL_EINVAL, "the health check times nothing");
}

#define FAKE_OPS                                                               \
	.close = fake_close, .module_load = fake_module_load,                  \
	.module_free = fake_module_free, .alloc = fake_alloc,                  \
	.free = fake_free, .upload = fake_upload, .download = fake_download,   \
	.memset = fake_memset, .graph_new = fake_graph_new,                    \
	.graph_free = fake_graph_free, .graph_run = fake_graph_run,            \
	.graph_time = fake_graph_time

/* The CUDA fake loads PTX; the HIP fake, like the real HIP backend, cannot. */
const struct gpu_backend gpu__cuda_backend = {
	.name = "cuda", .built = true, .open = fake_cuda_open,
	.module_load_ptx = fake_module_load_ptx, FAKE_OPS
};
const struct gpu_backend gpu__hip_backend = {
	.name = "hip", .built = true, .open = fake_hip_open, FAKE_OPS
};

static void fake_reset(void)
{
	memset(&fk, 0, sizeof fk);
	fk.wrong_word = -1;
}

/* Everything the check allocated was freed and the gpu closed, unless it
 * hung: then nothing at all reached the backend after the hang. */
static void assert_clean(const struct health_report *r)
{
	assert_int_equal(fk.calls_after_hang, 0);
	if (r->hung) {
		assert_int_equal(fk.closes, 0);
		for (int i = 0; i < fk.nmem; i++)
			free(fk.mem[i]);
	} else {
		assert_int_equal(fk.closes, fk.opens);
		assert_int_equal(fk.nmem, 0);
	}
}

static const char *line_str(const json_t *line, const char *key)
{
	const char *s = json_string_value(json_object_get(line, key));
	return s ? s : "";
}

/* ---- tests --------------------------------------------------------------- */

static void test_healthy(void **state)
{
	struct health_report r;
	json_t *line;

	(void)state;
	fake_reset();
	fk.cuda_present = true;
	assert_int_equal(health_check(0, HEALTH_LIMIT_MS, &r), 0);
	assert_true(r.ok);
	assert_true(r.kernel);
	assert_false(r.hung);
	assert_true(r.have_device);
	assert_string_equal(r.info.vendor, "nvidia");
	assert_int_equal(fk.ptx_loads, 1);
	assert_string_equal(fk.kernel, "qual_health");
	assert_int_equal(fk.runs, 1);
	assert_int_equal(fk.nlaunch, HEALTH_LAUNCHES);
	assert_true(fk.run_limit_ms == HEALTH_LIMIT_MS);
	assert_non_null(strstr(r.message, "matched the host exactly"));
	assert_clean(&r);

	line = health_json(&r);
	assert_string_equal(line_str(line, "type"), "health");
	assert_true(json_is_true(json_object_get(line, "ok")));
	assert_int_equal(r.code, LINES_CODE_NONE);
	assert_true(json_is_null(json_object_get(line, "code")));
	assert_true(json_is_true(json_object_get(line, "kernel")));
	assert_string_equal(line_str(json_object_get(line, "device"), "name"), "Fake cuda");
	assert_true(json_real_value(json_object_get(line, "limit_ms")) == HEALTH_LIMIT_MS);
	assert_true(json_is_real(json_object_get(line, "ms")));
	json_decref(line);
}

/* One word wrong by one bit: not healthy, and the word is named. */
static void test_wrong_word(void **state)
{
	struct health_report r;
	json_t *line;

	(void)state;
	fake_reset();
	fk.cuda_present = true;
	fk.wrong_word = 77;
	assert_int_equal(health_check(0, HEALTH_LIMIT_MS, &r), QUAL_ECHECK);
	assert_false(r.ok);
	assert_false(r.hung);
	assert_non_null(strstr(r.message, "kernel result wrong at word 77 of 4096"));
	assert_clean(&r);
	/* The GPU computed wrong: a fault of the GPU, by code. */
	line = health_json(&r);
	assert_string_equal(line_str(line, "code"), "gpu_fault");
	json_decref(line);
}

/* The kernel does not finish: not healthy, hung (the caller must _exit), and
 * nothing reaches the runtime after the hang, not even the frees. */
static void test_hang(void **state)
{
	struct health_report r;
	json_t *line;

	(void)state;
	fake_reset();
	fk.cuda_present = true;
	fk.hang = true;
	assert_int_equal(health_check(0, 750, &r), QUAL_EHANG);
	assert_false(r.ok);
	assert_true(r.hung);
	assert_true(fk.run_limit_ms == 750);
	assert_string_equal(r.message, "kernel did not finish within 750 ms");
	assert_clean(&r);
	line = health_json(&r);
	assert_true(json_is_true(json_object_get(line, "hung")));
	assert_true(json_is_false(json_object_get(line, "ok")));
	assert_string_equal(line_str(line, "code"), "gpu_hang");
	json_decref(line);
}

/* A backend without PTX (HIP): the memory round trip alone, which says so. */
static void test_no_ptx(void **state)
{
	struct health_report r;

	(void)state;
	fake_reset();
	fk.hip_present = true;
	assert_int_equal(health_check(0, HEALTH_LIMIT_MS, &r), 0);
	assert_true(r.ok);
	assert_false(r.kernel);
	assert_int_equal(fk.runs, 0);
	assert_string_equal(r.info.vendor, "amd");
	assert_non_null(strstr(r.message, "memory round trip of 16384 bytes matched; "
				       "no kernel: the hip backend cannot load ptx"));
	assert_clean(&r);
}

static void test_nodev(void **state)
{
	struct health_report r;
	json_t *line;

	(void)state;
	fake_reset();
	assert_int_equal(health_check(0, HEALTH_LIMIT_MS, &r), QUAL_ENODEV);
	assert_false(r.ok);
	assert_false(r.have_device);
	assert_string_equal(r.message,
			    "no device: cuda: fake cuda: no device; hip: fake hip: no device");
	assert_int_equal(fk.opens, 0);
	line = health_json(&r);
	assert_true(json_is_null(json_object_get(line, "device")));
	assert_string_equal(line_str(line, "code"), "no_device");
	json_decref(line);
}

/* health_ptx assembles with the real ptxas (QUAL_PTXAS names it; without it
 * the test skips itself) for three architectures. */
static void test_ptx(void **state)
{
	static const char *const archs[] = {"sm_75", "sm_90", "sm_120"};
	const char *ptxas = getenv("QUAL_PTXAS");
	char dir[] = "/tmp/qual-health-XXXXXX", path[64], cmd[512];
	FILE *f;
	int bad = 0;

	(void)state;
	if (!ptxas || access(ptxas, X_OK) != 0)
		qual_test_skip("no ptxas at '%s'", ptxas ? ptxas : "(QUAL_PTXAS unset)");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/health.ptx", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(health_ptx, f) != EOF);
	assert_int_equal(fclose(f), 0);
	for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
		snprintf(cmd, sizeof cmd, "'%s' -arch=%s -o '%s/health.cubin' '%s'", ptxas,
			 archs[i], dir, path);
		int rc = system(cmd);
		print_message("%s: %s\n", archs[i], rc == 0 ? "assembled" : "FAILED");
		bad += rc != 0;
	}
	fs_rm_tree(dir);
	assert_int_equal(access(dir, F_OK), -1);
	assert_int_equal(bad, 0);
}

QUAL_TESTS(
	cmocka_unit_test(test_healthy),
	cmocka_unit_test(test_wrong_word),
	cmocka_unit_test(test_hang),
	cmocka_unit_test(test_no_ptx),
	cmocka_unit_test(test_nodev),
	cmocka_unit_test(test_ptx),
)
