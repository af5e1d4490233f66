/* Jobs: the replies about jobs (jobs.h): a job's stored lines, show, status
 * and list. All run on the loop; none changes a job. */
#include "daemon/jobs.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/xalloc.h"
#include "compile/rtc.h"
#include "daemon/jobs_internal.h"
#include "proto/fleet.h"
#include "proto/remote.h"
#include "proto/line.h"

/* The state a job is reported in (show, watch, list): a finished job reads
 * as it was (running, or queued) until its lines, its verdict line last,
 * are written, so that no one is told it is done before its verdict can be
 * read and has been relayed. */
static enum job_state reported_state(const struct job *job)
{
	/* Its worker runs, but Slurm has not started it: it waits in a
	 * queue, Slurm's, whose reason its "slurm" member says. */
	if (remote__pending(job))
		return JOB_QUEUED;
	if (job->state >= JOB_DONE && job->logged_seq < job->next_seq)
		return job->started[0] ? JOB_RUNNING : JOB_QUEUED;
	return job->state;
}

/* A cursor over a job's stored lines (jobs.h): the store's cursor, and what
 * a read of the lines keeps between its steps. */
struct jobs_cursor {
	struct store_cursor *sc;
	char id[JOB_ID_MAX];
	long after_seq;
	long stop_seq;     /* a snapshot's end: lines from it on are not its */
	long last_seq;     /* the last line handed out's */
	long index;        /* records read: a line without a seq counts by it */
	enum jobs_read_how how;
	enum job_state state; /* as last reported */
	/* One read's. */
	long bound;        /* lines from this seq on are not handed out now */
	long count;
	bool stopped;      /* at a line not handed out: the reader is done */
	jobs_each_cb fn;
	void *ctx;
};

static int cursor_one(void *ctx, const char *text, size_t len)
{
	struct jobs_cursor *c = ctx;
	struct jobs_record rec = { text, len, line_tail_seq(text, len), NULL };
	bool stop = false;

	/* Every line quald writes ends with its seq; one that does not (an
	 * older quald's) is parsed for it, and left out when it is no JSON
	 * object. Without a seq at all a line counts by its place. */
	if (rec.seq < 0) {
		if (line_parse(text, len, &rec.line) < 0) {
			c->index++;
			return STORE_CURSOR_NEXT;
		}
		rec.seq = rec.line->seq >= 0 ? rec.line->seq : c->index;
	}
	/* Every line of a job is in its log in seq order; a line whose write
	 * has not been called back yet is not handed out (it is relayed
	 * once it is), and the next read reads it again. Seqs have no gaps
	 * unless records were lost (recover.c), so the line's own seq counts,
	 * not its place. */
	if (rec.seq >= c->bound) {
		line_unref(rec.line);
		c->stopped = true;
		return STORE_CURSOR_AGAIN;
	}
	c->index++;
	if (rec.seq > c->after_seq) {
		if (c->how == JOBS_READ_PARSED && !rec.line &&
		    line_parse(text, len, &rec.line) < 0)
			return STORE_CURSOR_NEXT;
		c->count++;
		c->last_seq = rec.seq;
		if (c->fn)
			stop = c->fn(c->ctx, &rec);
	}
	line_unref(rec.line);
	return stop ? STORE_CURSOR_STOP : STORE_CURSOR_NEXT;
}

int jobs_cursor_next(struct jobs *j, struct jobs_cursor *c, size_t max_bytes,
		     jobs_each_cb fn, void *ctx, bool *done, enum job_state *state,
		     struct qual_msg *msg)
{
	struct job *job = jobs__job_find(j, c->id);
	bool at_end = false;
	int rc;

	/* The state first, then the bound: both from the same moment, so a
	 * job reported ended has its verdict line below the bound. A job
	 * pruned meanwhile had ended: its log is read to its end. */
	if (job)
		c->state = reported_state(job);
	c->bound = job ? job->logged_seq : LONG_MAX;
	if (c->stop_seq < c->bound)
		c->bound = c->stop_seq;
	c->count = 0;
	c->stopped = false;
	c->fn = fn;
	c->ctx = ctx;
	rc = store_cursor_read(c->sc, cursor_one, c, max_bytes, &at_end, msg);
	if (state)
		*state = c->state;
	*done = c->stopped || at_end;
	return rc < 0 ? rc : (int)c->count;
}

