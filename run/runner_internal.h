/* What stays inside run/: the state of one run, shared by the pair runner
 * (runner*.c: setup, cases, checks, timing, lines, the verdict), its
 * compile phase (compile_all.c) and its sessions (sessions*.c: the device
 * probe, the supervisor and the relay of the sessions' lines, each
 * session's own side, and the plan of the rounds). Nothing outside run/
 * includes this. */
#ifndef QUAL_RUNNER_INTERNAL_H
#define QUAL_RUNNER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

#include "common/child.h"
#include "common/lines.h"
#include "proto/line.h"
#include "common/timesplit.h"
#include "compile/rtc.h"
#include "fixtures/fixture.h"
#include "gpu/clocks.h"
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
	bool settle;            /* this process settles the GPU before its
				 * first timed block (RUNNER_SETTLE_MS) */
	bool hung;              /* ... and it was a hang: the process must end */
	bool gpu_lost;          /* ... or the GPU could not be opened again
				 * (runner__case_context): the machine's */
	bool context_used;      /* a case has run on the context in use */
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
	/* The device: the probe's when sessions hold the GPU and this
	 * process never opens it, else a copy of run->gpu's (probed holds
	 * either), so that it outlives a reopen. NULL: nothing is timed. */
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

/* ---- one case's state ------------------------------------------------ */

/* One arm of one case: its compiled code and, when timed, its module and its
 * graph. Both arms' graphs bind the same device buffers (struct bufs): with a
 * buffer set per arm, an A/A run of identical code on the H200 measured one
 * arm 3.5% slower in 29 of 30 pairs (gemm_f16-256x1024x1024), an artefact of
 * where the buffers lay, not of the code. Inputs are restored before each
 * arm's checked runs, and checked themselves, so a kernel that corrupts its
 * inputs is still caught and blamed alone. */
struct arm {
	const struct rtc_result *code; /* in run->cache */
	bool compiled;
	bool cached;    /* code is from the artifact cache */
	struct gpu_module *module;
	struct gpu_graph *graph;
	double max_err;
	bool checked;   /* max_err is from at least one check of its output */
	/* The driver's count of the kernel's blocks a multiprocessor holds at
	 * the case's launch (gpu_occupancy), when it gave one. */
	bool has_driver_blocks;
	int driver_blocks;
};

/* The case's device buffers, shared by both arms: RUNNER_BUFFER_SETS sets,
 * each buffer RUNNER_SHIFT_SPAN bytes larger than the fixture needs. The
 * kernels see one set at a time, at dev = base + a shift; set and shifts
 * change with every block. */
struct bufs {
	uint64_t base[RUNNER_BUFFER_SETS][FIXTURE_MAX_BUFFERS];
	uint64_t dev[FIXTURE_MAX_BUFFERS];
	uint64_t flush;  /* cfg->flush_bytes to overwrite before each timing */
	uint64_t pad;    /* cfg->pad_bytes allocated before the buffers */
	void *scratch; /* host copy-back space, as large as the largest buffer */
	/* Per arm, the case's last output in this process that passed the
	 * oracle's check (NULL: none yet), and the error it was checked with: an output
	 * byte-identical to one of them is checked by the comparison of its
	 * bytes alone (inspect()). */
	unsigned char *passed[2];
	double passed_err[2];
};

/* Where a block's buffers lie and how its code was loaded: the buffer set
 * (0..RUNNER_BUFFER_SETS-1), each buffer's shift in bytes from its set's
 * base, and the arm loaded first. The first block of a process times under
 * the warm-up's load: set 0, no shifts, the baseline loaded first. */
struct placement {
	int first;
	int set;
	uint64_t shift[FIXTURE_MAX_BUFFERS];
	bool warm_up;
};

/* ---- runner.c's steps (runner_setup.c) -------------------------------- */

/* Checks and completes the settings (refused: QUAL_EXIT_USAGE, said on
 * err and in an error line), draws the block seed, selects the cases into
 * sel (*nsel of them; room for every case and every name of cfg) and sets
 * the sessions and the sampling in force. Returns 0 or the exit status. */
