/* Retention (jobs_internal.h: retention__prune; docs/quald.md,
 * "Retention"): quald --keep-jobs N keeps the newest N finished jobs,
 * --keep-days D the finished jobs that ended within D days; by default
 * everything is kept. A pruned job leaves the table at once, so show, list,
 * history and watch's resume no longer know it ("no job 'ID'"), and its
 * folder goes through the writer, after every write asked for before
 * (store_job_remove: crash-safe). Runs on the loop, at open and once each
 * job's final state is written (jobs.c). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/xalloc.h"
#include "daemon/jobs_internal.h"
#include "daemon/oplog.h"

/* When a job ended (else when it was submitted), seconds since 1970; 0 when
 * neither reads. */
static time_t ended_at(const struct job *job)
{
	const char *t = job->finished[0] ? job->finished : job->submitted;
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof tm);
	end = strptime(t, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return end && !*end ? timegm(&tm) : 0;
}

/* Finished, and nothing of it in flight: its lines written and relayed
 * (jobs__ended), no log open, no worker, no state write whose callback
 * holds it. */
static bool removable(const struct job *job)
{
	return jobs__ended(job) && !job->log && !job->w && job->state_writes == 0;
}

static void removed(void *ctx, const struct writer_done *d)
{
	char *id = ctx;

	if (d->status < 0)
		oplog_warn("job '%s': cannot remove it from the state directory: %s", id,
			   d->message);
	free(id);
}

void retention__prune(struct jobs *j)
{
	time_t now = time(NULL);
	int kept = 0, i;
	int *newer; /* per job: finished jobs newer than it */

	if ((j->keep_jobs <= 0 && !(j->keep_days > 0)) || j->closing || !j->writer)
		return;
	/* A job is over --keep-jobs when at least keep_jobs finished jobs are
	 * newer than it: ranked from the newest down, so that an older job
	 * that cannot go yet (a write of it in flight) never costs a newer one
	 * its place. */
	newer = xcalloc((size_t)j->njobs + 1, sizeof *newer);
	for (i = j->njobs - 1; i > 0; i--)
		newer[i - 1] = newer[i] + (j->all[i]->state >= JOB_DONE);
	/* Oldest first; never the newest job (store.h, "Pruning"). */
	for (i = 0; i < j->njobs; i++) {
		struct job *job = j->all[i];
		bool over = j->keep_jobs > 0 && newer[i] >= j->keep_jobs;
		bool old = j->keep_days > 0 &&
			   difftime(now, ended_at(job)) > j->keep_days * 86400.0;

		if (i == j->njobs - 1 || job->state < JOB_DONE || (!over && !old) ||
		    !removable(job)) {
			j->all[kept++] = job;
			continue;
		}
		oplog(LOG_INFO, "job %s: removed by retention (%s)", job->id,
		      over ? "--keep-jobs" : "--keep-days");
		writer_job_remove(j->writer, job->id, removed, xstrdup(job->id));
		jobs__job_free(job);
	}
	j->njobs = kept;
	free(newer);
}
