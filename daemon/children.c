/* Children on the loop (children.h). */
#include "daemon/children.h"
#include "daemon/oplog.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/xalloc.h"

static void unlink_watch(struct child_watch *w)
{
	list_remove(&w->link);
	w->set = NULL;
}

/* Kills and reaps every child that is not watched (children.h, Orphans);
 * blocks only when deadline is set. */
static void children_sweep(struct children *set, double deadline)
{
	pid_t *keep = NULL;
	size_t n = 0, cap = 0;
	struct list_link *l;

	list_each(l, &set->watched) {
		struct child_watch *w = list_item(l, struct child_watch, link);

		if (w->child->pid <= 0)
			continue;
		XGROW(keep, n + 1, cap);
		keep[n++] = w->child->pid;
	}
	if (child_kill_orphans(keep, n, deadline) < 0)
		oplog(LOG_ERR, "cannot look for orphaned processes in /proc: %s",
			strerror(errno));
	free(keep);
}

/* Reaps every watched child that has exited and calls its callback. A
 * callback may watch or unwatch others, so the walk starts again after
 * each. */
static void children_look(struct children *set)
{
	struct list_link *l;
	bool reaped = false;
	siginfo_t si;

again:
	list_each(l, &set->watched) {
		struct child_watch *w = list_item(l, struct child_watch, link);
		struct child_exit ex;

		if (!child_exited(w->child))
			continue;
		unlink_watch(w);
		memset(&ex, 0, sizeof ex);
		if (child_reap(w->child, &ex) < 0) {
			/* It had exited, so only someone else's waitpid can
			 * have taken it: report it as killed, the least it can
			 * have been. */
			oplog(LOG_ERR, "cannot reap a child that has exited");
			ex.status = SIGKILL;
		}
		w->cb(w, &ex);
		reaped = true;
		goto again;
	}
	if (!set->adopt)
		return;
	/* A scan reads the stat file of every process (1.5 ms for 130 of them
	 * on the CI machine): only when something can have been orphaned,
	 * which is when a child has ended: one of ours that was just reaped,
	 * or one that is no one's (an orphan adopted earlier, whose own
	 * children are adopted now). Every watched child that has exited was
	 * reaped above, so an exited child left is such a one. */
	memset(&si, 0, sizeof si);
	if (reaped || (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		       si.si_pid > 0))
		children_sweep(set, 0);
}

static void on_sigchld(uv_signal_t *h, int sig)
{
	(void)sig;
	children_look(h->data);
}

static void on_kick(uv_timer_t *t)
{
	children_look(t->data);
}

void children_init(uv_loop_t *loop, struct children *set)
{
	int rc;

	memset(set, 0, sizeof *set);
	list_init(&set->watched);
	uv_signal_init(loop, &set->sigchld);
	uv_timer_init(loop, &set->kick);
	set->sigchld.data = set->kick.data = set;
	/* Fails only for a bad signal number, or when sigaction() does, which
	 * it does not for SIGCHLD: a bug, which a program stops on. */
	if ((rc = uv_signal_start(&set->sigchld, on_sigchld, SIGCHLD)) < 0) {
		oplog(LOG_ERR, "cannot watch SIGCHLD: %s", uv_strerror(rc));
		abort();
	}
	/* Neither keeps the loop alive: a child does, through its owner's
	 * pipes and timers. */
	uv_unref((uv_handle_t *)&set->sigchld);
	uv_unref((uv_handle_t *)&set->kick);
}

void children_watch(struct children *set, struct child_watch *w, struct child *c,
		    child_watch_cb cb)
{
	w->child = c;
	w->cb = cb;
	w->set = set;
	list_append(&set->watched, &w->link);
	/* It may have exited before SIGCHLD was watched for it. */
	uv_timer_start(&set->kick, on_kick, 0, 0);
}

static void on_closed(uv_handle_t *h)
{
	struct children *set = h->data;

	if (--set->handles == 0 && set->closed)
		set->closed(set);
}

int children_adopt_orphans(struct children *set, struct qual_msg *msg)
{
	int rc = child_become_subreaper(msg);

	if (rc == 0)
		set->adopt = true;
	return rc;
}

void children_close(struct children *set, void (*closed)(struct children *set))
{
	if (!list_empty(&set->watched))
		oplog(LOG_ERR, "closing while children are watched");
	if (set->adopt)
		children_sweep(set, child_now() + CHILD_REAP_GRACE_S);
	set->closed = closed;
	set->handles = 2;
	uv_close((uv_handle_t *)&set->sigchld, on_closed);
	uv_close((uv_handle_t *)&set->kick, on_closed);
}
