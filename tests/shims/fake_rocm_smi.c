/* A fake librocm_smi64.so for tests/unit/gpu/test_clocks.c: the ROCm SMI
 * entry points gpu/rocm_smi.c looks up, two devices of which the second is
 * at pci bus id 0000:C1:00.0, readings from the environment.
 *
 *   FAKE_RSMI_THROTTLE   the gpu metrics' throttle status (default 0)
 *   FAKE_RSMI_REVISION   the metrics table's content revision (default 3)
 *
 * The metrics table is written through the struct of ROCm SMI 5's
 * rocm_smi.h (rsmi_gpu_metrics_t, format 1, content 0 to 3) as declared
 * below, so that the test checks gpu/rocm_smi.c's byte offsets against the
 * compiler's layout of that struct. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct metrics_table_header {
	uint16_t structure_size;
	uint8_t format_revision;
	uint8_t content_revision;
};

struct rsmi_gpu_metrics {
	struct metrics_table_header common_header;
	uint16_t temperature_edge, temperature_hotspot, temperature_mem;
	uint16_t temperature_vrgfx, temperature_vrsoc, temperature_vrmem;
	uint16_t average_gfx_activity, average_umc_activity, average_mm_activity;
	uint16_t average_socket_power;
	uint64_t energy_accumulator;
	uint64_t system_clock_counter;
	uint16_t average_gfxclk_frequency, average_socclk_frequency, average_uclk_frequency;
	uint16_t average_vclk0_frequency, average_dclk0_frequency;
	uint16_t average_vclk1_frequency, average_dclk1_frequency;
	uint16_t current_gfxclk, current_socclk, current_uclk, current_vclk0;
	uint16_t current_dclk0, current_vclk1, current_dclk1;
	uint32_t throttle_status;
	uint16_t current_fan_speed;
	uint16_t pcie_link_width, pcie_link_speed;
	uint16_t padding;
	uint32_t gfx_activity_acc, mem_actvity_acc;
	uint16_t temperature_hbm[4];
};

int rsmi_init(uint64_t flags);
int rsmi_shut_down(void);
int rsmi_status_string(int status, const char **text);
int rsmi_num_monitor_devices(uint32_t *n);
int rsmi_dev_pci_id_get(uint32_t dv, uint64_t *bdfid);
int rsmi_dev_power_ave_get(uint32_t dv, uint32_t sensor, uint64_t *uw);
int rsmi_dev_temp_metric_get(uint32_t dv, uint32_t type, int metric, int64_t *millic);
int rsmi_dev_gpu_metrics_info_get(uint32_t dv, struct rsmi_gpu_metrics *m);

#define RSMI_INVALID_ARGS 1

int rsmi_init(uint64_t flags)
{
	return flags == 0 ? 0 : RSMI_INVALID_ARGS;
}

int rsmi_shut_down(void)
{
	return 0;
}

int rsmi_status_string(int status, const char **text)
{
	*text = status ? "RSMI_STATUS_INVALID_ARGS" : "RSMI_STATUS_SUCCESS";
	return 0;
}

int rsmi_num_monitor_devices(uint32_t *n)
{
	*n = 2;
	return 0;
}

int rsmi_dev_pci_id_get(uint32_t dv, uint64_t *bdfid)
{
	if (dv > 1)
		return RSMI_INVALID_ARGS;
	*bdfid = dv == 1 ? (uint64_t)0xC1 << 8 : (uint64_t)0x03 << 8;
	return 0;
}

int rsmi_dev_power_ave_get(uint32_t dv, uint32_t sensor, uint64_t *uw)
{
	if (dv != 1 || sensor != 0)
		return RSMI_INVALID_ARGS;
	*uw = 301500000; /* 301.5 W */
	return 0;
}

int rsmi_dev_temp_metric_get(uint32_t dv, uint32_t type, int metric, int64_t *millic)
{
	if (dv != 1 || type != 1 || metric != 0) /* junction, current */
		return RSMI_INVALID_ARGS;
	*millic = 67250;
	return 0;
}

int rsmi_dev_gpu_metrics_info_get(uint32_t dv, struct rsmi_gpu_metrics *m)
{
	const char *t = getenv("FAKE_RSMI_THROTTLE"), *rev = getenv("FAKE_RSMI_REVISION");

	if (dv != 1)
		return RSMI_INVALID_ARGS;
	memset(m, 0xff, sizeof *m);
	m->common_header.structure_size = sizeof *m;
	m->common_header.format_revision = 1;
	m->common_header.content_revision = (uint8_t)(rev ? strtoul(rev, NULL, 0) : 3);
	m->current_gfxclk = 1700;
	m->current_uclk = 1600;
	m->throttle_status = (uint32_t)(t ? strtoul(t, NULL, 0) : 0);
	return 0;
}
