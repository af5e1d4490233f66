/* Listening sockets (listen.h). */
#include "daemon/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/xalloc.h"

/* Whether a live daemon answers on the socket at path. A connect to a Unix
 * socket does not wait: it succeeds, is refused (nobody listens: a stale
 * file) or finds the backlog full (somebody listens). */
static bool socket_answers(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	bool answers;

	if (fd < 0)
		return false;
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	answers = connect(fd, (struct sockaddr *)&a, sizeof a) == 0 || errno == EAGAIN;
	close(fd);
	return answers;
}

int listen_unix(const char *path, int *out, struct qual_msg *msg)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct stat st;
	int fd, rc;

	*out = -1;
	if (strlen(path) >= sizeof a.sun_path)
		return qual_fail(msg, QUAL_EINVAL, "cannot listen on '%s': a socket path has at most %zu bytes",
				 path, sizeof a.sun_path - 1);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return qual_fail(msg, QUAL_EINVAL, "cannot listen on '%s': it exists and is not a socket",
					 path);
		if (socket_answers(path))
			return qual_fail(msg, QUAL_EINVAL, "cannot listen on '%s': another daemon answers there",
					 path);
		if (unlink(path) < 0 && errno != ENOENT)
			return qual_fail(msg, QUAL_EIO, "cannot remove the stale socket '%s': %s",
					 path, strerror(errno));
	}
	memcpy(a.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return qual_fail(msg, QUAL_EIO, "cannot listen on '%s': %s", path, strerror(errno));
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		char *dir = xstrdup(path), *slash = strrchr(dir, '/');
		int e = errno;

		if (slash)
			*slash = '\0';
		if (e == ENOENT && slash && slash != dir)
			rc = qual_fail(msg, QUAL_ENOENT, "cannot listen on '%s': no directory '%s'",
				       path, dir);
		else
			rc = qual_fail(msg, QUAL_EIO, "cannot listen on '%s': %s", path, strerror(e));
		free(dir);
		close(fd);
		return rc;
	}
	/* Before listen, so that nobody connects while the mode is wider. */
	if (chmod(path, 0660) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
		rc = qual_fail(msg, QUAL_EIO, "cannot listen on '%s': %s", path, strerror(errno));
		close(fd);
		unlink(path);
		return rc;
	}
	*out = fd;
	return 0;
}

int listen_tcp(const struct sockaddr *addr, socklen_t len, const char *name, int *out,
	       int *port, struct qual_msg *msg)
{
	struct sockaddr_storage a;
	socklen_t alen = sizeof a;
	int fd, one = 1, rc;

	*out = -1;
	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, addr, len) < 0 || listen(fd, LISTEN_BACKLOG) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &alen) < 0) {
		rc = qual_fail(msg, QUAL_EIO, "cannot listen on %s: %s", name, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	*port = ntohs(a.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&a)->sin6_port
					      : ((struct sockaddr_in *)&a)->sin_port);
	*out = fd;
	return 0;
}
