/* qual-run's command line (qual_run_args.h). */
#include "run/qual_run_args.h"

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/calib_record.h"
#include "common/confine.h"
#include "common/lines.h"
#include "common/opts.h"
#include "gpu/gpu.h"
#include "common/text.h"
#include "fixtures/fixture.h"
#include "stats/stats.h"

/* A job's setting (proto/settings.h): read, checked and worded by its
 * field, as quald reads the same value of a submit. */
static int take_setting(void *ctx, const struct opts_entry *e, const char *arg,
			struct qual_msg *msg)
{
	struct qual_run_args *a = ctx;
	int rc = settings_from_option(&a->set, settings_find_option(e->name), arg, msg);

	if (rc < 0)
		a->line_code = LINES_CODE_USAGE;
	return rc;
}

static int take_compile_only_because(void *ctx, const char *arg, struct qual_msg *msg)
{
	struct qual_run_args *a = ctx;

	(void)msg;
	a->cfg.compile_only = true;
	a->cfg.compile_only_because = arg;
	return 0;
}

/* The verdict line's calibration (runner_config.verdict_extra): the record
 * in file (--calibration), checked to have a record's shape
 * (common/calib_record.h), or, with file NULL, null with because
 * (--no-calibration-because). Fails naming the file and the field. */
static int calibration_extra(struct qual_run_args *a, const char *file, const char *because,
			     struct qual_msg *msg)
{
	json_t *rec;
	int rc;

	json_decref(a->cfg.verdict_extra);
	a->cfg.verdict_extra = json_object();
	if (!file) {
		json_object_set_new(a->cfg.verdict_extra, "calibration", json_null());
		json_object_set_new(a->cfg.verdict_extra, "calibration_because",
				    json_string(because));
		return 0;
	}
	if ((rc = calib_record_load(file, &rec, msg))) {
		a->line_code = LINES_CODE_USAGE;
		return rc;
	}
	json_object_set_new(a->cfg.verdict_extra, "calibration", rec);
	return 0;
}

static int take_calibration(void *ctx, const char *arg, struct qual_msg *msg)
{
	return calibration_extra(ctx, arg, NULL, msg);
}

static int take_no_calibration(void *ctx, const char *arg, struct qual_msg *msg)
{
	return calibration_extra(ctx, NULL, arg, msg);
}

static int take_block_seed(void *ctx, const char *arg, struct qual_msg *msg)
{
	long x;
	int rc = text_parse_long("--block-seed", arg, 1, LONG_MAX, &x, msg);

	if (rc == 0)
		((struct qual_run_args *)ctx)->cfg.block_seed = (uint64_t)x;
	return rc;
}

/* --case-contexts and --shared-context: whether each case gets a context
 * of its own (runner_config.case_contexts). */
static int take_contexts(void *ctx, const struct opts_entry *e, const char *arg,
			 struct qual_msg *msg)
{
	(void)arg;
	(void)msg;
	((struct qual_run_args *)ctx)->cfg.case_contexts = strcmp(e->name, "case-contexts") == 0;
	return 0;
}

/* The arm an option of both arms is for: 0 baseline, 1 candidate. */
static int arm_of(const struct opts_entry *e)
{
	return strncmp(e->name, "candidate", 9) == 0;
}

/* A sha256 as quald stores it: 64 lower-case hex digits. */
static int take_sha256(void *ctx, const struct opts_entry *e, const char *arg,
		       struct qual_msg *msg)
{
	size_t n = strspn(arg, "0123456789abcdef");

	if (n != 64 || arg[n])
		return qual_fail(msg, QUAL_EINVAL, "--%s must be 64 lower-case hex digits, "
				 "got '%s'", e->name, arg);
	((struct qual_run_args *)ctx)->cfg.sha256[arm_of(e)] = arg;
	return 0;
}

static int take_real_path(void *ctx, const struct opts_entry *e, const char *arg,
			  struct qual_msg *msg)
{
	if (arg[0] != '/')
		return qual_fail(msg, QUAL_EINVAL, "--%s must be an absolute path, got '%s'",
				 e->name, arg);
	((struct qual_run_args *)ctx)->cfg.real_path[arm_of(e)] = arg;
	return 0;
}

