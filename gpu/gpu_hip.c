/* The HIP backend of gpu/gpu.h: the HIP runtime API on AMD GPUs, loaded at
 * run time.
 *
 * Compiled against Debian's ROCm 5.2 headers with __HIP_PLATFORM_AMD__ (the
 * HIP-on-NVIDIA headers do not compile against CUDA 13, and NVIDIA GPUs go
 * through gpu_cuda.c anyway). The runtime is opened with dlopen
 * (libamdhip64.so, then .so.6, then .so.5) and every entry point is taken with
 * dlsym by name and typed with __typeof__ of the header's declaration.
 *
 * Measured on a Debian 12 machine with libamdhip64.so.5 (5.2.21153) and no AMD
 * GPU (no /dev/kfd): hipInit returns hipErrorInvalidDevice and
 * hipGetDeviceCount hipErrorNoDevice with a count of 0; nothing is printed and
 * nothing aborts, at the calls or at exit. So no-device is detected through
 * the runtime itself.
 *
 * ABI assumptions, because the library may be newer than the headers:
 * - hipDeviceProp_t changed layout in ROCm 6, where the header maps
 *   hipGetDeviceProperties to hipGetDevicePropertiesR0600. ROCm 6 libraries
 *   still export the old (ROCm 5) layout as hipGetDevicePropertiesR0000 and as
 *   the plain hipGetDeviceProperties (symbol version hip_4.2). We take R0000
 *   first, then the plain name, read gcnArchName at the ROCm 5 offset, give the
 *   runtime a buffer far larger than the struct, and check that what we read
 *   looks like a gfx target before using it.
 * - The other entry points used here kept their signatures through ROCm 6.
 * - Graphs are built by capturing hipModuleLaunchKernel on the stream, not with
 *   hipGraphAddKernelNode: ROCm 5.x's kernel nodes expect a host function
 *   registered by the compiler, not a hipFunction_t from a loaded module;
 *   capture is the path the runtime itself uses for module kernels.
 * - No opt-in for large dynamic shared memory: AMD GPUs give a block up to
 *   their whole LDS (64 KiB) without one; more fails at the launch.
 * - A GPU memory fault aborts the process inside ROCm: it cannot be returned
 *   as QUAL_EGPU. The worker process isolation is what contains it.
 * - Waits poll hipStreamQuery against the gpu's wait limit (gpu__wait, as
 *   gpu_cuda.c's poll cuStreamQuery).
 * - No PTX, and no portable code object either: gpu_module_load_ptx is not
 *   offered, so the health check on AMD is a memory round trip without a
 *   kernel (gpu/health.c).
 *
 * Built without the headers (QUAL_HAVE_HIP_H unset) the backend only reports
 * that it was not built. */
#include "gpu/gpu_backend.h"

#include "common/err.h"

#if defined(QUAL_HAVE_HIP_H)

#include <dlfcn.h>
#include <hip/hip_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

/* The sonames tried, in order: the development link first (whatever ROCm is
 * installed), then the runtime sonames of ROCm 6 and 5. */
static const char *const hip_sonames[] = {
	"libamdhip64.so",
	"libamdhip64.so.6",
	"libamdhip64.so.5",
};

/* Room for any ROCm version's hipDeviceProp_t (792 bytes in ROCm 5.2, about
 * 1.5 KiB in 6.x). */
#define HIP_PROPS_BYTES 16384

#define HIP_ENTRY_POINTS(X)                                                    \
	X(hipInit)                                                             \
	X(hipDriverGetVersion)                                                 \
	X(hipGetErrorName)                                                     \
	X(hipGetErrorString)                                                   \
	X(hipGetDeviceCount)                                                   \
	X(hipSetDevice)                                                        \
	X(hipDeviceGet)                                                        \
	X(hipDeviceGetName)                                                    \
	X(hipStreamCreateWithFlags)                                            \
	X(hipStreamDestroy)                                                    \
	X(hipStreamQuery)                                                      \
	X(hipStreamBeginCapture)                                               \
	X(hipStreamEndCapture)                                                 \
	X(hipEventCreate)                                                      \
	X(hipEventDestroy)                                                     \
	X(hipEventRecord)                                                      \
	X(hipEventElapsedTime)                                                 \
	X(hipModuleLoadData)                                                   \
	X(hipModuleUnload)                                                     \
	X(hipModuleGetFunction)                                                \
	X(hipModuleLaunchKernel)                                               \
	X(hipMalloc)                                                           \
	X(hipFree)                                                             \
	X(hipMemcpyHtoDAsync)                                                  \
	X(hipMemcpyDtoHAsync)                                                  \
	X(hipMemsetD8Async)                                                    \
	X(hipGraphInstantiate)                                                 \
	X(hipGraphLaunch)                                                      \
	X(hipGraphExecDestroy)                                                 \
	X(hipGraphDestroy)

