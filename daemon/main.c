/* quald: the qualification service. Options, systemd integration and
 * signals; the server (server.h) and the jobs module (jobs.h) do the work.
 * See docs/quald.md. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <grp.h>
#include <pwd.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "common/confine.h"
#include "common/opts.h"
#include "common/exitcode.h"
#include "compile/rtc.h"
#include "daemon/jobs.h"
#include "daemon/policy.h"
#include "daemon/remote.h"
#include "daemon/sd.h"
#include "daemon/server.h"
#include "daemon/http.h"
#include "daemon/oplog.h"
#include "common/fsutil.h"
#include "common/text.h"
#include "common/xalloc.h"

#ifndef QUAL_VERSION
#define QUAL_VERSION "unknown"
#endif

#define DEFAULT_RUNTIME_DIR "/run/qual"
#define DEFAULT_STATE_DIR "/var/lib/qual"
#define SOCKET_NAME "quald.sock"
#define DEFAULT_JOB_TIMEOUT_S 7200.0
/* --backend slurm: Slurm jobs at once, unless --slurm-jobs says. */
#define DEFAULT_SLURM_JOBS 8
#define SUBMIT_CHECK_TIMEOUT_S 30.0
#define MAX_SLOTS 64
#define DEFAULT_GROUP "qual"

/* Reads the TCP token from path: its first line, without surrounding
 * whitespace. The file must be a regular file of mode 0640 or stricter
 * (no write for the group, nothing for others): the token is a password
 * for everyone who can reach 127.0.0.1, so a readable-by-all file would
 * hand it to every local user outside the allowed group. Returns a new
 * string or NULL after printing why. */
static char *read_token(const char *path)
{
	char buf[SERVER_MAX_TOKEN + 2], *p, *e, *tok = NULL;
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		oplog(LOG_ERR, "cannot read the token file '%s': %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		oplog(LOG_ERR, "the token file '%s' is not a regular file", path);
		goto out;
	}
	if (st.st_mode & 0137) {
		oplog(LOG_ERR, "the token file '%s' has mode %04o: it must be 0640 or "
			"stricter (chmod 0640 '%s')", path, (unsigned)(st.st_mode & 07777), path);
		goto out;
	}
	n = read(fd, buf, sizeof buf - 1);
	if (n < 0) {
		oplog(LOG_ERR, "cannot read the token file '%s': %s", path, strerror(errno));
		goto out;
	}
	buf[n] = '\0';
	p = buf + strspn(buf, " \t\r\n");
	e = p + strcspn(p, "\r\n");
	while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*e = '\0';
	if (!*p || n == (ssize_t)sizeof buf - 1) {
		oplog(LOG_ERR, "the token file '%s' must hold a token of 1 to %d bytes "
			"on its first line", path, SERVER_MAX_TOKEN);
		goto out;
	}
	tok = xstrdup(p);
out:
	close(fd);
	return tok;
}

/* What the command line gives quald: what its options set (options[]),
 * before the defaults are filled in. Strings are borrowed from argv. */
struct quald_args {
	struct server_config scfg;
	struct jobs_config jcfg;
	const char *socket_path, *state_dir, *worker, *helper, *http_listen;
	const char *token_file, *group;
	const char *http_hosts[HTTP_MAX_HOSTS];
	int nhttp_hosts;
	int devices[MAX_SLOTS], ndevices, slots;
	bool devices_auto;         /* --devices auto given */
	/* --backend slurm (docs/cluster.md): remote is jcfg.remote then. */
	bool slurm;
	int slurm_jobs;
	struct remote_config remote;
	bool help, version;
};

/* "0,1,3" into ordinals; no empty entries, no repeats. */
static int take_devices(void *ctx, const char *s, struct qual_msg *msg)
{
	struct quald_args *a = ctx;
	char *copy = xstrdup(s), *save = NULL, *tok;
	int n = 0, rc = QUAL_EINVAL;
	long x;

	a->devices_auto = strcmp(s, "auto") == 0;
	a->ndevices = 0;
	if (a->devices_auto) {
		free(copy);
		return 0;
	}
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_SLOTS) {
			qual_fail(msg, rc, "--devices lists more than %d devices", MAX_SLOTS);
			goto out;
		}
		if (text_parse_long("--devices entry", tok, 0, 1023, &x, msg) < 0)
			goto out;
		for (int i = 0; i < n; i++)
			if (a->devices[i] == x) {
				qual_fail(msg, rc, "--devices lists device %ld twice", x);
				goto out;
			}
		a->devices[n++] = (int)x;
	}
	if (n == 0) {
		qual_fail(msg, rc, "--devices must list at least one GPU ordinal, got '%s'", s);
		goto out;
	}
	a->ndevices = n;
	rc = 0;
