/* Jobs: the queue, the state directory, and the worker processes that run
 * them. Each job runs in its own worker (qual-run, the engine) in one slot
 * (one GPU, or a compile-only slot when the host has none); never two jobs in
 * one slot. The worker's stdout lines are relayed unchanged with "job" and a
 * per-job "seq" added: to the state directory's append-only log first, then
 * to the line callback (the server's broadcast). This module never loads a
 * compiler library or a GPU runtime.
 *
 * On-disk layout under state_dir (see docs/protocol.md):
 *   jobs/<id>/request.json   the submit arguments, written and synced
 *                            before the submit is acknowledged
 *   jobs/<id>/state.json     {"state","verdict","submitted","started",
 *                            "finished","slot"}, replaced atomically
 *   jobs/<id>/log.jsonl      the job's lines, append-only, synced at each
 *                            case_verdict and verdict line
 * written by one writer thread (daemon/writer.h), never by the loop. A job
 * reads as running (or queued) until its verdict line is written.
 * Job ids are "j" followed by 6+ decimal digits, increasing. */
#ifndef QUAL_JOBS_H
#define QUAL_JOBS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <uv.h>

#include "common/err.h"
#include "daemon/request.h"
#include "proto/line.h"
#include "proto/vocab.h"

#define JOB_ID_MAX 32

struct remote_config;

struct jobs_config {
	const char *state_dir;   /* required; created if missing */
	const char *worker;      /* path of qual-run; NULL: beside the running
				  * executable */
	const char *compile_helper; /* path of qual-compile (submit checks, and
				     * the workers' $QUAL_COMPILE); NULL: beside
				     * the running executable */
	const char *compile_user; /* the workers' --compile-user (their compile
				   * children run as that user); NULL: none */
	unsigned compile_uid_first; /* --compile-users: uids first ..
				     * first + compile_uids - 1; slot s's
				     * workers get first + 1 + s (the first is
				     * quald's submit checks'); compile_uids 0:
				     * none (compile_user, if any) */
	int compile_uids;
	bool no_cache;           /* the workers run without the artifact cache
				  * (quald --no-cache); otherwise theirs is
				  * state_dir/cache (run/cache.h) */
	int nslots;              /* worker slots (the Slurm backend: Slurm jobs
				  * at once) */
	/* The Slurm backend (docs/cluster.md; daemon/remote.h), or NULL: the
	 * local GPUs. */
	const struct remote_config *remote;
	const int *devices;      /* nslots GPU ordinals, or NULL: compile-only slots */
	const char *no_gpu_because; /* with devices NULL: why the slots are
				     * compile-only, the not_timed_because of
				     * the start lines of jobs that did not ask
				     * for compile_only ("no GPU found:
				     * compile-only slots"); NULL: "quald runs
				     * compile-only slots" */
	double job_timeout_s;    /* a worker running longer is killed (default 7200) */
	double submit_check_timeout_s; /* hashes and identify children at submit
					 * (default 30) */
	/* Library policy (policy.h): nallow_roots folders (resolved when
	 * jobs_open runs) a library must lie in, with no component writable by
	 * others than root and this user. allow_roots NULL: no policy (every
	 * library that passes the other checks is accepted; for tests). */
	const char *const *allow_roots;
	int nallow_roots;
	/* The most bytes of worker lines one job's log takes (0: default
	 * 64 MiB). A worker whose next line would pass it is killed, its later
	 * lines dropped, and the job ends with an error verdict naming the
	 * limit (or fail, when a line already blamed the candidate). */
	long long max_log_bytes;
	/* Adopt what a worker leaves behind (children.h, Orphans): this
	 * process becomes a child subreaper and kills every child of its own
	 * that it did not start. quald's; false for a program whose other
	 * children are its own business (a test). */
	bool adopt_orphans;
	/* Calibration (docs/quald.md, "Calibration"). calibrator: the path of
	 * qual-calibrate, a calibration job's worker (NULL: beside the running
	 * executable). With calibrate_every_h > 0, each slot whose device's
	 * latest record is older than that many hours (or that has none) gets
	 * a calibration of calibrate_lib (calibrate_runs runs; 0: the default
	 * 10) queued, at the start and on a timer, never two at once. */
	const char *calibrator;
	double calibrate_every_h;
	const char *calibrate_lib;
	int calibrate_runs;
	/* Retention (docs/quald.md, "Retention"): with keep_jobs > 0, only the
	 * newest keep_jobs finished jobs are kept; with keep_days > 0, a
	 * finished job whose end is older than that many days goes. Both 0:
	 * everything is kept. Only finished jobs are removed, oldest first,
	 * never the newest job (store.h, "Pruning"), at open and after each
	 * job ends, through the writer. */
	int keep_jobs;
	double keep_days;
};

