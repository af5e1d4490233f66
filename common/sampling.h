/* How many pairs a case is timed in, by default (docs/verdicts.md, "Blocks"
 * and "Sampling until decided"): shared by qual-run (run/runner.h), quald's
 * submit requests and its calibrations, so that a job submitted with no
 * settings runs what qual-run runs with none. */
#ifndef QUAL_SAMPLING_H
#define QUAL_SAMPLING_H

/* The fewest timed pairs a case may have (the product's floor). */
#define QUAL_MIN_PAIRS 30

/* Pairs per block: per load of both arms' code, half of them of each
 * order. A block's log ratio is the median of its pairs', so that one
 * replay's outlier moves it little: on the H200, 15 blocks of 4 pairs gave
 * A/A intervals less than half as wide as 15 blocks of 2 (mean half-widths
 * 0.120% against 0.283%, nvrtc 13.0 against its alt copy, 52 case runs
 * each; docs/gpu-runs/2026-12-02/issue12e/call2-blocks), for 0.2 s more a
 * full job; blocks of 8 narrowed them to 0.086% for 0.45 s more. */
#define QUAL_PAIRS_PER_BLOCK 4

/* The first look's blocks by default; the default pairs are these blocks'. */
#define QUAL_FIRST_BLOCKS 15
#define QUAL_DEFAULT_PAIRS (QUAL_FIRST_BLOCKS * QUAL_PAIRS_PER_BLOCK)

#endif
