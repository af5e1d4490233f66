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
	void (*close)(struct gpu *g);

	int (*module_load)(struct gpu *g, const void *code, size_t size,
			   const char *kernel, struct gpu_module **out,
			   struct qual_msg *msg);
	void (*module_free)(struct gpu_module *m);
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

	int (*graph_new)(struct gpu *g, struct gpu_module *m,
			 const unsigned grid[3], const unsigned block[3],
			 unsigned shared_bytes, void **params, int nlaunch,
			 struct gpu_graph **out, struct qual_msg *msg);
	void (*graph_free)(struct gpu_graph *gr);
	int (*graph_run)(struct gpu_graph *gr, struct qual_msg *msg);
	int (*graph_time)(struct gpu_graph *gr, double *device_ns,
			  double *host_ns, struct qual_msg *msg);

	/* The stream's primitives (below), for gpu__wait and for graph_run
	 * and graph_time when they are gpu__graph_run and gpu__graph_time, as
	 * in both real backends. The tests' fake backends have none. */
	const struct gpu__stream *stream;
};

/* Defined in gpu_cuda.c and gpu_hip.c; a backend built without its vendor
 * header has built == false and an open that reports QUAL_ENODEV. */
extern const struct gpu_backend gpu__cuda_backend;
extern const struct gpu_backend gpu__hip_backend;

/* ---- for the backends (gpu.c): what both do the same way ---- */

/* Nanoseconds on the monotonic clock: the host's side of every wait and of
 * host_ns. */
double gpu__now_ns(void);

/* What a stream's query says while the work queued on it runs. */
#define GPU__NOT_READY 1

/* A backend's stream: every call returns 0 or the runtime's error
 * (QUAL_EGPU, msg filled). */
struct gpu__stream {
	/* cuStreamQuery, hipStreamQuery: 0 once the work queued on g's stream
	 * is done, GPU__NOT_READY while it runs. */
	int (*query)(struct gpu *g, struct qual_msg *msg);
	/* Records the start event (stop false) or the stop event on g's stream. */
	int (*record)(struct gpu *g, bool stop, struct qual_msg *msg);
	/* Queues one launch of gr on its gpu's stream. */
	int (*launch)(struct gpu_graph *gr, struct qual_msg *msg);
	/* The device's milliseconds from the start event to the stop event. */
	int (*elapsed_ms)(struct gpu *g, float *ms, struct qual_msg *msg);
};

/* Waits for g's stream (g->backend->stream), which is also the check that
 * surfaces asynchronous faults, for at most g->wait_limit_ms counted from t0_ns (a gpu__now_ns()
 * at or before the work was queued); past it QUAL_EHANG with what naming
 * the work: "kernel did not finish within 2000 ms".
 *
 * Every launch and copy is followed by this wait before anything else is
 * queued, so a copy is only ever queued on an idle stream: the runtime
 * calls themselves (a device-to-host copy into pageable memory returns only
 * when the copy is done) never wait behind a kernel that does not end. */
int gpu__wait(struct gpu *g, double t0_ns, const char *what, struct qual_msg *msg);

/* graph_run and graph_time of a backend with a stream, the same for every
 * one: a launch and its wait ("kernel"); timed, the launch between the two
 * events and host_ns from just before the launch to the end of the wait. */
int gpu__graph_run(struct gpu_graph *gr, struct qual_msg *msg);
int gpu__graph_time(struct gpu_graph *gr, double *device_ns, double *host_ns,
		    struct qual_msg *msg);

#endif
