/* fuzz_log: a job's stored log read through a cursor (daemon/store_log.c,
 * store_cursor_*), the one way quald reads a log back: for a show, a watch's
 * replay, an HTTP job or event stream, recovery and history (store.h).
 *
 * Input: byte 0 picks each read's byte budget (1 to 256 bytes, or the whole
 * file), byte 1 how often a line is put back (STORE_CURSOR_AGAIN: every
 * Nth; 0: never: its low 3 bits) and the skip check's seq (its high 5), byte 2 where the file is cut for the growth check (as a
 * fraction of it); the rest is the log file, its bytes as they are (records
 * with or without checks, torn, lost, garbage). The file goes in a state
 * directory made once, as the log of its one job.
 *
 * Invariants:
 *   pause      a cursor read in steps of the budget, putting lines back,
 *              hands out exactly the lines, in order and byte for byte, of a
 *              whole read (store_log_read), and ends with the same count of
 *              lines, lost records and their bytes, unchecked records and
 *              valid prefix; each read hands out at most the budget plus one
 *              record; a cursor at the end hands out nothing more when
 *              read to the end again.
 *   skip       a cursor moved to its resume point (store_cursor_skip_to,
 *              the seq from byte 1) hands out, of the lines with a seq above
 *              it, exactly what a whole read does, on a log a whole read
 *              finds clean (every record checked, none lost, no tail); on
 *              any log it reads to its end with the sanitizers quiet.
 *   growth     a cursor that reads the file's first part to its end, and
 *              reads on after the rest is appended (as a job's log grows
 *              while a client reads it), hands out what a whole read of the
 *              complete file does.
 *   All        no ASan, UBSan or LeakSanitizer report.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/fsutil.h"
#include "common/xalloc.h"
#include "daemon/store.h"
#include "proto/line.h"
#include "fuzz.h"

/* Lines as read: each its length (a size_t) and its bytes. */
struct lines_buf {
	char *b;
	size_t len, cap;
	long n;
};

static void lines_put(struct lines_buf *x, const char *line, size_t len)
{
	if (x->len + len + sizeof len > x->cap) {
		x->cap = (x->len + len + sizeof len) * 2;
		x->b = xrealloc(x->b, x->cap);
	}
	memcpy(x->b + x->len, &len, sizeof len);
	memcpy(x->b + x->len + sizeof len, line, len);
	x->len += len + sizeof len;
	x->n++;
}

static int whole_each(void *ctx, const char *line, size_t len)
{
	FUZZ_CHECK(strlen(line) <= len);
	lines_put(ctx, line, len);
	return 0;
}

/* A paused reader: puts back every `every`th line it is offered (once), and
 * counts what one read hands out. */
struct paused {
	struct lines_buf lines;
	unsigned every, calls;
	bool put_back;
	size_t read_bytes;
	size_t longest;
};

static int paused_each(void *ctx, const char *line, size_t len)
{
	struct paused *p = ctx;

	p->calls++;
	if (p->every && !p->put_back && p->calls % p->every == 0) {
		p->put_back = true;
		return STORE_CURSOR_AGAIN;
	}
	p->put_back = false;
	lines_put(&p->lines, line, len);
	p->read_bytes += len;
	if (len > p->longest)
		p->longest = len;
	return STORE_CURSOR_NEXT;
}

static char top[PATH_MAX], dir[PATH_MAX + 16], path[PATH_MAX + 64];
static struct store *store;

static void cleanup(void)
{
	store_free(store);
	fs_rm_tree(top);
}

static void setup_once(void)
{
	struct qual_msg m;
	json_t *req, *st;

	if (store)
		return;
	snprintf(top, sizeof top, "/tmp/fuzz-log-XXXXXX");
	FUZZ_CHECK(mkdtemp(top));
	snprintf(dir, sizeof dir, "%s/state", top);
	FUZZ_CHECK(store_open(dir, &store, &m) == 0);
	req = json_pack("{s:s,s:s}", "baseline", "/b.so", "candidate", "/c.so");
	st = json_pack("{s:s}", "state", "running");
	FUZZ_CHECK(store_job_create(store, "j000001", req, st, &m) == 0);
	json_decref(req);
	json_decref(st);
	snprintf(path, sizeof path, "%s/jobs/j000001/log.jsonl", dir);
	atexit(cleanup);
}

static void file_put(const uint8_t *data, size_t size, bool append)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | (append ? O_APPEND : O_TRUNC));

	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(size == 0 || write(fd, data, size) == (ssize_t)size);
	close(fd);
}

