/* The pair runner (run/runner.c) without a GPU. The runner is linked with
 * gpu/gpu.c and a fake backend defined here in place of CUDA and HIP
 * (tests/runner.cmake leaves gpu_cuda.c and gpu_hip.c out), while compiles go
 * through the real rtc path: qual-compile children and the real nvrtc. The
 * fake's device memory is host memory; its "kernel" writes the fixture's
 * expected output (the oracle's values as f16) into the case's output buffer,
 * or misbehaves on purpose, and its timings are made up. Each test runs
 * runner_run() on one or two cases and checks the JSON lines it wrote (and what
 * the fake saw) against what the runner promises: pair order, exact blame,
 * poisoned outputs, restored inputs, verdicts and exit statuses. Every stream
 * is also validated against docs/schema/lines.schema.json by
 * tests/tools/validate_lines.py. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "common/exitcode.h"
#include "fixtures/fixture.h"
#include "gpu/gpu_backend.h"
#include "oracles/half.h"
#include "compile/rtc.h"
#include "run/runner.h"
#include "common/xalloc.h"
#include "tests/unit/test_main.h"

/* The session supervisor, to reach its relay. */
#include "run/sessions.c"

/* The two cases the tests run: small (both compile in about 0.2 s with
 * nvrtc 13.0) and of different kernels, buffer counts and output positions
 * (gemm_i8's output is its last buffer, conv3x3's the fourth of six). */
#define CASE_GEMM "gemm_i8-256x512x256"
#define CASE_WGMMA_I8 "gemm_i8_wgmma-256x1024x1024"
#define CASE_CONV "conv3x3_f16-7x7x512x512"
/* A user fixture with "oracle": "baseline" (tests/data/fixtures/differential):
 * no expected values; the fake's "kernel" writes a pattern of its own. */
#define CASE_DIFF "diff_f16-1024"
/* Its i32 twin (tests/data/fixtures/differential_i32): every bit pattern,
 * the all-ones poison among them, is a value. */
#define CASE_DIFF_I32 "diff_i32-1024"

/* A made-up graph time: 32 launches of 10 us, in ns. */
#define FAKE_GRAPH_NS 320000.0
/* Host time above the device time, per graph (0.3 us per launch, as
 * measured on the H200: docs in /work/shared/DESIGN.md). */
#define FAKE_HOST_EXTRA_NS (32 * 300.0)

/* The output element a wrong arm gets wrong, and how many trailing elements
 * a skipping arm leaves unwritten. */
#define WRONG_ELEM 5
#define SKIP_COUNT 17

/* The byte of the first input buffer that a corrupting arm overwrites. */
#define CORRUPT_BYTE 100

#define FAKE_FAULT_TEXT \
	"cuGraphLaunch: an illegal memory access was encountered (CUDA_ERROR_ILLEGAL_ADDRESS)"

/* ---- the fake backend -------------------------------------------------- */

/* What one arm's code does when its graph runs. Counts are 0-based; -1 is
 * never. "Executions" count every replay of the arm's graph in a case,
 * gpu_graph_run and gpu_graph_time alike, so from_exec = the warm-up count
 * (cfg.warmup, RUNNER_WARMUP) starts a misbehaviour with the timed pairs. */
struct fake_arm {
	int wrong_from;   /* from this execution on, element WRONG_ELEM is off */
	int skip_from;    /* from this execution on, the last SKIP_COUNT
			   * elements are not written */
	int corrupt_from; /* from this execution on, byte CORRUPT_BYTE of the
			   * first input buffer is overwritten */
	int fault_run;    /* this gpu_graph_run call faults */
	int fault_time;   /* this gpu_graph_time call faults: the pair index */
	double factor;    /* graph time relative to FAKE_GRAPH_NS */
	bool timed_only;  /* wrong, skip and corrupt only in timed replays
			   * (gpu_graph_time), never in checked runs */
	int hang_run;     /* this gpu_graph_run call does not finish */
	int hang_time;    /* this gpu_graph_time call does not finish */
	double run_ms;    /* host time each gpu_graph_run takes (a sleep) */
	int kill_at;      /* the process dies (by kill_signal, 0: SIGKILL) at
			   * this gpu_graph_time call, counted from 1 (in a
			   * session: a crash of the session's process); 0:
			   * never */
	int kill_signal;
	int kill_at_total; /* as kill_at, but counting this arm's gpu_graph_time
			    * calls of every case in every process of the run
			    * (sessions included), from 1; 0: never */
};

static const struct fake_arm arm_ok = {-1, -1, -1, -1, -1, 1.0, false, -1, -1, 0, 0, 0, 0};

/* The pad test_pad asks for (--pad-mib 3): no buffer of the fake's cases
 * with its slack is this size. */
#define FAKE_PAD_BYTES ((size_t)3 << 20)

/* A device allocation: host memory, plus what happened to it since the last
 * graph execution. The runner allocates RUNNER_SHIFT_SPAN bytes more than a
 * buffer needs and addresses it at a shift (a multiple of RUNNER_SHIFT_STEP)
 * that changes between blocks: p is the view at the shift last addressed,
 * bytes the buffer's own size, learnt from the first copy into it. */
struct fake_alloc {
	unsigned char *mem;
	size_t cap;            /* what gpu_alloc asked for */
	unsigned char *p;
	size_t bytes;          /* the buffer's size: the first copy's (0: none yet) */
	bool fresh;            /* the view holds nothing written yet */
	bool uploaded; /* uploaded since the last execution */
	bool poisoned; /* memset since the last execution */
};

/* A case the fake knows: built with fixture_build, as the runner builds it,
 * and its expected output as f16 bit patterns. */
struct fake_case {
	struct fixture_case c;
	uint16_t *want;
	/* Per arm, over every graph of the arm in this case (a new block
	 * makes new graphs): executions, gpu_graph_run and gpu_graph_time
	 * calls. */
	int execs[2], runs[2], times[2];
};

struct fake_module {
	struct gpu_module base; /* first: gpu.c's part */
	int arm;                /* 0 baseline, 1 candidate: by its code */
	char kernel[64];
};

struct fake_graph {
	struct gpu_graph base;  /* first: gpu.c's part */
	int arm;
	struct fake_case *fc;
	struct fake_alloc *buf[FIXTURE_MAX_BUFFERS];
	unsigned char *view[FIXTURE_MAX_BUFFERS]; /* buf[i]->p when made */
	double factor;          /* this graph's own speed (fk.instance) */
	bool executed;
};

/* One gpu_graph_time call, in call order. */
struct fake_time {
	int arm;
	const char *case_name;
	double device_ns;
	double host_ns;
};

#define FAKE_MAX_ALLOCS 64
/* runner_config.flush_bytes in every scenario: small, and unlike any
 * fixture buffer's size, so that the fake tells a flush from a poisoning. */
#define FAKE_FLUSH_BYTES ((size_t)3 * 65536 + 256)
#define FAKE_MAX_CASES 4
#define FAKE_MAX_TIMES 1024
#define FAKE_MAX_LOADS 256
#define FAKE_MAX_CODES 16
#define FAKE_MAX_COMPILED 16

/* The fake's whole state: set up per test by scenario_run(). */
static struct {
	/* Behaviour. */
	struct fake_arm arm[2];
	double noise;      /* relative half-width of the uniform timing noise */
	double instance;   /* scenario.instance */
	const char *slow_case; /* scenario.slow_case: its candidate's times ... */
	double slow_factor;    /* ... times this */
	int per_block;     /* the run's pairs per block (all pairs: one load) */
	bool flush_expected; /* the run flushes before every timed replay */
	bool flushed;      /* a flush since the last timed replay */
	int flushes;
	uint64_t rng;
	int open_rc;       /* what the CUDA backend's open returns */
	char arch[16];     /* the device's arch ("" : sm_90) */
	char bus[32];      /* the device's pci bus id ("": none) */
	struct fake_case cases[FAKE_MAX_CASES];
	int ncases;

	/* Device state. */
	struct fake_alloc allocs[FAKE_MAX_ALLOCS];
	int nalloc;
	int allocs_of_pad;  /* allocations of exactly FAKE_PAD_BYTES */
	int live_modules, live_graphs;
	bool dead;         /* a fault happened: every later call fails */
	/* The buffers (and views) of the graph made while no other was live,
	 * which the other arm's graph must share. */
	struct fake_alloc *shared[FIXTURE_MAX_BUFFERS];
	unsigned char *shared_view[FIXTURE_MAX_BUFFERS];
	/* Which arm each code image belongs to: the runner keeps one compiled
	 * image per arm (and kernel source), and loads the baseline's first
	 * the first time; later loads are told apart by the image. */
	struct {
		const void *code;
		int arm;
	} codes[FAKE_MAX_CODES];
	int ncodes;

	/* What the runner did. */
	int opens, closes;
	/* The kernel of the first module loaded since the last open, and
	 * whether another kernel's was loaded in the same context. */
	char ctx_kernel[64];
	bool ctx_mixed;
	int loads;
	struct {
		int arm;
		char kernel[64];
	} load[FAKE_MAX_LOADS];
	int graphs_made;
	int maps_made;      /* tensor maps encoded */
	int maps_checked;   /* tensor maps of a graph found naming its buffer */
	uint64_t map_addr_seen[16]; /* distinct addresses the first map named */
	int nmap_addr_seen;
	int shifts_seen;    /* view moves: an op at a new shift of a buffer */
	/* Allocations a graph's buffer 0 lay in, per case (a later case's
	 * may lie where an earlier one's were freed). */
	struct {
		const void *fc;
		unsigned char *mem;
	} set_seen[32];
	int nset_seen;
	uint64_t shift_set; /* bit k: some buffer was seen at shift k steps */
	int nlaunch_bad;    /* graphs of other than RUNNER_REPLAYS launches */
	int execs[2];       /* executions per arm, all cases */
	int first_execs;    /* first executions of a graph */
	int first_fresh;    /* ... that found a poisoned output and fresh inputs */
	int resets;         /* executions after a poison, first or not */
	int calls_after_fault;
	/* Hangs: the wait limit in force at each arm's first gpu_graph_run and
	 * at the first gpu_graph_time (first case), and at the hang. */
	bool hung;
	double first_run_limit[2];
	double first_time_limit;
	double hang_limit;
	int on_crash_calls; /* runner_config.on_crash calls, and the signal */
	int on_crash_signal;
	int on_hang_calls;  /* runner_config.on_hang calls, and the status */
	int on_hang_status;
	struct fake_time times[FAKE_MAX_TIMES];
	int ntime;
	int problems;       /* misuse of the backend; the first one in problem */
	char problem[512];
	/* The device refuses the first open of every process (as one in an
	 * exclusive compute mode does while another process holds it), and
	 * the n-th close of the run, over every process, dies (SIGSEGV: a
	 * driver crash in a session's teardown); 0: none. */
	bool busy_first_open;
	bool fail_reopen;  /* every open after a process's first fails */
	bool opened_once;
	int crash_at_close;
	/* Each open in a session takes this many milliseconds times one more
	 * than the opens begun before it over the run, mod 4: the later of
	 * sessions opening together take longer (0: opens take no time). */
	int slow_open_ms;
	/* "case arm" of each compile that on_compile saw alone in flight, in
	 * order. */
	char compiled[FAKE_MAX_COMPILED][96];
	int ncompiled;
} fk;

/* gpu_graph_time calls per arm over every process of a run: shared memory
 * that the sessions inherit (fake_arm's kill_at_total). */
static int *fk_times_total;

/* Every process's opens ('o'), refused opens ('f'), first work on the
 * device ('w': its first module load) and closes ('c'), in order, over
 * every process of a run (shared like fk_times_total), each at a tick of
 * one clock that every call on the device also reads; each process's span
 * of work, its first call on the device to its last but its close; and
 * what broke the rule that a session works only alone: no other process
 * opens, closes or works during its span, and every process that closed
 * has ended and been reaped before it starts (test_sessions_one_at_a_time).
 * Sessions that opened and wait for their turn may be there, and so may
 * ones that worked and keep their context, idle, until they are told to
 * close (session_arg.linger). */
#define FK_EVENTS 512
#define FK_PROCS 64
static struct fk_shared {
	int nev;
	struct {
		pid_t pid;
		char kind;
		int tick;
	} ev[FK_EVENTS];
	int clock;
	int closes;      /* fake_close() calls over every process */
	int opens_begun; /* fake_open() calls in sessions (fk.slow_open_ms) */
	int nproc;
	struct {
		pid_t pid;
		int first, last;
	} proc[FK_PROCS];
	int violations;
	char violation[256];
	/* Graphs made, over every process, and those made with a carve-out
	 * other than the one the first was made with (gpu_set_carveout). */
	int graphs, carveout_first, carveout_other;
	/* Opens that succeeded, over every process, and contexts in which
	 * modules of more than one kernel were loaded (case_contexts). */
	int opened, mixed_contexts;
} *fk_sh;
static bool fk_worked; /* this process has done its first work */
static int fk_slot;    /* its fk_sh->proc[] entry, once it has */

static int fk_tick(void)
{
	return __atomic_add_fetch(&fk_sh->clock, 1, __ATOMIC_SEQ_CST);
}

static void fk_event(char kind)
{
	int i = __atomic_fetch_add(&fk_sh->nev, 1, __ATOMIC_SEQ_CST);

	if (i < FK_EVENTS) {
		fk_sh->ev[i].pid = getpid();
		fk_sh->ev[i].kind = kind;
		fk_sh->ev[i].tick = fk_tick();
	}
}

