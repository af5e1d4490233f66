/* quald's HTTP endpoint: the names it answers to (http_internal.h).
 *
 * A page of another origin can make a browser send requests to a name the
 * page's owner controls and then points at 127.0.0.1 (DNS rebinding); the
 * browser then reads quald's answers as that origin's. Such a request
 * carries the foreign name in its Host header, so the endpoint answers
 * only requests that name it: its listen address, localhost, or a name the
 * operator gave with --http-host (a reverse proxy's). */
#include "daemon/http_internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

/* The longest name of a host (DNS: 253) or a bracketed IPv6 address, with
 * its NUL. */
#define NAME_MAX_LEN 256

/* A Host value split: its name in lower case (an IPv6 address keeps its
 * brackets) and its port, -1 when it has none. False when it is not of
 * the form NAME, NAME:PORT, [V6] or [V6]:PORT. */
static bool split_host(const char *s, size_t len, char *name, long *port)
{
	const char *colon = NULL, *end = s + len;
	size_t n;

	if (len > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (!close)
			return false;
		if (close + 1 < end) {
			if (close[1] != ':')
				return false;
			colon = close + 1;
		}
	} else {
		colon = memchr(s, ':', len);
	}
	n = (size_t)((colon ? colon : end) - s);
	if (n == 0 || n >= NAME_MAX_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		name[i] = (char)tolower((unsigned char)s[i]);
	name[n] = '\0';
	*port = -1;
	if (colon && colon + 1 < end) {
		long v = 0;

		for (const char *p = colon + 1; p < end; p++) {
			if (!isdigit((unsigned char)*p) || v > 65535)
				return false;
			v = v * 10 + (*p - '0');
		}
		if (v < 1 || v > 65535)
			return false;
		*port = v;
	}
	return true;
}

/* Whether name (split_host's) is an IPv6 address in brackets, into a. */
static bool v6_literal(const char *name, struct in6_addr *a)
{
	char inner[NAME_MAX_LEN];
	size_t n = strlen(name);

	if (n < 3 || name[0] != '[' || name[n - 1] != ']')
		return false;
	memcpy(inner, name + 1, n - 2);
	inner[n - 2] = '\0';
	return inet_pton(AF_INET6, inner, a) == 1;
}

/* Whether name (lower case, as split_host leaves it) is a host name of
 * letters, digits, '.', '-' and '_', or an IP address (IPv6 in brackets). */
static bool name_valid(const char *name)
{
	struct in6_addr a;

	if (name[0] == '[')
		return v6_literal(name, &a);
	return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789.-_") == strlen(name);
}

int http__names_init(struct http *h, const struct http_config *cfg, struct qual_msg *msg)
{
	struct http_names *nm = &h->names;

	if (cfg->nhosts > HTTP_MAX_HOSTS)
		return qual_fail(msg, QUAL_EINVAL, "--http-host is given %d times, at most %d are "
				 "allowed", cfg->nhosts, HTTP_MAX_HOSTS);
	nm->hosts = xcalloc((size_t)cfg->nhosts + 1, sizeof *nm->hosts);
	for (int i = 0; i < cfg->nhosts; i++) {
		const char *s = cfg->hosts[i];
		char name[NAME_MAX_LEN];
		long port;

		if (!split_host(s, strlen(s), name, &port) || !name_valid(name))
			return qual_fail(msg, QUAL_EINVAL, "--http-host '%.300s': give a host name "
					 "or address, with a port or without (qual.example.org, "
					 "qual.example.org:8443, [::1]:8080)", s);
		nm->hosts[i].name = xstrdup(name);
		nm->hosts[i].port = port;
		nm->nhosts++;
	}
	return 0;
}

void http__names_release(struct http *h)
{
	for (int i = 0; i < h->names.nhosts; i++)
		free(h->names.hosts[i].name);
	free(h->names.hosts);
	memset(&h->names, 0, sizeof h->names);
}

/* Whether name (split_host's) is the listen address's: the same address
 * however it is written, or localhost (quald listens on loopback only). */
static bool is_listen_name(const struct http_names *nm, const char *name)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (!strcmp(name, "localhost"))
		return true;
	if (nm->family == AF_INET6)
		return v6_literal(name, &a6) && !memcmp(&a6, nm->addr, sizeof a6);
	return nm->family == AF_INET && inet_pton(AF_INET, name, &a4) == 1 &&
	       !memcmp(&a4, nm->addr, sizeof a4);
}

static bool host_allowed(const struct http_names *nm, const char *value, size_t len)
{
	char name[NAME_MAX_LEN];
	long port;

	if (!split_host(value, len, name, &port))
		return false;
	for (int i = 0; i < nm->nhosts; i++)
		if (!strcmp(nm->hosts[i].name, name) &&
		    (nm->hosts[i].port < 0 || nm->hosts[i].port == port))
			return true;
	if (nm->family == AF_UNIX)
		return !strcmp(name, "localhost");
	return is_listen_name(nm, name) && (port == nm->port || (port < 0 && nm->port == 80));
}

bool http__host_refused(struct http *h, h2o_req_t *req)
{
	h2o_iovec_t host = req->input.authority;

	/* Without a Host header H2O names the request by its default host. */
	if (!host.base || host.base == req->hostconf->authority.hostport.base) {
		http__respond_error(req, 400, "Bad Request", "the request has no Host header: "
				    "quald answers only requests that name it");
		return true;
	}
	if (host_allowed(&h->names, host.base, host.len))
		return false;
	/* 421, not 403: the request went to the wrong name, not the wrong
	 * person; the same peer naming this endpoint is served. */
	http__respond_error(req, 421, "Misdirected Request", "host '%.*s' is not this "
			    "endpoint's: quald answers as %s and to the names of --http-host",
			    (int)(host.len > 80 ? 80 : host.len), host.base, h->names.self);
	return true;
}
