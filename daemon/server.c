/* quald's server side (server.h): listeners, connections, requests, and the
 * relay of job lines to followers and watchers. */
#include "daemon/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "daemon/frame.h"
#include "common/lines.h"
#include "daemon/request.h"
#include "common/xalloc.h"

#ifndef QUAL_VERSION
#define QUAL_VERSION "unknown"
#endif

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* Bytes read per read callback: a request is usually a few hundred bytes. */
#define READ_CHUNK (64u << 10)
#define LISTEN_BACKLOG 128
/* A refused connection is read (and what it sends thrown away) until the
 * peer closes, at most this long and this much, before it is closed: closing
 * with its request unread would reset the connection, and a reset can cost
 * the peer the refusal line it has not read yet. */
#define LINGER_MS 2000
#define LINGER_MAX_BYTES (1u << 20)

union stream_handle {
	uv_handle_t handle;
	uv_stream_t stream;
	uv_pipe_t pipe;
	uv_tcp_t tcp;
};

struct listener {
	union stream_handle h;
	struct server *srv;
	bool is_tcp;
	struct listener *next;
};

/* Output shared by every connection it is written to (a broadcast line is
 * allocated once); freed when the last write of it completes. */
struct obuf {
	int refs;
	size_t len;
	char data[];
};

/* One write handed to libuv: every line that was queued for the connection
 * when it was issued (docs/quald.md, "Slow and vanishing clients"). */
struct wreq {
	uv_write_t req;
	struct conn *c;
	size_t reply_bytes;  /* of replies (not live lines), for the cap */
	int nb;
	struct obuf *b[];
};

/* A line waiting in a connection's queue for the write before it. */
struct qent {
	struct obuf *b;
	bool reply;
};

/* A job whose lines a connection receives from a given point: (job, seq)
 * means the lines with a larger seq. Follows of a submitter, and for a
 * watcher the jobs that were still running when their stored lines were
 * replayed (so that a live line already replayed is not sent twice). */
struct mark {
	char job[JOB_ID_MAX];
	long seq;
};

/* A watch resuming after a point: the jobs whose stored lines are still to
 * be sent, ids[i] the current one with lines up to seq sent. Live lines of
 * ids[i] and later jobs are not sent while it runs: they are in the logs the
 * replay reads next. */
struct replay {
	bool active;
	bool waiting;  /* for the client to read (write queue over the mark) */
	char **ids;
	int n, cap, i;
	long seq;
};

struct conn {
	union stream_handle h;
	uv_shutdown_t shutdown_req;
	struct server *srv;
	struct conn *prev, *next;
	unsigned long serial;      /* for the log */
	int refs;                  /* the handle, and a pending submit */
	bool closing, shutting, eof, reading, processing;
	struct frame frame;        /* splitting the input into request lines */
	bool submit_pending;       /* a submit waits for jobs_submit's callback */
	bool submit_follow;
	json_t *submit_id;
	bool watching;
	/* May make requests: a Unix peer once SO_PEERCRED allowed it, a TCP
	 * peer once its first line was an auth with the right token. */
	bool authed;
	bool is_tcp;
	/* Refused: the refusal is written, the write side shut, and input is
	 * discarded until the peer closes or the linger timer fires. */
	bool refused, linger_open;
	uv_timer_t linger;
	size_t discarded;
	/* When (uv_now, ms) its live output went over client_buffer; 0 while
	 * it is under. */
	uint64_t over_since;
	struct replay replay;
	struct mark *marks;
	int nmarks, marks_cap;
	int nfollows;              /* marks that are follows (not a watcher's) */
	size_t reply_inflight;     /* bytes of replies queued or being written */
	/* Output: lines queued behind the writes in flight. While a write is
	 * in flight the next lines wait here, and all of them go out in one
	 * write when it completes: a client that reads slowly costs one libuv
	 * request, not one per line, and dropping it cancels one write. */
	struct qent *q;
	int qn, qcap;
	size_t q_bytes;
	int writes;                /* writes in flight */
	char *in;                  /* input: [in_pos, in_len) is unprocessed */
	size_t in_len, in_pos, in_cap;
};

struct server {
	uv_loop_t *loop;
	struct server_config cfg;
	struct jobs *jobs;
	struct listener *listeners;
	int nlisteners;            /* listener handles not yet closed */
	char *socket_path;         /* the socket file we created, to remove */
	int tcp_port;
	struct conn *conns;
	int nconns;                /* connection handles not yet closed */
	unsigned long serial;
	int nwatchers;             /* connections watching */
	int submits_pending;       /* submits waiting for jobs_submit's answer */
	char *token;               /* the TCP token, or NULL */
	char *group_name;          /* the allowed group's name, for messages */
	int last_queued, last_running;
	bool stopping, jobs_closed;
	enum { TIMER_OPEN, TIMER_CLOSING, TIMER_CLOSED } timer_state;
	uv_timer_t drain_timer;
	void (*done)(void *ctx);
	void *done_ctx;
};

static void conn_process(struct conn *c);
static void conn_close(struct conn *c, const char *why);
static void conn_shutdown(struct conn *c);
static void conn_unref(struct conn *c);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
static void replay_pump(struct conn *c);
static void server_maybe_done(struct server *s);
static void on_timer_closed(uv_handle_t *h);

/* ---- output ---- */

static struct obuf *obuf_new(size_t len)
{
	struct obuf *b = xmalloc(sizeof *b + len);

	b->refs = 1;
	b->len = len;
	return b;
}

static void obuf_unref(struct obuf *b)
{
	if (b && --b->refs == 0)
		free(b);
}

/* Bytes of output not yet written: queued, and in libuv's writes. */
static size_t conn_pending(struct conn *c)
{
	return c->q_bytes + uv_stream_get_write_queue_size(&c->h.stream);
}

/* Drops what is queued (the connection is closing). */
static void conn_drop_queue(struct conn *c)
{
	for (int i = 0; i < c->qn; i++) {
		if (c->q[i].reply)
			c->reply_inflight -= c->q[i].b->len;
		obuf_unref(c->q[i].b);
	}
	c->qn = 0;
	c->q_bytes = 0;
}

static void on_write(uv_write_t *req, int status);

/* Hands everything queued to libuv, in writes of at most WRITE_MAX_BUFS
 * lines, each all replies or all live lines (so that a reply's bytes leave
 * the cap's count, and its buffer is freed, when it is written, not when the
 * live lines written with it are), and a buffer over WRITE_ALONE_BYTES (a
 * whole stored log for a show) in a write of its own. */
