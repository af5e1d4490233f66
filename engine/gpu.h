/* GPU backends behind one interface: the CUDA driver API on NVIDIA
 * (gpu_cuda.c) and the HIP runtime on AMD (gpu_hip.c). Both runtimes are loaded
 * at run time with dlopen, so one binary starts on a machine with either vendor
 * or neither. Every runtime call is checked; a failure returns QUAL_EGPU with
 * the call that failed and the runtime's message in msg.
 *
 * A process that holds a gpu must not fork: CUDA does not survive fork(), and
 * after a fault the context is unusable until the process exits. */
#ifndef QUAL_GPU_H
#define QUAL_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct gpu;        /* an opened device with its context and stream */
struct gpu_module; /* a loaded code object */
struct gpu_graph;  /* an instantiated graph of dependent launches */

struct gpu_info {
	char vendor[16];  /* "nvidia" or "amd" */
	char name[128];   /* e.g. "NVIDIA H200" */
	char arch[32];    /* compile target: "sm_90", "gfx90a" */
	char driver[64];  /* driver / runtime version */
	int ordinal;
};

/* Opens device ordinal with the first backend that finds one (CUDA, then
 * HIP). Returns QUAL_ENODEV, with msg saying what each backend found, when no
 * backend has a device. */
int gpu_open(int ordinal, struct gpu **out, struct qual_msg *msg);

/* Opens with one named backend only ("cuda" or "hip"), for tests. */
int gpu_open_backend(const char *backend, int ordinal, struct gpu **out,
		     struct qual_msg *msg);
void gpu_close(struct gpu *g);
const struct gpu_info *gpu_get_info(const struct gpu *g);

/* Loads a code object (CUBIN or AMDGPU ELF) and finds entry kernel. */
int gpu_module_load(struct gpu *g, const void *code, size_t size,
		    const char *kernel, struct gpu_module **out,
		    struct qual_msg *msg);
void gpu_module_free(struct gpu_module *m);

int gpu_alloc(struct gpu *g, size_t bytes, uint64_t *dptr, struct qual_msg *msg);
int gpu_free(struct gpu *g, uint64_t dptr);
int gpu_upload(struct gpu *g, uint64_t dptr, const void *src, size_t bytes,
	       struct qual_msg *msg);
int gpu_download(struct gpu *g, void *dst, uint64_t dptr, size_t bytes,
		 struct qual_msg *msg);
/* Fills bytes with the byte value (used to poison outputs). */
int gpu_memset(struct gpu *g, uint64_t dptr, int value, size_t bytes,
	       struct qual_msg *msg);

/* Builds and instantiates a graph of nlaunch dependent launches of the
 * module's kernel. params is the kernel parameter array (each entry points at
 * one argument value), as for cuLaunchKernel. */
int gpu_graph_new(struct gpu *g, struct gpu_module *m, const unsigned grid[3],
		  const unsigned block[3], unsigned shared_bytes, void **params,
		  int nlaunch, struct gpu_graph **out, struct qual_msg *msg);
void gpu_graph_free(struct gpu_graph *gr);

/* Launches the graph once and waits for it. */
int gpu_graph_run(struct gpu_graph *gr, struct qual_msg *msg);

/* Launches the graph once between two device events and waits: *device_ns is
 * the event-measured time of the whole graph, *host_ns the host monotonic time
 * from just before the launch to the end of the wait. */
int gpu_graph_time(struct gpu_graph *gr, double *device_ns, double *host_ns,
		   struct qual_msg *msg);

#endif
