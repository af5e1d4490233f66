/* The 3x3 convolution oracle and fixture: the oracle against an explicit
 * im2col and long-double matrix product, hand-worked cases for the padding,
 * the builder's geometry, split-K choice and inputs, and the exactness claim
 * (expected values are f16 values, and f32 arithmetic in any order reaches
 * them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/unit/test_main.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures/cases.h"
#include "oracles/conv.h"
#include "common/err.h"
#include "fixtures/fixture.h"
#include "oracles/half.h"

/* |a - b| <= tol, with both values in the message when not. */
#define assert_close(a, b, tol) assert_close_at((a), (b), (tol), __FILE__, __LINE__)
static void assert_close_at(double a, double b, double tol, const char *file, int line)
{
	if (!(fabs(a - b) <= tol)) {
		print_error("%.17g and %.17g differ by more than %.3g\n", a, b, tol);
		_fail(file, line);
	}
}

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 11;
}

static double uniform(uint64_t *s, double lo, double hi)
{
	return lo + (hi - lo) * (double)lcg(s) / 9007199254740992.0;
}

/* Naive reference, written differently: an explicit im2col matrix
 * [pixels][9 * cin] with zeros for the padding, a weight matrix read as
 * [cout][9 * cin], their product in long double, then the epilogue. */
static void naive_conv(const double *x, const double *w,
		       const struct oracle_conv_epilogue *e, int height, int width,
		       int cin, int cout, long double *out)
{
	int kdim = 9 * cin, npix = height * width;
	double *col = calloc((size_t)npix * kdim, sizeof *col);

	assert_non_null(col);
	for (int p = 0; p < npix; p++) {
		int py = p / width, px = p % width;
		for (int tap = 0; tap < 9; tap++) {
			int iy = py + tap / 3 - 1, ix = px + tap % 3 - 1;
			if (iy < 0 || iy >= height || ix < 0 || ix >= width)
				continue; /* stays zero */
			memcpy(col + (size_t)p * kdim + (size_t)tap * cin,
			       x + ((size_t)iy * width + ix) * cin, sizeof(double) * (size_t)cin);
		}
	}
	for (int p = 0; p < npix; p++) {
		for (int n = 0; n < cout; n++) {
			long double y = 0;
			for (int kk = 0; kk < kdim; kk++)
				y += (long double)col[(size_t)p * kdim + kk] * w[(size_t)n * kdim + kk];
			y = (y + e->bias[n]) * e->bn_scale[n] + e->bn_shift[n];
			if (!(y > 0))
				y *= e->prelu_slope[n];
			out[(size_t)p * cout + n] = y;
		}
	}
	free(col);
}

static void test_oracle_matches_naive(void **state)
{
	static const int shapes[][4] = { { 1, 1, 1, 1 }, { 4, 6, 3, 2 }, { 5, 5, 8, 5 },
					  { 3, 7, 2, 9 } };
	uint64_t s = 7;

	(void)state;
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		int h = shapes[i][0], wd = shapes[i][1], cin = shapes[i][2], cout = shapes[i][3];
		size_t xn = (size_t)h * wd * cin, wn = (size_t)cout * 9 * cin;
		size_t on = (size_t)h * wd * cout;
		double *x = malloc(xn * sizeof *x), *w = malloc(wn * sizeof *w);
		double *ep = malloc(4 * (size_t)cout * sizeof *ep);
		double *out = malloc(on * sizeof *out);
		long double *want = malloc(on * sizeof *want);
		struct oracle_conv_epilogue e;
		int negatives = 0, positives = 0;

		assert_true(x && w && ep && out && want);
		for (size_t j = 0; j < xn; j++)
			x[j] = uniform(&s, -1, 1);
		for (size_t j = 0; j < wn; j++)
			w[j] = uniform(&s, -1, 1);
		for (int n = 0; n < cout; n++) {
			ep[n] = uniform(&s, -0.5, 0.5);
			ep[cout + n] = uniform(&s, 0.5, 2);
			ep[2 * cout + n] = uniform(&s, -0.5, 0.5);
			ep[3 * cout + n] = uniform(&s, 0.05, 0.3);
		}
		e.bias = ep;
		e.bn_scale = ep + cout;
		e.bn_shift = ep + 2 * cout;
		e.prelu_slope = ep + 3 * cout;
		oracle_conv3x3_compute(x, w, &e, h, wd, cin, cout, out);
		naive_conv(x, w, &e, h, wd, cin, cout, want);
		for (size_t j = 0; j < on; j++) {
			assert_close(out[j], (double)want[j], 1e-12);
			if (out[j] < 0)
				negatives++;
			else
				positives++;
		}
		/* Both PReLU branches were exercised (the 1x1x1 case aside). */
		if (on > 1)
			assert_true(negatives > 0 && positives > 0);
		free(x);
		free(w);
		free(ep);
		free(out);
		free(want);
	}
}

