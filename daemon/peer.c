/* The peer of a connection and quald's rule for it (peer.h). */
#include "daemon/peer.h"

#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

#define MAX_GROUPS 256

/* Whether uid, with primary group gid and the groups list, is allowed. */
static bool rule_allows(const struct peer_rule *rule, unsigned uid, unsigned gid,
			const gid_t *groups, int ngroups, char *why, size_t whylen)
{
	if (uid == 0 || uid == (unsigned)geteuid())
		return true;
	if (rule->has_group) {
		if (gid == rule->allow_gid)
			return true;
		for (int i = 0; i < ngroups; i++)
			if (groups[i] == (gid_t)rule->allow_gid)
				return true;
		snprintf(why, whylen, "uid %u is not allowed: not root, not quald's user, "
			 "not in group '%s'", uid, rule->group_name);
	} else {
		snprintf(why, whylen, "uid %u is not allowed: not root, not quald's user "
			 "(group '%s' does not exist)", uid, rule->group_name);
	}
	return false;
}

/* A Unix peer: the kernel's record of its credentials and groups at
 * connect time (SO_PEERGROUPS, Linux 4.13: no race on a pid that may be
 * reused and no trust in the group database's member list; without it only
 * the primary group counts). */
static bool unix_allowed(int fd, const struct peer_rule *rule, char *why, size_t whylen)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	gid_t groups[MAX_GROUPS];
	int ngroups = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		snprintf(why, whylen, "cannot tell who the peer is: %s", strerror(errno));
		return false;
	}
#ifdef SO_PEERGROUPS
	len = sizeof groups;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0)
		ngroups = (int)(len / sizeof groups[0]);
#endif
	return rule_allows(rule, cred.uid, cred.gid, groups, ngroups, why, whylen);
}

static bool is_loopback(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)a;

		return (ntohl(s->sin_addr.s_addr) >> 24) == 127;
	}
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a;

		if (IN6_IS_ADDR_LOOPBACK(&s->sin6_addr))
			return true;
		return IN6_IS_ADDR_V4MAPPED(&s->sin6_addr) && s->sin6_addr.s6_addr[12] == 127;
	}
	return false;
}

/* The uid owning the peer's end of a loopback TCP connection fd: one exact
 * sock_diag lookup of the socket whose source is our peer and whose
 * destination is us. */
static int tcp_peer_uid(int fd, unsigned *uid, char *why, size_t whylen)
{
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof me, pl = sizeof peer;
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 req;
	} q;
	char buf[8192];
	struct sockaddr_nl nl = {.nl_family = AF_NETLINK};
	int nfd = -1, rc = -1;
	ssize_t n;

	if (getsockname(fd, (struct sockaddr *)&me, &ml) < 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) < 0) {
		snprintf(why, whylen, "cannot tell who the peer is: %s", strerror(errno));
		return -1;
	}
	if (!is_loopback(&peer)) {
		snprintf(why, whylen, "the peer is not on this host's loopback");
		return -1;
	}
	memset(&q, 0, sizeof q);
	q.nh.nlmsg_len = sizeof q;
	q.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q.nh.nlmsg_flags = NLM_F_REQUEST;
	q.req.sdiag_family = (unsigned char)peer.ss_family;
	q.req.sdiag_protocol = IPPROTO_TCP;
	q.req.idiag_states = ~0u;
	q.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	q.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (peer.ss_family == AF_INET) {
		const struct sockaddr_in *p = (const void *)&peer, *m = (const void *)&me;

		q.req.id.idiag_sport = p->sin_port;
		q.req.id.idiag_dport = m->sin_port;
		memcpy(q.req.id.idiag_src, &p->sin_addr, 4);
		memcpy(q.req.id.idiag_dst, &m->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *p = (const void *)&peer, *m = (const void *)&me;

		q.req.id.idiag_sport = p->sin6_port;
		q.req.id.idiag_dport = m->sin6_port;
		memcpy(q.req.id.idiag_src, &p->sin6_addr, 16);
		memcpy(q.req.id.idiag_dst, &m->sin6_addr, 16);
	}
	nfd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nfd < 0 || sendto(nfd, &q, sizeof q, 0, (struct sockaddr *)&nl, sizeof nl) < 0) {
		snprintf(why, whylen, "cannot ask the kernel who the peer is: %s",
			 strerror(errno));
		goto out;
	}
	n = recv(nfd, buf, sizeof buf, 0);
	if (n < 0) {
		snprintf(why, whylen, "cannot ask the kernel who the peer is: %s",
			 strerror(errno));
		goto out;
	}
	for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
	     h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
		    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
			const struct inet_diag_msg *m = NLMSG_DATA(h);

			/* A peer that closed leaves a socket that no process
			 * holds (inode 0: orphaned, or a TIME_WAIT stub whose
			 * uid reads 0): nobody can be named for it. */
			if (m->idiag_inode == 0 || m->idiag_state == TCP_TIME_WAIT ||
			    m->idiag_state == TCP_CLOSE) {
				snprintf(why, whylen, "the peer closed its socket");
				goto out;
			}
			*uid = m->idiag_uid;
			rc = 0;
			goto out;
		}
		if (h->nlmsg_type == NLMSG_ERROR)
			break;
	}
	snprintf(why, whylen, "the peer's socket is not in the kernel's table");
out:
	if (nfd >= 0)
		close(nfd);
	return rc;
}

static bool tcp_allowed(int fd, const struct peer_rule *rule, char *why, size_t whylen)
{
	unsigned uid;
	gid_t groups[MAX_GROUPS];
	int ngroups = MAX_GROUPS;
	struct passwd pw, *pwp = NULL;
	char pwbuf[4096];

	if (tcp_peer_uid(fd, &uid, why, whylen) < 0)
		return false;
	/* Decided without the group database when it can be: its lookups
	 * (NSS: LDAP, sssd) may block. */
	if (uid == 0 || uid == (unsigned)geteuid() || !rule->has_group)
		return rule_allows(rule, uid, (unsigned)-1, NULL, 0, why, whylen);
	if (getpwuid_r(uid, &pw, pwbuf, sizeof pwbuf, &pwp) != 0 || !pwp ||
	    getgrouplist(pw.pw_name, pw.pw_gid, groups, &ngroups) < 0)
		ngroups = 0;
	return rule_allows(rule, uid, pwp ? pwp->pw_gid : (unsigned)-1, groups, ngroups,
			   why, whylen);
}

bool peer_allowed(int fd, const struct peer_rule *rule, char *why, size_t whylen)
{
	struct sockaddr_storage a;
	socklen_t len = sizeof a;

	if (getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		snprintf(why, whylen, "cannot tell who the peer is: %s", strerror(errno));
		return false;
	}
	if (a.ss_family == AF_UNIX)
		return unix_allowed(fd, rule, why, whylen);
	return tcp_allowed(fd, rule, why, whylen);
}
