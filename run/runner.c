/* The pair runner (runner.h): a run from its settings to its verdict, in
 * steps each of its own file: the setup (runner_setup.c), the compile phase
 * (compile_all.c), each case (runner_case.c: its checks in runner_check.c,
 * its timing in runner_time.c) in this process or in sessions
 * (sessions.c), its lines (runner_emit.c), and the judge's verdict. */
#include "run/runner_internal.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/child.h"
#include "common/exitcode.h"
#include "common/xalloc.h"

void runner_config_init(struct runner_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->pairs = RUNNER_DEFAULT_PAIRS;
	cfg->pairs_per_block = RUNNER_PAIRS_PER_BLOCK;
	cfg->sessions = RUNNER_SESSIONS;
	cfg->warmup = RUNNER_WARMUP;
	cfg->settle_ms = RUNNER_SETTLE_MS;
	cfg->carveout = RUNNER_CARVEOUT;
	cfg->case_contexts = RUNNER_CASE_CONTEXTS;
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

/* The run's state before anything is decided: cfg's options per arm, and
 * the judge, whose verdict line add_verdict_fields() completes. */
static void run_init(struct run *run, const struct runner_config *cfg, FILE *out, FILE *err)
{
	memset(run, 0, sizeof *run);
	run->started_s = child_now();
	run->settle = true;  /* in this process when it times (--sessions 1) */
	timesplit_init(&run->split);
	run->cfg = cfg;
	run->out = out;
	run->err = err;
	run->opts[0] = cfg->baseline_opts;
	run->nopts[0] = cfg->nbaseline_opts;
	run->opts[1] = cfg->candidate_opts;
	run->nopts[1] = cfg->ncandidate_opts;
	judge_init(&run->judge);
	run->judge.on_verdict = add_verdict_fields;
	run->judge.on_verdict_ctx = run;
	run->judge.emit = runner__emit_judged;
	run->judge.emit_ctx = run;
}

/* The compile phase: the selected user cases built (their oracles run
 * first), the first look's sessions started when they will time, then
 * every case compiled (compile_all.c) while the kept fixtures (keep, which
 * this waits for and so ends) are built beside it. */
static void compile_phase(struct run *run, const int *sel, int nsel, struct fixture_keep *keep)
{
	int *compile_sel = xcalloc((size_t)nsel + 1, sizeof *compile_sel);
	double t = child_now();
	int ncompile = runner__build_user_cases(run, sel, nsel, compile_sel);

	t = timesplit_add(&run->split, TS_USER_FIXTURES, t);
	/* The first look's sessions open the GPU while the code compiles.
	 * They are forked from this process before the kept fixtures'
	 * builders start, while it has no other thread: a child forked while
	 * a thread held a lock (an allocator's, under a sanitizer) could
	 * wait on it for ever. */
	if (run->device && !run->gpu) {
		runner__sessions_start(run, sel, nsel);
		t = child_now();
	}
	fixture_keep_run(keep);
	runner__compile_all(run, compile_sel, ncompile);
	runner__explain(run, compile_sel, ncompile);
	t = timesplit_add(&run->split, TS_COMPILE, t);
	fixture_keep_wait(keep);
	timesplit_add(&run->split, TS_FIXTURES_PREBUILT, t);
	free(compile_sel);
}

/* After a session died by a fault signal, with every line written: the
 * crash is passed on as this process's own (cfg->on_crash, or the signal
 * raised here), so that whoever runs qual-run sees it. */
static void end_crashed(struct run *run)
{
	fflush(run->out);
	fflush(run->err);
	if (run->cfg->on_crash) {
		run->cfg->on_crash(run->crash_signal);
		return;
	}
	(void)child_kill_orphans(NULL, 0, child_now() + CHILD_REAP_GRACE_S);
	signal(run->crash_signal, SIG_DFL);
	raise(run->crash_signal);
}

/* The cases of sel run: in sessions (sessions.c) when the device is the
 * probe's, else each in this process, timed when it has a GPU. Returns 0,
 * or QUAL_EXIT_ERROR when a session died by a fault signal (and
 * end_crashed() returned). */
static int run_cases(struct run *run, const int *sel, int nsel)
{
	double t;
	bool timed;

	if (run->device && !run->gpu) {
		runner__run_sessions(run, sel, nsel);
		if (!run->crash_signal)
			return 0;
		end_crashed(run);
		return QUAL_EXIT_ERROR;
	}
	t = child_now();
	timed = run->gpu != NULL;
	for (int i = 0; i < nsel && !run->gpu_dead; i++)
		runner__run_case(run, sel[i]);
	if (run->gpu_dead)
		runner__emit_stop(run);
	timesplit_add(&run->split, TS_SESSIONS, t);
	run->split.sessions = timed ? 1 : 0;
	return 0;
}

int runner_run(const struct runner_config *cfg, FILE *out, FILE *err)
{
	struct run run;
	int *sel = xcalloc((size_t)fixture_count() + (size_t)cfg->ncases + 1, sizeof *sel);
	int nsel = 0, status;
	char no_gpu[1100] = "";
	struct fixture_keep *keep = NULL;
	bool not_timed;
	enum run_verdict v;
	const char **mode_opts[2] = {NULL, NULL};

	run_init(&run, cfg, out, err);
	if ((status = runner__settings(&run, err, sel, &nsel)) ||
	    (status = runner__prepare(&run, err, sel, nsel, no_gpu, sizeof no_gpu, &keep,
				      mode_opts)))
		goto out;
	runner__emit_start(&run, sel, nsel, no_gpu[0] ? no_gpu : NULL);
	compile_phase(&run, sel, nsel, keep);
	keep = NULL; /* ended by compile_phase() */
	if ((status = run_cases(&run, sel, nsel)))
		goto out;

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