struct jobs;

/* Called for every line of every job, after it is in the job's log (its
 * write returned, synced where the line is synced: the writer thread's
 * callback, daemon/writer.h), in seq order. line is the line as it entered
 * quald (proto/line.h: parsed once, its text complete with job and seq, no
 * newline; whether it is the verdict travels with it), borrowed: a
 * reference keeps it past the call. It runs from
 * loop callbacks only (the writer's); never inside jobs_open (lines written while recovering are only
 * logged) and never for a job before its submit callback has returned. It may
 * run until jobs_close's done callback: a job stopped by shutdown ends with
 * its "interrupted" verdict line. */
typedef void (*jobs_line_cb)(void *ctx, const char *job, struct line *line);

/* Opens the state directory (refused when another quald holds its lock:
 * store.h), removes the temporary folders that workers of an earlier daemon
 * on it left in $TMPDIR (worker.c, "Scratch"), recovers (queued jobs are
 * queued again, but one stored without pinned libraries by an older quald
 * ends with an error verdict; a job that was running gets an "interrupted"
 * verdict line, or the state of the verdict line its log holds
 * and state; a log's incomplete last line is cut off, with a warning on
 * stderr; records lost from the middle of a log make its job damaged, and a
 * finished job whose verdict line was lost gets an error verdict:
 * recover.c), waits for recovery's writes, and starts running queued jobs
 * from the loop (not inside this call). */
int jobs_open(uv_loop_t *loop, const struct jobs_config *cfg, jobs_line_cb cb,
	      void *cb_ctx, struct jobs **out, struct qual_msg *msg);

/* Submits: opens both libraries once, hashes them off the loop (libuv's
 * thread pool), checks the quarantine by those hashes, then has a child load
 * each opened file (qual-compile identify; the daemon never loads them),
 * then stores the request and queues the job. The
 * callback runs exactly once (libuv's contract: if jobs_submit returns an
 * error the callback never runs): with status 0, the job id and its queue
 * position, or a negative status and a message naming the problem (e.g.
 * "cannot load compiler '/x': no nvrtc or hiprtc entry points"). Takes no
 * ownership of args (copies what it keeps).
 *
 * Refused at once (negative return, msg set; cheap local checks): an unknown
 * case (a name not built in, when the request has no fixture directories,
 * whose cases only the worker reads), a seed over 2^31-1, pairs over 10^6, a path that is missing, a
 * directory, not a regular file or not a 64-bit ELF shared object, a library
 * the policy refuses (policy.h: outside the allowed roots, a symlink out of
 * them, a world-writable file or folder; the message names the reason), a
 * fixture directory the policy refuses (policy_check_fixture_dir: the same
 * rules, a directory holding a regular fixture.json) or one given twice, a
 * real path that is another file than the policy saw, or a link or no
 * regular file when opened ("compiler '/x' changed while it was checked:
 * '/y' is another file now"; the open is O_NOFOLLOW and never waits), and
 * shutdown in progress. Refused through the callback: a library quald cannot
 * read to its end; a library whose SHA-256 (quald's own, of the file it
 * opened) is quarantined (see jobs_quarantine_json), refused as soon as it
 * is hashed, before any child is started: a quarantined library is never
 * loaded; a library the helper cannot load or that has neither ABI;
 * mismatched ABIs ("baseline is nvrtc but candidate is hiprtc: both must use
 * one abi"); a failure to start the helper or to store the job; or shutdown
 * ("quald is shutting down", from inside jobs_close, also while a hash is
 * running: the submit goes once its hash is called back). Nothing an
 * identify child writes decides the hash. An accepted job stores each
 * library's real path and quald's hash, and its worker loads those bytes or
 * none (docs/quald.md, "Pinned libraries"). A
 * library that crashes or hangs while loading is accepted: as with qual-run,
 * that is a result about it, which the job's verdict reports. The callback
 * runs from a loop callback, or inside jobs_close. job and message are
 * valid during the call only. The job stores its fixture directories' real
 * paths; they are checked again when its worker would start, and one the
 * policy no longer allows (or that resolves elsewhere now) ends the job
 * there with an error line and an error verdict (docs/quald.md, "Fixture
 * directories"). */