out:
	free(copy);
	return rc;
}

static int take_auth_timeout(void *ctx, const char *s, struct qual_msg *msg)
{
	struct quald_args *a = ctx;
	double t;

	if (text_parse_double("--auth-timeout", s, 0.001, 3600, &t, msg) < 0)
		return QUAL_EINVAL;
	a->scfg.auth_timeout_ms = t * 1000 < 1 ? 1 : (int)(t * 1000);
	return 0;
}

static int take_client_buffer(void *ctx, const char *s, struct qual_msg *msg)
{
	struct quald_args *a = ctx;
	long x;

	if (text_parse_long("--client-buffer", s, SERVER_MIN_CLIENT_BUFFER, 1L << 40, &x,
			    msg) < 0)
		return QUAL_EINVAL;
	a->scfg.client_buffer = (size_t)x;
	return 0;
}

/* One more --http-host name; http_open checks its form. */
static int take_http_host(void *ctx, const char *s, struct qual_msg *msg)
{
	struct quald_args *a = ctx;

	if (a->nhttp_hosts == HTTP_MAX_HOSTS)
		return qual_fail(msg, QUAL_EINVAL, "--http-host is given more than %d times",
				 HTTP_MAX_HOSTS);
	a->http_hosts[a->nhttp_hosts++] = s;
	return 0;
}

static int take_group(void *ctx, const char *s, struct qual_msg *msg)
{
	if (!*s)
		return qual_fail(msg, QUAL_EINVAL, "--group must name a group");
	((struct quald_args *)ctx)->group = s;
	return 0;
}

static int take_backend(void *ctx, const char *s, struct qual_msg *msg)
{
	struct quald_args *a = ctx;

	if (strcmp(s, "local") != 0 && strcmp(s, "slurm") != 0)
		return qual_fail(msg, QUAL_EINVAL, "--backend must be local or slurm, got '%s'", s);
	a->slurm = strcmp(s, "slurm") == 0;
	return 0;
}

static int take_compile_user(void *ctx, const char *s, struct qual_msg *msg)
{
	uid_t uid;
	gid_t gid;

	if (qual_confine_user(s, &uid, &gid, msg) < 0)
		return QUAL_EINVAL;
	/* Our own submit checks load the library too. */
	rtc_set_compile_user(true, uid, gid);
	((struct quald_args *)ctx)->jcfg.compile_user = s;
	return 0;
}

/* --compile-users FIRST-LAST: a uid of its own for each slot's compile
 * children and oracles (the first for quald's own submit checks), so that
 * those of different jobs cannot signal or read one another
 * (docs/service.md, "Trust model"). */
static int take_compile_users(void *ctx, const char *s, struct qual_msg *msg)
{
	struct jobs_config *jcfg = &((struct quald_args *)ctx)->jcfg;
	long first, last;
	char *end;

	errno = 0;
	first = strtol(s, &end, 10);
	if (end == s || *end != '-' || errno)
		return qual_fail(msg, QUAL_EINVAL, "--compile-users must be a range of uids "
				 "FIRST-LAST (e.g. 61000-61008), got '%s'", s);
	if (text_parse_long("--compile-users' last uid", end + 1, 1, 0x7ffffffe, &last,
			    msg) < 0)
		return QUAL_EINVAL;
	if (first < 1 || first > last || last - first >= MAX_SLOTS + 1)
		return qual_fail(msg, QUAL_EINVAL, "--compile-users '%s' must be FIRST-LAST with "
				 "0 < FIRST <= LAST and at most %d uids", s, MAX_SLOTS + 1);
	if (geteuid() != 0)
		return qual_fail(msg, QUAL_EINVAL, "--compile-users '%s' needs root: only root "
				 "may run children as another user", s);
	/* Another account's processes and files would be within reach of the
	 * compile children, and theirs within its. */
	for (long u = first; u <= last; u++) {
		struct passwd *pw = getpwuid((uid_t)u);

		if (pw)
			return qual_fail(msg, QUAL_EINVAL, "--compile-users '%s': uid %ld is user "
					 "'%s's; the range must be uids no account uses", s, u,
					 pw->pw_name);
	}
	/* Our own submit checks load the library too: the range's first. */
	rtc_set_compile_user(true, (uid_t)first, (gid_t)first);
	jcfg->compile_uid_first = (unsigned)first;
	jcfg->compile_uids = (int)(last - first + 1);
	return 0;
}

static int take_calibrate_lib(void *ctx, const char *s, struct qual_msg *msg)
{
	if (s[0] != '/')
		return qual_fail(msg, QUAL_EINVAL, "--calibrate-lib must be an absolute path, "
				 "got '%s'", s);
	((struct quald_args *)ctx)->jcfg.calibrate_lib = s;
	return 0;
}

