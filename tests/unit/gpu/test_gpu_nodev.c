/* The GPU backends on a machine without a GPU (the development machines and
 * CI): both backends are compiled against their vendor headers, and each one
 * reports "no device" as QUAL_ENODEV with a message, without crashing and
 * without another error. Where a device is present (the GPU machine) the
 * no-device assertions are skipped; the checks that hold everywhere still run.
 *
 * The HIP half loads Debian's real ROCm 5.2 runtime where it is installed,
 * which is the point: it must say "no device" here rather than abort. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tests/unit/test_main.h"

#include "gpu/gpu.h"

/* Both backends compiled with their headers: a build that silently lost
 * cuda.h or the HIP headers would otherwise pass every no-device test. */
static void test_backends_built(void **state)
{
	(void)state;
	assert_true(gpu_backend_built("cuda"));
	assert_true(gpu_backend_built("hip"));
	assert_false(gpu_backend_built("opencl"));
	assert_false(gpu_backend_built(""));
	assert_false(gpu_backend_built(NULL));
}

/* Opens one backend; on no device checks the result and the message. */
static void check_backend_nodev(const char *backend)
{
	struct qual_msg msg = { { 0 } };
	struct gpu *g = (struct gpu *)(uintptr_t)1; /* must be reset to NULL */
	int rc = gpu_open_backend(backend, 0, &g, &msg);

	if (rc == 0) {
		/* A device is present: nothing to check here. */
		assert_non_null(g);
		gpu_close(g);
		qual_test_skip("%s: a device is present", backend);
	}
	print_message("%s: %s\n", backend, msg.text);
	assert_int_equal(rc, QUAL_ENODEV);
	assert_null(g);
	assert_non_null(strstr(msg.text, backend));
	/* User-facing style: lower case first word, no trailing period. */
	assert_true(msg.text[0] >= 'a' && msg.text[0] <= 'z');
	assert_true(msg.text[strlen(msg.text) - 1] != '.');

	/* A second try reports the same (the runtime is loaded once). */
	struct qual_msg again = { { 0 } };
	assert_int_equal(gpu_open_backend(backend, 0, &g, &again), QUAL_ENODEV);
	assert_string_equal(again.text, msg.text);
}

static void test_cuda_nodev(void **state)
{
	(void)state;
	check_backend_nodev("cuda");
}

static void test_hip_nodev(void **state)
{
	(void)state;
	check_backend_nodev("hip");
}

/* gpu_open tries both and names both in its message. */
static void test_open_nodev(void **state)
{
	struct qual_msg msg = { { 0 } };
	struct gpu *g = NULL;
	int rc = gpu_open(0, &g, &msg);

	(void)state;
	if (rc == 0) {
		gpu_close(g);
		qual_test_skip("a device is present");
	}
	print_message("any: %s\n", msg.text);
	assert_int_equal(rc, QUAL_ENODEV);
	assert_null(g);
	assert_non_null(strstr(msg.text, "cuda: "));
	assert_non_null(strstr(msg.text, "; hip: "));
}

/* An ordinal past any machine's devices is "no device" on every machine,
 * with or without a GPU, and for each backend. */
static void test_ordinal_out_of_range(void **state)
{
	struct qual_msg msg = { { 0 } };
	struct gpu *g = NULL;

	(void)state;
	assert_int_equal(gpu_open_backend("cuda", 4096, &g, &msg), QUAL_ENODEV);
	assert_null(g);
	assert_int_equal(gpu_open_backend("hip", 4096, &g, &msg), QUAL_ENODEV);
	assert_null(g);
	assert_int_equal(gpu_open(4096, &g, &msg), QUAL_ENODEV);
	assert_null(g);
}

static void test_bad_arguments(void **state)
{
	struct qual_msg msg = { { 0 } };
	struct gpu *g = NULL;

	(void)state;
	assert_int_equal(gpu_open_backend("opencl", 0, &g, &msg), QUAL_EINVAL);
	assert_string_equal(msg.text,
			    "unknown gpu backend 'opencl': expected 'cuda' or 'hip'");
	assert_int_equal(gpu_open_backend(NULL, 0, &g, &msg), QUAL_EINVAL);
	assert_int_equal(gpu_open_backend("cuda", -1, &g, &msg), QUAL_EINVAL);
	assert_int_equal(gpu_open(-1, &g, &msg), QUAL_EINVAL);
	assert_int_equal(gpu_open(0, NULL, &msg), QUAL_EINVAL);
	assert_null(g);
	/* msg may be NULL. */
	assert_int_equal(gpu_open_backend("opencl", 0, &g, NULL), QUAL_EINVAL);
}

/* Freeing nothing is allowed everywhere, as free(NULL) is. */
static void test_null_safe(void **state)
{
	struct qual_msg msg = { { 0 } };
	double d = 0, h = 0;

	(void)state;
	gpu_close(NULL);
	gpu_module_free(NULL);
	gpu_graph_free(NULL);
	assert_null(gpu_get_info(NULL));
	assert_int_equal(gpu_free(NULL, 0), 0);
	assert_int_equal(gpu_graph_run(NULL, &msg), QUAL_EINVAL);
	assert_int_equal(gpu_graph_time(NULL, &d, &h, &msg), QUAL_EINVAL);
}

QUAL_TESTS(
	cmocka_unit_test(test_backends_built),
	cmocka_unit_test(test_cuda_nodev),
	cmocka_unit_test(test_hip_nodev),
	cmocka_unit_test(test_open_nodev),
	cmocka_unit_test(test_ordinal_out_of_range),
	cmocka_unit_test(test_bad_arguments),
	cmocka_unit_test(test_null_safe),
)
