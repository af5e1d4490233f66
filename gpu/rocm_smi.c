/* The clocks of an AMD device through ROCm SMI (clocks.h), loaded with
 * dlopen: librocm_smi64.so (QUAL_ROCM_SMI_LIBRARY overrides the file),
 * never linked. Only read-only queries are called.
 *
 * Written against ROCm SMI's C API (rocm_smi.h of ROCm 5 and 6) without its
 * header, and not run on an AMD device yet. The calls:
 *   rsmi_init(0), rsmi_shut_down(), rsmi_num_monitor_devices(&n),
 *   rsmi_dev_pci_id_get(i, &bdfid): domain << 32 | bus << 8 | device << 3 |
 *     function, which picks the device by gpu_info.pci_bus_id;
 *   rsmi_dev_power_ave_get(i, 0, &uw): microwatts;
 *   rsmi_dev_temp_metric_get(i, RSMI_TEMP_TYPE_JUNCTION (1),
 *     RSMI_TEMP_CURRENT (0), &millic): millidegrees C;
 *   rsmi_dev_gpu_metrics_info_get(i, &metrics): the SM (gfx) and memory
 *     (uclk) clocks and the throttle status. Its struct grew between
 *     releases, so it is read into a zeroed buffer far larger than any
 *     release's, and its fields only when the table says it is of the
 *     classic layout (format revision 1, content revision 0 to 3), at that
 *     layout's offsets: current_gfxclk (u16, MHz) at 54, current_uclk at
 *     58, throttle_status (u32) at 68; 0xffff / 0xffffffff mean "not
 *     available". Any other layout leaves clocks and reasons unknown.
 * rsmi_dev_gpu_clk_freq_get is not used: its rsmi_frequencies_t gained a
 * leading field in ROCm 6, which would shift every value it gives. */
#include "gpu/clocks.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

#define RSMI_SUCCESS 0
#define RSMI_TEMP_TYPE_JUNCTION 1
#define RSMI_TEMP_CURRENT 0
#define RSMI_METRICS_ROOM 4096
#define RSMI_OFF_GFXCLK 54
#define RSMI_OFF_UCLK 58
#define RSMI_OFF_THROTTLE 68

typedef int rsmi_status;

static const char *const rsmi_default_libraries[] = {
	"librocm_smi64.so.1", "librocm_smi64.so.7", "librocm_smi64.so.6",
	"librocm_smi64.so.5", "librocm_smi64.so",
};

struct rsmi {
	void *lib;
	bool inited;
	uint32_t index;
	rsmi_status (*shut_down)(void);
	rsmi_status (*status_string)(rsmi_status, const char **);
	rsmi_status (*power_ave)(uint32_t, uint32_t, uint64_t *);
	rsmi_status (*temp_metric)(uint32_t, uint32_t, int, int64_t *);
	rsmi_status (*metrics)(uint32_t, void *);
	unsigned char *room; /* RSMI_METRICS_ROOM bytes, 8-byte aligned */
};

static const char *rsmi_error(const struct rsmi *s, rsmi_status st, char *buf, size_t len)
{
	const char *text = NULL;

	if (s->status_string && s->status_string(st, &text) == RSMI_SUCCESS && text)
		return text;
	snprintf(buf, len, "rocm smi status %d", st);
	return buf;
}

static void rsmi_close(void *state)
{
	struct rsmi *s = state;

	if (!s)
		return;
	if (s->inited && s->shut_down)
		(void)s->shut_down();
	if (s->lib)
		dlclose(s->lib);
	free(s->room);
	free(s);
}

