/* A job run on a cluster (docs/qual-slurm.md): what crosses between quald, its
 * bridge to Slurm (qual-slurm) and the bridge's node side. The bridge's
 * status lines on its stderr ("qual-remote: {json}", one per change of the
 * Slurm job's state), the exit statuses of the bridge beyond qual-run's own,
 * the spool's layout (names and paths of a job's folder) and the node's exit
 * file. quald reads the status lines and the spool; the bridge writes them. */
#ifndef QUAL_PROTO_REMOTE_H
#define QUAL_PROTO_REMOTE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "common/exitcode.h"

/* What starts a status line on the bridge's stderr; a JSON object follows,
 * then a newline. Every other stderr line is free text. */
#define REMOTE_STATUS_PREFIX "qual-remote: "

/* The bridge's exit statuses besides qual-run's own (0..3; "signal N" on
 * the node is 128+N): the job was refused before qual-run started (bad
 * usage, staging failed, sbatch refused it, a pin did not match on the
 * node), or the Slurm job ended before qual-run did (no exit file: node
 * failure, a drained or downed node, Slurm's time limit, an admin's
 * scancel). The last stderr line says which. */
#define REMOTE_EXIT_REFUSED QUAL_EXIT_USAGE
#define REMOTE_EXIT_LOST 70

/* The member of quald's replies (status, show, list) and of a job's state
 * file that holds what the bridge last said of its Slurm job: {"id",
 * "state", "reason", "node"}. */
#define REMOTE_JSON_KEY "slurm"

/* The longest value of a status field kept (longer ones are cut). */
#define REMOTE_FIELD_MAX 256

/* One status line's fields. An empty reason or node is JSON null (Slurm's
 * reason "None", no node yet). */
struct remote_status {
	char backend[16];               /* "slurm" */
	char id[32];                    /* the backend's job id, decimal */
	char state[32];                 /* Slurm's JobState word: PENDING, ... */
	char reason[REMOTE_FIELD_MAX];  /* Slurm's Reason, or "" */
	char node[REMOTE_FIELD_MAX];    /* NodeList / BatchHost, or "" */
};

/* Where a Slurm job state stands: waiting for a node (quald shows the job
 * queued with the reason), on a node, or over. Words not known are taken as
 * on a node (REMOTE_PHASE_RUNNING): only Slurm's end words end a job. */
enum remote_phase {
	REMOTE_PHASE_QUEUED,  /* PENDING, REQUEUED, REQUEUE_HOLD, REQUEUE_FED */
	REMOTE_PHASE_RUNNING, /* RUNNING, CONFIGURING, COMPLETING, SUSPENDED, ... */
	REMOTE_PHASE_ENDED,   /* COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL,
			       * PREEMPTED, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE,
			       * SPECIAL_EXIT, REVOKED */
};

enum remote_phase remote_state_phase(const char *state);

/* Whether an ended state is the cluster's doing, not the job's own end
 * (COMPLETED, FAILED): CANCELLED, NODE_FAIL, TIMEOUT, PREEMPTED,
 * OUT_OF_MEMORY, BOOT_FAIL, DEADLINE, REVOKED. qual-run ended by a signal
 * in such a job was stopped by Slurm (a node set down, an admin's scancel):
 * the bridge exits REMOTE_EXIT_LOST naming the state and reason. */
bool remote_state_fault(const char *state);

/* Fills st from the words given (reason and node may be NULL; Slurm's
 * "None", "(null)" and "" all become ""). Values are cut to fit; a byte
 * that is not printable ASCII becomes '?'. */
void remote_status_set(struct remote_status *st, const char *backend, const char *id,
		       const char *state, const char *reason, const char *node);

/* Whether a and b say the same (a new status line is due when not). */
bool remote_status_equal(const struct remote_status *a, const struct remote_status *b);

/* Writes st as one status line, REMOTE_STATUS_PREFIX, the JSON object and
 * "\n", NUL-terminated, into buf (cap bytes). Returns its length (without
 * the NUL), or QUAL_ELIMIT when it does not fit. */
int remote_status_format(const struct remote_status *st, char *buf, size_t cap);

/* Reads one stderr line of the bridge (len bytes, a trailing newline
 * allowed; no NUL needed). Returns 1 with *out filled for a status line, 0
 * for any other line (free text: out untouched), or QUAL_EINVAL with msg
 * for a line that has the prefix but not a status object (not JSON, a field
 * missing or not a string, state empty). */
int remote_status_parse(const char *line, size_t len, struct remote_status *out,
			struct qual_msg *msg);

/* The spool (quald --slurm-spool): shared storage, the same path on quald's
 * host and on every node.
 *   SPOOL/blobs/<sha256>      pinned library bytes (tmp+rename, 0644)
 *   SPOOL/jobs/<JOBID>/       one folder per qual job, the files below */
