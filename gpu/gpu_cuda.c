/* The CUDA backend of gpu/gpu.h: the CUDA driver API, loaded at run time.
 *
 * libcuda.so.1 is opened with dlopen, so the same binary starts on machines
 * without it. Entry points are NOT taken with dlsym by their plain names:
 * cuda.h #defines many functions to versioned ones (cuMemAlloc is
 * cuMemAlloc_v2), and dlsym("cuMemAlloc") returns the legacy v1 entry point
 * with another ABI (a probe that did this crashed at the first graph call).
 * Instead every entry point comes from cuGetProcAddress by its base name and
 * the CUDA_VERSION of the cuda.h we compile against, which returns the variant
 * that header declares; each pointer is typed with __typeof__ of the cuda.h
 * declaration, so the compiler checks every call. Only cuInit, cuGetErrorName,
 * cuGetErrorString, cuDriverGetVersion (unversioned since CUDA 2) and
 * cuGetProcAddress itself (under its versioned name, taken from cuda.h's
 * #define) are taken with dlsym.
 *
 * Built without cuda.h (QUAL_HAVE_CUDA_H unset) the backend only reports that
 * it was not built. */
#include "gpu/gpu_backend.h"

#include "common/err.h"

#if defined(QUAL_HAVE_CUDA_H)

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

#define CUDA_DRIVER_SONAME "libcuda.so.1"

/* Stringify after macro expansion: CUDA_XSTR(cuGetProcAddress) is the
 * versioned name that cuda.h maps it to ("cuGetProcAddress_v2" in 13.0). */
#define CUDA_STR(x) #x
#define CUDA_XSTR(x) CUDA_STR(x)

/* Dynamic shared memory a kernel may use without opting in, per the CUDA
 * programming guide (all architectures since Volta). */
#define CUDA_DEFAULT_DYNAMIC_SHARED (48u * 1024u)

/* The entry points taken through cuGetProcAddress, by base name. The field
 * for X(name) is name##_fn; its type is that of the cuda.h declaration the
 * base name maps to (for cuMemAlloc, cuMemAlloc_v2's). cuGraphInstantiate is
 * named by its real function cuGraphInstantiateWithFlags, since the plain name
 * had another signature before CUDA 12. */
#define CUDA_ENTRY_POINTS(X)                                                   \
	X(cuDeviceGetCount)                                                    \
	X(cuDeviceGet)                                                         \
	X(cuDeviceGetName)                                                     \
	X(cuDeviceGetAttribute)                                                \
	X(cuDevicePrimaryCtxRetain)                                            \
	X(cuDevicePrimaryCtxRelease)                                           \
	X(cuCtxSetCurrent)                                                     \
	X(cuStreamCreate)                                                      \
	X(cuStreamDestroy)                                                     \
	X(cuStreamQuery)                                                       \
	X(cuEventCreate)                                                       \
	X(cuEventDestroy)                                                      \
	X(cuEventRecord)                                                       \
	X(cuEventElapsedTime)                                                  \
	X(cuModuleLoadData)                                                    \
	X(cuModuleUnload)                                                      \
	X(cuModuleGetFunction)                                                 \
	X(cuFuncSetAttribute)                                                  \
	X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                         \
	X(cuMemAlloc)                                                          \
	X(cuMemFree)                                                           \
	X(cuMemcpyHtoDAsync)                                                   \
	X(cuMemcpyDtoHAsync)                                                   \
	X(cuMemsetD8Async)                                                     \
	X(cuGraphCreate)                                                       \
	X(cuGraphAddKernelNode)                                                \
	X(cuGraphInstantiateWithFlags)                                         \
	X(cuGraphUpload)                                                       \
	X(cuGraphLaunch)                                                       \
	X(cuGraphExecDestroy)                                                  \
	X(cuGraphDestroy)                                                      \
	X(cuTensorMapEncodeTiled)

#define CUDA_FIELD(name) __typeof__(name) *name##_fn;

/* The driver, loaded once per process and never unloaded (unloading libcuda
 * while its threads run is not supported). */
