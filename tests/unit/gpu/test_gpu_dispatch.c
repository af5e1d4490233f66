/* The dispatch in gpu/gpu.c, without a GPU: the file is included here with
 * two fake backends in place of CUDA and HIP, which count what they hold, so
 * that the order of gpu_open, its error handling, the argument checks and what
 * gpu_close frees can be checked on any machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/test_main.h"

#include "gpu/gpu.c"

/* What the fakes do on open, set per test. */
static int cuda_open_rc, hip_open_rc;
/* The CUDA fake's describe (no context): what it returns, and its calls. */
static int cuda_describe_rc, describe_calls, open_calls;
/* Live objects per kind, and calls seen. */
static int live_gpus, live_modules, live_graphs, live_allocs;
static int graph_runs;
static int last_nlaunch;

/* A fake device counts what it holds, so that its close can check that
 * gpu.c freed all of it first. */
struct fake_gpu {
	struct gpu base;
	int modules, graphs, allocs;
};

static struct fake_gpu *fake(struct gpu *g)
{
	return (struct fake_gpu *)g;
}

static int fake_open(const char *name, int rc, struct gpu **out, struct qual_msg *msg)
{
	if (rc < 0)
		return qual_fail(msg, rc, "fake %s says %s", name, qual_strerror(rc));
	struct fake_gpu *fg = xcalloc(1, sizeof *fg);
	snprintf(fg->base.info.vendor, sizeof fg->base.info.vendor, "%s", name);
	snprintf(fg->base.info.arch, sizeof fg->base.info.arch, "%s-arch", name);
	live_gpus++;
	open_calls++;
	*out = &fg->base;
	return 0;
}

static int fake_cuda_open(int ordinal, struct gpu **out, struct qual_msg *msg)
{
	(void)ordinal;
	return fake_open("cuda", cuda_open_rc, out, msg);
}

static int fake_cuda_describe(int ordinal, struct gpu_info *info, struct qual_msg *msg)
{
	(void)ordinal;
	describe_calls++;
	if (cuda_describe_rc < 0)
		return qual_fail(msg, cuda_describe_rc, "fake cuda describe says %s",
				 qual_strerror(cuda_describe_rc));
	snprintf(info->vendor, sizeof info->vendor, "cuda");
	snprintf(info->arch, sizeof info->arch, "described");
	return 0;
}

static int fake_hip_open(int ordinal, struct gpu **out, struct qual_msg *msg)
{
	(void)ordinal;
	return fake_open("hip", hip_open_rc, out, msg);
}

static void fake_close(struct gpu *g)
{
	/* gpu.c must have freed everything first. */
	assert_int_equal(fake(g)->modules, 0);
	assert_int_equal(fake(g)->graphs, 0);
	assert_int_equal(fake(g)->allocs, 0);
	live_gpus--;
	free(g);
}

static int fake_module_load(struct gpu *g, const void *code, size_t size,
			    const char *kernel, struct gpu_module **out,
			    struct qual_msg *msg)
{
	(void)g;
	(void)code;
	(void)size;
	if (strcmp(kernel, "missing") == 0)
		return qual_fail(msg, QUAL_ENOENT, "kernel '%s' not found in module", kernel);
	*out = xcalloc(1, sizeof **out);
	fake(g)->modules++;
	live_modules++;
	return 0;
}

static void fake_module_free(struct gpu_module *m)
{
	/* In these tests graphs always go before modules. */
	assert_int_equal(fake(m->gpu)->graphs, 0);
	fake(m->gpu)->modules--;
	live_modules--;
	free(m);
}

static int fake_alloc(struct gpu *g, size_t bytes, uint64_t *dptr, struct qual_msg *msg)
{
	(void)g;
	(void)msg;
	*dptr = (uint64_t)(uintptr_t)xmalloc(bytes);
	fake(g)->allocs++;
	live_allocs++;
	return 0;
}

static int fake_free(struct gpu *g, uint64_t dptr)
{
	free((void *)(uintptr_t)dptr);
	fake(g)->allocs--;
	live_allocs--;
	return 0;
}

