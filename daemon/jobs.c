/* Jobs (jobs.h): the job table, the queue, scheduling, and lines into a
 * job's log. The modules of jobs_internal.h do the rest: a worker's process
 * and the relay of its lines (worker.c), GPU health checks (slot_health.c),
 * the quarantine (quarantine.c), the submit checks (submit.c) and the
 * recovery at start (recover.c).
 *
 * Everything here runs on the daemon's loop. Slow or dangerous work happens
 * in children, each started by child_start() and watched by children.c: the
 * submit checks run qual-compile identify (the daemon never loads a compiler
 * library), and each job runs qual-run in a session of its own, so that a
 * cancel or a time limit can kill everything the worker started at once.
 * Writes to the state directory go to the writer thread (writer.h), in
 * order, so that a slow disk never stalls the loop; what is acknowledged
 * waits for them: a submit's acceptance for its job's creation, a line's
 * relay for its append (synced at case_verdict and verdict lines). Reads
 * (show, watch, recovery) are synchronous.
 *
 * Every line goes to the job's log first (synced at case_verdict and
 * verdict lines), then to the line callback. The verdicts the daemon writes
 * when a worker ended without one are worker.c's (its header comment); a
 * job whose worker wrote its verdict line is done with that verdict, even
 * when a cancel or shutdown arrived after it. */
#include "daemon/jobs.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/text.h"
#include "common/xalloc.h"
#include "compile/rtc.h"
#include "daemon/jobs_internal.h"
#include "daemon/policy.h"
#include "daemon/relay.h"
#include "daemon/oplog.h"
#include "proto/line.h"
#include "proto/remote.h"

#define JOBS_DEFAULT_TIMEOUT_S 7200.0
#define JOBS_DEFAULT_CHECK_TIMEOUT_S 30.0
/* A job's log limit: a full run's log is well under 1 MiB (about 30 lines
 * per pair-set and case); 64 MiB is a runaway worker, not results. */
#define JOBS_DEFAULT_MAX_LOG_BYTES (64LL << 20)

/* ---- small helpers ---------------------------------------------------------- */

/* A folder being removed in libuv's thread pool (jobs__remove_later). It
 * holds nothing of the jobs table: a removal may end after jobs_close's
 * callback (the loop runs until it has). */
struct removal {
	uv_work_t work;
	bool compile_folder;
	char dir[PATH_MAX];
};

static void removal_work(uv_work_t *w)
{
	struct removal *r = w->data;

	if (r->compile_folder)
		rtc_workdir_remove(r->dir);
	else
		fs_rm_tree(r->dir);
}

static void removal_done(uv_work_t *w, int status)
{
	(void)status;
	free(w->data);
}

void jobs__remove_later(struct jobs *j, const char *dir, bool compile_folder)
{
	struct removal *r;

	if (!dir || !dir[0])
		return;
	r = xcalloc(1, sizeof *r);
	r->work.data = r;
	r->compile_folder = compile_folder;
	snprintf(r->dir, sizeof r->dir, "%s", dir);
	if (uv_queue_work(j->loop, &r->work, removal_work, removal_done) < 0) {
		removal_work(&r->work); /* only without a work callback: never */
		free(r);
	}
}