#define WRITE_MAX_BUFS 1024
#define WRITE_ALONE_BYTES ((size_t)64 << 10)
static void conn_flush(struct conn *c)
{
	while (!c->closing && c->qn > 0) {
		int n = 1, rc;
		struct wreq *w;
		uv_buf_t *bufs;

		if (c->q[0].b->len <= WRITE_ALONE_BYTES)
			while (n < c->qn && n < WRITE_MAX_BUFS && c->q[n].reply == c->q[0].reply &&
			       c->q[n].b->len <= WRITE_ALONE_BYTES)
				n++;
		w = xcalloc(1, sizeof *w + (size_t)n * sizeof w->b[0]);
		bufs = xmalloc((size_t)n * sizeof *bufs);

		w->c = c;
		w->nb = n;
		for (int i = 0; i < n; i++) {
			w->b[i] = c->q[i].b;
			bufs[i] = uv_buf_init(w->b[i]->data, (unsigned)w->b[i]->len);
			if (c->q[i].reply)
				w->reply_bytes += w->b[i]->len;
			c->q_bytes -= w->b[i]->len;
		}
		c->qn -= n;
		memmove(c->q, c->q + n, (size_t)c->qn * sizeof *c->q);
		/* libuv copies the buffer descriptions; the data stays in w. */
		rc = uv_write(&w->req, &c->h.stream, bufs, (unsigned)n, on_write);
		free(bufs);
		if (rc < 0) {
			for (int i = 0; i < n; i++)
				obuf_unref(w->b[i]);
			c->reply_inflight -= w->reply_bytes;
			free(w);
			conn_close(c, uv_strerror(rc));
			return;
		}
		c->writes++;
	}
}

static void on_write(uv_write_t *req, int status)
{
	struct wreq *w = container_of(req, struct wreq, req);
	struct conn *c = w->c;

	for (int i = 0; i < w->nb; i++)
		obuf_unref(w->b[i]);
	c->reply_inflight -= w->reply_bytes;
	c->writes--;
	free(w);
	if (c->closing)
		return;
	if (status < 0) {
		conn_close(c, uv_strerror(status));
		return;
	}
	if (c->writes == 0)
		conn_flush(c);
	if (conn_pending(c) <= SERVER_REPLY_HIGH / 2) {
		if (c->replay.waiting)
			replay_pump(c);
		conn_process(c);
	}
}

/* Queues nb buffers (taking a reference to each); reply says whether they
 * answer a request (a reply, a refusal, stored lines) rather than relay a
 * live job line. They go out at once when no write is in flight (or the
 * write side is being shut), else with the next write. */
static void conn_write(struct conn *c, struct obuf **b, int nb, bool reply)
{
	if (c->closing)
		return;
	if (c->qn + nb > c->qcap) {
		c->qcap = c->qcap ? 2 * c->qcap : 16;
		if (c->qcap < c->qn + nb)
			c->qcap = c->qn + nb;
		c->q = xrealloc(c->q, (size_t)c->qcap * sizeof *c->q);
	}
	for (int i = 0; i < nb; i++) {
		b[i]->refs++;
		c->q[c->qn++] = (struct qent){b[i], reply};
		c->q_bytes += b[i]->len;
		if (reply)
			c->reply_inflight += b[i]->len;
	}
	if (c->writes == 0 || c->shutting)
		conn_flush(c);
}

/* Writes one JSON object as a line; takes the reference. */
static void conn_send_json(struct conn *c, json_t *o)
{
	char *text = json_dumps(o, JSON_COMPACT);
	struct obuf *b;
	size_t n;

	json_decref(o);
	if (!text) {
		/* Only an invalid string could do this, and every string here
		 * comes from utf8_string or from parsed JSON. */
		fprintf(stderr, "quald: cannot encode a reply\n");
		return;
	}
	n = strlen(text);
	b = obuf_new(n + 1);
	memcpy(b->data, text, n);
	b->data[n] = '\n';
	free(text);
	conn_write(c, &b, 1, true);
	obuf_unref(b);
}

/* A JSON string of s; bytes that could make it invalid UTF-8 (jansson's
 * error text quotes the input) become '?'. */
static json_t *utf8_string(const char *s)
{
	json_t *v = json_string(s);
	char *copy;

	if (v)
		return v;
	copy = xstrdup(s);
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	v = json_string(copy);
	free(copy);
	return v;
}

/* {"type":"reply","op":op,"id":id}: the start of every reply; "id" only when
 * the request had one. */
static json_t *reply_new(const char *op, json_t *id)
{
	json_t *o = json_object();

	json_object_set_new(o, "type", json_string("reply"));
	json_object_set_new(o, "op", json_string(op));
	if (id)
		json_object_set(o, "id", id);
	return o;
}

static void conn_refuse(struct conn *c, const char *op, json_t *id, const char *message)
{
	json_t *o = json_object();

	json_object_set_new(o, "type", json_string("refused"));
	json_object_set_new(o, "op", op ? json_string(op) : json_null());
	json_object_set(o, "id", id ? id : json_null());
	json_object_set_new(o, "message", utf8_string(message));
	conn_send_json(c, o);
}

/* ---- marks: which lines of a job a connection has had ---- */

static struct mark *mark_find(struct conn *c, const char *job)
{
	for (int i = 0; i < c->nmarks; i++)
		if (!strcmp(c->marks[i].job, job))
			return &c->marks[i];
	return NULL;
}

static void mark_set(struct conn *c, const char *job, long seq)
{
	struct mark *m = mark_find(c, job);

	if (!m) {
		if (c->nmarks == c->marks_cap) {
			c->marks_cap = c->marks_cap ? 2 * c->marks_cap : 4;
			c->marks = xrealloc(c->marks, (size_t)c->marks_cap * sizeof *c->marks);
		}
		m = &c->marks[c->nmarks++];
		snprintf(m->job, sizeof m->job, "%s", job);
	}
	m->seq = seq;
}

static void mark_drop(struct conn *c, struct mark *m)
{
	*m = c->marks[--c->nmarks];
}

/* Job ids are "j" and digits, increasing: shorter is older. */
static int job_cmp(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la != lb)
		return la < lb ? -1 : 1;
	return strcmp(a, b);
}

static bool state_is_active(const char *state)
{
	return state && (!strcmp(state, "queued") || !strcmp(state, "running"));
}

/* ---- job lines to connections ---- */

/* Sends a job line that is part of a reply (a replay): flow-controlled by
 * the caller, never refused by the cap. */
static void conn_send_line(struct conn *c, const char *line, size_t len)
{
	struct obuf *b = obuf_new(len + 1);

	memcpy(b->data, line, len);
	b->data[len] = '\n';
	conn_write(c, &b, 1, true);
	obuf_unref(b);
}

/* Sends a live job line, or drops the connection when its pending live
 * output would pass the cap. Replies do not count: they are bounded by the
 * requests, which wait while replies are unread (conn_blocked), and a long
 * show or replay must not cost a reading client its connection. Writes
 * complete in order, so the pending bytes beyond those of unfinished reply
 * writes are live lines. */
