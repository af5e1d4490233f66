/* The GEMM oracles against naive references written differently (integer
 * accumulation, GCC's _Float16 rounding), the GEMM fixtures' inputs and
 * expected values, fixture_check's reports, the case table and
 * fixture_source. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include "tests/unit/test_main.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures/cases.h"
#include "common/err.h"
#include "fixtures/fixture.h"
#include "oracles/gemm.h"
#include "oracles/half.h"

/* xorshift64*: unrelated to the fixtures' generator. */
static uint64_t test_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static int test_int(uint64_t *s, int lo, int hi)
{
	return lo + (int)(test_next(s) % (uint64_t)(hi - lo + 1));
}

/* GCC's rounding of a double to f16, as a double. */
static double ref_f16(double x)
{
	return (double)(_Float16)x;
}

/* bf16 rounding of a float by its bits (nearest even); x finite. */
static float ref_bf16(float x)
{
	uint32_t u;

	memcpy(&u, &x, sizeof u);
	u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
	memcpy(&x, &u, sizeof x);
	return x;
}

/* oracle_gemm_f16 on integer-times-power-of-two inputs against the exact
 * integer sum rounded by _Float16. shift scales the integers: 2^-5 gives the
 * fixture's range; 2^3 makes sums overflow f16 to Inf. */
static void check_f16_oracle(int m, int n, int k, int shift, uint64_t seed)
{
	size_t na = (size_t)m * k, nw = (size_t)n * k;
	int *ia = malloc(na * sizeof *ia), *iw = malloc(nw * sizeof *iw);
	int *ib = malloc((size_t)n * sizeof *ib);
	double *a = malloc(na * sizeof *a), *w = malloc(nw * sizeof *w);
	double *b = malloc((size_t)n * sizeof *b);
	double *got = malloc((size_t)m * n * sizeof *got);
	int rounded = 0;

	assert_non_null(ia && iw && ib && a && w && b && got);
	for (size_t i = 0; i < na; i++) {
		ia[i] = test_int(&seed, -32, 32);
		a[i] = ldexp(ia[i], shift);
	}
	for (size_t i = 0; i < nw; i++) {
		iw[i] = test_int(&seed, -32, 32);
		w[i] = ldexp(iw[i], shift);
	}
	for (int j = 0; j < n; j++) {
		ib[j] = test_int(&seed, -4096, 4096);
		b[j] = ldexp(ib[j], 2 * shift); /* on the products' grid */
	}
	oracle_gemm_f16(m, n, k, a, w, b, got);
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			/* Integer accumulation, k from the top down. */
			long long s = ib[j];
			for (int p = k - 1; p >= 0; p--)
				s += (long long)ia[(size_t)i * k + p] * iw[(size_t)j * k + p];
			double exact = ldexp((double)s, 2 * shift);
			double want = ref_f16(exact);
			double g = got[(size_t)i * n + j];
			assert_true(g == want); /* Inf included */
			rounded += want != exact;
		}
	/* The test means something only if rounding happened. */
	assert_true(rounded > 0);
	free(ia), free(iw), free(ib), free(a), free(w), free(b), free(got);
}

static void test_oracle_f16(void **state)
{
	(void)state;
	check_f16_oracle(16, 8, 32, -5, 1);
	check_f16_oracle(64, 64, 64, -5, 2);
	check_f16_oracle(16, 8, 32, 3, 3); /* overflow to +/-Inf */
}

/* oracle_gemm_i8 against int32 accumulation (k outer loop), the float path
 * of the kernel (exact for power-of-two scales), bf16 by bits and _Float16. */