int runner__settings(struct run *run, FILE *err, int *sel, int *nsel);

/* Everything before the compile phase: the device probe started (with
 * sessions), both libraries identified, the artifact cache opened, the
 * fixtures' builds set up into *keep (the caller abandons or runs it), the
 * device found (no_gpu, len bytes, says why there is none) and the
 * processor mode's option added to both arms (mode_opts, freed by the
 * caller). Returns 0 or the exit status that ends the run. */
int runner__prepare(struct run *run, FILE *err, const int *sel, int nsel, char *no_gpu,
		    size_t len, struct fixture_keep **keep, const char **mode_opts[2]);

/* Builds every selected user case that applies (its inputs and its
 * oracle's values, which the registry keeps for the process) before
 * anything compiles, so that an oracle runs before the compiles; into out
 * the cases of sel to compile: all but those whose build failed, which the
 * case reports when it runs (fail_build, from the same kept failure).
 * Returns their number. */
int runner__build_user_cases(struct run *run, const int *sel, int nsel, int *out);

/* ---- runner_emit.c ---------------------------------------------------- */

/* The one way out for a line of the run: writes line (takes its reference)
 * to run->out (lines_emit()) and feeds the same value to run->judge
 * (judge_take_line()), so that the judge of the one process and the judge
 * of the sessions' supervisor, which relays their lines here, judge from
 * what was written and nothing else, as qual-judge does from a stored copy.
 * Every line a run writes comes here, in the one process, in a session (to
 * its pipe and its own judge, which its runner reads for the failures) and
 * in the supervisor, but for the two below. Returns lines_emit()'s. */
int runner__emit(struct run *run, json_t *line);

/* The writer of judge_finish()'s case_verdict and verdict lines (struct
 * judge's emit, ctx the run): runner__emit()'s, but the lines are not fed
 * back to the judge that made them. */
int runner__emit_judged(void *ctx, json_t *line);

/* A session's line that is not JSON, len bytes without its newline: it has
 * no value the judge could read (judge_take_line() refuses what is not a
 * qual line, as qual-judge refuses a file holding one), so it is written
 * as it came, judged by no one, for its reader to refuse as it would any
 * (quald: bad_line). The one process never writes one. */
void runner__emit_unparsed(struct run *run, const char *line, size_t len);

/* The arms' names in lines and messages: "baseline", "candidate". */
extern const char *const runner__arm_names[2];

/* The case line of case c, its arms as they stand (timed: the case was
 * timed, and max_abs_error is reported). */
void runner__emit_case(struct run *run, const struct fixture_case *c,
		       struct arm arms[2], bool identical, bool timed);

/* The error line of a failure of arm (0 baseline, 1 candidate; -1: neither,
 * arm null) in case jc (NULL: in none), which records it in the judge
 * (runner__emit()). */
void runner__fail_arm_as(struct run *run, struct judge_case *jc, int arm,
			 const char *stage, enum lines_code code, const char *message);

/* runner__fail_arm_as() with the code of err (QUAL_E*) at stage; for
 * QUAL_EKILLED (another process killed the child) with arm null. */
void runner__fail_arm(struct run *run, struct judge_case *jc, int arm,
		      const char *stage, int err, const char *message);

/* A GPU call failed while working for arm: the context may be unusable (a
 * fault is sticky), so GPU work ends for the whole run. A hang is blamed the
 * same way: every wait follows the one launch or copy before it, so the arm
 * whose graph was waited for is the arm whose kernel did not finish. The
 * code is gpu_fault or gpu_hang at every stage (an allocation that fails
 * while loading is no refusal of the arm's code: that is load_failed,
 * runner__prepare_arm's). */
void runner__gpu_fault(struct run *run, struct judge_case *jc, int arm,
		       const char *stage, const struct qual_msg *msg);

/* The block line of one attempt at block (its number in the pair lines)
 * after its npairs pairs, which the judge applies as qual-judge does
 * (judge_case_block()): throttled when either reading, at the block's
 * start or its end, gives a throttling reason. Returns that. */
