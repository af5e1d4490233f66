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

#include <jansson.h>

#include "common/sampling.h"
#include "compile/rtc.h"
#include "compile/rtc_mode.h"
#include "stats/stats.h"

#define RUNNER_MIN_PAIRS QUAL_MIN_PAIRS
#define RUNNER_DEFAULT_PAIRS QUAL_DEFAULT_PAIRS
#define RUNNER_REPLAYS 32   /* launches per graph: one timing = one replay */
#define RUNNER_WARMUP 5     /* graph replays per arm before the first check */

/* Blocks (docs/verdicts.md, "Blocks", which gives the measurements behind
 * them). The timed pairs of a case come in blocks of
 * RUNNER_PAIRS_PER_BLOCK; before each block after the first, both arms'
 * code is loaded afresh in a random order and their graphs rebuilt over one
 * of RUNNER_BUFFER_SETS buffer sets (separate allocations), drawn at random
 * and moved by a random multiple of RUNNER_SHIFT_STEP bytes below
 * RUNNER_SHIFT_SPAN; then the arms replay RUNNER_BLOCK_WARMUP rounds
 * untimed, alternating. The blocks, not the pairs, are the units of the
 * sign test and of the ratio's interval. Pair j of block b (both from 0)
 * runs the candidate first when j + b is odd, so that the arm timed first
 * in a block alternates between blocks. */
#define RUNNER_PAIRS_PER_BLOCK QUAL_PAIRS_PER_BLOCK
#define RUNNER_BUFFER_SETS 8
/* Each buffer of set s takes RUNNER_SET_PAGE-aligned room plus s more pages,
 * so that the sets lie in different pages of device memory. */
#define RUNNER_SET_PAGE ((size_t)2 << 20)
#define RUNNER_SHIFT_STEP 256
#define RUNNER_SHIFT_SPAN (64 * RUNNER_SHIFT_STEP)
#define RUNNER_BLOCK_WARMUP 3

/* Throttling (docs/verdicts.md, "Throttling"). The clocks are read at the
 * start and at the end of every block (gpu/clocks.h); a block during which
 * the GPU throttled is marked so in its block line, its pairs are left out
 * of the verdict, and it is timed again over the same placement. Each case
 * may retake RUNNER_RETAKES blocks in each session; a block still
 * throttled after that stays excluded (a throttle that outlasts three
 * blocks is a state of the machine, not a passing event). */
#define RUNNER_RETAKES 3

/* Sessions (docs/verdicts.md, "Sessions", which gives the measurements
 * behind them). The blocks of a run are shared out among RUNNER_SESSIONS
 * processes, one after the other, each a child of qual-run with its own GPU
 * context that loads, warms up, checks and times every case for its share
 * of the blocks: what stays fixed for the life of a process then varies
 * between blocks too. */
#define RUNNER_SESSIONS 4

/* Sampling until decided (docs/verdicts.md, "Sampling until decided",
 * which gives the measurements behind the caps). After the sessions that
 * time the first cfg->pairs pairs, while some case is undecided, one more
 * round times the undecided cases up to the next planned look (twice the
 * blocks so far; stats_settings.look_growth times with qual-run
 * --look-growth), in as many sessions as the first look's or
 * RUNNER_SESSIONS, whichever is more, and no more than
 * RUNNER_ROUND_SESSIONS, or fewer when the round has fewer blocks than the
 * first look (runner__round_sessions: 4 each for the default), until each
 * case is decided or a cap is hit:
 * RUNNER_MAX_PAIRS_FACTOR x pairs per case (3840 of the default 60: looks
 * at 15, 30, 60, 120, 240, 480 and 960 blocks) or RUNNER_MAX_SECONDS of
 * timing (no round starts past it). */
#define RUNNER_MAX_PAIRS_FACTOR 64

#define RUNNER_ROUND_SESSIONS 16
#define RUNNER_MAX_SECONDS 20.0

/* The settle, an instrument (docs/verdicts.md, "The same conditions at
 * every look"): before the first timed block of the first session of the
 * first look and of each later round, the session replays its first case's
 * graphs, both arms in turn and untimed, for this many milliseconds
 * (runner_config.settle_ms, qual-run --settle-ms). Off by default: on the
 * H100 it did not bring a case timed alone to its ratio among every case. */
#define RUNNER_SETTLE_MS 0

/* The shared memory carve-out of every timed kernel (gpu_set_carveout,
 * qual-run --carveout), an instrument: the driver's choice by default. On
 * an H100, asking for the most shared memory did not make a case's ratio
 * independent of the case timed before it (docs/verdicts.md, "The same
 * conditions at every look"), so the default is as before. */
