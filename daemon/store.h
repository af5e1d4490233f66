/* The state directory: quald's jobs on disk, so that a restart loses nothing
 * that was acknowledged. Plain synchronous file I/O on small local files; the
 * caller decides when and in which thread (a running daemon writes only from
 * its writer thread: writer.h). Layout:
 *
 *   <dir>/lock                    held (flock, exclusive) by the one quald
 *                                 that has the directory open; holds its pid
 *   <dir>/jobs/<id>/request.json  the submit arguments
 *   <dir>/jobs/<id>/state.json    the job's state (replaced atomically)
 *   <dir>/jobs/<id>/log.jsonl     the job's lines, append-only, one record a
 *                                 line (below)
 *   <dir>/jobs/<id>/summary.json  an ended job's history summary (history.c),
 *                                 {"cases":[...]}, replaced atomically; a
 *                                 copy of what its log says, rebuilt from
 *                                 the log when missing or unreadable
 *
 * A job folder is built complete under a temporary name (".<id>.new") and
 * renamed into place, so a folder with a job's name always holds both JSON
 * files; a crash while creating leaves only a temporary folder, which the
 * next scan removes. Ids are "j" followed by at least 6 decimal digits
 * (j000001), increasing; the next id is one past the largest folder there.
 *
 * Pruning (quald --keep-jobs, --keep-days: store_job_remove) renames a
 * finished job's folder to that same temporary name, syncs the jobs folder
 * and then removes it: a crash in between leaves a folder the next scan
 * removes, never a job half there. Ids are never issued twice: retention
 * never removes the newest job (the one with the largest id), so "one past
 * the largest folder" stays one past every id issued, without a second
 * record of the highest id that would have to be kept durable beside the
 * folders and agree with them after a crash. (A create that failed left
 * no folder and was never acknowledged; its id may come again.) The cost:
 * the newest job outlives --keep-days until a newer one ends.
 *
 * Log records. Each line L of a job (a JSON object: every line jobs.c writes
 * is one) is stored as L with one member spliced in before its closing brace
 * and a newline after it:
 *
 *     L without its last '}'  ,"_check":"<16 hex digits>"}  \n
 *
 * The 16 lower-case hex digits are the first 64 bits of the SHA-256 of L
 * itself (OpenSSL). The file stays JSON lines, readable by people and by jq,
 * while a torn or corrupted record is detected; store_log_read checks every
 * record, removes the member again and hands back L byte for byte, which is
 * what show and watch send. (By hand: take the record without its newline,
 * cut the last 29 bytes, add '}', and compare sha256(that)[:16] with them.)
 *
 * Records are checked one by one. A record is bad when it is over-long
 * (more than LINES_MAX and a little: it is skipped in bounded chunks, never
 * held whole), its check does not match or is malformed, or it has no check
 * although a record before it had one. A run of bad records with a good
 * record after it is lost: its bytes stay in the file (evidence; nothing
 * rewrites a log), every read skips them, reports them in store_log_info
 * (lost, lost_bytes, lost_where: byte offsets and why) and warns on stderr,
 * and the records after it are read as usual (recover.c marks the job
 * damaged). The valid prefix ends after the last good record: what follows
 * it (bad records, or a last record without its newline: the daemon or the
 * machine died while writing it) is the torn tail: it is never handed to a
 * reader, it is reported on stderr each time a log is read (the job, the
 * byte offset, why, and how many bytes), and recovery cuts it off
 * (store_log_repair) and records the cut in the job's log. Records
 * without a check at the start of a log were written before checks existed:
 * they are accepted unchecked, with a warning, when each is a JSON object
 * that does not end like a checked record (a member with a 6-byte key and a
 * 16-byte string value: such a record is held to its check, so that a
 * changed byte in "_check" cannot pass it off as an old one).
 *
 * Durability. Every file is synced before a rename makes it visible, and the
 * folder holding the renamed entry is synced after it, so that after a crash
 * a name either points at complete, synced content or does not exist; a
 * created job (store_job_create) and a replaced state (store_state_write)
 * are on disk when the call returns, so the caller may acknowledge them.
 * Log records are synced when the caller asks (jobs.c: each case verdict and
 * verdict line, and the job's end). A running daemon makes these calls from
 * its writer thread (writer.h), in order, and acknowledges only from their
 * callbacks: a submit is accepted once its job's creation returned, a line
 * is relayed once its append (and sync, where asked) returned, so what a
 * client was told is on disk exactly as when the loop wrote; meanwhile the
 * loop answers status and list from memory, whatever the disk does.
 *
 * Exclusive use. store_open takes <dir>/lock with flock(LOCK_EX | LOCK_NB)
 * and holds it until store_free (the descriptor is close-on-exec: no child
 * keeps it); a second daemon on the same directory is refused, the message
 * naming the directory and the holder's pid, before it reads or writes
 * anything.
 *
 * Failures. A failed sync, or a failed write of a job that exists (its
 * state, its log, the repair of its log), means the disk and the daemon's
 * memory may disagree from now on; the store then calls its fatal hook
 * (store_fatal_hook; by default the daemon stops at once, exit status 3) and
 * refuses every later write. In the writer thread the hook is not called
 * there: the failure is recorded and raised on the loop (store_fatal_raise)
 * from the writer's callback. Messages name the file (and so the job).
 * Failing to create a job is not fatal (nothing was acknowledged: the
 * submit is refused), nor is a failed read. */