static struct {
	bool tried;
	int rc;                  /* result of the one load: 0 or QUAL_E* */
	char why[sizeof(((struct qual_msg *)0)->text)]; /* message when rc < 0 */
	void *lib;
	int version;             /* cuDriverGetVersion: 13000 for 13.0 */
	__typeof__(cuInit) *cuInit_fn;
	__typeof__(cuDriverGetVersion) *cuDriverGetVersion_fn;
	__typeof__(cuGetErrorName) *cuGetErrorName_fn;
	__typeof__(cuGetErrorString) *cuGetErrorString_fn;
	__typeof__(cuGetProcAddress) *cuGetProcAddress_fn;
	CUDA_ENTRY_POINTS(CUDA_FIELD)
} drv;

struct cuda_gpu {
	struct gpu base;
	CUdevice dev;
	CUcontext ctx;   /* the device's primary context, retained */
	CUstream stream; /* non-blocking: never waits on the legacy stream */
	CUevent start, stop;
};

struct cuda_module {
	struct gpu_module base;
	CUmodule mod;
	CUfunction fn;
};

struct cuda_graph {
	struct gpu_graph base;
	CUgraph graph;
	CUgraphExec exec;
};

/* The name of a CUresult. cuGetErrorName fails in the stub library (it returns
 * CUDA_ERROR_STUB_LIBRARY for everything), so the codes that say "no usable
 * device" have names here too. */
static const char *cuda_error_name(CUresult r, char *buf, size_t size)
{
	const char *s = NULL;

	if (drv.cuGetErrorName_fn && drv.cuGetErrorName_fn(r, &s) == CUDA_SUCCESS && s)
		return s;
	switch (r) {
	case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
	case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
	case CUDA_ERROR_DEVICE_UNAVAILABLE: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
	case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
	case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
	case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
	case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
		return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
	default: break;
	}
	snprintf(buf, size, "CUDA error %d", (int)r);
	return buf;
}

static const char *cuda_error_string(CUresult r)
{
	const char *s = NULL;

	if (drv.cuGetErrorString_fn && drv.cuGetErrorString_fn(r, &s) == CUDA_SUCCESS && s)
		return s;
	if (r == CUDA_ERROR_STUB_LIBRARY)
		return "the cuda driver is the toolkit's stub library";
	return "no description";
}

/* "cuGraphLaunch failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access
 * was encountered)" */
static int cuda_fail(struct qual_msg *msg, const char *call, CUresult r)
{
	char buf[32];
	return qual_fail(msg, QUAL_EGPU, "%s failed: %s (%s)", call,
			 cuda_error_name(r, buf, sizeof buf), cuda_error_string(r));
}

/* 0 for CUDA_SUCCESS, else cuda_fail. */
static int cuda_check(CUresult r, const char *call, struct qual_msg *msg)
{
	return r == CUDA_SUCCESS ? 0 : cuda_fail(msg, call, r);
}

/* Opens the driver and resolves every entry point; QUAL_ENODEV when there is
 * no driver, only the stub, or no device. */
