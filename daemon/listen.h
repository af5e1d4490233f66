/* Listening sockets: one way to make them, for the control socket
 * (server.c) and the HTTP endpoint (http.c). */
#ifndef QUAL_DAEMON_LISTEN_H
#define QUAL_DAEMON_LISTEN_H

#include <sys/socket.h>

#include "common/err.h"

#define LISTEN_BACKLOG 128

/* A listening Unix stream socket at path (non-blocking, close-on-exec) in
 * *fd: created with mode 0660 before it listens. An existing socket file
 * nobody answers on (a stale one) is replaced; one where a daemon answers,
 * or a file that is not a socket, is refused with a message naming it. */
int listen_unix(const char *path, int *fd, struct qual_msg *msg);

/* A listening TCP socket (non-blocking, close-on-exec, SO_REUSEADDR) bound
 * to addr (port 0: any free one) in *fd, its port in *port. name is the
 * address as a person wrote it, for messages. */
int listen_tcp(const struct sockaddr *addr, socklen_t len, const char *name, int *fd,
	       int *port, struct qual_msg *msg);

#endif
