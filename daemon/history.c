/* History (jobs.h: jobs_history_json): the per-case results of ended jobs
 * as a time series, for `qualctl history` and `export` and the dashboard,
 * which polls it.
 *
 * A job's summary (its case verdicts, each with the medians of its pair
 * lines) is kept in memory and in its folder's summary.json (store.h). A
 * job that runs in this quald gathers it from its lines as they are
 * written (history__line), so it is ready when the verdict line is, and
 * summary.json is written then, through the writer. A job whose lines were
 * written before (a stored job, or one interrupted at start) has its
 * summary.json read at start (recover.c); when that is missing or
 * unreadable (a store older than summaries, a crash between the verdict and
 * the summary) the summary is rebuilt from its log off the loop, in libuv's
 * thread pool (the scan below), and written. The loop never reads a log for
 * a history: a job whose summary is not there yet is left out of the reply,
 * which then says so ("incomplete": true).
 *
 * The scan reads one log at a time: first the logs of ended jobs without a
 * summary, newest first (what a history asks for), then the finished logs
 * start-up did not check (recover.c: job->unchecked), whose damage it
 * settles (recover__checked). A log never changes after its verdict line
 * (but for that note), so a summary stays true. The one parse of a
 * case_verdict line into an entry is case_entry(). */
#include "daemon/jobs.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/lines.h"
#include "common/xalloc.h"
#include "daemon/jobs_internal.h"
#include "daemon/oplog.h"
#include "proto/fleet.h"
#include "proto/line.h"
#include "stats/stats.h"

bool jobs__ended(const struct job *job)
{
	return jobs__verdict(job) != RUN_VERDICT_UNKNOWN && job->logged_seq >= job->next_seq && !job->held;
}

/* The timings of one case's pair lines, ns per kernel. */
struct case_pairs {
	char *name;
	double *base, *cand;
	int n, cap;
};

/* What a job's lines gave: its cases' pair timings and case_verdict lines. */
struct history_gather {
	struct case_pairs *cases;
	int ncases, cap;
	json_t *verdicts;          /* the case_verdict lines, in order */
};

static struct history_gather *gather_new(void)
{
	struct history_gather *g = xcalloc(1, sizeof *g);

	g->verdicts = json_array();
	return g;
}

static void gather_free(struct history_gather *g)
{
	if (!g)
		return;
	for (int k = 0; k < g->ncases; k++) {
		free(g->cases[k].name);
		free(g->cases[k].base);
		free(g->cases[k].cand);
	}
	free(g->cases);
	json_decref(g->verdicts);
	free(g);
}

static struct case_pairs *pairs_of(struct history_gather *g, const char *name, bool add)
{
	for (int i = 0; i < g->ncases; i++)
		if (!strcmp(g->cases[i].name, name))
			return &g->cases[i];
	if (!add)
		return NULL;
	XGROW(g->cases, g->ncases + 1, g->cap);
	memset(&g->cases[g->ncases], 0, sizeof g->cases[0]);
	g->cases[g->ncases].name = xstrdup(name);
	return &g->cases[g->ncases++];
}

/* A timing, NaN when it is none (not a positive number): stats_median
 * leaves NaN out. */
static double number_or_nan(json_t *v)
{
	double x = json_is_number(v) ? json_number_value(v) : NAN;

	return x > 0 ? x : NAN;
}

static void gather_take(struct history_gather *g, const struct line *l)
{
	const char *name = l->info.case_name;

	if (l->type == LINES_PAIR && name) {
		struct case_pairs *p = pairs_of(g, name, true);

		if (p->n == p->cap) {
			XGROW(p->base, p->n + 1, p->cap);
			p->cand = xrealloc(p->cand, (size_t)p->cap * sizeof *p->cand);
		}
		p->base[p->n] = number_or_nan(json_object_get(l->obj, "baseline_ns"));
		p->cand[p->n] = number_or_nan(json_object_get(l->obj, "candidate_ns"));
		p->n++;
	} else if (l->type == LINES_CASE_VERDICT && name) {
		json_array_append(g->verdicts, l->obj);
	}
}

