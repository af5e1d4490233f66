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
		if (rp->active && job_cmp(job, rp->ids[rp->i]) >= 0) {
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

/* ---- stored lines: a follow's start, a watch's replay ---- */

/* A read of a job's log onto a connection. A replay pauses once the client
 * has a SERVER_REPLY_HIGH backlog (and reads on from there later); a follow
 * reads the whole log at once. */
struct send_ctx {
	struct conn *c;
	bool may_pause, paused;
	long sent;   /* lines sent by this read */
};

/* Stops the read once the client has its backlog (a replay's pause) or is
 * closing: the rest of the log is read when the replay goes on, not now. */
static bool send_each(void *ctx, const struct jobs_record *rec)
{
	struct send_ctx *x = ctx;

	if (x->c->state == CONN_STATE_CLOSING)
		return true;
	conn__send_line(x->c, rec->text, rec->len);
	x->sent++;
	if (x->may_pause && conn__pending(x->c) > SERVER_REPLY_HIGH)
		x->paused = true;
	return x->paused;
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
	for (int i = 0; i < rp->n; i++)
		free(rp->ids[i]);
	free(rp->ids);
	memset(rp, 0, sizeof *rp);
}

/* On_write calls again once the client has read. Lines of one job come in
 * seq order without gaps, so the last one sent is the start seq plus the
 * count. */
void fanout__replay_pump(struct conn *c)
{
	struct replay *rp = &c->replay;
	struct server *s = c->srv;

	rp->waiting = false;
	while (rp->active && c->state != CONN_STATE_CLOSING) {
		struct send_ctx x = {.c = c, .may_pause = true};
		enum job_state state;
		struct qual_msg msg = {{0}};
		const char *job = rp->ids[rp->i];
		int rc;

		if (s->stopping) {
			/* jobs_close has been called: the logs are not ours to
			 * read any more. */
			fanout__replay_free(rp);
			return;
		}
		if (conn__pending(c) > SERVER_REPLY_HIGH) {
			rp->waiting = true;
			return;
		}
		rc = jobs_read_log(s->jobs, job, rp->seq, JOBS_READ_BYTES, send_each, &x,
				   &state, &msg);
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
			fanout__replay_free(rp);
			conn__process(c);
			return;
		}
	}
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
	rp->active = true;
	fanout__replay_pump(c);
}