#define AT(member) offsetof(struct quald_args, member)

/* quald's options, in the order --help lists them. */
static const struct opts_entry options[] = {
	{"socket", "PATH", OPTS_STRING, AT(socket_path), .help =
		"unix socket (default $RUNTIME_DIRECTORY/quald.sock,\n"
		"else " DEFAULT_RUNTIME_DIR "/" SOCKET_NAME ")"},
	{"tcp", "PORT", OPTS_INT, AT(scfg.tcp_port), 1, 65535, .help =
		"also listen on 127.0.0.1:PORT (needs --tcp-token-file)"},
	{"http", "ADDR:PORT|PATH", OPTS_STRING, AT(http_listen), .help =
		"serve the read-only dashboard, its API and\n"
		"/metrics over HTTP on a loopback address\n"
		"(127.0.0.1:8080, [::1]:8080, localhost:0) or a unix\n"
		"socket; who may connect as on --socket (docs/http.md)"},
	{"http-host", "NAME[:PORT]", OPTS_CALL, .fn = take_http_host, .help =
		"also answer http requests that name this Host (a\n"
		"reverse proxy's name; repeatable, at most 16); a\n"
		"Host other than the --http address, localhost and\n"
		"these gets 421 (docs/http.md)"},
	{"tcp-token-file", "PATH", OPTS_STRING, AT(token_file), .help =
		"the token TCP clients must send first; mode\n"
		"0640 or stricter"},
	{"group", "NAME", OPTS_CALL, .fn = take_group, .help =
		"members may use the unix socket, besides root and\n"
		"quald's user (default " DEFAULT_GROUP ")"},
	{"state-dir", "DIR", OPTS_STRING, AT(state_dir), .help =
		"job store (default $STATE_DIRECTORY, else " DEFAULT_STATE_DIR ")"},
	{"worker", "PATH", OPTS_STRING, AT(worker), .help = "qual-run (default: beside quald)"},
	{"compile-helper", "PATH", OPTS_STRING, AT(helper), .help =
		"qual-compile (default: beside quald)"},
	{"compile-user", "NAME", OPTS_CALL, .fn = take_compile_user, .help =
		"run the compile children, which load the libraries\n"
		"under test, as this unprivileged user (quald must\n"
		"run as root; docs/service.md, \"Trust model\")"},
	{"compile-users", "FIRST-LAST", OPTS_CALL, .fn = take_compile_users, .help =
		"the same with a uid of its own per slot (uid = gid,\n"
		"no account needed): FIRST for quald's submit checks,\n"
		"FIRST+1+N for slot N; jobs' compile children and\n"
		"oracles then cannot signal or read one another"},
	{"no-cache", NULL, OPTS_FLAG, AT(jcfg.no_cache), .help =
		"workers compile everything (default: they share\n"
		"the artifact cache STATE_DIR/cache)"},
	{"devices", "LIST|auto", OPTS_CALL, .fn = take_devices, .help =
		"GPU ordinals, one slot each (e.g. 0,1); auto (the\n"
		"default): every GPU that passes a health check at\n"
		"start, or one compile-only slot when none is found"},
	{"slots", "N", OPTS_INT, AT(slots), 1, MAX_SLOTS, .help =
		"compile-only slots instead of GPUs (not with --devices)"},
	{"backend", "local|slurm", OPTS_CALL, .fn = take_backend, .help =
		"where jobs run: this host's GPUs (local, the default)\n"
		"or one Slurm batch job each (docs/cluster.md)"},
	{"slurm-spool", "DIR", OPTS_STRING, AT(remote.spool), .help =
		"with --backend slurm: the spool on storage every node\n"
		"sees at the same path (default STATE_DIR/spool)"},
	{"slurm-partition", "NAME", OPTS_STRING, AT(remote.partition), .help =
		"with --backend slurm: the partition (default Slurm's)"},
	{"slurm-jobs", "N", OPTS_INT, AT(slurm_jobs), 1, MAX_SLOTS, .help =
		"with --backend slurm: Slurm jobs at once (default 8)"},
	{"slurm-bridge", "PATH", OPTS_STRING, AT(remote.bridge), .help =
		"with --backend slurm: qual-slurm (default: beside\n"
		"quald)"},
	{"job-timeout", "S", OPTS_REAL, AT(jcfg.job_timeout_s), 1, 1e7, .help =
		"seconds a job may run before it is killed (default 7200)"},
	{"calibrate-every", "H", OPTS_REAL, AT(jcfg.calibrate_every_h), 1e-6, 1e5, .help =
		"queue a calibration of each slot's device whose latest\n"
		"record is older than H hours (or missing), at start\n"
		"and then checked every minute (needs --calibrate-lib)"},
	{"calibrate-lib", "LIB", OPTS_CALL, .fn = take_calibrate_lib, .help =
		"the compiler library those calibrations run against\n"
		"itself (an absolute path, checked like a submit's)"},
	{"calibrate-runs", "N", OPTS_INT, AT(jcfg.calibrate_runs), 1, 100, .help =
		"A/A runs per scheduled calibration (default 10, 1-100)"},
	{"calibrator", "PATH", OPTS_STRING, AT(jcfg.calibrator), .help =
		"qual-calibrate (default: beside quald)"},
	{"keep-jobs", "N", OPTS_INT, AT(jcfg.keep_jobs), 1, 100000000, .help =
		"keep only the newest N finished jobs (default: all)"},
	{"keep-days", "D", OPTS_REAL, AT(jcfg.keep_days), 0.0001, 1e6, .help =
		"remove finished jobs that ended over D days ago\n"
		"(default: never); either removes the oldest first,\n"
		"at start and after each job ends, never a queued\n"
		"or running job nor the newest one"},
	/* Taken out of argv before the table is read (policy_args_take), which
	 * builds the whole list of roots in one place. */
	{"allow-root", "DIR", OPTS_LISTED, .help =
		"also accept compiler libraries under DIR (repeatable;\n"
		"always: /usr/lib, /usr/lib64, /usr/local, /opt and\n"
		"the tree quald runs from)"},
	{"client-buffer", "B", OPTS_CALL, .fn = take_client_buffer, .help =
		"bytes of output a client may leave unread before\n"
		"it is dropped (default 8388608)"},
	{"slow-grace-ms", "MS", OPTS_INT, AT(scfg.slow_grace_ms), 0, 3600000, .help =
		"how long a client may stay over --client-buffer\n"
		"before it is dropped (default 2000)"},
	{"max-connections", "N", OPTS_INT, AT(scfg.max_connections), 1, 1000000, .help =
		"unix connections at once, and apart from them\n"
		"authenticated tcp connections (default 1024)"},
	{"max-unauthenticated", "N", OPTS_INT, AT(scfg.max_unauth), 1, 1000000, .help =
		"tcp connections not yet authenticated at\n"
		"once; a new one closes the oldest (default 64)"},
	{"auth-timeout", "S", OPTS_CALL, .fn = take_auth_timeout, .help =
		"seconds a tcp client has to authenticate (default 10)"},
	{"max-watchers", "N", OPTS_INT, AT(scfg.max_watchers), 1, 1000000, .help =
		"watching connections at once (default 256)"},
	{"max-queued", "N", OPTS_INT, AT(scfg.max_queued), 1, 1000000, .help =
		"jobs waiting in the queue (default 1000)"},
	{"version", NULL, OPTS_FLAG, AT(version), .stop = true, .help =
		"print the version and exit"},
	{"help", NULL, OPTS_FLAG, AT(help), .stop = true, .help = "print this help and exit"},
};

