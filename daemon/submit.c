/* The submit checks (jobs.h: jobs_submit): cheap local checks at once (the
 * request, both library files, the policy), then one identify child per
 * arm, started and read by compile/rtc.h (rtc_identify_start / _finish /
 * _abort: the daemon never loads a library, and never reads one: the child
 * hashes the file it opens) and watched on the loop by children.c; when
 * both have reported, the quarantine is checked by the hashes they
 * reported and the submit is refused, or the job is stored with each arm's
 * pin (its real path and hash: what its worker must load) and queued. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/child.h"
#include "common/xalloc.h"
#include "compile/rtc.h"
#include "daemon/jobs_internal.h"
#include "daemon/policy.h"
#include "fixtures/fixture.h"

/* One identify child of a submit check. */
struct check {
	struct submit *sub;
	struct rtc_pending pending; /* its child until reaped */
	struct child_watch watch;
	uv_timer_t timer;           /* check_timeout_s; open once started */
	bool started, timed_out;
	bool aborted;               /* killed: its answer is not read */
	int status;                 /* 0 or QUAL_E*, once concluded */
	char message[sizeof ((struct qual_msg *)0)->text];
	char abi[8];                /* "nvrtc", "hiprtc" or "" */
	char path[PATH_MAX];        /* the library as given */
	char real_path[PATH_MAX];   /* the file its child read */
	char sha256[65];            /* of what it read; "" = it read nothing */
};

struct submit {
	struct jobs *j;
	json_t *request;            /* the stored form of the arguments */
	jobs_submit_cb cb;          /* NULL once called (or silenced) */
	void *ctx;
	struct check c[2];          /* baseline, candidate */
	int pending;                /* checks started and not concluded */
	int handles;                /* open timers */
	struct list_link link;      /* in j->submits */
};

static void submit_free(struct submit *sub)
{
	struct jobs *j = sub->j;

	list_remove(&sub->link);
	json_decref(sub->request);
	free(sub);
	j->nsubmits--;
	jobs__close_check(j);
}

static void check_timer_closed(uv_handle_t *h)
{
	struct check *c = h->data;
	struct submit *sub = c->sub;

	if (--sub->handles == 0 && sub->pending == 0)
		submit_free(sub);
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
		    x->status != QUAL_EEXIT) {
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
	/* Each arm is pinned by what its child read: the quarantine is checked
	 * by that hash, and the job stores it with the real path, so that its
	 * worker loads those bytes or none. A child that ended before it read
	 * the library leaves nothing to pin. */
	for (arm = 0; arm < 2; arm++) {
		struct check *x = &sub->c[arm];
		if (!x->sha256[0]) {
			snprintf(m.text, sizeof m.text, "cannot pin compiler '%s': its check "
				 "ended before it read the library%s%s", x->path,
				 x->message[0] ? ": " : "", x->message);
			submit_call(sub, QUAL_EIO, NULL, -1, m.text);
			return;
		}
		if ((rc = quarantine__check(&j->quarantine, x->path, x->sha256, &m)) < 0) {
			submit_call(sub, rc, NULL, -1, m.text);
			return;
		}
	}
	for (arm = 0; arm < 2; arm++)
		request_submit_set_pin(sub->request, arm, sub->c[arm].real_path,
				       sub->c[arm].sha256);
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
		rtc_identify_abort(&c->pending); /* reaped already: the folder goes */
		c->status = QUAL_EINVAL;
		check_concluded(c);
		return;
	}
	how.timed_out = c->timed_out;
	c->status = rtc_identify_finish(&c->pending, &how, c->sub->j->check_timeout_s,
					&id, &m);
	snprintf(c->message, sizeof c->message, "%s", c->status ? m.text : "");
	snprintf(c->abi, sizeof c->abi, "%s", c->status ? "" : id.abi_name);
	snprintf(c->real_path, sizeof c->real_path, "%s", id.real_path);
	snprintf(c->sha256, sizeof c->sha256, "%s", id.sha256);
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
 * group of its own), for the file the policy check saw (checked, NULL
 * without a policy): another file there now is refused. On failure nothing
 * is left open. */
