/* shim_oob: forwards, but rewrites the entry kernel so that every thread first
 * stores to an address no allocation covers (the first page, 16 bytes in, as
 * the GPU smoke test's fault kernel does: CUDA_ERROR_ILLEGAL_ADDRESS on the
 * H200), then goes on as written. What a miscompiled index does to a kernel:
 * the run must end with fail, naming the candidate and the case, and the GPU
 * must be healthy for the next job.
 *
 * The store is volatile, so it cannot be dropped; nvrtc 13 emits it as
 * st.volatile.u32 [16 + 4 * tid] (checked by hand in the PTX). */
#include "shim.h"
#include "shim_entry.h"

static const char oob_statement[] =
	"\n\t{ /* shim_oob */\n"
	"\t\tvolatile unsigned long long qual_oob_base = 0x10ull;\n"
	"\t\t*(volatile unsigned *)(qual_oob_base + 4ull * threadIdx.x) = 1u;\n"
	"\t}\n";

static char *oob_rewrite(const char *src)
{
	return shim_insert_at_entry(src, oob_statement);
}

const struct shim_ops shim_ops = { .rewrite_source = oob_rewrite };
