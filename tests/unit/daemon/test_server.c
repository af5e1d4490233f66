/* Unit tests for daemon/server.c and daemon/sd.c: the real server on a
 * temporary socket in this process, on a libuv loop this test drives, with
 * raw socket clients. The jobs module is a scripted stand-in (below, "the
 * stub") implementing daemon/jobs.h, so that a test decides exactly when a
 * job emits which line: that is what follow, watch resume, slow clients and
 * shutdown need to be checked deterministically. The real jobs module is
 * driven end to end by the integration tests.
 *
 * Every test ends with server_close and asserts uv_loop_close() == 0. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uv.h>

#include "common/lines.h"
#include "daemon/jobs.h"
#include "daemon/request.h"
#include "daemon/sd.h"
/* The server's insides, to look at a connection's state where the wire
 * cannot show it (a replay waiting for its client). */
#include "daemon/server_internal.h"
#include "tests/unit/test_main.h"

static uv_loop_t loop;

/* ================= the stub jobs module ================= */

#define STUB_MAX_JOBS 64

struct sjob {
	char id[JOB_ID_MAX];
	const char *state;   /* queued, running, done, cancelled, interrupted */
	char *baseline;
	char **lines;
	long n, cap;
};

struct pending {
	uv_timer_t timer;
	struct jobs *j;
	jobs_submit_cb cb;
	void *ctx;
	char *baseline;
	struct pending *next;
};

struct jobs {
	jobs_line_cb cb;
	void *cb_ctx;
	struct sjob jobs[STUB_MAX_JOBS];
	int njobs;
	struct pending *pending;
	uv_timer_t close_timer;
	void (*done)(void *ctx);
	void *done_ctx;
	bool closing;
	bool quarantined;    /* STUB_SHA has 3 strikes until cleared */
};

/* The one library the stub's quarantine holds from the start. */
#define STUB_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


static struct jobs *stub;

/* A stub job's line to the server's line callback, as the jobs module
 * hands it out: parsed once (proto/line.h). */
static void stub_relay(const char *id, const char *text, size_t len)
{
	struct line *l;

	assert_int_equal(line_parse(text, len, &l), 0);
	stub->cb(stub->cb_ctx, id, l);
	line_unref(l);
}

/* A stub job's stored line to a reader, as jobs_read_log hands it out: its
 * bytes and seq, parsed when the read asks for it. True when the reader
 * stops the read there. */
static bool stub_each(enum jobs_read_how how, jobs_each_cb fn, void *ctx, const char *text,
		      long seq)
{
	struct jobs_record rec = { text, strlen(text), seq, NULL };
	bool stop;

	if (how == JOBS_READ_PARSED)
		assert_int_equal(line_parse(text, strlen(text), &rec.line), 0);
	stop = fn(ctx, &rec);
	line_unref(rec.line);
	return stop;
}

int jobs_open(uv_loop_t *l, const struct jobs_config *cfg, jobs_line_cb cb,
	      void *cb_ctx, struct jobs **out, struct qual_msg *msg)
{
	struct jobs *j;

	if (!strcmp(cfg->state_dir, "/fail"))
		return qual_fail(msg, QUAL_EIO, "cannot open the state directory '/fail'");
	j = calloc(1, sizeof *j);
	j->cb = cb;
	j->cb_ctx = cb_ctx;
	j->quarantined = true;
	uv_timer_init(l, &j->close_timer);
	stub = j;
	*out = j;
	return 0;
}

static struct sjob *stub_find(const char *id)
{
	for (int i = 0; stub && i < stub->njobs; i++)
		if (!strcmp(stub->jobs[i].id, id))
			return &stub->jobs[i];
	return NULL;
}

/* Appends a line {"type":type,<extra>,"job":..,"seq":..} to a job's log,
 * then tells the server, as the real module does. */
static void stub_emit(const char *id, const char *type, const char *extra)
{
	struct sjob *sj = stub_find(id);
	char *line;
	int len;

	assert_non_null(sj);
	len = asprintf(&line, "{\"type\":\"%s\"%s%s,\"job\":\"%s\",\"seq\":%ld}", type,
		       extra && *extra ? "," : "", extra ? extra : "", id, sj->n);
	assert_true(len > 0);
	if (sj->n == sj->cap) {
		sj->cap = sj->cap ? 2 * sj->cap : 16;
		sj->lines = realloc(sj->lines, (size_t)sj->cap * sizeof *sj->lines);
	}
	sj->lines[sj->n++] = line;
	if (!strcmp(type, "verdict")) {
		if (!strcmp(sj->state, "queued") || !strcmp(sj->state, "running"))
			sj->state = "done";
	} else {
		sj->state = "running";
	}
	stub_relay(id, line, (size_t)len);
}

static void pending_closed(uv_handle_t *h)
{
	struct pending *p = container_of((uv_timer_t *)h, struct pending, timer);

	free(p->baseline);
	free(p);
}

static void pending_unlink(struct pending *p)
{
	struct pending **pp = &p->j->pending;

	while (*pp != p)
		pp = &(*pp)->next;
	*pp = p->next;
}

static void pending_fire(uv_timer_t *t)
{
	struct pending *p = container_of(t, struct pending, timer);
	struct jobs *j = p->j;

	pending_unlink(p);
	if (!strcmp(p->baseline, "/bad")) {
		p->cb(p->ctx, QUAL_EABI, NULL, 0,
		      "cannot load compiler '/bad': no nvrtc or hiprtc entry points");
	} else {
		struct sjob *sj = &j->jobs[j->njobs++];
		int position = 0;

		for (int i = 0; i < j->njobs - 1; i++)
			position += !strcmp(j->jobs[i].state, "queued");
		snprintf(sj->id, sizeof sj->id, "j%06d", j->njobs);
		sj->state = "queued";
		sj->baseline = strdup(p->baseline);
		p->cb(p->ctx, 0, sj->id, position, NULL);
	}
	uv_close((uv_handle_t *)&p->timer, pending_closed);
}

int jobs_submit(struct jobs *j, const struct submit_args *args, jobs_submit_cb cb,
		void *ctx, struct qual_msg *msg)
{
	struct pending *p;

	if (j->closing)
		return qual_fail(msg, QUAL_EINVAL, "quald is shutting down");
	if (!strcmp(args->baseline, "/sync-bad"))
		return qual_fail(msg, QUAL_ENOENT, "cannot load compiler '/sync-bad': no such file");
	p = calloc(1, sizeof *p);
	p->j = j;
	p->cb = cb;
	p->ctx = ctx;
	p->baseline = strdup(args->baseline);
	p->next = j->pending;
	j->pending = p;
	uv_timer_init(&loop, &p->timer);
	uv_timer_start(&p->timer, pending_fire, 5, 0);
	return 0;
}

int jobs_cancel(struct jobs *j, const char *id, struct qual_msg *msg)
{
	struct sjob *sj = stub_find(id);

	(void)j;
	if (!sj)
		return qual_fail(msg, QUAL_ENOENT, "no job '%s'", id);
	if (strcmp(sj->state, "queued") && strcmp(sj->state, "running"))
		return qual_fail(msg, QUAL_EINVAL, "job '%s' has already finished", id);
	sj->state = "cancelled";
	stub_emit(id, "verdict", "\"verdict\":\"cancelled\"");
	return 0;
}

int jobs_read_log(struct jobs *j, const char *id, long after_seq, enum jobs_read_how how,
		  jobs_each_cb fn, void *ctx, enum job_state *state, struct qual_msg *msg)
{
	struct sjob *sj = stub_find(id);
	int count = 0;

	(void)j;
	if (state)
		*state = JOB_STATE_UNKNOWN;
	if (!sj)
		return qual_fail(msg, QUAL_ENOENT, "no job '%s'", id);
	if (state)
		*state = vocab_state_parse(sj->state);
	for (long i = 0; i < sj->n; i++)
		if (i > after_seq) {
			count++;
			if (stub_each(how, fn, ctx, sj->lines[i], i))
				break;
		}
	return count;
}

/* The stub's cursor: the index of the next line, and where a snapshot
 * ends (jobs.h). */
struct jobs_cursor {
	char id[JOB_ID_MAX];
	long next, stop, last;
	enum jobs_read_how how;
};

int jobs_cursor_open(struct jobs *j, const char *id, long after_seq,
		     enum jobs_read_how how, bool snapshot, struct jobs_cursor **out,
		     long *lines, enum job_state *state, struct qual_msg *msg)
{
	struct sjob *sj = stub_find(id);
	struct jobs_cursor *c;

	(void)j;
	*out = NULL;
	if (state)
		*state = sj ? vocab_state_parse(sj->state) : JOB_STATE_UNKNOWN;
	if (!sj)
		return qual_fail(msg, QUAL_ENOENT, "no job '%s'", id);
	c = calloc(1, sizeof *c);
	snprintf(c->id, sizeof c->id, "%s", id);
	c->next = after_seq < LONG_MAX ? after_seq + 1 : LONG_MAX;
	c->last = after_seq;
	c->stop = snapshot ? sj->n : LONG_MAX;
	c->how = how;
	if (lines)
		*lines = sj->n > c->next ? sj->n - c->next : 0;
	*out = c;
	return 0;
}

int jobs_cursor_next(struct jobs *j, struct jobs_cursor *c, size_t max_bytes,
		     jobs_each_cb fn, void *ctx, bool *done, enum job_state *state,
		     struct qual_msg *msg)
{
	struct sjob *sj = stub_find(c->id);
	size_t bytes = 0;
	int count = 0;

	(void)j;
	(void)msg;
	if (state && sj)
		*state = vocab_state_parse(sj->state);
	*done = false;
	while (bytes < max_bytes) {
		if (!sj || c->next >= sj->n || c->next >= c->stop) {
			*done = true;
			break;
		}
		count++;
		bytes += strlen(sj->lines[c->next]) + 1;
		c->last = c->next;
		if (stub_each(c->how, fn, ctx, sj->lines[c->next++], c->last))
			break;
	}
	return count;
}

