/* A connection of quald's server (server_internal.h): its write queue,
 * the cap on what it may leave unread, authentication, refusal and linger,
 * reading and framing its requests. */
#include "daemon/oplog.h"
#include "daemon/peer.h"
#include "daemon/replycap.h"
#include "daemon/server_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "common/text.h"
#include "common/xalloc.h"


/* Why a connection closed by error errcode goes in the journal, or NULL
 * for none: a client that went away (^C, a closed pipe, a reset) is an
 * ordinary end, not the operator's business. */
static const char *close_why(int errcode)
{
	if (errcode == UV_EPIPE || errcode == UV_ECONNRESET || errcode == UV_EOF)
		return NULL;
	return uv_strerror(errcode);
}

/* One write handed to libuv: every line that was queued for the connection
 * when it was issued (docs/quald.md, "Slow and vanishing clients"). */
struct wreq {
	uv_write_t req;
	struct conn *c;
	size_t reply_bytes;  /* of replies (not live lines), for the cap */
	size_t stored_bytes; /* of stored lines, counted in replycap.h's bound */
	int nb;
	struct obuf *b[];
};

static void on_write(uv_write_t *req, int status);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

/* ---- output ---- */

struct obuf *conn__line_new(const char *text, size_t len)
{
	struct obuf *b = xmalloc(sizeof *b + len + 1);

	b->refs = 1;
	b->len = len + 1;
	memcpy(b->data, text, len);
	b->data[len] = '\n';
	return b;
}

void conn__obuf_unref(struct obuf *b)
{
	if (b && --b->refs == 0)
		free(b);
}

/* Bytes of output not yet written: queued, and in libuv's writes. */
size_t conn__pending(struct conn *c)
{
	return c->q_bytes + uv_stream_get_write_queue_size(&c->h.stream);
}

/* Drops what is queued (the connection is closing). */
static void conn_drop_queue(struct conn *c)
{
	size_t stored = 0;

	for (int i = 0; i < c->qn; i++) {
		if (c->q[i].reply)
			c->reply_inflight -= c->q[i].b->len;
		if (c->q[i].stored)
			stored += c->q[i].b->len;
		conn__obuf_unref(c->q[i].b);
	}
	c->qn = 0;
	c->q_bytes = 0;
	for (int i = 0; i < c->nheld; i++)
		conn__obuf_unref(c->held[i]);
	c->nheld = 0;
	c->held_bytes = 0;
	replycap_give(stored);
}


/* Hands everything queued to libuv, in writes of at most WRITE_MAX_BUFS
 * lines, each all replies or all live lines (so that a reply's bytes leave
 * the cap's count, and its buffer is freed, when it is written, not when the
 * live lines written with it are), and a buffer over WRITE_ALONE_BYTES (a
 * long line) in a write of its own. */
