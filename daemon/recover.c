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
 * how many records were lost and at which bytes, once: a note already in
 * the log (a start that died before the state said "damaged") is not
 * written again. A job that was running or queued and whose log holds a
 * verdict line anywhere (not only as its last line: the note may follow
 * it) ended with that verdict. A finished job whose log holds no verdict
 * line (its verdict record was lost, in the middle or in a torn tail) gets
 * a daemon-written error verdict saying so, so that no job is left without
 * one, and never a second one.
 *
 * A queued job stored by a quald before pinned libraries (request.json
 * without baseline_sha256 and candidate_sha256) is never run: its worker
 * would resolve the paths again, which is what pins prevent (docs/quald.md,
 * "Pinned libraries"). It ends with a daemon-written error. Nothing is
 * relayed: no one is listening yet.
 *
 * Start-up reads whole only the logs that may need settling: a finished job
 * (its state says done, cancelled or interrupted) whose log ends with a
 * whole, checked verdict record (or, once marked damaged, with the note
 * after it) has nothing to settle but records lost in the middle. Its log's
 * last record alone is read (store_log_last) before quald listens; the rest
 * is checked off the loop afterwards (history.c), and recover__checked
 * marks it damaged then, with the same note. Every read of a log checks
 * each record it hands out, so such a log is never served unchecked
 * meanwhile: only the "damaged" mark (list, state.json) and the note come
 * later. Every other job (queued, running, a torn or unchecked tail, a
 * missing verdict) is read whole and settled before quald listens: at most
 * the queue and the slots' jobs, and the rare damaged one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "daemon/jobs_internal.h"
#include "proto/line.h"
#include "proto/vocab.h"

/* The start of the note recovery writes for records lost in the middle. */
#define LOST_NOTE_PREFIX "stored log lost "

/* Why a queued job of an older quald is not run (its error and verdict). */
#define RECOVER_UNPINNED "stored without pinned libraries by an older quald: " \
	"submit it again"

static bool lost_note(const struct line *o, const char **message);

struct last_line {
	char *text;
	json_t *verdict; /* the first verdict line, or NULL */
	char *note;      /* the message of the last lost-records note, or NULL */
};

static void last_line_release(struct last_line *l)
{
	free(l->text);
	json_decref(l->verdict);
	free(l->note);
	*l = (struct last_line){ NULL, NULL, NULL };
}

static int keep_last(void *ctx, const char *line, size_t len)
{
	struct last_line *l = ctx;

	/* Only the lines that may be a verdict or a note are parsed (once,
	 * here): a start-up reads every stored job's log, mostly pair lines. */
	if ((!l->verdict && memmem(line, len, "\"verdict\"", 9)) ||
	    memmem(line, len, LOST_NOTE_PREFIX, sizeof LOST_NOTE_PREFIX - 1)) {
		struct line *o;
		const char *message;

		if (line_parse(line, len, &o) < 0)
			goto keep;
		if (!l->verdict && line_is_verdict(o)) {
			l->verdict = json_incref(o->obj);
		} else if (lost_note(o, &message)) {
			free(l->note);
			l->note = xstrdup(message);
		}
		line_unref(o);
	}
keep:
	free(l->text);
	l->text = xmalloc(len + 1);
	memcpy(l->text, line, len + 1);
	return 0;
}

/* The seq of the log's last line (parsed once, here), or fallback when it
 * has none. */
static long last_seq(const struct last_line *l, long fallback)
{
	struct line *o;
	long seq = fallback;

	if (l->text && line_parse(l->text, strlen(l->text), &o) == 0) {
		if (o->seq >= 0)
			seq = o->seq;
		line_unref(o);
	}
	return seq;
}

static void copy_field(json_t *o, const char *key, char *out, size_t cap)
{
	const char *v = json_string_value(json_object_get(o, key));

	snprintf(out, cap, "%s", v ? v : "");
}

/* Whether o is recovery's note of lost records; *message gets its text. */
static bool lost_note(const struct line *o, const char **message)
{
	*message = json_string_value(json_object_get(o->obj, "message"));
	return o->type == LINES_ERROR && o->code == LINES_CODE_INTERNAL && *message &&
	       !strncmp(*message, LOST_NOTE_PREFIX, sizeof LOST_NOTE_PREFIX - 1);
}

/* The note of the records info says were lost into out. */
static void lost_note_format(const struct store_log_info *info, char *out, size_t cap)
{
	snprintf(out, cap, "stored log lost %ld record%s (%lld bytes) that did not check "
		 "out, skipped: %s", info->lost, info->lost == 1 ? "" : "s",
		 (long long)info->lost_bytes, info->lost_where);
}

