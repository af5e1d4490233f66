#include "gpu/health.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/lines.h"
#include "proto/line.h"
#include "common/xalloc.h"

/* Written by hand after nvcc -ptx of the CUDA C below, with the ISA lowered to
 * 6.0 and the target to sm_50 (it uses nothing newer): checked with ptxas for
 * sm_75, sm_90 and sm_120 by the health_ptx test.
 *
 *     extern "C" __global__ void qual_health(unsigned *out, unsigned n, unsigned salt)
 *     {
 *         unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
 *         if (i < n)
 *             out[i] = out[i] * 1664525u + (i ^ salt) + 1013904223u;
 *     }
 */
const char health_ptx[] =
	".version 6.0\n"
	".target sm_50\n"
	".address_size 64\n"
	"\n"
	".visible .entry qual_health(\n"
	"\t.param .u64 out,\n"
	"\t.param .u32 n,\n"
	"\t.param .u32 salt\n"
	")\n"
	"{\n"
	"\t.reg .pred %p<2>;\n"
	"\t.reg .b32 %r<11>;\n"
	"\t.reg .b64 %rd<5>;\n"
	"\n"
	"\tld.param.u64 %rd1, [out];\n"
	"\tld.param.u32 %r3, [n];\n"
	"\tld.param.u32 %r2, [salt];\n"
	"\tmov.u32 %r4, %ctaid.x;\n"
	"\tmov.u32 %r5, %ntid.x;\n"
	"\tmov.u32 %r6, %tid.x;\n"
	"\tmad.lo.s32 %r1, %r4, %r5, %r6;\n"
	"\tsetp.ge.u32 %p1, %r1, %r3;\n"
	"\t@%p1 bra DONE;\n"
	"\tcvta.to.global.u64 %rd2, %rd1;\n"
	"\tmul.wide.u32 %rd3, %r1, 4;\n"
	"\tadd.s64 %rd4, %rd2, %rd3;\n"
	"\tld.global.u32 %r7, [%rd4];\n"
	"\txor.b32 %r8, %r1, %r2;\n"
	"\tmad.lo.s32 %r9, %r7, 1664525, %r8;\n"
	"\tadd.s32 %r10, %r9, 1013904223;\n"
	"\tst.global.u32 [%rd4], %r10;\n"
	"DONE:\n"
	"\tret;\n"
	"}\n";

unsigned health_step(unsigned x, unsigned i, unsigned salt)
{
	/* Unsigned arithmetic wraps modulo 2^32, as mad.lo and add do. */
	return x * 1664525u + (i ^ salt) + 1013904223u;
}

