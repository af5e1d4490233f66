/* The device's clocks, power, temperature and clock-event (throttle)
 * reasons, read while blocks are timed: through NVML on NVIDIA (nvml.c,
 * libnvidia-ml.so.1) and ROCm SMI on AMD (rocm_smi.c, librocm_smi64.so),
 * each loaded with dlopen at run time and never linked, so that a machine
 * without them still times (its readings are then unknown). Only read-only
 * calls are made: nothing here changes a clock, a limit or a setting.
 *
 * The device is the gpu opened by gpu_open: it is found in the monitoring
 * library by its PCI bus id (gpu_info.pci_bus_id), never by ordinal, since
 * the libraries may number devices otherwise than the runtime does.
 *
 * Threads: a gpu_clocks is used from one thread at a time. */
#ifndef QUAL_GPU_CLOCKS_H
#define QUAL_GPU_CLOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "gpu/gpu.h"

/* The reasons the clocks are what they are, as bits: NVML's own values
 * (nvmlClocksEventReason*; nvml.h), which ROCm SMI's throttle status is
 * mapped onto (rocm_smi.c says how). */
#define GPU_CLOCKS_GPU_IDLE              0x001ULL
#define GPU_CLOCKS_APPLICATIONS_SETTING  0x002ULL
#define GPU_CLOCKS_SW_POWER_CAP          0x004ULL
#define GPU_CLOCKS_HW_SLOWDOWN           0x008ULL
#define GPU_CLOCKS_SYNC_BOOST            0x010ULL
#define GPU_CLOCKS_SW_THERMAL            0x020ULL
#define GPU_CLOCKS_HW_THERMAL            0x040ULL
#define GPU_CLOCKS_HW_POWER_BRAKE        0x080ULL
#define GPU_CLOCKS_DISPLAY_SETTING       0x100ULL
/* Not NVML's: ROCm SMI's throttle status is not zero (its bits are the
 * ASIC's own; raw keeps them). */
#define GPU_CLOCKS_VENDOR_THROTTLE       0x200ULL

/* Throttled: a reason that lowers the clocks against the load that runs,
 * so that what is timed is not the code at the device's normal clocks: a
 * software power cap, a hardware slowdown, a software or hardware thermal
 * slowdown, the hardware power brake. Not throttling: an idle GPU (the
 * clocks drop between launches, and come back with work), the applications
 * clocks setting and display clocks (fixed settings, the same for both
 * arms), sync boost (clocks held together across GPUs). On AMD, any
 * throttle status bit (power, current, thermal or VR limits alike). */
#define GPU_CLOCKS_THROTTLING                                                 \
	(GPU_CLOCKS_SW_POWER_CAP | GPU_CLOCKS_HW_SLOWDOWN | GPU_CLOCKS_SW_THERMAL | \
	 GPU_CLOCKS_HW_THERMAL | GPU_CLOCKS_HW_POWER_BRAKE | GPU_CLOCKS_VENDOR_THROTTLE)

/* One reading. A value the library does not give is NaN; reasons_known is
 * false when it gives no reasons (then reasons is 0). */
struct gpu_clocks_reading {
	double sm_mhz;    /* SM (graphics) clock now, MHz */
	double mem_mhz;   /* memory clock now, MHz */
	double power_w;   /* board power now (NVML: mW / 1000), W */
	double temp_c;    /* GPU temperature (ROCm SMI: the junction's), C */
	bool reasons_known;
	uint64_t reasons; /* GPU_CLOCKS_* bits */
	uint64_t raw;     /* the vendor's mask as read (NVML: the same bits) */
};

struct gpu_clocks; /* an opened monitoring library and the device in it */

/* Opens the monitoring library for info's device (its vendor picks NVML or
 * ROCm SMI) and finds the device by info->pci_bus_id. Returns 0, or
 * QUAL_ENODEV with why (a sentence for the start line: "cannot load
 * 'libnvidia-ml.so.1': ...") when the library is not there, does not start
 * or does not know the device; never anything that should fail a run.
 * QUAL_NVML_LIBRARY and QUAL_ROCM_SMI_LIBRARY, when set, name the library
 * file to load instead of the default names (for tests). */
int gpu_clocks_open(const struct gpu_info *info, struct gpu_clocks **out,
		    struct qual_msg *why);

/* Reads the device now. Returns 0 (values it cannot read are NaN, reasons
 * unknown) or QUAL_EGPU with msg when the device cannot be read at all. */
int gpu_clocks_read(struct gpu_clocks *c, struct gpu_clocks_reading *r,
		    struct qual_msg *msg);

/* "nvml" or "rocm_smi". */
const char *gpu_clocks_source(const struct gpu_clocks *c);

/* Shuts the library down and frees c. Safe with NULL. */
void gpu_clocks_close(struct gpu_clocks *c);

/* True when reasons hold a throttling bit (GPU_CLOCKS_THROTTLING). */
bool gpu_clocks_throttled(uint64_t reasons);

/* The name of reason bit i (0..63: "gpu_idle", "sw_power_cap", ...), or
 * NULL for a bit without a name. */
const char *gpu_clocks_reason_name(int bit);

/* ---- for the backends (nvml.c, rocm_smi.c) ---------------------------- */

struct gpu_clocks_backend {
	const char *name;
	int (*open)(const struct gpu_info *info, void **state, struct qual_msg *why);
	int (*read)(void *state, struct gpu_clocks_reading *r, struct qual_msg *msg);
	void (*close)(void *state);
};

extern const struct gpu_clocks_backend gpu__nvml_clocks;
extern const struct gpu_clocks_backend gpu__rocm_smi_clocks;

/* Fills r with "unknown" (NaN values, no reasons). */
void gpu__clocks_unknown(struct gpu_clocks_reading *r);

#endif