static void check_i8_oracle(int m, int n, int k, int smin, int smax, uint64_t seed)
{
	int8_t *a = malloc((size_t)m * k), *w = malloc((size_t)n * k);
	float *cs = malloc((size_t)n * sizeof *cs), *rs = malloc((size_t)m * sizeof *rs);
	int32_t *acc = calloc((size_t)m * n, sizeof *acc);
	double *got = malloc((size_t)m * n * sizeof *got);
	int ties = 0;

	assert_non_null(a && w && cs && rs && acc && got);
	for (size_t i = 0; i < (size_t)m * k; i++)
		a[i] = (int8_t)test_int(&seed, -128, 127);
	for (size_t i = 0; i < (size_t)n * k; i++)
		w[i] = (int8_t)test_int(&seed, -128, 127);
	for (int j = 0; j < n; j++)
		cs[j] = ldexpf(1, -test_int(&seed, smin, smax));
	for (int i = 0; i < m; i++)
		rs[i] = ldexpf(1, -test_int(&seed, smin, smax));
	oracle_gemm_i8(m, n, k, a, w, cs, rs, got);
	for (int p = 0; p < k; p++)
		for (int i = 0; i < m; i++)
			for (int j = 0; j < n; j++)
				acc[(size_t)i * n + j] += a[(size_t)i * k + p] * w[(size_t)j * k + p];
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			int32_t v = acc[(size_t)i * n + j];
			float x = (float)v * cs[j] * rs[i];
			double want = (double)(_Float16)ref_bf16(x);
			assert_true(got[(size_t)i * n + j] == want);
			/* A bf16 tie: exactly 0x8000 below the kept bits. */
			uint32_t u;
			memcpy(&u, &x, sizeof u);
			ties += (u & 0xffffu) == 0x8000u;
		}
	if (m * n >= 4096) /* about 16 ties expected; fewer elements may have none */
		assert_true(ties > 0);
	free(a), free(w), free(cs), free(rs), free(acc), free(got);
}

static void test_oracle_i8(void **state)
{
	(void)state;
	check_i8_oracle(16, 8, 32, 5, 9, 4);
	check_i8_oracle(64, 64, 64, 5, 9, 5);
	/* Large shifts: results in f16's subnormal range, double rounding. */
	check_i8_oracle(64, 64, 64, 14, 16, 6);
}

/* True when buffer x of n elements of size sz repeats with period p. */
static bool periodic(const unsigned char *x, size_t n, size_t sz, size_t p)
{
	return memcmp(x, x + p * sz, (n - p) * sz) == 0;
}

/* Inputs of case c: no short period, flat or by rows. */
static void check_not_periodic(const struct fixture_buffer *b, size_t sz, size_t row)
{
	size_t n = b->bytes / sz;

	for (size_t p = 1; p <= 64; p++)
		assert_false(periodic(b->host, n, sz, p));
	for (size_t r = 1; r <= 8; r++)
		assert_false(periodic(b->host, n, sz, r * row));
}

static void check_expected_values(const struct fixture_case *c)
{
	size_t nonzero = 0;

	for (size_t i = 0; i < c->count; i++) {
		double e = c->expected[i];
		assert_true(isfinite(e));
		assert_true(half_to_double(half_from_double(e)) == e);
		nonzero += e != 0;
	}
	assert_true(nonzero > c->count * 9 / 10);
}

static void build_case(const char *name, struct fixture_case *c)
{
	int index = fixture_find(name);

	assert_true(index >= 0);
	assert_int_equal(fixture_build(index, 0, c), 0);
	assert_string_equal(c->name, name);
}

