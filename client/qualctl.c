/* qualctl: the client of quald (docs/qualctl.md, docs/protocol.md). One
 * command per invocation, one connection per command, one request per
 * connection; the exit status is the job's verdict for submit and
 * common/exitcode.h's usage and no-daemon statuses otherwise.
 *
 * The connection lives in conn.c, the text a person sees in view.c, and the
 * judge command in judge_cmd.c (shared with qual-judge); this file parses the
 * command line, builds the request and decides what to print and return. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "client/conn.h"
#include "common/exitcode.h"
#include "client/judge_cmd.h"
#include "client/view.h"
#include "common/xalloc.h"

#ifndef QUAL_VERSION
#define QUAL_VERSION "0.0.0"
#endif

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
	struct conn conn;
	char path_buf[PATH_MAX];
};

struct command {
	const char *name;
	int (*run)(struct ctl *ctl, int argc, char **argv);
	const char *synopsis; /* after "qualctl " */
	const char *help;     /* what it does, its own options */
};

static const struct command *command_find(const char *name);

/* The options every daemon command takes, after the command's own. */
#define COMMON_HELP                                                          \
	"  --json           raw JSON lines on stdout, as quald sent them\n"     \
	"  --socket PATH    quald's Unix socket (default: $QUAL_SOCKET, else\n" \
	"                   $RUNTIME_DIRECTORY/quald.sock, else " CONN_DEFAULT_SOCKET ")\n" \
	"  --tcp HOST:PORT  reach quald over TCP instead (its --tcp, loopback)\n" \
	"  --token-file PATH  with --tcp: the token quald's --tcp-token-file\n"  \
	"                   holds (default $QUAL_TOKEN_FILE)\n"                   \
	"  --timeout S      seconds to wait for a reply (default 120)\n"         \
	"  -h, --help       this help\n"

#define EXIT_HELP                                                            \
	"\nExit status: 0 done; 3 interrupted or a broken reply; 4 usage, or\n"  \
	"quald refused the request; 5 quald cannot be reached.\n"

enum {
	OPT_SOCKET = 1000,
	OPT_TCP,
	OPT_TOKEN_FILE,
	OPT_TIMEOUT,
	OPT_JSON,
	OPT_OWN, /* the commands' own options count from here */
};

static const struct option common_opts[] = {
	{"socket", required_argument, NULL, OPT_SOCKET},
	{"tcp", required_argument, NULL, OPT_TCP},
	{"token-file", required_argument, NULL, OPT_TOKEN_FILE},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"json", no_argument, NULL, OPT_JSON},
	{"help", no_argument, NULL, 'h'},
};
#define NCOMMON (sizeof common_opts / sizeof common_opts[0])
#define MAX_OWN 16

/* The option getopt_long() just called unknown: a short one is optopt (its
 * cluster, "-xy", may not have been stepped over yet), a long one the
 * argument before optind. */
static const char *unknown_option(char **argv)
{
	static char shortopt[3];

	if (optopt) {
		snprintf(shortopt, sizeof shortopt, "-%c", optopt);
		return shortopt;
	}
	return argv[optind - 1];
}

static void command_usage(FILE *f, const struct command *cmd)
{
	fprintf(f, "usage: qualctl %s\n\n%s", cmd->synopsis, cmd->help);
}

static int usage_error(const struct command *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "qualctl%s%s: ", *cmd->name ? " " : "", cmd->name);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see qualctl%s%s --help)\n", *cmd->name ? " " : "", cmd->name);
	return QUAL_EXIT_USAGE;
}

/* Number parsers for options: the whole string must be the number. */
static int parse_long(const struct command *cmd, const char *opt, const char *s,
		      long lo, long *out)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(s, &end, 10);
	if (errno || end == s || *end || x < lo) {
		fprintf(stderr, "qualctl%s%s: %s must be an integer >= %ld, got '%s'\n",
			*cmd->name ? " " : "", cmd->name, opt, lo, s);
		return QUAL_EXIT_USAGE;
	}
	*out = x;
	return 0;
}

static int parse_double(const struct command *cmd, const char *opt, const char *s,
			double *out)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(x)) {
		fprintf(stderr, "qualctl%s%s: %s must be a number, got '%s'\n",
			*cmd->name ? " " : "", cmd->name, opt, s);
		return QUAL_EXIT_USAGE;
	}
	*out = x;
	return 0;
}

/* A common option given before the command or after it. */
static int take_common(struct ctl *ctl, const struct command *cmd, int opt,
		       const char *arg)
{
	double s;

	switch (opt) {
	case OPT_SOCKET:
		ctl->socket = arg;
		return 0;
	case OPT_TCP:
		ctl->tcp = arg;
		return 0;
	case OPT_TOKEN_FILE:
		ctl->token_file = arg;
		return 0;
	case OPT_JSON:
		ctl->json = true;
		return 0;
	case OPT_TIMEOUT:
		if (parse_double(cmd, "--timeout", arg, &s) != 0)
			return QUAL_EXIT_USAGE;
		if (!(s > 0 && s <= INT_MAX / 1000))
			return usage_error(cmd, "--timeout must be a number of seconds > 0, got '%s'", arg);
		ctl->timeout_ms = (int)ceil(s * 1000);
		return 0;
	}
	return -1;
}

/* A command's own options: take() gets each (getopt's value and argument)
 * and returns 0 or an exit status. */
typedef int (*take_fn)(void *st, const struct command *cmd, int opt, const char *arg);

/* Parses argv (argv[0] is the command's name) into ctl and, through take,
 * the command's state. Returns -1 to go on with the operands at
 * argv[*first..argc), or the exit status to end with (0 after --help). */
