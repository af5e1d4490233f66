/* The submit checks (jobs.h: jobs_submit): cheap local checks at once (the
 * request, both library files, the policy, the quarantine), then one
 * qual-compile identify child per arm (the daemon never loads a library);
 * when both have reported, the submit is refused or the job is stored and
 * queued. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/child.h"
#include "common/fsutil.h"
#include "common/xalloc.h"
#include "compile/rtc.h"
#include "daemon/jobs_internal.h"
#include "daemon/policy.h"
#include "fixtures/fixture.h"

/* One identify child of a submit check. */
struct check {
	struct submit *sub;
	int arm;                   /* 0 baseline, 1 candidate */
	uv_process_t proc;
	uv_timer_t timer;
	bool spawned, timed_out;
	int64_t exit_status;
	int term_signal;
	char dir[PATH_MAX];        /* private folder; "" = none */
	char path[PATH_MAX];       /* as given */
	char real[PATH_MAX];
	int status;                /* 0 or QUAL_E* */
	char message[PATH_MAX + 512];
	char abi[16];              /* "nvrtc", "hiprtc" or "" */
};

struct submit {
	struct jobs *j;
	json_t *request;           /* the stored form of the arguments */
	jobs_submit_cb cb;         /* NULL once called (or silenced) */
	void *ctx;
	struct check c[2];
	int pending;               /* checks not concluded */
	int handles;               /* open handles */
	struct submit *prev, *next;
};

static void check_dir_remove(struct check *c)
{
	fs_rm_tree(c->dir);
	c->dir[0] = '\0';
}

static void submit_free(struct submit *sub)
{
	struct jobs *j = sub->j;

	if (sub->prev)
		sub->prev->next = sub->next;
	else
		j->submits = sub->next;
	if (sub->next)
		sub->next->prev = sub->prev;
	check_dir_remove(&sub->c[0]);
	check_dir_remove(&sub->c[1]);
	json_decref(sub->request);
	free(sub);
	j->nsubmits--;
	jobs__close_check(j);
}

static void check_handle_closed(uv_handle_t *h)
{
	struct check *c = h->data;
	struct submit *sub = c->sub;

	if (--sub->handles == 0 && sub->pending == 0)
		submit_free(sub);
}

/* Reads the helper's result file (rtc.h: key=value lines ending in end=1)
 * into c->status, c->message and c->abi; false when it is missing or
 * incomplete. */
static bool check_result_read(struct check *c)
{
	char path[PATH_MAX + 32], *line = NULL;
	size_t cap = 0;
	ssize_t got;
	bool complete = false;
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", c->dir, RTC__RESULT_FILE);
	f = fopen(path, "re");
	if (!f)
		return false;
	while ((got = getline(&line, &cap, f)) > 0) {
		char *eq = strchr(line, '=');
		if (line[got - 1] == '\n')
			line[got - 1] = '\0';
		if (!eq)
			continue;
		*eq = '\0';
		if (!strcmp(line, "status"))
			c->status = atoi(eq + 1);
		else if (!strcmp(line, "message"))
			snprintf(c->message, sizeof c->message, "%s", eq + 1);
		else if (!strcmp(line, "abi"))
			snprintf(c->abi, sizeof c->abi, "%s", eq + 1);
		else if (!strcmp(line, "end"))
			complete = true;
	}
	free(line);
	fclose(f);
	return complete && c->status <= 0;
}

