/* qualctl's commands and what they share (docs/qualctl.md): the options
 * every daemon command takes, the parse of a command's own options, and one
 * request to quald with its reply. One command per invocation, one
 * connection per command, one request per connection.
 *
 *   qualctl.c     the command table, the global options, help, main
 *   ctl.c         options, connecting, authenticating, a request's reply
 *   ctl_follow.c  submit and watch: job lines as they come
 *   ctl_query.c   status, list, show, cancel, quarantine
 *   ctl_history.c history and export
 *   ctl_explain.c explain
 *
 * Every function that ends a command returns its exit status
 * (common/exitcode.h); those that may go on return -1 instead. */
#ifndef QUAL_CTL_H
#define QUAL_CTL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <getopt.h>
#include <jansson.h>

#include "client/conn.h"
#include "client/report.h"

/* How long a request waits for its reply line. A submit's reply comes after
 * quald has loaded both libraries in identify children (each up to its
 * submit check limit, 30 s by default: daemon/jobs.h), so the default leaves
 * room for two of them and a busy machine. Job lines that follow have no
 * limit: a job may run for hours. */
#define CTL_REPLY_TIMEOUT_S 120.0

/* Where the program is going, gathered from the command line. */
struct ctl {
	const char *socket;  /* --socket, or NULL: the environment decides */
	const char *tcp;     /* --tcp HOST:PORT, or NULL */
	const char *token_file; /* --token-file, or NULL: $QUAL_TOKEN_FILE */
	int timeout_ms;      /* for each reply line */
	bool json;           /* raw lines on stdout, no tables */
	struct report_files rep; /* --json-out, --junit, --markdown (submit,
				  * show, wait) */
	struct conn conn;
	char path_buf[PATH_MAX];
};

struct command {
	const char *name;    /* "" for qualctl's own options */
	int (*run)(struct ctl *ctl, const struct command *cmd, int argc, char **argv);
	const char *synopsis; /* after "qualctl " */
	const char *help;     /* what it does, its own options */
};

/* The values of the common options; a command's own count from CTL_OPT_OWN. */
enum {
	CTL_OPT_SOCKET = 1000,
	CTL_OPT_TCP,
	CTL_OPT_TOKEN_FILE,
	CTL_OPT_TIMEOUT,
	CTL_OPT_JSON,
	CTL_OPT_JSON_OUT,
	CTL_OPT_JUNIT,
	CTL_OPT_MARKDOWN,
	CTL_OPT_OWN,
};

/* The options every daemon command takes, after the command's own. */
#define CTL_COMMON_HELP                                                      \
	"  --json           raw JSON lines on stdout, as quald sent them\n"     \
	"  --socket PATH    quald's Unix socket (default: $QUAL_SOCKET, else\n" \
	"                   $RUNTIME_DIRECTORY/quald.sock, else " CONN_DEFAULT_SOCKET ")\n" \
	"  --tcp HOST:PORT  reach quald over TCP instead (its --tcp, loopback)\n" \
	"  --token-file PATH  with --tcp: the token quald's --tcp-token-file\n"  \
	"                   holds (default $QUAL_TOKEN_FILE)\n"                   \
	"  --timeout S      seconds to wait for a reply (default 120)\n"         \
	"  --json-out FILE  (submit, show, wait) the job's lines also to FILE\n" \
	"  --junit FILE     (submit, show, wait) a JUnit XML report of the\n"   \
	"                   verdict: regression and failed cases fail\n"        \
	"  --markdown FILE  (submit, show, wait) the summary as markdown\n"     \
	"  -h, --help       this help\n"

/* ---- options (ctl.c) ------------------------------------------------- */

/* The common options' getopt_long() entries (CTL_NCOMMON at most) into
 * opts, --json among them when with_json (qualctl's own options are the
 * same less --json); returns how many. */
#define CTL_NCOMMON 9
size_t ctl_common_options(struct option *opts, bool with_json);

void ctl_init(struct ctl *ctl);
void ctl_release(struct ctl *ctl);

/* "usage: qualctl SYNOPSIS" and the command's help. */
void ctl_command_usage(FILE *f, const struct command *cmd);

/* "qualctl CMD: " fmt (with arg) " (see qualctl CMD --help)" on stderr;
 * returns QUAL_EXIT_USAGE. */
int ctl_usage_error(const struct command *cmd, const char *fmt, const char *arg);

/* The option getopt_long() has just called unknown, as the user wrote it. */
const char *ctl_unknown_option(char **argv);

/* Option values: the whole of s must be an integer >= lo (a number, for
 * ctl_parse_double). Returns 0, or QUAL_EXIT_USAGE after "qualctl CMD:
 * --opt must be ..." on stderr. */
int ctl_parse_long(const struct command *cmd, const char *opt, const char *s, long lo,
		   long *out);
