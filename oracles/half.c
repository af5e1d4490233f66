#include "oracles/half.h"

#include <math.h>
#include <string.h>

/* Built from the bits rather than with ldexp: checks convert every element of
 * an output (a quarter of a million for the larger cases), several times a
 * session. Every f16 value is a double exactly, so both ways give the same
 * value (a NaN keeps its sign). */
double half_to_double(uint16_t h)
{
	uint64_t sign = (uint64_t)(h >> 15) << 63, bits;
	unsigned exponent = (h >> 10) & 31, mantissa = h & 1023;
	double v;

	if (exponent == 31) {
		v = mantissa ? NAN : INFINITY;
		return sign ? -v : v;
	}
	if (exponent == 0) {
		v = (double)mantissa * 0x1p-24; /* subnormal: mantissa * 2^-24, exact */
		return sign ? -v : v;
	}
	/* 2^(exponent - 15) * (1 + mantissa / 1024): rebias the exponent to
	 * double's 1023 and move the 10 mantissa bits to the top of its 52. */
	bits = sign | (uint64_t)(exponent - 15 + 1023) << 52 | (uint64_t)mantissa << 42;
	memcpy(&v, &bits, sizeof v);
	return v;
}

uint16_t half_from_double(double x)
{
	uint16_t sign;
	double a, q;
	int e;

	if (isnan(x))
		return 0x7e00;
	sign = signbit(x) ? 0x8000 : 0;
	a = fabs(x);
	/* 65520 lies halfway between 65504 (largest finite) and 65536; ties go to
	 * the even neighbour, which is 2^16, an overflow. */
	if (a >= 65520.0)
		return sign | 0x7c00;
	if (a < 0x1p-14) {
		/* Subnormal range: units of 2^-24. Scaling by a power of two is
		 * exact in double, and rint() rounds to nearest even. A result of
		 * 1024 is the smallest normal, whose encoding is also 1024. */
		q = rint(a * 0x1p24);
		return sign | (uint16_t)q;
	}
	frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
	e -= 1;       /* a in [2^e, 2^(e+1)), e in [-14, 15] */
	q = rint(ldexp(a, 10 - e)); /* in [1024, 2048]; 2048 carries below */
	return sign | (uint16_t)(((unsigned)(e + 15) << 10) + ((unsigned)q - 1024));
}

uint16_t bf16_from_float(float x)
{
	uint32_t bits;

	memcpy(&bits, &x, sizeof bits);
	if (isnan(x))
		return (uint16_t)((bits >> 16) | 0x0040);
	bits += 0x7fff + ((bits >> 16) & 1);
	return (uint16_t)(bits >> 16);
}

float bf16_to_float(uint16_t b)
{
	uint32_t bits = (uint32_t)b << 16;
	float x;

	memcpy(&x, &bits, sizeof x);
	return x;
}

double bf16_round(double x)
{
	/* bf16 keeps 8 significant bits and float's exponent range. Rounds
	 * once, directly from double (going through float first could round
	 * twice). */
	int e;
	double m, r;

	if (isnan(x) || isinf(x) || x == 0)
		return x;
	m = frexp(x, &e); /* x = m * 2^e, |m| in [0.5, 1) */
	if (e < -125) {
		/* Below 2^-126, bf16's subnormals: a fixed quantum of 2^-133.
		 * A result of 2^-126 is the smallest normal. */
		return ldexp(rint(ldexp(x, 133)), -133);
	}
	m = rint(ldexp(m, 8)); /* 8 significant bits, ties to even */
	r = ldexp(m, e - 8);
	/* Rounding up to 2^128 is past bf16's largest finite value (as for
	 * float): overflow to infinity. */
	if (fabs(r) >= 0x1p128)
		return copysign(INFINITY, x);
	return r;
}
