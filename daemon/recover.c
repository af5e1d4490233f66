/* Recovery at start (jobs_internal.h): the state directory read back into
 * the job table. Queued jobs are queued again; a job that was running gets
 * an "interrupted" verdict line and state; a job whose verdict line was
 * synced before its state was replaced gets the state its verdict says; a
 * log's torn tail is cut off (store_log_repair), with a warning.
 *
 * Records in the middle of a log that do not check out are skipped on every
 * read (store.h: the bytes stay, as evidence); the records after them are
 * kept. Such a job is damaged: its state says so ("damaged": true, and list
 * shows it), and an error line (code internal) at the end of its log says
 * how many records were lost and at which bytes. A finished job whose log
 * no longer ends with a verdict line (its verdict record was lost, in the
 * middle or in a torn tail) gets a daemon-written error verdict saying so,
 * so that no job is left without one. Nothing is relayed: no one is
 * listening yet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "daemon/jobs_internal.h"

struct last_line {
	char *text;
	bool verdict;   /* a verdict line was among the lines */
};

static int keep_last(void *ctx, const char *line, size_t len)
{
	struct last_line *l = ctx;

	/* The cheap test first: most lines are not verdicts. */
	if (!l->verdict && memmem(line, len, "\"verdict\"", 9)) {
		json_t *o = json_loadb(line, len, 0, NULL);
		const char *type = json_string_value(json_object_get(o, "type"));

		l->verdict = type && !strcmp(type, "verdict");
		json_decref(o);
	}
	free(l->text);
	l->text = xmalloc(len + 1);
	memcpy(l->text, line, len + 1);
	return 0;
}

static void copy_field(json_t *o, const char *key, char *out, size_t cap)
{
	const char *v = json_string_value(json_object_get(o, key));

	snprintf(out, cap, "%s", v ? v : "");
}

/* Fills job from its state.json. Returns 0 or QUAL_EINVAL with msg. */
static int state_take(struct job *job, json_t *state, struct qual_msg *msg)
{
	json_t *v;
	int st = jobs__state_parse(json_string_value(json_object_get(state, "state")));

	if (st < 0)
		return qual_fail(msg, QUAL_EINVAL, "unknown state in its state.json");
	job->state = (enum job_state)st;
	copy_field(state, "verdict", job->verdict, sizeof job->verdict);
	copy_field(state, "submitted", job->submitted, sizeof job->submitted);
	copy_field(state, "started", job->started, sizeof job->started);
	copy_field(state, "finished", job->finished, sizeof job->finished);
	if (json_is_integer(v = json_object_get(state, "slot")))
		job->slot = (int)json_integer_value(v);
	if (json_is_integer(v = json_object_get(state, "device")))
		job->device = (int)json_integer_value(v);
	return 0;
}

/* Settles what a stop left open, from the log's last line (NULL: none);
 * lost describes records lost from the middle of the log (NULL: none). */
static void job_settle(struct jobs *j, struct job *job, json_t *last,
		       bool has_verdict, const char *lost)
{
	struct lines_info info;
	char message[1024];

	lines_classify(last, &info);
	if (lost) {
		job->damaged = true;
		jobs__put_error(j, job, LINES_CODE_INTERNAL, lost, false);
	}
	if ((job->state == JOB_QUEUED || job->state == JOB_RUNNING) &&
	    info.type == LINES_VERDICT) {
		/* The verdict line was synced before the state was replaced: the
		 * job ended, the state file just did not say so yet. */
		snprintf(job->verdict, sizeof job->verdict, "%s",
			 info.verdict ? info.verdict : "error");
		job->state = !strcmp(job->verdict, "cancelled") ? JOB_CANCELLED :
			     !strcmp(job->verdict, "interrupted") ? JOB_INTERRUPTED :
			     JOB_DONE;
		if (!job->finished[0])
			jobs__now(job->finished);
		jobs__state_save(j, job);
	} else if (job->state == JOB_RUNNING) {
		jobs__end_here(j, job, JOB_INTERRUPTED, "interrupted",
			       "the daemon stopped while this job ran", false);
	} else if (job->state != JOB_QUEUED && !has_verdict) {
		/* Finished, but its verdict line is gone: one from the daemon
		 * says so, keeping the state it finished in. */
		snprintf(message, sizeof message, "the verdict record of this job was "
			 "lost from its stored log (its state said '%s')",
			 job->verdict[0] ? job->verdict : "none");
		job->damaged = true;
		oplog_warn("job '%s': %s: an error verdict takes its place", job->id,
			   message);
		jobs__put_verdict(j, job, "error", message, false);
		jobs__log_close(j, job);
		jobs__state_save(j, job);
	} else if (job->damaged) {
		jobs__log_close(j, job);
		jobs__state_save(j, job);
	}
}