static int take_compile_user(void *ctx, const char *arg, struct qual_msg *msg)
{
	uid_t uid;
	gid_t gid;

	if (qual_confine_user(arg, &uid, &gid, msg) < 0) {
		((struct qual_run_args *)ctx)->line_code = LINES_CODE_USAGE;
		return QUAL_EINVAL;
	}
	rtc_set_compile_user(true, uid, gid);
	fixture_set_oracle_user(true, uid, gid);
	return 0;
}

/* qual_run.c reads --args-fd when it is alone, before this table. */
static int take_args_fd(void *ctx, const char *arg, struct qual_msg *msg)
{
	(void)ctx;
	(void)arg;
	return qual_fail(msg, QUAL_EINVAL, "--args-fd N takes no other argument: the command "
			 "line is on descriptor N");
}

/* What qual-view (client/run_view.h) serves: here only when qual-view did
 * not take it (spelt short, or qual-view could not run), and refused then,
 * never silently left out. */
static int take_format(void *ctx, const char *arg, struct qual_msg *msg)
{
	if (strcmp(arg, "table") != 0 && strcmp(arg, "json") != 0)
		return qual_fail(msg, QUAL_EINVAL, "--format must be table or json, got '%s'",
				 arg);
	if (!strcmp(arg, "table") && !getenv("QUAL_VIEW_CHILD"))
		return qual_fail(msg, QUAL_EINVAL, "--format table %s",
				 ((struct qual_run_args *)ctx)->reports_unserved ?
				 "needs qual-view, which could not run" :
				 "must be written out in full (--format table)");
	return 0;
}

static int take_report(void *ctx, const struct opts_entry *e, const char *arg,
		       struct qual_msg *msg)
{
	(void)arg;
	return qual_fail(msg, QUAL_EINVAL, "--%s %s", e->name,
			 ((struct qual_run_args *)ctx)->reports_unserved ?
			 "needs qual-view, which could not run" :
			 "is not taken with --help, --list or --health, and must be written "
			 "out in full");
}

#define AT(member) offsetof(struct qual_run_args, member)
/* A job's setting: its name must be a field's option (settings_find_option),
 * and it takes a value unless the field is a bool (check_table). */
#define SETTING(name, arg, text) {name, arg, OPTS_ENTRY, .fn_entry = take_setting, .help = text}