void jobs__now(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
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

/* ---- the job table and the queue ---------------------------------------------- */

struct job *jobs__job_find(struct jobs *j, const char *id)
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

static void queue_push(struct jobs *j, struct job *job)
{
	list_append(&j->queue, &job->qlink);
	j->nqueued++;
}

static void queue_remove(struct jobs *j, struct job *job)
{
	list_remove(&job->qlink);
	j->nqueued--;
}

void jobs__job_add(struct jobs *j, struct job *job)
{
	XGROW(j->all, j->njobs + 1, j->cap);
	j->all[j->njobs++] = job;
	if (job->state == JOB_QUEUED)
		queue_push(j, job);
}

struct job *jobs__job_new(long num)
{
	struct job *job = xcalloc(1, sizeof *job);

	job->num = num;
	job->verdict = RUN_VERDICT_UNKNOWN;
	store_id_format(num, job->id, sizeof job->id);
	job->slot = -1;
	job->device = -1;
	job->counted_at = -1;
	list_init(&job->qlink);
	return job;
}

void jobs__job_free(struct job *job)
{
	if (!job)
		return;
	args_release(&job->args);
	json_decref(job->summary);
	history__job_release(job);
	free(job->remote);
	free(job);
}

/* A create in flight (jobs__enqueue): the job joins the table when it is
 * on disk. */
struct creating {
	struct jobs *j;
	struct job *job;
	jobs_submit_cb cb;
	void *ctx;
};

static void enqueue_done(void *ctx, const struct writer_done *d)
{
	struct creating *c = ctx;
	struct jobs *j = c->j;
	struct job *job = c->job;
	int position = j->nqueued;

	j->creating--;
	if (d->status < 0) {
		c->cb(c->ctx, d->status, NULL, -1, d->message);
		jobs__job_free(job);
	} else {
		jobs__job_add(j, job);
		jobs__log_submitted(job, position);
		c->cb(c->ctx, 0, job->id, position, NULL);
		jobs__schedule_soon(j);
	}
	free(c);
	jobs__close_check(j);
}

int jobs__enqueue(struct jobs *j, json_t *request, jobs_submit_cb cb, void *ctx,
		  struct qual_msg *msg)
{
	struct job *job = jobs__job_new(j->next_num);
	struct creating *c;
	json_t *state;
	int rc;

	if ((rc = request_submit_from_json(request, &job->args, msg)) < 0) {
		jobs__job_free(job);
		return rc;
	}
	job->state = JOB_QUEUED;
	jobs__now(job->submitted);
	/* The number is taken now: a failed create leaves a gap, never a
	 * second job of one id. */
	j->next_num++;
	c = xcalloc(1, sizeof *c);
	*c = (struct creating){ j, job, cb, ctx };
	j->creating++;
	state = jobs__state_json(job);
	writer_job_create(j->writer, job->id, request, state, enqueue_done, c);
	json_decref(state);
	return 0;
}

/* ---- state and lines ------------------------------------------------------------ */

json_t *jobs__str_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

json_t *jobs__state_json(const struct job *job)
{
	json_t *o = json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:o}",
			      "state", vocab_state_name(job->state),
			      "verdict", jobs__str_or_null(vocab_verdict_name(job->verdict)),
			      "submitted", jobs__str_or_null(job->submitted),
			      "started", jobs__str_or_null(job->started),
			      "finished", jobs__str_or_null(job->finished),
			      "slot", job->slot >= 0 ? json_integer(job->slot) : json_null(),
			      "device", job->device >= 0 ? json_integer(job->device) :
			      json_null());

	/* Only for a job of the Slurm backend, and a damaged one: the usual
	 * state keeps its shape. */
	if (job->remote)
		json_object_set_new(o, REMOTE_JSON_KEY, remote__state_json(job));
	if (job->damaged)
		json_object_set_new(o, "damaged", json_true());
	return o;
}

/* A line on its way to the log. */
struct putting {
	struct jobs *j;
	struct job *job;
	bool notify;
	bool hold;                 /* a daemon's verdict: until the state after it */
	struct line *line;         /* held: a reference */
	long seq;
};

/* A written line may be read and relayed. */
static void put_release(struct putting *p, struct line *line, long seq)
{
	struct jobs *j = p->j;
	struct job *job = p->job;

	job->logged_seq = seq + 1;
	history__line(j, job, line);
	if (p->notify && j->cb)
		j->cb(j->cb_ctx, job->id, line);
}

/* A state write in flight. */
struct saving {
	struct jobs *j;
	struct job *job;
};

/* The state after a daemon's verdict line is written: the line goes out.
 * Once a finished job's state is on disk, retention may prune (last: it
 * may free this job). */
static void state_done(void *ctx, const struct writer_done *d)
{
	struct saving *sv = ctx;
	struct jobs *j = sv->j;
	struct job *job = sv->job;
	struct putting *p = job->held;

	(void)d;
	free(sv);
	job->state_writes--;
	if (p) {
		job->held = NULL;
		put_release(p, p->line, p->seq);
		line_unref(p->line);
		free(p);
	}
	if (job->state >= JOB_DONE)
		retention__prune(j);
}

