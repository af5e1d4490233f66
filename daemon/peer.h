/* Who is on the other end of a connection, and whether quald lets them in:
 * one rule for the control socket (conn.c) and the HTTP endpoint (http.c).
 *
 * Allowed: root, quald's own effective user, and members of the configured
 * group. A Unix peer is known from the kernel (SO_PEERCRED, and
 * SO_PEERGROUPS for the groups it really had at connect time). A TCP peer on
 * loopback is known too: its socket is on this host, and the kernel's socket
 * table (sock_diag over netlink, what `ss -e` reads) names the uid that owns
 * it; its groups are then the group database's for that uid (the kernel does
 * not record a TCP peer's groups). A peer that is not on loopback, or whose
 * socket cannot be found, is not allowed. */
#ifndef QUAL_DAEMON_PEER_H
#define QUAL_DAEMON_PEER_H

#include <stdbool.h>
#include <stddef.h>

struct peer_rule {
	bool has_group;            /* members of allow_gid are allowed too */
	unsigned allow_gid;
	const char *group_name;    /* for messages (the group, existing or not) */
};

/* Whether the peer of the connected socket fd (a Unix stream socket, or a
 * TCP socket whose peer is a loopback address) is allowed by rule. On
 * refusal why holds the message, e.g. "uid 1234 is not allowed: not root,
 * not quald's user, not in group 'qual'". */
bool peer_allowed(int fd, const struct peer_rule *rule, char *why, size_t whylen);

#endif
