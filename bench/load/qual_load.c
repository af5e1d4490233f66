/* The load benchmark of quald (bench/load/README.md): one quald on a
 * temporary socket and state directory with a fake worker (fake_worker.c),
 * 256 watchers of which half never read, 32 clients submitting 1,000
 * compile-only jobs at once; it measures quald's memory, the delay from a
 * worker's line to a reading watcher, and every line and job that did not
 * arrive.
 *
 * Everything on the client side runs on one libuv loop in this process, so
 * that the load generator costs as little CPU as possible next to quald on
 * a small machine: a reading watcher stamps each chunk it reads with
 * CLOCK_MONOTONIC and finds the few fields it needs by scanning, without
 * parsing the JSON (the fake worker puts "t_emit_ns" first; quald splices
 * "job" and "seq" in before the closing brace). The delay of a line is the
 * reading watcher's stamp minus the worker's "t_emit_ns": the time through
 * the worker's pipe, quald (parse, log append, an fsync at case_verdict and
 * verdict lines, the relay to 256 connections) and the socket, plus however
 * long this process took to get to that socket.
 *
 * Exit status 0 when nothing was lost (every acknowledged job ended with
 * exactly one verdict in its stored log and in every reading watcher's
 * stream, every reading watcher saw every line in order), 1 otherwise, 2 for
 * a bad command line or a setup failure. */
#include "bench/load/load.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/xalloc.h"

struct bench G;

int64_t load_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void load_die(const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	fprintf(stderr, "qual-load: %s\n", text);
	child_kill(&G.quald, SIGKILL);
	exit(2);
}

/* ---- phases ---- */

static void on_deadline(uv_timer_t *t)
{
	(void)t;
	fprintf(stderr, "qual-load: timed out after %g s\n", G.o.timeout_s);
	G.timed_out = true;
	load_finish();
}

static void settle_ask(uv_timer_t *t)
{
	struct lconn *c = G.status_conn;
	static const char req[] = "{\"op\":\"status\"}\n";
	uv_buf_t b = uv_buf_init((char *)req, sizeof req - 1);

	(void)t;
	if (!c || c->eof || uv_try_write((uv_stream_t *)&c->pipe, &b, 1) != (int)b.len)
		load_finish();
}

/* The stored states are checked once quald says no job is queued or
 * running. */
void load_settle(void)
{
	if (G.settling || G.finished)
		return;
	G.settling = true;
	G.t_end = load_now_ns();
	uv_timer_start(&G.settle_timer, settle_ask, 0, 20);
}

void load_finish(void)
{
	if (G.finished)
		return;
	G.finished = true;
	if (!G.settling)
		G.t_end = load_now_ns();
	uv_timer_stop(&G.settle_timer);
	load_rss_sample(&G.rss_timer);
	uv_timer_stop(&G.rss_timer);
	uv_timer_stop(&G.deadline);
	uv_stop(G.loop);
}

static void wait_for(bool (*done)(void), double seconds, const char *what)
{
	int64_t limit = load_now_ns() + (int64_t)(seconds * 1e9);

	while (!done()) {
		if (load_now_ns() > limit)
			load_die("timed out waiting for %s", what);
		uv_run(G.loop, UV_RUN_ONCE);
	}
}

static bool all_watching(void)
{
	return G.watch_replies == G.o.readers + G.o.idlers;
}

/* quald, with its stdout and stderr in its log; it is killed when qual-load
 * ends, however it ends. */
static void start_quald(void)
{
	char slots[32], cbuf[32];
	const char *argv[20];
	struct qual_msg msg;
	int k = 0, fd;

	snprintf(slots, sizeof slots, "%d", G.o.slots);
	argv[k++] = G.o.quald;
	argv[k++] = "--socket";
	argv[k++] = G.sock;
	argv[k++] = "--state-dir";
	argv[k++] = G.state;
	argv[k++] = "--worker";
	argv[k++] = G.o.worker;
	argv[k++] = "--compile-helper";
	argv[k++] = G.o.helper;
	argv[k++] = "--slots";
	argv[k++] = slots;
	if (G.o.client_buffer > 0) {
		snprintf(cbuf, sizeof cbuf, "%ld", G.o.client_buffer);
		argv[k++] = "--client-buffer";
		argv[k++] = cbuf;
	}
	argv[k] = NULL;
	fd = open(G.logpath, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		load_die("cannot create '%s': %s", G.logpath, strerror(errno));
	G.quald.argv = argv;
	G.quald.in = CHILD_INHERIT;
	G.quald.out = fd;
	G.quald.err = CHILD_TO_OUT;
	G.quald.die_with_parent = true;
	if (child_start(&G.quald, &msg) < 0)
		load_die("%s", msg.text);
	G.quald.argv = NULL; /* argv was ours only until it ran */
	close(fd);
}

/* Waits until quald answers on its socket. */
static void wait_listening(void)
{
	struct sockaddr_un sa;
	int64_t limit = load_now_ns() + 10 * (int64_t)1000000000;

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", G.sock);
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
			close(fd);
			return;
		}
		if (fd >= 0)
			close(fd);
		if (child_exited(&G.quald)) {
			child_reap(&G.quald, NULL);
			load_die("quald exited at start (see '%s')", G.logpath);
		}
		if (load_now_ns() > limit)
			load_die("quald does not answer on '%s'", G.sock);
		usleep(10000);
	}
}