static int parse_args(struct ctl *ctl, const struct command *cmd, int argc, char **argv,
		      const struct option *own, take_fn take, void *st, int *first)
{
	struct option all[NCOMMON + MAX_OWN + 1];
	size_t n = 0;
	int opt, rc;

	memset(all, 0, sizeof all);
	for (; own && own[n].name; n++)
		all[n] = own[n];
	memcpy(all + n, common_opts, sizeof common_opts);
	optind = 0; /* GNU: start afresh, and permute: options may follow operands */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", all, NULL)) != -1) {
		switch (opt) {
		case 'h':
			command_usage(stdout, cmd);
			return QUAL_EXIT_PASS;
		case ':':
			return usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
		case '?':
			return usage_error(cmd, "unknown option '%s'", unknown_option(argv));
		default:
			rc = take_common(ctl, cmd, opt, optarg);
			if (rc < 0)
				rc = take(st, cmd, opt, optarg);
			if (rc != 0)
				return rc;
		}
	}
	if (ctl->socket && ctl->tcp)
		return usage_error(cmd, "%s", "--socket and --tcp each choose the daemon: give one");
	*first = optind;
	return -1;
}

static int take_nothing(void *st, const struct command *cmd, int opt, const char *arg)
{
	(void)st;
	(void)opt;
	(void)arg;
	fprintf(stderr, "qualctl %s: unexpected option\n", cmd->name);
	return QUAL_EXIT_USAGE;
}

static int ctl_auth(struct ctl *ctl);

/* Connects as the options and the environment say (over TCP, then
 * authenticates with the token when one is given). Returns -1 when
 * connected, else the exit status: usage for an address that cannot be one
 * or a refused token, no-daemon when nothing answers. */
static int ctl_connect(struct ctl *ctl)
{
	struct qual_msg msg;
	int rc;

	if (ctl->tcp)
		rc = conn_open_tcp(&ctl->conn, ctl->tcp, &msg);
	else
		rc = conn_open_unix(&ctl->conn,
				    conn_socket_path(ctl->socket, ctl->path_buf, sizeof ctl->path_buf),
				    &msg);
	if (rc == QUAL_EINVAL) {
		fprintf(stderr, "qualctl: %s\n", msg.text);
		return QUAL_EXIT_USAGE;
	}
	if (rc < 0) {
		fprintf(stderr, "qualctl: %s\n", msg.text);
		if (!ctl->tcp)
			fprintf(stderr, "qualctl: is quald running? --socket PATH or "
				"$QUAL_SOCKET names another socket\n");
		return QUAL_EXIT_NO_DAEMON;
	}
	/* From here a ^C ends a wait cleanly: a terminal's progress line is
	 * cleared and the job's fate is said. */
	conn_signals_catch();
	return ctl->tcp ? ctl_auth(ctl) : -1;
}

/* The fields of a line quald sent: the parsed object and, for --json, the
 * text exactly as it came. */
struct reply {
	json_t *obj;
	char *text;
	size_t len;
};

static void reply_release(struct reply *r)
{
	json_decref(r->obj);
	free(r->text);
	r->obj = NULL;
	r->text = NULL;
}

static const char *type_of(json_t *line)
{
	return json_string_value(json_object_get(line, "type"));
}

/* Reads one line within the reply timeout and parses it. Returns -1 with
 * the line in *r, or the exit status after saying what went wrong. */
static int read_reply_line(struct ctl *ctl, struct reply *r)
{
	struct qual_msg msg;
	json_error_t e;
	char *text;
	size_t len;
	int rc;

	rc = conn_read_line(&ctl->conn, ctl->timeout_ms, &text, &len, &msg);
	if (rc == CONN_LINE) {
		r->obj = json_loadb(text, len, 0, &e);
		if (!json_is_object(r->obj)) {
			fprintf(stderr, "qualctl: quald at %s sent a line that is not a json object: %s\n",
				ctl->conn.where, r->obj ? "another json value" : e.text);
			json_decref(r->obj);
			r->obj = NULL;
			return QUAL_EXIT_ERROR;
		}
		r->text = xmalloc(len + 1);
		memcpy(r->text, text, len + 1);
		r->len = len;
		return -1;
	}
	if (rc == CONN_INTERRUPTED) {
		fprintf(stderr, "qualctl: interrupted while waiting for quald at %s\n",
			ctl->conn.where);
		return QUAL_EXIT_ERROR;
	}
	if (rc == CONN_EOF) {
		fprintf(stderr, "qualctl: quald at %s closed the connection without a reply\n",
			ctl->conn.where);
		return QUAL_EXIT_NO_DAEMON;
	}
	if (rc == QUAL_ETIMEOUT) {
		fprintf(stderr, "qualctl: quald at %s did not answer within %g s\n",
			ctl->conn.where, ctl->timeout_ms / 1000.0);
		return QUAL_EXIT_NO_DAEMON;
	}
	fprintf(stderr, "qualctl: %s\n", msg.text);
	return QUAL_EXIT_ERROR;
}

/* Over TCP, quald wants {"op":"auth","token":...} first: the token is the
 * first line of --token-file, else of $QUAL_TOKEN_FILE. Without either,
 * nothing is sent and quald's refusal of the request says what is missing.
 * Returns -1 when authenticated (or nothing to send), else the exit status:
 * usage for an unreadable file or a refused token. */
static int ctl_auth(struct ctl *ctl)
{
	const char *path = ctl->token_file ? ctl->token_file : getenv("QUAL_TOKEN_FILE");
	char buf[4098], *p, *e;
	struct qual_msg msg;
	struct reply r = {0};
	json_t *req;
	size_t n;
	FILE *f;
	int rc;

	if (!path || !*path)
		return -1;
	f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "qualctl: cannot read the token file '%s': %s\n", path, strerror(errno));
		return QUAL_EXIT_USAGE;
	}
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = buf + strspn(buf, " \t\r\n");
	e = p + strcspn(p, "\r\n");
	while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*e = '\0';
	if (!*p) {
		fprintf(stderr, "qualctl: the token file '%s' holds no token\n", path);
		return QUAL_EXIT_USAGE;
	}
	req = json_pack("{s:s,s:s}", "op", "auth", "token", p);
	if (!req) {
		fprintf(stderr, "qualctl: the token in '%s' is not valid utf-8\n", path);
		return QUAL_EXIT_USAGE;
	}
	rc = conn_send(&ctl->conn, req, &msg);
	json_decref(req);
	if (rc < 0) {
		fprintf(stderr, "qualctl: %s\n", msg.text);
		return QUAL_EXIT_NO_DAEMON;
	}
	rc = read_reply_line(ctl, &r);
	if (rc >= 0)
		return rc;
	if (!type_of(r.obj) || strcmp(type_of(r.obj), "reply") != 0) {
		const char *m = json_string_value(json_object_get(r.obj, "message"));

		fprintf(stderr, "qualctl: quald refused the request: %s\n", m ? m : "(no message)");
		reply_release(&r);
		return QUAL_EXIT_USAGE;
	}
	reply_release(&r);
	return -1;
}