#ifndef QUAL_STORE_H
#define QUAL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "common/err.h"

#define STORE_ID_MAX 32

struct store;

/* Opens (creating it and its jobs folder when missing, mode 0750, and
 * syncing both folders) the state directory dir, and takes its lock (see
 * Exclusive use): QUAL_EINVAL, "state directory 'D' is in use by another
 * quald (pid N): it holds 'D/lock'", when another process has it. *out is
 * freed with store_free(), which lets the lock go. Failures are returned,
 * never fatal: the daemon is not running anything yet. */
int store_open(const char *dir, struct store **out, struct qual_msg *msg);
void store_free(struct store *s);

/* The job id of number num (>= 1) into out ("j000001"): proto/vocab.h's one
 * rule for job ids, which every door takes. */
void store_id_format(long num, char *out, size_t cap);

/* The number of a job id, or -1 when id is not one ("j" and 6+ digits). */
long store_id_parse(const char *id);

/* Lists the job folders: their numbers, ascending, in a new array *nums
 * (free()) of *n entries. Removes temporary folders left by a crash while a
 * job was being created. */
int store_scan(struct store *s, long **nums, int *n, struct qual_msg *msg);

/* Creates job id's folder with request.json, state.json and an empty log,
 * each synced, and renames it into place (synced): when it returns 0 the job
 * survives a crash. Borrows both objects. QUAL_EINVAL when the job exists
 * already; a failure leaves no folder of that name (a failed sync is also
 * fatal). */
int store_job_create(struct store *s, const char *id, json_t *request,
		     json_t *state, struct qual_msg *msg);

/* Removes job id's folder (pruning, above): renamed to ".<id>.new", the
 * jobs folder synced, then removed. Not fatal: a failure leaves the job on
 * disk (the next start reads it back), and after a failed sync the job may
 * come back after a crash; either way nothing acknowledged is lost.
 * QUAL_EINVAL for a bad id, QUAL_EIO when the rename or sync failed. */
int store_job_remove(struct store *s, const char *id, struct qual_msg *msg);

/* Replaces state.json atomically: writes a temporary file, syncs it, renames
 * it over the old one and syncs the folder. Borrows state. Any failure is
 * fatal (the old state may still be on disk while the caller goes on with
 * the new one). */
int store_state_write(struct store *s, const char *id, json_t *state,
		      struct qual_msg *msg);

/* Reads request.json and state.json into new references (either pointer may
 * be NULL to skip that file). */
int store_job_read(struct store *s, const char *id, json_t **request,
		   json_t **state, struct qual_msg *msg);

/* Opens the job's log for appending; *fd is closed by the caller. A failure
 * is fatal (the job exists, so its log must be writable). */
int store_log_open(struct store *s, const char *id, int *fd,
		   struct qual_msg *msg);

/* The path of job id's log into out (for messages). */
int store_log_path(struct store *s, const char *id, char *out, size_t cap,
		   struct qual_msg *msg);