bool runner__emit_block(struct run *run, const struct fixture_case *c, int block,
			int retake, int npairs, const struct placement *pl,
			const struct gpu_clocks_reading ck[2], const bool ok[2]);

/* The case line of a case that cannot run on the run's target: never
 * compiled, so both arms say only that. */
void runner__emit_not_applicable(struct run *run, const struct fixture_case *c, const char *why);

/* The start line: the run's device, libraries, settings and cases (sel);
 * no_gpu (NULL when timed) says why nothing is timed. */
void runner__emit_start(struct run *run, const int *sel, int nsel, const char *no_gpu);

/* The error line outside any case that says why GPU work stopped (from
 * run->stop_reason), with its "gpu" field (the judge's gpu_stopped). */
void runner__emit_stop(struct run *run);

/* A verdict line's calibration record (line's "calibration") kept only
 * when it is of device: a record whose device names another PCI address
 * than device's (GPUs renumbered, the record's file another slot's) is
 * replaced by null with calibration_because saying so. Either side without
 * an address is taken as the same device. */
void runner__calibration_for_device(json_t *line, const struct gpu_info *device);

/* ---- runner_case.c ---------------------------------------------------- */

/* Compiles case index (fixture_find()'s) with both arms into run->cache
 * before any session runs, so that every session finds the same code
 * there (the first, started before the compiles, in its work file). A case
 * that does not compile (or cannot be built) gets its error and its case
 * line here, and no session touches it. */
void runner__compile_case(struct run *run, int index);

/* Runs case index: compiles (from the cache when it can), and when timed
 * loads, warms up, checks and times its pairs [block_lo, block_hi) of
 * blocks; its lines to run->out. */
void runner__run_case(struct run *run, int index);

/* Whether case index is one of a user fixture's (loaded after the built-in
 * cases). */
bool runner__is_user_case(int index);

/* ---- runner_check.c --------------------------------------------------- */

/* CLOCK_MONOTONIC now, in ns. */
double runner__now_ns(void);

/* Sets the limit of every later wait for the GPU, and why (a phrase that
 * follows "the limit was"). */
