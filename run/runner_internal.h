/* What stays inside run/: the state of one run, shared by the pair runner
 * (runner.c: cases, arms, the verdict) and its session supervisor
 * (sessions.c: the device probe, the sessions and the relay of their
 * lines). Nothing outside run/ includes this. */
#ifndef QUAL_RUNNER_INTERNAL_H
#define QUAL_RUNNER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/child.h"
#include "common/timesplit.h"
#include "compile/rtc.h"
#include "fixtures/fixture.h"
#include "gpu/gpu.h"
#include "run/runner.h"
#include "stats/judge.h"

struct run {
	const struct runner_config *cfg;
	FILE *out;
	struct rtc_identity id[2];
	const char *const *opts[2];
	int nopts[2];
	struct gpu *gpu;        /* NULL when nothing is timed */
	char arch[32];
	enum fixture_platform platform;
	struct judge judge;
	bool gpu_dead;          /* a fault ended GPU work for this run */
	bool hung;              /* ... and it was a hang: the process must end */
	/* How the wait limit now in force was chosen, for messages. */
	char limit_why[200];
	/* Compile results by (arm, artifact key: cache.h's cache_key()), each
	 * allocated on its own so that a pointer to one stays valid: cases that
	 * share a kernel source compile once per arm. Filled by
	 * runner__compile_all() before any case runs. */
	struct compiled {
		int arm;
		char key[65];
		struct rtc_result res; /* status < 0: qual's own trouble (rtc_compile's
					* return), message saying what */
		bool cached;           /* from the artifact cache, not compiled */
	} **cache;
	int ncache, capcache;
	struct cache *artifacts; /* the artifact cache; NULL: none */
	/* Key inputs beside the sources (cache.h's cache_key_in), set with
	 * the cache: each arm's library folder's fingerprint, the helper's
	 * SHA-256; "": unknown, and that arm is not cached. */
	char libdir_fp[2][65];
	char helper_sha256[65];
	int compile_jobs;        /* compiles at once, in force (>= 1) */
	FILE *err;               /* warnings */
	char stop_reason[1400];
	uint64_t block_seed;    /* the one in use: cfg's or drawn */
	/* The device: run->gpu's info, or the probe's when sessions hold the
	 * GPU and this process never opens it. NULL: nothing is timed. */
	const struct gpu_info *device;
	struct gpu_info probed;
	/* This process's share of the blocks, [block_lo, block_hi) counted
	 * from 0, and its session (from 0; only session 0 writes case lines). */
	int block_lo, block_hi, session;
	int nsessions;          /* in force: cfg's, capped (1 under one_load) */
	int crash_signal;       /* a session died by this fault signal */
	/* The clocks of the device this process times on (gpu/clocks.h);
	 * NULL when no monitoring library serves it. clocks_source ("nvml",
	 * "rocm_smi") or clocks_why ("cannot load ...") for the start line,
	 * from this process's gpu or from the probe's. */
	struct gpu_clocks *clocks;
	char clocks_source[16];
	char clocks_why[1024];
	/* In force: cfg's max_pairs, or pairs where sampling is off; the
	 * statistics' settings with the looks they make (stats.h). */
	int max_pairs;
	double max_seconds;
	struct stats_settings stats;
	/* Where the time went: this process's phases, and the sessions' as
	 * their session_time lines said (a session's own, in the session). */
	struct timesplit split;
	struct child probe;     /* the device probe, while probing */
	bool probing;
	/* The sessions' supervisor (sessions.c), from runner__sessions_start()
	 * until runner__sessions_end(); NULL: none. */
	struct supervisor *sup;
	double probe_started_s; /* child_now() at its start */
	double started_s;       /* child_now() when the run started */
	double judge_s;         /* ... when judging started */
};

/* ---- runner.c --------------------------------------------------------- */

/* Compiles case index (fixture_find()'s) with both arms into run->cache
 * before any session runs, so that every session finds the same code
 * there (the first, started before the compiles, in its work file). A case that does not compile (or cannot be built) gets its error
 * and its case line here, and no session touches it. */
void runner__compile_case(struct run *run, int index);

/* Runs case index: compiles (from the cache when it can), and when timed
 * loads, warms up, checks and times its pairs [block_lo, block_hi) of
 * blocks; its lines to run->out. */
void runner__run_case(struct run *run, int index);

/* A verdict line's calibration record (line's "calibration") kept only
 * when it is of device: a record whose device names another PCI address
 * than device's (GPUs renumbered, the record's file another slot's) is
 * replaced by null with calibration_because saying so. Either side without
 * an address is taken as the same device. */
void runner__calibration_for_device(json_t *line, const struct gpu_info *device);

/* The error line outside any case that says why GPU work stopped (from
 * run->stop_reason), with its "gpu" field. */
void runner__emit_stop(struct run *run);

/* Opens run->clocks for the device info describes (run->gpu's, or the
 * probe's), setting clocks_source, or leaves it NULL with clocks_why; never
 * a failure. */
void runner__clocks_open(struct run *run, const struct gpu_info *info);
void runner__clocks_close(struct run *run);

/* ---- compile_all.c ---------------------------------------------------- */

