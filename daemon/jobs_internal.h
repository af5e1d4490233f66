/* Jobs, inside: what the modules behind jobs.h share (H2O's *_internal.h
 * pattern). jobs.h is the contract; nothing outside daemon/jobs*.c and the
 * modules listed here includes this file.
 *
 *   jobs.c         the job table, the queue, scheduling, lines into a job's
 *                  log, and the public API that is not below
 *   jobs_reply.c   the replies about jobs: stored lines, show, status, list
 *   worker.c       one worker process (qual-run): start, stdout and stderr,
 *                  the relay of its lines, and the end of its job
 *   slot_health.c  the GPU health check of a slot
 *   quarantine.c   strikes against a crashing candidate, and the refusal
 *   submit.c       the submit checks (jobs_submit)
 *   recover.c      the state directory read back at start
 *   history.c      each ended job's summary (summary.json), the reads of
 *                  stored logs off the loop, and the history reply
 *   retention.c    pruning finished jobs (quald --keep-jobs, --keep-days)
 *   children.c     the loop's side of common/child.h (children.h)
 *
 * Every function here is named module__verb (docs/style.md); all run on the
 * loop (history.c's reads of logs run in libuv's thread pool, behind its
 * own static functions). */
#ifndef QUAL_DAEMON_JOBS_INTERNAL_H
#define QUAL_DAEMON_JOBS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <time.h>

#include <jansson.h>
#include <uv.h>

#include "common/err.h"
#include "common/lines.h"
#include "proto/line.h"
#include "daemon/children.h"
#include "daemon/jobs.h"
#include "proto/strv.h"
#include "daemon/list.h"
#include "daemon/oplog.h"
#include "daemon/remote.h"
#include "daemon/request.h"
#include "daemon/store.h"
#include "daemon/writer.h"
#include "proto/vocab.h"

/* After SIGTERM, this long before SIGKILL (a cancel, a time limit, a
 * shutdown). */
#define JOBS_KILL_GRACE_MS 5000

struct worker;
struct health;
struct submit;
struct putting;
struct history_gather;
struct history_scan;

struct job {
	char id[JOB_ID_MAX];
	long num;
	enum job_state state;
	enum run_verdict verdict;  /* RUN_VERDICT_UNKNOWN until it has one */
	char submitted[32];        /* UTC, RFC 3339; "" = none */
	char started[32];
	char finished[32];
	uint64_t started_ms;       /* the loop's clock when its worker started */
	int slot;                  /* -1 unless it has run */
	int device;                /* GPU ordinal it ran on, -1 = none */
	struct submit_args args;   /* as request_submit_from_json gives it */
	long next_seq;             /* seq of its next line */
	long logged_seq;           /* lines below this seq are written (their
				    * writer callbacks have run): what a read
				    * of its log hands out */
	struct writer_log *log;    /* while it writes its log, else NULL */
	long counted_lines;        /* jobs_reply.c: a show's count of its
				    * lines by a read (a damaged or unchecked
				    * log), valid while logged_seq is still
				    * counted_at (-1: none) */
	long counted_at;
	bool hold_next;            /* the next line is a daemon's verdict: held */
	struct putting *held;      /* that verdict line, written, waiting for the
				    * state after it (jobs.c: put_done) */
	bool log_warned;           /* a log write failed (said once) */
	bool damaged;              /* records of its stored log were lost
				    * (recover.c); state.json says so */
	struct worker *w;          /* while running */
	int state_writes;          /* state writes not yet called back (their
				    * callbacks hold the job: it is not pruned
				    * meanwhile) */
	json_t *summary;           /* history.c: the array of its case
				    * entries (summary.json's "cases"), made
				    * when its verdict line is written or
				    * rebuilt off the loop; NULL until then */
	struct history_gather *gather; /* history.c: what its lines gave so
				    * far, while it writes them in this run
				    * from seq 0 */
	bool unchecked;            /* recover.c: finished, its log's last
				    * record checked at start, the rest not
				    * yet (history.c checks it off the loop) */
	bool reading;              /* history.c: its log is being read off the
				    * loop */
	bool read_failed;          /* history.c: that read failed; tried again
				    * at the next history request */
	struct list_link qlink;    /* in the queue while queued */
	/* The Slurm backend (remote.c): what the bridge said of its Slurm
	 * job (NULL: nothing yet), and whether its next worker follows that
	 * job again (recovery) rather than submitting one. */
	struct remote_job *remote;
	bool attach;
};