/* Connects, sends request (taken: released here) and reads its reply line
 * into *r. Returns -1 with the reply, or the exit status: a refusal is
 * printed and ends with QUAL_EXIT_USAGE (what quald refuses is the user's
 * input: a bad option value, a path that is no compiler, an unknown job). */
static int ctl_request(struct ctl *ctl, json_t *request, struct reply *r)
{
	struct qual_msg msg;
	int rc;

	json_object_set_new(request, "id", json_integer(1));
	rc = ctl_connect(ctl);
	if (rc >= 0)
		goto out;
	if (conn_send(&ctl->conn, request, &msg) < 0) {
		fprintf(stderr, "qualctl: %s\n", msg.text);
		rc = QUAL_EXIT_NO_DAEMON;
		goto out;
	}
	for (;;) {
		const char *type;

		rc = read_reply_line(ctl, r);
		if (rc >= 0)
			goto out;
		type = type_of(r->obj);
		if (type && strcmp(type, "refused") == 0) {
			const char *m = json_string_value(json_object_get(r->obj, "message"));
			fprintf(stderr, "qualctl: quald refused the request: %s\n",
				m ? m : "(no message)");
			reply_release(r);
			rc = QUAL_EXIT_USAGE;
			goto out;
		}
		if (type && strcmp(type, "reply") == 0) {
			rc = -1;
			goto out;
		}
		reply_release(r); /* not ours: no other lines come before it */
	}
out:
	json_decref(request);
	return rc;
}

static void print_raw(const struct reply *r)
{
	fwrite(r->text, 1, r->len, stdout);
	fputc('\n', stdout);
}

/* ---- the terminal's progress line ---- */

struct progress {
	bool on;      /* stdout is a terminal and not --json */
	bool shown;   /* a progress line is on the screen */
};

static void progress_clear(struct progress *p)
{
	if (p->shown)
		fputs("\r\033[K", stdout);
	p->shown = false;
}

static void progress_draw(struct progress *p, const struct view_job *v)
{
	struct winsize ws;
	char text[512];
	size_t width = 80;

	if (!p->on)
		return;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		width = ws.ws_col;
	view_progress(v, text, sizeof text, width);
	fputs("\r", stdout);
	fputs(text, stdout);
	fputs("\033[K", stdout); /* the rest of an older, longer line */
	p->shown = text[0] != '\0';
	fflush(stdout);
}

static bool stdout_is_terminal(const struct ctl *ctl)
{
	const char *term = getenv("TERM");

	return !ctl->json && isatty(STDOUT_FILENO) && !(term && strcmp(term, "dumb") == 0);
}

/* Follows job's lines on the connection until its verdict line, printing
 * them as --json or the plain lines and progress say, then the summary.
 * Returns the exit status of the verdict. Without a verdict (connection
 * lost, ^C) the job's outcome is unknown to us: QUAL_EXIT_ERROR. */
static int follow_job(struct ctl *ctl, const char *job, int position)
{
	struct progress prog = {.on = stdout_is_terminal(ctl)};
	struct view_job v;
	struct qual_msg msg;
	int status = QUAL_EXIT_ERROR;
	bool done = false;

	view_job_init(&v, job);
	v.position = position;
	while (!done) {
		json_error_t e;
		json_t *line;
		const char *type, *line_job;
		char *text;
		size_t len;
		int rc;

		progress_draw(&prog, &v);
		rc = conn_read_line(&ctl->conn, -1, &text, &len, &msg);
		if (rc != CONN_LINE) {
			progress_clear(&prog);
			fflush(stdout);
			if (rc == CONN_INTERRUPTED)
				fprintf(stderr, "qualctl: stopped following job %s; it goes on in quald "
					"('qualctl cancel %s' stops it)\n", job, job);
			else if (rc == CONN_EOF)
				fprintf(stderr, "qualctl: quald at %s closed the connection before job %s "
					"ended; its outcome is unknown ('qualctl show %s')\n",
					ctl->conn.where, job, job);
			else
				fprintf(stderr, "qualctl: %s; the outcome of job %s is unknown\n",
					msg.text, job);
			goto out;
		}
		line = json_loadb(text, len, 0, &e);
		type = type_of(line);
		line_job = json_string_value(json_object_get(line, "job"));
		if (!json_is_object(line) || !type) {
			progress_clear(&prog);
			fprintf(stderr, "qualctl: quald at %s sent a line that is not a qual line: %.80s\n",
				ctl->conn.where, text);
			json_decref(line);
			goto out;
		}
		if (!line_job || strcmp(line_job, job) != 0 || strcmp(type, "reply") == 0 ||
		    strcmp(type, "refused") == 0) {
			json_decref(line); /* not this job's line */
			continue;
		}
		if (ctl->json) {
			fwrite(text, 1, len, stdout);
			fputc('\n', stdout);
			view_job_take(&v, line, NULL, 0);
		} else {
			progress_clear(&prog);
			view_job_take(&v, line, stdout, 0);
		}
		done = strcmp(type, "verdict") == 0;
		json_decref(line);
		fflush(stdout);
	}
	progress_clear(&prog);
	if (!ctl->json)
		view_summary(stdout, &v);
	status = view_exit_status(json_string_value(json_object_get(v.verdict, "verdict")));
out:
	fflush(stdout);
	view_job_release(&v);
	return status;
}

