/* The qualification engine: two compiler libraries in; compiled, checked and
 * paired-timed fixture cases and a verdict out, as JSON lines (output.h).
 * Without a GPU (or with compile_only) it compiles every case with both
 * compilers and reports the static comparison, saying plainly that nothing
 * was timed. */
#ifndef QUAL_RUNNER_H
#define QUAL_RUNNER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "rtc.h"
#include "stats.h"

#define RUNNER_MIN_PAIRS 30
#define RUNNER_REPLAYS 32   /* launches per graph: one timing = one replay */
#define RUNNER_WARMUP 5     /* graph replays per arm before the first check */

struct runner_config {
	const char *baseline;   /* compiler library paths */
	const char *candidate;
	int pairs;              /* >= RUNNER_MIN_PAIRS */
	int warmup;
	struct stats_settings stats;
	const char *const *cases; /* subset by name; NULL = all */
	int ncases;
	const char *const *baseline_opts; /* extra compiler options per arm */
	int nbaseline_opts;
	const char *const *candidate_opts;
	int ncandidate_opts;
	bool compile_only;      /* never open a GPU */
	const char *arch;       /* target when nothing is timed; NULL = default */
	int device;             /* GPU ordinal */
	uint64_t seed;          /* fixture inputs; 0 = default */
	struct rtc_limits limits;
};

/* Fills the defaults: 30 pairs, 5 warm-up replays, alpha 0.05, margin 1%. */
void runner_config_init(struct runner_config *cfg);

/* Runs the qualification and writes its JSON lines to out. Returns the exit
 * status (engine/exitcode.h): usage problems found before the run starts
 * (a missing or unloadable library, mismatched ABIs, an unknown case) print
 * to err and return QUAL_EXIT_USAGE, as well as an error line on out. */
int runner_run(const struct runner_config *cfg, FILE *out, FILE *err);

#endif