#undef AT

static void usage(FILE *f)
{
	fprintf(f,
		"usage: quald [options]\n"
		"\n"
		"The qualification service: queues qualification jobs, runs each in a\n"
		"worker process (qual-run) on one GPU slot, stores their lines and\n"
		"streams them to clients (qualctl). See docs/quald.md.\n"
		"\n");
	opts_help(f, options, sizeof options / sizeof options[0], 23);
}

/* The first entry of a colon-separated systemd directory list
 * ($RUNTIME_DIRECTORY, $STATE_DIRECTORY), or NULL. */
static char *first_dir(const char *env)
{
	const char *e = getenv(env);
	size_t n;

	if (!e || !*e)
		return NULL;
	n = strcspn(e, ":");
	return n ? strndup(e, n) : NULL;
}

/* A program beside our own executable (the installed layout, and the build
 * tree's bin/ folder) that we may run, else NULL. */
static char *find_beside(const char *name)
{
	char *path = fs_beside_self(name);

	if (path && access(path, X_OK) != 0) {
		free(path);
		path = NULL;
	}
	return path;
}

/* The daemon's state while the loop runs. */
struct daemon {
	uv_loop_t loop;
	uv_signal_t sigterm, sigint, sighup;
	struct server *srv;
	struct http *http;       /* --http, or NULL; freed after the loop */
	bool http_closed;        /* its close is done: no more lines to it */
	struct sd_notifier sd;
	bool ready, stopping;
	char status[96];         /* the last STATUS= text */
};

static void notify(struct daemon *d, const char *state, bool may_block)
{
	struct qual_msg msg;

	if (sd_notify_send(&d->sd, state, may_block, &msg) < 0)
		oplog(LOG_ERR, "%s", msg.text);
}