static void fk_violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fk_violation(const char *fmt, ...)
{
	va_list ap;

	if (__atomic_fetch_add(&fk_sh->violations, 1, __ATOMIC_SEQ_CST) != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(fk_sh->violation, sizeof fk_sh->violation, fmt, ap);
	va_end(ap);
}

/* How many events of kind the log holds. */
static int fk_count(char kind)
{
	int n = 0;

	for (int i = 0; i < fk_sh->nev && i < FK_EVENTS; i++)
		n += fk_sh->ev[i].kind == kind;
	return n;
}

/* The most events of kind that came with no first work ('w') between
 * them. */
static int fk_longest_run(char kind)
{
	int best = 0, run = 0;

	for (int i = 0; i < fk_sh->nev && i < FK_EVENTS; i++) {
		char k = fk_sh->ev[i].kind;

		if (k == kind)
			best = ++run > best ? run : best;
		else if (k == 'w')
			run = 0;
	}
	return best;
}

/* How many events of the kinds in kinds came before the compile phase
 * ended (the last 'k', which must be there). */
static int fk_before_compiles_end(const char *kinds)
{
	int last_k = -1, n = 0;

	for (int i = 0; i < fk_sh->nev && i < FK_EVENTS; i++)
		if (fk_sh->ev[i].kind == 'k')
			last_k = i;
	assert_true(last_k >= 0);
	for (int i = 0; i < last_k; i++)
		n += strchr(kinds, fk_sh->ev[i].kind) != NULL;
	return n;
}

/* How many of the processes that worked on the device are gone: ended and
 * reaped (a zombie still answers kill(pid, 0)). */
static int fk_gone(void)
{
	int gone = 0;

	for (int p = 0; p < fk_sh->nproc && p < FK_PROCS; p++)
		gone += kill(fk_sh->proc[p].pid, 0) < 0 && errno == ESRCH;
	return gone;
}

/* A call on the device, at its tick: this process's span grows. */
static void fk_work(void)
{
	int t = fk_tick();

	if (!fk_worked)
		return;  /* its first, fk_first_work(), makes its span */
	fk_sh->proc[fk_slot].last = t;
}

/* Whether event i is a process's close with no open of its after it: its
 * last context closed (a process that gives each case a context of its
 * own closes and opens again between its cases). */
static bool fk_last_close(int i, int n)
{
	if (fk_sh->ev[i].kind != 'c')
		return false;
	for (int k = i + 1; k < n; k++)
		if (fk_sh->ev[k].pid == fk_sh->ev[i].pid && fk_sh->ev[k].kind == 'o')
			return false;
	return true;
}

/* At a process's first work: every other process that closed its last
 * context must be gone (a zombie, not yet reaped, still answers
 * kill(pid, 0)). */
static void fk_first_work(void)
{
	int n = fk_sh->nev < FK_EVENTS ? fk_sh->nev : FK_EVENTS;

	if (fk_worked)
		return;
	for (int i = 0; i < n; i++) {
		pid_t pid = fk_sh->ev[i].pid;

		if (!fk_last_close(i, n) || pid == getpid() ||
		    (kill(pid, 0) < 0 && errno == ESRCH))
			continue;
		fk_violation("process %d worked on the device while process %d, which closed "
			     "its context, was still there", (int)getpid(), (int)pid);
	}
	fk_event('w');
	fk_slot = __atomic_fetch_add(&fk_sh->nproc, 1, __ATOMIC_SEQ_CST);
	if (fk_slot >= FK_PROCS) {
		fk_violation("more than %d processes worked on the device", FK_PROCS);
		fk_slot = FK_PROCS - 1;
	}
	fk_sh->proc[fk_slot].pid = getpid();
	fk_sh->proc[fk_slot].first = fk_sh->proc[fk_slot].last = fk_tick();
	fk_worked = true;
}

/* After the run: no process opened, closed or worked on the device during
 * another's span of work. Fails the test with the first thing found. */
static void assert_one_at_a_time(void)
{
	int n = fk_sh->nev < FK_EVENTS ? fk_sh->nev : FK_EVENTS;
	int np = fk_sh->nproc < FK_PROCS ? fk_sh->nproc : FK_PROCS;

	for (int p = 0; p < np; p++) {
		int lo = fk_sh->proc[p].first, hi = fk_sh->proc[p].last;

		for (int i = 0; i < n; i++)
			if (strchr("ocfw", fk_sh->ev[i].kind) && fk_sh->ev[i].pid != fk_sh->proc[p].pid &&
			    fk_sh->ev[i].tick > lo && fk_sh->ev[i].tick < hi)
				fk_violation("process %d's '%c' came while process %d worked",
					     (int)fk_sh->ev[i].pid, fk_sh->ev[i].kind,
					     (int)fk_sh->proc[p].pid);
		for (int q = 0; q < np; q++)
			if (q != p && fk_sh->proc[q].first < hi && fk_sh->proc[q].last > lo)
				fk_violation("processes %d and %d worked on the device at once",
					     (int)fk_sh->proc[p].pid, (int)fk_sh->proc[q].pid);
	}
	if (fk_sh->violations)
		fail_msg("%s", fk_sh->violation);
}

static void fake_problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fake_problem(const char *fmt, ...)
{
	va_list ap;

	if (fk.problems++ == 0) {
		va_start(ap, fmt);
		vsnprintf(fk.problem, sizeof fk.problem, fmt, ap);
		va_end(ap);
	}
}

/* Uniform in [-1, 1): xorshift64, seeded per test so runs repeat. */
static double fake_uniform(void)
{
	fk.rng ^= fk.rng << 13;
	fk.rng ^= fk.rng >> 7;
	fk.rng ^= fk.rng << 17;
	return (double)(fk.rng >> 11) / (double)(1ull << 52) - 1.0;
}

/* Every call after a fault fails, as a CUDA context does after an illegal
 * address (the error is sticky). */
static int fake_dead(struct qual_msg *msg)
{
	fk.calls_after_fault++;
	return qual_fail(msg, QUAL_EGPU,
			 "cuStreamSynchronize: an illegal memory access was encountered "
			 "(CUDA_ERROR_ILLEGAL_ADDRESS)");
}

/* A graph that does not finish: what the real backends return when the
 * wait runs past the gpu's limit. */
static int fake_hang(const struct gpu_graph *g, struct qual_msg *msg)
{
	fk.hung = true;
	fk.hang_limit = g->gpu->wait_limit_ms;
	return qual_fail(msg, QUAL_EHANG, "kernel did not finish within %.0f ms",
			 g->gpu->wait_limit_ms);
}

/* After a hang the runtime must not be called at all (gpu.h, Deadlines):
 * gpu.c answers for it. Every fake entry point checks. */
static void fake_check_hung(const char *call)
{
	if (fk.hung)
		fake_problem("%s called after a hang", call);
}

static int fake_fault(struct qual_msg *msg)
{
	fk.dead = true;
	return qual_fail(msg, QUAL_EGPU, "%s", FAKE_FAULT_TEXT);
}

/* The allocation dptr addresses at one of its shifts; its view moves there
 * (what the new view holds is unknown until uploaded or poisoned). */
static struct fake_alloc *fake_find(uint64_t dptr)
{
	for (int i = 0; i < fk.nalloc; i++) {
		struct fake_alloc *a = &fk.allocs[i];
		uint64_t mem = (uint64_t)(uintptr_t)a->mem;

		if (dptr < mem || dptr >= mem + a->cap)
			continue;
		if (dptr > mem + RUNNER_SHIFT_SPAN - RUNNER_SHIFT_STEP) {
			fake_problem("address at shift %llu: beyond the slack",
				     (unsigned long long)(dptr - mem));
			return NULL;
		}
		if ((dptr - mem) % RUNNER_SHIFT_STEP != 0) {
			fake_problem("address at shift %llu: not a multiple of %d",
				     (unsigned long long)(dptr - mem), RUNNER_SHIFT_STEP);
			return NULL;
		}
		if (a->p != a->mem + (dptr - mem)) {
			a->p = a->mem + (dptr - mem);
			a->uploaded = a->poisoned = false;
			a->fresh = true;
			fk.shifts_seen++;
		}
		fk.shift_set |= 1ull << ((dptr - mem) / RUNNER_SHIFT_STEP);
		return a;
	}
	return NULL;
}

/* What the fake device is: an open's info, and the probe's (describe). */
static void fake_info(struct gpu_info *info, int ordinal)
{
	snprintf(info->vendor, sizeof info->vendor, "nvidia");
	snprintf(info->name, sizeof info->name, "Fake H200");
	snprintf(info->arch, sizeof info->arch, "%s", fk.arch[0] ? fk.arch : "sm_90");
	snprintf(info->driver, sizeof info->driver, "fake 13.0");
	info->ordinal = ordinal;
	snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%s", fk.bus);
	info->shared = !fk.busy_first_open;
}

/* The test's own process: a run of one process opens the fake there. */
static pid_t fk_test_pid;

static void *fake_runtime_idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* In a session, a thread of the runtime's own, as CUDA and NVML start
 * them: a signal for the process may be delivered to it (a lingering
 * session's request to close must reach the session all the same). It
 * ends with the process. */
static void fake_runtime_thread(void)
{
	pthread_t th;

	if (pthread_create(&th, NULL, fake_runtime_idle, NULL) == 0)
		pthread_detach(th);
}

static int fake_open(const char *vendor, int rc, int ordinal, struct gpu **out,
		     struct qual_msg *msg)
{
	struct gpu *g;

	if (rc < 0)
		return qual_fail(msg, rc, "fake %s: %s", vendor, qual_strerror(rc));
	if (fk.fail_reopen && fk.opens > 0)
		return qual_fail(msg, QUAL_EGPU, "fake %s: out of memory", vendor);
	if (fk.busy_first_open && !fk.opened_once) {
		fk.opened_once = true;
		fk_event('f');
		return qual_fail(msg, QUAL_EGPU, "fake %s: the device is busy", vendor);
	}
	g = xcalloc(1, sizeof *g);
	fake_info(&g->info, ordinal);
	if (fk.slow_open_ms && getpid() != fk_test_pid) {
		int k = __atomic_fetch_add(&fk_sh->opens_begun, 1, __ATOMIC_SEQ_CST);

		usleep((useconds_t)(fk.slow_open_ms * (k % 4 + 1)) * 1000);
	}
	if (getpid() != fk_test_pid)
		fake_runtime_thread();
	/* A process's first work is once, whatever contexts it makes. */
	if (fk.opens == 0)
		fk_worked = false;
	fk.opens++;
	fk.ctx_kernel[0] = '\0';
	fk.ctx_mixed = false;
	__atomic_add_fetch(&fk_sh->opened, 1, __ATOMIC_SEQ_CST);
	fk_event('o');
	*out = g;
	return 0;
}

static int fake_cuda_open(int ordinal, struct gpu **out, struct qual_msg *msg)
{
	return fake_open("cuda", fk.open_rc, ordinal, out, msg);
}

/* The probe's question (gpu_describe): what an open would say, no open. */
static int fake_cuda_describe(int ordinal, struct gpu_info *info, struct qual_msg *msg)
{
	if (fk.open_rc < 0)
		return qual_fail(msg, fk.open_rc, "fake cuda: %s", qual_strerror(fk.open_rc));
	fake_info(info, ordinal);
	return 0;
}

static int fake_hip_open(int ordinal, struct gpu **out, struct qual_msg *msg)
{
	return fake_open("hip", QUAL_ENODEV, ordinal, out, msg);
}

static void fake_close(struct gpu *g)
{
	fake_check_hung("close");
	/* gpu.c frees what the runner left before the backend closes. */
	if (fk.live_graphs || fk.live_modules || fk.nalloc)
		fake_problem("gpu closed with %d graphs, %d modules, %d allocations live",
			     fk.live_graphs, fk.live_modules, fk.nalloc);
	fk.closes++;
	fk_event('c');
	if (fk.crash_at_close) {
		/* One count over every process, taken at once: closes may
		 * come together (lingering sessions asked at once). */
		if (__atomic_add_fetch(&fk_sh->closes, 1, __ATOMIC_SEQ_CST) == fk.crash_at_close) {
			struct rlimit none = {0, 0};

			/* No core file; not the test framework's handler. */
			setrlimit(RLIMIT_CORE, &none);
			signal(SIGSEGV, SIG_DFL);
			raise(SIGSEGV);
		}
	}
	free(g);
}

/* The first module loaded while none is live is the baseline's, the second
 * the candidate's: runner.c's prepare_arm loads arm 0 then arm 1, and frees
 * both at the end of the case. */
static int fake_module_load(struct gpu *g, const void *code, size_t size,
			    const char *kernel, struct gpu_module **out,
			    struct qual_msg *msg)
{
	struct fake_module *m;

	(void)g;
	fake_check_hung("module_load");
	fk_work();
	if (fk.dead)
		return fake_dead(msg);
	fk_first_work();
	/* Real code: a CUBIN, an ELF image. */
	if (size < 4 || memcmp(code, "\177ELF", 4) != 0)
		fake_problem("module for '%s' is not an ELF image", kernel);
	if (fk.live_modules >= 2)
		fake_problem("a third module loaded while two are live");
	m = xcalloc(1, sizeof *m);
	m->arm = -1;
	for (int i = 0; i < fk.ncodes; i++)
		if (fk.codes[i].code == code)
			m->arm = fk.codes[i].arm;
	if (m->arm < 0) {
		m->arm = fk.live_modules;
		if (fk.ncodes < FAKE_MAX_CODES)
			fk.codes[fk.ncodes++] = (typeof(fk.codes[0])){code, m->arm};
	}
	snprintf(m->kernel, sizeof m->kernel, "%s", kernel);
	if (!fk.ctx_kernel[0])
		snprintf(fk.ctx_kernel, sizeof fk.ctx_kernel, "%s", kernel);
	else if (strcmp(fk.ctx_kernel, kernel) != 0 && !fk.ctx_mixed) {
		fk.ctx_mixed = true;
		__atomic_add_fetch(&fk_sh->mixed_contexts, 1, __ATOMIC_SEQ_CST);
	}
	if (fk.loads < FAKE_MAX_LOADS) {
		fk.load[fk.loads].arm = m->arm;
		snprintf(fk.load[fk.loads].kernel, sizeof fk.load[0].kernel, "%s", kernel);
	}
	fk.loads++;
	fk.live_modules++;
	*out = &m->base;
	return 0;
}

static void fake_module_free(struct gpu_module *m)
{
	fake_check_hung("module_free");
	fk_work();
	fk.live_modules--;
	free(m);
}

static int fake_alloc(struct gpu *g, size_t bytes, uint64_t *dptr, struct qual_msg *msg)
{
	struct fake_alloc *a;

	(void)g;
	fake_check_hung("alloc");
	fk_work();
	if (fk.dead)
		return fake_dead(msg);
	if (fk.nalloc == FAKE_MAX_ALLOCS)
		return qual_fail(msg, QUAL_ENOMEM, "fake: out of allocation slots");
	if (bytes < RUNNER_SHIFT_SPAN) {
		fake_problem("allocation of %zu bytes: no room to shift", bytes);
		return qual_fail(msg, QUAL_EINVAL, "fake: allocation too small");
	}
	fk.allocs_of_pad += bytes == FAKE_PAD_BYTES;
	a = &fk.allocs[fk.nalloc++];
	memset(a, 0, sizeof *a);
	/* Large and mostly untouched: the host maps pages as they are used. */
	a->p = a->mem = xmalloc(bytes);
	a->cap = bytes;
	a->fresh = true;
	*dptr = (uint64_t)(uintptr_t)a->mem;
	return 0;
}

static int fake_free(struct gpu *g, uint64_t dptr)
{
	struct fake_alloc *a = fake_find(dptr);

	(void)g;
	fake_check_hung("free");
	fk_work();
	if (!a || a->p != a->mem) {
		fake_problem("free of an unknown address");
		return QUAL_EINVAL;
	}
	free(a->mem);
	/* Graphs hold pointers into allocs[], but none outlives its case's
	 * buffers, so compaction is safe here. */
	*a = fk.allocs[--fk.nalloc];
	return 0;
}

static struct fake_alloc *fake_span(uint64_t dptr, size_t bytes, const char *what)
{
	struct fake_alloc *a = fake_find(dptr);

	if (!a) {
		fake_problem("%s of an unknown address", what);
		return NULL;
	}
	if (!a->bytes)
		a->bytes = bytes;
	if (bytes > a->bytes || (size_t)(a->p - a->mem) + a->bytes > a->cap) {
		fake_problem("%s of %zu bytes into %zu", what, bytes, a->bytes);
		return NULL;
	}
	/* Device memory not written since the view moved holds whatever was
	 * there: not the poison. */
	if (a->fresh) {
		memset(a->p, 0xa5, a->bytes);
		a->fresh = false;
	}
	return a;
}

static int fake_upload(struct gpu *g, uint64_t dptr, const void *src, size_t bytes,
		       struct qual_msg *msg)
{
	struct fake_alloc *a;

	(void)g;
	fake_check_hung("upload");
	fk_work();
	if (fk.dead)
		return fake_dead(msg);
	if (!(a = fake_span(dptr, bytes, "upload")))
		return qual_fail(msg, QUAL_EINVAL, "fake: bad upload");
	memcpy(a->p, src, bytes);
	a->uploaded = bytes == a->bytes;
	return 0;
}

static int fake_download(struct gpu *g, void *dst, uint64_t dptr, size_t bytes,
			 struct qual_msg *msg)
{
	struct fake_alloc *a;

	(void)g;
	fake_check_hung("download");
	fk_work();
	if (fk.dead)
		return fake_dead(msg);
	if (!(a = fake_span(dptr, bytes, "download")))
		return qual_fail(msg, QUAL_EINVAL, "fake: bad download");
	memcpy(dst, a->p, bytes);
	return 0;
}

static int fake_memset(struct gpu *g, uint64_t dptr, int value, size_t bytes,
		       struct qual_msg *msg)
{
	struct fake_alloc *a;

	(void)g;
	fake_check_hung("memset");
	fk_work();
	if (fk.dead)
		return fake_dead(msg);
	if (!(a = fake_span(dptr, bytes, "memset")))
		return qual_fail(msg, QUAL_EINVAL, "fake: bad memset");
	if (bytes == FAKE_FLUSH_BYTES) {
		fk.flushed = true;
		fk.flushes++;
	}
	memset(a->p, value, bytes);
	a->poisoned = bytes == a->bytes;
	return 0;
}

/* Finds the case a graph is for: the module's kernel, the scalars and the
 * buffer sizes must all match. */
static struct fake_case *fake_match(const char *kernel, void **params)
{
	for (int i = 0; i < fk.ncases; i++) {
		struct fake_case *fc = &fk.cases[i];
		const struct fixture_case *c = &fc->c;
		bool ok = strcmp(c->kernel, kernel) == 0;

		for (int j = 0; ok && j < c->nbuffers; j++) {
			struct fake_alloc *a = fake_find(*(const uint64_t *)params[j]);
			ok = a && (a->bytes ? a->bytes == c->buffers[j].bytes :
				   (size_t)(a->p - a->mem) + c->buffers[j].bytes <= a->cap);
		}
		for (int j = 0; ok && j < c->nscalars; j++)
			ok = *(const uint32_t *)params[c->nbuffers + j] == c->scalars[j];
		if (ok)
			return fc;
	}
	return NULL;
}

/* A tensor map that records what it was made over: the address in its
 * first 8 bytes, then the element size. */
static int fake_tensor_map_2d(struct gpu *g, struct gpu_tensor_map *map, uint64_t dptr,
			      unsigned elem_bytes, const uint64_t dims[2], uint64_t row_bytes,
			      const uint32_t box[2], struct qual_msg *msg)
{
	(void)g;
	(void)dims;
	(void)row_bytes;
	(void)box;
	fake_check_hung("tensor_map_2d");
	fk_work();
	if (fk.dead)
		return fake_dead(msg);
	if (!fake_find(dptr))
		fake_problem("tensor map over 0x%llx, which is no allocation",
			     (unsigned long long)dptr);
	memset(map, 0, sizeof *map);
	memcpy(map->bytes, &dptr, sizeof dptr);
	memcpy(map->bytes + 8, &elem_bytes, sizeof elem_bytes);
	fk.maps_made++;
	return 0;
}

/* Each of the case's tensor maps (the parameters after the buffers and the
 * scalars) must name its buffer where the graph finds it now. */
static void fake_check_maps(const struct fixture_case *c, void **params)
{
	for (int t = 0; t < c->ntensor_maps; t++) {
		const struct gpu_tensor_map *map = params[c->nbuffers + c->nscalars + t];
		uint64_t at, want = *(const uint64_t *)params[c->tensor_maps[t].buffer];
		unsigned elem;
		int k = 0;

		memcpy(&at, map->bytes, sizeof at);
		memcpy(&elem, map->bytes + 8, sizeof elem);
		if (at != want || elem != c->tensor_maps[t].elem_bytes) {
			fake_problem("'%s': tensor map %d names 0x%llx (%u-byte elements), its "
				     "buffer is at 0x%llx", c->name, t, (unsigned long long)at,
				     elem, (unsigned long long)want);
			continue;
		}
		fk.maps_checked++;
		while (t == 0 && k < fk.nmap_addr_seen && fk.map_addr_seen[k] != at)
			k++;
		if (t == 0 && k == fk.nmap_addr_seen && k < 16)
			fk.map_addr_seen[fk.nmap_addr_seen++] = at;
	}
}

static int fake_graph_new(struct gpu *g, struct gpu_module *m, const unsigned grid[3],
			  const unsigned block[3], unsigned shared_bytes, void **params,
			  int nlaunch, struct gpu_graph **out, struct qual_msg *msg)
{
	const struct fake_module *fm = (const struct fake_module *)m;
	struct fake_graph *gr;
	struct fake_case *fc;

	if (fk_sh->graphs++ == 0)
		fk_sh->carveout_first = g->carveout;
	else if (g->carveout != fk_sh->carveout_first)
		fk_sh->carveout_other++;
	fake_check_hung("graph_new");
	fk_work();
	if (fk.dead)
		return fake_dead(msg);
	fc = fake_match(fm->kernel, params);
	if (!fc) {
		fake_problem("graph of kernel '%s' matches no known case", fm->kernel);
		return qual_fail(msg, QUAL_EINVAL, "fake: unknown case");
	}
	for (int i = 0; i < 3; i++)
		if (grid[i] != fc->c.grid[i] || block[i] != fc->c.block[i])
			fake_problem("'%s': launch geometry differs from the case's", fc->c.name);
	if (shared_bytes != fc->c.shared_bytes)
		fake_problem("'%s': %u bytes of shared memory, the case asks %u",
			     fc->c.name, shared_bytes, fc->c.shared_bytes);
	if (nlaunch != RUNNER_REPLAYS)
		fk.nlaunch_bad++;
	fake_check_maps(&fc->c, params);
	gr = xcalloc(1, sizeof *gr);
	gr->arm = fm->arm;
	gr->fc = fc;
	gr->factor = 1 + fk.instance * fake_uniform();
	for (int i = 0; i < fc->c.nbuffers; i++) {
		gr->buf[i] = fake_find(*(const uint64_t *)params[i]);
		gr->view[i] = gr->buf[i]->p;
		if (i == 0) {
			int k = 0;
			while (k < fk.nset_seen && (fk.set_seen[k].fc != fc ||
						      fk.set_seen[k].mem != gr->buf[i]->mem))
				k++;
			if (k == fk.nset_seen && k < 32) {
				fk.set_seen[k].fc = fc;
				fk.set_seen[k].mem = gr->buf[i]->mem;
				fk.nset_seen++;
			}
		}
		/* One buffer set per case, shared by both arms' graphs, at
		 * the same shift. */
		if (fk.live_graphs == 0) {
			fk.shared[i] = gr->buf[i];
			fk.shared_view[i] = gr->view[i];
		} else if (fk.shared[i] != gr->buf[i] || fk.shared_view[i] != gr->view[i]) {
			fake_problem("'%s': the %s's buffer %d is not the other arm's",
				     fc->c.name, gr->arm ? "candidate" : "baseline", i);
		}
	}
	fk.graphs_made++;
	fk.live_graphs++;
	*out = &gr->base;
	return 0;
}

static void fake_graph_free(struct gpu_graph *gr)
{
	fake_check_hung("graph_free");
	fk_work();
	fk.live_graphs--;
	free(gr);
}

/* True when every buffer but the output holds the case's input again. */
static bool fake_inputs_fresh(const struct fake_graph *gr)
{
	const struct fixture_case *c = &gr->fc->c;

	for (int i = 0; i < c->nbuffers; i++) {
		if (i == c->output)
			continue;
		if (!gr->buf[i]->uploaded ||
		    memcmp(gr->buf[i]->p, c->buffers[i].host, c->buffers[i].bytes) != 0)
			return false;
	}
	return true;
}

/* The buffer holds one of the runner's poisons: all bytes 0xff, or (the
 * differential check's second run) all 0x00. */
static bool fake_all_ff(const struct fake_alloc *a)
{
	for (size_t i = 0; i < a->bytes; i++)
		if (a->p[i] != a->p[0] || (a->p[0] != 0xff && a->p[0] != 0x00))
			return false;
	return true;
}

/* One replay of the graph (timed: by gpu_graph_time): the kernel's effect
 * on the buffers. */
static void fake_execute(struct fake_graph *gr, bool timed)
{
	const struct fake_arm *plan = &fk.arm[gr->arm];
	bool misbehave = timed || !plan->timed_only;
	const struct fixture_case *c = &gr->fc->c;
	struct fake_alloc *out = gr->buf[c->output];
	uint16_t *o = (uint16_t *)(void *)out->p;
	size_t esize = fixture_elem_size(c->elem);
	int n = gr->fc->execs[gr->arm]++;
	size_t count = c->count;

	for (int i = 0; i < c->nbuffers; i++)
		if (gr->buf[i]->p != gr->view[i])
			fake_problem("'%s': a graph replayed over buffer %d moved since it was made",
				     c->name, i);

	/* A checked run starts from a poisoned output and restored inputs;
	 * the first run of each graph must be such a run. */
	if (out->poisoned) {
		fk.resets++;
		if (!fake_all_ff(out))
			fake_problem("'%s': output poisoned but not all 0xff or 0x00", c->name);
		if (!fake_inputs_fresh(gr))
			fake_problem("'%s': output poisoned but inputs not restored", c->name);
	}
	if (!gr->executed) {
		gr->executed = true;
		fk.first_execs++;
		if (out->poisoned && fake_all_ff(out) && fake_inputs_fresh(gr))
			fk.first_fresh++;
	}
	for (int i = 0; i < c->nbuffers; i++)
		gr->buf[i]->poisoned = gr->buf[i]->uploaded = false;
	fk.execs[gr->arm]++;

	if (misbehave && plan->skip_from >= 0 && n >= plan->skip_from)
		count -= SKIP_COUNT;
	memcpy(o, gr->fc->want, count * esize);
	if (misbehave && plan->wrong_from >= 0 && n >= plan->wrong_from &&
	    c->elem != FIXTURE_F16) {
		out->p[WRONG_ELEM * esize] ^= 1;
	} else if (misbehave && plan->wrong_from >= 0 && n >= plan->wrong_from) {
		double want = c->expected ? c->expected[WRONG_ELEM] :
					    half_to_double(gr->fc->want[WRONG_ELEM]);
		o[WRONG_ELEM] = half_from_double(want + 1 + (want < 0 ? -want : want));
	}
	if (misbehave && plan->corrupt_from >= 0 && n >= plan->corrupt_from) {
		for (int i = 0; i < c->nbuffers; i++) {
			const unsigned char *host = c->buffers[i].host;
			if (i == c->output || c->buffers[i].scratch)
				continue;
			gr->buf[i]->p[CORRUPT_BYTE] = (unsigned char)~host[CORRUPT_BYTE];
			break;
		}
	}
}

static int fake_graph_run(struct gpu_graph *g, struct qual_msg *msg)
{
	struct fake_graph *gr = (struct fake_graph *)g;
	const struct fake_arm *plan = &fk.arm[gr->arm];
	int k = gr->fc->runs[gr->arm]++;

	fake_check_hung("graph_run");
	fk_work();
	if (fk.dead)
		return fake_dead(msg);
	if (fk.first_run_limit[gr->arm] == 0)
		fk.first_run_limit[gr->arm] = g->gpu->wait_limit_ms;
	if (k == plan->hang_run)
		return fake_hang(g, msg);
	if (k == plan->fault_run)
		return fake_fault(msg);
	if (plan->run_ms > 0) {
		struct timespec ts = {0, (long)(plan->run_ms * 1e6)};
		nanosleep(&ts, NULL);
	}
	fake_execute(gr, false);
	return 0;
}

static int fake_graph_time(struct gpu_graph *g, double *device_ns, double *host_ns,
			   struct qual_msg *msg)
{
	struct fake_graph *gr = (struct fake_graph *)g;
	int k = gr->fc->times[gr->arm]++;
	struct fake_time *t;

	fake_check_hung("graph_time");
	fk_work();
	if (fk.dead)
		return fake_dead(msg);
	if (fk.first_time_limit == 0)
		fk.first_time_limit = g->gpu->wait_limit_ms;
	if (fk.flush_expected && !fk.flushed)
		fake_problem("'%s': a timed replay without a cache flush before it",
			     gr->fc->c.name);
	fk.flushed = false;
	if (k == fk.arm[gr->arm].hang_time)
		return fake_hang(g, msg);
	if (k == fk.arm[gr->arm].fault_time)
		return fake_fault(msg);
	if (++fk_times_total[gr->arm] == fk.arm[gr->arm].kill_at_total ||
	    k + 1 == fk.arm[gr->arm].kill_at) {
		int sig = fk.arm[gr->arm].kill_signal ? fk.arm[gr->arm].kill_signal : SIGKILL;
		struct rlimit none = {0, 0};

		/* No core file; not the test framework's handler. */
		setrlimit(RLIMIT_CORE, &none);
		signal(sig, SIG_DFL);
		raise(sig);
	}
	fake_execute(gr, true);
	*device_ns = FAKE_GRAPH_NS * fk.arm[gr->arm].factor * gr->factor *
		     (1 + fk.noise * fake_uniform());
	if (gr->arm == 1 && fk.slow_case && strcmp(gr->fc->c.name, fk.slow_case) == 0)
		*device_ns *= fk.slow_factor;
	*host_ns = *device_ns + FAKE_HOST_EXTRA_NS;
	if (fk.ntime < FAKE_MAX_TIMES) {
		t = &fk.times[fk.ntime];
		t->arm = gr->arm;
		t->case_name = gr->fc->c.name;
		t->device_ns = *device_ns;
		t->host_ns = *host_ns;
	}
	fk.ntime++;
	return 0;
}

/* The driver's occupancy count (gpu_occupancy): a figure of the arm and the
 * block size, so that the case line shows which arm's count it carries. */
static int fake_occupancy(struct gpu_module *m, unsigned block_threads, unsigned shared_bytes,
			  int *blocks, struct qual_msg *msg)
{
	(void)shared_bytes;
	(void)msg;
	*blocks = 1000 * (((struct fake_module *)m)->arm + 1) + (int)block_threads;
	return 0;
}

#define FAKE_OPS                                                               \
	.close = fake_close, .module_load = fake_module_load,                  \
	.module_free = fake_module_free, .alloc = fake_alloc,                  \
	.free = fake_free, .upload = fake_upload, .download = fake_download,   \
	.memset = fake_memset, .graph_new = fake_graph_new,                    \
	.tensor_map_2d = fake_tensor_map_2d,                                   \
	.graph_free = fake_graph_free, .graph_run = fake_graph_run,            \
	.graph_time = fake_graph_time

const struct gpu_backend gpu__cuda_backend = {
	.name = "cuda", .built = true, .open = fake_cuda_open, FAKE_OPS,
	.describe = fake_cuda_describe, .occupancy = fake_occupancy,
};
const struct gpu_backend gpu__hip_backend = {
	.name = "hip", .built = false, .open = fake_hip_open, FAKE_OPS
};

/* The scenarios' pairs and blocks unless they say otherwise: the product's
 * floor of 30 pairs in 15 blocks of 2, the sizes these tests were written
 * for (the defaults, 60 pairs in blocks of 4, are runner_defaults'). */
#define TEST_PAIRS RUNNER_MIN_PAIRS
#define TEST_PER_BLOCK 2

/* ---- scenarios ----------------------------------------------------------- */

struct scenario {
	const char *name;       /* names the stream's file */
	const char *cases[3];
	int ncases;
	int pairs;              /* 0: TEST_PAIRS */
	bool defaults;          /* the runner's own pairs and blocks: pairs
				 * and per_block are left out */
	int per_block;          /* 0: one_load (one load per arm, as these
				 * tests count loads and replays, every pair
				 * judged alone); else the pairs per block */
	double margin;          /* 0: the default */
	double instance;        /* each graph's own speed: its times are
				 * scaled by 1 + instance x U(-1, 1), drawn
				 * when the graph is made */
	const char *slow_case;  /* this case's candidate times x slow_factor */
	double slow_factor;
	int max_pairs;          /* runner_config's (0: its default) */
	double max_seconds;     /* runner_config's (0: its default) */
	uint64_t seed;          /* 0: the fake's default seed */
	uint64_t block_seed;    /* runner_config.block_seed (0: drawn) */
	bool no_flush;          /* flush_bytes 0, else FAKE_FLUSH_BYTES */
	int settle_ms;          /* cfg.settle_ms: 0 (none) unless a test
				 * of the settle sets it */
	size_t pad_bytes;       /* cfg.pad_bytes */
	int carveout_plus_1;    /* cfg.carveout + 1; 0: the default */
	bool shared_context;    /* cfg.case_contexts false; else the default */
	/* A calibration record of the device at this PCI address for the
	 * verdict line (cfg.verdict_extra); NULL: none. */
	const char *calibration_bus;
	int sessions;           /* 0: 1 (all in this process, so that the fake
				 * sees every call); else runner_config's */
	bool differ;            /* candidate compiled with -lineinfo, so that
				 * its code is not byte-identical */
	bool candidate_bad_option; /* candidate compiled with an option nvrtc
				    * rejects: every case fails to compile */
	struct fake_arm arm[2];
	double noise;
	int open_rc;
	const char *arch;       /* the fake device's arch; NULL: sm_90 */
	double hang_floor_ms;   /* 0: the default */
	double hang_factor;     /* 0: the default */
	const char *validate;   /* extra validate_lines.py arguments */
	/* The clocks: with nvml set, the fake device has a pci bus id and
	 * QUAL_NVML_LIBRARY names nvml (the fake NVML, or a path that does
	 * not exist); reasons is the fake's FAKE_NVML_REASONS. Without, the
	 * device has no bus id and the block lines no clocks. */
	const char *nvml;
	const char *reasons;
	bool busy_first_open;   /* fk's */
	bool fail_reopen;       /* fk's */
	int crash_at_close;     /* fk's */
	int slow_open_ms;       /* fk's */
	int compile_jobs;       /* runner_config's (0: its default) */
};

struct outcome {
	int status;
	json_t *lines;          /* array of every line, in order */
	char *err;              /* what runner_run wrote to err */
};

static const char *const candidate_lineinfo[] = {"-lineinfo"};
static const char *const candidate_bad[] = {"--no-such-option"};

/* cfg.on_compile: the end of the compile phase ('k', no compile in flight)
 * in the event log. */
static void fake_on_compile(const char *case_name, const char *arm, const char *all)
{
	(void)all;
	if (!case_name)
		fk_event('k');
	else if (arm && fk.ncompiled < FAKE_MAX_COMPILED)
		snprintf(fk.compiled[fk.ncompiled++], sizeof fk.compiled[0], "%s %s", case_name,
			 arm);
}

/* In place of raising a session's crash signal: records, and returns. */
static void fake_on_crash(int sig)
{
	fk.on_crash_calls++;
	fk.on_crash_signal = sig;
}

/* In place of _exit after a hang: records, and returns to the runner. */
static void fake_on_hang(int status)
{
	fk.on_hang_calls++;
	fk.on_hang_status = status;
}

static void fake_reset(void)
{
	for (int i = 0; i < fk.ncases; i++) {
		fixture_release(&fk.cases[i].c);
		free(fk.cases[i].want);
	}
	memset(&fk, 0, sizeof fk);
	fk_test_pid = getpid();
	if (!fk_times_total) {
		fk_times_total = mmap(NULL, 2 * sizeof *fk_times_total, PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		assert_true(fk_times_total != MAP_FAILED);
	}
	fk_times_total[0] = fk_times_total[1] = 0;
	if (!fk_sh) {
		fk_sh = mmap(NULL, sizeof *fk_sh, PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		assert_true(fk_sh != MAP_FAILED);
	}
	memset(fk_sh, 0, sizeof *fk_sh);
	fk_worked = false;
}

static void fake_add_case(const char *name)
{
	struct fake_case *fc = &fk.cases[fk.ncases];
	int index = fixture_find(name);

	assert_true(index >= 0);
	assert_int_equal(fixture_build(index, 0, &fc->c, NULL), 0);
	/* f16, or an i32 differential case (CASE_DIFF_I32). */
	assert_true(fc->c.elem == FIXTURE_F16 || (fc->c.elem == FIXTURE_I32 &&
						  !fc->c.expected));
	fc->want = xmalloc(fc->c.count * fixture_elem_size(fc->c.elem));
	/* A differential case has no expected values: any finite output that
	 * both arms write is right. */
	for (size_t i = 0; i < fc->c.count; i++) {
		int32_t v = (int32_t)(i % 13) - 6;

		if (fc->c.elem == FIXTURE_I32)
			memcpy((char *)fc->want + i * sizeof v, &v, sizeof v);
		else
			fc->want[i] = half_from_double(fc->c.expected ? fc->c.expected[i] :
						       (double)(i % 13) * 0.25 - 1);
	}
	fk.ncases++;
}

static void validate(const char *path, const char *args)
{
	char cmd[2048];

	if (!RUNNER_TEST_PYTHON[0])
		return;
	snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' '%s' %s", RUNNER_TEST_PYTHON,
		 RUNNER_TEST_VALIDATE, RUNNER_TEST_SCHEMA, path, args ? args : "");
	if (system(cmd) != 0)
		fail_msg("schema validation failed: %s", cmd);
}

/* Fills o->lines from text, one JSON object a line; frees text. */
static void outcome_parse(struct outcome *o, char *text)
{
	char *line, *save = NULL;

	o->lines = json_array();
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_error_t je;
		json_t *j = json_loads(line, 0, &je);
		if (!j)
			fail_msg("not json: %s: %.200s", je.text, line);
		assert_true(json_is_object(j));
		json_array_append_new(o->lines, j);
	}
	free(text);
}

/* Runs the runner on s with the fake GPU; fills o. */
static void scenario_run(const struct scenario *s, struct outcome *o)
{
	struct runner_config cfg;
	char *text = NULL;
	size_t len = 0, elen = 0;
	FILE *out, *err;
	char path[1024];

	fake_reset();
	fk.arm[0] = s->arm[0];
	fk.arm[1] = s->arm[1];
	fk.noise = s->noise;
	fk.instance = s->instance;
	fk.slow_case = s->slow_case;
	fk.slow_factor = s->slow_factor;
	fk.per_block = s->defaults ? RUNNER_PAIRS_PER_BLOCK : s->per_block ? s->per_block :
		       (s->pairs ? s->pairs : TEST_PAIRS);
	fk.rng = s->seed ? s->seed : 0x9e3779b97f4a7c15ull;
	fk.open_rc = s->open_rc;
	fk.busy_first_open = s->busy_first_open;
	fk.fail_reopen = s->fail_reopen;
	fk.crash_at_close = s->crash_at_close;
	fk.slow_open_ms = s->slow_open_ms;
	snprintf(fk.arch, sizeof fk.arch, "%s", s->arch ? s->arch : "");
	snprintf(fk.bus, sizeof fk.bus, "%s", s->nvml ? "00000000:1B:00.0" : "");
	if (s->nvml)
		setenv("QUAL_NVML_LIBRARY", s->nvml, 1);
	else
		unsetenv("QUAL_NVML_LIBRARY");
	if (s->reasons)
		setenv("FAKE_NVML_REASONS", s->reasons, 1);
	else
		unsetenv("FAKE_NVML_REASONS");
	for (int i = 0; i < s->ncases; i++)
		fake_add_case(s->cases[i]);

	runner_config_init(&cfg);
	cfg.baseline = RUNNER_TEST_NVRTC;
	cfg.candidate = RUNNER_TEST_NVRTC;
	if (!s->defaults) {
		cfg.pairs = s->pairs ? s->pairs : TEST_PAIRS;
		if (s->per_block)
			cfg.pairs_per_block = s->per_block;
		else
			cfg.one_load = true;
	}
	cfg.block_seed = s->block_seed;
	cfg.flush_bytes = s->no_flush ? 0 : FAKE_FLUSH_BYTES;
	cfg.sessions = s->sessions ? s->sessions : 1;
	cfg.settle_ms = s->settle_ms;
	cfg.pad_bytes = s->pad_bytes;
	if (s->carveout_plus_1)
		cfg.carveout = s->carveout_plus_1 - 1;
	if (s->shared_context)
		cfg.case_contexts = false;
	if (s->calibration_bus)
		cfg.verdict_extra = json_pack("{s:{s:{s:s},s:i}}", "calibration", "device",
					      "pci_bus_id", s->calibration_bus, "runs", 5);
	if (s->compile_jobs)
		cfg.compile_jobs = s->compile_jobs;
	cfg.max_pairs = s->max_pairs;
	cfg.max_seconds = s->max_seconds;
	fk.flush_expected = !s->no_flush;
	if (s->margin > 0)
		cfg.stats.margin = s->margin;
	cfg.cases = s->cases;
	cfg.ncases = s->ncases;
	if (s->differ) {
		cfg.candidate_opts = candidate_lineinfo;
		cfg.ncandidate_opts = 1;
	}
	if (s->candidate_bad_option) {
		cfg.candidate_opts = candidate_bad;
		cfg.ncandidate_opts = 1;
	}
	cfg.on_compile = fake_on_compile;
	if (s->hang_floor_ms > 0)
		cfg.hang_floor_ms = s->hang_floor_ms;
	if (s->hang_factor > 0)
		cfg.hang_factor = s->hang_factor;
	cfg.on_hang = fake_on_hang;
	cfg.on_crash = fake_on_crash;

	out = open_memstream(&text, &len);
	err = open_memstream(&o->err, &elen);
	assert_non_null(out);
	assert_non_null(err);
	o->status = runner_run(&cfg, out, err);
	json_decref(cfg.verdict_extra);
	fclose(out);
	fclose(err);

	/* Keep the stream for validation (and for a reader of a failure). */
	snprintf(path, sizeof path, "%s/%s.jsonl", RUNNER_TEST_OUT, s->name);
	{
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		assert_int_equal(fwrite(text, 1, len, f), len);
		assert_int_equal(fclose(f), 0);
	}

	outcome_parse(o, text);
	if (fk.problems)
		fail_msg("%d backend misuse(s), first: %s", fk.problems, fk.problem);
	assert_int_equal(fk.nlaunch_bad, 0);
	if (fk.hung) {
		/* The process would have ended here: the runner handed the
		 * status to on_hang once, and nothing reached the backend after
		 * the hang (fake_check_hung), not even the frees and the close.
		 * What the device held goes with the process; here the test
		 * frees the fake's host memory itself. */
		assert_int_equal(fk.on_hang_calls, 1);
		assert_int_equal(fk.on_hang_status, o->status);
		assert_int_equal(fk.closes, 0);
		for (int i = 0; i < fk.nalloc; i++)
			free(fk.allocs[i].mem);
		fk.nalloc = 0;
	} else {
		/* Whatever happened, the runner closed the device it opened,
		 * and gpu_close freed everything (fake_close checks). */
		assert_int_equal(fk.on_hang_calls, 0);
		assert_int_equal(fk.closes, fk.opens);
		assert_int_equal(fk.live_graphs, 0);
		assert_int_equal(fk.live_modules, 0);
		assert_int_equal(fk.nalloc, 0);
	}
	validate(path, s->validate);
}

static void outcome_release(struct outcome *o)
{
	json_decref(o->lines);
	free(o->err);
	fake_reset();
}

/* ---- reading the lines --------------------------------------------------- */

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static bool has_type(const json_t *l, const char *type)
{
	return strcmp(str(l, "type"), type) == 0;
}

static int count_lines(const struct outcome *o, const char *type, const char *case_name)
{
	size_t i;
	json_t *l;
	int n = 0;

	json_array_foreach(o->lines, i, l)
		if (has_type(l, type) && (!case_name || strcmp(str(l, "case"), case_name) == 0))
			n++;
	return n;
}

/* The first line of type for case (NULL: any case), or NULL. */
static json_t *find_line(const struct outcome *o, const char *type, const char *case_name)
{
	size_t i;
	json_t *l;

	json_array_foreach(o->lines, i, l)
		if (has_type(l, type) && (!case_name || strcmp(str(l, "case"), case_name) == 0))
			return l;
	return NULL;
}

static json_t *last_line(const struct outcome *o)
{
	return json_array_get(o->lines, json_array_size(o->lines) - 1);
}

static const char *case_verdict(const struct outcome *o, const char *case_name)
{
	json_t *l = find_line(o, "case_verdict", case_name);

	assert_non_null(l);
	return str(l, "verdict");
}

static void assert_run_verdict(const struct outcome *o, const char *verdict, int status)
{
	json_t *v = last_line(o);

	assert_string_equal(str(v, "type"), "verdict");
	assert_string_equal(str(v, "verdict"), verdict);
	assert_int_equal(count_lines(o, "verdict", NULL), 1);
	assert_int_equal(o->status, status);
}

/* The error lines blaming arm ("baseline", "candidate" or NULL for none). */
static int count_errors(const struct outcome *o, const char *arm)
{
	size_t i;
	json_t *l;
	int n = 0;

	json_array_foreach(o->lines, i, l) {
		const json_t *a;
		if (!has_type(l, "error"))
			continue;
		a = json_object_get(l, "arm");
		if (arm ? strcmp(json_string_value(a) ? json_string_value(a) : "", arm) == 0 :
			  json_is_null(a))
			n++;
	}
	return n;
}

/* Asserts one error line of stage against arm in case, whose message holds
 * every string in want (NULL-terminated), and returns it. */
static json_t *assert_error(const struct outcome *o, const char *stage, const char *arm,
			    const char *case_name, const char *const *want)
{
	size_t i;
	json_t *l, *found = NULL;

	json_array_foreach(o->lines, i, l) {
		if (!has_type(l, "error") || strcmp(str(l, "arm"), arm) != 0 ||
		    strcmp(str(l, "case"), case_name) != 0)
			continue;
		if (found)
			fail_msg("two error lines against the %s in '%s'", arm, case_name);
		found = l;
	}
	if (!found)
		fail_msg("no error line against the %s in '%s'", arm, case_name);
	assert_string_equal(str(found, "stage"), stage);
	for (; want && *want; want++)
		if (!strstr(str(found, "message"), *want))
			fail_msg("error message '%s' lacks '%s'", str(found, "message"), *want);
	return found;
}

/* Asserts that an error line carries code, what a decision reads. */
static void assert_code(const json_t *line, const char *code)
{
	assert_non_null(line);
	assert_string_equal(str(line, "code"), code);
}

static void assert_case_failed(const struct outcome *o, const char *case_name,
			       const char *arm)
{
	json_t *l = find_line(o, "case_verdict", case_name);

	assert_non_null(l);
	assert_string_equal(str(l, "verdict"), "fail");
	assert_string_equal(str(l, "failed_arm"), arm);
}

/* The "max_abs_error" of arm in case's case line: a number, or -1 for null. */
static double max_abs_error(const struct outcome *o, const char *case_name, const char *arm)
{
	json_t *c = find_line(o, "case", case_name);
	json_t *e;

	assert_non_null(c);
	e = json_object_get(json_object_get(c, arm), "max_abs_error");
	assert_non_null(e);
	return json_is_null(e) ? -1 : json_number_value(e);
}

static bool close_to(double a, double b)
{
	double d = a - b;
	return (d < 0 ? -d : d) <= 1e-9 * (b < 0 ? -b : b);
}

/* Pair lines 0..npairs-1 of case, in order; pair j of block b (from 0) has
 * the candidate first when j + b is odd (under one load: odd pairs); in
 * each pair the fake timed the named arm's graph first; each timing is the
 * fake's graph time divided by the replays, under the right arm. */
static void assert_pairs(const struct outcome *o, const char *case_name, int npairs)
{
	size_t i;
	json_t *l;
	int p = 0, t = 0;

	/* The fake's time calls of this case, in order. */
	const struct fake_time *ts[FAKE_MAX_TIMES];
	int nts = 0;
	for (int k = 0; k < fk.ntime && k < FAKE_MAX_TIMES; k++)
		if (strcmp(fk.times[k].case_name, case_name) == 0)
			ts[nts++] = &fk.times[k];

	json_array_foreach(o->lines, i, l) {
		const struct fake_time *first, *second, *b, *c;
		int per = fk.per_block, b0 = p / per;
		bool cand_first = (p % per + b0) % 2 == 1;

		if (!has_type(l, "pair") || strcmp(str(l, "case"), case_name) != 0)
			continue;
		assert_int_equal(json_integer_value(json_object_get(l, "pair")), p);
		assert_string_equal(str(l, "order"), cand_first ? "candidate_first" : "baseline_first");
		assert_true(t + 1 < nts);
		first = ts[t++];
		second = ts[t++];
		assert_int_equal(first->arm, cand_first ? 1 : 0);
		assert_int_equal(second->arm, cand_first ? 0 : 1);
		b = cand_first ? second : first;
		c = cand_first ? first : second;
		assert_true(close_to(json_real_value(json_object_get(l, "baseline_ns")),
				     b->device_ns / RUNNER_REPLAYS));
		assert_true(close_to(json_real_value(json_object_get(l, "candidate_ns")),
				     c->device_ns / RUNNER_REPLAYS));
		assert_true(close_to(json_real_value(json_object_get(l, "baseline_host_ns")),
				     b->host_ns / RUNNER_REPLAYS));
		assert_true(close_to(json_real_value(json_object_get(l, "candidate_host_ns")),
				     c->host_ns / RUNNER_REPLAYS));
		p++;
	}
	assert_int_equal(p, npairs);
}

/* Every graph's first replay found a poisoned output and restored inputs. */
static void assert_fresh_starts(int graphs)
{
	assert_int_equal(fk.graphs_made, graphs);
	assert_int_equal(fk.first_execs, graphs);
	assert_int_equal(fk.first_fresh, graphs);
}

/* Case line l of case_name names the constants the case was compiled with,
 * as fixture_spec() gives them, in their order, and the target: the fake
 * device's sm_90 (no built-in case has an arch suffix). The kernel takes
 * only its buffers. */
static void assert_specialization(json_t *l, const char *case_name)
{
	json_t *spec = json_object_get(l, "specialization");
	struct fixture_case c;
	const char *key;
	json_t *v;
	int i = 0;

	assert_int_equal(fixture_spec(fixture_find(case_name), &c, NULL), 0);
	assert_true(json_is_object(spec));
	assert_true(c.ndefines > 0);
	assert_int_equal(json_object_size(spec), (size_t)c.ndefines);
	json_object_foreach(spec, key, v) {
		assert_string_equal(key, c.defines[i].name);
		assert_string_equal(json_string_value(v), c.defines[i].value);
		i++;
	}
	assert_int_equal(c.nscalars, 0);
	assert_string_equal(str(l, "target"), "sm_90");
	fixture_release(&c);
}

/* ---- the tests ----------------------------------------------------------- */

/* Both arms right, the same compiler and code, equal timings up to noise:
 * a full A/A run over two cases. */
/* With no settings, a case is timed in 60 pairs: 15 blocks of 4, two of
 * each order, as the start line says (common/sampling.h). */
static void test_defaults(void **state)
{
	struct scenario s = {
		.name = "runner_defaults", .cases = {CASE_GEMM}, .ncases = 1, .defaults = true,
		.arm = {arm_ok, arm_ok}, .noise = 0.002, .differ = true,
		.validate = "--expect-verdict neutral --expect-pairs 60",
	};
	struct outcome o = {0};
	json_t *settings, *l;
	int per_block[64] = {0}, cand_first[64] = {0}, nblocks = 0;
	size_t i;

	(void)state;
	scenario_run(&s, &o);
	settings = json_object_get(json_array_get(o.lines, 0), "settings");
	assert_int_equal(json_integer_value(json_object_get(settings, "pairs")), 60);
	assert_int_equal(json_integer_value(json_object_get(settings, "pairs_per_block")), 4);
	/* Every graph of every session made with the run's carve-out
	 * (RUNNER_CARVEOUT), which the start line says. */
	assert_true(fk_sh->graphs >= 2 * 15);
	assert_int_equal(fk_sh->carveout_first, RUNNER_CARVEOUT);
	assert_int_equal(fk_sh->carveout_other, 0);
	assert_int_equal(json_integer_value(json_object_get(settings, "carveout")),
			 RUNNER_CARVEOUT);
	/* Doubling looks, the meaning of a line without look_growth: not
	 * written. */
	assert_null(json_object_get(settings, "look_growth"));
	assert_pairs(&o, CASE_GEMM, 60);
	/* Each arm's case line carries its own module's occupancy count at the
	 * case's block size. */
	l = find_line(&o, "case", CASE_GEMM);
	{
		json_t *block = json_object_get(l, "block");
		json_int_t threads = json_integer_value(json_array_get(block, 0)) *
				     json_integer_value(json_array_get(block, 1)) *
				     json_integer_value(json_array_get(block, 2));

		assert_true(threads > 0);
		assert_int_equal(json_integer_value(json_object_get(json_object_get(
			l, "baseline"), "driver_blocks_per_sm")), 1000 + threads);
		assert_int_equal(json_integer_value(json_object_get(json_object_get(
			l, "candidate"), "driver_blocks_per_sm")), 2000 + threads);
	}
	json_array_foreach(o.lines, i, l) {
		json_int_t b;

		if (strcmp(str(l, "type"), "pair") != 0)
			continue;
		b = json_integer_value(json_object_get(l, "block"));
		assert_true(b >= 1 && b < 64);
		nblocks = b > nblocks ? (int)b : nblocks;
		per_block[b]++;
		cand_first[b] += strcmp(str(l, "order"), "candidate_first") == 0;
	}
	assert_int_equal(nblocks, 15);
	for (int b = 1; b <= nblocks; b++) {
		assert_int_equal(per_block[b], 4);
		assert_int_equal(cand_first[b], 2);
	}
	outcome_release(&o);
}

static void test_correct_identical(void **state)
{
	struct scenario s = {
		.name = "runner_correct_identical", .cases = {CASE_GEMM, CASE_CONV},
		.ncases = 2, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.validate = "--expect-verdict neutral --expect-pairs 30 --expect-identical all "
			    "--expect-case-verdict *=identical",
	};
	struct outcome o = {0};
	json_t *start;

	(void)state;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "neutral", QUAL_EXIT_PASS);
	start = json_array_get(o.lines, 0);
	assert_string_equal(str(start, "type"), "start");
	assert_true(json_is_true(json_object_get(start, "timed")));
	assert_string_equal(str(json_object_get(start, "device"), "name"), "Fake H200");
	assert_string_equal(str(start, "arch"), "sm_90");
	for (int i = 0; i < 2; i++) {
		json_t *c = find_line(&o, "case", s.cases[i]);
		assert_non_null(c);
		assert_true(json_is_true(json_object_get(c, "timed")));
		assert_true(json_is_true(json_object_get(c, "identical_code")));
		assert_true(max_abs_error(&o, s.cases[i], "baseline") == 0);
		assert_true(max_abs_error(&o, s.cases[i], "candidate") == 0);
		assert_pairs(&o, s.cases[i], 30);
		assert_string_equal(case_verdict(&o, s.cases[i]), "identical");
		assert_specialization(c, s.cases[i]);
	}
	assert_int_equal(count_lines(&o, "error", NULL), 0);
	/* Loaded in order: baseline then candidate, case by case. */
	assert_int_equal(fk.loads, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(fk.load[i].arm, i % 2);
	assert_string_equal(fk.load[0].kernel, "gemm_i8");
	assert_string_equal(fk.load[2].kernel, "conv3x3_f16");
	assert_fresh_starts(4);
	/* Each case: warm-up, 30 timed replays per arm, then one replay of the
	 * arm that did not run last. */
	assert_int_equal(fk.execs[0] + fk.execs[1], 2 * (2 * RUNNER_WARMUP + 2 * 30 + 1));
	assert_int_equal(fk.ntime, 2 * 2 * 30);
	assert_int_equal(fk.flushes, 2 * 2 * 30);
	outcome_release(&o);
}

/* Different code (the candidate compiled with -lineinfo), equal timings:
 * equivalent. */
static void test_correct_equivalent(void **state)
{
	struct scenario s = {
		.name = "runner_correct_equivalent", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .no_flush = true,
		.validate = "--expect-verdict neutral --expect-pairs 30 --expect-identical none",
	};
	struct outcome o = {0};

	(void)state;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "neutral", QUAL_EXIT_PASS);
	assert_string_equal(case_verdict(&o, CASE_GEMM), "equivalent");
	assert_pairs(&o, CASE_GEMM, 30);
	/* A graph per arm per block. Both of the first block (each warm-up
	 * is a checked run) and the first of each later block start from a
	 * poisoned output and restored inputs. */
	assert_int_equal(fk.graphs_made, 30);
	assert_int_equal(fk.first_fresh, 2 + 14);
	assert_int_equal(fk.flushes, 0);
	outcome_release(&o);
}

static void test_candidate_slower(void **state)
{
	struct scenario s = {
		.name = "runner_slower", .cases = {CASE_GEMM}, .ncases = 1, .differ = true,
		.arm = {arm_ok, arm_ok}, .noise = 0.002, .per_block = TEST_PER_BLOCK,
		.validate = "--expect-verdict regression --expect-case-verdict " CASE_GEMM "=slower",
	};
	struct outcome o = {0};
	json_t *cv;

	(void)state;
	s.arm[1].factor = 1.05;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "regression", QUAL_EXIT_REGRESSION);
	assert_string_equal(case_verdict(&o, CASE_GEMM), "slower");
	cv = find_line(&o, "case_verdict", CASE_GEMM);
	assert_int_equal(json_integer_value(json_object_get(cv, "candidate_slower")), 30);
	assert_true(json_real_value(json_object_get(cv, "ratio_median")) > 1.04);
	assert_true(json_real_value(json_object_get(cv, "ratio_median")) < 1.06);
	assert_pairs(&o, CASE_GEMM, 30);
	outcome_release(&o);
}

