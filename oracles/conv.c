#include "oracles/conv.h"

#include <stddef.h>

void oracle_conv3x3_compute(const double *x, const double *w,
			    const struct oracle_conv_epilogue *epi, int height,
			    int width, int cin, int cout, double *out)
{
	for (int py = 0; py < height; py++) {
		for (int px = 0; px < width; px++) {
			double *o = out + ((size_t)py * width + px) * cout;

			for (int n = 0; n < cout; n++) {
				double y = 0.0;

				/* Taps outside the image are the zero padding:
				 * skipped, which adds nothing. */
				for (int ky = 0; ky < 3; ky++) {
					int iy = py + ky - 1;
					if (iy < 0 || iy >= height)
						continue;
					for (int kx = 0; kx < 3; kx++) {
						int ix = px + kx - 1;
						if (ix < 0 || ix >= width)
							continue;
						const double *xr = x + ((size_t)iy * width + ix) * cin;
						const double *wr = w + (((size_t)n * 3 + ky) * 3 + kx) * cin;
						for (int c = 0; c < cin; c++)
							y += xr[c] * wr[c];
					}
				}
				y = (y + epi->bias[n]) * epi->bn_scale[n] + epi->bn_shift[n];
				o[n] = y > 0.0 ? y : y * epi->prelu_slope[n];
			}
		}
	}
}
