/* Dispatch for gpu/gpu.h: argument checks, the lists of what each gpu
 * holds, and the call into the backend that opened it. */
#include "gpu/gpu.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/gpu_backend.h"
#include "common/xalloc.h"

/* Waits poll the backend's stream query (gpu__wait). For the first
 * GPU_SPIN_NS they spin, as cuStreamSynchronize does on a host with more
 * cores than GPUs, so that a timed graph's host_ns is not stretched by a
 * sleep: every fixture graph measured on the H200 took under 10 ms, even a
 * 26x slower candidate's. After that they sleep GPU_POLL_SLEEP_NS between
 * queries, which stretches a longer wait by at most that much (under 1%)
 * and overshoots a deadline by no more. */
#define GPU_SPIN_NS 20e6
#define GPU_POLL_SLEEP_NS 200000L

/* In the order gpu_open tries them: CUDA first, because the machines we run
 * on are NVIDIA ones and because loading ROCm into a process costs more. */
static const struct gpu_backend *const backends[] = {
	&gpu__cuda_backend,
	&gpu__hip_backend,
};
enum { NBACKEND = sizeof backends / sizeof backends[0] };

static const struct gpu_backend *find_backend(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < NBACKEND; i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	return NULL;
}

/* Every call on a hung gpu: the runtime is not called (gpu.h, Deadlines). */
static int hung_fail(const struct gpu *g, struct qual_msg *msg)
{
	return qual_fail(msg, QUAL_EHANG,
			 "gpu %d is hung: a kernel did not finish within %.0f ms and is still running",
			 g->info.ordinal, g->wait_limit_ms);
}

/* Passes a backend's result on, marking the gpu hung on QUAL_EHANG. */
static int note(struct gpu *g, int rc)
{
	if (rc == QUAL_EHANG)
		g->hung = true;
	return rc;
}

static int open_with(const struct gpu_backend *be, int ordinal,
		     struct gpu **out, struct qual_msg *msg)
{
	struct gpu *g = NULL;
	int rc = be->open(ordinal, &g, msg);
	if (rc < 0)
		return rc;
	g->backend = be;
	g->wait_limit_ms = GPU_DEFAULT_WAIT_LIMIT_MS;
	g->carveout = GPU_CARVEOUT_DRIVER;
	g->hung = false;
	g->modules = NULL;
	g->graphs = NULL;
	g->allocs = NULL;
	g->nalloc = 0;
	g->alloc_cap = 0;
	g->info.ordinal = ordinal;
	*out = g;
	return 0;
}

int gpu_open_backend(const char *backend, int ordinal, struct gpu **out,
		     struct qual_msg *msg)
{
	const struct gpu_backend *be = find_backend(backend);

	if (!out)
		return qual_fail(msg, QUAL_EINVAL, "gpu_open: no result pointer");
	*out = NULL;
	if (!be)
		return qual_fail(msg, QUAL_EINVAL,
				 "unknown gpu backend '%s': expected 'cuda' or 'hip'",
				 backend ? backend : "(null)");
	if (ordinal < 0)
		return qual_fail(msg, QUAL_EINVAL, "bad gpu ordinal %d", ordinal);
	return open_with(be, ordinal, out, msg);
}

/* One backend's answer for gpu_open (out set) or gpu_describe (info set). */
static int try_backend(const struct gpu_backend *be, int ordinal, struct gpu **out,
		       struct gpu_info *info, struct qual_msg *msg)
{
	struct gpu *g = NULL;
	int rc;

	if (out)
		return open_with(be, ordinal, out, msg);
	if (be->describe)
		rc = be->describe(ordinal, info, msg);
	else if ((rc = open_with(be, ordinal, &g, msg)) == 0) {
		*info = g->info;
		gpu_close(g);
	}
	if (rc == 0)
		info->ordinal = ordinal;
	return rc;
}

/* gpu_open (out) or gpu_describe (info): the first backend with a device. */
static int find_device(int ordinal, struct gpu **out, struct gpu_info *info,
		       struct qual_msg *msg)
{
	/* What each backend said, joined into one message if none has a
	 * device. Sized so that both full messages fit. */
	char said[NBACKEND][sizeof msg->text];
	struct qual_msg one;

	if (ordinal < 0)
		return qual_fail(msg, QUAL_EINVAL, "bad gpu ordinal %d", ordinal);
	for (size_t i = 0; i < NBACKEND; i++) {
		one.text[0] = '\0';
		int rc = try_backend(backends[i], ordinal, out, info, &one);
		if (rc == 0)
			return 0;
		if (rc != QUAL_ENODEV) {
			/* The backend found its runtime and failed past
			 * that: report it rather than try another vendor. */
			if (msg)
				*msg = one;
			return rc;
		}
		snprintf(said[i], sizeof said[i], "%s", one.text);
	}
	return qual_fail(msg, QUAL_ENODEV, "%s: %.480s; %s: %.480s",
			 backends[0]->name, said[0], backends[1]->name, said[1]);
}

