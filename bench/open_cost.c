/* What a session's GPU context costs, and whether opening or closing one in
 * another process disturbs timed work (bench/open_cost.sh runs it on the
 * GPU machine). Standalone: libcuda.so.1 through dlopen, like gpu/gpu_cuda.c.
 *
 *   open_cost open N     N children, one after the other, each timing its
 *                        steps: dlopen, cuInit, primary context, stream and
 *                        events, a first allocation and copy, the release,
 *                        and (seen from the parent) fork and exit
 *   open_cost perturb N  one process times N device memsets (events) while
 *                        quiet, then N while another process opens and
 *                        closes contexts one after another; prints both
 *   open_cost reopen N   in one process, the primary context released and
 *                        retained again N times (what qual-run
 *                        --case-contexts does before each case): each
 *                        release and retain, with stream and events
 *   open_cost create N   in one process, N contexts of its own made with
 *                        cuCtxCreate beside the primary one, all alive at
 *                        once: each one's time and the device memory free
 *                        after it (cuMemGetInfo), then each one's destroy
 *   open_cost copy N     copies to and from the device of the sizes of the
 *                        cases' inputs, from pageable and from page-locked
 *                        host memory, N times each (the wall time of each
 *                        synchronous copy)
 *
 * Output: one JSON object per line. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *lib;
#define SYM(name, ver) static __typeof__(name) *p_##name;
#define SYMS(X) X(cuInit, ) X(cuDeviceGet, ) X(cuDevicePrimaryCtxRetain, ) \
	X(cuDevicePrimaryCtxRelease, ) X(cuCtxSetCurrent, ) X(cuStreamCreate, ) \
	X(cuEventCreate, ) X(cuMemAlloc, ) X(cuMemFree, ) X(cuMemsetD32Async, ) \
	X(cuEventRecord, ) X(cuEventSynchronize, ) X(cuEventElapsedTime, ) \
	X(cuStreamSynchronize, ) X(cuMemcpyHtoD, ) X(cuMemcpyDtoH, ) X(cuMemAllocHost, ) \
	X(cuMemFreeHost, ) X(cuCtxDestroy, ) X(cuMemGetInfo, ) \
	X(cuStreamDestroy, ) X(cuEventDestroy, )
SYMS(SYM)
/* cuCtxCreate_v2, whatever cuCtxCreate names in the header built against. */
static CUresult (*p_cuCtxCreate)(CUcontext *, unsigned int, CUdevice);

static int load(void)
{
	if (!(lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)))
		return -1;
	p_cuInit = dlsym(lib, "cuInit");
	p_cuDeviceGet = dlsym(lib, "cuDeviceGet");
	p_cuDevicePrimaryCtxRetain = dlsym(lib, "cuDevicePrimaryCtxRetain");
	p_cuDevicePrimaryCtxRelease = dlsym(lib, "cuDevicePrimaryCtxRelease_v2");
	p_cuCtxSetCurrent = dlsym(lib, "cuCtxSetCurrent");
	p_cuStreamCreate = dlsym(lib, "cuStreamCreate");
	p_cuEventCreate = dlsym(lib, "cuEventCreate");
	p_cuMemAlloc = dlsym(lib, "cuMemAlloc_v2");
	p_cuMemFree = dlsym(lib, "cuMemFree_v2");
	p_cuMemsetD32Async = dlsym(lib, "cuMemsetD32Async");
	p_cuEventRecord = dlsym(lib, "cuEventRecord");
	p_cuEventSynchronize = dlsym(lib, "cuEventSynchronize");
	p_cuEventElapsedTime = dlsym(lib, "cuEventElapsedTime");
	p_cuStreamSynchronize = dlsym(lib, "cuStreamSynchronize");
	p_cuMemcpyHtoD = dlsym(lib, "cuMemcpyHtoD_v2");
	p_cuMemcpyDtoH = dlsym(lib, "cuMemcpyDtoH_v2");
	p_cuMemAllocHost = dlsym(lib, "cuMemAllocHost_v2");
	p_cuMemFreeHost = dlsym(lib, "cuMemFreeHost");
	p_cuCtxCreate = (CUresult (*)(CUcontext *, unsigned int, CUdevice))dlsym(lib, "cuCtxCreate_v2");
	p_cuCtxDestroy = dlsym(lib, "cuCtxDestroy_v2");
	p_cuMemGetInfo = dlsym(lib, "cuMemGetInfo_v2");
	p_cuStreamDestroy = dlsym(lib, "cuStreamDestroy_v2");
	p_cuEventDestroy = dlsym(lib, "cuEventDestroy_v2");
	return p_cuInit && p_cuMemAlloc && p_cuDevicePrimaryCtxRelease ? 0 : -1;
}