static void conn_send_live(struct conn *c, struct obuf *b)
{
	size_t pending = conn_pending(c);
	size_t live = pending > c->reply_inflight ? pending - c->reply_inflight : 0;

	size_t cap = c->srv->cfg.client_buffer;
	uint64_t now = uv_now(c->srv->loop);

	if (live + b->len <= cap) {
		c->over_since = 0;
	} else {
		/* Over the cap: a client that reads in bursts (a terminal paused,
		 * a busy CI runner) gets slow_grace_ms to catch up, during which
		 * its output may reach twice the cap, never more; after that,
		 * or past twice the cap, it is dropped. The check runs as lines
		 * come, so a connection that gets no more lines is not dropped,
		 * but then its pending output does not grow either. */
		if (!c->over_since)
			c->over_since = now ? now : 1;
		if (now - c->over_since >= (uint64_t)c->srv->cfg.slow_grace_ms ||
		    live + b->len > 2 * cap) {
			char why[160];

			snprintf(why, sizeof why, "not reading: %zu bytes of output pending, "
				 "cap %zu, over it for %llu ms", live, cap,
				 (unsigned long long)(now - c->over_since));
			conn_close(c, why);
			return;
		}
	}
	conn_write(c, &b, 1, false);
}

static void conn_maybe_finish(struct conn *c);

/* Whether connection c gets this live line, and the bookkeeping for it. */
static void conn_deliver(struct conn *c, const char *job, long seq, bool verdict,
			 struct obuf *b)
{
	struct replay *rp = &c->replay;
	struct mark *m;

	if (c->closing)
		return;
	if (c->watching) {
		if (rp->active && job_cmp(job, rp->ids[rp->i]) >= 0) {
			/* The replay will read this line from the log. A job
			 * newer than the replay's list joins it. */
			if (job_cmp(job, rp->ids[rp->n - 1]) > 0) {
				if (rp->n == rp->cap) {
					rp->cap *= 2;
					rp->ids = xrealloc(rp->ids, (size_t)rp->cap * sizeof *rp->ids);
				}
				rp->ids[rp->n++] = xstrdup(job);
			}
			return;
		}
		m = mark_find(c, job);
		if (m && seq <= m->seq)
			return;
		if (m && verdict)
			mark_drop(c, m);
		conn_send_live(c, b);
		return;
	}
	m = mark_find(c, job);
	if (!m || seq <= m->seq)
		return;
	m->seq = seq;
	if (verdict) {
		mark_drop(c, m);
		c->nfollows--;
	}
	conn_send_live(c, b);
	if (verdict)
		conn_maybe_finish(c);
}

static void server_status_update(struct server *s)
{
	json_t *st;
	int queued, running;

	if (!s->jobs || s->stopping || !s->cfg.on_status)
		return;
	st = jobs_status_json(s->jobs);
	queued = (int)json_array_size(json_object_get(st, "queued"));
	running = (int)json_array_size(json_object_get(st, "running"));
	json_decref(st);
	if (queued == s->last_queued && running == s->last_running)
		return;
	s->last_queued = queued;
	s->last_running = running;
	s->cfg.on_status(s->cfg.status_ctx, queued, running);
}

static bool line_is_verdict(const char *line, size_t len)
{
	json_t *o = json_loadb(line, len, 0, NULL);
	bool v = o && json_is_string(json_object_get(o, "type")) &&
		 !strcmp(json_string_value(json_object_get(o, "type")), "verdict");

	json_decref(o);
	return v;
}

/* jobs_line_cb: every line of every job, after it is in the job's log. */
static void server_on_line(void *ctx, const char *job, long seq, const char *line,
			   size_t len)
{
	struct server *s = ctx;
	bool verdict = line_is_verdict(line, len);
	struct obuf *b = obuf_new(len + 1);
	struct conn *c, *next;

	memcpy(b->data, line, len);
	b->data[len] = '\n';
	for (c = s->conns; c; c = next) {
		next = c->next;
		conn_deliver(c, job, seq, verdict, b);
	}
	obuf_unref(b);
	if (verdict || seq == 0)
		server_status_update(s);
}

/* ---- watch replay ---- */

struct replay_ctx {
	struct conn *c;
	bool paused;
	long sent;   /* lines sent by this read */
};

static void replay_each(void *ctx, const char *line, size_t len)
{
	struct replay_ctx *x = ctx;

	if (x->paused || x->c->closing)
		return;
	conn_send_line(x->c, line, len);
	x->sent++;
	if (conn_pending(x->c) > SERVER_REPLY_HIGH)
		x->paused = true;
}

static void replay_free(struct replay *rp)
{
	for (int i = 0; i < rp->n; i++)
		free(rp->ids[i]);
	free(rp->ids);
	memset(rp, 0, sizeof *rp);
}

/* Sends stored lines until the replay is done or the client has a
 * SERVER_REPLY_HIGH backlog; on_write calls again once it has read. Lines
 * of one job come in seq order without gaps, so the last one sent is the
 * start seq plus the count. */
static void replay_pump(struct conn *c)
{
	struct replay *rp = &c->replay;
	struct server *s = c->srv;

	rp->waiting = false;
	while (rp->active && !c->closing) {
		struct replay_ctx x = {.c = c};
		const char *state = NULL;
		struct qual_msg msg = {{0}};
		const char *job = rp->ids[rp->i];
		int rc;

		if (s->stopping) {
			/* jobs_close has been called: the logs are not ours to
			 * read any more. */
			replay_free(rp);
			return;
		}
		if (conn_pending(c) > SERVER_REPLY_HIGH) {
			rp->waiting = true;
			return;
		}
		rc = jobs_read_log(s->jobs, job, rp->seq, replay_each, &x, &state, &msg);
		if (rc >= 0 && rp->seq != LONG_MAX)
			rp->seq += x.sent;
		if (x.paused) {
			rp->waiting = true;
			return;
		}
		if (rc >= 0 && state_is_active(state))
			mark_set(c, job, rp->seq);
		rp->i++;
		rp->seq = -1;
		if (rp->i == rp->n) {
			replay_free(rp);
			conn_process(c);
			return;
		}
	}
}

/* ---- requests ---- */

static void on_submitted(void *ctx, int status, const char *job, int position,
			 const char *message);

static void conn_unref(struct conn *c)
{
	if (--c->refs > 0)
		return;
	json_decref(c->submit_id);
	replay_free(&c->replay);
	conn_drop_queue(c);
	free(c->q);
	free(c->marks);
	free(c->in);
	free(c);
}

