/* The Slurm backend, quald's side (remote.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/xalloc.h"
#include "daemon/jobs_internal.h"
#include "daemon/oplog.h"
#include "daemon/remote.h"
#include "proto/fleet.h"
#include "proto/remote.h"

/* A path the spool's layout gives (proto/remote.h): its parts are checked
 * already (the spool at start, job ids and pins at submit), so a failure is
 * a bug. */
static void must_path(int rc, const struct qual_msg *m)
{
	if (rc < 0) {
		oplog(LOG_ERR, "bug: a spool path: %s", m->text);
		abort();
	}
}

char **remote__argv(const struct jobs *j, const struct job *job, int slot)
{
	const struct remote_config *rc = j->remote;
	struct submit_args a = job->args; /* shallow: nothing of it is freed */
	char base[PATH_MAX], cand[PATH_MAX], cache[PATH_MAX], jobdir[PATH_MAX];
	char *fixtures[SETTINGS_MAX_FIXTURES + 1] = {NULL};
	struct strv argv;
	struct qual_msg m;
	size_t n = 0;

	if (!a.baseline_sha256 || !a.candidate_sha256 || !a.baseline_real || !a.candidate_real) {
		oplog(LOG_ERR, "bug: job '%s' reached its worker without pinned libraries",
		      job->id);
		abort();
	}
	must_path(remote_job_path(jobdir, sizeof jobdir, rc->spool, job->id, NULL, &m), &m);
	must_path(remote_blob_path(base, sizeof base, rc->spool, a.baseline_sha256, &m), &m);
	must_path(remote_blob_path(cand, sizeof cand, rc->spool, a.candidate_sha256, &m), &m);
	snprintf(cache, sizeof cache, "%s/%s", rc->spool, REMOTE_SPOOL_CACHE);
	/* quald --no-cache: the nodes compile everything too. */
	strv_init(&argv);
	strv_push(&argv, rc->bridge);
	strv_pushf(&argv, "--spool=%s", rc->spool);
	strv_pushf(&argv, "--job=%s", job->id);
	if (job->attach && job->remote && job->remote->id[0]) {
		/* Recovery: its Slurm job runs (or ran) from the spool's
		 * folder already; the lines stored are not relayed again. */
		strv_pushf(&argv, "--attach=%s", job->remote->id);
		strv_pushf(&argv, "--skip=%ld", job->remote->lines_read);
		return strv_detach(&argv);
	}
	if (a.gpu_type)
		strv_pushf(&argv, "--gpu-type=%s", a.gpu_type);
	else if (a.settings.compile_only)
		strv_push(&argv, "--no-gpu");
	if (rc->partition)
		strv_pushf(&argv, "--partition=%s", rc->partition);
	strv_pushf(&argv, "--time-limit=%.0f", j->job_timeout_s);
	strv_pushf(&argv, "--stage=%s=%s", a.baseline_real, a.baseline_sha256);
	strv_pushf(&argv, "--stage=%s=%s", a.candidate_real, a.candidate_sha256);
	for (n = 0; a.settings.fixtures && a.settings.fixtures[n]; n++) {
		strv_pushf(&argv, "--stage-dir=%s=%zu", a.settings.fixtures[n], n);
		if (asprintf(&fixtures[n], "%s/%s/%zu", jobdir, REMOTE_DIR_FIXTURES, n) < 0)
			abort();
	}
	strv_push(&argv, "--");
	a.baseline_real = base;
	a.candidate_real = cand;
	if (n)
		a.settings.fixtures = fixtures;
	worker__engine_argv(j, job, slot, &a, j->cache_dir ? cache : NULL, &argv);
	for (size_t i = 0; i < n; i++)
		free(fixtures[i]);
	return strv_detach(&argv);
}

/* One stderr line of the bridge: a status line updates the job. Returns 1
 * when the Slurm job has just started running, 0 for another status line
 * (or one refused), -1 for free text. */