/* What a slot is doing: one state at a time, which the scheduler, the
 * status reply and the calibration schedule read. */
enum slot_state {
	SLOT_IDLE,      /* in service and free: the next job (or check) may start */
	SLOT_RUNNING,   /* a job's worker occupies it (w), until its handles close */
	SLOT_CHECKING,  /* its GPU's health check runs (check), until it closes */
	SLOT_OUT,       /* out of service until quald restarts (out_reason) */
};

/* One worker slot: a GPU, or a compile-only slot. */
struct slot {
	enum slot_state state;
	int device;                /* the GPU ordinal, or -1: compile-only */
	struct worker *w;          /* SLOT_RUNNING's worker, else NULL */
	struct health *check;      /* SLOT_CHECKING's check, else NULL */
	char *out_reason;          /* SLOT_OUT's why (own string), else NULL */
	bool needs_check;          /* a health check before its next job */
	/* Calibration (calibration.c). */
	json_t *calib;             /* the latest record of its device (own
				    * reference), or NULL: the latest one
				    * stored */
	char *calib_unstored;      /* why the last record could not be
				    * stored, or NULL (own string) */
	time_t calib_tried;        /* when a calibration of it last ended
				    * with a verdict, or 0 */
	bool calib_submitting;     /* a scheduled calibration's submit is
				    * being checked */
};

/* The quarantine (quarantine.c): strikes by SHA-256. */
struct quarantine {
	json_t *map;               /* {sha256: {"strikes","library","last"}},
				    * as in quarantine.json */
	char *path;                /* state_dir/quarantine.json */
	struct writer *writer;     /* replaces it once running; NULL: here */
};

struct jobs {
	uv_loop_t *loop;
	struct store *store;
	struct writer *writer;     /* every write of the store once open */
	long creating;             /* jobs__enqueue's creates in flight */
	struct children children;  /* every child of ours, watched */
	char *worker;
	char *helper;
	struct remote_config *remote; /* --backend slurm (own copy); NULL: local */
	char *compile_user;        /* NULL: none (jobs_config) */
	unsigned compile_uid_first; /* --compile-users (jobs_config) */
	int compile_uids;          /* 0: none */
	char *cache_dir;           /* the workers' --cache; NULL: --no-cache */
	char *scratch;             /* where the workers' folders are: $TMPDIR */
	char *scratch_prefix;      /* their names': "quald-<state>-" */
	int nslots;
	struct slot *slots;        /* nslots */
	char *no_gpu_because;      /* compile-only slots: why (jobs_config) */
	double job_timeout_s;
	double check_timeout_s;
	char **roots;              /* resolved allowed roots; NULL: no policy */
	int nroots;
	long long max_log_bytes;
	struct quarantine quarantine;
	int nhealth;               /* health structs alive */
	int nscancels;             /* remote.c's scancel children alive */
	jobs_line_cb cb;
	void *cb_ctx;
	struct job **all;          /* every job, ascending id */
	int njobs, cap;
	struct list_link queue;    /* queued jobs (struct job.qlink), in order */
	int nqueued;
	long next_num;
	struct list_link submits;  /* submits being checked */
	int nworkers;              /* worker structs alive */
	int nsubmits;              /* submit structs alive */
	uv_timer_t tick;           /* deferred scheduling */
	/* Calibration (calibration.c). */
	char *calibrator;          /* qual-calibrate's path */
	char *calib_dir;           /* state_dir/calibration */
	double calib_every_s;      /* 0: no schedule */
	char *calib_lib;
	int calib_runs;
	uv_timer_t calib_timer;    /* the schedule's check */
	struct jobs_stats stats;   /* jobs that ended since the start (jobs.h) */
	int keep_jobs;             /* retention (jobs_config); 0: no limit */
	double keep_days;
	struct history_scan *scan; /* history.c: the reads of stored logs off
				    * the loop */
	int closing_handles;       /* tick, children and writer, once closing */
	bool closing, handles_closing;
	void (*done)(void *ctx);
	void *done_ctx;
};

/* ---- jobs.c ----------------------------------------------------------------- */