/* ---- submit ---- */

enum {
	OPT_PAIRS = OPT_OWN,
	OPT_CASE,
	OPT_ALPHA,
	OPT_MARGIN,
	OPT_BASE_OPT,
	OPT_CAND_OPT,
	OPT_COMPILE_ONLY,
	OPT_COMPILE_TIMEOUT,
	OPT_SEED,
	OPT_NO_FOLLOW,
	OPT_AFTER,
	OPT_LIMIT,
};

struct submit_state {
	json_t *req;
	bool follow;
};

static void append_string(json_t *obj, const char *key, const char *s)
{
	json_t *a = json_object_get(obj, key);

	if (!a) {
		a = json_array();
		json_object_set_new(obj, key, a);
	}
	json_array_append_new(a, json_string(s));
}

static int take_submit(void *st, const struct command *cmd, int opt, const char *arg)
{
	struct submit_state *s = st;
	long n;
	double x;

	switch (opt) {
	case OPT_PAIRS:
	case OPT_SEED:
		if (parse_long(cmd, opt == OPT_PAIRS ? "--pairs" : "--seed", arg, 0, &n) != 0)
			return QUAL_EXIT_USAGE;
		json_object_set_new(s->req, opt == OPT_PAIRS ? "pairs" : "seed", json_integer(n));
		return 0;
	case OPT_ALPHA:
	case OPT_MARGIN:
		if (parse_double(cmd, opt == OPT_ALPHA ? "--alpha" : "--margin", arg, &x) != 0)
			return QUAL_EXIT_USAGE;
		json_object_set_new(s->req, opt == OPT_ALPHA ? "alpha" : "margin", json_real(x));
		return 0;
	case OPT_CASE:
		append_string(s->req, "cases", arg);
		return 0;
	case OPT_BASE_OPT:
		append_string(s->req, "baseline_options", arg);
		return 0;
	case OPT_CAND_OPT:
		append_string(s->req, "candidate_options", arg);
		return 0;
	case OPT_COMPILE_ONLY:
		json_object_set_new(s->req, "compile_only", json_true());
		return 0;
	case OPT_COMPILE_TIMEOUT:
		if (parse_double(cmd, "--compile-timeout", arg, &x) != 0)
			return QUAL_EXIT_USAGE;
		json_object_set_new(s->req, "compile_timeout", json_real(x));
		return 0;
	case OPT_NO_FOLLOW:
		s->follow = false;
		return 0;
	}
	return take_nothing(st, cmd, opt, arg);
}

/* The working directory as the shell names it ($PWD, symbolic links kept)
 * when that names the same directory, else getcwd()'s. New string or NULL. */