static int feed_line(struct jobs *j, struct job *job, const char *line, size_t len)
{
	struct remote_status st;
	struct qual_msg m;
	struct remote_job *r;
	bool changed;
	int started = 0;

	int rc = remote_status_parse(line, len, &st, &m);

	if (rc == 0)
		return -1; /* free text */
	if (rc < 0) {
		oplog_warn("job '%s': the bridge's status line is refused: %s", job->id, m.text);
		return 0;
	}
	if (!job->remote)
		job->remote = xcalloc(1, sizeof *job->remote);
	r = job->remote;
	changed = strcmp(r->id, st.id) || strcmp(r->state, st.state) ||
		  strcmp(r->reason, st.reason) || strcmp(r->node, st.node);
	snprintf(r->id, sizeof r->id, "%s", st.id);
	snprintf(r->state, sizeof r->state, "%s", st.state);
	snprintf(r->reason, sizeof r->reason, "%s", st.reason);
	snprintf(r->node, sizeof r->node, "%s", st.node);
	if (!r->ran && remote_state_phase(st.state) != REMOTE_PHASE_QUEUED) {
		r->ran = true;
		started = 1;
	}
	if (changed) {
		oplog(LOG_INFO, "job '%s': slurm job %s %s%s%s%s%s%s", job->id, r->id, r->state,
		      r->reason[0] ? " (" : "", r->reason, r->reason[0] ? ")" : "",
		      r->node[0] ? " on " : "", r->node);
		jobs__state_save(j, job);
	}
	return started;
}

bool remote__feed(struct jobs *j, struct job *job, struct remote_feed *f, const char *data,
		  size_t n, remote_text_cb text, void *ctx)
{
	bool started = false;

	for (size_t i = 0; i < n; i++) {
		if (data[i] != '\n') {
			if (f->len < sizeof f->line)
				f->line[f->len++] = data[i];
			else
				f->over = true;
			continue;
		}
		/* A status line is the bridge's word to quald; any other line
		 * (the beginning of one too long to be a status line) is free
		 * text, kept for the job's messages. */
		int rc = f->over || !job ? -1 : feed_line(j, job, f->line, f->len);

		if (rc < 0)
			text(ctx, f->line, f->len);
		started |= rc > 0;
		f->len = 0;
		f->over = false;
	}
	return started;
}

bool remote__pending(const struct job *job)
{
	return job->remote && job->state == JOB_RUNNING && job->remote->state[0] &&
	       remote_state_phase(job->remote->state) == REMOTE_PHASE_QUEUED;
}

void remote__lines_stored(struct job *job, long stored)
{
	struct remote_job *r = job->remote;

	if (!r)
		return;
	if (!r->lines_known)
		r->lines_read = stored;
	else if (stored > r->lines_at)
		r->lines_read += stored - r->lines_at;
}

bool remote__line_taken(struct job *job)
{
	struct remote_job *r;

	if (!job->remote)
		job->remote = xcalloc(1, sizeof *job->remote);
	r = job->remote;
	r->lines_read++;
	if (r->ran)
		return false;
	/* A line before any status line said RUNNING: it runs. */
	r->ran = true;
	snprintf(r->state, sizeof r->state, "RUNNING");
	return true;
}

json_t *remote__state_json(const struct job *job)
{
	json_t *o = remote__json(job);

	if (json_is_object(o)) {
		json_object_set_new(o, "lines_read", json_integer(job->remote->lines_read));
		json_object_set_new(o, "lines_at", json_integer(job->next_seq));
	}
	return o;
}

json_t *remote__json(const struct job *job)
{
	const struct remote_job *r = job->remote;

	if (!r)
		return json_null();
	return json_pack("{s:s,s:o,s:o,s:o}", "id", r->id, "state", jobs__str_or_null(r->state),
			 "reason", jobs__str_or_null(r->reason),
			 "node", jobs__str_or_null(r->node));
}