static void test_build_f16(void **state)
{
	static const int shapes[][3] = {{256, 512, 256}, {256, 1024, 1024}};

	(void)state;
	for (int s = 0; s < 2; s++) {
		int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
		char name[64];
		struct fixture_case c;
		int rounded = 0;

		snprintf(name, sizeof name, "gemm_f16-%dx%dx%d", m, n, k);
		build_case(name, &c);
		assert_string_equal(c.kernel, "gemm_f16");
		assert_int_equal(c.nbuffers, 4);
		assert_int_equal(c.buffers[0].bytes, (size_t)m * k * 2);
		assert_int_equal(c.buffers[1].bytes, (size_t)n * k * 2);
		assert_int_equal(c.buffers[2].bytes, (size_t)n * 4);
		assert_int_equal(c.buffers[3].bytes, (size_t)m * n * 2);
		assert_true(c.buffers[3].output && !c.buffers[0].output);
		assert_int_equal(c.output, 3);
		assert_int_equal(c.nscalars, 3);
		assert_int_equal(c.scalars[0], m);
		assert_int_equal(c.scalars[1], n);
		assert_int_equal(c.scalars[2], k);
		assert_int_equal(c.grid[0] * 64, n);
		assert_int_equal(c.grid[1] * 64, m);
		assert_int_equal(c.block[0], 128);
		assert_int_equal(c.count, (size_t)m * n);
		assert_int_equal(c.row_length, (size_t)n);
		assert_true(c.tolerance == 0 && c.tolerance_why != NULL);
		assert_true(c.flops == 2.0 * m * n * k);
		check_not_periodic(&c.buffers[0], 2, k);
		check_not_periodic(&c.buffers[1], 2, k);
		check_not_periodic(&c.buffers[2], 4, 1);
		check_expected_values(&c);

		/* The premises of the exactness argument in fixtures/gemm.c: a, w
		 * on the 2^-5 grid within [-1, 1], bias on the 2^-10 grid within
		 * [-4, 4], so every partial sum is below 2^14 on the 2^-10 grid. */
		for (int b = 0; b < 2; b++) {
			const uint16_t *x = c.buffers[b].host;
			for (size_t i = 0; i < c.buffers[b].bytes / 2; i++) {
				double v = half_to_double(x[i]);
				assert_true(fabs(v) <= 1 && ldexp(v, 5) == rint(ldexp(v, 5)));
			}
		}
		for (int j = 0; j < n; j++) {
			double v = ((const float *)c.buffers[2].host)[j];
			assert_true(fabs(v) <= 4 && ldexp(v, 10) == rint(ldexp(v, 10)));
		}
		assert_true(k + 4 < 1 << 14);

		/* Row 3 recomputed exactly: integers on the 2^-10 grid. */
		const uint16_t *a = c.buffers[0].host, *w = c.buffers[1].host;
		const float *bias = c.buffers[2].host;
		for (int j = 0; j < n; j++) {
			long long s2 = (long long)ldexp(bias[j], 10);
			for (int p = 0; p < k; p++)
				s2 += (long long)ldexp(half_to_double(a[3 * k + p]), 5) *
				      (long long)ldexp(half_to_double(w[(size_t)j * k + p]), 5);
			double exact = ldexp((double)s2, -10);
			assert_true(c.expected[3 * n + j] == ref_f16(exact));
			rounded += ref_f16(exact) != exact;
		}
		assert_true(rounded > n / 8); /* the output rounding is exercised */
		fixture_release(&c);
	}
}

static void test_build_i8(void **state)
{
	static const int shapes[][3] = {{256, 512, 256}, {256, 1024, 1024}};

	(void)state;
	for (int s = 0; s < 2; s++) {
		int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
		char name[64];
		struct fixture_case c;
		int rounded = 0;

		snprintf(name, sizeof name, "gemm_i8-%dx%dx%d", m, n, k);
		build_case(name, &c);
		assert_string_equal(c.kernel, "gemm_i8");
		assert_int_equal(c.nbuffers, 5);
		assert_int_equal(c.buffers[0].bytes, (size_t)m * k);
		assert_int_equal(c.buffers[1].bytes, (size_t)n * k);
		assert_int_equal(c.buffers[2].bytes, (size_t)n * 4);
		assert_int_equal(c.buffers[3].bytes, (size_t)m * 4);
		assert_int_equal(c.buffers[4].bytes, (size_t)m * n * 2);
		assert_int_equal(c.output, 4);
		assert_true(c.buffers[4].output);
		assert_int_equal(c.grid[0] * 64, n);
		assert_int_equal(c.grid[1] * 64, m);
		assert_int_equal(c.scalars[2], k);
		assert_int_equal(c.row_length, (size_t)n);
		check_not_periodic(&c.buffers[0], 1, k);
		check_not_periodic(&c.buffers[1], 1, k);
		check_expected_values(&c);

		/* The premises of exactness: |acc| <= k * 2^14 <= 2^24, and the
		 * scales powers of two with 2^-17 <= col * row <= 2^-9. */
		assert_true(k <= 1024);
		for (int b = 2; b < 4; b++) {
			const float *x = c.buffers[b].host;
			for (size_t i = 0; i < c.buffers[b].bytes / 4; i++) {
				int e;
				assert_true(frexpf(x[i], &e) == 0.5f);
				assert_true(b == 2 ? (e - 1 >= -9 && e - 1 <= -5)
						   : (e - 1 >= -8 && e - 1 <= -4));
			}
		}

		/* Row 5 recomputed: the kernel's f32 path, bf16 by bits. */
		const int8_t *a = c.buffers[0].host, *w = c.buffers[1].host;
		const float *cs = c.buffers[2].host, *rs = c.buffers[3].host;
		for (int j = 0; j < n; j++) {
			int32_t acc = 0;
			for (int p = 0; p < k; p++)
				acc += a[5 * k + p] * w[(size_t)j * k + p];
			float x = (float)acc * cs[j] * rs[5];
			assert_true((double)x == (double)acc * cs[j] * rs[5]);
			assert_true(c.expected[5 * n + j] == (double)(_Float16)ref_bf16(x));
			rounded += ref_bf16(x) != x;
		}
		assert_true(rounded > n / 2); /* bf16 rounding is exercised */
		fixture_release(&c);
	}
}

