/* The clocks of an NVIDIA device through NVML (clocks.h), loaded with
 * dlopen: libnvidia-ml.so.1 (the driver's; QUAL_NVML_LIBRARY overrides the
 * file), never linked. Only the read-only queries below are called; NVML's
 * calls that set clocks, limits or modes are never looked up.
 *
 * The declarations are NVML's (nvml.h, stable across drivers): a device is
 * an opaque pointer, results are nvmlReturn_t (0 success). */
#include "gpu/clocks.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

#define NVML_DEFAULT_LIBRARY "libnvidia-ml.so.1"
#define NVML_SUCCESS 0
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_TEMPERATURE_GPU 0

typedef int nvml_return;
typedef struct nvml_device *nvml_device;

struct nvml {
	void *lib;
	bool inited;
	nvml_device dev;
	const char *(*error_string)(nvml_return);
	nvml_return (*shutdown)(void);
	nvml_return (*clock_info)(nvml_device, int, unsigned *);
	nvml_return (*power_usage)(nvml_device, unsigned *);
	nvml_return (*temperature)(nvml_device, int, unsigned *);
	/* nvmlDeviceGetCurrentClocksEventReasons (drivers from 535), else
	 * the older name of the same call, ...ClocksThrottleReasons. */
	nvml_return (*reasons)(nvml_device, unsigned long long *);
	nvml_return (*reasons_old)(nvml_device, unsigned long long *);
};

static const char *nvml_error(const struct nvml *n, nvml_return r, char *buf, size_t len)
{
	const char *s = n->error_string ? n->error_string(r) : NULL;

	if (s)
		return s;
	snprintf(buf, len, "nvml error %d", r);
	return buf;
}

static void nvml_close(void *state)
{
	struct nvml *n = state;

	if (!n)
		return;
	if (n->inited && n->shutdown)
		(void)n->shutdown();
	if (n->lib)
		dlclose(n->lib);
	free(n);
}

static int nvml_open(const struct gpu_info *info, void **state, struct qual_msg *why)
{
	const char *path = getenv("QUAL_NVML_LIBRARY");
	struct nvml *n = xcalloc(1, sizeof *n);
	nvml_return (*init)(void);
	nvml_return (*by_bus)(const char *, nvml_device *);
	nvml_return r;
	char ebuf[32];
	int rc;

	if (!path || !path[0])
		path = NVML_DEFAULT_LIBRARY;
	if (!(n->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		const char *e = dlerror();
		rc = qual_fail(why, QUAL_ENODEV, "cannot load '%s': %s", path, e ? e : "not found");
		goto fail;
	}
	*(void **)&init = dlsym(n->lib, "nvmlInit_v2");
	*(void **)&by_bus = dlsym(n->lib, "nvmlDeviceGetHandleByPciBusId_v2");
	*(void **)&n->shutdown = dlsym(n->lib, "nvmlShutdown");
	*(void **)&n->error_string = dlsym(n->lib, "nvmlErrorString");
	*(void **)&n->clock_info = dlsym(n->lib, "nvmlDeviceGetClockInfo");
	*(void **)&n->power_usage = dlsym(n->lib, "nvmlDeviceGetPowerUsage");
	*(void **)&n->temperature = dlsym(n->lib, "nvmlDeviceGetTemperature");
	*(void **)&n->reasons = dlsym(n->lib, "nvmlDeviceGetCurrentClocksEventReasons");
	*(void **)&n->reasons_old = dlsym(n->lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
	if (!init || !by_bus || !n->shutdown) {
		rc = qual_fail(why, QUAL_ENODEV, "'%s' has no %s", path,
			       !init ? "nvmlInit_v2" : !by_bus ? "nvmlDeviceGetHandleByPciBusId_v2" :
			       "nvmlShutdown");
		goto fail;
	}
	if ((r = init()) != NVML_SUCCESS) {
		rc = qual_fail(why, QUAL_ENODEV, "nvmlInit_v2 of '%s' failed: %s", path,
			       nvml_error(n, r, ebuf, sizeof ebuf));
		goto fail;
	}
	n->inited = true;
	if ((r = by_bus(info->pci_bus_id, &n->dev)) != NVML_SUCCESS) {
		rc = qual_fail(why, QUAL_ENODEV, "nvml has no device at pci bus id '%s': %s",
			       info->pci_bus_id, nvml_error(n, r, ebuf, sizeof ebuf));
		goto fail;
	}
	*state = n;
	return 0;
fail:
	nvml_close(n);
	return rc;
}

/* Each value NaN when its query fails (a device may not support one, e.g.
 * power on some boards); the read fails only when nothing at all is read
 * (x != x: NaN, the value never set). */
static int nvml_read(void *state, struct gpu_clocks_reading *out, struct qual_msg *msg)
{
	struct nvml *n = state;
	unsigned sm = 0, mem = 0, mw = 0, temp = 0;
	unsigned long long mask = 0;
	nvml_return r = -1;
	char ebuf[32];

	if (n->clock_info && n->clock_info(n->dev, NVML_CLOCK_SM, &sm) == NVML_SUCCESS)
		out->sm_mhz = sm;
	if (n->clock_info && n->clock_info(n->dev, NVML_CLOCK_MEM, &mem) == NVML_SUCCESS)
		out->mem_mhz = mem;
	if (n->power_usage && n->power_usage(n->dev, &mw) == NVML_SUCCESS)
		out->power_w = mw / 1000.0;
	if (n->temperature && n->temperature(n->dev, NVML_TEMPERATURE_GPU, &temp) == NVML_SUCCESS)
		out->temp_c = temp;
	/* The newer name first; an older driver has only the older one, and a
	 * driver may export the newer but answer it "not supported". */
	if (n->reasons)
		r = n->reasons(n->dev, &mask);
	if (r != NVML_SUCCESS && n->reasons_old)
		r = n->reasons_old(n->dev, &mask);
	if (r == NVML_SUCCESS) {
		out->reasons_known = true;
		out->raw = mask;
		out->reasons = mask;
	}
	if (!out->reasons_known && out->sm_mhz != out->sm_mhz && out->mem_mhz != out->mem_mhz &&
	    out->power_w != out->power_w && out->temp_c != out->temp_c)
		return qual_fail(msg, QUAL_EGPU, "nvml gave no reading of device %s: %s",
				 "(clocks, power, temperature, reasons)",
				 nvml_error(n, r, ebuf, sizeof ebuf));
	return 0;
}

const struct gpu_clocks_backend gpu__nvml_clocks = {
	.name = "nvml",
	.open = nvml_open,
	.read = nvml_read,
	.close = nvml_close,
};
