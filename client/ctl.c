/* What qualctl's commands share (ctl.h): the common options, a command's
 * option parse, and one request to quald with its reply. */
#include "client/ctl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "client/view.h"
#include "common/exitcode.h"
#include "common/text.h"
#include "common/xalloc.h"

static const struct option common_opts[] = {
	{.name = "socket", .has_arg = required_argument, .val = CTL_OPT_SOCKET},
	{.name = "tcp", .has_arg = required_argument, .val = CTL_OPT_TCP},
	{.name = "token-file", .has_arg = required_argument, .val = CTL_OPT_TOKEN_FILE},
	{.name = "timeout", .has_arg = required_argument, .val = CTL_OPT_TIMEOUT},
	{.name = "json", .has_arg = no_argument, .val = CTL_OPT_JSON},
	{.name = "json-out", .has_arg = required_argument, .val = CTL_OPT_JSON_OUT},
	{.name = "junit", .has_arg = required_argument, .val = CTL_OPT_JUNIT},
	{.name = "markdown", .has_arg = required_argument, .val = CTL_OPT_MARKDOWN},
	{.name = "help", .has_arg = no_argument, .val = 'h'},
};
#define NCOMMON (sizeof common_opts / sizeof common_opts[0])
_Static_assert(NCOMMON == CTL_NCOMMON, "CTL_NCOMMON counts the common options");
#define MAX_OWN 32

size_t ctl_common_options(struct option *opts, bool with_json)
{
	size_t n = 0;

	for (size_t i = 0; i < NCOMMON; i++)
		if (with_json || (common_opts[i].val != CTL_OPT_JSON &&
				  common_opts[i].val != CTL_OPT_JSON_OUT &&
				  common_opts[i].val != CTL_OPT_JUNIT &&
				  common_opts[i].val != CTL_OPT_MARKDOWN))
			opts[n++] = common_opts[i];
	return n;
}

void ctl_init(struct ctl *ctl)
{
	memset(ctl, 0, sizeof *ctl);
	ctl->timeout_ms = (int)(CTL_REPLY_TIMEOUT_S * 1000);
	conn_init(&ctl->conn);
}

void ctl_release(struct ctl *ctl)
{
	conn_release(&ctl->conn);
}

/* ---- options ---- */

/* A short option is optopt (its cluster, "-xy", may not have been stepped
 * over yet), a long one the argument before optind. */
const char *ctl_unknown_option(char **argv)
{
	static char shortopt[3];

	if (optopt) {
		snprintf(shortopt, sizeof shortopt, "-%c", optopt);
		return shortopt;
	}
	return argv[optind - 1];
}

void ctl_command_usage(FILE *f, const struct command *cmd)
{
	fprintf(f, "usage: qualctl %s\n\n%s", cmd->synopsis, cmd->help);
}

/* "qualctl" or "qualctl CMD", for messages. */
static const char *sep_of(const struct command *cmd)
{
	return *cmd->name ? " " : "";
}

int ctl_usage_error(const struct command *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "qualctl%s%s: ", sep_of(cmd), cmd->name);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see qualctl%s%s --help)\n", sep_of(cmd), cmd->name);
	return QUAL_EXIT_USAGE;
}

/* A number parser's message, as a usage error of cmd. */
static int number_error(const struct command *cmd, const struct qual_msg *msg)
{
	fprintf(stderr, "qualctl%s%s: %s\n", sep_of(cmd), cmd->name, msg->text);
	return QUAL_EXIT_USAGE;
}

int ctl_parse_long(const struct command *cmd, const char *opt, const char *s, long lo,
		   long *out)
{
	struct qual_msg msg;

	if (text_parse_long(opt, s, lo, LONG_MAX, out, &msg) < 0)
		return number_error(cmd, &msg);
	return 0;
}

int ctl_parse_double(const struct command *cmd, const char *opt, const char *s,
		     double *out)
{
	struct qual_msg msg;

	if (text_parse_double(opt, s, -INFINITY, INFINITY, out, &msg) < 0)
		return number_error(cmd, &msg);
	return 0;
}

