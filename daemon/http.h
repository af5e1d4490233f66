/* quald's HTTP endpoint (quald --http ADDR:PORT | PATH): a read-only
 * dashboard and API for people and other dashboards, served on quald's own
 * libuv loop by H2O's library (libh2o, its libuv binding), beside the
 * control socket (docs/http.md).
 *
 *   /                         the queue and recent jobs (web page)
 *   /jobs/ID                  one job, live: its pairs plotted as they come,
 *                             each case's ratio and interval, the verdicts
 *   /history                  per-case ratios across labelled jobs
 *   /static/NAME              the pages' scripts and styles (daemon/web/,
 *                             built into quald: nothing is fetched elsewhere)
 *   /api/status, /api/jobs, /api/jobs/ID, /api/history, /api/calibration,
 *   /api/quarantine           JSON: the control socket's replies
 *   /api/jobs/ID/events       server-sent events: the job's stored lines,
 *                             then its live ones, then "end"
 *   /api/events               server-sent events: every job's lines live
 *   /metrics                  Prometheus' text format (daemon/metrics.h)
 *
 * Who may connect is the control socket's rule (peer.h): on a Unix socket
 * the kernel's credentials, on TCP only loopback peers, by the uid that owns
 * their socket. Nothing here changes anything: GET and HEAD only. Every
 * response closes its connection (no keep-alive), so that no idle
 * connection outlives a stop. */
#ifndef QUAL_DAEMON_HTTP_H
#define QUAL_DAEMON_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "common/err.h"
#include "daemon/peer.h"
#include "proto/line.h"

struct jobs;
struct server_stats;

/* HTTP connections served at once, at most; one more is closed as soon as
 * it is accepted. quald counts them in its descriptor budget. */
#define HTTP_MAX_CONNECTIONS 256
/* Connections refused by the access rule that linger at once, at most
 * (their answer is read before the close), apart from the served ones: a
 * refused peer never takes an allowed one's place. Past it a refused one is
 * closed at once. Counted in quald's descriptor budget too. */
#define HTTP_MAX_LINGER 64
/* Event streams open at once, at most; one more gets 503. */
#define HTTP_MAX_STREAMS 64
/* Bytes an event stream may have waiting for its client: over it, the
 * stream ends (a dashboard that does not read costs quald nothing more;
 * EventSource reconnects with Last-Event-ID and loses nothing). */
#define HTTP_STREAM_MAX_PENDING (16u << 20)
/* A comment line on every event stream this often: a client that went away
 * is found out, and proxies keep the stream open. */
#define HTTP_HEARTBEAT_MS 15000
/* At a stop, how long responses get to finish before quald goes on. */
#define HTTP_DRAIN_MS 2000

/* Names given with --http-host, at most. */
#define HTTP_MAX_HOSTS 16

struct http_config {
	/* "HOST:PORT" with HOST a loopback address (127.0.0.1, [::1], or
	 * localhost) and PORT 0 for any free one, or an absolute path for a
	 * Unix socket (created mode 0660; a stale socket nobody answers on is
	 * replaced). */
	const char *listen;
	struct peer_rule rule;
	/* Names the endpoint answers to besides its own (--http-host: NAME,
	 * any port, or NAME:PORT), borrowed for http_open. A request whose
	 * Host header is none of them, nor the listen address (on TCP,
	 * HOST:PORT or localhost:PORT; on a Unix socket, localhost), gets
	 * 421; one without a Host header, 400 (docs/http.md). */
	const char *const *hosts;
	int nhosts;
};

/* What the endpoint counts (for /metrics). */
struct http_stats {
	unsigned long long requests;      /* answered, any status */
	unsigned long long refused;       /* connections refused by the rule */
	unsigned long long streams_dropped; /* event streams ended for not reading */
	int streams;                      /* event streams open now */
};

struct http;

/* Checks cfg->listen and listens. Refused: an address that is not loopback
 * ("--http '0.0.0.0:80': not a loopback address: quald serves http to this
 * host only"), a malformed one, a port in use. Nothing is served until
 * http_attach. On failure *out is NULL and a listener may be closing: run
 * the loop to finish it (it frees itself). */
int http_open(uv_loop_t *loop, const struct http_config *cfg, struct http **out,
	      struct qual_msg *msg);

/* Serves jobs (borrowed: it must outlive the endpoint, up to http_close's
 * done) and the server's counts, stats(ctx) at each scrape. */
void http_attach(struct http *h, struct jobs *jobs,
		 const struct server_stats *(*stats)(void *ctx), void *ctx);

/* Where it listens, as a URL ("http://127.0.0.1:8080/") or the socket's
 * path, for the operator's log and tests (port 0 resolved). */
const char *http_where(const struct http *h);

/* A job's line as it is relayed (after it is in the job's log; the server's
 * fan-out calls it for every line; borrowed): to the event streams that
 * follow it, ending those of its job at its verdict line. */
void http_on_line(struct http *h, const char *job, const struct line *line);

/* Serves a connected stream socket fd as if accepted, without the access
 * rule (the fuzz target feeds it bytes through a socketpair). Takes fd. */
int http_adopt_fd(struct http *h, int fd);

/* Stops listening, ends the event streams, lets open responses finish (at
 * most HTTP_DRAIN_MS, then cuts the rest), closes its own handles, then
 * calls done (from a loop callback, never inside this call; done may be
 * NULL). H2O's context stays: its handles do not keep the loop alive. */
void http_close(struct http *h, void (*done)(void *ctx), void *ctx);

/* Disposes of H2O's context and frees h, after http_close's done has run
 * (or http_open failed: NULL does nothing). Call it outside every loop
 * callback, once the loop has returned (H2O runs the loop once to finish
 * closing its handles); the loop is then empty of the endpoint's handles. */
void http_free(struct http *h);

#endif