static void on_status(void *ctx, int queued, int running)
{
	struct daemon *d = ctx;
	char text[128];

	snprintf(d->status, sizeof d->status, "%d queued, %d running", queued, running);
	if (!d->ready)
		return; /* sent with READY=1 */
	snprintf(text, sizeof text, "STATUS=%s", d->status);
	notify(d, text, false);
}

static void on_server_closed(void *ctx)
{
	struct daemon *d = ctx;

	d->srv = NULL;
	uv_close((uv_handle_t *)&d->sigterm, NULL);
	uv_close((uv_handle_t *)&d->sigint, NULL);
	uv_close((uv_handle_t *)&d->sighup, NULL);
}

static const struct server_stats *daemon_server_stats(void *ctx)
{
	struct daemon *d = ctx;

	return d->srv ? server_stats(d->srv) : NULL;
}

static void on_line(void *ctx, const char *job, const struct line *line)
{
	struct daemon *d = ctx;

	if (d->http && !d->http_closed)
		http_on_line(d->http, job, line);
}

/* The HTTP endpoint goes first (its event streams end, its responses
 * finish), while the jobs module it reads is still open; then the server. */
static void on_http_closed(void *ctx)
{
	struct daemon *d = ctx;

	d->http_closed = true;
	server_close(d->srv, on_server_closed, d);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct daemon *d = h->data;

	if (d->stopping) {
		oplog(LOG_NOTICE, "%s: already stopping", strsignal(signum));
		return;
	}
	d->stopping = true;
	oplog(LOG_NOTICE, "%s: stopping", strsignal(signum));
	notify(d, "STOPPING=1\nSTATUS=stopping", true);
	if (d->http)
		http_close(d->http, on_http_closed, d);
	else
		server_close(d->srv, on_server_closed, d);
}

static void print_handle(uv_handle_t *h, void *arg)
{
	(void)arg;
	oplog(LOG_ERR, "handle still open at exit: %s%s",
		uv_handle_type_name(uv_handle_get_type(h)),
		uv_is_closing(h) ? " (closing)" : "");
}

/* Descriptors quald holds besides its connections: per slot a running
 * job's worker pipes and log and its slot's health check, and a margin for
 * the store, the listeners, the submit checks' children and libuv. */
#define FDS_PER_SLOT 16
#define FDS_MARGIN 64

/* Reads the command line into a (which holds the defaults). Returns -1 to
 * go on, else the exit status (--help, --version, a usage error).
 * --allow-root's list (a->jcfg.allow_roots) is a new array for
 * policy_roots_free. */
static int args_read(struct quald_args *a, int argc, char **argv)
{
	char **allow_roots;
	struct qual_msg msg = {{0}};
	int nallow_roots, first;

	/* Library policy (policy.h): --allow-root DIR, taken out of argv before
	 * the table is read; the defaults apply with or without it. */
	if (policy_args_take(&argc, argv, &allow_roots, &nallow_roots, &msg) < 0) {
		oplog(LOG_ERR, "%s", msg.text);
		return QUAL_EXIT_USAGE;
	}
	a->jcfg.allow_roots = (const char *const *)allow_roots;
	a->jcfg.nallow_roots = nallow_roots;
	first = opts_parse(options, sizeof options / sizeof options[0], argc, argv, a, &msg);
	if (first < 0) {
		oplog(LOG_ERR, "%s", msg.text);
		if (first == QUAL_ENOENT)
			usage(stderr);
		return QUAL_EXIT_USAGE;
	}
	if (a->version || a->help) {
		if (a->version)
			printf("quald %s\n", QUAL_VERSION);
		else
			usage(stdout);
		return QUAL_EXIT_PASS;
	}
	if (first < argc) {
		oplog(LOG_ERR, "unexpected argument '%s'", argv[first]);
		usage(stderr);
		return QUAL_EXIT_USAGE;
	}
	if (a->scfg.tcp_port >= 0 && !a->token_file) {
		oplog(LOG_ERR, "--tcp needs --tcp-token-file: tcp clients must "
			"authenticate with a token");
		return QUAL_EXIT_USAGE;
	}
	if (a->nhttp_hosts && !a->http_listen) {
		oplog(LOG_ERR, "--http-host needs --http: it names the http endpoint");
		return QUAL_EXIT_USAGE;
	}
	if (a->jcfg.compile_user && a->jcfg.compile_uids) {
		oplog(LOG_ERR, "--compile-user and --compile-users cannot be combined");
		return QUAL_EXIT_USAGE;
	}
	if (a->slots && (a->ndevices || a->devices_auto)) {
		oplog(LOG_ERR, "--slots and --devices cannot be combined: each device is one slot");
		return QUAL_EXIT_USAGE;
	}
	if (!a->slurm && (a->remote.spool || a->remote.partition || a->slurm_jobs ||
			  a->remote.bridge)) {
		oplog(LOG_ERR, "%s needs --backend slurm", a->remote.spool ? "--slurm-spool" :
		      a->remote.partition ? "--slurm-partition" : a->slurm_jobs ? "--slurm-jobs" :
		      "--slurm-bridge");
		return QUAL_EXIT_USAGE;
	}
	if (a->slurm && (a->slots || a->ndevices || a->devices_auto ||
			 a->jcfg.calibrate_every_h > 0)) {
		oplog(LOG_ERR, "--backend slurm takes no %s: Slurm gives each job its GPU",
		      a->slots ? "--slots" : a->jcfg.calibrate_every_h > 0 ? "--calibrate-every" :
		      "--devices");
		return QUAL_EXIT_USAGE;
	}
	if (a->jcfg.calibrate_every_h > 0 && !a->jcfg.calibrate_lib) {
		oplog(LOG_ERR, "--calibrate-every needs --calibrate-lib");
		return QUAL_EXIT_USAGE;
	}
	return -1;
}