/* A whole read, its warnings (stderr) left out. */
static void whole_read(struct lines_buf *x, struct store_log_info *info)
{
	struct qual_msg m;
	int saved, nul;

	fflush(stderr);
	saved = dup(2);
	nul = open("/dev/null", O_WRONLY);
	dup2(nul, 2);
	close(nul);
	FUZZ_CHECK(store_log_read(store, "j000001", whole_each, x, info, &m) == 0);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
}

/* Reads c to the end of the file in steps of budget bytes. */
static void read_to_end(struct store_cursor *c, struct paused *p, size_t budget)
{
	struct qual_msg m;
	bool at_end = false;
	long before;
	int steps = 0;

	while (!at_end) {
		p->read_bytes = 0;
		p->longest = 0;
		FUZZ_CHECK(store_cursor_read(c, paused_each, p, budget, &at_end, &m) == 0);
		/* The budget is passed by one record at most. */
		FUZZ_CHECK(p->read_bytes <= budget + p->longest);
		FUZZ_CHECK(++steps < 1000000);
	}
	/* At the end: reading again (over a bad run at the end, which a read
	 * scans at most 4 budgets of at a time) hands out nothing. */
	before = p->lines.n;
	do {
		FUZZ_CHECK(store_cursor_read(c, paused_each, p, budget, &at_end, &m) == 0);
		FUZZ_CHECK(p->lines.n == before);
		FUZZ_CHECK(++steps < 2000000);
	} while (!at_end);
}

/* The lines of x whose seq (read from the tail) is above seq. */
static void lines_above(const struct lines_buf *x, long seq, struct lines_buf *out)
{
	size_t at = 0, len;

	while (at < x->len) {
		memcpy(&len, x->b + at, sizeof len);
		if (line_tail_seq(x->b + at + sizeof len, len) > seq)
			lines_put(out, x->b + at + sizeof len, len);
		at += sizeof len + len;
	}
}

static void same_lines(const struct lines_buf *a, const struct lines_buf *b)
{
	FUZZ_CHECK(a->n == b->n);
	FUZZ_CHECK(a->len == b->len);
	FUZZ_CHECK(!a->len || !memcmp(a->b, b->b, a->len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lines_buf whole = {0};
	struct paused p = {0}, g = {0};
	struct store_log_info info;
	const struct store_log_info *ci;
	struct store_cursor *c;
	struct qual_msg m;
	size_t budget, split;
	long skip_seq;

	if (size < 3)
		return 0;
	setup_once();
	budget = data[0] == 255 ? SIZE_MAX / 8 : (size_t)data[0] + 1;
	p.every = data[1] % 8;
	split = (size - 3) * data[2] / 255;
	skip_seq = data[1] >> 3;
	data += 3;
	size -= 3;

	file_put(data, size, false);
	whole_read(&whole, &info);

	/* pause */
	FUZZ_CHECK(store_cursor_open(store, "j000001", &c, &m) == 0);
	read_to_end(c, &p, budget);
	same_lines(&p.lines, &whole);
	ci = store_cursor_info(c);
	FUZZ_CHECK(ci->lines == info.lines);
	FUZZ_CHECK(ci->lost == info.lost && ci->lost_bytes == info.lost_bytes);
	FUZZ_CHECK(ci->unchecked == info.unchecked);
	FUZZ_CHECK(ci->good_bytes == info.good_bytes);
	FUZZ_CHECK(!strcmp(ci->lost_where, info.lost_where));
	store_cursor_free(c);

	/* skip */
	{
		struct paused k = {0};
		struct lines_buf want = {0}, got = {0};
		long seq = skip_seq;

		FUZZ_CHECK(store_cursor_open(store, "j000001", &c, &m) == 0);
		FUZZ_CHECK(store_cursor_skip_to(c, seq) == 0);
		read_to_end(c, &k, budget);
		store_cursor_free(c);
		if (!info.lost && !info.torn_bytes && !info.unchecked) {
			lines_above(&whole, seq, &want);
			lines_above(&k.lines, seq, &got);
			same_lines(&got, &want);
		}
		free(want.b);
		free(got.b);
		free(k.lines.b);
	}

	/* growth */
	file_put(data, split, false);
	FUZZ_CHECK(store_cursor_open(store, "j000001", &c, &m) == 0);
	g.every = p.every;
	read_to_end(c, &g, budget);
	file_put(data + split, size - split, true);
	read_to_end(c, &g, budget);
	same_lines(&g.lines, &whole);
	FUZZ_CHECK(store_cursor_info(c)->lost == info.lost);
	store_cursor_free(c);

	free(whole.b);
	free(p.lines.b);
	free(g.lines.b);
	return 0;
}
