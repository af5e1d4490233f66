/* What the three files of quald's server side share (server.h is the
 * contract for everyone else):
 *   server.c  the listeners, the dispatch of requests and their handlers,
 *             opening and closing the server;
 *   conn.c    a connection: its write queue, authentication, refusal and
 *             linger, and the limits on what it may leave unread;
 *   fanout.c  job lines to connections: the marks of what each has had,
 *             follows, watches and their replay of stored lines.
 * Everything runs on the server's one libuv loop. */
#ifndef QUAL_SERVER_INTERNAL_H
#define QUAL_SERVER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "daemon/frame.h"
#include "daemon/jobs.h"
#include "daemon/replycap.h"
#include "daemon/request.h"
#include "daemon/server.h"

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* Bytes read per read callback: a request is usually a few hundred bytes. */
#define READ_CHUNK (64u << 10)
/* A refused connection is read (and what it sends thrown away) until the
 * peer closes, at most this long and this much, before it is closed: closing
 * with its request unread would reset the connection, and a reset can cost
 * the peer the refusal line it has not read yet. */
#define LINGER_MS 2000
#define LINGER_MAX_BYTES (1u << 20)
/* Refused connections that linger at once, at most: they count against no
 * other limit (a refused peer never takes an allowed one's place, nor an
 * unauthenticated TCP connection's), and past this one is closed as soon as
 * its refusal is written, without the linger. */
#define SERVER_MAX_LINGER 64

union stream_handle {
	uv_handle_t handle;
	uv_stream_t stream;
	uv_pipe_t pipe;
	uv_tcp_t tcp;
};

/* A listening socket. It is polled for readability and accepted from here
 * (server.c), not through uv_listen: libuv answers EMFILE by accepting and
 * closing every pending connection without telling its callback, so a
 * Unix client was dropped in silence while idle TCP clients held the
 * descriptors. */
struct listener {
	uv_poll_t poll;
	uv_timer_t pause;          /* the pause after an accept error */
	int fd;                    /* ours: closed once both handles are */
	int handles;               /* open handles */
	struct server *srv;
	bool is_tcp, paused;
	char name[128];            /* for the log: '/path', 127.0.0.1:PORT, ... */
	struct listener *next;
};

/* A log line at most every SERVER_LOG_INTERVAL_MS; the events in between
 * are counted, and said in one line when the interval ends
 * (server__ratelog). */
struct ratelog {
	uint64_t next_ms;          /* uv_now before which lines are held */
	unsigned long held;        /* events held since the last line */
	char last[256];            /* the last one held */
};

/* What a connection counts against (each kind has its own limit). */
enum conn_kind {
	CONN_NONE,                 /* not counted: being set up, refused, closing */
	CONN_UNIX,                 /* an allowed Unix peer */
	CONN_TCP_UNAUTH,           /* TCP before its auth: in srv's unauth list */
	CONN_TCP,                  /* TCP after its auth */
};

/* Where a connection is in its life: one state at a time, each later than
 * the one before. */
enum conn_state {
	CONN_STATE_OPEN,      /* takes requests and answers them */
	CONN_STATE_SHUTTING,  /* takes no more requests: what is queued is
			       * written, its write side shut, then it closes
			       * (conn__shutdown) */
	CONN_STATE_REFUSED,   /* refused: the refusal is written and its write
			       * side shut; what it sends is thrown away until
			       * the peer closes or the linger timer fires */
	CONN_STATE_CLOSING,   /* its handle is closing */
};

/* What holds for a connection besides its state, as libuv's handle flags
 * do: each flag one fact, set and cleared where that fact begins and ends. */
enum conn_flag {
	CONN_F_TCP = 1 << 0,            /* accepted on a TCP listener */
	CONN_F_AUTHED = 1 << 1,         /* may make requests: a Unix peer once
					 * SO_PEERCRED allowed it, a TCP peer
					 * once its first line was an auth with
					 * the right token */
	CONN_F_READING = 1 << 2,        /* uv_read_start is in effect */
	CONN_F_EOF = 1 << 3,            /* the peer has sent everything */
	CONN_F_PROCESSING = 1 << 4,     /* conn__process is running (it is not
					 * entered again from its callbacks) */
	CONN_F_SUBMIT_PENDING = 1 << 5, /* a submit waits for jobs_submit's
					 * callback */
	CONN_F_SUBMIT_FOLLOW = 1 << 6,  /* that submit asked to follow its job */
	CONN_F_WATCHING = 1 << 7,       /* a watch: every job's lines */
	CONN_F_LINGER = 1 << 8,         /* the linger timer is open (refused) */
};

/* Output shared by every connection it is written to (a broadcast line is
 * allocated once); freed when the last write of it completes. */
