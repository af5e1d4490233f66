extern "C" __global__ void __launch_bounds__(1024) spill(const float *x, float *y, int n, int j)
{
	float acc[160];
	float loc[32];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	for (int k = 0; k < 160; k++)
		acc[k] = x[(i + k * 97) % n];
	for (int k = 0; k < 32; k++)
		loc[k] = x[(i * 3 + k) % n];
	float s = loc[j & 31];
	for (int r = 0; r < 4; r++)
		for (int k = 0; k < 160; k++)
			s += acc[k] * acc[(k * 7 + r) % 160];
	for (int k = 0; k < 160; k++)
		y[(i + k * 31) % n] = acc[k] + s;
}
