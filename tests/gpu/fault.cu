// A kernel that faults on purpose: it stores to the address it is given,
// which the smoke test makes an unmapped one. volatile so that the store is
// not removed.
extern "C" __global__ void fault(unsigned long long addr)
{
	*(volatile int *)(addr + 4 * threadIdx.x) = 1;
}