static int fake_upload(struct gpu *g, uint64_t dptr, const void *src, size_t bytes,
		       struct qual_msg *msg)
{
	(void)g;
	(void)msg;
	memcpy((void *)(uintptr_t)dptr, src, bytes);
	return 0;
}

static int fake_download(struct gpu *g, void *dst, uint64_t dptr, size_t bytes,
			 struct qual_msg *msg)
{
	(void)g;
	(void)msg;
	memcpy(dst, (const void *)(uintptr_t)dptr, bytes);
	return 0;
}

static int fake_memset(struct gpu *g, uint64_t dptr, int value, size_t bytes,
		       struct qual_msg *msg)
{
	(void)g;
	(void)msg;
	memset((void *)(uintptr_t)dptr, value, bytes);
	return 0;
}

static int fake_graph_new(struct gpu *g, struct gpu_module *m, const unsigned grid[3],
			  const unsigned block[3], unsigned shared_bytes, void **params,
			  int nlaunch, struct gpu_graph **out, struct qual_msg *msg)
{
	(void)m;
	(void)grid;
	(void)block;
	(void)shared_bytes;
	(void)params;
	(void)msg;
	last_nlaunch = nlaunch;
	*out = xcalloc(1, sizeof **out);
	fake(g)->graphs++;
	live_graphs++;
	return 0;
}

static void fake_graph_free(struct gpu_graph *gr)
{
	fake(gr->gpu)->graphs--;
	live_graphs--;
	free(gr);
}

static int fake_graph_run(struct gpu_graph *gr, struct qual_msg *msg)
{
	(void)gr;
	(void)msg;
	graph_runs++;
	return 0;
}

static int fake_graph_time(struct gpu_graph *gr, double *device_ns, double *host_ns,
			   struct qual_msg *msg)
{
	(void)gr;
	(void)msg;
	*device_ns = 1000;
	*host_ns = 1100;
	return 0;
}

/* The CUDA fake's tensor maps: what the last call asked for. */
static struct {
	int calls;
	uint64_t dptr;
	unsigned elem_bytes;
} tmap;

static int fake_tensor_map_2d(struct gpu *g, struct gpu_tensor_map *map, uint64_t dptr,
			      unsigned elem_bytes, const uint64_t dims[2], uint64_t row_bytes,
			      const uint32_t box[2], struct qual_msg *msg)
{
	(void)g;
	(void)dims;
	(void)row_bytes;
	(void)box;
	(void)msg;
	memset(map->bytes, 0xab, sizeof map->bytes);
	tmap.calls++;
	tmap.dptr = dptr;
	tmap.elem_bytes = elem_bytes;
	return 0;
}

#define FAKE_OPS                                                               \
	.close = fake_close, .module_load = fake_module_load,                  \
	.module_free = fake_module_free, .alloc = fake_alloc,                  \
	.free = fake_free, .upload = fake_upload, .download = fake_download,   \
	.memset = fake_memset, .graph_new = fake_graph_new,                    \
	.graph_free = fake_graph_free, .graph_run = fake_graph_run,            \
	.graph_time = fake_graph_time

const struct gpu_backend gpu__cuda_backend = {
	.name = "cuda", .built = true, .open = fake_cuda_open, FAKE_OPS,
	.describe = fake_cuda_describe,
	.tensor_map_2d = fake_tensor_map_2d,
};
const struct gpu_backend gpu__hip_backend = {
	.name = "hip", .built = false, .open = fake_hip_open, FAKE_OPS
};

static int reset(void **state)
{
	(void)state;
	cuda_open_rc = 0;
	hip_open_rc = 0;
	cuda_describe_rc = 0;
	describe_calls = 0;
	open_calls = 0;
	graph_runs = 0;
	last_nlaunch = 0;
	return 0;
}