void runner__set_limit(struct run *run, double ms, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Frees an arm's graph and module, or the case's buffers, and zeroes
 * them. */
void runner__release_arm(struct arm *a);
void runner__release_bufs(struct run *run, struct bufs *b);

/* Allocates the case's buffers. A failure here is the machine's. */
int runner__alloc_bufs(struct run *run, const struct fixture_case *c,
		       struct bufs *b, struct judge_case *jc);

/* Restores every input from the host copy and poisons the output with all
 * bits set (an f16 NaN), so the next check sees only what the next arm
 * wrote: reset_bufs_with(): an f16 NaN. */
int runner__reset_bufs(struct run *run, const struct fixture_case *c,
		       struct bufs *b, int arm, struct judge_case *jc);

/* Loads the arm's code and builds its graph over the shared buffers. */
int runner__prepare_arm(struct run *run, const struct fixture_case *c, int arm,
			struct arm *a, struct bufs *b, struct judge_case *jc);

/* Copies the output back and checks it against the oracle, then checks that
 * every input still holds what was uploaded. Returns 0, QUAL_ECHECK with what
 * was wrong in text (nobody blamed yet), or a GPU error (already reported,
 * against arm). */
int runner__inspect(struct run *run, const struct fixture_case *c, int arm,
		    struct arm *a, struct bufs *b, struct judge_case *jc,
		    const char *when, char *text, size_t textlen);

/* Runs arm's graph reps times on fresh inputs and checks what it left (see
 * replay()); a differential case's first baseline run takes the reference. */
int runner__run_and_check(struct run *run, const struct fixture_case *c, int arm,
			  struct arm *a, struct bufs *b, struct judge_case *jc,
			  int reps, const char *when, double *fastest_ns);

/* Warm-up: each arm on fresh inputs and a poisoned output, reps replays,
 * then checked. The timed pairs then start from the last arm's output. The
 * baseline goes first, under its allowance (set by run_case); its fastest
 * replay sets the deadline of everything after it in the case. */
int runner__warm_up(struct run *run, const struct fixture_case *c,
		    struct arm arms[2], struct bufs *b, struct judge_case *jc);

/* ---- runner_time.c ---------------------------------------------------- */

/* This process's blocks of the case, [block_lo, block_hi): each block's
 * pairs, then its block line with the clocks read at its start (before its
 * load and untimed rounds; the first block's, after the warm-up) and its
 * end (after its last pair). A
 * throttled attempt is timed again over the same placement (its pairs left
 * out of the verdict by the block line), while the case has retakes left
 * in this process (RUNNER_RETAKES); then the block stays excluded. Under
 * one_load there is one block and no block line. */
int runner__time_pairs(struct run *run, const struct fixture_case *c,
		       struct arm arms[2], struct bufs *b, struct judge_case *jc);

/* Keeps the GPU at work on a case's arms' graphs for cfg->settle_ms before
 * the process's first timed block (runner_time.c); < 0 on a fault,
 * reported. */
int runner__settle(struct run *run, struct arm arms[2], struct judge_case *jc);

/* Opens the run's device (cfg->device) into run->gpu, asking for the run's
 * shared memory carve-out (cfg->carveout); gpu_open's result. */
int runner__open_gpu(struct run *run, struct qual_msg *msg);
/* Whether each case gets a context of its own: cfg->case_contexts, on a
 * device whose backend gives one (CUDA; not HIP). The start line says it. */
bool runner__case_contexts(const struct run *run);
/* Before case name's first use of the GPU, with runner__case_contexts: when
 * an earlier case of this process used the context (run->context_used),
 * the GPU closed and opened again, so that the case has a context of its
 * own (the time in TS_OPEN). 0, or -1 when it could not be opened again:
 * an error line, and the GPU's work in this process stopped (gpu_dead,
 * gpu_lost). */
int runner__case_context(struct run *run, const char *name);
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

/* What the compilers made of the cases of sel (explain.c): one "code" line
 * each whose two arms compiled, after the compile phase. */
void runner__explain(struct run *run, const int *sel, int nsel);

/* The most of a code line's diff kept (bytes): 13 built-in cases at most
 * 1.7 MB of a job's log. */
#define RUNNER_EXPLAIN_DIFF_MAX ((size_t)128 << 10)

/* Frees run->cache and closes the artifact cache. */
void runner__compile_release(struct run *run);

/* run->cache appended to the buffer *buf (*len bytes of *cap, grown), for a
 * process forked from this one before the compiles (sessions.c), which
 * runner__cache_unpack()s it from *at (moved past it; end the buffer's end)
 * into its own run->cache: 0, or -1 when the bytes stop short. */
void runner__cache_pack(const struct run *run, unsigned char **buf, size_t *len,
			size_t *cap);
int runner__cache_unpack(struct run *run, const unsigned char **at, const unsigned char *end);

/* ---- sessions.c: the supervisor -------------------------------------- */

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

/* ---- sessions_probe.c ------------------------------------------------- */

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

/* In a child started with out = CHILD_PIPE: takes the pipe off stdout
 * (stdout then goes where stderr goes), so that nothing a GPU runtime
 * prints can be taken for the child's answer or its lines. Returns the
 * pipe's new descriptor; ends the child when it cannot. */
int runner__pipe_off_stdout(void);

/* Starts fn(arg) in a child killed with this process, its stdout a pipe,
 * and with gated its stdin one too (a session's go: wait_for_go()). */
int runner__start_fn(struct child *c, int (*fn)(void *arg), void *arg, bool gated,
		     struct qual_msg *msg);

/* How a child ended, for messages: child_exit_text()'s words, or that it
 * could not be seen (wait_rc, child_wait()'s return, is not 0). */
const char *runner__describe_end(int wait_rc, const struct child_exit *ex, char *buf,
				 size_t len);

/* Reaps a killed child once it has ended, if it does by until (child_now()
 * seconds): true when it was reaped. */
bool runner__reap_by(struct child *c, double until);

/* ---- sessions_child.c ------------------------------------------------- */

/* The sessions started ahead of their turns, at most: the first look's
 * before the compiles, and each later round's together, at its start
 * (start_batch()): a later round's sessions, at most, so that one batch
 * makes every context of a round (runner__round_sessions()). */
#define SESSIONS_AHEAD RUNNER_ROUND_SESSIONS

/* What a session writes, once only and before any line, when its first
 * try to open the device is over (opened or not): the supervisor waits for
 * it from every session started ahead before it lets the first of them go
 * (await_opened()), so that no context opens while a session times. */
#define SESSION_OPENED 'o'

/* What a session is given: the run as it stands after the compiles (for
 * the first session, forked before them, as it stood then, the rest being
 * in its work file), the cases, and which session it is with its share of
 * the blocks. */
struct session_arg {
	struct run *run;
	const int *sel;
	int nsel;
	int session, block_lo, block_hi;
	/* The first session of the first look or of a round: it settles the
	 * GPU before its first timed block (RUNNER_SETTLE_MS). */
	bool settle;
	/* A session started before the compiles: the file (a memfd) where
	 * it finds them after its go (read_work()); -1 for one forked after. */
	int work_fd;
	/* The go pipes of the sessions started before it (before the
	 * compiles) that this process inherited: closed at once, or the
	 * supervisor's close would never reach them as an end of file. */
	int inherited_go[SESSIONS_AHEAD];
	int ninherited_go;
	/* After its last line the session keeps its context, idle, so that
	 * no close lies between the first look's sessions (docs/verdicts.md,
	 * "Sessions"): it closes it when the supervisor asks (SIGTERM:
	 * linger()), or its end does when the supervisor kills it. */
	bool linger;
};

/* The body of a session, in the child: its own GPU context, every case that
 * has not failed yet, its share of the blocks; lines into the pipe. The
 * context is opened, and the clocks' source (NVML) started, before the go
 * (the first look's sessions during the compiles; each later one while the
 * one before it closes its own); nothing runs on the device before it.
 * Where the device takes one context at a time (an exclusive compute mode)
 * the open fails until the session before has ended: it is
 * tried again after the go. After a hang it ends without closing the GPU:
 * the end of the process is what stops the kernel (gpu.h, Deadlines). */
int runner__session_body(void *arg);

/* ---- sessions_plan.c -------------------------------------------------- */

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
 * sessions), but no more than the first look's sessions or
 * RUNNER_SESSIONS, whichever is more (a round of 30 blocks is 4 sessions
 * of 7-8 blocks; after a first look of 2 sessions, 4 of them), nor
 * RUNNER_ROUND_SESSIONS, at least 1 and at most round_blocks. */
