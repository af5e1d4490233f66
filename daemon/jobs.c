/* Jobs (jobs.h): the queue, the submit checks, and the worker processes.
 *
 * Everything here runs on the daemon's loop. Slow or dangerous work happens in
 * children: the submit checks run qual-compile identify (the daemon never
 * loads a compiler library), and each job runs qual-run in a process of its
 * own session, so that a cancel or a time limit can kill everything the
 * worker started with one kill(-pid). File I/O on the state directory is
 * synchronous: small local files, plus an fsync at each case verdict and
 * verdict.
 *
 * Rules this module applies (docs/protocol.md states the user-facing ones):
 *
 * Relaying (relay.h). Each stdout line of a worker is parsed; an object is
 * relayed with its bytes unchanged and ,"job":ID,"seq":N spliced in before its
 * closing brace (so numbers keep the engine's exact text). A line that is not
 * a JSON object (an engine bug, or a runtime library printing to stdout) is
 * not dropped: it becomes an error line (stage "setup", arm and case null)
 * whose message quotes its first 200 bytes, and the job goes on. A line over
 * JOBS_LINE_MAX bytes is an engine bug: the worker is killed and the job ends
 * with an error verdict. Lines after the engine's verdict line are dropped
 * (every job ends with exactly one verdict line). Every line goes to the
 * job's log first (synced at case_verdict and verdict lines), then to the
 * line callback.
 *
 * Verdicts the daemon writes, when the worker ended without one:
 *   cancelled    a cancel request stopped it (state cancelled)
 *   interrupted  the daemon shut down while it ran, or died (state
 *                interrupted; found at the next start)
 *   fail         the candidate is to blame: the worker exited with status 2
 *                (QUAL_EXIT_FAIL) but no verdict line, or a line it had
 *                already relayed blamed the candidate (an error line with arm
 *                "candidate", or a case_verdict "fail" with failed_arm
 *                "candidate"), which makes the job a fail by the engine's own
 *                precedence (fail > error) whatever happened next
 *   error        anything else: a crash (signal), the job time limit, a line
 *                over the limit, the job log size limit (max_log_bytes),
 *                a usage exit (4: always error, even when an
 *                error line named the candidate's arm) or any other exit
 *                without a verdict; the message says which, with the
 *                worker's last stderr line. A crash is not blamed on the candidate: the
 *                compilers run in qual-compile children, so a crash of the
 *                worker itself is the engine's, the driver's or the
 *                machine's (we cannot tell which arm a GPU fault came from).
 * A job whose worker wrote its verdict line is done with that verdict, even
 * when a cancel or shutdown arrived after it. */
#include "daemon/jobs.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/confine.h"
#include "common/exitcode.h"
#include "fixtures/fixture.h"
#include "common/lifetime.h"
#include "daemon/policy.h"
#include "daemon/relay.h"
#include "compile/rtc.h"
#include "common/sha256.h"
#include "daemon/store.h"
#include "common/xalloc.h"

extern char **environ;

/* The longest worker line accepted. The engine's longest line is a start or
 * verdict line of a few KiB; an error line quoting a compiler log is capped
 * by the engine at 1 KiB of message. A MiB is an engine bug, not output. */
#define JOBS_LINE_MAX ((size_t)1 << 20)
/* Bytes of a worker's stderr kept for messages (its last lines). */
#define JOBS_STDERR_KEEP 4096
/* After SIGTERM, this long before SIGKILL. */
#define JOBS_KILL_GRACE_MS 5000
/* After its verdict line, how long a worker may take to exit before it is
 * stopped (SIGTERM, then SIGKILL): a worker stuck in a GPU runtime's teardown
 * must not hold its slot until the job time limit. The verdict stands. Tearing
 * down a CUDA context takes well under a second. */
#define JOBS_AFTER_VERDICT_MS 5000
/* After a worker exits, how long its pipes may stay open (held by something
 * it left behind) before the daemon stops reading them. */
#define JOBS_DRAIN_MS 2000
#define JOBS_DEFAULT_TIMEOUT_S 7200.0
#define JOBS_DEFAULT_CHECK_TIMEOUT_S 30.0
/* A job's log limit: a full run's log is well under 1 MiB (about 30 lines
 * per pair-set and case); 64 MiB is a runaway worker, not results. */
#define JOBS_DEFAULT_MAX_LOG_BYTES (64LL << 20)
/* Crashes after which a library is quarantined (refused at submit until an
 * operator clears it). */
#define JOBS_QUARANTINE_STRIKES 3
#define JOBS_QUARANTINE_FILE "quarantine.json"
/* A GPU health check taking longer than this failed (a hung GPU). */
#define JOBS_HEALTH_TIMEOUT_MS 60000
/* Read buffer per pipe read. */
#define JOBS_READ_CHUNK 65536

enum job_state {
	JOB_QUEUED,
	JOB_RUNNING,
	JOB_DONE,
	JOB_CANCELLED,
	JOB_INTERRUPTED,
};

static const char *const state_names[] = {
	"queued", "running", "done", "cancelled", "interrupted",
};

struct worker;
struct health;

struct job {
	char id[JOB_ID_MAX];
	long num;
	enum job_state state;
	char verdict[32];          /* "" until it has one */
	char submitted[32];        /* UTC, RFC 3339; "" = none */
	char started[32];
	char finished[32];
	int slot;                  /* -1 unless it has run */
	int device;                /* GPU ordinal it ran on, -1 = none */
	struct submit_args args;   /* as request_submit_from_json gives it */
	long next_seq;             /* seq of its next line = lines in its log */
	int log_fd;                /* open while running, else -1 */
	bool log_warned;           /* a log write failed (said once) */
	struct worker *w;          /* while running */
	struct job *qprev, *qnext; /* in the queue while queued */
};

struct jobs;

struct worker {
	struct jobs *j;
	struct job *job;
	int slot;
	uv_process_t proc;
	uv_pipe_t out, err;
	uv_timer_t timer;          /* job limit, then kill grace, then drain */
	int handles;               /* open handles */
	bool spawned, exited, out_done, err_done, concluded;
	int64_t exit_status;
	int term_signal;
	bool term_sent, kill_sent;
	bool cancel, interrupt, timed_out, overflow;
	bool log_over;             /* the log limit was reached: killed */
	long long log_bytes;       /* bytes of its lines in the log */
	bool verdict_seen, candidate_failed;
	bool candidate_crashed;    /* an error line: the candidate's compiler
				    * died by a signal */
	bool gpu_bad;              /* a line said "gpu":"faulted" or "hung" */
	char engine_verdict[32];
	char spawn_error[512];     /* uv_spawn failed: why */
	char tmpdir[PATH_MAX];     /* the worker's own $TMPDIR; "" = none */
	long dropped;              /* lines after the verdict line */
	char *line;                /* the incomplete stdout line so far */
	size_t line_len, line_cap;
	char errtail[JOBS_STDERR_KEEP];
	size_t errtail_len;
	char chunk[JOBS_READ_CHUNK];
	char errchunk[JOBS_STDERR_KEEP];
};

struct submit;

/* One identify child of a submit check. */
struct check {
	struct submit *sub;
	int arm;                   /* 0 baseline, 1 candidate */
	uv_process_t proc;
	uv_timer_t timer;
	bool spawned, timed_out;
	int64_t exit_status;
	int term_signal;
	char dir[PATH_MAX];        /* private folder; "" = none */
	char path[PATH_MAX];       /* as given */
	char real[PATH_MAX];
	int status;                /* 0 or QUAL_E* */
	char message[PATH_MAX + 512];
	char abi[16];              /* "nvrtc", "hiprtc" or "" */
};

struct submit {
	struct jobs *j;
	json_t *request;           /* the stored form of the arguments */
	jobs_submit_cb cb;         /* NULL once called (or silenced) */
	void *ctx;
	struct check c[2];
	int pending;               /* checks not concluded */
	int handles;               /* open handles */
	struct submit *prev, *next;
};

struct jobs {
	uv_loop_t *loop;
	struct store *store;
	char *worker;
	char *helper;
	int nslots;
	int *devices;              /* NULL: compile-only slots */
	double job_timeout_s;
	double check_timeout_s;
	char **roots;              /* resolved allowed roots; NULL: no policy */
	int nroots;
	long long max_log_bytes;
	json_t *quarantine;        /* {sha256: {"strikes","size","library",
				    * "last"}}, as in quarantine.json */
	char *quarantine_path;
	bool *needs_check;         /* nslots: health check before the next job */
	char **out_reason;         /* nslots: why it is out of service, or NULL */
	struct health **checks;    /* nslots: the health check running there */
	int nhealth;               /* health structs alive */
	jobs_line_cb cb;
	void *cb_ctx;
	struct job **all;          /* every job, ascending id */
	int njobs, cap;
	struct job *qhead, *qtail;
	int nqueued;
	struct worker **slots;     /* nslots; the worker occupying each */
	long next_num;
	struct submit *submits;
	int nworkers;              /* worker structs alive */
	int nsubmits;              /* submit structs alive */
	uv_timer_t tick;           /* deferred scheduling; closed last */
	bool closing, tick_closing;
	void (*done)(void *ctx);
	void *done_ctx;
};

static void jobs_schedule_soon(struct jobs *j);
static void jobs_close_check(struct jobs *j);

/* ---- small helpers ---------------------------------------------------------- */