/* Appends line (len bytes, a JSON object with at least one member, no
 * newline in it) as one record (its check member added, see above) in one
 * write, and syncs the file to disk when sync is set. path names the log in
 * messages (NULL: "log"). QUAL_EINVAL (not fatal, nothing written) when
 * line is not such an object text; a failed write or sync is fatal (a
 * partial record may be left: the next start cuts it off). */
int store_log_append(int fd, const char *path, const char *line, size_t len,
		     bool sync, struct qual_msg *msg);

/* Syncs the log to disk (path as for store_log_append). A failure is
 * fatal. */
int store_log_sync(int fd, const char *path, struct qual_msg *msg);

struct store_log_info {
	long lines;        /* good records in the valid prefix */
	off_t good_bytes;  /* bytes of the valid prefix (up to the end of its
			    * last record's newline): where the torn tail
			    * begins */
	off_t torn_bytes;  /* bytes after it, ignored; 0 when the whole file is
			    * valid */
	const char *torn_why; /* why the prefix ends there (static text, e.g.
			       * "check mismatch"), NULL when torn_bytes is 0 */
	long unchecked;    /* records of the prefix without a check (written
			    * before checks existed) */
	long lost;         /* bad records inside the prefix, skipped (0: none) */
	off_t lost_bytes;  /* their bytes */
	char lost_where[256]; /* "bytes A-B (WHY), ..." for the first few runs,
			       * "" when lost is 0 */
};

/* Calls fn for each good record of the job's log's valid prefix (the line
 * as it was appended, without the check member and the newline,
 * NUL-terminated, valid during the call only), in order, skipping lost ones
 * (with a warning on stderr naming them); memory stays bounded by one
 * record of LINES_MAX whatever the file holds; stops early when fn returns
 * nonzero (info then describes the records read so far, torn_bytes 0). The
 * torn tail, if any, is not passed to fn: it is reported in info and in a
 * warning on stderr naming the job, the byte offset where it starts, why and
 * its size. info may be NULL. */
typedef int (*store_line_fn)(void *ctx, const char *line, size_t len);
int store_log_read(struct store *s, const char *id, store_line_fn fn,
		   void *ctx, struct store_log_info *info, struct qual_msg *msg);

/* A cursor over a job's log: opened once, it keeps the file open and where
 * it stands, and each store_cursor_read hands out the next good records from
 * there, checked as store_log_read checks them (lost runs skipped and
 * counted, the torn tail left unread). A read that reaches the end of the
 * file (or a record fn puts back) leaves the cursor before what it did not
 * hand out, so a later read sees records appended meanwhile, the tail
 * completed, or a run of bad records that a good one now follows (lost).
 * Memory: one buffer, 64 KiB, grown for a long record up to one record of
 * LINES_MAX. What store_cursor_read's fn returns: */
enum store_cursor_step {
	STORE_CURSOR_NEXT = 0,   /* go on */
	STORE_CURSOR_STOP = 1,   /* stop after this record */
	STORE_CURSOR_AGAIN = 2,  /* stop before it: the next read hands it out
				  * again */
};
struct store_cursor;

/* Opens job id's log for reading from its start; QUAL_ENOENT when it has
 * none. *out is new: free it with store_cursor_free. */
int store_cursor_open(struct store *s, const char *id, struct store_cursor **out,
		      struct qual_msg *msg);

/* Hands out good records to fn (line as for store_log_read, NUL-terminated,
 * valid during the call; fn returns an enum store_cursor_step) until fn
 * stops, the end of the file, or records of max_bytes or more have been
 * handed out (at least one is, when there is one; scanning bad records
 * stops after 4 * max_bytes too, and the run goes on next time). *at_end
 * tells that the read stopped at the end of the file. Returns 0, or
 * QUAL_EIO with msg when the file cannot be read. */
int store_cursor_read(struct store_cursor *c, store_line_fn fn, void *ctx,
		      size_t max_bytes, bool *at_end, struct qual_msg *msg);

/* For a reader that wants only the records whose line's seq is above seq
 * (quald's lines end with their seq, in order: store.h's logs): moves a
 * cursor that has read nothing yet to the start of a record with a check
 * member whose seq is at most seq, found by bisection over the file (a few
 * reads, records not checked on the way), so that the records before it are
 * not read at all. The cursor then reads on from there as from the start,
 * taking every later record to need a check (as every record after a
 * checked one does); it counts only what it reads (lines, lost). Does
 * nothing for seq < 0, or when no such record is found past the first
 * buffer. Returns 0. */