static void do_submit(struct conn *c, struct request *r)
{
	struct server *s = c->srv;
	struct qual_msg msg = {{0}};
	json_t *st;
	int rc, queued = 0;

	/* The queue's length from the jobs module's status, plus the submits
	 * still being checked (each may join it). */
	st = jobs_status_json(s->jobs);
	if (json_is_array(json_object_get(st, "queued")))
		queued = (int)json_array_size(json_object_get(st, "queued"));
	json_decref(st);
	if (queued + s->submits_pending >= s->cfg.max_queued) {
		char m[96];

		snprintf(m, sizeof m, "queue is full: %d jobs queued", queued + s->submits_pending);
		conn_refuse(c, "submit", r->id, m);
		return;
	}
	s->submits_pending++;
	c->submit_pending = true;
	c->submit_follow = r->submit.follow;
	c->submit_id = r->id ? json_incref(r->id) : NULL;
	c->refs++;
	rc = jobs_submit(c->srv->jobs, &r->submit, on_submitted, c, &msg);
	if (rc < 0) {
		s->submits_pending--;
		c->submit_pending = false;
		conn_refuse(c, "submit", r->id, msg.text[0] ? msg.text : qual_strerror(rc));
		json_decref(c->submit_id);
		c->submit_id = NULL;
		c->refs--;
	}
}

struct follow_ctx {
	struct conn *c;
	long sent;
};

static void follow_each(void *ctx, const char *line, size_t len)
{
	struct follow_ctx *x = ctx;

	conn_send_line(x->c, line, len);
	x->sent++;
}

static void on_submitted(void *ctx, int status, const char *job, int position,
			 const char *message)
{
	struct conn *c = ctx;
	struct server *s = c->srv;
	json_t *id = c->submit_id, *o;

	s->submits_pending--;
	c->submit_pending = false;
	c->submit_id = NULL;
	if (c->closing)
		goto out;
	if (status < 0) {
		conn_refuse(c, "submit", id, message && *message ? message : qual_strerror(status));
		goto out;
	}
	o = reply_new("submit", id);
	json_object_set_new(o, "job", json_string(job));
	json_object_set_new(o, "position", json_integer(position));
	json_object_set_new(o, "state", json_string("queued"));
	conn_send_json(c, o);
	if (c->submit_follow && !c->watching && !s->stopping) {
		/* Whatever the job has logged already, then live lines: the log
		 * read is synchronous and live lines come only from the loop,
		 * so none is lost or sent twice. */
		struct follow_ctx x = {.c = c};
		struct qual_msg msg;
		const char *state = NULL;

		if (jobs_read_log(s->jobs, job, -1, follow_each, &x, &state, &msg) >= 0 &&
		    state_is_active(state)) {
			mark_set(c, job, x.sent - 1);
			c->nfollows++;
		}
	}
out:
	json_decref(id);
	server_status_update(s);
	if (!c->closing)
		conn_process(c);
	conn_unref(c);
}

static void ignore_line(void *ctx, const char *line, size_t len)
{
	(void)ctx;
	(void)line;
	(void)len;
}

static void do_watch(struct conn *c, struct request *r)
{
	struct server *s = c->srv;
	struct replay *rp = &c->replay;
	struct qual_msg msg = {{0}};
	const char *state = NULL;
	char **ids = NULL;
	int n = 0, rc;

	if (c->watching) {
		conn_refuse(c, "watch", r->id, "this connection is already watching");
		return;
	}
	if (s->nwatchers >= s->cfg.max_watchers) {
		char m[96];

		snprintf(m, sizeof m, "too many watchers: %d connections are watching",
			 s->nwatchers);
		conn_refuse(c, "watch", r->id, m);
		return;
	}
	if (r->after_job) {
		/* The job must exist; reading none of its lines says so. */
		rc = jobs_read_log(s->jobs, r->after_job, LONG_MAX, ignore_line, NULL,
				   &state, &msg);
		if (rc < 0) {
			conn_refuse(c, "watch", r->id, msg.text[0] ? msg.text : "unknown job");
			return;
		}
		if (jobs_ids_after(s->jobs, r->after_job, &ids, &n) < 0) {
			conn_refuse(c, "watch", r->id, "cannot list the jobs to replay");
			return;
		}
	}
	conn_send_json(c, reply_new("watch", r->id));
	c->watching = true;
	s->nwatchers++;
	/* Follows are covered by the watch from now on; their marks stay, as
	 * the points up to which those jobs' lines were sent. */
	c->nfollows = 0;
	if (!r->after_job)
		return;
	rp->cap = n + 8;
	rp->ids = xcalloc((size_t)rp->cap, sizeof *rp->ids);
	rp->ids[0] = xstrdup(r->after_job);
	for (int i = 0; i < n; i++)
		rp->ids[i + 1] = xstrdup(ids[i]);
	jobs_ids_free(ids, n);
	rp->n = n + 1;
	rp->i = 0;
	rp->seq = r->after_seq;
	rp->active = true;
	replay_pump(c);
}

struct collect {
	struct obuf *b;
	size_t cap;
};

static void collect_each(void *ctx, const char *line, size_t len)
{
	struct collect *x = ctx;

	if (x->b->len + len + 1 > x->cap) {
		while (x->b->len + len + 1 > x->cap)
			x->cap *= 2;
		x->b = xrealloc(x->b, sizeof *x->b + x->cap);
	}
	memcpy(x->b->data + x->b->len, line, len);
	x->b->data[x->b->len + len] = '\n';
	x->b->len += len + 1;
}

static void do_show(struct conn *c, struct request *r)
{
	struct collect x = {.b = obuf_new(64 << 10), .cap = 64 << 10};
	struct qual_msg msg = {{0}};
	const char *state = NULL;
	struct obuf *b[2];
	json_t *o;
	char *text;
	int rc;

	x.b->len = 0;
	rc = jobs_read_log(c->srv->jobs, r->job, -1, collect_each, &x, &state, &msg);
	if (rc < 0) {
		conn_refuse(c, "show", r->id, msg.text[0] ? msg.text : qual_strerror(rc));
		obuf_unref(x.b);
		return;
	}
	/* The header and the lines in one write: nothing can come between. */
	o = reply_new("show", r->id);
	json_object_set_new(o, "job", json_string(r->job));
	json_object_set_new(o, "state", state ? json_string(state) : json_null());
	json_object_set_new(o, "lines", json_integer(rc));
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	b[0] = obuf_new(strlen(text) + 1);
	memcpy(b[0]->data, text, b[0]->len - 1);
	b[0]->data[b[0]->len - 1] = '\n';
	free(text);
	b[1] = x.b;
	conn_write(c, b, x.b->len ? 2 : 1, true);
	obuf_unref(b[0]);
	obuf_unref(b[1]);
}