static void test_candidate_faster(void **state)
{
	struct scenario s = {
		.name = "runner_faster", .cases = {CASE_GEMM}, .ncases = 1, .differ = true,
		.arm = {arm_ok, arm_ok}, .noise = 0.002, .per_block = TEST_PER_BLOCK,
		.validate = "--expect-verdict improvement --expect-case-verdict " CASE_GEMM "=faster",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[1].factor = 0.95;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "improvement", QUAL_EXIT_PASS);
	assert_string_equal(case_verdict(&o, CASE_GEMM), "faster");
	assert_pairs(&o, CASE_GEMM, 30);
	outcome_release(&o);
}

/* A wrong element is caught at the warm-up check, named, and blamed on the
 * candidate; nothing is timed. */
static void test_candidate_wrong(void **state)
{
	static const char *const want[] = {"wrong output after warm-up", "element 5 (row 0, col 5)", NULL};
	struct scenario s = {
		.name = "runner_candidate_wrong", .cases = {CASE_GEMM}, .ncases = 1,
		.arm = {arm_ok, arm_ok},
		.validate = "--expect-verdict fail --expect-case-verdict " CASE_GEMM "=fail",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[1].wrong_from = 0;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_code(assert_error(&o, "check", "candidate", CASE_GEMM, want), "wrong_output");
	assert_int_equal(count_errors(&o, "baseline"), 0);
	assert_case_failed(&o, CASE_GEMM, "candidate");
	assert_int_equal(count_lines(&o, "pair", NULL), 0);
	assert_true(max_abs_error(&o, CASE_GEMM, "baseline") == 0);
	assert_true(max_abs_error(&o, CASE_GEMM, "candidate") >= 1);
	assert_fresh_starts(2);
	outcome_release(&o);
}

/* The baseline wrong: the run is an error (exit 3), not a candidate fail. */
static void test_baseline_wrong(void **state)
{
	static const char *const want[] = {"wrong output after warm-up", "element 5", NULL};
	struct scenario s = {
		.name = "runner_baseline_wrong", .cases = {CASE_GEMM}, .ncases = 1,
		.arm = {arm_ok, arm_ok},
		.validate = "--expect-verdict error --expect-case-verdict " CASE_GEMM "=fail",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[0].wrong_from = 0;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "error", QUAL_EXIT_ERROR);
	assert_code(assert_error(&o, "check", "baseline", CASE_GEMM, want), "wrong_output");
	assert_int_equal(count_errors(&o, "candidate"), 0);
	assert_case_failed(&o, CASE_GEMM, "baseline");
	/* The candidate never ran, so it has no error to report. */
	assert_int_equal(fk.execs[1], 0);
	assert_true(max_abs_error(&o, CASE_GEMM, "candidate") == -1);
	outcome_release(&o);
}

/* Elements left unwritten keep the poison (an f16 NaN): caught. */
static void test_candidate_skips(void **state)
{
	char where[64];
	const char *want[] = {"wrong output after warm-up", where, "bits 0xffff", NULL};
	struct scenario s = {
		.name = "runner_candidate_skips", .cases = {CASE_CONV}, .ncases = 1,
		.arm = {arm_ok, arm_ok},
		.validate = "--expect-verdict fail",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[1].skip_from = 0;
	scenario_run(&s, &o);
	snprintf(where, sizeof where, "element %zu ", fk.cases[0].c.count - SKIP_COUNT);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_error(&o, "check", "candidate", CASE_CONV, want);
	assert_case_failed(&o, CASE_CONV, "candidate");
	/* NaN output: no finite error to report. */
	assert_true(max_abs_error(&o, CASE_CONV, "candidate") == -1);
	outcome_release(&o);
}

/* The candidate goes wrong only once timing starts; the baseline runs last
 * (30 pairs: pair 29 is candidate first), so the candidate is caught by the
 * replay of its own after timing. */
static void test_candidate_wrong_in_timing(void **state)
{
	static const char *const want[] = {"wrong output after timing", "element 5", NULL};
	struct scenario s = {
		.name = "runner_candidate_wrong_in_timing", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.validate = "--expect-verdict fail --expect-pairs 30",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[1].wrong_from = RUNNER_WARMUP;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_pairs(&o, CASE_GEMM, 30);
	assert_int_equal(fk.times[fk.ntime - 1].arm, 0);
	assert_error(&o, "check", "candidate", CASE_GEMM, want);
	assert_int_equal(count_errors(&o, "baseline"), 0);
	assert_case_failed(&o, CASE_GEMM, "candidate");
	outcome_release(&o);
}

/* The candidate's timed replays are wrong but its checked runs right (as a
 * race that needs back-to-back replays would be). 31 pairs: the candidate
 * ran last, its output is what the post-timing check finds, and when the
 * reruns alone pass, the blame stays with the arm that wrote that output. */
static void test_candidate_wrong_when_timed_last(void **state)
{
	static const char *const want[] = {"wrong output after timing", "element 5", NULL};
	struct scenario s = {
		.name = "runner_candidate_wrong_when_timed", .cases = {CASE_GEMM}, .ncases = 1,
		.pairs = 31, .differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.validate = "--expect-verdict fail --expect-pairs 31",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[1].wrong_from = 0;
	s.arm[1].timed_only = true;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_pairs(&o, CASE_GEMM, 31);
	assert_int_equal(fk.times[fk.ntime - 1].arm, 1); /* candidate last */
	assert_error(&o, "check", "candidate", CASE_GEMM, want);
	assert_int_equal(count_errors(&o, "baseline"), 0);
	assert_case_failed(&o, CASE_GEMM, "candidate");
	/* Warm-ups, then both arms rerun alone on fresh inputs. */
	assert_int_equal(fk.resets, 4);
	outcome_release(&o);
}

/* The candidate corrupts an input from its first timed replay on. The
 * baseline ran last (pair 29 is candidate first), so the post-timing check
 * finds the inputs changed after a baseline replay; rerunning each arm alone
 * on fresh inputs blames the candidate. */
static void test_candidate_corrupts(void **state)
{
	static const char *const want[] = {"input buffer 0 changed when rerun alone after timing",
					   "first differing byte 100", NULL};
	struct scenario s = {
		.name = "runner_candidate_corrupts", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.validate = "--expect-verdict fail --expect-pairs 30",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[1].corrupt_from = RUNNER_WARMUP;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_pairs(&o, CASE_GEMM, 30);
	assert_int_equal(fk.times[fk.ntime - 1].arm, 0); /* baseline last */
	assert_error(&o, "check", "candidate", CASE_GEMM, want);
	assert_int_equal(count_errors(&o, "baseline"), 0);
	assert_case_failed(&o, CASE_GEMM, "candidate");
	/* Warm-ups and both reruns started from restored inputs. */
	assert_fresh_starts(2);
	assert_int_equal(fk.resets, 4);
	outcome_release(&o);
}

/* The mirror image: 31 pairs, so the candidate runs last (pair 30 is
 * baseline first), and the baseline, which corrupts, is blamed. */
static void test_baseline_corrupts(void **state)
{
	static const char *const want[] = {"input buffer 0 changed when rerun alone after timing", NULL};
	struct scenario s = {
		.name = "runner_baseline_corrupts", .cases = {CASE_GEMM}, .ncases = 1,
		.pairs = 31, .differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.validate = "--expect-verdict error --expect-pairs 31",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[0].corrupt_from = RUNNER_WARMUP;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "error", QUAL_EXIT_ERROR);
	assert_pairs(&o, CASE_GEMM, 31);
	assert_int_equal(fk.times[fk.ntime - 1].arm, 1); /* candidate last */
	assert_error(&o, "check", "baseline", CASE_GEMM, want);
	assert_int_equal(count_errors(&o, "candidate"), 0);
	assert_case_failed(&o, CASE_GEMM, "baseline");
	outcome_release(&o);
}

/* A candidate that corrupts an input from the start is caught at its
 * warm-up: the baseline, warmed up first, is not blamed. */
static void test_candidate_corrupts_at_warmup(void **state)
{
	static const char *const want[] = {"input buffer 0 changed after warm-up", NULL};
	struct scenario s = {
		.name = "runner_candidate_corrupts_at_warmup", .cases = {CASE_CONV}, .ncases = 1,
		.arm = {arm_ok, arm_ok}, .validate = "--expect-verdict fail",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[1].corrupt_from = 0;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_error(&o, "check", "candidate", CASE_CONV, want);
	assert_int_equal(count_errors(&o, "baseline"), 0);
	assert_int_equal(count_lines(&o, "pair", NULL), 0);
	outcome_release(&o);
}

/* A fault in the candidate's graph during pair 7: reported with the
 * driver's message, GPU work stops (the second case is never loaded), and
 * nothing touches the device after the fault but frees. */
static void test_candidate_fault_in_pair(void **state)
{
	static const char *const want[] = {"CUDA_ERROR_ILLEGAL_ADDRESS", NULL};
	struct scenario s = {
		.name = "runner_candidate_fault", .cases = {CASE_GEMM, CASE_CONV}, .ncases = 2,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.validate = "--expect-verdict fail --expect-pairs 7 "
			    "--expect-error-substring CUDA_ERROR_ILLEGAL_ADDRESS",
	};
	struct outcome o = {0};
	json_t *stop;

	(void)state;
	s.arm[1].fault_time = 7;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_string_equal(str(assert_error(&o, "time", "candidate", CASE_GEMM, want), "message"),
			    FAKE_FAULT_TEXT);
	assert_code(assert_error(&o, "time", "candidate", CASE_GEMM, want), "gpu_fault");
	assert_pairs(&o, CASE_GEMM, 7);
	assert_int_equal(count_errors(&o, "baseline"), 0);
	assert_case_failed(&o, CASE_GEMM, "candidate");
	/* The run says why it stopped, outside any case. */
	assert_int_equal(count_errors(&o, NULL), 1);
	stop = NULL;
	for (size_t i = 0; i < json_array_size(o.lines); i++) {
		json_t *l = json_array_get(o.lines, i);
		if (has_type(l, "error") && json_is_null(json_object_get(l, "arm")))
			stop = l;
	}
	assert_non_null(stop);
	assert_non_null(strstr(str(stop, "message"), "gpu work stopped in case '" CASE_GEMM "'"));
	assert_string_equal(str(stop, "gpu"), "faulted");
	assert_code(stop, "gpu_fault");
	/* The second case was never started. */
	assert_int_equal(fk.loads, 2);
	assert_int_equal(count_lines(&o, "case", CASE_CONV), 0);
	assert_int_equal(count_lines(&o, "pair", CASE_CONV), 0);
	assert_int_equal(fk.calls_after_fault, 0);
	outcome_release(&o);
}

/* A fault at the baseline's first warm-up replay: the machine's (or the
 * baseline's) failure, so the run is an error. */
static void test_baseline_fault_at_warmup(void **state)
{
	static const char *const want[] = {"CUDA_ERROR_ILLEGAL_ADDRESS", NULL};
	struct scenario s = {
		.name = "runner_baseline_fault_warmup", .cases = {CASE_GEMM, CASE_CONV},
		.ncases = 2, .arm = {arm_ok, arm_ok},
		.validate = "--expect-verdict error",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[0].fault_run = 0;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "error", QUAL_EXIT_ERROR);
	assert_code(assert_error(&o, "time", "baseline", CASE_GEMM, want), "gpu_fault");
	assert_int_equal(count_errors(&o, "candidate"), 0);
	assert_case_failed(&o, CASE_GEMM, "baseline");
	assert_int_equal(count_lines(&o, "pair", NULL), 0);
	assert_int_equal(fk.execs[1], 0);
	assert_int_equal(fk.loads, 2);
	assert_int_equal(fk.calls_after_fault, 0);
	/* Neither arm's output was ever checked. */
	assert_true(max_abs_error(&o, CASE_GEMM, "baseline") == -1);
	assert_true(max_abs_error(&o, CASE_GEMM, "candidate") == -1);
	outcome_release(&o);
}

/* A fault at the candidate's third warm-up replay. */
static void test_candidate_fault_at_warmup(void **state)
{
	static const char *const want[] = {"CUDA_ERROR_ILLEGAL_ADDRESS", NULL};
	struct scenario s = {
		.name = "runner_candidate_fault_warmup", .cases = {CASE_CONV}, .ncases = 1,
		.arm = {arm_ok, arm_ok}, .validate = "--expect-verdict fail",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[1].fault_run = 2;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_error(&o, "time", "candidate", CASE_CONV, want);
	assert_case_failed(&o, CASE_CONV, "candidate");
	assert_int_equal(fk.execs[1], 2);
	assert_int_equal(fk.calls_after_fault, 0);
	assert_true(max_abs_error(&o, CASE_CONV, "baseline") == 0);
	assert_true(max_abs_error(&o, CASE_CONV, "candidate") == -1);
	outcome_release(&o);
}

/* The error line outside any case (arm null) that says why GPU work
 * stopped; exactly one. */
static json_t *stop_line(const struct outcome *o)
{
	json_t *stop = NULL;

	for (size_t i = 0; i < json_array_size(o->lines); i++) {
		json_t *l = json_array_get(o->lines, i);
		if (has_type(l, "error") && json_is_null(json_object_get(l, "arm"))) {
			assert_null(stop);
			stop = l;
		}
	}
	assert_non_null(stop);
	return stop;
}

/* The deadline policy as a pure function: the floor unless factor x the
 * baseline's graph time is longer; no (or no sane) baseline time: the floor. */
static void test_hang_limit(void **state)
{
	(void)state;
	/* The H200's slowest baseline graph: the floor decides. */
	assert_true(runner_hang_limit_ms(2000, 100, 0.38) == 2000);
	/* At the boundary, and past it: factor x baseline. */
	assert_true(runner_hang_limit_ms(2000, 100, 20) == 2000);
	assert_true(runner_hang_limit_ms(2000, 100, 50) == 5000);
	assert_true(runner_hang_limit_ms(10, 3, 4) == 12);
	assert_true(runner_hang_limit_ms(2000, 100, 0) == 2000);
	assert_true(runner_hang_limit_ms(2000, 100, -5) == 2000);
	assert_true(runner_hang_limit_ms(2000, 100, NAN) == 2000);
	assert_true(runner_hang_limit_ms(2000, 100, INFINITY) == 2000);
	/* The defaults are the documented ones. */
	{
		struct runner_config cfg;
		runner_config_init(&cfg);
		assert_true(cfg.hang_floor_ms == RUNNER_HANG_FLOOR_MS);
		assert_true(cfg.hang_factor == RUNNER_HANG_FACTOR);
		assert_null(cfg.on_hang);
	}
}

/* The candidate's first warm-up replay never finishes. The baseline's
 * warm-up ran under its allowance (10 x the floor); the candidate's under
 * the floor (the fake's baseline is far faster than floor / factor). The run
 * fails, naming the candidate, the case and the limit; the second case never
 * starts; nothing reaches the backend after the hang; the process would end
 * with exit 2. */
static void test_candidate_hang_at_warmup(void **state)
{
	static const char *const want[] = {
		"kernel did not finish within 2000 ms",
		"the limit was the larger of the 2000 ms floor and 100 x the baseline's", NULL};
	struct scenario s = {
		.name = "runner_candidate_hang_warmup", .cases = {CASE_GEMM, CASE_CONV},
		.ncases = 2, .differ = true, .arm = {arm_ok, arm_ok},
		.validate = "--expect-verdict fail --expect-case-verdict " CASE_GEMM "=fail "
			    "--expect-error-substring 'did not finish within 2000 ms'",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[1].hang_run = 0;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_code(assert_error(&o, "time", "candidate", CASE_GEMM, want), "gpu_hang");
	assert_int_equal(count_errors(&o, "baseline"), 0);
	assert_case_failed(&o, CASE_GEMM, "candidate");
	assert_non_null(strstr(str(stop_line(&o), "message"),
			       "gpu work stopped in case '" CASE_GEMM "' (candidate arm, time): "
			       "kernel did not finish within 2000 ms; the kernel is still running, "
			       "so the process ends to stop it"));
	assert_string_equal(str(stop_line(&o), "gpu"), "hung");
	assert_code(stop_line(&o), "gpu_hang");
	assert_int_equal(count_lines(&o, "pair", NULL), 0);
	assert_int_equal(fk.loads, 2);
	assert_int_equal(count_lines(&o, "case", CASE_CONV), 0);
	assert_int_equal(fk.execs[0], RUNNER_WARMUP);
	assert_int_equal(fk.execs[1], 0);
	assert_true(fk.first_run_limit[0] == RUNNER_BASELINE_ALLOWANCE * RUNNER_HANG_FLOOR_MS);
	assert_true(fk.first_run_limit[1] == RUNNER_HANG_FLOOR_MS);
	assert_true(fk.hang_limit == RUNNER_HANG_FLOOR_MS);
	/* The baseline's output was checked; the candidate's never. */
	assert_true(max_abs_error(&o, CASE_GEMM, "baseline") == 0);
	assert_true(max_abs_error(&o, CASE_GEMM, "candidate") == -1);
	outcome_release(&o);
}

/* The baseline's first warm-up replay never finishes: blamed on the
 * baseline, the run is an error (exit 3), and the message says the limit
 * was the baseline's allowance. */
static void test_baseline_hang_at_warmup(void **state)
{
	static const char *const want[] = {
		"kernel did not finish within 20000 ms",
		"the limit was the baseline's warm-up allowance, 10 x the 2000 ms floor", NULL};
	struct scenario s = {
		.name = "runner_baseline_hang_warmup", .cases = {CASE_CONV}, .ncases = 1,
		.arm = {arm_ok, arm_ok},
		.validate = "--expect-verdict error --expect-case-verdict " CASE_CONV "=fail",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[0].hang_run = 0;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "error", QUAL_EXIT_ERROR);
	assert_error(&o, "time", "baseline", CASE_CONV, want);
	assert_int_equal(count_errors(&o, "candidate"), 0);
	assert_case_failed(&o, CASE_CONV, "baseline");
	assert_int_equal(fk.execs[1], 0);
	assert_string_equal(str(stop_line(&o), "gpu"), "hung");
	outcome_release(&o);
}

/* A hang in the candidate's timed replay of pair 7, with --hang-floor-ms
 * 1234: the limit of the timed pairs is the floor given, the 7 complete
 * pairs are kept, and the start line records the settings. */
static void test_candidate_hang_in_pair(void **state)
{
	static const char *const want[] = {"kernel did not finish within 1234 ms", NULL};
	struct scenario s = {
		.name = "runner_candidate_hang_pair", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002, .hang_floor_ms = 1234,
		.validate = "--expect-verdict fail --expect-pairs 7",
	};
	struct outcome o = {0};
	json_t *settings;

	(void)state;
	s.arm[1].hang_time = 7;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_code(assert_error(&o, "time", "candidate", CASE_GEMM, want), "gpu_hang");
	assert_pairs(&o, CASE_GEMM, 7);
	assert_case_failed(&o, CASE_GEMM, "candidate");
	assert_true(fk.first_run_limit[0] == 12340);
	assert_true(fk.first_time_limit == 1234);
	assert_true(fk.hang_limit == 1234);
	settings = json_object_get(json_array_get(o.lines, 0), "settings");
	assert_true(json_real_value(json_object_get(settings, "hang_floor_ms")) == 1234);
	assert_true(json_real_value(json_object_get(settings, "hang_factor")) == RUNNER_HANG_FACTOR);
	outcome_release(&o);
}

/* When factor x the baseline's graph time is over the floor, it is the
 * limit: the baseline's replays take 3 ms each (a sleep), so with a 1 ms
 * floor and a factor of 1000 the candidate's limit is 1000 x the fastest
 * baseline warm-up replay: at least 3000 ms, and not much more. */
static void test_hang_limit_from_baseline(void **state)
{
	static const char *const want[] = {"x the baseline's 3.", NULL};
	struct scenario s = {
		.name = "runner_hang_limit_from_baseline", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .hang_floor_ms = 1, .hang_factor = 1000,
		.validate = "--expect-verdict fail",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[0].run_ms = 3;
	s.arm[1].hang_run = 1;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_error(&o, "time", "candidate", CASE_GEMM, want);
	print_message("limit from a 3 ms baseline graph x 1000: %.1f ms\n", fk.hang_limit);
	assert_true(fk.first_run_limit[0] == 10);
	assert_true(fk.hang_limit >= 3000);
	assert_true(fk.hang_limit < 3900);
	assert_true(fk.first_run_limit[1] == fk.hang_limit);
	outcome_release(&o);
}

/* Fewer than 30 pairs: a usage error before anything is compiled or opened. */
static void test_too_few_pairs(void **state)
{
	struct scenario s = {
		.name = "runner_too_few_pairs", .cases = {CASE_GEMM}, .ncases = 1, .pairs = 29,
		.arm = {arm_ok, arm_ok},
		.validate = "--no-verdict --expect-error-substring 'must be an integer >= 30, got 29'",
	};
	struct outcome o = {0};

	(void)state;
	scenario_run(&s, &o);
	assert_int_equal(o.status, QUAL_EXIT_USAGE);
	assert_int_equal(json_array_size(o.lines), 1);
	assert_string_equal(str(json_array_get(o.lines, 0), "type"), "error");
	assert_string_equal(str(json_array_get(o.lines, 0), "stage"), "setup");
	assert_code(json_array_get(o.lines, 0), "usage");
	assert_non_null(strstr(o.err, "'pairs' must be an integer >= 30, got 29"));
	assert_int_equal(fk.opens, 0);
	outcome_release(&o);
}

/* No device: the runner compiles, says why nothing was timed, and the run
 * is not_timed (exit 0). */
static void test_no_device(void **state)
{
	struct scenario s = {
		.name = "runner_no_device", .cases = {CASE_GEMM}, .ncases = 1,
		.arm = {arm_ok, arm_ok}, .open_rc = QUAL_ENODEV,
		.validate = "--expect-verdict not_timed --expect-case-verdict *=not_timed",
	};
	struct outcome o = {0};
	json_t *start;

	(void)state;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "not_timed", QUAL_EXIT_PASS);
	start = json_array_get(o.lines, 0);
	assert_true(json_is_null(json_object_get(start, "device")));
	assert_true(json_is_false(json_object_get(start, "timed")));
	assert_string_equal(str(start, "not_timed_because"),
			    "no gpu: cuda: fake cuda: no device; hip: fake hip: no device");
	assert_true(max_abs_error(&o, CASE_GEMM, "candidate") == -1);
	assert_int_equal(fk.opens, 0);
	outcome_release(&o);
}

/* ---- blocks --------------------------------------------------------------- */

/* The settle (RUNNER_SETTLE_MS): before the first timed block the first
 * case's graphs run, both arms, untimed, for settle_ms; the second case's
 * are not run more than without it, and nothing more is timed. The start
 * line says settle_ms. */
static void test_settle(void **state)
{
	struct scenario s = {
		.name = "runner_settle", .cases = {CASE_GEMM, CASE_CONV}, .ncases = 2,
		.differ = true, .arm = {arm_ok, arm_ok}, .per_block = TEST_PER_BLOCK,
	};
	struct outcome o = {0};
	int runs[2][2], times[2][2];

	(void)state;
	scenario_run(&s, &o);
	for (int c = 0; c < 2; c++)
		for (int arm = 0; arm < 2; arm++) {
			runs[c][arm] = fk.cases[c].runs[arm];
			times[c][arm] = fk.cases[c].times[arm];
		}
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
		json_array_get(o.lines, 0), "settings"), "settle_ms")), 0);
	outcome_release(&o);
	s.settle_ms = 30;
	scenario_run(&s, &o);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
		json_array_get(o.lines, 0), "settings"), "settle_ms")), 30);
	for (int arm = 0; arm < 2; arm++) {
		assert_true(fk.cases[0].runs[arm] > runs[0][arm]);
		assert_int_equal(fk.cases[1].runs[arm], runs[1][arm]);
		assert_int_equal(fk.cases[0].times[arm], times[0][arm]);
		assert_int_equal(fk.cases[1].times[arm], times[1][arm]);
	}
	assert_run_verdict(&o, "neutral", QUAL_EXIT_PASS);
	outcome_release(&o);
}

