/* quald's HTTP endpoint (http.h): H2O's library on quald's libuv loop.
 *
 * One handler takes every request and routes it by its normalised path.
 * Pages and their scripts are files of daemon/web/ built into quald
 * (web_assets.c, generated); the API answers with what the control socket
 * answers (the jobs module's JSON); event streams are H2O generators fed
 * from the server's fan-out (http_on_line). */
#include "daemon/http_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "daemon/listen.h"
#include "daemon/store.h"

/* One accepted connection's handle: H2O owns it once it is wrapped, and
 * closes it with on_conn_closed. */
struct hconn {
	union uv_any_stream h;
	struct http *http;
	struct hconn *prev, *next; /* in http's list */
	/* A refused one lingers: what it sent is read and thrown away until it
	 * closes (at most LINGER_MS, LINGER_BYTES), so that closing with its
	 * request unread does not reset the connection before it has read
	 * the refusal. */
	uv_shutdown_t shutdown;
	uv_timer_t linger;
	bool lingering;
	bool served;               /* handed to H2O: counted in nserved */
	size_t discarded;
};

#define LINGER_MS 2000
#define LINGER_BYTES (1u << 20)

/* ---- routing ---- */

/* The job id after prefix in path (up to the next '/' or the end), into
 * id; the rest of the path in *rest (NUL-terminated: "" or "/events").
 * False when it is not a job id. */
static bool path_job(const char *path, size_t len, size_t prefix, char *id, char *rest,
		     size_t restcap)
{
	const char *p = path + prefix, *end = path + len;
	const char *slash = memchr(p, '/', (size_t)(end - p));
	size_t n = (size_t)((slash ? slash : end) - p);

	if (n == 0 || n >= JOB_ID_MAX || memchr(p, '\0', n))
		return false;
	memcpy(id, p, n);
	id[n] = '\0';
	n = slash ? (size_t)(end - slash) : 0;
	if (n >= restcap)
		n = restcap - 1;
	memcpy(rest, slash ? slash : "", n);
	rest[n] = '\0';
	return store_id_parse(id) >= 0;
}

static bool is(const char *path, size_t len, const char *want)
{
	return len == strlen(want) && !memcmp(path, want, len);
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
	struct http *h = container_of(req->conn->ctx, struct http, ctx);
	const char *path = req->path_normalized.base;
	size_t len = req->path_normalized.len;
	char id[JOB_ID_MAX], rest[16];

	(void)self;
	if (http__host_refused(h, req))
		return 0;
	if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) &&
	    !h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"))) {
		http__add_header(req, H2O_TOKEN_ALLOW, "GET, HEAD");
		return http__respond_error(req, 405, "Method Not Allowed",
					   "quald's http endpoint is read-only: GET and HEAD only");
	}
	if (!h->jobs || h->closing)
		return http__respond_error(req, 503, "Service Unavailable", "quald is stopping");
	if (is(path, len, "/") || is(path, len, "/index.html"))
		return http__respond_asset(req, "index.html");
	if (is(path, len, "/history"))
		return http__respond_asset(req, "history.html");
	/* Any one segment: the page asks /api/jobs/ID and shows its answer,
	 * a 404's message included. */
	if (len > 6 && !memcmp(path, "/jobs/", 6) && !memchr(path + 6, '/', len - 6))
		return http__respond_asset(req, "job.html");
	if (len > 8 && !memcmp(path, "/static/", 8)) {
		char name[128];

		if (len - 8 >= sizeof name || memchr(path + 8, '/', len - 8))
			return http__respond_error(req, 404, "Not Found", "no such file");
		memcpy(name, path + 8, len - 8);
		name[len - 8] = '\0';
		return http__respond_asset(req, name);
	}
	if (is(path, len, "/metrics"))
		return http__api_metrics(h, req);
	if (is(path, len, "/api/status"))
		return http__api_status(h, req);
	if (is(path, len, "/api/jobs"))
		return http__api_list(h, req);
	if (is(path, len, "/api/history"))
		return http__api_history(h, req);
	if (is(path, len, "/api/events"))
		return http__api_events(h, req);
	if (is(path, len, "/api/calibration"))
		return http__respond_json(req, 200, "OK", jobs_calibration_json(h->jobs));
	if (is(path, len, "/api/quarantine"))
		return http__respond_json(req, 200, "OK", jobs_quarantine_json(h->jobs));
	if (len > 10 && !memcmp(path, "/api/jobs/", 10)) {
		if (!path_job(path, len, 10, id, rest, sizeof rest))
			return http__respond_error(req, 404, "Not Found", "not a job id: '%.*s'",
						   (int)(len - 10 > 40 ? 40 : len - 10), path + 10);
		if (!*rest)
			return http__api_job(h, req, id);
		if (!strcmp(rest, "/events"))
			return http__api_job_events(h, req, id);
	}
	return http__respond_error(req, 404, "Not Found", "no such page: '%.*s'",
				   (int)(len > 80 ? 80 : len), path);
}

