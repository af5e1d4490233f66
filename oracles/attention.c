#include "oracles/attention.h"

#include <math.h>
#include <stddef.h>

/* For the fixture's inputs (f16 multiples of 2^-5 below 4 in magnitude, 128
 * channels) every product and partial sum is a multiple of 2^-10 below 2^12,
 * so the dot product is exact in double; in general it is within a few ulps. */
static double dot(const double *a, const double *b, int n)
{
	double s = 0.0;

	for (int i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}

void oracle_attention_compute(const double *q, const double *k,
			      const double *v, int tokens, int heads, int dim,
			      double scale, double *out, double *max_abs_logit)
{
	double max_logit = 0.0;

	for (int t = 0; t < tokens; t++) {
		for (int h = 0; h < heads; h++) {
			const double *qr = q + ((size_t)t * heads + h) * dim;
			double *o = out + ((size_t)t * heads + h) * dim;
			double m = -INFINITY, sum = 0.0;

			for (int j = 0; j < tokens; j++) {
				double x = scale * dot(qr, k + (size_t)j * dim, dim);
				if (x > m)
					m = x;
				if (fabs(x) > max_logit)
					max_logit = fabs(x);
			}
			for (int c = 0; c < dim; c++)
				o[c] = 0.0;
			/* Weights relative to the row maximum: exp() <= 1, no
			 * overflow, and the normalisation cancels the shift. */
			for (int j = 0; j < tokens; j++) {
				double x = scale * dot(qr, k + (size_t)j * dim, dim);
				double p = exp(x - m);
				const double *vr = v + (size_t)j * dim;

				sum += p;
				for (int c = 0; c < dim; c++)
					o[c] += p * vr[c];
			}
			for (int c = 0; c < dim; c++)
				o[c] /= sum;
		}
	}
	if (max_abs_logit)
		*max_abs_logit = max_logit;
}