/* The pad (--pad-mib): each case allocates it once, before its buffers,
 * and frees it with them (the fake says so when the GPU closes with an
 * allocation live); the start line says pad_bytes; the verdict is as
 * without it. */
static void test_pad(void **state)
{
	struct scenario s = {
		.name = "runner_pad", .cases = {CASE_GEMM, CASE_CONV}, .ncases = 2,
		.differ = true, .arm = {arm_ok, arm_ok}, .per_block = TEST_PER_BLOCK,
		.pad_bytes = FAKE_PAD_BYTES,
	};
	struct outcome o = {0};

	(void)state;
	scenario_run(&s, &o);
	assert_int_equal(fk.allocs_of_pad, 2);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
		json_array_get(o.lines, 0), "settings"), "pad_bytes")), (json_int_t)FAKE_PAD_BYTES);
	assert_int_equal(count_lines(&o, "error", NULL), 0);
	assert_run_verdict(&o, "neutral", QUAL_EXIT_PASS);
	outcome_release(&o);
}

/* --carveout: every graph of every session (four, and the blocks'
 * reloads) made with the carve-out asked for, and so in one process (the
 * open of --sessions 1), which the start line says. */
static void test_carveout(void **state)
{
	static const int sessions[] = {4, 1}, percent[] = {GPU_CARVEOUT_MAX_SHARED, 50};

	(void)state;
	for (int i = 0; i < 2; i++) {
		struct scenario s = {
			.name = "runner_carveout", .cases = {CASE_GEMM, CASE_CONV}, .ncases = 2,
			.differ = true, .arm = {arm_ok, arm_ok}, .per_block = TEST_PER_BLOCK,
			.sessions = sessions[i], .carveout_plus_1 = percent[i] + 1,
		};
		struct outcome o = {0};

		scenario_run(&s, &o);
		assert_true(fk_sh->graphs >= 2 * 2 * 15);
		assert_int_equal(fk_sh->carveout_first, percent[i]);
		assert_int_equal(fk_sh->carveout_other, 0);
		assert_int_equal(json_integer_value(json_object_get(json_object_get(
			json_array_get(o.lines, 0), "settings"), "carveout")), percent[i]);
		assert_run_verdict(&o, "neutral", QUAL_EXIT_PASS);
		outcome_release(&o);
	}
}

