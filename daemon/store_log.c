/* The state directory's logs (store.h: Logs): each job's append-only log
 * of checked records, appended and synced by the writer thread, read back
 * (show, watch, recovery) and repaired at start (store_internal.h). */
#include "daemon/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/lines.h"
#include "common/sha256.h"
#include "proto/line.h"
#include "common/xalloc.h"
#include "daemon/oplog.h"
#include "daemon/store_internal.h"

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

/* The record check of a line: the first CHECK_HEX hex digits of its SHA-256,
 * NUL-terminated. SHA-256 of a few hundred bytes fails only when OpenSSL
 * cannot allocate, which a program treats as xmalloc does. */
static void check_compute(const char *line, size_t len, char hex[CHECK_HEX + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[SHA256_SIZE];
	int i;

	if (sha256_digest(line, len, md) < 0) {
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
		return store__refuse_after_fatal(msg);
	if ((rc = store__path_fmt(path, sizeof path, msg, "%s/%s/%s", s->jobs, id, STORE_LOG)))
		return rc;
	*fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (*fd < 0)
		return store__fail_io(true, msg, "cannot open '%s': %s", path, strerror(errno));
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
	return store__path_fmt(out, cap, msg, "%s/%s/%s", s->jobs, id, STORE_LOG);
}

int store_log_append(int fd, const char *path, const char *line, size_t len,
		     bool sync, struct qual_msg *msg)
{
	char tail[CHECK_SUFFIX + 2], hex[CHECK_HEX + 1];
	struct iovec iov[2];
	size_t left;

	if (store_fatal())
		return store__refuse_after_fatal(msg);
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
			return store__fail_io(true, msg, "cannot append to '%s': %s",
					      path ? path : "log", strerror(errno));
		if (put == 0)
			return store__fail_io(true, msg, "cannot append to '%s': nothing written",
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
		return store__refuse_after_fatal(msg);
	if (fdatasync(fd) < 0)
		return store__fail_io(true, msg, "cannot sync '%s': %s", path ? path : "log",
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
/* A reader's buffer to begin with: most records are a few hundred bytes,
 * and a cursor per client waits between its reads. */
#define READ_BUF_MIN ((size_t)64 << 10)

/* Reads a log record by record through one buffer, grown as a record needs
 * up to RECORD_MAX bytes. */
struct rec_reader {
	int fd;
	char *buf;
	size_t cap;          /* buf holds cap + 1 bytes */
	size_t start, end;   /* the bytes in buf not yet handed out */
	off_t foff;          /* the file offset of buf[end] */
	bool eof;
};

enum rec_kind {
	REC_LINE,        /* a record: *rec, *n bytes without its newline */
	REC_OVERLONG,    /* over RECORD_MAX, skipped through its newline */
	REC_TAIL,        /* the file ends without a newline (*n bytes) */
	REC_TAIL_LONG,   /* ... after more than RECORD_MAX bytes */
	REC_EOF,
};

/* Puts the reader at file offset at, with nothing buffered. */
static void rec_seek(struct rec_reader *r, off_t at)
{
	r->start = r->end = 0;
	r->foff = at;
	r->eof = false;
}

/* Reads more after what is left (moved to the front; the buffer grown when
 * full, up to RECORD_MAX); 0 or -errno. */
static int rec_fill(struct rec_reader *r)
{
	ssize_t got;

	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	if (r->end == r->cap && r->cap < RECORD_MAX) {
		r->cap = r->cap * 2 < RECORD_MAX ? r->cap * 2 : RECORD_MAX;
		r->buf = xrealloc(r->buf, r->cap + 1);
	}
	for (;;) {
		got = pread(r->fd, r->buf + r->end, r->cap - r->end, r->foff);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		break;
	}
	if (got == 0)
		r->eof = true;
	r->end += (size_t)got;
	r->foff += got;
	return 0;
}

/* Over RECORD_MAX without a newline: dropped a buffer at a time. */
static int rec_skip_long(struct rec_reader *r, enum rec_kind *kind, off_t *size)
{
	off_t skipped = 0;
	char *nl;
	int rc;

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

/* The next record; *size is its length in the file (its newline counted). */
static int rec_next(struct rec_reader *r, enum rec_kind *kind, char **rec,
		    size_t *n, off_t *size)
{
	size_t searched = 0;
	char *nl;
	int rc;

	for (;;) {
		nl = memchr(r->buf + r->start + searched, '\n', r->end - r->start - searched);
		if (nl) {
			*rec = r->buf + r->start;
			*n = (size_t)(nl - *rec);
			*nl = '\0';
			*size = (off_t)*n + 1;
			r->start += *n + 1;
			*kind = REC_LINE;
			return 0;
		}
		searched = r->end - r->start;
		if (searched >= RECORD_MAX)
			return rec_skip_long(r, kind, size);
		if (r->eof) {
			*size = (off_t)searched;
			*n = searched;
			r->start = r->end;
			*kind = *n ? REC_TAIL : REC_EOF;
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

/* Records that do not check out are collected in a run: a valid record
 * after the run makes it lost (skipped, counted in info); the end of the
 * file leaves it unread, as the tail, until a later read. */
struct store_cursor {
	struct rec_reader r;
	char path[PATH_MAX];
	off_t pos;                 /* the file offset of the next record */
	bool seen_checked;
	off_t run_at;              /* where the run of bad records began; -1: none */
	long run_records;
	const char *run_why;       /* the first bad record's why */
	const char *tail_why;      /* why the last read stopped before the end */
	struct store_log_info info;
};

int store_cursor_open(struct store *s, const char *id, struct store_cursor **out,
		      struct qual_msg *msg)
{
	struct store_cursor *c = xcalloc(1, sizeof *c);
	int rc;

	*out = NULL;
	if ((rc = store__path_fmt(c->path, sizeof c->path, msg, "%s/%s/%s", s->jobs, id,
				  STORE_LOG))) {
		free(c);
		return rc;
	}
	c->r.fd = open(c->path, O_RDONLY | O_CLOEXEC);
	if (c->r.fd < 0) {
		rc = qual_fail(msg, errno == ENOENT ? QUAL_ENOENT : QUAL_EIO,
			       "cannot read '%s': %s", c->path, strerror(errno));
		free(c);
		return rc;
	}
	c->r.cap = READ_BUF_MIN;
	c->r.buf = xmalloc(c->r.cap + 1);
	c->run_at = -1;
	*out = c;
	return 0;
}

void store_cursor_free(struct store_cursor *c)
{
	if (!c)
		return;
	free(c->r.buf);
	close(c->r.fd);
	free(c);
}

const struct store_log_info *store_cursor_info(const struct store_cursor *c)
{
	return &c->info;
}

/* The cursor stops before the bad run (or the tail) at pos: the next read
 * starts there. */
static void cursor_rewind(struct store_cursor *c, const char *why)
{
	off_t at = c->run_at >= 0 ? c->run_at : c->pos;

	c->tail_why = c->run_at >= 0 ? c->run_why : why;
	rec_seek(&c->r, at);
	c->pos = at;
	c->run_at = -1;
	c->run_records = 0;
	c->run_why = NULL;
}

int store_cursor_read(struct store_cursor *c, store_line_fn fn, void *ctx,
		      size_t max_bytes, bool *at_end, struct qual_msg *msg)
{
	struct store_log_info *info = &c->info;
	size_t handed = 0, scanned = 0;
	off_t size, at;
	enum rec_kind kind;
	const char *why;
	bool checked;
	size_t n, len;
	char *rec;
	int rc, step;

	*at_end = false;
	c->tail_why = NULL;
	/* The file may have grown since the last read found its end. */
	c->r.eof = false;
	for (;;) {
		if ((rc = rec_next(&c->r, &kind, &rec, &n, &size)) < 0)
			return qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", c->path,
					 strerror(-rc));
		if (kind == REC_EOF || kind == REC_TAIL || kind == REC_TAIL_LONG) {
			cursor_rewind(c, kind == REC_TAIL ? "incomplete record" :
					 kind == REC_TAIL_LONG ? "incomplete over-long record" :
					 NULL);
			*at_end = true;
			return 0;
		}
		at = c->pos;
		c->pos += size;
		why = kind == REC_OVERLONG ? "over-long record" :
		      record_open(rec, n, c->seen_checked, &len, &checked);
		if (why) {
			if (c->run_at < 0) {
				c->run_at = at;
				c->run_why = why;
			}
			c->run_records++;
			scanned += (size_t)size;
			if (scanned >= 4 * max_bytes)
				return 0;
			continue;
		}
		if (c->run_at >= 0) {
			/* Bad records with a good one after them: lost, the rest
			 * kept. */
			lost_add(info, c->run_at, at - c->run_at, c->run_records, c->run_why);
			c->run_at = -1;
			c->run_records = 0;
		}
		step = fn ? fn(ctx, rec, len) : STORE_CURSOR_NEXT;
		if (step == STORE_CURSOR_AGAIN) {
			/* Read again next time: checked again, counted then. */
			rec_seek(&c->r, at);
			c->pos = at;
			return 0;
		}
		c->seen_checked |= checked;
		info->unchecked += !checked;
		info->lines++;
		info->good_bytes = c->pos;
		handed += (size_t)size;
		if (step != STORE_CURSOR_NEXT || handed >= max_bytes)
			return 0;
	}
}

/* The seq of the record that starts at or after offset at (the first after
 * a newline, unless at is 0), read from its tail without a check: *start is
 * where it starts, *shaped whether it ends as a checked record does. -1 when
 * there is none, or it has no seq. */
static long probe_seq(struct store_cursor *c, off_t at, off_t *start, bool *shaped)
{
	char *buf = c->r.buf, *nl, *rec;
	size_t cap = c->r.cap, n;
	ssize_t got;

	got = pread(c->r.fd, buf, cap, at);
	if (got <= 0)
		return -1;
	rec = buf;
	if (at > 0) {
		nl = memchr(buf, '\n', (size_t)got);
		if (!nl)
			return -1;
		rec = nl + 1;
	}
	*start = at + (rec - buf);
	nl = memchr(rec, '\n', (size_t)got - (size_t)(rec - buf));
	if (!nl)
		return -1;
	n = (size_t)(nl - rec);
	*shaped = record_shaped(rec, n);
	if (*shaped) {
		/* The line: up to the check member, and its closing brace. */
		n -= CHECK_SUFFIX - 1;
		rec[n - 1] = '}';
	}
	return line_tail_seq(rec, n);
}

int store_cursor_skip_to(struct store_cursor *c, long seq)
{
	off_t lo = 0, hi, start;
	bool shaped = false;
	struct stat st;

	if (c->pos != 0 || seq < 0 || fstat(c->r.fd, &st) < 0)
		return 0;
	hi = st.st_size;
	/* lo: the start of a record shaped as checked whose seq is at most
	 * seq (or the file's start); from hi on, no record is known to be. */
	while (hi - lo > (off_t)c->r.cap) {
		off_t mid = lo + (hi - lo) / 2;
		long at = probe_seq(c, mid, &start, &shaped);

		if (at >= 0 && at <= seq && start < hi && shaped)
			lo = start;
		else
			hi = mid;
	}
	if (lo > 0) {
		rec_seek(&c->r, lo);
		c->pos = lo;
		/* Records before checks come first: a checked record here
		 * means every later one must have a check. */
		c->seen_checked = true;
	}
	return 0;
}

/* A whole read's fn: any nonzero result stops the read after the record. */
struct whole_read {
	store_line_fn fn;
	void *ctx;
	bool stopped;
};

static int whole_read_each(void *ctx, const char *line, size_t len)
{
	struct whole_read *w = ctx;

	if (w->fn && w->fn(w->ctx, line, len)) {
		w->stopped = true;
		return STORE_CURSOR_STOP;
	}
	return STORE_CURSOR_NEXT;
}

/* store_log_read, with its warnings left out when quiet: a cursor read to
 * the end, or to where fn stops it. */
static int log_read(struct store *s, const char *id, store_line_fn fn, void *ctx,
		    struct store_log_info *info, bool quiet, struct qual_msg *msg)
{
	struct whole_read w = { fn, ctx, false };
	struct store_cursor *c;
	bool at_end = false;
	struct stat st;
	int rc;

	if (info)
		memset(info, 0, sizeof *info);
	if ((rc = store_cursor_open(s, id, &c, msg)) < 0)
		return rc;
	while (!at_end && !w.stopped)
		if ((rc = store_cursor_read(c, whole_read_each, &w, SIZE_MAX / 8, &at_end,
					    msg)) < 0)
			goto out;
	if (w.stopped) {
		if (info)
			*info = c->info;
		goto out;
	}
	if (fstat(c->r.fd, &st) < 0) {
		rc = qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", c->path, strerror(errno));
		goto out;
	}
	c->info.torn_bytes = st.st_size > c->info.good_bytes ? st.st_size - c->info.good_bytes : 0;
	c->info.torn_why = c->info.torn_bytes ? (c->tail_why ? c->tail_why : "grew while read")
					      : NULL;
	if (info)
		*info = c->info;
	info = &c->info;
	if (!quiet && info->torn_bytes)
		oplog_warn("job '%s': its stored log '%s' is torn at byte %lld (%s): "
			   "the %lld bytes from there on are not read", id, c->path,
			   (long long)info->good_bytes, info->torn_why,
			   (long long)info->torn_bytes);
	if (!quiet && info->lost)
		oplog_warn("job '%s': its stored log '%s' has %ld record%s that do%s not "
			   "check out, skipped: %s", id, c->path, info->lost,
			   info->lost == 1 ? "" : "s", info->lost == 1 ? "es" : "",
			   info->lost_where);
	if (!quiet && info->unchecked)
		oplog_warn("job '%s': %ld record%s of its stored log '%s' %s no check "
			   "(written before checks): read unchecked", id, info->unchecked,
			   info->unchecked == 1 ? "" : "s", c->path,
			   info->unchecked == 1 ? "has" : "have");
out:
	store_cursor_free(c);
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

/* The seq after the last line's (its seq), or fallback when there is no
 * last line or it has none: records may have been lost before it, so the
 * count of records is not the next seq. */
static long line_next_seq(const struct line *last, long fallback)
{
	long next = last && last->seq >= 0 ? last->seq + 1 : fallback;

	return next > fallback ? next : fallback;
}

int store_log_repair(struct store *s, const char *id,
		     struct store_log_info *info, struct qual_msg *msg)
{
	struct store_log_info now;
	char path[PATH_MAX], text[256];
	char *last = NULL, *line = NULL;
	struct line *parsed = NULL;
	json_t *note = NULL;
	int fd = -1, rc;

	if (info->torn_bytes == 0)
		return 0;
	if (store_fatal())
		return store__refuse_after_fatal(msg);
	if ((rc = store__path_fmt(path, sizeof path, msg, "%s/%s/%s", s->jobs, id, STORE_LOG)))
		return rc;
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return store__fail_io(true, msg, "cannot open '%s': %s", path, strerror(errno));
	if (ftruncate(fd, info->good_bytes) < 0) {
		rc = store__fail_io(true, msg, "cannot truncate '%s': %s", path, strerror(errno));
		goto out;
	}
	if (fdatasync(fd) < 0) {
		rc = store__fail_io(true, msg, "cannot sync '%s': %s", path, strerror(errno));
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
	/* The last line, parsed once: whether it is the verdict, its seq. */
	if (last)
		(void)line_parse(last, strlen(last), &parsed);
	if (parsed && line_is_verdict(parsed))
		goto out;
	note = json_pack("{s:s,s:s,s:s,s:n,s:n,s:s,s:s,s:I}", "type", "error", "stage",
			 "setup", "code", vocab_code_name(LINES_CODE_INTERRUPTED), "arm",
			 "case", "message", text, "job", id, "seq",
			 (json_int_t)line_next_seq(parsed, now.lines));
	line = note ? json_dumps(note, JSON_COMPACT) : NULL;
	if (!line) {
		rc = store__fail_io(true, msg, "cannot encode the torn-log line of job '%s'", id);
		goto out;
	}
	if ((rc = store_log_append(fd, path, line, strlen(line), true, msg)) < 0)
		goto out;
	info->lines++;
	info->good_bytes += (off_t)(strlen(line) + CHECK_SUFFIX);
out:
	free(line);
	json_decref(note);
	line_unref(parsed);
	free(last);
	close(fd);
	return rc;
}

int store_log_last(struct store *s, const char *id, char **line, size_t *len,
		   struct qual_msg *msg)
{
	char path[PATH_MAX], *buf = NULL, *start;
	size_t got = 0, n;
	struct stat st;
	bool checked;
	off_t from;
	const char *why = NULL;
	int fd, rc;

	*line = NULL;
	*len = 0;
	if ((rc = store__path_fmt(path, sizeof path, msg, "%s/%s/%s", s->jobs, id, STORE_LOG)))
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return qual_fail(msg, errno == ENOENT ? QUAL_ENOENT : QUAL_EIO,
				 "cannot read '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	/* The last record and the newline before it, at most. */
	from = st.st_size > (off_t)RECORD_MAX ? st.st_size - (off_t)RECORD_MAX : 0;
	buf = xmalloc(RECORD_MAX + 1);
	while (got < (size_t)(st.st_size - from)) {
		ssize_t r = pread(fd, buf + got, (size_t)(st.st_size - from) - got,
				  from + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", path,
				       r < 0 ? strerror(errno) : "it shrank");
			goto out;
		}
		got += (size_t)r;
	}
	if (got == 0 || buf[got - 1] != '\n') {
		why = got ? "it ends without a newline" : "it is empty";
		goto out;
	}
	buf[got - 1] = '\0';
	start = memrchr(buf, '\n', got - 1);
	if (!start && from > 0) {
		why = "its last record is over-long";
		goto out;
	}
	start = start ? start + 1 : buf;
	n = (size_t)(buf + got - 1 - start);
	why = record_open(start, n, true, len, &checked);
	if (why)
		goto out;
	*line = xmalloc(*len + 1);
	memcpy(*line, start, *len);
	(*line)[*len] = '\0';
out:
	if (why)
		rc = qual_fail(msg, QUAL_EINVAL, "'%s': %s", path, why);
	free(buf);
	close(fd);
	return rc;
}
