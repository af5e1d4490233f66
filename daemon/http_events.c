/* quald's HTTP endpoint: event streams (server-sent events), H2O generators
 * fed from the server's fan-out (http_on_line) (http_internal.h). */
#include "daemon/http_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/xalloc.h"
#include "proto/line.h"

static void stream_put(struct stream *st, const char *s, size_t len)
{
	if (st->outlen + len > st->outcap) {
		while (st->outlen + len > st->outcap)
			st->outcap = st->outcap ? st->outcap * 2 : 16 << 10;
		st->out = xrealloc(st->out, st->outcap);
	}
	memcpy(st->out + st->outlen, s, len);
	st->outlen += len;
}

/* One line as an event: "id: SEQ" (job streams) and "data: LINE". */
static void stream_event(struct stream *st, long seq, const char *line, size_t len)
{
	char id[48];

	if (seq >= 0) {
		int n = snprintf(id, sizeof id, "id: %ld\n", seq);

		stream_put(st, id, (size_t)n);
	}
	stream_put(st, "data: ", 6);
	stream_put(st, line, len);
	stream_put(st, "\n\n", 2);
}

static void stream_end_event(struct stream *st)
{
	stream_put(st, "event: end\ndata: {}\n\n", 21);
	st->final = true;
}

static void replay_step(struct stream *st);

/* Hands what waits to H2O, unless a send is in flight (then proceed does).
 * A replay reads its next chunk first when nothing waits. */
void http__stream_flush(struct stream *st)
{
	h2o_iovec_t buf;

	if (st->sending || st->ended)
		return;
	if (st->drop) {
		st->ended = true;
		h2o_send(st->req, NULL, 0, H2O_SEND_STATE_ERROR);
		return;
	}
	if (st->replay && !st->outlen)
		replay_step(st);
	if (!st->outlen && !st->final)
		return;
	free(st->inflight);
	st->inflight = st->out;
	st->counted_inflight = st->counted_out;
	st->counted_out = 0;
	buf = h2o_iovec_init(st->out, st->outlen);
	st->out = NULL;
	st->outlen = st->outcap = 0;
	st->sending = true;
	if (st->final)
		st->ended = true;
	h2o_send(st->req, &buf, buf.len ? 1 : 0,
		 st->final ? H2O_SEND_STATE_FINAL : H2O_SEND_STATE_IN_PROGRESS);
}

static void stream_proceed(h2o_generator_t *g, h2o_req_t *req)
{
	struct stream *st = (struct stream *)g;

	(void)req;
	st->sending = false;
	free(st->inflight);
	st->inflight = NULL;
	replycap_give(st->counted_inflight);
	st->counted_inflight = 0;
	http__stream_flush(st);
}

static void stream_stop(h2o_generator_t *g, h2o_req_t *req)
{
	(void)req;
	((struct stream *)g)->ended = true;
	replycap_unwait(&((struct stream *)g)->waiter);
}

static void stream_dispose(void *p)
{
	struct stream *st = p;
	struct http *h = st->http;

	if (st->prev)
		st->prev->next = st->next;
	else
		h->streams = st->next;
	if (st->next)
		st->next->prev = st->prev;
	h->st.streams--;
	replycap_unwait(&st->waiter);
	jobs_cursor_free(st->replay);
	free(st->out);
	free(st->inflight);
	replycap_give(st->counted_out + st->counted_inflight);
}

/* Ends a stream whose client does not read. */
static void stream_check(struct stream *st)
{
	if (st->outlen > HTTP_STREAM_MAX_PENDING && !st->drop) {
		st->drop = true;
		free(st->out);
		st->out = NULL;
		st->outlen = st->outcap = 0;
		replycap_give(st->counted_out);
		st->counted_out = 0;
		st->http->st.streams_dropped++;
	}
}

static void stream_wake(struct replycap_waiter *w)
{
	http__stream_flush(container_of(w, struct stream, waiter));
}

static struct stream *stream_start(struct http *h, h2o_req_t *req, const char *job)
{
	struct stream *st = h2o_mem_alloc_shared(&req->pool, sizeof *st, stream_dispose);

