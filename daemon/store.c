/* The state directory (store.h): job folders, atomic state files and
 * append-only logs of checked records. Durability follows the usual POSIX
 * recipe: data is fsync()ed before a rename makes it visible, and the folder
 * holding a renamed entry is fsync()ed after, so that after a crash a name
 * either points at complete, synced content or does not exist.
 *
 * A failed fsync is never retried: on Linux the failed pages may be marked
 * clean and a second fsync then "succeeds" without having written them (the
 * PostgreSQL fsync episode of 2018), so the only safe answer is to stop and
 * let the next start work from what is really on disk (store.h: Failures). */
#include "daemon/store.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/exitcode.h"
#include "common/fsutil.h"
#include "common/lines.h"
#include "common/xalloc.h"
#include "daemon/oplog.h"
#include "daemon/store_internal.h"
#include "proto/vocab.h"

/* ---- fatal failures --------------------------------------------------------- */

/* Process-wide (store.h: store_fatal_hook). The writer thread records a
 * failure here and the loop raises it (store_fatal_raise), so the state is
 * behind a mutex; the hook itself is called without it. */
static struct {
	pthread_mutex_t lock;
	store_fatal_fn fn;  /* NULL: fatal_default */
	void *ctx;
	bool failed;
	bool raised;        /* the hook has been called for it */
	char first[sizeof ((struct qual_msg *)0)->text];
} fatal = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Set in the writer's thread (store_fatal_defer_here): a fatal failure
 * there is recorded, and raised later from the loop. */
static __thread bool fatal_deferred;

/* The job the calling thread writes for (store_fatal_subject), named first
 * in a fatal failure's message. */
static __thread char fatal_job[STORE_ID_MAX];

static void fatal_default(void *ctx, const char *message)
{
	(void)ctx;
	oplog(LOG_CRIT, "fatal: %s; stopping: the state directory can no "
		"longer be trusted", message);
	_exit(QUAL_EXIT_ERROR);
}

void store_fatal_hook(store_fatal_fn fn, void *ctx)
{
	pthread_mutex_lock(&fatal.lock);
	fatal.fn = fn;
	fatal.ctx = ctx;
	fatal.failed = false;
	fatal.raised = false;
	fatal.first[0] = '\0';
	pthread_mutex_unlock(&fatal.lock);
}

bool store_fatal(void)
{
	bool failed;

	pthread_mutex_lock(&fatal.lock);
	failed = fatal.failed;
	pthread_mutex_unlock(&fatal.lock);
	return failed;
}

void store_fatal_defer_here(void)
{
	fatal_deferred = true;
}

void store_fatal_subject(const char *job)
{
	snprintf(fatal_job, sizeof fatal_job, "%s", job ? job : "");
}

bool store_fatal_raise(void)
{
	char first[sizeof fatal.first];
	store_fatal_fn fn;
	void *ctx;
	bool call;

	pthread_mutex_lock(&fatal.lock);
	call = fatal.failed && !fatal.raised;
	fatal.raised = fatal.failed;
	fn = fatal.fn ? fatal.fn : fatal_default;
	ctx = fatal.ctx;
	snprintf(first, sizeof first, "%s", fatal.first);
	pthread_mutex_unlock(&fatal.lock);
	if (call)
		fn(ctx, first);
	return call;
}

static int fail_v(bool is_fatal, struct qual_msg *msg, const char *fmt,
		  va_list ap)
{
	struct qual_msg local;
	bool first = false;

	if (!msg)
		msg = &local;
	vsnprintf(msg->text, sizeof msg->text, fmt, ap);
	if (is_fatal) {
		pthread_mutex_lock(&fatal.lock);
		if (!fatal.failed) {
			first = true;
			fatal.failed = true;
			if (fatal_job[0])
				snprintf(fatal.first, sizeof fatal.first, "job '%s': %.*s",
					 fatal_job, (int)(sizeof fatal.first - STORE_ID_MAX - 8),
					 msg->text);
			else
				snprintf(fatal.first, sizeof fatal.first, "%s", msg->text);
		}
		pthread_mutex_unlock(&fatal.lock);
	}
	if (first && !fatal_deferred)
		store_fatal_raise();
	return QUAL_EIO;
}

int store__fail_io(bool is_fatal, struct qual_msg *msg, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = fail_v(is_fatal, msg, fmt, ap);
	va_end(ap);
	return rc;
}