int ctl_take_label(const struct command *cmd, json_t *labels, const char *arg)
{
	const char *eq = strchr(arg, '=');
	char *key;
	int rc = 0;

	if (!eq || eq == arg)
		return ctl_usage_error(cmd, "--label must be KEY=VALUE, got '%s'", arg);
	key = xmalloc((size_t)(eq - arg) + 1);
	memcpy(key, arg, (size_t)(eq - arg));
	key[eq - arg] = '\0';
	if (json_object_get(labels, key))
		rc = ctl_usage_error(cmd, "--label '%s' is given twice", key);
	else if (json_object_set_new(labels, key, json_string(eq + 1)) < 0)
		/* jansson takes UTF-8 only: no label is better than a lost one. */
		rc = ctl_usage_error(cmd, "--label '%s': the key and the value must be UTF-8",
				     key);
	free(key);
	return rc;
}

void ctl_labels_text(json_t *labels, char *buf, size_t len)
{
	const char *key;
	size_t used = 0;
	json_t *v;

	buf[0] = '\0';
	json_object_foreach(labels, key, v) {
		int k = snprintf(buf + used, len - used, "%s%s=%s", used ? " " : "", key,
				 json_is_string(v) ? json_string_value(v) : "?");

		if (k < 0 || (size_t)k >= len - used)
			break;
		used += (size_t)k;
	}
	if (!buf[0])
		snprintf(buf, len, "-");
}

int ctl_take_common(struct ctl *ctl, const struct command *cmd, int opt, const char *arg)
{
	/* The options that name where quald is. */
	const char **where = opt == CTL_OPT_SOCKET ? &ctl->socket :
			     opt == CTL_OPT_TCP ? &ctl->tcp :
			     opt == CTL_OPT_TOKEN_FILE ? &ctl->token_file : NULL;
	double s;

	if (where) {
		*where = arg;
		return 0;
	}
	if (opt == CTL_OPT_JSON) {
		ctl->json = true;
		return 0;
	}
	if (opt == CTL_OPT_JSON_OUT || opt == CTL_OPT_JUNIT || opt == CTL_OPT_MARKDOWN) {
		const char *name = opt == CTL_OPT_JSON_OUT ? "--json-out" :
				   opt == CTL_OPT_JUNIT ? "--junit" : "--markdown";

		/* The commands that follow one job to its verdict. */
		if (strcmp(cmd->name, "submit") != 0 && strcmp(cmd->name, "show") != 0 &&
		    strcmp(cmd->name, "wait") != 0)
			return ctl_usage_error(cmd, "%s is for submit, show and wait, which end "
					       "with a job's verdict", name);
		*(opt == CTL_OPT_JSON_OUT ? &ctl->rep.json_out :
		  opt == CTL_OPT_JUNIT ? &ctl->rep.junit : &ctl->rep.markdown) = arg;
		return 0;
	}
	if (opt != CTL_OPT_TIMEOUT)
		return -1;
	if (ctl_parse_double(cmd, "--timeout", arg, &s) != 0)
		return QUAL_EXIT_USAGE;
	if (!(s > 0 && s <= INT_MAX / 1000))
		return ctl_usage_error(cmd, "--timeout must be a number of seconds > 0, got '%s'",
				       arg);
	ctl->timeout_ms = (int)ceil(s * 1000);
	return 0;
}

int ctl_job_operand(struct ctl *ctl, const struct command *cmd, int argc, char **argv,
		    const char **job)
{
	int first, rc;

	rc = ctl_parse_args(ctl, cmd, argc, argv, NULL, ctl_take_nothing, NULL, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 1)
		return ctl_usage_error(cmd, "%s", "needs one job id");
	*job = argv[first];
	return -1;
}

int ctl_take_nothing(void *st, const struct command *cmd, int opt, const char *arg)
{
	(void)st;
	(void)opt;
	(void)arg;
	fprintf(stderr, "qualctl %s: unexpected option\n", cmd->name);
	return QUAL_EXIT_USAGE;
}

