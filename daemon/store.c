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
#include <sys/uio.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/exitcode.h"
#include "common/fsutil.h"
#include "common/lines.h"
#include "common/xalloc.h"
#include "daemon/oplog.h"

#define STORE_JOBS "jobs"
#define STORE_REQUEST "request.json"
#define STORE_STATE "state.json"
#define STORE_LOG "log.jsonl"
#define STORE_LOCK "lock"
/* A state or request file is a few hundred bytes; anything near this is not
 * ours. */
#define STORE_JSON_MAX (4 << 20)

/* A log record is its line with this member spliced in before the line's
 * closing brace: CHECK_KEY, CHECK_HEX hex digits, CHECK_END (store.h). */
#define CHECK_KEY ",\"_check\":\""
#define CHECK_KEY_LEN (sizeof CHECK_KEY - 1)
#define CHECK_HEX 16 /* 64 bits of SHA-256: a torn or corrupted record goes
		      * unnoticed with probability 2^-64 */
#define CHECK_END "\"}"
/* From the member's comma to the record's closing brace: 29 bytes. A record
 * (with its newline) is its line's length plus CHECK_SUFFIX. */
#define CHECK_SUFFIX (CHECK_KEY_LEN + CHECK_HEX + 2)

struct store {
	char *dir;
	char *jobs;  /* <dir>/jobs */
	int lock_fd; /* <dir>/lock, flock()ed exclusively while open */
};

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

/* A failed write or sync: QUAL_EIO with msg set, and the fatal hook's call
 * when is_fatal (the first time). */
