/* Shim compiler libraries for tests: each exports the nvrtc ABI and forwards
 * to the real libnvrtc (loaded with dlopen(RTLD_LOCAL) from SHIM_REAL_NVRTC,
 * or $QUAL_SHIM_REAL_NVRTC), changing one thing on the way, so that tests can
 * prove qual's verdicts and error paths against a compiler that misbehaves in
 * a known way. They never stand in for the real compiler.
 *
 * shim_forward.c holds the forwarding; each shim_<kind>.c defines shim_ops,
 * the one thing it changes. */
#ifndef QUAL_SHIM_H
#define QUAL_SHIM_H

#include <stddef.h>

/* nvrtcResult values used here (nvrtc.h). */
#define SHIM_NVRTC_SUCCESS 0
#define SHIM_NVRTC_ERROR_COMPILATION 6
#define SHIM_NVRTC_ERROR_INTERNAL_ERROR 11

typedef void *shim_program;

struct shim_ops {
	/* Returns a new malloc'd source to compile instead of src, or NULL to
	 * keep src. */
	char *(*rewrite_source)(const char *src);
	/* Options appended after the caller's; NULL-terminated, may be NULL. */
	const char *const *extra_options;
	/* Replace the real calls when set. */
	int (*compile)(shim_program prog, int nopts, const char *const *opts);
	int (*log_size)(shim_program prog, size_t *size);
	int (*log)(shim_program prog, char *log);
};

/* Defined by each shim. */
extern const struct shim_ops shim_ops;

/* The exported nvrtc ABI (the subset qual and common callers use). */
const char *nvrtcGetErrorString(int result);
int nvrtcVersion(int *major, int *minor);
int nvrtcCreateProgram(shim_program *prog, const char *src, const char *name,
		       int nheaders, const char *const *headers,
		       const char *const *include_names);
int nvrtcDestroyProgram(shim_program *prog);
int nvrtcCompileProgram(shim_program prog, int nopts, const char *const *opts);
int nvrtcGetCUBINSize(shim_program prog, size_t *size);
int nvrtcGetCUBIN(shim_program prog, char *cubin);
int nvrtcGetPTXSize(shim_program prog, size_t *size);
int nvrtcGetPTX(shim_program prog, char *ptx);
int nvrtcGetProgramLogSize(shim_program prog, size_t *size);
int nvrtcGetProgramLog(shim_program prog, char *log);

#endif
