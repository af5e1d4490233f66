/* compile/disasm*.c and compile/occupancy.c, and common/textdiff.c: what a
 * code line is made of (run/explain.c). Listings here are cut from real
 * ones (nvdisasm -c of an sm_90 CUBIN, llvm-objdump -d of a gfx90a code
 * object of the built-in GEMM); the tool itself is a script. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/textdiff.h"
#include "compile/disasm.h"
#include "compile/occupancy.h"
#include "tests/unit/test_main.h"

static const char sass[] =
	"\t.target\tsm_90\n"
	"\t.section\t.text.gemm_f16,\"ax\",@progbits\n"
	"        .global         gemm_f16\n"
	"gemm_f16:\n"
	".text.gemm_f16:\n"
	"        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
	"        /*0010*/                   S2R R12, SR_TID.X ;\n"
	"        /*0020*/                   LDG.E.128 R4, desc[UR6][R12.64] ;\n"
	"        /*0030*/                   HMMA.16816.F32 R20, R4.reuse, R8, R20 ;\n"
	"        /*0040*/                   LDSM.16.M88.4 R8, [R12] ;\n"
	"        /*0050*/                   STL [R1+0x4], R20 ;\n"
	"        /*0060*/                   F2FP.F16.F32.PACK_AB R21, R20, R21 ;\n"
	"        /*0070*/               @P0 BRA `(.L_x_7) ;\n"
	"        /*0080*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;\n"
	".L_x_7:\n"
	"        /*0090*/                   EXIT ;\n"
	"        /*00a0*/                   NOP;\n";

/* The same code with other register numbers and label: the same lines. */
static const char sass_renumbered[] =
	"gemm_f16:\n"
	"        /*0000*/                   LDC R3, c[0x0][0x28] ;\n"
	"        /*0010*/                   S2R R40, SR_TID.X ;\n"
	"        /*0020*/                   LDG.E.128 R16, desc[UR9][R40.64] ;\n"
	"        /*0030*/                   HMMA.16816.F32 R24, R16, R12, R24 ;\n"
	"        /*0040*/                   LDSM.16.M88.4 R12, [R40] ;\n"
	"        /*0050*/                   STL [R3+0x4], R24 ;\n"
	"        /*0060*/                   F2FP.F16.F32.PACK_AB R25, R24, R25 ;\n"
	"        /*0070*/               @P3 BRA `(.L_x_2) ;\n"
	"        /*0080*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;\n"
	".L_x_2:\n"
	"        /*0090*/                   EXIT ;\n"
	"        /*00a0*/                   NOP;\n";

static const char amdgpu[] =
	"\n/tmp/x/code:\tfile format elf64-amdgpu\n\nDisassembly of section .text:\n\n"
	"0000000000001700 <gemm_f16>:\n"
	"\ts_load_dwordx2 s[0:1], s[4:5], 0x0      // 000000001700: C0060002 00000000\n"
	"\tv_mfma_f32_16x16x16f16 a[0:3], v[50:51], v[86:87], 0  // 000000001E98: D3CD8000\n"
	"\tds_read_b128 v[2:5], v7 offset:64        // 000000001EA0: D9FE0040\n"
	"\tglobal_load_dwordx4 v[8:11], v[12:13], off // 000000001EA8: DC5C8000\n"
	"\tscratch_store_dword off, v7, s33         // 000000001EB0: DC700000\n"
	"\tv_cvt_f16_f32_e32 v3, v2                 // 000000001EB8: 7E061502\n"
	"\ts_waitcnt lgkmcnt(0)                     // 000000001EBC: BF8CC07F\n"
	"\ts_barrier                                // 000000001EC0: BF8A0000\n"
	"\ts_cbranch_scc1 65                        // 000000001EC4: BF850041 <gemm_f16+0x7c8>\n"
	"\tv_add_u32_e32 v7, v2, v7                 // 000000001EC8: 680E0F02\n"
	"\ts_endpgm                                 // 000000001ECC: BF810000\n";