struct ctx {
	CUdevice dev;
	CUcontext ctx;
	CUstream s;
	CUevent a, b;
	CUdeviceptr buf;
};

/* Opens like gpu/gpu_cuda.c's cuda_open; the steps' times into t[]. */
static int open_ctx(struct ctx *c, size_t bytes, double t[5])
{
	double t0 = now();
	if (!lib && load() < 0)
		return -1;
	t[0] = now() - t0, t0 = now();
	if (p_cuInit(0) || p_cuDeviceGet(&c->dev, 0))
		return -1;
	t[1] = now() - t0, t0 = now();
	if (p_cuDevicePrimaryCtxRetain(&c->ctx, c->dev) || p_cuCtxSetCurrent(c->ctx))
		return -1;
	t[2] = now() - t0, t0 = now();
	if (p_cuStreamCreate(&c->s, CU_STREAM_NON_BLOCKING) || p_cuEventCreate(&c->a, 0) ||
	    p_cuEventCreate(&c->b, 0))
		return -1;
	t[3] = now() - t0, t0 = now();
	if (p_cuMemAlloc(&c->buf, bytes) || p_cuMemsetD32Async(c->buf, 0, bytes / 4, c->s) ||
	    p_cuStreamSynchronize(c->s))
		return -1;
	t[4] = now() - t0;
	return 0;
}