#define WRITE_MAX_BUFS 1024
#define WRITE_ALONE_BYTES ((size_t)64 << 10)
static void conn_flush(struct conn *c)
{
	while (c->state != CONN_STATE_CLOSING && c->qn > 0) {
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
			if (c->q[i].stored)
				w->stored_bytes += w->b[i]->len;
			c->q_bytes -= w->b[i]->len;
		}
		c->qn -= n;
		memmove(c->q, c->q + n, (size_t)c->qn * sizeof *c->q);
		/* libuv copies the buffer descriptions; the data stays in w. */
		rc = uv_write(&w->req, &c->h.stream, bufs, (unsigned)n, on_write);
		free(bufs);
		if (rc < 0) {
			for (int i = 0; i < n; i++)
				conn__obuf_unref(w->b[i]);
			c->reply_inflight -= w->reply_bytes;
			replycap_give(w->stored_bytes);
			free(w);
			conn__close(c, close_why(rc));
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
		conn__obuf_unref(w->b[i]);
	c->reply_inflight -= w->reply_bytes;
	c->writes--;
	/* Room for other replies' stored lines (which may be woken here). */
	replycap_give(w->stored_bytes);
	free(w);
	if (c->state == CONN_STATE_CLOSING)
		return;
	if (status < 0) {
		conn__close(c, close_why(status));
		return;
	}
	if (c->writes == 0)
		conn_flush(c);
	if (c->replay.waiting && conn__pending(c) <= REPLYCAP_CLIENT)
		fanout__replay_pump(c);
	if (c->state != CONN_STATE_CLOSING && conn__pending(c) <= SERVER_REPLY_HIGH / 2)
		conn__process(c);
}

/* Queues nb buffers (taking a reference to each); reply says whether they
 * answer a request (a reply, a refusal, stored lines) rather than relay a
 * live job line. They go out at once when no write is in flight (or the
 * write side is being shut), else with the next write. */
static void conn_queue(struct conn *c, struct obuf **b, int nb, bool reply, bool stored)
{
	if (c->state == CONN_STATE_CLOSING)
		return;
	XGROW(c->q, c->qn + nb, c->qcap);
	for (int i = 0; i < nb; i++) {
		b[i]->refs++;
		c->q[c->qn++] = (struct qent){b[i], reply, stored};
		c->q_bytes += b[i]->len;
		if (reply)
			c->reply_inflight += b[i]->len;
		if (stored)
			replycap_take(b[i]->len);
	}
	if (c->writes == 0 || c->state != CONN_STATE_OPEN)
		conn_flush(c);
}

void conn__write(struct conn *c, struct obuf **b, int nb, bool reply)
{
	conn_queue(c, b, nb, reply, false);
}

/* Writes one JSON object as a line; takes the reference. */
void conn__send_json(struct conn *c, json_t *o)
{
	char *text = json_dumps(o, JSON_COMPACT);
	struct obuf *b;

	json_decref(o);
	if (!text) {
		/* Only an invalid string could do this, and every string here
		 * comes from text_json_str or from parsed JSON. */
		oplog(LOG_ERR, "cannot encode a reply");
		return;
	}
	b = conn__line_new(text, strlen(text));
	free(text);
	conn__write(c, &b, 1, true);
	conn__obuf_unref(b);
}

/* {"type":"reply","op":op,"id":id}: the start of every reply; "id" only when
 * the request had one. */
json_t *conn__reply_new(const char *op, json_t *id)
{
	json_t *o = json_object();

	json_object_set_new(o, "type", json_string("reply"));
	json_object_set_new(o, "op", json_string(op));
	if (id)
		json_object_set(o, "id", id);
	return o;
}

/* {"type":"refused",...}: a new reference. */
static json_t *refusal_new(const char *op, json_t *id, const char *message)
{
	json_t *o = json_object();

	json_object_set_new(o, "type", json_string("refused"));
	json_object_set_new(o, "op", op ? json_string(op) : json_null());
	json_object_set(o, "id", id ? id : json_null());
	json_object_set_new(o, "message", text_json_str(message));
	return o;
}

void conn__refuse(struct conn *c, const char *op, json_t *id, const char *message)
{
	conn__send_json(c, refusal_new(op, id, message));
}

/* ---- job lines to connections ---- */

/* Sends a stored job line that is part of a reply (a show, a replay):
 * flow-controlled by the caller, never refused by the cap, counted in
 * replycap.h's bound until written. */
void conn__send_line(struct conn *c, const char *line, size_t len)
{
	struct obuf *b = conn__line_new(line, len);

	conn_queue(c, &b, 1, true, true);
	conn__obuf_unref(b);
}

/* Holds a live line while a show's lines go out (they come in one piece),
 * under the same bound as live output; false when the connection is
 * closed for it. */
static bool conn_hold(struct conn *c, struct obuf *b)
{
	size_t cap = c->srv->cfg.client_buffer;

	if (c->held_bytes + b->len > 2 * cap) {
		char why[160];

		snprintf(why, sizeof why, "not reading: %zu bytes of live lines held behind "
			 "a show, cap %zu", c->held_bytes, 2 * cap);
		c->srv->stats.clients_dropped++;
		conn__close(c, why);
		return false;
	}
	XGROW(c->held, c->nheld + 1, c->held_cap);
	b->refs++;
	c->held[c->nheld++] = b;
	c->held_bytes += b->len;
	return true;
}

void conn__release_held(struct conn *c)
{
	int n = c->nheld;
	struct obuf **held = c->held;

	c->held = NULL;
	c->nheld = c->held_cap = 0;
	c->held_bytes = 0;
	for (int i = 0; i < n; i++) {
		conn__send_live(c, held[i]);
		conn__obuf_unref(held[i]);
	}
	free(held);
}

/* Sends a live job line, or drops the connection when its pending live
 * output would pass the cap. Replies do not count: they are bounded by the
 * requests, which wait while replies are unread (conn_blocked), and a long
 * show or replay must not cost a reading client its connection. Writes
 * complete in order, so the pending bytes beyond those of unfinished reply
 * writes are live lines. */
void conn__send_live(struct conn *c, struct obuf *b)
{
	size_t pending = conn__pending(c);
	size_t live = pending > c->reply_inflight ? pending - c->reply_inflight : 0;

	size_t cap = c->srv->cfg.client_buffer;
	uint64_t now = uv_now(c->srv->loop);

	if (c->replay.active && c->replay.show) {
		conn_hold(c, b);
		return;
	}
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
			c->srv->stats.clients_dropped++;
			conn__close(c, why);
			return;
		}
	}
	conn__write(c, &b, 1, false);
}