static void do_status(struct conn *c, struct request *r)
{
	json_t *o = reply_new("status", r->id);
	json_t *st = jobs_status_json(c->srv->jobs);

	json_object_set_new(o, "version", json_string(QUAL_VERSION));
	json_object_set_new(o, "schema_version", json_integer(QUAL_SCHEMA_VERSION));
	if (json_is_object(st))
		json_object_update(o, st);
	json_decref(st);
	/* The reply's own fields win over whatever the jobs module put there. */
	json_object_set_new(o, "type", json_string("reply"));
	json_object_set_new(o, "op", json_string("status"));
	conn_send_json(c, o);
}

static void do_list(struct conn *c, struct request *r)
{
	json_t *o = reply_new("list", r->id);
	json_t *l = jobs_list_json(c->srv->jobs, r->limit);

	/* jobs_list_json gives the array of jobs, or an object holding "jobs". */
	if (json_is_array(l))
		json_object_set(o, "jobs", l);
	else if (json_is_object(l) && json_is_array(json_object_get(l, "jobs")))
		json_object_set(o, "jobs", json_object_get(l, "jobs"));
	else
		json_object_set_new(o, "jobs", json_array());
	json_decref(l);
	conn_send_json(c, o);
}

static void do_cancel(struct conn *c, struct request *r)
{
	struct qual_msg msg = {{0}};
	json_t *o;
	int rc;

	rc = jobs_cancel(c->srv->jobs, r->job, &msg);
	if (rc < 0) {
		conn_refuse(c, "cancel", r->id, msg.text[0] ? msg.text : qual_strerror(rc));
		return;
	}
	o = reply_new("cancel", r->id);
	json_object_set_new(o, "job", json_string(r->job));
	json_object_set_new(o, "state", json_string("cancelled"));
	conn_send_json(c, o);
	server_status_update(c->srv);
}

/* quarantine: list the crash strikes, or clear one library's. Any peer that
 * got this far may clear: the socket already admits only root, quald's user
 * and its group (or a tcp peer with the token), the same people who may
 * submit and cancel; a clear only lets a library be tried again. */
static void do_quarantine(struct conn *c, struct request *r)
{
	struct qual_msg msg = {{0}};
	json_t *o, *q;
	int rc;

	if (r->action == QUARANTINE_LIST) {
		o = reply_new("quarantine", r->id);
		json_object_set_new(o, "action", json_string("list"));
		q = jobs_quarantine_json(c->srv->jobs);
		if (json_is_object(q) && json_is_array(json_object_get(q, "quarantine")))
			json_object_set(o, "quarantine", json_object_get(q, "quarantine"));
		else
			json_object_set_new(o, "quarantine", json_array());
		json_decref(q);
		conn_send_json(c, o);
		return;
	}
	rc = jobs_quarantine_clear(c->srv->jobs, r->sha256, &msg);
	if (rc == QUAL_ENOENT) {
		char m[160];

		snprintf(m, sizeof m, "no quarantined library with sha256 '%s'", r->sha256);
		conn_refuse(c, "quarantine", r->id, m);
		return;
	}
	if (rc < 0) {
		conn_refuse(c, "quarantine", r->id, msg.text[0] ? msg.text : qual_strerror(rc));
		return;
	}
	o = reply_new("quarantine", r->id);
	json_object_set_new(o, "action", json_string("clear"));
	json_object_set_new(o, "sha256", json_string(r->sha256));
	conn_send_json(c, o);
}

/* Whether a line looks like the start of an HTTP request: a method token
 * then a space, or an HTTP version anywhere. A browser page can make a
 * browser send such lines to 127.0.0.1 (and a JSON body after headers);
 * none of them is ever a request of ours. */
static bool line_is_http(const char *line, size_t len)
{
	static const char *const methods[] = {
		"GET ", "POST ", "PUT ", "OPTIONS ", "HEAD ", "DELETE ", "PATCH ",
		"CONNECT ", "TRACE ",
	};
	static const char version[] = " HTTP/1.";

	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
		size_t n = strlen(methods[i]);

		if (len >= n && !memcmp(line, methods[i], n))
			return true;
	}
	for (size_t i = 0; i + sizeof version - 1 <= len; i++)
		if (!memcmp(line + i, version, sizeof version - 1))
			return true;
	return false;
}

static void on_linger_closed(uv_handle_t *h)
{
	conn_unref(h->data);
}

static void on_linger_timeout(uv_timer_t *t)
{
	conn_close(t->data, "refused peer did not close in time");
}

static void on_linger_shutdown(uv_shutdown_t *req, int status)
{
	struct conn *c = container_of(req, struct conn, shutdown_req);

	if (status < 0)
		conn_close(c, NULL);
}

/* Refuses with one line, shuts the write side once it is written, and
 * lingers (LINGER_MS) reading and discarding until the peer closes. */
static void conn_refuse_close(struct conn *c, const char *op, json_t *id,
			      const char *message)
{
	fprintf(stderr, "quald: connection %lu refused: %s\n", c->serial, message);
	conn_refuse(c, op, id, message);
	if (c->closing || c->shutting)
		return;
	c->shutting = true;
	c->refused = true;
	conn_flush(c);
	if (c->closing)
		return;
	if (uv_shutdown(&c->shutdown_req, &c->h.stream, on_linger_shutdown) < 0) {
		conn_close(c, NULL);
		return;
	}
	uv_timer_init(c->srv->loop, &c->linger);
	c->linger.data = c;
	c->linger_open = true;
	c->refs++;
	uv_timer_start(&c->linger, on_linger_timeout, LINGER_MS, 0);
	c->in_len = c->in_pos = 0;
	if (!c->reading && !c->eof && uv_read_start(&c->h.stream, on_alloc, on_read) == 0)
		c->reading = true;
	if (c->eof)
		conn_close(c, NULL);
}

/* The first line of a TCP connection: an auth with the token, or the
 * connection is refused and closed. The bytes are compared in constant
 * time (CRYPTO_memcmp); the lengths are compared first, which can tell a
 * prober the token's length at most, never its bytes. */
static void conn_authenticate(struct conn *c, const char *line, size_t len)
{
	struct server *s = c->srv;
	struct qual_msg msg = {{0}};
	const char *op_name = NULL;
	struct request r;

	if (line_is_http(line, len)) {
		conn_refuse_close(c, NULL, NULL, "this is quald's control port, not an http "
				  "server: http requests are refused");
		return;
	}
	if (request_parse(line, len, &r, &op_name, &msg) < 0) {
		char m[sizeof msg.text + 64];

		snprintf(m, sizeof m, "authentication required: %s", msg.text);
		conn_refuse_close(c, op_name, r.id, m);
	} else if (r.op != OP_AUTH) {
		conn_refuse_close(c, op_name, r.id, "authentication required: the first "
				  "request on tcp must be {\"op\":\"auth\",\"token\":...}");
	} else if (!s->token) {
		conn_refuse_close(c, "auth", r.id, "quald has no --tcp-token-file: tcp "
				  "connections are refused");
	} else if (strlen(r.token) != strlen(s->token) ||
		   CRYPTO_memcmp(r.token, s->token, strlen(s->token)) != 0) {
		conn_refuse_close(c, "auth", r.id, "wrong token");
	} else {
		c->authed = true;
		conn_send_json(c, reply_new("auth", r.id));
	}
	request_release(&r);
}

