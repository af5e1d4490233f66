/* The pair runner's setup, before anything compiles: the settings checked
 * and completed, the cases selected, both libraries identified, the
 * fixtures' builds started, the device found (probed or opened) and the
 * target's processor mode applied. What is refused here is a usage problem
 * (QUAL_EXIT_USAGE), said on err and in an error line. */
#include "run/runner_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <jansson.h>

#include "common/exitcode.h"
#include "common/lines.h"
#include "proto/line.h"
#include "common/xalloc.h"
#include "proto/settings.h"

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
	runner__emit(run, lines_error_new("setup", code, arm, NULL, text));
	return QUAL_EXIT_USAGE;
}

/* The settings runner_run() refuses: QUAL_EXIT_USAGE after refuse(), or 0.
 * A setting of a job is checked by its field in proto/settings.h, in the
 * words quald uses for the same value; the rest are the runner's own. */
static int settings_refused(struct run *run, FILE *err)
{
	const struct runner_config *cfg = run->cfg;
	const struct {
		const char *key;
		double x;
	} values[] = {
		{"pairs", cfg->pairs},
		{"alpha", cfg->stats.alpha},
		{"margin", cfg->stats.margin},
		{"seed", (double)cfg->seed},
		{"max_pairs", cfg->max_pairs},
		{"max_seconds", cfg->max_seconds},
		{"compile_timeout", cfg->limits.timeout_s},
	};
	struct qual_msg msg;

	for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
		if (settings_check_value(settings_find_key(values[i].key), values[i].x,
					 &msg) < 0)
			return refuse(run, err, LINES_CODE_USAGE, NULL, "%s", msg.text);
	if (settings_check_max_pairs(cfg->pairs, cfg->max_pairs, &msg) < 0)
		return refuse(run, err, LINES_CODE_USAGE, NULL, "%s", msg.text);
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

int runner__build_user_cases(struct run *run, const int *sel, int nsel, int *out)
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

		if (runner__is_user_case(sel[i]) || fixture_spec(sel[i], &c, &msg) < 0)
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

/* The seed of the blocks' placements: cfg's, or drawn anew for every run,
 * so that repeats of a run sample other loads; printed (63 bits, JSON's
 * integers being signed) so that a run can be repeated load for load. */
static void draw_block_seed(struct run *run)
{
	run->block_seed = run->cfg->block_seed & INT64_MAX;
	while (run->block_seed == 0) {
		if (getrandom(&run->block_seed, sizeof run->block_seed, 0) !=
		    (ssize_t)sizeof run->block_seed)
			run->block_seed = (uint64_t)runner__now_ns() ^ (uint64_t)getpid() << 32;
		run->block_seed &= INT64_MAX;
	}
}

/* The cases to run into sel (*nsel of them): cfg's by name, or every case
 * (with only_fixtures, those of the fixture directories alone). An unknown
 * name is refused: QUAL_EXIT_USAGE after refuse(), else 0. */
static int select_cases(struct run *run, FILE *err, int *sel, int *nsel)
{
	const struct runner_config *cfg = run->cfg;

	*nsel = 0;
	if (cfg->ncases == 0) {
		for (int i = cfg->only_fixtures ? fixture_count() - fixture_user_count() : 0;
		     i < fixture_count(); i++)
			sel[(*nsel)++] = i;
		return 0;
	}
	for (int i = 0; i < cfg->ncases; i++) {
		int k = fixture_find(cfg->cases[i]);

		if (k < 0)
			return refuse(run, err, LINES_CODE_USAGE, NULL, "unknown case '%s'",
				      cfg->cases[i]);
		sel[(*nsel)++] = k;
	}
	return 0;
}

int runner__settings(struct run *run, FILE *err, int *sel, int *nsel)
{
	const struct runner_config *cfg = run->cfg;
	int status, per, blocks;

	if ((status = settings_refused(run, err)))
		return status;
	draw_block_seed(run);
	if ((status = select_cases(run, err, sel, nsel)))
		return status;
	per = cfg->one_load ? cfg->pairs : cfg->pairs_per_block;
	blocks = (cfg->pairs + per - 1) / per;
	run->nsessions = cfg->one_load ? 1 : cfg->sessions < blocks ? cfg->sessions : blocks;
	run->block_hi = blocks;
	sampling_settings(run);
	return 0;
}

/* Both arms' libraries identified (identify_arms()) and of one ABI, which
 * sets run->platform: 0, or the exit status that ends the run. A library
 * that crashed or hung while loading, or is not the library that was
 * checked (never loaded), is a result about it (its error line and a
 * verdict line); anything else is a usage problem (refuse()). */
static int identify(struct run *run, FILE *err)
{
	struct identify_job ids[2];
	enum run_verdict v;

	identify_arms(run, ids);
	for (int arm = 0; arm < 2; arm++) {
		int rc = ids[arm].rc;
		const char *text = ids[arm].msg.text;

		if (rc == QUAL_ECRASH || rc == QUAL_ETIMEOUT || rc == QUAL_EEXIT ||
		    rc == QUAL_ECHECK || rc == QUAL_EKILLED) {
			fprintf(err, "qual-run: %s\n", text);
			if (rc == QUAL_ECHECK)
				runner__fail_arm_as(run, NULL, arm, "setup",
						    LINES_CODE_LIBRARY_CHANGED, text);
			else
				runner__fail_arm(run, NULL, arm, "setup", rc, text);
			/* Killed by another process: neither arm's doing. */
			v = arm && rc != QUAL_EKILLED ? RUN_FAIL : RUN_ERROR;
			runner__emit(run, json_pack("{s:s,s:s,s:b,s:s}", "type", "verdict",
						    "verdict", stats_run_verdict_name(v),
						    "timed", 0, "message", text));
			return judge_exit_status(v);
		}
		if (rc < 0)
			return refuse(run, err, rc == QUAL_EABI ? LINES_CODE_NO_ABI :
				      LINES_CODE_USAGE, runner__arm_names[arm], "%s", text);
	}
	if (run->id[0].abi != run->id[1].abi)
		return refuse(run, err, LINES_CODE_USAGE, NULL, "baseline is %s but candidate "
			      "is %s: both must use one abi", run->id[0].abi_name,
			      run->id[1].abi_name);
	run->platform = run->id[0].abi == RTC_ABI_HIPRTC ? FIXTURE_HIP : FIXTURE_CUDA;
	return 0;
}

/* The device the run times on into run->device, and the arch it compiles
 * for into run->arch: none under compile_only; with sessions, the probe's
 * (started by runner__prepare()); else the GPU opened here, with its
 * clocks. A device that cannot be had or cannot run the libraries' code is
 * none, and no_gpu (len bytes, "" or why the probe could not start) says
 * why. */
static void find_device(struct run *run, char *no_gpu, size_t len)
{
	const struct runner_config *cfg = run->cfg;
	struct qual_msg msg = {{0}};
	char probe_why[1024];
	double t = child_now();

	if (cfg->compile_only) {
		snprintf(no_gpu, len, "%s", cfg->compile_only_because ?
			 cfg->compile_only_because : "compile-only run requested");
	} else if (run->nsessions > 1) {
		/* When it could not start, no_gpu says why already. */
		if (run->probing && runner__probe_finish(run, probe_why, sizeof probe_why) < 0)
			snprintf(no_gpu, len, "no gpu: %s", probe_why);
		else if (!no_gpu[0])
			run->device = &run->probed;
		timesplit_add(&run->split, TS_PROBE, t);
	} else {
		int rc = runner__open_gpu(run, &msg);

		timesplit_add(&run->split, TS_OPEN, t);
		if (rc < 0) {
			snprintf(no_gpu, len, "no gpu: %s", msg.text);
			run->gpu = NULL;
		} else {
			/* A copy: with case_contexts the gpu is opened again
			 * before each case (runner__case_context). */
			run->probed = *gpu_get_info(run->gpu);
			run->device = &run->probed;
			runner__clocks_open(run, run->device);
		}
	}
	if (run->device) {
		const struct gpu_info *in = run->device;
		bool match = (run->id[0].abi == RTC_ABI_NVRTC) == (strcmp(in->vendor, "nvidia") == 0);
		if (!match) {
			snprintf(no_gpu, len, "the %s device cannot run %s code",
				 in->vendor, run->id[0].abi_name);
			if (run->gpu)
				gpu_close(run->gpu);
			run->gpu = NULL;
			run->device = NULL;
		}
	}
	if (run->device && cfg->arch && strcmp(cfg->arch, run->device->arch) != 0)
		fprintf(run->err, "qual-run: --arch %s ignored: compiling for the device's %s\n",
			cfg->arch, run->device->arch);
	snprintf(run->arch, sizeof run->arch, "%s",
		 run->device ? run->device->arch :
		 cfg->arch ? cfg->arch : default_arch(run->id[0].abi));
}

int runner__prepare(struct run *run, FILE *err, const int *sel, int nsel, char *no_gpu,
		    size_t len, struct fixture_keep **keep, const char **mode_opts[2])
{
	const struct runner_config *cfg = run->cfg;
	char probe_why[1024];
	double t;
	int status;

	/* The probe runs beside the libraries' identify; read by find_device(). */
	if (!cfg->compile_only && run->nsessions > 1 &&
	    runner__probe_start(run, probe_why, sizeof probe_why) < 0)
		snprintf(no_gpu, len, "no gpu: %s", probe_why);
	t = child_now();
	if ((status = identify(run, err)))
		return status;
	t = timesplit_add(&run->split, TS_IDENTIFY, t);
	runner__compile_setup(run);
	timesplit_add(&run->split, TS_COMPILE_SETUP, t);
	/* The cases' inputs and oracles are built while the device is found
	 * and the code compiled; the target is known here only without a GPU. */
	*keep = keep_fixtures(run, sel, nsel, cfg->compile_only ? cfg->arch ? cfg->arch :
			      default_arch(run->id[0].abi) : NULL,
			      !cfg->compile_only && run->nsessions > 1);
	find_device(run, no_gpu, len);
	return mode_options(run, err, mode_opts);
}