static void now_text(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Operator messages go to stderr: the journal under systemd. */
static void warn(const char *fmt, ...)
{
	va_list ap;

	fputs("quald: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* A JSON string of the first len bytes of s: as they are when valid UTF-8,
 * else with every byte outside printable ASCII as '?'. Control characters
 * are fine in JSON strings (escaped). */
static json_t *text_json(const char *s, size_t len)
{
	json_t *v = json_stringn(s, len);
	char *copy;
	size_t i;

	if (v)
		return v;
	copy = xmalloc(len + 1);
	for (i = 0; i < len; i++)
		copy[i] = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ?
			s[i] : '?';
	copy[len] = '\0';
	v = json_stringn(copy, len);
	free(copy);
	return v;
}

static const char *signal_text(int sig, char *buf, size_t cap)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, cap, "SIG%s (%s)", abbrev, strsignal(sig));
	else
		snprintf(buf, cap, "signal %d", sig);
	return buf;
}

static void args_release(struct submit_args *s)
{
	struct request r;

	memset(&r, 0, sizeof r);
	r.op = OP_SUBMIT;
	r.submit = *s;
	request_release(&r);
	memset(s, 0, sizeof *s);
}

static char **env_with(const char *const *drop, const char *const *add)
{
	size_t n = 0, k = 0, i, d;
	char **env;

	while (environ && environ[n])
		n++;
	for (i = 0; add[i]; i++)
		;
	env = xcalloc(n + i + 1, sizeof *env);
	for (i = 0; i < n; i++) {
		bool skip = false;
		for (d = 0; drop[d]; d++)
			if (!strncmp(environ[i], drop[d], strlen(drop[d])))
				skip = true;
		if (!skip)
			env[k++] = xstrdup(environ[i]);
	}
	for (i = 0; add[i]; i++)
		env[k++] = xstrdup(add[i]);
	env[k] = NULL;
	return env;
}

static void strv_free(char **v)
{
	size_t i;

	for (i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* ---- the job table and the queue ---------------------------------------------- */

static struct job *job_find(struct jobs *j, const char *id)
{
	long num = store_id_parse(id);
	int lo = 0, hi = j->njobs - 1;

	if (num < 0)
		return NULL;
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		if (j->all[mid]->num == num)
			return j->all[mid];
		if (j->all[mid]->num < num)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

/* Appends job (whose number is larger than every other's) to the table. */
static void job_add(struct jobs *j, struct job *job)
{
	if (j->njobs == j->cap) {
		j->cap = j->cap ? 2 * j->cap : 64;
		j->all = xrealloc(j->all, (size_t)j->cap * sizeof *j->all);
	}
	j->all[j->njobs++] = job;
}

static struct job *job_new(long num)
{
	struct job *job = xcalloc(1, sizeof *job);

	job->num = num;
	store_id_format(num, job->id, sizeof job->id);
	job->slot = -1;
	job->device = -1;
	job->log_fd = -1;
	return job;
}

static void job_free(struct job *job)
{
	if (!job)
		return;
	if (job->log_fd >= 0)
		close(job->log_fd);
	args_release(&job->args);
	free(job);
}

static void queue_push(struct jobs *j, struct job *job)
{
	job->qnext = NULL;
	job->qprev = j->qtail;
	if (j->qtail)
		j->qtail->qnext = job;
	else
		j->qhead = job;
	j->qtail = job;
	j->nqueued++;
}

static void queue_remove(struct jobs *j, struct job *job)
{
	if (job->qprev)
		job->qprev->qnext = job->qnext;
	else
		j->qhead = job->qnext;
	if (job->qnext)
		job->qnext->qprev = job->qprev;
	else
		j->qtail = job->qprev;
	job->qprev = job->qnext = NULL;
	j->nqueued--;
}

/* ---- state and lines ------------------------------------------------------------ */

static json_t *str_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

static json_t *job_state_json(const struct job *job)
{
	return json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:o}",
			 "state", state_names[job->state],
			 "verdict", str_or_null(job->verdict),
			 "submitted", str_or_null(job->submitted),
			 "started", str_or_null(job->started),
			 "finished", str_or_null(job->finished),
			 "slot", job->slot >= 0 ? json_integer(job->slot) : json_null(),
			 "device", job->device >= 0 ? json_integer(job->device) : json_null());
}

static void job_state_save(struct jobs *j, struct job *job)
{
	struct qual_msg m;
	json_t *st = job_state_json(job);

	if (store_state_write(j->store, job->id, st, &m) < 0)
		warn("job '%s': cannot record its state: %s", job->id, m.text);
	json_decref(st);
}

/* Puts one complete line (with job and seq already in it) into the job's log
 * and then hands it to the line callback when notify is set. */
static void job_put(struct jobs *j, struct job *job, const char *text,
		    size_t len, bool sync, bool notify)
{
	struct qual_msg m;
	long seq = job->next_seq++;
	int fd = job->log_fd, rc = 0;

	if (fd < 0)
		rc = store_log_open(j->store, job->id, &fd, &m);
	if (rc == 0)
		rc = store_log_append(fd, text, len, sync, &m);
	if (rc < 0 && !job->log_warned) {
		/* The line still goes out: a full disk should not also blind
		 * the submitter. The log has a gap from here on. */
		warn("job '%s': cannot write its log: %s", job->id, m.text);
		job->log_warned = true;
	}
	if (fd >= 0 && fd != job->log_fd)
		close(fd);
	if (notify && j->cb)
		j->cb(j->cb_ctx, job->id, seq, text, len);
}

/* Adds job and seq to o (borrowed), serialises it and puts it. */
static void job_put_json(struct jobs *j, struct job *job, json_t *o, bool sync,
			 bool notify)
{
	char *text;

	json_object_set_new(o, "job", json_string(job->id));
	json_object_set_new(o, "seq", json_integer(job->next_seq));
	text = json_dumps(o, JSON_COMPACT);
	if (!text) {
		warn("job '%s': cannot encode a line", job->id);
		return;
	}
	job_put(j, job, text, strlen(text), sync, notify);
	free(text);
}

/* A verdict line written by the daemon. */
static void job_put_verdict(struct jobs *j, struct job *job, const char *verdict,
			    const char *message, bool notify)
{
	json_t *o = json_pack("{s:s,s:s,s:b}", "type", "verdict", "verdict", verdict,
			      "timed", 0);

	json_object_set_new(o, "message", text_json(message, strlen(message)));
	job_put_json(j, job, o, true, notify);
	json_decref(o);
	snprintf(job->verdict, sizeof job->verdict, "%s", verdict);
}

/* Ends a job that is not running (queued, or found running at start). */
static void job_end_here(struct jobs *j, struct job *job, enum job_state state,
			 const char *verdict, const char *message, bool notify)
{
	job_put_verdict(j, job, verdict, message, notify);
	job->state = state;
	now_text(job->finished);
	job_state_save(j, job);
}

/* ---- workers ---------------------------------------------------------------------- */

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw);

static void worker_handle_closed(uv_handle_t *h)
{
	struct worker *w = h->data;
	struct jobs *j = w->j;

	if (--w->handles > 0)
		return;
	/* The worker has exited: what a worker stopped by a signal left in
	 * its $TMPDIR (its compile folders) goes now. */
	if (w->tmpdir[0])
		nftw(w->tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	j->slots[w->slot] = NULL;
	j->nworkers--;
	free(w->line);
	free(w);
	jobs_schedule_soon(j);
	jobs_close_check(j);
}

static void worker_timer(uv_timer_t *t);

static void worker_kill(struct worker *w, int sig)
{
	if (w->spawned && !w->exited)
		kill(-w->proc.pid, sig);
}

/* Asks the worker to stop: SIGTERM to its session's process group, SIGKILL
 * JOBS_KILL_GRACE_MS later (the timer). */
static void worker_stop(struct worker *w)
{
	if (!w->spawned || w->exited || w->term_sent)
		return;
	w->term_sent = true;
	worker_kill(w, SIGTERM);
	uv_timer_start(&w->timer, worker_timer, JOBS_KILL_GRACE_MS, 0);
}

/* The last non-empty line of the worker's stderr, into out. */
static void worker_stderr_last(const struct worker *w, char *out, size_t cap)
{
	size_t end = w->errtail_len, start;

	while (end > 0 && (w->errtail[end - 1] == '\n' || w->errtail[end - 1] == '\r' ||
			   w->errtail[end - 1] == ' '))
		end--;
	start = end;
	while (start > 0 && w->errtail[start - 1] != '\n')
		start--;
	snprintf(out, cap, "%.*s", (int)(end - start), w->errtail + start);
}

/* Notes what a relayed line says about blame and the end of the job. */
static void worker_inspect(struct worker *w, json_t *o)
{
	const char *type = json_string_value(json_object_get(o, "type"));

	if (!type)
		return;
	const char *gpu = json_string_value(json_object_get(o, "gpu"));

	if (gpu && (!strcmp(gpu, "faulted") || !strcmp(gpu, "hung")))
		w->gpu_bad = true;
	if (!strcmp(type, "verdict")) {
		const char *v = json_string_value(json_object_get(o, "verdict"));
		w->verdict_seen = true;
		snprintf(w->engine_verdict, sizeof w->engine_verdict, "%s",
			 v ? v : "error");
	} else if (!strcmp(type, "error")) {
		const char *arm = json_string_value(json_object_get(o, "arm"));
		const char *text = json_string_value(json_object_get(o, "message"));
		if (arm && !strcmp(arm, "candidate")) {
			w->candidate_failed = true;
			/* rtc.c's words for a compiler child that died. */
			if (text && strstr(text, "crashed") &&
			    strstr(text, ": killed by signal "))
				w->candidate_crashed = true;
		}
	} else if (!strcmp(type, "case_verdict")) {
		const char *v = json_string_value(json_object_get(o, "verdict"));
		const char *arm = json_string_value(json_object_get(o, "failed_arm"));
		if (v && !strcmp(v, "fail") && arm && !strcmp(arm, "candidate"))
			w->candidate_failed = true;
	}
}

/* Relays one worker line (len bytes, no newline). */
static void worker_relay(struct worker *w, const char *line, size_t len)
{
	struct jobs *j = w->j;
	struct job *job = w->job;
	struct qual_msg m;
	const char *type;
	size_t n;
	json_t *o;
	char *text;
	bool sync;
	int rc;

	if (w->verdict_seen || w->log_over) {
		w->dropped++;
		return;
	}
	rc = relay_line(line, len, job->id, job->next_seq, &text, &n, &o, &m);
	if (!text)
		return; /* a blank line */
	if (w->log_bytes + (long long)n + 1 > j->max_log_bytes) {
		/* The line is not logged; the daemon's verdict line follows
		 * (a few hundred bytes past the limit at most). */
		w->log_over = true;
		w->dropped++;
		worker_kill(w, SIGKILL);
		w->kill_sent = true;
		free(text);
		json_decref(o);
		return;
	}
	w->log_bytes += (long long)n + 1;
	if (rc == 0) {
		/* A line that was not an object (rc < 0) became an error
		 * line with arm null: it blames no one and ends nothing. */
		worker_inspect(w, o);
		if (w->verdict_seen && !w->exited && !w->term_sent) {
			double limit_ms = 1000.0 * j->job_timeout_s;
			uv_timer_start(&w->timer, worker_timer,
				       limit_ms < JOBS_AFTER_VERDICT_MS ? (uint64_t)limit_ms :
				       JOBS_AFTER_VERDICT_MS, 0);
		}
	}
	type = json_string_value(json_object_get(o, "type"));
	sync = type && (!strcmp(type, "case_verdict") || !strcmp(type, "verdict"));
	job_put(j, job, text, n, sync, true);
	free(text);
	json_decref(o);
}

/* ---- quarantine ------------------------------------------------------------ */

/* Replaces quarantine.json atomically (temporary file, fsync, rename). A
 * failure is logged: the strikes stay in memory. */
static void quarantine_save(struct jobs *j)
{
	char tmp[PATH_MAX + 8];
	int fd;

	snprintf(tmp, sizeof tmp, "%s.tmp", j->quarantine_path);
	if (json_dump_file(j->quarantine, tmp, JSON_SORT_KEYS | JSON_COMPACT) != 0) {
		warn("cannot write '%s'", tmp);
		return;
	}
	fd = open(tmp, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0 || rename(tmp, j->quarantine_path) != 0)
		warn("cannot replace '%s': %s", j->quarantine_path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

static void quarantine_load(struct jobs *j, const char *state_dir)
{
	json_error_t e;

	if (asprintf(&j->quarantine_path, "%s/%s", state_dir, JOBS_QUARANTINE_FILE) < 0)
		abort();
	if (access(j->quarantine_path, F_OK) == 0) {
		j->quarantine = json_load_file(j->quarantine_path, 0, &e);
		if (!json_is_object(j->quarantine)) {
			warn("'%s' is unreadable (%s): starting with no quarantine",
			     j->quarantine_path, e.text);
			json_decref(j->quarantine);
			j->quarantine = NULL;
		}
	}
	if (!j->quarantine)
		j->quarantine = json_object();
}

/* One strike against the library at path (the candidate of a job whose
 * worker crashed, or whose candidate compiler crashed). Hashes the file now:
 * crashes are rare, and the hash is what a later submit is checked by. */
static void quarantine_strike(struct jobs *j, const char *job, const char *path)
{
	char hex[SHA256_HEX_SIZE], when[32];
	struct qual_msg m;
	struct stat st;
	json_t *e;
	long strikes;

	if (stat(path, &st) != 0 || sha256_hash_file(path, hex, &m) != 0) {
		warn("job '%s': cannot hash '%s' for its crash count", job, path);
		return;
	}
	e = json_object_get(j->quarantine, hex);
	strikes = e ? (long)json_integer_value(json_object_get(e, "strikes")) : 0;
	strikes++;
	now_text(when);
	json_object_set_new(j->quarantine, hex,
			    json_pack("{s:I,s:I,s:s,s:s}", "strikes", (json_int_t)strikes,
				      "size", (json_int_t)st.st_size, "library", path,
				      "last", when));
	quarantine_save(j);
	if (strikes == JOBS_QUARANTINE_STRIKES)
		warn("compiler '%s' (sha256 %s) quarantined after %ld crashes", path, hex,
		     strikes);
}

/* Refuses a library whose hash is quarantined. Only a file the size of a
 * quarantined one is hashed (a different size cannot have its hash), so a
 * submit hashes nothing while the quarantine is empty. */
static int quarantine_check(struct jobs *j, const char *path, struct qual_msg *msg)
{
	char hex[SHA256_HEX_SIZE];
	const char *key;
	struct stat st;
	json_t *e, *hit;
	bool same_size = false;

	if (stat(path, &st) != 0)
		return 0; /* the other checks report it */
	json_object_foreach(j->quarantine, key, e) {
		if (json_integer_value(json_object_get(e, "strikes")) >= JOBS_QUARANTINE_STRIKES &&
		    json_integer_value(json_object_get(e, "size")) == (json_int_t)st.st_size)
			same_size = true;
	}
	if (!same_size)
		return 0;
	if (sha256_hash_file(path, hex, msg) != 0)
		return QUAL_EIO;
	hit = json_object_get(j->quarantine, hex);
	if (hit && json_integer_value(json_object_get(hit, "strikes")) >= JOBS_QUARANTINE_STRIKES)
		return qual_fail(msg, QUAL_EINVAL,
				 "compiler '%s' (sha256 %s) is quarantined after %d crashes; "
				 "clear with: qualctl quarantine clear %s",
				 path, hex, (int)json_integer_value(json_object_get(hit, "strikes")),
				 hex);
	return 0;
}

json_t *jobs_quarantine_json(struct jobs *j)
{
	json_t *list = json_array(), *e;
	const char *key;

	json_object_foreach(j->quarantine, key, e) {
		json_int_t strikes = json_integer_value(json_object_get(e, "strikes"));
		json_array_append_new(list, json_pack(
			"{s:s,s:I,s:b,s:O,s:O}", "sha256", key, "strikes", strikes,
			"quarantined", strikes >= JOBS_QUARANTINE_STRIKES,
			"library", json_object_get(e, "library"),
			"last", json_object_get(e, "last")));
	}
	return json_pack("{s:o}", "quarantine", list);
}

int jobs_quarantine_clear(struct jobs *j, const char *sha256, struct qual_msg *msg)
{
	if (!sha256 || !json_object_get(j->quarantine, sha256))
		return qual_fail(msg, QUAL_ENOENT, "no library with sha256 '%s' has crashed",
				 sha256 ? sha256 : "");
	json_object_del(j->quarantine, sha256);
	quarantine_save(j);
	return 0;
}

/* Writes the job's end: its verdict line when the worker left none, its
 * state, and closes its log. */
static void worker_conclude(struct worker *w)
{
	struct jobs *j = w->j;
	struct job *job = w->job;
	char tail[512] = "", sig[64], message[1024];
	const char *verdict = NULL;
	enum job_state state = JOB_DONE;
	bool blame;

	if (w->concluded)
		return;
	w->concluded = true;
	if (w->verdict_seen) {
		snprintf(job->verdict, sizeof job->verdict, "%s", w->engine_verdict);
		if (w->dropped)
			warn("job '%s': dropped %ld worker line%s after its verdict",
			     job->id, w->dropped, w->dropped == 1 ? "" : "s");
	} else {
		worker_stderr_last(w, tail, sizeof tail);
		blame = w->candidate_failed ||
			(w->exited && !w->term_signal && w->exit_status == QUAL_EXIT_FAIL);
		verdict = blame ? "fail" : "error";
		if (w->spawn_error[0]) {
			snprintf(message, sizeof message, "%s", w->spawn_error);
			verdict = "error";
		} else if (w->cancel) {
			verdict = "cancelled";
			state = JOB_CANCELLED;
			snprintf(message, sizeof message, "cancelled while running");
		} else if (w->interrupt) {
			verdict = "interrupted";
			state = JOB_INTERRUPTED;
			snprintf(message, sizeof message, "the daemon stopped while this job ran");
		} else if (w->overflow) {
			snprintf(message, sizeof message, "worker printed a line over %zu bytes",
				 JOBS_LINE_MAX);
		} else if (w->log_over) {
			snprintf(message, sizeof message,
				 "worker stopped: the job log reached its limit of %lld bytes",
				 j->max_log_bytes);
		} else if (w->timed_out) {
			snprintf(message, sizeof message,
				 "worker did not finish within the job time limit of %g s",
				 j->job_timeout_s);
		} else if (w->term_signal) {
			snprintf(message, sizeof message, "worker crashed: killed by signal %s%s%s",
				 signal_text(w->term_signal, sig, sizeof sig),
				 tail[0] ? "; last stderr line: " : "", tail);
		} else if (w->exit_status == QUAL_EXIT_USAGE) {
			/* Never the candidate's result, even when the engine's
			 * error line names its arm (a library gone missing
			 * since the submit). */
			verdict = "error";
			snprintf(message, sizeof message, "worker refused the job%s%s",
				 tail[0] ? ": " : "", tail);
		} else {
			snprintf(message, sizeof message,
				 "worker exited with status %d without a verdict%s%s",
				 (int)w->exit_status, tail[0] ? "; last stderr line: " : "",
				 tail);
		}
		job_put_verdict(j, job, verdict, message, true);
	}
	if (job->log_fd >= 0) {
		struct qual_msg m;
		if (store_log_sync(job->log_fd, &m) < 0)
			warn("job '%s': %s", job->id, m.text);
		close(job->log_fd);
		job->log_fd = -1;
	}
	/* A crash counts against the candidate: its compiler child died by a
	 * signal (the engine's error line), or the worker itself died by a
	 * fault signal (qual_fault_signal: not SIGKILL or SIGTERM from outside)
	 * the daemon did not send
	 * (cancel, shutdown, limits). */
	if (w->candidate_crashed ||
	    (qual_fault_signal(w->term_signal) && !w->term_sent && !w->kill_sent &&
	     !w->cancel && !w->interrupt && !w->timed_out && !w->overflow && !w->log_over))
		quarantine_strike(j, job->id, job->args.candidate);
	/* The GPU is checked before its next job after a fault or hang the
	 * engine reported, a worker crash, or the time limit (a hang). */
	if (j->devices && !w->cancel && !w->interrupt &&
	    (w->gpu_bad || w->timed_out ||
	     (w->term_signal && !w->term_sent && !w->kill_sent)))
		j->needs_check[w->slot] = true;
	job->state = state;
	job->w = NULL;
	now_text(job->finished);
	job_state_save(j, job);
}

static void worker_close(struct worker *w)
{
	uv_close((uv_handle_t *)&w->proc, worker_handle_closed);
	uv_close((uv_handle_t *)&w->out, worker_handle_closed);
	uv_close((uv_handle_t *)&w->err, worker_handle_closed);
	uv_close((uv_handle_t *)&w->timer, worker_handle_closed);
}

/* The job ends once the worker has exited and both pipes are drained. */
static void worker_maybe_finish(struct worker *w)
{
	if (w->concluded || !w->exited || !w->out_done || !w->err_done)
		return;
	uv_timer_stop(&w->timer);
	/* A last line without its newline: the worker died writing it. */
	if (w->line_len > 0 && !w->overflow)
		worker_relay(w, w->line, w->line_len);
	w->line_len = 0;
	worker_conclude(w);
	worker_close(w);
}

static void worker_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct worker *w = h->data;

	(void)suggested;
	if (h == (uv_handle_t *)&w->out)
		*buf = uv_buf_init(w->chunk, sizeof w->chunk);
	else
		*buf = uv_buf_init(w->errchunk, sizeof w->errchunk);
}

static void worker_overflow(struct worker *w)
{
	w->overflow = true;
	w->line_len = 0;
	uv_read_stop((uv_stream_t *)&w->out);
	w->out_done = true;
	worker_kill(w, SIGKILL);
	w->kill_sent = true;
}

static void worker_out_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct worker *w = s->data;
	const char *p, *end, *nl;

	if (nread < 0) {
		uv_read_stop(s);
		w->out_done = true;
		worker_maybe_finish(w);
		return;
	}
	p = buf->base;
	end = buf->base + nread;
	while (p < end && !w->overflow) {
		nl = memchr(p, '\n', (size_t)(end - p));
		size_t take = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (w->line_len + take > JOBS_LINE_MAX) {
			worker_overflow(w);
			break;
		}
		if (nl && w->line_len == 0) {
			/* The whole line is in this chunk: no copy. */
			worker_relay(w, p, take);
		} else {
			if (w->line_len + take > w->line_cap) {
				w->line_cap = w->line_len + take + 4096;
				w->line = xrealloc(w->line, w->line_cap);
			}
			memcpy(w->line + w->line_len, p, take);
			w->line_len += take;
			if (nl) {
				worker_relay(w, w->line, w->line_len);
				w->line_len = 0;
			}
		}
		p += take + (nl ? 1 : 0);
	}
	if (w->overflow)
		worker_maybe_finish(w);
}

static void worker_err_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct worker *w = s->data;
	size_t n, keep;

	if (nread < 0) {
		uv_read_stop(s);
		w->err_done = true;
		worker_maybe_finish(w);
		return;
	}
	n = (size_t)nread;
	if (n >= JOBS_STDERR_KEEP) {
		memcpy(w->errtail, buf->base + n - JOBS_STDERR_KEEP, JOBS_STDERR_KEEP);
		w->errtail_len = JOBS_STDERR_KEEP;
		return;
	}
	keep = w->errtail_len + n > JOBS_STDERR_KEEP ? JOBS_STDERR_KEEP - n : w->errtail_len;
	memmove(w->errtail, w->errtail + w->errtail_len - keep, keep);
	memcpy(w->errtail + keep, buf->base, n);
	w->errtail_len = keep + n;
}

static void worker_exit(uv_process_t *p, int64_t status, int sig)
{
	struct worker *w = p->data;

	w->exited = true;
	w->exit_status = status;
	w->term_signal = sig;
	/* Anything the worker left in its process group goes with it. The
	 * group id cannot have been reused while a member lives; when none
	 * does, this finds nothing. */
	kill(-p->pid, SIGKILL);
	uv_timer_stop(&w->timer);
	if (!w->out_done || !w->err_done) {
		/* The loop's clock may be as old as the start of a long batch of
		 * events: the drain time counts from now. */
		uv_update_time(p->loop);
		uv_timer_start(&w->timer, worker_timer, JOBS_DRAIN_MS, 0);
	}
	worker_maybe_finish(w);
}

/* Reads what is left in the worker's stdout pipe without waiting and relays
 * it. libuv reaps a child at the end of a batch of events, so the worker can
 * have written all its lines and exited before the loop ever polled its pipe;
 * those lines must not be lost when the drain time runs out (the load
 * benchmark lost whole jobs that way). */
static void worker_drain_out(struct worker *w)
{
	/* Bounded: a process the worker left behind that keeps writing must
	 * not hold the loop here. A pipe holds 64 KiB by default, so this is
	 * everything a worker that has exited can have left. */
	size_t budget = 4 * 1024 * 1024;
	uv_os_fd_t fd;

	if (w->out_done || uv_fileno((uv_handle_t *)&w->out, &fd) != 0)
		return;
	while (!w->overflow && budget > 0) {
		ssize_t n = read(fd, w->chunk, sizeof w->chunk);
		uv_buf_t b;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		b = uv_buf_init(w->chunk, (unsigned)n);
		worker_out_read((uv_stream_t *)&w->out, n, &b);
		budget = (size_t)n < budget ? budget - (size_t)n : 0;
	}
}

static void worker_timer(uv_timer_t *t)
{
	struct worker *w = t->data;

	if (w->exited) {
		/* Draining took too long: something it left holds the pipes.
		 * Take what the pipe already holds, then stop. */
		worker_drain_out(w);
		uv_read_stop((uv_stream_t *)&w->out);
		uv_read_stop((uv_stream_t *)&w->err);
		w->out_done = w->err_done = true;
		worker_maybe_finish(w);
		return;
	}
	if (!w->term_sent) {
		/* The job's time limit, or the grace after its verdict line
		 * (then the verdict stands and this flag is not read). */
		w->timed_out = true;
		worker_stop(w);
		return;
	}
	if (!w->kill_sent) {
		w->kill_sent = true;
		worker_kill(w, SIGKILL);
	}
}

/* The worker's command line: qual-run's options from the request, then the
 * two paths after "--" (so a path may start with '-'). Options of the arms
 * are passed as --baseline-opt=OPT so that one starting with '-' is never
 * taken for an option of qual-run's. */
static char **worker_argv(const struct jobs *j, const struct job *job, int slot)
{
	const struct submit_args *a = &job->args;
	size_t n = 16, k = 0, i;
	char **argv;

	for (i = 0; a->cases && a->cases[i]; i++)
		n += 2;
	for (i = 0; a->baseline_options && a->baseline_options[i]; i++)
		n++;
	for (i = 0; a->candidate_options && a->candidate_options[i]; i++)
		n++;
	argv = xcalloc(n, sizeof *argv);
	argv[k++] = xstrdup(j->worker);
	if (asprintf(&argv[k++], "--pairs=%d", a->pairs) < 0 ||
	    asprintf(&argv[k++], "--alpha=%.17g", a->alpha) < 0 ||
	    asprintf(&argv[k++], "--margin=%.17g", a->margin) < 0 ||
	    asprintf(&argv[k++], "--seed=%lld", (long long)a->seed) < 0)
		abort();
	for (i = 0; a->cases && a->cases[i]; i++) {
		argv[k++] = xstrdup("--case");
		argv[k++] = xstrdup(a->cases[i]);
	}
	for (i = 0; a->baseline_options && a->baseline_options[i]; i++)
		if (asprintf(&argv[k++], "--baseline-opt=%s", a->baseline_options[i]) < 0)
			abort();
	for (i = 0; a->candidate_options && a->candidate_options[i]; i++)
		if (asprintf(&argv[k++], "--candidate-opt=%s", a->candidate_options[i]) < 0)
			abort();
	if (a->compile_timeout_s > 0 &&
	    asprintf(&argv[k++], "--compile-timeout=%.17g", a->compile_timeout_s) < 0)
		abort();
	if (!j->devices || a->compile_only)
		argv[k++] = xstrdup("--compile-only");
	if (j->devices && asprintf(&argv[k++], "--device=%d", j->devices[slot]) < 0)
		abort();
	argv[k++] = xstrdup("--");
	argv[k++] = xstrdup(a->baseline);
	argv[k++] = xstrdup(a->candidate);
	argv[k] = NULL;
	return argv;
}

/* Starts job in slot. On failure to start, the job ends at once with an
 * error verdict; either way the slot stays taken until the worker's handles
 * are closed. */
static void worker_start(struct jobs *j, struct job *job, int slot)
{
	struct worker *w = xcalloc(1, sizeof *w);
	uv_process_options_t opt;
	uv_stdio_container_t stdio[3];
	char die[64], helper[PATH_MAX + 16];
	/* Nothing of systemd's that is meant for the daemon alone; TMPDIR is
	 * replaced when the worker gets a folder of its own. */
	const char *drop[] = { "QUAL_DIE_WITH_PARENT=", "QUAL_COMPILE=", "LISTEN_FDS=",
			       "LISTEN_PID=", "LISTEN_FDNAMES=", "NOTIFY_SOCKET=",
			       "WATCHDOG_USEC=", "WATCHDOG_PID=", "QUAL_CONFINE=", NULL,
			       NULL };
	/* QUAL_CONFINE: qual-run confines itself (common/confine.h: no core
	 * dumps, bounded open files, a network namespace where the kernel
	 * allows). */
	const char *add[] = { die, helper, QUAL_CONFINE_ENV "=1", NULL, NULL };
	char tmpenv[PATH_MAX + 16];
	const char *tmp = getenv("TMPDIR");
	struct qual_msg m;
	char **argv, **env;
	int rc;

	w->j = j;
	w->job = job;
	w->slot = slot;
	j->slots[slot] = w;
	j->nworkers++;
	job->w = w;
	job->state = JOB_RUNNING;
	job->slot = slot;
	job->device = j->devices ? j->devices[slot] : -1;
	now_text(job->started);
	job_state_save(j, job);
	if (store_log_open(j->store, job->id, &job->log_fd, &m) < 0)
		warn("job '%s': %s", job->id, m.text);

	uv_pipe_init(j->loop, &w->out, 0);
	uv_pipe_init(j->loop, &w->err, 0);
	uv_timer_init(j->loop, &w->timer);
	w->proc.data = w->out.data = w->err.data = w->timer.data = w;
	w->handles = 4;

	/* The worker dies with the daemon (qual-run sets PR_SET_PDEATHSIG when
	 * QUAL_DIE_WITH_PARENT names its parent) and uses our compile helper. */
	snprintf(die, sizeof die, QUAL_PARENT_ENV "=%ld", (long)getpid());
	snprintf(helper, sizeof helper, "QUAL_COMPILE=%s", j->helper);
	/* A $TMPDIR of the worker's own, removed once it has exited
	 * (worker_handle_closed): the engine removes its compile folders
	 * itself, but not when a cancel, the time limit or a shutdown stops
	 * it with a signal. Without one, it uses ours. */
	if (!tmp || !*tmp)
		tmp = "/tmp";
	if ((size_t)snprintf(w->tmpdir, sizeof w->tmpdir, "%s/quald-%s-XXXXXX", tmp,
			     job->id) >= sizeof w->tmpdir || !mkdtemp(w->tmpdir)) {
		warn("job '%s': cannot create a temporary folder in '%s': %s", job->id, tmp,
		     strerror(errno));
		w->tmpdir[0] = '\0';
	} else {
		snprintf(tmpenv, sizeof tmpenv, "TMPDIR=%s", w->tmpdir);
		drop[9] = "TMPDIR=";
		add[3] = tmpenv;
	}
	argv = worker_argv(j, job, slot);
	env = env_with(drop, add);
	memset(&opt, 0, sizeof opt);
	stdio[0].flags = UV_IGNORE;
	stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
	stdio[1].data.stream = (uv_stream_t *)&w->out;
	stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
	stdio[2].data.stream = (uv_stream_t *)&w->err;
	opt.file = j->worker;
	opt.args = argv;
	opt.env = env;
	opt.stdio = stdio;
	opt.stdio_count = 3;
	opt.exit_cb = worker_exit;
	/* A session of its own: kill(-pid) reaches everything it started. */
	opt.flags = UV_PROCESS_DETACHED;
	rc = uv_spawn(j->loop, &w->proc, &opt);
	w->proc.data = w;
	strv_free(argv);
	strv_free(env);
	if (rc < 0) {
		snprintf(w->spawn_error, sizeof w->spawn_error,
			 "cannot start worker '%s': %s", j->worker, uv_strerror(rc));
		w->exited = w->out_done = w->err_done = true;
		worker_conclude(w);
		worker_close(w);
		return;
	}
	w->spawned = true;
	uv_read_start((uv_stream_t *)&w->out, worker_alloc, worker_out_read);
	uv_read_start((uv_stream_t *)&w->err, worker_alloc, worker_err_read);
	uv_timer_start(&w->timer, worker_timer, (uint64_t)(j->job_timeout_s * 1000.0), 0);
}

/* ---- GPU health checks ------------------------------------------------------ */

/* A slot's health check: `qual-run --health --device N` (load, run and check
 * a tiny kernel). It runs after a job whose worker crashed, hung (time limit)
 * or reported "gpu":"faulted"|"hung", before the slot's next job. */
struct health {
	struct jobs *j;
	int slot;
	uv_process_t proc;
	uv_timer_t timer;
	int handles;
	bool timed_out;
};

static void health_closed(uv_handle_t *h)
{
	struct health *hc = h->data;
	struct jobs *j = hc->j;

	if (--hc->handles > 0)
		return;
	j->checks[hc->slot] = NULL;
	j->nhealth--;
	free(hc);
	jobs_schedule_soon(j);
	jobs_close_check(j);
}

static void health_exit(uv_process_t *p, int64_t status, int sig)
{
	struct health *hc = p->data;
	struct jobs *j = hc->j;
	int s = hc->slot;
	char why[256], name[64];

	uv_timer_stop(&hc->timer);
	if (status == 0 && sig == 0 && !hc->timed_out) {
		j->needs_check[s] = false;
		warn("slot %d (gpu %d): health check passed", s, j->devices[s]);
	} else if (!j->closing) {
		if (hc->timed_out)
			snprintf(why, sizeof why, "did not finish within %d s",
				 JOBS_HEALTH_TIMEOUT_MS / 1000);
		else if (sig)
			snprintf(why, sizeof why, "killed by signal %s",
				 signal_text(sig, name, sizeof name));
		else
			snprintf(why, sizeof why, "exit status %d", (int)status);
		free(j->out_reason[s]);
		if (asprintf(&j->out_reason[s], "gpu %d failed its health check (%s) after a "
			     "faulted or hung job: out of service until quald restarts",
			     j->devices[s], why) < 0)
			abort();
		warn("slot %d: %s", s, j->out_reason[s]);
	}
	uv_close((uv_handle_t *)&hc->proc, health_closed);
	uv_close((uv_handle_t *)&hc->timer, health_closed);
}

static void health_timer(uv_timer_t *t)
{
	struct health *hc = t->data;

	hc->timed_out = true;
	kill(-hc->proc.pid, SIGKILL);
}

static void health_start(struct jobs *j, int s)
{
	struct health *hc = xcalloc(1, sizeof *hc);
	uv_process_options_t opt;
	uv_stdio_container_t stdio[3];
	char dev[16], die[64];
	const char *drop[] = { "QUAL_DIE_WITH_PARENT=", "LISTEN_FDS=", "LISTEN_PID=",
			       "LISTEN_FDNAMES=", "NOTIFY_SOCKET=", "WATCHDOG_USEC=",
			       "WATCHDOG_PID=", NULL };
	const char *add[] = { die, NULL };
	char *argv[] = { j->worker, "--health", "--device", dev, NULL };
	char **env;
	int rc;

	snprintf(dev, sizeof dev, "%d", j->devices[s]);
	snprintf(die, sizeof die, QUAL_PARENT_ENV "=%ld", (long)getpid());
	hc->j = j;
	hc->slot = s;
	j->checks[s] = hc;
	j->nhealth++;
	uv_timer_init(j->loop, &hc->timer);
	hc->timer.data = hc;
	hc->handles = 2;
	env = env_with(drop, add);
	memset(&opt, 0, sizeof opt);
	/* Its stderr is the daemon's: what it says lands in the daemon's log. */
	stdio[0].flags = UV_IGNORE;
	stdio[1].flags = UV_IGNORE;
	stdio[2].flags = UV_INHERIT_FD;
	stdio[2].data.fd = 2;
	opt.file = j->worker;
	opt.args = argv;
	opt.env = env;
	opt.stdio = stdio;
	opt.stdio_count = 3;
	opt.exit_cb = health_exit;
	opt.flags = UV_PROCESS_DETACHED;
	warn("slot %d (gpu %d): checking the gpu's health before its next job", s,
	     j->devices[s]);
	rc = uv_spawn(j->loop, &hc->proc, &opt);
	hc->proc.data = hc;
	strv_free(env);
	if (rc < 0) {
		free(j->out_reason[s]);
		if (asprintf(&j->out_reason[s], "cannot start the health check of gpu %d "
			     "('%s'): %s", j->devices[s], j->worker, uv_strerror(rc)) < 0)
			abort();
		warn("slot %d: %s", s, j->out_reason[s]);
		uv_close((uv_handle_t *)&hc->proc, health_closed);
		uv_close((uv_handle_t *)&hc->timer, health_closed);
		return;
	}
	uv_timer_start(&hc->timer, health_timer, JOBS_HEALTH_TIMEOUT_MS, 0);
}

static void jobs_schedule(struct jobs *j)
{
	int s;

	if (j->closing)
		return;
	for (s = 0; s < j->nslots; s++) {
		struct job *job;
		if (j->slots[s] || j->checks[s] || j->out_reason[s])
			continue;
		if (j->needs_check[s]) {
			health_start(j, s);
			continue;
		}
		if (!j->qhead)
			break;
		job = j->qhead;
		queue_remove(j, job);
		worker_start(j, job, s);
	}
}

static void jobs_tick(uv_timer_t *t)
{
	jobs_schedule(t->data);
}

/* Scheduling runs from the loop, never inside an API call: so a submit's
 * callback always runs before the first line of its job. */
static void jobs_schedule_soon(struct jobs *j)
{
	if (!j->closing && j->qhead)
		uv_timer_start(&j->tick, jobs_tick, 0, 0);
}

/* ---- submit checks ------------------------------------------------------------------ */

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void check_dir_remove(struct check *c)
{
	if (c->dir[0])
		nftw(c->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	c->dir[0] = '\0';
}

static void submit_free(struct submit *sub)
{
	struct jobs *j = sub->j;

	if (sub->prev)
		sub->prev->next = sub->next;
	else
		j->submits = sub->next;
	if (sub->next)
		sub->next->prev = sub->prev;
	check_dir_remove(&sub->c[0]);
	check_dir_remove(&sub->c[1]);
	json_decref(sub->request);
	free(sub);
	j->nsubmits--;
	jobs_close_check(j);
}

static void check_handle_closed(uv_handle_t *h)
{
	struct check *c = h->data;
	struct submit *sub = c->sub;

	if (--sub->handles == 0 && sub->pending == 0)
		submit_free(sub);
}

/* Reads the helper's result file (rtc.h: key=value lines ending in end=1)
 * into c->status, c->message and c->abi; false when it is missing or
 * incomplete. */
static bool check_result_read(struct check *c)
{
	char path[PATH_MAX + 32], *line = NULL;
	size_t cap = 0;
	ssize_t got;
	bool complete = false;
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", c->dir, RTC__RESULT_FILE);
	f = fopen(path, "re");
	if (!f)
		return false;
	while ((got = getline(&line, &cap, f)) > 0) {
		char *eq = strchr(line, '=');
		if (line[got - 1] == '\n')
			line[got - 1] = '\0';
		if (!eq)
			continue;
		*eq = '\0';
		if (!strcmp(line, "status"))
			c->status = atoi(eq + 1);
		else if (!strcmp(line, "message"))
			snprintf(c->message, sizeof c->message, "%s", eq + 1);
		else if (!strcmp(line, "abi"))
			snprintf(c->abi, sizeof c->abi, "%s", eq + 1);
		else if (!strcmp(line, "end"))
			complete = true;
	}
	free(line);
	fclose(f);
	return complete && c->status <= 0;
}

/* The last non-empty line the helper printed. */
static void check_stderr_last(const struct check *c, char *out, size_t cap)
{
	char path[PATH_MAX + 32], buf[4096];
	ssize_t got = -1;
	size_t end, start;
	int fd;

	out[0] = '\0';
	snprintf(path, sizeof path, "%s/%s", c->dir, RTC__STDERR_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	got = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (got <= 0)
		return;
	end = (size_t)got;
	while (end > 0 && (buf[end - 1] == '\n' || buf[end - 1] == '\r' || buf[end - 1] == ' '))
		end--;
	start = end;
	while (start > 0 && buf[start - 1] != '\n')
		start--;
	snprintf(out, cap, "%.*s", (int)(end - start), buf + start);
}

/* Decides what became of one identify child, in rtc_identify's words. */
static void check_outcome(struct check *c, double timeout_s)
{
	char sig[64], tail[256];

	if (check_result_read(c)) {
		if (c->status == 0 && strcmp(c->abi, "nvrtc") && strcmp(c->abi, "hiprtc")) {
			c->status = QUAL_EABI;
			snprintf(c->message, sizeof c->message,
				 "cannot load compiler '%s': no nvrtc or hiprtc entry points",
				 c->path);
		}
		return;
	}
	c->abi[0] = '\0';
	if (c->timed_out) {
		c->status = QUAL_ETIMEOUT;
		snprintf(c->message, sizeof c->message,
			 "compiler '%s' did not finish within %g s", c->path, timeout_s);
	} else if (c->term_signal) {
		c->status = QUAL_ECRASH;
		snprintf(c->message, sizeof c->message,
			 "compiler '%s' crashed while loading: killed by signal %s", c->path,
			 signal_text(c->term_signal, sig, sizeof sig));
	} else {
		check_stderr_last(c, tail, sizeof tail);
		c->status = QUAL_ECRASH;
		snprintf(c->message, sizeof c->message,
			 "compiler '%s' exited with status %d while loading without reporting%s%s",
			 c->path, (int)c->exit_status, tail[0] ? ": " : "", tail);
	}
}

static void submit_call(struct submit *sub, int status, const char *job,
			int position, const char *message)
{
	jobs_submit_cb cb = sub->cb;

	sub->cb = NULL;
	if (cb)
		cb(sub->ctx, status, job, position, message);
}

/* Both checks are in: refuse, or store and queue the job. */
static void submit_decide(struct submit *sub)
{
	struct jobs *j = sub->j;
	struct check *b = &sub->c[0], *c = &sub->c[1];
	struct qual_msg m;
	struct job *job;
	json_t *state;
	int arm, position, rc;

	if (!sub->cb)
		return;
	/* A library that crashes or hangs while loading is a result about it,
	 * as in qual-run: the job runs and its verdict says so. Everything
	 * else that went wrong is a refusal. */
	for (arm = 0; arm < 2; arm++) {
		struct check *x = &sub->c[arm];
		if (x->status && x->status != QUAL_ECRASH && x->status != QUAL_ETIMEOUT) {
			submit_call(sub, x->status, NULL, -1, x->message);
			return;
		}
	}
	if (b->abi[0] && c->abi[0] && strcmp(b->abi, c->abi)) {
		snprintf(m.text, sizeof m.text,
			 "baseline is %s but candidate is %s: both must use one abi",
			 b->abi, c->abi);
		submit_call(sub, QUAL_EINVAL, NULL, -1, m.text);
		return;
	}

	job = job_new(j->next_num);
	if ((rc = request_submit_from_json(sub->request, &job->args, &m)) < 0) {
		job_free(job);
		submit_call(sub, rc, NULL, -1, m.text);
		return;
	}
	job->state = JOB_QUEUED;
	now_text(job->submitted);
	state = job_state_json(job);
	rc = store_job_create(j->store, job->id, sub->request, state, &m);
	json_decref(state);
	if (rc < 0) {
		job_free(job);
		submit_call(sub, rc, NULL, -1, m.text);
		return;
	}
	j->next_num++;
	job_add(j, job);
	position = j->nqueued;
	queue_push(j, job);
	submit_call(sub, 0, job->id, position, NULL);
	jobs_schedule_soon(j);
}

static void check_exit(uv_process_t *p, int64_t status, int sig)
{
	struct check *c = p->data;
	struct submit *sub = c->sub;

	c->exit_status = status;
	c->term_signal = sig;
	kill(-p->pid, SIGKILL);
	uv_timer_stop(&c->timer);
	check_outcome(c, sub->j->check_timeout_s);
	check_dir_remove(c);
	uv_close((uv_handle_t *)&c->proc, check_handle_closed);
	uv_close((uv_handle_t *)&c->timer, check_handle_closed);
	if (--sub->pending == 0)
		submit_decide(sub);
}

static void check_timer(uv_timer_t *t)
{
	struct check *c = t->data;

	c->timed_out = true;
	kill(-c->proc.pid, SIGKILL);
}

static void dir_of(const char *path, char *out, size_t cap)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(out, cap, ".");
	else if (slash == path)
		snprintf(out, cap, "/");
	else
		snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

/* Starts the identify child of one arm (rtc.h: qual-compile identify, in a
 * private folder, with the library's folder first on LD_LIBRARY_PATH, in a
 * session of its own). On failure nothing is left open. */
static int check_start(struct jobs *j, struct check *c, struct qual_msg *msg)
{
	const char *tmp = getenv("TMPDIR");
	const char *old = getenv("LD_LIBRARY_PATH");
	const char *drop[] = { "LD_LIBRARY_PATH=", "TMPDIR=", NULL };
	char libdir[PATH_MAX], *ld = NULL, *td = NULL, sub[PATH_MAX + 8];
	char errpath[PATH_MAX + 32];
	const char *add[3];
	char *argv[9];
	char **env;
	uv_process_options_t opt;
	uv_stdio_container_t stdio[3];
	int fd, rc;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	snprintf(c->dir, sizeof c->dir, "%s/quald-check-XXXXXX", tmp);
	if (!mkdtemp(c->dir)) {
		rc = qual_fail(msg, QUAL_EIO, "cannot create temporary folder '%s': %s",
			       c->dir, strerror(errno));
		c->dir[0] = '\0';
		return rc;
	}
	snprintf(sub, sizeof sub, "%s/tmp", c->dir);
	snprintf(errpath, sizeof errpath, "%s/%s", c->dir, RTC__STDERR_FILE);
	if (mkdir(sub, 0700) < 0 ||
	    (fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
		rc = qual_fail(msg, QUAL_EIO, "cannot create '%s': %s", errpath,
			       strerror(errno));
		check_dir_remove(c);
		return rc;
	}
	dir_of(c->real, libdir, sizeof libdir);
	if (asprintf(&ld, "LD_LIBRARY_PATH=%s%s%s", libdir, old && *old ? ":" : "",
		     old && *old ? old : "") < 0 ||
	    asprintf(&td, "TMPDIR=%s", sub) < 0)
		abort();
	add[0] = ld;
	add[1] = td;
	add[2] = NULL;
	env = env_with(drop, add);
	argv[0] = j->helper;
	argv[1] = "identify";
	argv[2] = "--lib";
	argv[3] = c->real;
	argv[4] = "--out";
	argv[5] = c->dir;
	argv[6] = "--label";
	argv[7] = c->path;
	argv[8] = NULL;
	memset(&opt, 0, sizeof opt);
	stdio[0].flags = UV_IGNORE;
	stdio[1].flags = UV_INHERIT_FD;
	stdio[1].data.fd = fd;
	stdio[2].flags = UV_INHERIT_FD;
	stdio[2].data.fd = fd;
	opt.file = j->helper;
	opt.args = argv;
	opt.env = env;
	opt.stdio = stdio;
	opt.stdio_count = 3;
	opt.exit_cb = check_exit;
	opt.flags = UV_PROCESS_DETACHED;
	rc = uv_spawn(j->loop, &c->proc, &opt);
	c->proc.data = c;
	close(fd);
	free(ld);
	free(td);
	strv_free(env);
	if (rc < 0) {
		/* The handle was initialised: it is closed by the caller. */
		check_dir_remove(c);
		return qual_fail(msg, QUAL_EIO, "cannot start compiler helper '%s': %s",
				 j->helper, uv_strerror(rc));
	}
	c->spawned = true;
	uv_timer_init(j->loop, &c->timer);
	c->timer.data = c;
	uv_timer_start(&c->timer, check_timer, (uint64_t)(j->check_timeout_s * 1000.0), 0);
	return 0;
}

static int submit_validate(const struct submit_args *a, struct qual_msg *msg)
{
	size_t i;

	if (a->pairs > 1000000)
		return qual_fail(msg, QUAL_EINVAL, "'pairs' must be at most 1000000, got %d",
				 a->pairs);
	if (a->seed < 0 || a->seed > 0x7fffffff)
		return qual_fail(msg, QUAL_EINVAL,
				 "'seed' must be an integer in [0, 2147483647], got %lld",
				 (long long)a->seed);
	for (i = 0; a->cases && a->cases[i]; i++)
		if (fixture_find(a->cases[i]) < 0)
			return qual_fail(msg, QUAL_EINVAL, "unknown case '%s'", a->cases[i]);
	return 0;
}

int jobs_submit(struct jobs *j, const struct submit_args *args,
		jobs_submit_cb cb, void *ctx, struct qual_msg *msg)
{
	struct submit *sub;
	int arm, rc;

	if (j->closing)
		return qual_fail(msg, QUAL_EINVAL, "quald is shutting down");
	if ((rc = submit_validate(args, msg)) ||
	    (rc = rtc_check_library(args->baseline, msg)) ||
	    (rc = rtc_check_library(args->candidate, msg)))
		return rc;
	if (j->roots) {
		char real[POLICY_PATH_MAX];
		for (arm = 0; arm < 2; arm++)
			if ((rc = policy_check_library((const char *const *)j->roots,
						       j->nroots, geteuid(),
						       arm ? args->candidate : args->baseline,
						       real, sizeof real, msg)))
				return rc;
	}
	if ((rc = quarantine_check(j, args->baseline, msg)) ||
	    (rc = quarantine_check(j, args->candidate, msg)))
		return rc;
	sub = xcalloc(1, sizeof *sub);
	sub->j = j;
	sub->request = request_submit_to_json(args);
	if (!sub->request) {
		free(sub);
		return qual_fail(msg, QUAL_EINVAL, "cannot encode the request");
	}
	for (arm = 0; arm < 2; arm++) {
		struct check *c = &sub->c[arm];
		const char *path = arm ? args->candidate : args->baseline;
		c->sub = sub;
		c->arm = arm;
		snprintf(c->path, sizeof c->path, "%s", path);
		if (strlen(path) >= sizeof c->path || !realpath(path, c->real)) {
			rc = qual_fail(msg, QUAL_EIO, "cannot load compiler '%s': %s", path,
				       strlen(path) >= sizeof c->path ? "path too long" :
				       strerror(errno));
			goto fail;
		}
	}
	sub->next = j->submits;
	if (j->submits)
		j->submits->prev = sub;
	j->submits = sub;
	j->nsubmits++;
	for (arm = 0; arm < 2; arm++) {
		struct check *c = &sub->c[arm];
		rc = check_start(j, c, msg);
		if (c->spawned) {
			sub->pending++;
			sub->handles += 2;
		}
		if (rc < 0) {
			/* The callback never runs; a child already started is
			 * killed and its handles closed, then sub is freed. */
			if (!c->spawned && c->proc.type == UV_PROCESS) {
				sub->handles++;
				uv_close((uv_handle_t *)&c->proc, check_handle_closed);
			}
			if (arm == 1 && sub->c[0].spawned)
				kill(-sub->c[0].proc.pid, SIGKILL);
			if (sub->handles == 0)
				submit_free(sub);
			return rc;
		}
	}
	sub->cb = cb;
	sub->ctx = ctx;
	return 0;
fail:
	json_decref(sub->request);
	free(sub);
	return rc;
}

/* ---- cancel, logs, status --------------------------------------------------------- */

int jobs_cancel(struct jobs *j, const char *id, struct qual_msg *msg)
{
	struct job *job = job_find(j, id);

	if (!job)
		return qual_fail(msg, QUAL_ENOENT, "no job '%s'", id);
	switch (job->state) {
	case JOB_QUEUED:
		queue_remove(j, job);
		job_end_here(j, job, JOB_CANCELLED, "cancelled", "cancelled while queued",
			     true);
		return 0;
	case JOB_RUNNING:
		if (job->w && !job->w->exited) {
			job->w->cancel = true;
			worker_stop(job->w);
			return 0;
		}
		break;
	default:
		break;
	}
	return qual_fail(msg, QUAL_EINVAL, "job '%s' has already finished (%s)", id,
			 state_names[job->state]);
}

struct read_ctx {
	long after_seq;
	long index;
	long count;
	jobs_each_cb fn;
	void *ctx;
};

static int read_one(void *ctx, const char *line, size_t len)
{
	struct read_ctx *r = ctx;

	/* A log's line i has seq i: seqs start at 0, have no gaps, and every
	 * line of a job is in its log in order. */
	if (r->index++ > r->after_seq) {
		r->count++;
		if (r->fn)
			r->fn(r->ctx, line, len);
	}
	return 0;
}

int jobs_read_log(struct jobs *j, const char *id, long after_seq,
		  jobs_each_cb fn, void *ctx, const char **state,
		  struct qual_msg *msg)
{
	struct job *job = job_find(j, id);
	struct read_ctx r = { after_seq, 0, 0, fn, ctx };
	int rc;

	if (state)
		*state = NULL;
	if (!job)
		return qual_fail(msg, QUAL_ENOENT, "no job '%s'", id);
	if (state)
		*state = state_names[job->state];
	if ((rc = store_log_read(j->store, job->id, read_one, &r, NULL, msg)) < 0)
		return rc;
	return (int)r.count;
}

int jobs_ids_after(struct jobs *j, const char *id, char ***ids, int *n)
{
	long after = 0;
	int i, k = 0;

	*ids = NULL;
	*n = 0;
	if (id && (after = store_id_parse(id)) < 0)
		return QUAL_EINVAL;
	*ids = xcalloc((size_t)j->njobs + 1, sizeof **ids);
	for (i = 0; i < j->njobs; i++)
		if (j->all[i]->num > after)
			(*ids)[k++] = xstrdup(j->all[i]->id);
	*n = k;
	return 0;
}

void jobs_ids_free(char **ids, int n)
{
	int i;

	for (i = 0; ids && i < n; i++)
		free(ids[i]);
	free(ids);
}

json_t *jobs_status_json(struct jobs *j)
{
	json_t *slots = json_array(), *queued = json_array(), *running = json_array();
	json_t *reply;
	struct job *q;
	int s, in_service = 0;

	for (s = 0; s < j->nslots; s++) {
		struct worker *w = j->slots[s];
		json_t *o = json_pack("{s:i,s:o,s:o}", "slot", s,
			"device", j->devices ? json_integer(j->devices[s]) : json_null(),
			"job", w && !w->concluded ? json_string(w->job->id) : json_null());
		/* Only for a slot out of service or being checked: the usual
		 * reply keeps its shape. */
		if (j->out_reason[s])
			json_object_set_new(o, "out_of_service", json_string(j->out_reason[s]));
		else
			in_service++;
		if (j->checks[s])
			json_object_set_new(o, "health_check", json_true());
		json_array_append_new(slots, o);
		if (w && !w->concluded)
			json_array_append_new(running, json_string(w->job->id));
	}
	for (q = j->qhead; q; q = q->qnext)
		json_array_append_new(queued, json_string(q->id));
	reply = json_pack("{s:o,s:o,s:o}", "slots", slots, "queued", queued,
			  "running", running);
	if (!in_service && j->qhead)
		json_object_set_new(reply, "waiting", json_string(
			"no slot is in service (every gpu failed its health check): "
			"queued jobs wait until quald restarts"));
	return reply;
}

json_t *jobs_list_json(struct jobs *j, int limit)
{
	json_t *list = json_array();
	int i;

	for (i = j->njobs - 1; i >= 0 && (int)json_array_size(list) < limit; i--) {
		struct job *job = j->all[i];
		json_array_append_new(list, json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:o}",
			"job", job->id, "state", state_names[job->state],
			"verdict", str_or_null(job->verdict),
			"submitted", str_or_null(job->submitted),
			"finished", str_or_null(job->finished),
			"baseline", str_or_null(job->args.baseline),
			"candidate", str_or_null(job->args.candidate)));
	}
	return json_pack("{s:o}", "jobs", list);
}

/* ---- open: recovery ----------------------------------------------------------------- */

struct last_line {
	char *text;
};

static int keep_last(void *ctx, const char *line, size_t len)
{
	struct last_line *l = ctx;

	free(l->text);
	l->text = xmalloc(len + 1);
	memcpy(l->text, line, len + 1);
	return 0;
}

/* The state's index in state_names, or -1. */
static int state_parse(const char *s)
{
	int i;

	for (i = 0; s && i < (int)(sizeof state_names / sizeof *state_names); i++)
		if (!strcmp(s, state_names[i]))
			return i;
	return -1;
}

static void copy_field(json_t *o, const char *key, char *out, size_t cap)
{
	const char *v = json_string_value(json_object_get(o, key));

	snprintf(out, cap, "%s", v ? v : "");
}

/* Loads one job from the state directory and settles what a stop left
 * open. Returns the job, or NULL (with a warning) when its files are
 * unreadable. */
static struct job *job_recover(struct jobs *j, long num)
{
	struct job *job = job_new(num);
	struct store_log_info info;
	struct last_line last = { NULL };
	json_t *request = NULL, *state = NULL, *lastj = NULL;
	const char *last_type = NULL;
	struct qual_msg m;
	json_t *v;
	int st;

	if (store_job_read(j->store, job->id, &request, &state, &m) < 0 ||
	    request_submit_from_json(request, &job->args, &m) < 0)
		goto skip;
	st = state_parse(json_string_value(json_object_get(state, "state")));
	if (st < 0) {
		snprintf(m.text, sizeof m.text, "unknown state in its state.json");
		goto skip;
	}
	job->state = (enum job_state)st;
	copy_field(state, "verdict", job->verdict, sizeof job->verdict);
	copy_field(state, "submitted", job->submitted, sizeof job->submitted);
	copy_field(state, "started", job->started, sizeof job->started);
	copy_field(state, "finished", job->finished, sizeof job->finished);
	if (json_is_integer(v = json_object_get(state, "slot")))
		job->slot = (int)json_integer_value(v);
	if (json_is_integer(v = json_object_get(state, "device")))
		job->device = (int)json_integer_value(v);
	if (store_log_read(j->store, job->id, keep_last, &last, &info, &m) < 0)
		goto skip;
	if (info.torn_bytes) {
		warn("job '%s': its log ends with an incomplete line of %lld bytes, cut off",
		     job->id, (long long)info.torn_bytes);
		if (store_log_repair(j->store, job->id, &info, &m) < 0)
			warn("job '%s': %s", job->id, m.text);
	}
	job->next_seq = info.lines;
	if (last.text && (lastj = json_loads(last.text, 0, NULL)))
		last_type = json_string_value(json_object_get(lastj, "type"));

	if ((job->state == JOB_QUEUED || job->state == JOB_RUNNING) && last_type &&
	    !strcmp(last_type, "verdict")) {
		/* The verdict line was synced before the state was replaced: the
		 * job ended, the state file just did not say so yet. */
		const char *vv = json_string_value(json_object_get(lastj, "verdict"));
		snprintf(job->verdict, sizeof job->verdict, "%s", vv ? vv : "error");
		job->state = !strcmp(job->verdict, "cancelled") ? JOB_CANCELLED :
			     !strcmp(job->verdict, "interrupted") ? JOB_INTERRUPTED :
			     JOB_DONE;
		if (!job->finished[0])
			now_text(job->finished);
		job_state_save(j, job);
	} else if (job->state == JOB_RUNNING) {
		job_end_here(j, job, JOB_INTERRUPTED, "interrupted",
			     "the daemon stopped while this job ran", false);
	}
	free(last.text);
	json_decref(lastj);
	json_decref(request);
	json_decref(state);
	return job;
skip:
	warn("skipping job '%s' in the state directory: %s", job->id, m.text);
	free(last.text);
	json_decref(request);
	json_decref(state);
	job_free(job);
	return NULL;
}

/* The file name beside the running executable. */
static char *beside_self(const char *name)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	char *slash, *out;

	if (n < 0)
		return xstrdup(name);
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	if (asprintf(&out, "%s/%s", slash ? self : ".", name) < 0)
		abort();
	return out;
}

static void jobs_free(struct jobs *j)
{
	int i;

	for (i = 0; i < j->njobs; i++)
		job_free(j->all[i]);
	free(j->all);
	free(j->slots);
	free(j->devices);
	free(j->worker);
	free(j->helper);
	for (i = 0; i < j->nroots; i++)
		free(j->roots[i]);
	free(j->roots);
	for (i = 0; j->out_reason && i < j->nslots; i++)
		free(j->out_reason[i]);
	free(j->out_reason);
	free(j->needs_check);
	free(j->checks);
	json_decref(j->quarantine);
	free(j->quarantine_path);
	store_free(j->store);
	free(j);
}

int jobs_open(uv_loop_t *loop, const struct jobs_config *cfg, jobs_line_cb cb,
	      void *cb_ctx, struct jobs **out, struct qual_msg *msg)
{
	struct jobs *j;
	long *nums = NULL;
	int n = 0, i, rc;

	*out = NULL;
	if (cfg->nslots < 1)
		return qual_fail(msg, QUAL_EINVAL, "no worker slots");
	j = xcalloc(1, sizeof *j);
	j->loop = loop;
	j->cb = cb;
	j->cb_ctx = cb_ctx;
	j->nslots = cfg->nslots;
	j->slots = xcalloc((size_t)cfg->nslots, sizeof *j->slots);
	j->needs_check = xcalloc((size_t)cfg->nslots, sizeof *j->needs_check);
	j->out_reason = xcalloc((size_t)cfg->nslots, sizeof *j->out_reason);
	j->checks = xcalloc((size_t)cfg->nslots, sizeof *j->checks);
	if (cfg->devices) {
		j->devices = xcalloc((size_t)cfg->nslots, sizeof *j->devices);
		memcpy(j->devices, cfg->devices, (size_t)cfg->nslots * sizeof *j->devices);
	}
	j->worker = cfg->worker ? xstrdup(cfg->worker) : beside_self("qual-run");
	j->helper = cfg->compile_helper ? xstrdup(cfg->compile_helper) :
		    beside_self("qual-compile");
	j->job_timeout_s = cfg->job_timeout_s > 0 ? cfg->job_timeout_s :
			   JOBS_DEFAULT_TIMEOUT_S;
	j->check_timeout_s = cfg->submit_check_timeout_s > 0 ?
			     cfg->submit_check_timeout_s : JOBS_DEFAULT_CHECK_TIMEOUT_S;
	j->max_log_bytes = cfg->max_log_bytes > 0 ? cfg->max_log_bytes :
			   JOBS_DEFAULT_MAX_LOG_BYTES;
	if (cfg->allow_roots) {
		/* A root that does not exist is skipped (a default such as
		 * /usr/lib64 on Debian); one that is not a folder is an error. */
		j->roots = xcalloc((size_t)cfg->nallow_roots + 1, sizeof *j->roots);
		for (i = 0; i < cfg->nallow_roots; i++) {
			char real[POLICY_PATH_MAX];
			rc = policy_root_resolve(cfg->allow_roots[i], real, sizeof real, msg);
			if (rc == QUAL_ENOENT)
				continue;
			if (rc) {
				jobs_free(j);
				return rc;
			}
			j->roots[j->nroots++] = xstrdup(real);
		}
	}
	if ((rc = store_open(cfg->state_dir, &j->store, msg)) ||
	    (rc = store_scan(j->store, &nums, &n, msg))) {
		jobs_free(j);
		return rc;
	}
	quarantine_load(j, cfg->state_dir);
	j->next_num = n ? nums[n - 1] + 1 : 1;
	for (i = 0; i < n; i++) {
		struct job *job = job_recover(j, nums[i]);
		if (!job)
			continue;
		job_add(j, job);
		if (job->state == JOB_QUEUED)
			queue_push(j, job);
	}
	free(nums);
	uv_timer_init(loop, &j->tick);
	j->tick.data = j;
	jobs_schedule_soon(j);
	*out = j;
	return 0;
}

/* ---- close -------------------------------------------------------------------------- */

static void jobs_tick_closed(uv_handle_t *h)
{
	struct jobs *j = h->data;
	void (*done)(void *) = j->done;
	void *ctx = j->done_ctx;

	jobs_free(j);
	if (done)
		done(ctx);
}

/* Once nothing is running or being checked, the last handle goes. */
static void jobs_close_check(struct jobs *j)
{
	if (!j->closing || j->tick_closing || j->nworkers || j->nsubmits || j->nhealth)
		return;
	j->tick_closing = true;
	uv_close((uv_handle_t *)&j->tick, jobs_tick_closed);
}

void jobs_close(struct jobs *j, void (*done)(void *ctx), void *ctx)
{
	struct submit *sub;
	int s;

	if (j->closing)
		return;
	j->closing = true;
	j->done = done;
	j->done_ctx = ctx;
	uv_timer_stop(&j->tick);
	for (sub = j->submits; sub; sub = sub->next) {
		submit_call(sub, QUAL_EINVAL, NULL, -1, "quald is shutting down");
		for (int arm = 0; arm < 2; arm++)
			if (sub->c[arm].spawned)
				kill(-sub->c[arm].proc.pid, SIGKILL);
	}
	for (s = 0; s < j->nslots; s++) {
		struct worker *w = j->slots[s];
		if (w && !w->concluded) {
			w->interrupt = true;
			worker_stop(w);
		}
		if (j->checks[s] && !uv_is_closing((uv_handle_t *)&j->checks[s]->proc))
			kill(-j->checks[s]->proc.pid, SIGKILL);
	}
	jobs_close_check(j);
}