static json_t *number_or_null(json_t *v)
{
	return json_is_number(v) ? lines_real(json_number_value(v)) : json_null();
}

/* One case_verdict line (borrowed) as a history entry: its verdict, its
 * median ratio (ratio_median) and the interval (ratio_lo, ratio_hi), the
 * Holm-corrected p; baseline_ns and candidate_ns, the medians over the
 * case's pair lines (p, NULL when it had none: null), ns per kernel, every attempt's pairs; timed when it had pair
 * lines or a ratio. */
static json_t *case_entry(json_t *cv, struct case_pairs *p)
{
	json_t *ratio = json_object_get(cv, "ratio_median");
	bool timed = (p && p->n > 0) || json_is_number(ratio);

	return json_pack("{s:O?,s:O?,s:o,s:o,s:o,s:o,s:o,s:o,s:b}",
			 "case", json_object_get(cv, "case"),
			 "verdict", json_object_get(cv, "verdict"),
			 "ratio", number_or_null(ratio),
			 "ci_low", number_or_null(json_object_get(cv, "ratio_lo")),
			 "ci_high", number_or_null(json_object_get(cv, "ratio_hi")),
			 "p_holm", number_or_null(json_object_get(cv, "p_holm")),
			 "baseline_ns", p && p->n ? lines_real(stats_median(p->base, p->n)) :
			 json_null(),
			 "candidate_ns", p && p->n ? lines_real(stats_median(p->cand, p->n)) :
			 json_null(),
			 "timed", timed);
}

/* The case entries of what g gathered (a new array). */
static json_t *gather_cases(struct history_gather *g)
{
	json_t *cases = json_array(), *cv;
	size_t i;

	json_array_foreach(g->verdicts, i, cv) {
		const char *name = json_string_value(json_object_get(cv, "case"));

		json_array_append_new(cases, case_entry(cv, name ? pairs_of(g, name, false) :
							NULL));
	}
	return cases;
}

/* summary.json's write came back: a failure costs a read of the log at
 * the next start. */
static void summary_written(void *ctx, const struct writer_done *d)
{
	char *id = ctx;

	if (d->status < 0)
		oplog_warn("job '%s': cannot write its summary: %s (it is made again from "
			   "its log at the next start)", id, d->message);
	free(id);
}

/* job's summary becomes cases (taken), and is written to summary.json;
 * not once the writer is draining for the stop (writer.h: no new request
 * then): a job ended by the stop has its summary rebuilt at the next
 * start. */
static void summary_set(struct jobs *j, struct job *job, json_t *cases)
{
	char path[PATH_MAX];
	struct qual_msg m;
	json_t *o = json_pack("{s:O}", "cases", cases);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(job->summary);
	job->summary = cases;
	if (text && j->writer && !j->handles_closing &&
	    store_summary_path(j->store, job->id, path, sizeof path, &m) == 0)
		writer_file_replace(j->writer, path, text, strlen(text), 0640,
				    summary_written, xstrdup(job->id));
	free(text);
	json_decref(o);
}

/* ---- the scan: logs read off the loop ------------------------------------- */

struct history_scan {
	uv_work_t work;
	struct jobs *j;
	bool busy;                 /* a read is in flight */
	int stop;                  /* atomic: the loop is closing, stop reading */
	/* The read in flight: the thread's until it returns. */
	char id[JOB_ID_MAX];
	bool want_summary;
	struct history_gather *g;
	json_t *cases;             /* want_summary: what the read gave */
	struct store_log_info info;
	int rc;
	struct qual_msg msg;
	/* The finished logs start-up did not check. */
	long unchecked, checked;
	uint64_t started_ns;
};

static int scan_line(void *ctx, const char *text, size_t len)
{
	struct history_scan *sc = ctx;
	struct line *l;

	if (__atomic_load_n(&sc->stop, __ATOMIC_RELAXED))
		return 1;
	if (sc->g && line_parse(text, len, &l) == 0) {
		gather_take(sc->g, l);
		line_unref(l);
	}
	return 0;
}