static int open_mode(int n, int preload)
{
	if (preload && load() < 0)
		return 1;
	for (int i = 0; i < n; i++) {
		int fd[2];
		double t[8] = {0}, t0 = now(), got;
		pid_t pid;
		int st;

		if (pipe(fd) < 0)
			return 1;
		if ((pid = fork()) == 0) {
			struct ctx c;
			double tt[8] = {0}, r0;
			tt[5] = now() - t0;                  /* fork to child running */
			if (open_ctx(&c, 64 << 20, tt) < 0)
				_exit(2);
			r0 = now();
			(void)p_cuMemFree(c.buf);
			(void)p_cuCtxSetCurrent(NULL);
			(void)p_cuDevicePrimaryCtxRelease(c.dev);
			tt[6] = now() - r0;                  /* release */
			tt[7] = now();                       /* about to exit */
			(void)!write(fd[1], tt, sizeof tt);
			_exit(0);
		}
		close(fd[1]);
		if (read(fd[0], t, sizeof t) != sizeof t)
			return 1;
		close(fd[0]);
		waitpid(pid, &st, 0);
		got = now();
		printf("{\"mode\":\"open\",\"preload\":%d,\"i\":%d,\"dlopen_s\":%.4f,\"init_s\":%.4f,"
		       "\"ctx_s\":%.4f,\"stream_s\":%.4f,\"alloc_s\":%.4f,\"fork_s\":%.4f,"
		       "\"release_s\":%.4f,\"exit_s\":%.4f,\"total_s\":%.4f}\n",
		       preload, i, t[0], t[1], t[2], t[3], t[4], t[5], t[6], got - t[7], got - t0);
		fflush(stdout);
	}
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void summary(const char *phase, double *v, int n)
{
	double s = 0;
	qsort(v, (size_t)n, sizeof *v, cmp);
	for (int i = 0; i < n; i++)
		s += v[i];
	printf("{\"mode\":\"perturb\",\"phase\":\"%s\",\"n\":%d,\"mean_us\":%.3f,\"p50_us\":%.3f,"
	       "\"p90_us\":%.3f,\"p99_us\":%.3f,\"max_us\":%.3f,\"min_us\":%.3f}\n",
	       phase, n, s / n, v[n / 2], v[n * 9 / 10], v[n * 99 / 100], v[n - 1], v[0]);
	fflush(stdout);
}

/* A process that opens and closes contexts until killed. */
static void churn(void)
{
	for (;;) {
		pid_t pid = fork();
		if (pid == 0) {
			struct ctx c;
			double t[8];
			if (open_ctx(&c, 64 << 20, t) < 0)
				_exit(2);
			(void)p_cuMemFree(c.buf);
			(void)p_cuDevicePrimaryCtxRelease(c.dev);
			_exit(0);
		}
		waitpid(pid, NULL, 0);
	}
}

static int perturb_mode(int n)
{
	size_t bytes = 256u << 20;
	double *quiet = calloc((size_t)n, sizeof *quiet), *busy = calloc((size_t)n, sizeof *busy);
	struct ctx c;

	if (!quiet || !busy)
		return 1;
	double t[8];
	int go[2];
	char b;
	pid_t churner;

	/* The churner is forked before this process starts CUDA (which does
	 * not survive fork) and waits for a byte. */
	if (pipe(go) < 0)
		return 1;
	if ((churner = fork()) == 0) {
		setpgid(0, 0);  /* killed with the child it has open */
		close(go[1]);
		if (read(go[0], &b, 1) != 1)
			_exit(0);
		churn();
	}
	close(go[0]);
	if (open_ctx(&c, bytes, t) < 0)
		return 1;
	for (int phase = 0; phase < 2; phase++) {
		double *v = phase ? busy : quiet;
		if (phase)
			(void)!write(go[1], "g", 1);
		for (int i = 0; i < n; i++) {
			float ms = 0;
			p_cuEventRecord(c.a, c.s);
			p_cuMemsetD32Async(c.buf, (unsigned)i, bytes / 4, c.s);
			p_cuEventRecord(c.b, c.s);
			p_cuEventSynchronize(c.b);
			p_cuEventElapsedTime(&ms, c.a, c.b);
			v[i] = ms * 1e3;
		}
		summary(phase ? "while_another_opens_and_closes" : "quiet", v, n);
	}
	kill(-churner, SIGKILL);
	waitpid(churner, NULL, 0);
	return 0;
}

static int copy_mode(int n)
{
	static const size_t sizes[] = { 131072, 786432, 2625536, 6874144 };
	struct ctx c;
	double t[8];

	if (open_ctx(&c, 8u << 20, t) < 0)
		return 1;
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		size_t b = sizes[k];
		for (int pinned = 0; pinned < 2; pinned++) {
			void *h = NULL;
			double up = 0, down = 0, t0 = now(), alloc_s;
			if (pinned ? p_cuMemAllocHost(&h, b) != 0 : !(h = malloc(b)))
				return 1;
			alloc_s = now() - t0;
			memset(h, 1, b);
			for (int i = 0; i < n; i++) {
				t0 = now();
				p_cuMemcpyHtoD(c.buf, h, b);
				up += now() - t0;
				t0 = now();
				p_cuMemcpyDtoH(h, c.buf, b);
				down += now() - t0;
			}
			printf("{\"mode\":\"copy\",\"bytes\":%zu,\"pinned\":%d,\"alloc_ms\":%.3f,"
			       "\"up_ms\":%.4f,\"down_ms\":%.4f,\"up_gbs\":%.2f,\"down_gbs\":%.2f}\n",
			       b, pinned, alloc_s * 1e3, up / n * 1e3, down / n * 1e3,
			       b * n / up / 1e9, b * n / down / 1e9);
			if (pinned)
				p_cuMemFreeHost(h);
			else
				free(h);
		}
	}
	return 0;
}

