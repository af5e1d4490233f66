/* quald's server side (server.h): the listeners, the requests dispatched to
 * their handlers, and the server's own opening and closing. A connection
 * lives in conn.c and the relay of job lines in fanout.c
 * (server_internal.h). */
#include "daemon/server_internal.h"
#include "daemon/listen.h"
#include "daemon/oplog.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/lines.h"
#include "common/xalloc.h"
#include "proto/vocab.h"

#ifndef QUAL_VERSION
#define QUAL_VERSION "unknown"
#endif


/* What a refusal says: the callee's message, else fallback. */
static const char *msg_or(const struct qual_msg *msg, const char *fallback)
{
	return msg->text[0] ? msg->text : fallback;
}

/* The length of the array key of a jobs module status object (0 when it is
 * not one). */
static int status_count(json_t *st, const char *key)
{
	return (int)json_array_size(json_object_get(st, key));
}

void server__status_update(struct server *s)
{
	json_t *st;
	int queued, running;

	if (!s->jobs || s->stopping || !s->cfg.on_status)
		return;
	st = jobs_status_json(s->jobs);
	queued = status_count(st, vocab_state_name(JOB_QUEUED));
	running = status_count(st, vocab_state_name(JOB_RUNNING));
	json_decref(st);
	if (queued == s->last_queued && running == s->last_running)
		return;
	s->last_queued = queued;
	s->last_running = running;
	s->cfg.on_status(s->cfg.status_ctx, queued, running);
}

/* ---- requests ---- */

static void on_submitted(void *ctx, int status, const char *job, int position,
			 const char *message);

static void do_submit(struct conn *c, struct request *r)
{
	struct server *s = c->srv;
	struct qual_msg msg = {{0}};
	json_t *st;
	int rc, queued;

	/* The queue's length from the jobs module's status, plus the submits
	 * still being checked (each may join it). */
	st = jobs_status_json(s->jobs);
	queued = status_count(st, vocab_state_name(JOB_QUEUED));
	json_decref(st);
	if (queued + s->submits_pending >= s->cfg.max_queued) {
		char m[96];

		snprintf(m, sizeof m, "queue is full: %d jobs queued", queued + s->submits_pending);
		conn__refuse(c, "submit", r->id, m);
		return;
	}
	s->submits_pending++;
	c->flags |= CONN_F_SUBMIT_PENDING;
	if (r->submit.settings.follow)
		c->flags |= CONN_F_SUBMIT_FOLLOW;
	else
		c->flags &= ~CONN_F_SUBMIT_FOLLOW;
	c->submit_id = r->id ? json_incref(r->id) : NULL;
	c->refs++;
	rc = jobs_submit(c->srv->jobs, &r->submit, on_submitted, c, &msg);
	if (rc < 0) {
		s->submits_pending--;
		c->flags &= ~CONN_F_SUBMIT_PENDING;
		conn__refuse(c, "submit", r->id, msg_or(&msg, qual_strerror(rc)));
		json_decref(c->submit_id);
		c->submit_id = NULL;
		c->refs--;
	}
}

static void on_submitted(void *ctx, int status, const char *job, int position,
			 const char *message)
{
	struct conn *c = ctx;
	struct server *s = c->srv;
	json_t *id = c->submit_id, *o;

	s->submits_pending--;
	c->flags &= ~CONN_F_SUBMIT_PENDING;
	c->submit_id = NULL;
	if (c->state == CONN_STATE_CLOSING)
		goto out;
	if (status < 0) {
		conn__refuse(c, "submit", id, message && *message ? message : qual_strerror(status));
		goto out;
	}
	o = conn__reply_new("submit", id);
	json_object_set_new(o, "job", json_string(job));
	json_object_set_new(o, "position", json_integer(position));
	json_object_set_new(o, "state", json_string(vocab_state_name(JOB_QUEUED)));
	conn__send_json(c, o);
	if ((c->flags & CONN_F_SUBMIT_FOLLOW) && !(c->flags & CONN_F_WATCHING) && !s->stopping)
		fanout__follow(c, job);
out:
	json_decref(id);
	server__status_update(s);
	if (c->state != CONN_STATE_CLOSING)
		conn__process(c);
	conn__unref(c);
}

