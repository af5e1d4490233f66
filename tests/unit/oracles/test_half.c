/* oracles/half.c against independent references: GCC's _Float16 conversions
 * (libgcc's soft-float rounding, one rounding from double) for f16, and a
 * nearest-neighbour search written here for bf16. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include "tests/unit/test_main.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "oracles/half.h"

/* GCC's conversion of a double to f16 bits. */
static uint16_t ref_f16_bits(double x)
{
	_Float16 h = (_Float16)x;
	uint16_t b;

	memcpy(&b, &h, sizeof b);
	return b;
}

/* GCC's value of f16 bits. */
static double ref_f16_value(uint16_t b)
{
	_Float16 h;

	memcpy(&h, &b, sizeof h);
	return (double)h;
}

static bool f16_is_nan(uint16_t h)
{
	return (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0;
}

/* Compares half_from_double with the reference at x; on a mismatch prints x
 * and fails. */
static void expect_f16_at(double x)
{
	uint16_t got = half_from_double(x), want = ref_f16_bits(x);

	if (got != want) {
		print_error("half_from_double(%a = %.17g) = 0x%04x, _Float16 gives 0x%04x\n",
			    x, x, got, want);
		fail();
	}
}

/* Every f16 bit pattern decodes to GCC's value and encodes back to itself;
 * every NaN pattern decodes to NaN and encodes as the quiet NaN 0x7e00. */
static void test_roundtrip_all_patterns(void **state)
{
	(void)state;
	for (uint32_t i = 0; i < 65536; i++) {
		uint16_t h = (uint16_t)i;
		double v = half_to_double(h);

		if (f16_is_nan(h)) {
			assert_true(isnan(v));
			assert_int_equal(half_from_double(v), 0x7e00);
			continue;
		}
		assert_true(v == ref_f16_value(h));
		assert_int_equal(signbit(v) != 0, (h & 0x8000) != 0);
		assert_int_equal(half_from_double(v), h);
	}
}

/* Every f16 value, every midpoint between neighbours (ties), the doubles just
 * below and above each midpoint, and the same for negatives. The neighbour
 * above 65504 (0x7bff) is 2^16, so that midpoint, 65520, is the overflow
 * boundary; the midpoints below 2^-14 cover the subnormal range, down to
 * 2^-25 (half the smallest subnormal). */
static void test_from_double_ties_all(void **state)
{
	(void)state;
	for (uint32_t i = 0; i <= 0x7bff; i++) {
		double v = half_to_double((uint16_t)i);
		double up = i == 0x7bff ? 65536.0 : half_to_double((uint16_t)(i + 1));
		double mid = (v + up) / 2; /* exact: neighbours differ by a power of 2 */
		double pts[] = {v, mid, nextafter(mid, 0), nextafter(mid, INFINITY),
				nextafter(v, INFINITY), v == 0 ? 0x1p-40 : nextafter(v, 0)};

		assert_true(mid > v && mid < up);
		for (size_t j = 0; j < sizeof pts / sizeof pts[0]; j++) {
			expect_f16_at(pts[j]);
			expect_f16_at(-pts[j]);
		}
	}
}

/* Named boundary points, in case the exhaustive loop's arithmetic hides one. */
static void test_from_double_boundaries(void **state)
{
	static const double pts[] = {
		0.0, 65504.0, 65519.0, 65519.999999, 65520.0, 65520.000001, 65536.0,
		1e6, DBL_MAX, 0x1p-14, 0x1.ffcp-15, 0x1p-24, 0x1p-25,
		0x1.0000000000001p-25, 0x1.fffffffffffffp-26, 0x1.8p-24, 0x1p-26,
		DBL_MIN, 4.9406564584124654e-324, 1.0 / 3.0, 0.1, 2049.0, 2051.0,
		4097.0,
	};

	(void)state;
	for (size_t j = 0; j < sizeof pts / sizeof pts[0]; j++) {
		expect_f16_at(pts[j]);
		expect_f16_at(-pts[j]);
	}
	assert_int_equal(half_from_double(INFINITY), 0x7c00);
	assert_int_equal(half_from_double(-INFINITY), 0xfc00);
	assert_int_equal(half_from_double(65520.0), 0x7c00);
	assert_int_equal(half_from_double(nextafter(65520.0, 0)), 0x7bff);
	assert_int_equal(half_from_double(0x1p-25), 0x0000);
	assert_int_equal(half_from_double(nextafter(0x1p-25, 1)), 0x0001);
	assert_int_equal(half_from_double(-0.0), 0x8000);
	assert_int_equal(half_from_double(NAN), 0x7e00);
	assert_true(isinf(half_to_double(0x7c00)) && half_to_double(0xfc00) < 0);
}

/* xorshift64*: a generator written here, unrelated to the fixtures' rng. */
static uint64_t test_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* Random doubles with random exponents across and beyond the f16 range. */
static void test_from_double_random(void **state)
{
	uint64_t s = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (int i = 0; i < 2000000; i++) {
		uint64_t r = test_next(&s);
		double m = (double)(r >> 11) * 0x1p-53; /* [0, 1) */
		int e = (int)(test_next(&s) % 50) - 30; /* 2^-30 .. 2^19 */
		double x = ldexp(1 + m, e);

		expect_f16_at((r & 1) ? -x : x);
	}
}

/* bf16 reference for a double: the two bf16 neighbours of |x| found by
 * truncation, then the nearer, ties to the even pattern. Returns the value. */
static double ref_bf16_round(double x)
{
	double a = fabs(x), lo, hi, dlo, dhi, r;
	float t;
	uint32_t bits;

	if (isnan(x) || isinf(x))
		return x;
	if (a >= 0x1p128)
		return copysign(INFINITY, x);
	t = (float)a;
	if ((double)t > a)
		t = nextafterf(t, 0); /* now the largest float <= |x| */
	memcpy(&bits, &t, sizeof bits);
	bits &= 0xffff0000u; /* the largest bf16 <= |x| */
	memcpy(&t, &bits, sizeof t);
	lo = t;
	if (bits == 0x7f7f0000u) {
		hi = 0x1p128; /* one bf16 step above the largest finite */
	} else {
		uint32_t hb = bits + 0x10000u;
		float ht;
		memcpy(&ht, &hb, sizeof ht);
		hi = ht;
	}
	dlo = a - lo; /* exact: both within 2^-8 relative of each other */
	dhi = hi - a;
	if (dlo < dhi || (dlo == dhi && ((bits >> 16) & 1) == 0))
		r = lo;
	else
		r = hi;
	if (r >= 0x1p128)
		return copysign(INFINITY, x);
	return copysign(r, x);
}

static void expect_bf16_at(double x)
{
	double got = bf16_round(x), want = ref_bf16_round(x);

	if (!(got == want && signbit(got) == signbit(want))) {
		print_error("bf16_round(%a) = %a, reference %a\n", x, got, want);
		fail();
	}
	if (x == (double)(float)x) {
		float f = (float)x;
		double via_bits = bf16_to_float(bf16_from_float(f));
		if (!(via_bits == want)) {
			print_error("bf16_from_float(%a) = %a, reference %a\n", x, via_bits,
				    want);
			fail();
		}
	}
}

/* Floats with random significands and exponents over the whole range
 * (subnormals included), exact ties (low 16 bits 0x8000) and their
 * neighbours, and doubles off the float grid near ties, where rounding
 * through float first would round twice. */
static void test_bf16_sample(void **state)
{
	uint64_t s = 0x1234567887654321ull;

	(void)state;
	for (int i = 0; i < 1000000; i++) {
		uint64_t r = test_next(&s);
		uint32_t bits = (uint32_t)r & 0x7f7fffffu; /* finite */
		float f;
		double x;

		switch ((r >> 32) % 4) {
		case 0:
			break;
		case 1:
			bits = (bits & 0xffff0000u) | 0x8000u; /* exact tie */
			break;
		case 2:
			bits = (bits & 0xffff0000u) | (((r >> 40) & 1) ? 0x8001u : 0x7fffu);
			break;
		case 3:
			bits &= 0x007fffffu; /* subnormal float */
			break;
		}
		memcpy(&f, &bits, sizeof f);
		x = (r >> 63) ? -(double)f : (double)f;
		expect_bf16_at(x);
		/* Just off the tie or the float grid by a tiny double amount. */
		expect_bf16_at(x + x * 0x1p-40);
		expect_bf16_at(x - x * 0x1p-40);
	}
	expect_bf16_at(0x1.fefffep127);  /* rounds down to the largest finite */
	expect_bf16_at(0x1.ff0000p127);  /* tie: rounds up, overflows to Inf */
	expect_bf16_at(FLT_MAX);
	expect_bf16_at(0x1p-133);        /* smallest bf16 subnormal */
	expect_bf16_at(0x1p-134);        /* tie between 0 and it: 0 */
	expect_bf16_at(0x1.0000000001p-134);
	/* 2.5 quanta above zero plus a little: 3 quanta; through float first
	 * the little is lost and the tie goes to 2 quanta. */
	expect_bf16_at(0x1.4p-132 + 0x1p-170);
	expect_bf16_at(-0x1.4p-132 - 0x1p-170);
	assert_true(bf16_round(0x1.ff0000p127) == INFINITY);
	assert_true(bf16_round(0x1.0000000001p-134) == 0x1p-133);
	assert_true(bf16_round(1.0 + 0x1p-8) == 1.0);             /* tie, even */
	assert_true(bf16_round(1.0 + 3 * 0x1p-8) == 1.0 + 0x1p-6); /* tie, up */
	assert_true(isnan(bf16_round(NAN)) && isnan(bf16_to_float(bf16_from_float(NAN))));
}

QUAL_TESTS(
	cmocka_unit_test(test_roundtrip_all_patterns),
	cmocka_unit_test(test_from_double_ties_all),
	cmocka_unit_test(test_from_double_boundaries),
	cmocka_unit_test(test_from_double_random),
	cmocka_unit_test(test_bf16_sample),
)