/* The last non-empty line the helper printed. */
static void check_stderr_last(const struct check *c, char *out, size_t cap)
{
	char path[PATH_MAX + 32], buf[4096];
	ssize_t got = -1;
	size_t end, start;
	int fd;

	out[0] = '\0';
	snprintf(path, sizeof path, "%s/%s", c->dir, RTC__STDERR_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	got = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (got <= 0)
		return;
	end = (size_t)got;
	while (end > 0 && (buf[end - 1] == '\n' || buf[end - 1] == '\r' || buf[end - 1] == ' '))
		end--;
	start = end;
	while (start > 0 && buf[start - 1] != '\n')
		start--;
	snprintf(out, cap, "%.*s", (int)(end - start), buf + start);
}

/* Decides what became of one identify child, in rtc_identify's words. */
static void check_outcome(struct check *c, double timeout_s)
{
	char sig[64], tail[256];

	if (check_result_read(c)) {
		if (c->status == 0 && strcmp(c->abi, "nvrtc") && strcmp(c->abi, "hiprtc")) {
			c->status = QUAL_EABI;
			snprintf(c->message, sizeof c->message,
				 "cannot load compiler '%s': no nvrtc or hiprtc entry points",
				 c->path);
		}
		return;
	}
	c->abi[0] = '\0';
	if (c->timed_out) {
		c->status = QUAL_ETIMEOUT;
		snprintf(c->message, sizeof c->message,
			 "compiler '%s' did not finish within %g s", c->path, timeout_s);
	} else if (c->term_signal) {
		c->status = QUAL_ECRASH;
		snprintf(c->message, sizeof c->message,
			 "compiler '%s' crashed while loading: killed by signal %s", c->path,
			 child_signal_name(c->term_signal, sig, sizeof sig));
	} else {
		check_stderr_last(c, tail, sizeof tail);
		c->status = QUAL_ECRASH;
		snprintf(c->message, sizeof c->message,
			 "compiler '%s' exited with status %d while loading without reporting%s%s",
			 c->path, (int)c->exit_status, tail[0] ? ": " : "", tail);
	}
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
	char id[JOB_ID_MAX];
	int arm, position, rc;

	if (!sub->cb)
		return;
	/* A library that crashes or hangs while loading is a result about it,
	 * as in qual-run: the job runs and its verdict says so. Everything
	 * else that went wrong is a refusal. */
	for (arm = 0; arm < 2; arm++) {
		struct check *x = &sub->c[arm];
		if (x->status && x->status != QUAL_ECRASH && x->status != QUAL_ETIMEOUT) {
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

	if ((rc = jobs__enqueue(j, sub->request, id, &position, &m)) < 0) {
		submit_call(sub, rc, NULL, -1, m.text);
		return;
	}
	submit_call(sub, 0, id, position, NULL);
	jobs__schedule_soon(j);
}

static void check_exit(uv_process_t *p, int64_t status, int sig)
{
	struct check *c = p->data;
	struct submit *sub = c->sub;

	c->exit_status = status;
	c->term_signal = sig;
	kill(-p->pid, SIGKILL);
	uv_timer_stop(&c->timer);
	check_outcome(c, sub->j->check_timeout_s);
	check_dir_remove(c);
	uv_close((uv_handle_t *)&c->proc, check_handle_closed);
	uv_close((uv_handle_t *)&c->timer, check_handle_closed);
	if (--sub->pending == 0)
		submit_decide(sub);
}

static void check_timer(uv_timer_t *t)
{
	struct check *c = t->data;

	c->timed_out = true;
	kill(-c->proc.pid, SIGKILL);
}

static void dir_of(const char *path, char *out, size_t cap)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(out, cap, ".");
	else if (slash == path)
		snprintf(out, cap, "/");
	else
		snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

/* Starts the identify child of one arm (rtc.h: qual-compile identify, in a
 * private folder, with the library's folder first on LD_LIBRARY_PATH, in a
 * session of its own). On failure nothing is left open. */
static int check_start(struct jobs *j, struct check *c, struct qual_msg *msg)
{
	const char *tmp = getenv("TMPDIR");
	const char *old = getenv("LD_LIBRARY_PATH");
	const char *drop[] = { "LD_LIBRARY_PATH=", "TMPDIR=", NULL };
	char libdir[PATH_MAX], *ld = NULL, *td = NULL, sub[PATH_MAX + 8];
	char errpath[PATH_MAX + 32];
	const char *add[3];
	char *argv[9];
	char **env;
	uv_process_options_t opt;
	uv_stdio_container_t stdio[3];
	int fd, rc;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	snprintf(c->dir, sizeof c->dir, "%s/quald-check-XXXXXX", tmp);
	if (!mkdtemp(c->dir)) {
		rc = qual_fail(msg, QUAL_EIO, "cannot create temporary folder '%s': %s",
			       c->dir, strerror(errno));
		c->dir[0] = '\0';
		return rc;
	}
	snprintf(sub, sizeof sub, "%s/tmp", c->dir);
	snprintf(errpath, sizeof errpath, "%s/%s", c->dir, RTC__STDERR_FILE);
	if (mkdir(sub, 0700) < 0 ||
	    (fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
		rc = qual_fail(msg, QUAL_EIO, "cannot create '%s': %s", errpath,
			       strerror(errno));
		check_dir_remove(c);
		return rc;
	}
	dir_of(c->real, libdir, sizeof libdir);
	if (asprintf(&ld, "LD_LIBRARY_PATH=%s%s%s", libdir, old && *old ? ":" : "",
		     old && *old ? old : "") < 0 ||
	    asprintf(&td, "TMPDIR=%s", sub) < 0)
		abort();
	add[0] = ld;
	add[1] = td;
	add[2] = NULL;
	env = child_env_with(drop, add);
	argv[0] = j->helper;
	argv[1] = "identify";
	argv[2] = "--lib";
	argv[3] = c->real;
	argv[4] = "--out";
	argv[5] = c->dir;
	argv[6] = "--label";
	argv[7] = c->path;
	argv[8] = NULL;
	memset(&opt, 0, sizeof opt);
	stdio[0].flags = UV_IGNORE;
	stdio[1].flags = UV_INHERIT_FD;
	stdio[1].data.fd = fd;
	stdio[2].flags = UV_INHERIT_FD;
	stdio[2].data.fd = fd;
	opt.file = j->helper;
	opt.args = argv;
	opt.env = env;
	opt.stdio = stdio;
	opt.stdio_count = 3;
	opt.exit_cb = check_exit;
	opt.flags = UV_PROCESS_DETACHED;
	rc = uv_spawn(j->loop, &c->proc, &opt);
	c->proc.data = c;
	close(fd);
	free(ld);
	free(td);
	child_env_free(env);
	if (rc < 0) {
		/* The handle was initialised: it is closed by the caller. */
		check_dir_remove(c);
		return qual_fail(msg, QUAL_EIO, "cannot start compiler helper '%s': %s",
				 j->helper, uv_strerror(rc));
	}
	c->spawned = true;
	uv_timer_init(j->loop, &c->timer);
	c->timer.data = c;
	uv_timer_start(&c->timer, check_timer, (uint64_t)(j->check_timeout_s * 1000.0), 0);
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

int jobs_submit(struct jobs *j, const struct submit_args *args,
		jobs_submit_cb cb, void *ctx, struct qual_msg *msg)
{
	struct submit *sub;
	int arm, rc;

	if (j->closing)
		return qual_fail(msg, QUAL_EINVAL, "quald is shutting down");
	if ((rc = submit_validate(args, msg)) ||
	    (rc = rtc_check_library(args->baseline, msg)) ||
	    (rc = rtc_check_library(args->candidate, msg)))
		return rc;
	if (j->roots) {
		char real[POLICY_PATH_MAX];
		for (arm = 0; arm < 2; arm++)
			if ((rc = policy_check_library((const char *const *)j->roots,
						       j->nroots, geteuid(),
						       arm ? args->candidate : args->baseline,
						       real, sizeof real, msg)))
				return rc;
	}
	if ((rc = quarantine__check(&j->quarantine, args->baseline, msg)) ||
	    (rc = quarantine__check(&j->quarantine, args->candidate, msg)))
		return rc;
	sub = xcalloc(1, sizeof *sub);
	sub->j = j;
	sub->request = request_submit_to_json(args);
	if (!sub->request) {
		free(sub);
		return qual_fail(msg, QUAL_EINVAL, "cannot encode the request");
	}
	for (arm = 0; arm < 2; arm++) {
		struct check *c = &sub->c[arm];
		const char *path = arm ? args->candidate : args->baseline;
		c->sub = sub;
		c->arm = arm;
		snprintf(c->path, sizeof c->path, "%s", path);
		if (strlen(path) >= sizeof c->path || !realpath(path, c->real)) {
			rc = qual_fail(msg, QUAL_EIO, "cannot load compiler '%s': %s", path,
				       strlen(path) >= sizeof c->path ? "path too long" :
				       strerror(errno));
			goto fail;
		}
	}
	sub->next = j->submits;
	if (j->submits)
		j->submits->prev = sub;
	j->submits = sub;
	j->nsubmits++;
	for (arm = 0; arm < 2; arm++) {
		struct check *c = &sub->c[arm];
		rc = check_start(j, c, msg);
		if (c->spawned) {
			sub->pending++;
			sub->handles += 2;
		}
		if (rc < 0) {
			/* The callback never runs; a child already started is
			 * killed and its handles closed, then sub is freed. */
			if (!c->spawned && c->proc.type == UV_PROCESS) {
				sub->handles++;
				uv_close((uv_handle_t *)&c->proc, check_handle_closed);
			}
			if (arm == 1 && sub->c[0].spawned)
				kill(-sub->c[0].proc.pid, SIGKILL);
			if (sub->handles == 0)
				submit_free(sub);
			return rc;
		}
	}
	sub->cb = cb;
	sub->ctx = ctx;
	return 0;
fail:
	json_decref(sub->request);
	free(sub);
	return rc;
}


void submit__close_all(struct jobs *j)
{
	struct submit *sub;

	for (sub = j->submits; sub; sub = sub->next) {
		submit_call(sub, QUAL_EINVAL, NULL, -1, "quald is shutting down");
		for (int arm = 0; arm < 2; arm++)
			if (sub->c[arm].spawned)
				kill(-sub->c[arm].proc.pid, SIGKILL);
	}
}
