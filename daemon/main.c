/* quald: the qualification service. Options, systemd integration and
 * signals; the server (server.h) and the jobs module (jobs.h) do the work.
 * See docs/quald.md. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "common/confine.h"
#include "common/exitcode.h"
#include "compile/rtc.h"
#include "daemon/jobs.h"
#include "daemon/policy.h"
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

static void usage(FILE *f)
{
	fprintf(f,
		"usage: quald [options]\n"
		"\n"
		"The qualification service: queues qualification jobs, runs each in a\n"
		"worker process (qual-run) on one GPU slot, stores their lines and\n"
		"streams them to clients (qualctl). See docs/quald.md.\n"
		"\n"
		"  --socket PATH        unix socket (default $RUNTIME_DIRECTORY/quald.sock,\n"
		"                       else " DEFAULT_RUNTIME_DIR "/" SOCKET_NAME ")\n"
		"  --tcp PORT           also listen on 127.0.0.1:PORT (needs --tcp-token-file)\n"
		"  --http ADDR:PORT|PATH  serve the read-only dashboard, its API and\n"
		"                       /metrics over HTTP on a loopback address\n"
		"                       (127.0.0.1:8080, [::1]:8080, localhost:0) or a unix\n"
		"                       socket; who may connect as on --socket (docs/http.md)\n"
		"  --tcp-token-file PATH  the token TCP clients must send first; mode\n"
		"                       0640 or stricter\n"
		"  --group NAME         members may use the unix socket, besides root and\n"
		"                       quald's user (default " DEFAULT_GROUP ")\n"
		"  --state-dir DIR      job store (default $STATE_DIRECTORY, else " DEFAULT_STATE_DIR ")\n"
		"  --worker PATH        qual-run (default: beside quald)\n"
		"  --compile-helper PATH  qual-compile (default: beside quald)\n"
		"  --compile-user NAME  run the compile children, which load the libraries\n"
		"                       under test, as this unprivileged user (quald must\n"
		"                       run as root; docs/service.md, \"Trust model\")\n"
		"  --no-cache           workers compile everything (default: they share\n"
		"                       the artifact cache STATE_DIR/cache)\n"
		"  --devices LIST|auto  GPU ordinals, one slot each (e.g. 0,1); auto (the\n"
		"                       default): every GPU that passes a health check at\n"
		"                       start, or one compile-only slot when none is found\n"
		"  --slots N            compile-only slots instead of GPUs (not with --devices)\n"
		"  --job-timeout S      seconds a job may run before it is killed (default 7200)\n"
		"  --calibrate-every H  queue a calibration of each slot's device whose latest\n"
		"                       record is older than H hours (or missing), at start\n"
		"                       and then checked every minute (needs --calibrate-lib)\n"
		"  --calibrate-lib LIB  the compiler library those calibrations run against\n"
		"                       itself (an absolute path, checked like a submit's)\n"
		"  --calibrate-runs N   A/A runs per scheduled calibration (default 10, 1-100)\n"
		"  --calibrator PATH    qual-calibrate (default: beside quald)\n"
		"  --keep-jobs N        keep only the newest N finished jobs (default: all)\n"
		"  --keep-days D        remove finished jobs that ended over D days ago\n"
		"                       (default: never); either removes the oldest first,\n"
		"                       at start and after each job ends, never a queued\n"
		"                       or running job nor the newest one\n"
		"  --allow-root DIR     also accept compiler libraries under DIR (repeatable;\n"
		"                       always: /usr/lib, /usr/lib64, /usr/local, /opt and\n"
		"                       the tree quald runs from)\n"
		"  --client-buffer B    bytes of output a client may leave unread before\n"
		"                       it is dropped (default 8388608)\n"
		"  --slow-grace-ms MS   how long a client may stay over --client-buffer\n"
		"                       before it is dropped (default 2000)\n"
		"  --max-connections N  unix connections at once, and apart from them\n"
		"                       authenticated tcp connections (default 1024)\n"
		"  --max-unauthenticated N  tcp connections not yet authenticated at\n"
		"                       once; a new one closes the oldest (default 64)\n"
		"  --auth-timeout S     seconds a tcp client has to authenticate (default 10)\n"
		"  --max-watchers N     watching connections at once (default 256)\n"
		"  --max-queued N       jobs waiting in the queue (default 1000)\n"
		"  --version            print the version and exit\n"
		"  --help               print this help and exit\n");
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

/* An option's number, or a usage message on stderr and -1. */
static int parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
	struct qual_msg msg;

	if (text_parse_long(opt, s, lo, hi, out, &msg) < 0) {
		oplog(LOG_ERR, "%s", msg.text);
		return -1;
	}
	return 0;
}