static char *working_directory(void)
{
	const char *pwd = getenv("PWD");
	struct stat a, b;

	if (pwd && pwd[0] == '/' && stat(pwd, &a) == 0 && stat(".", &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return xstrdup(pwd);
	return getcwd(NULL, 0);
}

/* path made absolute against our working directory, since quald's is
 * another. Symbolic links are kept, not resolved: the run records the name
 * the user gave ("path") and the engine adds the file it reached
 * ("real_path"). Returns a new string, or NULL with errno set. */
static char *absolute_path(const char *path)
{
	char *cwd, *abs;

	if (path[0] == '/')
		return xstrdup(path);
	while (path[0] == '.' && path[1] == '/') {
		path += 2;
		while (path[0] == '/')
			path++;
	}
	cwd = working_directory();
	if (!cwd)
		return NULL;
	if (asprintf(&abs, "%s%s%s", cwd, strcmp(cwd, "/") == 0 ? "" : "/", path) < 0)
		abs = NULL;
	free(cwd);
	return abs;
}

static int cmd_submit(struct ctl *ctl, int argc, char **argv)
{
	static const struct option own[] = {
		{"pairs", required_argument, NULL, OPT_PAIRS},
		{"case", required_argument, NULL, OPT_CASE},
		{"alpha", required_argument, NULL, OPT_ALPHA},
		{"margin", required_argument, NULL, OPT_MARGIN},
		{"baseline-opt", required_argument, NULL, OPT_BASE_OPT},
		{"candidate-opt", required_argument, NULL, OPT_CAND_OPT},
		{"compile-only", no_argument, NULL, OPT_COMPILE_ONLY},
		{"compile-timeout", required_argument, NULL, OPT_COMPILE_TIMEOUT},
		{"seed", required_argument, NULL, OPT_SEED},
		{"no-follow", no_argument, NULL, OPT_NO_FOLLOW},
		{NULL, 0, NULL, 0},
	};
	const struct command *cmd = command_find("submit");
	struct submit_state s = {.req = json_pack("{s:s}", "op", "submit"), .follow = true};
	struct reply r = {0};
	const char *job;
	char *path;
	int first, rc, position;

	rc = parse_args(ctl, cmd, argc, argv, own, take_submit, &s, &first);
	if (rc >= 0)
		goto out;
	if (argc - first != 2) {
		rc = usage_error(cmd, "%s", argc - first < 2 ?
				 "needs the baseline and the candidate library" :
				 "takes two libraries, the baseline and the candidate");
		goto out;
	}
	for (int k = 0; k < 2; k++) {
		if (!argv[first + k][0]) {
			rc = usage_error(cmd, "%s", "a library path is empty");
			goto out;
		}
		path = absolute_path(argv[first + k]);
		if (!path) {
			fprintf(stderr, "qualctl submit: cannot make '%s' absolute: %s\n",
				argv[first + k], strerror(errno));
			rc = QUAL_EXIT_USAGE;
			goto out;
		}
		json_object_set_new(s.req, k == 0 ? "baseline" : "candidate", json_string(path));
		free(path);
	}
	json_object_set_new(s.req, "follow", json_boolean(s.follow));
	rc = ctl_request(ctl, s.req, &r);
	s.req = NULL; /* taken */
	if (rc >= 0)
		goto out;
	job = json_string_value(json_object_get(r.obj, "job"));
	if (!job) {
		fprintf(stderr, "qualctl: quald at %s acknowledged the submit without a job id\n",
			ctl->conn.where);
		rc = QUAL_EXIT_ERROR;
		goto out;
	}
	if (!s.follow) {
		/* The job id alone, for scripts: job=$(qualctl submit --no-follow ...) */
		if (ctl->json)
			print_raw(&r);
		else
			printf("%s\n", job);
		rc = QUAL_EXIT_PASS;
		goto out;
	}
	position = (int)json_integer_value(json_object_get(r.obj, "position"));
	if (!ctl->json && !stdout_is_terminal(ctl)) {
		printf("job %s: queued, position %d\n", job, position);
		fflush(stdout);
	}
	rc = follow_job(ctl, job, position);
out:
	json_decref(s.req);
	reply_release(&r);
	return rc;
}

/* ---- watch ---- */

struct watch_state {
	const char *after_job; /* --after's argument, NULL when not given */
	long after_seq;
	bool has_seq;          /* it was JOB:SEQ, not JOB alone */
};

static int take_watch(void *st, const struct command *cmd, int opt, const char *arg)
{
	struct watch_state *w = st;
	const char *colon;
	char *end;

	if (opt != OPT_AFTER)
		return take_nothing(st, cmd, opt, arg);
	colon = strrchr(arg, ':');
	if (colon == arg || !*arg)
		return usage_error(cmd, "--after must be JOB or JOB:SEQ, got '%s'", arg);
	w->after_job = arg; /* cut at the colon by the caller */
	if (!colon)
		return 0; /* after the whole job */
	errno = 0;
	w->after_seq = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || w->after_seq < -1)
		return usage_error(cmd, "--after must be JOB or JOB:SEQ with SEQ >= -1, got '%s'", arg);
	w->has_seq = true;
	return 0;
}

/* The views of the jobs a watch has seen lines of, until their verdicts. */
struct watch_views {
	struct view_job **v;
	size_t n;
};

static struct view_job *watch_view(struct watch_views *w, const char *job)
{
	for (size_t i = 0; i < w->n; i++)
		if (strcmp(w->v[i]->job, job) == 0)
			return w->v[i];
	w->v = xrealloc(w->v, (w->n + 1) * sizeof *w->v);
	w->v[w->n] = xmalloc(sizeof **w->v);
	view_job_init(w->v[w->n], job);
	return w->v[w->n++];
}

static void watch_drop(struct watch_views *w, struct view_job *v)
{
	for (size_t i = 0; i < w->n; i++) {
		if (w->v[i] != v)
			continue;
		view_job_release(v);
		free(v);
		w->v[i] = w->v[--w->n];
		return;
	}
}

static int cmd_watch(struct ctl *ctl, int argc, char **argv)
{
	static const struct option own[] = {
		{"after", required_argument, NULL, OPT_AFTER},
		{NULL, 0, NULL, 0},
	};
	const struct command *cmd = command_find("watch");
	struct watch_state ws = {NULL, -1, false};
	struct watch_views views = {NULL, 0};
	struct reply r = {0};
	struct qual_msg msg;
	json_t *req;
	int first, rc;

	rc = parse_args(ctl, cmd, argc, argv, own, take_watch, &ws, &first);
	if (rc >= 0)
		return rc;
	if (first < argc)
		return usage_error(cmd, "takes no operands, got '%s'", argv[first]);
	req = json_pack("{s:s}", "op", "watch");
	if (ws.after_job) {
		size_t n = ws.has_seq ? (size_t)(strrchr(ws.after_job, ':') - ws.after_job)
				      : strlen(ws.after_job);
		json_object_set_new(req, "after_job", json_stringn(ws.after_job, n));
		if (ws.has_seq)
			json_object_set_new(req, "after_seq", json_integer(ws.after_seq));
	}
	rc = ctl_request(ctl, req, &r);
	if (rc >= 0)
		return rc;
	reply_release(&r);
	for (;;) {
		json_error_t e;
		json_t *line;
		const char *type, *job;
		char *text;
		size_t len;

		rc = conn_read_line(&ctl->conn, -1, &text, &len, &msg);
		if (rc == CONN_INTERRUPTED) {
			rc = QUAL_EXIT_PASS; /* how a watch ends */
			break;
		}
		if (rc == CONN_EOF) {
			fprintf(stderr, "qualctl: quald at %s closed the connection\n", ctl->conn.where);
			rc = QUAL_EXIT_NO_DAEMON;
			break;
		}
		if (rc < 0) {
			/* A read that failed or stopped mid-line: quald went
			 * away. Anything else (a line over the limit) is a
			 * broken stream. */
			fprintf(stderr, "qualctl: %s\n", msg.text);
			rc = rc == QUAL_EIO ? QUAL_EXIT_NO_DAEMON : QUAL_EXIT_ERROR;
			break;
		}
		line = json_loadb(text, len, 0, &e);
		type = type_of(line);
		job = json_string_value(json_object_get(line, "job"));
		if (type && job && strcmp(type, "reply") != 0 && strcmp(type, "refused") != 0) {
			struct view_job *v = watch_view(&views, job);
			if (ctl->json) {
				fwrite(text, 1, len, stdout);
				fputc('\n', stdout);
				view_job_take(v, line, NULL, 0);
			} else {
				view_job_take(v, line, stdout, VIEW_VERDICTS | VIEW_PREFIX);
			}
			if (strcmp(type, "verdict") == 0)
				watch_drop(&views, v);
			fflush(stdout);
		}
		json_decref(line);
	}
	while (views.n > 0)
		watch_drop(&views, views.v[0]);
	free(views.v);
	return rc;
}

/* ---- status, list, show, cancel, quarantine ---- */

/* A value of a reply as table text: strings as they are, null "-", times
 * (numbers of seconds since 1970, should quald send them so) in UTC. */
static void cell_text(json_t *x, char *buf, size_t len)
{
	if (json_is_string(x)) {
		snprintf(buf, len, "%s", json_string_value(x));
	} else if (json_is_integer(x)) {
		snprintf(buf, len, "%lld", (long long)json_integer_value(x));
	} else if (json_is_number(x)) {
		snprintf(buf, len, "%g", json_number_value(x));
	} else if (json_is_true(x) || json_is_false(x)) {
		snprintf(buf, len, "%s", json_is_true(x) ? "yes" : "no");
	} else if (!x || json_is_null(x)) {
		snprintf(buf, len, "-");
	} else {
		char *s = json_dumps(x, JSON_COMPACT);
		snprintf(buf, len, "%s", s ? s : "?");
		free(s);
	}
}

static void time_cell(json_t *x, char *buf, size_t len)
{
	if (json_is_number(x) && json_number_value(x) > 0) {
		time_t t = (time_t)json_number_value(x);
		struct tm tm;
		if (gmtime_r(&t, &tm) && strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) > 0)
			return;
	}
	cell_text(x, buf, len);
}