static void assert_stop_line(const struct outcome *o, const char *want);

/* --case-contexts: in four sessions and in one process, each case's
 * modules are loaded in a context no other case's were (each session opens
 * the GPU again before its second case), where with one shared context
 * they are not; the start line says which. */
static void test_case_contexts(void **state)
{
	static const int sessions[] = {4, 1};

	(void)state;
	for (int i = 0; i < 4; i++) {
		bool own = i < 2;
		/* First a case that does not apply to the sm_80 device: it
		 * uses no context, so it costs no reopen. */
		struct scenario s = {
			.name = "runner_case_contexts", .arch = "sm_80", .nvml = RUNNER_TEST_FAKE_NVML,
			.cases = {CASE_WGMMA_I8, CASE_GEMM, CASE_CONV}, .ncases = 3,
			.differ = true, .arm = {arm_ok, arm_ok},
			.per_block = TEST_PER_BLOCK, .sessions = sessions[i % 2],
			.shared_context = !own, .calibration_bus = "00000000:3A:00.0",
		};
		struct outcome o = {0};
		json_t *v;

		scenario_run(&s, &o);
		assert_one_at_a_time();
		assert_int_equal(fk_sh->mixed_contexts, own ? 0 : sessions[i % 2]);
		assert_int_equal(fk_sh->opened, sessions[i % 2] * (own ? 2 : 1));
		/* The device the verdict line compares the calibration with
		 * is still the one timed on, after the reopens. */
		v = find_line(&o, "verdict", NULL);
		assert_non_null(strstr(json_string_value(json_object_get(v, "calibration_because")),
				       "this run's device is at PCI 00000000:1B:00.0"));
		assert_true(json_is_boolean(json_object_get(json_object_get(
			json_array_get(o.lines, 0), "settings"), "case_contexts")));
		assert_int_equal(json_boolean_value(json_object_get(json_object_get(
			json_array_get(o.lines, 0), "settings"), "case_contexts")), own);
		assert_int_equal(count_lines(&o, "error", NULL), 0);
		assert_run_verdict(&o, "neutral", QUAL_EXIT_PASS);
		outcome_release(&o);
	}
}

/* --case-contexts when the GPU cannot be opened again for the second
 * case: the first case is timed and judged, the second is not, and the
 * error says why (in four sessions and in one process). */
static void test_case_contexts_reopen_fails(void **state)
{
	static const int sessions[] = {4, 1};

	(void)state;
	for (int i = 0; i < 2; i++) {
		struct scenario s = {
			.name = "runner_case_contexts_reopen_fails",
			.cases = {CASE_GEMM, CASE_CONV}, .ncases = 2, .differ = true,
			.arm = {arm_ok, arm_ok}, .per_block = TEST_PER_BLOCK,
			.sessions = sessions[i], .fail_reopen = true,
		};
		struct outcome o = {0};
		json_t *err, *l;
		size_t k;

		scenario_run(&s, &o);
		err = find_line(&o, "error", NULL);
		assert_non_null(err);
		assert_non_null(strstr(json_string_value(json_object_get(err, "message")),
				       "could not be opened again"));
		assert_non_null(strstr(json_string_value(json_object_get(err, "message")),
				       "out of memory"));
		assert_int_equal(count_lines(&o, "block", CASE_GEMM) > 0, 1);
		assert_int_equal(count_lines(&o, "block", CASE_CONV), 0);
		assert_stop_line(&o, "faulted");
		json_array_foreach(o.lines, k, l)
			if (has_type(l, "error") && json_object_get(l, "gpu"))
				assert_code(l, "no_device");
		assert_run_verdict(&o, "error", QUAL_EXIT_ERROR);
		outcome_release(&o);
	}
}

/* With the default blocks, every block after the first loads both arms'
 * code again in a random order over buffers moved to new shifts; the pair
 * lines say their block; the case is judged over the 15 blocks. */
static void test_blocks(void **state)
{
	struct scenario s = {
		.name = "runner_blocks", .cases = {CASE_GEMM, CASE_CONV}, .ncases = 2,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK,
		.validate = "--expect-verdict regression --expect-pairs 30",
	};
	struct outcome o = {0};
	int blocks = 30 / TEST_PER_BLOCK, swapped = 0;
	size_t i;
	json_t *l, *start;

	(void)state;
	s.arm[1].factor = 1.03;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "regression", QUAL_EXIT_REGRESSION);
	start = json_array_get(o.lines, 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(start, "settings"),
							    "pairs_per_block")), TEST_PER_BLOCK);
	for (int c = 0; c < 2; c++) {
		json_t *cv = find_line(&o, "case_verdict", s.cases[c]);
		int p = 0;

		assert_pairs(&o, s.cases[c], 30);
		json_array_foreach(o.lines, i, l) {
			if (!has_type(l, "pair") || strcmp(str(l, "case"), s.cases[c]) != 0)
				continue;
			assert_int_equal(json_integer_value(json_object_get(l, "block")),
					 p / TEST_PER_BLOCK + 1);
			p++;
		}
		assert_string_equal(str(cv, "verdict"), "slower");
		assert_int_equal(json_integer_value(json_object_get(cv, "blocks")), blocks);
		assert_int_equal(json_integer_value(json_object_get(cv, "blocks_slower")), blocks);
		assert_int_equal(json_integer_value(json_object_get(cv, "candidate_slower")), 30);
		/* 15 of 15 blocks: the exact sign test's 2 / 2^15. */
		assert_true(close_to(json_real_value(json_object_get(cv, "p")), 2.0 / 32768));
	}
	/* Per case: the warm-up's load, then two per later block. */
	assert_int_equal(fk.loads, 2 * 2 * blocks);
	assert_int_equal(fk.graphs_made, 2 * 2 * blocks);
	for (int k = 0; k < fk.loads; k += 2) {
		assert_int_not_equal(fk.load[k].arm, fk.load[k + 1].arm);
		swapped += fk.load[k].arm == 1;
	}
	/* The order of the loads is drawn: both orders happen (28 draws). */
	assert_true(swapped > 0 && swapped < fk.loads / 2 - 2);
	/* The buffers moved: many shifts seen, among many distinct ones, and
	 * between all the buffer sets (of two cases). */
	assert_true(fk.shifts_seen >= 2 * (blocks - 1));
	assert_true(__builtin_popcountll(fk.shift_set) >= 8);
	assert_true(fk.nset_seen >= 2 * 4);
	/* Each arm: warm-up, RUNNER_BLOCK_WARMUP untimed replays per later
	 * block, its timed replays and the check after timing of the arm that
	 * did not run last. */
	assert_int_equal(fk.execs[0] + fk.execs[1],
			 2 * (2 * RUNNER_WARMUP + 2 * RUNNER_BLOCK_WARMUP * (blocks - 1) + 2 * 30 + 1));

	/* The start line's block seed repeats the run load for load; without
	 * it, another run draws another seed and other loads. */
	{
		int arms[2 * 2 * 15];
		json_int_t seed = json_integer_value(json_object_get(
			json_object_get(start, "settings"), "block_seed"));
		uint64_t set = fk.shift_set;

		assert_true(seed > 0);
		for (int k = 0; k < fk.loads; k++)
			arms[k] = fk.load[k].arm;
		outcome_release(&o);
		s.block_seed = (uint64_t)seed;
		scenario_run(&s, &o);
		assert_int_equal(fk.loads, 2 * 2 * blocks);
		for (int k = 0; k < fk.loads; k++)
			assert_int_equal(fk.load[k].arm, arms[k]);
		assert_true(fk.shift_set == set);
		outcome_release(&o);
		s.block_seed = 0;
		scenario_run(&s, &o);
		start = json_array_get(o.lines, 0);
		assert_true(json_integer_value(json_object_get(
			json_object_get(start, "settings"), "block_seed")) != seed);
	}
	outcome_release(&o);
}

/* The pairs of one run under one load, judged each as its own unit (as
 * every pair was before blocks): the case's stats and verdict at margin. */
static void judge_pairs_alone(const struct outcome *o, double margin, struct stats_case *c)
{
	struct stats_pair pr[64];
	struct stats_settings st;
	size_t i;
	json_t *l;
	int n = 0;

	json_array_foreach(o->lines, i, l) {
		if (!has_type(l, "pair") || n == 64)
			continue;
		pr[n++] = (struct stats_pair){
			.baseline_ns = json_real_value(json_object_get(l, "baseline_ns")),
			.candidate_ns = json_real_value(json_object_get(l, "candidate_ns")),
			.candidate_first = !strcmp(str(l, "order"), "candidate_first"),
		};
	}
	stats_settings_init(&st);
	st.margin = margin;
	stats_case_summarise(pr, n, &st, c);
	stats_judge_run(c, 1, &st);
}

/* The A/A false alarm that blocks cure, on the fake: each graph has its own
 * speed (2% either way, fixed for the graph's life, like the placement of
 * code and data on a real GPU), the code is equally fast. With one load for
 * all 30 pairs, judged pair by pair, the interval of the ratio nearly never
 * holds 1 and the sign test calls the candidate slower or faster; run and
 * judged in blocks, the interval holds 1 at about its 95% and no verdict
 * claims a difference. 16 seeds each. */
static void test_blocks_cover_instance_effects(void **state)
{
	int covered[2] = {0, 0}, claimed[2] = {0, 0};

	(void)state;
	for (int mode = 0; mode < 2; mode++) {
		for (int seed = 1; seed <= 16; seed++) {
			struct scenario s = {
				.name = "runner_instance", .cases = {CASE_GEMM}, .ncases = 1,
				.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.001,
				.instance = 0.02, .margin = 0.001,
				.per_block = mode ? TEST_PER_BLOCK : 0,
				.seed = 0x9e3779b97f4a7c15ull * (uint64_t)seed,
				.block_seed = 7919 * (uint64_t)seed,
			};
			struct outcome o = {0};
			json_t *cv;
			double lo, hi;
			const char *v;
			struct stats_case pc;

			scenario_run(&s, &o);
			cv = find_line(&o, "case_verdict", CASE_GEMM);
			assert_non_null(cv);
			lo = json_real_value(json_object_get(cv, "ratio_lo"));
			hi = json_real_value(json_object_get(cv, "ratio_hi"));
			v = str(cv, "verdict");
			if (mode == 0) {
				/* One load: every pair a unit, as the judge
				 * recomputing the pairs alone finds too. */
				assert_int_equal(json_integer_value(json_object_get(cv, "blocks")), 30);
				judge_pairs_alone(&o, s.margin, &pc);
				assert_true(close_to(pc.ratio_lo, lo) && close_to(pc.ratio_hi, hi));
				assert_string_equal(stats_verdict_name(pc.verdict), v);
			}
			covered[mode] += lo <= 1 && 1 <= hi;
			claimed[mode] += !strcmp(v, "slower") || !strcmp(v, "faster");
			outcome_release(&o);
		}
	}
	print_message("one load: %d of 16 intervals hold 1, %d verdicts claim a difference; "
		      "blocks: %d of 16, %d\n", covered[0], claimed[0], covered[1], claimed[1]);
	assert_true(covered[0] <= 4);
	assert_true(claimed[0] >= 12);
	assert_true(covered[1] >= 13);
	assert_true(claimed[1] <= 3);
}

/* A fault in a later block (pair 9: block 5, after reloads and moves) is
 * blamed on the candidate and named, and everything is freed. */
static void test_fault_in_later_block(void **state)
{
	static const char *const want[] = {"CUDA_ERROR_ILLEGAL_ADDRESS", NULL};
	struct scenario s = {
		.name = "runner_fault_later_block", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK,
		.validate = "--expect-verdict fail",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[1].fault_time = 9;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_case_failed(&o, CASE_GEMM, "candidate");
	assert_error(&o, "time", "candidate", CASE_GEMM, want);
	assert_int_equal(count_lines(&o, "pair", CASE_GEMM), 9);
	assert_int_equal(fk.loads, 2 * 5);
	outcome_release(&o);
}

/* Output that goes wrong in a later block (from the candidate's 10th
 * replay after its warm-up, timed or not): caught after timing and blamed
 * on the candidate, as with one load. */
static void test_wrong_in_timing_blocks(void **state)
{
	struct scenario s = {
		.name = "runner_wrong_timing_blocks", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK,
		.validate = "--expect-verdict fail",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[1].wrong_from = RUNNER_WARMUP + 10;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_case_failed(&o, CASE_GEMM, "candidate");
	assert_int_equal(count_errors(&o, "baseline"), 0);
	assert_int_equal(count_lines(&o, "pair", CASE_GEMM), 30);
	outcome_release(&o);
}

/* ---- sessions ------------------------------------------------------------ */

/* Asserts that the run has a line that stopped GPU work, the last of them
 * saying gpu: want ("faulted" or "hung"). */
static void assert_stop_line(const struct outcome *o, const char *want)
{
	json_t *l, *stop = NULL;
	size_t i;

	json_array_foreach(o->lines, i, l)
		if (has_type(l, "error") && json_object_get(l, "gpu"))
			stop = l;
	assert_non_null(stop);
	assert_string_equal(str(stop, "gpu"), want);
}

/* The time split of a run of k sessions: one session_time line from each,
 * in order, after its pairs; the verdict's time_s sums them (session_count
 * k), has every phase of qual-run's own, and its replays_device is the
 * pairs' device time (each pair line's per-kernel times, times the replays),
 * which no other phase can be; its close (the waits for the sessions'
 * contexts to close) lies inside its sessions. */
static void assert_session_split(const struct outcome *o, int k)
{
	json_t *l, *ts = json_object_get(last_line(o), "time_s");
	double device = 0, got, sum[TS_COUNT] = {0};
	int next = 1;
	size_t i;

	assert_non_null(ts);
	json_array_foreach(o->lines, i, l) {
		if (has_type(l, "pair")) {
			device += (json_number_value(json_object_get(l, "baseline_ns")) +
				   json_number_value(json_object_get(l, "candidate_ns"))) *
				  RUNNER_REPLAYS * 1e-9;
			/* No session's pair after its session_time line. */
			assert_int_equal(json_integer_value(json_object_get(l, "session")), next);
		}
		if (has_type(l, "session_time")) {
			json_t *lt = json_object_get(l, "time_s");

			assert_int_equal(json_integer_value(json_object_get(l, "session")), next);
			for (int p = TS_FIRST_SESSION; p < TS_COUNT; p++)
				sum[p] += json_number_value(json_object_get(lt, timesplit_name(p)));
			next++;
		}
	}
	assert_int_equal(next, k + 1);
	assert_int_equal(json_integer_value(json_object_get(ts, "session_count")), k);
	for (int p = 0; p < TS_COUNT; p++) {
		json_t *x = json_object_get(ts, timesplit_name(p));

		assert_true(json_is_number(x));
		assert_true(json_number_value(x) >= 0);
		if (p >= TS_FIRST_SESSION)
			assert_true(fabs(json_number_value(x) - sum[p]) < 1e-5 * k);
	}
	got = json_number_value(json_object_get(ts, "replays_device"));
	assert_true(device > 0);
	assert_true(fabs(got - device) <= 1e-6 * (double)json_array_size(o->lines));
	assert_true(json_number_value(json_object_get(ts, "total")) >=
		    json_number_value(json_object_get(ts, "sessions")));
	/* The closes waited for before the verdict lie inside the sessions'
	 * time (none in a run of one process, which closes after its verdict,
	 * as do the first look's sessions when no round follows). */
	got = json_number_value(json_object_get(ts, "close"));
	assert_true(got <= json_number_value(json_object_get(ts, "sessions")));
	if (k == 1)
		assert_true(got == 0);
}

/* With sessions the device is found by the probe, a child started before
 * the libraries are identified and read after: a probe that finds no
 * device gives the same not-timed run as a failed open in this process,
 * with its reason, no session started and no GPU opened here. */
static void test_no_device_sessions(void **state)
{
	struct scenario s = {
		.name = "runner_no_device_sessions", .cases = {CASE_GEMM}, .ncases = 1,
		.arm = {arm_ok, arm_ok}, .open_rc = QUAL_ENODEV, .sessions = 4,
		.per_block = TEST_PER_BLOCK,
		.validate = "--expect-verdict not_timed --expect-case-verdict *=not_timed",
	};
	struct outcome o = {0};
	json_t *start, *ts;

	(void)state;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "not_timed", QUAL_EXIT_PASS);
	start = json_array_get(o.lines, 0);
	assert_true(json_is_null(json_object_get(start, "device")));
	assert_string_equal(str(start, "not_timed_because"),
			    "no gpu: cuda: fake cuda: no device; hip: fake hip: no device");
	assert_int_equal(count_lines(&o, "session_time", NULL), 0);
	assert_int_equal(count_lines(&o, "pair", NULL), 0);
	ts = json_object_get(last_line(&o), "time_s");
	assert_true(json_number_value(json_object_get(ts, "probe")) >= 0);
	assert_int_equal(json_integer_value(json_object_get(ts, "session_count")), 0);
	assert_int_equal(fk.opens, 0);
	outcome_release(&o);
}

/* test_sampling_rounds' run, named name: the conv case 1% slower,
 * undecided at the first look, so rounds of sessions follow. */
static struct scenario rounds_scenario(const char *name)
{
	return (struct scenario){
		.name = name, .cases = {CASE_GEMM, CASE_CONV},
		.ncases = 2, .differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .sessions = 4,
		.slow_case = CASE_CONV, .slow_factor = 1.01, .max_pairs = 120,
		/* One context a session, so that opens and closes count
		 * sessions (test_case_contexts checks the order with more). */
		.shared_context = true,
	};
}

/* Never two sessions at work on the device: each session's first work
 * comes after every other process that worked on the device (the sessions
 * before it) has ended and been reaped, over a run that samples
 * beyond the first look (rounds of more sessions, started on the last
 * line of the one before); every session opened, worked and closed. */
static void test_sessions_one_at_a_time(void **state)
{
	struct scenario s = rounds_scenario("runner_sessions_one_at_a_time");
	struct outcome o = {0};
	int sessions;

	(void)state;
	scenario_run(&s, &o);
	sessions = (int)json_integer_value(json_object_get(json_object_get(last_line(&o),
								"time_s"), "session_count"));
	assert_one_at_a_time();
	assert_true(sessions > 4);
	assert_int_equal(fk_count('w'), sessions);
	assert_int_equal(fk_count('o'), sessions);  /* the probe describes, and opens nothing */
	/* Rounds of 4, 4 and 4 sessions (looks at 15, 30 and 60 blocks), each
	 * round's sessions started together: all of a round's opens come
	 * before its first work, side by side. */
	assert_int_equal(sessions, 12);
	assert_int_equal(fk_longest_run('o'), 4);
	/* Each round's sessions linger and close when asked, as the next
	 * round's sessions have opened and before its first goes; the last
	 * round's are ended after the verdict (the end of each process closes
	 * its context: no close of the fake's). The waits lie inside the
	 * sessions' time. */
	assert_int_equal(fk_count('c'), sessions - 4);
	assert_true(json_number_value(json_object_get(json_object_get(last_line(&o), "time_s"),
						      "close")) > 0);
	outcome_release(&o);
}

/* Sessions that take a while to open, the later of each round's the
 * longer: the first of a round's goes only once all of them have opened,
 * so none opens while another works (the run samples beyond the first
 * look, and every session works). */
static void test_sessions_open_together(void **state)
{
	struct scenario s = rounds_scenario("runner_sessions_open_together");
	struct outcome o = {0};

	(void)state;
	s.slow_open_ms = 40;
	scenario_run(&s, &o);
	assert_one_at_a_time();
	assert_int_equal(fk_count('w'), 12);
	assert_int_equal(fk_longest_run('o'), 4);
	assert_string_equal(case_verdict(&o, CASE_GEMM), "equivalent");
	outcome_release(&o);
}

/* More sessions than are started ahead at once (20 of 16): the first
 * sixteen open together before the compiles end, the last four together
 * as another batch on the sixteenth's last line, once the sixteen have
 * worked; none opens or closes while another works, every session works
 * once, and none is left behind. */
static void test_sessions_more_than_ahead(void **state)
{
	struct scenario s = {
		.name = "runner_sessions_more_than_ahead", .cases = {CASE_GEMM}, .ncases = 1,
		.pairs = 40, .differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .sessions = 20,
	};
	struct outcome o = {0};

	(void)state;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "neutral", QUAL_EXIT_PASS);
	assert_one_at_a_time();
	assert_int_equal(count_lines(&o, "session_time", NULL), 20);
	assert_int_equal(fk_count('w'), 20);
	assert_int_equal(fk_longest_run('o'), 16);
	assert_int_equal(fk_before_compiles_end("o"), 16);
	assert_int_equal(fk_count('c'), 16);  /* the sixteen, asked before the batch's go */
	assert_int_equal(fk_gone(), 20);
	outcome_release(&o);
}