/* In the thread pool: one whole read of the log, every record checked. */
static void scan_work(uv_work_t *w)
{
	struct history_scan *sc = w->data;

	sc->rc = store_log_read(sc->j->store, sc->id, scan_line, sc, &sc->info, &sc->msg);
	if (__atomic_load_n(&sc->stop, __ATOMIC_RELAXED))
		sc->rc = qual_fail(&sc->msg, QUAL_EINVAL, "quald is stopping");
	if (sc->rc >= 0 && sc->g)
		sc->cases = gather_cases(sc->g);
}

/* The next job whose log is to be read: the newest ended one without a
 * summary, else the oldest unchecked one. */
static struct job *scan_pick(struct jobs *j)
{
	for (int i = j->njobs - 1; i >= 0; i--) {
		struct job *job = j->all[i];

		if (!job->summary && !job->reading && !job->read_failed && jobs__ended(job))
			return job;
	}
	for (int i = 0; i < j->njobs; i++)
		if (j->all[i]->unchecked && !j->all[i]->reading)
			return j->all[i];
	return NULL;
}

static void scan_done(uv_work_t *w, int status);

static void scan_kick(struct jobs *j)
{
	struct history_scan *sc = j->scan;
	struct job *job;

	if (!sc || sc->busy || j->closing)
		return;
	job = scan_pick(j);
	if (!job) {
		/* None left unchecked (those pruned meanwhile are not counted). */
		if (sc->unchecked) {
			oplog(LOG_INFO, "checked the stored logs of %ld finished job%s off the "
			      "loop in %.1f s", sc->checked, sc->checked == 1 ? "" : "s",
			      (double)(uv_hrtime() - sc->started_ns) / 1e9);
			sc->unchecked = sc->checked = 0;
		}
		return;
	}
	snprintf(sc->id, sizeof sc->id, "%s", job->id);
	sc->want_summary = !job->summary;
	sc->g = sc->want_summary ? gather_new() : NULL;
	sc->cases = NULL;
	sc->rc = 0;
	job->reading = true;
	sc->busy = true;
	if (uv_queue_work(j->loop, &sc->work, scan_work, scan_done) < 0) {
		scan_work(&sc->work); /* only without a work callback: never */
		scan_done(&sc->work, 0);
	}
}

static void scan_done(uv_work_t *w, int status)
{
	struct history_scan *sc = w->data;
	struct jobs *j = sc->j;
	struct job *job = jobs__job_find(j, sc->id);

	(void)status;
	sc->busy = false;
	gather_free(sc->g);
	sc->g = NULL;
	/* A job pruned meanwhile is gone: what was read goes with it. */
	if (job && !j->closing) {
		job->reading = false;
		if (sc->rc < 0) {
			oplog_warn("job '%s': left out of the history for now: %s", job->id,
				   sc->msg.text);
			job->read_failed = sc->want_summary;
		} else if (sc->want_summary && !job->summary) {
			summary_set(j, job, sc->cases);
			sc->cases = NULL;
		}
		if (job->unchecked) {
			job->unchecked = false;
			sc->checked++;
			if (sc->rc >= 0)
				recover__checked(j, job, &sc->info);
		}
	}
	json_decref(sc->cases);
	sc->cases = NULL;
	if (j->closing)
		jobs__close_check(j);
	else
		scan_kick(j);
}

void history__start(struct jobs *j)
{
	struct history_scan *sc = xcalloc(1, sizeof *sc);

	sc->j = j;
	sc->work.data = sc;
	sc->started_ns = uv_hrtime();
	for (int i = 0; i < j->njobs; i++)
		sc->unchecked += j->all[i]->unchecked;
	j->scan = sc;
	if (sc->unchecked)
		oplog(LOG_INFO, "checking the stored logs of %ld finished job%s off the loop",
		      sc->unchecked, sc->unchecked == 1 ? "" : "s");
	scan_kick(j);
}

bool history__busy(const struct jobs *j)
{
	return j->scan && j->scan->busy;
}

void history__stop(struct jobs *j)
{
	if (j->scan)
		__atomic_store_n(&j->scan->stop, 1, __ATOMIC_RELAXED);
}