/* "0,1,3" into ordinals; no empty entries, no repeats. */
static int parse_devices(const char *s, int *dev, int max)
{
	char *copy = xstrdup(s), *save = NULL, *tok;
	int n = 0, rc = -1;
	long x;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max) {
			oplog(LOG_ERR, "--devices lists more than %d devices", max);
			goto out;
		}
		if (parse_long("--devices entry", tok, 0, 1023, &x) < 0)
			goto out;
		for (int i = 0; i < n; i++)
			if (dev[i] == x) {
				oplog(LOG_ERR, "--devices lists device %ld twice", x);
				goto out;
			}
		dev[n++] = (int)x;
	}
	if (n == 0) {
		oplog(LOG_ERR, "--devices must list at least one GPU ordinal, got '%s'", s);
		goto out;
	}
	rc = n;
out:
	free(copy);
	return rc;
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

static void on_line(void *ctx, const char *job, long seq, const char *line, size_t len,
		    bool verdict)
{
	struct daemon *d = ctx;

	if (d->http && !d->http_closed)
		http_on_line(d->http, job, seq, line, len, verdict);
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

enum {
	OPT_SOCKET = 256, OPT_TCP, OPT_STATE_DIR, OPT_WORKER, OPT_HELPER, OPT_DEVICES,
	OPT_SLOTS, OPT_JOB_TIMEOUT, OPT_CLIENT_BUFFER, OPT_VERSION, OPT_HELP,
	OPT_TOKEN_FILE, OPT_GROUP, OPT_SLOW_GRACE, OPT_MAX_CONNECTIONS, OPT_MAX_WATCHERS,
	OPT_MAX_QUEUED, OPT_MAX_UNAUTH, OPT_AUTH_TIMEOUT, OPT_COMPILE_USER, OPT_NO_CACHE,
	OPT_CALIBRATOR, OPT_CALIBRATE_EVERY, OPT_CALIBRATE_LIB, OPT_CALIBRATE_RUNS,
	OPT_KEEP_JOBS, OPT_KEEP_DAYS, OPT_HTTP,
};

/* Descriptors quald holds besides its connections: per slot a running
 * job's worker pipes and log and its slot's health check, and a margin for
 * the store, the listeners, the submit checks' children and libuv. */
#define FDS_PER_SLOT 16
#define FDS_MARGIN 64

/* An option that takes an integer: its range, and the int it sets. */
struct int_option {
	int opt;
	const char *name;
	long lo, hi;
	int *to;
};

/* When opt is one of the n in opts, parses arg into its int. Returns 1 when
 * it was one, 0 when not, -1 after saying why arg is not a value of it. */
static int int_option(const struct int_option *opts, size_t n, int opt, const char *arg)
{
	long x;

	for (size_t i = 0; i < n; i++) {
		if (opts[i].opt != opt)
			continue;
		if (parse_long(opts[i].name, arg, opts[i].lo, opts[i].hi, &x) < 0)
			return -1;
		*opts[i].to = (int)x;
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"socket", required_argument, NULL, OPT_SOCKET},
		{"tcp", required_argument, NULL, OPT_TCP},
		{"state-dir", required_argument, NULL, OPT_STATE_DIR},
		{"worker", required_argument, NULL, OPT_WORKER},
		{"compile-helper", required_argument, NULL, OPT_HELPER},
		{"devices", required_argument, NULL, OPT_DEVICES},
		{"slots", required_argument, NULL, OPT_SLOTS},
		{"job-timeout", required_argument, NULL, OPT_JOB_TIMEOUT},
		{"client-buffer", required_argument, NULL, OPT_CLIENT_BUFFER},
		{"tcp-token-file", required_argument, NULL, OPT_TOKEN_FILE},
		{"group", required_argument, NULL, OPT_GROUP},
		{"compile-user", required_argument, NULL, OPT_COMPILE_USER},
		{"no-cache", no_argument, NULL, OPT_NO_CACHE},
		{"calibrator", required_argument, NULL, OPT_CALIBRATOR},
		{"calibrate-every", required_argument, NULL, OPT_CALIBRATE_EVERY},
		{"calibrate-lib", required_argument, NULL, OPT_CALIBRATE_LIB},
		{"calibrate-runs", required_argument, NULL, OPT_CALIBRATE_RUNS},
		{"keep-jobs", required_argument, NULL, OPT_KEEP_JOBS},
		{"http", required_argument, NULL, OPT_HTTP},
		{"keep-days", required_argument, NULL, OPT_KEEP_DAYS},
		{"slow-grace-ms", required_argument, NULL, OPT_SLOW_GRACE},
		{"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
		{"max-watchers", required_argument, NULL, OPT_MAX_WATCHERS},
		{"max-queued", required_argument, NULL, OPT_MAX_QUEUED},
		{"max-unauthenticated", required_argument, NULL, OPT_MAX_UNAUTH},
		{"auth-timeout", required_argument, NULL, OPT_AUTH_TIMEOUT},
		{"version", no_argument, NULL, OPT_VERSION},
		{"help", no_argument, NULL, OPT_HELP},
		{NULL, 0, NULL, 0},
	};
	struct server_config scfg = {.tcp_port = -1,
				     .slow_grace_ms = SERVER_DEFAULT_SLOW_GRACE_MS};
	const char *token_file = NULL, *group = DEFAULT_GROUP;
	char *token = NULL;
	struct group *gr;
	struct jobs_config jcfg = {0};
	char *socket_path = NULL, *state_dir = NULL, *worker = NULL, *helper = NULL, **path;
	char *http_listen = NULL;
	int devices[MAX_SLOTS], ndevices = 0, *listen_fds = NULL;
	int slots = 0;
	bool devices_auto = false; /* --devices auto given */
	char no_gpu[PATH_MAX + 256] = ""; /* why detection found none */
	long x;
	double job_timeout = DEFAULT_JOB_TIMEOUT_S;
	struct daemon d = {0};
	struct qual_msg msg = {{0}};
	int rc, opt, nfds, status = QUAL_EXIT_ERROR;
	const struct int_option ints[] = {
		{OPT_TCP, "--tcp", 1, 65535, &scfg.tcp_port},
		{OPT_SLOTS, "--slots", 1, MAX_SLOTS, &slots},
		{OPT_SLOW_GRACE, "--slow-grace-ms", 0, 3600000, &scfg.slow_grace_ms},
		{OPT_MAX_CONNECTIONS, "--max-connections", 1, 1000000, &scfg.max_connections},
		{OPT_MAX_WATCHERS, "--max-watchers", 1, 1000000, &scfg.max_watchers},
		{OPT_MAX_QUEUED, "--max-queued", 1, 1000000, &scfg.max_queued},
		{OPT_MAX_UNAUTH, "--max-unauthenticated", 1, 1000000, &scfg.max_unauth},
	};

	/* Nothing a compile child runs may reach our descriptors or memory
	 * (confine.h). */
	qual_confine_nondumpable("quald");
	qual_confine_userns_probe("quald");

	/* Library policy (policy.h): --allow-root DIR, taken out of argv before
	 * getopt sees it; the defaults apply with or without it. Static: kept
	 * (reachable) until exit. */
	{
		static char **allow_roots;
		int nallow_roots;

		if (policy_args_take(&argc, argv, &allow_roots, &nallow_roots, &msg) < 0) {
			oplog(LOG_ERR, "%s", msg.text);
			return QUAL_EXIT_USAGE;
		}
		jcfg.allow_roots = (const char *const *)allow_roots;
		jcfg.nallow_roots = nallow_roots;
	}
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		rc = int_option(ints, sizeof ints / sizeof ints[0], opt, optarg);
		if (rc < 0)
			goto usage;
		if (rc > 0)
			continue;
		/* The options that name a file; the last one given counts. */
		path = opt == OPT_SOCKET ? &socket_path : opt == OPT_STATE_DIR ? &state_dir :
		       opt == OPT_WORKER ? &worker : opt == OPT_HELPER ? &helper :
		       opt == OPT_HTTP ? &http_listen : NULL;
		if (path) {
			free(*path);
			*path = xstrdup(optarg);
			continue;
		}
		switch (opt) {
		case OPT_DEVICES:
			devices_auto = strcmp(optarg, "auto") == 0;
			ndevices = devices_auto ? 0 : parse_devices(optarg, devices, MAX_SLOTS);
			if (ndevices < 0)
				goto usage;
			break;
		case OPT_JOB_TIMEOUT:
			if (text_parse_double("--job-timeout", optarg, 1, 1e7, &job_timeout,
					      &msg) < 0) {
				oplog(LOG_ERR, "%s", msg.text);
				goto usage;
			}
			break;
		case OPT_AUTH_TIMEOUT: {
			double t;

			if (text_parse_double("--auth-timeout", optarg, 0.001, 3600, &t, &msg) < 0) {
				oplog(LOG_ERR, "%s", msg.text);
				goto usage;
			}
			scfg.auth_timeout_ms = t * 1000 < 1 ? 1 : (int)(t * 1000);
			break;
		}
		case OPT_CLIENT_BUFFER:
			if (parse_long("--client-buffer", optarg, SERVER_MIN_CLIENT_BUFFER,
				       1L << 40, &x) < 0)
				goto usage;
			scfg.client_buffer = (size_t)x;
			break;
		case OPT_TOKEN_FILE:
			token_file = optarg;
			break;
		case OPT_GROUP:
			if (!*optarg) {
				oplog(LOG_ERR, "--group must name a group");
				goto usage;
			}
			group = optarg;
			break;
		case OPT_COMPILE_USER: {
			uid_t uid;
			gid_t gid;

			if (qual_confine_user(optarg, &uid, &gid, &msg) < 0) {
				oplog(LOG_ERR, "%s", msg.text);
				goto usage;
			}
			/* Our own submit checks load the library too. */
			rtc_set_compile_user(true, uid, gid);
			jcfg.compile_user = optarg;
			break;
		}
		case OPT_NO_CACHE:
			jcfg.no_cache = true;
			break;
		case OPT_CALIBRATOR:
			jcfg.calibrator = optarg;
			break;
		case OPT_CALIBRATE_EVERY:
			if (text_parse_double("--calibrate-every", optarg, 1e-6, 1e5,
					      &jcfg.calibrate_every_h, &msg) < 0) {
				oplog(LOG_ERR, "%s", msg.text);
				goto usage;
			}
			break;
		case OPT_CALIBRATE_LIB:
			if (optarg[0] != '/') {
				oplog(LOG_ERR, "--calibrate-lib must be an absolute path, "
					"got '%s'", optarg);
				goto usage;
			}
			jcfg.calibrate_lib = optarg;
			break;
		case OPT_CALIBRATE_RUNS: {
			long runs;

			if (text_parse_long("--calibrate-runs", optarg, 1, 100, &runs, &msg) < 0) {
				oplog(LOG_ERR, "%s", msg.text);
				goto usage;
			}
			jcfg.calibrate_runs = (int)runs;
			break;
		}
		case OPT_KEEP_JOBS: {
			long n;

			if (text_parse_long("--keep-jobs", optarg, 1, 100000000, &n, &msg) < 0) {
				oplog(LOG_ERR, "%s", msg.text);
				goto usage;
			}
			jcfg.keep_jobs = (int)n;
			break;
		}
		case OPT_KEEP_DAYS:
			if (text_parse_double("--keep-days", optarg, 0.0001, 1e6, &jcfg.keep_days,
					      &msg) < 0) {
				oplog(LOG_ERR, "%s", msg.text);
				goto usage;
			}
			break;
		case OPT_VERSION:
			printf("quald %s\n", QUAL_VERSION);
			status = QUAL_EXIT_PASS;
			goto out;
		case OPT_HELP:
			usage(stdout);
			status = QUAL_EXIT_PASS;
			goto out;
		default:
			usage(stderr);
			goto usage;
		}
	}
	if (optind < argc) {
		oplog(LOG_ERR, "unexpected argument '%s'", argv[optind]);
		usage(stderr);
		goto usage;
	}
	if (scfg.tcp_port >= 0 && !token_file) {
		oplog(LOG_ERR, "--tcp needs --tcp-token-file: tcp clients must "
			"authenticate with a token");
		goto usage;
	}
	if (token_file) {
		token = read_token(token_file);
		if (!token)
			goto usage;
		scfg.tcp_token = token;
	}
	/* Resolved once, at start: a group created later needs a restart. */
	scfg.group_name = group;
	errno = 0;
	gr = getgrnam(group);
	if (gr) {
		scfg.has_group = true;
		scfg.allow_gid = (unsigned)gr->gr_gid;
	} else {
		oplog(LOG_WARNING, "group '%s' does not exist: only root and quald's "
			"user may use the socket", group);
	}
	if (slots && (ndevices || devices_auto)) {
		oplog(LOG_ERR, "--slots and --devices cannot be combined: each device is one slot");
		goto usage;
	}

	if (!socket_path) {
		char *dir = first_dir("RUNTIME_DIRECTORY");

		if (asprintf(&socket_path, "%s/%s", dir ? dir : DEFAULT_RUNTIME_DIR, SOCKET_NAME) < 0)
			abort();
		if (!dir && mkdir(DEFAULT_RUNTIME_DIR, 0755) < 0 && errno != EEXIST)
			oplog(LOG_ERR, "cannot create '%s': %s", DEFAULT_RUNTIME_DIR,
				strerror(errno));
		free(dir);
	}
	if (!state_dir && !(state_dir = first_dir("STATE_DIRECTORY")))
		state_dir = xstrdup(DEFAULT_STATE_DIR);
	if (!worker && !(worker = find_beside("qual-run"))) {
		oplog(LOG_ERR, "cannot find qual-run beside quald: use --worker");
		goto usage;
	}
	if (jcfg.calibrate_every_h > 0 && !jcfg.calibrate_lib) {
		oplog(LOG_ERR, "--calibrate-every needs --calibrate-lib");
		goto usage;
	}
	if (!helper && !(helper = find_beside("qual-compile"))) {
		oplog(LOG_ERR, "cannot find qual-compile beside quald: use --compile-helper");
		goto usage;
	}

	/* Before anything can fork: the systemd variables are ours alone. */
	if (sd_notifier_init(&d.sd, &msg) < 0)
		oplog(LOG_ERR, "%s", msg.text);
	nfds = sd_listen_fds(&msg);
	if (nfds < 0) {
		oplog(LOG_ERR, "%s", msg.text);
		goto usage;
	}
	if (nfds > 0) {
		listen_fds = xcalloc((size_t)nfds, sizeof *listen_fds);
		for (int i = 0; i < nfds; i++)
			listen_fds[i] = SD_LISTEN_FDS_START + i;
		scfg.listen_fds = listen_fds;
		scfg.nlisten_fds = nfds;
		oplog(LOG_INFO, "listening on %d socket%s from the service manager",
			nfds, nfds == 1 ? "" : "s");
	} else {
		scfg.socket_path = socket_path;
	}

	/* --devices auto, the default unless --slots or a list says otherwise:
	 * the GPUs are found by the worker's health check in children (quald
	 * never loads a GPU runtime), before the loop runs. */
	devices_auto |= !slots && !ndevices;
	if (devices_auto) {
		ndevices = jobs_find_gpus(worker, devices, MAX_SLOTS, no_gpu, sizeof no_gpu);
		if (ndevices == 0)
			oplog(LOG_WARNING, "no GPU found (%s): compile-only slots", no_gpu);
	}

	/* A client that goes away mid-write is an EPIPE, not a signal. */
	signal(SIGPIPE, SIG_IGN);

	jcfg.state_dir = state_dir;
	jcfg.worker = worker;
	jcfg.compile_helper = helper;
	jcfg.nslots = ndevices ? ndevices : (slots ? (int)slots : 1);
	jcfg.devices = ndevices ? devices : NULL;
	jcfg.no_gpu_because = devices_auto ? "no GPU found: compile-only slots" :
			      "quald runs compile-only slots (--slots)";
	jcfg.job_timeout_s = job_timeout;
	jcfg.submit_check_timeout_s = SUBMIT_CHECK_TIMEOUT_S;
	/* What a worker leaves behind is quald's to kill (children.h). */
	jcfg.adopt_orphans = true;
	scfg.jobs = &jcfg;
	scfg.on_status = on_status;
	scfg.status_ctx = &d;

	/* Room for the connection limits in the open file limit (server.h). */
	rc = server_fit_files(&scfg, jcfg.nslots * FDS_PER_SLOT + FDS_MARGIN +
			      (http_listen ? HTTP_MAX_CONNECTIONS + 1 : 0), &msg);
	if (rc < 0) {
		oplog(LOG_ERR, "%s", msg.text);
		goto out;
	}
	if (rc > 0)
		oplog(LOG_ERR, "%s", msg.text);

	rc = uv_loop_init(&d.loop);
	if (rc < 0) {
		oplog(LOG_ERR, "cannot start the event loop: %s", uv_strerror(rc));
		goto out;
	}
	if (http_listen) {
		struct http_config hcfg = {
			.listen = http_listen,
			.rule = {scfg.has_group, scfg.allow_gid, scfg.group_name},
		};

		rc = http_open(&d.loop, &hcfg, &d.http, &msg);
		if (rc < 0) {
			oplog(LOG_ERR, "%s", msg.text);
			uv_run(&d.loop, UV_RUN_DEFAULT); /* let what was opened close */
			goto close_loop;
		}
	}
	rc = server_open(&d.loop, &scfg, &d.srv, &msg);
	if (rc < 0) {
		oplog(LOG_ERR, "%s", msg.text);
		if (d.http)
			http_close(d.http, NULL, NULL);
		uv_run(&d.loop, UV_RUN_DEFAULT); /* let what was opened close */
		http_free(d.http);
		goto close_loop;
	}
	if (d.http) {
		http_attach(d.http, server_jobs(d.srv), daemon_server_stats, &d);
		server_set_line_hook(d.srv, on_line, &d);
	}
	uv_signal_init(&d.loop, &d.sigterm);
	uv_signal_init(&d.loop, &d.sigint);
	uv_signal_init(&d.loop, &d.sighup);
	d.sigterm.data = d.sigint.data = d.sighup.data = &d;
	uv_signal_start(&d.sigterm, on_signal, SIGTERM);
	uv_signal_start(&d.sigint, on_signal, SIGINT);
	/* SIGHUP (a closed terminal, a reload by hand) stops in order like
	 * SIGTERM: quald has nothing to reload, and the default action would
	 * leave the socket and a running job behind (docs/quald.md). */
	uv_signal_start(&d.sighup, on_signal, SIGHUP);

	if (scfg.socket_path)
		fprintf(stderr, "quald %s: listening on '%s'", QUAL_VERSION, scfg.socket_path);
	else
		fprintf(stderr, "quald %s: listening", QUAL_VERSION);
	if (server_tcp_port(d.srv) > 0)
		fprintf(stderr, " and 127.0.0.1:%d", server_tcp_port(d.srv));
	if (d.http)
		fprintf(stderr, "; http on %s", http_where(d.http));
	fprintf(stderr, "; state in '%s'; %d %s slot%s%s\n", state_dir, jcfg.nslots,
		ndevices ? "gpu" : "compile-only", jcfg.nslots == 1 ? "" : "s",
		!devices_auto ? "" : ndevices ? " (gpus found by --devices auto)" :
		" (no GPU found: compile-only slots)");
	{
		char text[128];

		snprintf(text, sizeof text, "READY=1\nSTATUS=%s", d.status);
		d.ready = true;
		notify(&d, text, true);
	}

	uv_run(&d.loop, UV_RUN_DEFAULT);
	http_free(d.http);
	status = QUAL_EXIT_PASS;
close_loop:
	rc = uv_loop_close(&d.loop);
	if (rc != 0) {
		oplog(LOG_ERR, "the event loop did not close cleanly: %s",
			uv_strerror(rc));
		uv_walk(&d.loop, print_handle, NULL);
		status = QUAL_EXIT_ERROR;
	} else if (status == QUAL_EXIT_PASS) {
		oplog(LOG_NOTICE, "stopped");
	}
	goto out;
usage:
	status = QUAL_EXIT_USAGE;
out:
	free(listen_fds);
	free(socket_path);
	free(http_listen);
	free(state_dir);
	free(worker);
	free(helper);
	free(token);
	return status;
}