	memset(st, 0, sizeof *st);
	st->gen.proceed = stream_proceed;
	st->gen.stop = stream_stop;
	st->req = req;
	st->http = h;
	st->seq = -1;
	replycap_waiter_init(&st->waiter, stream_wake);
	snprintf(st->job, sizeof st->job, "%s", job ? job : "");
	st->next = h->streams;
	if (h->streams)
		h->streams->prev = st;
	h->streams = st;
	h->st.streams++;
	h->st.requests++;
	req->res.status = 200;
	req->res.reason = "OK";
	req->http1_is_persistent = 0;
	http__add_header(req, H2O_TOKEN_CONTENT_TYPE, "text/event-stream; charset=utf-8");
	http__add_header(req, H2O_TOKEN_CACHE_CONTROL, "no-store");
	h2o_start_response(req, &st->gen);
	/* The first bytes go at once, so that the client sees the stream open. */
	stream_put(st, ": qual\n\n", 8);
	return st;
}

/* A stored line of a job stream's replay: its seq (for the event's id) and
 * whether it is the verdict line. */
struct replay {
	struct stream *st;
	bool verdict;
};

/* A stored line, parsed once by the cursor's read (JOBS_READ_PARSED):
 * whether it is the verdict, which ends the stream, is read from it. */
static bool replay_line(void *ctx, const struct jobs_record *rec)
{
	struct replay *r = ctx;

	if (rec->seq > r->st->seq)
		r->st->seq = rec->seq;
	if (line_is_verdict(rec->line))
		r->verdict = true;
	stream_event(r->st, r->st->seq, rec->text, rec->len);
	return false;
}

/* The replay's next chunk into out, when the bound has room (else the
 * stream waits to be woken). Once it has read every line there is, the
 * stream ends when the job has ended, or goes on with live lines. */
static void replay_step(struct stream *st)
{
	struct replay r = { st, false };
	struct qual_msg msg = {{0}};
	enum job_state state;
	size_t before = st->outlen;
	bool done = false;
	int rc;

	if (!replycap_room()) {
		replycap_wait(&st->waiter);
		return;
	}
	/* Until a chunk gives an event: one of lines before the resume point
	 * (or of bad records) gives none, and no send would call back. */
	do
		rc = jobs_cursor_next(st->http->jobs, st->replay, REPLYCAP_CHUNK, replay_line,
				      &r, &done, &state, &msg);
	while (rc == 0 && !done);
	replycap_take(st->outlen - before);
	st->counted_out += st->outlen - before;
	if (rc >= 0 && !done && !r.verdict)
		return;
	jobs_cursor_free(st->replay);
	st->replay = NULL;
	if (rc < 0 || r.verdict || vocab_state_ended(state) ||
	    jobs_log_complete(st->http->jobs, st->job))
		stream_end_event(st);
}

/* Last-Event-ID (an EventSource reconnecting) or ?after=SEQ: the stream
 * resumes after that line. */
static long resume_after(h2o_req_t *req)
{
	ssize_t i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("last-event-id"), -1);
	char buf[32], *end;
	long v;

	if (i < 0 || req->headers.entries[i].value.len >= sizeof buf)
		return -1;
	memcpy(buf, req->headers.entries[i].value.base, req->headers.entries[i].value.len);
	buf[req->headers.entries[i].value.len] = '\0';
	errno = 0;
	v = strtol(buf, &end, 10);
	return errno || end == buf || *end || v < -1 ? -1 : v;
}

struct after_param {
	long after;
};

static int after_param(void *ctx, const char *key, const char *value, char *why, size_t whylen)
{
	struct after_param *p = ctx;
	char *end;

	if (strcmp(key, "after"))
		return 0;
	errno = 0;
	p->after = strtol(value, &end, 10);
	if (errno || end == value || *end || p->after < -1) {
		snprintf(why, whylen, "'after' must be a line's seq (an integer >= -1), got '%.32s'",
			 value);
		return -1;
	}
	return 0;
}

