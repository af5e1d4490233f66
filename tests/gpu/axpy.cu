// The smoke test's kernel: y[i] += a * x[i], staged through dynamic shared
// memory so that a launch can ask for more than 48 KiB of it (the opt-in path
// in gpu_cuda.c). extern "C": the test finds it by this unmangled name.
extern "C" __global__ void axpy(float a, const float *x, float *y, unsigned n)
{
	extern __shared__ float stage[];
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		stage[threadIdx.x] = a * x[i];
		y[i] += stage[threadIdx.x];
	}
}