int gpu_open(int ordinal, struct gpu **out, struct qual_msg *msg)
{
	if (!out)
		return qual_fail(msg, QUAL_EINVAL, "gpu_open: no result pointer");
	*out = NULL;
	return find_device(ordinal, out, NULL, msg);
}

int gpu_describe(int ordinal, struct gpu_info *info, struct qual_msg *msg)
{
	if (!info)
		return qual_fail(msg, QUAL_EINVAL, "gpu_describe: no result pointer");
	memset(info, 0, sizeof *info);
	return find_device(ordinal, NULL, info, msg);
}

bool gpu_backend_built(const char *backend)
{
	const struct gpu_backend *be = find_backend(backend);
	return be && be->built;
}

/* ---- the lists of what a gpu holds -------------------------------------- */

/* The module or graph (type) whose held is h. */
#define HOLDER(h, type) ((type *)(void *)((char *)(h) - offsetof(type, held)))

/* Puts h at the head of list (a gpu's modules or graphs). */
static void hold(struct gpu_held **list, struct gpu_held *h)
{
	h->prev = NULL;
	h->next = *list;
	if (*list)
		(*list)->prev = h;
	*list = h;
}

/* Takes h (of block, a module or graph of g) out of list. Returns true when
 * the backend is to free block; after a hang it is freed here, with free()
 * alone (gpu_backend.h says each object is one malloc block). */
static bool let_go(struct gpu *g, struct gpu_held **list, struct gpu_held *h, void *block)
{
	if (h->prev)
		h->prev->next = h->next;
	else
		*list = h->next;
	if (h->next)
		h->next->prev = h->prev;
	if (!g->hung)
		return true;
	free(block);
	return false;
}

void gpu_close(struct gpu *g)
{
	if (!g)
		return;
	/* Graphs reference their modules' kernels: graphs first. */
	while (g->graphs)
		gpu_graph_free(HOLDER(g->graphs, struct gpu_graph));
	while (g->modules)
		gpu_module_free(HOLDER(g->modules, struct gpu_module));
	if (g->hung) {
		/* The device's memory goes with the process. */
		free(g->allocs);
		free(g);
		return;
	}
	for (size_t i = 0; i < g->nalloc; i++)
		(void)g->backend->free(g, g->allocs[i]);
	free(g->allocs);
	g->backend->close(g);
}

const struct gpu_info *gpu_get_info(const struct gpu *g)
{
	return g ? &g->info : NULL;
}

void gpu_set_wait_limit(struct gpu *g, double limit_ms)
{
	if (g && limit_ms > 0)
		g->wait_limit_ms = limit_ms;
}

void gpu_set_carveout(struct gpu *g, int percent)
{
	if (g && percent >= GPU_CARVEOUT_DRIVER && percent <= GPU_CARVEOUT_MAX_SHARED)
		g->carveout = percent;
}

double gpu_get_wait_limit(const struct gpu *g)
{
	return g ? g->wait_limit_ms : 0;
}

bool gpu_is_hung(const struct gpu *g)
{
	return g && g->hung;
}

/* The checks of a module load: 0 to go ahead, or the error. */
static int may_load(struct gpu *g, bool args, struct gpu_module **out, const char *call,
		    struct qual_msg *msg)
{
	if (!out)
		return qual_fail(msg, QUAL_EINVAL, "%s: no result pointer", call);
	*out = NULL;
	if (!g || !args)
		return qual_fail(msg, QUAL_EINVAL, "%s: null argument", call);
	return 0;
}

/* What a module load returned (rc, m): a module of g's, or the error. */
static int took_module(struct gpu *g, int rc, struct gpu_module *m, struct gpu_module **out)
{
	rc = note(g, rc);
	if (rc < 0)
		return rc;
	m->gpu = g;
	hold(&g->modules, &m->held);
	*out = m;
	return 0;
}

int gpu_module_load(struct gpu *g, const void *code, size_t size,
		    const char *kernel, struct gpu_module **out,
		    struct qual_msg *msg)
{
	struct gpu_module *m = NULL;
	int rc = may_load(g, code && kernel, out, "gpu_module_load", msg);

	if (rc < 0)
		return rc;
	if (size == 0)
		return qual_fail(msg, QUAL_EINVAL, "cannot load an empty code object");
	if (g->hung)
		return hung_fail(g, msg);
	rc = g->backend->module_load(g, code, size, kernel, &m, msg);
	return took_module(g, rc, m, out);
}

