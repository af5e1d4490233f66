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
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* RSS is sampled this often (ms): reading /proc/PID/status costs ~20 us. */
#define RSS_PERIOD_MS 10
#define READ_CHUNK (64u << 10)
/* Lines written this close to the drops of the never-reading watchers are
 * reported apart too (a drop frees that watcher's unsent writes on quald's
 * loop). */
#define DROP_WINDOW_NS 2000000000LL

enum kind { K_READER, K_IDLER, K_SUBMITTER };

struct lconn {
	uv_pipe_t pipe;
	enum kind kind;
	int index;
	bool got_reply, eof, closing;
	char eof_why[96];
	char *part;                /* an incomplete line carried to the next read */
	size_t part_len, part_cap;
	/* a reading watcher: per job number, the next seq expected, the
	 * distinct lines seen and the verdicts seen */
	int32_t *next_seq, *got;
	uint8_t *verdicts;
	int64_t *tsum;             /* sum of the job's t_emit_ns seen, to compare
				    * with its stored log */
	long cap_jobs;
	long lines, gaps, dups, after_verdict, unstamped, other, verdict_jobs;
	uint64_t bytes;
	bool complete;
	/* a submitter: the request in flight */
	uv_write_t wreq;
	char req[8192];
	int64_t t_sent;
	bool busy;
};

struct opts {
	const char *quald, *worker, *helper, *lines, *lib;
	int jobs, submitters, readers, idlers, slots;
	long gap_us;
	long client_buffer;        /* 0: quald's default */
	bool gate;
	double timeout_s;
	bool keep;
	const char *tmp;           /* where the temporary folder goes */
	double hold_s;             /* seconds to keep quald up after the run */
};

