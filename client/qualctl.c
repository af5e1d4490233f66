/* qualctl: the client of quald (docs/qualctl.md, docs/protocol.md). One
 * command per invocation, one connection per command, one request per
 * connection; the exit status is the job's verdict for submit and
 * common/exitcode.h's usage and no-daemon statuses otherwise.
 *
 * This file holds the command table, qualctl's own options and main; the
 * commands live in ctl_follow.c and ctl_query.c over what ctl.c shares
 * (ctl.h), the connection in conn.c, the text a person sees in view.c, and
 * the judge command in judge_cmd.c (shared with qual-judge). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/conn.h"
#include "client/ctl.h"
#include "client/judge_cmd.h"
#include "common/exitcode.h"

#ifndef QUAL_VERSION
#define QUAL_VERSION "0.0.0"
#endif

#define EXIT_HELP                                                            \
	"\nExit status: 0 done; 3 interrupted or a broken reply; 4 usage, or\n"  \
	"quald refused the request; 5 quald cannot be reached.\n"

static int cmd_judge(struct ctl *ctl, const struct command *cmd, int argc, char **argv)
{
	(void)ctl;
	(void)cmd;
	return judge_cmd_main("qualctl judge", argc, argv);
}

static int cmd_help(struct ctl *ctl, const struct command *cmd, int argc, char **argv);

static const struct command commands[] = {
	{"submit", ctl_submit, "submit BASE.so CAND.so [options]",
	 "Submits a qualification of the candidate compiler library against the\n"
	 "baseline and follows it: a progress line on a terminal, plain lines\n"
	 "otherwise, then a summary table (case, verdict, code, median ratio with\n"
	 "its interval, Holm-corrected p). Paths are made absolute here.\n"
	 "\n"
	 "  --pairs N             timed pairs per case before any sampling (default 60,\n"
	 "                        15 blocks of 4; quald requires >= 30)\n"
	 "  --case NAME           qualify this case only (repeatable)\n"
	 "  --alpha A             significance level (0 < A <= 0.5)\n"
	 "  --margin M            equivalence margin on the ratio (0 <= M <= 0.5)\n"
	 "  --baseline-opt OPT    an extra compiler option for the baseline (repeatable)\n"
	 "  --candidate-opt OPT   an extra compiler option for the candidate (repeatable)\n"
	 "  --compile-only        compile and compare code only, time nothing\n"
	 "  --compile-timeout S   seconds each compile may take before it is killed\n"
	 "                        (default 120)\n"
	 "  --seed S              seed of the input data\n"
	 "  --fixtures DIR        also the cases of the fixture directory DIR\n"
	 "                        (DIR/fixture.json: docs/fixtures.md); repeatable,\n"
	 "                        at most 8; quald checks each against its allowed\n"
	 "                        roots, as it checks the libraries\n"
	 "  --mode M              processor mode: default, cu or wgp (hiprtc targets\n"
	 "                        with workgroup processors, gfx10 and later)\n"
	 "  --max-pairs N         sample undecided cases up to N pairs each\n"
	 "                        (default 64 x --pairs; equal to --pairs: off)\n"
	 "  --max-seconds S       no round of sampling starts after S seconds of\n"
	 "                        timing (default 20)\n"
	 "  --gate-slower R       beyond (default: a slower case makes a regression\n"
	 "                        when its interval lies above 1 + margin) or\n"
	 "                        significant (any slower case)\n"
	 "  --gate-faster R       the same for an improvement (default beyond)\n"
	 "  --undecided U         a case undecided at the cap: pass (default) or\n"
	 "                        regression\n"
	 "  --label KEY=VALUE     a label of the job (repeatable, each key once):\n"
	 "                        commit, branch, build, url, ...; KEY 1-64 of\n"
	 "                        A-Z a-z 0-9 _ . -, VALUE 1-1024 bytes, at most 32\n"
	 "  --gpu-type TYPE       the GPU type Slurm runs it on (quald's Slurm\n"
	 "                        backend); repeatable, at most 8: a job per type,\n"
	 "                        a verdict per type and an overall one, whose\n"
	 "                        exit status is the worst of theirs\n"
	 "  --no-follow           print the job id and exit 0\n"
	 CTL_COMMON_HELP
	 "\nExit status (the job's verdict): 0 improvement, neutral, or not timed\n"
	 "with --compile-only; 1 regression; 2 fail; 3 error, cancelled,\n"
	 "interrupted, or the outcome is unknown (connection lost, ^C); 4 usage,\n"
	 "or quald refused the submit; 5 quald cannot be reached; 6 not timed\n"
	 "though --compile-only was not asked for (no GPU).\n"},
	{"watch", ctl_watch, "watch [--after JOB[:SEQ]] [options]",
	 "Prints every job's lines as quald relays them, until interrupted: plain\n"
	 "lines prefixed by the job id, or the raw lines with --json.\n"
	 "\n"
	 "  --after JOB:SEQ       first the stored lines after that one (that job's\n"
	 "                        later lines, then every later job's); SEQ -1:\n"
	 "                        all of JOB's lines; --after JOB: the jobs after it\n"
	 CTL_COMMON_HELP
	 "\nExit status: 0 when interrupted (^C, SIGTERM); 4 usage or refused;\n"
	 "5 quald cannot be reached or went away.\n"},
	{"wait", ctl_wait, "wait JOB [options]",
	 "Follows a job to its verdict (a job submitted with --no-follow, or one\n"
	 "already done: its stored lines, then its live ones), shows it as submit\n"
	 "does, and exits with its verdict's status: a CI job can submit early and\n"
	 "gate later (job=$(qualctl submit --no-follow ...); ...; qualctl wait\n"
	 "\"$job\" --junit report.xml).\n"
	 CTL_COMMON_HELP
	 "\nExit status: as submit's (the job's verdict); 6 when the job timed\n"
	 "nothing though its start line says no static comparison was asked\n"
	 "for (settings.compile_only).\n"},
	{"status", ctl_status, "status [options]",
	 "Shows quald's version, its worker slots and what runs in them, and the\n"
	 "queue.\n\n" CTL_COMMON_HELP EXIT_HELP},
	{"list", ctl_list, "list [--limit N] [options]",
	 "Lists jobs, newest first, with their labels and settings in brief.\n\n"
	 "  --limit N             at most N jobs (quald's default 20, at most 1000)\n"
	 CTL_COMMON_HELP EXIT_HELP},
	{"history", ctl_history, "history [--case NAME] [--label KEY=VALUE]... [--limit N] [options]",
	 "Shows the per-case results of ended jobs over time, oldest first: per\n"
	 "case a table of the jobs (id, finished date, labels, the case's verdict,\n"
	 "the change in percent with its interval). --json prints quald's reply.\n"
	 "\n"
	 "  --case NAME           this case only (jobs without it are left out)\n"
	 "  --label KEY=VALUE     only jobs with this label (repeatable: all must\n"
	 "                        match)\n"
	 "  --limit N             the newest N matching jobs (default 100, at most\n"
	 "                        10000)\n"
	 "  --gpu-type TYPE       only jobs of this GPU type (quald's Slurm backend)\n"
	 CTL_COMMON_HELP EXIT_HELP},
	{"export", ctl_export,
	 "export (--csv | --lnt [--machine NAME]) [--case NAME] [--label KEY=VALUE]... [--limit N]",
	 "Writes the history (as 'qualctl history' selects it) on stdout, for a\n"
	 "spreadsheet or LNT.\n"
	 "\n"
	 "  --csv                 CSV (RFC 4180): a header row, then one row per job\n"
	 "                        and case, oldest first; the job's columns, each\n"
	 "                        arm's path and sha256, the case's verdict, ratio,\n"
	 "                        interval, p_holm, median ns per arm, timed; then one\n"
	 "                        column label:KEY per label key seen, sorted; a\n"
	 "                        text cell a spreadsheet would run as a formula\n"
	 "                        (=, +, -, @ first) gets a ' before it\n"
	 "  --lnt                 a JSON array of LNT reports (format_version 2), one\n"
	 "                        per job, oldest first: labels as run info, a test\n"
	 "                        qual.CASE per case with the candidate's median time\n"
	 "                        in seconds as execution_time when timed\n"
	 "  --machine NAME        the LNT machine name (default qual; a job of a\n"
	 "                        GPU type reports as machine NAME-TYPE)\n"
	 "  --case, --label, --limit  as for history\n"
	 CTL_COMMON_HELP EXIT_HELP},
	{"show", ctl_show, "show JOB [options]",
	 "Shows a job's state and its stored lines (plain, with the summary table\n"
	 "once it has a verdict); --json prints the stored lines exactly.\n\n"
	 CTL_COMMON_HELP
	 "\nExit status: the job's verdict's, as submit's, once it has one; 0\n"
	 "while it has none (queued, running: 'qualctl wait' gates on it), 3\n"
	 "when a --junit or --markdown report was asked of such a job; 4 usage\n"
	 "or refused; 5 quald cannot be reached.\n"},
	{"explain", ctl_explain, "explain (JOB | FILE) CASE [--no-diff] [options]",
	 "Shows what the two compilers made of one case of a job (or of a file of\n"
	 "qual-run's lines, - for stdin): both arms' code size, instructions,\n"
	 "registers, spills, local and shared memory, theoretical occupancy at the\n"
	 "case's block size and instruction mix side by side with the change, then\n"
	 "the diff of the two disassemblies (registers and labels renamed in the\n"
	 "order of first use). --json prints the case's code line as it is.\n"
	 "\n"
	 "  --no-diff             the figures only\n"
	 CTL_COMMON_HELP EXIT_HELP},
	{"cancel", ctl_cancel, "cancel JOB [options]",
	 "Cancels a queued or running job; its log ends with a cancelled verdict.\n\n"
	 CTL_COMMON_HELP EXIT_HELP},
	{"quarantine", ctl_quarantine, "quarantine (list | clear SHA256) [options]",
	 "Lists the compiler libraries whose candidate runs crashed (by SHA-256:\n"
	 "the first 16 hex digits, strikes, whether quarantined, the last path seen\n"
	 "with that hash, the last crash), or clears one library's strikes so that\n"
	 "it may be submitted again. After 3 crashes quald refuses a submit naming\n"
	 "a file with that hash and says the command to clear it. Any peer quald\n"
	 "admits may clear.\n"
	 "\n"
	 "  list                  the table of strikes (--json: the raw reply)\n"
	 "  clear SHA256          forget the strikes of this hash (64 lower-case\n"
	 "                        hex digits, as sha256sum prints it)\n"
	 CTL_COMMON_HELP EXIT_HELP},
	{"calibrate", ctl_calibrate, "calibrate LIB [--runs N] [--device SLOT] [--watch] [options]",
	 "Queues a calibration: N A/A qualifications (default 10, at most 100) of the\n"
	 "compiler library LIB against itself, one after the other in one job, on\n"
	 "the device of slot SLOT (default: the first free slot). quald checks and\n"
	 "pins LIB as it does a submit's libraries. The job's verdict line carries\n"
	 "the device's new calibration record: per case, the comparisons called\n"
	 "slower or faster, the false-alarm rate with its exact 95% upper bound,\n"
	 "and the detectable effect; every later job's verdict line carries it.\n"
	 "Prints the job id, or with --watch follows the job as submit does.\n"
	 "\n"
	 "  --runs N              A/A qualifications (1 to 100, default 10)\n"
	 "  --device SLOT         the slot (quald status lists them) to calibrate\n"
	 "  --gpu-type TYPE       quald's Slurm backend: a GPU of this type; the\n"
	 "                        record is of the node's GPU Slurm gave it\n"
	 "  --watch               follow the job: its lines, then the summary\n"
	 "  --seed, --compile-timeout, --mode  as for submit (a calibration\n"
	 "                        measures the default rule on the default cases)\n"
	 CTL_COMMON_HELP
	 "\nExit status: 0 queued (or, with --watch, done); 3 error or cancelled;\n"
	 "4 usage, or quald refused it; 5 quald cannot be reached; 6 nothing was\n"
	 "timed (no GPU).\n"},
	{"calibration", ctl_calibration, "calibration [--json] [options]",
	 "Shows the latest calibration of each slot's device: when, how many A/A\n"
	 "comparisons, how many were called slower or faster, the false-alarm rate\n"
	 "and its 95% upper bound, and per case the same with the detectable ratio.\n"
	 "--json prints quald's reply as it is.\n\n"
	 CTL_COMMON_HELP EXIT_HELP},
	{"judge", cmd_judge, "judge [--alpha A] [--margin M] [--format F] [--junit FILE] [FILE]",
	 "Recomputes a run's verdicts from its stored lines (a file, or stdin),\n"
	 "locally, as qual-judge does. Needs no daemon.\n"},
	{"help", cmd_help, "help [COMMAND]", "Shows the help of qualctl or of a command.\n"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const struct command *command_find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: qualctl [--socket PATH | --tcp HOST:PORT [--token-file PATH]] [--timeout S]\n"
		   "               COMMAND [ARGS]\n"
		   "\n"
		   "The client of quald, the GPU compiler qualification service.\n"
		   "\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  qualctl %s\n", commands[i].synopsis);
	fprintf(f, "\n'qualctl COMMAND --help' tells more. The socket is --socket, else\n"
		   "$QUAL_SOCKET, else $RUNTIME_DIRECTORY/quald.sock, else " CONN_DEFAULT_SOCKET ".\n"
		   "Exit status: submit's is the job's verdict (0 pass, 1 regression, 2 fail,\n"
		   "3 error or cancelled, 6 not timed); 4 usage; 5 quald cannot be reached.\n");
}

static int cmd_help(struct ctl *ctl, const struct command *self, int argc, char **argv)
{
	const struct command *cmd;

	(void)ctl;
	(void)self;
	if (argc < 2) {
		usage(stdout);
		return QUAL_EXIT_PASS;
	}
	cmd = command_find(argv[1]);
	if (!cmd) {
		fprintf(stderr, "qualctl: unknown command '%s'\n", argv[1]);
		return QUAL_EXIT_USAGE;
	}
	if (cmd->run == cmd_judge) /* its help lives with its code */
		return judge_cmd_main("qualctl judge", 2, (char *[]){"judge", "--help", NULL});
	ctl_command_usage(stdout, cmd);
	return QUAL_EXIT_PASS;
}