int gpu_occupancy(struct gpu_module *m, unsigned block_threads, unsigned shared_bytes,
		  int *blocks, struct qual_msg *msg)
{
	if (!m || !blocks || block_threads == 0)
		return qual_fail(msg, QUAL_EINVAL, "gpu_occupancy: null module or no threads");
	if (!m->gpu->backend->occupancy)
		return qual_fail(msg, QUAL_ENOENT, "the %s backend has no occupancy count",
				 m->gpu->backend->name);
	if (m->gpu->hung)
		return hung_fail(m->gpu, msg);
	return m->gpu->backend->occupancy(m, block_threads, shared_bytes, blocks, msg);
}

int gpu_module_load_ptx(struct gpu *g, const char *ptx, const char *kernel,
			struct gpu_module **out, struct qual_msg *msg)
{
	struct gpu_module *m = NULL;
	int rc = may_load(g, ptx && kernel, out, "gpu_module_load_ptx", msg);

	if (rc < 0)
		return rc;
	if (!g->backend->module_load_ptx)
		return qual_fail(msg, QUAL_ENOENT, "the %s backend cannot load ptx",
				 g->backend->name);
	if (g->hung)
		return hung_fail(g, msg);
	rc = g->backend->module_load_ptx(g, ptx, kernel, &m, msg);
	return took_module(g, rc, m, out);
}

void gpu_module_free(struct gpu_module *m)
{
	if (m && let_go(m->gpu, &m->gpu->modules, &m->held, m))
		m->gpu->backend->module_free(m);
}

int gpu_alloc(struct gpu *g, size_t bytes, uint64_t *dptr, struct qual_msg *msg)
{
	if (!dptr)
		return qual_fail(msg, QUAL_EINVAL, "gpu_alloc: no result pointer");
	*dptr = 0;
	if (!g)
		return qual_fail(msg, QUAL_EINVAL, "gpu_alloc: null gpu");
	if (bytes == 0)
		return qual_fail(msg, QUAL_EINVAL, "cannot allocate 0 bytes on the gpu");
	if (g->hung)
		return hung_fail(g, msg);
	int rc = note(g, g->backend->alloc(g, bytes, dptr, msg));
	if (rc < 0)
		return rc;
	XGROW(g->allocs, g->nalloc + 1, g->alloc_cap);
	g->allocs[g->nalloc++] = *dptr;
	return 0;
}

int gpu_free(struct gpu *g, uint64_t dptr)
{
	if (!g || dptr == 0)
		return 0;
	for (size_t i = 0; i < g->nalloc; i++) {
		if (g->allocs[i] == dptr) {
			g->allocs[i] = g->allocs[--g->nalloc];
			/* Hung: the memory goes with the process. */
			return g->hung ? 0 : g->backend->free(g, dptr);
		}
	}
	/* Not one of ours (or freed twice): handing it to the runtime could
	 * free memory some other part still uses. */
	return QUAL_EINVAL;
}

/* The checks of a call that moves bytes: 0 to go ahead, MOVE_NOTHING for
 * no bytes (nothing to do, not an error), or the error. */
#define MOVE_NOTHING 1
static int may_move(struct gpu *g, bool args, size_t bytes, const char *call,
		    struct qual_msg *msg)
{
	if (!g || !args)
		return qual_fail(msg, QUAL_EINVAL, "%s: null argument", call);
	if (bytes == 0)
		return MOVE_NOTHING;
	return g->hung ? hung_fail(g, msg) : 0;
}

int gpu_upload(struct gpu *g, uint64_t dptr, const void *src, size_t bytes,
	       struct qual_msg *msg)
{
	int rc = may_move(g, src && dptr, bytes, "gpu_upload", msg);

	if (rc)
		return rc == MOVE_NOTHING ? 0 : rc;
	return note(g, g->backend->upload(g, dptr, src, bytes, msg));
}

int gpu_download(struct gpu *g, void *dst, uint64_t dptr, size_t bytes,
		 struct qual_msg *msg)
{
	int rc = may_move(g, dst && dptr, bytes, "gpu_download", msg);

	if (rc)
		return rc == MOVE_NOTHING ? 0 : rc;
	return note(g, g->backend->download(g, dst, dptr, bytes, msg));
}

int gpu_memset(struct gpu *g, uint64_t dptr, int value, size_t bytes,
	       struct qual_msg *msg)
{
	int rc = may_move(g, dptr, bytes, "gpu_memset", msg);

	if (rc)
		return rc == MOVE_NOTHING ? 0 : rc;
	return note(g, g->backend->memset(g, dptr, value, bytes, msg));
}

