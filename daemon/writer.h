/* The writer: one thread that makes every write of a running daemon to the
 * state directory (store.h: a job's creation, its state replacements, its
 * log's appends and syncs), in the order they were asked for, so that the
 * loop never waits on the disk. A frozen or slow filesystem stalls this
 * thread, not the loop: status and list answer from memory meanwhile, and
 * what waits for durability (a submit's acceptance, a line's relay) waits
 * for the request's callback.
 *
 * Order: requests are carried out one at a time, in the order they were
 * made, and their callbacks run on the loop in that same order, each after
 * its write (and its sync, where asked) returned. So a job's log gets its
 * lines in seq order, its state file is replaced after the lines asked for
 * before it are written, and a line's callback never runs before those of
 * the lines before it.
 *
 * Failures: a request that fails reports its status to its callback; a
 * fatal failure (store.h: Failures) is recorded by the store in this thread
 * and raised on the loop (store_fatal_raise) before the failing request's
 * callback runs, so the fatal hook (by default: the daemon stops at once)
 * runs on the loop, as it did when the loop wrote. */
#ifndef QUAL_DAEMON_WRITER_H
#define QUAL_DAEMON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>
#include <uv.h>

#include "common/err.h"
#include "daemon/store.h"
#include "proto/line.h"

struct writer;
struct writer_log;

/* What a request's callback is told: its status (0 or a negative code, with
 * message set), and for an append the line (as given, borrowed: take a
 * reference to keep it) and the tag it was given. */
struct writer_done {
	int status;
	const char *message;
	struct line *line;
	long tag;
};
typedef void (*writer_done_fn)(void *ctx, const struct writer_done *d);

/* Starts the thread for store s (borrowed; it must outlive the writer).
 * *out is ended with writer_close(). */
int writer_start(uv_loop_t *loop, struct store *s, struct writer **out,
		 struct qual_msg *msg);

/* store_job_create in the thread; copies both objects (borrowed). cb runs
 * once, on the loop, when the job is on disk or could not be created. */
void writer_job_create(struct writer *w, const char *id, json_t *request,
		       json_t *state, writer_done_fn cb, void *ctx);

/* store_state_write in the thread; copies state (borrowed). A failure is
 * fatal (store.h). cb (may be NULL) runs once on the loop after it. */
void writer_state_write(struct writer *w, const char *id, json_t *state,
			writer_done_fn cb, void *ctx);

/* store_job_remove in the thread (pruning; not fatal). cb (may be NULL)
 * runs once on the loop after it, with its status and message. */
void writer_job_remove(struct writer *w, const char *id, writer_done_fn cb, void *ctx);

/* fs_write_atomic(path, text, len, mode) in the thread (quald's own files
 * beside the jobs: quarantine.json); copies both. A failure is not fatal:
 * cb (may be NULL) gets the status and message, on the loop. */
void writer_file_replace(struct writer *w, const char *path, const char *text, size_t len,
			 mode_t mode, writer_done_fn cb, void *ctx);

/* A job's log for appending (opened in the thread on its first append).
 * Ended with writer_log_close(), which takes it. */
struct writer_log *writer_log_new(struct writer *w, const char *id);

/* store_log_append in the thread: line's text (a reference to line is held
 * until cb has run; the thread reads its bytes, never its count), synced
 * when sync; cb (may be NULL) runs once on the loop after the write (and
 * sync) returned, with line and tag handed back. */
void writer_log_append(struct writer_log *l, struct line *line,
		       bool sync, long tag, writer_done_fn cb, void *ctx);

/* Syncs and closes the log in the thread, after the appends before it; l is
 * freed once that is done. NULL is ignored. */
void writer_log_close(struct writer_log *l);

/* Blocks until every request made is carried out, then runs their
 * callbacks: only for the start (recovery), before anything is served,
 * when waiting on the disk stalls no one. */
void writer_wait(struct writer *w);

/* Requests made and not yet called back. */
long writer_pending(const struct writer *w);

/* Drains: every request made before it is carried out and called back
 * (those callbacks must make no new request); then the thread ends, its
 * handle closes and done runs from the loop. */
void writer_close(struct writer *w, void (*done)(void *ctx), void *ctx);

#endif
