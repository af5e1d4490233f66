/* A job run on a cluster: status lines, spool paths, exit files (remote.h). */
#include "proto/remote.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "common/text.h"
#include "proto/vocab.h"

/* Slurm's words for a job that waits for a node, and for one that is over
 * (squeue(1), "JOB STATE CODES"). */
static const char *const queued_states[] = {
	"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", NULL,
};
static const char *const ended_states[] = {
	"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
	"OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED", NULL,
};

/* Ends that are not the job's own. */
static const char *const fault_states[] = {
	"CANCELLED", "NODE_FAIL", "TIMEOUT", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL",
	"DEADLINE", "REVOKED", NULL,
};

static bool word_in(const char *w, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(w, *list))
			return true;
	return false;
}

enum remote_phase remote_state_phase(const char *state)
{
	if (word_in(state, queued_states))
		return REMOTE_PHASE_QUEUED;
	if (word_in(state, ended_states))
		return REMOTE_PHASE_ENDED;
	return REMOTE_PHASE_RUNNING;
}

bool remote_state_fault(const char *state)
{
	return word_in(state, fault_states);
}

/* src (NULL: "") into dst, cut to cap - 1 bytes, never inside a UTF-8
 * sequence (a value read from JSON stays valid UTF-8, so that it can be
 * written as JSON again). */
static void copy_cut(char *dst, size_t cap, const char *src)
{
	size_t n = src ? strnlen(src, cap - 1) : 0;

	if (n == cap - 1 && src[n])
		while (n && ((unsigned char)src[n] & 0xc0) == 0x80)
			n--;
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

/* copy_cut() of Slurm's words, each byte that is not printable ASCII made
 * '?' (a status line is JSON: its strings must be UTF-8). */
static void copy_ascii(char *dst, size_t cap, const char *src)
{
	char *p;

	copy_cut(dst, cap, src);
	for (p = dst; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
}

/* Slurm's spellings of nothing. */
static const char *or_none(const char *s)
{
	if (!s || !strcmp(s, "None") || !strcmp(s, "(null)"))
		return "";
	return s;
}

void remote_status_set(struct remote_status *st, const char *backend, const char *id,
		       const char *state, const char *reason, const char *node)
{
	copy_ascii(st->backend, sizeof st->backend, backend);
	copy_ascii(st->id, sizeof st->id, id);
	copy_ascii(st->state, sizeof st->state, state);
	copy_ascii(st->reason, sizeof st->reason, or_none(reason));
	copy_ascii(st->node, sizeof st->node, or_none(node));
}

bool remote_status_equal(const struct remote_status *a, const struct remote_status *b)
{
	return !strcmp(a->backend, b->backend) && !strcmp(a->id, b->id) &&
	       !strcmp(a->state, b->state) && !strcmp(a->reason, b->reason) &&
	       !strcmp(a->node, b->node);
}

static json_t *string_or_null(const char *s)
{
	return *s ? json_string(s) : json_null();
}

int remote_status_format(const struct remote_status *st, char *buf, size_t cap)
{
	json_t *o = json_object();
	char *text;
	int n;

	json_object_set_new(o, "backend", json_string(st->backend));
	json_object_set_new(o, "id", json_string(st->id));
	json_object_set_new(o, "state", json_string(st->state));
	json_object_set_new(o, "reason", string_or_null(st->reason));
	json_object_set_new(o, "node", string_or_null(st->node));
	text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!text)
		return QUAL_ELIMIT;
	n = snprintf(buf, cap, "%s%s\n", REMOTE_STATUS_PREFIX, text);
	free(text);
	if (n < 0 || (size_t)n >= cap)
		return QUAL_ELIMIT;
	return n;
}

/* o's member key as a string into dst: a string, or null where nullable. */
static int take_field(json_t *o, const char *key, bool nullable, char *dst, size_t cap,
		      struct qual_msg *msg)
{
	json_t *v = json_object_get(o, key);

	if (nullable && json_is_null(v)) {
		dst[0] = '\0';
		return 0;
	}
	if (!json_is_string(v))
		return qual_fail(msg, QUAL_EINVAL, "status line: '%s' is %s", key,
				 v ? "not a string" : "missing");
	copy_cut(dst, cap, json_string_value(v));
	return 0;
}

int remote_status_parse(const char *line, size_t len, struct remote_status *out,
			struct qual_msg *msg)
{
	size_t plen = strlen(REMOTE_STATUS_PREFIX);
	struct remote_status st;
	json_error_t jerr;
	json_t *o;
	int rc;

	if (len < plen || memcmp(line, REMOTE_STATUS_PREFIX, plen))
		return 0;
	line += plen;
	len -= plen;
	if (len && line[len - 1] == '\n')
		len--;
	if (memchr(line, '\0', len) || memchr(line, '\n', len))
		return qual_fail(msg, QUAL_EINVAL, "status line: a NUL or a newline inside");
	o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(o)) {
		json_decref(o);
		return qual_fail(msg, QUAL_EINVAL, "status line: not a JSON object: %s",
				 o ? "another value" : jerr.text);
	}
	if ((rc = take_field(o, "backend", false, st.backend, sizeof st.backend, msg)) ||
	    (rc = take_field(o, "id", false, st.id, sizeof st.id, msg)) ||
	    (rc = take_field(o, "state", false, st.state, sizeof st.state, msg)) ||
	    (rc = take_field(o, "reason", true, st.reason, sizeof st.reason, msg)) ||
	    (rc = take_field(o, "node", true, st.node, sizeof st.node, msg)))
		goto out;
	if (!st.state[0]) {
		rc = qual_fail(msg, QUAL_EINVAL, "status line: 'state' is empty");
		goto out;
	}
	*out = st;
	rc = 1;
out:
	json_decref(o);
	return rc;
}

