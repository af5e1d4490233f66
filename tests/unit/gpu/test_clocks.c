/* gpu/clocks.c and gpu/nvml.c through tests/shims/fake_nvml.c (named by
 * FAKE_NVML, loaded through QUAL_NVML_LIBRARY): the library found or not,
 * the device matched by its pci bus id, a reading and its throttle reasons,
 * the older reasons call as a fallback, and what is throttling. And
 * gpu/rocm_smi.c through tests/shims/fake_rocm_smi.c (FAKE_ROCM_SMI), which
 * checks it against the fake's idea of ROCm SMI 5, not against ROCm. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include "tests/unit/test_main.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/clocks.h"

static struct gpu_info device(void)
{
	struct gpu_info in;

	memset(&in, 0, sizeof in);
	snprintf(in.vendor, sizeof in.vendor, "nvidia");
	snprintf(in.pci_bus_id, sizeof in.pci_bus_id, "00000000:1B:00.0");
	return in;
}

static int setup(void **state)
{
	const char *shim = getenv("FAKE_NVML");

	(void)state;
	if (!shim || !getenv("FAKE_ROCM_SMI"))
		return -1;
	setenv("QUAL_NVML_LIBRARY", shim, 1);
	unsetenv("FAKE_NVML_INIT_FAIL");
	unsetenv("FAKE_NVML_OLD");
	unsetenv("FAKE_NVML_REASONS");
	unsetenv("FAKE_NVML_BUS");
	return 0;
}

/* Opens the fake device and reads it once. */
static void read_once(struct gpu_clocks_reading *r)
{
	struct gpu_info in = device();
	struct gpu_clocks *c = NULL;
	struct qual_msg msg = {{0}};

	assert_int_equal(gpu_clocks_open(&in, &c, &msg), 0);
	assert_string_equal(gpu_clocks_source(c), "nvml");
	assert_int_equal(gpu_clocks_read(c, r, &msg), 0);
	gpu_clocks_close(c);
}

static void test_reading(void **state)
{
	struct gpu_clocks_reading r;

	(void)state;
	setenv("FAKE_NVML_REASONS", "0x1", 1); /* idle only */
	read_once(&r);
	assert_true(r.sm_mhz == 1980 && r.mem_mhz == 2619);
	assert_true(fabs(r.power_w - 123.456) < 1e-9); /* mW to W */
	assert_true(r.temp_c == 41);
	assert_true(r.reasons_known);
	assert_true(r.reasons == GPU_CLOCKS_GPU_IDLE && r.raw == 1);
	assert_false(gpu_clocks_throttled(r.reasons));
}

static void test_throttled_reading(void **state)
{
	struct gpu_clocks_reading r;

	(void)state;
	setenv("FAKE_NVML_REASONS", "0x44", 1); /* SW power cap, HW thermal */
	read_once(&r);
	assert_true(r.reasons == (GPU_CLOCKS_SW_POWER_CAP | GPU_CLOCKS_HW_THERMAL));
	assert_true(gpu_clocks_throttled(r.reasons));
	assert_string_equal(gpu_clocks_reason_name(2), "sw_power_cap");
	assert_string_equal(gpu_clocks_reason_name(6), "hw_thermal_slowdown");
	/* The older call, where the newer one is not there. */
	setenv("FAKE_NVML_OLD", "1", 1);
	setenv("FAKE_NVML_REASONS", "0x8", 1);
	read_once(&r);
	assert_true(r.reasons_known && r.reasons == GPU_CLOCKS_HW_SLOWDOWN);
	assert_true(gpu_clocks_throttled(r.reasons));
}

static void test_not_throttling(void **state)
{
	(void)state;
	/* Idle, applications clocks, sync boost, display clocks. */
	assert_false(gpu_clocks_throttled(0x1 | 0x2 | 0x10 | 0x100));
	for (int bit = 0; bit < 10; bit++) {
		uint64_t b = 1ULL << bit;
		bool want = b == 0x4 || b == 0x8 || b == 0x20 || b == 0x40 || b == 0x80 ||
			    b == 0x200;
		assert_int_equal(gpu_clocks_throttled(b), want);
	}
}