/* qual-run's options, in the order --help lists them. */
static const struct opts_entry options[] = {
	SETTING("pairs", "N", "timed pairs per case before any sampling (default 60:\n"
		"15 blocks of 4; at least 30)"),
	{"pairs-per-block", "K", OPTS_INT, AT(cfg.pairs_per_block), 1, 1000000, .help =
		"pairs per load of both arms' code (default 4); the\nblocks, each the median "
		"of its pairs, are the units\nof the test and the interval"},
	SETTING("max-pairs", "N", "sample until decided: the undecided cases get more\n"
		"blocks, up to N pairs per case (default 64 x --pairs;\nequal to --pairs: no "
		"sampling beyond them; needs\n--sessions 2 or more)"),
	SETTING("max-seconds", "S", "no round of sampling, nor a session of one, starts\n"
		"after S seconds of timing (default 20)"),
	SETTING("gate-slower", "R", "which slower cases make a regression: beyond (the\n"
		"interval wholly above 1 + margin; default) or\nsignificant (any slower case)"),
	SETTING("gate-faster", "R", "the same for an improvement (default beyond)"),
	SETTING("undecided", "U", "a case still undecided at the cap: pass (default) or\n"
		"regression"), /* vocab:key (the gate word, in prose) */
	{"sample-identical", NULL, OPTS_FLAG, AT(cfg.stats.sample_identical), .help =
		"sample and decide identical code by its timing like\nany other case (its "
		"verdict stays identical; the\ncase_verdict's timing_verdict is the A/A "
		"outcome)"},
	SETTING("alpha", "A", "significance level after Holm (default 0.05)"),
	SETTING("margin", "M", "equivalence margin on the median ratio (default 0.01)"),
	SETTING("case", "NAME", "run only this case (repeatable); --list shows them"),
	SETTING("baseline-opt", "OPT", "extra compiler option for the baseline (repeatable)"),
	SETTING("candidate-opt", "OPT", "extra compiler option for the candidate (repeatable)"),
	SETTING("compile-only", NULL, "never use a GPU: static comparison only"),
	{"compile-only-because", "WHY", OPTS_CALL, .fn = take_compile_only_because, .help =
		"the same, saying WHY in the start line\n(quald's compile-only slots)"},
	{"calibration", "FILE", OPTS_CALL, .fn = take_calibration, .help =
		"copy the device's calibration record (a JSON object,\ndocs/output.md) into the "
		"verdict line"},
	{"no-calibration-because", "WHY", OPTS_CALL, .fn = take_no_calibration, .help =
		"the verdict line's calibration is null,\nwith WHY (quald: no calibration of "
		"the device yet)"},
	{"arch", "ARCH", OPTS_STRING, AT(cfg.arch), .help =
		"target when nothing is timed (default sm_90 / gfx90a)"},
	SETTING("mode", "M", "processor mode, default, cu or wgp (default: default);\ncu / wgp "
		"add -mcumode / -mno-cumode to both arms on\nhiprtc targets with workgroup "
		"processors (gfx10+)"),
	{"device", "N", OPTS_INT, AT(cfg.device), 0, 1023, .help = "GPU ordinal (default 0)"},
	SETTING("seed", "S", "fixture input seed (default 0: the fixed default)"),
	{"block-seed", "S", OPTS_CALL, .fn = take_block_seed, .help =
		"seed of the blocks' load orders and buffer shifts\n(default: drawn per run; "
		"the start line says it)"},
	{"sessions", "K", OPTS_INT, AT(cfg.sessions), 1, 64, .help =
		"processes that share the blocks, one after the other,\neach with its own GPU "
		"context (default 4; 1: none)"},
	{"flush-mib", "N", OPTS_INT, AT(flush_mib), 0, 65536, .help =
		"MiB overwritten before each timed replay, so that\neach starts with a cold "
		"cache (default 0: none;\n512 exceeds the last-level cache of current GPUs)"},
	{"pad-mib", "N", OPTS_INT, AT(pad_mib), 0, 65536, .help =
		"MiB of device memory held before each case's buffers,\nso that they lie "
		"elsewhere (default 0: none)"},
	{"carveout", "PCT", OPTS_INT, AT(cfg.carveout), GPU_CARVEOUT_DRIVER,
	 GPU_CARVEOUT_MAX_SHARED, .help = "the shared memory carve-out of every timed kernel, in\n"
		"percent: 100 the most shared memory, 0 the most L1\n(default -1: the driver's "
		"choice, which may depend\non what ran before)"},
	{"case-contexts", NULL, OPTS_ENTRY, .fn_entry = take_contexts, .help =
		"each case in a GPU context of its own (the default):\na session closes its GPU "
		"and opens it again before\neach case after one that used it, so that no "
		"case's\nstate reaches another (CUDA)"},
	{"shared-context", NULL, OPTS_ENTRY, .fn_entry = take_contexts, .help =
		"the cases of a session share its context (quicker:\nabout 0.15 s less a case "
		"and session on an H100)"},
	{"look-growth", "G", OPTS_INT, AT(cfg.stats.look_growth), STATS_LOOK_GROWTH_MIN,
	 STATS_LOOK_GROWTH_MAX, .help = "each planned look of sampling until decided at G\n"
		"times the blocks of the one before (default 2)"},
	{"settle-ms", "MS", OPTS_INT, AT(cfg.settle_ms), 0, 10000, .help =
		"milliseconds the first session of each look keeps the\nGPU at work on its first "
		"case, untimed, before\ntiming (default 0: none)"},
	{"one-load", NULL, OPTS_FLAG, AT(cfg.one_load), .help =
		"time every pair under one load and judge each pair\nalone (the old way, to "
		"measure the instrument; its\nintervals do not cover load-to-load variation)"},
	{"baseline-sha256", "H", OPTS_ENTRY, .fn_entry = take_sha256, .help =
		"the sha256 (64 lower-case hex digits) the baseline's\nbytes must have; another "
		"is refused before it is\nloaded (error); quald passes its submit's hash"},
	{"candidate-sha256", "H", OPTS_ENTRY, .fn_entry = take_sha256, .help =
		"the same for the candidate (another: fail)"},
	{"baseline-real-path", "P", OPTS_ENTRY, .fn_entry = take_real_path, .help =
		"the file to read for the baseline instead of resolving\nits path again (quald "
		"passes the path it checked);\neach library is read once into a sealed memfd,\n"
		"which every compile loads"},
	{"candidate-real-path", "P", OPTS_ENTRY, .fn_entry = take_real_path, .help =
		"the same for the candidate"},
	SETTING("compile-timeout", "S", "seconds per compile before it is killed (default 120)"),
	{"compile-jobs", "N", OPTS_INT, AT(cfg.compile_jobs), 1, RUNNER_MAX_COMPILE_JOBS, .help =
		"compiles at once, each its own child (default: the\nonline CPUs, at most 16; 1: "
		"one after the other;\n16 at most)"},
	{"cache", "DIR", OPTS_STRING, AT(cfg.cache_dir), .help =
		"artifact cache: successful compiles kept by content\n(default "
		"$XDG_CACHE_HOME/qual/artifacts, else\n$HOME/.cache/qual/artifacts)"},
	{"no-cache", NULL, OPTS_FLAG, AT(no_cache), .help =
		"compile everything, read and write no cache"},
	{"cache-max-mib", "N", OPTS_INT, AT(cache_max_mib), 1, 16 << 20, .help =
		"bound on the cache's size; the least recently used\nentries go beyond it "
		"(default 4096)"},
	{"compile-user", "NAME|UID", OPTS_CALL, .fn = take_compile_user, .help =
		"run the compile children, which load the libraries,\nand the fixtures' oracle "
		"programs as this\nunprivileged user (qual-run must be root); a bare\nuid "
		"needs no account and is its own gid"},
	{"hang-floor-ms", "MS", OPTS_REAL, AT(cfg.hang_floor_ms), 1, 86400e3, .help =
		"least time a graph may take before it counts as hung\n(default 2000)"},
	{"hang-factor", "F", OPTS_REAL, AT(cfg.hang_factor), 1, 1e6, .help =
		"a graph may take F x the baseline's time if that is\nlonger than the floor "
		"(default 100)"},
	{"health", NULL, OPTS_FLAG, AT(health), .help =
		"check the GPU (--device) with a tiny kernel of qual's\nown and print one JSON "
		"line; exit 0 when healthy, 3 not"},
	SETTING("fixtures", "DIR", "also run the cases of the fixture directory DIR\n"
		"(DIR/fixture.json, docs/fixtures.md; repeatable);\na bad manifest is a usage "
		"error"),
	{"only-fixtures", NULL, OPTS_FLAG, AT(cfg.only_fixtures), .help =
		"run only the cases of the --fixtures directories"},
	{"oracle-timeout", "S", OPTS_REAL, AT(oracle_timeout), 0.1, 86400, .help =
		"seconds a fixture's oracle program may run per case\n(default 300; a manifest "
		"may ask for less)"},
	{"probe-timeout", "S", OPTS_REAL, AT(cfg.probe_timeout_s), 0.1, 86400, .help =
		"seconds the device probe may take before it is\nkilled and the run goes on "
		"without a GPU (default 60)"},
	{"list", NULL, OPTS_FLAG, AT(list), .help = "print the case names and exit"},
	{"settings-table", NULL, OPTS_FLAG, AT(settings_table), .stop = true, .help =
		"print the table of a job's settings that qual-run and\nquald share "
		"(proto/settings.h) as JSON and exit"},
	{"format", "F", OPTS_CALL, .fn = take_format, .help =
		"table: plain lines as they come and the summary a\nperson reads (time per arm, "
		"change in percent,\ngeomean; colour unless NO_COLOR); json: the JSON\nlines. "
		"Default: table when stdout is a terminal"},
	{"json-out", "FILE", OPTS_ENTRY, .fn_entry = take_report, .help =
		"also write the JSON lines to FILE"},
	{"junit", "FILE", OPTS_ENTRY, .fn_entry = take_report, .help =
		"also write a JUnit XML report of the verdict"},
	{"markdown", "FILE", OPTS_ENTRY, .fn_entry = take_report, .help =
		"also write the summary as a markdown table"},
	{"args-fd", "N", OPTS_CALL, .fn = take_args_fd, .help =
		"read the whole command line from descriptor N, each\n"
		"argument ending in a NUL (alone; quald's workers:\n"
		"no job detail in /proc/PID/cmdline)"},
	{"help", NULL, OPTS_FLAG, AT(help), .stop = true, .letter = 'h'},
};
#define NOPTIONS (sizeof options / sizeof options[0])