#define HIP_FIELD(name) __typeof__(name) *name##_fn;

/* The runtime, loaded once per process and never unloaded. */
static struct {
	bool tried;
	int rc;
	char why[sizeof(((struct qual_msg *)0)->text)];
	void *lib;
	const char *soname;
	int version; /* HIP_VERSION encoding: 50221153 is 5.2.21153 */
	HIP_ENTRY_POINTS(HIP_FIELD)
	/* The old-layout properties call, R0000 or the plain name. */
	__typeof__(hipGetDeviceProperties) *get_props_fn;
	const char *get_props_name;
} rt;

struct hip_gpu {
	struct gpu base;
	hipStream_t stream;
	hipEvent_t start, stop;
};

struct hip_module {
	struct gpu_module base;
	hipModule_t mod;
	hipFunction_t fn;
};

struct hip_graph {
	struct gpu_graph base;
	hipGraph_t graph;
	hipGraphExec_t exec;
};

/* "hipErrorIllegalAddress (an illegal memory access was encountered)", or the
 * name alone where the runtime's description is only the name again (ROCm
 * 5.2 does this for some codes). */
static const char *hip_describe(hipError_t e, char *buf, size_t size)
{
	const char *name = rt.hipGetErrorName_fn ? rt.hipGetErrorName_fn(e) : NULL;
	const char *text = rt.hipGetErrorString_fn ? rt.hipGetErrorString_fn(e) : NULL;

	if (!name)
		snprintf(buf, size, "hip error %d", (int)e);
	else if (!text || strcmp(text, name) == 0)
		snprintf(buf, size, "%s", name);
	else
		snprintf(buf, size, "%s (%s)", name, text);
	return buf;
}

/* "hipGraphLaunch failed: hipErrorIllegalAddress (an illegal memory access
 * was encountered)" */
static int hip_fail(struct qual_msg *msg, const char *call, hipError_t e)
{
	char buf[256];
	return qual_fail(msg, QUAL_EGPU, "%s failed: %s", call, hip_describe(e, buf, sizeof buf));
}

/* 0 for hipSuccess, else hip_fail. */
static int hip_check(hipError_t e, const char *call, struct qual_msg *msg)
{
	return e == hipSuccess ? 0 : hip_fail(msg, call, e);
}