static struct bench {
	struct opts o;
	uv_loop_t *loop;
	/* short, so that every path made from them fits (a socket path has at
	 * most 107 bytes) */
	char dir[64], sock[96], state[96], gatefile[96], logpath[96];
	pid_t pid;
	int expect_lines;          /* lines per job in the template */
	struct lconn **conns;
	int nconns;
	/* phases */
	int watch_replies;
	int next_submit, acked, refused;
	long *acked_num;           /* job numbers, in ack order */
	int64_t *ack_ns;           /* ack latency of each */
	int readers_done;
	bool submitting_done, finished, timed_out;
	int64_t t0, t_watchers, t_submit0, t_acked, t_end;
	/* the delays: when each line was written, and how long it took */
	struct sample { int64_t t_emit, delay; } *delay;
	size_t ndelay, cap_delay;
	/* quald's memory, kB */
	uv_timer_t rss_timer, deadline;
	long rss_max, rss_idle, rss_queued, rss_end, hwm;
	int64_t t_rss_max;
	long *rss_series;          /* kB, one per RSS_PERIOD_MS */
	size_t nrss, cap_rss;
	int64_t delay_max;         /* and where it was */
	long delay_max_job, delay_max_seq;
	long queued_seen;          /* the status request's count of queued jobs */
	bool settling;             /* every verdict is in: waiting for quald to
				    * record every job's end (state.json is
				    * written when the worker has exited, after
				    * its verdict line went out) */
	uv_timer_t settle_timer;
	struct lconn *status_conn;
	/* when quald dropped the never-reading watchers (seen with
	 * POLLRDHUP, which a Unix socket reports once the peer has shut
	 * down, whatever is still unread), ns; 0 = none */
	int64_t t_drop_first, t_drop_last;
	int ndropped_seen;
	bool *drop_seen;
	char first_refusal[512];
} G;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("qual-load: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (G.pid > 0)
		kill(G.pid, SIGKILL);
	exit(2);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		die("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

/* A field "VmRSS:" or "VmHWM:" of /proc/PID/status, in kB; -1 when gone. */
static long proc_status_kb(pid_t pid, const char *field)
{
	char path[64], buf[4096];
	size_t flen = strlen(field);
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	for (char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, field, flen))
			return strtol(p + flen, NULL, 10);
	return -1;
}

/* quald's own CPU seconds (user + system) from /proc/PID/stat. */
static double proc_cpu_s(pid_t pid)
{
	char path[64], buf[2048], *p;
	unsigned long ut = 0, st = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	/* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt
	 * majflt cmajflt utime stime (fields 3 to 15) */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			 &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void idlers_poll(void)
{
	int64_t t = now_ns();

	if (!G.drop_seen || G.ndropped_seen == G.o.idlers)
		return;
	for (int i = 0; i < G.nconns; i++) {
		struct lconn *c = G.conns[i];
		struct pollfd pfd = {.events = POLLRDHUP};
		uv_os_fd_t fd;

		if (c->kind != K_IDLER || G.drop_seen[i] ||
		    uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0)
			continue;
		pfd.fd = fd;
		if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
			G.drop_seen[i] = true;
			G.ndropped_seen++;
			if (!G.t_drop_first)
				G.t_drop_first = t;
			G.t_drop_last = t;
		}
	}
}

static void rss_sample(uv_timer_t *t)
{
	long rss = proc_status_kb(G.pid, "VmRSS:");

	(void)t;
	if (G.nrss == G.cap_rss) {
		G.cap_rss = G.cap_rss ? 2 * G.cap_rss : 4096;
		G.rss_series = xrealloc(G.rss_series, G.cap_rss * sizeof *G.rss_series);
	}
	G.rss_series[G.nrss++] = rss;
	idlers_poll();
	if (rss > G.rss_max) {
		G.rss_max = rss;
		G.t_rss_max = now_ns();
	}
}

/* Parses decimal digits at p (up to end); -1 when there are none. */
static long long parse_digits(const char *p, const char *end, const char **stop)
{
	long long v = 0;
	const char *q = p;

	while (q < end && *q >= '0' && *q <= '9')
		v = v * 10 + (*q++ - '0');
	if (stop)
		*stop = q;
	return q == p ? -1 : v;
}

static void finish(void);
static void settle(void);

/* ---- reading watchers ---- */

static void reader_grow(struct lconn *c, long num)
{
	long cap = c->cap_jobs ? c->cap_jobs : 1024;

	while (cap <= num)
		cap *= 2;
	c->next_seq = xrealloc(c->next_seq, (size_t)cap * sizeof *c->next_seq);
	c->got = xrealloc(c->got, (size_t)cap * sizeof *c->got);
	c->verdicts = xrealloc(c->verdicts, (size_t)cap);
	c->tsum = xrealloc(c->tsum, (size_t)cap * sizeof *c->tsum);
	memset(c->tsum + c->cap_jobs, 0, (size_t)(cap - c->cap_jobs) * sizeof *c->tsum);
	memset(c->next_seq + c->cap_jobs, 0, (size_t)(cap - c->cap_jobs) * sizeof *c->next_seq);
	memset(c->got + c->cap_jobs, 0, (size_t)(cap - c->cap_jobs) * sizeof *c->got);
	memset(c->verdicts + c->cap_jobs, 0, (size_t)(cap - c->cap_jobs));
	c->cap_jobs = cap;
}

static void reader_check_complete(struct lconn *c)
{
	if (c->complete || !G.submitting_done || c->verdict_jobs < G.acked)
		return;
	c->complete = true;
	if (++G.readers_done == G.o.readers)
		settle();
}

static void delay_push(int64_t t_emit, int64_t d)
{
	if (G.ndelay == G.cap_delay) {
		G.cap_delay = G.cap_delay ? 2 * G.cap_delay : (size_t)1 << 20;
		G.delay = xrealloc(G.delay, G.cap_delay * sizeof *G.delay);
	}
	G.delay[G.ndelay].t_emit = t_emit;
	G.delay[G.ndelay++].delay = d;
}

static void reader_line(struct lconn *c, const char *line, size_t len, int64_t t_arrive)
{
	static const char stamp[] = "{\"t_emit_ns\":";
	static const char vtype[] = ",\"type\":\"verdict\"";
	const char *end = line + len, *tail, *p, *q;
	size_t tl = len < 80 ? len : 80;
	long long num, seq, t_emit = -1;
	bool verdict;

	c->bytes += len + 1;
	if (!c->got_reply) {
		if (memmem(line, len, "\"op\":\"watch\"", 12)) {
			c->got_reply = true;
			G.watch_replies++;
		}
		return;
	}
	tail = end - tl;
	p = memmem(tail, tl, "\"job\":\"j", 8);
	q = memmem(tail, tl, "\"seq\":", 6);
	num = p ? parse_digits(p + 8, end, NULL) : -1;
	seq = q ? parse_digits(q + 6, end, NULL) : -1;
	if (num < 0 || seq < 0) {
		c->other++;
		return;
	}
	c->lines++;
	if (len > sizeof stamp - 1 && !memcmp(line, stamp, sizeof stamp - 1)) {
		t_emit = parse_digits(line + sizeof stamp - 1, end, &p);
		verdict = end - p >= (ptrdiff_t)(sizeof vtype - 1) &&
			  !memcmp(p, vtype, sizeof vtype - 1);
	} else {
		/* A line quald wrote itself (an error verdict). */
		c->unstamped++;
		verdict = memmem(line, len < 40 ? len : 40, "\"type\":\"verdict\"", 16) != NULL;
	}
	if (t_emit >= 0) {
		delay_push(t_emit, t_arrive - t_emit);
		if (t_arrive - t_emit > G.delay_max) {
			G.delay_max = t_arrive - t_emit;
			G.delay_max_job = (long)num;
			G.delay_max_seq = (long)seq;
		}
	}
	if (num >= c->cap_jobs)
		reader_grow(c, (long)num);
	if (c->verdicts[num])
		c->after_verdict++;
	if (seq >= c->next_seq[num] && t_emit > 0)
		c->tsum[num] += t_emit;
	if (seq == c->next_seq[num]) {
		c->got[num]++;
		c->next_seq[num]++;
	} else if (seq > c->next_seq[num]) {
		c->gaps += seq - c->next_seq[num];
		c->got[num]++;
		c->next_seq[num] = (int32_t)seq + 1;
	} else {
		c->dups++;
	}
	if (verdict) {
		if (c->verdicts[num]++ == 0)
			c->verdict_jobs++;
		reader_check_complete(c);
	}
}

/* ---- submitters ---- */

static void submit_next(struct lconn *c);

static void submitter_line(struct lconn *c, const char *line, size_t len, int64_t t)
{
	json_t *o = json_loadb(line, len, 0, NULL);
	const char *type = json_string_value(json_object_get(o, "type"));
	const char *op = json_string_value(json_object_get(o, "op"));

	if (type && !strcmp(type, "reply") && op && !strcmp(op, "status")) {
		size_t queued = json_array_size(json_object_get(o, "queued"));
		size_t running = json_array_size(json_object_get(o, "running"));
		if (!G.settling)
			G.queued_seen = (long)queued;
		else if (queued == 0 && running == 0)
			finish();
		json_decref(o);
		return;
	}
	if (!c->busy || !type || !op || strcmp(op, "submit")) {
		fprintf(stderr, "qual-load: unexpected line on a submitter: %.*s\n",
			(int)(len < 300 ? len : 300), line);
		json_decref(o);
		return;
	}
	c->busy = false;
	if (!strcmp(type, "reply")) {
		const char *job = json_string_value(json_object_get(o, "job"));
		G.acked_num[G.acked] = job && job[0] == 'j' ? strtol(job + 1, NULL, 10) : -1;
		G.ack_ns[G.acked] = t - c->t_sent;
		G.acked++;
	} else {
		if (!G.first_refusal[0])
			snprintf(G.first_refusal, sizeof G.first_refusal, "%.*s",
				 (int)(len < 400 ? len : 400), line);
		G.refused++;
	}
	json_decref(o);
	if (G.acked + G.refused == G.o.jobs) {
		int fd;

		G.t_acked = now_ns();
		G.rss_queued = proc_status_kb(G.pid, "VmRSS:");
		G.submitting_done = true;
		G.status_conn = c;
		/* How many are queued, as quald says it (before the gate
		 * opens, every job but the ones in slots). */
		snprintf(c->req, sizeof c->req, "{\"op\":\"status\"}\n");
		{
			uv_buf_t b = uv_buf_init(c->req, (unsigned)strlen(c->req));
			uv_try_write((uv_stream_t *)&c->pipe, &b, 1);
		}
		if (G.o.gate) {
			fd = open(G.gatefile, O_CREAT | O_WRONLY, 0644);
			if (fd < 0)
				die("cannot create '%s': %s", G.gatefile, strerror(errno));
			close(fd);
		}
		for (int i = 0; i < G.nconns; i++)
			if (G.conns[i]->kind == K_READER)
				reader_check_complete(G.conns[i]);
		return;
	}
	submit_next(c);
}

static void on_submit_written(uv_write_t *req, int status)
{
	if (status < 0)
		die("a submit could not be written: %s", uv_strerror(status));
	(void)req;
}

static void submit_next(struct lconn *c)
{
	int k, n;
	uv_buf_t b;

	if (G.next_submit >= G.o.jobs)
		return;
	k = G.next_submit++;
	n = snprintf(c->req, sizeof c->req,
		     "{\"op\":\"submit\",\"id\":%d,\"baseline\":\"%s\",\"candidate\":\"%s\","
		     "\"compile_only\":true,\"follow\":false}\n", k, G.o.lib, G.o.lib);
	if (n < 0 || (size_t)n >= sizeof c->req)
		die("library path too long");
	c->busy = true;
	c->t_sent = now_ns();
	b = uv_buf_init(c->req, (unsigned)n);
	if (uv_write(&c->wreq, (uv_stream_t *)&c->pipe, &b, 1, on_submit_written) < 0)
		die("cannot write a submit");
}

/* ---- connections ---- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	/* One read at a time on this loop: a shared buffer. */
	static char chunk[READ_CHUNK];

	(void)h;
	(void)suggested;
	*buf = uv_buf_init(chunk, sizeof chunk);
}