/* A slot's device: quald may say it with an ordinal, a name, an object
 * (name, ordinal) or null for a compile-only slot. */
static void device_cell(json_t *x, char *buf, size_t len)
{
	if (json_is_integer(x))
		snprintf(buf, len, "gpu %lld", (long long)json_integer_value(x));
	else if (!x || json_is_null(x))
		snprintf(buf, len, "none (compile only)");
	else if (json_is_object(x) && json_is_string(json_object_get(x, "name")))
		snprintf(buf, len, "%s", json_string_value(json_object_get(x, "name")));
	else
		cell_text(x, buf, len);
}

static void print_id_list(const char *what, json_t *ids)
{
	char cell[128];
	size_t i;

	printf("%s:", what);
	if (json_array_size(ids) == 0)
		printf(" none");
	for (i = 0; i < json_array_size(ids); i++) {
		cell_text(json_array_get(ids, i), cell, sizeof cell);
		printf(" %s", cell);
	}
	printf("\n");
}

/* A table of nrows x ncols cells of at most 1024 bytes, the last column not
 * padded. */
static void print_table(const char *const *head, int ncols, char (*cells)[1024], size_t nrows)
{
	size_t w[16] = {0};

	for (int k = 0; k < ncols; k++)
		w[k] = strlen(head[k]);
	for (size_t i = 0; i < nrows; i++)
		for (int k = 0; k < ncols; k++)
			if (strlen(cells[i * (size_t)ncols + (size_t)k]) > w[k])
				w[k] = strlen(cells[i * (size_t)ncols + (size_t)k]);
	for (int k = 0; k < ncols - 1; k++)
		printf("%-*s  ", (int)w[k], head[k]);
	printf("%s\n", head[ncols - 1]);
	for (size_t i = 0; i < nrows; i++) {
		for (int k = 0; k < ncols - 1; k++)
			printf("%-*s  ", (int)w[k], cells[i * (size_t)ncols + (size_t)k]);
		printf("%s\n", cells[i * (size_t)ncols + (size_t)(ncols - 1)]);
	}
}

static int cmd_status(struct ctl *ctl, int argc, char **argv)
{
	static const char *const head[] = {"slot", "device", "job"};
	const struct command *cmd = command_find("status");
	struct reply r = {0};
	json_t *slots;
	char (*cells)[1024];
	char v[128], sv[128];
	int first, rc;

	rc = parse_args(ctl, cmd, argc, argv, NULL, take_nothing, NULL, &first);
	if (rc >= 0)
		return rc;
	if (first < argc)
		return usage_error(cmd, "takes no operands, got '%s'", argv[first]);
	rc = ctl_request(ctl, json_pack("{s:s}", "op", "status"), &r);
	if (rc >= 0)
		return rc;
	if (ctl->json) {
		print_raw(&r);
		goto out;
	}
	cell_text(json_object_get(r.obj, "version"), v, sizeof v);
	cell_text(json_object_get(r.obj, "schema_version"), sv, sizeof sv);
	printf("quald %s (lines schema %s) at %s\n", v, sv, ctl->conn.where);
	slots = json_object_get(r.obj, "slots");
	cells = xcalloc(json_array_size(slots) * 3 + 1, sizeof *cells);
	for (size_t i = 0; i < json_array_size(slots); i++) {
		json_t *s = json_array_get(slots, i);
		json_t *job = json_object_get(s, "job");
		cell_text(json_object_get(s, "slot"), cells[i * 3], sizeof cells[0]);
		device_cell(json_object_get(s, "device"), cells[i * 3 + 1], sizeof cells[0]);
		if (!job || json_is_null(job))
			snprintf(cells[i * 3 + 2], sizeof cells[0], "idle");
		else
			cell_text(job, cells[i * 3 + 2], sizeof cells[0]);
	}
	print_table(head, 3, cells, json_array_size(slots));
	free(cells);
	print_id_list("running", json_object_get(r.obj, "running"));
	print_id_list("queued", json_object_get(r.obj, "queued"));
out:
	reply_release(&r);
	return QUAL_EXIT_PASS;
}

static int take_list(void *st, const struct command *cmd, int opt, const char *arg)
{
	if (opt != OPT_LIMIT)
		return take_nothing(st, cmd, opt, arg);
	return parse_long(cmd, "--limit", arg, 1, st);
}

