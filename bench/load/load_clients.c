/* qual-load's clients (load.h): the watchers, reading and never reading,
 * and the submitters, all on this process's one libuv loop. A reading
 * watcher finds the few fields it needs by scanning, without parsing the
 * JSON: the fake worker puts "t_emit_ns" first, quald splices "job" and
 * "seq" in before the closing brace. */
#include "bench/load/load.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/xalloc.h"


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

/* ---- reading watchers ---- */

/* p (of old items of size bytes) with room for cap, the new ones zero. */
static void *grow_zeroed(void *p, size_t size, long old, long cap)
{
	p = xrealloc(p, (size_t)cap * size);
	memset((char *)p + (size_t)old * size, 0, (size_t)(cap - old) * size);
	return p;
}

/* Room for job number num in the per-job arrays. */
static void reader_grow(struct lconn *c, long num)
{
	long cap = c->cap_jobs ? c->cap_jobs : 1024;

	while (cap <= num)
		cap *= 2;
	c->next_seq = grow_zeroed(c->next_seq, sizeof *c->next_seq, c->cap_jobs, cap);
	c->got = grow_zeroed(c->got, sizeof *c->got, c->cap_jobs, cap);
	c->verdicts = grow_zeroed(c->verdicts, sizeof *c->verdicts, c->cap_jobs, cap);
	c->tsum = grow_zeroed(c->tsum, sizeof *c->tsum, c->cap_jobs, cap);
	c->cap_jobs = cap;
}

static void reader_check_complete(struct lconn *c)
{
	if (c->complete || !G.submitting_done || c->verdict_jobs < G.acked)
		return;
	c->complete = true;
	if (++G.readers_done == G.o.readers)
		load_settle();
}

static void delay_push(int64_t t_emit, int64_t d)
{
	XGROW(G.delay, G.ndelay + 1, G.cap_delay);
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

static void submitter_line(struct lconn *c, const char *line, size_t len, int64_t t)
{
	json_t *o = json_loadb(line, len, 0, NULL);
	const char *type = json_string_value(json_object_get(o, "type"));
	const char *op = json_string_value(json_object_get(o, "op"));

	if (type && !strcmp(type, "reply") && op && !strcmp(op, "status")) {
		size_t queued = json_array_size(json_object_get(o, "queued")); /* vocab:key */
		size_t running = json_array_size(json_object_get(o, "running")); /* vocab:key */
		if (!G.settling)
			G.queued_seen = (long)queued;
		else if (queued == 0 && running == 0)
			load_finish();
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

		G.t_acked = load_now_ns();
		G.rss_queued = load_quald_kb("VmRSS:");
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
				load_die("cannot create '%s': %s", G.gatefile, strerror(errno));
			close(fd);
		}
		for (int i = 0; i < G.nconns; i++)
			if (G.conns[i]->kind == K_READER)
				reader_check_complete(G.conns[i]);
		return;
	}
	load_submit_next(c);
}

static void on_submit_written(uv_write_t *req, int status)
{
	if (status < 0)
		load_die("a submit could not be written: %s", uv_strerror(status));
	(void)req;
}

void load_submit_next(struct lconn *c)
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
		load_die("library path too long");
	c->busy = true;
	c->t_sent = load_now_ns();
	b = uv_buf_init(c->req, (unsigned)n);
	if (uv_write(&c->wreq, (uv_stream_t *)&c->pipe, &b, 1, on_submit_written) < 0)
		load_die("cannot write a submit");
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

/* Keeps n more bytes of a line that did not end in this read. */
static void part_append(struct lconn *c, const char *p, size_t n)
{
	XGROW(c->part, c->part_len + n, c->part_cap);
	memcpy(c->part + c->part_len, p, n);
	c->part_len += n;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct lconn *c = container_of((uv_pipe_t *)s, struct lconn, pipe);
	int64_t t = load_now_ns();
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
					load_settle();
			}
		}
		return;
	}
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			part_append(c, p, (size_t)(end - p));
			break;
		}
		if (c->part_len) {
			part_append(c, p, (size_t)(nl - p));
			conn_line(c, c->part, c->part_len, t);
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
struct lconn *load_conn_open(enum kind kind, int index, const char *first)
{
	struct sockaddr_un sa;
	struct lconn *c = xcalloc(1, sizeof *c);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		load_die("socket: %s", strerror(errno));
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", G.sock);
	while (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (errno != EINTR && errno != EAGAIN)
			load_die("cannot connect to '%s': %s", G.sock, strerror(errno));
		usleep(1000);
	}
	if (first) {
		size_t n = strlen(first);
		if (write(fd, first, n) != (ssize_t)n)
			load_die("cannot write to quald: %s", strerror(errno));
	}
	c->kind = kind;
	c->index = index;
	uv_pipe_init(G.loop, &c->pipe, 0);
	if (uv_pipe_open(&c->pipe, fd) < 0)
		load_die("uv_pipe_open failed");
	uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
	XGROW(G.conns, G.nconns + 1, G.conns_cap);
	G.conns[G.nconns++] = c;
	return c;
}

void load_conn_closed(uv_handle_t *h)
{
	struct lconn *c = container_of((uv_pipe_t *)h, struct lconn, pipe);
	void *owned[] = {c->part, c->next_seq, c->got, c->verdicts, c->tsum, c};

	for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
		free(owned[i]);
}