void conn__unref(struct conn *c)
{
	if (--c->refs > 0)
		return;
	json_decref(c->submit_id);
	fanout__replay_free(&c->replay);
	conn_drop_queue(c);
	free(c->held);
	free(c->q);
	free(c->marks);
	free(c->in);
	free(c);
}

/* ---- what a connection counts against ---- */

static void unauth_remove(struct conn *c)
{
	struct server *s = c->srv;

	*(c->uprev ? &c->uprev->unext : &s->unauth_head) = c->unext;
	*(c->unext ? &c->unext->uprev : &s->unauth_tail) = c->uprev;
	c->uprev = c->unext = NULL;
	s->nunauth--;
}

/* Moves c from the kind it counts against to kind. */
static void conn_count(struct conn *c, enum conn_kind kind)
{
	struct server *s = c->srv;

	switch (c->kind) {
	case CONN_NONE: break;
	case CONN_UNIX: s->nunix--; break;
	case CONN_TCP: s->ntcp--; break;
	case CONN_TCP_UNAUTH: unauth_remove(c); break;
	}
	c->kind = kind;
	switch (kind) {
	case CONN_NONE: break;
	case CONN_UNIX: s->nunix++; break;
	case CONN_TCP: s->ntcp++; break;
	case CONN_TCP_UNAUTH:
		/* The newest, at the tail: the list is in accept order, so the
		 * head is always the next deadline. */
		c->uprev = s->unauth_tail;
		*(s->unauth_tail ? &s->unauth_tail->unext : &s->unauth_head) = c;
		s->unauth_tail = c;
		s->nunauth++;
		break;
	}
}

/* Closes c now with a refused line, written only if the socket takes it
 * at once (a client that does not read, or has closed, gets none): for a
 * connection closed for the server's sake, not for a request of its own. */
static void conn_drop(struct conn *c, const char *op, json_t *id, const char *message)
{
	json_t *o = refusal_new(op, id, message);
	char *text = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	if (text && c->state == CONN_STATE_OPEN && c->writes == 0) {
		size_t n = strlen(text);
		uv_buf_t b[2] = {uv_buf_init(text, (unsigned)n), uv_buf_init("\n", 1)};

		uv_try_write(&c->h.stream, b, 2);
	}
	free(text);
	conn__close(c, NULL);
}

bool conn__evict_unauth(struct server *s, const char *message)
{
	struct conn *c = s->unauth_head;

	if (!c)
		return false;
	server__ratelog(s, &s->log_unauth, "tcp connection %lu closed: %s", c->serial, message);
	conn_drop(c, NULL, NULL, message);
	return true;
}

static void on_auth_deadline(uv_timer_t *t)
{
	struct server *s = container_of(t, struct server, auth_timer);
	uint64_t now = uv_now(s->loop), limit = (uint64_t)s->cfg.auth_timeout_ms;
	char m[96];

	snprintf(m, sizeof m, "not authenticated within %.3g s", limit / 1000.0);
	while (s->unauth_head && now - s->unauth_head->accepted_ms >= limit)
		conn__evict_unauth(s, m);
	conn__auth_timer_arm(s);
}