static void conn_handle_line(struct conn *c, const char *line, size_t len)
{
	struct qual_msg msg = {{0}};
	const char *op_name = NULL;
	struct request r;

	if (!c->authed) {
		conn_authenticate(c, line, len);
		return;
	}
	if (request_parse(line, len, &r, &op_name, &msg) < 0) {
		conn_refuse(c, op_name, r.id, msg.text);
		request_release(&r);
		return;
	}
	switch (r.op) {
	case OP_SUBMIT: do_submit(c, &r); break;
	case OP_WATCH: do_watch(c, &r); break;
	case OP_STATUS: do_status(c, &r); break;
	case OP_LIST: do_list(c, &r); break;
	case OP_SHOW: do_show(c, &r); break;
	case OP_CANCEL: do_cancel(c, &r); break;
	case OP_QUARANTINE: do_quarantine(c, &r); break;
	case OP_AUTH:
		conn_refuse(c, "auth", r.id, c->is_tcp ? "this connection is already authenticated"
			    : "auth is for tcp connections: this unix socket peer is "
			      "allowed by its user and groups");
		break;
	}
	request_release(&r);
}

/* ---- connections ---- */

static void on_conn_closed(uv_handle_t *h)
{
	struct conn *c = container_of(h, struct conn, h.handle);
	struct server *s = c->srv;

	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nconns--;
	conn_unref(c);
	server_maybe_done(s);
}