static void test_open_prefers_cuda(void **state)
{
	struct gpu *g = NULL;

	(void)state;
	assert_int_equal(gpu_open(3, &g, NULL), 0);
	assert_string_equal(gpu_get_info(g)->vendor, "cuda");
	assert_int_equal(gpu_get_info(g)->ordinal, 3);
	gpu_close(g);
	assert_int_equal(live_gpus, 0);
}

static void test_open_falls_back_to_hip(void **state)
{
	struct gpu *g = NULL;

	(void)state;
	cuda_open_rc = QUAL_ENODEV;
	assert_int_equal(gpu_open(0, &g, NULL), 0);
	assert_string_equal(gpu_get_info(g)->vendor, "hip");
	gpu_close(g);
}

static void test_open_names_both(void **state)
{
	struct qual_msg msg = { { 0 } };
	struct gpu *g = NULL;

	(void)state;
	cuda_open_rc = QUAL_ENODEV;
	hip_open_rc = QUAL_ENODEV;
	assert_int_equal(gpu_open(0, &g, &msg), QUAL_ENODEV);
	assert_null(g);
	assert_string_equal(msg.text,
			    "cuda: fake cuda says no device; hip: fake hip says no device");
}

/* A device that is there but fails to open is an error, not a reason to try
 * the other vendor. */
static void test_open_stops_on_error(void **state)
{
	struct qual_msg msg = { { 0 } };
	struct gpu *g = NULL;

	(void)state;
	cuda_open_rc = QUAL_EGPU;
	assert_int_equal(gpu_open(0, &g, &msg), QUAL_EGPU);
	assert_null(g);
	assert_string_equal(msg.text, "fake cuda says gpu error");
	assert_int_equal(live_gpus, 0);
}

/* gpu_describe asks a backend's describe, which makes no context: open is
 * never called, and the ordinal is the one asked for. */
static void test_describe_without_open(void **state)
{
	struct qual_msg msg = { { 0 } };
	struct gpu_info info;

	(void)state;
	assert_int_equal(gpu_describe(5, &info, &msg), 0);
	assert_string_equal(info.vendor, "cuda");
	assert_string_equal(info.arch, "described");
	assert_int_equal(info.ordinal, 5);
	assert_int_equal(describe_calls, 1);
	assert_int_equal(open_calls, 0);
	assert_int_equal(live_gpus, 0);
}

/* A backend without describe is opened and closed (HIP's), after the one
 * before it found no device; both backends' messages when neither has one;
 * a describe that fails past finding its runtime ends the search. */
static void test_describe_falls_back_and_fails(void **state)
{
	struct qual_msg msg = { { 0 } };
	struct gpu_info info;

	(void)state;
	cuda_describe_rc = QUAL_ENODEV;
	assert_int_equal(gpu_describe(2, &info, &msg), 0);
	assert_string_equal(info.vendor, "hip");
	assert_string_equal(info.arch, "hip-arch");
	assert_int_equal(info.ordinal, 2);
	assert_int_equal(open_calls, 1);
	assert_int_equal(live_gpus, 0);

	hip_open_rc = QUAL_ENODEV;
	assert_int_equal(gpu_describe(0, &info, &msg), QUAL_ENODEV);
	assert_string_equal(msg.text, "cuda: fake cuda describe says no device; "
			    "hip: fake hip says no device");

	cuda_describe_rc = QUAL_EGPU;
	hip_open_rc = 0;
	open_calls = 0;
	assert_int_equal(gpu_describe(0, &info, &msg), QUAL_EGPU);
	assert_string_equal(msg.text, "fake cuda describe says gpu error");
	assert_int_equal(open_calls, 0);
	assert_int_equal(gpu_describe(-1, &info, &msg), QUAL_EINVAL);
	assert_int_equal(gpu_describe(0, NULL, &msg), QUAL_EINVAL);
}

static void test_built_flags(void **state)
{
	(void)state;
	assert_true(gpu_backend_built("cuda"));
	assert_false(gpu_backend_built("hip"));
}

/* gpu_close frees what the caller left: graphs, then modules (the fakes
 * assert the order), then allocations. */
