/* The pair runner's device work for one case before its timing, and its
 * checks: the shared buffers, each arm's module and graph, the warm-up, and
 * the check of each arm's output against the oracle (or the baseline's
 * reference) and of the inputs it must leave alone. */
#include "run/runner_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/xalloc.h"

double runner__now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

void runner__set_limit(struct run *run, double ms, const char *fmt, ...)
{
	va_list ap;

	gpu_set_wait_limit(run->gpu, ms);
	va_start(ap, fmt);
	vsnprintf(run->limit_why, sizeof run->limit_why, fmt, ap);
	va_end(ap);
}

void runner__release_arm(struct arm *a)
{
	if (a->graph)
		gpu_graph_free(a->graph);
	if (a->module)
		gpu_module_free(a->module);
	memset(a, 0, sizeof *a);
}

void runner__release_bufs(struct run *run, struct bufs *b)
{
	for (int s = 0; s < RUNNER_BUFFER_SETS; s++)
		for (int i = 0; i < FIXTURE_MAX_BUFFERS; i++)
			if (b->base[s][i])
				gpu_free(run->gpu, b->base[s][i]);
	if (b->flush)
		gpu_free(run->gpu, b->flush);
	if (b->pad)
		gpu_free(run->gpu, b->pad);
	free(b->scratch);
	free(b->passed[0]);
	free(b->passed[1]);
	memset(b, 0, sizeof *b);
}

int runner__alloc_bufs(struct run *run, const struct fixture_case *c,
		       struct bufs *b, struct judge_case *jc)
{
	struct qual_msg msg = {{0}};
	size_t largest = 1;
	int rc;

	/* Device memory held, untouched, before the buffers (--pad-mib), so
	 * that they lie elsewhere than the device's allocator would put them
	 * first: an instrument for where a case's buffers lie. */
	if (run->cfg->pad_bytes && (rc = gpu_alloc(run->gpu, run->cfg->pad_bytes, &b->pad,
						   &msg)) < 0) {
		runner__gpu_fault(run, jc, 0, "load", &msg);
		return rc;
	}
	for (int i = 0; i < c->nbuffers; i++) {
		for (int s = 0; s < RUNNER_BUFFER_SETS; s++) {
			size_t room = c->buffers[i].bytes + RUNNER_SHIFT_SPAN;
			room = (room + RUNNER_SET_PAGE - 1) / RUNNER_SET_PAGE * RUNNER_SET_PAGE +
			       (size_t)s * RUNNER_SET_PAGE;
			if ((rc = gpu_alloc(run->gpu, room, &b->base[s][i], &msg)) < 0) {
				runner__gpu_fault(run, jc, 0, "load", &msg);
				return rc;
			}
		}
		b->dev[i] = b->base[0][i];
	}
	/* Allocated like the buffers, with the slack, though never shifted. */
	if (run->cfg->flush_bytes &&
	    (rc = gpu_alloc(run->gpu, run->cfg->flush_bytes + RUNNER_SHIFT_SPAN, &b->flush,
			    &msg)) < 0) {
		runner__gpu_fault(run, jc, 0, "load", &msg);
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
			runner__gpu_fault(run, jc, arm, "check", &msg);
			return rc;
		}
	}
	return 0;
}

int runner__reset_bufs(struct run *run, const struct fixture_case *c,
		       struct bufs *b, int arm, struct judge_case *jc)
{
	return reset_bufs_with(run, c, b, arm, jc, 0xff);
}