static void conn_line(struct lconn *c, const char *line, size_t len, int64_t t)
{
	if (c->kind == K_READER) {
		reader_line(c, line, len, t);
	} else if (c->kind == K_SUBMITTER) {
		submitter_line(c, line, len, t);
	} else if (!c->got_reply && memmem(line, len, "\"op\":\"watch\"", 12)) {
		c->got_reply = true;
		G.watch_replies++;
	}
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct lconn *c = container_of((uv_pipe_t *)s, struct lconn, pipe);
	int64_t t = now_ns();
	const char *p = buf->base, *end = buf->base + (nread > 0 ? nread : 0), *nl;

	if (nread < 0) {
		c->eof = true;
		snprintf(c->eof_why, sizeof c->eof_why, "%s", nread == UV_EOF ? "closed by quald" :
			 uv_strerror((int)nread));
		uv_read_stop(s);
		if (c->kind == K_READER && !G.finished) {
			fprintf(stderr, "qual-load: reading watcher %d lost its connection: %s\n",
				c->index, c->eof_why);
			if (!c->complete) {
				c->complete = true;
				if (++G.readers_done == G.o.readers)
					settle();
			}
		}
		return;
	}
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			size_t n = (size_t)(end - p);
			if (c->part_len + n > c->part_cap) {
				c->part_cap = 2 * (c->part_len + n);
				c->part = xrealloc(c->part, c->part_cap);
			}
			memcpy(c->part + c->part_len, p, n);
			c->part_len += n;
			break;
		}
		if (c->part_len) {
			size_t n = (size_t)(nl - p);
			if (c->part_len + n > c->part_cap) {
				c->part_cap = 2 * (c->part_len + n);
				c->part = xrealloc(c->part, c->part_cap);
			}
			memcpy(c->part + c->part_len, p, n);
			conn_line(c, c->part, c->part_len + n, t);
			c->part_len = 0;
		} else {
			conn_line(c, p, (size_t)(nl - p), t);
		}
		p = nl + 1;
		/* A watcher that never reads has read its reply: it stops. */
		if (c->kind == K_IDLER && c->got_reply) {
			uv_read_stop(s);
			break;
		}
	}
}