/* Sets run->compile_jobs from cfg (0: the online CPUs, at most
 * RUNNER_MAX_COMPILE_JOBS) and opens the artifact cache cfg->cache_dir
 * (NULL: none) into run->artifacts; a cache that cannot be used is a
 * warning on run->err, and the run goes on without one. */
void runner__compile_setup(struct run *run);

/* The compile phase, before any case runs: every arm of every selected case
 * that applies to the target, each (arm, key) once, the baseline's taken
 * from the artifact cache where it is there and otherwise compiled (the
 * candidate's always compiled), up to run->compile_jobs
 * qual-compile children at once; results into run->cache in case order,
 * whatever order the compiles end in. Successful compiles go into the
 * artifact cache, which is then trimmed to its bound. Writes no lines: the
 * cases report their compiles when they run (runner__compile()). */
void runner__compile_all(struct run *run, const int *sel, int nsel);

/* The result of compiling case c with arm: run->cache's, or compiled now
 * (one child, on this thread) when the compile phase did not do it. Never
 * NULL. */
const struct compiled *runner__compile(struct run *run, const struct fixture_case *c,
				       int arm);

/* Frees run->cache and closes the artifact cache. */
void runner__compile_release(struct run *run);

/* run->cache appended to the buffer *buf (*len bytes of *cap, grown), for a
 * process forked from this one before the compiles (sessions.c), which
 * runner__cache_unpack()s it from *at (moved past it; end the buffer's end)
 * into its own run->cache: 0, or -1 when the bytes stop short. */
void runner__cache_pack(const struct run *run, unsigned char **buf, size_t *len,
			size_t *cap);
int runner__cache_unpack(struct run *run, const unsigned char **at, const unsigned char *end);

/* ---- sessions.c ------------------------------------------------------- */

/* The device probe: a child that opens the GPU and writes its description
 * back, so that this process never starts the GPU runtime (a process forked
 * after that could not use it, and the sessions are forked from this one).
 * It is started first and read when the run needs the device, so that it
 * runs beside the libraries' identify.
 *
 * runner__probe_start() starts it (0, run->probing set), or returns -1 with
 * why. runner__probe_finish() reads its answer and reaps it: 0 with
 * run->probed filled, or -1 with why; a probe that has not answered within
 * cfg->probe_timeout_s of its start (a driver stuck in its initialization)
 * is killed, and why says so. runner__probe_abandon() kills and
 * reaps one started and not finished (nothing when none). */
int runner__probe_start(struct run *run, char *why, size_t whylen);
int runner__probe_finish(struct run *run, char *why, size_t whylen);
void runner__probe_abandon(struct run *run);

/* The timed part of a run in sessions: every case of sel compiled here,
 * then each session started in turn with its share of the blocks, its lines
 * relayed to run->out and applied to run->judge, until all have run or one
 * stopped GPU work. A session that died by a fault signal (at work, or
 * idle with its context kept, or closing it when asked) sets
 * run->crash_signal.
 *
 * runner__sessions_start(), called before the compiles (with the same sel,
 * which must outlive the run), starts the first look's sessions then (only
 * the first where the device may take one context at a time), so that they
 * open the GPU while the code compiles: they are forked from a process of
 * one thread, before the kept fixtures' builders start (whose results they
 * find in shared memory: fixtures/keep.c), and runner__run_sessions() hands
 * them the compiled code and the cases to run in a file (a memfd) before
 * their go. Without that call, runner__run_sessions() starts the first
 * session itself. runner__sessions_end() ends the sessions started and
 * never let go and kills those that kept their contexts past their last
 * lines (nothing when none), and frees the supervisor; call it after the
 * verdict, before the run ends. */
void runner__sessions_start(struct run *run, const int *sel, int nsel);
void runner__run_sessions(struct run *run, const int *sel, int nsel);
void runner__sessions_end(struct run *run);

/* Why sampling ends, or that it goes on (runner__next_round). */
enum runner_round {
	ROUND_MORE,        /* one more round, up to *next blocks */
	ROUND_DECIDED,     /* no case is undecided */
	ROUND_MAX_PAIRS,   /* the last planned look was taken */
	ROUND_MAX_SECONDS, /* the timing phase ran past max_seconds */
	ROUND_STOPPED,     /* GPU work stopped (a fault, a hang, a failure) */
};

/* The decision between rounds, pure: after blocks_done blocks of every
 * timed case (the looks of s, stats_looks()), with undecided cases still
 * undecided, elapsed_s seconds into the timing phase, and stopped when GPU
 * work can go on no more: ROUND_MORE with *next the next planned look's
 * blocks, or why not. */
enum runner_round runner__next_round(const struct stats_settings *s, int blocks_done,
				     int undecided, double elapsed_s, double max_seconds,
				     bool stopped, int *next);

/* How many sessions time a round of round_blocks blocks, pure: as many
 * blocks to a session as the first look's first_blocks in first_sessions
 * (rounded up: 15 blocks in 4 sessions make a round of 15 blocks 4
 * sessions, one of 30 blocks 8), at least 1 and at most round_blocks. */
int runner__round_sessions(int round_blocks, int first_blocks, int first_sessions);

#endif
