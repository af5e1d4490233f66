/* The pair runner (runner.h): each case compiled by both arms, loaded,
 * warmed up, checked against its oracle and timed in pairs, block by block,
 * and the run judged. Sessions (sessions.c) run the timed part in child
 * processes; this file is what one process does with a case. */
#include "run/runner_internal.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/child.h"
#include "common/exitcode.h"
#include "common/lines.h"
#include "common/xalloc.h"
#include "fixtures/fixture.h"
#include "fixtures/rng.h"
#include "gpu/clocks.h"
#include "gpu/gpu.h"
#include "run/cache.h"
#include "stats/judge.h"

static const char *const arm_names[2] = {"baseline", "candidate"};

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
};

/* The case's device buffers, shared by both arms: RUNNER_BUFFER_SETS sets,
 * each buffer RUNNER_SHIFT_SPAN bytes larger than the fixture needs. The
 * kernels see one set at a time, at dev = base + a shift; set and shifts
 * change with every block. */
struct bufs {
	uint64_t base[RUNNER_BUFFER_SETS][FIXTURE_MAX_BUFFERS];
	uint64_t dev[FIXTURE_MAX_BUFFERS];
	uint64_t flush;  /* cfg->flush_bytes to overwrite before each timing */
	void *scratch; /* host copy-back space, as large as the largest buffer */
	/* Per arm, the case's last output in this process that passed the
	 * oracle's check (NULL: none yet), and the error it was checked with: an output
	 * byte-identical to one of them is checked by the comparison of its
	 * bytes alone (inspect()). */
	unsigned char *passed[2];
	double passed_err[2];
};


void runner_config_init(struct runner_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->pairs = RUNNER_DEFAULT_PAIRS;
	cfg->pairs_per_block = RUNNER_PAIRS_PER_BLOCK;
	cfg->sessions = RUNNER_SESSIONS;
	cfg->warmup = RUNNER_WARMUP;
	stats_settings_init(&cfg->stats);
	rtc_limits_init(&cfg->limits);
	cfg->hang_floor_ms = RUNNER_HANG_FLOOR_MS;
	cfg->hang_factor = RUNNER_HANG_FACTOR;
	cfg->probe_timeout_s = RUNNER_PROBE_TIMEOUT_S;
}