/* ---- connections ---- */

static void http__maybe_done(struct http *h);
static void on_handle_closed(uv_handle_t *handle);

static void on_conn_closed(uv_handle_t *handle)
{
	struct hconn *c = container_of((union uv_any_stream *)handle, struct hconn, h);
	struct http *h = c->http;

	if (c->prev)
		c->prev->next = c->next;
	else
		h->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->served)
		h->nserved--;
	free(c);
	h->nconns--;
	if (h->closing)
		http__maybe_done(h);
}

static struct hconn *hconn_new(struct http *h)
{
	struct hconn *c = xcalloc(1, sizeof *c);

	c->http = h;
	c->next = h->conns;
	if (h->conns)
		h->conns->prev = c;
	h->conns = c;
	h->nconns++;
	return c;
}

static void on_linger_closed(uv_handle_t *handle)
{
	struct hconn *c = container_of((uv_timer_t *)handle, struct hconn, linger);

	uv_close(&c->h.handle, on_conn_closed);
}

static void linger_end(struct hconn *c)
{
	if (!c->lingering)
		return;
	c->lingering = false;
	c->http->nlinger--;
	uv_read_stop(&c->h.stream);
	uv_close((uv_handle_t *)&c->linger, on_linger_closed);
}

static void on_linger_timeout(uv_timer_t *t)
{
	linger_end(container_of(t, struct hconn, linger));
}

static void linger_alloc(uv_handle_t *handle, size_t size, uv_buf_t *buf)
{
	static char sink[16384];

	(void)handle;
	(void)size;
	*buf = uv_buf_init(sink, sizeof sink);
}

static void linger_read(uv_stream_t *stream, ssize_t n, const uv_buf_t *buf)
{
	struct hconn *c = container_of((union uv_any_stream *)stream, struct hconn, h);

	(void)buf;
	if (n > 0)
		c->discarded += (size_t)n;
	if (n < 0 || c->discarded > LINGER_BYTES)
		linger_end(c);
}

static void on_refusal_shut(uv_shutdown_t *req, int status)
{
	(void)req;
	(void)status;
}

/* A refused peer gets a short answer, its write side shut, and lingers,
 * apart from the connections it would otherwise count against; past
 * HTTP_MAX_LINGER lingering at once it is closed at once (what it sent is
 * then unread, and the peer may see a reset instead of the answer). */
static void refuse(struct hconn *c, const char *why)
{
	char resp[512];
	int n = snprintf(resp, sizeof resp,
			 "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n"
			 "Connection: close\r\nContent-Length: %zu\r\n\r\n%s\n",
			 strlen(why) + 1, why);
	uv_buf_t b = uv_buf_init(resp, (unsigned)n);

	uv_try_write(&c->h.stream, &b, 1);
	if (c->http->nlinger >= HTTP_MAX_LINGER) {
		uv_close(&c->h.handle, on_conn_closed);
		return;
	}
	c->lingering = true;
	c->http->nlinger++;
	uv_timer_init(c->http->loop, &c->linger);
	uv_timer_start(&c->linger, on_linger_timeout, LINGER_MS, 0);
	if (uv_shutdown(&c->shutdown, &c->h.stream, on_refusal_shut) < 0 ||
	    uv_read_start(&c->h.stream, linger_alloc, linger_read) < 0)
		linger_end(c);
}

/* Wraps an accepted handle for H2O. */
static void serve(struct http *h, struct hconn *c)
{
	h2o_socket_t *sock = h2o_uv_socket_create(&c->h.stream, on_conn_closed);

	c->served = true;
	h->nserved++;
	h2o_accept(&h->accept_ctx, sock);
}

