extern "C" __global__ void bad(float *y)
{
	y[threadIdx.x] = undefined_thing + 1;
	int x = "str";
}