/* The time now, UTC, "YYYY-MM-DDTHH:MM:SSZ". */
void jobs__now(char out[32]);

/* The job of id in the table (borrowed), or NULL. */
struct job *jobs__job_find(struct jobs *j, const char *id);

/* s as a JSON string (a new reference), or null when s is NULL or "". */
json_t *jobs__str_or_null(const char *s);

/* A new job of number num, in no table; jobs__job_free() frees one that
 * never went into the table. */
struct job *jobs__job_new(long num);
void jobs__job_free(struct job *job);

/* Appends job (whose number is larger than every other's) to the table,
 * which then owns it, and queues it when it is queued. */
void jobs__job_add(struct jobs *j, struct job *job);

/* Makes a submitted request (borrowed; its checks passed) a stored, queued
 * job: the writer creates it, and once it is on disk (synced) it joins the
 * table and the queue and cb runs (from the loop) with status 0, its id and
 * queue position; or with a negative status and a message when it could not
 * be stored. Returns a negative code with msg (cb never runs) when the
 * request is unusable. */
int jobs__enqueue(struct jobs *j, json_t *request, jobs_submit_cb cb, void *ctx,
		  struct qual_msg *msg);

/* state.json's content for job (new reference), and its replacement. */
json_t *jobs__state_json(const struct job *job);
void jobs__state_save(struct jobs *j, struct job *job);

/* Puts one complete line (with job and seq already in it; borrowed, a
 * reference held until it is written and relayed) into the job's
 * log through the writer, synced when sync; once it is written (and
 * synced) the line callback gets it when notify. Lines of a job reach the
 * callback in seq order. */
void jobs__put(struct jobs *j, struct job *job, struct line *line, bool sync,
	       bool notify);

/* Syncs and closes the job's log once its lines are written (its end). */
void jobs__log_close(struct jobs *j, struct job *job);


/* A verdict line written by the daemon; the job's verdict becomes it. The
 * caller saves the job's state next (jobs__state_save): the line is read
 * and relayed once that state is on disk too. */
void jobs__put_verdict(struct jobs *j, struct job *job, enum run_verdict verdict,
		       const char *message, bool notify);

/* An error line written by the daemon (stage "setup", arm and case null). */
void jobs__put_error(struct jobs *j, struct job *job, enum lines_code code,
		     const char *message, bool notify);

/* The operator's journal line of a job's event (oplog.h, LOG_INFO; a
 * verdict a gate fails on LOG_NOTICE): submitted (its libraries, JSON-
 * quoted, and its queue position), started on its slot, ended with its
 * verdict and how long it ran. */
void jobs__log_submitted(const struct job *job, int position);
void jobs__log_started(const struct jobs *j, const struct job *job);
/* Says in the operator's log that job ended, and counts it (jobs_stats). */
void jobs__log_ended(struct jobs *j, const struct job *job);

/* Ends a job that is not running (queued, or found running at start). */
void jobs__end_here(struct jobs *j, struct job *job, enum job_state state,
		    enum run_verdict verdict, const char *message, bool notify);

/* Removes dir (a compile folder of rtc.h when compile_folder: both its
 * levels) in libuv's thread pool, without following anything in it: what a
 * child left there may be many files, and removing them must not stall the
 * loop. dir is copied. */
void jobs__remove_later(struct jobs *j, const char *dir, bool compile_folder);

/* Scheduling runs from the loop, never inside an API call: so a submit's
 * callback always runs before the first line of its job. */
void jobs__schedule_soon(struct jobs *j);

/* Once closing and nothing is running or being checked, the last handles
 * go and jobs_close's callback follows. Called by every module whose last
 * struct goes. */
void jobs__close_check(struct jobs *j);

/* ---- jobs_reply.c ------------------------------------------------------------ */

/* Each entry of entries (list or history entries, borrowed) that names a
 * submission (proto/fleet.h) gets "overall": the submission's verdict over
 * all of its jobs quald holds (fleet_overall), or null while one of them has
 * none yet. */
void jobs__overall_into(struct jobs *j, json_t *entries);

/* ---- remote.c (the Slurm backend, remote.h) ------------------------------- */

/* quald --backend slurm (cfg; NULL: the local backend): its settings
 * copied into j, the spool's folders made. 0, or a negative code. */