static bool is_head(h2o_req_t *req)
{
	return h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
}

/* Answers a HEAD of an event stream, or refuses a stream over
 * HTTP_MAX_STREAMS: true when req is answered, false when its stream may
 * start. */
static bool stream_answered_here(struct http *h, h2o_req_t *req)
{
	if (is_head(req))
		http__respond(req, 200, "OK", "text/event-stream; charset=utf-8", "", 0);
	else if (h->st.streams >= HTTP_MAX_STREAMS)
		http__respond_error(req, 503, "Service Unavailable",
				    "too many event streams: %d open", h->st.streams);
	else
		return false;
	return true;
}

int http__api_job_events(struct http *h, h2o_req_t *req, const char *id)
{
	struct after_param p = {.after = -1};
	long last_id = resume_after(req);
	struct qual_msg msg = {{0}};
	struct jobs_cursor *cur;
	struct stream *st;
	json_t *known;
	char why[160];
	int rc;

	if (http__query_each(req, after_param, &p, why, sizeof why) < 0)
		return http__respond_error(req, 400, "Bad Request", "%s", why);
	/* An EventSource reconnects to the URL it was given, ?after included,
	 * with Last-Event-ID: the later of the two is where it stands. */
	if (last_id > p.after)
		p.after = last_id;
	known = jobs_show_json(h->jobs, id);
	if (!known)
		return http__respond_error(req, 404, "Not Found", "unknown job '%s'", id);
	json_decref(known);
	if (stream_answered_here(h, req))
		return 0;
	/* Stored lines, then live ones: the cursor hands out exactly the
	 * lines whose writes were called back, and the fan-out runs in those
	 * same callbacks, so nothing is missed or sent twice (jobs.h). The
	 * replay goes a chunk at a time as the client reads (replay_step);
	 * the cap on what waits applies to the live lines after it. */
	rc = jobs_cursor_open(h->jobs, id, p.after, JOBS_READ_PARSED, false, &cur, NULL, NULL,
			      &msg);
	if (rc < 0)
		return http__respond_error(req, rc == QUAL_ENOENT ? 404 : 500,
					   rc == QUAL_ENOENT ? "Not Found" :
							       "Internal Server Error",
					   "%s", msg.text[0] ? msg.text : qual_strerror(rc));
	st = stream_start(h, req, id);
	st->seq = p.after;
	st->replay = cur;
	http__stream_flush(st);
	return 0;
}

int http__api_events(struct http *h, h2o_req_t *req)
{
	struct stream *st;

	if (stream_answered_here(h, req))
		return 0;
	st = stream_start(h, req, NULL);
	http__stream_flush(st);
	return 0;
}

void http_on_line(struct http *h, const char *job, const struct line *l)
{
	struct stream *st, *next;
	const char *line = l->text;
	size_t len = l->len;
	long seq = l->seq;

	for (st = h->streams; st; st = next) {
		next = st->next;
		if (st->ended || st->final || st->drop)
			continue;
		if (!st->job[0]) {
			stream_event(st, -1, line, len);
		} else {
			/* While it replays, the job's lines are read from
			 * its log. */
			if (st->replay || strcmp(st->job, job))
				continue;
			/* A client that resumes past the job's last line (a
			 * Last-Event-ID or ?after= beyond it) gets no line at
			 * or below it, but its stream ends at the verdict as
			 * every stream of the job does. */
			if (seq > st->seq) {
				st->seq = seq;
				stream_event(st, seq, line, len);
			} else if (!line_is_verdict(l)) {
				continue;
			}
			if (line_is_verdict(l))
				stream_end_event(st);
		}
		stream_check(st);
		http__stream_flush(st);
	}
}

void http__on_heartbeat(uv_timer_t *t)
{
	struct http *h = container_of(t, struct http, heartbeat);

	for (struct stream *st = h->streams, *next; st; st = next) {
		next = st->next; /* a flush may end st */
		if (st->ended || st->final || st->drop)
			continue;
		stream_put(st, ":\n\n", 3);
		stream_check(st);
		http__stream_flush(st);
	}
}