struct obuf {
	int refs;
	size_t len;
	char data[];
};

/* A line waiting in a connection's queue for the write before it. */
struct qent {
	struct obuf *b;
	bool reply;
	bool stored;  /* a stored line: counted in replycap.h's bound */
};

/* A job whose lines a connection receives from a given point: (job, seq)
 * means the lines with a larger seq. Follows of a submitter, and for a
 * watcher the jobs that were still running when their stored lines were
 * replayed (so that a live line already replayed is not sent twice). */
struct mark {
	char job[JOB_ID_MAX];
	long seq;
};

/* A watch resuming after a point: the jobs whose stored lines are still to
 * be sent, ids[i] the current one with lines up to seq sent. Live lines of
 * ids[i] and later jobs are not sent while it runs: they are in the logs the
 * replay reads next. */
struct replay {
	bool active;
	bool waiting;  /* for the client to read (its queue over
			* REPLYCAP_CLIENT), or for room (waiter) */
	bool show;     /* a show's lines: one job, exactly `left` lines, no
			* marks; live lines are held meanwhile */
	long left;
	char **ids;
	int n, cap, i;
	long seq;
	struct jobs_cursor *cur;  /* ids[i]'s, once opened */
	struct replycap_waiter waiter;
};

struct conn {
	union stream_handle h;
	uv_shutdown_t shutdown_req;
	struct server *srv;
	struct conn *prev, *next;
	unsigned long serial;      /* for the log */
	int refs;                  /* the handle, and a pending submit */
	enum conn_state state;
	unsigned flags;            /* enum conn_flag */
	struct frame frame;        /* splitting the input into request lines */
	json_t *submit_id;         /* the pending submit's request id */
	enum conn_kind kind;
	uint64_t accepted_ms;      /* uv_now at accept: the auth deadline's start */
	struct conn *uprev, *unext; /* in srv's unauth list, oldest first */
	/* Refused (CONN_STATE_REFUSED): the linger timer, and the bytes
	 * thrown away so far. */
	uv_timer_t linger;
	size_t discarded;
	/* When (uv_now, ms) its live output went over client_buffer; 0 while
	 * it is under. */
	uint64_t over_since;
	struct replay replay;
	/* Live lines held while a show's lines go out (conn__send_live). */
	struct obuf **held;
	int nheld, held_cap;
	size_t held_bytes;
	struct mark *marks;
	int nmarks, marks_cap;
	int nfollows;              /* marks that are follows (not a watcher's) */
	size_t reply_inflight;     /* bytes of replies queued or being written */
	/* Output: lines queued behind the writes in flight. While a write is
	 * in flight the next lines wait here, and all of them go out in one
	 * write when it completes: a client that reads slowly costs one libuv
	 * request, not one per line, and dropping it cancels one write. */
	struct qent *q;
	int qn, qcap;
	size_t q_bytes;
	int writes;                /* writes in flight */
	char *in;                  /* input: [in_pos, in_len) is unprocessed */
	size_t in_len, in_pos, in_cap;
};

struct server {
	uv_loop_t *loop;
	struct server_config cfg;
	struct jobs *jobs;
	struct listener *listeners;
	int nlisteners;            /* listener handles not yet closed */
	char *socket_path;         /* the socket file we created, to remove */
	int tcp_port;
	struct conn *conns;
	int nconns;                /* connection handles not yet closed */
	int nunix, ntcp, nunauth;  /* connections of each counted kind */
	int nlinger;               /* refused ones lingering (SERVER_MAX_LINGER) */
	struct conn *unauth_head, *unauth_tail; /* CONN_TCP_UNAUTH, oldest first */
	uv_timer_t auth_timer;     /* the oldest unauthenticated one's deadline */
	int reserve_fd;            /* /dev/null, given up to refuse past EMFILE */
	struct ratelog log_accept, log_unauth;
	uv_timer_t log_timer;      /* the end of an interval with events held */
	unsigned long serial;
	int nwatchers;             /* connections watching */
	server_line_fn line_hook;  /* server_set_line_hook */
	void *line_hook_ctx;
	struct server_stats stats; /* lines_relayed, clients_dropped kept here;
				    * the gauges filled by server_stats() */
	int submits_pending;       /* submits waiting for jobs_submit's answer */
	char *token;               /* the TCP token, or NULL */
	char *group_name;          /* the allowed group's name, for messages */
	int last_queued, last_running;
	bool stopping, jobs_closed;
	bool timers_closing;
	int timers_open;           /* drain_timer, auth_timer, log_timer */
	uv_timer_t drain_timer;
	void (*done)(void *ctx);
	void *done_ctx;
};

/* ---- conn.c ---------------------------------------------------------- */

/* A new buffer (one reference) holding the len bytes of text and a
 * newline: one line of output. */
