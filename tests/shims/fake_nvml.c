/* A fake libnvidia-ml.so for tests/unit/gpu/test_clocks.c: the NVML entry
 * points gpu/nvml.c looks up, with readings from the environment.
 *
 *   FAKE_NVML_INIT_FAIL    set: nvmlInit_v2 fails (NVML_ERROR_DRIVER_NOT_LOADED)
 *   FAKE_NVML_BUS          the one pci bus id it knows (default
 *                          "00000000:1B:00.0"); others are NVML_ERROR_NOT_FOUND
 *   FAKE_NVML_SM_MHZ, FAKE_NVML_MEM_MHZ, FAKE_NVML_POWER_MW, FAKE_NVML_TEMP_C
 *   FAKE_NVML_REASONS      the clock-event reasons mask (decimal or 0x hex),
 *                          or a comma-separated list of masks that the reads
 *                          take in turn, from the first again after the last
 *                          (and from the first after each nvmlInit_v2)
 *   FAKE_NVML_OLD          set: the newer reasons call answers
 *                          NVML_ERROR_FUNCTION_NOT_FOUND, so the reasons come
 *                          only through the older ...ThrottleReasons
 */
#include <stdlib.h>
#include <string.h>

#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_FUNCTION_NOT_FOUND 13

int nvmlInit_v2(void);
int nvmlShutdown(void);
const char *nvmlErrorString(int r);
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev);
int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *clock);
int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw);
int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned *temp);
int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *mask);
int nvmlDeviceGetCurrentClocksThrottleReasons(void *dev, unsigned long long *mask);

static int the_device;
static unsigned reads; /* reasons read since nvmlInit_v2 */

static unsigned long long env_num(const char *name, unsigned long long dflt)
{
	const char *v = getenv(name);
	return v && v[0] ? strtoull(v, NULL, 0) : dflt;
}

int nvmlInit_v2(void)
{
	reads = 0;
	return getenv("FAKE_NVML_INIT_FAIL") ? NVML_ERROR_DRIVER_NOT_LOADED : NVML_SUCCESS;
}

int nvmlShutdown(void)
{
	return NVML_SUCCESS;
}

const char *nvmlErrorString(int r)
{
	switch (r) {
	case NVML_ERROR_NOT_FOUND:
		return "Not Found";
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded";
	default:
		return "Unknown Error";
	}
}

int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev)
{
	const char *known = getenv("FAKE_NVML_BUS");

	if (strcmp(bus, known ? known : "00000000:1B:00.0") != 0)
		return NVML_ERROR_NOT_FOUND;
	*dev = &the_device;
	return NVML_SUCCESS;
}

int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *clock)
{
	if (dev != &the_device || (type != 1 && type != 2))
		return NVML_ERROR_INVALID_ARGUMENT;
	*clock = (unsigned)(type == 1 ? env_num("FAKE_NVML_SM_MHZ", 1980) :
					env_num("FAKE_NVML_MEM_MHZ", 2619));
	return NVML_SUCCESS;
}

int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw)
{
	if (dev != &the_device)
		return NVML_ERROR_INVALID_ARGUMENT;
	*mw = (unsigned)env_num("FAKE_NVML_POWER_MW", 123456);
	return NVML_SUCCESS;
}

int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned *temp)
{
	if (dev != &the_device || sensor != 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	*temp = (unsigned)env_num("FAKE_NVML_TEMP_C", 41);
	return NVML_SUCCESS;
}

int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *mask)
{
	if (getenv("FAKE_NVML_OLD"))
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	return nvmlDeviceGetCurrentClocksThrottleReasons(dev, mask);
}

int nvmlDeviceGetCurrentClocksThrottleReasons(void *dev, unsigned long long *mask)
{
	const char *list = getenv("FAKE_NVML_REASONS");
	unsigned n = 1, k;

	if (dev != &the_device)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!list || !list[0]) {
		*mask = 0;
		return NVML_SUCCESS;
	}
	for (const char *c = list; *c; c++)
		n += *c == ',';
	k = reads++ % n;
	while (k--)
		list = strchr(list, ',') + 1;
	*mask = strtoull(list, NULL, 0);
	return NVML_SUCCESS;
}