/* What quald found or made for itself from its arguments; freed at exit. */
struct quald_owned {
	char *token, *socket_path, *state_dir, *worker, *helper, *spool, *bridge;
	int *listen_fds;
};

/* The token, the group, the paths not given (the environment's, else the
 * defaults, else beside quald) and the sockets systemd hands over. Returns
 * -1 to go on, else the exit status. */
static int args_settle(struct quald_args *a, struct quald_owned *o, struct daemon *d)
{
	struct server_config *scfg = &a->scfg;
	struct qual_msg msg = {{0}};
	struct group *gr;
	int nfds;

	if (a->token_file) {
		o->token = read_token(a->token_file);
		if (!o->token)
			return QUAL_EXIT_USAGE;
		scfg->tcp_token = o->token;
	}
	/* Resolved once, at start: a group created later needs a restart. */
	scfg->group_name = a->group;
	errno = 0;
	gr = getgrnam(a->group);
	if (gr) {
		scfg->has_group = true;
		scfg->allow_gid = (unsigned)gr->gr_gid;
	} else {
		oplog(LOG_WARNING, "group '%s' does not exist: only root and quald's "
			"user may use the socket", a->group);
	}
	if (a->socket_path) {
		o->socket_path = xstrdup(a->socket_path);
	} else {
		char *dir = first_dir("RUNTIME_DIRECTORY");

		if (asprintf(&o->socket_path, "%s/%s", dir ? dir : DEFAULT_RUNTIME_DIR,
			     SOCKET_NAME) < 0)
			abort();
		if (!dir && mkdir(DEFAULT_RUNTIME_DIR, 0755) < 0 && errno != EEXIST)
			oplog(LOG_ERR, "cannot create '%s': %s", DEFAULT_RUNTIME_DIR,
				strerror(errno));
		free(dir);
	}
	o->state_dir = a->state_dir ? xstrdup(a->state_dir) : first_dir("STATE_DIRECTORY");
	if (!o->state_dir)
		o->state_dir = xstrdup(DEFAULT_STATE_DIR);
	o->worker = a->worker ? xstrdup(a->worker) : find_beside("qual-run");
	if (!o->worker) {
		oplog(LOG_ERR, "cannot find qual-run beside quald: use --worker");
		return QUAL_EXIT_USAGE;
	}
	o->helper = a->helper ? xstrdup(a->helper) : find_beside("qual-compile");
	if (!o->helper) {
		oplog(LOG_ERR, "cannot find qual-compile beside quald: use --compile-helper");
		return QUAL_EXIT_USAGE;
	}

	if (a->slurm) {
		if (a->remote.spool)
			o->spool = xstrdup(a->remote.spool);
		else if (asprintf(&o->spool, "%s/spool", o->state_dir) < 0)
			abort();
		o->bridge = a->remote.bridge ? xstrdup(a->remote.bridge) :
			    find_beside("qual-slurm");
		if (!o->bridge) {
			oplog(LOG_ERR, "cannot find qual-slurm beside quald: use --slurm-bridge");
			return QUAL_EXIT_USAGE;
		}
		a->remote.spool = o->spool;
		a->remote.bridge = o->bridge;
		a->jcfg.remote = &a->remote;
	}

	/* Before anything can fork: the systemd variables are ours alone. */
	if (sd_notifier_init(&d->sd, &msg) < 0)
		oplog(LOG_ERR, "%s", msg.text);
	nfds = sd_listen_fds(&msg);
	if (nfds < 0) {
		oplog(LOG_ERR, "%s", msg.text);
		return QUAL_EXIT_USAGE;
	}
	if (nfds > 0) {
		o->listen_fds = xcalloc((size_t)nfds, sizeof *o->listen_fds);
		for (int i = 0; i < nfds; i++)
			o->listen_fds[i] = SD_LISTEN_FDS_START + i;
		scfg->listen_fds = o->listen_fds;
		scfg->nlisten_fds = nfds;
		oplog(LOG_INFO, "listening on %d socket%s from the service manager",
			nfds, nfds == 1 ? "" : "s");
	} else {
		scfg->socket_path = o->socket_path;
	}
	return -1;
}