void qual_run_args_usage(FILE *f)
{
	fprintf(f, "usage: qual-run BASELINE_LIB CANDIDATE_LIB [options]\n"
		"       qual-run --health [--device N]\n"
		"\n"
		"Compiles every fixture case with both compiler libraries (nvrtc or hiprtc\n"
		"ABI), checks each arm against a float64 oracle, times the arms in paired\n"
		"alternating order on the GPU and prints JSON lines ending in a verdict.\n"
		"Without a GPU it compiles only and says that nothing was timed.\n"
		"\n");
	opts_help(f, options, NOPTIONS, 23);
	fprintf(f, "\n"
		"exit status: 0 improvement, neutral or compile-only pass; 1 regression;\n"
		"2 fail (candidate wrong, did not compile, faulted or hung); 3 error\n"
		"(baseline or machine); 4 usage\n");
}

/* Whether the table and proto/settings.h agree: every SETTING() entry is a
 * field's option and takes a value unless the field is a bool, and every
 * field qual-run takes has its entry. A programming error otherwise. */
static bool check_table(struct qual_msg *msg)
{
	const struct settings_field *fields;
	size_t n;

	for (size_t i = 0; i < NOPTIONS; i++) {
		const struct settings_field *f;

		if (options[i].fn_entry != take_setting)
			continue;
		f = settings_find_option(options[i].name);
		if (!f || !(f->doors & SETTINGS_RUN) ||
		    (options[i].arg == NULL) != (f->kind == SETTINGS_BOOL))
			return qual_fail(msg, QUAL_EINVAL, "option '--%s' is not the setting "
					 "proto/settings.h has", options[i].name) == 0;
	}
	fields = settings_fields(&n);
	for (size_t k = 0; k < n; k++) {
		bool listed = false;

		for (size_t i = 0; i < NOPTIONS && fields[k].option; i++)
			listed |= options[i].fn_entry == take_setting &&
				  !strcmp(options[i].name, fields[k].option);
		if (fields[k].option && (fields[k].doors & SETTINGS_RUN) && !listed)
			return qual_fail(msg, QUAL_EINVAL, "setting '%s' has no option",
					 fields[k].key) == 0;
	}
	return true;
}

