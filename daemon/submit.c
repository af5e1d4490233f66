/* The submit checks (jobs.h: jobs_submit): cheap local checks at once (the
 * request, both library files, the policy), and each library opened once
 * (compile/rtc.h: rtc_library_open, on the real path the policy saw, the
 * file it saw); then quald hashes each open file in libuv's thread pool, so
 * that the loop never reads a library, and checks the quarantine by those
 * hashes before anything loads either library; then one identify child per
 * arm, which loads the very file quald hashed (its stdin, rtc.h:
 * rtc_identify_start / _finish / _abort: the daemon never loads a library),
 * watched on the loop by children.c. When both have reported, the submit is
 * refused, or the job is stored with each arm's pin (its real path and
 * quald's hash: what its worker must load) and queued. Nothing a child
 * writes decides which bytes were checked. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/child.h"
#include "common/sha256.h"
#include "common/xalloc.h"
#include "compile/rtc.h"
#include "daemon/jobs_internal.h"
#include "proto/fleet.h"
#include "daemon/policy.h"
#include "fixtures/fixture.h"

/* One arm of a submit check: its library, its hash, its identify child. */
struct check {
	struct submit *sub;
	struct rtc_pin pin;         /* the library, opened once: hashed by
				    * hash_work, loaded by the child; open until
				    * the submit goes (submit_free) */
	uv_work_t work;             /* its hash, in libuv's thread pool */
	bool hashing;               /* work queued, its after-work callback
				    * not run yet */
	int hash_status;            /* hash_work's: 0 or QUAL_E*, hash_msg */
	struct qual_msg hash_msg;
	struct rtc_pending pending; /* its child until reaped */
	struct child_watch watch;
	uv_timer_t timer;           /* check_timeout_s; open once started */
	bool started, timed_out;
	bool aborted;               /* killed: its answer is not read */
	int status;                 /* 0 or QUAL_E*, once concluded */
	char message[sizeof ((struct qual_msg *)0)->text];
	char abi[8];                /* "nvrtc", "hiprtc" or "" */
	char path[PATH_MAX];        /* the library as given */
	char real_path[PATH_MAX];   /* the file opened */
};

struct submit {
	struct jobs *j;
	json_t *request;            /* the stored form of the arguments */
	jobs_submit_cb cb;          /* NULL once called (or silenced) */
	void *ctx;
	struct check c[2];          /* baseline, candidate */
	int hashing;                /* hashes whose after-work has not run */
	uv_timer_t hash_timer;      /* check_timeout_s for the hashes; open
				    * from the queueing until both are in */
	bool hash_timer_open;
	int pending;                /* checks started and not concluded */
	int handles;                /* open timers */
	char **fixtures;            /* the fixture directories' real paths
				    * (NULL-terminated), or NULL: none */
	struct list_link link;      /* in j->submits */
};

/* A new submit in no list, its libraries not open. */
static struct submit *submit_new(struct jobs *j)
{
	struct submit *sub = xcalloc(1, sizeof *sub);
	int arm;

	sub->j = j;
	list_init(&sub->link);
	for (arm = 0; arm < 2; arm++) {
		sub->c[arm].sub = sub;
		rtc_pin_init(&sub->c[arm].pin);
	}
	return sub;
}

/* Frees sub; one that was in j->submits leaves it. Its libraries are
 * closed only here: a hash still running in the thread pool (its
 * after-work callback not run) or a child still loading one keeps it. */
static void submit_free(struct submit *sub)
{
	struct jobs *j = sub->j;
	bool listed = sub->request != NULL;

	rtc_pin_release(&sub->c[0].pin);
	rtc_pin_release(&sub->c[1].pin);
	child_env_free(sub->fixtures);
	if (listed) {
		list_remove(&sub->link);
		json_decref(sub->request);
	}
	free(sub);
	if (listed) {
		j->nsubmits--;
		jobs__close_check(j);
	}
}

/* Frees sub once nothing of it runs: no hash, no child, no timer. */
static void submit_maybe_free(struct submit *sub)
{
	if (sub->hashing == 0 && sub->pending == 0 && sub->handles == 0)
		submit_free(sub);
}

static void hash_timer_closed(uv_handle_t *h)
{
	struct submit *sub = h->data;

	sub->handles--;
	submit_maybe_free(sub);
}

static void hash_timer_close(struct submit *sub)
{
	if (!sub->hash_timer_open)
		return;
	sub->hash_timer_open = false;
	uv_close((uv_handle_t *)&sub->hash_timer, hash_timer_closed);
}

