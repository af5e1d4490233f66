/* What a compiler made of a kernel, read from its machine code: the code
 * object disassembled by the vendor's own tool (nvdisasm for a CUBIN,
 * llvm-objdump for an AMDGPU code object), its instructions counted by
 * class, and a listing normalised for a diff (registers and labels renamed
 * in the order of their first use, addresses dropped), so that two builds'
 * code can be compared line by line (run/explain.c, docs/explain.md).
 *
 * The tool is run as a child (common/child.h), as the compile user when
 * there is one (rtc.h), reading the code from a sealed memfd as /dev/fd/3,
 * with a time limit and a cap on what it prints. */
#ifndef QUAL_DISASM_H
#define QUAL_DISASM_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "compile/rtc.h"
#include "proto/line.h"

/* The environment variables that name the tool outright (a path). */
#define DISASM_ENV_NVDISASM "QUAL_NVDISASM"
#define DISASM_ENV_OBJDUMP "QUAL_LLVM_OBJDUMP"

/* Where scripts/fetch-cuda-tools.sh puts nvdisasm and cuobjdump by default. */
#define DISASM_TOOLS_DIR "/opt/qual-cuda-tools/bin"

/* The classes an instruction is counted in: the code line's (proto/line.h,
 * LINES_CODE_MIX), whose names are its "mix" keys. */
enum disasm_class {
#define X(e, s) DISASM_##e,
	LINES_CODE_MIX(X)
#undef X
	DISASM_NCLASSES
};

extern const char *const disasm_class_names[DISASM_NCLASSES];

/* A disassembler found for an ABI. */
struct disasm_tool {
	enum rtc_abi abi;
	char name[16];          /* "nvdisasm" or "llvm-objdump" */
	char path[PATH_MAX];
	char version[96];       /* the last line of its --version, "" unknown */
};

/* Finds the tool for abi: the path its environment variable names (an
 * error when that is not an executable file), else the first executable
 * of: PATH's; the CUDA toolkit's (/usr/local/cuda/bin) or ROCm's
 * (/opt/rocm/llvm/bin) and Debian's LLVM (/usr/lib/llvm-N/bin, newest
 * first; for nvdisasm also DISASM_TOOLS_DIR); beside each of the nlib
 * compiler libraries, LIBDIR/../bin (PyPI's nvidia/cuXX/{lib,bin} layout). Returns 0, or QUAL_ENOENT with msg saying
 * what was looked for and where. */
int disasm_find(enum rtc_abi abi, const char *const *libs, int nlib, struct disasm_tool *out,
		struct qual_msg *msg);

/* A kernel's code, read. */
struct disasm_listing {
	char **lines;           /* normalised: instructions and labels */
	size_t nlines;
	long instructions;
	long count[DISASM_NCLASSES];
};

/* Parses what the tool for abi printed (len bytes of text) into out.
 * Returns 0, or QUAL_EINVAL when it holds no instruction. */
int disasm_parse(enum rtc_abi abi, const char *text, size_t len, struct disasm_listing *out,
		 struct qual_msg *msg);

/* The class of an instruction's opcode ("HMMA.16816.F32", "v_mfma_f32_32x32x8f16"). */
enum disasm_class disasm_classify(enum rtc_abi abi, const char *opcode);

/* Disassembles code (size bytes, final code for target as rtc_check_code()
 * accepts it) with t, within timeout_s seconds. Returns 0, or QUAL_EIO,
 * QUAL_ETIMEOUT, QUAL_ELIMIT (it printed over DISASM_OUTPUT_MAX) or
 * QUAL_EINVAL with msg naming the tool and what it said. */
int disasm_run(const struct disasm_tool *t, const char *target, const void *code, size_t size,
	       double timeout_s, struct disasm_listing *out, struct qual_msg *msg);

#define DISASM_OUTPUT_MAX ((size_t)64 << 20)

/* The longest a disassembly may take (run/explain.c: the compile time limit
 * when that is shorter); nvdisasm takes about 0.4 s for a fixture's CUBIN
 * on a 2-core VM (bench/explain.md). */
#define DISASM_TIMEOUT_S 30.0

void disasm_listing_release(struct disasm_listing *l);

#endif
