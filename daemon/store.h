/* The state directory: quald's jobs on disk, so that a restart loses nothing
 * that was acknowledged. Plain synchronous file I/O on small local files; the
 * caller (jobs.c) decides when. Layout:
 *
 *   <dir>/jobs/<id>/request.json  the submit arguments
 *   <dir>/jobs/<id>/state.json    the job's state (replaced atomically)
 *   <dir>/jobs/<id>/log.jsonl     the job's lines, append-only, one per line
 *
 * A job folder is built complete under a temporary name (".<id>.new") and
 * renamed into place, so a folder with a job's name always holds both JSON
 * files; a crash while creating leaves only a temporary folder, which the
 * next scan removes. Ids are "j" followed by at least 6 decimal digits
 * (j000001), increasing; the next id is one past the largest folder there. */
#ifndef QUAL_STORE_H
#define QUAL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "err.h"

#define STORE_ID_MAX 32

struct store;

/* Opens (creating it and its jobs folder when missing, mode 0750) the state
 * directory dir. *out is freed with store_free(). */
int store_open(const char *dir, struct store **out, struct qual_msg *msg);
void store_free(struct store *s);

/* The job id of number num (>= 1) into out ("j000001"). */
void store_id_format(long num, char *out, size_t cap);

/* The number of a job id, or -1 when id is not one ("j" and 6+ digits). */
long store_id_parse(const char *id);

/* Lists the job folders: their numbers, ascending, in a new array *nums
 * (free()) of *n entries. Removes temporary folders left by a crash while a
 * job was being created. */
int store_scan(struct store *s, long **nums, int *n, struct qual_msg *msg);

/* Creates job id's folder with request.json, state.json and an empty log,
 * each synced, and renames it into place (synced). Borrows both objects.
 * QUAL_EINVAL when the job exists already. */
int store_job_create(struct store *s, const char *id, json_t *request,
		     json_t *state, struct qual_msg *msg);

/* Replaces state.json atomically: writes a temporary file, syncs it, renames
 * it over the old one and syncs the folder. Borrows state. */
int store_state_write(struct store *s, const char *id, json_t *state,
		      struct qual_msg *msg);

/* Reads request.json and state.json into new references (either pointer may
 * be NULL to skip that file). */
int store_job_read(struct store *s, const char *id, json_t **request,
		   json_t **state, struct qual_msg *msg);

/* Opens the job's log for appending; *fd is closed by the caller. */
int store_log_open(struct store *s, const char *id, int *fd,
		   struct qual_msg *msg);

/* Appends line (len bytes, no newline in it) and a newline in one write, and
 * syncs the file to disk when sync is set. */
int store_log_append(int fd, const char *line, size_t len, bool sync,
		     struct qual_msg *msg);

/* Syncs the log to disk. */
int store_log_sync(int fd, struct qual_msg *msg);

struct store_log_info {
	long lines;        /* complete lines (ending in a newline) */
	off_t good_bytes;  /* bytes up to the end of the last complete line */
	off_t torn_bytes;  /* bytes after it: an incomplete last line, ignored */
};

/* Calls fn for each complete line of the job's log (line without its
 * newline, NUL-terminated, valid during the call only), in order; stops
 * early when fn returns nonzero. An incomplete last line (no newline: the
 * daemon died while writing it) is not passed to fn and is reported in
 * info->torn_bytes. info may be NULL. */
typedef int (*store_line_fn)(void *ctx, const char *line, size_t len);
int store_log_read(struct store *s, const char *id, store_line_fn fn,
		   void *ctx, struct store_log_info *info, struct qual_msg *msg);

/* Cuts an incomplete last line off the log (so that the next line appended
 * starts on a line of its own), syncing the file; info as store_log_read
 * reports it. Does nothing when torn_bytes is 0. */
int store_log_repair(struct store *s, const char *id,
		     const struct store_log_info *info, struct qual_msg *msg);

#endif
