/* systemd's notification and socket activation protocols, from their
 * documentation rather than libsystemd:
 *
 * Notification (sd_notify(3), "NOTIFY_SOCKET" in systemd.exec(5)): the
 * service manager puts the address of a Unix datagram socket in
 * NOTIFY_SOCKET: a file system path, or an abstract-namespace name written
 * with a leading '@' (the '@' stands for the leading NUL byte, and the
 * address length then covers exactly the name, with no trailing NUL). A
 * notification is one datagram of newline-separated VARIABLE=VALUE
 * assignments; Type=notify services send READY=1 when they serve,
 * STATUS=... for a one-line status, and STOPPING=1 when they begin to stop.
 *
 * Socket activation (sd_listen_fds(3)): the manager passes listening sockets
 * as descriptors 3, 4, ... (SD_LISTEN_FDS_START), their count in LISTEN_FDS,
 * and the pid they are meant for in LISTEN_PID (a child of ours that
 * inherited the environment must not take them). The descriptors arrive
 * without close-on-exec. */
#include "daemon/sd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/text.h"

int sd_notifier_init(struct sd_notifier *n, struct qual_msg *msg)
{
	const char *e = getenv("NOTIFY_SOCKET");
	size_t len;
	int rc = 0;

	memset(n, 0, sizeof *n);
	if (!e || !*e)
		goto out;
	len = strlen(e);
	if ((e[0] != '/' && e[0] != '@') || len >= sizeof n->addr.sun_path) {
		rc = qual_fail(msg, QUAL_EINVAL,
			       "NOTIFY_SOCKET '%s' is not a unix socket path or abstract name", e);
		goto out;
	}
	n->addr.sun_family = AF_UNIX;
	memcpy(n->addr.sun_path, e, len);
	if (e[0] == '@') {
		n->addr.sun_path[0] = '\0';
		n->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	} else {
		n->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
	}
	n->enabled = true;
out:
	unsetenv("NOTIFY_SOCKET");
	return rc;
}

int sd_notify_send(const struct sd_notifier *n, const char *state, bool may_block,
		   struct qual_msg *msg)
{
	int fd, flags = MSG_NOSIGNAL | (may_block ? 0 : MSG_DONTWAIT);
	ssize_t sent;
	int rc = 0;

	if (!n->enabled)
		return 0;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return qual_fail(msg, QUAL_EIO, "cannot notify the service manager: %s",
				 strerror(errno));
	sent = sendto(fd, state, strlen(state), flags,
		      (const struct sockaddr *)&n->addr, n->addr_len);
	if (sent < 0)
		rc = qual_fail(msg, QUAL_EIO, "cannot notify the service manager: %s",
			       strerror(errno));
	close(fd);
	return rc;
}

/* A decimal environment value, or -1 when absent or not a number. */
static long env_long(const char *name)
{
	const char *e = getenv(name);
	long x;

	if (!e || text_parse_long(name, e, 0, LONG_MAX, &x, NULL) < 0)
		return -1;
	return x;
}

int sd_listen_fds(struct qual_msg *msg)
{
	long pid = env_long("LISTEN_PID"), nfds = env_long("LISTEN_FDS");
	int rc = 0;

	if (!getenv("LISTEN_PID") || pid != (long)getpid())
		goto out; /* not for us (or not activated) */
	if (nfds < 0 || nfds > INT_MAX - SD_LISTEN_FDS_START) {
		rc = qual_fail(msg, QUAL_EINVAL, "LISTEN_FDS '%s' is not a count of descriptors",
			       getenv("LISTEN_FDS") ? getenv("LISTEN_FDS") : "");
		goto out;
	}
	for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + nfds; fd++) {
		int fl = fcntl(fd, F_GETFD);

		if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0) {
			rc = qual_fail(msg, QUAL_EINVAL, "LISTEN_FDS names descriptor %d: %s",
				       fd, strerror(errno));
			goto out;
		}
	}
	rc = (int)nfds;
out:
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return rc;
}