/* Stops a read of a log at its first line: whether the job is there is
 * all that is asked. */
static bool stop_reading(void *ctx, const struct jobs_record *rec)
{
	(void)ctx;
	(void)rec;
	return true;
}

static void do_watch(struct conn *c, struct request *r)
{
	struct server *s = c->srv;
	struct qual_msg msg = {{0}};
	char **ids = NULL;
	int n = 0, rc;

	if (c->flags & CONN_F_WATCHING) {
		conn__refuse(c, "watch", r->id, "this connection is already watching");
		return;
	}
	if (s->nwatchers >= s->cfg.max_watchers) {
		char m[96];

		snprintf(m, sizeof m, "too many watchers: %d connections are watching",
			 s->nwatchers);
		conn__refuse(c, "watch", r->id, m);
		return;
	}
	if (r->after_job) {
		/* The job must exist, or be gone (pruned: the jobs after it
		 * follow); a read that stops at once says so. */
		rc = jobs_read_log(s->jobs, r->after_job, -1, JOBS_READ_BYTES, stop_reading,
				   NULL, NULL, &msg);
		if (rc < 0 && !jobs_gone(s->jobs, r->after_job)) {
			conn__refuse(c, "watch", r->id, msg_or(&msg, "unknown job"));
			return;
		}
		if (jobs_ids_after(s->jobs, r->after_job, &ids, &n) < 0) {
			conn__refuse(c, "watch", r->id, "cannot list the jobs to replay");
			return;
		}
	}
	conn__send_json(c, conn__reply_new("watch", r->id));
	fanout__watch(c, r->after_job, r->after_seq, ids, n);
	if (r->after_job)
		jobs_ids_free(ids, n);
}

/* The header, then the job's stored lines as the client reads them
 * (fanout__show): exactly the lines written when the show came, which the
 * header counts. Live lines to this connection wait until they are out. */
static void do_show(struct conn *c, struct request *r)
{
	struct qual_msg msg = {{0}};
	struct jobs_cursor *cur;
	enum job_state state;
	const char *word;
	json_t *o, *settings;
	long lines = 0;
	int rc;

	rc = jobs_cursor_open(c->srv->jobs, r->job, -1, JOBS_READ_BYTES, true, &cur, &lines,
			      &state, &msg);
	if (rc < 0) {
		conn__refuse(c, "show", r->id, msg_or(&msg, qual_strerror(rc)));
		return;
	}
	o = conn__reply_new("show", r->id);
	json_object_set_new(o, "job", json_string(r->job));
	word = vocab_state_name(state);
	json_object_set_new(o, "state", word ? json_string(word) : json_null());
	json_object_set_new(o, "lines", json_integer(lines));
	/* The request's settings that no line holds (fixture directories);
	 * the reply's own fields win. */
	settings = jobs_show_json(c->srv->jobs, r->job);
	if (json_is_object(settings))
		json_object_update_missing(o, settings);
	json_decref(settings);
	conn__send_json(c, o);
	fanout__show(c, r->job, cur, lines);
}

static void do_status(struct conn *c, struct request *r)
{
	json_t *o = conn__reply_new("status", r->id);
	json_t *st = jobs_status_json(c->srv->jobs);

	json_object_set_new(o, "version", json_string(QUAL_VERSION));
	json_object_set_new(o, "schema_version", json_integer(QUAL_SCHEMA_VERSION));
	if (json_is_object(st))
		json_object_update(o, st);
	json_decref(st);
	/* The reply's own fields win over whatever the jobs module put there. */
	json_object_set_new(o, "type", json_string("reply"));
	json_object_set_new(o, "op", json_string("status"));
	conn__send_json(c, o);
}

