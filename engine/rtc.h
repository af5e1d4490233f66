/* Compiler libraries: a shared object exposing the nvrtc ABI (nvrtcCreateProgram,
 * nvrtcCompileProgram, nvrtcGetCUBIN, ...) or the hiprtc ABI
 * (hiprtcCreateProgram, hiprtcCompileProgram, hiprtcGetCode, ...).
 *
 * A library is never loaded into the calling process. Each identify or compile
 * runs the helper program qual-compile in a child process of its own process
 * group, with the library's own folder first on LD_LIBRARY_PATH (a candidate
 * ships sibling libraries with the same sonames as the baseline's), under a
 * time limit after which the whole group is killed, and with a cap on the log
 * it may return. The child writes its results into a private temporary folder
 * and _exit()s, so a crash in a runtime's teardown after the results are
 * written does not lose them. */
#ifndef QUAL_RTC_H
#define QUAL_RTC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"

enum rtc_abi {
	RTC_ABI_NONE = 0,
	RTC_ABI_NVRTC,
	RTC_ABI_HIPRTC,
};

struct rtc_limits {
	double timeout_s;   /* per child; default 120 */
	size_t log_cap;     /* bytes of compiler log kept; default 1 MiB */
};

/* Fills the defaults above. */
void rtc_limits_init(struct rtc_limits *l);

struct rtc_identity {
	enum rtc_abi abi;
	char abi_name[8];     /* "nvrtc" or "hiprtc" */
	char version[32];     /* what the library reports, e.g. "13.0" */
	char path[PATH_MAX];  /* the path as given */
	char real_path[PATH_MAX];
	char sha256[65];      /* of the file, lower-case hex */
};

/* Checks that path is a regular, readable shared object, hashes it, and asks a
 * child which ABI it exposes and which version it reports. Errors name the
 * problem: missing file, a directory, not an ELF shared object, neither ABI,
 * a crash or hang while loading. */
int rtc_identify(const char *path, const struct rtc_limits *lim,
		 struct rtc_identity *id, struct qual_msg *msg);

/* Resource usage from the compiler's report; -1 where unknown. */
struct rtc_resources {
	int registers;     /* per thread (VGPRs on AMD) */
	int sgprs;         /* AMD scalar registers, -1 on NVIDIA */
	int spill_stores;  /* bytes */
	int spill_loads;   /* bytes */
	int stack_bytes;   /* stack frame / private segment per thread */
	int shared_bytes;  /* static shared memory */
};

struct rtc_request {
	const struct rtc_identity *compiler;
	const char *source;       /* full source text, prelude included */
	const char *program_name; /* e.g. "gemm_f16.cu" */
	const char *arch;         /* "sm_90" or "gfx90a": final code for it */
	const char *const *options; /* extra per-arm options, may be NULL */
	int noptions;
};

struct rtc_result {
	int status;            /* 0, QUAL_ECOMPILE, QUAL_ECRASH, QUAL_ETIMEOUT, ... */
	char message[512];     /* when status != 0: what failed, first */
	void *code;            /* CUBIN or AMDGPU code object; malloc'd */
	size_t code_size;
	char code_sha256[65];
	char *log;             /* compiler log, NUL-terminated, at most log_cap */
	size_t log_size;       /* the full size the compiler reported */
	bool log_truncated;
	double compile_ms;     /* wall time of the compile call in the child */
	struct rtc_resources res;
};

/* Compiles req in a child. Returns 0 when the child ran and reported (the
 * compile itself may still have failed: see out->status), or a negative code
 * when the child could not be started. rtc_result_release() frees out. */
int rtc_compile(const struct rtc_request *req, const struct rtc_limits *lim,
		struct rtc_result *out, struct qual_msg *msg);
void rtc_result_release(struct rtc_result *r);

/* Parses resource figures out of a compiler log (nvrtc -Xptxas=-v, or the
 * AMDGPU resource-usage remarks). Fields not found stay -1. */
void rtc_parse_resources(enum rtc_abi abi, const char *log,
			 struct rtc_resources *res);

/* The qual-compile helper used for children: by default the file
 * "qual-compile" beside the running executable, or $QUAL_COMPILE. */
void rtc_set_helper(const char *path);

#endif