static void usage(void)
{
	fputs("usage: qual-load --quald PATH --worker PATH --helper PATH --lines FILE\n"
	      "                 [--lib PATH] [--jobs N] [--submitters N] [--readers N]\n"
	      "                 [--idlers N] [--slots N] [--gap-us US] [--client-buffer BYTES]\n"
	      "                 [--no-gate] [--timeout S] [--keep] [--tmp DIR] [--hold S]\n",
	      stderr);
	exit(2);
}

static void parse_args(int argc, char **argv)
{
	static const struct option longs[] = {
		{"quald", 1, 0, 'q'}, {"worker", 1, 0, 'w'}, {"helper", 1, 0, 'h'},
		{"lines", 1, 0, 'l'}, {"lib", 1, 0, 'L'}, {"jobs", 1, 0, 'j'},
		{"submitters", 1, 0, 's'}, {"readers", 1, 0, 'r'}, {"idlers", 1, 0, 'i'},
		{"slots", 1, 0, 'S'}, {"gap-us", 1, 0, 'g'}, {"client-buffer", 1, 0, 'b'},
		{"no-gate", 0, 0, 'G'}, {"timeout", 1, 0, 't'}, {"keep", 0, 0, 'k'},
		{"tmp", 1, 0, 'T'}, {"hold", 1, 0, 'H'},
		{0, 0, 0, 0},
	};
	int ch;

	G.o.lib = "/usr/local/cuda/lib64/libnvrtc.so.13";
	G.o.jobs = 1000;
	G.o.submitters = 32;
	G.o.readers = 128;
	G.o.idlers = 128;
	G.o.slots = 4;
	G.o.gap_us = 1000;
	G.o.gate = true;
	G.o.timeout_s = 1800;
	G.o.tmp = "/tmp";
	while ((ch = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		switch (ch) {
		case 'q': G.o.quald = optarg; break;
		case 'w': G.o.worker = optarg; break;
		case 'h': G.o.helper = optarg; break;
		case 'l': G.o.lines = optarg; break;
		case 'L': G.o.lib = optarg; break;
		case 'j': G.o.jobs = atoi(optarg); break;
		case 's': G.o.submitters = atoi(optarg); break;
		case 'r': G.o.readers = atoi(optarg); break;
		case 'i': G.o.idlers = atoi(optarg); break;
		case 'S': G.o.slots = atoi(optarg); break;
		case 'g': G.o.gap_us = atol(optarg); break;
		case 'b': G.o.client_buffer = atol(optarg); break;
		case 'G': G.o.gate = false; break;
		case 't': G.o.timeout_s = atof(optarg); break;
		case 'k': G.o.keep = true; break;
		case 'T': G.o.tmp = optarg; break;
		case 'H': G.o.hold_s = atof(optarg); break;
		default: usage();
		}
	}
	if (optind != argc || !G.o.quald || !G.o.worker || !G.o.helper || !G.o.lines ||
	    G.o.jobs < 1 || G.o.submitters < 1 || G.o.readers < 1 || G.o.idlers < 0 ||
	    G.o.slots < 1 || G.o.gap_us < 0)
		usage();
}

static char *abspath(const char *p)
{
	char *r = realpath(p, NULL);

	if (!r)
		load_die("cannot find '%s': %s", p, strerror(errno));
	return r;
}

/* Stops quald with SIGTERM, or SIGKILL when it has not stopped 20 s later;
 * returns its wait status (-1, reported as 255, when it cannot be had). */
static int stop_quald(void)
{
	struct child_exit ex;

	child_kill(&G.quald, SIGTERM);
	if (child_wait(&G.quald, child_now() + 20, &ex) < 0) {
		fprintf(stderr, "qual-load: cannot wait for quald\n");
		return -1;
	}
	if (ex.timed_out)
		fprintf(stderr, "qual-load: quald did not stop on SIGTERM\n");
	return ex.status;
}

int main(int argc, char **argv)
{
	struct tally t = {0};
	char gapbuf[32];
	bool lost;

	t.wallclock = time(NULL);
	child_init(&G.quald);
	signal(SIGPIPE, SIG_IGN);
	parse_args(argc, argv);
	G.o.quald = abspath(G.o.quald);
	G.o.worker = abspath(G.o.worker);
	G.o.helper = abspath(G.o.helper);
	G.o.lines = abspath(G.o.lines);
	G.expect_lines = load_count_lines(G.o.lines, "{");
	if (G.expect_lines < 0)
		load_die("cannot open '%.200s': %s", G.o.lines, strerror(errno));
	G.acked_num = xcalloc((size_t)G.o.jobs, sizeof *G.acked_num);
	G.ack_ns = xcalloc((size_t)G.o.jobs, sizeof *G.ack_ns);

	if (snprintf(G.dir, sizeof G.dir, "%s/qual-load-XXXXXX", G.o.tmp) >= (int)sizeof G.dir)
		load_die("'%s' is too long a path for the socket", G.o.tmp);
	if (!mkdtemp(G.dir))
		load_die("mkdtemp: %s", strerror(errno));
	snprintf(G.sock, sizeof G.sock, "%s/quald.sock", G.dir);
	snprintf(G.state, sizeof G.state, "%s/state", G.dir);
	snprintf(G.gatefile, sizeof G.gatefile, "%s/gate", G.dir);
	snprintf(G.logpath, sizeof G.logpath, "%s/quald.log", G.dir);
	snprintf(gapbuf, sizeof gapbuf, "%ld", G.o.gap_us);
	setenv("QUAL_LOAD_LINES", G.o.lines, 1);
	setenv("QUAL_LOAD_GAP_US", gapbuf, 1);
	if (G.o.gate)
		setenv("QUAL_LOAD_GATE", G.gatefile, 1);
	else
		unsetenv("QUAL_LOAD_GATE");
	setenv("TMPDIR", G.dir, 1);

	/* Children's CPU from before (run.sh's compilers, when it execs us). */
	getrusage(RUSAGE_CHILDREN, &t.ru_before);
	t.load_start = load_avg1();
	G.loop = uv_default_loop();
	G.t0 = load_now_ns();
	start_quald();
	wait_listening();
	G.rss_idle = load_quald_kb("VmRSS:");
	uv_timer_init(G.loop, &G.rss_timer);
	uv_timer_start(&G.rss_timer, load_rss_sample, 0, RSS_PERIOD_MS);
	uv_timer_init(G.loop, &G.deadline);
	uv_timer_init(G.loop, &G.settle_timer);
	uv_timer_start(&G.deadline, on_deadline, (uint64_t)(G.o.timeout_s * 1000), 0);

	/* The watchers, reading and never reading interleaved. */
	for (int i = 0; i < G.o.readers + G.o.idlers; i++) {
		bool reader = i % 2 == 0 ? i / 2 < G.o.readers : i / 2 >= G.o.idlers;
		load_conn_open(reader ? K_READER : K_IDLER, i, "{\"op\":\"watch\"}\n");
	}
	wait_for(all_watching, 60, "the watch replies");
	G.drop_seen = xcalloc((size_t)(G.o.readers + G.o.idlers + G.o.submitters),
			      sizeof *G.drop_seen);
	G.t_watchers = load_now_ns();

	/* The submitters, all at once. */
	G.t_submit0 = load_now_ns();
	for (int i = 0; i < G.o.submitters; i++)
		load_conn_open(K_SUBMITTER, i, NULL);
	for (int i = 0; i < G.nconns; i++)
		if (G.conns[i]->kind == K_SUBMITTER)
			load_submit_next(G.conns[i]);
	if (!G.finished)
		uv_run(G.loop, UV_RUN_DEFAULT);

	/* The run is over. */
	load_tally(&t);
	for (int i = 0; i < G.nconns; i++)
		uv_close((uv_handle_t *)&G.conns[i]->pipe, load_conn_closed);
	uv_close((uv_handle_t *)&G.rss_timer, NULL);
	uv_close((uv_handle_t *)&G.deadline, NULL);
	uv_close((uv_handle_t *)&G.settle_timer, NULL);
	uv_run(G.loop, UV_RUN_DEFAULT);
	if (uv_loop_close(G.loop))
		fprintf(stderr, "qual-load: the loop did not close cleanly\n");

	if (G.o.hold_s > 0) {
		fprintf(stderr, "qual-load: quald (pid %d) stays up for %g s\n", (int)G.quald.pid,
			G.o.hold_s);
		usleep((useconds_t)(G.o.hold_s * 1e6));
	}
	t.quald_status = stop_quald();
	getrusage(RUSAGE_SELF, &t.ru_self);
	getrusage(RUSAGE_CHILDREN, &t.ru_children);

	lost = load_report(&t);
	if (G.o.keep || lost) {
		printf("\nkept: %s (quald's log: %s)\n", G.dir, G.logpath);
	} else {
		fs_rm_tree(G.dir);
		if (access(G.dir, F_OK) == 0)
			fprintf(stderr, "qual-load: cannot remove '%s'\n", G.dir);
	}
	return lost ? 1 : 0;
}
