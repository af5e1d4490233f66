/* The bounds on bytes queued for replies that carry a job's stored lines
 * (control show and watch replay, HTTP /api/jobs/ID and event-stream
 * replay; docs/quald.md, "Limits"). Such a reply reads its job's log through
 * a cursor (jobs.h, jobs_cursor_next) a chunk at a time, and reads the next
 * chunk only once its client has taken all but REPLYCAP_CLIENT bytes of
 * what is queued for it, and while every such reply together has less than
 * REPLYCAP_GLOBAL bytes queued. A reply held by the global bound waits
 * (replycap_wait) until bytes of another are written. Process-wide: one
 * count for the control socket and the HTTP endpoint together; everything
 * runs on quald's one loop. */
#ifndef QUAL_DAEMON_REPLYCAP_H
#define QUAL_DAEMON_REPLYCAP_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/list.h"

/* One read of a log: some 70 lines of a usual job. Small, so that a turn
 * of the loop that reads a chunk for each of many clients stays short (64
 * clients of a 60 MB log: bench/RESULTS.md); a reply reads one chunk a
 * turn, the next once the last is written. */
#define REPLYCAP_CHUNK ((size_t)16 << 10)
/* What one client may have queued before its reply reads on. A reply that
 * reads a chunk a turn stays near one chunk; this bounds what a reply that
 * queues more (a line over the chunk, the JSON around it) may hold. */
#define REPLYCAP_CLIENT ((size_t)256 << 10)
/* What all of them may have queued: 128 clients' worth of their bound, so
 * that a host's usual readers never wait on it, and a crowd of clients that
 * do not read costs quald at most this. */
#define REPLYCAP_GLOBAL ((size_t)32 << 20)

/* A reply waiting for room: wake runs once, from a loop callback, when
 * bytes of another reply have been written and there is room again. */
struct replycap_waiter {
	struct list_link link;
	void (*wake)(struct replycap_waiter *w);
};

void replycap_waiter_init(struct replycap_waiter *w, void (*wake)(struct replycap_waiter *w));

/* Whether a reply may read its next chunk: under REPLYCAP_GLOBAL. */
bool replycap_room(void);

/* Counts n bytes queued for a reply. */
void replycap_take(size_t n);

/* Counts n bytes as written (or dropped), and wakes the waiters, oldest
 * first, while there is room. Called from a loop callback (a write's
 * completion, a close), never from inside a waiter's wake. */
void replycap_give(size_t n);

/* Queues w to be woken (nothing when it waits already). */
void replycap_wait(struct replycap_waiter *w);

/* Takes w out of the waiters (nothing when it does not wait). */
void replycap_unwait(struct replycap_waiter *w);

/* Bytes queued for replies now (metrics). */
size_t replycap_queued(void);

#endif