static void test_not_found(void **state)
{
	struct gpu_info in = device();
	struct gpu_clocks *c = (struct gpu_clocks *)1;
	struct qual_msg msg = {{0}};

	(void)state;
	setenv("QUAL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
	assert_int_equal(gpu_clocks_open(&in, &c, &msg), QUAL_ENODEV);
	assert_null(c);
	assert_non_null(strstr(msg.text, "cannot load '/nonexistent/libnvidia-ml.so.1'"));
	/* Loaded, but it does not start. */
	setenv("QUAL_NVML_LIBRARY", getenv("FAKE_NVML"), 1);
	setenv("FAKE_NVML_INIT_FAIL", "1", 1);
	assert_int_equal(gpu_clocks_open(&in, &c, &msg), QUAL_ENODEV);
	assert_non_null(strstr(msg.text, "nvmlInit_v2"));
	assert_non_null(strstr(msg.text, "Driver Not Loaded"));
	unsetenv("FAKE_NVML_INIT_FAIL");
	/* Another device than the runtime's. */
	setenv("FAKE_NVML_BUS", "00000000:2A:00.0", 1);
	assert_int_equal(gpu_clocks_open(&in, &c, &msg), QUAL_ENODEV);
	assert_non_null(strstr(msg.text, "00000000:1B:00.0"));
	/* No bus id from the runtime: nothing to match. */
	in.pci_bus_id[0] = '\0';
	assert_int_equal(gpu_clocks_open(&in, &c, &msg), QUAL_ENODEV);
	assert_non_null(strstr(msg.text, "pci bus id"));
}

static struct gpu_info amd_device(void)
{
	struct gpu_info in;

	memset(&in, 0, sizeof in);
	snprintf(in.vendor, sizeof in.vendor, "amd");
	snprintf(in.pci_bus_id, sizeof in.pci_bus_id, "0000:C1:00.0");
	return in;
}

static void rsmi_read_once(struct gpu_clocks_reading *r)
{
	struct gpu_info in = amd_device();
	struct gpu_clocks *c = NULL;
	struct qual_msg msg = {{0}};

	setenv("QUAL_ROCM_SMI_LIBRARY", getenv("FAKE_ROCM_SMI"), 1);
	assert_int_equal(gpu_clocks_open(&in, &c, &msg), 0);
	assert_string_equal(gpu_clocks_source(c), "rocm_smi");
	assert_int_equal(gpu_clocks_read(c, r, &msg), 0);
	gpu_clocks_close(c);
}

static void test_rocm_smi(void **state)
{
	struct gpu_clocks_reading r;
	struct gpu_info in = amd_device();
	struct gpu_clocks *c = NULL;
	struct qual_msg msg = {{0}};

	(void)state;
	unsetenv("FAKE_RSMI_THROTTLE");
	unsetenv("FAKE_RSMI_REVISION");
	rsmi_read_once(&r);
	assert_true(r.sm_mhz == 1700 && r.mem_mhz == 1600);
	assert_true(fabs(r.power_w - 301.5) < 1e-9 && fabs(r.temp_c - 67.25) < 1e-9);
	assert_true(r.reasons_known && r.reasons == 0 && !gpu_clocks_throttled(r.reasons));
	setenv("FAKE_RSMI_THROTTLE", "0x10000", 1);
	rsmi_read_once(&r);
	assert_true(r.reasons_known && r.raw == 0x10000);
	assert_true(r.reasons == GPU_CLOCKS_VENDOR_THROTTLE && gpu_clocks_throttled(r.reasons));
	assert_string_equal(gpu_clocks_reason_name(9), "vendor_throttle_status");
	/* A metrics table of another layout: clocks and reasons unknown. */
	setenv("FAKE_RSMI_REVISION", "4", 1);
	rsmi_read_once(&r);
	assert_false(r.reasons_known);
	assert_true(isnan(r.sm_mhz) && isnan(r.mem_mhz));
	assert_true(fabs(r.power_w - 301.5) < 1e-9);
	/* A device ROCm SMI does not have. */
	snprintf(in.pci_bus_id, sizeof in.pci_bus_id, "0000:C2:00.0");
	assert_int_equal(gpu_clocks_open(&in, &c, &msg), QUAL_ENODEV);
	assert_non_null(strstr(msg.text, "no device at pci bus id '0000:C2:00.0'"));
	setenv("QUAL_ROCM_SMI_LIBRARY", "/nonexistent/librocm_smi64.so.1", 1);
	assert_int_equal(gpu_clocks_open(&in, &c, &msg), QUAL_ENODEV);
	assert_non_null(strstr(msg.text, "cannot load '/nonexistent/librocm_smi64.so.1'"));
}

QUAL_TESTS(
	cmocka_unit_test_setup(test_reading, setup),
	cmocka_unit_test_setup(test_throttled_reading, setup),
	cmocka_unit_test_setup(test_not_throttling, setup),
	cmocka_unit_test_setup(test_not_found, setup),
	cmocka_unit_test_setup(test_rocm_smi, setup),
)
