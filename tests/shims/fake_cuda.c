/* A stand-in for the CUDA driver (libcuda.so.1) for tests on machines
 * without one: gpu/gpu_cuda.c dlopens it by that name, so a folder holding
 * this library first in LD_LIBRARY_PATH takes the driver's place. What cuInit
 * does is set by FAKE_CUDA_INIT: "hang" never returns in a process whose
 * program is qual-run (a driver stuck in its start: the device probe's
 * deadline, tests/tools/probe_test.py; nvrtc, in the compile children,
 * starts the driver too, and is left alone); anything else returns
 * CUDA_ERROR_NO_DEVICE. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
enum { CUDA_SUCCESS = 0, CUDA_ERROR_NO_DEVICE = 100 };

CUresult cuInit(unsigned flags);
CUresult cuDriverGetVersion(int *version);
CUresult cuGetErrorName(CUresult r, const char **name);
CUresult cuGetErrorString(CUresult r, const char **text);
CUresult cuGetProcAddress_v2(const char *symbol, void **p, int version, unsigned long long flags,
			     int *status);

CUresult cuInit(unsigned flags)
{
	const char *what = getenv("FAKE_CUDA_INIT");

	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	const char *base;

	(void)flags;
	exe[n > 0 ? n : 0] = '\0';
	base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	if (what && strcmp(what, "hang") == 0 && strcmp(base, "qual-run") == 0)
		for (;;)
			pause();
	return CUDA_ERROR_NO_DEVICE;
}

CUresult cuDriverGetVersion(int *version)
{
	*version = 13000;
	return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult r, const char **name)
{
	*name = r == CUDA_ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
	return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult r, const char **text)
{
	*text = r == CUDA_ERROR_NO_DEVICE ? "no CUDA-capable device is detected (fake)" :
					    "unknown error (fake)";
	return CUDA_SUCCESS;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **p, int version, unsigned long long flags,
			     int *status)
{
	(void)symbol;
	(void)version;
	(void)flags;
	*p = NULL;
	if (status)
		*status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
	return CUDA_SUCCESS;
}