void jobs__state_save(struct jobs *j, struct job *job)
{
	json_t *st = jobs__state_json(job);
	struct saving *sv = xmalloc(sizeof *sv);

	*sv = (struct saving){ j, job };
	job->state_writes++;
	/* A failure is fatal, raised from the writer's callback (writer.h). */
	writer_state_write(j->writer, job->id, st, state_done, sv);
	json_decref(st);
}

/* A line is written (and synced where asked): it may be read
 * (jobs_read_log) and relayed, in that order, so that reading a log and
 * then following its lines neither misses nor repeats one. */
static void put_done(void *ctx, const struct writer_done *d)
{
	struct putting *p = ctx;
	struct job *job = p->job;

	if (d->status < 0 && !job->log_warned) {
		/* The line still goes out: a full disk should not also blind
		 * the submitter. The log has a gap from here on. */
		oplog_warn("job '%s': cannot write its log: %s", job->id, d->message);
		job->log_warned = true;
	}
	if (p->hold) {
		/* A daemon's verdict is followed by the job's final state
		 * (jobs__end_here, worker.c): relayed once that is on disk
		 * too, so whoever hears it finds the state file final. */
		p->line = line_ref(d->line);
		p->seq = d->tag;
		job->held = p;
		return;
	}
	put_release(p, d->line, d->tag);
	free(p);
}

void jobs__put(struct jobs *j, struct job *job, struct line *line, bool sync,
	       bool notify)
{
	struct putting *p = xmalloc(sizeof *p);
	long seq = line->seq;

	/* The seq a line was made with (relay_line, relay_line_own) is the one
	 * followers and event streams see: the log's tag must be the same. */
	if (seq != job->next_seq || strcmp(line->job, job->id)) {
		oplog(LOG_ERR, "bug: job '%s': a line of job '%s' with seq %ld put where "
		      "seq %ld is next", job->id, line->job, seq, job->next_seq);
		abort();
	}
	job->next_seq++;
	*p = (struct putting){ j, job, notify, job->hold_next, NULL, 0 };
	job->hold_next = false;
	if (!job->log)
		job->log = writer_log_new(j->writer, job->id);
	writer_log_append(job->log, line, sync, seq, put_done, p);
}

void jobs__log_close(struct jobs *j, struct job *job)
{
	(void)j;
	writer_log_close(job->log);
	job->log = NULL;
}

/* Adds job and seq to o (borrowed), serialises it and puts it. */
static void put_json(struct jobs *j, struct job *job, json_t *o, bool sync, bool notify)
{
	/* quald's own line, made as the relay makes one: its struct without a
	 * parse, its ids last. */
	struct line *line = relay_line_own(json_incref(o), job->id, job->next_seq);

	jobs__put(j, job, line, sync, notify);
	line_unref(line);
}

/* A path for a journal line: JSON-quoted, so that its control characters
 * are escapes and it cannot end the line or fake another. Malloc'd. */
static char *quoted(const char *path)
{
	json_t *s = text_json_str(path ? path : "");
	char *q = json_dumps(s, JSON_ENCODE_ANY);

	json_decref(s);
	return q ? q : xstrdup("\"?\"");
}

void jobs__log_submitted(const struct job *job, int position)
{
	char *b = quoted(job->args.baseline), *c = quoted(job->args.candidate);

	if (job->args.calibrate)
		oplog(LOG_INFO, "job %s: submitted, a calibration of %d runs of %s, queue "
		      "position %d", job->id, job->args.calibrate, b, position);
	else
		oplog(LOG_INFO, "job %s: submitted, baseline %s, candidate %s, queue position %d",
		      job->id, b, c, position);
	free(b);
	free(c);
}

void jobs__log_started(const struct jobs *j, const struct job *job)
{
	if (j->remote)
		oplog(LOG_INFO, "job %s: started on slot %d (a slurm job%s%s)", job->id, job->slot,
		      job->args.gpu_type ? ", gpu type " : "",
		      job->args.gpu_type ? job->args.gpu_type : "");
	else if (job->device >= 0)
		oplog(LOG_INFO, "job %s: started on slot %d (GPU %d)", job->id, job->slot,
		      job->device);
	else
		oplog(LOG_INFO, "job %s: started on slot %d (compile only)", job->id, job->slot);
}