void remote__from_state(struct job *job, json_t *state)
{
	json_t *o = json_object_get(state, REMOTE_JSON_KEY);
	const char *id = json_string_value(json_object_get(o, "id"));
	const char *s;

	if (!json_is_object(o) || !id || !*id || strlen(id) >= sizeof job->remote->id)
		return;
	/* Queued with a Slurm job: queued again to follow it (remote__recover),
	 * and quald stopped before it did. */
	if (job->state == JOB_QUEUED)
		job->attach = true;
	if (!job->remote)
		job->remote = xcalloc(1, sizeof *job->remote);
	snprintf(job->remote->id, sizeof job->remote->id, "%s", id);
	if ((s = json_string_value(json_object_get(o, "state"))))
		snprintf(job->remote->state, sizeof job->remote->state, "%s", s);
	if ((s = json_string_value(json_object_get(o, "reason"))))
		snprintf(job->remote->reason, sizeof job->remote->reason, "%s", s);
	if ((s = json_string_value(json_object_get(o, "node"))))
		snprintf(job->remote->node, sizeof job->remote->node, "%s", s);
	if (json_is_integer(json_object_get(o, "lines_read")) &&
	    json_integer_value(json_object_get(o, "lines_read")) >= 0 &&
	    json_is_integer(json_object_get(o, "lines_at")) &&
	    json_integer_value(json_object_get(o, "lines_at")) >= 0) {
		job->remote->lines_read = (long)json_integer_value(json_object_get(o, "lines_read"));
		job->remote->lines_at = (long)json_integer_value(json_object_get(o, "lines_at"));
		job->remote->lines_known = true;
	}
	job->remote->ran = job->remote->state[0] &&
			   remote_state_phase(job->remote->state) != REMOTE_PHASE_QUEUED;
}

bool remote__recover(struct jobs *j, struct job *job)
{
	struct qual_msg m;
	long id;
	int rc;

	if (!j->remote)
		return false;
	/* The bridge writes it right after sbatch: it may have had no time
	 * to say it on its stderr before quald stopped. */
	rc = remote_slurm_id_read(j->remote->spool, job->id, &id, &m);
	if (rc == 0) {
		if (!job->remote)
			job->remote = xcalloc(1, sizeof *job->remote);
		snprintf(job->remote->id, sizeof job->remote->id, "%ld", id);
	} else if (rc != QUAL_ENOENT) {
		oplog_warn("job '%s': %s", job->id, m.text);
	}
	if ((!job->remote || !job->remote->id[0]) && job->next_seq > 0)
		return false; /* lines but no Slurm job to read the rest from */
	/* Its worker starts again: with the Slurm job's id, a bridge that
	 * follows it from the lines stored on; without (quald stopped before
	 * sbatch), one that submits it, as if it had never run. */
	job->attach = job->remote && job->remote->id[0];
	job->state = JOB_QUEUED;
	oplog(LOG_INFO, "job '%s': %s", job->id, job->attach ?
	      "following its slurm job again" : "queued again: its slurm job was never submitted");
	if (job->attach)
		oplog(LOG_INFO, "job '%s': slurm job %s, %ld lines stored", job->id,
		      job->remote->id, job->next_seq);
	jobs__state_save(j, job);
	return true;
}