int store__refuse_after_fatal(struct qual_msg *msg)
{
	int rc;

	pthread_mutex_lock(&fatal.lock);
	rc = qual_fail(msg, QUAL_EIO, "the state directory failed earlier: %s",
		       fatal.first);
	pthread_mutex_unlock(&fatal.lock);
	return rc;
}

/* ---- paths and small helpers ---------------------------------------------- */

int store__path_fmt(char *out, size_t cap, struct qual_msg *msg, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap)
		return qual_fail(msg, QUAL_EINVAL, "path '%s...' is too long", out);
	return 0;
}

/* A failure an fsutil call described in m: QUAL_EIO with m's text in msg,
 * and the fatal hook's call when is_fatal (the first time). */
static int fail_fs(bool is_fatal, const struct qual_msg *m, struct qual_msg *msg)
{
	return store__fail_io(is_fatal, msg, "%s", m->text);
}

/* Syncs a folder; a failure is fatal when is_fatal. */
static int sync_dir(const char *path, bool is_fatal, struct qual_msg *msg)
{
	struct qual_msg m;

	return fs_sync_dir(path, &m) < 0 ? fail_fs(is_fatal, &m, msg) : 0;
}

/* Writes data into a new file path (replacing any), synced. A failed sync
 * is fatal; a failed create or write is fatal when strict (the file belongs
 * to a job that exists), else only returned. */
static int file_write_synced(const char *path, const char *data, size_t len,
			     bool strict, struct qual_msg *msg)
{
	enum fs_step step;
	struct qual_msg m;

	if (fs_write_synced(path, data, len, 0640, &step, &m) < 0)
		return fail_fs(strict || step == FS_STEP_SYNC, &m, msg);
	return 0;
}

/* The object as one line of compact JSON with a newline (new string). */
static char *json_text(json_t *o)
{
	char *text = json_dumps(o, JSON_COMPACT);
	size_t n;
	char *line;

	if (!text)
		return NULL;
	n = strlen(text);
	line = xmalloc(n + 2);
	memcpy(line, text, n);
	line[n] = '\n';
	line[n + 1] = '\0';
	free(text);
	return line;
}

static int json_write_synced(const char *path, json_t *o, bool strict,
			     struct qual_msg *msg)
{
	char *text = json_text(o);
	int rc;

	if (!text)
		return strict ? store__fail_io(true, msg, "cannot encode '%s'", path)
			      : qual_fail(msg, QUAL_EINVAL, "cannot encode '%s'", path);
	rc = file_write_synced(path, text, strlen(text), strict, msg);
	free(text);
	return rc;
}

/* ---- opening, ids, scanning ------------------------------------------------- */

/* Takes <dir>/lock: an exclusive flock() held for as long as the store is
 * open (the descriptor is close-on-exec, so no child keeps it), with our
 * pid in the file for the message a second daemon gives. Refused, naming
 * the holder, when another process holds it. */
static int lock_take(const char *dir, int *out, struct qual_msg *msg)
{
	char path[PATH_MAX], pid[32];
	ssize_t n;
	int fd, rc;

	*out = -1;
	if ((rc = store__path_fmt(path, sizeof path, msg, "%s/%s", dir, STORE_LOCK)))
		return rc;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0)
		return qual_fail(msg, QUAL_EIO, "cannot open '%s': %s", path,
				 strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;

		n = e == EWOULDBLOCK ? pread(fd, pid, sizeof pid - 1, 0) : -1;
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		close(fd);
		if (e != EWOULDBLOCK)
			return qual_fail(msg, QUAL_EIO, "cannot lock '%s': %s", path,
					 strerror(e));
		return qual_fail(msg, QUAL_EINVAL, "state directory '%s' is in use by "
				 "another quald (pid %s): it holds '%s'", dir,
				 pid[0] ? pid : "unknown", path);
	}
	n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
		rc = qual_fail(msg, QUAL_EIO, "cannot write '%s': %s", path,
			       strerror(errno));
		close(fd);
		return rc;
	}
	*out = fd;
	return 0;
}

int store_open(const char *dir, struct store **out, struct qual_msg *msg)
{
	struct store *s;
	char jobs[PATH_MAX];
	int rc, lock_fd;

	*out = NULL;
	if (!dir || !*dir)
		return qual_fail(msg, QUAL_EINVAL, "no state directory given");
	/* The folders' own entries synced, in case they were just created (not
	 * fatal: nothing runs yet, and the caller stops on the error). The
	 * lock comes before anything is read or removed. */
	if ((rc = store__path_fmt(jobs, sizeof jobs, msg, "%s/%s", dir, STORE_JOBS)) ||
	    (rc = fs_mkdir_p(jobs, 0750, msg)) ||
	    (rc = lock_take(dir, &lock_fd, msg)))
		return rc;
	if ((rc = sync_dir(jobs, false, msg)) ||
	    (rc = sync_dir(dir, false, msg))) {
		close(lock_fd);
		return rc;
	}
	s = xcalloc(1, sizeof *s);
	s->dir = xstrdup(dir);
	s->jobs = xstrdup(jobs);
	s->lock_fd = lock_fd;
	*out = s;
	return 0;
}