/* The first look's sessions open the device while the code compiles: all
 * four opens come before the compile phase ends (the last 'k'), each is
 * handed the code (every case timed in full, the verdict what the sessions'
 * run gives), and none works before the one before it has ended. */
static void test_first_session_during_compiles(void **state)
{
	struct scenario s = {
		.name = "runner_first_session_during_compiles", .cases = {CASE_GEMM, CASE_CONV},
		.ncases = 2, .differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .sessions = 4, .shared_context = true,
	};
	struct outcome o = {0};

	(void)state;
	scenario_run(&s, &o);
	assert_int_equal(fk_before_compiles_end("o"), 4);
	assert_one_at_a_time();
	assert_int_equal(fk_count('o'), 4);
	assert_int_equal(fk_count('w'), 4);
	assert_int_equal(count_lines(&o, "pair", CASE_GEMM), TEST_PAIRS);
	assert_int_equal(count_lines(&o, "pair", CASE_CONV), TEST_PAIRS);
	assert_int_equal(count_lines(&o, "case", NULL), 2);
	assert_string_equal(case_verdict(&o, CASE_GEMM), "equivalent");
	assert_run_verdict(&o, "neutral", QUAL_EXIT_PASS);
	outcome_release(&o);
}

/* Every case fails to compile for the candidate: the first session, started
 * before the compiles, is handed no case to run, so each failure is
 * reported once (the supervisor's compile_failed line and case line), no
 * pair is timed, and the run fails. */
static void test_first_session_no_case_compiled(void **state)
{
	struct scenario s = {
		.name = "runner_first_session_no_case_compiled", .cases = {CASE_GEMM, CASE_CONV},
		.ncases = 2, .candidate_bad_option = true, .arm = {arm_ok, arm_ok},
		.noise = 0.002, .per_block = TEST_PER_BLOCK, .sessions = 4,
	};
	struct outcome o = {0};

	(void)state;
	scenario_run(&s, &o);
	assert_int_equal(count_lines(&o, "case", CASE_GEMM), 1);
	assert_int_equal(count_lines(&o, "case", CASE_CONV), 1);
	assert_int_equal(count_errors(&o, "candidate"), 2);
	assert_int_equal(count_lines(&o, "pair", NULL), 0);
	assert_int_equal(fk_count('w'), 0);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	outcome_release(&o);
}

/* A device that takes one context at a time refuses a session's open
 * while the session before still holds it (the fake refuses every
 * process's first open): each session opens again after its go, and the
 * run is the same as with a device that does not refuse. Only the first
 * session is started before the compiles on such a device. */
static void test_sessions_busy_device(void **state)
{
	struct scenario s = {
		.name = "runner_sessions_busy_device", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .sessions = 4, .busy_first_open = true,
		.validate = "--expect-verdict regression --expect-pairs 30",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[1].factor = 1.05;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "regression", QUAL_EXIT_REGRESSION);
	assert_one_at_a_time();
	assert_int_equal(fk_count('f'), 4);
	assert_int_equal(fk_count('o'), 4);
	assert_int_equal(fk_count('w'), 4);
	assert_int_equal(count_lines(&o, "session_time", NULL), 4);
	/* Such a device is not described as shared: only the first session
	 * tried to open it before the compiles ended. */
	assert_int_equal(fk_before_compiles_end("of"), 1);
	outcome_release(&o);
}

/* A run that a session's crash ended (the fake's crash at close): error,
 * on_crash told of SIGSEGV, one error line whose message holds want, and
 * works sessions worked, each with its session_time line. */
static void assert_session_crashed(const struct outcome *o, const char *want, int works)
{
	json_t *l;
	size_t i;
	int n = 0;

	assert_int_equal(o->status, QUAL_EXIT_ERROR);
	assert_int_equal(fk.on_crash_calls, 1);
	assert_int_equal(fk.on_crash_signal, SIGSEGV);
	json_array_foreach(o->lines, i, l)
		n += has_type(l, "error") && strstr(str(l, "message"), want) != NULL;
	assert_int_equal(n, 1);
	assert_int_equal(fk_count('w'), works);
	assert_int_equal(count_lines(o, "session_time", NULL), works);
}

/* On a device that takes one context at a time (where a session closes
 * its context after its last line, while the next opens), a session that
 * dies closing its context is a crash like any other, and the next
 * session, started but not let go, is ended without touching the device:
 * two sessions worked, the third never did. */
static void test_session_crash_at_close(void **state)
{
	static const char *const want = "session 2 of 4 ended: killed by signal SIGSEGV";
	struct scenario s = {
		.name = "runner_session_crash_at_close", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .sessions = 4, .crash_at_close = 2,
		.busy_first_open = true, .validate = "--crashed",
	};
	struct outcome o = {0};

	(void)state;
	scenario_run(&s, &o);
	assert_session_crashed(&o, want, 2);
	outcome_release(&o);
}

/* Where contexts live side by side, the first look's sessions keep theirs,
 * idle, after their last lines (session_arg.linger): every session works
 * first, none closes during another's work. With no round after the first
 * look they are ended after the verdict (the end of each process closes
 * its context: no close of the fake's), and none is left behind. */
static void test_sessions_linger(void **state)
{
	struct scenario s = {
		.name = "runner_sessions_linger", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .sessions = 4,
	};
	struct outcome o = {0};

	(void)state;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "neutral", QUAL_EXIT_PASS);
	assert_one_at_a_time();
	assert_int_equal(fk_count('w'), 4);
	assert_int_equal(fk_count('c'), 0);
	assert_int_equal(fk_sh->nproc, 4);
	assert_int_equal(fk_gone(), 4);  /* reaped: no zombie either */
	outcome_release(&o);
}

/* A round after the first look: the four lingering sessions are asked to
 * close before the next session's go, all at once, and one that dies
 * closing is a crash like any other: no verdict, on_crash told, and no
 * session of the round works. */
static void test_sessions_linger_crash(void **state)
{
	struct scenario s = rounds_scenario("runner_sessions_linger_crash");
	struct outcome o = {0};

	(void)state;
	s.crash_at_close = 2;
	s.validate = "--crashed";
	scenario_run(&s, &o);
	assert_session_crashed(&o, " of 4 ended: killed by signal SIGSEGV", 4);
	assert_null(find_line(&o, "verdict", NULL));
	outcome_release(&o);
}

/* The blocks shared out among 4 forked sessions (3, 4, 4 and 4 blocks of
 * 15): every pair says its session and block, the blocks of a session are
 * its share, each case has one case line (from session 1), and the run is
 * judged over all 15 blocks in this process. The fake runs in the children:
 * what is checked is what reached the lines. */
static void test_sessions(void **state)
{
	struct scenario s = {
		.name = "runner_sessions", .cases = {CASE_GEMM, CASE_CONV}, .ncases = 2,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .sessions = 4,
		.validate = "--expect-verdict regression --expect-pairs 30",
	};
	struct outcome o = {0};
	json_t *start, *l;
	size_t i;

	(void)state;
	s.arm[1].factor = 1.03;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "regression", QUAL_EXIT_REGRESSION);
	start = json_array_get(o.lines, 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(start, "settings"),
							    "sessions")), 4);
	assert_true(json_is_true(json_object_get(start, "timed")));
	assert_string_equal(str(json_object_get(start, "device"), "name"), "Fake H200");
	for (int c = 0; c < 2; c++) {
		int per_block[16] = {0}, per_session[5] = {0}, p = 0;
		json_t *cv = find_line(&o, "case_verdict", s.cases[c]);

		assert_int_equal(count_lines(&o, "case", s.cases[c]), 1);
		json_array_foreach(o.lines, i, l) {
			int b, ses;
			if (!has_type(l, "pair") || strcmp(str(l, "case"), s.cases[c]) != 0)
				continue;
			b = (int)json_integer_value(json_object_get(l, "block"));
			ses = (int)json_integer_value(json_object_get(l, "session"));
			assert_int_equal(json_integer_value(json_object_get(l, "pair")), p);
			assert_true(b >= 1 && b <= 15 && ses >= 1 && ses <= 4);
			/* Session s (from 0) has blocks [15s/4, 15(s+1)/4). */
			assert_true(b - 1 >= 15 * (ses - 1) / 4 && b - 1 < 15 * ses / 4);
			per_block[b]++;
			per_session[ses]++;
			p++;
		}
		assert_int_equal(p, 30);
		for (int b = 1; b <= 15; b++)
			assert_int_equal(per_block[b], 2);
		assert_int_equal(per_session[1], 6);
		for (int ses = 2; ses <= 4; ses++)
			assert_int_equal(per_session[ses], 8);
		assert_string_equal(str(cv, "verdict"), "slower");
		assert_int_equal(json_integer_value(json_object_get(cv, "blocks")), 15);
		assert_int_equal(json_integer_value(json_object_get(cv, "blocks_slower")), 15);
	}
	assert_int_equal(count_lines(&o, "error", NULL), 0);
	assert_session_split(&o, 4);
	outcome_release(&o);
}

/* A fault in the first session ends the timing: no later session starts,
 * the candidate fails in the case it faulted in, the stop line names the
 * fault, and the other case is reported as not timed. */
static void test_session_fault(void **state)
{
	static const char *const want[] = {"CUDA_ERROR_ILLEGAL_ADDRESS", NULL};
	struct scenario s = {
		.name = "runner_session_fault", .cases = {CASE_GEMM, CASE_CONV}, .ncases = 2,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .sessions = 4,
		.validate = "--expect-verdict fail",
	};
	struct outcome o = {0};

	(void)state;
	s.arm[1].fault_time = 3;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_case_failed(&o, CASE_GEMM, "candidate");
	assert_code(assert_error(&o, "time", "candidate", CASE_GEMM, want), "gpu_fault");
	assert_int_equal(count_lines(&o, "pair", CASE_GEMM), 3);
	assert_int_equal(count_lines(&o, "pair", CASE_CONV), 0);
	assert_string_equal(case_verdict(&o, CASE_CONV), "not_timed");
	assert_stop_line(&o, "faulted");
	outcome_release(&o);
}

/* A hang in the second session: that process ends (which stops the kernel),
 * the lines say so, and this process gives the verdict without ending. */
static void test_session_hang(void **state)
{
	struct scenario s = {
		.name = "runner_session_hang", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .sessions = 4,
		.hang_floor_ms = 50,
		.validate = "--expect-verdict fail",
	};
	struct outcome o = {0};

	(void)state;
	/* Each session counts its own calls: the 2nd timed candidate replay
	 * of every session hangs, so the first session does. */
	s.arm[1].hang_time = 1;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_case_failed(&o, CASE_GEMM, "candidate");
	assert_stop_line(&o, "hung");
	assert_code(stop_line(&o), "gpu_hang");
	assert_int_equal(count_lines(&o, "pair", CASE_GEMM), 1);
	assert_int_equal(fk.on_hang_calls, 0);
	outcome_release(&o);
}

/* A session that crashes (SIGSEGV at its 3rd timed candidate replay, as a
 * driver fault in the candidate's code would) is reported as the crash of
 * qual-run itself: the error line names it, the stop line asks for a GPU
 * check, no verdict is written, and the signal is raised here (the test's
 * on_crash records it instead), so that quald counts it against the
 * candidate as it would a crash of a single process. */
static void test_session_crash(void **state)
{
	static const char *const want = "session 1 of 4 ended: killed by signal SIGSEGV";
	struct scenario s = {
		.name = "runner_session_crash", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .sessions = 4,
		.validate = "--crashed",
	};
	struct outcome o = {0};
	json_t *l, *found = NULL;
	size_t i;

	(void)state;
	s.arm[1].kill_at = 3;
	s.arm[1].kill_signal = SIGSEGV;
	scenario_run(&s, &o);
	assert_int_equal(o.status, QUAL_EXIT_ERROR);
	assert_int_equal(fk.on_crash_calls, 1);
	assert_int_equal(fk.on_crash_signal, SIGSEGV);
	assert_int_equal(count_lines(&o, "verdict", NULL), 0);
	assert_int_equal(count_lines(&o, "case_verdict", NULL), 0);
	json_array_foreach(o.lines, i, l)
		if (has_type(l, "error") && strstr(str(l, "message"), want))
			found = l;
	assert_non_null(found);
	assert_code(found, "session_failed");
	assert_stop_line(&o, "faulted");
	assert_int_equal(count_lines(&o, "pair", CASE_GEMM), 2);
	outcome_release(&o);
}

/* A session's process that dies (here SIGKILL at its 3rd timed candidate
 * replay) is an error of the machine, named with its signal. */
static void test_session_killed(void **state)
{
	static const char *const want[] = {"session 1 of 4 ended: killed by signal SIGKILL", NULL};
	struct scenario s = {
		.name = "runner_session_killed", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .sessions = 4,
		.validate = "--expect-verdict error",
	};
	struct outcome o = {0};
	json_t *l, *found = NULL;
	size_t i;

	(void)state;
	s.arm[1].kill_at = 3;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "error", QUAL_EXIT_ERROR);
	json_array_foreach(o.lines, i, l)
		if (has_type(l, "error") && strstr(str(l, "message"), want[0]))
			found = l;
	assert_non_null(found);
	assert_code(found, "session_failed");
	assert_int_equal(count_lines(&o, "pair", CASE_GEMM), 2);
	outcome_release(&o);
}

/* ---- the relay of a session's lines ------------------------------------ */

/* What relay_session() made of n bytes that a session (session 2) wrote
 * and then closed its pipe: the lines it relayed into o, which must be
 * nlines, and its verdict on them, which must be as given. */
struct relayed {
	struct outcome o;
	bool stop, over, machine_error;
};

/* relay_session() of run over a pipe that a child fills with n bytes of
 * data, then closes: its return, and *over. */
static bool relay_from_pipe(struct run *run, const char *data, size_t n, bool *over)
{
	int fds[2];
	pid_t writer;
	bool stop;

	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	writer = fork();
	assert_true(writer >= 0);
	if (writer == 0) {
		/* Dies by SIGPIPE when the relay stops reading early. */
		close(fds[0]);
		_exit(fs_write_all(fds[1], data, n) < 0 ? 1 : 0);
	}
	close(fds[1]);
	stop = relay_session(run, fds[0], over, NULL, NULL);
	assert_int_equal(waitpid(writer, NULL, 0), writer);
	return stop;
}

static void relay_bytes(const char *data, size_t n, struct relayed *r, bool stop,
			bool over, bool machine_error, size_t nlines)
{
	struct runner_config cfg;
	struct run run;
	char *text = NULL;
	size_t len = 0;

	memset(r, 0, sizeof *r);
	runner_config_init(&cfg);
	memset(&run, 0, sizeof run);
	run.cfg = &cfg;
	run.session = 1;
	judge_init(&run.judge);
	run.out = open_memstream(&text, &len);
	assert_non_null(run.out);
	r->stop = relay_from_pipe(&run, data, n, &r->over);
	r->machine_error = run.judge.machine_error;
	judge_release(&run.judge);
	fclose(run.out);
	outcome_parse(&r->o, text);
	assert_int_equal(r->stop, stop);
	assert_int_equal(r->over, over);
	assert_int_equal(r->machine_error, machine_error);
	assert_int_equal(json_array_size(r->o.lines), nlines);
}

/* Whole lines are relayed as they are; a last line without its newline
 * is not, and an error line says so (cut_off); the run becomes an error of
 * the machine. */
static void test_relay_cut_off(void **state)
{
	static const char data[] = "{\"type\":\"pair\",\"case\":\"a-1\"}\n"
				   "\n"
				   "{\"type\":\"pa";
	struct relayed r;
	json_t *e;

	(void)state;
	relay_bytes(data, sizeof data - 1, &r, false, false, true, 2);
	assert_true(has_type(json_array_get(r.o.lines, 0), "pair"));
	e = json_array_get(r.o.lines, 1);
	assert_true(has_type(e, "error"));
	assert_code(e, "cut_off");
	assert_string_equal(str(e, "stage"), "time");
	assert_true(json_is_null(json_object_get(e, "arm")));
	assert_string_equal(str(e, "message"), "session 2's output was cut off: its last "
			    "line, 11 bytes, has no end");
	json_decref(r.o.lines);
}

/* A last line without its newline that is one whole object is relayed as
 * a line (lines_splitter_finish()): no error. */
static void test_relay_last_whole(void **state)
{
	static const char data[] = "{\"type\":\"pair\",\"case\":\"a-1\"}\n"
				   "{\"type\":\"pair\",\"case\":\"a-2\"}";
	struct relayed r;

	(void)state;
	relay_bytes(data, sizeof data - 1, &r, false, false, false, 2);
	assert_true(has_type(json_array_get(r.o.lines, 0), "pair"));
	assert_true(has_type(json_array_get(r.o.lines, 1), "pair"));
	assert_string_equal(str(json_array_get(r.o.lines, 1), "case"), "a-2");
	json_decref(r.o.lines);
}

/* A line that stopped GPU work (its "gpu" field) stops the sessions; a
 * stream that ends with a whole line is no error. */
static void test_relay_stop(void **state)
{
	static const char data[] =
		"{\"type\":\"error\",\"stage\":\"time\",\"code\":\"gpu_fault\",\"arm\":null,"
		"\"case\":null,\"message\":\"gpu work stopped\",\"gpu\":\"faulted\"}\n";
	struct relayed r;

	(void)state;
	relay_bytes(data, sizeof data - 1, &r, true, false, false, 1);
	assert_code(json_array_get(r.o.lines, 0), "gpu_fault");
	json_decref(r.o.lines);
}

/* A line of LINES_MAX bytes is relayed; one byte more is no line of the
 * engine's: reported (bad_line), nothing after it relayed, the sessions
 * stopped. */
static void test_relay_over_cap(void **state)
{
	static const char head[] = "{\"type\":\"pad\",\"x\":\"", tail[] = "\"}\n";
	static const char after[] = "{\"type\":\"pair\",\"case\":\"a-1\"}\n";
	size_t fill = LINES_MAX - (sizeof head - 1) - (sizeof tail - 2);
	size_t n = 0, cap = 2 * LINES_MAX + 1024;
	char *data = xmalloc(cap);
	struct relayed r;
	json_t *e;

	(void)state;
	/* A line of exactly LINES_MAX bytes, newline not counted. */
	memcpy(data + n, head, sizeof head - 1);
	n += sizeof head - 1;
	memset(data + n, 'x', fill);
	n += fill;
	memcpy(data + n, tail, sizeof tail - 1);
	n += sizeof tail - 1;
	/* One of LINES_MAX + 1, then a line that must not be relayed. */
	memset(data + n, 'y', LINES_MAX + 1);
	n += LINES_MAX + 1;
	data[n++] = '\n';
	memcpy(data + n, after, sizeof after - 1);
	n += sizeof after - 1;
	relay_bytes(data, n, &r, true, true, true, 2);
	free(data);
	assert_true(has_type(json_array_get(r.o.lines, 0), "pad"));
	assert_int_equal(strlen(str(json_array_get(r.o.lines, 0), "x")), fill);
	e = json_array_get(r.o.lines, 1);
	assert_code(e, "bad_line");
	assert_string_equal(str(e, "message"), "session 2 wrote a line longer than 1048576 "
			    "bytes: the rest of its output is not relayed");
	assert_int_equal(count_lines(&r.o, "pair", NULL), 0);
	json_decref(r.o.lines);
}

/* Every test's: compiles run the qual-compile this build made. */
#define CASE_WGMMA "gemm_f16_wgmma-256x512x256"

/* On sm_90 a wgmma case runs like any other: its tensor maps are made over
 * the buffers where each graph finds them, block after block as the
 * buffers move. */
static void test_wgmma_tensor_maps(void **state)
{
	struct scenario s = {
		.name = "runner_wgmma_tensor_maps", .cases = {CASE_WGMMA}, .ncases = 1,
		.arm = {arm_ok, arm_ok}, .noise = 0.002, .per_block = TEST_PER_BLOCK,
		.validate = "--expect-verdict neutral --expect-pairs 30 "
			    "--expect-case-verdict " CASE_WGMMA "=identical "
			    "--expect-not-applicable=",
	};
	struct outcome o = {0};
	json_t *c;

	(void)state;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "neutral", QUAL_EXIT_PASS);
	assert_pairs(&o, CASE_WGMMA, 30);
	c = find_line(&o, "case", CASE_WGMMA);
	assert_non_null(c);
	assert_null(json_object_get(c, "applicable"));
	/* Two maps a graph, each naming its buffer; 15 blocks moved them. */
	assert_true(fk.graphs_made >= 30);
	assert_int_equal(fk.maps_made, 2 * fk.graphs_made);
	assert_int_equal(fk.maps_checked, 2 * fk.graphs_made);
	assert_true(fk.nmap_addr_seen > 1);
	outcome_release(&o);
}

