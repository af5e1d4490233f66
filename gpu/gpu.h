/* GPU backends behind one interface: the CUDA driver API on NVIDIA
 * (gpu_cuda.c) and the HIP runtime on AMD (gpu_hip.c). Both runtimes are loaded
 * at run time with dlopen, so one binary starts on a machine with either vendor
 * or neither. Every runtime call is checked; a failure returns QUAL_EGPU with
 * the call that failed and the runtime's message in msg.
 *
 * A process that holds a gpu must not fork a copy of itself that goes on to
 * work (a fork that execs at once is fine: compile children are started so,
 * common/child.h): CUDA does not survive fork(), and after a fault the
 * context is unusable until the process exits (ROCm goes further: a GPU
 * memory fault aborts the process). So GPU work runs in a worker process of
 * its own.
 *
 * Threads: a gpu is used from the thread that opened it (gpu_open makes its
 * context current on that thread) and from no other at the same time.
 *
 * Ownership: gpu_close frees everything still held through the gpu (graphs,
 * then modules, then device allocations, then the stream and context), so a
 * caller may close after any failure, a GPU fault included, without freeing
 * the parts first; pointers to them are invalid afterwards.
 *
 * Deadlines: every wait for the device (after a graph launch, a copy or a
 * memset) gives up after the gpu's wait limit (gpu_set_wait_limit) and
 * returns QUAL_EHANG: a kernel that never ends cannot hold the process. A
 * hang is not a fault: the kernel is still running, the runtime cannot stop
 * it, and calls that wait for the device (a free, a module unload) could
 * block for ever. So after QUAL_EHANG the gpu is hung (gpu_is_hung): every
 * later call returns QUAL_EHANG without calling the runtime, gpu_close and
 * the free functions release only this process's host memory, and the
 * process must end (with _exit, not exit: the runtime's own exit handlers may
 * wait for the device). Ending the process is what stops the kernel: the
 * driver destroys the process's context, and its work with it. */
#ifndef QUAL_GPU_H
#define QUAL_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct gpu;        /* an opened device with its context and stream */
struct gpu_module; /* a loaded code object */
struct gpu_graph;  /* an instantiated graph of dependent launches */

struct gpu_info {
	char vendor[16];  /* "nvidia" or "amd" */
	char name[128];   /* e.g. "NVIDIA H200" */
	char arch[32];    /* compile target: "sm_90", "gfx90a" */
	char driver[64];  /* driver / runtime version */
	int ordinal;
	/* "0000:1B:00.0": domain, bus and device in hex, as NVML and ROCm SMI
	 * know the device (gpu/clocks.h); "" when the runtime did not say. */
	char pci_bus_id[32];
	/* Several processes may hold a context on it at once (CUDA's default
	 * compute mode); false: one at a time (exclusive process), none
	 * (prohibited), or not known (HIP, which does not say). */
	bool shared;
};

/* Opens device ordinal with the first backend that finds one (CUDA, then
 * HIP). Returns QUAL_ENODEV, with msg saying what each backend found, when no
 * backend has a device. A backend that finds the device but fails to open it
 * (QUAL_EGPU) ends the search with its error rather than falling through. */
int gpu_open(int ordinal, struct gpu **out, struct qual_msg *msg);

/* What gpu_open(ordinal) would find, into *info (its ordinal set), without
 * making a context where the runtime allows it (CUDA: the driver
 * initialized and the device's attributes read, about half the time of an
 * open on an H200; HIP: an open and a close). Backends tried and errors as
 * gpu_open's. The same fork rule: it starts the runtime in this process. */
int gpu_describe(int ordinal, struct gpu_info *info, struct qual_msg *msg);

/* Opens with one named backend only ("cuda" or "hip"), for tests. An unknown
 * name is QUAL_EINVAL. */
int gpu_open_backend(const char *backend, int ordinal, struct gpu **out,
		     struct qual_msg *msg);

/* True when the named backend was compiled against its vendor's header
 * (cuda.h, hip/hip_runtime_api.h); a backend built without it reports every
 * open as QUAL_ENODEV. Lets tests check the build, not only the machine. */
bool gpu_backend_built(const char *backend);

/* Frees g and everything still held through it (see Ownership above). Safe
 * with NULL, after a GPU fault and after a hang (then it frees host memory
 * only). */
void gpu_close(struct gpu *g);
const struct gpu_info *gpu_get_info(const struct gpu *g);

/* The wait limit a gpu starts with: long enough for any single copy or graph
 * of the fixtures (the slowest graph measured on the H200 took 9.4 ms), short
 * enough that a forgotten limit does not hold a worker for good. */
#define GPU_DEFAULT_WAIT_LIMIT_MS 60000.0

/* Sets how long each later wait for the device may take, in milliseconds,
 * counted from the start of the wait (a graph's wait starts just before its
 * launch). limit_ms must be positive; others are ignored. */
void gpu_set_wait_limit(struct gpu *g, double limit_ms);
double gpu_get_wait_limit(const struct gpu *g);

/* The shared memory carve-out asked for every later graph's kernel (a
 * preference, CUDA's hint, which the driver may override),
 * in percent of the multiprocessor's shared memory and L1 that is shared
 * memory: GPU_CARVEOUT_MAX_SHARED (100) the most shared memory, 0 the most
 * L1, GPU_CARVEOUT_DRIVER (-1, what gpu_open sets) the driver's choice,
 * which may depend on the kernels launched before in the device. CUDA only
 * (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT); AMD's LDS is not
 * shared with a cache, and the HIP backend ignores it. Others are
 * ignored. */