struct obuf *conn__line_new(const char *text, size_t len);
void conn__obuf_unref(struct obuf *b);

/* Bytes of output not yet written: queued, and in libuv's writes. */
size_t conn__pending(struct conn *c);

/* Queues nb buffers (taking a reference to each); reply says whether they
 * answer a request (a reply, a refusal, stored lines) rather than relay a
 * live job line. They go out at once when no write is in flight (or the
 * write side is being shut), else with the next write. */
void conn__write(struct conn *c, struct obuf **b, int nb, bool reply);

/* Writes one JSON object as a reply line; takes the reference. */
void conn__send_json(struct conn *c, json_t *o);

/* Sends a job line that is part of a reply (a replay, a show): flow
 * controlled by the caller, never refused by the cap. */
void conn__send_line(struct conn *c, const char *line, size_t len);

/* Sends a live job line (borrowed), or closes the connection when its
 * pending live output would pass the client_buffer cap for longer than the
 * grace, or past twice the cap. While a show's lines go out it is held
 * (at most twice the cap, or the connection is closed) until
 * conn__release_held. */
void conn__send_live(struct conn *c, struct obuf *b);
void conn__release_held(struct conn *c);

/* {"type":"reply","op":op,"id":id}: the start of every reply; "id" only when
 * the request had one. A new reference. */
json_t *conn__reply_new(const char *op, json_t *id);

/* A refusal line ({"type":"refused",...}); the connection stays open. */
void conn__refuse(struct conn *c, const char *op, json_t *id, const char *message);

/* Closes the connection now, dropping what is queued; why (may be NULL) is
 * logged. */
void conn__close(struct conn *c, const char *why);

/* Closes once everything queued is written. */
void conn__shutdown(struct conn *c);

/* A client that has sent everything (EOF) is closed once nothing more can
 * come for it. */
void conn__maybe_finish(struct conn *c);

/* Handles the complete request lines buffered, in order, while nothing
 * blocks; reads more when it can go on. */
void conn__process(struct conn *c);

/* Drops a reference (the handle's, or a pending submit's); the last frees
 * the connection. */
void conn__unref(struct conn *c);

/* A connection accepted on l (fd is taken on every path): a Unix peer's
 * credentials and limit, or a TCP connection joining the unauthenticated
 * ones (the oldest closed when there are max_unauth). */
void conn__accepted(struct listener *l, int fd);

/* Closes the oldest unauthenticated TCP connection with a refused line
 * saying message; false when there is none. */
bool conn__evict_unauth(struct server *s, const char *message);

/* The auth deadline: closes the unauthenticated connections whose time is
 * up and sets the timer for the next. */
void conn__auth_timer_arm(struct server *s);

/* ---- fanout.c -------------------------------------------------------- */

/* jobs_line_cb: every line of every job, after it is in the job's log, to
 * the connections that follow or watch it. ctx is the server. */
void fanout__on_line(void *ctx, const char *job, struct line *line);

/* After a submit's reply: the job's lines so far, then its live lines until
 * its verdict. */
void fanout__follow(struct conn *c, const char *job);

/* Makes c a watcher, once its watch reply is queued; with after_job, it
 * first gets the stored lines after (after_job, after_seq), then those of
 * the n jobs ids (borrowed) that came after it. */
void fanout__watch(struct conn *c, const char *after_job, long after_seq,
		   char **ids, int n);

/* Sends stored lines, a chunk at a time, until the replay is done, the
 * client has a REPLYCAP_CLIENT backlog, or replycap.h's global bound is
 * reached (then it waits to be woken). */
void fanout__replay_pump(struct conn *c);

/* A show's stored lines: after its header is queued, the count lines of
 * job that cur (taken) hands out, as the client reads them. */
void fanout__show(struct conn *c, const char *job, struct jobs_cursor *cur, long count);
void fanout__replay_free(struct replay *rp);
/* A replay ended before its end (quald stops): freed; a show's connection
 * is closed, since its reply cannot be completed and the live lines held
 * behind it must not follow a short reply. */
void fanout__replay_cut(struct conn *c);

/* ---- server.c -------------------------------------------------------- */

/* Handles one request line of a connection that may make requests. */
void server__handle_line(struct conn *c, const char *line, size_t len);

/* Tells cfg.on_status when the number of queued or running jobs changed. */
void server__status_update(struct server *s);

/* Logs "quald: " and the formatted text, or holds it when a line of rl
 * went out less than SERVER_LOG_INTERVAL_MS ago: at the end of the interval
 * one line says how many were held, and the last of them. */
void server__ratelog(struct server *s, struct ratelog *rl, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Frees the server once everything it opened is closed. */
void server__maybe_done(struct server *s);

#endif
