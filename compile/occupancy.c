/* Theoretical occupancy (occupancy.h). The limits are the vendors': NVIDIA's
 * CUDA C++ Programming Guide, "Technical Specifications per Compute
 * Capability", with its occupancy calculator's allocation rules (registers
 * allocated per warp in units of 256 from each of the SM's four
 * sub-partitions; shared memory in units of 128 bytes plus 1 KiB per block
 * the system reserves, from compute capability 8.0); AMD's CDNA ISA guides
 * (wave64, four SIMDs per CU, eight waves per SIMD, 512 unified VGPRs per
 * lane in units of 8, 64 KiB of LDS per CU). */
#include "compile/occupancy.h"

#include <string.h>

static const struct occ_limits table[] = {
	{ "sm_80", false, 32, 64, 32, 65536, 256, 4, 255, 167936, 128, 1024 },
	{ "sm_86", false, 32, 48, 16, 65536, 256, 4, 255, 102400, 128, 1024 },
	{ "sm_87", false, 32, 48, 16, 65536, 256, 4, 255, 167936, 128, 1024 },
	{ "sm_89", false, 32, 48, 24, 65536, 256, 4, 255, 102400, 128, 1024 },
	{ "sm_90", false, 32, 64, 32, 65536, 256, 4, 255, 233472, 128, 1024 },
	{ "sm_90a", false, 32, 64, 32, 65536, 256, 4, 255, 233472, 128, 1024 },
	{ "sm_100", false, 32, 64, 32, 65536, 256, 4, 255, 233472, 128, 1024 },
	{ "gfx90a", true, 64, 32, 32, 512, 8, 4, 512, 65536, 128, 0 },
	{ "gfx942", true, 64, 32, 32, 512, 8, 4, 512, 65536, 128, 0 },
};

const struct occ_limits *occupancy_limits(const char *target)
{
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
		if (!strcmp(target, table[i].target))
			return &table[i];
	return NULL;
}

static int round_up(long x, int unit)
{
	return (int)((x + unit - 1) / unit * unit);
}

static bool none(struct occupancy *out, const char *why)
{
	out->blocks = 0;
	out->warps = 0;
	out->fraction = 0;
	out->limited_by = why;
	return false;
}

bool occupancy_compute(const struct occ_limits *l, int threads, int registers, long shared,
		       struct occupancy *out)
{
	int warps = (threads + l->warp - 1) / l->warp, by_regs, by_shared, by_warps, best;
	const char *why;

	/* 1024 threads a block at most, on every target here. */
	if (threads <= 0 || threads > 1024 || warps > l->max_warps)
		return none(out, "warps");
	if (registers > l->max_regs)
		return none(out, "registers");
	if (l->amd) {
		/* Waves per SIMD the VGPRs allow (eight at most), over the
		 * CU's SIMDs; a workgroup's waves spread over them. */
		int per_wave = round_up(registers > 0 ? registers : 1, l->reg_unit);
		int per_simd = l->regs / per_wave;

		if (per_simd > l->max_warps / l->partitions)
			per_simd = l->max_warps / l->partitions;
		by_regs = per_simd * l->partitions / warps;
	} else {
		/* Registers per warp, in units, from each sub-partition. */
		int per_warp = round_up((long)(registers > 0 ? registers : 1) * l->warp, l->reg_unit);

		by_regs = (l->regs / l->partitions / per_warp) * l->partitions / warps;
	}
	if (shared > 0 || l->shared_reserved) {
		long per_block = round_up(shared, l->shared_unit) + l->shared_reserved;

		if (per_block > l->shared)
			return none(out, "shared");
		by_shared = (int)(l->shared / per_block);
	} else {
		by_shared = l->max_blocks;
	}
	by_warps = l->max_warps / warps;
	/* The smallest limit; of equal ones the first of warps, blocks, shared
	 * memory, registers is named: the fixed limits first, since using
	 * less of the others would not raise the occupancy then. */
	best = by_warps, why = "warps";
	if (l->max_blocks < best)
		best = l->max_blocks, why = "blocks";
	if (by_shared < best)
		best = by_shared, why = "shared";
	if (by_regs < best)
		best = by_regs, why = "registers";
	if (best <= 0)
		return none(out, why);
	out->blocks = best;
	out->warps = best * warps;
	out->fraction = (double)out->warps / l->max_warps;
	out->limited_by = why;
	return true;
}
