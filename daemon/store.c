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
};

/* ---- fatal failures --------------------------------------------------------- */

/* Process-wide (store.h: store_fatal_hook). */
static struct {
	store_fatal_fn fn;  /* NULL: fatal_default */
	void *ctx;
	bool failed;
	char first[sizeof ((struct qual_msg *)0)->text];
} fatal;

static void fatal_default(void *ctx, const char *message)
{
	(void)ctx;
	fprintf(stderr, "quald: fatal: %s; stopping: the state directory can no "
		"longer be trusted\n", message);
	_exit(QUAL_EXIT_ERROR);
}

void store_fatal_hook(store_fatal_fn fn, void *ctx)
{
	fatal.fn = fn;
	fatal.ctx = ctx;
	fatal.failed = false;
	fatal.first[0] = '\0';
}

bool store_fatal(void)
{
	return fatal.failed;
}

static int fail_v(bool is_fatal, struct qual_msg *msg, const char *fmt,
		  va_list ap)
{
	struct qual_msg local;

	if (!msg)
		msg = &local;
	vsnprintf(msg->text, sizeof msg->text, fmt, ap);
	if (is_fatal && !fatal.failed) {
		fatal.failed = true;
		snprintf(fatal.first, sizeof fatal.first, "%s", msg->text);
		(fatal.fn ? fatal.fn : fatal_default)(fatal.ctx, msg->text);
	}
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
	return qual_fail(msg, QUAL_EIO, "the state directory failed earlier: %s",
			 fatal.first);
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

static int mkdir_p(const char *path, mode_t mode, struct qual_msg *msg)
{
	char buf[PATH_MAX];
	char *p;

	if (strlen(path) >= sizeof buf)
		return qual_fail(msg, QUAL_EINVAL, "path '%s' is too long", path);
	strcpy(buf, path);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return qual_fail(msg, QUAL_EIO, "cannot create '%s': %s", buf,
					 strerror(errno));
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return qual_fail(msg, QUAL_EIO, "cannot create '%s': %s", buf,
				 strerror(errno));
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

int store_open(const char *dir, struct store **out, struct qual_msg *msg)
{
	struct store *s;
	char jobs[PATH_MAX];
	int rc;

	*out = NULL;
	if (!dir || !*dir)
		return qual_fail(msg, QUAL_EINVAL, "no state directory given");
	/* The folders' own entries synced, in case they were just created (not
	 * fatal: nothing runs yet, and the caller stops on the error). */
	if ((rc = path_fmt(jobs, sizeof jobs, msg, "%s/%s", dir, STORE_JOBS)) ||
	    (rc = mkdir_p(jobs, 0750, msg)) ||
	    (rc = sync_dir(jobs, false, msg)) ||
	    (rc = sync_dir(dir, false, msg)))
		return rc;
	s = xcalloc(1, sizeof *s);
	s->dir = xstrdup(dir);
	s->jobs = xstrdup(jobs);
	*out = s;
	return 0;
}

void store_free(struct store *s)
{
	if (!s)
		return;
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

int store_job_create(struct store *s, const char *id, json_t *request,
		     json_t *state, struct qual_msg *msg)
{
	char tmp[PATH_MAX], final[PATH_MAX], path[PATH_MAX];
	struct stat st;
	int rc;

	if (fatal.failed)
		return refuse_after_fatal(msg);
	if (store_id_parse(id) < 0)
		return qual_fail(msg, QUAL_EINVAL, "bad job id '%s'", id);
	if ((rc = path_fmt(tmp, sizeof tmp, msg, "%s/.%s.new", s->jobs, id)) ||
	    (rc = path_fmt(final, sizeof final, msg, "%s/%s", s->jobs, id)))
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

	if (fatal.failed)
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
		fprintf(stderr, "quald: cannot compute a sha-256 of %zu bytes (openssl)\n",
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
	if (fatal.failed)
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

int store_log_append(int fd, const char *line, size_t len, bool sync,
		     struct qual_msg *msg)
{
	char tail[CHECK_SUFFIX + 2], hex[CHECK_HEX + 1];
	struct iovec iov[2];
	size_t left;

	if (fatal.failed)
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
			return fail_io(true, msg, "cannot append to log: %s",
				       strerror(errno));
		if (put == 0)
			return fail_io(true, msg, "cannot append to log: nothing written");
		left -= (size_t)put;
		for (int i = 0; i < 2 && put > 0; i++) {
			size_t take = (size_t)put < iov[i].iov_len ? (size_t)put
								  : iov[i].iov_len;
			iov[i].iov_base = (char *)iov[i].iov_base + take;
			iov[i].iov_len -= take;
			put -= (ssize_t)take;
		}
	}
	return sync ? store_log_sync(fd, msg) : 0;
}

int store_log_sync(int fd, struct qual_msg *msg)
{
	if (fatal.failed)
		return refuse_after_fatal(msg);
	if (fdatasync(fd) < 0)
		return fail_io(true, msg, "cannot sync log: %s", strerror(errno));
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

/* store_log_read, with its warnings left out when quiet. */
static int log_read(struct store *s, const char *id, store_line_fn fn, void *ctx,
		    struct store_log_info *info, bool quiet, struct qual_msg *msg)
{
	struct store_log_info local;
	char path[PATH_MAX];
	char *rec = NULL;
	size_t cap = 0, len;
	bool seen_checked = false, checked, stopped = false;
	struct stat st;
	ssize_t got;
	FILE *f;
	int rc;

	if (!info)
		info = &local;
	memset(info, 0, sizeof *info);
	if ((rc = path_fmt(path, sizeof path, msg, "%s/%s/%s", s->jobs, id, STORE_LOG)))
		return rc;
	f = fopen(path, "re");
	if (!f)
		return qual_fail(msg, errno == ENOENT ? QUAL_ENOENT : QUAL_EIO,
				 "cannot read '%s': %s", path, strerror(errno));
	while ((got = getline(&rec, &cap, f)) > 0) {
		if (rec[got - 1] != '\n') {
			info->torn_why = "incomplete record";
			break;
		}
		rec[got - 1] = '\0';
		info->torn_why = record_open(rec, (size_t)got - 1, seen_checked, &len,
					     &checked);
		if (info->torn_why)
			break;
		seen_checked |= checked;
		info->unchecked += !checked;
		info->lines++;
		info->good_bytes += got;
		if (fn && fn(ctx, rec, len)) {
			stopped = true;
			break;
		}
	}
	if (ferror(f)) {
		rc = qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", path,
			       strerror(errno));
		goto out;
	}
	if (!stopped) {
		if (fstat(fileno(f), &st) < 0) {
			rc = qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", path,
				       strerror(errno));
			goto out;
		}
		info->torn_bytes = st.st_size > info->good_bytes ?
				   st.st_size - info->good_bytes : 0;
		if (info->torn_bytes && !info->torn_why)
			info->torn_why = "grew while read";
		if (!info->torn_bytes)
			info->torn_why = NULL;
	}
	if (!quiet && info->torn_bytes)
		oplog_warn("job '%s': its stored log '%s' is torn at byte %lld (%s): "
			   "the %lld bytes from there on are not read", id, path,
			   (long long)info->good_bytes, info->torn_why,
			   (long long)info->torn_bytes);
	if (!quiet && info->unchecked)
		oplog_warn("job '%s': %ld record%s of its stored log '%s' %s no check "
			   "(written before checks): read unchecked", id, info->unchecked,
			   info->unchecked == 1 ? "" : "s", path,
			   info->unchecked == 1 ? "has" : "have");
out:
	free(rec);
	fclose(f);
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
	if (fatal.failed)
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
			 "case", "message", text, "job", id, "seq", (json_int_t)now.lines);
	line = note ? json_dumps(note, JSON_COMPACT) : NULL;
	if (!line) {
		rc = fail_io(true, msg, "cannot encode the torn-log line of job '%s'", id);
		goto out;
	}
	if ((rc = store_log_append(fd, line, strlen(line), true, msg)) < 0)
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