#define RUNNER_CARVEOUT GPU_CARVEOUT_DRIVER

/* Whether each case gets a context of its own (runner_config.case_contexts;
 * docs/verdicts.md, "The same conditions at every look"): on, since a case's
 * ratio depended on a case timed before it in the same context, by more
 * than the margin, on one H100. */
#define RUNNER_CASE_CONTEXTS true

/* Seconds the device probe (the driver initialized, the device's
 * attributes and clocks read) may take before it is killed and the run goes
 * on without a GPU, saying so (runner_config.probe_timeout_s, qual-run
 * --probe-timeout). */
#define RUNNER_PROBE_TIMEOUT_S 60.0

/* With runner_config.flush_bytes set (qual-run --flush-mib), the runner
 * overwrites that many bytes before every timed replay, so that each starts
 * from a cold cache instead of what the other arm's replay left there. Off
 * by default (docs/verdicts.md says why). */

/* Deadlines (docs/faults.md, which says where the floor and the factor
 * come from). Every wait for the GPU is bounded. Once the baseline's
 * warm-up has run, each wait of the case (both arms' graphs, copies) may
 * take max(floor, factor x the baseline's graph time), the baseline's time
 * being the fastest host-measured replay of its warm-up. The baseline's own
 * warm-up runs before its time is known, with the floor times
 * RUNNER_BASELINE_ALLOWANCE: its first replay also pays for lazy module
 * loading. */
#define RUNNER_HANG_FLOOR_MS 2000.0
#define RUNNER_HANG_FACTOR 100.0
#define RUNNER_BASELINE_ALLOWANCE 10.0

/* The most compiles at once by default: a compile child takes one core for
 * the second or so it runs, and the largest machine qual runs on has 16. */
#define RUNNER_MAX_COMPILE_JOBS 16