static void conn_close(struct conn *c, const char *why)
{
	if (c->closing)
		return;
	c->closing = true;
	if (c->watching)
		c->srv->nwatchers--;
	if (c->linger_open) {
		c->linger_open = false;
		uv_close((uv_handle_t *)&c->linger, on_linger_closed);
	}
	if (why)
		fprintf(stderr, "quald: connection %lu closed: %s\n", c->serial, why);
	c->replay.active = false;
	conn_drop_queue(c);
	uv_close(&c->h.handle, on_conn_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct conn *c = container_of(req, struct conn, shutdown_req);

	(void)status;
	conn_close(c, NULL);
}

/* Closes once everything queued is written. */
static void conn_shutdown(struct conn *c)
{
	if (c->closing || c->shutting)
		return;
	c->shutting = true;
	if (c->reading) {
		uv_read_stop(&c->h.stream);
		c->reading = false;
	}
	/* Everything queued goes to libuv first: the shutdown waits for it. */
	conn_flush(c);
	if (c->closing)
		return;
	if (uv_shutdown(&c->shutdown_req, &c->h.stream, on_shutdown) < 0)
		conn_close(c, NULL);
}

/* A client that has sent everything (EOF) is closed once nothing more can
 * come for it: no request in progress and nothing it follows or watches. */
static void conn_maybe_finish(struct conn *c)
{
	if (c->eof && !c->closing && !c->processing && !c->submit_pending &&
	    !c->replay.active &&
	    !c->watching && c->nfollows == 0 && c->in_pos == c->in_len)
		conn_shutdown(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct conn *c = container_of(h, struct conn, h.handle);

	(void)suggested;
	if (c->in_cap - c->in_len < READ_CHUNK) {
		c->in_cap = c->in_len + READ_CHUNK;
		c->in = xrealloc(c->in, c->in_cap);
	}
	*buf = uv_buf_init(c->in + c->in_len, (unsigned)(c->in_cap - c->in_len));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = container_of(stream, struct conn, h.stream);

	(void)buf;
	if (c->refused) {
		/* Thrown away; the end (or an error) closes it. */
		if (nread < 0) {
			conn_close(c, NULL);
			return;
		}
		c->discarded += (size_t)nread;
		c->in_len = c->in_pos = 0;
		if (c->discarded > LINGER_MAX_BYTES)
			conn_close(c, "refused peer kept sending");
		return;
	}
	if (nread == UV_EOF) {
		c->eof = true;
		uv_read_stop(stream);
		c->reading = false;
	} else if (nread < 0) {
		conn_close(c, uv_strerror((int)nread));
		return;
	} else {
		c->in_len += (size_t)nread;
	}
	conn_process(c);
}

/* Whether the next request must wait: one still in progress, or replies
 * the client has not read. */
static bool conn_blocked(struct conn *c)
{
	return c->submit_pending || c->replay.active ||
	       conn_pending(c) > SERVER_REPLY_HIGH;
}

/* Handles the complete request lines buffered, in order, while nothing
 * blocks; refuses a line that grows past REQUEST_MAX_LINE; reads more when
 * it can go on. */
static void conn_process(struct conn *c)
{
	struct server *s = c->srv;
	bool want;

	if (c->processing || c->closing || c->refused)
		return;
	c->processing = true;
	while (!c->closing && !c->shutting && !s->stopping && !conn_blocked(c)) {
		const char *line;
		size_t used, len;
		enum frame_event ev = frame_next(&c->frame, c->in + c->in_pos,
						 c->in_len - c->in_pos, c->eof,
						 REQUEST_MAX_LINE, &used, &line, &len);

		c->in_pos += used;
		if (ev == FRAME_OVERSIZE) {
			char m[64];

			snprintf(m, sizeof m, "request line over %d bytes", REQUEST_MAX_LINE);
			if (c->authed) {
				conn_refuse(c, NULL, NULL, m);
			} else {
				conn_refuse_close(c, NULL, NULL, m);
				break;
			}
		}
		if (ev != FRAME_LINE)
			break;
		conn_handle_line(c, line, len);
	}
	if (c->closing || c->refused) {
		c->processing = false;
		return;
	}
	if (c->in_pos > 0) {
		memmove(c->in, c->in + c->in_pos, c->in_len - c->in_pos);
		c->in_len -= c->in_pos;
		c->in_pos = 0;
	}
	if (c->in_len == 0 && c->in_cap > 4 * READ_CHUNK) {
		/* Let go of what a long line needed. */
		free(c->in);
		c->in = NULL;
		c->in_cap = 0;
	}
	want = !c->eof && !c->shutting && !s->stopping && !conn_blocked(c);
	if (want && !c->reading) {
		if (uv_read_start(&c->h.stream, on_alloc, on_read) == 0)
			c->reading = true;
	} else if (!want && c->reading) {
		uv_read_stop(&c->h.stream);
		c->reading = false;
	}
	c->processing = false;
	conn_maybe_finish(c);
}

/* Whether the peer of Unix connection c may use quald: root, quald's own
 * effective user, or a member of the configured group. Membership is the
 * peer's groups at connect time as the kernel recorded them (SO_PEERGROUPS,
 * Linux 4.13): its primary and supplementary groups, as the process really
 * had them, with no race on a pid that may be reused (/proc/PID/status could
 * be another process by the time it is read) and no trust in the group
 * database's member list, which says nothing about the groups a process was
 * started with. Without SO_PEERGROUPS only the primary group counts. On
 * refusal, why holds the message. */
static bool peer_allowed(struct conn *c, char *why, size_t whylen)
{
	struct server *s = c->srv;
	struct ucred cred;
	socklen_t len = sizeof cred;
	uv_os_fd_t fd;
	gid_t groups[256];
	int ngroups = 0;

	if (uv_fileno(&c->h.handle, &fd) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		snprintf(why, whylen, "cannot tell who the peer is: %s", strerror(errno));
		return false;
	}
	if (cred.uid == 0 || cred.uid == geteuid())
		return true;
	if (s->cfg.has_group) {
		if (cred.gid == (gid_t)s->cfg.allow_gid)
			return true;
#ifdef SO_PEERGROUPS
		len = sizeof groups;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0)
			ngroups = (int)(len / sizeof groups[0]);
#endif
		for (int i = 0; i < ngroups; i++)
			if (groups[i] == (gid_t)s->cfg.allow_gid)
				return true;
	}
	if (s->cfg.has_group)
		snprintf(why, whylen, "uid %u is not allowed: not root, not quald's user, "
			 "not in group '%s'", (unsigned)cred.uid, s->group_name);
	else
		snprintf(why, whylen, "uid %u is not allowed: not root, not quald's user "
			 "(group '%s' does not exist)", (unsigned)cred.uid, s->group_name);
	return false;
}

static void on_connection(uv_stream_t *ls, int status)
{
	struct listener *l = container_of(ls, struct listener, h.stream);
	struct server *s = l->srv;
	struct conn *c;
	int rc;

	if (status < 0) {
		fprintf(stderr, "quald: cannot accept a connection: %s\n", uv_strerror(status));
		return;
	}
	c = xcalloc(1, sizeof *c);
	c->srv = s;
	c->refs = 1;
	c->serial = ++s->serial;
	if (l->is_tcp)
		uv_tcp_init(s->loop, &c->h.tcp);
	else
		uv_pipe_init(s->loop, &c->h.pipe, 0);
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	rc = uv_accept(ls, &c->h.stream);
	if (rc < 0) {
		conn_close(c, uv_strerror(rc));
		return;
	}
	if (l->is_tcp)
		uv_tcp_nodelay(&c->h.tcp, 1); /* lines go out as they come */
	c->is_tcp = l->is_tcp;
	if (s->nconns > s->cfg.max_connections) {
		char m[96];

		snprintf(m, sizeof m, "too many connections: %d open", s->cfg.max_connections);
		conn_refuse_close(c, NULL, NULL, m);
		return;
	}
	if (!l->is_tcp) {
		char why[256];

		if (!peer_allowed(c, why, sizeof why)) {
			conn_refuse_close(c, NULL, NULL, why);
			return;
		}
		c->authed = true;
	}
	conn_process(c);
}

/* ---- listeners ---- */

static void on_listener_closed(uv_handle_t *h)
{
	struct listener *l = container_of(h, struct listener, h.handle);
	struct server *s = l->srv;

	free(l);
	s->nlisteners--;
	server_maybe_done(s);
}

static void listeners_close(struct server *s)
{
	struct listener *l = s->listeners;

	s->listeners = NULL;
	while (l) {
		struct listener *next = l->next;

		uv_close(&l->h.handle, on_listener_closed);
		l = next;
	}
	if (s->socket_path) {
		unlink(s->socket_path);
		free(s->socket_path);
		s->socket_path = NULL;
	}
}

static struct listener *listener_add(struct server *s, bool is_tcp)
{
	struct listener *l = xcalloc(1, sizeof *l);

	l->srv = s;
	l->is_tcp = is_tcp;
	if (is_tcp)
		uv_tcp_init(s->loop, &l->h.tcp);
	else
		uv_pipe_init(s->loop, &l->h.pipe, 0);
	l->next = s->listeners;
	s->listeners = l;
	s->nlisteners++;
	return l;
}

/* Whether a live daemon answers on the socket at path. A connect to a Unix
 * socket does not wait: it succeeds, is refused (nobody listens: a stale
 * file) or finds the backlog full (somebody listens). */
static bool socket_answers(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	bool answers;

	if (fd < 0)
		return false;
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	answers = connect(fd, (struct sockaddr *)&a, sizeof a) == 0 || errno == EAGAIN;
	close(fd);
	return answers;
}

static int listen_path(struct server *s, const char *path, struct qual_msg *msg)
{
	struct sockaddr_un a;
	struct listener *l;
	struct stat st;
	int rc;

	if (strlen(path) >= sizeof a.sun_path)
		return qual_fail(msg, QUAL_EINVAL, "cannot listen on '%s': a socket path has at most %zu bytes",
				 path, sizeof a.sun_path - 1);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return qual_fail(msg, QUAL_EINVAL, "cannot listen on '%s': it exists and is not a socket",
					 path);
		if (socket_answers(path))
			return qual_fail(msg, QUAL_EINVAL, "cannot listen on '%s': another daemon answers there",
					 path);
		if (unlink(path) < 0 && errno != ENOENT)
			return qual_fail(msg, QUAL_EIO, "cannot remove the stale socket '%s': %s",
					 path, strerror(errno));
	}
	l = listener_add(s, false);
	rc = uv_pipe_bind(&l->h.pipe, path);
	if (rc < 0) {
		/* libuv reports a missing directory as EACCES (for Windows'
		 * sake): say which it was. */
		char *dir = xstrdup(path), *slash = strrchr(dir, '/');

		if (slash)
			*slash = '\0';
		if (slash && slash != dir && stat(dir, &st) < 0 && errno == ENOENT)
			rc = qual_fail(msg, QUAL_ENOENT, "cannot listen on '%s': no directory '%s'",
				       path, dir);
		else
			rc = qual_fail(msg, QUAL_EIO, "cannot listen on '%s': %s", path,
				       uv_strerror(rc));
		free(dir);
		return rc;
	}
	s->socket_path = xstrdup(path);
	/* Before listen, so that nobody connects while the mode is wider. */
	if (chmod(path, 0660) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot set the mode of '%s': %s", path,
				 strerror(errno));
	rc = uv_listen(&l->h.stream, LISTEN_BACKLOG, on_connection);
	if (rc < 0)
		return qual_fail(msg, QUAL_EIO, "cannot listen on '%s': %s", path, uv_strerror(rc));
	return 0;
}

