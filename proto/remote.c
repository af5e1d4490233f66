/* What crosses between quald and the Slurm bridge (remote.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "proto/remote.h"

static void put_or_null(json_t *o, const char *key, const char *s)
{
	json_object_set_new(o, key, s[0] ? json_string(s) : json_null());
}

int remote_status_format(const struct remote_status *st, char *out, size_t cap)
{
	json_t *o = json_object();
	char *text;
	int n;

	json_object_set_new(o, "backend", json_string(st->backend));
	json_object_set_new(o, "id", json_string(st->id));
	json_object_set_new(o, "state", json_string(st->state));
	put_or_null(o, "reason", st->reason);
	put_or_null(o, "node", st->node);
	text = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(o);
	if (!text)
		return -1;
	n = snprintf(out, cap, "%s%s", REMOTE_STATUS_PREFIX, text);
	free(text);
	return n < 0 || (size_t)n >= cap ? -1 : n;
}

bool remote_status_is(const char *line, size_t len)
{
	size_t p = strlen(REMOTE_STATUS_PREFIX);

	return len >= p && memcmp(line, REMOTE_STATUS_PREFIX, p) == 0;
}

/* Member key of o into out: a string of at most cap - 1 bytes without
 * control characters; null or absent is "" when may_be_null. */
static int take(json_t *o, const char *key, bool may_be_null, char *out, size_t cap,
		struct qual_msg *msg)
{
	json_t *v = json_object_get(o, key);
	const char *s;

	out[0] = '\0';
	if ((!v || json_is_null(v)) && may_be_null)
		return 0;
	if (!json_is_string(v) || !(s = json_string_value(v))[0])
		return qual_fail(msg, QUAL_EINVAL, "status line: '%s' must be a non-empty string",
				 key);
	if (json_string_length(v) >= cap || strlen(s) != json_string_length(v))
		return qual_fail(msg, QUAL_EINVAL, "status line: '%s' is longer than %zu bytes",
				 key, cap - 1);
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return qual_fail(msg, QUAL_EINVAL,
					 "status line: '%s' has a control character", key);
	memcpy(out, s, json_string_length(v) + 1);
	return 0;
}

int remote_status_parse(const char *line, size_t len, struct remote_status *st,
			struct qual_msg *msg)
{
	size_t p = strlen(REMOTE_STATUS_PREFIX);
	json_error_t e;
	json_t *o;
	int rc;

	memset(st, 0, sizeof *st);
	if (!remote_status_is(line, len))
		return qual_fail(msg, QUAL_EINVAL, "not a status line: it must start with '%s'",
				 REMOTE_STATUS_PREFIX);
	o = json_loadb(line + p, len - p, JSON_REJECT_DUPLICATES, &e);
	if (!json_is_object(o)) {
		json_decref(o);
		return qual_fail(msg, QUAL_EINVAL, "status line: not a json object: %s", e.text);
	}
	if ((rc = take(o, "backend", false, st->backend, sizeof st->backend, msg)) == 0 &&
	    (rc = take(o, "id", false, st->id, sizeof st->id, msg)) == 0 &&
	    (rc = take(o, "state", false, st->state, sizeof st->state, msg)) == 0 &&
	    (rc = take(o, "reason", true, st->reason, sizeof st->reason, msg)) == 0)
		rc = take(o, "node", true, st->node, sizeof st->node, msg);
	json_decref(o);
	return rc;
}

void remote_job_dir(const char *spool, const char *job, char *out, size_t cap)
{
	if ((size_t)snprintf(out, cap, "%s/%s/%s", spool, REMOTE_SPOOL_JOBS, job) >= cap)
		abort();
}
