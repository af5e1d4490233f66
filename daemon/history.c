/* History (jobs.h: jobs_history_json): the per-case results of ended jobs
 * as a time series, for `qualctl history` and `export` and the dashboard,
 * which polls it.
 *
 * A job's summary (its case verdicts, each with the medians of its pair
 * lines) is read from its log once: the first time a history asks for it
 * after the job's verdict line is written, for a job of this run and a
 * stored one alike (lazily: a start-up with many stored jobs reads none of
 * them for this). A log never changes after its verdict line, so the
 * summary stays true; every later call walks memory only. The one parse of
 * a case_verdict line into an entry is case_entry(). */
#include "daemon/jobs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/lines.h"
#include "common/xalloc.h"
#include "daemon/jobs_internal.h"
#include "daemon/oplog.h"
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

/* What a read of a log gathers. */
struct gather {
	struct case_pairs *cases;
	int ncases, cap;
	json_t *verdicts;          /* the case_verdict lines, in order */
};

static struct case_pairs *pairs_of(struct gather *g, const char *name, bool add)
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

static int gather_line(void *ctx, const char *text, size_t len)
{
	struct gather *g = ctx;
	struct line *l;
	const char *name;

	if (line_parse(text, len, &l) < 0)
		return 0;
	name = l->info.case_name;
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
	line_unref(l);
	return 0;
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

/* Reads an ended job's log once into job->summary (its case entries). A
 * log that cannot be read now (descriptors short, say) leaves it NULL, with
 * a warning: the job is left out of this reply and read again next time. */
static void summary_build(struct jobs *j, struct job *job)
{
	struct gather g = { NULL, 0, 0, json_array() };
	struct qual_msg m;
	json_t *cases = json_array(), *cv;
	size_t i;

	bool ok = store_log_read(j->store, job->id, gather_line, &g, NULL, &m) >= 0;

	if (!ok)
		oplog_warn("job '%s': left out of the history for now: %s", job->id, m.text);
	json_array_foreach(g.verdicts, i, cv) {
		const char *name = json_string_value(json_object_get(cv, "case"));

		json_array_append_new(cases, case_entry(cv, pairs_of(&g, name, false)));
	}
	for (int k = 0; k < g.ncases; k++) {
		free(g.cases[k].name);
		free(g.cases[k].base);
		free(g.cases[k].cand);
	}
	free(g.cases);
	json_decref(g.verdicts);
	if (ok)
		job->summary = cases;
	else
		json_decref(cases);
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
	json_t *cases;

	if (case_name)
		cases = json_pack("[O]", case_in(job, case_name));
	else
		cases = json_deep_copy(job->summary);
	return json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:{s:o,s:o},s:{s:o,s:o},s:o}",
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
}

json_t *jobs_history_json(struct jobs *j, const struct jobs_history_query *q)
{
	int limit = q->limit > 0 ? q->limit : REQUEST_DEFAULT_HISTORY;
	struct job **hit = xcalloc((size_t)j->njobs + 1, sizeof *hit);
	json_t *list = json_array();
	int n = 0;

	/* Newest first up to the limit, then reported oldest first. */
	for (int i = j->njobs - 1; i >= 0 && n < limit; i--) {
		struct job *job = j->all[i];

		if (!jobs__ended(job) || (q->labels && !labels_match(job, q->labels)))
			continue;
		if (!job->summary)
			summary_build(j, job);
		if (!job->summary)
			continue;
		if (q->case_name && !case_in(job, q->case_name))
			continue;
		hit[n++] = job;
	}
	while (n > 0)
		json_array_append_new(list, history_job(hit[--n], q->case_name));
	free(hit);
	return json_pack("{s:o}", "jobs", list);
}