static void test_sass_counts_and_lines(void **state)
{
	struct disasm_listing l;
	struct qual_msg msg = {{0}};
	static const char *const want[] = {
		"gemm_f16:", "LDC R0, c[0x0][0x28]", "S2R R1, SR_TID.X",
		"LDG.E.128 R2, desc[UR0][R1.64]", "HMMA.16816.F32 R3, R2, R4, R3",
		"LDSM.16.M88.4 R4, [R1]", "STL [R0+0x4], R3", "F2FP.F16.F32.PACK_AB R5, R3, R5",
		"@P0 BRA `(L0)", "BAR.SYNC.DEFER_BLOCKING 0x0", "L0:", "EXIT", "NOP",
	};

	(void)state;
	assert_int_equal(disasm_parse(RTC_ABI_NVRTC, sass, strlen(sass), &l, &msg), 0);
	assert_int_equal(l.instructions, 11);
	assert_int_equal(l.count[DISASM_MMA], 1);
	assert_int_equal(l.count[DISASM_GLOBAL], 1);
	assert_int_equal(l.count[DISASM_SHARED], 1);
	assert_int_equal(l.count[DISASM_LOCAL], 1);
	assert_int_equal(l.count[DISASM_CONVERT], 1);
	assert_int_equal(l.count[DISASM_BRANCH], 2);  /* BRA, EXIT */
	assert_int_equal(l.count[DISASM_BARRIER], 1);
	assert_int_equal(l.count[DISASM_OTHER], 3);   /* LDC, S2R, NOP */
	assert_int_equal(l.nlines, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < l.nlines; i++)
		assert_string_equal(l.lines[i], want[i]);
	disasm_listing_release(&l);
}

static void test_sass_renaming(void **state)
{
	struct disasm_listing a, b;
	struct qual_msg msg = {{0}};
	struct textdiff d;

	(void)state;
	assert_int_equal(disasm_parse(RTC_ABI_NVRTC, sass, strlen(sass), &a, &msg), 0);
	assert_int_equal(disasm_parse(RTC_ABI_NVRTC, sass_renumbered, strlen(sass_renumbered),
				      &b, &msg), 0);
	textdiff_unified((const char *const *)a.lines, a.nlines, (const char *const *)b.lines,
			 b.nlines, 3, 1 << 16, &d);
	assert_int_equal(d.added, 0);
	assert_int_equal(d.removed, 0);
	assert_string_equal(d.text, "");
	textdiff_release(&d);
	disasm_listing_release(&a);
	disasm_listing_release(&b);
}

/* Two kernels, the first changed (a register more): the second's lines are
 * the same in both listings, its names being its own. */
static void test_names_per_kernel(void **state)
{
	static const char a[] =
		"k1:\n"
		"        /*0000*/                   MOV R4, R5 ;\n"
		"k2:\n"
		"        /*0000*/                   MOV R7, R8 ;\n"
		"        /*0010*/                   EXIT ;\n";
	static const char b[] =
		"k1:\n"
		"        /*0000*/                   MOV R9, R3 ;\n"
		"        /*0010*/                   MOV R4, R5 ;\n"
		"k2:\n"
		"        /*0000*/                   MOV R7, R8 ;\n"
		"        /*0010*/                   EXIT ;\n";
	struct disasm_listing x, y;
	struct qual_msg msg = {{0}};
	struct textdiff d;

	(void)state;
	assert_int_equal(disasm_parse(RTC_ABI_NVRTC, a, strlen(a), &x, &msg), 0);
	assert_int_equal(disasm_parse(RTC_ABI_NVRTC, b, strlen(b), &y, &msg), 0);
	assert_string_equal(x.lines[3], "MOV R0, R1");
	assert_string_equal(y.lines[4], "MOV R0, R1");
	textdiff_unified((const char *const *)x.lines, x.nlines, (const char *const *)y.lines,
			 y.nlines, 0, 1 << 16, &d);
	/* k1 gains a line (its first, renamed in order of first use, reads as
	 * the old one); k2's names are its own, so none of it differs. */
	assert_int_equal(d.removed, 0);
	assert_int_equal(d.added, 1);
	assert_non_null(strstr(d.text, "+MOV R2, R3"));
	assert_null(strstr(d.text, "EXIT"));
	textdiff_release(&d);
	disasm_listing_release(&x);
	disasm_listing_release(&y);
}