static void do_list(struct conn *c, struct request *r)
{
	json_t *o = conn__reply_new("list", r->id);
	json_t *l = jobs_list_json(c->srv->jobs, r->limit, r->before, JOBS_LIST_MAX_BYTES);
	json_t *next = json_object_get(l, "next");

	/* jobs_list_json gives the array of jobs, or an object holding "jobs". */
	if (json_is_array(l))
		json_object_set(o, "jobs", l);
	else if (json_is_object(l) && json_is_array(json_object_get(l, "jobs")))
		json_object_set(o, "jobs", json_object_get(l, "jobs"));
	else
		json_object_set_new(o, "jobs", json_array());
	/* A page cut short by its size: the next one is before this job. */
	if (json_is_string(next))
		json_object_set(o, "next", next);
	json_decref(l);
	conn__send_json(c, o);
}

static void do_history(struct conn *c, struct request *r)
{
	struct jobs_history_query q = { r->case_name, r->labels, r->limit, r->gpu_type };
	json_t *o = conn__reply_new("history", r->id);
	json_t *h = jobs_history_json(c->srv->jobs, &q);
	json_t *list = json_object_get(h, "jobs");

	if (json_is_array(list))
		json_object_set(o, "jobs", list);
	else
		json_object_set_new(o, "jobs", json_array());
	/* Summaries still being made off the loop (history.c). */
	if (json_is_true(json_object_get(h, "incomplete"))) {
		json_object_set(o, "incomplete", json_object_get(h, "incomplete"));
		json_object_set(o, "pending", json_object_get(h, "pending"));
	}
	json_decref(h);
	conn__send_json(c, o);
}

static void do_cancel(struct conn *c, struct request *r)
{
	struct qual_msg msg = {{0}};
	json_t *o;
	int rc;

	rc = jobs_cancel(c->srv->jobs, r->job, &msg);
	if (rc < 0) {
		conn__refuse(c, "cancel", r->id, msg_or(&msg, qual_strerror(rc)));
		return;
	}
	o = conn__reply_new("cancel", r->id);
	json_object_set_new(o, "job", json_string(r->job));
	json_object_set_new(o, "state", json_string(vocab_state_name(JOB_CANCELLED)));
	conn__send_json(c, o);
	server__status_update(c->srv);
}

/* calibration: the latest calibration record of each slot's device. */
static void do_calibration(struct conn *c, struct request *r)
{
	json_t *o = conn__reply_new("calibration", r->id);
	json_t *cal = jobs_calibration_json(c->srv->jobs);

	json_object_set(o, "calibrations", json_object_get(cal, "calibrations"));
	json_decref(cal);
	conn__send_json(c, o);
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
		o = conn__reply_new("quarantine", r->id);
		json_object_set_new(o, "action", json_string("list"));
		q = jobs_quarantine_json(c->srv->jobs);
		if (json_is_object(q) && json_is_array(json_object_get(q, "quarantine")))
			json_object_set(o, "quarantine", json_object_get(q, "quarantine"));
		else
			json_object_set_new(o, "quarantine", json_array());
		json_decref(q);
		conn__send_json(c, o);
		return;
	}
	rc = jobs_quarantine_clear(c->srv->jobs, r->sha256, &msg);
	if (rc == QUAL_ENOENT) {
		char m[160];

		snprintf(m, sizeof m, "no quarantined library with sha256 '%s'", r->sha256);
		conn__refuse(c, "quarantine", r->id, m);
		return;
	}
	if (rc < 0) {
		conn__refuse(c, "quarantine", r->id, msg_or(&msg, qual_strerror(rc)));
		return;
	}
	o = conn__reply_new("quarantine", r->id);
	json_object_set_new(o, "action", json_string("clear"));
	json_object_set_new(o, "sha256", json_string(r->sha256));
	conn__send_json(c, o);
}