static int cuda_load_once(struct qual_msg *msg)
{
	CUresult r;
	char buf[32];

	drv.lib = dlopen(CUDA_DRIVER_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!drv.lib)
		return qual_fail(msg, QUAL_ENODEV, "cuda driver '%s' not found: %s",
				 CUDA_DRIVER_SONAME, dlerror());

	/* The unversioned bootstrap functions, and cuGetProcAddress under the
	 * versioned name cuda.h declares. */
	drv.cuInit_fn = (__typeof__(cuInit) *)dlsym(drv.lib, "cuInit");
	drv.cuDriverGetVersion_fn =
		(__typeof__(cuDriverGetVersion) *)dlsym(drv.lib, "cuDriverGetVersion");
	drv.cuGetErrorName_fn = (__typeof__(cuGetErrorName) *)dlsym(drv.lib, "cuGetErrorName");
	drv.cuGetErrorString_fn =
		(__typeof__(cuGetErrorString) *)dlsym(drv.lib, "cuGetErrorString");
	drv.cuGetProcAddress_fn = (__typeof__(cuGetProcAddress) *)dlsym(
		drv.lib, CUDA_XSTR(cuGetProcAddress));
	if (!drv.cuInit_fn || !drv.cuDriverGetVersion_fn || !drv.cuGetErrorName_fn ||
	    !drv.cuGetErrorString_fn)
		return qual_fail(msg, QUAL_ENODEV,
				 "cuda driver '%s' lacks cuInit or cuGetErrorName",
				 CUDA_DRIVER_SONAME);
	if (!drv.cuGetProcAddress_fn)
		return qual_fail(msg, QUAL_ENODEV,
				 "cuda driver '%s' lacks '%s' (a driver older than cuda 12.0)",
				 CUDA_DRIVER_SONAME, CUDA_XSTR(cuGetProcAddress));

	r = drv.cuInit_fn(0);
	if (r != CUDA_SUCCESS)
		return qual_fail(msg, QUAL_ENODEV, "no cuda device: cuInit returned %s (%s)",
				 cuda_error_name(r, buf, sizeof buf), cuda_error_string(r));

	/* An older driver lacks variants the header declares (the signatures
	 * would not match the __typeof__ types), so require at least the
	 * header's version. */
	r = drv.cuDriverGetVersion_fn(&drv.version);
	if (r != CUDA_SUCCESS)
		return cuda_fail(msg, "cuDriverGetVersion", r);
	if (drv.version < CUDA_VERSION)
		return qual_fail(msg, QUAL_ENODEV,
				 "cuda driver %d.%d is older than the cuda %d.%d headers qual was built with",
				 drv.version / 1000, drv.version % 1000 / 10,
				 CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);

#define CUDA_RESOLVE(name)                                                     \
	do {                                                                   \
		void *p_ = NULL;                                               \
		CUdriverProcAddressQueryResult st_ = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND; \
		r = drv.cuGetProcAddress_fn(#name, &p_, CUDA_VERSION,          \
					    CU_GET_PROC_ADDRESS_DEFAULT, &st_); \
		if (r != CUDA_SUCCESS)                                         \
			return cuda_fail(msg, "cuGetProcAddress('" #name "')", r); \
		if (st_ != CU_GET_PROC_ADDRESS_SUCCESS || !p_)                 \
			return qual_fail(msg, QUAL_EGPU,                       \
					 "cuda driver %d lacks '%s' for cuda %d (query result %d)", \
					 drv.version, #name, CUDA_VERSION, (int)st_); \
		drv.name##_fn = (__typeof__(name) *)p_;                        \
	} while (0);
	CUDA_ENTRY_POINTS(CUDA_RESOLVE)
#undef CUDA_RESOLVE
	return 0;
}

static int cuda_load(struct qual_msg *msg)
{
	if (!drv.tried) {
		struct qual_msg why = { { 0 } };
		drv.tried = true;
		drv.rc = cuda_load_once(&why);
		memcpy(drv.why, why.text, sizeof drv.why);
	}
	if (drv.rc < 0)
		return qual_fail(msg, drv.rc, "%s", drv.why);
	return 0;
}

static void cuda_close(struct gpu *g)
{
	struct cuda_gpu *cg = (struct cuda_gpu *)g;

	if (!cg)
		return;
	/* Errors ignored: after a fault each of these returns the sticky
	 * error, and releasing what can be released is all there is to do. */
	if (cg->stop)
		(void)drv.cuEventDestroy_fn(cg->stop);
	if (cg->start)
		(void)drv.cuEventDestroy_fn(cg->start);
	if (cg->stream)
		(void)drv.cuStreamDestroy_fn(cg->stream);
	if (cg->ctx) {
		(void)drv.cuCtxSetCurrent_fn(NULL);
		(void)drv.cuDevicePrimaryCtxRelease_fn(cg->dev);
	}
	free(cg);
}

/* Default events: timing enabled; the host spins while it waits, which
 * wakes sooner than blocking sync and keeps host_ns tight. *ev is NULL when
 * it fails, so that cuda_close destroys only what was made. */
static int cuda_event_new(CUevent *ev, struct qual_msg *msg)
{
	CUresult r = drv.cuEventCreate_fn(ev, CU_EVENT_DEFAULT);

	if (r != CUDA_SUCCESS)
		*ev = NULL;
	return cuda_check(r, "cuEventCreate", msg);
}

/* info->pci_bus_id from the device's PCI attributes (left "" when the
 * driver does not give them: the clocks are then unknown, nothing else). */
static void cuda_pci_bus_id(CUdevice dev, struct gpu_info *info)
{
	int domain = 0, bus = 0, device = 0;

	if (drv.cuDeviceGetAttribute_fn(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev) ==
		    CUDA_SUCCESS &&
	    drv.cuDeviceGetAttribute_fn(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev) ==
		    CUDA_SUCCESS &&
	    drv.cuDeviceGetAttribute_fn(&device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev) ==
		    CUDA_SUCCESS)
		snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%08X:%02X:%02X.0",
			 (unsigned)domain, (unsigned)bus, (unsigned)device);
}

/* What device ordinal is (info), and its handle (*dev), without a context:
 * the driver loaded and initialized, the device's name, compute capability
 * and PCI address read. */
static int cuda_find(int ordinal, CUdevice *dev, struct gpu_info *info, struct qual_msg *msg)
{
	int count = 0, major = 0, minor = 0;
	CUresult r;
	int rc = cuda_load(msg);

	if (rc < 0)
		return rc;
	r = drv.cuDeviceGetCount_fn(&count);
	if (r != CUDA_SUCCESS)
		return cuda_fail(msg, "cuDeviceGetCount", r);
	if (ordinal >= count)
		return qual_fail(msg, QUAL_ENODEV,
				 "no cuda device %d: the driver sees %d device%s", ordinal,
				 count, count == 1 ? "" : "s");
	r = drv.cuDeviceGet_fn(dev, ordinal);
	if (r != CUDA_SUCCESS)
		return cuda_fail(msg, "cuDeviceGet", r);
	r = drv.cuDeviceGetName_fn(info->name, (int)sizeof info->name, *dev);
	if (r != CUDA_SUCCESS)
		return cuda_fail(msg, "cuDeviceGetName", r);
	r = drv.cuDeviceGetAttribute_fn(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
					*dev);
	if (r == CUDA_SUCCESS)
		r = drv.cuDeviceGetAttribute_fn(
			&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, *dev);
	if (r != CUDA_SUCCESS)
		return cuda_fail(msg, "cuDeviceGetAttribute", r);
	cuda_pci_bus_id(*dev, info);
	{
		int mode = -1;

		info->shared = drv.cuDeviceGetAttribute_fn(&mode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE,
							   *dev) == CUDA_SUCCESS &&
			       mode == CU_COMPUTEMODE_DEFAULT;
	}
	snprintf(info->vendor, sizeof info->vendor, "nvidia");
	snprintf(info->arch, sizeof info->arch, "sm_%d%d", major, minor);
	snprintf(info->driver, sizeof info->driver, "%d.%d",
		 drv.version / 1000, drv.version % 1000 / 10);
	return 0;
}

static int cuda_describe(int ordinal, struct gpu_info *info, struct qual_msg *msg)
{
	CUdevice dev;

	return cuda_find(ordinal, &dev, info, msg);
}

static int cuda_open(int ordinal, struct gpu **out, struct qual_msg *msg)
{
	struct cuda_gpu *cg = xcalloc(1, sizeof *cg);
	CUresult r;
	int rc = cuda_find(ordinal, &cg->dev, &cg->base.info, msg);

	if (rc < 0) {
		free(cg);
		return rc;
	}
	r = drv.cuDevicePrimaryCtxRetain_fn(&cg->ctx, cg->dev);
	if (r != CUDA_SUCCESS) {
		cg->ctx = NULL;
		rc = cuda_fail(msg, "cuDevicePrimaryCtxRetain", r);
		goto fail;
	}
	r = drv.cuCtxSetCurrent_fn(cg->ctx);
	if (r != CUDA_SUCCESS) {
		rc = cuda_fail(msg, "cuCtxSetCurrent", r);
		goto fail;
	}
	r = drv.cuStreamCreate_fn(&cg->stream, CU_STREAM_NON_BLOCKING);
	if (r != CUDA_SUCCESS) {
		cg->stream = NULL;
		rc = cuda_fail(msg, "cuStreamCreate", r);
		goto fail;
	}
	if ((rc = cuda_event_new(&cg->start, msg)) < 0 ||
	    (rc = cuda_event_new(&cg->stop, msg)) < 0)
		goto fail;
	*out = &cg->base;
	return 0;

fail:
	cuda_close(&cg->base);
	return rc;
}

/* Loads image (a CUBIN, or PTX for the JIT; load_call names the call in a
 * failure) and finds kernel in it. */
static int cuda_module_new(const void *image, const char *load_call, const char *kernel,
			   struct gpu_module **out, struct qual_msg *msg)
{
	struct cuda_module *cm = xcalloc(1, sizeof *cm);
	CUresult r;
	int rc;

	r = drv.cuModuleLoadData_fn(&cm->mod, image);
	if (r != CUDA_SUCCESS) {
		cm->mod = NULL;
		rc = cuda_fail(msg, load_call, r);
		goto fail;
	}
	r = drv.cuModuleGetFunction_fn(&cm->fn, cm->mod, kernel);
	if (r != CUDA_SUCCESS) {
		rc = r == CUDA_ERROR_NOT_FOUND ?
			qual_fail(msg, QUAL_ENOENT, "kernel '%s' not found in module", kernel) :
			cuda_fail(msg, "cuModuleGetFunction", r);
		goto fail;
	}
	*out = &cm->base;
	return 0;

fail:
	if (cm->mod)
		(void)drv.cuModuleUnload_fn(cm->mod);
	free(cm);
	return rc;
}

static int cuda_module_load(struct gpu *g, const void *code, size_t size,
			    const char *kernel, struct gpu_module **out,
			    struct qual_msg *msg)
{
	(void)g;
	/* Only an ELF image (a CUBIN): see gpu.h. */
	if (size < 4 || memcmp(code, "\177ELF", 4) != 0)
		return qual_fail(msg, QUAL_EINVAL,
				 "cannot load module for kernel '%s': not a cubin (no ELF header)",
				 kernel);
	return cuda_module_new(code, "cuModuleLoadData", kernel, out, msg);
}

/* PTX for the driver's JIT (gpu_module_load_ptx): the health check's own
 * kernel, never code under test. */
static int cuda_module_load_ptx(struct gpu *g, const char *ptx, const char *kernel,
				struct gpu_module **out, struct qual_msg *msg)
{
	(void)g;
	return cuda_module_new(ptx, "cuModuleLoadData (ptx)", kernel, out, msg);
}

static void cuda_module_free(struct gpu_module *m)
{
	struct cuda_module *cm = (struct cuda_module *)m;

	(void)drv.cuModuleUnload_fn(cm->mod);
	free(cm);
}

static int cuda_occupancy(struct gpu_module *m, unsigned block_threads, unsigned shared_bytes,
			  int *blocks, struct qual_msg *msg)
{
	struct cuda_module *cm = (struct cuda_module *)m;

	return cuda_check(drv.cuOccupancyMaxActiveBlocksPerMultiprocessor_fn(
				  blocks, cm->fn, (int)block_threads, shared_bytes),
			  "cuOccupancyMaxActiveBlocksPerMultiprocessor", msg);
}

static int cuda_alloc(struct gpu *g, size_t bytes, uint64_t *dptr,
		      struct qual_msg *msg)
{
	CUdeviceptr p = 0;
	CUresult r = drv.cuMemAlloc_fn(&p, bytes);

	(void)g;
	if (r != CUDA_SUCCESS)
		return cuda_fail(msg, "cuMemAlloc", r);
	*dptr = (uint64_t)p;
	return 0;
}

static int cuda_free(struct gpu *g, uint64_t dptr)
{
	(void)g;
	return drv.cuMemFree_fn((CUdeviceptr)dptr) == CUDA_SUCCESS ? 0 : QUAL_EGPU;
}

static int cuda_upload(struct gpu *g, uint64_t dptr, const void *src,
		       size_t bytes, struct qual_msg *msg)
{
	struct cuda_gpu *cg = (struct cuda_gpu *)g;
	double t0 = gpu__now_ns();
	int rc = cuda_check(drv.cuMemcpyHtoDAsync_fn((CUdeviceptr)dptr, src, bytes, cg->stream),
			    "cuMemcpyHtoDAsync", msg);

	return rc < 0 ? rc : gpu__wait(&cg->base, t0, "upload", msg);
}

static int cuda_download(struct gpu *g, void *dst, uint64_t dptr, size_t bytes,
			 struct qual_msg *msg)
{
	struct cuda_gpu *cg = (struct cuda_gpu *)g;
	double t0 = gpu__now_ns();
	int rc = cuda_check(drv.cuMemcpyDtoHAsync_fn(dst, (CUdeviceptr)dptr, bytes, cg->stream),
			    "cuMemcpyDtoHAsync", msg);

	return rc < 0 ? rc : gpu__wait(&cg->base, t0, "download", msg);
}

static int cuda_memset(struct gpu *g, uint64_t dptr, int value, size_t bytes,
		       struct qual_msg *msg)
{
	struct cuda_gpu *cg = (struct cuda_gpu *)g;
	double t0 = gpu__now_ns();
	int rc = cuda_check(drv.cuMemsetD8Async_fn((CUdeviceptr)dptr, (unsigned char)value,
						   bytes, cg->stream),
			    "cuMemsetD8Async", msg);

	return rc < 0 ? rc : gpu__wait(&cg->base, t0, "memset", msg);
}

static int cuda_tensor_map_2d(struct gpu *g, struct gpu_tensor_map *map, uint64_t dptr,
			      unsigned elem_bytes, const uint64_t dims[2], uint64_t row_bytes,
			      const uint32_t box[2], struct qual_msg *msg)
{
	/* The type only names the element size for a tile copy (no
	 * out-of-bounds fill is ever read: boxes tile the tensor). */
	CUtensorMapDataType type = elem_bytes == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 :
				   elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16 :
						     CU_TENSOR_MAP_DATA_TYPE_UINT32;
	cuuint64_t size[2] = { dims[0], dims[1] }, stride[1] = { row_bytes };
	cuuint32_t boxdim[2] = { box[0], box[1] }, estride[2] = { 1, 1 };

	_Static_assert(sizeof(CUtensorMap) == sizeof map->bytes, "CUtensorMap is 128 bytes");
	(void)g;
	return cuda_check(drv.cuTensorMapEncodeTiled_fn(
				  (CUtensorMap *)map->bytes, type, 2, (void *)(uintptr_t)dptr,
				  size, stride, boxdim, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
				  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
				  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
			  "cuTensorMapEncodeTiled", msg);
}

static void cuda_graph_free(struct gpu_graph *gr)
{
	struct cuda_graph *cgr = (struct cuda_graph *)gr;

	if (cgr->exec)
		(void)drv.cuGraphExecDestroy_fn(cgr->exec);
	if (cgr->graph)
		(void)drv.cuGraphDestroy_fn(cgr->graph);
	free(cgr);
}

static int cuda_graph_new(struct gpu *g, struct gpu_module *m,
			  const unsigned grid[3], const unsigned block[3],
			  unsigned shared_bytes, void **params, int nlaunch,
			  struct gpu_graph **out, struct qual_msg *msg)
{
	struct cuda_gpu *cg = (struct cuda_gpu *)g;
	struct cuda_module *cm = (struct cuda_module *)m;
	struct cuda_graph *cgr = xcalloc(1, sizeof *cgr);
	CUDA_KERNEL_NODE_PARAMS node = { 0 };
	CUgraphNode prev = NULL;
	double t0;
	CUresult r;
	int rc;

	if (shared_bytes > CUDA_DEFAULT_DYNAMIC_SHARED) {
		r = drv.cuFuncSetAttribute_fn(cm->fn,
					      CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
					      (int)shared_bytes);
		if (r != CUDA_SUCCESS) {
			rc = cuda_fail(msg, "cuFuncSetAttribute", r);
			goto fail;
		}
	}
	/* The carve-out asked for (gpu_set_carveout), a preference the
	 * driver may override; none asked for: the driver's choice. */
	if (g->carveout != GPU_CARVEOUT_DRIVER) {
		r = drv.cuFuncSetAttribute_fn(cm->fn,
					      CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
					      g->carveout);
		if (r != CUDA_SUCCESS) {
			rc = cuda_fail(msg, "cuFuncSetAttribute (carveout)", r);
			goto fail;
		}
	}
	r = drv.cuGraphCreate_fn(&cgr->graph, 0);
	if (r != CUDA_SUCCESS) {
		cgr->graph = NULL;
		rc = cuda_fail(msg, "cuGraphCreate", r);
		goto fail;
	}
	node.func = cm->fn;
	node.gridDimX = grid[0];
	node.gridDimY = grid[1];
	node.gridDimZ = grid[2];
	node.blockDimX = block[0];
	node.blockDimY = block[1];
	node.blockDimZ = block[2];
	node.sharedMemBytes = shared_bytes;
	node.kernelParams = params;
	node.extra = NULL;
	/* A chain: node i depends on node i-1, so the launches run one after
	 * another as they would in a stream. The driver copies the argument
	 * values here. */
	for (int i = 0; i < nlaunch; i++) {
		CUgraphNode cur = NULL;
		r = drv.cuGraphAddKernelNode_fn(&cur, cgr->graph, prev ? &prev : NULL,
						prev ? 1 : 0, &node);
		if (r != CUDA_SUCCESS) {
			rc = cuda_fail(msg, "cuGraphAddKernelNode", r);
			goto fail;
		}
		prev = cur;
	}
	r = drv.cuGraphInstantiateWithFlags_fn(&cgr->exec, cgr->graph, 0);
	if (r != CUDA_SUCCESS) {
		cgr->exec = NULL;
		rc = cuda_fail(msg, "cuGraphInstantiate", r);
		goto fail;
	}
	/* Upload now so that the first timed launch does not pay for it. */
	t0 = gpu__now_ns();
	r = drv.cuGraphUpload_fn(cgr->exec, cg->stream);
	if (r != CUDA_SUCCESS) {
		rc = cuda_fail(msg, "cuGraphUpload", r);
		goto fail;
	}
	rc = gpu__wait(&cg->base, t0, "graph upload", msg);
	if (rc < 0)
		goto fail;
	*out = &cgr->base;
	return 0;

fail:
	cuda_graph_free(&cgr->base);
	return rc;
}

/* The stream query gpu__wait polls (gpu_backend.h). */
static int cuda_query(struct gpu *g, struct qual_msg *msg)
{
	CUresult r = drv.cuStreamQuery_fn(((struct cuda_gpu *)g)->stream);

	return r == CUDA_ERROR_NOT_READY ? GPU__NOT_READY : cuda_check(r, "cuStreamQuery", msg);
}

static int cuda_graph_run(struct gpu_graph *gr, struct qual_msg *msg)
{
	struct cuda_graph *cgr = (struct cuda_graph *)gr;
	struct cuda_gpu *cg = (struct cuda_gpu *)gr->gpu;
	double t0 = gpu__now_ns();
	CUresult r = drv.cuGraphLaunch_fn(cgr->exec, cg->stream);

	if (r != CUDA_SUCCESS)
		return cuda_fail(msg, "cuGraphLaunch", r);
	return gpu__wait(&cg->base, t0, "kernel", msg);
}

static int cuda_graph_time(struct gpu_graph *gr, double *device_ns,
			   double *host_ns, struct qual_msg *msg)
{
	struct cuda_graph *cgr = (struct cuda_graph *)gr;
	struct cuda_gpu *cg = (struct cuda_gpu *)gr->gpu;
	float ms = 0.0f;
	double t0, t1;
	CUresult r;
	int rc;

	r = drv.cuEventRecord_fn(cg->start, cg->stream);
	if (r != CUDA_SUCCESS)
		return cuda_fail(msg, "cuEventRecord", r);
	t0 = gpu__now_ns();
	r = drv.cuGraphLaunch_fn(cgr->exec, cg->stream);
	if (r != CUDA_SUCCESS)
		return cuda_fail(msg, "cuGraphLaunch", r);
	r = drv.cuEventRecord_fn(cg->stop, cg->stream);
	if (r != CUDA_SUCCESS)
		return cuda_fail(msg, "cuEventRecord", r);
	rc = gpu__wait(&cg->base, t0, "kernel", msg);
	t1 = gpu__now_ns();
	if (rc < 0)
		return rc;
	r = drv.cuEventElapsedTime_fn(&ms, cg->start, cg->stop);
	if (r != CUDA_SUCCESS)
		return cuda_fail(msg, "cuEventElapsedTime", r);
	*device_ns = (double)ms * 1e6;
	*host_ns = t1 - t0;
	return 0;
}

const struct gpu_backend gpu__cuda_backend = {
	.name = "cuda",
	.built = true,
	.open = cuda_open,
	.describe = cuda_describe,
	.close = cuda_close,
	.module_load = cuda_module_load,
	.module_free = cuda_module_free,
	.module_load_ptx = cuda_module_load_ptx,
	.occupancy = cuda_occupancy,
	.alloc = cuda_alloc,
	.free = cuda_free,
	.upload = cuda_upload,
	.download = cuda_download,
	.memset = cuda_memset,
	.tensor_map_2d = cuda_tensor_map_2d,
	.graph_new = cuda_graph_new,
	.graph_free = cuda_graph_free,
	.graph_run = cuda_graph_run,
	.graph_time = cuda_graph_time,
	.query = cuda_query,
};

#else /* !QUAL_HAVE_CUDA_H */

static int cuda_open_unbuilt(int ordinal, struct gpu **out, struct qual_msg *msg)
{
	(void)ordinal;
	(void)out;
	return qual_fail(msg, QUAL_ENODEV,
			 "cuda backend not built: cuda.h was not found at build time");
}

const struct gpu_backend gpu__cuda_backend = {
	.name = "cuda",
	.built = false,
	.open = cuda_open_unbuilt,
};

#endif