static void test_close_frees_everything(void **state)
{
	struct qual_msg msg = { { 0 } };
	struct gpu *g = NULL;
	struct gpu_module *m1 = NULL, *m2 = NULL, *m3 = NULL;
	struct gpu_graph *gr1 = NULL, *gr2 = NULL;
	const unsigned grid[3] = { 2, 1, 1 }, block[3] = { 64, 1, 1 };
	uint64_t d[40];

	(void)state;
	assert_int_equal(gpu_open_backend("cuda", 0, &g, &msg), 0);
	assert_int_equal(gpu_module_load(g, "x", 1, "k", &m1, &msg), 0);
	assert_int_equal(gpu_module_load(g, "x", 1, "k", &m2, &msg), 0);
	assert_int_equal(gpu_module_load(g, "x", 1, "k", &m3, &msg), 0);
	/* Unlink from the middle, the head and the tail of the list. */
	gpu_module_free(m2);
	assert_int_equal(live_modules, 2);
	assert_int_equal(gpu_graph_new(g, m1, grid, block, 0, NULL, 32, &gr1, &msg), 0);
	assert_int_equal(last_nlaunch, 32);
	assert_int_equal(gpu_graph_new(g, m3, grid, block, 0, NULL, 1, &gr2, &msg), 0);
	gpu_graph_free(gr2);
	assert_int_equal(live_graphs, 1);
	/* More allocations than the first array holds. */
	for (int i = 0; i < 40; i++)
		assert_int_equal(gpu_alloc(g, 8, &d[i], &msg), 0);
	assert_int_equal(gpu_free(g, d[5]), 0);
	assert_int_equal(gpu_free(g, d[5]), QUAL_EINVAL); /* twice: refused */
	assert_int_equal(gpu_free(g, 12345), QUAL_EINVAL); /* not ours */
	assert_int_equal(gpu_free(g, 0), 0);
	assert_int_equal(live_allocs, 39);
	gpu_close(g); /* fake_close asserts nothing is left */
	assert_int_equal(live_gpus, 0);
	assert_int_equal(live_graphs, 0);
	assert_int_equal(live_modules, 0);
	assert_int_equal(live_allocs, 0);
}

static void test_memory_round_trip(void **state)
{
	struct qual_msg msg = { { 0 } };
	struct gpu *g = NULL;
	uint64_t d = 0;
	unsigned char in[16], out[16];

	(void)state;
	for (int i = 0; i < 16; i++)
		in[i] = (unsigned char)(i * 7);
	assert_int_equal(gpu_open_backend("cuda", 0, &g, &msg), 0);
	assert_int_equal(gpu_alloc(g, 0, &d, &msg), QUAL_EINVAL);
	assert_int_equal(gpu_alloc(g, sizeof in, &d, &msg), 0);
	assert_int_equal(gpu_upload(g, d, in, sizeof in, &msg), 0);
	assert_int_equal(gpu_download(g, out, d, sizeof out, &msg), 0);
	assert_memory_equal(in, out, sizeof in);
	assert_int_equal(gpu_memset(g, d, 0xa5, 8, &msg), 0);
	assert_int_equal(gpu_download(g, out, d, sizeof out, &msg), 0);
	assert_int_equal(out[7], 0xa5);
	assert_int_equal(out[8], in[8]);
	assert_int_equal(gpu_upload(g, 0, in, sizeof in, &msg), QUAL_EINVAL);
	gpu_close(g);
}