void server__handle_line(struct conn *c, const char *line, size_t len)
{
	struct qual_msg msg = {{0}};
	const char *op_name = NULL;
	struct request r;

	if (request_parse(line, len, &r, &op_name, &msg) < 0) {
		conn__refuse(c, op_name, r.id, msg.text);
		request_release(&r);
		return;
	}
	switch (r.op) {
	case OP_SUBMIT: do_submit(c, &r); break;
	case OP_WATCH: do_watch(c, &r); break;
	case OP_STATUS: do_status(c, &r); break;
	case OP_LIST: do_list(c, &r); break;
	case OP_HISTORY: do_history(c, &r); break;
	case OP_SHOW: do_show(c, &r); break;
	case OP_CANCEL: do_cancel(c, &r); break;
	case OP_QUARANTINE: do_quarantine(c, &r); break;
	case OP_CALIBRATION: do_calibration(c, &r); break;
	case OP_AUTH:
		conn__refuse(c, "auth", r.id, c->flags & CONN_F_TCP ?
			     "this connection is already authenticated"
			    : "auth is for tcp connections: this unix socket peer is "
			      "allowed by its user and groups");
		break;
	}
	request_release(&r);
}

/* ---- logging at a rate ---- */

/* Says what rl held, if anything; the next interval starts at now. */
static void ratelog_flush(struct ratelog *rl, uint64_t now)
{
	if (rl->held)
		oplog(LOG_WARNING, "and %lu more like it in the last %d s, the last: %s",
			rl->held, SERVER_LOG_INTERVAL_MS / 1000, rl->last);
	rl->held = 0;
	rl->next_ms = now + SERVER_LOG_INTERVAL_MS;
}

static void on_log_interval(uv_timer_t *t)
{
	struct server *s = t->data;
	uint64_t now = uv_now(s->loop);

	/* Each held line's interval has ended; one that has not held any
	 * keeps its own. */
	if (s->log_accept.held)
		ratelog_flush(&s->log_accept, now);
	if (s->log_unauth.held)
		ratelog_flush(&s->log_unauth, now);
}

void server__ratelog(struct server *s, struct ratelog *rl, const char *fmt, ...)
{
	uint64_t now = uv_now(s->loop);
	char text[sizeof rl->last];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	if (now >= rl->next_ms) {
		/* What the timer has not said yet comes first. */
		ratelog_flush(rl, now);
		oplog(LOG_WARNING, "%s", text);
		return;
	}
	memcpy(rl->last, text, sizeof text);
	rl->held++;
	if (!s->timers_closing && !uv_is_active((uv_handle_t *)&s->log_timer))
		uv_timer_start(&s->log_timer, on_log_interval, rl->next_ms - now, 0);
}

/* ---- listeners ---- */

static void on_listener_closed(uv_handle_t *h)
{
	struct listener *l = h->data;
	struct server *s = l->srv;

	if (--l->handles > 0)
		return;
	close(l->fd);
	free(l);
	s->nlisteners--;
	server__maybe_done(s);
}

static void listeners_close(struct server *s)
{
	struct listener *l = s->listeners;

	s->listeners = NULL;
	while (l) {
		struct listener *next = l->next;

		uv_close((uv_handle_t *)&l->poll, on_listener_closed);
		uv_close((uv_handle_t *)&l->pause, on_listener_closed);
		l = next;
	}
	if (s->socket_path) {
		unlink(s->socket_path);
		free(s->socket_path);
		s->socket_path = NULL;
	}
}

static void on_listen_readable(uv_poll_t *p, int status, int events);

static void on_pause_end(uv_timer_t *t)
{
	struct listener *l = t->data;

	l->paused = false;
	uv_poll_start(&l->poll, UV_READABLE, on_listen_readable);
}

/* What an accept error costs: it is logged (at a rate); on a Unix socket
 * out of descriptors, the oldest unauthenticated TCP connection gives its
 * descriptor to the Unix client (returns true: accept again); otherwise the
 * pending connection is taken with the reserve descriptor and refused, and
 * the listener pauses instead of spinning on the error. */