int ctl_parse_args(struct ctl *ctl, const struct command *cmd, int argc, char **argv,
		   const struct option *own, ctl_take_fn take, void *st, int *first)
{
	struct option all[NCOMMON + MAX_OWN + 1];
	size_t n = 0;
	int opt, rc;

	memset(all, 0, sizeof all);
	for (; own && own[n].name; n++) {
		if (n == MAX_OWN) {
			/* A command with more options than all[] holds: a
			 * programming error, caught by every test of it. */
			fprintf(stderr, "qualctl %s: more than %d options\n", cmd->name, MAX_OWN);
			abort();
		}
		all[n] = own[n];
	}
	ctl_common_options(all + n, true);
	optind = 0; /* GNU: start afresh, and permute: options may follow operands */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", all, NULL)) != -1) {
		switch (opt) {
		case 'h':
			ctl_command_usage(stdout, cmd);
			return QUAL_EXIT_PASS;
		case ':':
			return ctl_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
		case '?':
			return ctl_usage_error(cmd, "unknown option '%s'", ctl_unknown_option(argv));
		default:
			rc = ctl_take_common(ctl, cmd, opt, optarg);
			if (rc < 0)
				rc = take(st, cmd, opt, optarg);
			if (rc != 0)
				return rc;
		}
	}
	if (ctl->socket && ctl->tcp)
		return ctl_usage_error(cmd, "%s",
				       "--socket and --tcp each choose the daemon: give one");
	*first = optind;
	return -1;
}

int ctl_no_operands(const struct command *cmd, int argc, char **argv, int first)
{
	if (first < argc)
		return ctl_usage_error(cmd, "takes no operands, got '%s'", argv[first]);
	return -1;
}

/* ---- a request and its reply ---- */

void ctl_reply_release(struct reply *r)
{
	json_decref(r->obj);
	free(r->text);
	r->obj = NULL;
	r->text = NULL;
}

void ctl_print_raw(const struct reply *r)
{
	fwrite(r->text, 1, r->len, stdout);
	fputc('\n', stdout);
}

const char *ctl_type_of(json_t *line)
{
	return json_string_value(json_object_get(line, "type"));
}

int ctl_read_reply(struct ctl *ctl, struct reply *r)
{
	struct qual_msg msg;
	json_error_t e;
	char *text;
	size_t len;
	int rc;

	rc = conn_read_line(&ctl->conn, ctl->timeout_ms, &text, &len, &msg);
	if (rc == CONN_LINE) {
		r->obj = json_loadb(text, len, 0, &e);
		view_clean(r->obj); /* r->text keeps the raw line for --json */
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

/* A refusal (r is released): its message, and QUAL_EXIT_USAGE. */
static int refused(struct reply *r)
{
	const char *m = json_string_value(json_object_get(r->obj, "message"));

	fprintf(stderr, "qualctl: quald refused the request: %s\n", m ? m : "(no message)");
	ctl_reply_release(r);
	return QUAL_EXIT_USAGE;
}

/* Sends request (borrowed); -1 when sent, else the exit status. */
static int send_request(struct ctl *ctl, json_t *request)
{
	struct qual_msg msg;

	if (conn_send(&ctl->conn, request, &msg) < 0) {
		fprintf(stderr, "qualctl: %s\n", msg.text);
		return QUAL_EXIT_NO_DAEMON;
	}
	return -1;
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
	rc = send_request(ctl, req);
	json_decref(req);
	if (rc >= 0)
		return rc;
	rc = ctl_read_reply(ctl, &r);
	if (rc >= 0)
		return rc;
	if (!ctl_type_of(r.obj) || strcmp(ctl_type_of(r.obj), "reply") != 0)
		return refused(&r);
	ctl_reply_release(&r);
	return -1;
}

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

/* ctl_request, on the connection it opened when connect is false. */
static int request_on(struct ctl *ctl, json_t *request, struct reply *r, bool connect)
{
	int rc = -1;

	json_object_set_new(request, "id", json_integer(1));
	if (connect)
		rc = ctl_connect(ctl);
	if (rc < 0)
		rc = send_request(ctl, request);
	while (rc < 0) {
		const char *type;

		rc = ctl_read_reply(ctl, r);
		if (rc >= 0)
			break;
		type = ctl_type_of(r->obj);
		if (type && strcmp(type, "refused") == 0) {
			rc = refused(r);
			break;
		}
		if (type && strcmp(type, "reply") == 0)
			break;
		ctl_reply_release(r); /* not ours: no other lines come before it */
	}
	json_decref(request);
	return rc;
}

int ctl_request(struct ctl *ctl, json_t *request, struct reply *r)
{
	return request_on(ctl, request, r, true);
}

int ctl_request_again(struct ctl *ctl, json_t *request, struct reply *r)
{
	return request_on(ctl, request, r, false);
}
