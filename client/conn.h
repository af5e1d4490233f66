/* A client connection to quald (docs/protocol.md): where the daemon is,
 * connecting over its Unix socket or loopback TCP, sending one request line,
 * and reading the daemon's lines through a bounded buffer. Blocking, with
 * poll; a SIGINT or SIGTERM caught by conn_signals_catch() ends a wait
 * cleanly instead of killing the program mid-line. */
#ifndef QUAL_CONN_H
#define QUAL_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "common/err.h"
#include "proto/line.h"

/* The largest line accepted from quald. Job lines are the engine's lines;
 * the largest are error lines carrying a compiler log, which the engine caps
 * at 1 MiB of log (compile/rtc.h, log_cap); JSON escaping can grow a byte of
 * log to six ("\u001b"), so 16 MiB holds any line the engine writes. */
#define CONN_LINE_MAX ((size_t)16 << 20)

/* Where quald listens when neither --socket nor the environment says. */
#define CONN_DEFAULT_SOCKET "/run/qual/quald.sock"

struct conn {
	int fd;               /* -1 when closed */
	char *buf;            /* received bytes; the unread ones are [start, len) */
	size_t start, len, cap;
	size_t scanned;       /* bytes after start known to hold no newline */
	size_t line_max;      /* longest line accepted, without its newline */
	char where[320];      /* the daemon's address for messages, quoted */
};

/* What conn_read_line() found. Errors are negative QUAL_E* codes. */
enum conn_read {
	CONN_EOF = 0,         /* the daemon closed the connection between lines */
	CONN_LINE = 1,        /* a line */
	CONN_INTERRUPTED = 2, /* SIGINT or SIGTERM arrived while waiting */
};

void conn_init(struct conn *c);
void conn_release(struct conn *c);

/* The socket path to use: given when not NULL, else $QUAL_SOCKET, else
 * $RUNTIME_DIRECTORY/quald.sock (its first entry, when systemd lists
 * several), else CONN_DEFAULT_SOCKET. Returns given, a getenv() string, or
 * buf (of len bytes) holding the composed path. */
const char *conn_socket_path(const char *given, char *buf, size_t len);

/* Connects to the Unix socket at path, or to HOST:PORT over TCP ("[::1]:PORT"
 * for IPv6). QUAL_EINVAL for an address that cannot be one (path too long
 * for a socket, no port); QUAL_EIO when nothing answers there, with msg
 * "cannot reach quald at '/run/qual/quald.sock': connection refused". */
int conn_open_unix(struct conn *c, const char *path, struct qual_msg *msg);
int conn_open_tcp(struct conn *c, const char *hostport, struct qual_msg *msg);

/* Sends request (borrowed) as one compact line. QUAL_EIO when the daemon
 * went away. */
int conn_send(struct conn *c, json_t *request, struct qual_msg *msg);

/* Waits for the next line, at most timeout_ms (negative: without limit).
 * On CONN_LINE, *line points at it inside the buffer, NUL-terminated and
 * without its newline, valid until the next call; *len is its length.
 * Errors: QUAL_ETIMEOUT, QUAL_ELIMIT (a line over line_max), QUAL_EIO (a
 * read failed, or the connection closed in the middle of a line). */
int conn_read_line(struct conn *c, int timeout_ms, char **line, size_t *len,
		   struct qual_msg *msg);

/* conn_read_line(), and on CONN_LINE the line parsed: the one parse of a
 * job line in qualctl (proto/line.h). *out is a new line (the caller drops
 * it), or NULL when the line is not one JSON object; *text and *len are the
 * raw line as conn_read_line() gives it, either way. */
int conn_read_parsed(struct conn *c, int timeout_ms, struct line **out, char **text,
		     size_t *len, struct qual_msg *msg);

/* Catches SIGINT and SIGTERM from now on: they are blocked except while
 * conn_read_line() waits, which then returns CONN_INTERRUPTED. */
void conn_signals_catch(void);

/* The signal that arrived (SIGINT or SIGTERM), or 0. */
int conn_signal_caught(void);

#endif