static void test_amdgpu_counts_and_lines(void **state)
{
	struct disasm_listing l;
	struct qual_msg msg = {{0}};
	static const char *const want[] = {
		"gemm_f16:", "s_load_dwordx2 s0, s1, 0x0", "v_mfma_f32_16x16x16f16 a0, v0, v1, 0",
		"ds_read_b128 v2, v3 offset:64", "global_load_dwordx4 v4, v5, off",
		"scratch_store_dword off, v3, s2", "v_cvt_f16_f32_e32 v6, v7",
		"s_waitcnt lgkmcnt(0)", "s_barrier", "s_cbranch_scc1 off", "v_add_u32_e32 v3, v7, v3",
		"s_endpgm",
	};

	(void)state;
	assert_int_equal(disasm_parse(RTC_ABI_HIPRTC, amdgpu, strlen(amdgpu), &l, &msg), 0);
	assert_int_equal(l.instructions, 11);
	assert_int_equal(l.count[DISASM_MMA], 1);
	assert_int_equal(l.count[DISASM_GLOBAL], 2);  /* s_load, global_load */
	assert_int_equal(l.count[DISASM_SHARED], 1);
	assert_int_equal(l.count[DISASM_LOCAL], 1);
	assert_int_equal(l.count[DISASM_CONVERT], 1);
	assert_int_equal(l.count[DISASM_BRANCH], 2);  /* s_cbranch, s_endpgm */
	assert_int_equal(l.count[DISASM_BARRIER], 2); /* s_waitcnt, s_barrier */
	assert_int_equal(l.count[DISASM_OTHER], 1);
	assert_int_equal(l.nlines, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < l.nlines; i++)
		assert_string_equal(l.lines[i], want[i]);
	disasm_listing_release(&l);
}

static void test_no_instructions(void **state)
{
	struct disasm_listing l;
	struct qual_msg msg = {{0}};
	const char *text = "nvdisasm fatal   : Input file 'x' is not a cubin\n";

	(void)state;
	assert_int_equal(disasm_parse(RTC_ABI_NVRTC, text, strlen(text), &l, &msg), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "no instructions"));
	assert_int_equal(l.nlines, 0);
}

/* A script standing in for nvdisasm, and a CUBIN's ELF header. */
static char tool_path[64];