/* A blocking connect (it waits while quald's listen backlog is full), then
 * the socket goes to the loop. */
static struct lconn *conn_open(enum kind kind, int index, const char *first)
{
	struct sockaddr_un sa;
	struct lconn *c = xcalloc(1, sizeof *c);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket: %s", strerror(errno));
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", G.sock);
	while (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (errno != EINTR && errno != EAGAIN)
			die("cannot connect to '%s': %s", G.sock, strerror(errno));
		usleep(1000);
	}
	if (first) {
		size_t n = strlen(first);
		if (write(fd, first, n) != (ssize_t)n)
			die("cannot write to quald: %s", strerror(errno));
	}
	c->kind = kind;
	c->index = index;
	uv_pipe_init(G.loop, &c->pipe, 0);
	if (uv_pipe_open(&c->pipe, fd) < 0)
		die("uv_pipe_open failed");
	uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
	G.conns = xrealloc(G.conns, (size_t)(G.nconns + 1) * sizeof *G.conns);
	G.conns[G.nconns++] = c;
	return c;
}

/* ---- phases ---- */

static void on_deadline(uv_timer_t *t)
{
	(void)t;
	fprintf(stderr, "qual-load: timed out after %g s\n", G.o.timeout_s);
	G.timed_out = true;
	finish();
}

static void settle_ask(uv_timer_t *t)
{
	struct lconn *c = G.status_conn;
	static const char req[] = "{\"op\":\"status\"}\n";
	uv_buf_t b = uv_buf_init((char *)req, sizeof req - 1);

	(void)t;
	if (!c || c->eof || uv_try_write((uv_stream_t *)&c->pipe, &b, 1) != (int)b.len)
		finish();
}

/* Every reading watcher has every verdict (or is gone): the run is over.
 * The stored states are checked once quald says no job is queued or
 * running. */
static void settle(void)
{
	if (G.settling || G.finished)
		return;
	G.settling = true;
	G.t_end = now_ns();
	uv_timer_start(&G.settle_timer, settle_ask, 0, 20);
}

static void finish(void)
{
	if (G.finished)
		return;
	G.finished = true;
	if (!G.settling)
		G.t_end = now_ns();
	uv_timer_stop(&G.settle_timer);
	rss_sample(&G.rss_timer);
	uv_timer_stop(&G.rss_timer);
	uv_timer_stop(&G.deadline);
	uv_stop(G.loop);
}

static void wait_for(bool (*done)(void), double seconds, const char *what)
{
	int64_t limit = now_ns() + (int64_t)(seconds * 1e9);

	while (!done()) {
		if (now_ns() > limit)
			die("timed out waiting for %s", what);
		uv_run(G.loop, UV_RUN_ONCE);
	}
}

static bool all_watching(void)
{
	return G.watch_replies == G.o.readers + G.o.idlers;
}

static void start_quald(void)
{
	char slots[32], cbuf[32];
	const char *argv[20];
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
		die("cannot create '%s': %s", G.logpath, strerror(errno));
	G.pid = fork();
	if (G.pid < 0)
		die("fork: %s", strerror(errno));
	if (G.pid == 0) {
		/* quald goes when qual-load goes, however it ends. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], (char **)argv);
		fprintf(stderr, "cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fd);
}

/* Waits until quald answers on its socket. */
static void wait_listening(void)
{
	struct sockaddr_un sa;
	int64_t limit = now_ns() + 10 * (int64_t)1000000000;

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", G.sock);
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), status;
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
			close(fd);
			return;
		}
		if (fd >= 0)
			close(fd);
		if (waitpid(G.pid, &status, WNOHANG) == G.pid) {
			G.pid = -1;
			die("quald exited at start (see '%s')", G.logpath);
		}
		if (now_ns() > limit)
			die("quald does not answer on '%s'", G.sock);
		usleep(10000);
	}
}