int runner__round_sessions(int round_blocks, int first_blocks, int first_sessions);

/* The plan of a run's sessions (runner__run_sessions): the first k share
 * the first look's blocks; then, while some case is undecided, each round
 * times those cases alone up to the next look (runner__next_round), its
 * blocks numbered on from where the last round ended and shared out over
 * as many sessions as the first look's, longer as the rounds grow
 * (runner__round_sessions): blocks inside one process share what stays
 * fixed for its life (docs/verdicts.md, "Sessions"), and the rule assumes
 * blocks that do not. */
struct plan {
	struct run *run;
	const int *sel;
	int nsel;
	int blocks, k, done;
	/* The round under way: blocks [r_lo, r_lo + r_n) of the cases
	 * cur[0..ncur) in r_m sessions, r_i of them planned. */
	int r_lo, r_n, r_m, r_i, ncur;
	const int *cur;
	int *more;
	int s;                  /* sessions planned so far */
	double t0;              /* the start of the timing phase */
};

/* The next session of the plan into *arg, with the sessions so far and in
 * its round (*of, for messages); false when there is none. Asked on the
 * last line of the session before (on_session_end), when the judge has all
 * of that session's lines: the elapsed time it checks against max_seconds
 * leaves out that session's close. */
bool runner__plan_next(struct plan *p, struct session_arg *arg, int *of);

#endif
