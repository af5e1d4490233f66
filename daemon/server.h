/* quald's server side: the listening sockets, the connections, requests
 * (request.h) dispatched to the jobs module (jobs.h), and job lines relayed
 * to the connections that follow or watch them (docs/protocol.md).
 *
 * The server owns the jobs module: server_open opens it with the server's
 * line callback, server_close closes it. Everything runs on one libuv loop
 * and nothing here blocks it, apart from reading job logs (local files) for
 * show and watch.
 *
 * Flow control, per connection:
 *   - requests are handled one at a time, in order: while a request's
 *     replies are not all queued (a submit waiting for its library checks, a
 *     show or a watch sending stored lines) the connection is not read;
 *   - stored lines (a show's, a watch's replay) are read from the log a
 *     chunk at a time as the client takes them, within the bounds of
 *     daemon/replycap.h; live lines to a connection wait behind a show's;
 *   - while more than SERVER_REPLY_HIGH bytes wait to be written to a
 *     connection, its next request waits too (a client that sends requests
 *     without reading the replies is slowed down, not dropped);
 *   - job lines relayed live (follow, watch) are never held back for a slow
 *     client: a line that would take its pending output over
 *     client_buffer bytes closes the connection instead. The job is never
 *     affected by its clients.
 *
 * Connections, by kind (docs/protocol.md, "Connections and limits"):
 *   - Unix connections (their peer allowed by SO_PEERCRED) and TCP
 *     connections that have authenticated are limited apart, each to
 *     max_connections: TCP clients never take a Unix client's place;
 *   - a TCP connection before its auth may send at most SERVER_MAX_AUTH_BYTES
 *     without a newline (over it: refused and closed), must authenticate
 *     within auth_timeout_ms (else it is closed with a refused line), and at
 *     most max_unauth of them are open: a new one closes the oldest;
 *   - the listeners accept by themselves (not uv_listen): when accept fails
 *     (EMFILE, ENFILE) quald says so (rate-limited), closes the oldest
 *     unauthenticated TCP connection to make room for a Unix client, else
 *     takes the pending connection with a reserve descriptor and refuses it
 *     with a line, and pauses that listener for SERVER_ACCEPT_PAUSE_MS. */
#ifndef QUAL_SERVER_H
#define QUAL_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "common/err.h"
#include "daemon/jobs.h"
#include "proto/line.h"

#define SERVER_DEFAULT_CLIENT_BUFFER (8u << 20) /* bytes of pending output */
#define SERVER_MIN_CLIENT_BUFFER (64u << 10)
/* Replies and replayed lines are queued while less than this waits to be
 * written; above it the connection waits for the client to read. */
#define SERVER_REPLY_HIGH (1u << 20)
#define SERVER_MAX_CONNECTIONS 1024   /* default --max-connections */
#define SERVER_DEFAULT_MAX_WATCHERS 256 /* default --max-watchers */
#define SERVER_DEFAULT_MAX_QUEUED 1000  /* default --max-queued */
#define SERVER_DEFAULT_SLOW_GRACE_MS 2000 /* default --slow-grace-ms */
#define SERVER_MAX_TOKEN 4096           /* bytes of a TCP token */
/* Bytes a TCP connection may have sent before its auth without ending the
 * line: room for the auth request with the longest token, escaped. */
#define SERVER_MAX_AUTH_BYTES (2 * SERVER_MAX_TOKEN)
#define SERVER_DEFAULT_MAX_UNAUTH 64        /* default --max-unauthenticated */
#define SERVER_DEFAULT_AUTH_TIMEOUT_MS 10000 /* default --auth-timeout (10 s) */
/* After an accept error, how long that listener waits before it accepts
 * again: long enough not to spin on a full descriptor table, short enough
 * that a waiting Unix client hardly notices. */
#define SERVER_ACCEPT_PAUSE_MS 100
/* At most one line per kind of event (accept errors, unauthenticated
 * connections refused or closed) per this many ms; the rest are counted and
 * said in one line when the interval ends. */
#define SERVER_LOG_INTERVAL_MS 5000
/* At shutdown, how long connections get to take their last lines (the
 * interrupted verdicts) before they are closed regardless. */
#define SERVER_DRAIN_MS 2000

