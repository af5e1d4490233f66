/* What the two files of the state directory share (store.h is the contract
 * for everyone else):
 *   store.c      fatal failures, opening and the lock, ids, scanning, and
 *                each job's request and state files;
 *   store_log.c  each job's append-only log of checked records: appending,
 *                syncing, reading back and repairing.
 * Names are store__verb. */
#ifndef QUAL_DAEMON_STORE_INTERNAL_H
#define QUAL_DAEMON_STORE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "daemon/store.h"

#define STORE_JOBS "jobs"
#define STORE_REQUEST "request.json"
#define STORE_STATE "state.json"
#define STORE_LOG "log.jsonl"
#define STORE_SUMMARY "summary.json"
#define STORE_LOCK "lock"
/* A state or request file is a few hundred bytes; anything near this is not
 * ours. */
#define STORE_JSON_MAX (4 << 20)

struct store {
	char *dir;
	char *jobs;  /* <dir>/jobs */
	int lock_fd; /* <dir>/lock, flock()ed exclusively while open */
};

/* A failed write or sync: QUAL_EIO with msg set, and the fatal hook's call
 * when is_fatal (the first time). */
int store__fail_io(bool is_fatal, struct qual_msg *msg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Every write after a fatal failure is refused, so that a hook that returns
 * leaves nothing half written after it. Returns QUAL_EIO with msg set. */
int store__refuse_after_fatal(struct qual_msg *msg);

/* Formats a path into out[cap]; QUAL_EINVAL with msg set when it does not
 * fit. */
int store__path_fmt(char *out, size_t cap, struct qual_msg *msg, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