void store_free(struct store *s)
{
	if (!s)
		return;
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	free(s->dir);
	free(s->jobs);
	free(s);
}

void store_id_format(long num, char *out, size_t cap)
{
	vocab_job_id_format(num, out, cap);
}

long store_id_parse(const char *id)
{
	return vocab_job_id_parse(id);
}

static int num_cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

int store_scan(struct store *s, long **nums, int *n, struct qual_msg *msg)
{
	DIR *d;
	struct dirent *e;
	long *v = NULL;
	int count = 0, cap = 0;

	*nums = NULL;
	*n = 0;
	d = opendir(s->jobs);
	if (!d)
		return qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", s->jobs,
				 strerror(errno));
	while ((e = readdir(d))) {
		char path[PATH_MAX];
		long num;
		size_t len = strlen(e->d_name);

		/* ".<id>.new": a job that was being created when the daemon
		 * died; it was never acknowledged. */
		if (e->d_name[0] == '.' && len > 5 &&
		    !strcmp(e->d_name + len - 4, ".new")) {
			if (!store__path_fmt(path, sizeof path, NULL, "%s/%s", s->jobs, e->d_name))
				fs_rm_tree(path);
			continue;
		}
		num = store_id_parse(e->d_name);
		if (num < 0)
			continue;
		XGROW(v, count + 1, cap);
		v[count++] = num;
	}
	closedir(d);
	if (count)
		qsort(v, (size_t)count, sizeof *v, num_cmp);
	*nums = v;
	*n = count;
	return 0;
}

/* ---- job files ---------------------------------------------------------------- */

/* A job's folder and its temporary name (".<id>.new", which a scan
 * removes), for a write: refused after a fatal failure or for a bad id. */
static int job_folders(struct store *s, const char *id, char tmp[PATH_MAX],
		       char final[PATH_MAX], struct qual_msg *msg)
{
	int rc;

	if (store_fatal())
		return store__refuse_after_fatal(msg);
	if (store_id_parse(id) < 0)
		return qual_fail(msg, QUAL_EINVAL, "bad job id '%s'", id);
	if ((rc = store__path_fmt(tmp, PATH_MAX, msg, "%s/.%s.new", s->jobs, id)) ||
	    (rc = store__path_fmt(final, PATH_MAX, msg, "%s/%s", s->jobs, id)))
		return rc;
	return 0;
}

int store_job_remove(struct store *s, const char *id, struct qual_msg *msg)
{
	char tmp[PATH_MAX], final[PATH_MAX];
	int rc;

	if ((rc = job_folders(s, id, tmp, final, msg)))
		return rc;
	fs_rm_tree(tmp);
	if (rename(final, tmp) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot rename '%s' to '%s': %s", final, tmp,
				 strerror(errno));
	/* The name is gone once this sync returns; what is under the
	 * temporary name goes now, or at the next scan after a crash. */
	rc = sync_dir(s->jobs, false, msg);
	fs_rm_tree(tmp);
	return rc;
}

int store_job_create(struct store *s, const char *id, json_t *request,
		     json_t *state, struct qual_msg *msg)
{
	char tmp[PATH_MAX], final[PATH_MAX], path[PATH_MAX];
	struct stat st;
	int rc;

	if ((rc = job_folders(s, id, tmp, final, msg)))
		return rc;
	if (lstat(final, &st) == 0)
		return qual_fail(msg, QUAL_EINVAL, "job '%s' exists already in '%s'", id,
				 s->jobs);
	fs_rm_tree(tmp);
	if (mkdir(tmp, 0750) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot create '%s': %s", tmp,
				 strerror(errno));
	if ((rc = store__path_fmt(path, sizeof path, msg, "%s/%s", tmp, STORE_REQUEST)) ||
	    (rc = json_write_synced(path, request, false, msg)) ||
	    (rc = store__path_fmt(path, sizeof path, msg, "%s/%s", tmp, STORE_STATE)) ||
	    (rc = json_write_synced(path, state, false, msg)) ||
	    (rc = store__path_fmt(path, sizeof path, msg, "%s/%s", tmp, STORE_LOG)) ||
	    (rc = file_write_synced(path, "", 0, false, msg)) ||
	    (rc = sync_dir(tmp, true, msg)))
		goto fail;
	if (rename(tmp, final) < 0) {
		rc = qual_fail(msg, QUAL_EIO, "cannot rename '%s' to '%s': %s", tmp,
			       final, strerror(errno));
		goto fail;
	}
	/* Not acknowledged until the rename is on disk. */
	return sync_dir(s->jobs, true, msg);
fail:
	fs_rm_tree(tmp);
	return rc;
}