static void on_connection(uv_stream_t *listener, int status)
{
	struct http *h = container_of((union uv_any_stream *)listener, struct http, listener);
	struct hconn *c;
	uv_os_fd_t fd;
	char why[256];

	if (status < 0 || h->closing)
		return;
	c = hconn_new(h);
	if (h->unix_path)
		uv_pipe_init(h->loop, &c->h.pipe, 0);
	else
		uv_tcp_init(h->loop, &c->h.tcp);
	if (uv_accept(listener, &c->h.stream) < 0) {
		uv_close(&c->h.handle, on_conn_closed);
		return;
	}
	/* The rule first: a refused peer never takes an allowed one's place
	 * (it lingers apart, refuse). */
	if (uv_fileno(&c->h.handle, &fd) < 0 || !peer_allowed(fd, &h->rule, why, sizeof why)) {
		h->st.refused++;
		refuse(c, why);
		return;
	}
	if (h->nserved >= HTTP_MAX_CONNECTIONS) {
		/* At the cap: closed at once, so that no local user holds
		 * quald's descriptors. */
		h->st.refused++;
		uv_close(&c->h.handle, on_conn_closed);
		return;
	}
	serve(h, c);
}

int http_adopt_fd(struct http *h, int fd)
{
	struct hconn *c = hconn_new(h);
	int rc;

	uv_pipe_init(h->loop, &c->h.pipe, 0);
	rc = uv_pipe_open(&c->h.pipe, fd);
	if (rc < 0) {
		close(fd);
		uv_close(&c->h.handle, on_conn_closed);
		return rc;
	}
	serve(h, c);
	return 0;
}

/* ---- open and close ---- */

/* "HOST:PORT" into a loopback address. */
static int parse_listen(const char *spec, struct sockaddr_storage *a, socklen_t *alen,
			struct qual_msg *msg)
{
	const char *colon = strrchr(spec, ':'), *hs = spec;
	char host[64], *end;
	long port;
	size_t n;

	if (!colon || colon == spec)
		return qual_fail(msg, QUAL_EINVAL, "--http '%s': give HOST:PORT (a loopback "
				 "address) or the absolute path of a unix socket", spec);
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port < 0 || port > 65535)
		return qual_fail(msg, QUAL_EINVAL, "--http '%s': the port must be 0 to 65535",
				 spec);
	n = (size_t)(colon - spec);
	if (spec[0] == '[' && n >= 2 && spec[n - 1] == ']') {
		hs++;
		n -= 2;
	}
	if (n >= sizeof host)
		return qual_fail(msg, QUAL_EINVAL, "--http '%s': not an ip address", spec);
	memcpy(host, hs, n);
	host[n] = '\0';
	memset(a, 0, sizeof *a);
	if (!strcmp(host, "localhost"))
		snprintf(host, sizeof host, "127.0.0.1");
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)a)->sin_addr) == 1) {
		struct sockaddr_in *s = (struct sockaddr_in *)a;

		s->sin_family = AF_INET;
		s->sin_port = htons((uint16_t)port);
		*alen = sizeof *s;
		if ((ntohl(s->sin_addr.s_addr) >> 24) != 127)
			return qual_fail(msg, QUAL_EINVAL, "--http '%s': not a loopback address: "
					 "quald serves http to this host only", spec);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)a)->sin6_addr) == 1) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)a;

		s->sin6_family = AF_INET6;
		s->sin6_port = htons((uint16_t)port);
		*alen = sizeof *s;
		if (!IN6_IS_ADDR_LOOPBACK(&s->sin6_addr))
			return qual_fail(msg, QUAL_EINVAL, "--http '%s': not a loopback address: "
					 "quald serves http to this host only", spec);
		return 0;
	}
	return qual_fail(msg, QUAL_EINVAL, "--http '%s': '%s' is not an ip address (give "
			 "127.0.0.1, [::1] or localhost)", spec, host);
}

/* The handles H2O's context opens on the loop (its timers, and the async
 * handle of its queue between threads, which quald does not use) are
 * unreferenced, so that they do not keep the loop alive: quald's loop ends
 * when quald's own work is done, and http_free then disposes of them. */
struct seen_handles {
	uv_handle_t **h;
	int n, cap;
};

