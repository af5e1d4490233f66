/* Float64 host references for the GEMM fixtures. Plain loops over exactly the
 * values the GPU sees, sharing no code with the kernels; the output roundings
 * (f16, bf16) come from half.h. Row-major throughout; w is [n][k] (a linear
 * layer's weight), so both operands are read along k. */
#ifndef QUAL_ORACLE_GEMM_H
#define QUAL_ORACLE_GEMM_H

#include <stdint.h>

/* expected[i][j] = f16_rne(sum_k a[i][k] * w[j][k] + bias[j]) as a double,
 * for i < m, j < n. a ([m][k]), w ([n][k]) and bias ([n]) hold the values
 * the GPU reads (decoded f16, f32 bias), widened exactly to double. The sum
 * is accumulated in double in k order, bias first; it is exact when the
 * inputs are small dyadic numbers, as the fixture's are, so the only
 * rounding is the final one to f16 (ties to even, overflow to Inf). */
void oracle_gemm_f16(int m, int n, int k, const double *a, const double *w,
		     const double *bias, double *expected);

/* expected[i][j] = f16_rne(bf16_rne(acc * col_scale[j] * row_scale[i])) as a
 * double, acc = sum_k a[i][k] * w[j][k] accumulated exactly in 64-bit
 * integers. The scaling is done in double: exact when the scales are powers
 * of two and |acc| <= 2^53, as the fixture's are, which makes it equal to the
 * kernel's f32 arithmetic. */
void oracle_gemm_i8(int m, int n, int k, const int8_t *a, const int8_t *w,
		    const float *col_scale, const float *row_scale,
		    double *expected);

#endif