int remote__open(struct jobs *j, const struct remote_config *cfg, struct qual_msg *msg)
{
	const char *sub[] = {REMOTE_SPOOL_BLOBS, REMOTE_SPOOL_JOBS, REMOTE_SPOOL_CACHE,
			     REMOTE_SPOOL_CALIBRATION};
	char path[PATH_MAX], spool[PATH_MAX];
	int rc;

	if (!cfg)
		return 0;
	/* The nodes read it by this path: made absolute, made whole. */
	if (cfg->spool[0] != '/') {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof cwd) ||
		    fs_path_join(spool, sizeof spool, cwd, cfg->spool, NULL))
			return qual_fail(msg, QUAL_EINVAL, "cannot make the slurm spool '%s' an "
					 "absolute path", cfg->spool);
	} else {
		snprintf(spool, sizeof spool, "%s", cfg->spool);
	}
	/* Room for a job's deepest file below it. */
	if (strlen(spool) > PATH_MAX / 4)
		return qual_fail(msg, QUAL_EINVAL, "the slurm spool '%s' is longer than %d bytes",
				 spool, PATH_MAX / 4);
	for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", spool, sub[i]);
		if ((rc = fs_mkdir_p(path, 0755, msg)) < 0)
			return rc;
	}
	j->remote = xcalloc(1, sizeof *j->remote);
	j->remote->bridge = xstrdup(cfg->bridge);
	j->remote->spool = xstrdup(spool);
	j->remote->partition = cfg->partition ? xstrdup(cfg->partition) : NULL;
	return 0;
}

void remote__free(struct jobs *j)
{
	if (!j->remote)
		return;
	free((char *)j->remote->bridge);
	free((char *)j->remote->spool);
	free((char *)j->remote->partition);
	free(j->remote);
	j->remote = NULL;
}

json_t *remote__tags(const struct job *job)
{
	json_t *o;

	if (!job->args.gpu_type && !(job->remote && job->remote->node[0]))
		return NULL;
	o = json_object();
	if (job->args.gpu_type)
		json_object_set_new(o, FLEET_GPU_TYPE_KEY, json_string(job->args.gpu_type));
	if (job->remote && job->remote->node[0])
		json_object_set_new(o, FLEET_NODE_KEY, json_string(job->remote->node));
	return o;
}

json_t *remote__device_json(const struct job *job)
{
	const struct remote_job *r = job ? job->remote : NULL;
	char name[640];

	if (!r || !r->id[0])
		snprintf(name, sizeof name, "slurm%s", job ? " (submitting)" : "");
	else
		snprintf(name, sizeof name, "slurm job %s %s%s%s%s%s", r->id, r->state,
			 r->node[0] ? " on " : "", r->node, r->reason[0] ? ": " : "", r->reason);
	return json_pack("{s:s}", "name", name);
}

/* A scancel of a Slurm job no bridge follows any more, watched until it
 * exits. */
struct scancel {
	struct jobs *j;
	struct child child;
	struct child_watch watch;
	char id[32];
	char *argv[3];
};

static void scancel_exit(struct child_watch *cw, const struct child_exit *ex)
{
	struct scancel *sc = cw->data;
	char how[64];

	if (child_exit_signal(ex) || child_exit_code(ex) != 0)
		oplog_warn("scancel %s: %s", sc->id, child_exit_text(ex, how, sizeof how));
	sc->j->nscancels--;
	jobs__close_check(sc->j);
	free(sc);
}

void remote__scancel(struct jobs *j, struct job *job, const char *why)
{
	struct scancel *sc;
	struct qual_msg m;

	if (!j->remote || !job->remote || !job->remote->id[0])
		return;
	sc = xcalloc(1, sizeof *sc);
	sc->j = j;
	snprintf(sc->id, sizeof sc->id, "%s", job->remote->id);
	sc->argv[0] = "scancel";
	sc->argv[1] = sc->id;
	child_init(&sc->child);
	sc->child.argv = (const char *const *)sc->argv;
	sc->child.out = CHILD_NULL;
	sc->child.group = CHILD_SESSION_NEW;
	sc->child.name = "scancel";
	oplog(LOG_INFO, "job '%s': cancelling slurm job %s: %s", job->id, sc->id, why);
	if (child_start(&sc->child, &m) < 0) {
		oplog_warn("job '%s': cannot cancel slurm job %s: %s", job->id, sc->id, m.text);
		free(sc);
		return;
	}
	sc->child.name = NULL;
	j->nscancels++;
	sc->watch.data = sc;
	children_watch(&j->children, &sc->watch, &sc->child, scancel_exit);
}
