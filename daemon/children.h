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
 * to it, as a libuv handle's does); the set only links them. */
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

/* Closes the handles; closed runs from their close callbacks, never inside
 * this call. The set must hold no watch by then: a child still watched is
 * left unreaped (a caller's bug; it is said on stderr). */
void children_close(struct children *set, void (*closed)(struct children *set));

#endif