long jobs_cursor_seq(const struct jobs_cursor *c)
{
	return c->last;
}

void jobs_cursor_free(struct jobs_cursor *c)
{
	free(c);
}

json_t *jobs_show_json(struct jobs *j, const char *id)
{
	(void)j;
	return stub_find(id) ? json_object() : NULL;
}

int jobs_ids_after(struct jobs *j, const char *id, char ***ids, int *n)
{
	*ids = calloc((size_t)j->njobs + 1, sizeof **ids);
	*n = 0;
	for (int i = 0; i < j->njobs; i++)
		if (!id || strcmp(j->jobs[i].id, id) > 0)
			(*ids)[(*n)++] = strdup(j->jobs[i].id);
	return 0;
}

void jobs_ids_free(char **ids, int n)
{
	for (int i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
}

json_t *jobs_status_json(struct jobs *j)
{
	json_t *q = json_array(), *r = json_array();

	for (int i = 0; i < j->njobs; i++) {
		if (!strcmp(j->jobs[i].state, "queued"))
			json_array_append_new(q, json_string(j->jobs[i].id));
		if (!strcmp(j->jobs[i].state, "running"))
			json_array_append_new(r, json_string(j->jobs[i].id));
	}
	return json_pack("{s:[{s:i,s:n,s:O}],s:o,s:o}", "slots", "slot", 0, "device",
			 "job", json_array_size(r) ? json_array_get(r, 0) : json_null(),
			 "queued", q, "running", r);
}

json_t *jobs_list_json(struct jobs *j, int limit, const char *before, size_t max_bytes)
{
	json_t *a = json_array();

	(void)before;
	(void)max_bytes;
	for (int i = j->njobs - 1; i >= 0 && (int)json_array_size(a) < limit; i--)
		json_array_append_new(a, json_pack("{s:s,s:s,s:s}", "job", j->jobs[i].id,
						   "state", j->jobs[i].state,
						   "baseline", j->jobs[i].baseline));
	return json_pack("{s:o}", "jobs", a);
}

bool jobs_gone(struct jobs *j, const char *job)
{
	(void)j;
	(void)job;
	return false;
}

json_t *jobs_history_json(struct jobs *j, const struct jobs_history_query *q)
{
	(void)j;
	(void)q;
	return json_pack("{s:[]}", "jobs");
}

json_t *jobs_calibration_json(struct jobs *j)
{
	(void)j;
	return json_pack("{s:[]}", "calibrations");
}

json_t *jobs_quarantine_json(struct jobs *j)
{
	json_t *a = json_array();

	if (j->quarantined)
		json_array_append_new(a, json_pack("{s:s,s:i,s:b,s:s,s:s}", "sha256", STUB_SHA,
						   "strikes", 3, "quarantined", 1,
						   "library", "/x/libnvrtc.so",
						   "last", "2026-11-29T13:00:00Z"));
	return json_pack("{s:o}", "quarantine", a);
}

int jobs_quarantine_clear(struct jobs *j, const char *sha256, struct qual_msg *msg)
{
	if (!j->quarantined || strcmp(sha256, STUB_SHA))
		return qual_fail(msg, QUAL_ENOENT, "no library with sha256 '%s' has crashed",
				 sha256);
	j->quarantined = false;
	return 0;
}

static void stub_closed(uv_handle_t *h)
{
	struct jobs *j = container_of((uv_timer_t *)h, struct jobs, close_timer);
	void (*done)(void *) = j->done;
	void *ctx = j->done_ctx;

	for (int i = 0; i < j->njobs; i++) {
		for (long k = 0; k < j->jobs[i].n; k++)
			free(j->jobs[i].lines[k]);
		free(j->jobs[i].lines);
		free(j->jobs[i].baseline);
	}
	free(j);
	stub = NULL;
	done(ctx);
}

void jobs_close(struct jobs *j, void (*done)(void *ctx), void *ctx)
{
	j->closing = true;
	j->done = done;
	j->done_ctx = ctx;
	while (j->pending) {
		struct pending *p = j->pending;

		j->pending = p->next;
		uv_timer_stop(&p->timer);
		p->cb(p->ctx, QUAL_EINVAL, NULL, 0, "quald is shutting down");
		uv_close((uv_handle_t *)&p->timer, pending_closed);
	}
	for (int i = 0; i < j->njobs; i++)
		if (!strcmp(j->jobs[i].state, "running")) {
			j->jobs[i].state = "interrupted";
			stub_emit(j->jobs[i].id, "verdict", "\"verdict\":\"interrupted\"");
		}
	uv_close((uv_handle_t *)&j->close_timer, stub_closed);
}

/* ================= fixture: a server on a temporary socket ================= */

static char tmpdir[64], sock_path[96];
static struct server *srv;
static struct jobs_config jcfg = {.state_dir = "/unused", .nslots = 1};
static int status_calls, status_queued, status_running;

static void on_status(void *ctx, int queued, int running)
{
	(void)ctx;
	status_calls++;
	status_queued = queued;
	status_running = running;
}

static void start_with(size_t client_buffer, int tcp_port)
{
	struct server_config cfg = {
		.socket_path = sock_path, .tcp_port = tcp_port,
		.client_buffer = client_buffer, .jobs = &jcfg, .on_status = on_status,
	};
	struct qual_msg msg = {{0}};

	if (server_open(&loop, &cfg, &srv, &msg) < 0)
		fail_msg("server_open: %s", msg.text);
}

/* Every test's: a fresh folder and loop, and SIGPIPE ignored (a client the
 * server drops must not end the test program). */
static int setup(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN);
	snprintf(tmpdir, sizeof tmpdir, "/tmp/qual-server-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(sock_path, sizeof sock_path, "%s/quald.sock", tmpdir);
	status_calls = 0;
	return uv_loop_init(&loop);
}

static void on_closed(void *ctx)
{
	*(bool *)ctx = true;
}

/* Closes the server (if one runs) and checks that the loop closes clean. */
static void stop(void)
{
	bool done = false;

	if (srv) {
		server_close(srv, on_closed, &done);
		uv_run(&loop, UV_RUN_DEFAULT);
		assert_true(done);
		srv = NULL;
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

static int teardown(void **state)
{
	(void)state;
	unlink(sock_path);
	rmdir(tmpdir);
	return 0;
}

/* ================= raw clients ================= */

struct client {
	int fd;
	char *buf;
	size_t len, cap;
	bool eof;
};

static struct client *client_of(int fd)
{
	struct client *c = calloc(1, sizeof *c);

	c->fd = fd;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return c;
}

/* Connects while the loop runs, so the server's accept happens. */
static struct client *client_connect(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(a.sun_path, sizeof a.sun_path, "%s", sock_path);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
		fail_msg("connect '%s': %s", sock_path, strerror(errno));
	return client_of(fd);
}

static void client_free(struct client *c)
{
	close(c->fd);
	free(c->buf);
	free(c);
}

static void client_fill(struct client *c)
{
	for (;;) {
		ssize_t n;

		if (c->cap - c->len < 65536) {
			c->cap = c->cap ? 2 * c->cap : 131072;
			c->buf = realloc(c->buf, c->cap);
		}
		n = read(c->fd, c->buf + c->len, c->cap - c->len);
		if (n > 0) {
			c->len += (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			c->eof = true;
		return;
	}
}

/* One turn of the server's loop, and whatever the client can read. */
static void pump(struct client *c)
{
	struct pollfd p = {.fd = c ? c->fd : -1, .events = POLLIN};

	uv_run(&loop, UV_RUN_NOWAIT);
	poll(&p, 1, 1);
	uv_run(&loop, UV_RUN_NOWAIT);
	if (c)
		client_fill(c);
}

static void pump_ms(int ms)
{
	uint64_t end = uv_hrtime() + (uint64_t)ms * 1000000;

	while (uv_hrtime() < end)
		pump(NULL);
}

static void client_send(struct client *c, const char *data, size_t len)
{
	uint64_t deadline = uv_hrtime() + 10000000000ull;

	while (len > 0) {
		ssize_t n = write(c->fd, data, len);

		if (n > 0) {
			data += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN)
			fail_msg("client write: %s", strerror(errno));
		if (uv_hrtime() > deadline)
			fail_msg("the server does not read");
		pump(c);
	}
	uv_run(&loop, UV_RUN_NOWAIT);
}

static void client_sends(struct client *c, const char *text)
{
	client_send(c, text, strlen(text));
}

/* The next line from the server (new string), or NULL at end of stream;
 * fails after 10 s without one. */
static char *client_line(struct client *c)
{
	uint64_t deadline = uv_hrtime() + 10000000000ull;

	for (;;) {
		char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL, *line;
		size_t n;

		if (nl) {
			n = (size_t)(nl - c->buf);
			line = strndup(c->buf, n);
			memmove(c->buf, nl + 1, c->len - n - 1);
			c->len -= n + 1;
			return line;
		}
		if (c->eof)
			return NULL;
		if (uv_hrtime() > deadline)
			fail_msg("no line from the server in 10 s");
		pump(c);
	}
}

static json_t *client_json(struct client *c)
{
	char *line = client_line(c);
	json_error_t e;
	json_t *o;

	if (!line)
		fail_msg("the server closed the connection");
	o = json_loads(line, 0, &e);
	if (!o)
		fail_msg("not json: %s", line);
	free(line);
	return o;
}

/* Nothing more arrives for ms milliseconds. */
static void client_quiet(struct client *c, int ms)
{
	uint64_t end = uv_hrtime() + (uint64_t)ms * 1000000;

	while (uv_hrtime() < end)
		pump(c);
	if (c->len)
		fail_msg("unexpected output: %.*s", (int)c->len, c->buf);
}

static const char *sget(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static void expect_type(json_t *o, const char *type, const char *op)
{
	if (!sget(o, "type") || strcmp(sget(o, "type"), type) ||
	    (op && (!sget(o, "op") || strcmp(sget(o, "op"), op)))) {
		char *t = json_dumps(o, 0);

		fail_msg("expected a %s for %s, got %s", type, op ? op : "-", t);
	}
}

/* The next line is a refusal whose message holds want; returns it. */
static json_t *expect_refused(struct client *c, const char *want)
{
	json_t *o = client_json(c);

	expect_type(o, "refused", NULL);
	assert_true(json_object_get(o, "op") != NULL);
	assert_true(json_object_get(o, "id") != NULL);
	if (!sget(o, "message") || !strstr(sget(o, "message"), want))
		fail_msg("refusal '%s' lacks '%s'", sget(o, "message"), want);
	return o;
}

static void expect_status_works(struct client *c)
{
	json_t *o;

	client_sends(c, "{\"op\":\"status\",\"id\":\"ok?\"}\n");
	o = client_json(c);
	expect_type(o, "reply", "status");
	assert_string_equal(sget(o, "id"), "ok?");
	json_decref(o);
}

/* A job line: checks job and seq, returns the type. */
static void expect_line(struct client *c, const char *job, long seq)
{
	json_t *o = client_json(c);

	if (!sget(o, "job") || strcmp(sget(o, "job"), job) ||
	    json_integer_value(json_object_get(o, "seq")) != seq) {
		char *t = json_dumps(o, 0);

		fail_msg("expected %s seq %ld, got %s", job, seq, t);
	}
	json_decref(o);
}

/* Submits (follow as given) and returns the job id from the reply. */
static char *submit(struct client *c, const char *baseline, bool follow)
{
	char req[512], *id;
	json_t *o;

	snprintf(req, sizeof req, "{\"op\":\"submit\",\"baseline\":\"%s\",\"candidate\":\"/c\","
		 "\"follow\":%s}\n", baseline, follow ? "true" : "false");
	client_sends(c, req);
	o = client_json(c);
	expect_type(o, "reply", "submit");
	assert_string_equal(sget(o, "state"), "queued");
	assert_true(json_is_integer(json_object_get(o, "position")));
	id = strdup(sget(o, "job"));
	json_decref(o);
	return id;
}

/* ================= tests ================= */

/* Each bad request gets exactly one refused line naming the problem, and the
 * next request on the same connection works. */
static void test_bad_requests_connection_lives(void **state)
{
	static const struct {
		const char *line, *want, *op;
	} bad[] = {
		{"{\"op\":\"status\"", "malformed json at column", NULL},
		{"not json at all", "malformed json at column", NULL},
		{"[1,2,3]", "a request must be a json object, got an array", NULL},
		{"{\"op\":\"frobnicate\",\"id\":3}", "unknown op 'frobnicate'", NULL},
		{"{\"id\":4}", "missing 'op'", NULL},
		{"{\"op\":\"submit\",\"candidate\":\"/c\"}", "missing 'baseline'", "submit"},
		{"{\"op\":\"submit\",\"baseline\":1,\"candidate\":\"/c\"}",
		 "'baseline' must be a string", "submit"},
		{"{\"op\":\"submit\",\"baseline\":\"/a\",\"candidate\":\"/c\",\"pairs\":5}",
		 "'pairs' must be an integer >= 30, got 5", "submit"},
		{"{\"op\":\"show\"}", "missing 'job'", "show"},
		{"{\"op\":\"show\",\"job\":\"j000042\"}", "no job 'j000042'", "show"},
		{"{\"op\":\"cancel\",\"job\":\"j000042\"}", "no job 'j000042'", "cancel"},
		{"{\"op\":\"watch\",\"after_job\":\"j000042\"}", "no job 'j000042'", "watch"},
		/* One spelling per job (proto/vocab.h): refused at the door. */
		{"{\"op\":\"show\",\"job\":\"j0000042\"}",
		 "'job' must be a job id like 'j000001', got 'j0000042'", "show"},
		{"{\"op\":\"cancel\",\"job\":\"j0000042\"}",
		 "'job' must be a job id like 'j000001', got 'j0000042'", "cancel"},
		{"{\"op\":\"watch\",\"after_job\":\"j0000042\"}",
		 "'after_job' must be a job id like 'j000001', got 'j0000042'", "watch"},
		{"{\"op\":\"submit\",\"baseline\":\"/sync-bad\",\"candidate\":\"/c\"}",
		 "cannot load compiler '/sync-bad'", "submit"},
	};
	struct client *c;

	(void)state;
	start_with(0, -1);
	c = client_connect();
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		json_t *o;

		client_sends(c, bad[i].line);
		client_sends(c, "\n");
		o = expect_refused(c, bad[i].want);
		if (bad[i].op)
			assert_string_equal(sget(o, "op"), bad[i].op);
		else
			assert_true(json_is_null(json_object_get(o, "op")));
		json_decref(o);
		expect_status_works(c);
	}
	/* The id is echoed in a refusal, and is null without one. */
	client_sends(c, "{\"op\":\"nope\",\"id\":[\"x\",1]}\n{\"op\":\"nope\"}\n");
	{
		json_t *o = expect_refused(c, "unknown op 'nope'");
		json_t *want = json_pack("[s,i]", "x", 1);

		assert_true(json_equal(json_object_get(o, "id"), want));
		json_decref(want);
		json_decref(o);
		o = expect_refused(c, "unknown op 'nope'");
		assert_true(json_is_null(json_object_get(o, "id")));
		json_decref(o);
	}
	/* Invalid UTF-8 in the input still gives a valid JSON refusal. */
	client_sends(c, "{\"op\":\"\xff\xfe\"}\n");
	json_decref(expect_refused(c, "malformed json"));
	expect_status_works(c);
	client_quiet(c, 20);
	client_free(c);
	stop();
}

/* A 2 MiB line is refused once (before its end arrives) and skipped up to
 * its newline; the connection goes on. */
static void test_oversize_line(void **state)
{
	size_t n = 2u << 20;
	char *big = malloc(n + 1);
	struct client *c;
	json_t *o;

	(void)state;
	start_with(0, -1);
	c = client_connect();
	memset(big, 'x', n);
	memcpy(big, "{\"op\":\"status\",\"id\":\"", 21);
	big[n] = '\n';
	client_send(c, big, n + 1);
	o = expect_refused(c, "request line over 1048576 bytes");
	assert_true(json_is_null(json_object_get(o, "op")));
	json_decref(o);
	expect_status_works(c);
	/* Blank lines between requests are not requests. */
	client_sends(c, "\n\r\n  \n");
	expect_status_works(c);
	/* Two oversize lines back to back, then a request in the same write. */
	client_send(c, big, n + 1);
	client_send(c, big, n + 1);
	client_sends(c, "{\"op\":\"list\"}\n");
	json_decref(expect_refused(c, "request line over"));
	json_decref(expect_refused(c, "request line over"));
	o = client_json(c);
	expect_type(o, "reply", "list");
	json_decref(o);
	client_quiet(c, 20);
	free(big);
	client_free(c);
	stop();
}

/* Requests sent together are answered in order, one reply each; a submit
 * waiting for its checks holds back the requests after it. */
static void test_pipelined_in_order(void **state)
{
	struct client *c;
	json_t *o;

	(void)state;
	start_with(0, -1);
	c = client_connect();
	client_sends(c, "{\"op\":\"status\",\"id\":1}\n"
			"{\"op\":\"submit\",\"id\":2,\"baseline\":\"/a\",\"candidate\":\"/c\",\"follow\":false}\n"
			"{\"op\":\"list\",\"id\":3}\n"
			"{bad\n"
			"{\"op\":\"show\",\"id\":5,\"job\":\"j000001\"}\n");
	for (int id = 1; id <= 5; id++) {
		if (id == 4) {
			/* Malformed: no id to echo. */
			o = expect_refused(c, "malformed json");
			assert_true(json_is_null(json_object_get(o, "id")));
			json_decref(o);
			continue;
		}
		o = client_json(c);
		assert_int_equal(json_integer_value(json_object_get(o, "id")), id);
		if (id == 3) {
			/* The list already holds the job submitted before it. */
			json_t *jobs = json_object_get(o, "jobs");

			assert_int_equal(json_array_size(jobs), 1);
			assert_string_equal(sget(json_array_get(jobs, 0), "job"), "j000001");
		}
		if (id == 5) {
			expect_type(o, "reply", "show");
			assert_int_equal(json_integer_value(json_object_get(o, "lines")), 0);
			assert_string_equal(sget(o, "state"), "queued");
		}
		json_decref(o);
	}
	client_quiet(c, 20);
	client_free(c);
	stop();
}

static void test_status(void **state)
{
	struct client *c;
	json_t *o;
	char *job;

	(void)state;
	start_with(0, -1);
	c = client_connect();
	client_sends(c, "{\"op\":\"status\"}\n");
	o = client_json(c);
	expect_type(o, "reply", "status");
	assert_null(json_object_get(o, "id"));
	assert_string_equal(sget(o, "version"), QUAL_VERSION);
	assert_int_equal(json_integer_value(json_object_get(o, "schema_version")), QUAL_SCHEMA_VERSION);
	assert_true(json_is_array(json_object_get(o, "slots")));
	assert_int_equal(json_array_size(json_object_get(o, "queued")), 0);
	assert_int_equal(json_array_size(json_object_get(o, "running")), 0);
	json_decref(o);

	/* A queued job shows, and the status callback (systemd's STATUS=)
	 * heard of it. */
	job = submit(c, "/a", false);
	client_sends(c, "{\"op\":\"status\"}\n");
	o = client_json(c);
	assert_int_equal(json_array_size(json_object_get(o, "queued")), 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(o, "queued"), 0)), job);
	json_decref(o);
	assert_int_equal(status_queued, 1);
	stub_emit(job, "start", NULL);
	assert_int_equal(status_queued, 0);
	assert_int_equal(status_running, 1);
	stub_emit(job, "verdict", "\"verdict\":\"neutral\"");
	assert_int_equal(status_running, 0);
	free(job);
	client_free(c);
	stop();
}

/* A submitter that follows gets the job's lines up to its verdict line; one
 * that has closed its sending side is then closed. */
static void test_submit_follow(void **state)
{
	struct client *c, *other;
	char *job, *job2;

	(void)state;
	start_with(0, -1);
	c = client_connect();
	other = client_connect();
	job = submit(c, "/a", true);
	job2 = submit(other, "/a", false);
	shutdown(c->fd, SHUT_WR);
	stub_emit(job, "start", NULL);
	stub_emit(job2, "start", NULL); /* not followed by c */
	stub_emit(job, "case", "\"case\":\"gemm\"");
	stub_emit(job, "verdict", "\"verdict\":\"neutral\"");
	expect_line(c, job, 0);
	expect_line(c, job, 1);
	expect_line(c, job, 2);
	assert_null(client_line(c)); /* closed after the verdict */
	client_quiet(other, 20);     /* did not follow */
	free(job);
	free(job2);
	client_free(c);
	client_free(other);
	stop();
}

static void test_submit_refused_async(void **state)
{
	struct client *c;
	json_t *o;

	(void)state;
	start_with(0, -1);
	c = client_connect();
	client_sends(c, "{\"op\":\"submit\",\"id\":\"s\",\"baseline\":\"/bad\",\"candidate\":\"/c\"}\n"
			"{\"op\":\"status\",\"id\":\"t\"}\n");
	o = expect_refused(c, "cannot load compiler '/bad': no nvrtc or hiprtc entry points");
	assert_string_equal(sget(o, "op"), "submit");
	assert_string_equal(sget(o, "id"), "s");
	json_decref(o);
	o = client_json(c);
	expect_type(o, "reply", "status");
	assert_string_equal(sget(o, "id"), "t");
	json_decref(o);
	client_free(c);
	stop();
}

/* A client that disconnects mid-stream (or before its submit is answered)
 * does not disturb the job, and the job's lines are all stored. */
static void test_disconnect_mid_stream(void **state)
{
	struct client *c, *viewer;
	char *job;
	json_t *o;

	(void)state;
	start_with(0, -1);
	c = client_connect();
	job = submit(c, "/a", true);
	stub_emit(job, "start", NULL);
	expect_line(c, job, 0);
	client_free(c);
	pump_ms(10);
	stub_emit(job, "case", NULL);
	stub_emit(job, "verdict", "\"verdict\":\"neutral\"");

	/* Gone before the submit's callback. */
	c = client_connect();
	client_sends(c, "{\"op\":\"submit\",\"baseline\":\"/a\",\"candidate\":\"/c\"}\n");
	uv_run(&loop, UV_RUN_NOWAIT);
	client_free(c);
	pump_ms(30);

	viewer = client_connect();
	client_sends(viewer, "{\"op\":\"show\",\"job\":\"j000001\"}\n");
	o = client_json(viewer);
	expect_type(o, "reply", "show");
	assert_string_equal(sget(o, "state"), "done");
	assert_int_equal(json_integer_value(json_object_get(o, "lines")), 3);
	json_decref(o);
	for (long s = 0; s < 3; s++)
		expect_line(viewer, job, s);
	/* The second submit still made its job. */
	client_sends(viewer, "{\"op\":\"list\",\"limit\":1}\n");
	o = client_json(viewer);
	assert_int_equal(json_array_size(json_object_get(o, "jobs")), 1);
	assert_string_equal(sget(json_array_get(json_object_get(o, "jobs"), 0), "job"), "j000002");
	json_decref(o);
	free(job);
	client_free(viewer);
	stop();
}

/* n pair lines of job, each with a 300-byte pad: a stored log of some
 * hundreds of bytes a line. */
static void emit_padded(const char *job, int n)
{
	char pad[300], extra[400];

	memset(pad, 'p', sizeof pad - 1);
	pad[sizeof pad - 1] = '\0';
	snprintf(extra, sizeof extra, "\"pad\":\"%s\"", pad);
	for (int i = 0; i < n; i++)
		stub_emit(job, "pair", extra);
}

/* A show sends the lines its job had when it came, a chunk at a time as the
 * client reads, and exactly as many as its header says; live lines for the
 * same connection (a watch) come after them, in order, none lost. */
static void test_show_streamed_live_after(void **state)
{
	enum { STORED = 3000, LIVE = 40 };
	struct client *sub, *w;
	char *a, *b;
	json_t *o;

	(void)state;
	start_with(0, -1);
	sub = client_connect();
	a = submit(sub, "/a", false);
	b = submit(sub, "/b", false);
	emit_padded(a, STORED);
	w = client_connect();
	client_sends(w, "{\"op\":\"watch\"}\n");
	o = client_json(w);
	expect_type(o, "reply", "watch");
	json_decref(o);
	client_sends(w, "{\"op\":\"show\",\"job\":\"j000001\"}\n");
	pump_ms(50);
	/* The show is under way, not all queued: its lines come from the log
	 * as the client reads. */
	{
		struct conn *c;

		for (c = srv->conns; c && !(c->flags & CONN_F_WATCHING); c = c->next)
			;
		assert_non_null(c);
		assert_true(c->replay.active && c->replay.show);
		assert_true(conn__pending(c) <= REPLYCAP_CLIENT + REPLYCAP_CHUNK + 1024);
	}
	for (int i = 0; i < LIVE; i++) {
		stub_emit(i % 2 ? a : b, "pair", "\"live\":true");
		uv_run(&loop, UV_RUN_NOWAIT);
	}
	o = client_json(w);
	expect_type(o, "reply", "show");
	assert_int_equal(json_integer_value(json_object_get(o, "lines")), STORED);
	json_decref(o);
	for (long s = 0; s < STORED; s++)
		expect_line(w, a, s);
	for (int i = 0; i < LIVE; i++)
		expect_line(w, i % 2 ? a : b, i % 2 ? STORED + i / 2 : i / 2);
	client_quiet(w, 20);
	free(a);
	free(b);
	client_free(sub);
	client_free(w);
	stop();
}

static void test_show_list_cancel(void **state)
{
	struct client *c;
	char *a, *b;
	json_t *o;

	(void)state;
	start_with(0, -1);
	c = client_connect();
	a = submit(c, "/a", false);
	b = submit(c, "/b", false);
	stub_emit(a, "start", NULL);

	client_sends(c, "{\"op\":\"list\",\"id\":9}\n");
	o = client_json(c);
	expect_type(o, "reply", "list");
	assert_int_equal(json_integer_value(json_object_get(o, "id")), 9);
	assert_int_equal(json_array_size(json_object_get(o, "jobs")), 2);
	assert_string_equal(sget(json_array_get(json_object_get(o, "jobs"), 0), "job"), b);
	json_decref(o);

	client_sends(c, "{\"op\":\"cancel\",\"job\":\"j000002\"}\n");
	o = client_json(c);
	expect_type(o, "reply", "cancel");
	assert_string_equal(sget(o, "job"), b);
	assert_string_equal(sget(o, "state"), "cancelled");
	json_decref(o);
	client_sends(c, "{\"op\":\"cancel\",\"job\":\"j000002\"}\n");
	json_decref(expect_refused(c, "has already finished"));

	client_sends(c, "{\"op\":\"show\",\"job\":\"j000002\"}\n");
	o = client_json(c);
	assert_string_equal(sget(o, "state"), "cancelled");
	assert_int_equal(json_integer_value(json_object_get(o, "lines")), 1);
	json_decref(o);
	o = client_json(c);
	assert_string_equal(sget(o, "verdict"), "cancelled");
	json_decref(o);
	client_quiet(c, 20);
	free(a);
	free(b);
	client_free(c);
	stop();
}

/* quarantine: list shows the stub's entry; clear answers with the hash and
 * empties the list; a second clear (or a bad hash) is refused, the
 * connection living on. */
static void test_quarantine(void **state)
{
	struct client *c;
	json_t *o, *e;

	(void)state;
	start_with(0, -1);
	c = client_connect();
	client_sends(c, "{\"op\":\"quarantine\",\"action\":\"list\",\"id\":3}\n");
	o = client_json(c);
	expect_type(o, "reply", "quarantine");
	assert_int_equal(json_integer_value(json_object_get(o, "id")), 3);
	assert_string_equal(sget(o, "action"), "list");
	assert_int_equal(json_array_size(json_object_get(o, "quarantine")), 1);
	e = json_array_get(json_object_get(o, "quarantine"), 0);
	assert_string_equal(sget(e, "sha256"), STUB_SHA);
	assert_int_equal(json_integer_value(json_object_get(e, "strikes")), 3);
	assert_true(json_is_true(json_object_get(e, "quarantined")));
	json_decref(o);

	client_sends(c, "{\"op\":\"quarantine\",\"action\":\"clear\",\"sha256\":\""
		     STUB_SHA "\"}\n");
	o = client_json(c);
	expect_type(o, "reply", "quarantine");
	assert_string_equal(sget(o, "action"), "clear");
	assert_string_equal(sget(o, "sha256"), STUB_SHA);
	json_decref(o);
	assert_false(stub->quarantined);

	client_sends(c, "{\"op\":\"quarantine\",\"action\":\"clear\",\"sha256\":\""
		     STUB_SHA "\"}\n");
	json_decref(expect_refused(c, "no quarantined library with sha256 '" STUB_SHA "'"));
	client_sends(c, "{\"op\":\"quarantine\",\"action\":\"clear\",\"sha256\":\"ABC\"}\n");
	json_decref(expect_refused(c, "'sha256' must be 64 lower-case hex digits"));

	client_sends(c, "{\"op\":\"quarantine\"}\n");
	o = client_json(c);
	expect_type(o, "reply", "quarantine");
	assert_int_equal(json_array_size(json_object_get(o, "quarantine")), 0);
	json_decref(o);
	client_free(c);
	stop();
}

/* Watch: live lines of every job; resume after (job, seq) replays the
 * stored lines after that point, then goes live without losing or
 * repeating a line. */
static void test_watch(void **state)
{
	struct client *sub, *live, *w1, *w2, *w3;
	char *a, *b, *d;
	json_t *o;

	(void)state;
	start_with(0, -1);
	sub = client_connect();
	live = client_connect();
	client_sends(live, "{\"op\":\"watch\",\"id\":\"w\"}\n");
	o = client_json(live);
	expect_type(o, "reply", "watch");
	assert_string_equal(sget(o, "id"), "w");
	json_decref(o);

	a = submit(sub, "/a", false);
	b = submit(sub, "/a", false);
	stub_emit(a, "start", NULL);
	stub_emit(a, "case", NULL);
	stub_emit(a, "verdict", NULL);
	stub_emit(b, "start", NULL);
	stub_emit(b, "case", NULL);
	expect_line(live, a, 0);
	expect_line(live, a, 1);
	expect_line(live, a, 2);
	expect_line(live, b, 0);
	expect_line(live, b, 1);

	/* After a's seq 0: a 1, a 2, b 0, b 1, then b's live lines. */
	w1 = client_connect();
	client_sends(w1, "{\"op\":\"watch\",\"after_job\":\"j000001\",\"after_seq\":0}\n");
	o = client_json(w1);
	expect_type(o, "reply", "watch");
	json_decref(o);
	expect_line(w1, a, 1);
	expect_line(w1, a, 2);
	expect_line(w1, b, 0);
	expect_line(w1, b, 1);
	client_quiet(w1, 10);

	/* after_job alone: none of a's lines. */
	w2 = client_connect();
	client_sends(w2, "{\"op\":\"watch\",\"after_job\":\"j000001\"}\n");
	json_decref(client_json(w2));
	expect_line(w2, b, 0);
	expect_line(w2, b, 1);

	/* After b's last line: nothing stored, then live. */
	w3 = client_connect();
	client_sends(w3, "{\"op\":\"watch\",\"after_job\":\"j000002\",\"after_seq\":1}\n");
	json_decref(client_json(w3));
	client_quiet(w3, 10);

	stub_emit(b, "verdict", NULL);
	d = submit(sub, "/a", false);
	stub_emit(d, "start", NULL);
	expect_line(live, b, 2);
	expect_line(live, d, 0);
	expect_line(w1, b, 2);
	expect_line(w1, d, 0);
	expect_line(w2, b, 2);
	expect_line(w2, d, 0);
	expect_line(w3, b, 2);
	expect_line(w3, d, 0);
	client_quiet(w1, 10);
	client_quiet(w2, 1);
	client_quiet(w3, 1);
	client_quiet(live, 1);

	/* A watching connection still takes requests; a second watch is
	 * refused. */
	client_sends(w1, "{\"op\":\"watch\"}\n");
	json_decref(expect_refused(w1, "already watching"));
	expect_status_works(w1);

	free(a);
	free(b);
	free(d);
	client_free(sub);
	client_free(live);
	client_free(w1);
	client_free(w2);
	client_free(w3);
	stop();
}

/* A watch resumed past the last line of a running job gets none of its
 * lines, stored or live, goes on with the later jobs, and holds no mark of
 * the job once its verdict is written. */
static void test_watch_past_end(void **state)
{
	struct client *sub, *w;
	struct conn *c;
	char *a, *b;

	(void)state;
	start_with(0, -1);
	sub = client_connect();
	a = submit(sub, "/a", false);
	stub_emit(a, "start", NULL);
	w = client_connect();
	client_sends(w, "{\"op\":\"watch\",\"after_job\":\"j000001\",\"after_seq\":100}\n");
	json_decref(client_json(w));
	stub_emit(a, "case", NULL);
	stub_emit(a, "verdict", NULL);
	client_quiet(w, 10);
	for (c = srv->conns; c && !(c->flags & CONN_F_WATCHING); c = c->next)
		;
	assert_non_null(c);
	assert_int_equal(c->nmarks, 0);
	b = submit(sub, "/a", false);
	stub_emit(b, "start", NULL);
	expect_line(w, b, 0);
	free(a);
	free(b);
	client_free(sub);
	client_free(w);
	stop();
}

/* A replay larger than the reply mark waits for the client to read instead
 * of queueing everything (and instead of dropping it); lines the job writes
 * meanwhile come once, in order, after the stored ones. */
static void test_watch_replay_paced(void **state)
{
	enum { STORED = 20000, LIVE = 300 };
	struct client *sub, *w;
	char *a;

	(void)state;
	start_with(SERVER_MIN_CLIENT_BUFFER, -1);
	sub = client_connect();
	a = submit(sub, "/a", false);
	emit_padded(a, STORED);
	w = client_connect();
	client_sends(w, "{\"op\":\"watch\",\"after_job\":\"j000001\",\"after_seq\":-1}\n");
	/* The client does not read for a while; the job goes on. */
	for (int i = 0; i < LIVE; i++) {
		stub_emit(a, "pair", "\"live\":true");
		uv_run(&loop, UV_RUN_NOWAIT);
	}
	pump_ms(50);
	/* The server holds back: at most REPLYCAP_CLIENT queued (and a chunk
	 * read past it; a chunk a turn, so about one), not all, and not
	 * nothing. */
	{
		struct conn *c;

		for (c = srv->conns; c && !(c->flags & CONN_F_WATCHING); c = c->next)
			;
		assert_non_null(c);
		assert_true(c->replay.active);
		assert_true(c->replay.waiting);
		assert_true(conn__pending(c) <= REPLYCAP_CLIENT + REPLYCAP_CHUNK + 1024);
		assert_true(conn__pending(c) > 0);
	}
	json_decref(client_json(w));
	for (long s = 0; s < STORED + LIVE; s++)
		expect_line(w, a, s);
	client_quiet(w, 20);
	stub_emit(a, "verdict", NULL);
	expect_line(w, a, STORED + LIVE);
	free(a);
	client_free(sub);
	client_free(w);
	stop();
}

/* A watcher that stops reading is dropped once its pending output passes
 * the cap; the job and a reading watcher are unaffected. */
static void test_slow_client_dropped(void **state)
{
	enum { LINES = 3000 };
	struct client *sub, *slow, *fast;
	char extra[1100];
	long got = 0;
	char *a, *line;

	(void)state;
	start_with(SERVER_MIN_CLIENT_BUFFER, -1);
	sub = client_connect();
	slow = client_connect();
	fast = client_connect();
	client_sends(slow, "{\"op\":\"watch\"}\n");
	client_sends(fast, "{\"op\":\"watch\"}\n");
	pump_ms(10);
	json_decref(client_json(fast));
	a = submit(sub, "/a", false);
	snprintf(extra, sizeof extra, "\"pad\":\"%01000d\"", 0);
	for (int i = 0; i < LINES; i++) {
		stub_emit(a, "pair", extra);
		pump(fast);
	}
	stub_emit(a, "verdict", NULL);
	for (long s = 0; s <= LINES; s++)
		expect_line(fast, a, s);
	/* The slow one has the reply, some lines, then the end. */
	json_decref(client_json(slow));
	while ((line = client_line(slow))) {
		got++;
		free(line);
	}
	assert_true(got > 0);
	assert_true(got < LINES);
	/* The job is whole. */
	{
		json_t *o;

		client_sends(sub, "{\"op\":\"show\",\"job\":\"j000001\"}\n");
		o = client_json(sub);
		assert_int_equal(json_integer_value(json_object_get(o, "lines")), LINES + 1);
		json_decref(o);
		for (long s = 0; s <= LINES; s++)
			expect_line(sub, a, s);
	}
	free(a);
	client_free(sub);
	client_free(slow);
	client_free(fast);
	stop();
}

/* Replies do not count against the cap on live output: a client that asks
 * for a long show while following a job keeps its connection, and gets the
 * show whole, then the job's lines. */
static void test_reply_not_capped(void **state)
{
	enum { STORED = 5000, LIVE = 20 };
	struct client *c;
	char extra[400];
	char *a, *b;
	json_t *o;

	(void)state;
	start_with(SERVER_MIN_CLIENT_BUFFER, -1);
	c = client_connect();
	a = submit(c, "/a", false);
	snprintf(extra, sizeof extra, "\"pad\":\"%0300d\"", 0);
	for (int i = 0; i < STORED; i++)
		stub_emit(a, "pair", extra);
	b = submit(c, "/b", true);
	client_sends(c, "{\"op\":\"show\",\"job\":\"j000001\"}\n");
	/* The show is queued (far more than the cap), unread. */
	pump_ms(20);
	for (int i = 0; i < LIVE; i++)
		stub_emit(b, "pair", NULL);
	o = client_json(c);
	expect_type(o, "reply", "show");
	assert_int_equal(json_integer_value(json_object_get(o, "lines")), STORED);
	json_decref(o);
	for (long s = 0; s < STORED; s++)
		expect_line(c, a, s);
	for (long s = 0; s < LIVE; s++)
		expect_line(c, b, s);
	client_quiet(c, 10);
	free(a);
	free(b);
	client_free(c);
	stop();
}

/* SIGTERM's path: a running job is stopped and recorded interrupted; its
 * follower and watchers get that verdict line, then the end of the stream;
 * the socket file is removed and the loop closes clean (in stop). A submit
 * still being checked is refused. */
static void test_shutdown(void **state)
{
	struct client *f, *w, *p;
	bool done = false;
	char *a;
	json_t *o;
	struct stat st;

	(void)state;
	start_with(0, -1);
	f = client_connect();
	w = client_connect();
	p = client_connect();
	client_sends(w, "{\"op\":\"watch\"}\n");
	json_decref(client_json(w));
	a = submit(f, "/a", true);
	stub_emit(a, "start", NULL);
	expect_line(f, a, 0);
	expect_line(w, a, 0);
	client_sends(p, "{\"op\":\"submit\",\"baseline\":\"/a\",\"candidate\":\"/c\"}\n");
	while (!stub->pending)
		pump(NULL);

	server_close(srv, on_closed, &done);
	server_close(srv, on_closed, &done); /* a second call does nothing */
	srv = NULL;
	assert_int_not_equal(stat(sock_path, &st), 0);
	o = client_json(f);
	assert_string_equal(sget(o, "verdict"), "interrupted");
	json_decref(o);
	assert_null(client_line(f));
	o = client_json(w);
	assert_string_equal(sget(o, "verdict"), "interrupted");
	json_decref(o);
	assert_null(client_line(w));
	json_decref(expect_refused(p, "shutting down"));
	assert_null(client_line(p));
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_true(done);
	free(a);
	client_free(f);
	client_free(w);
	client_free(p);
	stop();
}

/* Socket file handling: mode 0660; a stale socket is replaced; a live one,
 * or a file that is not a socket, is left alone and refused; after a failed
 * open the loop still closes clean. */
static void test_socket_file(void **state)
{
	struct server_config cfg = {.socket_path = sock_path, .tcp_port = -1, .jobs = &jcfg};
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct qual_msg msg = {{0}};
	struct server *second;
	struct stat st;
	int fd;

	(void)state;
	/* A stale socket: bound, never listening, closed. */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(a.sun_path, sizeof a.sun_path, "%s", sock_path);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	close(fd);
	start_with(0, -1);
	assert_int_equal(stat(sock_path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0660);
	assert_true(S_ISSOCK(st.st_mode));

	/* A live one. */
	assert_int_equal(server_open(&loop, &cfg, &second, &msg), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "another daemon answers there"));
	assert_null(second);
	{
		struct client *c = client_connect();

		expect_status_works(c);
		client_free(c);
	}
	stop();

	/* Not a socket. */
	assert_int_equal(uv_loop_init(&loop), 0);
	fd = open(sock_path, O_CREAT | O_WRONLY, 0600);
	close(fd);
	assert_int_equal(server_open(&loop, &cfg, &second, &msg), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "exists and is not a socket"));
	assert_int_equal(stat(sock_path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	unlink(sock_path);

	/* The jobs module fails after the socket is bound: the socket goes. */
	{
		struct jobs_config bad = {.state_dir = "/fail"};

		cfg.jobs = &bad;
		assert_int_equal(server_open(&loop, &cfg, &second, &msg), QUAL_EIO);
		assert_non_null(strstr(msg.text, "/fail"));
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_not_equal(stat(sock_path, &st), 0);

	/* A missing directory is named as such (libuv says EACCES). */
	{
		char missing[96];

		snprintf(missing, sizeof missing, "%s/none/quald.sock", tmpdir);
		cfg.socket_path = missing;
		cfg.jobs = &jcfg;
		assert_int_equal(server_open(&loop, &cfg, &second, &msg), QUAL_ENOENT);
		assert_non_null(strstr(msg.text, "/none'"));
		assert_non_null(strstr(msg.text, "no directory"));
	}

	/* A path too long for a socket address. */
	{
		char longp[200];

		memset(longp, 'x', sizeof longp - 1);
		longp[0] = '/';
		longp[sizeof longp - 1] = '\0';
		cfg.socket_path = longp;
		cfg.jobs = &jcfg;
		assert_int_equal(server_open(&loop, &cfg, &second, &msg), QUAL_EINVAL);
		assert_non_null(strstr(msg.text, "at most 107 bytes"));
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* Loopback TCP and handed-over listening sockets (socket activation). */
static void test_tcp_and_listen_fds(void **state)
{
	struct sockaddr_un ua = {.sun_family = AF_UNIX};
	struct sockaddr_in ta = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct server_config cfg = {.tcp_port = 0, .jobs = &jcfg, .tcp_token = "s3cret-token"};
	struct qual_msg msg = {{0}};
	char path2[96];
	int lfd, fd, fds[2];
	struct client *c;

	(void)state;
	snprintf(path2, sizeof path2, "%s/activated.sock", tmpdir);
	snprintf(ua.sun_path, sizeof ua.sun_path, "%s", path2);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&ua, sizeof ua), 0);
	assert_int_equal(listen(lfd, 8), 0);
	fds[0] = lfd;
	/* A socket that is not listening is refused. */
	fds[1] = socket(AF_UNIX, SOCK_STREAM, 0);
	cfg.listen_fds = fds;
	cfg.nlisten_fds = 2;
	assert_int_equal(server_open(&loop, &cfg, &srv, &msg), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "is not a listening unix or tcp stream socket"));
	close(fds[1]);
	uv_run(&loop, UV_RUN_DEFAULT);
	/* That failure closed the handed-over socket too (libuv owned it). */

	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	unlink(path2);
	assert_int_equal(bind(lfd, (struct sockaddr *)&ua, sizeof ua), 0);
	assert_int_equal(listen(lfd, 8), 0);
	fds[0] = lfd;
	cfg.nlisten_fds = 1;
	if (server_open(&loop, &cfg, &srv, &msg) < 0)
		fail_msg("server_open: %s", msg.text);
	assert_true(server_tcp_port(srv) > 0);

	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&ua, sizeof ua), 0);
	c = client_of(fd);
	expect_status_works(c);
	client_free(c);

	/* TCP: the first line must be an auth with the token; anything else
	 * is refused with one line and the connection closed. */
	{
		static const struct {
			const char *first, *want;
		} bad[] = {
			{"{\"op\":\"status\"}\n", "authentication required"},
			{"{\"op\":\"auth\",\"token\":\"s3cret-tokeX\"}\n", "wrong token"},
			{"{\"op\":\"auth\",\"token\":\"s3cret\"}\n", "wrong token"},
			{"{\"op\":\"auth\",\"token\":\"s3cret-token-\"}\n", "wrong token"},
			{"{\"op\":\"auth\"}\n", "authentication required"},
			{"not json\n", "authentication required: malformed json"},
			{"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "http requests are refused"},
			{"POST /x HTTP/1.1\r\n\r\n{\"op\":\"auth\",\"token\":\"s3cret-token\"}\n",
			 "http requests are refused"},
			{"OPTIONS * HTTP/1.1\r\n", "http requests are refused"},
			{"{\"op\":\"auth\",\"token\":\"s3cret-token\"} HTTP/1.1\n",
			 "http requests are refused"},
		};

		ta.sin_port = htons((uint16_t)server_tcp_port(srv));
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			char *line;

			fd = socket(AF_INET, SOCK_STREAM, 0);
			assert_int_equal(connect(fd, (struct sockaddr *)&ta, sizeof ta), 0);
			c = client_of(fd);
			client_sends(c, bad[i].first);
			json_decref(expect_refused(c, bad[i].want));
			/* Then the end: nothing else, and no request served. */
			line = client_line(c);
			if (line)
				fail_msg("after '%s': more after the refusal: %s", bad[i].first, line);
			client_free(c);
		}
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&ta, sizeof ta), 0);
	c = client_of(fd);
	client_sends(c, "{\"op\":\"auth\",\"token\":\"s3cret-token\",\"id\":1}\n");
	{
		json_t *o = client_json(c);

		expect_type(o, "reply", "auth");
		assert_int_equal(json_integer_value(json_object_get(o, "id")), 1);
		json_decref(o);
	}
	expect_status_works(c);
	client_sends(c, "{\"op\":\"auth\",\"token\":\"s3cret-token\"}\n");
	json_decref(expect_refused(c, "already authenticated"));
	/* An HTTP-shaped line after auth is just a bad request. */
	client_sends(c, "GET / HTTP/1.1\n");
	json_decref(expect_refused(c, "malformed json"));
	expect_status_works(c);
	client_sends(c, "{\"op\":\"frobnicate\"}\n");
	json_decref(expect_refused(c, "unknown op"));
	expect_status_works(c);
	client_free(c);
	stop();
	/* Not our file: a handed-over socket's path is left alone. */
	assert_int_equal(access(path2, F_OK), 0);
	unlink(path2);
}

/* Without a token configured, every TCP connection is refused. */
static void test_tcp_without_token(void **state)
{
	struct sockaddr_in ta = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct server_config cfg = {.socket_path = sock_path, .tcp_port = 0, .jobs = &jcfg};
	struct qual_msg msg = {{0}};
	struct client *c;
	int fd;

	(void)state;
	if (server_open(&loop, &cfg, &srv, &msg) < 0)
		fail_msg("server_open: %s", msg.text);
	ta.sin_port = htons((uint16_t)server_tcp_port(srv));
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&ta, sizeof ta), 0);
	c = client_of(fd);
	client_sends(c, "{\"op\":\"auth\",\"token\":\"anything\"}\n");
	json_decref(expect_refused(c, "no --tcp-token-file"));
	assert_null(client_line(c));
	/* A refused peer that does not close is closed after the linger; its
	 * input meanwhile is thrown away. */
	assert_int_equal(srv->nconns, 1);
	client_sends(c, "{\"op\":\"status\"}\n");
	pump_ms(LINGER_MS / 2);
	assert_int_equal(srv->nconns, 1);
	pump_ms(LINGER_MS / 2 + 300);
	assert_int_equal(srv->nconns, 0);
	client_free(c);
	/* The Unix socket is not affected; auth there is refused politely. */
	c = client_connect();
	client_sends(c, "{\"op\":\"auth\",\"token\":\"anything\"}\n");
	json_decref(expect_refused(c, "auth is for tcp connections"));
	expect_status_works(c);
	client_free(c);
	stop();
}