static int fail_io(bool is_fatal, struct qual_msg *msg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_io(bool is_fatal, struct qual_msg *msg, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = fail_v(is_fatal, msg, fmt, ap);
	va_end(ap);
	return rc;
}

/* Every write after a fatal failure is refused, so that a hook that returns
 * leaves nothing half written after it. */
static int refuse_after_fatal(struct qual_msg *msg)
{
	int rc;

	pthread_mutex_lock(&fatal.lock);
	rc = qual_fail(msg, QUAL_EIO, "the state directory failed earlier: %s",
		       fatal.first);
	pthread_mutex_unlock(&fatal.lock);
	return rc;
}

/* ---- paths and small helpers ---------------------------------------------- */

static int path_fmt(char *out, size_t cap, struct qual_msg *msg,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int path_fmt(char *out, size_t cap, struct qual_msg *msg,
		    const char *fmt, ...)
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
	return fail_io(is_fatal, msg, "%s", m->text);
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
		return strict ? fail_io(true, msg, "cannot encode '%s'", path)
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
	if ((rc = path_fmt(path, sizeof path, msg, "%s/%s", dir, STORE_LOCK)))
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
	if ((rc = path_fmt(jobs, sizeof jobs, msg, "%s/%s", dir, STORE_JOBS)) ||
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
	snprintf(out, cap, "j%06ld", num);
}

long store_id_parse(const char *id)
{
	const char *p;
	long num = 0;

	if (!id || id[0] != 'j')
		return -1;
	for (p = id + 1; *p; p++) {
		if (*p < '0' || *p > '9' || num > (LONG_MAX - 9) / 10)
			return -1;
		num = num * 10 + (*p - '0');
	}
	if (p - (id + 1) < 6 || num < 1)
		return -1;
	return num;
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
			if (!path_fmt(path, sizeof path, NULL, "%s/%s", s->jobs, e->d_name))
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
		return refuse_after_fatal(msg);
	if (store_id_parse(id) < 0)
		return qual_fail(msg, QUAL_EINVAL, "bad job id '%s'", id);
	if ((rc = path_fmt(tmp, PATH_MAX, msg, "%s/.%s.new", s->jobs, id)) ||
	    (rc = path_fmt(final, PATH_MAX, msg, "%s/%s", s->jobs, id)))
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
	if ((rc = path_fmt(path, sizeof path, msg, "%s/%s", tmp, STORE_REQUEST)) ||
	    (rc = json_write_synced(path, request, false, msg)) ||
	    (rc = path_fmt(path, sizeof path, msg, "%s/%s", tmp, STORE_STATE)) ||
	    (rc = json_write_synced(path, state, false, msg)) ||
	    (rc = path_fmt(path, sizeof path, msg, "%s/%s", tmp, STORE_LOG)) ||
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
		return refuse_after_fatal(msg);
	if ((rc = path_fmt(final, sizeof final, msg, "%s/%s/%s", s->jobs, id, STORE_STATE)))
		return rc;
	if (!(text = json_text(state)))
		return fail_io(true, msg, "cannot encode '%s'", final);
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
	    ((rc = path_fmt(path, sizeof path, msg, "%s/%s/%s", s->jobs, id,
			    STORE_REQUEST)) ||
	     (rc = json_read(path, request, msg))))
		return rc;
	if (state &&
	    ((rc = path_fmt(path, sizeof path, msg, "%s/%s/%s", s->jobs, id,
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

/* ---- logs --------------------------------------------------------------------- */

/* The record check of a line: the first CHECK_HEX hex digits of its SHA-256,
 * NUL-terminated. SHA-256 of a few hundred bytes fails only when OpenSSL
 * cannot allocate, which a program treats as xmalloc does. */
static void check_compute(const char *line, size_t len, char hex[CHECK_HEX + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	int i;

	if (!EVP_Digest(line, len, md, &n, EVP_sha256(), NULL) || n * 2 < CHECK_HEX) {
		oplog(LOG_CRIT, "cannot compute a sha-256 of %zu bytes (openssl)",
			len);
		abort();
	}
	for (i = 0; i < CHECK_HEX / 2; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[CHECK_HEX] = '\0';
}

int store_log_open(struct store *s, const char *id, int *fd, struct qual_msg *msg)
{
	char path[PATH_MAX];
	int rc;

	*fd = -1;
	if (store_fatal())
		return refuse_after_fatal(msg);
	if ((rc = path_fmt(path, sizeof path, msg, "%s/%s/%s", s->jobs, id, STORE_LOG)))
		return rc;
	*fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (*fd < 0)
		return fail_io(true, msg, "cannot open '%s': %s", path, strerror(errno));
	return 0;
}

/* Whether line (len bytes) can take the check member: an object text with a
 * member before its closing brace, and no newline. */
static bool line_is_object(const char *line, size_t len)
{
	size_t i;

	if (len < 2 || line[0] != '{' || line[len - 1] != '}' ||
	    memchr(line, '\n', len))
		return false;
	for (i = len - 1; i-- > 0;) {
		if (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')
			continue;
		return line[i] != '{';
	}
	return false;
}

int store_log_path(struct store *s, const char *id, char *out, size_t cap,
		   struct qual_msg *msg)
{
	return path_fmt(out, cap, msg, "%s/%s/%s", s->jobs, id, STORE_LOG);
}

int store_log_append(int fd, const char *path, const char *line, size_t len,
		     bool sync, struct qual_msg *msg)
{
	char tail[CHECK_SUFFIX + 2], hex[CHECK_HEX + 1];
	struct iovec iov[2];
	size_t left;

	if (store_fatal())
		return refuse_after_fatal(msg);
	if (!line_is_object(line, len))
		return qual_fail(msg, QUAL_EINVAL,
				 "cannot append to log: not a json object with members");
	check_compute(line, len, hex);
	/* The line's closing brace comes back as the member's. */
	snprintf(tail, sizeof tail, "%s%s%s\n", CHECK_KEY, hex, CHECK_END);
	iov[0] = (struct iovec){ (void *)line, len - 1 };
	iov[1] = (struct iovec){ tail, CHECK_SUFFIX + 1 };
	left = len + CHECK_SUFFIX;

	/* One writev for the whole record: O_APPEND makes it one append, so a
	 * reader of the file (a watch resuming) never sees half a record
	 * unless the disk itself fails. The loop only finishes a write the
	 * kernel cut short (a full disk); a failure leaves a partial record,
	 * which the next start finds torn and cuts off. */
	while (left > 0) {
		ssize_t put = writev(fd, iov, 2);
		if (put < 0 && errno == EINTR)
			continue;
		if (put < 0)
			return fail_io(true, msg, "cannot append to '%s': %s",
				       path ? path : "log", strerror(errno));
		if (put == 0)
			return fail_io(true, msg, "cannot append to '%s': nothing written",
				       path ? path : "log");
		left -= (size_t)put;
		for (int i = 0; i < 2 && put > 0; i++) {
			size_t take = (size_t)put < iov[i].iov_len ? (size_t)put
								  : iov[i].iov_len;
			iov[i].iov_base = (char *)iov[i].iov_base + take;
			iov[i].iov_len -= take;
			put -= (ssize_t)take;
		}
	}
	return sync ? store_log_sync(fd, path, msg) : 0;
}

int store_log_sync(int fd, const char *path, struct qual_msg *msg)
{
	if (store_fatal())
		return refuse_after_fatal(msg);
	if (fdatasync(fd) < 0)
		return fail_io(true, msg, "cannot sync '%s': %s", path ? path : "log",
			       strerror(errno));
	return 0;
}

/* Whether record rec (n bytes) ends like a checked one: a member with a
 * 6-byte key and a 16-byte string value, then the closing brace. A record
 * of that shape is held to the check however its key or digits read, so
 * that a changed byte in "_check" cannot pass the record off as one from
 * before checks (any other single changed byte of the member makes the
 * record invalid JSON, or a check mismatch). */
static bool record_shaped(const char *rec, size_t n)
{
	const char *t = rec + n - CHECK_SUFFIX;

	return n >= CHECK_SUFFIX + 2 && t[0] == ',' && t[1] == '"' &&
	       !memcmp(t + 2 + 6, "\":\"", 3) && !memcmp(rec + n - 2, CHECK_END, 2);
}

/* Turns record rec (n bytes without its newline, NUL-terminated) back into
 * its line, in place, with the line's length in *len. *checked tells whether
 * it had a check; seen_checked whether a record before it had one. Returns
 * NULL for a valid record, else why it is not (static text). */
static const char *record_open(char *rec, size_t n, bool seen_checked,
			       size_t *len, bool *checked)
{
	char hex[CHECK_HEX + 1];
	json_t *o;
	bool object;

	*checked = false;
	*len = n;
	if (record_shaped(rec, n)) {
		/* The line: up to the member, and the closing brace. The hex
		 * digits lie after the two bytes this overwrites. */
		const char *want = rec + n - 2 - CHECK_HEX;
		size_t line_len = n - CHECK_SUFFIX + 1;

		if (memcmp(rec + n - CHECK_SUFFIX, CHECK_KEY, CHECK_KEY_LEN))
			return "malformed check";
		rec[line_len - 1] = '}';
		rec[line_len] = '\0';
		check_compute(rec, line_len, hex);
		if (memcmp(hex, want, CHECK_HEX))
			return "check mismatch";
		*checked = true;
		*len = line_len;
		return NULL;
	}
	if (memmem(rec, n, "\"_check\"", 8))
		return "malformed check";
	if (seen_checked)
		return "record without a check after checked ones";
	/* A log from before checks: taken when the record is a JSON object. */
	o = json_loadb(rec, n, 0, NULL);
	object = json_is_object(o);
	json_decref(o);
	return object ? NULL : "record without a check that is not a json object";
}

/* The most bytes of one record, its newline included: a line of LINES_MAX
 * (the most a worker may print), what relay adds to it ("job" and "seq"),
 * and the check member. A longer one is not ours: it is skipped without
 * being held (a planted line of 150 MB costs this much memory, not that). */
#define RECORD_MAX (LINES_MAX + 256 + CHECK_SUFFIX + 1)

/* Reads a log record by record through one buffer of RECORD_MAX bytes. */
struct rec_reader {
	int fd;
	char *buf;
	size_t start, end;   /* the bytes in buf not yet handed out */
	bool eof;
};

enum rec_kind {
	REC_LINE,        /* a record: *rec, *n bytes without its newline */
	REC_OVERLONG,    /* over RECORD_MAX, skipped through its newline */
	REC_TAIL,        /* the file ends without a newline (*n bytes) */
	REC_TAIL_LONG,   /* ... after more than RECORD_MAX bytes */
	REC_EOF,
};

/* Refills buf after what is left; 0 or -errno. */
static int rec_fill(struct rec_reader *r)
{
	ssize_t got;

	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	while (!r->eof && r->end < RECORD_MAX) {
		got = read(r->fd, r->buf + r->end, RECORD_MAX - r->end);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			r->eof = true;
		r->end += (size_t)got;
	}
	return 0;
}

/* The next record; *size is its length in the file (its newline counted). */
static int rec_next(struct rec_reader *r, enum rec_kind *kind, char **rec,
		    size_t *n, off_t *size)
{
	char *nl;
	off_t skipped = 0;
	int rc;

	nl = memchr(r->buf + r->start, '\n', r->end - r->start);
	if (!nl && (rc = rec_fill(r)) < 0)
		return rc;
	if (!nl)
		nl = memchr(r->buf + r->start, '\n', r->end - r->start);
	if (nl) {
		*rec = r->buf + r->start;
		*n = (size_t)(nl - *rec);
		*nl = '\0';
		*size = (off_t)*n + 1;
		r->start += *n + 1;
		*kind = REC_LINE;
		return 0;
	}
	if (r->end - r->start < RECORD_MAX) {
		/* rec_fill read to the end of the file. */
		*size = (off_t)(r->end - r->start);
		*n = r->end - r->start;
		r->start = r->end;
		*kind = *n ? REC_TAIL : REC_EOF;
		return 0;
	}
	/* Over RECORD_MAX without a newline: dropped a buffer at a time. */
	for (;;) {
		nl = memchr(r->buf + r->start, '\n', r->end - r->start);
		if (nl) {
			skipped += nl - (r->buf + r->start) + 1;
			r->start = (size_t)(nl - r->buf) + 1;
			*size = skipped;
			*kind = REC_OVERLONG;
			return 0;
		}
		skipped += (off_t)(r->end - r->start);
		r->start = r->end;
		if (r->eof) {
			*size = skipped;
			*kind = REC_TAIL_LONG;
			return 0;
		}
		if ((rc = rec_fill(r)) < 0)
			return rc;
	}
}

/* Adds a lost span to info (the first few are named in lost_where). */
static void lost_add(struct store_log_info *info, off_t at, off_t bytes,
		     long records, const char *why)
{
	size_t used = strlen(info->lost_where);
	int n;

	info->lost += records;
	info->lost_bytes += bytes;
	if (used + 64 >= sizeof info->lost_where)
		return;
	n = snprintf(info->lost_where + used, sizeof info->lost_where - used,
		     "%sbytes %lld-%lld (%s)", used ? ", " : "", (long long)at,
		     (long long)(at + bytes), why);
	if (n < 0 || (size_t)n >= sizeof info->lost_where - used)
		snprintf(info->lost_where + used, sizeof info->lost_where - used, "...");
}

/* store_log_read, with its warnings left out when quiet. Records that do
 * not check out are collected in a run: a valid record after the run makes
 * it lost (skipped, counted in info), the end of the file makes it the torn
 * tail. */
static int log_read(struct store *s, const char *id, store_line_fn fn, void *ctx,
		    struct store_log_info *info, bool quiet, struct qual_msg *msg)
{
	struct store_log_info local;
	struct rec_reader r = { .fd = -1 };
	char path[PATH_MAX];
	bool seen_checked = false, checked, stopped = false;
	off_t pos = 0, run_at = -1, size;
	long run_records = 0;
	const char *why, *run_why = NULL;
	enum rec_kind kind;
	struct stat st;
	size_t n, len;
	char *rec;
	int rc = 0;

	if (!info)
		info = &local;
	memset(info, 0, sizeof *info);
	if ((rc = path_fmt(path, sizeof path, msg, "%s/%s/%s", s->jobs, id, STORE_LOG)))
		return rc;
	r.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r.fd < 0)
		return qual_fail(msg, errno == ENOENT ? QUAL_ENOENT : QUAL_EIO,
				 "cannot read '%s': %s", path, strerror(errno));
	r.buf = xmalloc(RECORD_MAX + 1);
	for (;;) {
		if ((rc = rec_next(&r, &kind, &rec, &n, &size)) < 0) {
			rc = qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", path,
				       strerror(-rc));
			goto out;
		}
		if (kind == REC_EOF)
			break;
		if (kind == REC_TAIL || kind == REC_TAIL_LONG) {
			if (run_at < 0) {
				run_at = pos;
				run_why = kind == REC_TAIL ? "incomplete record" :
					  "incomplete over-long record";
			}
			pos += size;
			break;
		}
		why = kind == REC_OVERLONG ? "over-long record" :
		      record_open(rec, n, seen_checked, &len, &checked);
		if (why) {
			if (run_at < 0) {
				run_at = pos;
				run_why = why;
			}
			run_records++;
			pos += size;
			continue;
		}
		if (run_at >= 0) {
			/* Bad records with a good one after them: lost, the rest
			 * kept. */
			lost_add(info, run_at, pos - run_at, run_records, run_why);
			run_at = -1;
			run_records = 0;
		}
		seen_checked |= checked;
		info->unchecked += !checked;
		info->lines++;
		pos += size;
		info->good_bytes = pos;
		if (fn && fn(ctx, rec, len)) {
			stopped = true;
			break;
		}
	}
	if (!stopped) {
		if (fstat(r.fd, &st) < 0) {
			rc = qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", path,
				       strerror(errno));
			goto out;
		}
		info->torn_bytes = st.st_size > info->good_bytes ?
				   st.st_size - info->good_bytes : 0;
		info->torn_why = info->torn_bytes ? (run_why ? run_why : "grew while read")
						  : NULL;
	}
	if (!quiet && info->torn_bytes)
		oplog_warn("job '%s': its stored log '%s' is torn at byte %lld (%s): "
			   "the %lld bytes from there on are not read", id, path,
			   (long long)info->good_bytes, info->torn_why,
			   (long long)info->torn_bytes);
	if (!quiet && info->lost)
		oplog_warn("job '%s': its stored log '%s' has %ld record%s that do%s not "
			   "check out, skipped: %s", id, path, info->lost,
			   info->lost == 1 ? "" : "s", info->lost == 1 ? "es" : "",
			   info->lost_where);
	if (!quiet && info->unchecked)
		oplog_warn("job '%s': %ld record%s of its stored log '%s' %s no check "
			   "(written before checks): read unchecked", id, info->unchecked,
			   info->unchecked == 1 ? "" : "s", path,
			   info->unchecked == 1 ? "has" : "have");
out:
	free(r.buf);
	close(r.fd);
	return rc;
}

int store_log_read(struct store *s, const char *id, store_line_fn fn,
		   void *ctx, struct store_log_info *info, struct qual_msg *msg)
{
	return log_read(s, id, fn, ctx, info, false, msg);
}

/* Keeps a copy of the last line read (repair's look at how the log ends). */
static int keep_last(void *ctx, const char *line, size_t len)
{
	char **last = ctx;

	free(*last);
	*last = xmalloc(len + 1);
	memcpy(*last, line, len + 1);
	return 0;
}

static bool line_is_verdict(const char *line)
{
	json_t *o = line ? json_loads(line, 0, NULL) : NULL;
	const char *type = json_string_value(json_object_get(o, "type"));
	bool verdict = type && !strcmp(type, "verdict");

	json_decref(o);
	return verdict;
}

/* The seq after line's (its "seq" member), or fallback when line is NULL or
 * has none: records may have been lost before it, so the count of records
 * is not the next seq. */
static long line_next_seq(const char *line, long fallback)
{
	json_t *o = line ? json_loads(line, 0, NULL) : NULL;
	json_t *seq = json_object_get(o, "seq");
	long next = json_is_integer(seq) && json_integer_value(seq) >= 0 ?
		    (long)json_integer_value(seq) + 1 : fallback;

	json_decref(o);
	return next > fallback ? next : fallback;
}

int store_log_repair(struct store *s, const char *id,
		     struct store_log_info *info, struct qual_msg *msg)
{
	struct store_log_info now;
	char path[PATH_MAX], text[256];
	char *last = NULL, *line = NULL;
	json_t *note = NULL;
	int fd = -1, rc;

	if (info->torn_bytes == 0)
		return 0;
	if (store_fatal())
		return refuse_after_fatal(msg);
	if ((rc = path_fmt(path, sizeof path, msg, "%s/%s/%s", s->jobs, id, STORE_LOG)))
		return rc;
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return fail_io(true, msg, "cannot open '%s': %s", path, strerror(errno));
	if (ftruncate(fd, info->good_bytes) < 0) {
		rc = fail_io(true, msg, "cannot truncate '%s': %s", path, strerror(errno));
		goto out;
	}
	if (fdatasync(fd) < 0) {
		rc = fail_io(true, msg, "cannot sync '%s': %s", path, strerror(errno));
		goto out;
	}
	snprintf(text, sizeof text, "stored log was torn at byte %lld (%s): %lld "
		 "bytes dropped", (long long)info->good_bytes,
		 info->torn_why ? info->torn_why : "torn", (long long)info->torn_bytes);
	info->torn_bytes = 0;
	info->torn_why = NULL;

	/* A log that ends with its verdict takes no line after it (every job
	 * ends with exactly one verdict line); the warning on stderr stays the
	 * only record there. */
	if ((rc = log_read(s, id, keep_last, &last, &now, true, msg)) < 0)
		goto out;
	info->lines = now.lines;
	info->good_bytes = now.good_bytes;
	if (line_is_verdict(last))
		goto out;
	note = json_pack("{s:s,s:s,s:s,s:n,s:n,s:s,s:s,s:I}", "type", "error", "stage",
			 "setup", "code", lines_code_name(LINES_CODE_INTERRUPTED), "arm",
			 "case", "message", text, "job", id, "seq",
			 (json_int_t)line_next_seq(last, now.lines));
	line = note ? json_dumps(note, JSON_COMPACT) : NULL;
	if (!line) {
		rc = fail_io(true, msg, "cannot encode the torn-log line of job '%s'", id);
		goto out;
	}
	if ((rc = store_log_append(fd, path, line, strlen(line), true, msg)) < 0)
		goto out;
	info->lines++;
	info->good_bytes += (off_t)(strlen(line) + CHECK_SUFFIX);
out:
	free(line);
	json_decref(note);
	free(last);
	close(fd);
	return rc;
}