static void test_graph_arguments(void **state)
{
	struct qual_msg msg = { { 0 } };
	struct gpu *g = NULL, *g2 = NULL;
	struct gpu_module *m = NULL, *m2 = NULL;
	struct gpu_graph *gr = NULL;
	const unsigned grid[3] = { 2, 1, 1 }, block[3] = { 64, 1, 1 };
	const unsigned empty[3] = { 2, 0, 1 };
	double dev = 0, host = 0;

	(void)state;
	assert_int_equal(gpu_open_backend("cuda", 0, &g, &msg), 0);
	assert_int_equal(gpu_open_backend("hip", 0, &g2, &msg), 0);
	assert_int_equal(gpu_module_load(g, "x", 1, "missing", &m, &msg), QUAL_ENOENT);
	assert_null(m);
	assert_int_equal(gpu_module_load(g, "x", 0, "k", &m, &msg), QUAL_EINVAL);
	assert_int_equal(gpu_module_load(g, "x", 1, "k", &m, &msg), 0);
	assert_int_equal(gpu_module_load(g2, "x", 1, "k", &m2, &msg), 0);
	assert_int_equal(gpu_graph_new(g, m, grid, block, 0, NULL, 0, &gr, &msg), QUAL_EINVAL);
	assert_int_equal(gpu_graph_new(g, m, grid, empty, 0, NULL, 1, &gr, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "bad launch geometry: grid 2x1x1 block 2x0x1");
	assert_int_equal(gpu_graph_new(g, m2, grid, block, 0, NULL, 1, &gr, &msg), QUAL_EINVAL);
	assert_null(gr);
	assert_int_equal(live_graphs, 0);
	assert_int_equal(gpu_graph_new(g, m, grid, block, 0, NULL, 4, &gr, &msg), 0);
	assert_int_equal(gpu_graph_run(gr, &msg), 0);
	assert_int_equal(graph_runs, 1);
	assert_int_equal(gpu_graph_time(gr, &dev, &host, &msg), 0);
	assert_true(dev == 1000 && host == 1100);
	assert_int_equal(gpu_graph_time(gr, NULL, &host, &msg), QUAL_EINVAL);
	gpu_close(g2);
	gpu_close(g);
}

/* Tensor maps: the arguments the hardware refuses are refused before the
 * backend is called, naming them; a backend without tensor maps (the HIP
 * one) says so. */
static void test_tensor_map_arguments(void **state)
{
	struct qual_msg msg = { { 0 } };
	struct gpu *g = NULL, *g2 = NULL;
	struct gpu_tensor_map map;
	const uint64_t dims[2] = { 1024, 256 };
	const uint32_t box[2] = { 64, 64 }, wide[2] = { 128, 64 }, tall[2] = { 64, 512 };

	(void)state;
	memset(&tmap, 0, sizeof tmap);
	assert_int_equal(gpu_open_backend("cuda", 0, &g, &msg), 0);
	assert_int_equal(gpu_open_backend("hip", 0, &g2, &msg), 0);
	assert_int_equal(_Alignof(struct gpu_tensor_map), 64);
	assert_int_equal(sizeof map, 128);
	assert_int_equal(gpu_tensor_map_2d(g, &map, 0x10000, 2, dims, 2048, box, &msg), 0);
	assert_int_equal(tmap.calls, 1);
	assert_true(tmap.dptr == 0x10000 && tmap.elem_bytes == 2);
	assert_int_equal(map.bytes[0], 0xab);
	/* 128 bytes of 1-byte elements are one swizzle span too. */
	assert_int_equal(gpu_tensor_map_2d(g, &map, 0x10000, 1, dims, 1024, wide, &msg), 0);
	assert_int_equal(gpu_tensor_map_2d(g, &map, 0x10008, 2, dims, 2048, box, &msg),
			 QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "bad tensor map"));
	assert_non_null(strstr(msg.text, "0x10008"));
	assert_int_equal(gpu_tensor_map_2d(g, &map, 0x10000, 3, dims, 3072, box, &msg),
			 QUAL_EINVAL);
	assert_int_equal(gpu_tensor_map_2d(g, &map, 0x10000, 2, dims, 2040, box, &msg),
			 QUAL_EINVAL);
	assert_int_equal(gpu_tensor_map_2d(g, &map, 0x10000, 2, dims, 1024, box, &msg),
			 QUAL_EINVAL);
	assert_int_equal(gpu_tensor_map_2d(g, &map, 0x10000, 2, dims, 2048, wide, &msg),
			 QUAL_EINVAL);
	assert_int_equal(gpu_tensor_map_2d(g, &map, 0x10000, 2, dims, 2048, tall, &msg),
			 QUAL_EINVAL);
	assert_int_equal(gpu_tensor_map_2d(g, NULL, 0x10000, 2, dims, 2048, box, &msg),
			 QUAL_EINVAL);
	assert_int_equal(tmap.calls, 2);
	assert_int_equal(gpu_tensor_map_2d(g2, &map, 0x10000, 2, dims, 2048, box, &msg),
			 QUAL_ENODEV);
	assert_string_equal(msg.text, "tensor maps not supported by the hip backend");
	gpu_close(g2);
	gpu_close(g);
}