int ctl_parse_double(const struct command *cmd, const char *opt, const char *s,
		     double *out);

/* --label KEY=VALUE (submit's label, history's and export's filter) into
 * the object labels: KEY is what comes before the first '=' and must not be
 * empty (quald checks the rest: docs/protocol.md, "Labels"); a key given
 * twice is a usage error. Returns 0 or QUAL_EXIT_USAGE. */
int ctl_take_label(const struct command *cmd, json_t *labels, const char *arg);

/* Labels as a person reads them: "KEY=VALUE KEY=VALUE", "-" for none. */
void ctl_labels_text(json_t *labels, char *buf, size_t len);

/* A common option (opt, arg) given before the command or after it: 0 when
 * taken, -1 when it is none of them, or an exit status. */
int ctl_take_common(struct ctl *ctl, const struct command *cmd, int opt, const char *arg);

/* A command's own options: take() gets each (getopt's value and argument)
 * and returns 0 or an exit status. */
typedef int (*ctl_take_fn)(void *st, const struct command *cmd, int opt, const char *arg);

/* The common options and one operand, a job id, into *job: -1 to go on,
 * or the exit status (help, a usage error). */
int ctl_job_operand(struct ctl *ctl, const struct command *cmd, int argc, char **argv,
		    const char **job);

/* take for a command without options of its own. */
int ctl_take_nothing(void *st, const struct command *cmd, int opt, const char *arg);

/* Parses argv (argv[0] is the command's name) into ctl and, through take,
 * the command's state; own (may be NULL) ends with a zeroed entry. Returns
 * -1 to go on with the operands at argv[*first..argc), or the exit status
 * to end with (0 after --help). */
int ctl_parse_args(struct ctl *ctl, const struct command *cmd, int argc, char **argv,
		   const struct option *own, ctl_take_fn take, void *st, int *first);

/* -1 when there are no operands at argv[first..argc), else the usage error
 * of a command that takes none. */
int ctl_no_operands(const struct command *cmd, int argc, char **argv, int first);

/* ---- a request and its reply (ctl.c) --------------------------------- */

/* A line quald sent: the parsed object and, for --json, the text exactly as
 * it came. */
struct reply {
	json_t *obj;
	char *text;
	size_t len;
};

void ctl_reply_release(struct reply *r);

/* The reply as it came, on stdout. */
void ctl_print_raw(const struct reply *r);

/* A line's "type", or NULL. */
const char *ctl_type_of(json_t *line);

/* Reads one line within the reply timeout and parses it. Returns -1 with
 * the line in *r, or the exit status after saying what went wrong. */
int ctl_read_reply(struct ctl *ctl, struct reply *r);

/* Connects (over TCP, authenticating with the token when there is one),
 * sends request (taken) and reads its reply line into *r. Returns -1 with
 * the reply, or the exit status: a refusal is printed and ends with
 * QUAL_EXIT_USAGE (what quald refuses is the user's input: a bad option
 * value, a path that is no compiler, an unknown job). */
int ctl_request(struct ctl *ctl, json_t *request, struct reply *r);

/* ctl_request on the connection ctl_request opened (a list's next page). */
int ctl_request_again(struct ctl *ctl, json_t *request, struct reply *r);

/* ---- the commands (ctl_follow.c, ctl_query.c) ------------------------ */

int ctl_submit(struct ctl *ctl, const struct command *cmd, int argc, char **argv);
int ctl_watch(struct ctl *ctl, const struct command *cmd, int argc, char **argv);
/* wait JOB: follows one job (its stored lines, then its live ones) to its
 * verdict, as submit does, and exits with its status. */
int ctl_wait(struct ctl *ctl, const struct command *cmd, int argc, char **argv);
int ctl_status(struct ctl *ctl, const struct command *cmd, int argc, char **argv);
int ctl_list(struct ctl *ctl, const struct command *cmd, int argc, char **argv);
int ctl_show(struct ctl *ctl, const struct command *cmd, int argc, char **argv);
int ctl_cancel(struct ctl *ctl, const struct command *cmd, int argc, char **argv);
int ctl_quarantine(struct ctl *ctl, const struct command *cmd, int argc, char **argv);
int ctl_calibrate(struct ctl *ctl, const struct command *cmd, int argc, char **argv);
int ctl_calibration(struct ctl *ctl, const struct command *cmd, int argc, char **argv);
/* history and export (ctl_history.c): one history request, shown as a
 * table, or written as CSV or LNT reports. */
int ctl_history(struct ctl *ctl, const struct command *cmd, int argc, char **argv);
int ctl_export(struct ctl *ctl, const struct command *cmd, int argc, char **argv);
/* explain JOB CASE (ctl_explain.c): the case's code line for a person. */
int ctl_explain(struct ctl *ctl, const struct command *cmd, int argc, char **argv);

#endif