void qual_run_args_init(struct qual_run_args *a)
{
	memset(a, 0, sizeof *a);
	runner_config_init(&a->cfg);
	settings_init(&a->set);
	a->oracle_timeout = 300;
	a->line_code = -1;
}

void qual_run_args_release(struct qual_run_args *a)
{
	json_decref(a->cfg.verdict_extra);
	a->cfg.verdict_extra = NULL;
	settings_release(&a->set);
}

static int list_count(char *const *list)
{
	int n = 0;

	while (list && list[n])
		n++;
	return n;
}

/* The settings read (a->set) into the runner's configuration, the fixture
 * directories loaded (so that --list and --case see their cases). */
static int apply_settings(struct qual_run_args *a, struct qual_msg *msg)
{
	struct runner_config *cfg = &a->cfg;
	const struct qual_settings *s = &a->set;
	int rc;

	cfg->pairs = s->pairs;
	cfg->max_pairs = s->max_pairs;
	cfg->max_seconds = s->max_seconds;
	cfg->seed = (uint64_t)s->seed;
	cfg->stats.alpha = s->alpha;
	cfg->stats.margin = s->margin;
	cfg->stats.gate_slower = (enum gate_rule)s->gate_slower;
	cfg->stats.gate_faster = (enum gate_rule)s->gate_faster;
	cfg->stats.undecided = (enum gate_undecided)s->undecided;
	cfg->mode = (enum rtc_mode)s->mode;
	if (s->compile_timeout_s > 0)
		cfg->limits.timeout_s = s->compile_timeout_s;
	cfg->compile_only |= s->compile_only;
	cfg->cases = (const char *const *)s->cases;
	cfg->ncases = list_count(s->cases);
	cfg->baseline_opts = (const char *const *)s->baseline_options;
	cfg->nbaseline_opts = list_count(s->baseline_options);
	cfg->candidate_opts = (const char *const *)s->candidate_options;
	cfg->ncandidate_opts = list_count(s->candidate_options);
	cfg->flush_bytes = (size_t)a->flush_mib << 20;
	cfg->pad_bytes = (size_t)a->pad_mib << 20;
	cfg->cache_max_bytes = (size_t)a->cache_max_mib << 20;
	for (char **p = s->fixtures; p && *p; p++)
		if ((rc = fixture_load_dir(*p, msg)) < 0) {
			a->line_code = LINES_CODE_BAD_FIXTURE;
			return rc;
		}
	fixture_set_oracle_timeout(a->oracle_timeout);
	return 0;
}