/* ---- checks after the run ---- */

/* Drains a never-reading watcher's socket: whether quald had closed it
 * (EOF after the bytes still in the kernel), and the bytes it held. */
static bool idler_dropped(struct lconn *c, uint64_t *bytes)
{
	static char buf[READ_CHUNK];
	uv_os_fd_t fd;

	if (uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0)
		return false;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n > 0) {
			*bytes += (uint64_t)n;
			continue;
		}
		if (n == 0)
			return true;
		if (errno == EINTR)
			continue;
		return errno != EAGAIN;
	}
}

struct logcheck {
	int complete;      /* logs with every line, in order, one verdict last */
	int bad;
	int not_done;      /* state.json not "done" */
	char first_bad[512];
};

static void check_stored(long num, struct logcheck *lc, int64_t *tsum)
{
	char path[PATH_MAX], why[256] = "";
	FILE *f;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int count = 0, verdicts = 0;
	bool verdict_last = false;
	json_t *st;

	*tsum = 0;
	snprintf(path, sizeof path, "%s/jobs/j%06ld/log.jsonl", G.state, num);
	f = fopen(path, "r");
	if (!f) {
		snprintf(why, sizeof why, "cannot open '%.200s': %s", path, strerror(errno));
		goto done;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		json_t *o = json_loadb(line, (size_t)n, 0, NULL);
		const char *type = json_string_value(json_object_get(o, "type"));
		json_int_t seq = json_integer_value(json_object_get(o, "seq"));

		if (!o) {
			snprintf(why, sizeof why, "line %d is not json", count);
		} else if (seq != count && !why[0]) {
			snprintf(why, sizeof why, "line %d has seq %" JSON_INTEGER_FORMAT, count, seq);
		} else if (!json_object_get(o, "t_emit_ns") && !why[0]) {
			snprintf(why, sizeof why, "line %d is quald's: %.150s", count, line);
		}
		*tsum += json_integer_value(json_object_get(o, "t_emit_ns"));
		verdict_last = type && !strcmp(type, "verdict");
		verdicts += verdict_last;
		count++;
		json_decref(o);
	}
	fclose(f);
	if (!why[0] && count != G.expect_lines)
		snprintf(why, sizeof why, "%d lines, want %d", count, G.expect_lines);
	if (!why[0] && (verdicts != 1 || !verdict_last))
		snprintf(why, sizeof why, "%d verdicts%s", verdicts,
			 verdict_last ? "" : ", not last");
done:
	free(line);
	snprintf(path, sizeof path, "%s/jobs/j%06ld/state.json", G.state, num);
	st = json_load_file(path, 0, NULL);
	if (!st || strcmp(json_string_value(json_object_get(st, "state")) ?: "", "done"))
		lc->not_done++;
	json_decref(st);
	if (why[0]) {
		lc->bad++;
		if (!lc->first_bad[0])
			snprintf(lc->first_bad, sizeof lc->first_bad, "j%06ld: %s", num, why);
	} else {
		lc->complete++;
	}
}

static double rusage_s(const struct rusage *r)
{
	return (double)r->ru_utime.tv_sec + r->ru_utime.tv_usec / 1e6 +
	       (double)r->ru_stime.tv_sec + r->ru_stime.tv_usec / 1e6;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The q-quantile of sorted v (nearest rank). */
static int64_t quantile(const int64_t *v, size_t n, double q)
{
	size_t k;

	if (n == 0)
		return 0;
	k = (size_t)(q * (double)n + 0.999999);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

static int count_log(const char *needle)
{
	FILE *f = fopen(G.logpath, "r");
	char *line = NULL;
	size_t cap = 0;
	int n = 0;

	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0)
		n += strstr(line, needle) != NULL;
	free(line);
	fclose(f);
	return n;
}

static void on_close_free(uv_handle_t *h)
{
	struct lconn *c = container_of((uv_pipe_t *)h, struct lconn, pipe);

	free(c->part);
	free(c->next_seq);
	free(c->got);
	free(c->verdicts);
	free(c->tsum);
	free(c);
}

static int count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	int n = 0;

	if (!f)
		die("cannot open '%.200s': %s", path, strerror(errno));
	while (getline(&line, &cap, f) > 0)
		n += line[0] == '{';
	free(line);
	fclose(f);
	return n;
}

static double loadavg1(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
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
		die("cannot find '%s': %s", p, strerror(errno));
	return r;
}

