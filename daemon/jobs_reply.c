/* Jobs: the replies about jobs (jobs.h): a job's stored lines, show, status
 * and list. All run on the loop; none changes a job. */
#include "daemon/jobs.h"

#include <stdlib.h>

#include "common/xalloc.h"
#include "compile/rtc.h"
#include "daemon/jobs_internal.h"
#include "proto/line.h"

/* The state a job is reported in (show, watch, list): a finished job reads
 * as it was (running, or queued) until its lines, its verdict line last,
 * are written, so that no one is told it is done before its verdict can be
 * read and has been relayed. */
static enum job_state reported_state(const struct job *job)
{
	if (job->state >= JOB_DONE && job->logged_seq < job->next_seq)
		return job->started[0] ? JOB_RUNNING : JOB_QUEUED;
	return job->state;
}

struct read_ctx {
	long after_seq;
	long logged_seq;
	long index;
	long count;
	enum jobs_read_how how;
	jobs_each_cb fn;
	void *ctx;
};

static int read_one(void *ctx, const char *text, size_t len)
{
	struct read_ctx *r = ctx;
	struct jobs_record rec = { text, len, line_tail_seq(text, len), NULL };
	bool stop = false;

	/* Every line quald writes ends with its seq; one that does not (an
	 * older quald's) is parsed for it, and left out when it is no JSON
	 * object. Without a seq at all a line counts by its place. */
	if (rec.seq < 0) {
		if (line_parse(text, len, &rec.line) < 0) {
			r->index++;
			return 0;
		}
		rec.seq = rec.line->seq >= 0 ? rec.line->seq : r->index;
	}
	/* Every line of a job is in its log in seq order; a line whose write
	 * has not been called back yet is not handed out (it is relayed
	 * once it is). Seqs have no gaps unless records were lost (recover.c),
	 * so the line's own seq counts, not its place. */
	r->index++;
	if (rec.seq >= r->logged_seq) {
		line_unref(rec.line);
		return 1;
	}
	if (rec.seq > r->after_seq) {
		if (r->how == JOBS_READ_PARSED && !rec.line &&
		    line_parse(text, len, &rec.line) < 0)
			return 0;
		r->count++;
		if (r->fn)
			stop = r->fn(r->ctx, &rec);
	}
	line_unref(rec.line);
	return stop;
}

int jobs_read_log(struct jobs *j, const char *id, long after_seq,
		  enum jobs_read_how how, jobs_each_cb fn, void *ctx,
		  enum job_state *state, struct qual_msg *msg)
{
	struct job *job = jobs__job_find(j, id);
	struct read_ctx r = { after_seq, 0, 0, 0, how, fn, ctx };
	int rc;

	if (state)
		*state = JOB_STATE_UNKNOWN;
	if (!job)
		return qual_fail(msg, QUAL_ENOENT, "no job '%s'", id);
	if (state)
		*state = reported_state(job);
	r.logged_seq = job->logged_seq;
	if ((rc = store_log_read(j->store, job->id, read_one, &r, NULL, msg)) < 0)
		return rc;
	return (int)r.count;
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
			"device", sl->device >= 0 ? json_integer(sl->device) : json_null(),
			"job", job ? json_string(job->id) : json_null());
		/* Only for a slot out of service or being checked: the usual
		 * reply keeps its shape. */
		if (sl->state == SLOT_OUT)
			json_object_set_new(o, "out_of_service", json_string(sl->out_reason));
		else
			in_service++;
		if (sl->state == SLOT_CHECKING)
			json_object_set_new(o, "health_check", json_true());
		json_array_append_new(slots, o);
		if (job)
			json_array_append_new(running, json_string(job->id));
	}
	list_each(q, &j->queue)
		json_array_append_new(queued, json_string(list_item(q, struct job, qlink)->id));
	reply = json_pack("{s:o,s:o,s:o}", "slots", slots, vocab_state_name(JOB_QUEUED), queued,
			  vocab_state_name(JOB_RUNNING), running);
	if (!in_service && !list_empty(&j->queue))
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
		json_array_append_new(list, o);
	}
	return json_pack("{s:o}", "jobs", list);
}