#define GPU_CARVEOUT_DRIVER -1
#define GPU_CARVEOUT_MAX_SHARED 100
void gpu_set_carveout(struct gpu *g, int percent);

/* True after a wait ran past the limit (see Deadlines above). */
bool gpu_is_hung(const struct gpu *g);

/* Loads a code object and finds entry kernel: on CUDA a CUBIN (an ELF image;
 * PTX and fatbins are refused, because the driver would JIT-compile PTX and the
 * compiler under test would not be what runs), on AMD an AMDGPU code object.
 * A missing kernel is QUAL_ENOENT. Free a module's graphs before the module. */
int gpu_module_load(struct gpu *g, const void *code, size_t size,
		    const char *kernel, struct gpu_module **out,
		    struct qual_msg *msg);
void gpu_module_free(struct gpu_module *m);

/* How many blocks of block_threads threads with shared_bytes of dynamic
 * shared memory one multiprocessor of the device holds at once, by the
 * driver's own count (cuOccupancyMaxActiveBlocksPerMultiprocessor) for
 * module m's kernel; call it after the kernel's graph is made (which opts
 * into more than the default dynamic shared memory). QUAL_ENOENT when the
 * backend has no such count (HIP, for now). */
int gpu_occupancy(struct gpu_module *m, unsigned block_threads, unsigned shared_bytes,
		  int *blocks, struct qual_msg *msg);

/* Loads PTX text (NUL-terminated) that the driver compiles for the device,
 * and finds entry kernel. For qual's own health-check kernel only (which must
 * run on any NVIDIA architecture and needs no compiler on the machine), never
 * for code under test: that is gpu_module_load's CUBIN. A backend without PTX
 * (HIP) returns QUAL_ENOENT. */
int gpu_module_load_ptx(struct gpu *g, const char *ptx, const char *kernel,
			struct gpu_module **out, struct qual_msg *msg);

/* Device memory. gpu_free of 0 does nothing; of an address that gpu_alloc
 * did not return (or that was freed already) it is QUAL_EINVAL and the runtime
 * is not called. Upload, download and memset are synchronous: each waits for
 * the stream (within the wait limit), so an earlier asynchronous fault
 * surfaces there as QUAL_EGPU. */
int gpu_alloc(struct gpu *g, size_t bytes, uint64_t *dptr, struct qual_msg *msg);
int gpu_free(struct gpu *g, uint64_t dptr);
int gpu_upload(struct gpu *g, uint64_t dptr, const void *src, size_t bytes,
	       struct qual_msg *msg);
int gpu_download(struct gpu *g, void *dst, uint64_t dptr, size_t bytes,
		 struct qual_msg *msg);
/* Fills bytes with the byte value (used to poison outputs). */
int gpu_memset(struct gpu *g, uint64_t dptr, int value, size_t bytes,
	       struct qual_msg *msg);

/* A TMA tensor map (CUtensorMap) as a kernel parameter value: 128 opaque
 * bytes, 64-byte aligned. */
#define GPU_TENSOR_MAP_BYTES 128
struct gpu_tensor_map {
	_Alignas(64) unsigned char bytes[GPU_TENSOR_MAP_BYTES];
};

/* Encodes into *map a 2-D tiled tensor map over the device memory at dptr
 * (16-byte aligned): elements of elem_bytes (1, 2 or 4), dims[0] contiguous
 * elements per row and dims[1] rows, row_bytes apart (a multiple of 16);
 * one copy moves a box of box[0] x box[1] elements (box[0] * elem_bytes <=
 * 128, box[1] <= 256) into shared memory with a 128-byte swizzle. On CUDA
 * cuTensorMapEncodeTiled; the HIP backend has no tensor maps (QUAL_ENODEV).
 * A map names dptr itself: build it again whenever the buffer moves. Calls
 * no device work, so it cannot hang. */
int gpu_tensor_map_2d(struct gpu *g, struct gpu_tensor_map *map, uint64_t dptr,
		      unsigned elem_bytes, const uint64_t dims[2], uint64_t row_bytes,
		      const uint32_t box[2], struct qual_msg *msg);

/* Builds and instantiates a graph of nlaunch dependent launches of the
 * module's kernel (each launch starts after the previous one ends). params is
 * the kernel parameter array (each entry points at one argument value), as for
 * cuLaunchKernel; the argument values are copied into the graph, so params may
 * go away afterwards. shared_bytes is the dynamic shared memory per block; on
 * CUDA more than 48 KiB is opted into through the function attribute. */
int gpu_graph_new(struct gpu *g, struct gpu_module *m, const unsigned grid[3],
		  const unsigned block[3], unsigned shared_bytes, void **params,
		  int nlaunch, struct gpu_graph **out, struct qual_msg *msg);
void gpu_graph_free(struct gpu_graph *gr);

/* Launches the graph once and waits for it (within the wait limit). */
int gpu_graph_run(struct gpu_graph *gr, struct qual_msg *msg);

/* Launches the graph once between two device events and waits: *device_ns is
 * the event-measured time of the whole graph, *host_ns the host monotonic time
 * from just before the launch to the end of the wait. The wait polls the
 * stream, spinning at first (see the backends), so host_ns stays tight. */
int gpu_graph_time(struct gpu_graph *gr, double *device_ns, double *host_ns,
		   struct qual_msg *msg);

#endif