struct server_config {
	/* Listen on a Unix socket at this path (created with mode 0660; a stale
	 * socket nobody answers on is replaced), or NULL. */
	const char *socket_path;
	/* Already-listening sockets handed over (systemd socket activation):
	 * Unix or TCP stream sockets. */
	const int *listen_fds;
	int nlisten_fds;
	/* 127.0.0.1:tcp_port as well; -1 for none, 0 for any free port (tests;
	 * server_tcp_port tells which). */
	int tcp_port;
	/* Cap on one connection's pending output (bytes); 0 for the default. */
	size_t client_buffer;
	/* How long (ms) a connection's live output may stay over client_buffer
	 * before it is dropped; meanwhile it may reach 2 * client_buffer, never
	 * more. 0: dropped as soon as it passes the cap. */
	int slow_grace_ms;
	/* Unix connections, and apart from them authenticated TCP
	 * connections, at once; TCP connections not yet authenticated at once
	 * (the oldest is closed for a new one); watching connections; and jobs
	 * queued (including submits still being checked). 0 for the defaults. */
	int max_connections;
	int max_unauth;
	int max_watchers;
	int max_queued;
	/* Who may use the Unix socket (SO_PEERCRED): root, quald's own
	 * effective user, and members of group allow_gid when has_group (a
	 * primary or supplementary group of the peer at connect time);
	 * group_name for the refusal message. */
	bool has_group;
	unsigned allow_gid;
	const char *group_name;
	/* The token a TCP client must send first ({"op":"auth","token":...});
	 * NULL: every TCP connection is refused. */
	const char *tcp_token;
	/* How long (ms) a TCP connection may take to authenticate; 0 for the
	 * default. */
	int auth_timeout_ms;
	/* The jobs module's configuration (jobs_open). */
	const struct jobs_config *jobs;
	/* Called when the number of queued or running jobs changes (for
	 * systemd's STATUS=); may be NULL. */
	void (*on_status)(void *ctx, int queued, int running);
	void *status_ctx;
};

/* What the server counts since it opened, for the metrics endpoint
 * (daemon/metrics.h). */
struct server_stats {
	unsigned long long lines_relayed;   /* job lines, each once, as written */
	unsigned long long clients_dropped; /* connections closed for not reading
					     * their live lines (follow, watch) */
	int connections;                    /* open now: Unix and TCP, counted */
	int watchers;                       /* watching now */
};

struct server;

/* Descriptors an admitted connection may hold: its socket, and the job log
 * a reply of it reads through a cursor (one reply at a time: a show or a
 * watch's replay). An HTTP connection holds as many (its socket, and the log
 * of /api/jobs/ID or an event stream's replay). */
#define SERVER_FDS_PER_CONN 2

/* Makes room in RLIMIT_NOFILE for cfg's connection limits (the defaults
 * for those left 0, which it fills in) besides other_fds descriptors for
 * everything else quald holds (jobs' pipes and logs, the store, libuv):
 * raises the soft limit, up to the hard limit. When the hard limit is too
 * low, lowers max_connections and max_unauth in proportion until they fit
 * and returns 1 with the message saying so; QUAL_EINVAL and a message when
 * not even 2 of each fit; 0 when they fit as asked. */
int server_fit_files(struct server_config *cfg, int other_fds, struct qual_msg *msg);

/* Listens and opens the jobs module. On failure returns a negative code and
 * a message; handles opened on the way are being closed, so the caller must
 * still run the loop until it is empty before uv_loop_close. */
int server_open(uv_loop_t *loop, const struct server_config *cfg,
		struct server **out, struct qual_msg *msg);

/* The jobs module the server opened (valid until server_close's done
 * runs). */
struct jobs *server_jobs(struct server *s);

/* Calls fn for every line of every job too, after the server's own
 * connections had it (the HTTP endpoint's event streams: main.c); line is
 * borrowed (proto/line.h: line_is_verdict says it is the job's verdict
 * line). NULL: none. */
typedef void (*server_line_fn)(void *ctx, const char *job, const struct line *line);
void server_set_line_hook(struct server *s, server_line_fn fn, void *ctx);

/* The server's counts (valid until server_close's done runs). */
const struct server_stats *server_stats(struct server *s);

/* The TCP port listened on, or -1. */
int server_tcp_port(const struct server *s);

/* Stops: closes the listeners (and removes the socket file it created),
 * stops reading requests, closes the jobs module (running jobs are stopped
 * and recorded as interrupted; their last lines still reach their
 * followers), then closes every connection once its output is written (or
 * after SERVER_DRAIN_MS), frees s and calls done (once, from a close
 * callback). A second call before done has run does nothing. */
void server_close(struct server *s, void (*done)(void *ctx), void *ctx);

#endif