int remote__open(struct jobs *j, const struct remote_config *cfg, struct qual_msg *msg);
void remote__free(struct jobs *j);

/* The command line of job's worker in slot: the bridge, its options, "--"
 * and qual-run's command line as the node runs it (the staged copies'
 * paths in the spool). */
char **remote__argv(const struct jobs *j, const struct job *job, int slot);

/* Takes n bytes of the bridge's stderr: its status lines update
 * job->remote (and the job's state file when they change); every other
 * whole line goes to text, with its newline dropped. Returns true
 * when the Slurm job has just started to run (the job time limit starts
 * then, not while it waits in Slurm's queue). */
typedef void (*remote_text_cb)(void *ctx, const char *line, size_t len);
bool remote__feed(struct jobs *j, struct job *job, struct remote_feed *f, const char *data,
		  size_t n, remote_text_cb text, void *ctx);

/* What a typed job's lines carry besides "job" and "seq" (relay.h's
 * tags): its GPU type and, once Slurm has placed it, its node; a new
 * object, or NULL for a job of neither. */
json_t *remote__tags(const struct job *job);

/* A slot's "device" in the status reply in the Slurm backend: {"name":
 * "slurm job 12 RUNNING on n1"}, or {"name": "slurm"} while idle (new
 * reference; job may be NULL). */
json_t *remote__device_json(const struct job *job);

/* Whether job runs here but waits in Slurm's queue: shown as queued, with
 * Slurm's reason. */
bool remote__pending(const struct job *job);

/* The "slurm" member of a job's show and list entry, and of its state file
 * with lines_read too (new references; null when there is no Slurm job),
 * and its reading back. */
json_t *remote__json(const struct job *job);
json_t *remote__state_json(const struct job *job);

/* Recovery: job's log holds stored whole lines (before recovery adds its
 * own): what the bridge had written that quald took (remote.h,
 * lines_read). */
void remote__lines_stored(struct job *job, long stored);

/* A line of the bridge's stdout was taken: counted; returns true when it
 * is the first sign that Slurm runs the job (no status line said so yet). */
bool remote__line_taken(struct job *job);
void remote__from_state(struct job *job, json_t *state);

/* Recovery of a job found running (recover.c): in the Slurm backend it is
 * queued again, to follow its Slurm job from the lines stored on, or to
 * submit it when it never was; returns false when it cannot be (the local
 * backend; lines stored but no Slurm job known), and it ends interrupted. */
bool remote__recover(struct jobs *j, struct job *job);

/* Cancels job's Slurm job, which no bridge follows (a queued job that was
 * to follow it again is cancelled, or its bridge could not start): scancel
 * in a child, watched; why goes in quald's log. Nothing when the job has
 * no Slurm job. */
void remote__scancel(struct jobs *j, struct job *job, const char *why);

/* ---- worker.c --------------------------------------------------------------- */

/* qual-run's command line for job in slot, pushed onto argv, with a's
 * libraries, fixture folders and cache (the job's own; in the Slurm
 * backend, the spool's copies). */
void worker__engine_argv(const struct jobs *j, const struct job *job, int slot,
			 const struct submit_args *a, const char *cache, struct strv *argv);

/* The command line of job's worker in slot (qual-run's, a calibration's,
 * or the bridge's in the Slurm backend), a new NULL-terminated array. */
char **worker__argv(const struct jobs *j, const struct job *job, int slot);

/* Moves argv[1..] onto a sealed memfd for the worker's stdin: argv becomes
 * its program and "--args-fd 0". Returns the memfd, or CHILD_NULL when it
 * could not be made (then the worker fails at once, saying so). */
int worker__args_hide(const struct job *job, char ***argvp);

/* The worker's environment (a new array, child_env_free), with tmpdir as
 * its $TMPDIR unless "". */
char **worker__env(const struct jobs *j, const char *tmpdir);


/* Why a worker stopped, one reason. quald's own reasons, in the order of
 * their rank: a worker stopped for two reasons (a cancel while its time
 * limit's SIGTERM is pending) ends with the higher-ranked one (the lower
 * value), which is what its job's verdict says. When quald gave none, the
 * exit says which of the last two it is. A worker whose verdict line came
 * keeps that verdict whatever the reason. */