int jobs_cursor_open(struct jobs *j, const char *id, long after_seq,
		     enum jobs_read_how how, bool snapshot, struct jobs_cursor **out,
		     long *lines, enum job_state *state, struct qual_msg *msg)
{
	struct job *job = jobs__job_find(j, id);
	struct jobs_cursor *c;
	int rc;

	*out = NULL;
	if (state)
		*state = JOB_STATE_UNKNOWN;
	if (!job)
		return qual_fail(msg, QUAL_ENOENT, "no job '%s'", id);
	c = xcalloc(1, sizeof *c);
	snprintf(c->id, sizeof c->id, "%s", job->id);
	c->after_seq = after_seq;
	c->last_seq = after_seq;
	c->how = how;
	c->state = reported_state(job);
	c->stop_seq = snapshot ? job->logged_seq : LONG_MAX;
	if ((rc = store_cursor_open(j->store, job->id, &c->sc, msg)) < 0) {
		free(c);
		return rc;
	}
	/* A resume point: the lines before it are passed over unread. */
	store_cursor_skip_to(c->sc, after_seq);
	if (state)
		*state = c->state;
	if (lines && job->damaged) {
		/* Records were lost: only a read can count what is left. One
		 * read serves every show until a line is added. A log that
		 * start-up has not checked yet is not read here (a whole read
		 * on the loop, the moment quald has just started): it is
		 * counted as written, and should the check find records lost
		 * in it, the show that meets them is ended (fanout.c). */
		if (after_seq < 0 && job->counted_at == job->logged_seq) {
			*lines = job->counted_lines;
		} else {
			if ((rc = jobs_read_log(j, id, after_seq, JOBS_READ_BYTES, NULL, NULL,
						NULL, msg)) < 0) {
				jobs_cursor_free(c);
				return rc;
			}
			*lines = rc;
			if (after_seq < 0) {
				job->counted_lines = rc;
				job->counted_at = job->logged_seq;
			}
		}
	} else if (lines) {
		long first = after_seq < 0 ? 0 : after_seq < LONG_MAX ? after_seq + 1 : LONG_MAX;

		*lines = c->stop_seq > first ? c->stop_seq - first : 0;
	}
	*out = c;
	return 0;
}

long jobs_cursor_seq(const struct jobs_cursor *c)
{
	return c->last_seq;
}

void jobs_cursor_free(struct jobs_cursor *c)
{
	if (!c)
		return;
	store_cursor_free(c->sc);
	free(c);
}

int jobs_read_log(struct jobs *j, const char *id, long after_seq,
		  enum jobs_read_how how, jobs_each_cb fn, void *ctx,
		  enum job_state *state, struct qual_msg *msg)
{
	struct jobs_cursor *c;
	bool done = false;
	int count;
	int rc;

	if ((rc = jobs_cursor_open(j, id, after_seq, how, false, &c, NULL, state, msg)) < 0)
		return rc;
	/* One read to the end of what is written, or to where a reader that
	 * pauses (fn true) stops it. */
	rc = jobs_cursor_next(j, c, SIZE_MAX / 8, fn, ctx, &done, NULL, msg);
	count = rc;
	jobs_cursor_free(c);
	return rc < 0 ? rc : count;
}

/* The request's settings a person looks for in show and list that no line
 * of the engine's holds: what the start line cannot say before it comes.
 * Members only when set, so that replies keep their shape otherwise. */
