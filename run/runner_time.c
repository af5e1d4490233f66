/* The pair runner's timing of one case: this process's blocks, each
 * loaded afresh over a placement of its own (after the first), timed in
 * pairs of alternating order with the clocks read around it and retaken
 * when the GPU throttled (runner.h, "Blocks" and "Throttling"), and the
 * checks after timing. */
#include "run/runner_internal.h"

#include <math.h>
#include <string.h>

#include <jansson.h>

#include "common/lines.h"
#include "fixtures/rng.h"
#include "gpu/clocks.h"

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
	if ((rc = runner__reset_bufs(run, c, b, last, jc)) < 0)
		return rc;
	for (int k = 0; k < 2; k++) {
		int arm = k ? 1 - first : first;
		if ((rc = runner__prepare_arm(run, c, arm, &arms[arm], b, jc)) < 0)
			return rc;
	}
	for (int k = 0; k < 2 * RUNNER_BLOCK_WARMUP; k++) {
		int arm = k % 2 ? 1 - first : first;
		if ((rc = gpu_graph_run(arms[arm].graph, &msg)) < 0) {
			runner__gpu_fault(run, jc, arm, "time", &msg);
			return rc;
		}
	}
	return 0;
}

/* Settles the GPU (RUNNER_SETTLE_MS): replays both arms' graphs in turn,
 * untimed, until cfg->settle_ms have passed. The arm whose replay
 * fails is blamed, as in the warm-up. */
int runner__settle(struct run *run, struct arm arms[2], struct judge_case *jc)
{
	struct qual_msg msg = {{0}};
	double t = child_now(), until = t + run->cfg->settle_ms * 1e-3;
	int rc;

	for (int k = 0; child_now() < until; k++) {
		int arm = k % 2;

		if ((rc = gpu_graph_run(arms[arm].graph, &msg)) < 0) {
			runner__gpu_fault(run, jc, arm, "time", &msg);
			return rc;
		}
	}
	timesplit_add(&run->split, TS_WARMUP, t);
	return 0;
}

int runner__open_gpu(struct run *run, struct qual_msg *msg)
{
	int rc = gpu_open(run->cfg->device, &run->gpu, msg);

	if (rc == 0)
		gpu_set_carveout(run->gpu, run->cfg->carveout);
	return rc;
}

bool runner__case_contexts(const struct run *run)
{
	/* HIP keeps its context when the gpu is closed (gpu_hip.c): a
	 * reopen there would cost time and change nothing. */
	return run->cfg->case_contexts &&
	       !(run->device && strcmp(run->device->vendor, "amd") == 0);
}

int runner__case_context(struct run *run, const char *name)
{
	struct qual_msg msg = {{0}};
	double t = child_now();
	int rc;

	if (!runner__case_contexts(run) || !run->context_used || !run->gpu || run->gpu_dead)
		return 0;
	run->context_used = false;
	/* Every case frees what it held (runner__release_bufs): closing leaves
	 * no context behind, and the primary context, released, is reset. */
	gpu_close(run->gpu);
	run->gpu = NULL;
	rc = runner__open_gpu(run, &msg);
	timesplit_add(&run->split, TS_OPEN, t);
	if (rc == 0)
		return 0;
	/* The machine's failure, no case's: an error of the run, and the
	 * line that stops GPU work (a health check before the next job). */
	run->gpu_dead = true;
	run->gpu_lost = true;
	snprintf(run->stop_reason, sizeof run->stop_reason,
		 "gpu work stopped before case '%s': the gpu could not be opened "
		 "again for it (each case in a context of its own): %s", name, msg.text);
	runner__emit(run, lines_error_new("setup", LINES_CODE_NO_DEVICE, NULL, NULL,
					  run->stop_reason));
	return -1;
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

/* Times pair p (the candidate first when cand_first) and writes its line,
 * which the judge takes the pair from (runner__emit()). */
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
			runner__gpu_fault(run, jc, k ? 1 - arm : *last, "time", &msg);
			return rc;
		}
		if ((rc = gpu_graph_time(arms[arm].graph, &dev[arm], &host[arm], &msg)) < 0) {
			runner__gpu_fault(run, jc, arm, "time", &msg);
			return rc;
		}
		if (isfinite(dev[arm]) && dev[arm] > 0)
			run->split.s[TS_REPLAYS_DEVICE] += dev[arm] * 1e-9;
		dev[arm] /= RUNNER_REPLAYS;
		host[arm] /= RUNNER_REPLAYS;
		*last = arm;
	}
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
	runner__emit(run, line);
	timesplit_add(&run->split, TS_TIMING, t);
	return 0;
}

int runner__time_pairs(struct run *run, const struct fixture_case *c,
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
			if (!runner__emit_block(run, c, block, retake, p_hi - p_lo, &pl, ck, ok) ||
			    retakes_left == 0)
				break;
			retakes_left--;
		}
	}
	/* What the timing left behind must still be right: the output of the
	 * last replay, and untouched inputs. */
	char text[1200];
	rc = runner__inspect(run, c, last, &arms[last], b, jc, "after timing", text, sizeof text);
	if (rc == QUAL_ECHECK) {
		/* Either arm may have corrupted the shared inputs: rerun each
		 * alone on fresh inputs, which blames exactly. If both then pass,
		 * the failure did not repeat: it stays with the arm that ran last. */
		for (int arm = 0; arm < 2; arm++)
			if (runner__run_and_check(run, c, arm, &arms[arm], b, jc, 1,
						  "when rerun alone after timing", NULL) < 0 &&
			    run->gpu_dead)
				return QUAL_EGPU;
		if (jc->failure == JUDGE_OK)
			runner__fail_arm(run, jc, last, "check", QUAL_ECHECK, text);
		return QUAL_ECHECK;
	}
	if (rc < 0)
		return rc;
	/* The arm that did not run last is checked on a replay of its own. */
	return runner__run_and_check(run, c, 1 - last, &arms[1 - last], b, jc, 1, "after timing",
				     NULL);
}