enum worker_stop {
	WORKER_RUNNING = 0,        /* not stopped, and not asked to */
	WORKER_STOP_UNSTARTED,     /* it could not be started */
	WORKER_STOP_CANCELLED,     /* a cancel request: SIGTERM, then SIGKILL */
	WORKER_STOP_SHUTDOWN,      /* quald stopped while it ran: interrupted */
	WORKER_STOP_LINE_OVER,     /* it printed a line over LINES_MAX: SIGKILL */
	WORKER_STOP_LOG_OVER,      /* the job's log reached max_log_bytes:
				    * SIGKILL */
	WORKER_STOP_TIMEOUT,       /* it ran past the job time limit: SIGTERM,
				    * then SIGKILL */
	WORKER_STOP_AFTER_VERDICT, /* still there JOBS_AFTER_VERDICT_MS after
				    * its verdict line: SIGTERM, then SIGKILL */
	WORKER_EXITED,             /* it exited by itself (any status) */
	WORKER_CRASHED,            /* a signal quald did not send ended it */
};

/* Starts job in slot. On failure to start, the job ends at once with an
 * error verdict; either way the slot stays taken until the worker's
 * handles are closed. A job whose fixture directories the policy no longer
 * allows (submit__check_fixtures) ends before any worker: an error line and
 * an error verdict, the slot left free. */
void worker__start(struct jobs *j, struct job *job, int slot);

/* Stops the worker for why (WORKER_STOP_CANCELLED or _SHUTDOWN): SIGTERM to
 * its session, SIGKILL JOBS_KILL_GRACE_MS later. False when it has exited
 * already (nothing to stop). */
bool worker__stop(struct worker *w, enum worker_stop why);

/* The job the worker runs, or NULL once that job has ended (its handles may
 * still be closing). */
struct job *worker__job(const struct worker *w);

/* Sets j->scratch and j->scratch_prefix (worker.c, "Scratch") for the state
 * directory state_dir, and removes every folder of this user with that
 * prefix: what the workers of an earlier daemon on it left. Only the
 * holder of the state directory may (jobs_open, after store_open). Returns
 * 0, or a negative code with msg (state_dir cannot be resolved). */
int worker__scratch_open(struct jobs *j, const char *state_dir, struct qual_msg *msg);

/* ---- slot_health.c ---------------------------------------------------------- */

/* Starts slot s's health check (`WORKER --health --device N`): the slot is
 * SLOT_CHECKING until the check closes, then SLOT_IDLE when it passed, or
 * SLOT_OUT when it failed or could not start. */
void health__start(struct jobs *j, int s);

/* Kills a running check (shutdown); it ends through its usual path. */
void health__stop(struct health *hc);

/* ---- quarantine.c ----------------------------------------------------------- */

/* Reads state_dir's quarantine.json (none, or unreadable: empty, with a
 * warning). quarantine__release() frees it. */
void quarantine__load(struct quarantine *q, const char *state_dir);
void quarantine__release(struct quarantine *q);

/* One strike against the candidate of job (args: its stored arguments)
 * by the hash pinned at submit (what ran); none without a pin (logged). */
void quarantine__strike(struct quarantine *q, const char *job,
			const struct submit_args *args);

/* 0, or QUAL_EINVAL (msg: the refusal, naming path) when sha256 (a
 * library's, as quald hashed the file it opened at submit: submit.c) is
 * quarantined. Reads no file. */
int quarantine__check(struct quarantine *q, const char *path, const char *sha256,
		      struct qual_msg *msg);

/* ---- submit.c --------------------------------------------------------------- */

/* Shutdown: every submit still being checked gets its callback, refused;
 * its hashes not yet started are cancelled (one running cannot be: the
 * submit, and its open libraries, go once its after-work callback has run)
 * and its children are stopped. */
void submit__close_all(struct jobs *j);

/* Checks each of the fixture directories dirs (NULL-terminated) against the
 * policy (policy.h: policy_check_fixture_dir, with j's roots) and that no
 * two are one directory. Returns 0 with *out a new NULL-terminated list of
 * their real paths, in order (child_env_free frees it), or a negative code
 * with *out NULL and msg naming the directory and the reason. Submit stores
 * those; a worker's start checks them again. */