/* What no one option says (the settings together are checked before,
 * settings_check in qual_run_args_parse): a block size that leaves too few blocks for the interval (the run could
 * never say more than inconclusive), --only-fixtures without fixtures. */
static int check_whole(struct qual_run_args *a, struct qual_msg *msg)
{
	const struct runner_config *cfg = &a->cfg;
	int blocks = (cfg->pairs + cfg->pairs_per_block - 1) / cfg->pairs_per_block;

	a->line_code = LINES_CODE_USAGE;
	if (!cfg->one_load && stats_median_ci_rank(blocks, cfg->stats.conf, NULL) == 0)
		return qual_fail(msg, QUAL_EINVAL, "%d pairs in blocks of %d make %d block%s, too "
				 "few for a %g interval of the median (at least 6)", cfg->pairs,
				 cfg->pairs_per_block, blocks, blocks == 1 ? "" : "s",
				 cfg->stats.conf);
	a->line_code = -1;
	if (cfg->only_fixtures && fixture_user_count() == 0)
		return qual_fail(msg, QUAL_EINVAL, "--only-fixtures without a --fixtures "
				 "directory of cases");
	return 0;
}

int qual_run_args_parse(struct qual_run_args *a, int argc, char **argv, struct qual_msg *msg)
{
	int first, rc;

	if (!check_table(msg))
		return QUAL_EINVAL;
	first = opts_parse(options, NOPTIONS, argc, argv, a, msg);
	if (first < 0 || a->help || a->settings_table)
		return first;
	/* The settings together first, as quald checks a request before it
	 * looks at any path in it: e.g. nine --fixtures are refused for their
	 * count at both doors before any directory is read. */
	a->line_code = LINES_CODE_USAGE;
	if (settings_check(&a->set, msg) < 0)
		return QUAL_EINVAL;
	a->line_code = -1;
	if ((rc = apply_settings(a, msg)) < 0)
		return rc;
	if (!a->list && !a->health && (rc = check_whole(a, msg)) < 0)
		return rc;
	return first;
}

/* Whether arg is option name ("--json-out"), alone or as NAME=VALUE. */
static bool is_opt(const char *arg, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(arg, name, n) && (arg[n] == '\0' || arg[n] == '=');
}

/* Whether arg is an option of the table that takes a value ("--case"). */
static bool takes_value(const char *arg)
{
	for (size_t i = 0; i < NOPTIONS; i++)
		if (arg[0] == '-' && arg[1] == '-' && !strcmp(arg + 2, options[i].name))
			return options[i].arg != NULL;
	return false;
}

bool qual_run_args_want_view(int argc, char **argv)
{
	const char *term = getenv("TERM");
	bool json = false, asked = false;

	/* qual-view's own run of us: never again (its --format=json says
	 * so too; this holds whatever else the command line says). */
	if (getenv("QUAL_VIEW_CHILD"))
		return false;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *next = i + 1 < argc ? argv[i + 1] : "";

		if (!strcmp(arg, "--"))
			break; /* operands from here on */
		if (!strcmp(arg, "--help") || !strcmp(arg, "-h") || !strcmp(arg, "--list") ||
		    !strcmp(arg, "--health") || !strcmp(arg, "--settings-table"))
			return false;
		if (!strcmp(arg, "--format=json") || (!strcmp(arg, "--format") &&
						      !strcmp(next, "json")))
			json = true;
		if (!strcmp(arg, "--format=table") || (!strcmp(arg, "--format") &&
						       !strcmp(next, "table")) ||
		    is_opt(arg, "--json-out") || is_opt(arg, "--junit") ||
		    is_opt(arg, "--markdown"))
			asked = true;
		/* An option's value is not an option. */
		if (!strchr(arg, '=') && takes_value(arg))
			i++;
	}
	if (asked)
		return true;
	return !json && isatty(STDOUT_FILENO) && !(term && strcmp(term, "dumb") == 0);
}