/* The compile phase starts the longest compiles first (their times as
 * measured: fixture_compile_estimate_ms), whatever the cases' order: one
 * compile at a time, the i8 wgmma case (the later case, the longer
 * compile) goes first, each case's arms together. */
static void test_compiles_longest_first(void **state)
{
	static const char *const want[] = {
		CASE_WGMMA_I8 " baseline", CASE_WGMMA_I8 " candidate",
		CASE_WGMMA " baseline", CASE_WGMMA " candidate",
	};
	struct scenario s = {
		.name = "runner_compiles_longest_first", .cases = {CASE_WGMMA, CASE_WGMMA_I8},
		.ncases = 2, .differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.compile_jobs = 1,
	};
	struct outcome o = {0};

	(void)state;
	assert_true(fixture_compile_estimate_ms(fixture_find(CASE_WGMMA_I8)) >
		    fixture_compile_estimate_ms(fixture_find(CASE_WGMMA)));
	assert_true(fixture_find(CASE_WGMMA_I8) > fixture_find(CASE_WGMMA));
	scenario_run(&s, &o);
	assert_run_verdict(&o, "neutral", QUAL_EXIT_PASS);
	assert_int_equal(fk.ncompiled, 4);
	for (int i = 0; i < 4; i++)
		assert_string_equal(fk.compiled[i], want[i]);
	/* The lines keep the cases' order. */
	assert_true(find_line(&o, "case", CASE_WGMMA) != NULL);
	assert_string_equal(str(find_line(&o, "case", NULL), "case"), CASE_WGMMA);
	outcome_release(&o);
}

/* On sm_80 the wgmma case is not applicable: reported with the reason,
 * never compiled or loaded, counted in the verdict line, while the other
 * case is timed and judged; with sessions too, one case line. */
static void check_not_applicable(int sessions)
{
	struct scenario s = {
		.name = sessions > 1 ? "runner_not_applicable_sessions" : "runner_not_applicable",
		.cases = {CASE_GEMM, CASE_WGMMA_I8}, .ncases = 2, .arm = {arm_ok, arm_ok},
		.noise = 0.002, .arch = "sm_80", .sessions = sessions,
		.per_block = sessions > 1 ? TEST_PER_BLOCK : 0,
		.validate = "--expect-verdict neutral --expect-not-applicable " CASE_WGMMA_I8
			    " --expect-case-verdict " CASE_GEMM "=identical",
	};
	struct outcome o = {0};
	json_t *c, *cv, *v;

	scenario_run(&s, &o);
	assert_run_verdict(&o, "neutral", QUAL_EXIT_PASS);
	assert_string_equal(str(json_array_get(o.lines, 0), "arch"), "sm_80");
	assert_int_equal(count_lines(&o, "case", CASE_WGMMA_I8), 1);
	c = find_line(&o, "case", CASE_WGMMA_I8);
	assert_true(json_is_false(json_object_get(c, "applicable")));
	assert_non_null(strstr(str(c, "not_applicable_because"), "sm_80"));
	assert_true(json_is_false(json_object_get(json_object_get(c, "baseline"), "compiled")));
	assert_true(json_is_false(json_object_get(json_object_get(c, "candidate"), "compiled")));
	assert_int_equal(count_lines(&o, "pair", CASE_WGMMA_I8), 0);
	assert_int_equal(count_lines(&o, "error", NULL), 0);
	cv = find_line(&o, "case_verdict", CASE_WGMMA_I8);
	assert_string_equal(str(cv, "verdict"), "not_applicable");
	assert_string_equal(str(cv, "not_applicable_because"), str(c, "not_applicable_because"));
	v = find_line(&o, "verdict", NULL);
	assert_int_equal(json_integer_value(json_object_get(v, "not_applicable")), 1);
	assert_true(json_is_true(json_object_get(v, "timed")));
	if (sessions > 1)
		assert_int_equal(count_lines(&o, "pair", CASE_GEMM), 30); /* timed elsewhere */
	else
		assert_pairs(&o, CASE_GEMM, 30);
	for (int i = 0; i < fk.loads && i < FAKE_MAX_LOADS; i++)
		assert_string_not_equal(fk.load[i].kernel, "gemm_i8_wgmma");
	assert_int_equal(fk.maps_made, 0);
	outcome_release(&o);
}

static void test_not_applicable(void **state)
{
	(void)state;
	check_not_applicable(1);
	check_not_applicable(2);
}

static int setup(void **state)
{
	(void)state;
	rtc_set_helper(RUNNER_TEST_HELPER);
	return 0;
}

#define T(name) cmocka_unit_test_setup(test_##name, setup)


/* ---- sampling until decided ------------------------------------------ */

/* The decision between rounds: the next planned look while some case is
 * undecided, else why not; the time cap only where a round would start. */
static void test_next_round(void **state)
{
	struct stats_settings s;
	int next;

	(void)state;
	stats_settings_init(&s);
	s.first_look = 15;
	s.last_look = 120;
	assert_int_equal(runner__next_round(&s, 15, 2, 1.0, 20.0, false, &next), ROUND_MORE);
	assert_int_equal(next, 30);
	assert_int_equal(runner__next_round(&s, 30, 1, 1.0, 20.0, false, &next), ROUND_MORE);
	assert_int_equal(next, 60);
	assert_int_equal(runner__next_round(&s, 60, 1, 1.0, 20.0, false, &next), ROUND_MORE);
	assert_int_equal(next, 120);
	assert_int_equal(runner__next_round(&s, 120, 1, 1.0, 20.0, false, &next),
			 ROUND_MAX_PAIRS);
	assert_int_equal(next, 120);
	assert_int_equal(runner__next_round(&s, 30, 0, 1.0, 20.0, false, &next), ROUND_DECIDED);
	assert_int_equal(runner__next_round(&s, 30, 3, 20.0, 20.0, false, &next),
			 ROUND_MAX_SECONDS);
	assert_int_equal(runner__next_round(&s, 30, 3, 1.0, 20.0, true, &next), ROUND_STOPPED);
	/* A cap between doublings, and no sampling at all. */
	s.last_look = 50;
	assert_int_equal(runner__next_round(&s, 30, 1, 0, 20.0, false, &next), ROUND_MORE);
	assert_int_equal(next, 50);
	/* Looks growing by 4 (--look-growth 4): 15, 60, 240, 960. */
	s.last_look = 960;
	s.look_growth = 4;
	assert_int_equal(runner__next_round(&s, 15, 1, 0, 20.0, false, &next), ROUND_MORE);
	assert_int_equal(next, 60);
	assert_int_equal(runner__next_round(&s, 60, 1, 0, 20.0, false, &next), ROUND_MORE);
	assert_int_equal(next, 240);
	assert_int_equal(runner__next_round(&s, 240, 1, 0, 20.0, false, &next), ROUND_MORE);
	assert_int_equal(next, 960);
	s.look_growth = STATS_LOOK_GROWTH_UNSTATED;
	s.first_look = s.last_look = 0;
	assert_int_equal(runner__next_round(&s, 15, 1, 0, 20.0, false, &next), ROUND_MAX_PAIRS);
	/* A round's sessions: as many as the first look's, fewer for a
	 * round of fewer blocks than the first look's. */
	assert_int_equal(runner__round_sessions(15, 15, 4), 4);
	assert_int_equal(runner__round_sessions(30, 15, 4), 4);
	assert_int_equal(runner__round_sessions(60, 15, 4), 4);
	assert_int_equal(runner__round_sessions(20, 30, 4), 3);
	assert_int_equal(runner__round_sessions(2, 15, 8), 2);
	assert_int_equal(runner__round_sessions(40, 15, 1), 3);
	assert_int_equal(runner__round_sessions(120, 15, 8), 8);
	/* After a first look of fewer sessions, rounds of RUNNER_SESSIONS. */
	assert_int_equal(runner__round_sessions(60, 15, 2), RUNNER_SESSIONS);
	assert_int_equal(runner__round_sessions(15, 15, 2), 2);
	/* ... and never more than one batch of sessions made side by side:
	 * the later rounds' sessions time more blocks each. */
	assert_int_equal(runner__round_sessions(120, 15, 4), 4);
	assert_int_equal(runner__round_sessions(480, 15, 4), 4);
	assert_int_equal(runner__round_sessions(480, 15, 64), RUNNER_ROUND_SESSIONS);
}

/* A calibration record is kept in the verdict line only for the device it
 * measured: another PCI address makes it null with the reason; the same
 * address, or an address missing on either side, keeps it. */
static void test_calibration_for_device(void **state)
{
	struct gpu_info dev;
	json_t *line;

	(void)state;
	memset(&dev, 0, sizeof dev);
	snprintf(dev.pci_bus_id, sizeof dev.pci_bus_id, "00000000:1B:00.0");
	line = json_pack("{s:{s:{s:s},s:i}}", "calibration", "device", "pci_bus_id",
			 "00000000:3A:00.0", "runs", 5);
	runner__calibration_for_device(line, &dev);
	assert_true(json_is_null(json_object_get(line, "calibration")));
	assert_non_null(strstr(json_string_value(json_object_get(line, "calibration_because")),
			       "of the device at PCI 00000000:3A:00.0, and this run's device is "
			       "at PCI 00000000:1B:00.0"));
	json_decref(line);

	line = json_pack("{s:{s:{s:s},s:i}}", "calibration", "device", "pci_bus_id",
			 "00000000:1B:00.0", "runs", 5);
	runner__calibration_for_device(line, &dev);
	assert_true(json_is_object(json_object_get(line, "calibration")));
	assert_null(json_object_get(line, "calibration_because"));
	json_decref(line);

	line = json_pack("{s:{s:{s:s},s:i}}", "calibration", "device", "name", "NVIDIA H200",
			 "runs", 5);
	runner__calibration_for_device(line, &dev);
	assert_true(json_is_object(json_object_get(line, "calibration")));
	json_decref(line);

	dev.pci_bus_id[0] = '\0';
	line = json_pack("{s:{s:{s:s},s:i}}", "calibration", "device", "pci_bus_id",
			 "00000000:3A:00.0", "runs", 5);
	runner__calibration_for_device(line, &dev);
	runner__calibration_for_device(line, NULL);
	assert_true(json_is_object(json_object_get(line, "calibration")));
	json_decref(line);
}

/* Re-judges o's lines as qual-judge would (judge_take_line from the start
 * line on), and checks every case_verdict's verdict, decided and stopped
 * come back the same. */
static void assert_rejudged_same(const struct outcome *o)
{
	struct stats_settings st;
	struct judge j;
	enum run_verdict v;
	bool not_timed;
	char *text = NULL, why[256];
	size_t len = 0, i;
	FILE *f = open_memstream(&text, &len);
	json_t *l;
	struct outcome again = {0};

	stats_settings_init(&st);
	judge_init(&j);
	json_array_foreach(o->lines, i, l)
		assert_int_equal(judge_take_line(&j, &st, l, why, sizeof why), 0);
	v = judge_finish(&j, &st, f, &not_timed);
	fclose(f);
	judge_release(&j);
	outcome_parse(&again, text);
	json_array_foreach(o->lines, i, l) {
		json_t *b;

		if (!has_type(l, "case_verdict"))
			continue;
		b = find_line(&again, "case_verdict", str(l, "case"));
		assert_non_null(b);
		assert_string_equal(str(b, "verdict"), str(l, "verdict"));
		assert_true(json_equal(json_object_get(b, "decided"), json_object_get(l, "decided")));
		assert_true(json_equal(json_object_get(b, "stopped"), json_object_get(l, "stopped")));
		assert_true(json_equal(json_object_get(b, "ratio_lo"), json_object_get(l, "ratio_lo")));
	}
	l = find_line(o, "verdict", NULL);
	assert_string_equal(str(l, "verdict"), stats_run_verdict_name(v));
	assert_true(json_equal(json_object_get(l, "gate"),
			       json_object_get(find_line(&again, "verdict", NULL), "gate")));
	outcome_release(&again);
}

/* After the 4 sessions of the first look, a case that is undecided (its
 * candidate 1% slower: the interval straddles 1 + margin) is timed alone in
 * each round, up to each next look (30, then 60 blocks of max_pairs 120),
 * in sessions of 3-4 blocks as the first look's (blocks 16-30 in sessions
 * 5-8, 31-60 in sessions 9-16), its blocks numbered on and never reused;
 * the decided case
 * is not timed again. The undecided case stops at max_pairs, slower but not
 * beyond the margin, which the default gate passes; qual-judge on the lines
 * gives the same. */
static void test_sampling_rounds(void **state)
{
	struct scenario s = rounds_scenario("runner_sampling_rounds");
	struct outcome o = {0};
	int per_block[2][64] = {{0}}, session_of[2][64] = {{0}}, npairs[2] = {0};
	json_t *start, *cv, *l;
	size_t i;

	(void)state;
	scenario_run(&s, &o);
	start = json_array_get(o.lines, 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(start, "settings"),
							    "max_pairs")), 120);
	json_array_foreach(o.lines, i, l) {
		int c, b, ses;

		if (!has_type(l, "pair"))
			continue;
		c = strcmp(str(l, "case"), CASE_CONV) == 0;
		b = (int)json_integer_value(json_object_get(l, "block"));
		ses = (int)json_integer_value(json_object_get(l, "session"));
		assert_true(b >= 1 && b <= 60);
		per_block[c][b]++;
		/* Every pair of a block comes from one session. */
		assert_true(session_of[c][b] == 0 || session_of[c][b] == ses);
		session_of[c][b] = ses;
		npairs[c]++;
	}
	assert_int_equal(npairs[0], 30);
	assert_int_equal(npairs[1], 120);
	for (int b = 1; b <= 60; b++) {
		assert_int_equal(per_block[1][b], 2);
		assert_int_equal(per_block[0][b], b <= 15 ? 2 : 0);
		/* Rounds: blocks 16-30 (15 blocks) in sessions 5-8, 31-60
		 * (30) in sessions 9-12, each its share lo + [i n / m,
		 * (i + 1) n / m) as the first look's. */
		if (b > 15) {
			int lo = b <= 30 ? 15 : 30, n = b <= 30 ? 15 : 30, m = 4;
			int first = b <= 30 ? 5 : 9, want = 0;

			for (int q = 0; q < m; q++)
				if (b - 1 >= lo + q * n / m && b - 1 < lo + (q + 1) * n / m)
					want = first + q;
			assert_int_equal(session_of[1][b], want);
		}
	}
	/* A session of the round of 15 blocks times 3 or 4 of them, one of
	 * the round of 30 blocks 7 or 8: as many sessions as the first
	 * look's, longer. */
	for (int ses = 5; ses <= 12; ses++) {
		int nb = 0;

		for (int b = 16; b <= 60; b++)
			nb += session_of[1][b] == ses;
		assert_true(ses <= 8 ? nb == 3 || nb == 4 : nb == 7 || nb == 8);
	}
	assert_int_equal(count_lines(&o, "case", CASE_CONV), 1);
	cv = find_line(&o, "case_verdict", CASE_GEMM);
	assert_string_equal(str(cv, "verdict"), "equivalent");
	assert_string_equal(str(cv, "stopped"), "decided");
	cv = find_line(&o, "case_verdict", CASE_CONV);
	assert_int_equal(json_integer_value(json_object_get(cv, "blocks")), 60);
	assert_int_equal(json_integer_value(json_object_get(cv, "looks")), 3);
	assert_true(json_is_false(json_object_get(cv, "decided")));
	assert_string_equal(str(cv, "stopped"), "max_pairs");
	assert_string_equal(str(cv, "verdict"), "slower");
	assert_true(json_is_false(json_object_get(cv, "beyond_margin")));
	assert_run_verdict(&o, "neutral", QUAL_EXIT_PASS);
	assert_int_equal(count_lines(&o, "error", NULL), 0);
	assert_rejudged_same(&o);
	outcome_release(&o);
}

/* The caps: max_pairs equal to pairs turns sampling off, and a time cap
 * already passed starts no round; the undecided case says why it stopped.
 * Under --undecided regression that case makes the run a regression. */
static void test_sampling_caps(void **state)
{
	struct scenario s = {
		.name = "runner_sampling_off", .cases = {CASE_CONV}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .sessions = 4,
		.slow_case = CASE_CONV, .slow_factor = 1.01, .max_pairs = TEST_PAIRS,
		.validate = "--expect-pairs 30",
	};
	struct outcome o = {0};
	json_t *cv;

	(void)state;
	scenario_run(&s, &o);
	cv = find_line(&o, "case_verdict", CASE_CONV);
	assert_int_equal(json_integer_value(json_object_get(cv, "blocks")), 15);
	assert_int_equal(json_integer_value(json_object_get(cv, "looks")), 1);
	assert_string_equal(str(cv, "stopped"), "max_pairs");
	assert_rejudged_same(&o);
	outcome_release(&o);

	s.name = "runner_sampling_time_cap";
	s.max_pairs = 0;
	/* The least the settings table allows (proto/settings.c): the first
	 * look's four forked sessions take longer than a millisecond. */
	s.max_seconds = 0.001;
	scenario_run(&s, &o);
	cv = find_line(&o, "case_verdict", CASE_CONV);
	assert_int_equal(json_integer_value(json_object_get(cv, "blocks")), 15);
	assert_true(json_is_false(json_object_get(cv, "decided")));
	assert_string_equal(str(cv, "stopped"), "max_seconds");
	assert_run_verdict(&o, "neutral", QUAL_EXIT_PASS);
	assert_rejudged_same(&o);
	outcome_release(&o);
}

/* A session that dies in a later round ends the rounds: the undecided
 * case, short of its last look, says it stopped because GPU work did
 * (gpu_stopped, not max_seconds), and qual-judge on the lines says the
 * same. */
static void test_sampling_round_session_dies(void **state)
{
	struct scenario s = {
		.name = "runner_sampling_round_session_dies", .cases = {CASE_CONV}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .sessions = 4,
		.slow_case = CASE_CONV, .slow_factor = 1.01, .max_pairs = 120,
		.validate = "--expect-verdict error",
	};
	struct outcome o = {0};
	json_t *cv;
	int n;

	(void)state;
	/* The candidate's 41st timed replay: in the second round, after the
	 * first look's 30 pairs. */
	s.arm[1].kill_at_total = 41;
	scenario_run(&s, &o);
	n = count_lines(&o, "pair", CASE_CONV);
	assert_true(n >= 30 && n < 60);
	assert_code(find_line(&o, "error", NULL), "session_failed");
	cv = find_line(&o, "case_verdict", CASE_CONV);
	assert_true(json_is_false(json_object_get(cv, "decided")));
	assert_string_equal(str(cv, "stopped"), "gpu_stopped");
	assert_run_verdict(&o, "error", QUAL_EXIT_ERROR);
	assert_rejudged_same(&o);
	outcome_release(&o);
}

/* With sampling on, the first look's blocks stop at pairs: 31 pairs in
 * blocks of 2 are 16 blocks, the last of one pair (not 32 pairs); the case,
 * decided there, is not timed again. */
static void test_sampling_first_look_pairs(void **state)
{
	struct scenario s = {
		.name = "runner_sampling_first_look_pairs", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.0005, .pairs = 31,
		.per_block = 2, .sessions = 4,
	};
	struct outcome o = {0};
	json_t *cv;

	(void)state;
	scenario_run(&s, &o);
	assert_true(json_integer_value(json_object_get(json_object_get(
		json_array_get(o.lines, 0), "settings"), "max_pairs")) > 31);
	assert_int_equal(count_lines(&o, "pair", CASE_GEMM), 31);
	cv = find_line(&o, "case_verdict", CASE_GEMM);
	assert_string_equal(str(cv, "stopped"), "decided");
	assert_int_equal(json_integer_value(json_object_get(cv, "blocks")), 16);
	outcome_release(&o);
}

/* ---- "oracle": "baseline": the differential check ----------------------- */

static void load_differential(void)
{
	struct qual_msg msg = {{0}};

	if (fixture_find(CASE_DIFF) < 0)
		assert_int_equal(fixture_load_dir(RUNNER_TEST_FIXTURES "/differential", &msg), 0);
	if (fixture_find(CASE_DIFF_I32) < 0)
		assert_int_equal(fixture_load_dir(RUNNER_TEST_FIXTURES "/differential_i32", &msg),
				 0);
}

/* Both arms write the same output: the candidate matches the baseline's, and
 * the case line says the check was the differential one. */
static void test_differential_pass(void **state)
{
	struct scenario s = {
		.name = "runner_differential_pass", .cases = {CASE_DIFF}, .ncases = 1,
		.arm = {arm_ok, arm_ok}, .noise = 0.002,
		.validate = "--expect-verdict neutral --expect-case-verdict " CASE_DIFF "=identical",
	};
	struct outcome o = {0};
	json_t *c, *oracle;

	(void)state;
	load_differential();
	scenario_run(&s, &o);
	assert_run_verdict(&o, "neutral", QUAL_EXIT_PASS);
	assert_int_equal(count_lines(&o, "error", NULL), 0);
	c = find_line(&o, "case", CASE_DIFF);
	assert_non_null(c);
	oracle = json_object_get(c, "oracle");
	assert_string_equal(str(oracle, "kind"), "baseline");
	assert_string_equal(str(oracle, "what"), "baseline");
	assert_string_equal(str(c, "family"), "diff_f16");
	assert_true(max_abs_error(&o, CASE_DIFF, "candidate") == 0);
	assert_pairs(&o, CASE_DIFF, 30);
	outcome_release(&o);
}

/* The candidate's output differs from the baseline's: a fail of the
 * candidate, wrong_output, the message saying what it was compared with. */
static void test_differential_candidate_wrong(void **state)
{
	static const char *const want[] = {"wrong output after warm-up",
					   "element 5 (row 0, col 5)", "the baseline's output",
					   NULL};
	struct scenario s = {
		.name = "runner_differential_wrong", .cases = {CASE_DIFF}, .ncases = 1,
		.arm = {arm_ok, arm_ok},
		.validate = "--expect-verdict fail --expect-case-verdict " CASE_DIFF "=fail",
	};
	struct outcome o = {0};

	(void)state;
	load_differential();
	s.arm[1].wrong_from = 0;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_code(assert_error(&o, "check", "candidate", CASE_DIFF, want), "wrong_output");
	assert_int_equal(count_errors(&o, "baseline"), 0);
	assert_case_failed(&o, CASE_DIFF, "candidate");
	outcome_release(&o);
}

/* The candidate goes wrong only in the timed replays: the check after timing
 * still compares with the baseline's warm-up output. */
static void test_differential_wrong_in_timing(void **state)
{
	static const char *const want[] = {"the baseline's output", NULL};
	struct scenario s = {
		.name = "runner_differential_wrong_in_timing", .cases = {CASE_DIFF},
		.ncases = 1, .arm = {arm_ok, arm_ok},
		.validate = "--expect-verdict fail --expect-case-verdict " CASE_DIFF "=fail",
	};
	struct outcome o = {0};

	(void)state;
	load_differential();
	s.arm[1].wrong_from = RUNNER_WARMUP;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "fail", QUAL_EXIT_FAIL);
	assert_code(assert_error(&o, "check", "candidate", CASE_DIFF, want), "wrong_output");
	assert_int_equal(count_errors(&o, "baseline"), 0);
	outcome_release(&o);
}

/* A baseline that leaves the last SKIP_COUNT elements of case_name's output
 * unwritten (still poisoned): its output depends on the poison, so it is no
 * reference; the baseline is blamed (wrong_output), the run an error, the
 * candidate never. */