typedef void (*jobs_submit_cb)(void *ctx, int status, const char *job,
			       int position, const char *message);
int jobs_submit(struct jobs *j, const struct submit_args *args,
		jobs_submit_cb cb, void *ctx, struct qual_msg *msg);

/* Cancels a queued or running job (a running worker's process group gets
 * SIGTERM, then SIGKILL after 5 s); its log then ends with a "cancelled"
 * verdict line: at once for a queued job (the line callback runs once it is
 * written, from the loop), when the worker has exited for a running one (unless the worker
 * wrote its own verdict first, which then stands). QUAL_ENOENT for an
 * unknown job, QUAL_EINVAL when it has already finished. */
int jobs_cancel(struct jobs *j, const char *job, struct qual_msg *msg);

/* A stored line as jobs_read_log hands it out: its bytes (without the
 * newline, NUL-terminated) and its seq, valid during the call only, and,
 * for a read that parses (JOBS_READ_PARSED), the line parsed (proto/line.h),
 * borrowed: a reference keeps it past the call. */
struct jobs_record {
	const char *text;
	size_t len;
	long seq;
	struct line *line; /* NULL unless the read parses */
};

/* What a read of a log does with each line: hand out its bytes and seq,
 * read from its tail without a parse (line_tail_seq: for readers that copy
 * bytes on), or parse it too, once (for readers that decide from it). */
enum jobs_read_how {
	JOBS_READ_BYTES,
	JOBS_READ_PARSED,
};

/* Reads a job's stored lines with seq > after_seq (-1 for all), calling fn
 * for each, in order, until fn returns true (a reader that pauses: the read
 * stops there and reads nothing more of the log). A stored line that is not
 * a JSON object, which quald never writes, is left out (one that ends as
 * every line quald writes does, with its seq, is taken as quald's without a
 * parse by a read of JOBS_READ_BYTES). Lines at or below after_seq are
 * skipped unparsed. A whole read on the loop: for a reader of a few lines
 * (a follow's start) or a check; a reply that sends a log uses a cursor
 * (below). Returns the number of lines handed out, or a negative
 * code (QUAL_ENOENT for an unknown job). *state receives the state the job
 * is reported in (JOB_STATE_UNKNOWN for an unknown job). Synchronous: job
 * logs are local files. Only lines whose write has been called back are
 * handed out (by their own seq, which may have gaps where a damaged log lost
 * records), and the line callback runs in that same callback, so reading a
 * job's log and then following its live lines neither misses nor repeats
 * one. */
typedef bool (*jobs_each_cb)(void *ctx, const struct jobs_record *rec);
int jobs_read_log(struct jobs *j, const char *job, long after_seq,
		  enum jobs_read_how how, jobs_each_cb fn, void *ctx,
		  enum job_state *state, struct qual_msg *msg);

/* A cursor over a job's stored lines, for replies that send a log as their
 * client reads it (replycap.h): it keeps the log open and where it stands,
 * so each jobs_cursor_next reads on from there, checked as jobs_read_log
 * reads (the store's cursor, store.h). It hands out the lines with seq >
 * after_seq whose writes have been called back, as jobs_read_log does:
 * a reader that has had every line up to now (done) and follows the job's
 * live lines from then on misses none and repeats none. With snapshot, only
 * the lines written when it opened, and *lines (when not NULL) says how many
 * that is: a reply that announces its length (show). An undamaged log's
 * seqs have no gaps, so that count is known without a read; a damaged one
 * (records lost, recover.c) is counted by a read, once. *state (may be
 * NULL): the state the job is reported in as it opens. QUAL_ENOENT for an
 * unknown job. *out is new: free it with jobs_cursor_free. The cursor does
 * not hold j: a job pruned while it is open is read to its end. */
struct jobs_cursor;
int jobs_cursor_open(struct jobs *j, const char *job, long after_seq,
		     enum jobs_read_how how, bool snapshot, struct jobs_cursor **out,
		     long *lines, enum job_state *state, struct qual_msg *msg);

/* Hands the next lines to fn, in order, about max_bytes of them (at least
 * one when one is there), until fn returns true (the line it was given is
 * handed out; the next read starts after it). *done: every line there is to
 * hand out now has been (a snapshot: all of its lines), and *state (may be
 * NULL) the state the job is reported in then, which matches: a job
 * reported ended has had its verdict line handed out by a cursor that is
 * done. Returns the number of lines handed out, or a negative code. */
