/* What crosses between quald and the Slurm bridge qual-slurm (docs/cluster.md):
 * the status lines the bridge writes on its stderr, and the spool's layout
 * that both read (the bridge stages there; quald's recovery reads the Slurm
 * job id there). */
#ifndef QUAL_PROTO_REMOTE_H
#define QUAL_PROTO_REMOTE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

/* A status line: this prefix, then a JSON object
 * {"backend":"slurm","id":"123","state":"PENDING","reason":"Resources","node":null}. */
#define REMOTE_STATUS_PREFIX "qual-remote: "
/* Slurm's word for a job waiting in its queue. */
#define REMOTE_STATE_PENDING "PENDING"
/* The member of quald's replies and state files that holds it. */
#define REMOTE_JSON_KEY "slurm"

struct remote_status {
	char backend[16];
	char id[32];
	char state[32];
	char reason[256];        /* "" for none */
	char node[256];          /* "" until known */
};

/* The line (without its newline) for st, into out; its length, or -1 when
 * it does not fit cap. */
int remote_status_format(const struct remote_status *st, char *out, size_t cap);
/* Whether line starts with the prefix. */
bool remote_status_is(const char *line, size_t len);
/* A status line into *st: 0, or QUAL_EINVAL naming what is wrong. */
int remote_status_parse(const char *line, size_t len, struct remote_status *st,
			struct qual_msg *msg);

/* The spool: SPOOL/blobs/<sha256> (pinned libraries), SPOOL/cache (the
 * nodes' artifact cache), SPOOL/jobs/<job>/ (a job's folder: its fixture
 * folders fixtures/<n>, its Slurm id in slurm_id, ...). */
#define REMOTE_SPOOL_BLOBS "blobs"
#define REMOTE_SPOOL_CACHE "cache"
#define REMOTE_SPOOL_JOBS "jobs"
#define REMOTE_SPOOL_FIXTURES "fixtures"
#define REMOTE_SPOOL_SLURM_ID "slurm_id"

/* SPOOL/jobs/<job> into out (cap bytes; aborts when it does not fit: the
 * spool's length is checked when it is configured). */
void remote_job_dir(const char *spool, const char *job, char *out, size_t cap);

#endif
