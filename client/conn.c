/* Client connections to quald (conn.h). */
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client/conn.h"
#include "common/xalloc.h"

/* The first read buffer; it doubles up to line_max as long lines need. */
#define CONN_BUF_START ((size_t)64 << 10)

static volatile sig_atomic_t conn_signal; /* set by the handler */
static sigset_t conn_wait_mask;           /* the mask while waiting */
static bool conn_catching;

static void conn_on_signal(int sig)
{
	conn_signal = sig;
}

void conn_signals_catch(void)
{
	struct sigaction sa;
	sigset_t block;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = conn_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* Blocked everywhere but in ppoll(), so a signal can never slip in
	 * between checking the flag and starting to wait. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &conn_wait_mask);
	sigdelset(&conn_wait_mask, SIGINT);
	sigdelset(&conn_wait_mask, SIGTERM);
	conn_catching = true;
}

int conn_signal_caught(void)
{
	return conn_signal;
}

void conn_init(struct conn *c)
{
	memset(c, 0, sizeof *c);
	c->fd = -1;
	c->line_max = CONN_LINE_MAX;
}

void conn_release(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	c->fd = -1;
	c->buf = NULL;
	c->start = c->len = c->cap = c->scanned = 0;
}

const char *conn_socket_path(const char *given, char *buf, size_t len)
{
	const char *env, *colon;
	size_t n;

	if (given)
		return given;
	env = getenv("QUAL_SOCKET");
	if (env && *env)
		return env;
	env = getenv("RUNTIME_DIRECTORY");
	if (env && *env) {
		colon = strchr(env, ':');
		n = colon ? (size_t)(colon - env) : strlen(env);
		snprintf(buf, len, "%.*s/quald.sock", (int)n, env);
		return buf;
	}
	return CONN_DEFAULT_SOCKET;
}

/* strerror() in the lower case of our messages: "connection refused". */
static const char *conn_strerror(int e, char *buf, size_t len)
{
	snprintf(buf, len, "%s", strerror(e));
	buf[0] = (char)tolower((unsigned char)buf[0]);
	return buf;
}

static int conn_unreachable(struct conn *c, int e, struct qual_msg *msg)
{
	char why[128];

	return qual_fail(msg, QUAL_EIO, "cannot reach quald at %s: %s", c->where,
			 conn_strerror(e, why, sizeof why));
}

int conn_open_unix(struct conn *c, const char *path, struct qual_msg *msg)
{
	struct sockaddr_un sa;
	int fd;

	snprintf(c->where, sizeof c->where, "'%s'", path);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (!*path || strlen(path) >= sizeof sa.sun_path)
		return qual_fail(msg, QUAL_EINVAL,
				 "socket path '%s' must be 1 to %zu bytes long", path,
				 sizeof sa.sun_path - 1);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return conn_unreachable(c, errno, msg);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = errno;
		close(fd);
		return conn_unreachable(c, e, msg);
	}
	c->fd = fd;
	return 0;
}

int conn_open_tcp(struct conn *c, const char *hostport, struct qual_msg *msg)
{
	struct addrinfo hints, *res = NULL, *ai;
	char host[256];
	const char *port, *colon = strrchr(hostport, ':');
	size_t hlen;
	int fd = -1, e = ECONNREFUSED, rc;

	snprintf(c->where, sizeof c->where, "'%s'", hostport);
	if (!colon || colon == hostport || !colon[1])
		return qual_fail(msg, QUAL_EINVAL, "tcp address '%s' must be HOST:PORT", hostport);
	port = colon + 1;
	hlen = (size_t)(colon - hostport);
	if (hostport[0] == '[' && hlen >= 2 && hostport[hlen - 1] == ']') {
		hostport++; /* [::1]:PORT */
		hlen -= 2;
	}
	if (hlen >= sizeof host)
		return qual_fail(msg, QUAL_EINVAL, "tcp address '%s' has too long a host", hostport);
	memcpy(host, hostport, hlen);
	host[hlen] = '\0';
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0)
		return qual_fail(msg, QUAL_EINVAL, "cannot resolve tcp address %s: %s",
				 c->where, gai_strerror(rc));
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		e = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return conn_unreachable(c, e, msg);
	c->fd = fd;
	return 0;
}