const double jobs_duration_le[JOBS_DURATION_BUCKETS] = {
	1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 7200,
};
const struct jobs_stats *jobs_stats(const struct jobs *j)
{
	return &j->stats;
}

static void count_ended(struct jobs *j, const struct job *job, enum run_verdict v)
{
	j->stats.ended[v]++;
	if (job->started_ms) {
		double s = (double)(uv_now(j->loop) - job->started_ms) / 1000;
		int b = 0;

		while (b < JOBS_DURATION_BUCKETS && s > jobs_duration_le[b])
			b++;
		j->stats.duration_bucket[b]++;
		j->stats.duration_sum_s += s;
		j->stats.ran++;
	}
}

void jobs__log_ended(struct jobs *j, const struct job *job)
{
	const char *v = vocab_verdict_name(job->verdict);
	/* What a gate fails on is worth an operator's notice. */
	int prio = v && vocab_verdict_notice(job->verdict) ? LOG_NOTICE : LOG_INFO;

	if (!v)
		v = "none";
	if (job->started_ms)
		oplog(prio, "job %s: verdict %s after %.1f s on slot %d", job->id, v,
		      (double)(uv_now(j->loop) - job->started_ms) / 1000, job->slot);
	else
		oplog(prio, "job %s: verdict %s before it started", job->id, v);
	count_ended(j, job, job->verdict);
}

void jobs__put_verdict(struct jobs *j, struct job *job, enum run_verdict verdict,
		       const char *message, bool notify)
{
	json_t *o = json_pack("{s:s,s:s,s:b}", "type", "verdict", "verdict",
			      vocab_verdict_name(verdict), "timed", 0);

	json_object_set_new(o, "message", text_json_str(message));
	job->hold_next = true;
	put_json(j, job, o, true, notify);
	job->hold_next = false;
	json_decref(o);
	job->verdict = verdict;
}

void jobs__put_error(struct jobs *j, struct job *job, enum lines_code code,
		     const char *message, bool notify)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:n,s:n}", "type", "error", "stage", "setup",
			      "code", vocab_code_name(code), "arm", "case");

	json_object_set_new(o, "message", text_json_str(message));
	put_json(j, job, o, false, notify);
	json_decref(o);
}

void jobs__end_here(struct jobs *j, struct job *job, enum job_state state,
		    enum run_verdict verdict, const char *message, bool notify)
{
	jobs__put_verdict(j, job, verdict, message, notify);
	jobs__log_close(j, job);
	job->state = state;
	jobs__now(job->finished);
	jobs__state_save(j, job);
	jobs__log_ended(j, job);
}

/* ---- scheduling ------------------------------------------------------------------- */

static void jobs_schedule(struct jobs *j)
{
	int s;

	if (j->closing)
		return;
	for (s = 0; s < j->nslots; s++) {
		struct job *job = NULL;
		struct list_link *q;
		if (j->slots[s].state != SLOT_IDLE)
			continue;
		if (j->slots[s].needs_check) {
			health__start(j, s);
			continue;
		}
		if (list_empty(&j->queue))
			break;
		/* The first queued job that may run here (a calibration of
		 * another slot's device may not). */
		list_each(q, &j->queue) {
			struct job *x = list_item(q, struct job, qlink);
			if (calib__fits(x, s)) {
				job = x;
				break;
			}
		}
		if (!job)
			continue;
		queue_remove(j, job);
		worker__start(j, job, s);
	}
}

static void jobs_tick(uv_timer_t *t)
{
	jobs_schedule(t->data);
}

void jobs__schedule_soon(struct jobs *j)
{
	if (!j->closing && !list_empty(&j->queue))
		uv_timer_start(&j->tick, jobs_tick, 0, 0);
}

/* ---- cancel ---------------------------------------------------------------------- */