static bool accept_failed(struct listener *l, int err)
{
	static const char refusal[] = "{\"type\":\"refused\",\"op\":null,\"id\":null,"
		"\"message\":\"quald is out of file descriptors: try again later\"}\n";
	struct server *s = l->srv;
	bool nofile = err == EMFILE || err == ENFILE;
	struct rlimit rl;

	if (err == EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0)
		server__ratelog(s, &s->log_accept, "cannot accept a connection on %s: %s "
				"(%llu open files at most)", l->name, strerror(err),
				(unsigned long long)rl.rlim_cur);
	else
		server__ratelog(s, &s->log_accept, "cannot accept a connection on %s: %s",
				l->name, strerror(err));
	if (nofile && !l->is_tcp &&
	    conn__evict_unauth(s, "made room for a local client: quald is out of "
			       "file descriptors"))
		return true;
	/* The reserve is lost when another thread took its number between the
	 * close below and the reopen; each later error tries to get it back. */
	if (nofile && s->reserve_fd < 0)
		s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nofile && s->reserve_fd >= 0) {
		int fd;

		close(s->reserve_fd);
		fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			if (send(fd, refusal, sizeof refusal - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
				/* Nothing more to do for a peer that cannot take it. */
			}
			close(fd);
		}
		s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (s->reserve_fd < 0)
			server__ratelog(s, &s->log_accept, "cannot reopen the reserve descriptor: "
					"%s (tried again at the next accept error)", strerror(errno));
	}
	if (!l->paused) {
		l->paused = true;
		uv_poll_stop(&l->poll);
		uv_timer_start(&l->pause, on_pause_end, SERVER_ACCEPT_PAUSE_MS, 0);
	}
	return false;
}

/* Connections accepted per wakeup of one listener: a flood on one socket
 * lets the loop turn to the others (and to the connections) in between. */
#define ACCEPT_BATCH 32

static void on_listen_readable(uv_poll_t *p, int status, int events)
{
	struct listener *l = p->data;
	struct server *s = l->srv;

	(void)events;
	if (status < 0) {
		accept_failed(l, -status);
		return;
	}
	for (int i = 0; i < ACCEPT_BATCH && !s->stopping && !l->paused; i++) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0) {
			conn__accepted(l, fd);
			continue;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		/* A connection that went away before it was accepted. */
		if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
			continue;
		if (!accept_failed(l, errno))
			return;
	}
}

/* Listens on fd (a listening socket, taken on every path) for connections. */
static int listener_add(struct server *s, int fd, bool is_tcp, const char *name,
			struct qual_msg *msg)
{
	struct listener *l;
	int rc;

	l = xcalloc(1, sizeof *l);
	rc = uv_poll_init_socket(s->loop, &l->poll, fd);
	if (rc < 0) {
		free(l);
		close(fd);
		return qual_fail(msg, QUAL_EIO, "cannot listen on %s: %s", name, uv_strerror(rc));
	}
	uv_timer_init(s->loop, &l->pause);
	l->poll.data = l->pause.data = l;
	l->fd = fd;
	l->handles = 2;
	l->srv = s;
	l->is_tcp = is_tcp;
	snprintf(l->name, sizeof l->name, "%s", name);
	l->next = s->listeners;
	s->listeners = l;
	s->nlisteners++;
	uv_poll_start(&l->poll, UV_READABLE, on_listen_readable);
	return 0;
}

static int listen_path(struct server *s, const char *path, struct qual_msg *msg)
{
	char name[PATH_MAX + 2];
	int fd, rc = listen_unix(path, &fd, msg);

	if (rc < 0)
		return rc;
	s->socket_path = xstrdup(path);
	snprintf(name, sizeof name, "'%s'", path);
	return listener_add(s, fd, false, name, msg);
}