int conn_send(struct conn *c, json_t *request, struct qual_msg *msg)
{
	char *text = json_dumps(request, JSON_COMPACT);
	size_t len, off = 0;
	int rc = 0;

	if (!text)
		return qual_fail(msg, QUAL_EINVAL, "cannot encode the request as json");
	len = strlen(text);
	text[len] = '\n'; /* replaces the NUL: the buffer is not a string any more */
	len++;
	while (off < len) {
		/* MSG_NOSIGNAL: a daemon that went away is an error here, not a
		 * SIGPIPE that kills the client without a word. */
		ssize_t n = send(c->fd, text + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			char why[128];
			rc = qual_fail(msg, QUAL_EIO, "cannot send to quald at %s: %s",
				       c->where, conn_strerror(errno, why, sizeof why));
			break;
		}
		off += (size_t)n;
	}
	free(text);
	return rc;
}

static long long conn_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is readable, the deadline (ms on the monotonic clock,
 * negative: none) passes, or a caught signal arrives. */
static int conn_wait(struct conn *c, long long deadline, struct qual_msg *msg)
{
	struct pollfd pfd = {.fd = c->fd, .events = POLLIN};

	for (;;) {
		struct timespec ts, *tsp = NULL;
		int n;

		if (conn_signal)
			return CONN_INTERRUPTED;
		if (deadline >= 0) {
			long long left = deadline - conn_now_ms();
			if (left < 0)
				left = 0;
			ts.tv_sec = (time_t)(left / 1000);
			ts.tv_nsec = (long)(left % 1000) * 1000000;
			tsp = &ts;
		}
		n = ppoll(&pfd, 1, tsp, conn_catching ? &conn_wait_mask : NULL);
		if (n > 0)
			return 0;
		if (n == 0)
			return qual_fail(msg, QUAL_ETIMEOUT, "quald at %s did not answer in time",
					 c->where);
		if (errno != EINTR) {
			char why[128];
			return qual_fail(msg, QUAL_EIO, "cannot wait for quald at %s: %s",
					 c->where, conn_strerror(errno, why, sizeof why));
		}
	}
}

int conn_read_line(struct conn *c, int timeout_ms, char **line, size_t *len,
		   struct qual_msg *msg)
{
	long long deadline = timeout_ms < 0 ? -1 : conn_now_ms() + timeout_ms;

	for (;;) {
		size_t have = c->len - c->start;
		char *nl = NULL;
		ssize_t n;
		int rc;

		if (have > c->scanned)
			nl = memchr(c->buf + c->start + c->scanned, '\n', have - c->scanned);
		if (nl) {
			*nl = '\0';
			*line = c->buf + c->start;
			*len = (size_t)(nl - *line);
			c->start = (size_t)(nl + 1 - c->buf);
			c->scanned = 0;
			return CONN_LINE;
		}
		c->scanned = have;
		if (have > c->line_max)
			return qual_fail(msg, QUAL_ELIMIT, "quald at %s sent a line over %zu bytes",
					 c->where, c->line_max);
		/* Room for more: first drop the lines already returned, then
		 * grow, up to a whole line_max line and its newline. */
		if (c->start > 0) {
			memmove(c->buf, c->buf + c->start, have);
			c->start = 0;
			c->len = have;
		}
		if (c->len == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : CONN_BUF_START;
			if (cap > c->line_max + 1)
				cap = c->line_max + 1;
			if (cap < c->len + 1)
				cap = c->len + 1;
			c->buf = xrealloc(c->buf, cap + 1); /* + the NUL of the last line */
			c->cap = cap;
		}
		rc = conn_wait(c, deadline, msg);
		if (rc != 0)
			return rc;
		n = read(c->fd, c->buf + c->len, c->cap - c->len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			char why[128];
			return qual_fail(msg, QUAL_EIO, "cannot read from quald at %s: %s",
					 c->where, conn_strerror(errno, why, sizeof why));
		}
		if (n == 0) {
			if (c->len > c->start)
				return qual_fail(msg, QUAL_EIO,
						 "quald at %s closed the connection in the middle of a line",
						 c->where);
			return CONN_EOF;
		}
		c->len += (size_t)n;
	}
}

int conn_read_parsed(struct conn *c, int timeout_ms, struct line **out, char **text,
		     size_t *len, struct qual_msg *msg)
{
	int rc = conn_read_line(c, timeout_ms, text, len, msg);

	*out = NULL;
	if (rc == CONN_LINE)
		(void)line_parse(*text, *len, out);
	return rc;
}