static int check_start(struct jobs *j, struct check *c, const char *path,
		       const struct stat *checked, struct qual_msg *msg)
{
	struct submit *sub = c->sub;
	int rc;

	snprintf(c->path, sizeof c->path, "%s", path);
	if ((rc = rtc_identify_start(path, checked, j->helper, &c->pending, msg)))
		return rc;
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

static int submit_validate(const struct submit_args *a, struct qual_msg *msg)
{
	size_t i;

	if (a->pairs > 1000000)
		return qual_fail(msg, QUAL_EINVAL, "'pairs' must be at most 1000000, got %d",
				 a->pairs);
	if (a->seed < 0 || a->seed > 0x7fffffff)
		return qual_fail(msg, QUAL_EINVAL,
				 "'seed' must be an integer in [0, 2147483647], got %lld",
				 (long long)a->seed);
	for (i = 0; a->cases && a->cases[i]; i++)
		if (fixture_find(a->cases[i]) < 0)
			return qual_fail(msg, QUAL_EINVAL, "unknown case '%s'", a->cases[i]);
	return 0;
}

/* The checks that need no child: the request, both files, the policy
 * (each file as it saw it into st[arm]). The quarantine waits for the
 * hashes the identify children report. */
static int submit_check_here(struct jobs *j, const struct submit_args *args,
			     struct stat st[2], struct qual_msg *msg)
{
	int arm, rc;

	if ((rc = submit_validate(args, msg)) ||
	    (rc = rtc_check_library(args->baseline, msg)) ||
	    (rc = rtc_check_library(args->candidate, msg)))
		return rc;
	for (arm = 0; j->roots && arm < 2; arm++) {
		char real[POLICY_PATH_MAX];
		if ((rc = policy_check_library((const char *const *)j->roots, j->nroots,
					       geteuid(), arm ? args->candidate : args->baseline,
					       real, sizeof real, &st[arm], msg)))
			return rc;
	}
	return 0;
}

int jobs_submit(struct jobs *j, const struct submit_args *args,
		jobs_submit_cb cb, void *ctx, struct qual_msg *msg)
{
	struct submit *sub;
	struct stat st[2];
	int arm, rc;

	if (j->closing)
		return qual_fail(msg, QUAL_EINVAL, "quald is shutting down");
	if ((rc = submit_check_here(j, args, st, msg)))
		return rc;
	sub = xcalloc(1, sizeof *sub);
	sub->j = j;
	sub->request = request_submit_to_json(args);
	if (!sub->request) {
		free(sub);
		return qual_fail(msg, QUAL_EINVAL, "cannot encode the request");
	}
	list_append(&j->submits, &sub->link);
	j->nsubmits++;
	for (arm = 0; arm < 2; arm++) {
		sub->c[arm].sub = sub;
		rc = check_start(j, &sub->c[arm], arm ? args->candidate : args->baseline,
				 j->roots ? &st[arm] : NULL, msg);
		if (rc < 0) {
			/* The callback never runs (sub->cb is not set yet): a
			 * child already started is stopped, and sub goes once
			 * it is reaped and its timer closed. */
			check_abort(&sub->c[0]);
			if (sub->handles == 0 && sub->pending == 0)
				submit_free(sub);
			return rc;
		}
	}
	sub->cb = cb;
	sub->ctx = ctx;
	return 0;
}

void submit__close_all(struct jobs *j)
{
	struct list_link *l;

	/* Nothing is freed here: a submit goes from its timers' close
	 * callbacks. */
	list_each(l, &j->submits) {
		struct submit *sub = list_item(l, struct submit, link);

		submit_call(sub, QUAL_EINVAL, NULL, -1, "quald is shutting down");
		check_abort(&sub->c[0]);
		check_abort(&sub->c[1]);
	}
}