static int listen_fd(struct server *s, int fd, struct qual_msg *msg)
{
	int domain = 0, type = 0, acc = 0, flags;
	socklen_t len = sizeof domain;
	char name[32];

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
	    (len = sizeof type, getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len)) < 0 ||
	    (len = sizeof acc, getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len)) < 0)
		return qual_fail(msg, QUAL_EINVAL, "descriptor %d is not a socket: %s", fd,
				 strerror(errno));
	if (type != SOCK_STREAM || !acc ||
	    (domain != AF_UNIX && domain != AF_INET && domain != AF_INET6))
		return qual_fail(msg, QUAL_EINVAL,
				 "descriptor %d is not a listening unix or tcp stream socket", fd);
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot listen on descriptor %d: %s", fd,
				 strerror(errno));
	snprintf(name, sizeof name, "descriptor %d", fd);
	return listener_add(s, fd, domain != AF_UNIX, name, msg);
}

static int listen_loopback(struct server *s, int port, struct qual_msg *msg)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char name[32];
	int fd, rc;

	snprintf(name, sizeof name, "127.0.0.1:%d", port);
	rc = listen_tcp((struct sockaddr *)&a, sizeof a, name, &fd, &s->tcp_port, msg);
	if (rc < 0)
		return rc;
	snprintf(name, sizeof name, "127.0.0.1:%d", s->tcp_port);
	return listener_add(s, fd, true, name, msg);
}

/* ---- the server ---- */

static void on_timer_closed(uv_handle_t *h);

/* Everything: listeners, the jobs module, every connection, and last the
 * timers. */
void server__maybe_done(struct server *s)
{
	void (*done)(void *ctx);
	void *ctx;

	if (!s->stopping || !s->jobs_closed || s->nconns > 0)
		return;
	if (!s->timers_closing) {
		s->timers_closing = true;
		uv_close((uv_handle_t *)&s->drain_timer, on_timer_closed);
		uv_close((uv_handle_t *)&s->auth_timer, on_timer_closed);
		uv_close((uv_handle_t *)&s->log_timer, on_timer_closed);
		ratelog_flush(&s->log_accept, 0);
		ratelog_flush(&s->log_unauth, 0);
		return;
	}
	if (s->timers_open > 0 || s->nlisteners > 0)
		return;
	done = s->done;
	ctx = s->done_ctx;
	if (s->reserve_fd >= 0)
		close(s->reserve_fd);
	free(s->socket_path);
	free(s->token);
	free(s->group_name);
	free(s);
	if (done)
		done(ctx);
}

static void on_timer_closed(uv_handle_t *h)
{
	struct server *s = h->data;

	s->timers_open--;
	server__maybe_done(s);
}

static void on_drain_timeout(uv_timer_t *t)
{
	struct server *s = container_of(t, struct server, drain_timer);
	struct conn *c, *next;

	for (c = s->conns; c; c = next) {
		next = c->next;
		conn__close(c, "stopping: output not taken in time");
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
		conn__shutdown(c);
	}
	if (s->nconns > 0)
		uv_timer_start(&s->drain_timer, on_drain_timeout, SERVER_DRAIN_MS, 0);
	server__maybe_done(s);
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
		if ((c->flags & CONN_F_READING) && c->state != CONN_STATE_CLOSING) {
			uv_read_stop(&c->h.stream);
			c->flags &= ~CONN_F_READING;
		}
		fanout__replay_cut(c);
	}
	jobs_close(s->jobs, on_jobs_closed, s);
}

struct jobs *server_jobs(struct server *s)
{
	return s->jobs;
}

void server_set_line_hook(struct server *s, server_line_fn fn, void *ctx)
{
	s->line_hook = fn;
	s->line_hook_ctx = ctx;
}

const struct server_stats *server_stats(struct server *s)
{
	s->stats.connections = s->nunix + s->ntcp + s->nunauth;
	s->stats.watchers = s->nwatchers;
	return &s->stats;
}

int server_tcp_port(const struct server *s)
{
	return s->tcp_port;
}