void history__release(struct jobs *j)
{
	free(j->scan);
	j->scan = NULL;
}

void history__job_release(struct job *job)
{
	gather_free(job->gather);
	job->gather = NULL;
}

void history__line(struct jobs *j, struct job *job, const struct line *line)
{
	/* Only a job whose every line this quald wrote gathers. */
	if (line->seq == 0 && !job->gather && !job->summary)
		job->gather = gather_new();
	if (job->gather)
		gather_take(job->gather, line);
	if (job->summary || !jobs__ended(job))
		return;
	if (job->gather) {
		json_t *cases = gather_cases(job->gather);

		history__job_release(job);
		summary_set(j, job, cases);
	} else {
		scan_kick(j);
	}
}

static bool labels_match(const struct job *job, json_t *want)
{
	const char *key;
	json_t *v;

	json_object_foreach(want, key, v) {
		const char *have = json_string_value(json_object_get(job->args.labels, key));

		if (!have || !json_is_string(v) || strcmp(have, json_string_value(v)))
			return false;
	}
	return true;
}

/* The entry of case_name in job's summary, or NULL. */
static json_t *case_in(const struct job *job, const char *case_name)
{
	size_t i;
	json_t *e;

	json_array_foreach(job->summary, i, e)
		if (!strcmp(json_string_value(json_object_get(e, "case")), case_name))
			return e;
	return NULL;
}

static json_t *str_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

static json_t *history_job(const struct job *job, const char *case_name)
{
	json_t *cases, *o, *tags;

	if (case_name)
		cases = json_pack("[O]", case_in(job, case_name));
	else
		cases = json_deep_copy(job->summary);
	o = json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:{s:o,s:o},s:{s:o,s:o},s:o}",
			 "job", job->id,
			 "state", vocab_state_name(job->state),
			 "verdict", vocab_verdict_name(jobs__verdict(job)),
			 "submitted", str_or_null(job->submitted),
			 "finished", str_or_null(job->finished),
			 "labels", job->args.labels ? json_deep_copy(job->args.labels) :
			 json_object(),
			 "baseline", "path", str_or_null(job->args.baseline),
			 "sha256", str_or_null(job->args.baseline_sha256),
			 "candidate", "path", str_or_null(job->args.candidate),
			 "sha256", str_or_null(job->args.candidate_sha256),
			 "cases", cases);
	/* A typed job's GPU type and node (the Slurm backend), for a series
	 * per case per type. */
	if ((tags = remote__tags(job))) {
		json_object_update(o, tags);
		json_decref(tags);
	}
	if (job->args.submission)
		json_object_set_new(o, FLEET_SUBMISSION_KEY, json_string(job->args.submission));
	return o;
}

json_t *jobs_history_json(struct jobs *j, const struct jobs_history_query *q)
{
	int limit = q->limit > 0 ? q->limit : REQUEST_DEFAULT_HISTORY;
	struct job **hit = xcalloc((size_t)j->njobs + 1, sizeof *hit);
	json_t *list = json_array(), *o;
	int n = 0, pending = 0;

	/* Newest first up to the limit, then reported oldest first. */
	for (int i = j->njobs - 1; i >= 0 && n < limit; i--) {
		struct job *job = j->all[i];

		if (!jobs__ended(job) || (q->labels && !labels_match(job, q->labels)) ||
		    (q->gpu_type && (!job->args.gpu_type ||
				     strcmp(q->gpu_type, job->args.gpu_type) != 0)))
			continue;
		if (!job->summary) {
			/* Being made off the loop; one whose read failed is
			 * tried again. */
			job->read_failed = false;
			pending++;
			continue;
		}
		if (q->case_name && !case_in(job, q->case_name))
			continue;
		hit[n++] = job;
	}
	while (n > 0)
		json_array_append_new(list, history_job(hit[--n], q->case_name));
	jobs__overall_into(j, list);
	free(hit);
	o = json_pack("{s:o}", "jobs", list);
	if (pending) {
		json_object_set_new(o, "incomplete", json_true());
		json_object_set_new(o, "pending", json_integer(pending));
		scan_kick(j);
	}
	return o;
}
