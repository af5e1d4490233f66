/* Float64 reference for the 3x3 convolution with its fused epilogue. Plain
 * loops over exactly the values the GPU reads (the caller passes the f16 and
 * f32 inputs converted to double, which is exact); shares no code with the
 * kernel. */
#ifndef QUAL_ORACLE_CONV_H
#define QUAL_ORACLE_CONV_H

/* Per-output-channel epilogue parameters, each [cout]. */
struct oracle_conv_epilogue {
	const double *bias;
	const double *bn_scale;
	const double *bn_shift;
	const double *prelu_slope;
};

/* 3x3 convolution, stride 1, zero padding 1, batch 1:
 *   y = sum_{ky,kx,c} x[py+ky-1][px+kx-1][c] * w[n][ky][kx][c]  (0 outside)
 *   y = (y + bias[n]) * bn_scale[n] + bn_shift[n]
 *   out[py][px][n] = y > 0 ? y : y * prelu_slope[n]
 * x NHWC [height][width][cin], w [cout][3][3][cin], out [height][width][cout]
 * (caller's storage), in float64 without any rounding to f16: the caller
 * rounds. Requires all sizes >= 1. */
void oracle_conv3x3_compute(const double *x, const double *w,
			    const struct oracle_conv_epilogue *epi, int height,
			    int width, int cin, int cout, double *out);

#endif