static void write_tool(const char *body)
{
	FILE *f;

	snprintf(tool_path, sizeof tool_path, "/tmp/qual-test-disasm-%d", (int)getpid());
	f = fopen(tool_path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	assert_int_equal(chmod(tool_path, 0755), 0);
}

static void cubin(unsigned char *p, size_t n)
{
	memset(p, 0, n);
	memcpy(p, "\177ELF", 4);
	p[4] = 2;           /* 64-bit */
	p[5] = 1;           /* little-endian */
	p[6] = 1;
	p[18] = 190;        /* EM_CUDA */
}

static void test_run_tool(void **state)
{
	struct disasm_tool t = { .abi = RTC_ABI_NVRTC, .name = "nvdisasm" };
	struct disasm_listing l;
	struct qual_msg msg = {{0}};
	unsigned char code[64];
	char body[2200];

	(void)state;
	cubin(code, sizeof code);
	/* It prints the listing of the file it is given (checked to exist). */
	snprintf(body, sizeof body, "[ \"$1\" = -c ] && [ -s \"$2\" ] || exit 9\ncat <<'X'\n%sX",
		 sass);
	write_tool(body);
	snprintf(t.path, sizeof t.path, "%s", tool_path);
	assert_int_equal(disasm_run(&t, "sm_90", code, sizeof code, 10, &l, &msg), 0);
	assert_int_equal(l.instructions, 11);
	disasm_listing_release(&l);

	/* It fails: its status and last words are the message. */
	write_tool("echo 'nvdisasm fatal   : bad input'; exit 3");
	assert_int_equal(disasm_run(&t, "sm_90", code, sizeof code, 10, &l, &msg), QUAL_EIO);
	assert_non_null(strstr(msg.text, "exited with status 3"));
	assert_non_null(strstr(msg.text, "bad input"));

	/* It hangs: killed at the limit. */
	write_tool("exec sleep 30");
	assert_int_equal(disasm_run(&t, "sm_90", code, sizeof code, 0.5, &l, &msg), QUAL_ETIMEOUT);
	assert_non_null(strstr(msg.text, "did not finish within 0.5 s"));

	/* Code that is not a CUBIN is never handed to it. */
	code[18] = 62;
	assert_int_equal(disasm_run(&t, "sm_90", code, sizeof code, 10, &l, &msg), QUAL_ECOMPILE);
	unlink(tool_path);
}

static void test_find_named(void **state)
{
	struct disasm_tool t;
	struct qual_msg msg = {{0}};

	(void)state;
	write_tool("echo 'Cuda compilation tools, release 13.5, V13.5.37'; echo 'Build x'");
	setenv(DISASM_ENV_NVDISASM, tool_path, 1);
	assert_int_equal(disasm_find(RTC_ABI_NVRTC, NULL, 0, &t, &msg), 0);
	assert_string_equal(t.path, tool_path);
	assert_string_equal(t.version, "Cuda compilation tools, release 13.5, V13.5.37");
	unlink(tool_path);
	assert_int_equal(disasm_find(RTC_ABI_NVRTC, NULL, 0, &t, &msg), QUAL_ENOENT);
	assert_non_null(strstr(msg.text, DISASM_ENV_NVDISASM));
	assert_non_null(strstr(msg.text, "not an executable file"));
	unsetenv(DISASM_ENV_NVDISASM);
}

static void check_occ(const char *target, int threads, int regs, long shared, int blocks,
		      int warps, const char *why)
{
	struct occupancy o;
	const struct occ_limits *l = occupancy_limits(target);

	assert_non_null(l);
	assert_int_equal(occupancy_compute(l, threads, regs, shared, &o), blocks > 0);
	assert_int_equal(o.blocks, blocks);
	assert_int_equal(o.warps, warps);
	assert_string_equal(o.limited_by, why);
}

static void test_occupancy(void **state)
{
	(void)state;
	/* sm_90: 255 registers a thread, 4 warps a block: 8192 registers a
	 * warp, 2 warps in each 16384-register sub-partition, 8 warps. */
	check_occ("sm_90", 128, 255, 49152, 2, 8, "registers");
	/* 112 registers: 3584 a warp, 4 a sub-partition, 16 warps. */
	check_occ("sm_90", 128, 112, 32768, 4, 16, "registers");
	/* 100 KiB of shared memory (+1 KiB reserved) a block: 2 in 228 KiB. */
	check_occ("sm_90", 128, 32, 102400, 2, 8, "shared");
	/* 1024 threads of 32 registers: the 64 warps hold 2 blocks. */
	check_occ("sm_90", 1024, 32, 0, 2, 64, "warps");
	/* One warp a block, few registers, 1 KiB reserved each: 32 blocks. */
	check_occ("sm_90", 32, 16, 0, 32, 32, "blocks");
	/* More shared memory than an SM has: no block runs. */
	check_occ("sm_90", 128, 32, 240000, 0, 0, "shared");
	check_occ("sm_90", 128, 300, 0, 0, 0, "registers");
	check_occ("sm_90", 2048, 16, 0, 0, 0, "warps");
	/* sm_86 holds 48 warps: 1024 threads make one block. */
	check_occ("sm_86", 1024, 32, 0, 1, 32, "warps");
	/* gfx90a: 164 VGPRs (168 allocated) give 3 waves a SIMD, 12 a CU; 32
	 * KiB of LDS a workgroup, 2 in 64 KiB. */
	check_occ("gfx90a", 128, 164, 32768, 2, 4, "shared");
	check_occ("gfx90a", 256, 128, 0, 4, 16, "registers");
	assert_null(occupancy_limits("sm_61"));
}

static void test_textdiff(void **state)
{
	const char *a[] = { "a", "b", "c", "d", "e", "f", "g", "h", "i", "j" };
	const char *b[] = { "a", "b", "c", "d", "X", "f", "g", "h", "i", "j", "k" };
	struct textdiff d;

	(void)state;
	textdiff_unified(a, 10, b, 11, 1, 1 << 16, &d);
	assert_int_equal(d.added, 2);
	assert_int_equal(d.removed, 1);
	assert_false(d.truncated);
	assert_false(d.coarse);
	assert_string_equal(d.text, "@@ -4,3 +4,3 @@\n d\n-e\n+X\n f\n@@ -10,1 +10,2 @@\n j\n+k\n");
	textdiff_release(&d);
	/* Cut at a line's end. */
	textdiff_unified(a, 10, b, 11, 1, 20, &d);
	assert_true(d.truncated);
	assert_string_equal(d.text, "@@ -4,3 +4,3 @@\n d\n");
	assert_int_equal(d.added, 2);
	textdiff_release(&d);
	/* Two changes with twice the context between them: one hunk, as
	 * diff -U1 prints it. */
	{
		const char *x[] = { "a", "b", "c", "d", "e" };
		const char *y[] = { "A", "b", "c", "D", "e" };

		textdiff_unified(x, 5, y, 5, 1, 1 << 16, &d);
		assert_string_equal(d.text, "@@ -1,5 +1,5 @@\n-a\n+A\n b\n c\n-d\n+D\n e\n");
		textdiff_release(&d);
	}
	/* Both empty, and one empty. */
	textdiff_unified(a, 0, b, 0, 3, 100, &d);
	assert_string_equal(d.text, "");
	textdiff_release(&d);
	textdiff_unified(a, 0, b, 2, 3, 100, &d);
	assert_string_equal(d.text, "@@ -0,0 +1,2 @@\n+a\n+b\n");
	textdiff_release(&d);
}

static void test_textdiff_coarse(void **state)
{
	enum { N = 4200 };
	char **a = calloc(N, sizeof *a), **b = calloc(N, sizeof *b);
	struct textdiff d;

	(void)state;
	for (int i = 0; i < N; i++) {
		a[i] = malloc(16);
		b[i] = malloc(16);
		snprintf(a[i], 16, "a%d", i);
		snprintf(b[i], 16, "b%d", i);
	}
	/* 4200 x 4200 cells is over the table's 16 MiB: every line differs. */
	textdiff_unified((const char *const *)a, N, (const char *const *)b, N, 3, 1 << 20, &d);
	assert_true(d.coarse);
	assert_int_equal(d.added, N);
	assert_int_equal(d.removed, N);
	textdiff_release(&d);
	for (int i = 0; i < N; i++) {
		free(a[i]);
		free(b[i]);
	}
	free(a);
	free(b);
}

QUAL_TESTS(
	cmocka_unit_test(test_sass_counts_and_lines),
	cmocka_unit_test(test_sass_renaming),
	cmocka_unit_test(test_names_per_kernel),
	cmocka_unit_test(test_amdgpu_counts_and_lines),
	cmocka_unit_test(test_no_instructions),
	cmocka_unit_test(test_run_tool),
	cmocka_unit_test(test_find_named),
	cmocka_unit_test(test_occupancy),
	cmocka_unit_test(test_textdiff),
	cmocka_unit_test(test_textdiff_coarse),
)