/* By hand. A 1x1 image sees only the centre tap: y = x * w[1][1]. A 2x2
 * image of ones with all-ones weights: every pixel sees 4 pixels (itself and
 * its 3 neighbours; the other 5 taps are padding), y = 4 * cin. */
static void test_oracle_by_hand(void **state)
{
	double x1 = 0.5, w1[9] = { 9, 9, 9, 9, 3, 9, 9, 9, 9 };
	double bias = 1, scale = 2, shift = -10, slope = 0.25, out1;
	struct oracle_conv_epilogue e = { &bias, &scale, &shift, &slope };
	double x4[2 * 2 * 3], w4[9 * 3], out4[4];
	double one = 1, zero = 0;
	struct oracle_conv_epilogue id = { &zero, &one, &zero, &one };

	(void)state;
	/* (0.5 * 3 + 1) * 2 - 10 = -5, negative: * 0.25 = -1.25. */
	oracle_conv3x3_compute(&x1, w1, &e, 1, 1, 1, 1, &out1);
	assert_true(out1 == -1.25);
	for (int i = 0; i < 12; i++)
		x4[i] = 1;
	for (int i = 0; i < 27; i++)
		w4[i] = 1;
	oracle_conv3x3_compute(x4, w4, &id, 2, 2, 3, 1, out4);
	for (int i = 0; i < 4; i++)
		assert_true(out4[i] == 12);
	/* Positive branch: 1 * 3 = 3, (3 + 1) * 2 - 10 = -2 -> -0.5; with
	 * shift 0: 8, kept. */
	shift = 0;
	x1 = 1;
	oracle_conv3x3_compute(&x1, w1, &e, 1, 1, 1, 1, &out1);
	assert_true(out1 == 8);
}

/* True when bits has period p over its whole length. */
static bool periodic(const uint16_t *bits, size_t n, size_t p)
{
	for (size_t i = 0; i + p < n; i++)
		if (bits[i] != bits[i + p])
			return false;
	return true;
}

/* The kernel's arithmetic for one output, in f32: products summed in a
 * scrambled order (as split-K and the tensor cores may), then the epilogue
 * with fused multiply-adds. Must land exactly on the expected value. */
static double kernel_pixel(const struct fixture_case *c, int p, int n, unsigned order)
{
	int height = (int)c->scalars[0], width = (int)c->scalars[1];
	int cin = (int)c->scalars[2], cout = (int)c->scalars[3];
	const uint16_t *x = c->buffers[0].host, *w = c->buffers[1].host;
	const float *epi = c->buffers[2].host;
	int py = p / width, px = p % width, kdim = 9 * cin;
	float acc = 0, y;

	for (int i = 0; i < kdim; i++) {
		/* A permutation of 0..kdim-1: i * 37 + order mod kdim, as 37
		 * is prime and kdim = 9 * cin has only the factors 2 and 3. */
		int kk = (int)(((unsigned)i * 37u + order) % (unsigned)kdim);
		int tap = kk / cin, ch = kk % cin;
		int iy = py + tap / 3 - 1, ix = px + tap % 3 - 1;
		if (iy < 0 || iy >= height || ix < 0 || ix >= width)
			continue;
		acc += (float)half_to_double(x[((size_t)iy * width + ix) * cin + ch]) *
		       (float)half_to_double(w[(size_t)n * kdim + kk]);
	}
	y = fmaf(acc + epi[n], epi[cout + n], epi[2 * cout + n]);
	y = y > 0 ? y : y * epi[3 * cout + n];
	return half_to_double(half_from_double(y));
}