/* ---- gpu__wait, which both real backends' waits are, on a fake stream
 * query that says done after a set number of queries, or fails */

static struct {
	int queries;
	int ready_after;  /* the query that says done (1-based); 0: never */
	bool fail;        /* the first query fails */
} st;

static int st_query(struct gpu *g, struct qual_msg *msg)
{
	(void)g;
	st.queries++;
	if (st.fail)
		return qual_fail(msg, QUAL_EGPU, "fake query failed");
	return st.ready_after && st.queries >= st.ready_after ? 0 : GPU__NOT_READY;
}

static const struct gpu_backend stream_backend = { .name = "stream", .query = st_query };

/* A gpu of the stream backend, as gpu.c would have set it up. */
static struct gpu st_gpu;

static int st_reset(void **state)
{
	(void)state;
	memset(&st, 0, sizeof st);
	memset(&st_gpu, 0, sizeof st_gpu);
	st_gpu.backend = &stream_backend;
	st_gpu.wait_limit_ms = 2000;
	return 0;
}

/* The wait queries until done, and passes an error on. */
static void test_stream_wait(void **state)
{
	struct qual_msg msg = { { 0 } };

	(void)state;
	st.ready_after = 3;
	assert_int_equal(gpu__wait(&st_gpu, gpu__now_ns(), "upload", &msg), 0);
	assert_int_equal(st.queries, 3);
	st_reset(NULL);
	st.fail = true;
	assert_int_equal(gpu__wait(&st_gpu, gpu__now_ns(), "upload", &msg), QUAL_EGPU);
	assert_string_equal(msg.text, "fake query failed");
	assert_int_equal(st.queries, 1);
}

/* Past the limit counted from t0: QUAL_EHANG naming the work. */
static void test_stream_hang(void **state)
{
	struct qual_msg msg = { { 0 } };
	double t0 = gpu__now_ns(), waited;

	(void)state;
	st_gpu.wait_limit_ms = 30;
	assert_int_equal(gpu__wait(&st_gpu, t0, "download", &msg), QUAL_EHANG);
	waited = (gpu__now_ns() - t0) / 1e6;
	assert_string_equal(msg.text, "download did not finish within 30 ms");
	assert_true(waited >= 30 && waited < 2000);
	/* Work queued long ago: one query, then the hang. */
	st.queries = 0;
	assert_int_equal(gpu__wait(&st_gpu, t0 - 1e9, "kernel", &msg), QUAL_EHANG);
	assert_int_equal(st.queries, 1);
}

QUAL_TESTS(
	cmocka_unit_test_setup(test_open_prefers_cuda, reset),
	cmocka_unit_test_setup(test_open_falls_back_to_hip, reset),
	cmocka_unit_test_setup(test_open_names_both, reset),
	cmocka_unit_test_setup(test_open_stops_on_error, reset),
	cmocka_unit_test_setup(test_describe_without_open, reset),
	cmocka_unit_test_setup(test_describe_falls_back_and_fails, reset),
	cmocka_unit_test_setup(test_built_flags, reset),
	cmocka_unit_test_setup(test_close_frees_everything, reset),
	cmocka_unit_test_setup(test_memory_round_trip, reset),
	cmocka_unit_test_setup(test_graph_arguments, reset),
	cmocka_unit_test_setup(test_tensor_map_arguments, reset),
	cmocka_unit_test_setup(test_stream_wait, st_reset),
	cmocka_unit_test_setup(test_stream_hang, st_reset),
)