static int hip_load_once(struct qual_msg *msg)
{
	const char *err = "";
	char buf[256];
	hipError_t e;
	int count = 0;

	for (size_t i = 0; i < sizeof hip_sonames / sizeof hip_sonames[0]; i++) {
		rt.lib = dlopen(hip_sonames[i], RTLD_NOW | RTLD_LOCAL);
		if (rt.lib) {
			rt.soname = hip_sonames[i];
			break;
		}
		err = dlerror();
	}
	if (!rt.lib)
		return qual_fail(msg, QUAL_ENODEV,
				 "hip runtime 'libamdhip64.so' not found (nor .so.6, .so.5): %s",
				 err ? err : "");

#define HIP_RESOLVE(name)                                                      \
	do {                                                                   \
		rt.name##_fn = (__typeof__(name) *)dlsym(rt.lib, #name);       \
		if (!rt.name##_fn)                                             \
			return qual_fail(msg, QUAL_ENODEV,                     \
					 "hip runtime '%s' lacks '%s'", rt.soname, #name); \
	} while (0);
	HIP_ENTRY_POINTS(HIP_RESOLVE)
#undef HIP_RESOLVE

	rt.get_props_name = "hipGetDevicePropertiesR0000";
	rt.get_props_fn = (__typeof__(hipGetDeviceProperties) *)dlsym(rt.lib, rt.get_props_name);
	if (!rt.get_props_fn) {
		rt.get_props_name = "hipGetDeviceProperties";
		rt.get_props_fn = (__typeof__(hipGetDeviceProperties) *)dlsym(
			rt.lib, rt.get_props_name);
	}
	if (!rt.get_props_fn)
		return qual_fail(msg, QUAL_ENODEV,
				 "hip runtime '%s' lacks hipGetDeviceProperties", rt.soname);

	e = rt.hipInit_fn(0);
	if (e != hipSuccess)
		return qual_fail(msg, QUAL_ENODEV, "no hip device: hipInit returned %s",
				 hip_describe(e, buf, sizeof buf));
	e = rt.hipGetDeviceCount_fn(&count);
	if (e != hipSuccess || count == 0)
		return qual_fail(msg, QUAL_ENODEV,
				 "no hip device: hipGetDeviceCount returned %s with %d devices",
				 hip_describe(e, buf, sizeof buf), count);
	e = rt.hipDriverGetVersion_fn(&rt.version);
	if (e != hipSuccess)
		return hip_fail(msg, "hipDriverGetVersion", e);
	return 0;
}

static int hip_load(struct qual_msg *msg)
{
	if (!rt.tried) {
		struct qual_msg why = { { 0 } };
		rt.tried = true;
		rt.rc = hip_load_once(&why);
		memcpy(rt.why, why.text, sizeof rt.why);
	}
	if (rt.rc < 0)
		return qual_fail(msg, rt.rc, "%s", rt.why);
	return 0;
}

/* True when s is "gfx" and lower-case hex digits, optionally followed by
 * ":feature" suffixes: what gcnArchName holds ("gfx90a:sramecc+:xnack-"). */
static bool hip_looks_like_target(const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	size_t i = 3;

	if (n == max || n < 4 || strncmp(s, "gfx", 3) != 0)
		return false;
	while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
		i++;
	return i > 3 && (i == n || s[i] == ':');
}

/* Fills info.arch (the compile target, "gfx90a") and appends the full
 * gcnArchName with its features to info.name when they differ. */
static int hip_read_arch(int ordinal, struct gpu_info *info, struct qual_msg *msg)
{
	/* hipDeviceProp_t at the start of an aligned buffer with room to spare
	 * (see the ABI note at the top of this file). */
	union {
		hipDeviceProp_t props;
		char room[HIP_PROPS_BYTES];
	} *buf = xcalloc(1, sizeof *buf);
	const char *full = buf->props.gcnArchName;
	int rc = 0;
	hipError_t e = rt.get_props_fn(&buf->props, ordinal);

	if (e != hipSuccess) {
		rc = hip_fail(msg, rt.get_props_name, e);
		goto out;
	}
	if (!hip_looks_like_target(full, sizeof buf->props.gcnArchName)) {
		rc = qual_fail(msg, QUAL_EGPU,
			       "cannot read the gfx target of hip device %d: %s gave gcnArchName '%.32s'",
			       ordinal, rt.get_props_name, full);
		goto out;
	}
	snprintf(info->arch, sizeof info->arch, "%.*s", (int)strcspn(full, ":"), full);
	/* As ROCm SMI knows the device (gpu/clocks.h). */
	snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%04X:%02X:%02X.0",
		 (unsigned)buf->props.pciDomainID, (unsigned)buf->props.pciBusID,
		 (unsigned)buf->props.pciDeviceID);
	if (strcmp(info->arch, full) != 0) {
		size_t used = strlen(info->name);
		snprintf(info->name + used, sizeof info->name - used, " (%s)", full);
	}
out:
	free(buf);
	return rc;
}

static void hip_close(struct gpu *g)
{
	struct hip_gpu *hg = (struct hip_gpu *)g;

	if (!hg)
		return;
	/* Errors ignored, as in gpu_cuda.c. No hipDeviceReset: it would pull
	 * the device from under anything else in the process. */
	if (hg->stop)
		(void)rt.hipEventDestroy_fn(hg->stop);
	if (hg->start)
		(void)rt.hipEventDestroy_fn(hg->start);
	if (hg->stream)
		(void)rt.hipStreamDestroy_fn(hg->stream);
	free(hg);
}

/* *ev is NULL when it fails, so that hip_close destroys only what was made. */
static int hip_event_new(hipEvent_t *ev, struct qual_msg *msg)
{
	hipError_t e = rt.hipEventCreate_fn(ev);

	if (e != hipSuccess)
		*ev = NULL;
	return hip_check(e, "hipEventCreate", msg);
}

static int hip_open(int ordinal, struct gpu **out, struct qual_msg *msg)
{
	struct hip_gpu *hg = NULL;
	hipDevice_t dev = 0;
	int count = 0;
	hipError_t e;
	int rc = hip_load(msg);

	if (rc < 0)
		return rc;
	e = rt.hipGetDeviceCount_fn(&count);
	if (e != hipSuccess)
		return hip_fail(msg, "hipGetDeviceCount", e);
	if (ordinal >= count)
		return qual_fail(msg, QUAL_ENODEV,
				 "no hip device %d: the runtime sees %d device%s", ordinal,
				 count, count == 1 ? "" : "s");

	hg = xcalloc(1, sizeof *hg);
	e = rt.hipSetDevice_fn(ordinal);
	if (e != hipSuccess) {
		rc = hip_fail(msg, "hipSetDevice", e);
		goto fail;
	}
	e = rt.hipDeviceGet_fn(&dev, ordinal);
	if (e != hipSuccess) {
		rc = hip_fail(msg, "hipDeviceGet", e);
		goto fail;
	}
	e = rt.hipDeviceGetName_fn(hg->base.info.name, (int)sizeof hg->base.info.name, dev);
	if (e != hipSuccess) {
		rc = hip_fail(msg, "hipDeviceGetName", e);
		goto fail;
	}
	hg->base.info.name[sizeof hg->base.info.name - 1] = '\0';
	rc = hip_read_arch(ordinal, &hg->base.info, msg);
	if (rc < 0)
		goto fail;
	snprintf(hg->base.info.vendor, sizeof hg->base.info.vendor, "amd");
	snprintf(hg->base.info.driver, sizeof hg->base.info.driver, "%d.%d.%d",
		 rt.version / 10000000, rt.version / 100000 % 100, rt.version % 100000);

	e = rt.hipStreamCreateWithFlags_fn(&hg->stream, hipStreamNonBlocking);
	if (e != hipSuccess) {
		hg->stream = NULL;
		rc = hip_fail(msg, "hipStreamCreateWithFlags", e);
		goto fail;
	}
	if ((rc = hip_event_new(&hg->start, msg)) < 0 ||
	    (rc = hip_event_new(&hg->stop, msg)) < 0)
		goto fail;
	*out = &hg->base;
	return 0;

fail:
	hip_close(&hg->base);
	return rc;
}

static int hip_module_load(struct gpu *g, const void *code, size_t size,
			   const char *kernel, struct gpu_module **out,
			   struct qual_msg *msg)
{
	struct hip_module *hm = xcalloc(1, sizeof *hm);
	hipError_t e;
	int rc;

	(void)g;
	(void)size; /* the code object's headers carry its size */
	e = rt.hipModuleLoadData_fn(&hm->mod, code);
	if (e != hipSuccess) {
		hm->mod = NULL;
		rc = hip_fail(msg, "hipModuleLoadData", e);
		goto fail;
	}
	e = rt.hipModuleGetFunction_fn(&hm->fn, hm->mod, kernel);
	if (e == hipErrorNotFound) {
		rc = qual_fail(msg, QUAL_ENOENT, "kernel '%s' not found in module", kernel);
		goto fail;
	}
	if (e != hipSuccess) {
		rc = hip_fail(msg, "hipModuleGetFunction", e);
		goto fail;
	}
	*out = &hm->base;
	return 0;

fail:
	if (hm->mod)
		(void)rt.hipModuleUnload_fn(hm->mod);
	free(hm);
	return rc;
}

static void hip_module_free(struct gpu_module *m)
{
	struct hip_module *hm = (struct hip_module *)m;

	(void)rt.hipModuleUnload_fn(hm->mod);
	free(hm);
}

static int hip_alloc(struct gpu *g, size_t bytes, uint64_t *dptr, struct qual_msg *msg)
{
	void *p = NULL;
	hipError_t e = rt.hipMalloc_fn(&p, bytes);

	(void)g;
	if (e != hipSuccess)
		return hip_fail(msg, "hipMalloc", e);
	*dptr = (uint64_t)(uintptr_t)p;
	return 0;
}

static int hip_free(struct gpu *g, uint64_t dptr)
{
	(void)g;
	return rt.hipFree_fn((void *)(uintptr_t)dptr) == hipSuccess ? 0 : QUAL_EGPU;
}

static int hip_upload(struct gpu *g, uint64_t dptr, const void *src, size_t bytes,
		      struct qual_msg *msg)
{
	struct hip_gpu *hg = (struct hip_gpu *)g;
	double t0 = gpu__now_ns();
	/* The ROCm 5.2 prototype takes a non-const source it does not write. */
	int rc = hip_check(rt.hipMemcpyHtoDAsync_fn((hipDeviceptr_t)(uintptr_t)dptr,
						    (void *)(uintptr_t)src, bytes, hg->stream),
			   "hipMemcpyHtoDAsync", msg);

	return rc < 0 ? rc : gpu__wait(&hg->base, t0, "upload", msg);
}

static int hip_download(struct gpu *g, void *dst, uint64_t dptr, size_t bytes,
			struct qual_msg *msg)
{
	struct hip_gpu *hg = (struct hip_gpu *)g;
	double t0 = gpu__now_ns();
	int rc = hip_check(rt.hipMemcpyDtoHAsync_fn(dst, (hipDeviceptr_t)(uintptr_t)dptr,
						    bytes, hg->stream),
			   "hipMemcpyDtoHAsync", msg);

	return rc < 0 ? rc : gpu__wait(&hg->base, t0, "download", msg);
}

static int hip_memset(struct gpu *g, uint64_t dptr, int value, size_t bytes,
		      struct qual_msg *msg)
{
	struct hip_gpu *hg = (struct hip_gpu *)g;
	double t0 = gpu__now_ns();
	int rc = hip_check(rt.hipMemsetD8Async_fn((hipDeviceptr_t)(uintptr_t)dptr,
						  (unsigned char)value, bytes, hg->stream),
			   "hipMemsetD8Async", msg);

	return rc < 0 ? rc : gpu__wait(&hg->base, t0, "memset", msg);
}

static void hip_graph_free(struct gpu_graph *gr)
{
	struct hip_graph *hgr = (struct hip_graph *)gr;

	if (hgr->exec)
		(void)rt.hipGraphExecDestroy_fn(hgr->exec);
	if (hgr->graph)
		(void)rt.hipGraphDestroy_fn(hgr->graph);
	free(hgr);
}

static int hip_graph_new(struct gpu *g, struct gpu_module *m,
			 const unsigned grid[3], const unsigned block[3],
			 unsigned shared_bytes, void **params, int nlaunch,
			 struct gpu_graph **out, struct qual_msg *msg)
{
	struct hip_gpu *hg = (struct hip_gpu *)g;
	struct hip_module *hm = (struct hip_module *)m;
	struct hip_graph *hgr = xcalloc(1, sizeof *hgr);
	hipError_t e;
	int rc = 0;

	/* Launches captured on one stream become a chain of kernel nodes,
	 * each depending on the one before. Thread-local mode: other threads'
	 * unsafe calls do not break this capture. */
	e = rt.hipStreamBeginCapture_fn(hg->stream, hipStreamCaptureModeThreadLocal);
	if (e != hipSuccess) {
		rc = hip_fail(msg, "hipStreamBeginCapture", e);
		goto fail;
	}
	for (int i = 0; i < nlaunch && rc == 0; i++) {
		e = rt.hipModuleLaunchKernel_fn(hm->fn, grid[0], grid[1], grid[2],
						block[0], block[1], block[2],
						shared_bytes, hg->stream, params, NULL);
		if (e != hipSuccess)
			rc = hip_fail(msg, "hipModuleLaunchKernel", e);
	}
	/* Always end the capture, so that the stream is usable again. */
	e = rt.hipStreamEndCapture_fn(hg->stream, &hgr->graph);
	if (e != hipSuccess) {
		hgr->graph = NULL;
		if (rc == 0)
			rc = hip_fail(msg, "hipStreamEndCapture", e);
	}
	if (rc < 0)
		goto fail;
	e = rt.hipGraphInstantiate_fn(&hgr->exec, hgr->graph, NULL, NULL, 0);
	if (e != hipSuccess) {
		hgr->exec = NULL;
		rc = hip_fail(msg, "hipGraphInstantiate", e);
		goto fail;
	}
	*out = &hgr->base;
	return 0;

fail:
	hip_graph_free(&hgr->base);
	return rc;
}

/* The stream query gpu__wait polls (gpu_backend.h). */
static int hip_query(struct gpu *g, struct qual_msg *msg)
{
	hipError_t r = rt.hipStreamQuery_fn(((struct hip_gpu *)g)->stream);

	return r == hipErrorNotReady ? GPU__NOT_READY : hip_check(r, "hipStreamQuery", msg);
}

static int hip_graph_run(struct gpu_graph *gr, struct qual_msg *msg)
{
	struct hip_graph *hgr = (struct hip_graph *)gr;
	struct hip_gpu *hg = (struct hip_gpu *)gr->gpu;
	double t0 = gpu__now_ns();
	hipError_t e = rt.hipGraphLaunch_fn(hgr->exec, hg->stream);

	if (e != hipSuccess)
		return hip_fail(msg, "hipGraphLaunch", e);
	return gpu__wait(&hg->base, t0, "kernel", msg);
}

static int hip_graph_time(struct gpu_graph *gr, double *device_ns,
			  double *host_ns, struct qual_msg *msg)
{
	struct hip_graph *hgr = (struct hip_graph *)gr;
	struct hip_gpu *hg = (struct hip_gpu *)gr->gpu;
	float ms = 0.0f;
	double t0, t1;
	hipError_t e;
	int rc;

	e = rt.hipEventRecord_fn(hg->start, hg->stream);
	if (e != hipSuccess)
		return hip_fail(msg, "hipEventRecord", e);
	t0 = gpu__now_ns();
	e = rt.hipGraphLaunch_fn(hgr->exec, hg->stream);
	if (e != hipSuccess)
		return hip_fail(msg, "hipGraphLaunch", e);
	e = rt.hipEventRecord_fn(hg->stop, hg->stream);
	if (e != hipSuccess)
		return hip_fail(msg, "hipEventRecord", e);
	rc = gpu__wait(&hg->base, t0, "kernel", msg);
	t1 = gpu__now_ns();
	if (rc < 0)
		return rc;
	e = rt.hipEventElapsedTime_fn(&ms, hg->start, hg->stop);
	if (e != hipSuccess)
		return hip_fail(msg, "hipEventElapsedTime", e);
	*device_ns = (double)ms * 1e6;
	*host_ns = t1 - t0;
	return 0;
}

const struct gpu_backend gpu__hip_backend = {
	.name = "hip",
	.built = true,
	.open = hip_open,
	.close = hip_close,
	.module_load = hip_module_load,
	.module_free = hip_module_free,
	.alloc = hip_alloc,
	.free = hip_free,
	.upload = hip_upload,
	.download = hip_download,
	.memset = hip_memset,
	.graph_new = hip_graph_new,
	.graph_free = hip_graph_free,
	.graph_run = hip_graph_run,
	.graph_time = hip_graph_time,
	.query = hip_query,
};

#else /* !QUAL_HAVE_HIP_H */

static int hip_open_unbuilt(int ordinal, struct gpu **out, struct qual_msg *msg)
{
	(void)ordinal;
	(void)out;
	return qual_fail(msg, QUAL_ENODEV,
			 "hip backend not built: hip/hip_runtime_api.h was not found at build time");
}

const struct gpu_backend gpu__hip_backend = {
	.name = "hip",
	.built = false,
	.open = hip_open_unbuilt,
};

#endif