static void check_timer_closed(uv_handle_t *h)
{
	struct check *c = h->data;
	struct submit *sub = c->sub;

	sub->handles--;
	submit_maybe_free(sub);
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
	int arm, rc;

	if (!sub->cb)
		return;
	/* A library that crashes or hangs while loading is a result about it,
	 * as in qual-run: the job runs and its verdict says so. Everything
	 * else that went wrong is a refusal. */
	for (arm = 0; arm < 2; arm++) {
		struct check *x = &sub->c[arm];
		if (x->status && x->status != QUAL_ECRASH && x->status != QUAL_ETIMEOUT &&
		    x->status != QUAL_EEXIT && x->status != QUAL_EKILLED) {
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
	/* Each arm is pinned by what quald hashed (the file the child loaded,
	 * and the quarantine was checked by it before): the job stores it with
	 * the real path, so that its worker loads those bytes or none. */
	for (arm = 0; arm < 2; arm++)
		request_submit_set_pin(sub->request, arm, sub->c[arm].real_path,
				       sub->c[arm].pin.sha256);
	/* The callback goes with the job: it runs once the job is on disk. */
	if ((rc = jobs__enqueue(j, sub->request, sub->cb, sub->ctx, &m)) < 0) {
		submit_call(sub, rc, NULL, -1, m.text);
		return;
	}
	sub->cb = NULL;
}

/* One check fewer to wait for; its timer goes. */
static void check_concluded(struct check *c)
{
	struct submit *sub = c->sub;

	uv_close((uv_handle_t *)&c->timer, check_timer_closed);
	if (--sub->pending == 0)
		submit_decide(sub);
}

/* children.c: the identify child has exited and been reaped. */
static void check_exit(struct child_watch *cw, const struct child_exit *ex)
{
	struct check *c = cw->data;
	struct child_exit how = *ex;
	struct rtc_identity id;
	struct qual_msg m;

	uv_timer_stop(&c->timer);
	if (c->aborted) {
		rtc_identify_abort(&c->pending); /* reaped already */
		jobs__remove_later(c->sub->j, c->pending.dir, true);
		c->status = QUAL_EINVAL;
		check_concluded(c);
		return;
	}
	how.timed_out = c->timed_out;
	c->status = rtc_identify_finish(&c->pending, &how, c->sub->j->check_timeout_s,
					&id, &m);
	/* The library ran there: its folder may hold any number of files,
	 * removed off the loop (what it left running is adopted by quald and
	 * killed: children.h). */
	jobs__remove_later(c->sub->j, c->pending.dir, true);
	snprintf(c->message, sizeof c->message, "%s", c->status ? m.text : "");
	snprintf(c->abi, sizeof c->abi, "%s", c->status ? "" : id.abi_name);
	check_concluded(c);
}

static void check_timer(uv_timer_t *t)
{
	struct check *c = t->data;

	c->timed_out = true;
	child_kill(&c->pending.child, SIGKILL);
}

/* Stops a check whose answer no one will read (a refused submit, a
 * shutdown): its child is killed now, and reaped, its folder removed and
 * the check concluded when children.c sees it end (check_exit), so that the
 * loop never waits for a child. */
static void check_abort(struct check *c)
{
	if (!c->started || c->aborted || c->pending.child.pid <= 0)
		return;
	c->aborted = true;
	uv_timer_stop(&c->timer);
	child_kill(&c->pending.child, SIGKILL);
}

/* Starts the identify child of one arm (rtc.h: qual-compile identify, in a
 * private folder, with the library's folder first on LD_LIBRARY_PATH, in a
 * group of its own), which loads c->pin.fd, the file quald hashed. On
 * failure nothing is left open but the library. */
static int check_start(struct jobs *j, struct check *c, struct qual_msg *msg)
{
	struct submit *sub = c->sub;
	int rc;

	if ((rc = rtc_identify_start(c->path, c->real_path, c->pin.fd, j->helper,
				     &c->pending, msg)))
		return rc;
	c->pending.keep_dir = true; /* check_exit removes it, off the loop */
	c->started = true;
	sub->pending++;
	sub->handles++;
	uv_timer_init(j->loop, &c->timer);
	c->timer.data = c;
	uv_timer_start(&c->timer, check_timer, (uint64_t)(j->check_timeout_s * 1000.0), 0);
	c->watch.data = c;
	children_watch(&j->children, &c->watch, &c->pending.child, check_exit);
	return 0;
}

/* Both libraries are hashed: refuse (a hash that failed, a quarantined
 * library: before anything loads either), or start both identify
 * children. */
static void submit_hashed(struct submit *sub)
{
	struct jobs *j = sub->j;
	struct qual_msg m;
	int arm, rc;

	hash_timer_close(sub);
	if (!sub->cb) {             /* refused meanwhile: shutdown, time limit */
		submit_maybe_free(sub);
		return;
	}
	for (arm = 0; arm < 2; arm++) {
		struct check *x = &sub->c[arm];
		if (x->hash_status) {
			submit_call(sub, x->hash_status, NULL, -1, x->hash_msg.text);
			submit_maybe_free(sub);
			return;
		}
	}
	for (arm = 0; arm < 2; arm++) {
		struct check *x = &sub->c[arm];
		if ((rc = quarantine__check(&j->quarantine, x->path, x->pin.sha256, &m)) < 0) {
			submit_call(sub, rc, NULL, -1, m.text);
			submit_maybe_free(sub);
			return;
		}
	}
	for (arm = 0; arm < 2; arm++) {
		if ((rc = check_start(j, &sub->c[arm], &m)) < 0) {
			/* One callback, now; a child already started is stopped,
			 * and sub goes once it is reaped and its timer closed. */
			submit_call(sub, rc, NULL, -1, m.text);
			check_abort(&sub->c[0]);
			submit_maybe_free(sub);
			return;
		}
	}
}

/* libuv's thread pool: the library's SHA-256, from the open file's start.
 * Touches nothing but c's hash fields, which the loop reads only once
 * hash_done runs. */
static void hash_work(uv_work_t *w)
{
	struct check *c = w->data;

	c->hash_status = sha256_hash_fd(c->pin.fd, -1, c->path, c->pin.sha256, NULL,
					&c->hash_msg);
}

/* The loop, always once per queued hash (libuv's contract, also for a
 * hash cancelled before it started: status UV_ECANCELED). */
static void hash_done(uv_work_t *w, int status)
{
	struct check *c = w->data;
	struct submit *sub = c->sub;

	c->hashing = false;
	if (status == UV_ECANCELED)
		c->hash_status = qual_fail(&c->hash_msg, QUAL_EINVAL, "quald is shutting down");
	if (--sub->hashing == 0)
		submit_hashed(sub);
}

/* The hashes took longer than check_timeout_s (a stalled filesystem): the
 * submit is refused now; it goes once the hash that still reads returns
 * (a read in the thread pool cannot be stopped). */
static void hash_timer_fired(uv_timer_t *t)
{
	struct submit *sub = t->data;
	char text[PATH_MAX + 96];
	int arm;

	for (arm = 0; arm < 2 && !sub->c[arm].hashing; arm++)
		;
	snprintf(text, sizeof text, "cannot hash compiler '%s': no answer within %g s",
		 sub->c[arm < 2 ? arm : 0].path, sub->j->check_timeout_s);
	submit_call(sub, QUAL_ETIMEOUT, NULL, -1, text);
	hash_timer_close(sub);
}

static int submit_validate(const struct submit_args *a, struct qual_msg *msg)
{
	const struct qual_settings *q = &a->settings;
	size_t i;
	int rc;

	/* Checked as a request's are (proto/settings.h): a submit that did
	 * not come through request_parse (quald's own calibrations) meets
	 * the same bounds. */
	if ((rc = settings_check_values(q, msg)) < 0)
		return rc;
	/* With fixture directories, a name that is not built in may be one of
	 * their cases: their manifests are the worker's to read, and it
	 * refuses a name that is neither (the job ends with an error). */
	for (i = 0; q->cases && q->cases[i] && !q->fixtures; i++)
		if (fixture_find(q->cases[i]) < 0)
			return qual_fail(msg, QUAL_EINVAL, "unknown case '%s'", q->cases[i]);
	return 0;
}

int submit__check_fixtures(const struct jobs *j, char *const *dirs, char ***out,
			   struct qual_msg *msg)
{
	char **real;
	size_t n = 0, i, k;
	int rc = 0;

	*out = NULL;
	while (dirs && dirs[n])
		n++;
	real = xcalloc(n + 1, sizeof *real);
	for (i = 0; i < n && rc == 0; i++) {
		char buf[POLICY_PATH_MAX];

		if ((rc = policy_check_fixture_dir((const char *const *)j->roots, j->nroots,
						   geteuid(), dirs[i], buf, sizeof buf, msg)))
			break;
		for (k = 0; k < i && rc == 0; k++)
			if (strcmp(real[k], buf) == 0)
				rc = qual_fail(msg, QUAL_EINVAL, "fixture directory '%s' is given "
					       "twice (also as '%s'; both are '%s')", dirs[i],
					       dirs[k], buf);
		if (rc == 0)
			real[i] = xstrdup(buf);
	}
	if (rc < 0) {
		child_env_free(real); /* a NULL-terminated list, as an argv */
		return rc;
	}
	*out = real;
	return 0;
}

/* The largest library a submit hashes: a real nvrtc is about 110 MB, a
 * hiprtc with its device libraries under 1 GB; anything larger is not a
 * compiler, and hashing it would hold a thread of the pool. */
#define SUBMIT_LIBRARY_MAX (4LL << 30)

/* The checks that need no child and read no library: the request, both
 * files, the policy (each file as it saw it), and each library opened once
 * on its real path (rtc_library_open: the file the policy saw, or without
 * a policy the file realpath() names now) into sub's checks. */
static int submit_check_here(struct jobs *j, const struct submit_args *args,
			     struct submit *sub, struct qual_msg *msg)
{
	int arm, rc;

	if (args->has_slot && args->slot >= j->nslots)
		return qual_fail(msg, QUAL_EINVAL, "'slot' must be one of quald's slots, 0 to %d, "
				 "got %d", j->nslots - 1, args->slot);
	if (args->gpu_type && !j->remote)
		return qual_fail(msg, QUAL_EINVAL, "'" FLEET_GPU_TYPE_KEY "' needs quald --backend "
				 "slurm: this quald runs jobs on its own GPUs");
	if (args->has_slot && j->remote)
		return qual_fail(msg, QUAL_EINVAL, "'slot' names one of quald's own GPUs: with "
				 "--backend slurm, Slurm picks the node and GPU ('gpu_type' says "
				 "which type)");
	if ((rc = submit_validate(args, msg)) ||
	    (rc = rtc_check_library(args->baseline, msg)) ||
	    (rc = rtc_check_library(args->candidate, msg)))
		return rc;
	for (arm = 0; arm < 2; arm++) {
		struct check *c = &sub->c[arm];
		const char *path = arm ? args->candidate : args->baseline;
		struct stat st;

		if (strlen(path) >= sizeof c->path)
			return qual_fail(msg, QUAL_EINVAL, "compiler path '%s' is too long",
					 path);
		strcpy(c->path, path);
		if (j->roots) {
			if ((rc = policy_check_library((const char *const *)j->roots,
						       j->nroots, geteuid(), path,
						       c->real_path, sizeof c->real_path,
						       &st, msg)))
				return rc;
		} else if (!realpath(path, c->real_path)) {
			return qual_fail(msg, QUAL_EIO, "cannot load compiler '%s': %s", path,
					 strerror(errno));
		}
		if ((rc = rtc_library_open(path, c->real_path, j->roots ? &st : NULL,
					   &c->pin, msg)))
			return rc;
		if (c->pin.size > SUBMIT_LIBRARY_MAX)
			return qual_fail(msg, QUAL_ELIMIT, "compiler '%s' is %lld bytes, over the "
					 "%lld a library may have", path, (long long)c->pin.size,
					 (long long)SUBMIT_LIBRARY_MAX);
	}
	if (args->settings.fixtures)
		return submit__check_fixtures(j, args->settings.fixtures, &sub->fixtures, msg);
	return 0;
}

int jobs_submit(struct jobs *j, const struct submit_args *args,
		jobs_submit_cb cb, void *ctx, struct qual_msg *msg)
{
	struct submit *sub;
	int arm, rc;

	if (j->closing)
		return qual_fail(msg, QUAL_EINVAL, "quald is shutting down");
	sub = submit_new(j);
	if ((rc = submit_check_here(j, args, sub, msg))) {
		submit_free(sub);
		return rc;
	}
	sub->request = request_submit_to_json(args);
	if (!sub->request) {
		submit_free(sub);
		return qual_fail(msg, QUAL_EINVAL, "cannot encode the request");
	}
	/* The job keeps the directories as checked: their real paths. */
	if (sub->fixtures)
		request_submit_set_fixtures(sub->request, sub->fixtures);
	list_append(&j->submits, &sub->link);
	j->nsubmits++;
	/* From here the callback runs exactly once: hash_done runs for each
	 * hash queued, whatever happens (uv_queue_work fails only without a
	 * work callback). */
	for (arm = 0; arm < 2; arm++) {
		struct check *c = &sub->c[arm];
		c->work.data = c;
		if (uv_queue_work(j->loop, &c->work, hash_work, hash_done))
			abort();
		c->hashing = true;
		sub->hashing++;
	}
	uv_timer_init(j->loop, &sub->hash_timer);
	sub->hash_timer.data = sub;
	sub->hash_timer_open = true;
	sub->handles++;
	uv_timer_start(&sub->hash_timer, hash_timer_fired,
		       (uint64_t)(j->check_timeout_s * 1000.0), 0);
	sub->cb = cb;
	sub->ctx = ctx;
	return 0;
}

void submit__close_all(struct jobs *j)
{
	struct list_link *l;

	/* Nothing is freed here: a submit goes once its hashes' after-work
	 * callbacks have run (a hash already running cannot be stopped: its
	 * library stays open until then) and its timers are closed. */
	list_each(l, &j->submits) {
		struct submit *sub = list_item(l, struct submit, link);

		submit_call(sub, QUAL_EINVAL, NULL, -1, "quald is shutting down");
		hash_timer_close(sub);
		for (int arm = 0; arm < 2; arm++) {
			if (sub->c[arm].hashing)
				(void)uv_cancel((uv_req_t *)&sub->c[arm].work);
			check_abort(&sub->c[arm]);
		}
	}
}