/* Fills job from its state.json. Returns 0 or QUAL_EINVAL with msg. */
static int state_take(struct job *job, json_t *state, struct qual_msg *msg)
{
	json_t *v;
	enum job_state st = vocab_state_parse(json_string_value(json_object_get(state,
										 "state")));

	if (st == JOB_STATE_UNKNOWN)
		return qual_fail(msg, QUAL_EINVAL, "unknown state in its state.json");
	job->state = st;
	job->verdict = vocab_verdict_parse(json_string_value(json_object_get(state, "verdict")));
	copy_field(state, "submitted", job->submitted, sizeof job->submitted);
	copy_field(state, "started", job->started, sizeof job->started);
	copy_field(state, "finished", job->finished, sizeof job->finished);
	if (json_is_integer(v = json_object_get(state, "slot")))
		job->slot = (int)json_integer_value(v);
	if (json_is_integer(v = json_object_get(state, "device")))
		job->device = (int)json_integer_value(v);
	remote__from_state(job, state);
	return 0;
}

/* True when the stored request pins both arms (request.h): a job stored
 * by a quald before pins has neither. */
static bool job_pinned(const struct job *job)
{
	return job->args.baseline_sha256 && job->args.candidate_sha256 &&
	       job->args.baseline_real && job->args.candidate_real;
}

/* Settles what a stop left open, from the log's first verdict line (NULL:
 * none); lost describes records lost from the middle of the log (NULL:
 * none, or its note is in the log already). */
static void job_settle(struct jobs *j, struct job *job, json_t *verdict, const char *lost)
{
	struct lines_info info;
	char message[1024];

	lines_classify(verdict, &info);
	if (lost) {
		job->damaged = true;
		jobs__put_error(j, job, LINES_CODE_INTERNAL, lost, false);
	}
	if ((job->state == JOB_QUEUED || job->state == JOB_RUNNING) &&
	    info.type == LINES_VERDICT) {
		/* The verdict line was synced before the state was replaced: the
		 * job ended, the state file just did not say so yet. */
		enum run_verdict v = vocab_verdict_parse(info.verdict);

		/* A stored verdict line passed lines_check(): its verdict is
		 * known. */
		job->verdict = v != RUN_VERDICT_UNKNOWN ? v : RUN_ERROR;
		job->state = v == RUN_CANCELLED ? JOB_CANCELLED :
			     v == RUN_INTERRUPTED ? JOB_INTERRUPTED : JOB_DONE;
		if (!job->finished[0])
			jobs__now(job->finished);
		jobs__state_save(j, job);
	} else if (job->state == JOB_RUNNING && !remote__recover(j, job)) {
		jobs__end_here(j, job, JOB_INTERRUPTED, RUN_INTERRUPTED,
			       "the daemon stopped while this job ran", false);
	} else if (job->state == JOB_QUEUED && !job_pinned(job)) {
		/* Its worker would resolve the paths again: never run it. */
		oplog_warn("job '%s': %s: ended with an error", job->id, RECOVER_UNPINNED);
		jobs__put_error(j, job, LINES_CODE_USAGE, RECOVER_UNPINNED, false);
		jobs__end_here(j, job, JOB_DONE, RUN_ERROR, RECOVER_UNPINNED, false);
	} else if (job->state != JOB_QUEUED && info.type != LINES_VERDICT) {
		/* Finished, but its verdict line is gone: one from the daemon
		 * says so, keeping the state it finished in. */
		snprintf(message, sizeof message, "the verdict record of this job was "
			 "lost from its stored log (its state said '%s')",
			 vocab_verdict_name(job->verdict) ? vocab_verdict_name(job->verdict) :
			 "none");
		job->damaged = true;
		oplog_warn("job '%s': %s: an error verdict takes its place", job->id,
			   message);
		jobs__put_verdict(j, job, RUN_ERROR, message, false);
		jobs__log_close(j, job);
		jobs__state_save(j, job);
	} else if (job->damaged) {
		jobs__log_close(j, job);
		jobs__state_save(j, job);
	}
}

/* Whether job (its state read, finished) needs no settling before quald
 * listens: its log ends with a whole, checked verdict record, or, once
 * marked damaged, with the lost-records note after it (see the top). Its
 * seqs then follow the last record's, and the rest of its log is checked
 * off the loop (job->unchecked). */