/* A child process as uid 65534 with the given supplementary groups (and
 * primary gid 65534) connects to the socket, sends a status and exits 0
 * when served, 1 when refused with want_refusal in the line, 2 otherwise.
 * The parent runs the server's loop meanwhile. Returns the child's status. */
static int peer_as_nobody(const gid_t *groups, int ngroups, const char *want_refusal)
{
	pid_t pid;
	int st = -1;
	uint64_t deadline = uv_hrtime() + 10000000000ull;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		char buf[1024];
		size_t got = 0;
		ssize_t n;
		int fd;

		if (setgroups((size_t)ngroups, groups) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(3);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		snprintf(a.sun_path, sizeof a.sun_path, "%s", sock_path);
		if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
			_exit(4);
		if (write(fd, "{\"op\":\"status\"}\n", 16) != 16)
			_exit(5);
		while (got < sizeof buf - 1 && (n = read(fd, buf + got, sizeof buf - 1 - got)) > 0) {
			got += (size_t)n;
			if (memchr(buf, '\n', got))
				break;
		}
		buf[got] = '\0';
		if (strstr(buf, "\"type\":\"reply\"") && strstr(buf, "\"op\":\"status\""))
			_exit(0);
		if (strstr(buf, "\"type\":\"refused\"") && strstr(buf, want_refusal)) {
			/* One line, then the end. */
			got = 0;
			while ((n = read(fd, buf, sizeof buf)) > 0)
				got += (size_t)n;
			/* The server closed without reading the request: a
			 * Unix socket then reports a reset, not an end. */
			_exit(got == 0 && (n == 0 || errno == ECONNRESET) ? 1 : 6);
		}
		fprintf(stderr, "peer got: %s\n", buf);
		_exit(2);
	}
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (uv_hrtime() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("the peer child did not finish in 10 s");
		}
		pump(NULL);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* SO_PEERCRED: root (this test), quald's user, and members of the group are
 * served; anyone else gets one refusal line and is disconnected. Needs root
 * to become another user. */
static void test_peer_credentials(void **state)
{
	struct server_config cfg = {.socket_path = sock_path, .tcp_port = -1, .jobs = &jcfg,
				    .has_group = true, .allow_gid = 4242, .group_name = "qualtest"};
	struct qual_msg msg = {{0}};
	gid_t in[2] = {100, 4242}, out[1] = {100};
	struct client *c;

	(void)state;
	if (geteuid() != 0) {
		fprintf(stderr, "test_peer_credentials: skipped: needs root to act as another user\n");
		skip();
	}
	assert_int_equal(chmod(tmpdir, 0755), 0);
	if (server_open(&loop, &cfg, &srv, &msg) < 0)
		fail_msg("server_open: %s", msg.text);
	assert_int_equal(chmod(sock_path, 0666), 0);
	/* Root is served. */
	c = client_connect();
	expect_status_works(c);
	client_free(c);
	/* Not in the group: refused, with the uid and the group named. */
	assert_int_equal(peer_as_nobody(out, 1, "uid 65534 is not allowed: not root, not "
					"quald's user, not in group 'qualtest'"), 1);
	assert_int_equal(peer_as_nobody(NULL, 0, "uid 65534 is not allowed"), 1);
	/* A supplementary group is enough. */
	assert_int_equal(peer_as_nobody(in, 2, "-"), 0);
	/* The server lives on. */
	c = client_connect();
	expect_status_works(c);
	client_free(c);
	stop();

	/* No group configured (it does not exist): only root and quald's user. */
	assert_int_equal(uv_loop_init(&loop), 0);
	cfg.has_group = false;
	if (server_open(&loop, &cfg, &srv, &msg) < 0)
		fail_msg("server_open: %s", msg.text);
	assert_int_equal(chmod(sock_path, 0666), 0);
	assert_int_equal(peer_as_nobody(in, 2, "group 'qualtest' does not exist"), 1);
	stop();
}

/* Past --max-watchers a watch is refused (the connection lives); a
 * watcher leaving makes room. */
static void test_watcher_limit(void **state)
{
	struct server_config cfg = {.socket_path = sock_path, .tcp_port = -1, .jobs = &jcfg,
				    .max_watchers = 2};
	struct qual_msg msg = {{0}};
	struct client *w[3];
	json_t *o;
	char *a;

	(void)state;
	if (server_open(&loop, &cfg, &srv, &msg) < 0)
		fail_msg("server_open: %s", msg.text);
	for (int i = 0; i < 3; i++)
		w[i] = client_connect();
	for (int i = 0; i < 2; i++) {
		client_sends(w[i], "{\"op\":\"watch\"}\n");
		o = client_json(w[i]);
		expect_type(o, "reply", "watch");
		json_decref(o);
	}
	client_sends(w[2], "{\"op\":\"watch\",\"id\":9}\n");
	o = expect_refused(w[2], "too many watchers: 2 connections are watching");
	assert_string_equal(sget(o, "op"), "watch");
	json_decref(o);
	expect_status_works(w[2]);
	/* A watcher that went away is noticed when a line is written to it
	 * (its EOF alone could be a half-close: it may still be reading). */
	client_free(w[0]);
	a = submit(w[2], "/a", false);
	stub_emit(a, "start", NULL);
	free(a);
	pump_ms(50);
	assert_int_equal(srv->nwatchers, 1);
	client_sends(w[2], "{\"op\":\"watch\"}\n");
	o = client_json(w[2]);
	expect_type(o, "reply", "watch");
	json_decref(o);
	stub_emit("j000001", "verdict", NULL);
	client_free(w[1]);
	client_free(w[2]);
	stop();
}

/* Past --max-queued a submit is refused with the queue's length; a job
 * leaving the queue makes room. */
static void test_queue_full(void **state)
{
	struct server_config cfg = {.socket_path = sock_path, .tcp_port = -1, .jobs = &jcfg,
				    .max_queued = 2};
	struct qual_msg msg = {{0}};
	struct client *c;
	char *a, *b, *d;
	json_t *o;

	(void)state;
	if (server_open(&loop, &cfg, &srv, &msg) < 0)
		fail_msg("server_open: %s", msg.text);
	c = client_connect();
	a = submit(c, "/a", false);
	b = submit(c, "/b", false);
	client_sends(c, "{\"op\":\"submit\",\"baseline\":\"/x\",\"candidate\":\"/c\",\"id\":3}\n");
	o = expect_refused(c, "queue is full: 2 jobs queued");
	assert_string_equal(sget(o, "op"), "submit");
	assert_int_equal(json_integer_value(json_object_get(o, "id")), 3);
	json_decref(o);
	/* a starts running: one place free. */
	stub_emit(a, "start", NULL);
	d = submit(c, "/d", false);
	free(a);
	free(b);
	free(d);
	client_free(c);
	stop();
}

/* A slow reader's test: a server with the smallest --client-buffer and a
 * grace of grace_ms, a submitter, a watcher that never reads (sc: the
 * server's side of it) and a job whose lines extra pads to a kilobyte. */
struct slow {
	struct client *sub, *slow;
	struct conn *sc;
	char *job;
	char extra[1100];
};

static void slow_open(struct slow *s, int grace_ms)
{
	struct server_config cfg = {.socket_path = sock_path, .tcp_port = -1, .jobs = &jcfg,
				    .client_buffer = SERVER_MIN_CLIENT_BUFFER,
				    .slow_grace_ms = grace_ms};
	struct qual_msg msg = {{0}};

	if (server_open(&loop, &cfg, &srv, &msg) < 0)
		fail_msg("server_open: %s", msg.text);
	s->sub = client_connect();
	s->slow = client_connect();
	client_sends(s->slow, "{\"op\":\"watch\"}\n");
	pump_ms(20);
	for (s->sc = srv->conns; s->sc && !(s->sc->flags & CONN_F_WATCHING); s->sc = s->sc->next)
		;
	assert_non_null(s->sc);
	s->job = submit(s->sub, "/a", false);
	snprintf(s->extra, sizeof s->extra, "\"pad\":\"%01000d\"", 0);
}

static void slow_close(struct slow *s)
{
	stub_emit(s->job, "verdict", NULL);
	free(s->job);
	client_free(s->sub);
	client_free(s->slow);
	stop();
}

/* A watcher over --client-buffer is dropped only once it has been over it
 * for --slow-grace-ms, and at twice the cap at once. */
static void test_slow_reader_grace(void **state)
{
	struct slow s;
	uint64_t t0;
	int lines = 0;

	(void)state;
	slow_open(&s, 1000);
	/* Lines until the slow client's queue passes the cap (the kernel's
	 * socket buffer takes some first). */
	while (!s.sc->over_since) {
		stub_emit(s.job, "pair", s.extra);
		uv_run(&loop, UV_RUN_NOWAIT);
		assert_false(s.sc->state == CONN_STATE_CLOSING);
		assert_true(++lines < 100000);
	}
	t0 = uv_hrtime();
	/* Within the grace: more lines are taken while under twice the cap. */
	for (int i = 0; i < 10; i++) {
		stub_emit(s.job, "pair", s.extra);
		uv_run(&loop, UV_RUN_NOWAIT);
	}
	pump_ms(150);
	stub_emit(s.job, "pair", s.extra);
	assert_true(uv_hrtime() - t0 < 1000000000ull); /* else the machine stalled */
	assert_false(s.sc->state == CONN_STATE_CLOSING);
	/* After the grace, the next line drops it. */
	pump_ms(1000);
	stub_emit(s.job, "pair", s.extra);
	assert_true(s.sc->state == CONN_STATE_CLOSING);
	pump_ms(20);
	slow_close(&s);
}

/* With a long grace, twice the cap drops a slow reader at once. */
static void test_slow_reader_hard_cap(void **state)
{
	struct slow s;
	size_t peak = 0;
	int lines = 0;

	(void)state;
	slow_open(&s, 3600000);
	/* sc is freed by the loop once closed: look at it before each turn. */
	for (;;) {
		size_t q = conn__pending(s.sc);

		peak = q > peak ? q : peak;
		stub_emit(s.job, "pair", s.extra);
		if (s.sc->state == CONN_STATE_CLOSING)
			break;
		uv_run(&loop, UV_RUN_NOWAIT);
		assert_true(++lines < 100000);
	}
	assert_true(peak > SERVER_MIN_CLIENT_BUFFER);
	assert_true(peak <= 2 * SERVER_MIN_CLIENT_BUFFER);
	slow_close(&s);
}

/* sd_notify's wire protocol: one datagram to NOTIFY_SOCKET, a path or an
 * abstract name; the variable is removed so that workers cannot use it. */
static void test_sd_notify(void **state)
{
	struct sd_notifier n;
	struct qual_msg msg;
	char path[96], name[64], got[256];
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	ssize_t len;
	int fd;

	(void)state;
	assert_int_equal(uv_loop_close(&loop), 0);
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(sd_notifier_init(&n, &msg), 0);
	assert_false(n.enabled);
	assert_int_equal(sd_notify_send(&n, "READY=1", true, &msg), 0);

	/* A path. */
	snprintf(path, sizeof path, "%s/notify", tmpdir);
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(sd_notifier_init(&n, &msg), 0);
	assert_null(getenv("NOTIFY_SOCKET"));
	assert_int_equal(sd_notify_send(&n, "READY=1\nSTATUS=0 queued, 0 running", true, &msg), 0);
	len = recv(fd, got, sizeof got - 1, MSG_DONTWAIT);
	assert_true(len > 0);
	got[len] = '\0';
	assert_string_equal(got, "READY=1\nSTATUS=0 queued, 0 running");
	close(fd);
	unlink(path);
	/* Nobody listening any more: an error, not a crash or a block. */
	assert_int_equal(sd_notify_send(&n, "STOPPING=1", true, &msg), QUAL_EIO);
	assert_non_null(strstr(msg.text, "cannot notify the service manager"));

	/* An abstract name: '@' stands for the leading NUL. */
	snprintf(name, sizeof name, "@qual-test-%d", (int)getpid());
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	memcpy(a.sun_path + 1, name + 1, strlen(name) - 1);
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a,
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name))), 0);
	setenv("NOTIFY_SOCKET", name, 1);
	assert_int_equal(sd_notifier_init(&n, &msg), 0);
	assert_int_equal(sd_notify_send(&n, "STOPPING=1", true, &msg), 0);
	len = recv(fd, got, sizeof got - 1, MSG_DONTWAIT);
	assert_int_equal(len, 10);
	got[len] = '\0';
	assert_string_equal(got, "STOPPING=1");
	close(fd);

	/* Anything else is refused and disables notifications. */
	setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
	assert_int_equal(sd_notifier_init(&n, &msg), QUAL_EINVAL);
	assert_false(n.enabled);
	assert_null(getenv("NOTIFY_SOCKET"));
}