static void differential_baseline_skips(const char *name, const char *case_name)
{
	static const char *const want[] = {
		"the baseline's output depends on what the output buffer held before "
		"(17 elements kept each of two poison patterns): elements left unwritten",
		NULL};
	char validate[200];
	struct scenario s = {
		.name = name, .cases = {case_name}, .ncases = 1, .arm = {arm_ok, arm_ok},
		.validate = validate,
	};
	struct outcome o = {0};

	snprintf(validate, sizeof validate,
		 "--expect-verdict error --expect-case-verdict %s=fail", case_name);
	load_differential();
	s.arm[0].skip_from = 0;
	scenario_run(&s, &o);
	assert_run_verdict(&o, "error", QUAL_EXIT_ERROR);
	assert_code(assert_error(&o, "check", "baseline", case_name, want), "wrong_output");
	assert_int_equal(count_errors(&o, "candidate"), 0);
	outcome_release(&o);
}

/* f16: the skipped elements are NaN under the all-ones poison too. */
static void test_differential_baseline_skips(void **state)
{
	(void)state;
	differential_baseline_skips("runner_differential_baseline_skips", CASE_DIFF);
}

/* i32, where the all-ones poison is the value -1: only the second poison
 * shows the skipped elements. */
static void test_differential_i32_baseline_skips(void **state)
{
	(void)state;
	differential_baseline_skips("runner_differential_i32_skips", CASE_DIFF_I32);
}

/* Both arms write every element of the i32 output: no error. */
static void test_differential_i32_pass(void **state)
{
	struct scenario s = {
		.name = "runner_differential_i32_pass", .cases = {CASE_DIFF_I32}, .ncases = 1,
		.arm = {arm_ok, arm_ok}, .noise = 0.002,
		.validate = "--expect-verdict neutral --expect-case-verdict " CASE_DIFF_I32
			    "=identical",
	};
	struct outcome o = {0};

	(void)state;
	load_differential();
	scenario_run(&s, &o);
	assert_run_verdict(&o, "neutral", QUAL_EXIT_PASS);
	assert_int_equal(count_lines(&o, "error", NULL), 0);
	assert_pairs(&o, CASE_DIFF_I32, 30);
	outcome_release(&o);
}

/* The block lines of case_name, in order (borrowed from o). */
static int block_lines(const struct outcome *o, const char *case_name, json_t **out, int max)
{
	size_t i;
	json_t *l;
	int n = 0;

	json_array_foreach(o->lines, i, l)
		if (has_type(l, "block") && strcmp(str(l, "case"), case_name) == 0 && n < max)
			out[n++] = l;
	return n;
}

static json_int_t int_of(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/* Every block has its line after its pairs: its number, its buffer set
 * and each buffer's shift (the first block the warm-up's placement: set 0,
 * no shifts), the clocks at its start and end from the fake NVML; the same
 * block seed gives the same placements again. */
static void test_block_lines(void **state)
{
	struct scenario s = {
		.name = "runner_block_lines", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .block_seed = 4242,
		.nvml = RUNNER_TEST_FAKE_NVML, .reasons = "0x1",
	};
	struct outcome o = {0}, again = {0};
	json_t *bl[40], *bl2[40], *start, *clocks;
	int n, n2, shifted = 0;
	size_t i;
	json_t *l;

	(void)state;
	scenario_run(&s, &o);
	start = json_array_get(o.lines, 0);
	assert_string_equal(str(json_object_get(start, "clocks"), "source"), "nvml");
	n = block_lines(&o, CASE_GEMM, bl, 40);
	assert_int_equal(n, 15);
	for (int k = 0; k < n; k++) {
		json_t *sh = json_object_get(bl[k], "shifts"), *x;
		size_t j;

		assert_int_equal(int_of(bl[k], "block"), k + 1);
		assert_int_equal(int_of(bl[k], "pairs"), 2);
		assert_null(json_object_get(bl[k], "retake"));
		assert_true(json_is_false(json_object_get(bl[k], "throttled")));
		assert_in_range(int_of(bl[k], "buffer_set"), 0, RUNNER_BUFFER_SETS - 1);
		assert_true(json_array_size(sh) >= 2);
		json_array_foreach(sh, j, x) {
			json_int_t v = json_integer_value(x);
			assert_true(v >= 0 && v < RUNNER_SHIFT_SPAN && v % RUNNER_SHIFT_STEP == 0);
			if (k == 0)
				assert_int_equal(v, 0);
			shifted += v != 0;
		}
		assert_string_equal(str(bl[k], "load"), k == 0 ? "warm_up" :
				    str(bl[k], "load")[0] == 'c' ? "candidate_first" :
				    "baseline_first");
		clocks = json_object_get(bl[k], "clocks");
		assert_string_equal(str(clocks, "source"), "nvml");
		for (int e = 0; e < 2; e++) {
			json_t *r = json_object_get(clocks, e ? "end" : "start");
			assert_true(json_number_value(json_object_get(r, "sm_mhz")) == 1980);
			assert_true(json_number_value(json_object_get(r, "mem_mhz")) == 2619);
			assert_true(json_number_value(json_object_get(r, "power_w")) == 123.456);
			assert_int_equal(int_of(r, "reasons_mask"), 1);
			assert_string_equal(json_string_value(json_array_get(
				json_object_get(r, "reasons"), 0)), "gpu_idle");
		}
	}
	assert_int_equal(int_of(bl[0], "buffer_set"), 0);
	assert_true(shifted > 10);
	/* Each block line follows its block's pairs. */
	{
		int seen = 0, pairs = 0;
		json_array_foreach(o.lines, i, l) {
			if (has_type(l, "pair"))
				pairs++;
			if (has_type(l, "block")) {
				seen++;
				assert_int_equal(pairs, 2 * seen);
			}
		}
	}
	scenario_run(&s, &again);
	n2 = block_lines(&again, CASE_GEMM, bl2, 40);
	assert_int_equal(n2, n);
	for (int k = 0; k < n; k++) {
		assert_int_equal(int_of(bl[k], "buffer_set"), int_of(bl2[k], "buffer_set"));
		assert_true(json_equal(json_object_get(bl[k], "shifts"),
				       json_object_get(bl2[k], "shifts")));
		assert_string_equal(str(bl[k], "load"), str(bl2[k], "load"));
	}
	outcome_release(&o);
	outcome_release(&again);
}

/* Every other attempt at a block reads a software power cap (the fake's
 * reasons cycle 0, 0, 0x4, 0: an attempt's start and end): a throttled
 * attempt's line says so and the block is timed again, same number, its
 * pairs and line carrying "retake", until the case's RUNNER_RETAKES are
 * spent; after that a throttled block stays out. Attempts: block 1 fine;
 * blocks 2, 3 and 4 throttled then retaken; then blocks 5, 7, ..., 15
 * throttled and excluded (6), the even ones fine: 9 blocks, 18 pairs. */
static void test_throttled_blocks_retaken(void **state)
{
	struct scenario s = {
		.name = "runner_throttled", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK,
		.nvml = RUNNER_TEST_FAKE_NVML, .reasons = "0,0,0x4,0",
	};
	struct outcome o = {0};
	json_t *bl[40], *cv, *th;
	int n, retakes = 0, throttled = 0;
	size_t i;
	json_t *l;

	(void)state;
	assert_int_equal(RUNNER_RETAKES, 3);
	scenario_run(&s, &o);
	n = block_lines(&o, CASE_GEMM, bl, 40);
	assert_int_equal(n, 15 + 3);
	for (int k = 0; k < n; k++) {
		bool t = json_is_true(json_object_get(bl[k], "throttled"));
		json_int_t rt = int_of(bl[k], "retake");

		throttled += t;
		retakes += rt > 0;
		if (t)
			assert_string_equal(json_string_value(json_array_get(json_object_get(
				json_object_get(json_object_get(bl[k], "clocks"), "start"),
				"reasons"), 0)), "sw_power_cap");
		if (rt > 0) {
			/* The retake of the attempt before it, over its placement. */
			assert_int_equal(rt, 1);
			assert_int_equal(int_of(bl[k], "block"), int_of(bl[k - 1], "block"));
			assert_true(json_is_true(json_object_get(bl[k - 1], "throttled")));
			assert_true(json_equal(json_object_get(bl[k], "shifts"),
					       json_object_get(bl[k - 1], "shifts")));
			assert_int_equal(int_of(bl[k], "buffer_set"), int_of(bl[k - 1], "buffer_set"));
		}
	}
	assert_int_equal(throttled, 9);
	assert_int_equal(retakes, 3);
	/* The retake's pairs say so too. */
	{
		int rp = 0;
		json_array_foreach(o.lines, i, l)
			rp += has_type(l, "pair") && int_of(l, "retake") == 1;
		assert_int_equal(rp, 2 * 3);
	}
	cv = find_line(&o, "case_verdict", CASE_GEMM);
	th = json_object_get(cv, "throttling");
	assert_int_equal(int_of(th, "throttled_blocks"), 9);
	assert_int_equal(int_of(th, "retaken_blocks"), 3);
	assert_int_equal(int_of(th, "excluded_blocks"), 6);
	assert_int_equal(int_of(cv, "n"), 18);
	assert_int_equal(int_of(cv, "blocks"), 9);
	outcome_release(&o);
}

/* No monitoring library: the start line says why, once; the block lines'
 * clocks are null and nothing is throttled or retaken. */
static void test_no_clocks(void **state)
{
	struct scenario s = {
		.name = "runner_no_clocks", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK,
		.nvml = "/nonexistent/libnvidia-ml.so.1",
	};
	struct outcome o = {0};
	json_t *bl[40], *clocks;
	int n;

	(void)state;
	scenario_run(&s, &o);
	clocks = json_object_get(json_array_get(o.lines, 0), "clocks");
	assert_true(json_is_null(json_object_get(clocks, "source")));
	assert_non_null(strstr(str(clocks, "unavailable_because"),
			       "cannot load '/nonexistent/libnvidia-ml.so.1'"));
	n = block_lines(&o, CASE_GEMM, bl, 40);
	assert_int_equal(n, 15);
	for (int k = 0; k < n; k++) {
		assert_true(json_is_null(json_object_get(bl[k], "clocks")));
		assert_true(json_is_false(json_object_get(bl[k], "throttled")));
	}
	assert_int_equal(int_of(find_line(&o, "case_verdict", CASE_GEMM), "n"), 30);
	assert_null(json_object_get(find_line(&o, "case_verdict", CASE_GEMM), "throttling"));
	outcome_release(&o);
}

/* In 4 sessions: the start line's clocks come from the probe; each
 * session reads its own (the fake NVML in the child), its block lines say
 * their session, and the supervisor's judge applies them. The GPU throttles
 * throughout (a software power cap at every reading): each session retakes
 * its first block RUNNER_RETAKES times and then excludes every block, so
 * nothing is left to judge: the run is an error, as one without a valid
 * pair. 15 blocks in 4 sessions: 15 + 4 x 3 attempts. */
static void test_throttled_sessions(void **state)
{
	struct scenario s = {
		.name = "runner_throttled_sessions", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .sessions = 4,
		.nvml = RUNNER_TEST_FAKE_NVML, .reasons = "0x4",
	};
	struct outcome o = {0};
	json_t *bl[64], *cv, *th;
	int n, per_session[5] = {0};

	(void)state;
	scenario_run(&s, &o);
	assert_string_equal(str(json_object_get(json_array_get(o.lines, 0), "clocks"), "source"),
			    "nvml");
	n = block_lines(&o, CASE_GEMM, bl, 64);
	assert_int_equal(n, 15 + 4 * RUNNER_RETAKES);
	for (int k = 0; k < n; k++) {
		json_int_t ses = int_of(bl[k], "session");
		assert_in_range(ses, 1, 4);
		per_session[ses] += int_of(bl[k], "retake") > 0;
		assert_true(json_is_true(json_object_get(bl[k], "throttled")));
	}
	for (int ses = 1; ses <= 4; ses++)
		assert_int_equal(per_session[ses], RUNNER_RETAKES);
	cv = find_line(&o, "case_verdict", CASE_GEMM);
	th = json_object_get(cv, "throttling");
	assert_int_equal(int_of(th, "throttled_blocks"), 15 + 4 * RUNNER_RETAKES);
	assert_int_equal(int_of(th, "retaken_blocks"), 4 * RUNNER_RETAKES);
	assert_int_equal(int_of(th, "excluded_blocks"), 15);
	assert_int_equal(int_of(cv, "n"), 0);
	/* A run that measured nothing but throttled blocks must not pass. */
	assert_run_verdict(&o, "error", QUAL_EXIT_ERROR);
	assert_non_null(strstr(str(last_line(&o), "message"), "throttled"));
	outcome_release(&o);
}

/* ---- one judge, two ways in ------------------------------------------- */

/* What one way of judging a stream made: every byte it wrote (the lines it
 * was given, then judge_finish()'s), and judge_finish()'s lines parsed. */
struct judged {
	char *text;
	size_t len;
	size_t input_len;       /* the bytes of the lines it was given */
	struct outcome verdicts;
	enum run_verdict v;
};

/* The judge's input in a run's stream, text (len bytes): every line before
 * the first case_verdict or verdict (the judge's own), less the lines of
 * type skip (NULL: none), into a new buffer of *n bytes. */
static char *judge_input(const char *text, size_t len, const char *skip, size_t *n)
{
	char *in = xmalloc(len + 1);
	const char *p = text, *end = text + len;

	*n = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t k = nl ? (size_t)(nl - p) : (size_t)(end - p);
		json_t *l = json_loadb(p, k, 0, NULL);

		assert_non_null(l);
		if (has_type(l, "case_verdict") || has_type(l, "verdict")) {
			json_decref(l);
			break;
		}
		if (!skip || !has_type(l, skip)) {
			memcpy(in + *n, p, k);
			in[*n + k] = '\n';
			*n += k + 1;
		}
		json_decref(l);
		p += k + 1;
	}
	return in;
}

/* Judges the lines in (n bytes) as qual-run's supervisor judges a
 * session's (relayed: relay_session(), reading them from a pipe), or as
 * the one process judges its own (each line's value handed to
 * runner__emit()); then judge_finish() with the start line's settings,
 * through the run's writer, as runner_run() ends. */
static void judge_one_way(const char *in, size_t n, bool relayed, struct judged *r)
{
	struct runner_config cfg;
	struct run run;
	struct stats_settings st;
	struct judge scratch;
	char why[256], *verdicts;
	bool not_timed;
	const char *p = in, *end = in + n;

	memset(r, 0, sizeof *r);
	runner_config_init(&cfg);
	memset(&run, 0, sizeof run);
	run.cfg = &cfg;
	judge_init(&run.judge);
	run.judge.emit = runner__emit_judged;
	run.judge.emit_ctx = &run;
	run.out = open_memstream(&r->text, &r->len);
	assert_non_null(run.out);
	/* The settings, as qual-judge reads them. */
	stats_settings_init(&st);
	judge_init(&scratch);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		json_t *l = json_loadb(p, (size_t)(nl - p), 0, NULL);

		if (has_type(l, "start"))
			assert_int_equal(judge_take_line(&scratch, &st, l, why, sizeof why), 0);
		if (!relayed)
			runner__emit(&run, l);
		else
			json_decref(l);
		p = nl + 1;
	}
	judge_release(&scratch);
	if (relayed) {
		bool over;

		/* True for a stream that stopped GPU work. */
		(void)relay_from_pipe(&run, in, n, &over);
		assert_false(over);
	}
	fflush(run.out);
	r->input_len = r->len;
	r->v = judge_finish(&run.judge, &st, NULL, &not_timed);
	judge_release(&run.judge);
	fclose(run.out);
	verdicts = xmalloc(r->len - r->input_len + 1);
	memcpy(verdicts, r->text + r->input_len, r->len - r->input_len);
	verdicts[r->len - r->input_len] = '\0';
	outcome_parse(&r->verdicts, verdicts);
}

static void judged_release(struct judged *r)
{
	free(r->text);
	json_decref(r->verdicts.lines);
}

/* Whether a and b hold the same case_verdict and verdict lines, in the same
 * order, leaving out the verdict line's time_s (a run's own clock). */
static bool same_verdicts(json_t *a, json_t *b)
{
	json_t *x = json_array(), *y = json_array(), *l;
	size_t i;
	bool same;

	json_array_foreach(a, i, l)
		if (has_type(l, "case_verdict") || has_type(l, "verdict"))
			json_array_append_new(x, json_deep_copy(l));
	json_array_foreach(b, i, l)
		if (has_type(l, "case_verdict") || has_type(l, "verdict"))
			json_array_append_new(y, json_deep_copy(l));
	json_array_foreach(x, i, l)
		json_object_del(l, "time_s");
	json_array_foreach(y, i, l)
		json_object_del(l, "time_s");
	same = json_array_size(x) > 0 && json_equal(x, y);
	json_decref(x);
	json_decref(y);
	return same;
}

/* A run's stream (scenario s, run into o) judged both ways in, relayed as
 * a session's and handed line by line to runner__emit(): each writes the
 * lines it was given byte for byte as the run wrote them and judges them
 * to the case_verdict and verdict lines the run itself wrote, whichever way
 * its own judge was fed (in this process, or relayed from its sessions).
 * And the lines of type matters do matter: without them the verdicts
 * change, so that a way in that left that type unjudged would differ from
 * the run here. */
static void assert_judged_same(const struct scenario *s, const struct outcome *o,
			       const char *matters)
{
	char path[1024], *text = NULL, *in;
	size_t len = 0, n;
	struct qual_msg msg;
	struct judged way[2], without;

	snprintf(path, sizeof path, "%s/%s.jsonl", RUNNER_TEST_OUT, s->name);
	assert_int_equal(fs_read_capped(path, (size_t)64 << 20, &text, &len, &msg), 0);
	in = judge_input(text, len, NULL, &n);
	for (int relayed = 0; relayed < 2; relayed++) {
		judge_one_way(in, n, relayed, &way[relayed]);
		assert_int_equal(way[relayed].input_len, n);
		assert_memory_equal(way[relayed].text, in, n);
		if (!same_verdicts(way[relayed].verdicts.lines, o->lines))
			fail_msg("'%s' judged %s differs from the run's own verdicts", s->name,
				 relayed ? "relayed" : "by runner__emit");
	}
	assert_int_equal(way[0].v, way[1].v);
	free(in);
	in = judge_input(text, len, matters, &n);
	judge_one_way(in, n, true, &without);
	if (same_verdicts(without.verdicts.lines, o->lines))
		fail_msg("'%s' judged without its %s lines gives the same verdicts", s->name,
			 matters);
	judged_release(&without);
	judged_release(&way[0]);
	judged_release(&way[1]);
	free(in);
	free(text);
}

/* The one process's judge and the sessions' supervisor's judge the same
 * lines to the same verdicts: runs in one process whose block lines
 * exclude throttled blocks, and whose candidate fails after its pairs
 * (its error lines); runs in sessions where every block throttled (the
 * verdict an error: no valid pair), and where a fault stops GPU work (a
 * case's error line and the stop line's gpu_stopped). (A case that no
 * session reached is one the supervisor's judge knows from the compile
 * phase, not from a line: not one of these runs has one.) */
static void test_judged_same_both_ways(void **state)
{
	struct scenario thr = {
		.name = "runner_judged_throttled", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK,
		.nvml = RUNNER_TEST_FAKE_NVML, .reasons = "0,0,0x4,0",
	};
	struct scenario wrong = {
		.name = "runner_judged_wrong", .cases = {CASE_GEMM, CASE_CONV}, .ncases = 2,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK,
	};
	struct scenario thr_sessions = {
		.name = "runner_judged_throttled_sessions", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .sessions = 4,
		.nvml = RUNNER_TEST_FAKE_NVML, .reasons = "0x4",
	};
	struct scenario fault = {
		.name = "runner_judged_session_fault", .cases = {CASE_GEMM}, .ncases = 1,
		.differ = true, .arm = {arm_ok, arm_ok}, .noise = 0.002,
		.per_block = TEST_PER_BLOCK, .sessions = 4,
	};
	struct outcome o = {0};

	(void)state;
	scenario_run(&thr, &o);
	assert_true(json_is_object(json_object_get(find_line(&o, "case_verdict", CASE_GEMM),
						   "throttling")));
	assert_judged_same(&thr, &o, "block");
	outcome_release(&o);

	wrong.arm[1].wrong_from = RUNNER_WARMUP;
	scenario_run(&wrong, &o);
	assert_true(count_lines(&o, "pair", CASE_GEMM) > 0);
	assert_case_failed(&o, CASE_GEMM, "candidate");
	assert_judged_same(&wrong, &o, "error");
	outcome_release(&o);

	scenario_run(&thr_sessions, &o);
	assert_run_verdict(&o, "error", QUAL_EXIT_ERROR);
	assert_judged_same(&thr_sessions, &o, "block");
	outcome_release(&o);

	fault.arm[1].fault_time = 3;
	scenario_run(&fault, &o);
	assert_case_failed(&o, CASE_GEMM, "candidate");
	assert_stop_line(&o, "faulted");
	assert_judged_same(&fault, &o, "error");
	outcome_release(&o);
}

QUAL_TESTS(
	T(block_lines),
	T(judged_same_both_ways),
	T(throttled_blocks_retaken),
	T(no_clocks),
	T(throttled_sessions),
	T(differential_i32_baseline_skips),
	T(differential_i32_pass),
	T(differential_pass),
	T(differential_candidate_wrong),
	T(differential_wrong_in_timing),
	T(differential_baseline_skips),
	T(defaults),
	T(correct_identical),
	T(correct_equivalent),
	T(candidate_slower),
	T(candidate_faster),
	T(blocks),
	T(blocks_cover_instance_effects),
	T(settle),
	T(pad),
	T(carveout),
	T(case_contexts),
	T(case_contexts_reopen_fails),
	T(fault_in_later_block),
	T(wrong_in_timing_blocks),
	T(sessions),
	T(next_round),
	T(sessions_one_at_a_time),
	T(sessions_open_together),
	T(sessions_more_than_ahead),
	T(first_session_during_compiles),
	T(first_session_no_case_compiled),
	T(sessions_busy_device),
	T(session_crash_at_close),
	T(sessions_linger),
	T(sessions_linger_crash),
	T(compiles_longest_first),
	T(calibration_for_device),
	T(sampling_rounds),
	T(sampling_caps),
	T(sampling_first_look_pairs),
	T(sampling_round_session_dies),
	T(no_device_sessions),
	T(session_fault),
	T(session_hang),
	T(session_killed),
	T(session_crash),
	T(candidate_wrong),
	T(baseline_wrong),
	T(candidate_skips),
	T(candidate_wrong_in_timing),
	T(candidate_wrong_when_timed_last),
	T(candidate_corrupts),
	T(baseline_corrupts),
	T(candidate_corrupts_at_warmup),
	T(candidate_fault_in_pair),
	T(baseline_fault_at_warmup),
	T(candidate_fault_at_warmup),
	T(hang_limit),
	T(candidate_hang_at_warmup),
	T(baseline_hang_at_warmup),
	T(candidate_hang_in_pair),
	T(hang_limit_from_baseline),
	T(too_few_pairs),
	T(no_device),
	T(relay_cut_off),
	T(relay_last_whole),
	T(relay_stop),
	T(relay_over_cap),
	T(wgmma_tensor_maps),
	T(not_applicable),
)