int jobs_cursor_next(struct jobs *j, struct jobs_cursor *c, size_t max_bytes,
		     jobs_each_cb fn, void *ctx, bool *done, enum job_state *state,
		     struct qual_msg *msg);

/* The seq of the last line the cursor handed out (its after_seq before
 * the first). */
long jobs_cursor_seq(const struct jobs_cursor *c);

void jobs_cursor_free(struct jobs_cursor *c);

/* Whether job's log is complete: its verdict line is written and relayed,
 * so no line of it is to come (its worker may still be exiting). False for
 * an unknown job. */
bool jobs_log_complete(struct jobs *j, const char *job);

/* What a show reply says of job besides its state and lines (new
 * reference): an object whose members go into the reply as they are,
 * {"labels":{...}} (empty when it has none) and "fixtures":[REAL_PATH...]
 * for a job with fixture directories (the real paths submit checked);
 * NULL for an unknown job (one never submitted, or pruned). */
json_t *jobs_show_json(struct jobs *j, const char *job);

/* The history of ended jobs (docs/protocol.md, "history"): each job that
 * has its verdict line and matches the query, a job matching when it has
 * every label of q->labels with that value and, with q->case_name, a case
 * verdict of that case. A limit <= 0 is the protocol's default, 100; any
 * larger limit costs no more than the jobs there are. */
struct jobs_history_query {
	const char *case_name; /* NULL: every case */
	json_t *labels;        /* borrowed object KEY -> VALUE, every one must match; NULL: any */
	int limit;             /* the newest `limit` matching jobs, reported oldest first */
	const char *gpu_type;  /* the jobs of this GPU type (proto/fleet.h); NULL: any */
};
/* {"jobs":[...]} as the history reply (new reference): each job
 * {"job","state","verdict","submitted","finished","labels","baseline":{"path",
 * "sha256"},"candidate":{"path","sha256"},"cases":[{"case","verdict","ratio",
 * "ci_low","ci_high","p_holm","baseline_ns","candidate_ns","timed"}]}, the
 * cases in the order of their case_verdict lines (only q->case_name's with
 * it). Walks memory only: a job's summary is made from its lines as they
 * are written, read from its summary.json at start, or rebuilt from its log
 * off the loop (history.c); an ended job whose summary is not there yet is
 * left out, and the reply then has "incomplete": true and "pending": the
 * number left out. */
json_t *jobs_history_json(struct jobs *j, const struct jobs_history_query *q);

/* Whether job names a job that is gone: a job id not in the table whose
 * number is below the newest job's (retention pruned it, here or in an
 * earlier run; or its create failed, and it was never acknowledged). A
 * watch may resume after such a job: the jobs after it follow. */
bool jobs_gone(struct jobs *j, const char *job);

/* The ids of all jobs after job (in id order; NULL = all), for watch resume.
 * job need not exist (ids with a larger number follow it). *ids is a new
 * array of *n new strings: free it with jobs_ids_free(). Returns 0, or
 * QUAL_EINVAL when job is not a job id. */
int jobs_ids_after(struct jobs *j, const char *job, char ***ids, int *n);
void jobs_ids_free(char **ids, int n);

/* Status and list replies' content (new references): objects whose members
 * go into the reply as they are. Status: {"slots":[{"slot","device","job"}],
 * "queued":[ID...],"running":[ID...]} (device null for compile-only slots,
 * job null for a free slot). GPU health: after a job on a GPU slot whose
 * worker crashed (a signal the daemon did not send), ran past the time limit
 * or wrote a line with "gpu":"faulted"|"hung", the slot runs
 * `WORKER --health --device N` (60 s limit) before its next job; a slot
 * being checked has "health_check":true, one whose check failed is out of
 * service until restart and has "out_of_service":REASON, and with no slot in
 * service while jobs are queued the object has "waiting":REASON. List: {"jobs":[{"job","state","verdict",
 * "submitted","finished","baseline","candidate","labels","settings"}]} (and
 * "fixtures", as in jobs_show_json, for a job with fixture directories;
 * settings: what tells two jobs apart, docs/protocol.md), newest first, at most
 * limit; verdict and finished are null until the job has them; times are UTC
 * "YYYY-MM-DDTHH:MM:SSZ". */
/* Writes to the state directory asked for and not yet done (the writer
 * thread's queue, daemon/writer.h): 0 once everything the jobs module has
 * written is on disk. */
