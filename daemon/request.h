/* Requests to quald (docs/protocol.md): parsing and validating one request
 * line into a struct request. Pure: no I/O, no loop; the fuzz target and the
 * unit tests drive it directly. */
#ifndef QUAL_REQUEST_H
#define QUAL_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/err.h"
#include "compile/rtc_mode.h"
#include "common/gate.h"
#include "proto/settings.h"

#define REQUEST_MAX_LINE (1024 * 1024) /* bytes per request line */
#define REQUEST_MAX_TOKEN 4096         /* bytes of an auth token */
#define REQUEST_MAX_FIXTURES SETTINGS_MAX_FIXTURES         /* fixture directories per submit */
/* Labels of a submit (and a history filter): at most this many, each key
 * 1 to 64 of [A-Za-z0-9_.-], each value 1 to 1024 bytes without control
 * characters (docs/protocol.md, "Labels"). */
#define REQUEST_MAX_LABELS 32
#define REQUEST_MAX_LABEL_KEY 64
#define REQUEST_MAX_LABEL_VALUE 1024
/* history: the newest `limit` matching jobs, 100 unless given. */
#define REQUEST_DEFAULT_HISTORY 100
#define REQUEST_MAX_HISTORY 10000

enum request_op {
	OP_SUBMIT,
	OP_WATCH,
	OP_STATUS,
	OP_LIST,
	OP_SHOW,
	OP_CANCEL,
	OP_AUTH,     /* a TCP connection's first request */
	OP_QUARANTINE, /* list or clear the crash quarantine */
	OP_CALIBRATION, /* the latest calibration of each slot's device */
	OP_HISTORY,  /* per-case results of ended jobs, oldest first */
};

enum quarantine_action {
	QUARANTINE_LIST,
	QUARANTINE_CLEAR,
};

#define REQUEST_SHA256_HEX 64 /* lower-case hex digits of a SHA-256 */

struct submit_args {
	char *baseline;           /* paths as given */
	char *candidate;
	/* The job's settings (proto/settings.h), as the request gave them
	 * or their defaults. In a stored job, fixtures are the real paths
	 * submit checked (request_submit_set_fixtures): what the worker is
	 * given as --fixtures. follow is the submitter's: never stored. */
	struct qual_settings settings;
	/* A calibration (docs/quald.md, "Calibration"): the A/A runs of the
	 * one library (baseline and candidate are the same path), 1 to
	 * CALIB_MAX_RUNS; 0: a qualification. With has_slot, it runs in that
	 * slot only (qualctl calibrate --device); otherwise in the first
	 * free one, and calibrates that slot's device. */
	int calibrate;
	bool has_slot;
	int slot;
	/* Stored with a job only, never sent by a client: each arm's library
	 * as submit checked it (docs/quald.md, "Pinned libraries"), its real
	 * path and the sha256 of its bytes. NULL in a request, and in a job
	 * stored by a quald before pins (recovery ends such a job unrun). */
	char *baseline_real;
	char *candidate_real;
	char *baseline_sha256;
	char *candidate_sha256;
	/* The user's labels (commit, branch, build, ...): an object of KEY to
	 * VALUE strings as request_labels_check allows (own reference), or
	 * NULL for none (an empty object is NULL). */
	json_t *labels;
	/* The GPU type Slurm is asked for (proto/fleet.h; --backend slurm
	 * only), or NULL: any GPU. */
	char *gpu_type;
	/* The submission it is one job of (proto/fleet.h), or NULL. */
	char *submission;
};

struct request {
	enum request_op op;
	json_t *id;               /* client's "id" (new reference) or NULL */
	struct submit_args submit;
	char *job;                /* show, cancel */
	char *after_job;          /* watch: resume after (after_job, after_seq) */
	char *before;             /* list: the jobs older than this one */
	long after_seq;
	int limit;                /* list, history */
	char *case_name;          /* history: one case, or NULL: every case */
	char *gpu_type;           /* history: one GPU type, or NULL: every one */
	json_t *labels;           /* history: the labels a job must have (own
				   * reference), or NULL: any */
	char *token;              /* auth: at most REQUEST_MAX_TOKEN bytes */
	enum quarantine_action action; /* quarantine */
	char *sha256;             /* quarantine clear: 64 lower-case hex digits */
};

/* Parses one line (without its newline) into *r (caller's storage). On
 * failure returns QUAL_EINVAL with msg naming the problem, e.g.
 * "'pairs' must be an integer >= 30, got 5"; r->op is then meaningless but
 * r->id is set when the line had one, so the refusal can echo it, and
 * *op_name points at the op string (static storage) when it was known. */
int request_parse(const char *line, size_t len, struct request *r,
		  const char **op_name, struct qual_msg *msg);
void request_release(struct request *r);

/* Checks field's value v (borrowed) as labels: an object of at most
 * REQUEST_MAX_LABELS members, each key 1 to REQUEST_MAX_LABEL_KEY bytes of
 * [A-Za-z0-9_.-] and each value a string of 1 to REQUEST_MAX_LABEL_VALUE
 * bytes without control characters (U+0000 to U+001F, U+007F to U+009F).
 * Returns 0, or QUAL_EINVAL with msg naming the problem, e.g. "'labels' key
 * 'a b' must be 1 to 64 of A-Z a-z 0-9 _ . -". */
int request_labels_check(json_t *v, const char *field, struct qual_msg *msg);

/* A NULL-terminated list of strings (NULL: none) as a JSON array (new
 * reference). */
json_t *request_list_json(char *const *list);

/* The submit arguments as the JSON object stored with a job (new reference),
 * and back (for recovery after a restart). */
json_t *request_submit_to_json(const struct submit_args *s);
int request_submit_from_json(json_t *o, struct submit_args *s,
			     struct qual_msg *msg);

/* Puts arm's pin (0 baseline, 1 candidate: the real path and the sha256 of
 * what submit checked) into a stored request o (borrowed), as
 * request_submit_from_json reads it back. */
void request_submit_set_pin(json_t *o, int arm, const char *real_path,
			    const char *sha256);

/* Replaces the fixture directories of a stored request o (borrowed) by
 * real, a NULL-terminated list of the real paths submit checked (borrowed),
 * in the order given. */
void request_submit_set_fixtures(json_t *o, char *const *real);

#endif