/* Encodes c's tensor maps over the buffers where they are now (b->dev:
 * every block moves them, and runner__prepare_arm, which builds every graph, calls
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
			runner__fail_arm(run, jc, 0, "load", rc, msg.text);
			return rc;
		}
	}
	return 0;
}

int runner__prepare_arm(struct run *run, const struct fixture_case *c, int arm,
			struct arm *a, struct bufs *b, struct judge_case *jc)
{
	struct qual_msg msg = {{0}};
	void *params[FIXTURE_MAX_BUFFERS + FIXTURE_MAX_SCALARS + FIXTURE_MAX_TENSOR_MAPS];
	uint32_t scalars[FIXTURE_MAX_SCALARS];
	struct gpu_tensor_map maps[FIXTURE_MAX_TENSOR_MAPS];
	int rc, np = 0;

	a->has_driver_blocks = false;
	if ((rc = tensor_maps(run, c, b, maps, jc)) < 0)
		return rc;

	rc = gpu_module_load(run->gpu, a->code->code, a->code->code_size, c->kernel,
			     &a->module, &msg);
	if (rc < 0) {
		/* A module the driver refuses is the compiler's doing. */
		runner__fail_arm(run, jc, arm, "load", rc, msg.text);
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
		runner__fail_arm(run, jc, arm, "load", rc, msg.text);
		return rc;
	}
	/* For the case line, beside the compile's figures: a count the backend
	 * cannot give is left out, not a failure of the arm. */
	a->has_driver_blocks = gpu_occupancy(a->module, c->block[0] * c->block[1] * c->block[2],
					     c->shared_bytes, &a->driver_blocks, &msg) == 0;
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

int runner__inspect(struct run *run, const struct fixture_case *c, int arm,
		    struct arm *a, struct bufs *b, struct judge_case *jc,
		    const char *when, char *text, size_t textlen)
{
	const struct fixture_buffer *out = &c->buffers[c->output];
	struct qual_msg msg = {{0}};
	double err = 0;
	int rc;

	rc = gpu_download(run->gpu, b->scratch, b->dev[c->output], out->bytes, &msg);
	if (rc < 0) {
		runner__gpu_fault(run, jc, arm, "check", &msg);
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
			runner__gpu_fault(run, jc, arm, "check", &msg);
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

/* runner__inspect(), blaming arm for anything wrong. */
static int check_arm(struct run *run, const struct fixture_case *c, int arm,
		     struct arm *a, struct bufs *b, struct judge_case *jc,
		     const char *when)
{
	char text[1200];
	int rc = runner__inspect(run, c, arm, a, b, jc, when, text, sizeof text);

	if (rc == QUAL_ECHECK)
		runner__fail_arm(run, jc, arm, "check", QUAL_ECHECK, text);
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
		double t0 = runner__now_ns(), dt;
		if ((rc = gpu_graph_run(a->graph, &msg)) < 0) {
			runner__gpu_fault(run, jc, arm, "time", &msg);
			return rc;
		}
		dt = runner__now_ns() - t0;
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
			runner__gpu_fault(run, jc, 0, "check", &msg);
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
	runner__fail_arm(run, jc, 0, "check", QUAL_ECHECK, text);
	return QUAL_ECHECK;
}

int runner__run_and_check(struct run *run, const struct fixture_case *c, int arm,
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

int runner__warm_up(struct run *run, const struct fixture_case *c,
		    struct arm arms[2], struct bufs *b, struct judge_case *jc)
{
	const struct runner_config *cfg = run->cfg;
	double base_ns = 0;
	int rc;

	if ((rc = runner__run_and_check(run, c, 0, &arms[0], b, jc, cfg->warmup,
					"after warm-up", &base_ns)) < 0)
		return rc;
	if (base_ns > 0)
		runner__set_limit(run, runner_hang_limit_ms(cfg->hang_floor_ms, cfg->hang_factor,
							    base_ns / 1e6),
				  "the larger of the %g ms floor and %g x the baseline's %.3f ms graph",
				  cfg->hang_floor_ms, cfg->hang_factor, base_ns / 1e6);
	else
		runner__set_limit(run, cfg->hang_floor_ms,
				  "the %g ms floor (no baseline warm-up ran)", cfg->hang_floor_ms);
	return runner__run_and_check(run, c, 1, &arms[1], b, jc, cfg->warmup, "after warm-up",
				     NULL);
}
