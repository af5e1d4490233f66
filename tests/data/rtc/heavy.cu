extern "C" __global__ void heavy(const float *x, float *y, int n)
{
	__shared__ float tile[256];
	float acc[64];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	tile[threadIdx.x] = x[i];
	__syncthreads();
	for (int k = 0; k < 64; k++)
		acc[k] = tile[(threadIdx.x + k) & 255] * (float)k;
	float s = 0.f;
	for (int r = 0; r < 8; r++)
		for (int k = 0; k < 64; k++)
			s += acc[k] * acc[(k * 7 + r) & 63];
	if (i < n) y[i] = s;
}
__device__ float helper(float a) { return a * 2.0f; }
extern "C" __global__ void second(float *y) { y[threadIdx.x] = helper(y[threadIdx.x]); }