static void check_built(int height, int cin, int cout, int splits)
{
	struct fixture_case c, again;
	char name[64];
	int npix = height * height, mtiles = (npix + 63) / 64, ntiles = cout / 64;
	size_t xn = (size_t)npix * cin, wn = (size_t)cout * 9 * cin, on = (size_t)npix * cout;
	const float *epi;
	const uint32_t *counters;
	size_t negatives = 0, rounded = 0;

	memset(&c, 0, sizeof c);
	assert_int_equal(fixture_conv3x3_build(height, cin, cout, 99, &c), 0);
	snprintf(name, sizeof name, "conv3x3_f16-%dx%dx%dx%d", height, height, cin, cout);
	assert_string_equal(c.name, name);
	assert_string_equal(c.family, "conv3x3");
	assert_string_equal(c.kernel, "conv3x3_f16");
	assert_ptr_equal(c.source, fixture_src_conv3x3);
	assert_non_null(strstr(c.source, "conv3x3_f16("));
	assert_int_equal(c.grid[0], (unsigned)mtiles);
	assert_int_equal(c.grid[1], (unsigned)ntiles);
	assert_int_equal(c.grid[2], (unsigned)splits);
	assert_true(c.grid[0] * c.grid[1] * c.grid[2] <= 132);
	assert_int_equal((9 * cin / 32) % splits, 0);
	assert_int_equal(c.block[0], 128);
	assert_int_equal(c.block[1] * c.block[2], 1);
	assert_int_equal(c.nbuffers, 6);
	assert_int_equal(c.buffers[0].bytes, xn * 2);
	assert_int_equal(c.buffers[1].bytes, wn * 2);
	assert_int_equal(c.buffers[2].bytes, 4 * (size_t)cout * 4);
	assert_int_equal(c.buffers[3].bytes, on * 2);
	assert_int_equal(c.buffers[4].bytes,
			 splits > 1 ? (size_t)splits * mtiles * ntiles * 64 * 64 * 4 : 16);
	assert_int_equal(c.buffers[5].bytes, (size_t)mtiles * ntiles * 4);
	for (int i = 0; i < 6; i++)
		assert_int_equal(c.buffers[i].output, i == 3);
	counters = c.buffers[5].host;
	for (int i = 0; i < mtiles * ntiles; i++)
		assert_int_equal(counters[i], 0);
	assert_int_equal(c.output, 3);
	assert_int_equal(c.nscalars, 5);
	assert_int_equal(c.scalars[0], (uint32_t)height);
	assert_int_equal(c.scalars[1], (uint32_t)height);
	assert_int_equal(c.scalars[2], (uint32_t)cin);
	assert_int_equal(c.scalars[3], (uint32_t)cout);
	assert_int_equal(c.scalars[4], (uint32_t)splits);
	assert_int_equal(c.elem, FIXTURE_F16);
	assert_int_equal(c.count, on);
	assert_int_equal(c.row_length, (size_t)cout);
	assert_true(c.tolerance == 0);
	assert_non_null(c.tolerance_why);
	assert_close(c.flops, 2.0 * npix * cout * 9.0 * cin, 0);

	/* Inputs on the power-of-two grid, using the range, not periodic. */
	for (int b = 0; b < 2; b++) {
		const uint16_t *bits = c.buffers[b].host;
		size_t n = c.buffers[b].bytes / 2;
		double maxabs = 0;

		for (size_t i = 0; i < n; i++) {
			double v = half_to_double(bits[i]);
			assert_true(fabs(v) <= 0.5 && v * 32 == rint(v * 32));
			if (fabs(v) > maxabs)
				maxabs = fabs(v);
		}
		assert_true(maxabs == 0.5);
		for (size_t p = 1; p <= 4096 && p < n; p++)
			assert_false(periodic(bits, n, p));
	}
	epi = c.buffers[2].host;
	for (int n = 0; n < cout; n++) {
		double b = epi[n], sc = epi[cout + n], sh = epi[2 * cout + n];
		double sl = epi[3 * cout + n];
		assert_true(fabs(b) <= 2 && b * 64 == rint(b * 64));
		assert_true(sc == 0.5 || sc == 1 || sc == 2);
		assert_true(fabs(sh) <= 2 && sh * 64 == rint(sh * 64));
		assert_true(sl == 0.25 || sl == 0.125);
	}

	/* Expected: finite, exactly f16 values, both PReLU branches, and the
	 * f16 rounding is not trivial (some values need more than 11 bits
	 * before it: check via the oracle's exact value below). */
	for (size_t i = 0; i < on; i++) {
		double e = c.expected[i];
		assert_true(isfinite(e));
		assert_true(half_to_double(half_from_double(e)) == e);
		if (e < 0)
			negatives++;
	}
	assert_true(negatives > on / 10 && negatives < on * 9 / 10);

	/* f32 arithmetic in scrambled orders reaches the expected values
	 * exactly (sampled: the corners, edges and interior, all channels of a
	 * few pixels, a spread of others). */
	{
		int pix[] = { 0, height - 1, npix - height, npix - 1, height + 1,
			      npix / 2, npix - 2 };
		for (size_t i = 0; i < sizeof pix / sizeof pix[0]; i++)
			for (int n = 0; n < cout; n += (i < 4 ? 1 : 7))
				for (unsigned order = 0; order < 2; order++)
					assert_true(kernel_pixel(&c, pix[i], n, order * 1000u) ==
						    c.expected[(size_t)pix[i] * cout + n]);
	}
	/* The final f16 rounding is exercised: some exact results (the oracle's,
	 * before rounding) are not f16 values. */
	{
		double *xv = malloc(xn * sizeof *xv), *wv = malloc(wn * sizeof *wv);
		double *ev = malloc(4 * (size_t)cout * sizeof *ev);
		double *exact = malloc(on * sizeof *exact);
		struct oracle_conv_epilogue e;

		assert_true(xv && wv && ev && exact);
		for (size_t i = 0; i < xn; i++)
			xv[i] = half_to_double(((const uint16_t *)c.buffers[0].host)[i]);
		for (size_t i = 0; i < wn; i++)
			wv[i] = half_to_double(((const uint16_t *)c.buffers[1].host)[i]);
		e = fixture_conv3x3_epilogue(epi, cout, ev);
		oracle_conv3x3_compute(xv, wv, &e, height, height, cin, cout, exact);
		for (size_t i = 0; i < on; i++) {
			assert_true(fabs(exact[i] - c.expected[i]) <= fabs(exact[i]) * 0x1p-11);
			if (exact[i] != c.expected[i])
				rounded++;
		}
		print_message("%s: %zu of %zu results rounded to f16\n", c.name,
			      rounded, on);
		assert_true(rounded > on / 5);
		free(xv);
		free(wv);
		free(ev);
		free(exact);
	}

	memset(&again, 0, sizeof again);
	assert_int_equal(fixture_conv3x3_build(height, cin, cout, 99, &again), 0);
	assert_memory_equal(c.buffers[0].host, again.buffers[0].host, xn * 2);
	assert_memory_equal(c.expected, again.expected, on * sizeof(double));
	fixture_release(&again);
	memset(&again, 0, sizeof again);
	assert_int_equal(fixture_conv3x3_build(height, cin, cout, 100, &again), 0);
	assert_memory_not_equal(c.buffers[1].host, again.buffers[1].host, wn * 2);
	fixture_release(&again);
	fixture_release(&c);
}