/* What qual-run --case-contexts does between cases: the primary context
 * (with its stream and events) released, then retained again. */
static int reopen_mode(int n)
{
	struct ctx c;
	double t[8];

	if (open_ctx(&c, 64 << 20, t) < 0)
		return 1;
	(void)p_cuMemFree(c.buf);
	for (int i = 0; i < n; i++) {
		double t0 = now(), release_s, retain_s, stream_s;

		(void)p_cuEventDestroy(c.a);
		(void)p_cuEventDestroy(c.b);
		(void)p_cuStreamDestroy(c.s);
		(void)p_cuCtxSetCurrent(NULL);
		if (p_cuDevicePrimaryCtxRelease(c.dev))
			return 1;
		release_s = now() - t0, t0 = now();
		if (p_cuDevicePrimaryCtxRetain(&c.ctx, c.dev) || p_cuCtxSetCurrent(c.ctx))
			return 1;
		retain_s = now() - t0, t0 = now();
		if (p_cuStreamCreate(&c.s, CU_STREAM_NON_BLOCKING) || p_cuEventCreate(&c.a, 0) ||
		    p_cuEventCreate(&c.b, 0) || p_cuMemAlloc(&c.buf, 64 << 20) ||
		    p_cuMemsetD32Async(c.buf, 0, (64 << 20) / 4, c.s) || p_cuStreamSynchronize(c.s))
			return 1;
		stream_s = now() - t0;
		(void)p_cuMemFree(c.buf);
		printf("{\"mode\":\"reopen\",\"i\":%d,\"release_s\":%.4f,\"retain_s\":%.4f,"
		       "\"stream_alloc_s\":%.4f}\n", i, release_s, retain_s, stream_s);
		fflush(stdout);
	}
	return 0;
}

/* n contexts of this process's own alive at once beside the primary one. */
static int create_mode(int n)
{
	struct ctx c;
	double t[8];
	CUcontext *own = calloc((size_t)n, sizeof *own);
	size_t free0 = 0, total = 0;

	if (!own || open_ctx(&c, 64 << 20, t) < 0 || !p_cuCtxCreate)
		return 1;
	(void)p_cuMemGetInfo(&free0, &total);
	for (int i = 0; i < n; i++) {
		double t0 = now();
		size_t fr = 0;

		CUresult r = p_cuCtxCreate(&own[i], 0, c.dev);

		if (r) {
			printf("{\"mode\":\"create\",\"i\":%d,\"error\":%d}\n", i, (int)r);
			return 1;
		}
		t0 = now() - t0;
		(void)p_cuMemGetInfo(&fr, &total);
		printf("{\"mode\":\"create\",\"i\":%d,\"create_s\":%.4f,\"free_mib\":%zu,"
		       "\"used_since_first_mib\":%lld}\n", i, t0, fr >> 20,
		       ((long long)free0 - (long long)fr) / (1 << 20));
		fflush(stdout);
	}
	for (int i = n - 1; i >= 0; i--) {
		double t0 = now();

		(void)p_cuCtxDestroy(own[i]);
		printf("{\"mode\":\"destroy\",\"i\":%d,\"destroy_s\":%.4f}\n", i, now() - t0);
	}
	(void)p_cuCtxSetCurrent(c.ctx);
	free(own);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 8;

	if (argc > 1 && !strcmp(argv[1], "open"))
		return open_mode(n, 0) || open_mode(n, 1);
	if (argc > 1 && !strcmp(argv[1], "perturb"))
		return perturb_mode(n);
	if (argc > 1 && !strcmp(argv[1], "copy"))
		return copy_mode(n);
	if (argc > 1 && !strcmp(argv[1], "reopen"))
		return reopen_mode(n);
	if (argc > 1 && !strcmp(argv[1], "create"))
		return create_mode(n);
	fprintf(stderr, "usage: open_cost open|perturb|copy|reopen|create [N]\n");
	return 2;
}