unsigned health_initial(unsigned i)
{
	return i * 2654435761u; /* Knuth's multiplicative hash: every word differs */
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Compares what came back with what the host computed; the first wrong word
 * is the message. */
static int compare(const unsigned *got, const unsigned *want, const char *what,
		   struct health_report *r)
{
	for (unsigned i = 0; i < HEALTH_COUNT; i++) {
		if (got[i] != want[i]) {
			snprintf(r->message, sizeof r->message,
				 "%s wrong at word %u of %u: got 0x%08x, want 0x%08x",
				 what, i, HEALTH_COUNT, got[i], want[i]);
			return QUAL_ECHECK;
		}
	}
	return 0;
}

/* The check on an opened gpu; fills r->message on failure. */
static int check_gpu(struct gpu *g, struct health_report *r)
{
	struct qual_msg msg = { { 0 } };
	struct gpu_module *m = NULL;
	struct gpu_graph *gr = NULL;
	unsigned *init = xcalloc(HEALTH_COUNT, sizeof *init);
	unsigned *want = xcalloc(HEALTH_COUNT, sizeof *want);
	unsigned *got = xcalloc(HEALTH_COUNT, sizeof *got);
	unsigned n = HEALTH_COUNT, salt = HEALTH_SALT;
	const unsigned grid[3] = { (HEALTH_COUNT + HEALTH_BLOCK - 1) / HEALTH_BLOCK, 1, 1 };
	const unsigned block[3] = { HEALTH_BLOCK, 1, 1 };
	const size_t bytes = HEALTH_COUNT * sizeof *init;
	uint64_t dev = 0;
	void *params[3];
	int rc;

	for (unsigned i = 0; i < HEALTH_COUNT; i++)
		init[i] = want[i] = health_initial(i);
	if ((rc = gpu_alloc(g, bytes, &dev, &msg)) < 0 ||
	    (rc = gpu_upload(g, dev, init, bytes, &msg)) < 0)
		goto gpu_failed;

	rc = gpu_module_load_ptx(g, health_ptx, "qual_health", &m, &msg);
	if (rc == QUAL_ENOENT && strcmp(gpu_get_info(g)->vendor, "nvidia") != 0) {
		/* No PTX on this backend (AMD): the memory round trip alone. On
		 * NVIDIA the kernel must run. */
		if ((rc = gpu_download(g, got, dev, bytes, &msg)) < 0)
			goto gpu_failed;
		if ((rc = compare(got, want, "memory round trip", r)) < 0)
			goto out;
		snprintf(r->message, sizeof r->message,
			 "memory round trip of %zu bytes matched; no kernel: %s", bytes, msg.text);
		goto out;
	}
	if (rc < 0)
		goto gpu_failed;
	params[0] = &dev;
	params[1] = &n;
	params[2] = &salt;
	if ((rc = gpu_graph_new(g, m, grid, block, 0, params, HEALTH_LAUNCHES, &gr, &msg)) < 0 ||
	    (rc = gpu_graph_run(gr, &msg)) < 0 ||
	    (rc = gpu_download(g, got, dev, bytes, &msg)) < 0)
		goto gpu_failed;
	r->kernel = true;
	for (int k = 0; k < HEALTH_LAUNCHES; k++)
		for (unsigned i = 0; i < HEALTH_COUNT; i++)
			want[i] = health_step(want[i], i, salt);
	if ((rc = compare(got, want, "kernel result", r)) < 0)
		goto out;
	snprintf(r->message, sizeof r->message,
		 "a graph of %d launches over %u words ran and matched the host exactly",
		 HEALTH_LAUNCHES, HEALTH_COUNT);
	goto out;

gpu_failed:
	snprintf(r->message, sizeof r->message, "%s", msg.text);
out:
	/* Nothing is freed through a hung gpu but host memory (gpu.h). */
	gpu_graph_free(gr);
	gpu_module_free(m);
	gpu_free(g, dev);
	free(init);
	free(want);
	free(got);
	return rc;
}

int health_check(int ordinal, double limit_ms, struct health_report *r)
{
	struct qual_msg msg = { { 0 } };
	struct gpu *g = NULL;
	double t0 = now_ms();
	int rc;

	memset(r, 0, sizeof *r);
	r->limit_ms = limit_ms;
	rc = gpu_open(ordinal, &g, &msg);
	if (rc < 0) {
		snprintf(r->message, sizeof r->message, "%s%s",
			 rc == QUAL_ENODEV ? "no device: " : "", msg.text);
	} else {
		r->info = *gpu_get_info(g);
		r->have_device = true;
		gpu_set_wait_limit(g, limit_ms);
		rc = check_gpu(g, r);
		r->hung = gpu_is_hung(g);
		gpu_close(g);
	}
	r->ok = rc == 0;
	if (rc == 0)
		r->code = LINES_CODE_NONE;
	else if (rc == QUAL_ENODEV)
		r->code = LINES_CODE_NO_DEVICE;
	else if (r->hung || rc == QUAL_EHANG)
		r->code = LINES_CODE_GPU_HANG;
	else
		r->code = LINES_CODE_GPU_FAULT;
	r->ms = now_ms() - t0;
	return rc;
}

json_t *health_json(const struct health_report *r)
{
	json_t *line = json_pack("{s:s,s:b}", "type", "health", "ok", r->ok);
	const struct gpu_info *in = &r->info;
	const char *code = vocab_code_name(r->code);

	json_object_set_new(line, "code", code ? json_string(code) : json_null());
	json_object_set_new(line, "device", r->have_device ?
			    json_pack("{s:s,s:o,s:s,s:s,s:i}", "vendor", in->vendor,
				      "name", lines_text(in->name), "arch", in->arch,
				      "driver", in->driver, "ordinal", in->ordinal) :
			    json_null());
	json_object_set_new(line, "kernel", json_boolean(r->kernel));
	json_object_set_new(line, "hung", json_boolean(r->hung));
	json_object_set_new(line, "limit_ms", json_real(r->limit_ms));
	json_object_set_new(line, "ms", json_real(r->ms));
	json_object_set_new(line, "message", lines_text(r->message));
	return line;
}