int store_state_write(struct store *s, const char *id, json_t *state,
		      struct qual_msg *msg)
{
	char final[PATH_MAX], *text;
	struct qual_msg m;
	int rc;

	if (store_fatal())
		return store__refuse_after_fatal(msg);
	if ((rc = store__path_fmt(final, sizeof final, msg, "%s/%s/%s", s->jobs, id, STORE_STATE)))
		return rc;
	if (!(text = json_text(state)))
		return store__fail_io(true, msg, "cannot encode '%s'", final);
	/* "state.json.tmp" synced, renamed over it, the folder synced: every
	 * step is fatal (store.h). */
	rc = fs_write_atomic(final, text, strlen(text), 0640, NULL, &m);
	free(text);
	return rc < 0 ? fail_fs(true, &m, msg) : 0;
}

static int json_read(const char *path, json_t **out, struct qual_msg *msg)
{
	json_error_t err;
	struct stat st;

	*out = NULL;
	if (stat(path, &st) < 0)
		return qual_fail(msg, errno == ENOENT ? QUAL_ENOENT : QUAL_EIO,
				 "cannot read '%s': %s", path, strerror(errno));
	if (st.st_size > STORE_JSON_MAX)
		return qual_fail(msg, QUAL_ELIMIT, "'%s' is over %d bytes", path,
				 STORE_JSON_MAX);
	*out = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
	if (!*out)
		return qual_fail(msg, QUAL_EINVAL, "cannot read '%s': %s at line %d",
				 path, err.text, err.line);
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return qual_fail(msg, QUAL_EINVAL, "cannot read '%s': not a json object",
				 path);
	}
	return 0;
}

int store_job_read(struct store *s, const char *id, json_t **request,
		   json_t **state, struct qual_msg *msg)
{
	char path[PATH_MAX];
	int rc;

	if (request)
		*request = NULL;
	if (state)
		*state = NULL;
	if (request &&
	    ((rc = store__path_fmt(path, sizeof path, msg, "%s/%s/%s", s->jobs, id,
				   STORE_REQUEST)) ||
	     (rc = json_read(path, request, msg))))
		return rc;
	if (state &&
	    ((rc = store__path_fmt(path, sizeof path, msg, "%s/%s/%s", s->jobs, id,
				   STORE_STATE)) ||
	     (rc = json_read(path, state, msg)))) {
		if (request) {
			json_decref(*request);
			*request = NULL;
		}
		return rc;
	}
	return 0;
}

int store_summary_path(struct store *s, const char *id, char *out, size_t cap,
		       struct qual_msg *msg)
{
	return store__path_fmt(out, cap, msg, "%s/%s/%s", s->jobs, id, STORE_SUMMARY);
}

/* Whether cases is an array of objects, each with a "case" string (what
 * history.c's lookups by case name rely on). */
static bool summary_cases_ok(json_t *cases)
{
	size_t i;
	json_t *e;

	if (!json_is_array(cases))
		return false;
	json_array_foreach(cases, i, e)
		if (!json_is_string(json_object_get(e, "case")))
			return false;
	return true;
}

int store_summary_read(struct store *s, const char *id, json_t **cases,
		       struct qual_msg *msg)
{
	char path[PATH_MAX];
	json_t *o = NULL;
	int rc;

	*cases = NULL;
	if ((rc = store_summary_path(s, id, path, sizeof path, msg)) ||
	    (rc = json_read(path, &o, msg)))
		return rc;
	if (!summary_cases_ok(json_object_get(o, "cases"))) {
		json_decref(o);
		return qual_fail(msg, QUAL_EINVAL, "cannot read '%s': not a \"cases\" array "
				 "of objects with a \"case\" name", path);
	}
	*cases = json_incref(json_object_get(o, "cases"));
	json_decref(o);
	return 0;
}