/* The slots: --devices auto, the default unless --slots or a list says
 * otherwise, finds the GPUs by the worker's health check in children
 * (quald never loads a GPU runtime), before the loop runs. Then the jobs
 * module's configuration is complete. */
static void slots_settle(struct quald_args *a, const struct quald_owned *o,
			 struct daemon *d)
{
	struct jobs_config *jcfg = &a->jcfg;
	char no_gpu[PATH_MAX + 256] = ""; /* why detection found none */

	a->devices_auto |= !a->slots && !a->ndevices && !a->slurm;
	if (a->slurm)
		a->slots = a->slurm_jobs ? a->slurm_jobs : DEFAULT_SLURM_JOBS;
	if (a->devices_auto) {
		a->ndevices = jobs_find_gpus(o->worker, a->devices, MAX_SLOTS, no_gpu,
					     sizeof no_gpu);
		if (a->ndevices == 0)
			oplog(LOG_WARNING, "no GPU found (%s): compile-only slots", no_gpu);
	}
	jcfg->state_dir = o->state_dir;
	jcfg->worker = o->worker;
	jcfg->compile_helper = o->helper;
	jcfg->nslots = a->ndevices ? a->ndevices : (a->slots ? a->slots : 1);
	jcfg->devices = a->ndevices ? a->devices : NULL;
	jcfg->no_gpu_because = a->devices_auto ? "no GPU found: compile-only slots" :
			       "quald runs compile-only slots (--slots)";
	jcfg->submit_check_timeout_s = SUBMIT_CHECK_TIMEOUT_S;
	/* What a worker leaves behind is quald's to kill (children.h). */
	jcfg->adopt_orphans = true;
	a->scfg.jobs = jcfg;
	a->scfg.on_status = on_status;
	a->scfg.status_ctx = d;
}

/* --compile-users must give one uid per slot besides the submit checks'.
 * Returns -1, or QUAL_EXIT_USAGE after saying why. */
static int compile_users_enough(const struct jobs_config *jcfg)
{
	if (!jcfg->compile_uids || jcfg->compile_uids >= jcfg->nslots + 1)
		return -1;
	oplog(LOG_ERR, "--compile-users gives %d uid%s, but %d slot%s need %d: one for "
	      "quald's submit checks and one per slot", jcfg->compile_uids,
	      jcfg->compile_uids == 1 ? "" : "s", jcfg->nslots, jcfg->nslots == 1 ? "" : "s",
	      jcfg->nslots + 1);
	return QUAL_EXIT_USAGE;
}

/* Opens the HTTP endpoint (--http) and the server on d's loop, and the
 * signals that stop them. Returns 0, or -1 after saying why (and after
 * letting what was opened close). */
static int daemon_open(struct daemon *d, struct quald_args *a)
{
	struct qual_msg msg = {{0}};
	int rc;

	if (a->http_listen) {
		struct http_config hcfg = {
			.listen = a->http_listen,
			.rule = {a->scfg.has_group, a->scfg.allow_gid, a->scfg.group_name},
			.hosts = a->http_hosts,
			.nhosts = a->nhttp_hosts,
		};

		rc = http_open(&d->loop, &hcfg, &d->http, &msg);
		if (rc < 0) {
			oplog(LOG_ERR, "%s", msg.text);
			uv_run(&d->loop, UV_RUN_DEFAULT); /* let what was opened close */
			return -1;
		}
	}
	rc = server_open(&d->loop, &a->scfg, &d->srv, &msg);
	if (rc < 0) {
		oplog(LOG_ERR, "%s", msg.text);
		if (d->http)
			http_close(d->http, NULL, NULL);
		uv_run(&d->loop, UV_RUN_DEFAULT); /* let what was opened close */
		http_free(d->http);
		return -1;
	}
	if (d->http) {
		http_attach(d->http, server_jobs(d->srv), daemon_server_stats, d);
		server_set_line_hook(d->srv, on_line, d);
	}
	uv_signal_init(&d->loop, &d->sigterm);
	uv_signal_init(&d->loop, &d->sigint);
	uv_signal_init(&d->loop, &d->sighup);
	d->sigterm.data = d->sigint.data = d->sighup.data = d;
	uv_signal_start(&d->sigterm, on_signal, SIGTERM);
	uv_signal_start(&d->sigint, on_signal, SIGINT);
	/* SIGHUP (a closed terminal, a reload by hand) stops in order like
	 * SIGTERM: quald has nothing to reload, and the default action would
	 * leave the socket and a running job behind (docs/quald.md). */
	uv_signal_start(&d->sighup, on_signal, SIGHUP);
	return 0;
}

