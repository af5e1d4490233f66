/* GPU health checks of a slot (jobs_internal.h): `qual-run --health --device
 * N` loads, runs and checks a tiny kernel. It runs after a job whose worker
 * crashed, hung (a time limit) or reported "gpu":"faulted"|"hung", before the
 * slot's next job. A check that passes puts the slot back in service; one
 * that fails takes it out of service until quald restarts (jobs.h). The
 * same check, run at start for N = 0, 1, ... until a device is missing,
 * finds the GPUs of --devices auto (jobs_find_gpus), so that quald itself
 * never loads a GPU runtime. */
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/child.h"
#include "common/lifetime.h"
#include "common/xalloc.h"
#include "daemon/jobs_internal.h"
#include "daemon/oplog.h"

/* A GPU health check taking longer than this failed (a hung GPU). */
#define HEALTH_TIMEOUT_MS 60000
/* Bytes of a health check's stdout read: its one line is a few hundred. */
#define HEALTH_OUT_CAP 65536

/* What a health check must not inherit from quald: the systemd variables
 * are quald's alone, and its die-with-parent variable names quald. */
static const char *const health_env_drop[] = {
	"QUAL_DIE_WITH_PARENT=", "LISTEN_FDS=", "LISTEN_PID=", "LISTEN_FDNAMES=",
	"NOTIFY_SOCKET=", "WATCHDOG_USEC=", "WATCHDOG_PID=", NULL
};

struct health {
	struct jobs *j;
	int slot;
	struct child child;
	struct child_watch watch;
	uv_timer_t timer;          /* the time limit */
	bool timed_out;            /* the limit killed it */
	char *failed;              /* why the check failed (own string), or
				    * NULL: it passed, or quald is closing */
};

/* The check is over: its slot is back in service, or out of service for
 * why it failed. */
static void health_closed(uv_handle_t *h)
{
	struct health *hc = h->data;
	struct jobs *j = hc->j;
	struct slot *sl = &j->slots[hc->slot];

	sl->check = NULL;
	sl->state = hc->failed ? SLOT_OUT : SLOT_IDLE;
	sl->out_reason = hc->failed;
	j->nhealth--;
	free(hc);
	jobs__schedule_soon(j);
	jobs__close_check(j);
}

/* The check failed, for why: its slot goes out of service once it closes. */
static void health_failed(struct health *hc, const char *why)
{
	free(hc->failed);
	hc->failed = xstrdup(why);
	oplog_warn("slot %d: %s", hc->slot, why);
}

static void health_exit(struct child_watch *cw, const struct child_exit *ex)
{
	struct health *hc = cw->data;
	struct jobs *j = hc->j;
	int s = hc->slot;
	char why[256], how[64], reason[512];

	uv_timer_stop(&hc->timer);
	if (ex->status == 0 && !hc->timed_out) {
		j->slots[s].needs_check = false;
		oplog_warn("slot %d (gpu %d): health check passed", s, j->slots[s].device);
	} else if (!j->closing) {
		if (hc->timed_out)
			snprintf(why, sizeof why, "did not finish within %d s",
				 HEALTH_TIMEOUT_MS / 1000);
		else if (child_exit_signal(ex))
			snprintf(why, sizeof why, "%s", child_exit_text(ex, how, sizeof how));
		else
			snprintf(why, sizeof why, "exit status %d", child_exit_code(ex));
		snprintf(reason, sizeof reason, "gpu %d failed its health check (%s) after a "
			 "faulted or hung job: out of service until quald restarts",
			 j->slots[s].device, why);
		health_failed(hc, reason);
	}
	uv_close((uv_handle_t *)&hc->timer, health_closed);
}

static void health_timer(uv_timer_t *t)
{
	struct health *hc = t->data;

	hc->timed_out = true;
	child_kill(&hc->child, SIGKILL);
}

void health__stop(struct health *hc)
{
	if (hc->child.pid > 0)
		child_kill(&hc->child, SIGKILL);
}