struct runner_config {
	const char *baseline;   /* compiler library paths */
	const char *candidate;
	/* Per arm (baseline, candidate), may be NULL: the file to read in
	 * place of the path's realpath (quald's resolved path at submit), and
	 * the sha256 its bytes must have (quald's pin). Each arm's library is
	 * read once into a sealed memfd, which every compile loads
	 * (compile/rtc.h); bytes of another hash are never loaded: the arm
	 * fails (library_changed; the candidate's is a fail, the baseline's
	 * an error). */
	const char *real_path[2];
	const char *sha256[2];
	int pairs;              /* >= RUNNER_MIN_PAIRS: the first look */
	/* The caps of sampling until decided: pairs per case (0: the
	 * default, RUNNER_MAX_PAIRS_FACTOR x pairs; pairs itself: no
	 * sampling beyond them; below pairs: refused), and seconds of the
	 * timing phase after which no round starts (0: RUNNER_MAX_SECONDS).
	 * Sampling needs sessions: with one_load or sessions 1 it is off. */
	int max_pairs;
	double max_seconds;
	double probe_timeout_s; /* > 0: RUNNER_PROBE_TIMEOUT_S by default */
	int pairs_per_block;    /* >= 1; the last block may be shorter */
	/* Every pair under the first load and judged as a unit of its own:
	 * schema 1's way, which the blocks replaced because its intervals
	 * did not hold up. To measure the instrument, never for a verdict
	 * one would act on (pairs_per_block is then ignored). */
	bool one_load;
	size_t flush_bytes;     /* 0 (the default): no flush */
	size_t pad_bytes;       /* 0 (the default): no pad (runner__alloc_bufs) */
	int sessions;           /* >= 1; 1: everything in this process (no
				 * fork); capped at the number of blocks */
	int warmup;
	int settle_ms;          /* RUNNER_SETTLE_MS by default; 0: none */
	int carveout;           /* RUNNER_CARVEOUT by default (gpu_set_carveout) */
	/* Each case in a context of its own (RUNNER_CASE_CONTEXTS by default,
	 * qual-run --case-contexts / --shared-context): a process closes its
	 * GPU and opens it again before every case after its first, so that
	 * nothing one case leaves in a context reaches another. */
	bool case_contexts;
	struct stats_settings stats;
	const char *const *cases; /* subset by name; NULL = all */
	int ncases;
	bool only_fixtures;     /* with no cases named: only those of the
				 * fixture directories loaded (fixture.h,
				 * fixture_load_dir), not the built-in ones */
	const char *const *baseline_opts; /* extra compiler options per arm */
	int nbaseline_opts;
	const char *const *candidate_opts;
	int ncandidate_opts;
	bool compile_only;      /* never open a GPU */
	const char *compile_only_because; /* with compile_only: the start
					   * line's not_timed_because; NULL:
					   * "compile-only run requested" */
	const char *arch;       /* target when nothing is timed; NULL = default */
	enum rtc_mode mode;     /* processor mode (compile/rtc_mode.h) */
	int device;             /* GPU ordinal */
	uint64_t seed;          /* fixture inputs; 0 = default */
	uint64_t block_seed;    /* load orders and shifts of the blocks; 0 =
				 * drawn from the kernel's random source at
				 * the start (the start line says which) */
	struct rtc_limits limits;
	double hang_floor_ms;   /* > 0; RUNNER_HANG_FLOOR_MS */
	double hang_factor;     /* > 0; RUNNER_HANG_FACTOR */
	/* Ends the process after a kernel did not finish (the lines are written
	 * and flushed; status is the exit status). NULL: _exit(status), the
	 * only way to stop the kernel (gpu.h, Deadlines). A test sets its own;
	 * if it returns, runner_run returns status without calling the GPU
	 * runtime again. */
	void (*on_hang)(int status);
	/* Ends the process after a session died by a fault signal (its lines
	 * are written and flushed, no verdict): NULL raises that signal here,
	 * so that whoever runs qual-run sees the crash as if it were its own
	 * (quald counts it against the candidate and checks the GPU). A test
	 * sets its own; if it returns, runner_run returns QUAL_EXIT_ERROR. */
	void (*on_crash)(int sig);
	/* Called whenever the compiles in flight change: with the case's name
	 * and "baseline" or "candidate" of the first compile (in case order,
	 * baseline before candidate) whose child is running, and in all a
	 * list of every compile in flight ("gemm_i8-256x512x256 (baseline),
	 * ..."); with arm NULL when compiles of both arms are in flight (which
	 * one a stop caught cannot be told, and no arm is to be blamed for
	 * another's hang), or when the one in flight is the second arm of its
	 * case to compile, the first's compile having run past its time limit
	 * (both arms unfinished the same way, whatever the order: all says
	 * so); and with NULLs once none is, so that qual-run can
	 * say which compile was in flight if it is stopped meanwhile
	 * (qual_run.c: SIGUSR1). With several compiles at once it is called
	 * from the compile threads, one call at a time. NULL: nothing. */
	void (*on_compile)(const char *case_name, const char *arm, const char *all);
	/* Compiles at once in the compile phase, each its own child (qual-run
	 * --compile-jobs); 0: the online CPUs, at most RUNNER_MAX_COMPILE_JOBS;
	 * 1: one after the other. */
	int compile_jobs;
	/* The artifact cache's folder (run/cache.h; qual-run --cache), NULL:
	 * none; and its bound in bytes (0: CACHE_DEFAULT_MAX_MIB). */
	const char *cache_dir;
	size_t cache_max_bytes;
	/* Members the verdict line gets besides its own (added by the
	 * judge's on_verdict): qual-run --calibration's record, or its null
	 * with why. Borrowed; NULL: none. */
	json_t *verdict_extra;
};

/* Fills the defaults: RUNNER_DEFAULT_PAIRS pairs in blocks of
 * RUNNER_PAIRS_PER_BLOCK in RUNNER_SESSIONS sessions, RUNNER_WARMUP warm-up
 * replays, the statistics' settings (stats_settings_init), the compile
 * limits (rtc_limits_init), and the hang floor and factor and the probe's
 * timeout above. */
void runner_config_init(struct runner_config *cfg);

/* The deadline of each wait once the baseline's graph time is known:
 * max(floor_ms, factor * baseline_graph_ms). A baseline time that is not a
 * positive finite number (no warm-up ran) gives the floor. */
double runner_hang_limit_ms(double floor_ms, double factor, double baseline_graph_ms);

/* Runs the qualification and writes its JSON lines to out. Returns the exit
 * status (common/exitcode.h): usage problems found before the run starts
 * (a missing or unloadable library, mismatched ABIs, an unknown case, a
 * processor mode the target does not have) print to err and return
 * QUAL_EXIT_USAGE, as well as an error line on out. A
 * kernel that does not finish within its deadline fails its arm (the
 * candidate: fail; the baseline: error), ends GPU work, and after the
 * verdict line ends the process through cfg->on_hang. */
int runner_run(const struct runner_config *cfg, FILE *out, FILE *err);

#endif