static int cmd_list(struct ctl *ctl, int argc, char **argv)
{
	static const struct option own[] = {
		{"limit", required_argument, NULL, OPT_LIMIT},
		{NULL, 0, NULL, 0},
	};
	static const char *const head[] = {"job", "state", "verdict", "submitted",
					   "finished", "baseline", "candidate"};
	enum { NCOL = 7 };
	const struct command *cmd = command_find("list");
	struct reply r = {0};
	json_t *req, *jobs;
	char (*cells)[1024];
	long limit = -1;
	int first, rc;

	rc = parse_args(ctl, cmd, argc, argv, own, take_list, &limit, &first);
	if (rc >= 0)
		return rc;
	if (first < argc)
		return usage_error(cmd, "takes no operands, got '%s'", argv[first]);
	req = json_pack("{s:s}", "op", "list");
	if (limit > 0)
		json_object_set_new(req, "limit", json_integer(limit));
	rc = ctl_request(ctl, req, &r);
	if (rc >= 0)
		return rc;
	if (ctl->json) {
		print_raw(&r);
		goto out;
	}
	jobs = json_object_get(r.obj, "jobs");
	if (json_array_size(jobs) == 0) {
		printf("no jobs\n");
		goto out;
	}
	cells = xcalloc(json_array_size(jobs) * NCOL, sizeof *cells);
	for (size_t i = 0; i < json_array_size(jobs); i++) {
		json_t *j = json_array_get(jobs, i);
		for (int k = 0; k < NCOL; k++) {
			json_t *x = json_object_get(j, head[k]);
			char *cell = cells[i * NCOL + (size_t)k];
			if (k == 3 || k == 4)
				time_cell(x, cell, sizeof cells[0]);
			else
				cell_text(x, cell, sizeof cells[0]);
		}
	}
	print_table(head, NCOL, cells, json_array_size(jobs));
	free(cells);
out:
	reply_release(&r);
	return QUAL_EXIT_PASS;
}

static int cmd_show(struct ctl *ctl, int argc, char **argv)
{
	const struct command *cmd = command_find("show");
	struct reply r = {0}, line = {0};
	struct view_job v;
	const char *job, *state;
	json_int_t n;
	int first, rc;

	rc = parse_args(ctl, cmd, argc, argv, NULL, take_nothing, NULL, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 1)
		return usage_error(cmd, "%s", "needs one job id");
	rc = ctl_request(ctl, json_pack("{s:s,s:s}", "op", "show", "job", argv[first]), &r);
	if (rc >= 0)
		return rc;
	job = json_string_value(json_object_get(r.obj, "job"));
	state = json_string_value(json_object_get(r.obj, "state"));
	n = json_integer_value(json_object_get(r.obj, "lines"));
	view_job_init(&v, job ? job : argv[first]);
	if (!ctl->json)
		printf("job %s: %s, %lld lines\n", v.job, state ? state : "?", (long long)n);
	for (json_int_t i = 0; i < n; i++) {
		rc = read_reply_line(ctl, &line);
		if (rc >= 0) {
			fprintf(stderr, "qualctl: quald at %s sent %lld of the %lld lines of job %s\n",
				ctl->conn.where, (long long)i, (long long)n, v.job);
			goto out;
		}
		if (ctl->json)
			print_raw(&line);
		else
			view_job_take(&v, line.obj, stdout, 0);
		reply_release(&line);
	}
	if (!ctl->json && v.verdict)
		view_summary(stdout, &v);
	rc = QUAL_EXIT_PASS;
out:
	view_job_release(&v);
	reply_release(&r);
	return rc;
}

static int cmd_cancel(struct ctl *ctl, int argc, char **argv)
{
	const struct command *cmd = command_find("cancel");
	struct reply r = {0};
	const char *job, *state;
	int first, rc;

	rc = parse_args(ctl, cmd, argc, argv, NULL, take_nothing, NULL, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 1)
		return usage_error(cmd, "%s", "needs one job id");
	rc = ctl_request(ctl, json_pack("{s:s,s:s}", "op", "cancel", "job", argv[first]), &r);
	if (rc >= 0)
		return rc;
	job = json_string_value(json_object_get(r.obj, "job"));
	state = json_string_value(json_object_get(r.obj, "state"));
	if (ctl->json)
		print_raw(&r);
	else
		printf("job %s: %s\n", job ? job : argv[first], state ? state : "cancelled");
	reply_release(&r);
	return QUAL_EXIT_PASS;
}

/* quarantine list | clear SHA256: the libraries whose candidate runs
 * crashed (docs/quald.md). The hash is checked by quald, which refuses a
 * malformed one precisely; a refusal exits 4 like a usage error. */
static int cmd_quarantine(struct ctl *ctl, int argc, char **argv)
{
	static const char *const head[] = {"sha256", "strikes", "quarantined", "library",
					   "last"};
	enum { NCOL = 5 };
	const struct command *cmd = command_find("quarantine");
	struct reply r = {0};
	json_t *req, *list;
	char (*cells)[1024];
	const char *action, *sha;
	int first, rc;

	rc = parse_args(ctl, cmd, argc, argv, NULL, take_nothing, NULL, &first);
	if (rc >= 0)
		return rc;
	if (first >= argc)
		return usage_error(cmd, "%s", "needs an action: list or clear SHA256");
	action = argv[first];
	if (strcmp(action, "list") == 0) {
		if (argc - first != 1)
			return usage_error(cmd, "list takes no operands, got '%s'", argv[first + 1]);
		req = json_pack("{s:s,s:s}", "op", "quarantine", "action", "list");
	} else if (strcmp(action, "clear") == 0) {
		if (argc - first != 2)
			return usage_error(cmd, "%s", "clear needs one SHA256 (64 hex digits)");
		req = json_pack("{s:s,s:s,s:s}", "op", "quarantine", "action", "clear",
				"sha256", argv[first + 1]);
	} else {
		return usage_error(cmd, "unknown action '%s': list or clear", action);
	}
	rc = ctl_request(ctl, req, &r);
	if (rc >= 0)
		return rc;
	if (ctl->json) {
		print_raw(&r);
		goto out;
	}
	if (strcmp(action, "clear") == 0) {
		sha = json_string_value(json_object_get(r.obj, "sha256"));
		printf("cleared %s: its library may be submitted again\n",
		       sha ? sha : argv[first + 1]);
		goto out;
	}
	list = json_object_get(r.obj, "quarantine");
	if (json_array_size(list) == 0) {
		printf("no library has crashed\n");
		goto out;
	}
	cells = xcalloc(json_array_size(list) * NCOL, sizeof *cells);
	for (size_t i = 0; i < json_array_size(list); i++) {
		json_t *e = json_array_get(list, i);
		for (int k = 0; k < NCOL; k++) {
			json_t *x = json_object_get(e, head[k]);
			char *cell = cells[i * NCOL + (size_t)k];
			if (k == 0 && json_is_string(x)) /* 16 digits tell them apart */
				snprintf(cell, sizeof cells[0], "%.16s", json_string_value(x));
			else if (k == 4)
				time_cell(x, cell, sizeof cells[0]);
			else
				cell_text(x, cell, sizeof cells[0]);
		}
	}
	print_table(head, NCOL, cells, json_array_size(list));
	free(cells);
out:
	reply_release(&r);
	return QUAL_EXIT_PASS;
}