/* Seed 0 is the documented default; another seed gives other inputs. */
static void test_seeds(void **state)
{
	struct fixture_case c0, cd, c7;
	int index = fixture_find("gemm_i8-256x512x256");

	(void)state;
	assert_int_equal(fixture_build(index, 0, &c0), 0);
	assert_int_equal(fixture_build(index, FIXTURE_DEFAULT_SEED, &cd), 0);
	assert_int_equal(fixture_build(index, 7, &c7), 0);
	assert_memory_equal(c0.buffers[0].host, cd.buffers[0].host, c0.buffers[0].bytes);
	assert_memory_not_equal(c0.buffers[0].host, c7.buffers[0].host, c0.buffers[0].bytes);
	assert_memory_not_equal(c0.buffers[0].host, c0.buffers[1].host, c0.buffers[0].bytes);
	fixture_release(&c0);
	fixture_release(&cd);
	fixture_release(&c7);
}

/* The output as the GPU would write it when correct. */
static uint16_t *perfect_output(const struct fixture_case *c)
{
	uint16_t *o = malloc(c->count * sizeof *o);

	assert_non_null(o);
	for (size_t i = 0; i < c->count; i++)
		o[i] = half_from_double(c->expected[i]);
	return o;
}

static void test_check_reports(void **state)
{
	struct fixture_case c;
	struct qual_msg msg;
	double max_err = -1;
	uint16_t *o;

	(void)state;
	build_case("gemm_f16-256x512x256", &c);
	o = perfect_output(&c);
	assert_int_equal(fixture_check(&c, o, &max_err, &msg), 0);
	assert_true(max_err == 0);

	/* One element off by one ulp: element 1234 is row 2, col 210. */
	double want = c.expected[1234];
	o[1234] ^= 1;
	double got = half_to_double(o[1234]);
	char text[200];
	snprintf(text, sizeof text,
		 "element 1234 (row 2, col 210): got %.17g, expected %.17g, error %.17g "
		 "> tolerance 0 (1 of 131072 elements bad)",
		 got, want, fabs(got - want));
	assert_int_equal(fixture_check(&c, o, &max_err, &msg), QUAL_ECHECK);
	assert_string_equal(msg.text, text);
	assert_true(max_err == fabs(got - want) && max_err > 0);
	o[1234] ^= 1;

	/* A NaN: max_err is NaN and the message names it. */
	o[70000] = 0x7e00;
	assert_int_equal(fixture_check(&c, o, &max_err, &msg), QUAL_ECHECK);
	assert_true(isnan(max_err));
	assert_non_null(strstr(msg.text, "element 70000 (row 136, col 368): got nan"));
	assert_non_null(strstr(msg.text, "0x7e00"));

	/* An infinity and a later wrong element: the first is reported. */
	o[5] = 0x7c00;
	assert_int_equal(fixture_check(&c, o, &max_err, &msg), QUAL_ECHECK);
	assert_non_null(strstr(msg.text, "element 5 (row 0, col 5): got inf"));
	assert_non_null(strstr(msg.text, "(2 of 131072 elements bad)"));

	/* The engine's poison (0xff bytes) where nothing was written. */
	memset(o, 0xff, c.count * sizeof *o);
	assert_int_equal(fixture_check(&c, o, &max_err, &msg), QUAL_ECHECK);
	assert_non_null(strstr(msg.text, "element 0 (row 0, col 0): got "));
	assert_non_null(strstr(msg.text, "0xffff"));

	/* A case with a tolerance and no row length. */
	o[0] = half_from_double(c.expected[0]);
	c.tolerance = 1e9;
	c.row_length = 0;
	c.count = 1;
	assert_int_equal(fixture_check(&c, o, &max_err, &msg), 0);
	o[0] = half_from_double(c.expected[0] + 1024);
	c.tolerance = 0.5;
	assert_int_equal(fixture_check(&c, o, &max_err, &msg), QUAL_ECHECK);
	assert_true(strncmp(msg.text, "element 0: got ", 15) == 0);
	assert_non_null(strstr(msg.text, "> tolerance 0.5"));
	c.count = (size_t)256 * 512;

	free(o);
	fixture_release(&c);
}