static void note_handle(uv_handle_t *handle, void *arg)
{
	struct seen_handles *s = arg;

	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->h = xrealloc(s->h, (size_t)s->cap * sizeof *s->h);
	}
	s->h[s->n++] = handle;
}

static void unref_new(uv_handle_t *handle, void *arg)
{
	struct seen_handles *s = arg;

	for (int i = 0; i < s->n; i++)
		if (s->h[i] == handle)
			return;
	uv_unref(handle);
}

static void context_open(struct http *h)
{
	struct seen_handles before = {0};
	h2o_hostconf_t *host;
	h2o_pathconf_t *path;
	h2o_handler_t *handler;

	h2o_config_init(&h->config);
	h->config.server_name = h2o_iovec_init(H2O_STRLIT("quald"));
	h->config.max_request_entity_size = 0;   /* read-only: no bodies */
	h->config.http1.upgrade_to_http2 = 0;    /* HTTP/1.1 only */
	host = h2o_config_register_host(&h->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
	path = h2o_config_register_path(host, "/", 0);
	handler = h2o_create_handler(path, sizeof *handler);
	handler->on_req = on_req;
	uv_walk(h->loop, note_handle, &before);
	h2o_context_init(&h->ctx, h->loop, &h->config);
	uv_walk(h->loop, unref_new, &before);
	free(before.h);
	h->ctx_open = true;
	h->accept_ctx.ctx = &h->ctx;
	h->accept_ctx.hosts = h->config.hosts;
}

int http_open(uv_loop_t *loop, const struct http_config *cfg, struct http **out,
	      struct qual_msg *msg)
{
	struct http *h;
	int fd = -1, port = 0, rc;

	*out = NULL;
	h = xcalloc(1, sizeof *h);
	h->loop = loop;
	rc = http__names_init(h, cfg, msg);
	if (rc < 0)
		goto fail;
	if (cfg->listen[0] == '/') {
		rc = listen_unix(cfg->listen, &fd, msg);
		if (rc < 0)
			goto fail;
		h->unix_path = xstrdup(cfg->listen);
		snprintf(h->where, sizeof h->where, "%s", cfg->listen);
		h->names.family = AF_UNIX;
		snprintf(h->names.self, sizeof h->names.self, "localhost");
		uv_pipe_init(loop, &h->listener.pipe, 0);
		rc = uv_pipe_open(&h->listener.pipe, fd);
	} else {
		struct sockaddr_storage a;
		socklen_t alen = 0;
		char addr[INET6_ADDRSTRLEN];

		rc = parse_listen(cfg->listen, &a, &alen, msg);
		if (rc < 0)
			goto fail;
		rc = listen_tcp((struct sockaddr *)&a, alen, cfg->listen, &fd, &port, msg);
		if (rc < 0)
			goto fail;
		h->names.family = a.ss_family;
		h->names.port = port;
		if (a.ss_family == AF_INET6) {
			memcpy(h->names.addr, &((struct sockaddr_in6 *)&a)->sin6_addr, 16);
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&a)->sin6_addr, addr, sizeof addr);
			snprintf(h->where, sizeof h->where, "http://[%s]:%d/", addr, port);
			snprintf(h->names.self, sizeof h->names.self, "[%s]:%d", addr, port);
		} else {
			memcpy(h->names.addr, &((struct sockaddr_in *)&a)->sin_addr, 4);
			inet_ntop(AF_INET, &((struct sockaddr_in *)&a)->sin_addr, addr, sizeof addr);
			snprintf(h->where, sizeof h->where, "http://%s:%d/", addr, port);
			snprintf(h->names.self, sizeof h->names.self, "%s:%d", addr, port);
		}
		uv_tcp_init(loop, &h->listener.tcp);
		rc = uv_tcp_open(&h->listener.tcp, fd);
	}
	/* The handle is open (and must be closed) either way; it owns fd only
	 * once it took it. */
	h->listener_open = true;
	h->listener.handle.data = h;
	h->handles = 1;
	if (rc < 0) {
		close(fd);
	} else {
		fd = -1;
		rc = uv_listen(&h->listener.stream, LISTEN_BACKLOG, on_connection);
	}
	if (rc < 0) {
		qual_fail(msg, QUAL_EIO, "cannot listen on '%s': %s", cfg->listen, uv_strerror(rc));
		rc = QUAL_EIO;
		goto fail;
	}
	h->group_name = xstrdup(cfg->rule.group_name ? cfg->rule.group_name : "qual");
	h->rule = cfg->rule;
	h->rule.group_name = h->group_name;
	context_open(h);
	uv_timer_init(loop, &h->heartbeat);
	uv_timer_init(loop, &h->drain);
	h->heartbeat.data = h->drain.data = h;
	h->handles += 2;
	uv_timer_start(&h->heartbeat, http__on_heartbeat, HTTP_HEARTBEAT_MS, HTTP_HEARTBEAT_MS);
	uv_unref((uv_handle_t *)&h->heartbeat);
	*out = h;
	return 0;