static void job_settings_into(const struct job *job, json_t *o)
{
	/* What the job is: only a calibration says so, so that a
	 * qualification's replies keep their shape. */
	if (job->args.calibrate) {
		json_object_set_new(o, "kind", json_string("calibration"));
		json_object_set_new(o, "runs", json_integer(job->args.calibrate));
		if (job->args.has_slot)
			json_object_set_new(o, "slot", json_integer(job->args.slot));
	}
	if (job->args.settings.fixtures)
		json_object_set_new(o, "fixtures", request_list_json(job->args.settings.fixtures));
	/* The Slurm backend's: its GPU type, and its Slurm job as the bridge
	 * last said (id, state, reason, node). */
	if (job->args.gpu_type)
		json_object_set_new(o, FLEET_GPU_TYPE_KEY, json_string(job->args.gpu_type));
	if (job->args.submission)
		json_object_set_new(o, FLEET_SUBMISSION_KEY, json_string(job->args.submission));
	if (job->remote)
		json_object_set_new(o, REMOTE_JSON_KEY, remote__json(job));
}

static json_t *labels_json(const struct job *job)
{
	return job->args.labels ? json_deep_copy(job->args.labels) : json_object();
}

/* What tells two jobs of a series apart besides their labels (list's
 * "settings"): pairs and compile_only always; cases, each arm's extra
 * options, the number of fixture directories, the mode, max_pairs and the
 * seed only when given (docs/protocol.md). */
static json_t *settings_json(const struct job *job)
{
	const struct submit_args *a = &job->args;
	json_t *o = json_pack("{s:i,s:b}", "pairs", a->settings.pairs, "compile_only", a->settings.compile_only);
	size_t nfix = 0;

	if (a->settings.cases)
		json_object_set_new(o, "cases", request_list_json(a->settings.cases));
	if (a->settings.baseline_options)
		json_object_set_new(o, "baseline_options", request_list_json(a->settings.baseline_options));
	if (a->settings.candidate_options)
		json_object_set_new(o, "candidate_options", request_list_json(a->settings.candidate_options));
	for (char **p = a->settings.fixtures; p && *p; p++)
		nfix++;
	if (nfix)
		json_object_set_new(o, "fixtures", json_integer((json_int_t)nfix));
	if (a->settings.mode != RTC_MODE_DEFAULT)
		json_object_set_new(o, "mode", json_string(rtc_mode_name(a->settings.mode)));
	if (a->settings.max_pairs)
		json_object_set_new(o, "max_pairs", json_integer(a->settings.max_pairs));
	if (a->settings.seed)
		json_object_set_new(o, "seed", json_integer(a->settings.seed));
	return o;
}

json_t *jobs_show_json(struct jobs *j, const char *id)
{
	struct job *job = jobs__job_find(j, id);
	json_t *o;

	if (!job)
		return NULL;
	o = json_object();
	job_settings_into(job, o);
	json_object_set_new(o, "labels", labels_json(job));
	return o;
}

bool jobs_log_complete(struct jobs *j, const char *id)
{
	struct job *job = jobs__job_find(j, id);

	return job && jobs__ended(job);
}