int server_fit_files(struct server_config *cfg, int other_fds, struct qual_msg *msg)
{
	/* TCP may come with handed-over sockets too: counted as if it did. */
	bool tcp = cfg->tcp_port >= 0 || cfg->nlisten_fds > 0;
	long conns, unauth, need, have, room;
	struct rlimit rl;

	if (cfg->max_connections <= 0)
		cfg->max_connections = SERVER_MAX_CONNECTIONS;
	if (cfg->max_unauth <= 0)
		cfg->max_unauth = SERVER_DEFAULT_MAX_UNAUTH;
	/* Two descriptors per admitted connection, the Unix ones and with
	 * TCP the authenticated ones: its socket, and the job log that a
	 * reply of it (a show, a watch's replay: one at a time) reads through
	 * a cursor kept open while the client drains it. One per
	 * unauthenticated connection (it asks for no log); the refused ones
	 * that linger count with everything else. */
	conns = (tcp ? 2L : 1L) * cfg->max_connections * SERVER_FDS_PER_CONN;
	unauth = tcp ? cfg->max_unauth : 0;
	other_fds += SERVER_MAX_LINGER;
	need = conns + unauth + other_fds;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot read the open file limit: %s",
				 strerror(errno));
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= (rlim_t)need)
		return 0;
	have = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= (rlim_t)need ? need
	       : (long)rl.rlim_max;
	rl.rlim_cur = (rlim_t)have;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot raise the open file limit to %ld: %s",
				 have, strerror(errno));
	if (have == need)
		return 0;
	/* Too few: the connection limits shrink in proportion to what is
	 * left once everything else has its descriptors. */
	room = have - other_fds;
	if (room < (tcp ? 6 : 2))
		return qual_fail(msg, QUAL_EINVAL, "the open file limit (%ld, hard) leaves no room "
				 "for connections: quald needs %ld besides them (raise it with "
				 "LimitNOFILE= or ulimit -Hn)", have, (long)other_fds);
	{
		int m = (int)(cfg->max_connections * room / (conns + unauth));
		int u = (int)(cfg->max_unauth * room / (conns + unauth));
		char also[96] = "";

		m = m < 2 ? 2 : m;
		u = u < 2 ? 2 : u;
		if (tcp)
			snprintf(also, sizeof also, ", --max-unauthenticated from %d to %d",
				 cfg->max_unauth, u);
		qual_fail(msg, 0, "the open file limit (%ld, hard) is below the %ld descriptors "
			  "the connection limits need: --max-connections lowered from %d to %d%s",
			  have, need, cfg->max_connections, m, also);
		cfg->max_connections = m;
		if (tcp)
			cfg->max_unauth = u;
	}
	return 1;
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
	if (s->cfg.max_unauth <= 0)
		s->cfg.max_unauth = SERVER_DEFAULT_MAX_UNAUTH;
	if (s->cfg.auth_timeout_ms <= 0)
		s->cfg.auth_timeout_ms = SERVER_DEFAULT_AUTH_TIMEOUT_MS;
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
	uv_timer_init(loop, &s->auth_timer);
	uv_timer_init(loop, &s->log_timer);
	s->drain_timer.data = s->auth_timer.data = s->log_timer.data = s;
	s->timers_open = 3;
	/* Given up, when accept fails for want of descriptors, to take the
	 * pending connection and refuse it (accept_failed). */
	s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	for (int i = 0; i < cfg->nlisten_fds && rc == 0; i++)
		rc = listen_fd(s, cfg->listen_fds[i], msg);
	if (rc == 0 && cfg->socket_path)
		rc = listen_path(s, cfg->socket_path, msg);
	if (rc == 0 && cfg->tcp_port >= 0)
		rc = listen_loopback(s, cfg->tcp_port, msg);
	if (rc == 0 && !s->listeners)
		rc = qual_fail(msg, QUAL_EINVAL, "nothing to listen on");
	if (rc == 0)
		rc = jobs_open(loop, cfg->jobs, fanout__on_line, s, &s->jobs, msg);
	if (rc < 0) {
		/* Close what was opened; the caller runs the loop to finish. */
		s->stopping = true;
		s->jobs_closed = true;
		s->jobs = NULL;
		listeners_close(s);
		server__maybe_done(s);
		return rc;
	}
	*out = s;
	server__status_update(s);
	return 0;
}