/* sd_listen_fds: only for this pid; the count; close-on-exec set; the
 * variables removed. Descriptor 3 is borrowed for the test. */
static void test_sd_listen_fds(void **state)
{
	struct qual_msg msg;
	char pid[32];
	int saved, sock;

	(void)state;
	assert_int_equal(uv_loop_close(&loop), 0);
	snprintf(pid, sizeof pid, "%d", (int)getpid());

	unsetenv("LISTEN_PID");
	assert_int_equal(sd_listen_fds(&msg), 0);

	setenv("LISTEN_PID", "1", 1); /* someone else's */
	setenv("LISTEN_FDS", "1", 1);
	assert_int_equal(sd_listen_fds(&msg), 0);
	assert_null(getenv("LISTEN_FDS"));

	setenv("LISTEN_PID", pid, 1);
	setenv("LISTEN_FDS", "two", 1);
	assert_int_equal(sd_listen_fds(&msg), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "LISTEN_FDS 'two'"));

	saved = fcntl(SD_LISTEN_FDS_START, F_DUPFD_CLOEXEC, 10); /* -1 if 3 was free */
	sock = socket(AF_UNIX, SOCK_STREAM, 0);
	if (sock != SD_LISTEN_FDS_START) {
		assert_int_equal(dup2(sock, SD_LISTEN_FDS_START), SD_LISTEN_FDS_START);
		close(sock);
	}
	assert_int_equal(fcntl(SD_LISTEN_FDS_START, F_GETFD) & FD_CLOEXEC, 0);
	setenv("LISTEN_PID", pid, 1);
	setenv("LISTEN_FDS", "1", 1);
	setenv("LISTEN_FDNAMES", "quald.socket", 1);
	assert_int_equal(sd_listen_fds(&msg), 1);
	assert_int_not_equal(fcntl(SD_LISTEN_FDS_START, F_GETFD) & FD_CLOEXEC, 0);
	assert_null(getenv("LISTEN_PID"));
	assert_null(getenv("LISTEN_FDS"));
	assert_null(getenv("LISTEN_FDNAMES"));
	if (saved >= 0) {
		dup2(saved, SD_LISTEN_FDS_START);
		close(saved);
	} else {
		close(SD_LISTEN_FDS_START);
	}
}

