/* What the files of quald's HTTP endpoint share (http.h is the contract
 * for everyone else):
 *   http.c         connections (the access rule, refusal and linger), the
 *                  routing of a request by its path, opening and closing;
 *   http_respond.c responses, the pages' files (daemon/web/) and the query
 *                  string;
 *   http_api.c     the JSON API and /metrics;
 *   http_events.c  the event streams (server-sent events);
 *   http_host.c    the names it answers to (the Host check).
 * Everything runs on quald's one libuv loop; names are http__verb. */
#ifndef QUAL_DAEMON_HTTP_INTERNAL_H
#define QUAL_DAEMON_HTTP_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include <h2o.h>
#include <jansson.h>

#include "daemon/http.h"
#include "daemon/jobs.h"
#include "daemon/peer.h"
#include "daemon/replycap.h"

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

union uv_any_stream {
	uv_handle_t handle;
	uv_stream_t stream;
	uv_tcp_t tcp;
	uv_pipe_t pipe;
};

struct hconn;

/* An event stream: a response that H2O pulls (proceed) while lines come
 * (http_on_line). Allocated in the request's memory pool, so it lives
 * exactly as long as the request; stream_dispose unlinks it. */
struct stream {
	h2o_generator_t gen;       /* first: H2O hands it back */
	h2o_req_t *req;
	struct http *http;
	struct stream *prev, *next;
	char job[JOB_ID_MAX];      /* "" for every job's lines */
	long seq;                  /* a job stream: lines up to it are sent */
	char *out;                 /* waiting to be handed to H2O */
	size_t outlen, outcap;
	char *inflight;            /* handed to H2O until it proceeds */
	bool sending;              /* a send is in flight */
	bool final;                /* end the response with what is in out */
	bool ended;                /* the last send is made (or the client left) */
	bool drop;                 /* abort instead, at the next chance */
	/* A job stream's replay of stored lines (http_events.c): a chunk at
	 * a time, as the client reads (replycap.h); live lines of the job
	 * wait in the log meanwhile. */
	struct jobs_cursor *replay;
	struct replycap_waiter waiter;
	size_t counted_out;        /* bytes of out counted in replycap.h */
	size_t counted_inflight;   /* of inflight */
};

/* The names the endpoint answers to (http_host.c): its listen address
 * (family AF_INET or AF_INET6, with addr and port) or a Unix socket
 * (AF_UNIX: localhost), and the --http-host names. */
struct http_names {
	int family;
	unsigned char addr[16];
	long port;
	char self[80];             /* how it names itself: "127.0.0.1:8080" */
	struct http_host {
		char *name;        /* lower case; an IPv6 address in brackets */
		long port;         /* -1: any */
	} *hosts;
	int nhosts;
};

struct http {
	uv_loop_t *loop;
	h2o_globalconf_t config;
	h2o_context_t ctx;
	h2o_accept_ctx_t accept_ctx;
	bool ctx_open;
	union uv_any_stream listener;
	bool listener_open;
	char *unix_path;           /* the socket file we made, to remove */
	char where[PATH_MAX + 32];
	struct peer_rule rule;
	char *group_name;
	struct http_names names;
	struct jobs *jobs;
	const struct server_stats *(*stats)(void *ctx);
	void *stats_ctx;
	struct stream *streams;
	struct hconn *conns;
	struct http_stats st;
	int nconns;                /* connection handles not yet closed */
	int nserved;               /* of them, handed to H2O */
	int nlinger;               /* of them, refused ones that linger */
	uv_timer_t heartbeat, drain;
	int handles;               /* our own handles not yet closed */
	bool closing, drained, timers_closing, done_called;
	bool free_when_closed;     /* http_open failed: nothing to dispose */
	void (*done)(void *ctx);
	void *done_ctx;
};

/* ---- responses (http_respond.c) ---- */

/* Adds a response header; value is copied into the request's pool. */
void http__add_header(h2o_req_t *req, const h2o_token_t *token, const char *value);

/* Sets a response's status and headers (those of http__respond), counted
 * in the endpoint's requests, for a body the caller sends (a generator). */
void http__start(h2o_req_t *req, int status, const char *reason, const char *type);

/* Answers req with body[0, len) (copied), counted in the endpoint's
 * requests; every response closes its connection. Returns 0. */
int http__respond(h2o_req_t *req, int status, const char *reason, const char *type,
		  const char *body, size_t len);

/* Answers req with o as JSON text. Takes o. */
int http__respond_json(h2o_req_t *req, int status, const char *reason, json_t *o);

/* Answers req with {"error": the formatted message}. */
int http__respond_error(h2o_req_t *req, int status, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Answers req with the file name of daemon/web/, or 404. */
int http__respond_asset(h2o_req_t *req, const char *name);

/* Calls fn for each KEY=VALUE of the request's query string, decoded;
 * returns fn's first nonzero result, or -1 (with why set) for a malformed
 * parameter. key and value are borrowed for the call. */
typedef int (*http__param_fn)(void *ctx, const char *key, const char *value, char *why,
			      size_t whylen);
int http__query_each(h2o_req_t *req, http__param_fn fn, void *ctx, char *why, size_t whylen);

/* ---- the names it answers to (http_host.c) ---- */

/* Checks and copies cfg's --http-host names into h->names (its family,
 * address, port and self set by the caller). */
int http__names_init(struct http *h, const struct http_config *cfg, struct qual_msg *msg);
void http__names_release(struct http *h);
/* Answers req with 400 (no Host header) or 421 (a Host that is not one of
 * h's names) and returns true, or returns false: req may be served. */
bool http__host_refused(struct http *h, h2o_req_t *req);

/* ---- the API (http_api.c) ---- */

int http__api_status(struct http *h, h2o_req_t *req);
int http__api_list(struct http *h, h2o_req_t *req);
/* id: a checked job id (borrowed). */
int http__api_job(struct http *h, h2o_req_t *req, const char *id);
int http__api_history(struct http *h, h2o_req_t *req);
int http__api_metrics(struct http *h, h2o_req_t *req);

/* ---- event streams (http_events.c) ---- */

/* /api/jobs/ID/events: the job's stored lines after where the client
 * stands, then its live ones, then "end". id is borrowed. */
int http__api_job_events(struct http *h, h2o_req_t *req, const char *id);
/* /api/events: every job's lines, live. */
int http__api_events(struct http *h, h2o_req_t *req);
/* Hands what waits on st to H2O, unless a send is in flight (then proceed
 * does). */
void http__stream_flush(struct stream *st);
/* The heartbeat timer's callback (h->heartbeat). */
void http__on_heartbeat(uv_timer_t *t);

#endif