static int cmd_judge(struct ctl *ctl, int argc, char **argv)
{
	(void)ctl;
	return judge_cmd_main("qualctl judge", argc, argv);
}

static int cmd_help(struct ctl *ctl, int argc, char **argv);

static const struct command commands[] = {
	{"submit", cmd_submit, "submit BASE.so CAND.so [options]",
	 "Submits a qualification of the candidate compiler library against the\n"
	 "baseline and follows it: a progress line on a terminal, plain lines\n"
	 "otherwise, then a summary table (case, verdict, code, median ratio with\n"
	 "its interval, Holm-corrected p). Paths are made absolute here.\n"
	 "\n"
	 "  --pairs N             timed pairs per case (quald requires >= 30)\n"
	 "  --case NAME           qualify this case only (repeatable)\n"
	 "  --alpha A             significance level (0 < A <= 0.5)\n"
	 "  --margin M            equivalence margin on the ratio (0 <= M <= 0.5)\n"
	 "  --baseline-opt OPT    an extra compiler option for the baseline (repeatable)\n"
	 "  --candidate-opt OPT   an extra compiler option for the candidate (repeatable)\n"
	 "  --compile-only        compile and compare code only, time nothing\n"
	 "  --compile-timeout S   seconds each compile may take before it is killed\n"
	 "                        (default 120)\n"
	 "  --seed S              seed of the input data\n"
	 "  --no-follow           print the job id and exit 0\n"
	 COMMON_HELP
	 "\nExit status (the job's verdict): 0 improvement, neutral or not timed;\n"
	 "1 regression; 2 fail; 3 error, cancelled, interrupted, or the outcome\n"
	 "is unknown (connection lost, ^C); 4 usage, or quald refused the\n"
	 "submit; 5 quald cannot be reached.\n"},
	{"watch", cmd_watch, "watch [--after JOB[:SEQ]] [options]",
	 "Prints every job's lines as quald relays them, until interrupted: plain\n"
	 "lines prefixed by the job id, or the raw lines with --json.\n"
	 "\n"
	 "  --after JOB:SEQ       first the stored lines after that one (that job's\n"
	 "                        later lines, then every later job's); SEQ -1:\n"
	 "                        all of JOB's lines; --after JOB: the jobs after it\n"
	 COMMON_HELP
	 "\nExit status: 0 when interrupted (^C, SIGTERM); 4 usage or refused;\n"
	 "5 quald cannot be reached or went away.\n"},
	{"status", cmd_status, "status [options]",
	 "Shows quald's version, its worker slots and what runs in them, and the\n"
	 "queue.\n\n" COMMON_HELP EXIT_HELP},
	{"list", cmd_list, "list [--limit N] [options]",
	 "Lists jobs, newest first.\n\n"
	 "  --limit N             at most N jobs (quald's default 20, at most 1000)\n"
	 COMMON_HELP EXIT_HELP},
	{"show", cmd_show, "show JOB [options]",
	 "Shows a job's state and its stored lines (plain, with the summary table\n"
	 "once it has a verdict); --json prints the stored lines exactly.\n\n"
	 COMMON_HELP EXIT_HELP},
	{"cancel", cmd_cancel, "cancel JOB [options]",
	 "Cancels a queued or running job; its log ends with a cancelled verdict.\n\n"
	 COMMON_HELP EXIT_HELP},
	{"quarantine", cmd_quarantine, "quarantine (list | clear SHA256) [options]",
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
	 COMMON_HELP EXIT_HELP},
	{"judge", cmd_judge, "judge [--alpha A] [--margin M] [FILE]",
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
		   "3 error or cancelled); 4 usage; 5 quald cannot be reached.\n");
}

static int cmd_help(struct ctl *ctl, int argc, char **argv)
{
	const struct command *cmd;

	(void)ctl;
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
	command_usage(stdout, cmd);
	return QUAL_EXIT_PASS;
}

int main(int argc, char **argv)
{
	static const struct option global[] = {
		{"socket", required_argument, NULL, OPT_SOCKET},
		{"tcp", required_argument, NULL, OPT_TCP},
		{"token-file", required_argument, NULL, OPT_TOKEN_FILE},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	static const struct command global_cmd = {"", NULL, "", ""};
	struct ctl ctl;
	const struct command *cmd;
	int opt, rc;

	memset(&ctl, 0, sizeof ctl);
	ctl.timeout_ms = (int)(CTL_REPLY_TIMEOUT_S * 1000);
	conn_init(&ctl.conn);
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
				unknown_option(argv));
			return QUAL_EXIT_USAGE;
		default:
			if (take_common(&ctl, &global_cmd, opt, optarg) != 0)
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
	rc = cmd->run(&ctl, argc - optind, argv + optind);
	conn_release(&ctl.conn);
	if (fflush(stdout) != 0 && rc == QUAL_EXIT_PASS)
		rc = QUAL_EXIT_ERROR; /* a full disk must not pass for a verdict */
	return rc;
}