/* Loads one job from the state directory and settles it. Returns the job,
 * or NULL (with a warning) when its files are unreadable. */
static struct job *job_recover(struct jobs *j, long num)
{
	struct job *job = jobs__job_new(num);
	struct store_log_info info;
	struct last_line last = { NULL, false };
	json_t *request = NULL, *state = NULL, *lastj = NULL;
	char lost[512];
	struct qual_msg m;

	if (store_job_read(j->store, job->id, &request, &state, &m) < 0 ||
	    request_submit_from_json(request, &job->args, &m) < 0 ||
	    state_take(job, state, &m) < 0 ||
	    store_log_read(j->store, job->id, keep_last, &last, &info, &m) < 0) {
		oplog_warn("skipping job '%s' in the state directory: %s", job->id, m.text);
		jobs__job_free(job);
		job = NULL;
		goto out;
	}
	if (info.torn_bytes) {
		oplog_warn("job '%s': its log ends with an incomplete line of %lld bytes, "
			   "cut off", job->id, (long long)info.torn_bytes);
		if (store_log_repair(j->store, job->id, &info, &m) < 0)
			oplog_warn("job '%s': %s", job->id, m.text);
		/* Its last line may be the repair's note now. */
		free(last.text);
		last = (struct last_line){ NULL, false };
		if (store_log_read(j->store, job->id, keep_last, &last, &info, &m) < 0)
			oplog_warn("job '%s': %s", job->id, m.text);
	}
	/* Records lost before the last one leave a gap in the seqs: the next
	 * seq follows the last line's. */
	job->next_seq = last.text ? jobs__line_seq(last.text, strlen(last.text),
						   info.lines - 1) + 1 : info.lines;
	if (job->next_seq < info.lines)
		job->next_seq = info.lines;
	job->logged_seq = job->next_seq;
	if (info.lost)
		snprintf(lost, sizeof lost, "stored log lost %ld record%s (%lld bytes) "
			 "that did not check out, skipped: %s", info.lost,
			 info.lost == 1 ? "" : "s", (long long)info.lost_bytes,
			 info.lost_where);
	if (json_is_true(json_object_get(state, "damaged")))
		job->damaged = true;
	if (last.text)
		lastj = json_loads(last.text, 0, NULL);
	job_settle(j, job, lastj, last.verdict, info.lost && !job->damaged ? lost : NULL);
out:
	free(last.text);
	json_decref(lastj);
	json_decref(request);
	json_decref(state);
	return job;
}

int recover__jobs(struct jobs *j, struct qual_msg *msg)
{
	long *nums = NULL;
	int n = 0, i, rc;

	if ((rc = store_scan(j->store, &nums, &n, msg)))
		return rc;
	j->next_num = n ? nums[n - 1] + 1 : 1;
	for (i = 0; i < n; i++) {
		struct job *job = job_recover(j, nums[i]);
		if (job)
			jobs__job_add(j, job);
	}
	free(nums);
	return 0;
}