double runner_hang_limit_ms(double floor_ms, double factor, double baseline_graph_ms)
{
	double scaled = factor * baseline_graph_ms;

	/* NaN, infinite and non-positive times are no measure: the floor. */
	return baseline_graph_ms > 0 && isfinite(scaled) && scaled > floor_ms ? scaled : floor_ms;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Sets the limit of every later wait for the GPU, and why (a phrase that
 * follows "the limit was"). */
static void set_limit(struct run *run, double ms, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_limit(struct run *run, double ms, const char *fmt, ...)
{
	va_list ap;

	gpu_set_wait_limit(run->gpu, ms);
	va_start(ap, fmt);
	vsnprintf(run->limit_why, sizeof run->limit_why, fmt, ap);
	va_end(ap);
}

static json_t *identity_json(const struct rtc_identity *id,
			     const char *const *opts, int nopts)
{
	json_t *o = json_array();

	for (int i = 0; i < nopts; i++)
		json_array_append_new(o, lines_text(opts[i]));
	return json_pack("{s:s,s:s,s:o,s:o,s:s,s:o}", "abi", id->abi_name,
			 "version", id->version, "path", lines_text(id->path),
			 "real_path", lines_text(id->real_path), "sha256", id->sha256,
			 "options", o);
}

static json_t *int_or_null(int x)
{
	return x >= 0 ? json_integer(x) : json_null();
}

static json_t *arm_json(const struct arm *a, bool timed)
{
	const struct rtc_result *r = a->code;
	json_t *o = json_object();

	json_object_set_new(o, "compiled", json_boolean(a->compiled));
	json_object_set_new(o, "cached", json_boolean(a->cached));
	if (!a->compiled)
		return o;
	json_object_set_new(o, "artifact_sha256", json_string(r->code_sha256));
	json_object_set_new(o, "code_bytes", json_integer((json_int_t)r->code_size));
	json_object_set_new(o, "registers", int_or_null(r->res.registers));
	json_object_set_new(o, "sgprs", int_or_null(r->res.sgprs));
	json_object_set_new(o, "spill_stores", int_or_null(r->res.spill_stores));
	json_object_set_new(o, "spill_loads", int_or_null(r->res.spill_loads));
	json_object_set_new(o, "stack_bytes", int_or_null(r->res.stack_bytes));
	json_object_set_new(o, "shared_bytes", int_or_null(r->res.shared_bytes));
	json_object_set_new(o, "compile_ms", json_real(r->compile_ms));
	/* Null, not 0, for an arm whose output was never checked (the other
	 * arm failed first, or a fault came before its check). */
	json_object_set_new(o, "max_abs_error",
			    timed && a->checked ? lines_real(a->max_err) : json_null());
	return o;
}

/* Candidate minus baseline, or null when either side is unknown. */
static json_t *delta(int b, int c)
{
	return b >= 0 && c >= 0 ? json_integer(c - b) : json_null();
}

static void emit_case(struct run *run, const struct fixture_case *c,
		      struct arm arms[2], bool identical, bool timed)
{
	json_t *line = lines_new("case");
	json_t *spec = json_object();
	char target[40];

	json_object_set_new(line, "case", json_string(c->name));
	json_object_set_new(line, "family", json_string(c->family));
	json_object_set_new(line, "kernel", json_string(c->kernel));
	/* The constants the case was compiled with, in the order of its
	 * constant block, and the target it was compiled for. */
	for (int i = 0; i < c->ndefines; i++)
		json_object_set_new(spec, c->defines[i].name, lines_text(c->defines[i].value));
	json_object_set_new(line, "specialization", spec);
	fixture_target(c, run->arch, target, sizeof target);
	json_object_set_new(line, "target", json_string(target));
	json_object_set_new(line, "baseline", arm_json(&arms[0], timed));
	json_object_set_new(line, "candidate", arm_json(&arms[1], timed));
	json_object_set_new(line, "identical_code", json_boolean(identical));
	if (arms[0].compiled && arms[1].compiled) {
		const struct rtc_resources *b = &arms[0].code->res, *k = &arms[1].code->res;
		json_object_set_new(line, "static", json_pack(
			"{s:b,s:I,s:o,s:o,s:o,s:o}", "identical_code", identical,
			"code_bytes_delta",
			(json_int_t)arms[1].code->code_size - (json_int_t)arms[0].code->code_size,
			"registers_delta", delta(b->registers, k->registers),
			"spill_stores_delta", delta(b->spill_stores, k->spill_stores),
			"spill_loads_delta", delta(b->spill_loads, k->spill_loads),
			"stack_bytes_delta", delta(b->stack_bytes, k->stack_bytes)));
	}
	json_object_set_new(line, "oracle", json_pack("{s:s,s:o}", "kind",
		c->oracle == FIXTURE_ORACLE_BASELINE ? "baseline" : "host", "what",
		lines_text(c->oracle_what)));
	json_object_set_new(line, "tolerance_kind", json_string(
		c->tolerance_kind == FIXTURE_TOL_REL ? "rel" :
		c->tolerance_kind == FIXTURE_TOL_ULPS ? "ulps" : "abs"));
	json_object_set_new(line, "tolerance", json_real(c->tolerance));
	json_object_set_new(line, "tolerance_why", json_string(c->tolerance_why));
	json_object_set_new(line, "timed", json_boolean(timed));
	json_object_set_new(line, "replays", json_integer(RUNNER_REPLAYS));
	json_object_set_new(line, "grid", json_pack("[i,i,i]", c->grid[0], c->grid[1], c->grid[2]));
	json_object_set_new(line, "block", json_pack("[i,i,i]", c->block[0], c->block[1], c->block[2]));
	json_object_set_new(line, "flops", json_real(c->flops));
	lines_emit(run->out, line);
}

/* Records a failure of arm (0 baseline, 1 candidate) in case jc (NULL: in
 * none) with its error line. */
static void fail_arm_as(struct run *run, struct judge_case *jc, int arm,
			const char *stage, enum lines_code code, const char *message)
{
	lines_error(run->out, stage, code, arm_names[arm], jc ? jc->name : NULL, message);
	if (jc)
		judge_case_fail(jc, arm ? JUDGE_FAIL_CANDIDATE : JUDGE_FAIL_BASELINE);
	else if (arm)
		run->judge.candidate_error = true;
	else
		run->judge.machine_error = true;
}

/* fail_arm_as() with the code of err (QUAL_E*) at stage. */
static void fail_arm(struct run *run, struct judge_case *jc, int arm,
		     const char *stage, int err, const char *message)
{
	fail_arm_as(run, jc, arm, stage, lines_code_of(stage, err), message);
}

/* A GPU call failed while working for arm: the context may be unusable (a
 * fault is sticky), so GPU work ends for the whole run. A hang is blamed the
 * same way: every wait follows the one launch or copy before it, so the arm
 * whose graph was waited for is the arm whose kernel did not finish. The
 * code is gpu_fault or gpu_hang at every stage (an allocation that fails
 * while loading is no refusal of the arm's code: that is load_failed,
 * prepare_arm's). */
static void gpu_fault(struct run *run, struct judge_case *jc, int arm,
		      const char *stage, const struct qual_msg *msg)
{
	char text[sizeof msg->text + sizeof run->limit_why + 64];

	run->gpu_dead = true;
	if (!gpu_is_hung(run->gpu)) {
		fail_arm_as(run, jc, arm, stage, LINES_CODE_GPU_FAULT, msg->text);
		snprintf(run->stop_reason, sizeof run->stop_reason,
			 "gpu work stopped in case '%s' (%s arm, %s): %s", jc->name,
			 arm_names[arm], stage, msg->text);
		return;
	}
	run->hung = true;
	snprintf(text, sizeof text, "%s; the limit was %s", msg->text, run->limit_why);
	fail_arm_as(run, jc, arm, stage, LINES_CODE_GPU_HANG, text);
	snprintf(run->stop_reason, sizeof run->stop_reason,
		 "gpu work stopped in case '%s' (%s arm, %s): %s; the kernel is still "
		 "running, so the process ends to stop it", jc->name, arm_names[arm],
		 stage, msg->text);
}

static int compile_arm(struct run *run, const struct fixture_case *c, int arm,
		       struct arm *a)
{
	const struct compiled *e = runner__compile(run, c, arm);

	a->code = &e->res;
	a->cached = e->cached;
	if (e->res.status != 0)
		return e->res.status;
	a->compiled = true;
	return 0;
}

/* Both arms of case c compiled; true (and so recorded in jc) when their
 * code is byte-identical. A user fixture (user) that both compilers reject
 * is the fixture's own fault, not an arm's: one bad_fixture line (arm null),
 * the case judged like a fixture that cannot be built (the run an error). */
static bool compile_both(struct run *run, const struct fixture_case *c,
			 struct arm arms[2], struct judge_case *jc, bool user)
{
	int rc[2];

	for (int arm = 0; arm < 2; arm++)
		rc[arm] = compile_arm(run, c, arm, &arms[arm]);
	if (user && rc[0] == QUAL_ECOMPILE && rc[1] == QUAL_ECOMPILE) {
		char text[2 * sizeof arms[0].code->message + 160];

		snprintf(text, sizeof text, "user fixture case '%s' compiles with neither "
			 "compiler: baseline: %.*s; candidate: %.*s", c->name,
			 (int)strcspn(arms[0].code->message, "\n"), arms[0].code->message,
			 (int)strcspn(arms[1].code->message, "\n"), arms[1].code->message);
		lines_error(run->out, "compile", LINES_CODE_BAD_FIXTURE, NULL, jc->name, text);
		judge_case_fail(jc, JUDGE_FAIL_BASELINE);
	} else {
		for (int arm = 0; arm < 2; arm++)
			if (rc[arm] != 0)
				fail_arm(run, jc, arm, "compile", rc[arm], arms[arm].code->message);
	}
	jc->identical_code = arms[0].compiled && arms[1].compiled &&
			     strcmp(arms[0].code->code_sha256, arms[1].code->code_sha256) == 0;
	return jc->identical_code;
}

/* Whether case index is one of a user fixture's (loaded after the built-in
 * cases). */
static bool is_user_case(int index)
{
	return index >= fixture_count() - fixture_user_count();
}

static void release_arm(struct arm *a)
{
	if (a->graph)
		gpu_graph_free(a->graph);
	if (a->module)
		gpu_module_free(a->module);
	memset(a, 0, sizeof *a);
}

static void release_bufs(struct run *run, struct bufs *b)
{
	for (int s = 0; s < RUNNER_BUFFER_SETS; s++)
		for (int i = 0; i < FIXTURE_MAX_BUFFERS; i++)
			if (b->base[s][i])
				gpu_free(run->gpu, b->base[s][i]);
	if (b->flush)
		gpu_free(run->gpu, b->flush);
	free(b->scratch);
	free(b->passed[0]);
	free(b->passed[1]);
	memset(b, 0, sizeof *b);
}

/* Allocates the case's buffers. A failure here is the machine's. */
static int alloc_bufs(struct run *run, const struct fixture_case *c,
		      struct bufs *b, struct judge_case *jc)
{
	struct qual_msg msg = {{0}};
	size_t largest = 1;
	int rc;

	for (int i = 0; i < c->nbuffers; i++) {
		for (int s = 0; s < RUNNER_BUFFER_SETS; s++) {
			size_t room = c->buffers[i].bytes + RUNNER_SHIFT_SPAN;
			room = (room + RUNNER_SET_PAGE - 1) / RUNNER_SET_PAGE * RUNNER_SET_PAGE +
			       (size_t)s * RUNNER_SET_PAGE;
			if ((rc = gpu_alloc(run->gpu, room, &b->base[s][i], &msg)) < 0) {
				gpu_fault(run, jc, 0, "load", &msg);
				return rc;
			}
		}
		b->dev[i] = b->base[0][i];
	}
	/* Allocated like the buffers, with the slack, though never shifted. */
	if (run->cfg->flush_bytes &&
	    (rc = gpu_alloc(run->gpu, run->cfg->flush_bytes + RUNNER_SHIFT_SPAN, &b->flush,
			    &msg)) < 0) {
		gpu_fault(run, jc, 0, "load", &msg);
		return rc;
	}
	for (int i = 0; i < c->nbuffers; i++) {
		if (c->buffers[i].bytes > largest)
			largest = c->buffers[i].bytes;
	}
	b->scratch = xmalloc(largest);
	return 0;
}

/* Restores every input from the host copy and poisons the output with
 * bytes of poison, so the next check sees only what the next arm wrote. */
static int reset_bufs_with(struct run *run, const struct fixture_case *c,
			   struct bufs *b, int arm, struct judge_case *jc, int poison)
{
	struct qual_msg msg = {{0}};
	int rc;

	for (int i = 0; i < c->nbuffers; i++) {
		const struct fixture_buffer *fb = &c->buffers[i];
		rc = fb->output ? gpu_memset(run->gpu, b->dev[i], poison, fb->bytes, &msg) :
				  gpu_upload(run->gpu, b->dev[i], fb->host, fb->bytes, &msg);
		if (rc < 0) {
			gpu_fault(run, jc, arm, "check", &msg);
			return rc;
		}
	}
	return 0;
}

/* reset_bufs_with() all bits set: an f16 NaN. */
static int reset_bufs(struct run *run, const struct fixture_case *c,
		      struct bufs *b, int arm, struct judge_case *jc)
{
	return reset_bufs_with(run, c, b, arm, jc, 0xff);
}

/* Encodes c's tensor maps over the buffers where they are now (b->dev:
 * every block moves them, and prepare_arm, which builds every graph, calls
 * this first). A map the driver refuses is the machine's failure. */
static int tensor_maps(struct run *run, const struct fixture_case *c, struct bufs *b,
		       struct gpu_tensor_map *maps, struct judge_case *jc)
{
	struct qual_msg msg = {{0}};
	int rc;

	for (int i = 0; i < c->ntensor_maps; i++) {
		const struct fixture_tensor_map *t = &c->tensor_maps[i];
		rc = gpu_tensor_map_2d(run->gpu, &maps[i], b->dev[t->buffer], t->elem_bytes,
				       t->dims, t->row_bytes, t->box, &msg);
		if (rc < 0) {
			fail_arm(run, jc, 0, "load", rc, msg.text);
			return rc;
		}
	}
	return 0;
}

/* Loads the arm's code and builds its graph over the shared buffers. */
static int prepare_arm(struct run *run, const struct fixture_case *c, int arm,
		       struct arm *a, struct bufs *b, struct judge_case *jc)
{
	struct qual_msg msg = {{0}};
	void *params[FIXTURE_MAX_BUFFERS + FIXTURE_MAX_SCALARS + FIXTURE_MAX_TENSOR_MAPS];
	uint32_t scalars[FIXTURE_MAX_SCALARS];
	struct gpu_tensor_map maps[FIXTURE_MAX_TENSOR_MAPS];
	int rc, np = 0;

	if ((rc = tensor_maps(run, c, b, maps, jc)) < 0)
		return rc;

	rc = gpu_module_load(run->gpu, a->code->code, a->code->code_size, c->kernel,
			     &a->module, &msg);
	if (rc < 0) {
		/* A module the driver refuses is the compiler's doing. */
		fail_arm(run, jc, arm, "load", rc, msg.text);
		return rc;
	}
	for (int i = 0; i < c->nbuffers; i++)
		params[np++] = &b->dev[i];
	for (int i = 0; i < c->nscalars; i++) {
		scalars[i] = c->scalars[i];
		params[np++] = &scalars[i];
	}
	for (int i = 0; i < c->ntensor_maps; i++)
		params[np++] = &maps[i];
	rc = gpu_graph_new(run->gpu, a->module, c->grid, c->block, c->shared_bytes,
			   params, RUNNER_REPLAYS, &a->graph, &msg);
	if (rc < 0) {
		fail_arm(run, jc, arm, "load", rc, msg.text);
		return rc;
	}
	return 0;
}

/* Checks the output in b->scratch against the oracle (fixture_check), or,
 * when it is byte for byte an output that passed before in this process
 * (either arm's, same case, same reference), takes that check's result:
 * the same bytes against the same oracle give the same answer, and the
 * comparison of every element (some 3 ms for the larger cases on the H200's
 * host, four times per case and session) is the largest part of a
 * session's checks. An output that passes is kept for the next check. */
static int check_output(const struct fixture_case *c, int arm, struct bufs *b, double *err,
			struct qual_msg *msg)
{
	size_t bytes = c->buffers[c->output].bytes;
	int rc;

	for (int k = 0; k < 2; k++) {
		int other = k ? 1 - arm : arm;
		if (b->passed[other] && memcmp(b->passed[other], b->scratch, bytes) == 0) {
			*err = b->passed_err[other];
			return 0;
		}
	}
	if ((rc = fixture_check(c, b->scratch, err, msg)) < 0)
		return rc;
	if (!b->passed[arm])
		b->passed[arm] = xmalloc(bytes);
	memcpy(b->passed[arm], b->scratch, bytes);
	b->passed_err[arm] = *err;
	return 0;
}

/* Copies the output back and checks it against the oracle, then checks that
 * every input still holds what was uploaded. Returns 0, QUAL_ECHECK with what
 * was wrong in text (nobody blamed yet), or a GPU error (already reported,
 * against arm). */
static int inspect(struct run *run, const struct fixture_case *c, int arm,
		   struct arm *a, struct bufs *b, struct judge_case *jc,
		   const char *when, char *text, size_t textlen)
{
	const struct fixture_buffer *out = &c->buffers[c->output];
	struct qual_msg msg = {{0}};
	double err = 0;
	int rc;

	rc = gpu_download(run->gpu, b->scratch, b->dev[c->output], out->bytes, &msg);
	if (rc < 0) {
		gpu_fault(run, jc, arm, "check", &msg);
		return rc;
	}
	rc = check_output(c, arm, b, &err, &msg);
	/* The largest error over every check; NaN (a non-finite element) sticks. */
	a->max_err = isnan(err) || isnan(a->max_err) ? NAN : fmax(a->max_err, err);
	a->checked = true;
	if (rc < 0) {
		snprintf(text, textlen, "wrong output %s: %s", when, msg.text);
		return QUAL_ECHECK;
	}
	for (int i = 0; i < c->nbuffers; i++) {
		const struct fixture_buffer *fb = &c->buffers[i];
		const unsigned char *got = b->scratch, *want = fb->host;
		size_t k = 0;

		if (fb->output || fb->scratch)
			continue;
		rc = gpu_download(run->gpu, b->scratch, b->dev[i], fb->bytes, &msg);
		if (rc < 0) {
			gpu_fault(run, jc, arm, "check", &msg);
			return rc;
		}
		if (memcmp(got, want, fb->bytes) == 0)
			continue;
		while (got[k] == want[k])
			k++;
		snprintf(text, textlen,
			 "input buffer %d changed %s: first differing byte %zu of %zu",
			 i, when, k, fb->bytes);
		return QUAL_ECHECK;
	}
	return 0;
}

/* inspect(), blaming arm for anything wrong. */
static int check_arm(struct run *run, const struct fixture_case *c, int arm,
		     struct arm *a, struct bufs *b, struct judge_case *jc,
		     const char *when)
{
	char text[1200];
	int rc = inspect(run, c, arm, a, b, jc, when, text, sizeof text);

	if (rc == QUAL_ECHECK)
		fail_arm(run, jc, arm, "check", QUAL_ECHECK, text);
	return rc;
}

/* Runs arm's graph reps times on fresh inputs, the output poisoned with
 * bytes of poison. When fastest_ns is not NULL it gets the fastest replay's
 * host time (launch to end of wait), or stays as it was when reps is 0. */
static int replay(struct run *run, const struct fixture_case *c, int arm,
		  struct arm *a, struct bufs *b, struct judge_case *jc, int reps,
		  int poison, double *fastest_ns)
{
	struct qual_msg msg = {{0}};
	int rc;

	if ((rc = reset_bufs_with(run, c, b, arm, jc, poison)) < 0)
		return rc;
	for (int i = 0; i < reps; i++) {
		double t0 = now_ns(), dt;
		if ((rc = gpu_graph_run(a->graph, &msg)) < 0) {
			gpu_fault(run, jc, arm, "time", &msg);
			return rc;
		}
		dt = now_ns() - t0;
		if (fastest_ns && (i == 0 || dt < *fastest_ns))
			*fastest_ns = dt;
	}
	return 0;
}

/* The differential check's reference (fixture.h): the baseline's output
 * after its warm-up (on the device now, over the all-ones poison) is what
 * the candidate is compared with, and what the baseline's later runs must
 * repeat. The same replays are run again over a zero poison: an element
 * that holds its own poison both times (all bytes 0xff, then all 0x00) was
 * left unwritten, which the all-ones poison does not show for an integer
 * output (-1 is a value); that output is no reference, and the baseline is
 * blamed (an error, never a fail). Elements that merely differ between the
 * two runs (a float reduction with atomics) are left to the tolerance of
 * the checks that follow. The case is run_case's own (struct fixture_case c
 * there), lent here as const. */
static int take_reference(struct run *run, const struct fixture_case *c, struct arm *a,
			  struct bufs *b, struct judge_case *jc, int reps)
{
	struct fixture_case *own = (struct fixture_case *)c;
	struct qual_msg msg = {{0}};
	size_t bytes = c->buffers[c->output].bytes, esize = fixture_elem_size(c->elem);
	const unsigned char *ref, *got = b->scratch;
	size_t unwritten = 0;
	char text[400];
	int rc;

	own->reference = xmalloc(bytes);
	if ((rc = gpu_download(run->gpu, own->reference, b->dev[c->output], bytes,
			       &msg)) < 0 ||
	    (rc = replay(run, c, 0, a, b, jc, reps, 0x00, NULL)) < 0 ||
	    (rc = gpu_download(run->gpu, b->scratch, b->dev[c->output], bytes, &msg)) < 0) {
		if (msg.text[0])
			gpu_fault(run, jc, 0, "check", &msg);
		return rc;
	}
	ref = own->reference;
	for (size_t i = 0; i + esize <= bytes; i += esize) {
		bool kept = true;
		for (size_t k = 0; k < esize && kept; k++)
			kept = ref[i + k] == 0xff && got[i + k] == 0x00;
		unwritten += kept;
	}
	if (unwritten == 0)
		return 0;
	snprintf(text, sizeof text, "the baseline's output depends on what the output buffer "
		 "held before (%zu elements kept each of two poison patterns): elements "
		 "left unwritten", unwritten);
	fail_arm(run, jc, 0, "check", QUAL_ECHECK, text);
	return QUAL_ECHECK;
}

/* Runs arm's graph reps times on fresh inputs and checks what it left (see
 * replay()); a differential case's first baseline run takes the reference. */
static int run_and_check(struct run *run, const struct fixture_case *c, int arm,
			 struct arm *a, struct bufs *b, struct judge_case *jc,
			 int reps, const char *when, double *fastest_ns)
{
	int rc;

	if ((rc = replay(run, c, arm, a, b, jc, reps, 0xff, fastest_ns)) < 0)
		return rc;
	if (c->oracle == FIXTURE_ORACLE_BASELINE && arm == 0 && !c->reference &&
	    (rc = take_reference(run, c, a, b, jc, reps)) < 0)
		return rc;
	return check_arm(run, c, arm, a, b, jc, when);
}

/* Warm-up: each arm on fresh inputs and a poisoned output, reps replays,
 * then checked. The timed pairs then start from the last arm's output. The
 * baseline goes first, under its allowance (set by run_case); its fastest
 * replay sets the deadline of everything after it in the case. */
static int warm_up(struct run *run, const struct fixture_case *c,
		   struct arm arms[2], struct bufs *b, struct judge_case *jc)
{
	const struct runner_config *cfg = run->cfg;
	double base_ns = 0;
	int rc;

	if ((rc = run_and_check(run, c, 0, &arms[0], b, jc, cfg->warmup,
				"after warm-up", &base_ns)) < 0)
		return rc;
	if (base_ns > 0)
		set_limit(run, runner_hang_limit_ms(cfg->hang_floor_ms, cfg->hang_factor, base_ns / 1e6),
			  "the larger of the %g ms floor and %g x the baseline's %.3f ms graph",
			  cfg->hang_floor_ms, cfg->hang_factor, base_ns / 1e6);
	else
		set_limit(run, cfg->hang_floor_ms, "the %g ms floor (no baseline warm-up ran)",
			  cfg->hang_floor_ms);
	return run_and_check(run, c, 1, &arms[1], b, jc, cfg->warmup, "after warm-up", NULL);
}

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

/* The draws of a block after the first, from r, in their fixed order (the
 * load order, the set, then each buffer's shift), so that a block_seed
 * gives the same placements run after run. */
static void draw_placement(const struct fixture_case *c, struct rng *r, struct placement *pl)
{
	memset(pl, 0, sizeof *pl);
	pl->first = (int)(rng_next(r) >> 63);
	pl->set = rng_int(r, 0, RUNNER_BUFFER_SETS - 1);
	for (int i = 0; i < c->nbuffers; i++)
		pl->shift[i] = (uint64_t)rng_int(r, 0, RUNNER_SHIFT_SPAN / RUNNER_SHIFT_STEP - 1) *
			       RUNNER_SHIFT_STEP;
}

/* Starts a block after the first, or the retake of any block: both arms'
 * code loaded afresh in pl's order, their graphs rebuilt over pl's buffer
 * set and shifts (inputs restored, output poisoned), and
 * RUNNER_BLOCK_WARMUP untimed rounds of both, in load order. The arm that
 * ran last is blamed for a failed copy: a fault of its kernel is what a
 * copy would report first. */
static int new_block(struct run *run, const struct fixture_case *c,
		     struct arm arms[2], struct bufs *b, struct judge_case *jc,
		     const struct placement *pl, int last)
{
	struct qual_msg msg = {{0}};
	int first = pl->first, rc;

	for (int arm = 0; arm < 2; arm++) {
		if (arms[arm].graph)
			gpu_graph_free(arms[arm].graph);
		if (arms[arm].module)
			gpu_module_free(arms[arm].module);
		arms[arm].graph = NULL;
		arms[arm].module = NULL;
	}
	for (int i = 0; i < c->nbuffers; i++)
		b->dev[i] = b->base[pl->set][i] + pl->shift[i];
	if ((rc = reset_bufs(run, c, b, last, jc)) < 0)
		return rc;
	for (int k = 0; k < 2; k++) {
		int arm = k ? 1 - first : first;
		if ((rc = prepare_arm(run, c, arm, &arms[arm], b, jc)) < 0)
			return rc;
	}
	for (int k = 0; k < 2 * RUNNER_BLOCK_WARMUP; k++) {
		int arm = k % 2 ? 1 - first : first;
		if ((rc = gpu_graph_run(arms[arm].graph, &msg)) < 0) {
			gpu_fault(run, jc, arm, "time", &msg);
			return rc;
		}
	}
	return 0;
}

/* ---- clocks (gpu/clocks.h) -------------------------------------------- */

void runner__clocks_open(struct run *run, const struct gpu_info *info)
{
	struct qual_msg why = {{0}};

	run->clocks = NULL;
	if (gpu_clocks_open(info, &run->clocks, &why) < 0)
		snprintf(run->clocks_why, sizeof run->clocks_why, "%s", why.text);
	else
		snprintf(run->clocks_source, sizeof run->clocks_source, "%s",
			 gpu_clocks_source(run->clocks));
}

void runner__clocks_close(struct run *run)
{
	gpu_clocks_close(run->clocks);
	run->clocks = NULL;
}

/* A reading of the device now; false (r unknown) without clocks or when
 * the reading fails, which is never the run's failure. */
static bool read_clocks(struct run *run, struct gpu_clocks_reading *r)
{
	struct qual_msg msg = {{0}};

	gpu__clocks_unknown(r);
	return run->clocks && gpu_clocks_read(run->clocks, r, &msg) == 0;
}

static json_t *reading_json(const struct gpu_clocks_reading *r, bool ok)
{
	json_t *o, *names;

	if (!ok)
		return json_null();
	o = json_pack("{s:o,s:o,s:o,s:o}", "sm_mhz", lines_real(r->sm_mhz), "mem_mhz",
		      lines_real(r->mem_mhz), "power_w", lines_real(r->power_w), "temp_c",
		      lines_real(r->temp_c));
	if (!r->reasons_known) {
		json_object_set_new(o, "reasons_mask", json_null());
		json_object_set_new(o, "reasons", json_null());
		return o;
	}
	names = json_array();
	for (int bit = 0; bit < 64; bit++) {
		const char *name = gpu_clocks_reason_name(bit);
		if (r->reasons >> bit & 1)
			json_array_append_new(names, json_string(name ? name : "unknown"));
	}
	json_object_set_new(o, "reasons_mask", json_integer((json_int_t)(r->raw & INT64_MAX)));
	json_object_set_new(o, "reasons", names);
	return o;
}

/* The block line of one attempt at block (its number in the pair lines)
 * after its npairs pairs, and its effect on jc (judge_case_block, as
 * qual-judge applies the line): throttled when either reading, at the
 * block's start or its end, gives a throttling reason. Returns that. */
static bool emit_block(struct run *run, const struct fixture_case *c, struct judge_case *jc,
		       int block, int retake, int npairs, const struct placement *pl,
		       const struct gpu_clocks_reading ck[2], const bool ok[2])
{
	json_t *line = lines_new("block"), *shifts = json_array();
	bool throttled = false;

	for (int k = 0; k < 2; k++)
		throttled |= ok[k] && ck[k].reasons_known && gpu_clocks_throttled(ck[k].reasons);
	for (int i = 0; i < c->nbuffers; i++)
		json_array_append_new(shifts, json_integer((json_int_t)pl->shift[i]));
	json_object_set_new(line, "case", json_string(c->name));
	json_object_set_new(line, "block", json_integer(block));
	if (run->nsessions > 1)
		json_object_set_new(line, "session", json_integer(run->session + 1));
	if (retake)
		json_object_set_new(line, "retake", json_integer(retake));
	json_object_set_new(line, "pairs", json_integer(npairs));
	json_object_set_new(line, "buffer_set", json_integer(pl->set));
	json_object_set_new(line, "shifts", shifts);
	json_object_set_new(line, "load", json_string(pl->warm_up ? "warm_up" :
						      pl->first ? "candidate_first" :
						      "baseline_first"));
	json_object_set_new(line, "clocks", run->clocks ?
		json_pack("{s:s,s:o,s:o}", "source", gpu_clocks_source(run->clocks),
			  "start", reading_json(&ck[0], ok[0]), "end",
			  reading_json(&ck[1], ok[1])) : json_null());
	json_object_set_new(line, "throttled", json_boolean(throttled));
	lines_emit(run->out, line);
	judge_case_block(jc, block, retake, throttled);
	return throttled;
}

/* Times pair p (the candidate first when cand_first) and writes its line. */
static int time_pair(struct run *run, const struct fixture_case *c, struct arm arms[2],
		     struct bufs *b, struct judge_case *jc, int p, int block, int retake,
		     int first, int *last)
{
	struct qual_msg msg = {{0}};
	double dev[2], host[2], t = child_now();
	json_t *line;
	int rc;

	for (int k = 0; k < 2; k++) {
		int arm = k ? 1 - first : first;
		/* A cold cache for every timed replay (runner.h); a fault
		 * this copy reports is the last kernel's. */
		if (b->flush && (rc = gpu_memset(run->gpu, b->flush, p & 0xff,
						 run->cfg->flush_bytes, &msg)) < 0) {
			gpu_fault(run, jc, k ? 1 - arm : *last, "time", &msg);
			return rc;
		}
		if ((rc = gpu_graph_time(arms[arm].graph, &dev[arm], &host[arm], &msg)) < 0) {
			gpu_fault(run, jc, arm, "time", &msg);
			return rc;
		}
		if (isfinite(dev[arm]) && dev[arm] > 0)
			run->split.s[TS_REPLAYS_DEVICE] += dev[arm] * 1e-9;
		dev[arm] /= RUNNER_REPLAYS;
		host[arm] /= RUNNER_REPLAYS;
		*last = arm;
	}
	judge_case_add_pair(jc, dev[0], dev[1], first == 1, block);
	line = lines_new("pair");
	json_object_set_new(line, "case", json_string(c->name));
	json_object_set_new(line, "pair", json_integer(p));
	if (block)
		json_object_set_new(line, "block", json_integer(block));
	if (retake)
		json_object_set_new(line, "retake", json_integer(retake));
	if (run->nsessions > 1)
		json_object_set_new(line, "session", json_integer(run->session + 1));
	json_object_set_new(line, "order", json_string(first ? "candidate_first" : "baseline_first"));
	json_object_set_new(line, "baseline_ns", json_real(dev[0]));
	json_object_set_new(line, "candidate_ns", json_real(dev[1]));
	json_object_set_new(line, "baseline_host_ns", json_real(host[0]));
	json_object_set_new(line, "candidate_host_ns", json_real(host[1]));
	lines_emit(run->out, line);
	timesplit_add(&run->split, TS_TIMING, t);
	return 0;
}

/* This process's blocks of the case, [block_lo, block_hi): each block's
 * pairs, then its block line with the clocks read at its start (before its
 * load and untimed rounds; the first block's, after the warm-up) and its
 * end (after its last pair). A
 * throttled attempt is timed again over the same placement (its pairs left
 * out of the verdict by the block line), while the case has retakes left
 * in this process (RUNNER_RETAKES); then the block stays excluded. Under
 * one_load there is one block and no block line. */
static int time_pairs(struct run *run, const struct fixture_case *c,
		      struct arm arms[2], struct bufs *b, struct judge_case *jc)
{
	struct rng r;
	struct placement pl;
	char stream[96];
	bool one = run->cfg->one_load;
	int rc, last = 0, per = one ? run->cfg->pairs : run->cfg->pairs_per_block;
	int retakes_left = RUNNER_RETAKES;

	snprintf(stream, sizeof stream, "blocks:%s:%d", c->name, run->session);
	rng_init(&r, run->block_seed, stream);
	for (int b0 = run->block_lo; b0 < run->block_hi; b0++) {
		int p_lo = b0 * per, p_hi = (b0 + 1) * per, block = one ? 0 : b0 + 1;
		/* The first look's blocks end at pairs, later rounds' at
		 * max_pairs. */
		int cap = p_lo < run->cfg->pairs ? run->cfg->pairs : run->max_pairs;

		if (p_hi > cap)
			p_hi = cap;
		if (p_lo >= p_hi)
			break;
		if (b0 == run->block_lo) {
			memset(&pl, 0, sizeof pl);
			pl.warm_up = true;
		} else {
			draw_placement(c, &r, &pl);
		}
		for (int retake = 0;; retake++) {
			struct gpu_clocks_reading ck[2];
			bool ok[2];

			/* The start reading before the block's load, so that
			 * nothing comes between its untimed rounds and its
			 * first pair. */
			ok[0] = !one && read_clocks(run, &ck[0]);
			if (retake > 0)
				pl.warm_up = false; /* loaded afresh, in pl's order */
			if (!pl.warm_up) {
				double t = child_now();

				rc = new_block(run, c, arms, b, jc, &pl, last);
				timesplit_add(&run->split, TS_BLOCKS, t);
				if (rc < 0)
					return rc;
			}
			/* Pair j of block b: the candidate first when j + b
			 * is odd (runner.h); under one load, in odd pairs. */
			for (int p = p_lo; p < p_hi; p++)
				if ((rc = time_pair(run, c, arms, b, jc, p, block, retake,
						    (p % per + b0) % 2, &last)) < 0)
					return rc;
			if (one)
				break;
			ok[1] = read_clocks(run, &ck[1]);
			if (!emit_block(run, c, jc, block, retake, p_hi - p_lo, &pl, ck, ok) ||
			    retakes_left == 0)
				break;
			retakes_left--;
		}
	}
	/* What the timing left behind must still be right: the output of the
	 * last replay, and untouched inputs. */
	char text[1200];
	rc = inspect(run, c, last, &arms[last], b, jc, "after timing", text, sizeof text);
	if (rc == QUAL_ECHECK) {
		/* Either arm may have corrupted the shared inputs: rerun each
		 * alone on fresh inputs, which blames exactly. If both then pass,
		 * the failure did not repeat: it stays with the arm that ran last. */
		for (int arm = 0; arm < 2; arm++)
			if (run_and_check(run, c, arm, &arms[arm], b, jc, 1,
					  "when rerun alone after timing", NULL) < 0 && run->gpu_dead)
				return QUAL_EGPU;
		if (jc->failure == JUDGE_OK)
			fail_arm(run, jc, last, "check", QUAL_ECHECK, text);
		return QUAL_ECHECK;
	}
	if (rc < 0)
		return rc;
	/* The arm that did not run last is checked on a replay of its own. */
	return run_and_check(run, c, 1 - last, &arms[1 - last], b, jc, 1, "after timing", NULL);
}

/* A case that could not be built: a user fixture's oracle that failed
 * (oracle_failed) or a description that could not be made into inputs
 * (bad_fixture) is neither arm's doing (arm null, the run an error); any
 * other failure is the machine's, charged like the baseline's. */
static void fail_build(struct run *run, struct judge_case *jc, int index, int rc,
		       const char *text)
{
	if (rc == QUAL_EORACLE || is_user_case(index)) {
		lines_error(run->out, "setup", rc == QUAL_EORACLE ? LINES_CODE_ORACLE_FAILED :
			    LINES_CODE_BAD_FIXTURE, NULL, jc->name, text);
		judge_case_fail(jc, JUDGE_FAIL_BASELINE);
		return;
	}
	fail_arm(run, jc, 0, "setup", rc, text);
}

/* The case line of a case that cannot run on the run's target: never
 * compiled, so both arms say only that. */
static void emit_not_applicable(struct run *run, const struct fixture_case *c, const char *why)
{
	json_t *line = lines_new("case");
	const char *arm_key[2] = { "baseline", "candidate" };

	json_object_set_new(line, "case", json_string(c->name));
	json_object_set_new(line, "family", json_string(c->family));
	json_object_set_new(line, "kernel", json_string(c->kernel));
	json_object_set_new(line, "applicable", json_false());
	json_object_set_new(line, "not_applicable_because", json_string(why));
	for (int arm = 0; arm < 2; arm++)
		json_object_set_new(line, arm_key[arm], json_pack("{s:b}", "compiled", 0));
	json_object_set_new(line, "identical_code", json_false());
	json_object_set_new(line, "tolerance", json_real(c->tolerance));
	json_object_set_new(line, "tolerance_why", json_string(c->tolerance_why));
	json_object_set_new(line, "timed", json_false());
	json_object_set_new(line, "replays", json_integer(RUNNER_REPLAYS));
	lines_emit(run->out, line);
}

/* True when case index cannot run on the run's target (fixture_applies):
 * then it is never built or compiled, and the first call for it (before the
 * sessions, or in the one process) writes its case line and records it as
 * not applicable; later calls (the sessions') only return true. A case
 * whose description cannot be made is left to the build that follows. */
static bool not_applicable(struct run *run, int index)
{
	struct judge_case *jc = judge_case_get(&run->judge, fixture_name(index));
	struct fixture_case c;
	struct qual_msg msg = {{0}};
	char why[256];
	bool applies;

	if (jc->not_applicable)
		return true;
	if (fixture_spec(index, &c, &msg) < 0)
		return false;
	applies = fixture_applies(&c, run->platform, run->arch, why, sizeof why);
	if (!applies) {
		judge_case_not_applicable(jc, why);
		emit_not_applicable(run, &c, why);
	}
	fixture_release(&c);
	return !applies;
}

void runner__run_case(struct run *run, int index)
{
	struct fixture_case c;
	struct arm arms[2];
	struct bufs bufs;
	struct qual_msg msg = {{0}};
	struct judge_case *jc;
	bool identical, timed = run->gpu && !run->gpu_dead;
	double t, timed_before;
	int rc;

	if (not_applicable(run, index))
		return;
	memset(&c, 0, sizeof c);
	memset(arms, 0, sizeof arms);
	memset(&bufs, 0, sizeof bufs);
	jc = judge_case_get(&run->judge, fixture_name(index));
	t = child_now();
	/* Lent, not copied: the runner only reads a case's inputs and
	 * expected values. */
	rc = fixture_borrow(index, run->cfg->seed, &c, &msg);
	timesplit_add(&run->split, TS_FIXTURES, t);
	if (rc < 0) {
		fail_build(run, jc, index, rc, msg.text[0] ? msg.text : "cannot build fixture");
		return;
	}
	identical = compile_both(run, &c, arms, jc, is_user_case(index));

	if (timed && arms[0].compiled && arms[1].compiled) {
		/* Until the baseline's warm-up has been timed. */
		set_limit(run, run->cfg->hang_floor_ms * RUNNER_BASELINE_ALLOWANCE,
			  "the baseline's warm-up allowance, %g x the %g ms floor",
			  RUNNER_BASELINE_ALLOWANCE, run->cfg->hang_floor_ms);
		t = child_now();
		rc = alloc_bufs(run, &c, &bufs, jc);
		t = timesplit_add(&run->split, TS_ALLOC, t);
		for (int arm = 0; arm < 2 && rc == 0; arm++)
			rc = prepare_arm(run, &c, arm, &arms[arm], &bufs, jc);
		t = timesplit_add(&run->split, TS_LOAD, t);
		if (rc == 0)
			rc = warm_up(run, &c, arms, &bufs, jc);
		timesplit_add(&run->split, TS_WARMUP, t);
		if (run->session == 0)
			emit_case(run, &c, arms, identical, true);
		if (rc == 0) {
			/* What time_pairs() does not count as blocks or pairs is
			 * its checks after timing. */
			timed_before = run->split.s[TS_BLOCKS] + run->split.s[TS_TIMING];
			t = child_now();
			time_pairs(run, &c, arms, &bufs, jc);
			run->split.s[TS_CHECKS] += child_now() - t -
				(run->split.s[TS_BLOCKS] + run->split.s[TS_TIMING] - timed_before);
		}
	} else {
		emit_case(run, &c, arms, identical, false);
	}
	t = child_now();
	for (int arm = 0; arm < 2; arm++)
		release_arm(&arms[arm]);
	if (run->gpu)
		release_bufs(run, &bufs);
	fixture_release(&c);
	timesplit_add(&run->split, TS_RELEASE, t);
}

/* Before the sessions (runner_internal.h). */
void runner__compile_case(struct run *run, int index)
{
	struct fixture_case c;
	struct arm arms[2];
	struct judge_case *jc = judge_case_get(&run->judge, fixture_name(index));
	struct qual_msg msg = {{0}};
	int rc;

	bool user = is_user_case(index);

	if (not_applicable(run, index))
		return;
	memset(&c, 0, sizeof c);
	memset(arms, 0, sizeof arms);
	/* A built-in case's description is all its compiles need: its inputs
	 * and its oracle's values are the sessions' (each copies the build
	 * kept for the run: keep_fixtures()). A user case is built (its
	 * registry keeps what its oracle gave), so that an oracle's failure is
	 * reported here, once. */
	rc = user ? fixture_build(index, run->cfg->seed, &c, &msg) : fixture_spec(index, &c, &msg);
	if (rc < 0) {
		fail_build(run, jc, index, rc, msg.text[0] ? msg.text : "cannot build fixture");
		return;
	}
	compile_both(run, &c, arms, jc, user);
	if (!arms[0].compiled || !arms[1].compiled) {
		/* The case line gives the built case's tolerance (attention's
		 * depends on its inputs). */
		if (!user) {
			fixture_release(&c);
			if ((rc = fixture_build(index, run->cfg->seed, &c, &msg)) < 0) {
				fail_build(run, jc, index, rc,
					   msg.text[0] ? msg.text : "cannot build fixture");
				return;
			}
		}
		emit_case(run, &c, arms, jc->identical_code, false);
	}
	fixture_release(&c);
}

static json_t *device_json(const struct run *run)
{
	const struct gpu_info *in;
	json_t *o;

	if (!(in = run->device))
		return json_null();
	o = json_pack("{s:s,s:s,s:s,s:s,s:i}", "vendor", in->vendor, "name", in->name,
		      "arch", in->arch, "driver", in->driver, "ordinal", in->ordinal);
	if (in->pci_bus_id[0])
		json_object_set_new(o, "pci_bus_id", json_string(in->pci_bus_id));
	return o;
}

void runner__calibration_for_device(json_t *line, const struct gpu_info *device)
{
	json_t *rec = json_object_get(line, "calibration");
	const char *theirs = json_string_value(
		json_object_get(json_object_get(rec, "device"), "pci_bus_id"));
	char why[200];

	if (!json_is_object(rec) || !theirs || !device || !device->pci_bus_id[0] ||
	    strcmp(theirs, device->pci_bus_id) == 0)
		return;
	snprintf(why, sizeof why, "the calibration is of the device at PCI %.40s, and this "
		 "run's device is at PCI %.40s", theirs, device->pci_bus_id);
	json_object_set_new(line, "calibration", json_null());
	json_object_set_new(line, "calibration_because", json_string(why));
}

static void emit_start(struct run *run, const int *sel, int nsel, const char *no_gpu)
{
	const struct runner_config *cfg = run->cfg;
	json_t *line = lines_new("start");
	json_t *cases = json_array();
	char stamp[32];
	time_t now = time(NULL);

	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	for (int i = 0; i < nsel; i++)
		json_array_append_new(cases, json_string(fixture_name(sel[i])));
	json_object_set_new(line, "schema_version", json_integer(QUAL_SCHEMA_VERSION));
	json_object_set_new(line, "tool", json_string("qual-run"));
	json_object_set_new(line, "version", json_string(QUAL_VERSION));
	json_object_set_new(line, "time", json_string(stamp));
	json_object_set_new(line, "device", device_json(run));
	json_object_set_new(line, "timed", json_boolean(run->device != NULL));
	if (no_gpu)
		json_object_set_new(line, "not_timed_because", lines_text(no_gpu));
	/* Where the block lines' clocks come from, or why they are null. */
	if (run->device)
		json_object_set_new(line, "clocks", run->clocks_source[0] ?
			json_pack("{s:s}", "source", run->clocks_source) :
			json_pack("{s:n,s:o}", "source", "unavailable_because",
				  lines_text(run->clocks_why[0] ? run->clocks_why :
					     "no monitoring library was tried")));
	json_object_set_new(line, "arch", json_string(run->arch));
	json_object_set_new(line, "baseline", identity_json(&run->id[0], run->opts[0], run->nopts[0]));
	json_object_set_new(line, "candidate", identity_json(&run->id[1], run->opts[1], run->nopts[1]));
	json_object_set_new(line, "settings", json_pack(
		"{s:i,s:i,s:i,s:I,s:I,s:i,s:i,s:f,s:f,s:f,s:I,s:f,s:f,s:f,s:o}", "pairs", cfg->pairs,
		"pairs_per_block", cfg->one_load ? cfg->pairs : cfg->pairs_per_block,
		"sessions", run->nsessions,
		"flush_bytes", (json_int_t)cfg->flush_bytes,
		"block_seed", (json_int_t)(run->block_seed & INT64_MAX), "warmup", cfg->warmup, "replays", RUNNER_REPLAYS, "alpha", cfg->stats.alpha,
		"margin", cfg->stats.margin, "conf", cfg->stats.conf,
		"seed", (json_int_t)cfg->seed, "compile_timeout_s", cfg->limits.timeout_s,
		"hang_floor_ms", cfg->hang_floor_ms, "hang_factor", cfg->hang_factor,
		"cases", cases));
	json_object_set_new(json_object_get(line, "settings"), "mode",
			    json_string(rtc_mode_name(cfg->mode)));
	if (cfg->one_load)
		json_object_set_new(json_object_get(line, "settings"), "one_load", json_true());
	/* What judge_take_line() reads back to judge the same way. */
	{
		json_t *sampling = json_pack(
			"{s:i,s:f,s:s,s:s,s:s,s:b}", "max_pairs", run->max_pairs,
			"max_seconds", run->max_seconds,
			"gate_slower", gate_rule_name(cfg->stats.gate_slower),
			"gate_faster", gate_rule_name(cfg->stats.gate_faster),
			"undecided", gate_undecided_name(cfg->stats.undecided),
			"sample_identical", cfg->stats.sample_identical);

		json_object_update(json_object_get(line, "settings"), sampling);
		json_decref(sampling);
	}
	json_object_set_new(json_object_get(line, "settings"), "compile_jobs",
			    json_integer(run->compile_jobs));
	/* Asked for (--compile-only), not a compile-only slot's choice
	 * (--compile-only-because): what 'qualctl wait' gates on. */
	json_object_set_new(json_object_get(line, "settings"), "compile_only",
			    json_boolean(cfg->compile_only && !cfg->compile_only_because));
	json_object_set_new(json_object_get(line, "settings"), "cache", run->artifacts ?
			    lines_text(run->artifacts->dir) : json_null());
	lines_emit(run->out, line);
}

/* The caps and looks in force (runner_internal.h): sampling beyond
 * cfg->pairs only where rounds can run, that is in forked sessions and not
 * under one load. */
static void sampling_settings(struct run *run)
{
	const struct runner_config *cfg = run->cfg;

	run->max_pairs = cfg->max_pairs ? cfg->max_pairs : RUNNER_MAX_PAIRS_FACTOR * cfg->pairs;
	run->max_seconds = cfg->max_seconds > 0 ? cfg->max_seconds : RUNNER_MAX_SECONDS;
	if (cfg->one_load || run->nsessions < 2 || run->max_pairs < cfg->pairs)
		run->max_pairs = cfg->pairs;
	run->stats = cfg->stats;
	stats_set_looks(&run->stats, cfg->pairs, cfg->pairs_per_block, run->max_pairs);
}

/* A problem found before the run starts: to err, and as an error line of
 * code (usage, or no_abi for a library without either ABI); exit status
 * usage either way. */
static int refuse(struct run *run, FILE *err, enum lines_code code, const char *arm,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int refuse(struct run *run, FILE *err, enum lines_code code, const char *arm,
		  const char *fmt, ...)
{
	char text[1200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	fprintf(err, "qual-run: %s\n", text);
	lines_error(run->out, "setup", code, arm, NULL, text);
	return QUAL_EXIT_USAGE;
}

/* The settings runner_run() refuses: QUAL_EXIT_USAGE after refuse(), or 0. */
static int settings_refused(struct run *run, FILE *err)
{
	const struct runner_config *cfg = run->cfg;

	if (cfg->pairs < RUNNER_MIN_PAIRS)
		return refuse(run, err, LINES_CODE_USAGE, NULL, "pairs must be at least %d, "
			      "got %d", RUNNER_MIN_PAIRS, cfg->pairs);
	if (cfg->max_pairs && cfg->max_pairs < cfg->pairs)
		return refuse(run, err, LINES_CODE_USAGE, NULL, "max pairs must be at least "
			      "pairs (%d), got %d", cfg->pairs, cfg->max_pairs);
	if (!(cfg->max_seconds >= 0) || !isfinite(cfg->max_seconds))
		return refuse(run, err, LINES_CODE_USAGE, NULL, "max seconds must be a finite "
			      "number >= 0, got %g", cfg->max_seconds);
	if (cfg->sessions < 1)
		return refuse(run, err, LINES_CODE_USAGE, NULL, "sessions must be at least 1, "
			      "got %d", cfg->sessions);
	if (cfg->pairs_per_block < 1)
		return refuse(run, err, LINES_CODE_USAGE, NULL, "pairs per block must be at "
			      "least 1, got %d", cfg->pairs_per_block);
	if (!(cfg->hang_floor_ms > 0) || !(cfg->hang_factor > 0))
		return refuse(run, err, LINES_CODE_USAGE, NULL, "hang floor and factor must be "
			      "positive, got %g ms and %g", cfg->hang_floor_ms, cfg->hang_factor);
	return 0;
}

/* The processor mode's option (compile/rtc_mode.h) for run->arch, appended
 * to both arms' options: each arm's list is copied into withmode[arm] (the
 * caller frees both) and run->opts[arm] points there. A mode the target
 * does not have is refused: QUAL_EXIT_USAGE after refuse(), else 0. */
static int mode_options(struct run *run, FILE *err, const char **withmode[2])
{
	const char *opt;
	char why[200];

	if (rtc_mode_option(run->cfg->mode, run->id[0].abi, run->arch, &opt, why,
			       sizeof why) < 0)
		return refuse(run, err, LINES_CODE_USAGE, NULL, "%s", why);
	if (!opt)
		return 0;
	for (int arm = 0; arm < 2; arm++) {
		int n = run->nopts[arm];

		withmode[arm] = xcalloc((size_t)n + 1, sizeof *withmode[arm]);
		for (int i = 0; i < n; i++)
			withmode[arm][i] = run->opts[arm][i];
		withmode[arm][n] = opt;
		run->opts[arm] = withmode[arm];
		run->nopts[arm] = n + 1;
	}
	return 0;
}

/* The compile target when nothing is timed. */
static const char *default_arch(enum rtc_abi abi)
{
	return abi == RTC_ABI_HIPRTC ? "gfx90a" : "sm_90";
}

/* Builds every selected user case that applies (its inputs and its
 * oracle's values, which the registry keeps for the process) before
 * anything compiles, so that an oracle runs before the compiles; into out
 * the cases of sel to compile: all but those whose build failed, which the
 * case reports when it runs (fail_build, from the same kept failure).
 * Returns their number. */
static int build_user_cases(struct run *run, const int *sel, int nsel, int *out)
{
	int n = 0, first_user = fixture_count() - fixture_user_count();

	for (int i = 0; i < nsel; i++) {
		struct fixture_case c;
		struct qual_msg msg = {{0}};
		char why[256];
		bool failed = false;

		memset(&c, 0, sizeof c);
		if (sel[i] >= first_user && fixture_spec(sel[i], &c, &msg) == 0) {
			bool applies = fixture_applies(&c, run->platform, run->arch, why,
						       sizeof why);

			fixture_release(&c);
			memset(&c, 0, sizeof c);
			if (applies) {
				failed = fixture_build(sel[i], run->cfg->seed, &c, &msg) < 0;
				if (!failed)
					fixture_release(&c);
			}
		}
		if (!failed)
			out[n++] = sel[i];
	}
	return n;
}

/* Starts building the built-in cases of sel that apply to the target arch
 * (NULL: not known yet, while the device is probed: those of the run's
 * platform), on run->compile_jobs threads beside the probe and the compile
 * phase, so that each case's inputs and oracle are made once for the run:
 * every session (and the one process of a run without sessions) then
 * borrows them (fixture.h, "built once for a run"). A case built for
 * nothing (an sm_90a case when the device is another) costs CPU time only.
 * With defer, the builders are not started yet (fixture_keep_run()): the
 * first look's sessions are forked before them, from a process of one
 * thread, and find the builds in the memory they share with this process
 * once told (runner__run_sessions); every later session is forked after
 * fixture_keep_wait(). */
static struct fixture_keep *keep_fixtures(struct run *run, const int *sel, int nsel,
					  const char *arch, bool defer)
{
	int *todo = xcalloc((size_t)nsel + 1, sizeof *todo), n = 0;
	struct fixture_keep *k;

	for (int i = 0; i < nsel; i++) {
		struct fixture_case c;
		struct qual_msg msg = {{0}};
		char why[256];

		if (is_user_case(sel[i]) || fixture_spec(sel[i], &c, &msg) < 0)
			continue;
		if (arch ? fixture_applies(&c, run->platform, arch, why, sizeof why) :
			   !c.platforms || (c.platforms & (1u << run->platform)))
			todo[n++] = sel[i];
		fixture_release(&c);
	}
	k = defer ? fixture_keep_new(todo, n, run->cfg->seed, run->compile_jobs) :
		    fixture_keep_start(todo, n, run->cfg->seed, run->compile_jobs);
	free(todo);
	return k;
}

/* The error line outside any case that says why GPU work stopped. Its "gpu"
 * field tells a supervisor, without parsing the message, that the GPU must
 * pass a health check before its next job: "faulted" (a runtime error) or
 * "hung" (a wait ran past its deadline; the process ends after the verdict). */
void runner__emit_stop(struct run *run)
{
	json_t *line = lines_new("error");

	enum lines_code code = run->hung ? LINES_CODE_GPU_HANG :
			       run->crash_signal ? LINES_CODE_SESSION_FAILED : LINES_CODE_GPU_FAULT;

	json_object_set_new(line, "stage", json_string("time"));
	json_object_set_new(line, "code", json_string(lines_code_name(code)));
	json_object_set_new(line, "arm", json_null());
	json_object_set_new(line, "case", json_null());
	json_object_set_new(line, "message", lines_text(run->stop_reason));
	json_object_set_new(line, "gpu", json_string(run->hung ? "hung" : "faulted"));
	lines_emit(run->out, line);
	run->judge.gpu_stopped = true;  /* as judge_take_line() reads the line */
}

/* After a hang, with every line written: the kernel is still running and
 * only the end of the process stops it (the driver destroys the context and
 * its work with it). _exit, not exit: the CUDA runtime's exit handlers may
 * wait for the device, and freeing anything through it may block too. */
static void end_hung(const struct runner_config *cfg, FILE *out, FILE *err, int status)
{
	fflush(out);
	fflush(err);
	if (cfg->on_hang) {
		cfg->on_hang(status);
		return;
	}
	fflush(NULL);
	/* Every way out of qual-run ends what is below it (qual_run.c). */
	(void)child_kill_orphans(NULL, 0, child_now() + CHILD_REAP_GRACE_S);
	_exit(status);
}

/* One arm's rtc_identify(), on a thread of its own. */
struct identify_job {
	struct run *run;
	int arm;
	int rc;
	struct qual_msg msg;
};

static void *identify_arm(void *arg)
{
	struct identify_job *j = arg;
	const struct runner_config *cfg = j->run->cfg;

	j->rc = rtc_identify(j->arm ? cfg->candidate : cfg->baseline, cfg->real_path[j->arm],
			     cfg->sha256[j->arm], &cfg->limits, &j->run->id[j->arm], &j->msg);
	return NULL;
}

/* Both arms' libraries pinned, hashed and identified at once (each reads
 * and hashes its file, some 100 MB for nvrtc, and starts its identify
 * child), into run->id and each job's rc and msg: the candidate's on a
 * thread (on this one when none can start), the baseline's on this one;
 * rtc_identify() is safe to call from several threads, as rtc_compile()
 * (compile_all.c). The thread is joined before this returns. */
static void identify_arms(struct run *run, struct identify_job ids[2])
{
	pthread_t th;
	bool threaded;

	memset(ids, 0, 2 * sizeof *ids);
	for (int arm = 0; arm < 2; arm++) {
		ids[arm].run = run;
		ids[arm].arm = arm;
	}
	threaded = pthread_create(&th, NULL, identify_arm, &ids[1]) == 0;
	identify_arm(&ids[0]);
	if (threaded)
		pthread_join(th, NULL);
	else
		identify_arm(&ids[1]);
}

/* The judge's on_verdict: what qual-run adds to the verdict line as it is
 * about to be written: "time_s" (judging and the total taken now) and the
 * device's calibration (--calibration / --no-calibration-because), whose
 * members never replace the line's own. */
static void add_verdict_fields(void *ctx, json_t *line)
{
	struct run *run = ctx;
	double now = child_now();

	run->split.s[TS_JUDGE] = now - run->judge_s;
	run->split.s[TS_TOTAL] = now - run->started_s;
	json_object_set_new(line, "time_s", timesplit_json(&run->split, true));
	if (run->cfg->verdict_extra)
		json_object_update_missing(line, run->cfg->verdict_extra);
	runner__calibration_for_device(line, run->device);
}

int runner_run(const struct runner_config *cfg, FILE *out, FILE *err)
{
	struct run run;
	struct qual_msg msg = {{0}};
	int *sel = xcalloc((size_t)fixture_count() + (size_t)cfg->ncases + 1, sizeof *sel);
	int nsel = 0, status, rc, ncompile, *compile_sel;
	char no_gpu[1100] = "", probe_why[1024];
	struct fixture_keep *keep = NULL;
	struct identify_job ids[2];
	double t;
	bool not_timed;
	enum run_verdict v;
	const char **mode_opts[2] = {NULL, NULL};

	memset(&run, 0, sizeof run);
	run.started_s = child_now();
	timesplit_init(&run.split);
	run.cfg = cfg;
	run.out = out;
	run.err = err;
	run.opts[0] = cfg->baseline_opts;
	run.nopts[0] = cfg->nbaseline_opts;
	run.opts[1] = cfg->candidate_opts;
	run.nopts[1] = cfg->ncandidate_opts;
	judge_init(&run.judge);
	run.judge.on_verdict = add_verdict_fields;
	run.judge.on_verdict_ctx = &run;

	if ((status = settings_refused(&run, err)))
		goto out;
	/* Drawn anew for every run, so that repeats of a run sample other
	 * loads; printed (63 bits, JSON's integers being signed) so that a run
	 * can be repeated load for load. */
	run.block_seed = cfg->block_seed & INT64_MAX;
	while (run.block_seed == 0) {
		if (getrandom(&run.block_seed, sizeof run.block_seed, 0) !=
		    (ssize_t)sizeof run.block_seed)
			run.block_seed = (uint64_t)now_ns() ^ (uint64_t)getpid() << 32;
		run.block_seed &= INT64_MAX;
	}
	if (cfg->ncases == 0) {
		/* only_fixtures: the cases of the fixture directories alone. */
		for (int i = cfg->only_fixtures ? fixture_count() - fixture_user_count() : 0;
		     i < fixture_count(); i++)
			sel[nsel++] = i;
	} else {
		for (int i = 0; i < cfg->ncases; i++) {
			int k = fixture_find(cfg->cases[i]);
			if (k < 0) {
				status = refuse(&run, err, LINES_CODE_USAGE, NULL,
						"unknown case '%s'", cfg->cases[i]);
				goto out;
			}
			sel[nsel++] = k;
		}
	}

	{
		int per = cfg->one_load ? cfg->pairs : cfg->pairs_per_block;
		int blocks = (cfg->pairs + per - 1) / per;
		run.nsessions = cfg->one_load ? 1 : cfg->sessions < blocks ? cfg->sessions : blocks;
		run.block_hi = blocks;
		sampling_settings(&run);
	}
	/* The probe runs beside the libraries' identify; read below. */
	if (!cfg->compile_only && run.nsessions > 1 &&
	    runner__probe_start(&run, probe_why, sizeof probe_why) < 0)
		snprintf(no_gpu, sizeof no_gpu, "no gpu: %s", probe_why);
	t = child_now();
	identify_arms(&run, ids);
	for (int arm = 0; arm < 2; arm++) {
		rc = ids[arm].rc;
		msg = ids[arm].msg;
		if (rc == QUAL_ECRASH || rc == QUAL_ETIMEOUT || rc == QUAL_EEXIT ||
		    rc == QUAL_ECHECK) {
			/* The library itself crashed or hung while loading, or
			 * is not the library that was checked (never loaded):
			 * a result about it, not a usage problem. */
			fprintf(err, "qual-run: %s\n", msg.text);
			if (rc == QUAL_ECHECK)
				fail_arm_as(&run, NULL, arm, "setup",
					    LINES_CODE_LIBRARY_CHANGED, msg.text);
			else
				fail_arm(&run, NULL, arm, "setup", rc, msg.text);
			v = arm ? RUN_FAIL : RUN_ERROR;
			lines_emit(out, json_pack("{s:s,s:s,s:b,s:s}", "type", "verdict",
						   "verdict", stats_run_verdict_name(v),
						   "timed", 0, "message", msg.text));
			status = judge_exit_status(v);
			goto out;
		}
		if (rc < 0) {
			status = refuse(&run, err, rc == QUAL_EABI ? LINES_CODE_NO_ABI :
					LINES_CODE_USAGE, arm_names[arm], "%s", msg.text);
			goto out;
		}
	}
	if (run.id[0].abi != run.id[1].abi) {
		status = refuse(&run, err, LINES_CODE_USAGE, NULL, "baseline is %s but candidate "
				"is %s: both must use one abi", run.id[0].abi_name,
				run.id[1].abi_name);
		goto out;
	}
	run.platform = run.id[0].abi == RTC_ABI_HIPRTC ? FIXTURE_HIP : FIXTURE_CUDA;
	t = timesplit_add(&run.split, TS_IDENTIFY, t);
	runner__compile_setup(&run);
	t = timesplit_add(&run.split, TS_COMPILE_SETUP, t);
	/* The cases' inputs and oracles are built while the device is found
	 * and the code compiled; the target is known here only without a GPU. */
	keep = keep_fixtures(&run, sel, nsel, cfg->compile_only ? cfg->arch ? cfg->arch :
			     default_arch(run.id[0].abi) : NULL,
			     !cfg->compile_only && run.nsessions > 1);
	t = child_now();

	if (cfg->compile_only) {
		snprintf(no_gpu, sizeof no_gpu, "%s", cfg->compile_only_because ?
			 cfg->compile_only_because : "compile-only run requested");
	} else if (run.nsessions > 1) {
		/* When it could not start, no_gpu says why already. */
		if (run.probing && runner__probe_finish(&run, probe_why, sizeof probe_why) < 0)
			snprintf(no_gpu, sizeof no_gpu, "no gpu: %s", probe_why);
		else if (!no_gpu[0])
			run.device = &run.probed;
		timesplit_add(&run.split, TS_PROBE, t);
	} else {
		rc = gpu_open(cfg->device, &run.gpu, &msg);
		timesplit_add(&run.split, TS_OPEN, t);
		if (rc < 0) {
			snprintf(no_gpu, sizeof no_gpu, "no gpu: %s", msg.text);
			run.gpu = NULL;
		} else {
			run.device = gpu_get_info(run.gpu);
			runner__clocks_open(&run, run.device);
		}
	}
	if (run.device) {
		const struct gpu_info *in = run.device;
		bool match = (run.id[0].abi == RTC_ABI_NVRTC) == (strcmp(in->vendor, "nvidia") == 0);
		if (!match) {
			snprintf(no_gpu, sizeof no_gpu, "the %s device cannot run %s code",
				 in->vendor, run.id[0].abi_name);
			if (run.gpu)
				gpu_close(run.gpu);
			run.gpu = NULL;
			run.device = NULL;
		}
	}
	if (run.device && cfg->arch && strcmp(cfg->arch, run.device->arch) != 0)
		fprintf(err, "qual-run: --arch %s ignored: compiling for the device's %s\n",
			cfg->arch, run.device->arch);
	snprintf(run.arch, sizeof run.arch, "%s",
		 run.device ? run.device->arch :
		 cfg->arch ? cfg->arch : default_arch(run.id[0].abi));

	if ((status = mode_options(&run, err, mode_opts)))
		goto out;

	run.judge.timed = run.device != NULL;
	emit_start(&run, sel, nsel, no_gpu[0] ? no_gpu : NULL);
	compile_sel = xcalloc((size_t)nsel + 1, sizeof *compile_sel);
	t = child_now();
	ncompile = build_user_cases(&run, sel, nsel, compile_sel);
	t = timesplit_add(&run.split, TS_USER_FIXTURES, t);
	/* The first look's sessions open the GPU while the code compiles.
	 * They are forked from this process before the kept fixtures'
	 * builders start, while it has no other thread: a child forked while
	 * a thread held a lock (an allocator's, under a sanitizer) could
	 * wait on it for ever. */
	if (run.device && !run.gpu) {
		runner__sessions_start(&run, sel, nsel);
		t = child_now();
	}
	fixture_keep_run(keep);
	runner__compile_all(&run, compile_sel, ncompile);
	t = timesplit_add(&run.split, TS_COMPILE, t);
	fixture_keep_wait(keep);
	keep = NULL;
	timesplit_add(&run.split, TS_FIXTURES_PREBUILT, t);
	free(compile_sel);
	if (run.device && !run.gpu) {
		runner__run_sessions(&run, sel, nsel);
		if (run.crash_signal) {
			fflush(out);
			fflush(err);
			if (cfg->on_crash) {
				cfg->on_crash(run.crash_signal);
			} else {
				(void)child_kill_orphans(NULL, 0,
							 child_now() + CHILD_REAP_GRACE_S);
				signal(run.crash_signal, SIG_DFL);
				raise(run.crash_signal);
			}
			status = QUAL_EXIT_ERROR;
			goto out;
		}
	} else {
		t = child_now();
		for (int i = 0; i < nsel && !run.gpu_dead; i++)
			runner__run_case(&run, sel[i]);
		if (run.gpu_dead)
			runner__emit_stop(&run);
		timesplit_add(&run.split, TS_SESSIONS, t);
		run.split.sessions = run.gpu ? 1 : 0;
	}

	run.judge_s = child_now();
	v = judge_finish(&run.judge, &run.stats, out, &not_timed);
	status = judge_exit_status(v);
	if (run.hung)
		end_hung(cfg, out, err, status);
out:
	runner__sessions_end(&run);
	runner__clocks_close(&run);
	runner__probe_abandon(&run);
	fixture_keep_abandon(keep);
	if (run.gpu)
		gpu_close(run.gpu);
	runner__compile_release(&run);
	rtc_identity_release(&run.id[0]);
	rtc_identity_release(&run.id[1]);
	judge_release(&run.judge);
	fixture_keep_forget();
	free(sel);
	free(mode_opts[0]);
	free(mode_opts[1]);
	return status;
}