int gpu_tensor_map_2d(struct gpu *g, struct gpu_tensor_map *map, uint64_t dptr,
		      unsigned elem_bytes, const uint64_t dims[2], uint64_t row_bytes,
		      const uint32_t box[2], struct qual_msg *msg)
{
	if (!g || !map || !dims || !box)
		return qual_fail(msg, QUAL_EINVAL, "gpu_tensor_map_2d: null argument");
	if (!g->backend->tensor_map_2d)
		return qual_fail(msg, QUAL_ENODEV, "tensor maps not supported by the %s backend",
				 g->backend->name);
	if ((elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4) || dptr % 16 ||
	    row_bytes % 16 || dims[0] == 0 || dims[1] == 0 ||
	    row_bytes < dims[0] * elem_bytes || box[0] == 0 || box[1] == 0 ||
	    box[0] * elem_bytes > 128 || box[1] > 256 || box[0] > dims[0] || box[1] > dims[1])
		return qual_fail(msg, QUAL_EINVAL,
				 "bad tensor map: %u-byte elements, %llu x %llu, rows %llu bytes "
				 "apart, box %u x %u, address 0x%llx",
				 elem_bytes, (unsigned long long)dims[0],
				 (unsigned long long)dims[1], (unsigned long long)row_bytes,
				 box[0], box[1], (unsigned long long)dptr);
	if (g->hung)
		return hung_fail(g, msg);
	return g->backend->tensor_map_2d(g, map, dptr, elem_bytes, dims, row_bytes, box, msg);
}

int gpu_graph_new(struct gpu *g, struct gpu_module *m, const unsigned grid[3],
		  const unsigned block[3], unsigned shared_bytes, void **params,
		  int nlaunch, struct gpu_graph **out, struct qual_msg *msg)
{
	struct gpu_graph *gr = NULL;

	if (!out)
		return qual_fail(msg, QUAL_EINVAL, "gpu_graph_new: no result pointer");
	*out = NULL;
	if (!g || !m || !grid || !block)
		return qual_fail(msg, QUAL_EINVAL, "gpu_graph_new: null argument");
	if (m->gpu != g)
		return qual_fail(msg, QUAL_EINVAL,
				 "gpu_graph_new: module belongs to another gpu");
	if (nlaunch < 1)
		return qual_fail(msg, QUAL_EINVAL, "bad launch count %d", nlaunch);
	for (int i = 0; i < 3; i++)
		if (grid[i] == 0 || block[i] == 0)
			return qual_fail(msg, QUAL_EINVAL,
					 "bad launch geometry: grid %ux%ux%u block %ux%ux%u",
					 grid[0], grid[1], grid[2], block[0],
					 block[1], block[2]);
	if (g->hung)
		return hung_fail(g, msg);
	int rc = note(g, g->backend->graph_new(g, m, grid, block, shared_bytes,
					       params, nlaunch, &gr, msg));
	if (rc < 0)
		return rc;
	gr->gpu = g;
	hold(&g->graphs, &gr->held);
	*out = gr;
	return 0;
}

void gpu_graph_free(struct gpu_graph *gr)
{
	if (gr && let_go(gr->gpu, &gr->gpu->graphs, &gr->held, gr))
		gr->gpu->backend->graph_free(gr);
}

int gpu_graph_run(struct gpu_graph *gr, struct qual_msg *msg)
{
	if (!gr)
		return qual_fail(msg, QUAL_EINVAL, "gpu_graph_run: null graph");
	if (gr->gpu->hung)
		return hung_fail(gr->gpu, msg);
	return note(gr->gpu, gr->gpu->backend->graph_run(gr, msg));
}

int gpu_graph_time(struct gpu_graph *gr, double *device_ns, double *host_ns,
		   struct qual_msg *msg)
{
	if (!gr || !device_ns || !host_ns)
		return qual_fail(msg, QUAL_EINVAL, "gpu_graph_time: null argument");
	if (gr->gpu->hung)
		return hung_fail(gr->gpu, msg);
	return note(gr->gpu, gr->gpu->backend->graph_time(gr, device_ns, host_ns, msg));
}

/* ---- for the backends ---------------------------------------------------- */

double gpu__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int gpu__wait(struct gpu *g, double t0_ns, const char *what, struct qual_msg *msg)
{
	const double limit_ns = g->wait_limit_ms * 1e6;
	const struct timespec nap = { 0, GPU_POLL_SLEEP_NS };

	for (;;) {
		int rc = g->backend->query(g, msg);
		double waited;

		if (rc != GPU__NOT_READY)
			return rc;
		waited = gpu__now_ns() - t0_ns;
		if (waited >= limit_ns)
			return qual_fail(msg, QUAL_EHANG, "%s did not finish within %.0f ms",
					 what, g->wait_limit_ms);
		if (waited >= GPU_SPIN_NS)
			nanosleep(&nap, NULL);
	}
}