int jobs_cancel(struct jobs *j, const char *id, struct qual_msg *msg)
{
	struct job *job = jobs__job_find(j, id);

	if (!job)
		return qual_fail(msg, QUAL_ENOENT, "no job '%s'", id);
	switch (job->state) {
	case JOB_QUEUED:
		queue_remove(j, job);
		/* Queued to follow its Slurm job again: that job is ended too. */
		if (job->attach)
			remote__scancel(j, job, "cancelled while queued");
		jobs__end_here(j, job, JOB_CANCELLED, RUN_CANCELLED, "cancelled while queued",
			       true);
		return 0;
	case JOB_RUNNING:
		if (job->w && worker__stop(job->w, WORKER_STOP_CANCELLED))
			return 0;
		break;
	default:
		break;
	}
	return qual_fail(msg, QUAL_EINVAL, "job '%s' has already finished (%s)", id,
			 vocab_state_name(job->state));
}

/* ---- open ----------------------------------------------------------------------- */

/* Our own program name beside the running executable, or the bare name
 * when /proc/self/exe cannot be read (then the exec fails and says so). */
static char *program(const char *given, const char *name)
{
	char *path;

	if (given)
		return xstrdup(given);
	path = fs_beside_self(name);
	return path ? path : xstrdup(name);
}

static void jobs_free(struct jobs *j)
{
	int i;

	for (i = 0; i < j->njobs; i++)
		jobs__job_free(j->all[i]);
	free(j->all);
	free(j->no_gpu_because);
	free(j->worker);
	free(j->helper);
	free(j->compile_user);
	remote__free(j);
	free(j->cache_dir);
	free(j->scratch);
	free(j->scratch_prefix);
	for (i = 0; i < j->nroots; i++)
		free(j->roots[i]);
	free(j->roots);
	quarantine__release(&j->quarantine);
	calib__release(j);
	history__release(j);
	for (i = 0; j->slots && i < j->nslots; i++)
		free(j->slots[i].out_reason);
	free(j->slots);
	store_free(j->store);
	free(j);
}

static void jobs_free_cb(void *ctx)
{
	jobs_free(ctx);
}

/* Resolves the allowed roots (policy.h). A root that does not exist is
 * skipped (a default such as /usr/lib64 on Debian); one that is not a
 * folder is an error. */
static int roots_resolve(struct jobs *j, const struct jobs_config *cfg,
			 struct qual_msg *msg)
{
	int i, rc;

	j->roots = xcalloc((size_t)cfg->nallow_roots + 1, sizeof *j->roots);
	for (i = 0; i < cfg->nallow_roots; i++) {
		char real[POLICY_PATH_MAX];
		rc = policy_root_resolve(cfg->allow_roots[i], real, sizeof real, msg);
		if (rc == QUAL_ENOENT)
			continue;
		if (rc)
			return rc;
		j->roots[j->nroots++] = xstrdup(real);
	}
	return 0;
}