int main(int argc, char **argv)
{
	struct logcheck lc = {0};
	long lines_lost = 0, gaps = 0, dups = 0, after = 0, unstamped = 0, lines_total = 0;
	long verdict_missing = 0, verdict_extra = 0, jobs_lost = 0, readers_eof = 0, differ = 0;
	int idlers_dropped = 0, log_dropped, status = 0;
	uint64_t idler_bytes = 0, reader_bytes = 0;
	double quald_cpu, wall;
	struct rusage ru_self, ru_children, ru_before;
	char gapbuf[32], cbtext[64];
	int64_t *d_all, *d_calm, t_max_emit = 0;
	double load_start, load_end;
	struct statfs sfs;
	struct utsname un;
	time_t wallclock = time(NULL);
	char when[32];
	size_t ncalm = 0;
	bool lost;

	signal(SIGPIPE, SIG_IGN);
	parse_args(argc, argv);
	G.o.quald = abspath(G.o.quald);
	G.o.worker = abspath(G.o.worker);
	G.o.helper = abspath(G.o.helper);
	G.o.lines = abspath(G.o.lines);
	G.expect_lines = count_lines(G.o.lines);
	G.acked_num = xcalloc((size_t)G.o.jobs, sizeof *G.acked_num);
	G.ack_ns = xcalloc((size_t)G.o.jobs, sizeof *G.ack_ns);

	if (snprintf(G.dir, sizeof G.dir, "%s/qual-load-XXXXXX", G.o.tmp) >= (int)sizeof G.dir)
		die("'%s' is too long a path for the socket", G.o.tmp);
	if (!mkdtemp(G.dir))
		die("mkdtemp: %s", strerror(errno));
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
	getrusage(RUSAGE_CHILDREN, &ru_before);
	load_start = loadavg1();
	G.loop = uv_default_loop();
	G.t0 = now_ns();
	start_quald();
	wait_listening();
	G.rss_idle = proc_status_kb(G.pid, "VmRSS:");
	uv_timer_init(G.loop, &G.rss_timer);
	uv_timer_start(&G.rss_timer, rss_sample, 0, RSS_PERIOD_MS);
	uv_timer_init(G.loop, &G.deadline);
	uv_timer_init(G.loop, &G.settle_timer);
	uv_timer_start(&G.deadline, on_deadline, (uint64_t)(G.o.timeout_s * 1000), 0);

	/* The watchers, reading and never reading interleaved. */
	for (int i = 0; i < G.o.readers + G.o.idlers; i++) {
		bool reader = i % 2 == 0 ? i / 2 < G.o.readers : i / 2 >= G.o.idlers;
		conn_open(reader ? K_READER : K_IDLER, i, "{\"op\":\"watch\"}\n");
	}
	wait_for(all_watching, 60, "the watch replies");
	G.drop_seen = xcalloc((size_t)(G.o.readers + G.o.idlers + G.o.submitters),
			      sizeof *G.drop_seen);
	G.t_watchers = now_ns();

	/* The submitters, all at once. */
	G.t_submit0 = now_ns();
	for (int i = 0; i < G.o.submitters; i++)
		conn_open(K_SUBMITTER, i, NULL);
	for (int i = 0; i < G.nconns; i++)
		if (G.conns[i]->kind == K_SUBMITTER)
			submit_next(G.conns[i]);
	if (!G.finished)
		uv_run(G.loop, UV_RUN_DEFAULT);

	/* The run is over: quald's memory first, while it is still up. */
	load_end = loadavg1();
	G.hwm = proc_status_kb(G.pid, "VmHWM:");
	G.rss_end = proc_status_kb(G.pid, "VmRSS:");
	quald_cpu = proc_cpu_s(G.pid);
	for (int i = 0; i < G.nconns; i++) {
		struct lconn *c = G.conns[i];
		if (c->kind == K_IDLER)
			idlers_dropped += idler_dropped(c, &idler_bytes);
		if (c->kind != K_READER)
			continue;
		reader_bytes += c->bytes;
		readers_eof += c->eof;
		gaps += c->gaps;
		dups += c->dups;
		after += c->after_verdict;
		unstamped += c->unstamped;
		lines_total += c->lines;
	}
	/* Per acknowledged job: every reading watcher has all its lines and
	 * exactly one verdict, and so has its stored log. */
	for (int k = 0; k < G.acked; k++) {
		long num = G.acked_num[k];
		int64_t stored_sum = 0;

		lost = false;
		{
			int bad = lc.bad;
			check_stored(num, &lc, &stored_sum);
			if (lc.bad != bad)
				lost = true;
		}
		for (int i = 0; i < G.nconns; i++) {
			struct lconn *c = G.conns[i];
			int got = 0, v = 0;
			if (c->kind != K_READER)
				continue;
			if (num >= 0 && num < c->cap_jobs) {
				got = c->got[num];
				v = c->verdicts[num];
			}
			if (got < G.expect_lines)
				lines_lost += G.expect_lines - got;
			if (v == 0)
				verdict_missing++;
			if (v > 1)
				verdict_extra += v - 1;
			if (v != 1)
				lost = true;
			if (num >= 0 && num < c->cap_jobs && c->tsum[num] != stored_sum) {
				differ++;
				lost = true;
			}
		}
		jobs_lost += lost;
	}
	log_dropped = count_log("not reading");

	for (int i = 0; i < G.nconns; i++)
		uv_close((uv_handle_t *)&G.conns[i]->pipe, on_close_free);
	uv_close((uv_handle_t *)&G.rss_timer, NULL);
	uv_close((uv_handle_t *)&G.deadline, NULL);
	uv_close((uv_handle_t *)&G.settle_timer, NULL);
	uv_run(G.loop, UV_RUN_DEFAULT);
	if (uv_loop_close(G.loop))
		fprintf(stderr, "qual-load: the loop did not close cleanly\n");

	if (G.o.hold_s > 0) {
		fprintf(stderr, "qual-load: quald (pid %d) stays up for %g s\n", (int)G.pid,
			G.o.hold_s);
		usleep((useconds_t)(G.o.hold_s * 1e6));
	}
	kill(G.pid, SIGTERM);
	{
		int64_t limit = now_ns() + 20 * (int64_t)1000000000;
		pid_t got;

		while ((got = waitpid(G.pid, &status, WNOHANG)) != G.pid) {
			if (got < 0 && errno != EINTR) {
				fprintf(stderr, "qual-load: cannot wait for quald: %s\n",
					strerror(errno));
				kill(G.pid, SIGKILL);
				status = -1; /* reported as 255: unknown */
				break;
			}
			if (now_ns() > limit) {
				fprintf(stderr, "qual-load: quald did not stop on SIGTERM\n");
				kill(G.pid, SIGKILL);
				waitpid(G.pid, &status, 0);
				break;
			}
			usleep(10000);
		}
	}
	getrusage(RUSAGE_SELF, &ru_self);
	getrusage(RUSAGE_CHILDREN, &ru_children);

	/* The delays, all of them and apart from the lines written within
	 * DROP_WINDOW_NS of the drops of the never-reading watchers. */
	d_all = xcalloc(G.ndelay, sizeof *d_all);
	d_calm = xcalloc(G.ndelay, sizeof *d_calm);
	for (size_t k = 0; k < G.ndelay; k++) {
		d_all[k] = G.delay[k].delay;
		if (!G.t_drop_first || G.delay[k].t_emit < G.t_drop_first - DROP_WINDOW_NS ||
		    G.delay[k].t_emit > G.t_drop_last + DROP_WINDOW_NS)
			d_calm[ncalm++] = G.delay[k].delay;
		if (G.delay[k].delay == G.delay_max)
			t_max_emit = G.delay[k].t_emit;
	}
	qsort(d_all, G.ndelay, sizeof *d_all, cmp_i64);
	qsort(d_calm, ncalm, sizeof *d_calm, cmp_i64);
	qsort(G.ack_ns, (size_t)G.acked, sizeof *G.ack_ns, cmp_i64);
	wall = (double)(G.t_end - G.t0) / 1e9;

	if (G.o.client_buffer)
		snprintf(cbtext, sizeof cbtext, "%ld bytes", G.o.client_buffer);
	else
		snprintf(cbtext, sizeof cbtext, "8 MiB (quald's default)");
	if (G.first_refusal[0])
		printf("first refusal: %s\n", G.first_refusal);
	if (lc.first_bad[0])
		printf("first bad stored log: %s\n", lc.first_bad);
	printf("quald RSS (MiB) at each tenth of the run:");
	for (int k = 0; k <= 10 && G.nrss; k++)
		printf(" %.0f", G.rss_series[(G.nrss - 1) * (size_t)k / 10] / 1024.0);
	printf("\nlargest delay: j%06ld seq %ld (%.1f ms), written %.2f s after the last ack\n",
	       G.delay_max_job, G.delay_max_seq, G.delay_max / 1e6,
	       (double)(t_max_emit - G.t_acked) / 1e9);
	if (G.t_drop_first)
		printf("never-reading watchers dropped (%d seen) from %.2f s to %.2f s after the last ack\n",
		       G.ndropped_seen, (double)(G.t_drop_first - G.t_acked) / 1e9,
		       (double)(G.t_drop_last - G.t_acked) / 1e9);
	strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&wallclock));
	uname(&un);
	printf("machine: %s, Linux %s, %ld cores, load average %.2f at the start, %.2f at the end; "
	       "state directory on %s\n", when, un.release, sysconf(_SC_NPROCESSORS_ONLN),
	       load_start, load_end,
	       statfs(G.dir, &sfs) < 0 ? "?" : sfs.f_type == 0x01021994 ? "tmpfs" :
	       sfs.f_type == 0xEF53 ? "ext4" : "another file system");
	printf("\nqual-load: %d jobs of %d lines (%s), %d submitters, %d watchers "
	       "(%d reading, %d never reading), %d slots, %ld us between a worker's lines, "
	       "%s, client buffer %s\n\n",
	       G.o.jobs, G.expect_lines, G.o.gate ? "all queued before any runs" :
	       "running while submitted", G.o.submitters, G.o.readers + G.o.idlers,
	       G.o.readers, G.o.idlers, G.o.slots, G.o.gap_us,
	       strstr(G.o.helper, "fake") ? "fake identify" : "real qual-compile identify",
	       cbtext);
	printf("| figure | value |\n| --- | --- |\n");
	printf("| wall time, quald start to last verdict | %.2f s%s |\n", wall,
	       G.timed_out ? " (timed out)" : "");
	printf("| submit phase: %d acknowledged, %d refused | %.2f s (ack p50 %.1f ms, p99 %.1f ms, max %.1f ms) |\n",
	       G.acked, G.refused, (double)(G.t_acked - G.t_submit0) / 1e9,
	       quantile(G.ack_ns, (size_t)G.acked, 0.5) / 1e6,
	       quantile(G.ack_ns, (size_t)G.acked, 0.99) / 1e6,
	       G.acked ? G.ack_ns[G.acked - 1] / 1e6 : 0.0);
	printf("| queued when the last was acknowledged (status) | %ld |\n", G.queued_seen);
	printf("| run phase, last ack to last verdict | %.2f s |\n",
	       (double)(G.t_end - G.t_acked) / 1e9);
	printf("| quald peak RSS (VmHWM) | %.1f MiB |\n", G.hwm / 1024.0);
	printf("| quald RSS: idle / all queued / sampled max / end | %.1f / %.1f / %.1f / %.1f MiB |\n",
	       G.rss_idle / 1024.0, G.rss_queued / 1024.0, G.rss_max / 1024.0,
	       G.rss_end / 1024.0);
	printf("| quald CPU (itself) / with its children | %.2f s / %.2f s |\n", quald_cpu,
	       rusage_s(&ru_children) - rusage_s(&ru_before));
	printf("| qual-load CPU | %.2f s |\n", rusage_s(&ru_self));
	printf("| lines to reading watchers | %ld (%.1f MB), %zu stamped |\n", lines_total,
	       (double)reader_bytes / 1e6, G.ndelay);
	printf("| delay worker line -> reading watcher: p50 / p99 / p99.9 / max | %.2f / %.2f / %.2f / %.2f ms |\n",
	       quantile(d_all, G.ndelay, 0.5) / 1e6, quantile(d_all, G.ndelay, 0.99) / 1e6,
	       quantile(d_all, G.ndelay, 0.999) / 1e6,
	       G.ndelay ? d_all[G.ndelay - 1] / 1e6 : 0.0);
	if (G.t_drop_first)
		printf("| the same, lines written more than %.0f s from the drops (%zu) | %.2f / %.2f / %.2f / %.2f ms |\n",
		       DROP_WINDOW_NS / 1e9, ncalm,
		       quantile(d_calm, ncalm, 0.5) / 1e6, quantile(d_calm, ncalm, 0.99) / 1e6,
		       quantile(d_calm, ncalm, 0.999) / 1e6,
		       ncalm ? d_calm[ncalm - 1] / 1e6 : 0.0);
	printf("| never-reading watchers dropped by quald | %d of %d |\n", idlers_dropped,
	       G.o.idlers);
	printf("| connections quald logged as 'not reading' | %d |\n", log_dropped);
	printf("| reading watchers that lost their connection | %ld |\n", readers_eof);
	printf("| stored logs complete / bad / state not done | %d / %d / %d |\n", lc.complete,
	       lc.bad, lc.not_done);
	printf("| missing / extra verdicts at reading watchers | %ld / %ld |\n",
	       verdict_missing, verdict_extra);
	printf("| gaps / duplicates / after verdict / written by quald | %ld / %ld / %ld / %ld |\n",
	       gaps, dups, after, unstamped);
	printf("| (watcher, job) streams that differ from the stored log | %ld |\n", differ);
	printf("| quald exit status after SIGTERM | %d |\n",
	       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	printf("| **jobs lost** | **%ld** |\n", jobs_lost + (G.o.jobs - G.acked - G.refused));
	printf("| **lines lost** | **%ld** |\n", lines_lost);
	(void)idler_bytes;
	lost = jobs_lost || lines_lost || G.acked + G.refused != G.o.jobs || G.refused ||
	       readers_eof || gaps || dups || after || unstamped || lc.bad || lc.not_done || differ ||
	       G.timed_out;
	if (G.o.keep || lost) {
		printf("\nkept: %s (quald's log: %s)\n", G.dir, G.logpath);
	} else {
		char cmd[PATH_MAX + 16];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", G.dir);
		if (system(cmd) != 0)
			fprintf(stderr, "qual-load: cannot remove '%s'\n", G.dir);
	}
	return lost ? 1 : 0;
}