int submit__check_fixtures(const struct jobs *j, char *const *dirs, char ***out,
			   struct qual_msg *msg);

/* ---- calibration.c ---------------------------------------------------------- */

/* Reads the latest record of each slot's device from state_dir/calibration
 * (one that cannot be read or is not a record is left out, with a warning),
 * and the schedule's settings. */
int calib__open(struct jobs *j, const struct jobs_config *cfg, struct qual_msg *msg);

/* Opens the schedule's timer (in every case: jobs__close_check closes it)
 * and starts it when the settings ask for a schedule: its first check runs
 * at once. */
void calib__start(struct jobs *j);
void calib__release(struct jobs *j);

/* The key of slot s's device in the records ("gpu-N" for GPU ordinal N,
 * "slot-S" for a compile-only slot). */
void calib__key(const struct jobs *j, int s, char *out, size_t cap);

/* A relayed verdict line (borrowed) of job, running in slot s: a
 * calibration's record becomes the slot's latest, and is written. */
void calib__take_verdict(struct jobs *j, const struct job *job, int s, json_t *line);

/* The worker's program and its first arguments for job in slot s: for a
 * calibration, qual-calibrate and its options then "--" (qual-run follows);
 * for any other job nothing here, and calib__worker_args gives qual-run's
 * --calibration or --no-calibration-because. Each appends to argv. */
void calib__worker_prefix(const struct jobs *j, const struct job *job, int s,
			  struct strv *argv);
void calib__worker_args(const struct jobs *j, const struct job *job, int s,
			struct strv *argv);

/* Whether a queued job may run in slot s (a calibration for another slot
 * may not). */
bool calib__fits(const struct job *job, int s);

/* Stops the schedule's timer (shutdown). */
void calib__stop(struct jobs *j);

/* ---- history.c -------------------------------------------------------------- */

/* Whether job's verdict line is written and relayed (its worker may still be
 * exiting, its state not yet done): its log is whole, what history reports;
 * retention also waits for the worker and the state. */
bool jobs__ended(const struct job *job);

/* The job's verdict: its state's, or while its worker is still exiting the
 * one its verdict line gave (worker.c); RUN_VERDICT_UNKNOWN for none yet. */
enum run_verdict jobs__verdict(const struct job *job);

/* A line of job is written and may be read (jobs.c, in seq order): its
 * summary takes it, and once the job has ended its summary is made (from
 * what its lines gave in this run, or, when they were written before, read
 * off the loop) and written to summary.json through the writer. */
void history__line(struct jobs *j, struct job *job, const struct line *line);

/* Starts reading off the loop, one log at a time, the stored logs that
 * start-up did not check (job->unchecked) and those of ended jobs without
 * a summary; says in the operator's log when the unchecked ones are done.
 * Called once, after recovery. */
void history__start(struct jobs *j);

/* Whether a read off the loop is under way (jobs__close_check waits), and
 * the stop of such a read (jobs_close: it ends at its next record). */
bool history__busy(const struct jobs *j);
void history__stop(struct jobs *j);

/* Frees what job's summary holds (jobs__job_free). */
void history__job_release(struct job *job);

/* Frees the scan (jobs_free). */
void history__release(struct jobs *j);

/* ---- retention.c ------------------------------------------------------------ */

/* Removes the finished jobs that retention (j->keep_jobs, j->keep_days)
 * lets go, oldest first: out of the table at once (show, list, watch no
 * longer know them), their folders through the writer (store_job_remove).
 * Never a queued or running job, one with writes in flight, nor the newest
 * job (store.h, "Pruning"). Does nothing without a retention setting. */
void retention__prune(struct jobs *j);

/* ---- recover.c -------------------------------------------------------------- */

/* Reads every job of the state directory into the table and settles what
 * a stop left open (jobs.h: jobs_open). Returns 0 or a negative code. */
int recover__jobs(struct jobs *j, struct qual_msg *msg);

/* A finished job that start-up did not check (job->unchecked) has had its
 * whole log read off the loop (history.c), which info describes: records
 * lost in the middle make it damaged now, as a start that read it would
 * have (its note, its state); a torn tail (the file changed since start) is
 * left to the next start, with the read's warning. */
void recover__checked(struct jobs *j, struct job *job, const struct store_log_info *info);

#endif