#define REMOTE_SPOOL_BLOBS "blobs"
#define REMOTE_SPOOL_JOBS "jobs"
#define REMOTE_SPOOL_CACHE "cache"      /* SPOOL/cache: the nodes' artifact cache */
#define REMOTE_FILE_SCRIPT "job.sh"     /* the batch script */
#define REMOTE_FILE_ARGV "argv"         /* qual-run's argv, NUL-separated */
#define REMOTE_FILE_PINS "pins"         /* "<sha256> <absolute path>" lines */
#define REMOTE_DIR_FIXTURES "fixtures"  /* fixtures/<N>/: the N-th fixture folder */
#define REMOTE_FILE_SLURM_ID "slurm_id" /* Slurm's job id, decimal and "\n" */
#define REMOTE_FILE_OUT "out.jsonl"     /* qual-run's stdout */
#define REMOTE_FILE_ERR "err.log"       /* qual-run's stderr */
#define REMOTE_FILE_NODE_LOG "node.log" /* the batch script's own output */
#define REMOTE_FILE_EXIT "exit"         /* how qual-run ended (below) */

/* SPOOL/jobs/JOBID into out (cap bytes), or with name (may be NULL) the
 * file of that name in it. JOBID must be a job id (proto/vocab.h) and
 * spool absolute. Returns 0, or QUAL_EINVAL with msg. */
int remote_job_path(char *out, size_t cap, const char *spool, const char *job_id,
		    const char *name, struct qual_msg *msg);

/* SPOOL/blobs/SHA256 into out; sha256 must be 64 lower-case hex digits.
 * Returns 0, or QUAL_EINVAL with msg. */
int remote_blob_path(char *out, size_t cap, const char *spool, const char *sha256,
		     struct qual_msg *msg);

/* Reads SPOOL/jobs/JOBID/slurm_id: the Slurm job id quald's recovery
 * re-attaches to. Returns 0 with *slurm_id > 0, QUAL_ENOENT (never
 * submitted, or no such folder) or QUAL_EINVAL / QUAL_EIO with msg. */
int remote_slurm_id_read(const char *spool, const char *job_id, long *slurm_id,
			 struct qual_msg *msg);

/* The node's exit file: one line, written tmp+rename once qual-run ended
 * ("0".."255", "signal N") or when it was not started ("refused MESSAGE"). */
enum remote_end {
	REMOTE_END_STATUS,  /* value: qual-run's exit status */
	REMOTE_END_SIGNAL,  /* value: the signal that ended it */
	REMOTE_END_REFUSED, /* message: why qual-run was not started */
};

struct remote_exit {
	enum remote_end end;
	int value;
	char message[512];
};

/* The exit file's text for e into buf (cap bytes), with its newline.
 * Returns its length, or QUAL_ELIMIT. */
int remote_exit_format(const struct remote_exit *e, char *buf, size_t cap);

/* Reads an exit file's text (len bytes; a trailing newline allowed).
 * Returns 0, or QUAL_EINVAL with msg naming what is wrong. */
int remote_exit_parse(const char *text, size_t len, struct remote_exit *e,
		      struct qual_msg *msg);

/* The bridge's exit status for e: the status, 128+N for signal N,
 * REMOTE_EXIT_REFUSED for a refusal. */
int remote_exit_status(const struct remote_exit *e);

/* Calibration per (node, GPU) (docs/cluster.md, "Calibration"). quald does
 * not know which node and GPU Slurm gives a job, so a worker's command line
 * says REMOTE_NODE_KEY where the node's own goes, and qual-slurm --node
 * puts it there: "--device-key=@node" (a calibration: its record's key)
 * becomes the key of the node and GPU it runs on, and "--calibration=@node"
 * (a qualification) the latest record of that key in
 * SPOOL/calibration/<key>.json, or --no-calibration-because saying there is
 * none. A key is "<node>-gpu<index>" (the first of SLURM_JOB_GPUS: the
 * node's own GPU index), "<node>-nogpu" without one; the node's name with
 * every character outside A-Z a-z 0-9 . _ - as '_'. */
#define REMOTE_NODE_KEY "@node"
#define REMOTE_SPOOL_CALIBRATION "calibration"

/* The key of node's GPU gpus (SLURM_JOB_GPUS: "0" or "0,1"; NULL or "":
 * none) into out. Returns 0, or QUAL_EINVAL when node is empty or it does
 * not fit. */
int remote_device_key(const char *node, const char *gpus, char *out, size_t cap,
		      struct qual_msg *msg);

/* Whether key is a device key of node's (remote_device_key's form). */
bool remote_device_key_of(const char *key, const char *node);

#endif
