/* The interface between the dispatch in gpu.c and the vendor backends
 * gpu_cuda.c and gpu_hip.c. Internal to gpu/gpu*.c.
 *
 * gpu.c checks arguments, keeps the lists of what each gpu holds (so that
 * gpu_close can free it all) and calls the backend; a backend only talks to its
 * runtime. Each backend's own structs begin with the common part below, and the
 * backend gets back to its struct with a cast from the first member. */
#ifndef QUAL_GPU_BACKEND_H
#define QUAL_GPU_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu.h"

/* Where a module or a graph is in its gpu's list of them (gpu.c's). */
struct gpu_held {
	struct gpu_held *prev, *next;
};

/* The common part of an opened gpu. The backend fills backend and info;
 * gpu.c owns the rest. A backend reads wait_limit_ms in every wait for the
 * device and returns QUAL_EHANG when a wait runs past it; gpu.c then sets
 * hung and calls the backend no more (gpu.h, Deadlines). */
struct gpu {
	const struct gpu_backend *backend;
	struct gpu_info info;
	double wait_limit_ms;       /* > 0 */
	int carveout;               /* gpu_set_carveout: -1, or 0 to 100 */
	bool hung;
	struct gpu_held *modules;   /* live modules, newest first */
	struct gpu_held *graphs;    /* live graphs, newest first */
	uint64_t *allocs;           /* live device allocations */
	size_t nalloc, alloc_cap;
};

/* The common part of a module and of a graph: gpu.c fills it in after the
 * backend returned the object. */
struct gpu_module {
	struct gpu *gpu;
	struct gpu_held held;
};

struct gpu_graph {
	struct gpu *gpu;
	struct gpu_held held;
};

/* A backend. The functions after open are only called with objects that this
 * backend's open returned, and with arguments gpu.c has checked (non-NULL
 * pointers, bytes > 0, nlaunch >= 1, non-zero grid and block). Functions that
 * free (close, module_free, graph_free, free) must cope with a faulted
 * context: they ignore the runtime's errors there, because nothing better can
 * be done and the process is about to drop the context anyway.
 *
 * Every object a backend returns (its gpu, modules and graphs) is one block
 * from malloc that begins with the common part and owns no other memory: after
 * a hang, gpu.c frees them with free() alone, without calling the backend. */
struct gpu_backend {
	const char *name; /* "cuda", "hip" */
	bool built;       /* compiled against the vendor header */

	/* QUAL_ENODEV when this machine has no runtime or no device ordinal. */
	int (*open)(int ordinal, struct gpu **out, struct qual_msg *msg);
	/* What open would fill in info, without making a context (gpu_describe);
	 * NULL: gpu.c opens and closes instead. Errors as open's. */
	int (*describe)(int ordinal, struct gpu_info *info, struct qual_msg *msg);
	void (*close)(struct gpu *g);

	int (*module_load)(struct gpu *g, const void *code, size_t size,
			   const char *kernel, struct gpu_module **out,
			   struct qual_msg *msg);
	void (*module_free)(struct gpu_module *m);
	/* gpu_occupancy; NULL when the backend has no count. */
	int (*occupancy)(struct gpu_module *m, unsigned block_threads, unsigned shared_bytes,
			 int *blocks, struct qual_msg *msg);
	/* PTX text for the driver to compile (gpu_module_load_ptx); NULL when
	 * the backend has none. */
	int (*module_load_ptx)(struct gpu *g, const char *ptx, const char *kernel,
			       struct gpu_module **out, struct qual_msg *msg);

	int (*alloc)(struct gpu *g, size_t bytes, uint64_t *dptr,
		     struct qual_msg *msg);
	int (*free)(struct gpu *g, uint64_t dptr);
	int (*upload)(struct gpu *g, uint64_t dptr, const void *src,
		      size_t bytes, struct qual_msg *msg);
	int (*download)(struct gpu *g, void *dst, uint64_t dptr, size_t bytes,
			struct qual_msg *msg);
	int (*memset)(struct gpu *g, uint64_t dptr, int value, size_t bytes,
		      struct qual_msg *msg);

	/* gpu_tensor_map_2d, arguments checked; NULL when the backend has no
	 * tensor maps. */
	int (*tensor_map_2d)(struct gpu *g, struct gpu_tensor_map *map, uint64_t dptr,
			     unsigned elem_bytes, const uint64_t dims[2], uint64_t row_bytes,
			     const uint32_t box[2], struct qual_msg *msg);

	int (*graph_new)(struct gpu *g, struct gpu_module *m,
			 const unsigned grid[3], const unsigned block[3],
			 unsigned shared_bytes, void **params, int nlaunch,
			 struct gpu_graph **out, struct qual_msg *msg);
	void (*graph_free)(struct gpu_graph *gr);
	int (*graph_run)(struct gpu_graph *gr, struct qual_msg *msg);
	int (*graph_time)(struct gpu_graph *gr, double *device_ns,
			  double *host_ns, struct qual_msg *msg);

	/* The query of the gpu's stream (cuStreamQuery, hipStreamQuery) that
	 * gpu__wait polls: 0 once the work queued on it is done,
	 * GPU__NOT_READY while it runs, or the runtime's error (QUAL_EGPU, msg
	 * filled). NULL in the tests' fake backends, which do not wait. */
	int (*query)(struct gpu *g, struct qual_msg *msg);
};

/* Defined in gpu_cuda.c and gpu_hip.c; a backend built without its vendor
 * header has built == false and an open that reports QUAL_ENODEV. */
extern const struct gpu_backend gpu__cuda_backend;
extern const struct gpu_backend gpu__hip_backend;

/* ---- for the backends (gpu.c): what both do the same way ---- */

/* Nanoseconds on the monotonic clock: the host's side of every wait and of
 * host_ns. */
double gpu__now_ns(void);

/* What a backend's query says while the work queued on its stream runs. */
#define GPU__NOT_READY 1

/* Waits for g's stream (polling g->backend->query), which is also the check that
 * surfaces asynchronous faults, for at most g->wait_limit_ms counted from t0_ns (a gpu__now_ns()
 * at or before the work was queued); past it QUAL_EHANG with what naming
 * the work: "kernel did not finish within 2000 ms".
 *
 * Every launch and copy is followed by this wait before anything else is
 * queued, so a copy is only ever queued on an idle stream: the runtime
 * calls themselves (a device-to-host copy into pageable memory returns only
 * when the copy is done) never wait behind a kernel that does not end. */
int gpu__wait(struct gpu *g, double t0_ns, const char *what, struct qual_msg *msg);

#endif