int main(int argc, char **argv)
{
	static const struct command global_cmd = {"", NULL, "", ""};
	struct option global[CTL_NCOMMON + 2];
	struct ctl ctl;
	const struct command *cmd;
	size_t n;
	int opt, rc;

	ctl_init(&ctl);
	n = ctl_common_options(global, false);
	global[n++] = (struct option){"version", no_argument, NULL, 'V'};
	global[n] = (struct option){NULL, 0, NULL, 0};
	opterr = 0;
	/* "+": the global options end at the command's name. */
	while ((opt = getopt_long(argc, argv, "+:h", global, NULL)) != -1) {
		switch (opt) {
		case 'h':
			usage(stdout);
			return QUAL_EXIT_PASS;
		case 'V':
			printf("qualctl %s\n", QUAL_VERSION);
			return QUAL_EXIT_PASS;
		case ':':
			fprintf(stderr, "qualctl: option '%s' needs a value\n", argv[optind - 1]);
			return QUAL_EXIT_USAGE;
		case '?':
			fprintf(stderr, "qualctl: unknown option '%s' (see qualctl --help)\n",
				ctl_unknown_option(argv));
			return QUAL_EXIT_USAGE;
		default:
			if (ctl_take_common(&ctl, &global_cmd, opt, optarg) != 0)
				return QUAL_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return QUAL_EXIT_USAGE;
	}
	cmd = command_find(argv[optind]);
	if (!cmd) {
		fprintf(stderr, "qualctl: unknown command '%s' (see qualctl --help)\n", argv[optind]);
		return QUAL_EXIT_USAGE;
	}
	rc = cmd->run(&ctl, cmd, argc - optind, argv + optind);
	ctl_release(&ctl);
	if (fflush(stdout) != 0 && rc == QUAL_EXIT_PASS)
		rc = QUAL_EXIT_ERROR; /* a full disk must not pass for a verdict */
	return rc;
}
