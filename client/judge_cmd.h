/* The judge command: recomputes a run's verdicts from its stored JSON lines
 * (qual-run output, a quald job log, `qualctl show --json`), optionally with
 * another alpha or margin, without a GPU. One implementation for both
 * qual-judge and `qualctl judge`. */
#ifndef QUAL_JUDGE_CMD_H
#define QUAL_JUDGE_CMD_H

/* Runs the command: argv[0] is the command's own name (ignored), then
 * [--alpha A] [--margin M] [--help] [FILE]. prog names the program in
 * messages and usage ("qual-judge", "qualctl judge"). Writes fresh
 * case_verdict lines and a verdict line to stdout and returns the exit status
 * qual-run would have given (common/exitcode.h); QUAL_EXIT_USAGE for a bad
 * command line, an unreadable file, or lines that are not qual lines.
 * Reinitialises getopt, so it may follow other getopt parsing. */
int judge_cmd_main(const char *prog, int argc, char **argv);

#endif