int remote_job_path(char *out, size_t cap, const char *spool, const char *job_id,
		    const char *name, struct qual_msg *msg)
{
	int n;

	if (!spool || spool[0] != '/')
		return qual_fail(msg, QUAL_EINVAL, "spool '%s' is not an absolute path",
				 spool ? spool : "");
	if (!job_id || vocab_job_id_parse(job_id) < 0)
		return qual_fail(msg, QUAL_EINVAL, "'%s' is not a job id", job_id ? job_id : "");
	if (name)
		n = snprintf(out, cap, "%s/%s/%s/%s", spool, REMOTE_SPOOL_JOBS, job_id, name);
	else
		n = snprintf(out, cap, "%s/%s/%s", spool, REMOTE_SPOOL_JOBS, job_id);
	if (n < 0 || (size_t)n >= cap)
		return qual_fail(msg, QUAL_EINVAL, "spool path '%s' is too long", spool);
	return 0;
}

static bool is_sha256(const char *s)
{
	size_t i;

	for (i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[64] == '\0';
}

int remote_blob_path(char *out, size_t cap, const char *spool, const char *sha256,
		     struct qual_msg *msg)
{
	int n;

	if (!spool || spool[0] != '/')
		return qual_fail(msg, QUAL_EINVAL, "spool '%s' is not an absolute path",
				 spool ? spool : "");
	if (!is_sha256(sha256))
		return qual_fail(msg, QUAL_EINVAL, "'%s' is not a SHA-256 (64 lower-case hex "
				 "digits)", sha256);
	n = snprintf(out, cap, "%s/%s/%s", spool, REMOTE_SPOOL_BLOBS, sha256);
	if (n < 0 || (size_t)n >= cap)
		return qual_fail(msg, QUAL_EINVAL, "spool path '%s' is too long", spool);
	return 0;
}

int remote_slurm_id_read(const char *spool, const char *job_id, long *slurm_id,
			 struct qual_msg *msg)
{
	char path[4096], *text = NULL;
	size_t size;
	int rc;

	if ((rc = remote_job_path(path, sizeof path, spool, job_id, REMOTE_FILE_SLURM_ID, msg)))
		return rc;
	if ((rc = fs_read_capped(path, 64, &text, &size, msg)))
		return rc;
	if (size && text[size - 1] == '\n')
		text[size - 1] = '\0';
	rc = text_parse_long(path, text, 1, 999999999999L, slurm_id, msg);
	free(text);
	return rc < 0 ? QUAL_EINVAL : 0;
}

int remote_exit_format(const struct remote_exit *e, char *buf, size_t cap)
{
	int n;

	switch (e->end) {
	case REMOTE_END_STATUS:
		n = snprintf(buf, cap, "%d\n", e->value);
		break;
	case REMOTE_END_SIGNAL:
		n = snprintf(buf, cap, "signal %d\n", e->value);
		break;
	default:
		n = snprintf(buf, cap, "refused %s\n", e->message);
		break;
	}
	if (n < 0 || (size_t)n >= cap)
		return QUAL_ELIMIT;
	return n;
}

int remote_exit_parse(const char *text, size_t len, struct remote_exit *e,
		      struct qual_msg *msg)
{
	char buf[sizeof e->message + 16];
	long v;

	if (len && text[len - 1] == '\n')
		len--;
	if (len >= sizeof buf || memchr(text, '\0', len) || memchr(text, '\n', len))
		return qual_fail(msg, QUAL_EINVAL, "exit file: not one line of at most %zu bytes",
				 sizeof buf - 1);
	memcpy(buf, text, len);
	buf[len] = '\0';
	e->message[0] = '\0';
	if (!strncmp(buf, "refused ", 8)) {
		e->end = REMOTE_END_REFUSED;
		e->value = 0;
		copy_cut(e->message, sizeof e->message, buf + 8);
		return 0;
	}
	if (!strncmp(buf, "signal ", 7)) {
		if (text_parse_long("exit file's signal", buf + 7, 1, 127, &v, msg) < 0)
			return QUAL_EINVAL;
		e->end = REMOTE_END_SIGNAL;
		e->value = (int)v;
		return 0;
	}
	if (text_parse_long("exit file's status", buf, 0, 255, &v, msg) < 0)
		return QUAL_EINVAL;
	e->end = REMOTE_END_STATUS;
	e->value = (int)v;
	return 0;
}

int remote_exit_status(const struct remote_exit *e)
{
	switch (e->end) {
	case REMOTE_END_STATUS:
		return e->value;
	case REMOTE_END_SIGNAL:
		return 128 + e->value;
	default:
		return REMOTE_EXIT_REFUSED;
	}
}

/* node with every character outside A-Z a-z 0-9 . _ - as '_', into out. */
static int key_node(const char *node, char *out, size_t cap)
{
	size_t n = strlen(node);

	if (n == 0 || n >= cap)
		return -1;
	for (size_t i = 0; i <= n; i++)
		out[i] = node[i] && !strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
					    "0123456789._-", node[i]) ? '_' : node[i];
	return 0;
}

