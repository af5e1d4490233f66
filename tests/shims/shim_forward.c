/* The forwarding half of every shim: loads the real nvrtc on first use and
 * passes each call through, with the hooks of shim_ops applied. */
#include "shim.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SHIM_REAL_NVRTC
#define SHIM_REAL_NVRTC "/usr/local/cuda/lib64/libnvrtc.so.13"
#endif

static void *real_lib;

/* The real entry point called name, or NULL (reported on stderr, which the
 * qual-compile child keeps). */
static void *real(const char *name)
{
	void *fn;

	if (!real_lib) {
		const char *path = getenv("QUAL_SHIM_REAL_NVRTC");
		if (!path || !*path)
			path = SHIM_REAL_NVRTC;
		real_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!real_lib) {
			fprintf(stderr, "shim: cannot load '%s': %s\n", path, dlerror());
			return NULL;
		}
	}
	fn = dlsym(real_lib, name);
	if (!fn)
		fprintf(stderr, "shim: real nvrtc has no %s\n", name);
	return fn;
}

/* Calls the real function name with the argument list args, returning
 * SHIM_NVRTC_ERROR_INTERNAL_ERROR when it cannot be found. */
#define FORWARD(type, name, args)                                        \
	do {                                                             \
		type fn_ = (type)real(name);                             \
		return fn_ ? fn_ args : SHIM_NVRTC_ERROR_INTERNAL_ERROR; \
	} while (0)

typedef int (*prog_size_fn)(shim_program, size_t *);
typedef int (*prog_get_fn)(shim_program, char *);

const char *nvrtcGetErrorString(int result)
{
	typedef const char *(*fn_t)(int);
	fn_t fn = (fn_t)real("nvrtcGetErrorString");
	return fn ? fn(result) : "shim: real nvrtc missing";
}

int nvrtcVersion(int *major, int *minor)
{
	typedef int (*fn_t)(int *, int *);
	FORWARD(fn_t, "nvrtcVersion", (major, minor));
}

int nvrtcCreateProgram(shim_program *prog, const char *src, const char *name,
		       int nheaders, const char *const *headers,
		       const char *const *include_names)
{
	typedef int (*fn_t)(shim_program *, const char *, const char *, int,
			    const char *const *, const char *const *);
	fn_t fn = (fn_t)real("nvrtcCreateProgram");
	char *rewritten = NULL;
	int rc;

	if (!fn)
		return SHIM_NVRTC_ERROR_INTERNAL_ERROR;
	if (shim_ops.rewrite_source)
		rewritten = shim_ops.rewrite_source(src);
	rc = fn(prog, rewritten ? rewritten : src, name, nheaders, headers,
		include_names);
	free(rewritten); /* nvrtc copies the source */
	return rc;
}

int nvrtcDestroyProgram(shim_program *prog)
{
	typedef int (*fn_t)(shim_program *);
	FORWARD(fn_t, "nvrtcDestroyProgram", (prog));
}

int nvrtcCompileProgram(shim_program prog, int nopts, const char *const *opts)
{
	typedef int (*fn_t)(shim_program, int, const char *const *);
	const char **all;
	fn_t fn;
	int i, n = 0, extra = 0, rc;

	if (shim_ops.compile)
		return shim_ops.compile(prog, nopts, opts);
	fn = (fn_t)real("nvrtcCompileProgram");
	if (!fn)
		return SHIM_NVRTC_ERROR_INTERNAL_ERROR;
	while (shim_ops.extra_options && shim_ops.extra_options[extra])
		extra++;
	all = calloc((size_t)(nopts + extra + 1), sizeof *all);
	if (!all)
		return SHIM_NVRTC_ERROR_INTERNAL_ERROR;
	for (i = 0; i < nopts; i++)
		all[n++] = opts[i];
	for (i = 0; i < extra; i++)
		all[n++] = shim_ops.extra_options[i];
	rc = fn(prog, n, all);
	free(all);
	return rc;
}

int nvrtcGetCUBINSize(shim_program prog, size_t *size)
{
	FORWARD(prog_size_fn, "nvrtcGetCUBINSize", (prog, size));
}

int nvrtcGetCUBIN(shim_program prog, char *cubin)
{
	FORWARD(prog_get_fn, "nvrtcGetCUBIN", (prog, cubin));
}

int nvrtcGetPTXSize(shim_program prog, size_t *size)
{
	FORWARD(prog_size_fn, "nvrtcGetPTXSize", (prog, size));
}

int nvrtcGetPTX(shim_program prog, char *ptx)
{
	FORWARD(prog_get_fn, "nvrtcGetPTX", (prog, ptx));
}

int nvrtcGetProgramLogSize(shim_program prog, size_t *size)
{
	if (shim_ops.log_size)
		return shim_ops.log_size(prog, size);
	FORWARD(prog_size_fn, "nvrtcGetProgramLogSize", (prog, size));
}

int nvrtcGetProgramLog(shim_program prog, char *log)
{
	if (shim_ops.log)
		return shim_ops.log(prog, log);
	FORWARD(prog_get_fn, "nvrtcGetProgramLog", (prog, log));
}
