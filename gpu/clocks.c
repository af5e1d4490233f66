/* The clocks of the device (clocks.h): the backend chosen by the device's
 * vendor, and what both backends share. */
#include "gpu/clocks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

struct gpu_clocks {
	const struct gpu_clocks_backend *backend;
	void *state;
};

/* The names of the GPU_CLOCKS_* bits, by bit number: NVML's names for them
 * (nvmlClocksEventReason*), in snake case. */
static const char *const reason_names[] = {
	"gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown",
	"sync_boost", "sw_thermal_slowdown", "hw_thermal_slowdown",
	"hw_power_brake_slowdown", "display_clock_setting", "vendor_throttle_status",
};

const char *gpu_clocks_reason_name(int bit)
{
	if (bit < 0 || bit >= (int)(sizeof reason_names / sizeof reason_names[0]))
		return NULL;
	return reason_names[bit];
}

bool gpu_clocks_throttled(uint64_t reasons)
{
	return (reasons & GPU_CLOCKS_THROTTLING) != 0;
}

void gpu__clocks_unknown(struct gpu_clocks_reading *r)
{
	memset(r, 0, sizeof *r);
	r->sm_mhz = r->mem_mhz = r->power_w = r->temp_c = NAN;
}

int gpu_clocks_open(const struct gpu_info *info, struct gpu_clocks **out,
		    struct qual_msg *why)
{
	const struct gpu_clocks_backend *be;
	void *state = NULL;
	int rc;

	*out = NULL;
	if (strcmp(info->vendor, "nvidia") == 0)
		be = &gpu__nvml_clocks;
	else if (strcmp(info->vendor, "amd") == 0)
		be = &gpu__rocm_smi_clocks;
	else
		return qual_fail(why, QUAL_ENODEV, "no clock monitor for a '%s' device",
				 info->vendor);
	if (!info->pci_bus_id[0])
		return qual_fail(why, QUAL_ENODEV, "the %s runtime gave no pci bus id for "
				 "device %d, so %s cannot be matched to it", info->vendor,
				 info->ordinal, be->name);
	if ((rc = be->open(info, &state, why)) < 0)
		return rc;
	*out = xcalloc(1, sizeof **out);
	(*out)->backend = be;
	(*out)->state = state;
	return 0;
}

int gpu_clocks_read(struct gpu_clocks *c, struct gpu_clocks_reading *r,
		    struct qual_msg *msg)
{
	gpu__clocks_unknown(r);
	return c->backend->read(c->state, r, msg);
}

const char *gpu_clocks_source(const struct gpu_clocks *c)
{
	return c->backend->name;
}

void gpu_clocks_close(struct gpu_clocks *c)
{
	if (!c)
		return;
	c->backend->close(c->state);
	free(c);
}