void conn__auth_timer_arm(struct server *s)
{
	struct conn *c = s->unauth_head;
	uint64_t now = uv_now(s->loop), due;

	if (!c || s->timers_closing) {
		if (s->timers_open && !s->timers_closing)
			uv_timer_stop(&s->auth_timer);
		return;
	}
	due = c->accepted_ms + (uint64_t)s->cfg.auth_timeout_ms;
	uv_timer_start(&s->auth_timer, on_auth_deadline, due > now ? due - now : 0, 0);
}

/* ---- refusal and authentication ---- */

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
	conn__unref(h->data);
}

static void on_linger_timeout(uv_timer_t *t)
{
	conn__close(t->data, "refused peer did not close in time");
}

static void on_linger_shutdown(uv_shutdown_t *req, int status)
{
	struct conn *c = container_of(req, struct conn, shutdown_req);

	if (status < 0)
		conn__close(c, NULL);
}

/* Refuses with one line, shuts the write side once it is written, and
 * lingers (LINGER_MS) reading and discarding until the peer closes. */
static void conn_refuse_close(struct conn *c, const char *op, json_t *id,
			      const char *message)
{
	/* Refusals before a TCP auth are whatever anyone on the host sends:
	 * logged at a rate, not one line each. */
	if (c->kind == CONN_TCP_UNAUTH)
		server__ratelog(c->srv, &c->srv->log_unauth, "tcp connection %lu refused: %s",
				c->serial, message);
	else
		oplog_warn("connection %lu refused: %s", c->serial, message);
	/* Out of every limit: refused, it holds no one's place. */
	conn_count(c, CONN_NONE);
	if (c->srv->nlinger >= SERVER_MAX_LINGER) {
		conn_drop(c, op, id, message);
		return;
	}
	conn__refuse(c, op, id, message);
	if (c->state != CONN_STATE_OPEN)
		return;
	c->state = CONN_STATE_REFUSED;
	conn_flush(c);
	if (c->state == CONN_STATE_CLOSING)
		return;
	if (uv_shutdown(&c->shutdown_req, &c->h.stream, on_linger_shutdown) < 0) {
		conn__close(c, NULL);
		return;
	}
	uv_timer_init(c->srv->loop, &c->linger);
	c->linger.data = c;
	c->flags |= CONN_F_LINGER;
	c->srv->nlinger++;
	c->refs++;
	uv_timer_start(&c->linger, on_linger_timeout, LINGER_MS, 0);
	c->in_len = c->in_pos = 0;
	if (!(c->flags & (CONN_F_READING | CONN_F_EOF)) &&
	    uv_read_start(&c->h.stream, on_alloc, on_read) == 0)
		c->flags |= CONN_F_READING;
	if (c->flags & CONN_F_EOF)
		conn__close(c, NULL);
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
	} else if (s->ntcp >= s->cfg.max_connections) {
		char m[96];

		snprintf(m, sizeof m, "too many connections: %d tcp connections open", s->ntcp);
		conn_refuse_close(c, "auth", r.id, m);
	} else {
		conn_count(c, CONN_TCP);
		c->flags |= CONN_F_AUTHED;
		conn__send_json(c, conn__reply_new("auth", r.id));
	}
	request_release(&r);
}

/* ---- connections ---- */

static void on_conn_closed(uv_handle_t *h)
{
	struct conn *c = container_of(h, struct conn, h.handle);
	struct server *s = c->srv;

	/* Out of the server's list: the pointer to c is its predecessor's
	 * next, or the head. */
	*(c->prev ? &c->prev->next : &s->conns) = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nconns--;
	conn__unref(c);
	server__maybe_done(s);
}

