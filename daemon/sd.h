/* systemd integration without libsystemd: the readiness notification
 * protocol (sd_notify(3), "NOTIFY_SOCKET") and socket activation
 * (sd_listen_fds(3), "LISTEN_PID"/"LISTEN_FDS"), both implemented from their
 * documented wire protocols (systemd's "Interface Portability and Stability"
 * promise covers both; see also docs/quald.md). Outside systemd every
 * function here is a no-op. */
#ifndef QUAL_SD_H
#define QUAL_SD_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/err.h"

/* The first descriptor systemd passes (SD_LISTEN_FDS_START). */
#define SD_LISTEN_FDS_START 3

/* Where notifications go: the address from NOTIFY_SOCKET, or none. */
struct sd_notifier {
	bool enabled;
	struct sockaddr_un addr;
	socklen_t addr_len;
};

/* Reads NOTIFY_SOCKET into n and removes it from the environment, so that
 * worker processes cannot speak for the daemon. Without the variable, or
 * with an address that is neither a path nor an abstract name ('@...'),
 * notifications are disabled (QUAL_EINVAL and a message for the latter). */
int sd_notifier_init(struct sd_notifier *n, struct qual_msg *msg);

/* Sends one datagram of newline-separated assignments ("READY=1",
 * "STATUS=2 queued, 1 running", "STOPPING=1"). With may_block false the send
 * does not wait for room in a full receive queue (a STATUS= update may be
 * lost; READY=1 and STOPPING=1 should pass true). Returns 0 when sent or
 * disabled, QUAL_EIO otherwise. */
int sd_notify_send(const struct sd_notifier *n, const char *state, bool may_block,
		   struct qual_msg *msg);

/* Socket activation: when LISTEN_PID is this process, returns the number of
 * descriptors passed (LISTEN_FDS; they are SD_LISTEN_FDS_START onwards),
 * sets close-on-exec on each so that workers do not inherit listening
 * sockets, and removes LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES from the
 * environment. Returns 0 when nothing was passed to this process, and
 * QUAL_EINVAL for malformed variables. */
int sd_listen_fds(struct qual_msg *msg);

#endif