/* The operator's line that quald is up, and READY=1 for systemd. */
static void daemon_ready(struct daemon *d, const struct quald_args *a)
{
	const struct jobs_config *jcfg = &a->jcfg;
	char text[128];

	if (a->scfg.socket_path)
		fprintf(stderr, "quald %s: listening on '%s'", QUAL_VERSION, a->scfg.socket_path);
	else
		fprintf(stderr, "quald %s: listening", QUAL_VERSION);
	if (server_tcp_port(d->srv) > 0)
		fprintf(stderr, " and 127.0.0.1:%d", server_tcp_port(d->srv));
	if (d->http)
		fprintf(stderr, "; http on %s", http_where(d->http));
	if (a->slurm)
		fprintf(stderr, "; state in '%s'; up to %d slurm job%s at once, spool '%s'%s%s\n",
			jcfg->state_dir, jcfg->nslots, jcfg->nslots == 1 ? "" : "s",
			a->remote.spool, a->remote.partition ? ", partition " : "",
			a->remote.partition ? a->remote.partition : "");
	else
		fprintf(stderr, "; state in '%s'; %d %s slot%s%s\n", jcfg->state_dir,
			jcfg->nslots, a->ndevices ? "gpu" : "compile-only",
			jcfg->nslots == 1 ? "" : "s",
			!a->devices_auto ? "" : a->ndevices ? " (gpus found by --devices auto)" :
			" (no GPU found: compile-only slots)");
	snprintf(text, sizeof text, "READY=1\nSTATUS=%s", d->status);
	d->ready = true;
	notify(d, text, true);
}

/* Runs quald until a signal stops it; returns the exit status. */
static int daemon_run(struct daemon *d, struct quald_args *a)
{
	struct qual_msg msg = {{0}};
	int rc, status = QUAL_EXIT_ERROR;

	/* Room for the connection limits in the open file limit (server.h). */
	rc = server_fit_files(&a->scfg, a->jcfg.nslots * FDS_PER_SLOT + FDS_MARGIN +
			      (a->http_listen ? HTTP_MAX_CONNECTIONS * SERVER_FDS_PER_CONN +
			       HTTP_MAX_LINGER + 1 : 0), &msg);
	if (rc < 0) {
		oplog(LOG_ERR, "%s", msg.text);
		return QUAL_EXIT_ERROR;
	}
	if (rc > 0)
		oplog(LOG_ERR, "%s", msg.text);
	rc = uv_loop_init(&d->loop);
	if (rc < 0) {
		oplog(LOG_ERR, "cannot start the event loop: %s", uv_strerror(rc));
		return QUAL_EXIT_ERROR;
	}
	if (daemon_open(d, a) == 0) {
		daemon_ready(d, a);
		uv_run(&d->loop, UV_RUN_DEFAULT);
		http_free(d->http);
		status = QUAL_EXIT_PASS;
	}
	rc = uv_loop_close(&d->loop);
	if (rc != 0) {
		oplog(LOG_ERR, "the event loop did not close cleanly: %s",
			uv_strerror(rc));
		uv_walk(&d->loop, print_handle, NULL);
		status = QUAL_EXIT_ERROR;
	} else if (status == QUAL_EXIT_PASS) {
		oplog(LOG_NOTICE, "stopped");
	}
	return status;
}

int main(int argc, char **argv)
{
	struct quald_args a = {
		.scfg = {.tcp_port = -1, .slow_grace_ms = SERVER_DEFAULT_SLOW_GRACE_MS},
		.jcfg = {.job_timeout_s = DEFAULT_JOB_TIMEOUT_S},
		.group = DEFAULT_GROUP,
	};
	struct quald_owned o = {0};
	struct daemon d = {0};
	int status;

	/* Nothing a compile child runs may reach our descriptors or memory
	 * (confine.h). */
	qual_confine_nondumpable("quald");
	qual_confine_userns_probe("quald");

	status = args_read(&a, argc, argv);
	if (status < 0)
		status = args_settle(&a, &o, &d);
	if (status < 0) {
		slots_settle(&a, &o, &d);
		/* A client that goes away mid-write is an EPIPE, not a signal. */
		signal(SIGPIPE, SIG_IGN);
		status = compile_users_enough(&a.jcfg);
		if (status < 0)
			status = daemon_run(&d, &a);
	}
	free(o.listen_fds);
	free(o.socket_path);
	free(o.state_dir);
	free(o.worker);
	free(o.helper);
	free(o.spool);
	free(o.bridge);
	free(o.token);
	policy_roots_free((char **)a.jcfg.allow_roots);
	return status;
}
