/* Theoretical occupancy: how many blocks of a kernel one multiprocessor
 * (NVIDIA SM, AMD CU) holds at once, from the kernel's registers and shared
 * memory, the launch's block size and the target's limits, as the vendors'
 * occupancy calculators compute it (run/explain.c). */
#ifndef QUAL_OCCUPANCY_H
#define QUAL_OCCUPANCY_H

#include <stdbool.h>

/* A target's limits per multiprocessor. */
struct occ_limits {
	const char *target;      /* "sm_90", "gfx90a" */
	bool amd;
	int warp;                /* threads per warp (wave) */
	int max_warps;           /* resident warps per SM (waves per CU) */
	int max_blocks;          /* resident blocks per SM (workgroups per CU) */
	int regs;                /* NVIDIA: 32-bit registers per SM; AMD: VGPRs
				  * per lane per SIMD */
	int reg_unit;            /* allocation unit: registers per warp (NVIDIA),
				  * VGPRs per wave (AMD) */
	int partitions;          /* NVIDIA: SM sub-partitions; AMD: SIMDs per CU */
	int max_regs;            /* per thread */
	int shared;              /* bytes per SM (CU), the largest carve-out */
	int shared_unit;         /* allocation unit, bytes */
	int shared_reserved;     /* bytes per block the system takes */
};

/* The limits of target, or NULL when qual has none for it. */
const struct occ_limits *occupancy_limits(const char *target);

struct occupancy {
	int blocks;              /* per SM (CU) */
	int warps;               /* resident warps (waves) */
	double fraction;         /* warps / max_warps */
	const char *limited_by;  /* "registers", "shared", "warps", "blocks" */
};

/* The occupancy of blocks of threads threads using registers per thread and
 * shared bytes (static and dynamic) per block. Returns false when the block
 * cannot run at all (too many threads, registers or shared bytes): then
 * blocks is 0 and limited_by says which. */
bool occupancy_compute(const struct occ_limits *l, int threads, int registers, long shared,
		       struct occupancy *out);

#endif