static bool job_settled(struct jobs *j, struct job *job)
{
	struct line *o = NULL;
	const char *message;
	struct qual_msg m;
	bool settled = false;
	size_t len;
	char *text;

	if (!vocab_state_ended(job->state) ||
	    store_log_last(j->store, job->id, &text, &len, &m) < 0)
		return false;
	if (line_parse(text, len, &o) == 0 && o->seq >= 0 &&
	    (line_is_verdict(o) || (job->damaged && lost_note(o, &message)))) {
		job->next_seq = job->logged_seq = o->seq + 1;
		job->unchecked = true;
		settled = true;
	}
	line_unref(o);
	free(text);
	return settled;
}

/* An ended job's summary.json into job->summary; none (a store older than
 * summaries, a crash before it was written) or an unreadable one leaves it
 * NULL: history.c rebuilds it from the log off the loop. */
static void summary_load(struct jobs *j, struct job *job)
{
	struct qual_msg m;
	int rc = store_summary_read(j->store, job->id, &job->summary, &m);

	if (rc < 0 && rc != QUAL_ENOENT)
		oplog_warn("job '%s': %s: its summary is made again from its log", job->id,
			   m.text);
}

void recover__checked(struct jobs *j, struct job *job, const struct store_log_info *info)
{
	char lost[512];

	if (!info->lost || job->damaged)
		return;
	lost_note_format(info, lost, sizeof lost);
	oplog_warn("job '%s': marked damaged: %s", job->id, lost);
	job->damaged = true;
	jobs__put_error(j, job, LINES_CODE_INTERNAL, lost, false);
	jobs__log_close(j, job);
	jobs__state_save(j, job);
}

/* Loads one job from the state directory and settles it. Returns the job,
 * or NULL (with a warning) when its files are unreadable. */
static struct job *job_recover(struct jobs *j, long num)
{
	struct job *job = jobs__job_new(num);
	struct store_log_info info;
	struct last_line last = { NULL, NULL, NULL };
	json_t *request = NULL, *state = NULL;
	char lost[512];
	struct qual_msg m;
	bool note;

	if (store_job_read(j->store, job->id, &request, &state, &m) < 0 ||
	    request_submit_from_json(request, &job->args, &m) < 0 ||
	    state_take(job, state, &m) < 0) {
		oplog_warn("skipping job '%s' in the state directory: %s", job->id, m.text);
		goto skip;
	}
	if (json_is_true(json_object_get(state, "damaged")))
		job->damaged = true;
	/* A queued job that was to follow its Slurm job again does so only
	 * in the Slurm backend; a local quald runs it from its start, checked
	 * as any queued job is. */
	if (!j->remote)
		job->attach = false;
	if (job_settled(j, job))
		goto out;
	if (store_log_read(j->store, job->id, keep_last, &last, &info, &m) < 0) {
		oplog_warn("skipping job '%s' in the state directory: %s", job->id, m.text);
		goto skip;
	}
	/* A Slurm job's lines that quald had taken when it stopped or died,
	 * from the lines stored before recovery adds any of its own. */
	remote__lines_stored(job, info.lines);
	if (info.torn_bytes) {
		oplog_warn("job '%s': its log ends with an incomplete line of %lld bytes, "
			   "cut off", job->id, (long long)info.torn_bytes);
		if (store_log_repair(j->store, job->id, &info, &m) < 0)
			oplog_warn("job '%s': %s", job->id, m.text);
		/* Its last line may be the repair's note now. */
		last_line_release(&last);
		if (store_log_read(j->store, job->id, keep_last, &last, &info, &m) < 0)
			oplog_warn("job '%s': %s", job->id, m.text);
	}
	/* Records lost before the last one leave a gap in the seqs: the next
	 * seq follows the last line's. */
	job->next_seq = last_seq(&last, info.lines - 1) + 1;
	if (job->next_seq < info.lines)
		job->next_seq = info.lines;
	job->logged_seq = job->next_seq;
	if (info.lost)
		lost_note_format(&info, lost, sizeof lost);
	/* The note once: not when the state says damaged already, nor when
	 * the log's last such note is this one (a start that died between
	 * writing it and saving the state; that state is saved now). */
	note = info.lost && !job->damaged && !(last.note && !strcmp(last.note, lost));
	if (info.lost)
		job->damaged = true;
	job_settle(j, job, last.verdict, note ? lost : NULL);
out:
	if (job && vocab_state_ended(job->state))
		summary_load(j, job);
	last_line_release(&last);
	json_decref(request);
	json_decref(state);
	return job;
skip:
	jobs__job_free(job);
	job = NULL;
	goto out;
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
