/* IEEE binary16 (f16) and bfloat16 (bf16) conversions on the host, written
 * from the formats' definitions and independent of the GPU preludes. All
 * rounding is to nearest, ties to even. */
#ifndef QUAL_HALF_H
#define QUAL_HALF_H

#include <stdint.h>

/* The value of f16 bit pattern h (NaN for every NaN pattern). Exact. */
double half_to_double(uint16_t h);

/* x rounded to the nearest f16, ties to even; overflow gives +/-Inf and
 * NaN gives the quiet NaN 0x7e00. Rounds once, directly from double. */
uint16_t half_from_double(double x);

/* bf16 bit pattern of x (float) rounded to nearest even; NaN stays NaN. */
uint16_t bf16_from_float(float x);
float bf16_to_float(uint16_t b);

/* x rounded to bf16 precision and returned as a double (exact). */
double bf16_round(double x);

#endif