/* "0000:C1:00.0" into the bdfid encoding of rsmi_dev_pci_id_get. */
static bool parse_bus_id(const char *text, uint64_t *bdfid)
{
	unsigned domain, bus, dev, fn;

	if (sscanf(text, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4)
		return false;
	*bdfid = (uint64_t)domain << 32 | (uint64_t)(bus & 0xff) << 8 |
		 (uint64_t)(dev & 0x1f) << 3 | (fn & 0x7);
	return true;
}

static int rsmi_open(const struct gpu_info *info, void **state, struct qual_msg *why)
{
	const char *path = getenv("QUAL_ROCM_SMI_LIBRARY");
	struct rsmi *s = xcalloc(1, sizeof *s);
	rsmi_status (*init)(uint64_t);
	rsmi_status (*count)(uint32_t *);
	rsmi_status (*pci_id)(uint32_t, uint64_t *);
	uint64_t want = 0, got = 0;
	uint32_t n = 0;
	rsmi_status st;
	char ebuf[32];
	int rc;

	if (path && path[0]) {
		s->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	} else {
		path = rsmi_default_libraries[0];
		for (size_t i = 0; !s->lib && i < sizeof rsmi_default_libraries /
						   sizeof rsmi_default_libraries[0]; i++)
			s->lib = dlopen(path = rsmi_default_libraries[i], RTLD_NOW | RTLD_LOCAL);
	}
	if (!s->lib) {
		const char *e = dlerror();
		rc = qual_fail(why, QUAL_ENODEV, "cannot load '%s': %s", path, e ? e : "not found");
		goto fail;
	}
	*(void **)&init = dlsym(s->lib, "rsmi_init");
	*(void **)&count = dlsym(s->lib, "rsmi_num_monitor_devices");
	*(void **)&pci_id = dlsym(s->lib, "rsmi_dev_pci_id_get");
	*(void **)&s->shut_down = dlsym(s->lib, "rsmi_shut_down");
	*(void **)&s->status_string = dlsym(s->lib, "rsmi_status_string");
	*(void **)&s->power_ave = dlsym(s->lib, "rsmi_dev_power_ave_get");
	*(void **)&s->temp_metric = dlsym(s->lib, "rsmi_dev_temp_metric_get");
	*(void **)&s->metrics = dlsym(s->lib, "rsmi_dev_gpu_metrics_info_get");
	if (!init || !count || !pci_id || !s->shut_down) {
		rc = qual_fail(why, QUAL_ENODEV, "'%s' has no %s", path,
			       !init ? "rsmi_init" : !count ? "rsmi_num_monitor_devices" :
			       !pci_id ? "rsmi_dev_pci_id_get" : "rsmi_shut_down");
		goto fail;
	}
	if ((st = init(0)) != RSMI_SUCCESS) {
		rc = qual_fail(why, QUAL_ENODEV, "rsmi_init of '%s' failed: %s", path,
			       rsmi_error(s, st, ebuf, sizeof ebuf));
		goto fail;
	}
	s->inited = true;
	if (!parse_bus_id(info->pci_bus_id, &want)) {
		rc = qual_fail(why, QUAL_ENODEV, "cannot read pci bus id '%s'", info->pci_bus_id);
		goto fail;
	}
	if ((st = count(&n)) != RSMI_SUCCESS) {
		rc = qual_fail(why, QUAL_ENODEV, "rsmi_num_monitor_devices failed: %s",
			       rsmi_error(s, st, ebuf, sizeof ebuf));
		goto fail;
	}
	for (s->index = 0; s->index < n; s->index++)
		if (pci_id(s->index, &got) == RSMI_SUCCESS && got == want)
			break;
	if (s->index == n) {
		rc = qual_fail(why, QUAL_ENODEV, "rocm smi has no device at pci bus id '%s' "
			       "(of %u devices)", info->pci_bus_id, n);
		goto fail;
	}
	s->room = xcalloc(1, RSMI_METRICS_ROOM);
	*state = s;
	return 0;
fail:
	rsmi_close(s);
	return rc;
}

static unsigned u16_at(const unsigned char *p, size_t off)
{
	uint16_t v;
	memcpy(&v, p + off, sizeof v);
	return v;
}

static int rsmi_read(void *state, struct gpu_clocks_reading *out, struct qual_msg *msg)
{
	struct rsmi *s = state;
	uint64_t uw = 0;
	int64_t millic = 0;

	if (s->power_ave && s->power_ave(s->index, 0, &uw) == RSMI_SUCCESS)
		out->power_w = (double)uw / 1e6;
	if (s->temp_metric && s->temp_metric(s->index, RSMI_TEMP_TYPE_JUNCTION,
					     RSMI_TEMP_CURRENT, &millic) == RSMI_SUCCESS)
		out->temp_c = (double)millic / 1000.0;
	memset(s->room, 0, RSMI_METRICS_ROOM);
	if (s->metrics && s->metrics(s->index, s->room) == RSMI_SUCCESS &&
	    s->room[2] == 1 && s->room[3] <= 3) {
		unsigned gfx = u16_at(s->room, RSMI_OFF_GFXCLK);
		unsigned uclk = u16_at(s->room, RSMI_OFF_UCLK);
		uint32_t throttle;

		memcpy(&throttle, s->room + RSMI_OFF_THROTTLE, sizeof throttle);
		if (gfx != 0xffff && gfx != 0)
			out->sm_mhz = gfx;
		if (uclk != 0xffff && uclk != 0)
			out->mem_mhz = uclk;
		if (throttle != 0xffffffffu) {
			out->reasons_known = true;
			out->raw = throttle;
			out->reasons = throttle ? GPU_CLOCKS_VENDOR_THROTTLE : 0;
		}
	}
	if (!out->reasons_known && out->sm_mhz != out->sm_mhz &&
	    out->power_w != out->power_w && out->temp_c != out->temp_c)
		return qual_fail(msg, QUAL_EGPU, "rocm smi gave no reading of device %u",
				 s->index);
	return 0;
}

const struct gpu_clocks_backend gpu__rocm_smi_clocks = {
	.name = "rocm_smi",
	.open = rsmi_open,
	.read = rsmi_read,
	.close = rsmi_close,
};