fail:
	http__names_release(h);
	if (fd >= 0)
		close(fd);
	if (h->unix_path)
		unlink(h->unix_path);
	if (h->listener_open) {
		/* Closed from the loop; h goes with it (nothing else is open). */
		h->closing = true;
		h->drained = true;
		h->free_when_closed = true;
		uv_close(&h->listener.handle, on_handle_closed);
		return rc;
	}
	free(h->unix_path);
	free(h);
	return rc;
}

void http_attach(struct http *h, struct jobs *jobs,
		 const struct server_stats *(*stats)(void *ctx), void *ctx)
{
	h->jobs = jobs;
	h->stats = stats;
	h->stats_ctx = ctx;
}

const char *http_where(const struct http *h)
{
	return h->where;
}

static void on_handle_closed(uv_handle_t *handle)
{
	struct http *h = handle->data;

	h->handles--;
	http__maybe_done(h);
}

/* Once no connection is open (or the drain is over and the rest were cut),
 * our handles close, then done runs. H2O's context stays until http_free. */
static void http__maybe_done(struct http *h)
{
	void (*done)(void *ctx);

	if (!h->closing)
		return;
	if (h->nconns > 0) {
		if (!h->drained)
			return;
		/* Past the drain: cut what is left. H2O sees its reads end and
		 * its writes fail, and closes each connection its own way. */
		for (struct hconn *c = h->conns, *next; c; c = next) {
			uv_os_fd_t fd;

			next = c->next;
			if (c->lingering)
				linger_end(c);
			else if (uv_fileno(&c->h.handle, &fd) == 0)
				shutdown(fd, SHUT_RDWR);
		}
		return;
	}
	if (!h->timers_closing && h->handles == 2) {
		h->timers_closing = true;
		uv_close((uv_handle_t *)&h->heartbeat, on_handle_closed);
		uv_close((uv_handle_t *)&h->drain, on_handle_closed);
		return;
	}
	if (h->handles > 0 || h->done_called)
		return;
	if (h->free_when_closed) {
		free(h->unix_path);
		free(h);
		return;
	}
	h->done_called = true;
	done = h->done;
	if (done)
		done(h->done_ctx);
}

static void on_drain(uv_timer_t *t)
{
	struct http *h = container_of(t, struct http, drain);

	h->drained = true;
	http__maybe_done(h);
}

void http_close(struct http *h, void (*done)(void *ctx), void *ctx)
{
	if (h->closing)
		return;
	h->closing = true;
	h->done = done;
	h->done_ctx = ctx;
	uv_close(&h->listener.handle, on_handle_closed);
	if (h->unix_path)
		unlink(h->unix_path);
	for (struct stream *st = h->streams, *next; st; st = next) {
		next = st->next; /* a flush may end st */
		if (st->ended)
			continue;
		st->final = true;
		http__stream_flush(st);
	}
	uv_timer_stop(&h->heartbeat);
	uv_timer_start(&h->drain, on_drain, HTTP_DRAIN_MS, 0);
	http__maybe_done(h);
}

void http_free(struct http *h)
{
	if (!h)
		return;
	if (h->ctx_open) {
		/* Closes H2O's handles (and runs the loop once to finish them:
		 * H2O's own way, harmless here, outside every callback). */
		h2o_context_dispose(&h->ctx);
		h2o_config_dispose(&h->config);
		uv_run(h->loop, UV_RUN_NOWAIT);
	}
	free(h->unix_path);
	free(h->group_name);
	http__names_release(h);
	free(h);
}