long jobs_writes_pending(const struct jobs *j);

/* What the metrics endpoint counts of jobs that ended since quald started
 * (daemon/metrics.h): how many, by verdict, and how long the ones that ran
 * took from their worker's start to their verdict, as a histogram with
 * upper bounds jobs_duration_le (seconds; a last bucket holds the rest).
 * Jobs that ended before they ran (cancelled while queued) count in
 * ended but have no duration. */
#define JOBS_DURATION_BUCKETS 12
extern const double jobs_duration_le[JOBS_DURATION_BUCKETS];
/* Ended jobs by verdict: indexed by enum run_verdict (proto/vocab.h), the
 * last, RUN_VERDICT_UNKNOWN, for a verdict of no known word ("other"). */
#define JOBS_VERDICT_KINDS (RUN_VERDICT_UNKNOWN + 1)
struct jobs_stats {
	unsigned long long ended[JOBS_VERDICT_KINDS];
	unsigned long long ran;                   /* of them, had started */
	unsigned long long duration_bucket[JOBS_DURATION_BUCKETS + 1];
	double duration_sum_s;
};
const struct jobs_stats *jobs_stats(const struct jobs *j);


json_t *jobs_status_json(struct jobs *j);

/* A list reply's page (docs/protocol.md, list): the newest limit jobs older
 * than before (NULL: the newest), and no more than fit in max_bytes of
 * JSON text (0: no bound; at least one job whatever its size, which a
 * submit's request line bounds). When the bound cuts the page short of
 * limit while older jobs remain, the object also has "next":ID, the last
 * job listed: the next page is the jobs before it. Returns NULL when before
 * is not a job id. */
#define JOBS_LIST_MAX_BYTES ((size_t)512 << 10)
json_t *jobs_list_json(struct jobs *j, int limit, const char *before, size_t max_bytes);

/* Quarantine (state_dir/quarantine.json, replaced atomically and durably):
 * each crash of a job's candidate (its compiler child crashed: an error line
 * with arm "candidate" and code compile_crashed, whatever its message says;
 * or the worker itself died by a fault signal such as SIGSEGV or SIGABRT,
 * not SIGKILL/SIGTERM, that the daemon did not send) is one strike, at most
 * one a job, against the SHA-256 pinned for the candidate at submit (what
 * ran, never the file at its path now); after 3 a
 * submit naming a file with that hash (either arm) is refused once quald
 * has hashed it, before anything loads it (jobs_submit):
 * "compiler '/x' (sha256 H) is quarantined after 3 crashes; clear with:
 * qualctl quarantine clear H". List: {"quarantine":[{"sha256","strikes",
 * "quarantined","library","last"}]} (new reference). Clear forgets a hash's
 * strikes: 0, or QUAL_ENOENT when it has none. */
json_t *jobs_quarantine_json(struct jobs *j);
int jobs_quarantine_clear(struct jobs *j, const char *sha256, struct qual_msg *msg);

/* The latest calibration record of each slot's device (new reference):
 * {"calibrations": [{"slot", "device", "device_key", "record"}]}, the
 * record null where there is none yet. */
json_t *jobs_calibration_json(struct jobs *j);

/* Finds the GPUs a quald with `--devices auto` (its default) gives one slot
 * each, without loading a GPU runtime in the daemon: runs `worker --health
 * --device N` (qual-run's health check, in a child of its own, as the slots'
 * checks do) for N = 0, 1, ... until one reports no such device (its health
 * line has device null). A GPU that is found but fails its check is left
 * out, with a warning on stderr; so is one whose check printed no health
 * line (it crashed or hung), and the search goes on unless the one before
 * printed none either. Blocks, each check at most 60 s: call it
 * before the loop runs. Puts at most max ordinals in devices and returns
 * how many; when none, why says what the first check found ("no device:
 * cuda: ..."). */
int jobs_find_gpus(const char *worker, int *devices, int max, char *why, size_t cap);

/* Shutdown: stops accepting submits (a submit still being checked gets its
 * callback now, refused), stops running workers (SIGTERM, then SIGKILL),
 * records them as interrupted, leaves queued jobs queued for the next start,
 * closes every handle, then calls done (once, from a close callback, never
 * inside this call). Until done runs, j may still be used (jobs_submit then
 * refuses with "quald is shutting down"); it is freed just before done runs.
 * A second jobs_close does nothing. */
void jobs_close(struct jobs *j, void (*done)(void *ctx), void *ctx);

#endif