int jobs_open(uv_loop_t *loop, const struct jobs_config *cfg, jobs_line_cb cb,
	      void *cb_ctx, struct jobs **out, struct qual_msg *msg)
{
	struct jobs *j;
	int rc;

	*out = NULL;
	if (cfg->nslots < 1)
		return qual_fail(msg, QUAL_EINVAL, "no worker slots");
	j = xcalloc(1, sizeof *j);
	j->loop = loop;
	j->cb = cb;
	j->cb_ctx = cb_ctx;
	list_init(&j->queue);
	list_init(&j->submits);
	j->nslots = cfg->nslots;
	j->slots = xcalloc((size_t)cfg->nslots, sizeof *j->slots);
	for (int s = 0; s < cfg->nslots; s++)
		j->slots[s].device = cfg->devices ? cfg->devices[s] : -1;
	j->no_gpu_because = xstrdup(cfg->no_gpu_because ? cfg->no_gpu_because :
				    "quald runs compile-only slots");
	j->worker = program(cfg->worker, "qual-run");
	j->calibrator = program(cfg->calibrator, "qual-calibrate");
	j->helper = program(cfg->compile_helper, "qual-compile");
	j->compile_user = cfg->compile_user ? xstrdup(cfg->compile_user) : NULL;
	j->compile_uid_first = cfg->compile_uid_first;
	j->compile_uids = cfg->compile_uids;
	if (!cfg->no_cache && asprintf(&j->cache_dir, "%s/cache", cfg->state_dir) < 0)
		abort();
	j->job_timeout_s = cfg->job_timeout_s > 0 ? cfg->job_timeout_s :
			   JOBS_DEFAULT_TIMEOUT_S;
	j->check_timeout_s = cfg->submit_check_timeout_s > 0 ?
			     cfg->submit_check_timeout_s : JOBS_DEFAULT_CHECK_TIMEOUT_S;
	j->max_log_bytes = cfg->max_log_bytes > 0 ? cfg->max_log_bytes :
			   JOBS_DEFAULT_MAX_LOG_BYTES;
	j->keep_jobs = cfg->keep_jobs;
	j->keep_days = cfg->keep_days;
	if ((rc = remote__open(j, cfg->remote, msg)) ||
	    (cfg->allow_roots && (rc = roots_resolve(j, cfg, msg))) ||
	    (rc = store_open(cfg->state_dir, &j->store, msg)) ||
	    (rc = worker__scratch_open(j, cfg->state_dir, msg))) {
		jobs_free(j);
		return rc;
	}
	quarantine__load(&j->quarantine, cfg->state_dir);
	if ((rc = calib__open(j, cfg, msg))) {
		jobs_free(j);
		return rc;
	}
	/* Recovery's own writes (an interrupted job's verdict, a settled
	 * state) go through the writer too. */
	if ((rc = writer_start(loop, j->store, &j->writer, msg)) < 0) {
		jobs_free(j);
		return rc;
	}
	j->quarantine.writer = j->writer;
	rc = recover__jobs(j, msg);
	/* Settled on disk before anything is served (jobs.h). */
	writer_wait(j->writer);
	if (rc) {
		writer_close(j->writer, jobs_free_cb, j);
		return rc;
	}
	/* What retention lets go since the last run; its removals go on in
	 * the writer while the loop serves. */
	retention__prune(j);
	/* The finished logs recovery did not read, and the summaries not
	 * stored, are read off the loop from now on. */
	history__start(j);
	uv_timer_init(loop, &j->tick);
	j->tick.data = j;
	calib__start(j);
	children_init(loop, &j->children);
	j->children.data = j;
	if (cfg->adopt_orphans && children_adopt_orphans(&j->children, msg) < 0)
		oplog_warn("%s: what a worker leaves behind may outlive its job", msg->text);
	jobs__schedule_soon(j);
	*out = j;
	return 0;
}

/* ---- close -------------------------------------------------------------------------- */

static void jobs_handles_gone(struct jobs *j)
{
	void (*done)(void *) = j->done;
	void *ctx = j->done_ctx;

	if (--j->closing_handles > 0)
		return;
	jobs_free(j);
	if (done)
		done(ctx);
}

static void jobs_tick_closed(uv_handle_t *h)
{
	jobs_handles_gone(h->data);
}

static void jobs_children_closed(struct children *set)
{
	jobs_handles_gone(set->data);
}

static void jobs_writer_closed(void *ctx)
{
	struct jobs *j = ctx;

	j->writer = NULL;
	jobs_handles_gone(j);
}

void jobs__close_check(struct jobs *j)
{
	if (!j->closing || j->handles_closing || j->nworkers || j->nsubmits ||
	    j->nhealth || j->nscancels || j->creating || history__busy(j))
		return;
	j->handles_closing = true;
	j->closing_handles = 4;
	uv_close((uv_handle_t *)&j->tick, jobs_tick_closed);
	uv_close((uv_handle_t *)&j->calib_timer, jobs_tick_closed);
	children_close(&j->children, jobs_children_closed);
	/* Last: the writes of the jobs that ended are drained first. */
	writer_close(j->writer, jobs_writer_closed, j);
}

void jobs_close(struct jobs *j, void (*done)(void *ctx), void *ctx)
{
	int s;

	if (j->closing)
		return;
	j->closing = true;
	j->done = done;
	j->done_ctx = ctx;
	uv_timer_stop(&j->tick);
	calib__stop(j);
	history__stop(j);
	submit__close_all(j);
	for (s = 0; s < j->nslots; s++) {
		if (j->slots[s].state == SLOT_RUNNING)
			worker__stop(j->slots[s].w, WORKER_STOP_SHUTDOWN);
		else if (j->slots[s].state == SLOT_CHECKING)
			health__stop(j->slots[s].check);
	}
	jobs__close_check(j);
}