bool jobs_gone(struct jobs *j, const char *id)
{
	long num = store_id_parse(id);

	return num > 0 && j->njobs > 0 && num < j->all[j->njobs - 1]->num && !jobs__job_find(j, id);
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

long jobs_writes_pending(const struct jobs *j)
{
	return j->writer ? writer_pending(j->writer) : 0;
}

json_t *jobs_status_json(struct jobs *j)
{
	json_t *slots = json_array(), *queued = json_array(), *running = json_array();
	struct list_link *q;
	json_t *reply;
	int s, in_service = 0;

	for (s = 0; s < j->nslots; s++) {
		const struct slot *sl = &j->slots[s];
		struct job *job = sl->state == SLOT_RUNNING ? worker__job(sl->w) : NULL;
		json_t *o = json_pack("{s:i,s:o,s:o}", "slot", s,
			"device", j->remote ? remote__device_json(job) :
			sl->device >= 0 ? json_integer(sl->device) : json_null(),
			"job", job ? json_string(job->id) : json_null());
		/* Only for a slot out of service or being checked: the usual
		 * reply keeps its shape. */
		if (sl->state == SLOT_OUT)
			json_object_set_new(o, "out_of_service", json_string(sl->out_reason));
		else
			in_service++;
		if (sl->state == SLOT_CHECKING)
			json_object_set_new(o, "health_check", json_true());
		if (job && job->remote)
			json_object_set_new(o, REMOTE_JSON_KEY, remote__json(job));
		json_array_append_new(slots, o);
		if (job)
			json_array_append_new(remote__pending(job) ? queued : running,
					      json_string(job->id));
	}
	list_each(q, &j->queue)
		json_array_append_new(queued, json_string(list_item(q, struct job, qlink)->id));
	reply = json_pack("{s:o,s:o,s:o}", "slots", slots, vocab_state_name(JOB_QUEUED), queued,
			  vocab_state_name(JOB_RUNNING), running);
	/* Only for the Slurm backend: the usual reply keeps its shape. */
	if (j->remote)
		json_object_set_new(reply, "backend", json_string("slurm"));
	if (!in_service && !list_empty(&j->queue))
		json_object_set_new(reply, "waiting", json_string(
			"no slot is in service (every gpu failed its health check): "
			"queued jobs wait until quald restarts"));
	return reply;
}

/* One job's list entry (new reference). */
static json_t *list_entry(struct job *job)
{
	json_t *o = json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:o}",
		"job", job->id, "state", vocab_state_name(reported_state(job)),
		"verdict", reported_state(job) == job->state ?
			   jobs__str_or_null(vocab_verdict_name(job->verdict)) :
			   json_null(),
		"submitted", jobs__str_or_null(job->submitted),
		"finished", jobs__str_or_null(job->finished),
		"baseline", jobs__str_or_null(job->args.baseline),
		"candidate", jobs__str_or_null(job->args.candidate));

	job_settings_into(job, o);
	json_object_set_new(o, "labels", labels_json(job));
	json_object_set_new(o, "settings", settings_json(job));
	/* Only for a job whose stored log lost records (recover.c). */
	if (job->damaged)
		json_object_set_new(o, "damaged", json_true());
	return o;
}

void jobs__overall_into(struct jobs *j, json_t *entries)
{
	json_t *want = json_object(), *e, *v;
	const char *s;
	size_t i;

	json_array_foreach(entries, i, e)
		if ((s = json_string_value(json_object_get(e, FLEET_SUBMISSION_KEY))))
			json_object_set_new(want, s, json_integer(RUN_NEUTRAL));
	for (int k = 0; json_object_size(want) && k < j->njobs; k++) {
		const struct job *job = j->all[k];

		if (job->args.submission && (v = json_object_get(want, job->args.submission)))
			json_integer_set(v, fleet_overall((int)json_integer_value(v),
				vocab_state_ended(reported_state(job)) ? job->verdict :
				RUN_VERDICT_UNKNOWN));
	}
	json_array_foreach(entries, i, e)
		if ((s = json_string_value(json_object_get(e, FLEET_SUBMISSION_KEY))))
			json_object_set_new(e, FLEET_OVERALL_KEY, jobs__str_or_null(vocab_verdict_name(
				(enum run_verdict)json_integer_value(json_object_get(want, s)))));
	json_decref(want);
}

json_t *jobs_list_json(struct jobs *j, int limit, const char *before, size_t max_bytes)
{
	json_t *list = json_array(), *reply;
	long below = LONG_MAX;
	size_t bytes = 0;
	int i;

	if (before && (below = store_id_parse(before)) < 0) {
		json_decref(list);
		return NULL;
	}
	for (i = j->njobs - 1; i >= 0 && j->all[i]->num >= below; i--)
		;
	for (; i >= 0 && (int)json_array_size(list) < limit; i--) {
		json_t *o = list_entry(j->all[i]);

		if (max_bytes) {
			size_t len = json_dumpb(o, NULL, 0, JSON_COMPACT) + 1;

			if (json_array_size(list) && bytes + len > max_bytes) {
				json_decref(o);
				break;
			}
			bytes += len;
		}
		json_array_append_new(list, o);
	}
	jobs__overall_into(j, list);
	reply = json_pack("{s:o}", "jobs", list);
	if (i >= 0 && (int)json_array_size(list) < limit)
		json_object_set_new(reply, "next", json_string(j->all[i + 1]->id));
	return reply;
}
