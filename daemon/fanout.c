/* Job lines to the connections of quald's server (server_internal.h): the
 * marks of which lines of a job each connection has had, the follow of a
 * submitter, and watches with the replay of stored lines they resume from.
 * A line reaches a connection once, in seq order: from the job's log while
 * a follow starts or a replay runs, live from the jobs module after. */
#include "daemon/server_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lines.h"
#include "common/xalloc.h"
#include "proto/line.h"
#include "proto/vocab.h"

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
		XGROW(c->marks, c->nmarks + 1, c->marks_cap);
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

static bool state_is_active(enum job_state s)
{
	return s != JOB_STATE_UNKNOWN && !vocab_state_ended(s);
}

/* ---- live lines ---- */

/* Whether connection c gets this live line, and the bookkeeping for it. */
static void deliver(struct conn *c, const char *job, long seq, bool verdict,
		    struct obuf *b)
{
	struct replay *rp = &c->replay;
	struct mark *m;
	bool seen;

	if (c->state == CONN_STATE_CLOSING)
		return;
	if (c->flags & CONN_F_WATCHING) {
		if (rp->active && !rp->show && job_cmp(job, rp->ids[rp->i]) >= 0) {
			/* The replay will read this line from the log. A job
			 * newer than the replay's list joins it. */
			if (job_cmp(job, rp->ids[rp->n - 1]) > 0) {
				XGROW(rp->ids, rp->n + 1, rp->cap);
				rp->ids[rp->n++] = xstrdup(job);
			}
			return;
		}
		/* A job's mark goes at its verdict, sent or not: one that a
		 * watch resumed past the job's last line is above the verdict's
		 * seq, and nothing of the job is to come. */
		m = mark_find(c, job);
		seen = m && seq <= m->seq;
		if (m && verdict)
			mark_drop(c, m);
		if (!seen)
			conn__send_live(c, b);
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
	conn__send_live(c, b);
	if (verdict)
		conn__maybe_finish(c);
}

void fanout__on_line(void *ctx, const char *job, struct line *line)
{
	struct server *s = ctx;
	bool verdict = line_is_verdict(line);
	long seq = line->seq;
	struct obuf *b = conn__line_new(line->text, line->len);
	struct conn *c, *next;

	s->stats.lines_relayed++;
	for (c = s->conns; c; c = next) {
		next = c->next;
		deliver(c, job, seq, verdict, b);
	}
	conn__obuf_unref(b);
	if (s->line_hook)
		s->line_hook(s->line_hook_ctx, job, line);
	if (verdict || seq == 0)
		server__status_update(s);
}

/* ---- stored lines: a follow's start, a show, a watch's replay ---- */

/* A read of a job's log onto a connection: a follow's start (the whole log,
 * a few lines of a job just submitted), or a chunk of a show or a replay. */
struct send_ctx {
	struct conn *c;
	long *left;  /* a show's lines still to send, or NULL */
	long sent;   /* lines sent by this read */
};

/* Stops the read once the client is closing, or a show has sent its
 * lines. */
static bool send_each(void *ctx, const struct jobs_record *rec)
{
	struct send_ctx *x = ctx;

	if (x->c->state == CONN_STATE_CLOSING)
		return true;
	conn__send_line(x->c, rec->text, rec->len);
	x->sent++;
	return x->left && --*x->left == 0;
}

void fanout__follow(struct conn *c, const char *job)
{
	/* Whatever the job has logged already, then live lines: the log read
	 * is synchronous and live lines come only from the loop, so none is
	 * lost or sent twice. */
	struct send_ctx x = {.c = c};
	struct qual_msg msg;
	enum job_state state;

	if (jobs_read_log(c->srv->jobs, job, -1, JOBS_READ_BYTES, send_each, &x, &state,
			  &msg) >= 0 &&
	    state_is_active(state)) {
		mark_set(c, job, x.sent - 1);
		c->nfollows++;
	}
}

void fanout__replay_free(struct replay *rp)
{
	if (rp->waiter.wake)
		replycap_unwait(&rp->waiter);
	jobs_cursor_free(rp->cur);
	for (int i = 0; i < rp->n; i++)
		free(rp->ids[i]);
	free(rp->ids);
	memset(rp, 0, sizeof *rp);
}

static void replay_wake(struct replycap_waiter *w)
{
	struct conn *c = container_of(w, struct conn, replay.waiter);

	if (c->replay.waiting)
		fanout__replay_pump(c);
}

static void replay_start(struct conn *c)
{
	replycap_waiter_init(&c->replay.waiter, replay_wake);
	c->replay.active = true;
	fanout__replay_pump(c);
}

/* The replay's current job is done: the next, or the end of the replay. A
 * watcher's job that is still running is followed live from the last line
 * sent. Returns false when the replay has ended. */
static bool replay_next_job(struct conn *c, bool read, enum job_state state)
{
	struct replay *rp = &c->replay;

	if (!rp->show && read && state_is_active(state))
		mark_set(c, rp->ids[rp->i], jobs_cursor_seq(rp->cur));
	jobs_cursor_free(rp->cur);
	rp->cur = NULL;
	rp->i++;
	rp->seq = -1;
	if (rp->i < rp->n)
		return true;
	if (rp->show && rp->left > 0) {
		/* The log held fewer lines than the header said: records were
		 * lost in a log start-up had not checked yet (or damaged since
		 * the show began). The reply cannot be completed; the client
		 * asks again (the count then comes from a read). */
		conn__close(c, "a show's log ended before its lines: records of it were "
			     "lost (its check after the start marks it damaged)");
		return false;
	}
	fanout__replay_free(rp);
	conn__release_held(c);
	if (c->state != CONN_STATE_CLOSING)
		conn__process(c);
	return false;
}

void fanout__replay_cut(struct conn *c)
{
	bool show = c->replay.active && c->replay.show;

	fanout__replay_free(&c->replay);
	if (show)
		conn__close(c, "quald is stopping: a show's reply was cut short");
}

/* Reads a chunk (more when one sends nothing: lines before a resume point);
 * on_write and the global bound's wake call again once there is room. */
void fanout__replay_pump(struct conn *c)
{
	struct replay *rp = &c->replay;
	struct server *s = c->srv;

	rp->waiting = false;
	while (rp->active && c->state != CONN_STATE_CLOSING) {
		struct send_ctx x = {.c = c, .left = rp->show ? &rp->left : NULL};
		enum job_state state = JOB_STATE_UNKNOWN;
		struct qual_msg msg = {{0}};
		bool done = false;
		int rc = 0;

		if (s->stopping) {
			/* jobs_close has been called: the logs are not ours to
			 * read any more. */
			fanout__replay_cut(c);
			return;
		}
		if (conn__pending(c) > REPLYCAP_CLIENT) {
			rp->waiting = true;
			return;
		}
		if (!replycap_room()) {
			rp->waiting = true;
			replycap_wait(&rp->waiter);
			return;
		}
		if (!rp->cur)
			rc = jobs_cursor_open(s->jobs, rp->ids[rp->i], rp->seq, JOBS_READ_BYTES,
					      false, &rp->cur, NULL, &state, &msg);
		if (rc >= 0)
			rc = jobs_cursor_next(s->jobs, rp->cur, REPLYCAP_CHUNK, send_each, &x,
					      &done, &state, &msg);
		if (rc < 0 || done || (rp->show && rp->left == 0)) {
			if (!replay_next_job(c, rc >= 0, state))
				return;
		} else if (x.sent > 0) {
			/* One chunk a turn: its write's callback reads the next,
			 * so other clients' requests come between. */
			rp->waiting = true;
			return;
		}
	}
}

void fanout__show(struct conn *c, const char *job, struct jobs_cursor *cur, long count)
{
	struct replay *rp = &c->replay;

	if (count <= 0) {
		jobs_cursor_free(cur);
		return;
	}
	rp->ids = xcalloc(1, sizeof *rp->ids);
	rp->ids[0] = xstrdup(job);
	rp->n = rp->cap = 1;
	rp->cur = cur;
	rp->show = true;
	rp->left = count;
	replay_start(c);
}

void fanout__watch(struct conn *c, const char *after_job, long after_seq,
		   char **ids, int n)
{
	struct replay *rp = &c->replay;

	c->flags |= CONN_F_WATCHING;
	c->srv->nwatchers++;
	/* Follows are covered by the watch from now on; their marks stay, as
	 * the points up to which those jobs' lines were sent. */
	c->nfollows = 0;
	if (!after_job)
		return;
	rp->cap = n + 8;
	rp->ids = xcalloc((size_t)rp->cap, sizeof *rp->ids);
	rp->ids[0] = xstrdup(after_job);
	for (int i = 0; i < n; i++)
		rp->ids[i + 1] = xstrdup(ids[i]);
	rp->n = n + 1;
	rp->i = 0;
	rp->seq = after_seq;
	replay_start(c);
}