static void test_build_56(void **state)
{
	(void)state;
	check_built(56, 64, 64, 2);
}

static void test_build_14(void **state)
{
	(void)state;
	check_built(14, 256, 256, 8);
}

static void test_build_7(void **state)
{
	(void)state;
	check_built(7, 512, 512, 16);
}

static void test_build_rejects(void **state)
{
	struct fixture_case c;

	(void)state;
	memset(&c, 0, sizeof c);
	assert_int_equal(fixture_conv3x3_build(0, 64, 64, 1, &c), QUAL_EINVAL);
	assert_int_equal(fixture_conv3x3_build(8, 48, 64, 1, &c), QUAL_EINVAL);
	assert_int_equal(fixture_conv3x3_build(8, 64, 32, 1, &c), QUAL_EINVAL);
	assert_int_equal(fixture_conv3x3_build(8, 64, 96, 1, &c), QUAL_EINVAL);
	/* K = 9 * 1024 is past the exactness bound. */
	assert_int_equal(fixture_conv3x3_build(8, 1024, 64, 1, &c), QUAL_EINVAL);
	/* 2^20 pixels x 4096 channels: past the kernel's 32-bit indexing. */
	assert_int_equal(fixture_conv3x3_build(1024, 64, 4096, 1, &c), QUAL_EINVAL);
	assert_null(c.expected);
}

static void test_table(void **state)
{
	static const char *const names[] = { "conv3x3_f16-56x56x64x64",
					     "conv3x3_f16-14x14x256x256",
					     "conv3x3_f16-7x7x512x512" };

	(void)state;
	for (int i = 0; i < 3; i++) {
		struct fixture_case c;
		int index = fixture_find(names[i]);

		assert_true(index >= 0);
		assert_int_equal(fixture_build(index, 0, &c), 0);
		assert_string_equal(c.name, names[i]);
		assert_string_equal(c.family, "conv3x3");
		fixture_release(&c);
	}
}

QUAL_TESTS(
	cmocka_unit_test(test_oracle_matches_naive),
	cmocka_unit_test(test_oracle_by_hand),
	cmocka_unit_test(test_build_56),
	cmocka_unit_test(test_build_14),
	cmocka_unit_test(test_build_7),
	cmocka_unit_test(test_build_rejects),
	cmocka_unit_test(test_table),
)
