/* The pair runner's lines (runner.h, docs/output.md): the one way out for
 * every line of a run (runner__emit(), which feeds the run's judge from the
 * line it writes), and where the start, case, block and error lines are
 * made. The pair lines are made where they are timed (runner_time.c), the
 * sessions' lines relayed by sessions.c, both through runner__emit(). */
#include "run/runner_internal.h"

#include <string.h>
#include <time.h>

#include <jansson.h>

#include "common/lines.h"
#include "proto/line.h"
#include "gpu/clocks.h"
#include "run/cache.h"

const char *const runner__arm_names[2] = {"baseline", "candidate"};

/* ---- the one way out -------------------------------------------------- */

/* Writes line (stolen) to run->out, fed first to run's judge when fed,
 * its reals rounded to what is written (lines_round_reals()): the judge of
 * the one process takes each timing as the supervisor of sessions takes it
 * from the line, and qual-judge from a stored copy. The settings a start
 * line carries are read into a copy and dropped: the
 * run's own (run->stats) are the ones it judges with, and the start line
 * was made from them. A line the judge cannot read (judge_take_line()
 * refuses it: a pair line without its timings, where a timing was not
 * finite) is written all the same and judged by nobody, as in sessions. */
static int write_line(struct run *run, json_t *line, bool fed)
{
	struct stats_settings ignored = run->stats;
	char why[200];

	lines_round_reals(line);
	if (fed)
		(void)judge_take_line(&run->judge, &ignored, line, why, sizeof why);
	return lines_emit(run->out, line);
}

int runner__emit(struct run *run, json_t *line)
{
	return write_line(run, line, true);
}

/* The judge's case_verdict and verdict lines are its result, not its
 * input: they go out by the same writer, unfed, so that nothing the judge
 * computed reaches it again (a verdict line's calibration would become
 * its verdict_extra, as qual-judge reads a stored one back). */
int runner__emit_judged(void *ctx, json_t *line)
{
	return write_line(ctx, line, false);
}

void runner__emit_unparsed(struct run *run, const char *line, size_t len)
{
	fwrite(line, 1, len, run->out);
	fputc('\n', run->out);
	fflush(run->out);
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
	/* The driver's occupancy, to set beside the code line's theoretical
	 * one (docs/explain.md): null untimed or where the backend has none. */
	json_object_set_new(o, "driver_blocks_per_sm", timed && a->has_driver_blocks ?
			    json_integer(a->driver_blocks) : json_null());
	return o;
}

/* Candidate minus baseline, or null when either side is unknown. */
static json_t *delta(int b, int c)
{
	return b >= 0 && c >= 0 ? json_integer(c - b) : json_null();
}

void runner__emit_case(struct run *run, const struct fixture_case *c,
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
	runner__emit(run, line);
}

void runner__fail_arm_as(struct run *run, struct judge_case *jc, int arm,
			 const char *stage, enum lines_code code, const char *message)
{
	runner__emit(run, lines_error_new(stage, code, arm >= 0 ? runner__arm_names[arm] : NULL,
					  jc ? jc->name : NULL, message));
}

void runner__fail_arm(struct run *run, struct judge_case *jc, int arm,
		      const char *stage, int err, const char *message)
{
	/* A child killed by a signal another process sent: neither arm's
	 * doing (docs/quald.md, "Quarantine"), an error of the run. */
	runner__fail_arm_as(run, jc, err == QUAL_EKILLED ? -1 : arm, stage,
			    lines_code_of(stage, err), message);
}

void runner__gpu_fault(struct run *run, struct judge_case *jc, int arm,
		       const char *stage, const struct qual_msg *msg)
{
	char text[sizeof msg->text + sizeof run->limit_why + 64];

	run->gpu_dead = true;
	if (!gpu_is_hung(run->gpu)) {
		runner__fail_arm_as(run, jc, arm, stage, LINES_CODE_GPU_FAULT, msg->text);
		snprintf(run->stop_reason, sizeof run->stop_reason,
			 "gpu work stopped in case '%s' (%s arm, %s): %s", jc->name,
			 runner__arm_names[arm], stage, msg->text);
		return;
	}
	run->hung = true;
	snprintf(text, sizeof text, "%s; the limit was %s", msg->text, run->limit_why);
	runner__fail_arm_as(run, jc, arm, stage, LINES_CODE_GPU_HANG, text);
	snprintf(run->stop_reason, sizeof run->stop_reason,
		 "gpu work stopped in case '%s' (%s arm, %s): %s; the kernel is still "
		 "running, so the process ends to stop it", jc->name, runner__arm_names[arm],
		 stage, msg->text);
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

bool runner__emit_block(struct run *run, const struct fixture_case *c, int block,
			int retake, int npairs, const struct placement *pl,
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
	runner__emit(run, line);
	return throttled;
}

void runner__emit_not_applicable(struct run *run, const struct fixture_case *c, const char *why)
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
	runner__emit(run, line);
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

void runner__emit_start(struct run *run, const int *sel, int nsel, const char *no_gpu)
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
	json_object_set_new(json_object_get(line, "settings"), "settle_ms",
			    json_integer(cfg->settle_ms));
	json_object_set_new(json_object_get(line, "settings"), "carveout",
			    json_integer(cfg->carveout));
	json_object_set_new(json_object_get(line, "settings"), "case_contexts",
			    json_boolean(runner__case_contexts(run)));
	json_object_set_new(json_object_get(line, "settings"), "pad_bytes",
			    json_integer((json_int_t)cfg->pad_bytes));
	if (cfg->one_load)
		json_object_set_new(json_object_get(line, "settings"), "one_load", json_true());
	/* What judge_take_line() reads back (qual-judge) to judge the same
	 * way. */
	{
		json_t *sampling = json_pack(
			"{s:i,s:f,s:s,s:s,s:s,s:b}", "max_pairs", run->max_pairs,
			"max_seconds", run->max_seconds,
			"gate_slower", gate_rule_name(cfg->stats.gate_slower),
			"gate_faster", gate_rule_name(cfg->stats.gate_faster),
			"undecided", gate_undecided_name(cfg->stats.undecided),
			"sample_identical", cfg->stats.sample_identical);

		/* Written only where it is not what a line without it
		 * means (STATS_LOOK_GROWTH_UNSTATED), so default lines are
		 * as before and a reader that does not know it can tell
		 * (docs/output.md, "Compatibility"). */
		if (run->stats.look_growth != STATS_LOOK_GROWTH_UNSTATED)
			json_object_set_new(sampling, "look_growth",
					    json_integer(run->stats.look_growth));
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
	runner__emit(run, line);
}

/* The error line outside any case that says why GPU work stopped. Its "gpu"
 * field tells a supervisor, without parsing the message, that the GPU must
 * pass a health check before its next job: "faulted" (a runtime error) or
 * "hung" (a wait ran past its deadline; the process ends after the verdict). */
void runner__emit_stop(struct run *run)
{
	json_t *line = lines_new("error");

	enum lines_code code = run->hung ? LINES_CODE_GPU_HANG :
			       run->crash_signal ? LINES_CODE_SESSION_FAILED :
			       run->gpu_lost ? LINES_CODE_NO_DEVICE : LINES_CODE_GPU_FAULT;

	json_object_set_new(line, "stage", json_string("time"));
	json_object_set_new(line, "code", json_string(vocab_code_name(code)));
	json_object_set_new(line, "arm", json_null());
	json_object_set_new(line, "case", json_null());
	json_object_set_new(line, "message", lines_text(run->stop_reason));
	json_object_set_new(line, "gpu", json_string(run->hung ? "hung" : "faulted"));
	runner__emit(run, line);
}