void health__start(struct jobs *j, int s)
{
	struct health *hc = xcalloc(1, sizeof *hc);
	char dev[16], die[64], what[PATH_MAX + 64];
	const char *add[] = { die, NULL };
	const char *argv[] = { j->worker, "--health", "--device", dev, NULL };
	struct qual_msg m;
	char **env;
	int rc;

	snprintf(dev, sizeof dev, "%d", j->slots[s].device);
	snprintf(die, sizeof die, QUAL_PARENT_ENV "=%ld", (long)getpid());
	hc->j = j;
	hc->slot = s;
	j->slots[s].state = SLOT_CHECKING;
	j->slots[s].check = hc;
	j->nhealth++;
	uv_timer_init(j->loop, &hc->timer);
	hc->timer.data = hc;
	env = child_env_with(health_env_drop, add);
	child_init(&hc->child);
	hc->child.argv = argv;
	hc->child.env = (const char *const *)env;
	/* Its stderr is the daemon's: what it says lands in the daemon's log. */
	hc->child.out = CHILD_NULL;
	hc->child.group = CHILD_SESSION_NEW;
	hc->child.die_with_parent = true;
	oplog_warn("slot %d (gpu %d): checking the gpu's health before its next job", s,
		   j->slots[s].device);
	snprintf(what, sizeof what, "the health check of gpu %d ('%s')", j->slots[s].device,
		 j->worker);
	hc->child.name = what;
	rc = child_start(&hc->child, &m);
	hc->child.name = NULL;
	child_env_free(env);
	if (rc < 0) {
		health_failed(hc, m.text);
		uv_close((uv_handle_t *)&hc->timer, health_closed);
		return;
	}
	hc->watch.data = hc;
	children_watch(&j->children, &hc->watch, &hc->child, health_exit);
	uv_timer_start(&hc->timer, health_timer, HEALTH_TIMEOUT_MS, 0);
}

/* One `worker --health --device dev`, waited for: its health line (a new
 * reference), or NULL with why when it printed none. */
static json_t *health_probe(const char *worker, int dev, char *why, size_t cap)
{
	char ordinal[16], die[64], what[PATH_MAX + 64], how[64];
	const char *add[] = { die, NULL };
	const char *argv[] = { worker, "--health", "--device", ordinal, NULL };
	struct child c;
	struct child_exit ex = {0};
	struct qual_msg m;
	json_t *line = NULL;
	char *out = NULL, **env;
	size_t len = 0;
	double deadline = child_now() + HEALTH_TIMEOUT_MS / 1000.0;
	int rc;

	snprintf(ordinal, sizeof ordinal, "%d", dev);
	snprintf(die, sizeof die, QUAL_PARENT_ENV "=%ld", (long)getpid());
	snprintf(what, sizeof what, "the gpu probe of device %d ('%s')", dev, worker);
	env = child_env_with(health_env_drop, add);
	child_init(&c);
	c.argv = argv;
	c.env = (const char *const *)env;
	c.name = what;
	c.out = CHILD_PIPE;
	c.err = CHILD_NULL; /* "not healthy: no device" is the expected end */
	c.group = CHILD_SESSION_NEW;
	c.die_with_parent = true;
	rc = child_start(&c, &m);
	child_env_free(env);
	if (rc < 0) {
		snprintf(why, cap, "%s", m.text);
		return NULL;
	}
	rc = child_read_capped(c.out_pipe, HEALTH_OUT_CAP, deadline, &out, &len, NULL);
	close(c.out_pipe);
	(void)child_wait(&c, deadline, &ex); /* a wait that fails leaves ex zero */
	if (rc == 0 && out)
		line = json_loadb(out, strcspn(out, "\n"), 0, NULL);
	if (!json_is_object(line)) {
		json_decref(line);
		line = NULL;
		snprintf(why, cap, "%s %s without a health line", what,
			 ex.timed_out ? "did not finish in time" : child_exit_text(&ex, how, sizeof how));
	}
	free(out);
	return line;
}

/* Probes in a row that printed no health line before the search stops. */
#define JOBS_PROBE_SILENT_MAX 2

int jobs_find_gpus(const char *worker, int *devices, int max, char *why, size_t cap)
{
	int n = 0, silent = 0;

	why[0] = '\0';
	for (int dev = 0; dev < max; dev++) {
		char text[PATH_MAX + 256];
		json_t *line = health_probe(worker, dev, text, sizeof text);
		json_t *device = json_object_get(line, "device");
		const char *message = json_string_value(json_object_get(line, "message"));

		/* Decided from the fields, not the message: a line with a null
		 * device is the end of the GPUs. A probe that printed no line
		 * (it crashed or hung) says nothing about the next ordinal: that
		 * GPU gets no slot and the search goes on, up to
		 * JOBS_PROBE_SILENT_MAX such probes in a row (a worker that
		 * cannot run at all fails every one). */
		if (!line) {
			oplog(LOG_WARNING, "gpu %d: no slot for it: %s", dev, text);
			if (n == 0 && !why[0])
				snprintf(why, cap, "%s", text);
			if (++silent >= JOBS_PROBE_SILENT_MAX)
				break;
			continue;
		}
		silent = 0;
		if (!json_is_object(device)) {
			if (n == 0)
				snprintf(why, cap, "%s", message ? message : "no device");
			json_decref(line);
			break;
		}
		if (json_is_true(json_object_get(line, "ok")))
			devices[n++] = dev;
		else
			oplog(LOG_WARNING, "gpu %d failed its health check at start, no slot for "
				"it: %s", dev, message ? message : "(no message)");
		json_decref(line);
	}
	return n;
}