static void test_table(void **state)
{
	static const char *names[] = {
		"attention_f16-128", "attention_f16-512", "gemm_f16-256x512x256",
		"gemm_f16-256x1024x1024", "gemm_i8-256x512x256", "gemm_i8-256x1024x1024",
		"conv3x3_f16-56x56x64x64", "conv3x3_f16-14x14x256x256",
		"conv3x3_f16-7x7x512x512",
	};

	(void)state;
	assert_int_equal(fixture_count(), 9);
	for (int i = 0; i < 9; i++) {
		assert_string_equal(fixture_name(i), names[i]);
		assert_int_equal(fixture_find(names[i]), i);
	}
	assert_null(fixture_name(9));
	assert_null(fixture_name(-1));
	assert_int_equal(fixture_find("gemm_f16"), -1);

	struct fixture_case c;
	assert_int_equal(fixture_build(9, 0, &c), QUAL_EINVAL);
	/* Shapes the kernels cannot take are refused. */
	memset(&c, 0, sizeof c);
	assert_int_equal(fixture_gemm_f16_build(100, 512, 256, 1, &c), QUAL_EINVAL);
	fixture_release(&c);
	assert_int_equal(fixture_gemm_i8_build(256, 512, 2048, 1, &c), QUAL_EINVAL);
	fixture_release(&c);
	assert_int_equal(fixture_gemm_f16_build(256, 512, 48, 1, &c), QUAL_EINVAL);
	fixture_release(&c);
}

static void test_source(void **state)
{
	struct fixture_case c;

	(void)state;
	build_case("gemm_i8-256x512x256", &c);
	for (int p = 0; p < 2; p++) {
		const char *prelude = p ? fixture_prelude_hip : fixture_prelude_cuda;
		char *s = fixture_source(&c, p ? FIXTURE_HIP : FIXTURE_CUDA);
		size_t np = strlen(prelude);

		assert_non_null(s);
		assert_memory_equal(s, prelude, np);
		assert_int_equal(s[np], '\n');
		assert_string_equal(s + np + 1, fixture_src_gemm_i8);
		assert_non_null(strstr(s, "QUAL_KERNEL void __launch_bounds__"));
		free(s);
	}
	fixture_release(&c);
}

QUAL_TESTS(
	cmocka_unit_test(test_oracle_f16),
	cmocka_unit_test(test_oracle_i8),
	cmocka_unit_test(test_build_f16),
	cmocka_unit_test(test_build_i8),
	cmocka_unit_test(test_seeds),
	cmocka_unit_test(test_check_reports),
	cmocka_unit_test(test_table),
	cmocka_unit_test(test_source),
)
