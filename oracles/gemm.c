#include "oracles/gemm.h"

#include "oracles/half.h"

#include <stddef.h>

void oracle_gemm_f16(int m, int n, int k, const double *a, const double *w,
		     const double *bias, double *expected)
{
	for (int i = 0; i < m; i++) {
		const double *ar = a + (size_t)i * k;

		for (int j = 0; j < n; j++) {
			const double *wr = w + (size_t)j * k;
			double s = bias[j];

			for (int p = 0; p < k; p++)
				s += ar[p] * wr[p];
			expected[(size_t)i * n + j] = half_to_double(half_from_double(s));
		}
	}
}

void oracle_gemm_i8(int m, int n, int k, const int8_t *a, const int8_t *w,
		    const float *col_scale, const float *row_scale,
		    double *expected)
{
	for (int i = 0; i < m; i++) {
		const int8_t *ar = a + (size_t)i * k;

		for (int j = 0; j < n; j++) {
			const int8_t *wr = w + (size_t)j * k;
			int64_t acc = 0;
			double x;

			for (int p = 0; p < k; p++)
				acc += (int64_t)ar[p] * wr[p];
			x = (double)acc * (double)col_scale[j] * (double)row_scale[i];
			expected[(size_t)i * n + j] =
				half_to_double(half_from_double(bf16_round(x)));
		}
	}
}