int store_cursor_skip_to(struct store_cursor *c, long seq);

/* What the cursor has read so far (lines, good_bytes, lost, unchecked;
 * torn_bytes is 0: a tail is only known at the end, store_log_read). */
const struct store_log_info *store_cursor_info(const struct store_cursor *c);

void store_cursor_free(struct store_cursor *c);

/* Cuts the torn tail off the log (info as store_log_read reported it; does
 * nothing when torn_bytes is 0), syncing the file, and then, unless the
 * valid prefix ends with a verdict line, appends (synced) an error line that
 * records the cut, with the seq after its last line's (info->lines when
 * none says):
 *   {"type":"error","stage":"setup","code":"interrupted","arm":null,
 *    "case":null,"message":"stored log was torn at byte N (WHY): M bytes
 *    dropped","job":ID,"seq":K}
 * so that the job's own log says that lines were lost, not only the daemon's
 * stderr. Updates info to describe the log as it is now (lines counts that
 * error line, torn_bytes 0): the job's next seq is info->lines. A failure
 * to cut, sync or append is fatal. */
int store_log_repair(struct store *s, const char *id,
		     struct store_log_info *info, struct qual_msg *msg);

/* The last record of job id's log, when the log ends with a whole checked
 * record (its newline there, its check matching): its line (without the
 * check member) into *line, a new NUL-terminated string (free()) of *len
 * bytes. Reads only the end of the file (one record at most, with pread):
 * what start-up looks at before it listens. QUAL_EINVAL with msg when the
 * log does not end so (empty, a torn tail, a record without a check: what
 * a whole read must settle), QUAL_ENOENT or QUAL_EIO when it cannot be
 * read. Says nothing of the records before the last one. */
int store_log_last(struct store *s, const char *id, char **line, size_t *len,
		   struct qual_msg *msg);

/* The path of job id's summary.json into out (the writer replaces it:
 * writer_file_replace). */
int store_summary_path(struct store *s, const char *id, char *out, size_t cap,
		       struct qual_msg *msg);

/* Reads job id's summary.json: its "cases" array into *cases (a new
 * reference). QUAL_ENOENT when there is none, QUAL_EINVAL when it is not
 * an object with a "cases" array of objects that each have a "case"
 * string, QUAL_EIO when unreadable; *cases NULL then. */
int store_summary_read(struct store *s, const char *id, json_t **cases,
		       struct qual_msg *msg);

/* The fatal hook: called once, with the failure's message (e.g. "cannot sync
 * '/var/lib/qual/jobs/j000004/state.json.tmp': Input/output error"), when
 * the first fatal failure happens (see Failures above). NULL restores the
 * default, which prints "quald: fatal: MESSAGE; stopping: the state
 * directory can no longer be trusted" on stderr and ends the process with
 * _exit(3) at once: like a crash, which the next start recovers from (a
 * running job is recorded interrupted; its worker dies with the daemon),
 * rather than an orderly stop that would write more to a store that fails.
 * A hook may return (tests do): the failing call then returns QUAL_EIO, and
 * the store refuses every later write with QUAL_EIO without calling the hook
 * again. Setting a hook also clears that state (for tests). Process-wide:
 * store_log_append and store_log_sync have no store to hang it on. */
typedef void (*store_fatal_fn)(void *ctx, const char *message);
void store_fatal_hook(store_fatal_fn fn, void *ctx);

/* Whether a fatal failure has happened (since the last store_fatal_hook). */
bool store_fatal(void);

/* Marks the calling thread as one that is not the loop's (the writer): a
 * fatal failure in it is recorded (store_fatal() is true, later writes are
 * refused) but the hook is not called there. */
void store_fatal_defer_here(void);

/* The job the calling thread's next store calls are for (NULL: none): a
 * fatal failure's message then starts "job 'ID': ", before the file's path
 * ("job 'j000004': cannot sync '/var/lib/qual/jobs/j000004/log.jsonl':
 * Input/output error"). */
void store_fatal_subject(const char *job);

/* Calls the hook (in the calling thread) for a fatal failure recorded and
 * not yet raised; true when it did. */
bool store_fatal_raise(void);

#endif