void conn__close(struct conn *c, const char *why)
{
	if (c->state == CONN_STATE_CLOSING)
		return;
	c->state = CONN_STATE_CLOSING;
	conn_count(c, CONN_NONE);
	if (c->flags & CONN_F_WATCHING)
		c->srv->nwatchers--;
	if (c->flags & CONN_F_LINGER) {
		c->flags &= ~CONN_F_LINGER;
		c->srv->nlinger--;
		uv_close((uv_handle_t *)&c->linger, on_linger_closed);
	}
	if (why)
		oplog_warn("connection %lu closed: %s", c->serial, why);
	fanout__replay_free(&c->replay);
	conn_drop_queue(c);
	uv_close(&c->h.handle, on_conn_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct conn *c = container_of(req, struct conn, shutdown_req);

	(void)status;
	conn__close(c, NULL);
}

/* Closes once everything queued is written. */
void conn__shutdown(struct conn *c)
{
	if (c->state != CONN_STATE_OPEN)
		return;
	c->state = CONN_STATE_SHUTTING;
	if (c->flags & CONN_F_READING) {
		uv_read_stop(&c->h.stream);
		c->flags &= ~CONN_F_READING;
	}
	/* Everything queued goes to libuv first: the shutdown waits for it. */
	conn_flush(c);
	if (c->state == CONN_STATE_CLOSING)
		return;
	if (uv_shutdown(&c->shutdown_req, &c->h.stream, on_shutdown) < 0)
		conn__close(c, NULL);
}

/* A client that has sent everything (EOF) is closed once nothing more can
 * come for it: no request in progress and nothing it follows or watches. */
void conn__maybe_finish(struct conn *c)
{
	if ((c->flags & CONN_F_EOF) && c->state != CONN_STATE_CLOSING &&
	    !(c->flags & (CONN_F_PROCESSING | CONN_F_SUBMIT_PENDING | CONN_F_WATCHING)) &&
	    !c->replay.active && c->nfollows == 0 && c->in_pos == c->in_len)
		conn__shutdown(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct conn *c = container_of(h, struct conn, h.handle);

	(void)suggested;
	if ((c->flags & CONN_F_TCP) && !(c->flags & CONN_F_AUTHED)) {
		/* Before its auth a TCP connection costs at most this buffer:
		 * one byte over the cap tells conn__process the line is too
		 * long. */
		if (c->in_cap < SERVER_MAX_AUTH_BYTES + 1) {
			c->in = xrealloc(c->in, SERVER_MAX_AUTH_BYTES + 1);
			c->in_cap = SERVER_MAX_AUTH_BYTES + 1;
		}
		*buf = uv_buf_init(c->in + c->in_len, (unsigned)(c->in_cap - c->in_len));
		return;
	}
	XGROW(c->in, c->in_len + READ_CHUNK, c->in_cap);
	*buf = uv_buf_init(c->in + c->in_len, (unsigned)(c->in_cap - c->in_len));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = container_of(stream, struct conn, h.stream);

	(void)buf;
	if (c->state == CONN_STATE_REFUSED) {
		/* Thrown away; the end (or an error) closes it. */
		if (nread < 0) {
			conn__close(c, NULL);
			return;
		}
		c->discarded += (size_t)nread;
		c->in_len = c->in_pos = 0;
		if (c->discarded > LINGER_MAX_BYTES)
			conn__close(c, "refused peer kept sending");
		return;
	}
	if (nread == UV_EOF) {
		c->flags |= CONN_F_EOF;
		uv_read_stop(stream);
		c->flags &= ~CONN_F_READING;
	} else if (nread < 0) {
		conn__close(c, close_why((int)nread));
		return;
	} else {
		c->in_len += (size_t)nread;
	}
	conn__process(c);
}

/* Whether the next request must wait: one still in progress, or replies
 * the client has not read. */
static bool conn_blocked(struct conn *c)
{
	return (c->flags & CONN_F_SUBMIT_PENDING) || c->replay.active ||
	       conn__pending(c) > SERVER_REPLY_HIGH;
}

/* Handles the complete request lines buffered, in order, while nothing
 * blocks; refuses a line that grows past REQUEST_MAX_LINE; reads more when
 * it can go on. */
void conn__process(struct conn *c)
{
	struct server *s = c->srv;
	bool want;

	if ((c->flags & CONN_F_PROCESSING) || c->state == CONN_STATE_CLOSING ||
	    c->state == CONN_STATE_REFUSED)
		return;
	c->flags |= CONN_F_PROCESSING;
	while (c->state == CONN_STATE_OPEN && !s->stopping && !conn_blocked(c)) {
		const char *line;
		size_t used, len;
		size_t max = c->flags & CONN_F_AUTHED ? REQUEST_MAX_LINE : SERVER_MAX_AUTH_BYTES;
		enum frame_event ev = frame_next(&c->frame, c->in + c->in_pos,
						 c->in_len - c->in_pos,
						 (c->flags & CONN_F_EOF) != 0,
						 max, &used, &line, &len);

		c->in_pos += used;
		if (ev == FRAME_OVERSIZE) {
			char m[96];

			if (c->flags & CONN_F_AUTHED)
				snprintf(m, sizeof m, "request line over %d bytes", REQUEST_MAX_LINE);
			else
				snprintf(m, sizeof m, "authentication required: a first line of "
					 "over %d bytes", SERVER_MAX_AUTH_BYTES);
			if (c->flags & CONN_F_AUTHED) {
				conn__refuse(c, NULL, NULL, m);
			} else {
				conn_refuse_close(c, NULL, NULL, m);
				break;
			}
		}
		if (ev != FRAME_LINE)
			break;
		if (c->flags & CONN_F_AUTHED)
			server__handle_line(c, line, len);
		else
			conn_authenticate(c, line, len);
	}
	if (c->state == CONN_STATE_CLOSING || c->state == CONN_STATE_REFUSED) {
		c->flags &= ~CONN_F_PROCESSING;
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
	want = !(c->flags & CONN_F_EOF) && c->state == CONN_STATE_OPEN && !s->stopping &&
	       !conn_blocked(c);
	if (want && !(c->flags & CONN_F_READING)) {
		if (uv_read_start(&c->h.stream, on_alloc, on_read) == 0)
			c->flags |= CONN_F_READING;
	} else if (!want && (c->flags & CONN_F_READING)) {
		uv_read_stop(&c->h.stream);
		c->flags &= ~CONN_F_READING;
	}
	c->flags &= ~CONN_F_PROCESSING;
	conn__maybe_finish(c);
}

/* Whether the peer of Unix connection c may use quald (peer.h). */
static bool conn_peer_allowed(struct conn *c, char *why, size_t whylen)
{
	struct server *s = c->srv;
	struct peer_rule rule = {s->cfg.has_group, s->cfg.allow_gid, s->group_name};
	uv_os_fd_t fd;

	if (uv_fileno(&c->h.handle, &fd) < 0) {
		snprintf(why, whylen, "cannot tell who the peer is: no descriptor");
		return false;
	}
	return peer_allowed(fd, &rule, why, whylen);
}

void conn__accepted(struct listener *l, int fd)
{
	struct server *s = l->srv;
	struct conn *c;
	int rc;

	c = xcalloc(1, sizeof *c);
	c->srv = s;
	c->refs = 1;
	c->serial = ++s->serial;
	if (l->is_tcp)
		c->flags |= CONN_F_TCP;
	c->accepted_ms = uv_now(s->loop);
	if (l->is_tcp) {
		uv_tcp_init(s->loop, &c->h.tcp);
		rc = uv_tcp_open(&c->h.tcp, fd);
	} else {
		uv_pipe_init(s->loop, &c->h.pipe, 0);
		rc = uv_pipe_open(&c->h.pipe, fd);
	}
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	if (rc < 0) {
		/* The handle did not take fd. */
		close(fd);
		conn__close(c, close_why(rc));
		return;
	}
	if (l->is_tcp) {
		uv_tcp_nodelay(&c->h.tcp, 1); /* lines go out as they come */
		/* The oldest goes: an honest client authenticates in its first
		 * milliseconds, so the oldest unauthenticated connection is the
		 * one most likely never to, and refusing the newest instead would
		 * let whoever holds max_unauth idle connections lock every new
		 * TCP client out until the deadline. */
		if (s->nunauth >= s->cfg.max_unauth) {
			char m[96];

			snprintf(m, sizeof m, "%d unauthenticated tcp connections open: the "
				 "oldest is closed", s->nunauth);
			conn__evict_unauth(s, m);
		}
		conn_count(c, CONN_TCP_UNAUTH);
		if (s->unauth_head == c)
			conn__auth_timer_arm(s);
	} else {
		char why[256];

		if (s->nunix >= s->cfg.max_connections) {
			snprintf(why, sizeof why, "too many connections: %d open", s->nunix);
			conn_refuse_close(c, NULL, NULL, why);
			return;
		}
		if (!conn_peer_allowed(c, why, sizeof why)) {
			conn_refuse_close(c, NULL, NULL, why);
			return;
		}
		conn_count(c, CONN_UNIX);
		c->flags |= CONN_F_AUTHED;
	}
	conn__process(c);
}