/* The quald program itself, with the real jobs module and fake workers
 * (tests/tools/fake_worker.sh, fake_compile.sh): it serves, follows a job to
 * its verdict, and on SIGTERM records the running job interrupted (the
 * follower gets that line), removes its socket and exits 0 with its loop
 * closed clean. A second quald on the same socket refuses to start. */
static void test_quald_program(void **state)
{
	char state_dir[96], log[96], ok[96], hang[96], lib_ok[128], lib_hang[128];
	char self[256], req[512], text[4096];
	struct client *c;
	struct stat st;
	pid_t pid, second;
	ssize_t n;
	int status, fd;
	json_t *o;

	(void)state;
	snprintf(state_dir, sizeof state_dir, "%s/state", tmpdir);
	snprintf(log, sizeof log, "%s/quald.log", tmpdir);
	snprintf(ok, sizeof ok, "%s/ok", tmpdir);
	snprintf(hang, sizeof hang, "%s/hang", tmpdir);
	snprintf(lib_ok, sizeof lib_ok, "%s/lib.so", ok);
	snprintf(lib_hang, sizeof lib_hang, "%s/lib.so", hang);
	/* The fake worker acts as the candidate's folder says; the library
	 * must pass the submit check (a 64-bit ELF shared object): this test
	 * program (position-independent) does. */
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	assert_true(n > 0);
	self[n] = '\0';
	assert_int_equal(mkdir(ok, 0700), 0);
	assert_int_equal(mkdir(hang, 0700), 0);
	assert_int_equal(symlink(self, lib_ok), 0);
	assert_int_equal(symlink(self, lib_hang), 0);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 2);
		execl(QUALD_BIN, "quald", "--socket", sock_path, "--state-dir", state_dir,
		      "--worker", FAKE_WORKER, "--compile-helper", FAKE_COMPILE, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500 && stat(sock_path, &st) < 0; i++)
		usleep(10000);
	c = client_connect();
	expect_status_works(c);

	snprintf(req, sizeof req, "{\"op\":\"submit\",\"baseline\":\"%s\",\"candidate\":\"%s\"}\n",
		 lib_ok, lib_ok);
	client_sends(c, req);
	o = client_json(c);
	expect_type(o, "reply", "submit");
	assert_string_equal(sget(o, "job"), "j000001");
	json_decref(o);
	for (long s = 0; s < 5; s++)
		expect_line(c, "j000001", s);

	snprintf(req, sizeof req, "{\"op\":\"submit\",\"baseline\":\"%s\",\"candidate\":\"%s\"}\n",
		 lib_ok, lib_hang);
	client_sends(c, req);
	json_decref(client_json(c));
	expect_line(c, "j000002", 0);

	second = fork();
	if (second == 0) {
		fd = open("/dev/null", O_WRONLY);
		dup2(fd, 2);
		execl(QUALD_BIN, "quald", "--socket", sock_path, "--state-dir", state_dir,
		      "--worker", FAKE_WORKER, "--compile-helper", FAKE_COMPILE, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(second, &status, 0), second);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 3);

	assert_int_equal(kill(pid, SIGTERM), 0);
	o = client_json(c);
	assert_string_equal(sget(o, "type"), "verdict");
	assert_string_equal(sget(o, "verdict"), "interrupted");
	json_decref(o);
	assert_null(client_line(c));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_not_equal(stat(sock_path, &st), 0);
	fd = open(log, O_RDONLY);
	n = read(fd, text, sizeof text - 1);
	close(fd);
	text[n > 0 ? n : 0] = '\0';
	if (!strstr(text, "quald: stopped"))
		fail_msg("quald's log lacks 'stopped':\n%s", text);
	client_free(c);
	unlink(lib_ok);
	unlink(lib_hang);
	rmdir(ok);
	rmdir(hang);
	{
		char cmd[256];

		snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", state_dir, log);
		assert_int_equal(system(cmd), 0);
	}
	assert_int_equal(uv_loop_close(&loop), 0);
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup, teardown)

QUAL_TESTS(
	T(bad_requests_connection_lives),
	T(oversize_line),
	T(pipelined_in_order),
	T(status),
	T(submit_follow),
	T(submit_refused_async),
	T(disconnect_mid_stream),
	T(show_list_cancel),
	T(show_streamed_live_after),
	T(quarantine),
	T(watch),
	T(watch_replay_paced),
	T(watch_past_end),
	T(slow_client_dropped),
	T(reply_not_capped),
	T(shutdown),
	T(socket_file),
	T(tcp_and_listen_fds),
	T(tcp_without_token),
	T(peer_credentials),
	T(watcher_limit),
	T(queue_full),
	T(slow_reader_grace),
	T(slow_reader_hard_cap),
	T(sd_notify),
	T(sd_listen_fds),
	T(quald_program),
)
