/* Children on the loop: the event loop's side of common/child.h. quald starts
 * every child (a job's worker, a slot's health check, a submit's identify)
 * with child_start() and learns here that it has ended, without blocking:
 * one uv_signal_t on SIGCHLD and a list of watched children. On each SIGCHLD,
 * and once right after a child is watched (it may have ended before), every
 * watched child that has exited (child_exited(): nothing is reaped that is
 * not ours) is reaped with child_reap(), which first kills whatever it left
 * in its own group or session, and its callback runs, exactly once, from the
 * loop.
 *
 * The watch and the child live in the owner's struct (its data gets back
 * to it, as a libuv handle's does); the set only links them.
 *
 * Orphans (common/child.h). A set that adopts (children_adopt_orphans():
 * quald's) makes this process a child subreaper: what a worker leaves
 * behind when it dies, however it dies (SIGKILL included), is reparented to
 * this process instead of init. Every child of this process that is not
 * watched is then such an orphan. Something can only have been orphaned
 * when a process below ended, so after a look that reaped a child, or that
 * finds an exited child that is not watched (an orphan, whose own children
 * are adopted now), every orphan is killed (SIGKILL), with the process group
 * it leads when that is no watched child's, and those that have exited are
 * reaped, without blocking
 * (child_kill_orphans(): one still dying is reaped at its own SIGCHLD);
 * children_close() makes a last sweep that waits for them. Every child of
 * such a process must therefore be watched from its start (child_start()
 * and children_watch() in one callback): one that is not is killed. */
#ifndef QUAL_DAEMON_CHILDREN_H
#define QUAL_DAEMON_CHILDREN_H

#include <uv.h>

#include "common/child.h"
#include "daemon/list.h"

struct child_watch;

/* Called once, when the watched child has exited and been reaped; ex says
 * how it ended (ex->timed_out is always false: deadlines are the owner's
 * timers). The watch is no longer in the set. */
typedef void (*child_watch_cb)(struct child_watch *w, const struct child_exit *ex);

struct child_watch {
	void *data;               /* the owner's */
	struct child *child;      /* borrowed: the started child */
	child_watch_cb cb;
	struct children *set;     /* NULL when not watched */
	struct list_link link;    /* in set->watched */
};

struct children {
	void *data;               /* the owner's */
	uv_signal_t sigchld;
	uv_timer_t kick;          /* the look right after a watch */
	struct list_link watched; /* struct child_watch.link */
	bool adopt;               /* children_adopt_orphans() */
	int handles;              /* open handles, while closing */
	void (*closed)(struct children *set);
};

/* Starts the SIGCHLD handle on loop (it cannot fail for SIGCHLD); set->data
 * is NULL. The set is closed with children_close(). */
void children_init(uv_loop_t *loop, struct children *set);

/* Watches c (started by child_start(), not yet reaped): cb runs once it
 * has exited. w->data is the caller's, left as it is. Takes no ownership
 * of w or c; both must live until cb has run. A child no one waits for any
 * more is killed and stays watched until it is reaped. */
void children_watch(struct children *set, struct child_watch *w, struct child *c,
		    child_watch_cb cb);

/* Makes this process a child subreaper and set the one that kills and reaps
 * what is orphaned below it (above). Returns 0, or QUAL_EIO with msg. */
int children_adopt_orphans(struct children *set, struct qual_msg *msg);

/* Closes the handles; closed runs from their close callbacks, never inside
 * this call. The set must hold no watch by then: a child still watched is
 * left unreaped (a caller's bug; it is said on stderr). A set that adopts
 * first kills and reaps every child left, waiting up to
 * CHILD_REAP_GRACE_S for them (then what is left is init's). */
void children_close(struct children *set, void (*closed)(struct children *set));

#endif