int remote_device_key(const char *node, const char *gpus, char *out, size_t cap,
		      struct qual_msg *msg)
{
	char name[REMOTE_FIELD_MAX];
	size_t g = gpus ? strspn(gpus, "0123456789") : 0;
	int n;

	if (!node || key_node(node, name, sizeof name) < 0)
		return qual_fail(msg, QUAL_EINVAL, "no node name for a device key");
	n = g ? snprintf(out, cap, "%s-gpu%.*s", name, (int)(g > 9 ? 9 : g), gpus) :
		snprintf(out, cap, "%s-nogpu", name);
	if (n < 0 || (size_t)n >= cap)
		return qual_fail(msg, QUAL_EINVAL, "the device key of node '%s' is longer than "
				 "%zu bytes", name, cap - 1);
	return 0;
}

bool remote_device_key_of(const char *key, const char *node)
{
	char name[REMOTE_FIELD_MAX];
	size_t n;

	if (!key || !node || key_node(node, name, sizeof name) < 0)
		return false;
	n = strlen(name);
	if (strncmp(key, name, n) != 0)
		return false;
	key += n;
	if (!strcmp(key, "-nogpu"))
		return true;
	return !strncmp(key, "-gpu", 4) && key[4] && strspn(key + 4, "0123456789") == strlen(key + 4);
}