static int listen_fd(struct server *s, int fd, struct qual_msg *msg)
{
	int domain = 0, type = 0, acc = 0, rc;
	socklen_t len = sizeof domain;
	struct listener *l;

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
	    (len = sizeof type, getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len)) < 0 ||
	    (len = sizeof acc, getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len)) < 0)
		return qual_fail(msg, QUAL_EINVAL, "descriptor %d is not a socket: %s", fd,
				 strerror(errno));
	if (type != SOCK_STREAM || !acc ||
	    (domain != AF_UNIX && domain != AF_INET && domain != AF_INET6))
		return qual_fail(msg, QUAL_EINVAL,
				 "descriptor %d is not a listening unix or tcp stream socket", fd);
	l = listener_add(s, domain != AF_UNIX);
	rc = l->is_tcp ? uv_tcp_open(&l->h.tcp, fd) : uv_pipe_open(&l->h.pipe, fd);
	if (rc == 0)
		rc = uv_listen(&l->h.stream, LISTEN_BACKLOG, on_connection);
	if (rc < 0)
		return qual_fail(msg, QUAL_EIO, "cannot listen on descriptor %d: %s", fd,
				 uv_strerror(rc));
	return 0;
}

static int listen_tcp(struct server *s, int port, struct qual_msg *msg)
{
	struct sockaddr_storage ss;
	struct sockaddr_in a;
	struct listener *l;
	int len = sizeof ss, rc;

	uv_ip4_addr("127.0.0.1", port, &a);
	l = listener_add(s, true);
	rc = uv_tcp_bind(&l->h.tcp, (const struct sockaddr *)&a, 0);
	if (rc == 0)
		rc = uv_listen(&l->h.stream, LISTEN_BACKLOG, on_connection);
	if (rc == 0)
		rc = uv_tcp_getsockname(&l->h.tcp, (struct sockaddr *)&ss, &len);
	if (rc < 0)
		return qual_fail(msg, QUAL_EIO, "cannot listen on 127.0.0.1:%d: %s", port,
				 uv_strerror(rc));
	s->tcp_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

/* ---- the server ---- */

/* Frees the server once everything it opened is closed: listeners, the jobs
 * module, every connection, and last the drain timer. */
static void server_maybe_done(struct server *s)
{
	void (*done)(void *ctx);
	void *ctx;

	if (!s->stopping || !s->jobs_closed || s->nconns > 0)
		return;
	if (s->timer_state == TIMER_OPEN) {
		s->timer_state = TIMER_CLOSING;
		uv_close((uv_handle_t *)&s->drain_timer, on_timer_closed);
		return;
	}
	if (s->timer_state != TIMER_CLOSED || s->nlisteners > 0)
		return;
	done = s->done;
	ctx = s->done_ctx;
	free(s->socket_path);
	free(s->token);
	free(s->group_name);
	free(s);
	if (done)
		done(ctx);
}

static void on_timer_closed(uv_handle_t *h)
{
	struct server *s = container_of((uv_timer_t *)h, struct server, drain_timer);

	s->timer_state = TIMER_CLOSED;
	server_maybe_done(s);
}

static void on_drain_timeout(uv_timer_t *t)
{
	struct server *s = container_of(t, struct server, drain_timer);
	struct conn *c, *next;

	for (c = s->conns; c; c = next) {
		next = c->next;
		conn_close(c, "stopping: output not taken in time");
	}
}

static void on_jobs_closed(void *ctx)
{
	struct server *s = ctx;
	struct conn *c, *next;

	s->jobs_closed = true;
	s->jobs = NULL;
	for (c = s->conns; c; c = next) {
		next = c->next;
		conn_shutdown(c);
	}
	if (s->nconns > 0)
		uv_timer_start(&s->drain_timer, on_drain_timeout, SERVER_DRAIN_MS, 0);
	server_maybe_done(s);
}

void server_close(struct server *s, void (*done)(void *ctx), void *ctx)
{
	struct conn *c;

	if (s->stopping)
		return;
	s->stopping = true;
	s->done = done;
	s->done_ctx = ctx;
	listeners_close(s);
	/* No more requests or replays; lines of the jobs being stopped still
	 * go out. */
	for (c = s->conns; c; c = c->next) {
		if (c->reading && !c->closing) {
			uv_read_stop(&c->h.stream);
			c->reading = false;
		}
		replay_free(&c->replay);
	}
	jobs_close(s->jobs, on_jobs_closed, s);
}

int server_tcp_port(const struct server *s)
{
	return s->tcp_port;
}

int server_open(uv_loop_t *loop, const struct server_config *cfg,
		struct server **out, struct qual_msg *msg)
{
	struct server *s = xcalloc(1, sizeof *s);
	int rc = 0;

	*out = NULL;
	s->loop = loop;
	s->cfg = *cfg;
	if (!s->cfg.client_buffer)
		s->cfg.client_buffer = SERVER_DEFAULT_CLIENT_BUFFER;
	if (s->cfg.max_connections <= 0)
		s->cfg.max_connections = SERVER_MAX_CONNECTIONS;
	if (s->cfg.max_watchers <= 0)
		s->cfg.max_watchers = SERVER_DEFAULT_MAX_WATCHERS;
	if (s->cfg.max_queued <= 0)
		s->cfg.max_queued = SERVER_DEFAULT_MAX_QUEUED;
	if (s->cfg.slow_grace_ms < 0)
		s->cfg.slow_grace_ms = 0;
	s->token = cfg->tcp_token ? xstrdup(cfg->tcp_token) : NULL;
	s->cfg.tcp_token = NULL;
	s->group_name = xstrdup(cfg->group_name ? cfg->group_name : "qual");
	s->cfg.group_name = NULL; /* borrowed from the caller: use s->group_name */
	s->tcp_port = -1;
	s->last_queued = s->last_running = -1;
	uv_timer_init(loop, &s->drain_timer);
	s->timer_state = TIMER_OPEN;

	for (int i = 0; i < cfg->nlisten_fds && rc == 0; i++)
		rc = listen_fd(s, cfg->listen_fds[i], msg);
	if (rc == 0 && cfg->socket_path)
		rc = listen_path(s, cfg->socket_path, msg);
	if (rc == 0 && cfg->tcp_port >= 0)
		rc = listen_tcp(s, cfg->tcp_port, msg);
	if (rc == 0 && !s->listeners)
		rc = qual_fail(msg, QUAL_EINVAL, "nothing to listen on");
	if (rc == 0)
		rc = jobs_open(loop, cfg->jobs, server_on_line, s, &s->jobs, msg);
	if (rc < 0) {
		/* Close what was opened; the caller runs the loop to finish. */
		s->stopping = true;
		s->jobs_closed = true;
		s->jobs = NULL;
		listeners_close(s);
		server_maybe_done(s);
		return rc;
	}
	*out = s;
	server_status_update(s);
	return 0;
}
