/* The state directory (daemon/store.c): job ids, atomic job creation and
 * state replacement, append-only logs of checked records read back byte for
 * byte, torn tails (a cut record, a flipped byte, garbage after the records)
 * found, reported and cut off with a note in the log, logs from before
 * checks, the scan that recovery starts from, and the fatal path: a failed
 * write or sync calls the fatal hook once and the store refuses to write
 * after it (the default hook ends the process with status 3).
 *
 * Run one test with `test_store NAME` (ctest: store_NAME). Each test works in
 * a fresh temporary folder. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "daemon/store.h"
#include "tests/unit/test_main.h"

static char dir[PATH_MAX];

/* The fatal hook of every test: counts its calls and keeps the message. A
 * test that does not expect one checks that it never ran (teardown). */
static struct {
	int calls;
	char message[1024];
} fatal_seen;

static void fatal_record(void *ctx, const char *message)
{
	(void)ctx;
	fatal_seen.calls++;
	snprintf(fatal_seen.message, sizeof fatal_seen.message, "%s", message);
}

static int setup(void **state)
{
	(void)state;
	memset(&fatal_seen, 0, sizeof fatal_seen);
	store_fatal_hook(fatal_record, NULL);
	snprintf(dir, sizeof dir, "/tmp/test-store-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	/* A state directory that does not exist yet: store_open creates it. */
	strcat(dir, "/state");
	return 0;
}

static int teardown(void **state)
{
	char top[PATH_MAX];

	(void)state;
	snprintf(top, sizeof top, "%s", dir);
	*strrchr(top, '/') = '\0';
	fs_rm_tree(top);
	/* The fatal tests reset this before they end. */
	assert_false(store_fatal());
	return 0;
}

static struct store *open_store(void)
{
	struct qual_msg m = { "" };
	struct store *s = NULL;

	if (store_open(dir, &s, &m))
		fail_msg("store_open: %s", m.text);
	return s;
}

static void file_text(const char *path, char *out, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(out, 1, cap - 1, f);
	out[n] = '\0';
	fclose(f);
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static void make_job(struct store *s, const char *id, const char *state)
{
	struct qual_msg m = { "" };
	json_t *req = json_pack("{s:s,s:s}", "baseline", "/b.so", "candidate", "/c.so");
	json_t *st = json_pack("{s:s}", "state", state);

	if (store_job_create(s, id, req, st, &m))
		fail_msg("store_job_create: %s", m.text);
	json_decref(req);
	json_decref(st);
}

/* ---- tests ---------------------------------------------------------------- */

static void test_ids(void **state)
{
	char id[STORE_ID_MAX];

	(void)state;
	store_id_format(1, id, sizeof id);
	assert_string_equal(id, "j000001");
	store_id_format(1234567, id, sizeof id);
	assert_string_equal(id, "j1234567");
	assert_int_equal(store_id_parse("j000001"), 1);
	assert_int_equal(store_id_parse("j1234567"), 1234567);
	assert_int_equal(store_id_parse("j00001"), -1);   /* 5 digits */
	assert_int_equal(store_id_parse("j000000"), -1);  /* ids start at 1 */
	assert_int_equal(store_id_parse("x000001"), -1);
	assert_int_equal(store_id_parse("j00000a"), -1);
	assert_int_equal(store_id_parse("j"), -1);
	assert_int_equal(store_id_parse(""), -1);
	assert_int_equal(store_id_parse(NULL), -1);
	assert_int_equal(store_id_parse("j99999999999999999999999"), -1);
}

static void test_create_and_state(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	json_t *req = NULL, *st = NULL;
	char path[PATH_MAX + 64], text[256];
	DIR *d;
	struct dirent *e;

	(void)state;
	make_job(s, "j000001", "queued");
	snprintf(path, sizeof path, "%s/jobs/j000001/log.jsonl", dir);
	assert_true(exists(path));
	assert_int_equal(store_job_read(s, "j000001", &req, &st, &m), 0);
	assert_string_equal(json_string_value(json_object_get(req, "candidate")), "/c.so");
	assert_string_equal(json_string_value(json_object_get(st, "state")), "queued");
	json_decref(req);
	json_decref(st);

	/* A job is created once. */
	req = json_object();
	assert_int_equal(store_job_create(s, "j000001", req, req, &m), QUAL_EINVAL);
	assert_non_null(strstr(m.text, "exists already"));
	json_decref(req);

	/* The state is replaced whole, and no temporary file stays behind. */
	st = json_pack("{s:s,s:s}", "state", "done", "verdict", "neutral");
	assert_int_equal(store_state_write(s, "j000001", st, &m), 0);
	json_decref(st);
	snprintf(path, sizeof path, "%s/jobs/j000001/state.json", dir);
	file_text(path, text, sizeof text);
	assert_string_equal(text, "{\"state\":\"done\",\"verdict\":\"neutral\"}\n");
	snprintf(path, sizeof path, "%s/jobs/j000001", dir);
	d = opendir(path);
	assert_non_null(d);
	while ((e = readdir(d)))
		assert_null(strstr(e->d_name, ".tmp"));
	closedir(d);

	/* Reading a job that is not there names the file. */
	assert_int_equal(store_job_read(s, "j000002", &req, NULL, &m), QUAL_ENOENT);
	assert_non_null(strstr(m.text, "j000002/request.json"));
	assert_null(req);
	store_free(s);
}

static int collect(void *ctx, const char *line, size_t len)
{
	char *buf = ctx;

	assert_int_equal(strlen(line), len);
	strcat(buf, line);
	strcat(buf, "|");
	return 0;
}

/* The log of job j000001, path and whole text. */
static void log_path(char *out, size_t cap)
{
	snprintf(out, cap, "%s/jobs/j000001/log.jsonl", dir);
}

static void log_text(char *out, size_t cap)
{
	char path[PATH_MAX + 64];

	log_path(path, sizeof path);
	file_text(path, out, cap);
}

static void append(struct store *s, const char *line, bool sync)
{
	struct qual_msg m = { "" };
	int fd;

	assert_int_equal(store_log_open(s, "j000001", &fd, &m), 0);
	assert_int_equal(store_log_append(fd, NULL, line, strlen(line), sync, &m), 0);
	close(fd);
}

/* Replaces the log's text. */
static void log_put(const char *text)
{
	char path[PATH_MAX + 64];
	FILE *f;

	log_path(path, sizeof path);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_log_append_read(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	struct store_log_info info;
	char got[256] = "", text[512];
	int fd;

	(void)state;
	make_job(s, "j000001", "running");
	assert_int_equal(store_log_open(s, "j000001", &fd, &m), 0);
	assert_int_equal(store_log_append(fd, NULL, "{\"seq\":0}", 9, false, &m), 0);
	assert_int_equal(store_log_append(fd, NULL, "{\"seq\":1}", 9, true, &m), 0);
	assert_int_equal(store_log_sync(fd, NULL, &m), 0);
	close(fd);
	/* Appending again continues the file; nothing is overwritten. */
	append(s, "{\"seq\":2, \"x\":\"a\\u00e9\"}", false);
	assert_int_equal(store_log_read(s, "j000001", collect, got, &info, &m), 0);
	/* Each line back byte for byte, spaces and escapes as they were. */
	assert_string_equal(got, "{\"seq\":0}|{\"seq\":1}|{\"seq\":2, \"x\":\"a\\u00e9\"}|");
	assert_int_equal(info.lines, 3);
	assert_int_equal(info.good_bytes, 9 + 29 + 9 + 29 + 24 + 29);
	assert_int_equal(info.torn_bytes, 0);
	assert_null(info.torn_why);
	assert_int_equal(info.unchecked, 0);
	assert_int_equal(store_log_read(s, "j000009", collect, got, &info, &m), QUAL_ENOENT);
	store_free(s);

	/* On disk: each record is its line with the check member spliced in,
	 * the first 16 hex digits of the line's SHA-256 (computed with
	 * Python's hashlib: sha256(b'{"seq":0}').hexdigest()[:16]). */
	log_text(text, sizeof text);
	assert_int_equal(strncmp(text, "{\"seq\":0,\"_check\":\"0b4a4b8d8ded3790\"}\n"
				 "{\"seq\":1,\"_check\":\"b41e95c43f388d56\"}\n", 76), 0);
}

/* The file's size. */
static off_t log_size(void)
{
	char path[PATH_MAX + 64];
	struct stat st;

	log_path(path, sizeof path);
	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* The line collected at index i ("a|b|c|"), into out. */
static void nth(const char *got, int i, char *out, size_t cap)
{
	const char *p = got, *bar;

	while (i-- > 0) {
		p = strchr(p, '|');
		assert_non_null(p);
		p++;
	}
	bar = strchr(p, '|');
	assert_non_null(bar);
	assert_true((size_t)(bar - p) < cap);
	memcpy(out, p, (size_t)(bar - p));
	out[bar - p] = '\0';
}

static void test_log_torn_tail(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	struct store_log_info info;
	char path[PATH_MAX + 64], got[1024] = "", note[512];
	off_t two;

	(void)state;
	make_job(s, "j000001", "running");
	append(s, "{\"a\":1,\"job\":\"j000001\",\"seq\":0}", false);
	append(s, "{\"b\":2,\"job\":\"j000001\",\"seq\":1}", false);
	two = log_size();
	append(s, "{\"c\":3,\"job\":\"j000001\",\"seq\":2}", false);
	/* The machine died in the middle of the third record. */
	log_path(path, sizeof path);
	assert_int_equal(truncate(path, two + 20), 0);
	assert_int_equal(store_log_read(s, "j000001", collect, got, &info, &m), 0);
	assert_string_equal(got, "{\"a\":1,\"job\":\"j000001\",\"seq\":0}|"
			    "{\"b\":2,\"job\":\"j000001\",\"seq\":1}|");
	assert_int_equal(info.lines, 2);
	assert_int_equal(info.good_bytes, two);
	assert_int_equal(info.torn_bytes, 20);
	assert_string_equal(info.torn_why, "incomplete record");

	/* Cut off, and the cut recorded in the log itself, with the next seq;
	 * info then describes the log as it is. */
	assert_int_equal(store_log_repair(s, "j000001", &info, &m), 0);
	assert_int_equal(info.lines, 3);
	assert_int_equal(info.torn_bytes, 0);
	assert_int_equal(info.good_bytes, log_size());
	append(s, "{\"d\":4,\"job\":\"j000001\",\"seq\":3}", true);
	got[0] = '\0';
	assert_int_equal(store_log_read(s, "j000001", collect, got, &info, &m), 0);
	assert_int_equal(info.lines, 4);
	assert_int_equal(info.torn_bytes, 0);
	nth(got, 2, note, sizeof note);
	snprintf(path, sizeof path, "{\"type\":\"error\",\"stage\":\"setup\","
		 "\"code\":\"interrupted\",\"arm\":null,"
		 "\"case\":null,\"message\":\"stored log was torn at byte %lld "
		 "(incomplete record): 20 bytes dropped\",\"job\":\"j000001\",\"seq\":2}",
		 (long long)two);
	assert_string_equal(note, path);
	nth(got, 3, note, sizeof note);
	assert_string_equal(note, "{\"d\":4,\"job\":\"j000001\",\"seq\":3}");
	/* A log without a torn tail is left alone. */
	assert_int_equal(store_log_repair(s, "j000001", &info, &m), 0);
	assert_int_equal(info.lines, 4);
	store_free(s);
}

/* One flipped byte in the middle of the log: that record is lost (skipped,
 * its bytes named), and the intact records after it are kept; nothing is
 * torn, since the log's last record checks out. */
static void test_log_flipped_byte(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	struct store_log_info info;
	char path[PATH_MAX + 64], got[1024] = "", where[128];
	off_t one, two, size;
	FILE *f;
	int c;

	(void)state;
	make_job(s, "j000001", "running");
	append(s, "{\"type\":\"start\",\"seq\":0}", false);
	one = log_size();
	append(s, "{\"type\":\"case\",\"seq\":1}", false);
	two = log_size();
	append(s, "{\"type\":\"case\",\"seq\":2}", false);
	append(s, "{\"type\":\"case\",\"seq\":3}", false);
	size = log_size();
	log_path(path, sizeof path);
	f = fopen(path, "r+");
	assert_non_null(f);
	fseek(f, one + 10, SEEK_SET);   /* inside "case" of seq 1 */
	c = fgetc(f);
	fseek(f, one + 10, SEEK_SET);
	fputc(c ^ 0x01, f);
	fclose(f);
	assert_int_equal(store_log_read(s, "j000001", collect, got, &info, &m), 0);
	assert_string_equal(got, "{\"type\":\"start\",\"seq\":0}|"
			    "{\"type\":\"case\",\"seq\":2}|{\"type\":\"case\",\"seq\":3}|");
	assert_int_equal(info.lines, 3);
	assert_int_equal(info.good_bytes, size);
	assert_int_equal(info.torn_bytes, 0);
	assert_null(info.torn_why);
	assert_int_equal(info.lost, 1);
	assert_int_equal(info.lost_bytes, two - one);
	snprintf(where, sizeof where, "bytes %lld-%lld (check mismatch)", (long long)one,
		 (long long)two);
	assert_string_equal(info.lost_where, where);
	/* Nothing to repair: the bytes stay, and every read skips them. */
	assert_int_equal(store_log_repair(s, "j000001", &info, &m), 0);
	assert_int_equal(log_size(), size);

	/* A flipped hex digit of a check is caught the same way. */
	log_put("{\"a\":1,\"_check\":\"0b4a4b8d8ded3790\"}\n");
	assert_int_equal(store_log_read(s, "j000001", NULL, NULL, &info, &m), 0);
	assert_int_equal(info.lines, 0);
	assert_string_equal(info.torn_why, "check mismatch");
	store_free(s);
}

static void test_log_garbage(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	struct store_log_info info;
	char path[PATH_MAX + 64], got[1024] = "";
	off_t two;
	FILE *f;

	(void)state;
	make_job(s, "j000001", "running");
	append(s, "{\"seq\":0}", false);
	append(s, "{\"seq\":1}", false);
	two = log_size();
	/* Whole lines of garbage (a disk returning zeros, or someone's echo)
	 * after the records: no check after checked records. */
	log_path(path, sizeof path);
	f = fopen(path, "a");
	fputs("{\"seq\":2}\n\n", f);
	fwrite("\0\0\0\0\n", 1, 5, f);
	fclose(f);
	assert_int_equal(store_log_read(s, "j000001", collect, got, &info, &m), 0);
	assert_string_equal(got, "{\"seq\":0}|{\"seq\":1}|");
	assert_int_equal(info.good_bytes, two);
	assert_int_equal(info.torn_bytes, 10 + 1 + 5);
	assert_string_equal(info.torn_why, "record without a check after checked ones");

	/* A record whose check member is cut short. */
	assert_int_equal(truncate(path, two), 0);
	f = fopen(path, "a");
	fputs("{\"seq\":2,\"_check\":\"0b4a\"}\n", f);
	fclose(f);
	assert_int_equal(store_log_read(s, "j000001", NULL, NULL, &info, &m), 0);
	assert_int_equal(info.lines, 2);
	assert_string_equal(info.torn_why, "malformed check");

	/* Repaired: cut back to the two records, then the note. */
	assert_int_equal(store_log_repair(s, "j000001", &info, &m), 0);
	got[0] = '\0';
	assert_int_equal(store_log_read(s, "j000001", collect, got, &info, &m), 0);
	assert_int_equal(info.lines, 3);
	assert_non_null(strstr(got, "|{\"type\":\"error\",\"stage\":\"setup\""));
	assert_non_null(strstr(got, "(malformed check): 26 bytes dropped\",\"job\":\"j000001\","
			       "\"seq\":2}|"));
	store_free(s);
}

/* A log that ends with its verdict gets no line after it: a job has exactly
 * one verdict line, and it is the last. */
static void test_log_repair_after_verdict(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	struct store_log_info info;
	char path[PATH_MAX + 64];
	off_t two;

	(void)state;
	make_job(s, "j000001", "done");
	append(s, "{\"type\":\"start\",\"seq\":0}", false);
	append(s, "{\"type\":\"verdict\",\"verdict\":\"neutral\",\"seq\":1}", true);
	two = log_size();
	/* Garbage after the verdict (a disk fault: the daemon writes nothing
	 * after a verdict). */
	append(s, "{\"type\":\"case\",\"seq\":2}", false);
	log_path(path, sizeof path);
	assert_int_equal(truncate(path, two + 3), 0);
	assert_int_equal(store_log_read(s, "j000001", NULL, NULL, &info, &m), 0);
	assert_int_equal(info.torn_bytes, 3);
	assert_int_equal(store_log_repair(s, "j000001", &info, &m), 0);
	assert_int_equal(info.lines, 2);
	assert_int_equal(info.good_bytes, two);
	assert_int_equal(log_size(), two);
	store_free(s);
}

/* A log written before checks existed (one line each), continued after. */
static void test_log_legacy(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	struct store_log_info info;
	char got[1024] = "";

	(void)state;
	make_job(s, "j000001", "running");
	log_put("{\"seq\":0}\n{\"seq\":1}\n");
	append(s, "{\"seq\":2}", true);
	assert_int_equal(store_log_read(s, "j000001", collect, got, &info, &m), 0);
	assert_string_equal(got, "{\"seq\":0}|{\"seq\":1}|{\"seq\":2}|");
	assert_int_equal(info.lines, 3);
	assert_int_equal(info.unchecked, 2);
	assert_int_equal(info.torn_bytes, 0);
	/* A checked record whose key lost a byte is not taken for one from
	 * before checks, even as the first record. */
	log_put("{\"seq\":0,\"_chxck\":\"0b4a4b8d8ded3790\"}\n");
	assert_int_equal(store_log_read(s, "j000001", NULL, NULL, &info, &m), 0);
	assert_int_equal(info.lines, 0);
	assert_string_equal(info.torn_why, "malformed check");
	/* Unchecked records must at least be JSON objects. */
	log_put("{\"seq\":0}\n{\"seq\":1\n{\"seq\":2}\n");
	got[0] = '\0';
	assert_int_equal(store_log_read(s, "j000001", collect, got, &info, &m), 0);
	assert_string_equal(got, "{\"seq\":0}|{\"seq\":2}|");
	assert_int_equal(info.lost, 1);
	assert_string_equal(info.lost_where,
			    "bytes 10-19 (record without a check that is not a json object)");
	assert_int_equal(info.torn_bytes, 0);
	/* ... and at the end, it is the torn tail. */
	log_put("{\"seq\":0}\n{\"seq\":1\n");
	assert_int_equal(store_log_read(s, "j000001", NULL, NULL, &info, &m), 0);
	assert_string_equal(info.torn_why, "record without a check that is not a json object");
	assert_int_equal(info.torn_bytes, 9);
	store_free(s);
}

/* What the store takes as a line: a JSON object with members (the check is
 * spliced in as one more), no newline. Refused, not fatal. */
static void test_log_line_shape(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	const char *bad[] = { "", "{}", "{ }", "[1]", "1", "{\"a\":1}\n", "{\"a\":1} ",
			      "{\"a\":1}\n{\"b\":2}" };
	size_t i;
	int fd;

	(void)state;
	make_job(s, "j000001", "running");
	assert_int_equal(store_log_open(s, "j000001", &fd, &m), 0);
	for (i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_int_equal(store_log_append(fd, NULL, bad[i], strlen(bad[i]), false, &m),
				 QUAL_EINVAL);
	close(fd);
	assert_int_equal(log_size(), 0);
	assert_int_equal(fatal_seen.calls, 0);
	store_free(s);
}

static void test_scan(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	char path[PATH_MAX + 64];
	long *nums = NULL;
	int n = -1;

	(void)state;
	assert_int_equal(store_scan(s, &nums, &n, &m), 0);
	assert_int_equal(n, 0);
	free(nums);
	make_job(s, "j000010", "done");
	make_job(s, "j000002", "queued");
	make_job(s, "j000003", "running");
	/* A job being created when the daemon died, and things not jobs. */
	snprintf(path, sizeof path, "%s/jobs/.j000011.new", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/jobs/.j000011.new/request.json", dir);
	close(open(path, O_WRONLY | O_CREAT, 0600));
	snprintf(path, sizeof path, "%s/jobs/notes.txt", dir);
	close(open(path, O_WRONLY | O_CREAT, 0600));
	snprintf(path, sizeof path, "%s/jobs/j12", dir);
	assert_int_equal(mkdir(path, 0700), 0);

	assert_int_equal(store_scan(s, &nums, &n, &m), 0);
	assert_int_equal(n, 3);
	assert_int_equal(nums[0], 2);
	assert_int_equal(nums[1], 3);
	assert_int_equal(nums[2], 10);
	free(nums);
	snprintf(path, sizeof path, "%s/jobs/.j000011.new", dir);
	assert_false(exists(path));
	snprintf(path, sizeof path, "%s/jobs/notes.txt", dir);
	assert_true(exists(path));
	store_free(s);
}

static void test_open_errors(void **state)
{
	struct qual_msg m = { "" };
	struct store *s = (struct store *)1;
	char path[PATH_MAX + 16];

	(void)state;
	assert_int_equal(store_open("", &s, &m), QUAL_EINVAL);
	assert_null(s);
	/* A file where the state directory should be. */
	s = open_store();
	store_free(s);
	snprintf(path, sizeof path, "%s/file", dir);
	close(open(path, O_WRONLY | O_CREAT, 0600));
	assert_int_equal(store_open(path, &s, &m), QUAL_EIO);
	assert_non_null(strstr(m.text, "cannot create"));
}

/* ---- the fatal path ---------------------------------------------------------- */

/* After a fatal failure: the hook ran once with what; every later write is
 * refused without calling it again; reads still work. Then resets. */
static void assert_fatal_once(struct store *s, const char *what)
{
	struct qual_msg m = { "" };
	json_t *st = json_pack("{s:s}", "state", "done");
	int fd = -1;

	assert_true(store_fatal());
	assert_int_equal(fatal_seen.calls, 1);
	assert_non_null(strstr(fatal_seen.message, what));
	assert_int_equal(store_state_write(s, "j000001", st, &m), QUAL_EIO);
	assert_non_null(strstr(m.text, "the state directory failed earlier: "));
	assert_non_null(strstr(m.text, what));
	assert_int_equal(store_log_open(s, "j000001", &fd, &m), QUAL_EIO);
	assert_int_equal(fd, -1);
	assert_int_equal(store_job_create(s, "j000099", st, st, &m), QUAL_EIO);
	assert_int_equal(fatal_seen.calls, 1);
	assert_int_equal(store_log_read(s, "j000001", NULL, NULL, NULL, &m), 0);
	json_decref(st);
	store_fatal_hook(fatal_record, NULL);
	assert_false(store_fatal());
}

/* A write that fails (a full disk: /dev/full) is fatal. */
static void test_fatal_write(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	int fd = open("/dev/full", O_WRONLY);

	(void)state;
	make_job(s, "j000001", "running");
	assert_true(fd >= 0);
	/* The message names the file (and so the job). */
	assert_int_equal(store_log_append(fd, "/dev/full", "{\"seq\":0}", 9, false, &m),
			 QUAL_EIO);
	close(fd);
	assert_string_equal(m.text, "cannot append to '/dev/full': No space left on device");
	assert_fatal_once(s, "cannot append to '/dev/full': No space left on device");
	store_free(s);
}

/* A sync that fails is fatal: fdatasync on a pipe fails (EINVAL), which
 * stands for a disk's EIO here. */
static void test_fatal_sync(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	int p[2];

	(void)state;
	make_job(s, "j000001", "running");
	assert_int_equal(pipe(p), 0);
	assert_int_equal(store_log_sync(p[1], "/x/jobs/j000001/log.jsonl", &m), QUAL_EIO);
	assert_non_null(strstr(m.text, "cannot sync '/x/jobs/j000001/log.jsonl': "));
	assert_fatal_once(s, "cannot sync '/x/jobs/j000001/log.jsonl': ");
	/* The same through an append with sync: the record went in, its sync
	 * failed. */
	assert_int_equal(store_log_append(p[1], NULL, "{\"seq\":0}", 9, true, &m), QUAL_EIO);
	assert_int_equal(fatal_seen.calls, 2);
	assert_non_null(strstr(fatal_seen.message, "cannot sync 'log': "));
	store_fatal_hook(fatal_record, NULL);
	close(p[0]);
	close(p[1]);
	store_free(s);
}

/* A state that cannot be replaced is fatal, and the old state stays. */
static void test_fatal_state(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	char path[PATH_MAX + 64];
	json_t *st = json_pack("{s:s}", "state", "done"), *old = NULL;

	(void)state;
	make_job(s, "j000001", "running");
	/* Its temporary file cannot be created: a folder is in the way. */
	snprintf(path, sizeof path, "%s/jobs/j000001/state.json.tmp", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(store_state_write(s, "j000001", st, &m), QUAL_EIO);
	assert_non_null(strstr(m.text, "state.json.tmp': Is a directory"));
	assert_int_equal(store_job_read(s, "j000001", NULL, &old, &m), 0);
	assert_string_equal(json_string_value(json_object_get(old, "state")), "running");
	json_decref(old);
	assert_fatal_once(s, "state.json.tmp': Is a directory");
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(store_state_write(s, "j000001", st, &m), 0);
	json_decref(st);
	store_free(s);
}

/* A log that cannot be opened (its job folder gone) is fatal. */
static void test_fatal_log_open(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	struct store_log_info info = { .lines = 1, .good_bytes = 10, .torn_bytes = 5 };
	char path[PATH_MAX + 64];
	int fd = 0;

	(void)state;
	make_job(s, "j000001", "running");
	make_job(s, "j000002", "running");
	snprintf(path, sizeof path, "%s/jobs/j000002/log.jsonl", dir);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof path, "%s/jobs/j000002/state.json", dir);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof path, "%s/jobs/j000002/request.json", dir);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof path, "%s/jobs/j000002", dir);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(store_log_open(s, "j000002", &fd, &m), QUAL_EIO);
	assert_int_equal(fd, -1);
	assert_non_null(strstr(m.text, "j000002/log.jsonl': No such file or directory"));
	assert_fatal_once(s, "j000002/log.jsonl': No such file or directory");
	/* A repair that cannot open the log, likewise. */
	assert_int_equal(store_log_repair(s, "j000002", &info, &m), QUAL_EIO);
	assert_int_equal(fatal_seen.calls, 2);
	assert_non_null(strstr(fatal_seen.message, "j000002/log.jsonl': No such file"));
	store_fatal_hook(fatal_record, NULL);
	store_free(s);
}

/* Failing to create a job is returned, not fatal: nothing was acknowledged,
 * and no folder of the job's name is left. */
static void test_create_not_fatal(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	char path[PATH_MAX + 64], moved[PATH_MAX + 64];
	json_t *o = json_pack("{s:s}", "state", "queued");

	(void)state;
	/* The jobs folder replaced by a file: the temporary folder cannot be
	 * made. */
	snprintf(path, sizeof path, "%s/jobs", dir);
	snprintf(moved, sizeof moved, "%s/jobs.away", dir);
	assert_int_equal(rename(path, moved), 0);
	close(open(path, O_WRONLY | O_CREAT, 0600));
	assert_int_equal(store_job_create(s, "j000001", o, o, &m), QUAL_EIO);
	assert_non_null(strstr(m.text, "cannot create '"));
	assert_int_equal(fatal_seen.calls, 0);
	assert_false(store_fatal());
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rename(moved, path), 0);
	assert_int_equal(store_job_create(s, "j000001", o, o, &m), 0);
	json_decref(o);
	store_free(s);
}

/* The default hook: a message on stderr and exit status 3, at once. */
static void test_fatal_default(void **state)
{
	char err[2048];
	int p[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct qual_msg m;
		int fd = open("/dev/full", O_WRONLY);

		dup2(p[1], 2);
		store_fatal_hook(NULL, NULL);
		store_log_append(fd, "/dev/full", "{\"seq\":0}", 9, false, &m);
		_exit(0); /* not reached when the hook works */
	}
	close(p[1]);
	while ((n = read(p[0], err + got, sizeof err - 1 - (size_t)got)) > 0)
		got += n;
	err[got] = '\0';
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 3);
	assert_string_equal(err, "quald: fatal: cannot append to '/dev/full': No space left on "
			    "device; stopping: the state directory can no longer be "
			    "trusted\n");
}

/* One quald a state directory: a second store_open is refused while the
 * first holds the lock, naming the directory and the holder's pid; once the
 * first is freed the directory opens again. (flock locks belong to the open
 * file, so a second open in one process conflicts as a second daemon's
 * would.) */
static void test_lock(void **state)
{
	struct store *s = open_store(), *t = NULL;
	struct qual_msg m = { "" };
	char want[PATH_MAX * 2 + 128], text[64];
	char path[PATH_MAX + 16];

	(void)state;
	assert_int_equal(store_open(dir, &t, &m), QUAL_EINVAL);
	assert_null(t);
	snprintf(want, sizeof want, "state directory '%s' is in use by another quald "
		 "(pid %ld): it holds '%s/lock'", dir, (long)getpid(), dir);
	assert_string_equal(m.text, want);
	snprintf(path, sizeof path, "%s/lock", dir);
	file_text(path, text, sizeof text);
	snprintf(want, sizeof want, "%ld\n", (long)getpid());
	assert_string_equal(text, want);
	store_free(s);
	t = open_store();
	store_free(t);
}

static long max_rss_kb(void)
{
	struct rusage ru;

	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	return ru.ru_maxrss;
}

/* A record over the bound is never held whole: one with a newline after it
 * is lost and the records after it kept; a planted 150 MB line without a
 * newline is the torn tail, and reading it costs about one record of
 * memory, not 150 MB. */
static void test_log_overlong(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	struct store_log_info info;
	char path[PATH_MAX + 64], got[1024] = "";
	off_t one, size;
	long before;
	FILE *f;
	int fd;

	(void)state;
	make_job(s, "j000001", "running");
	append(s, "{\"seq\":0}", false);
	one = log_size();
	log_path(path, sizeof path);
	f = fopen(path, "a");
	assert_non_null(f);
	for (int i = 0; i < (3 << 20) / 64; i++)
		fputs("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", f);
	fputc('\n', f);
	fclose(f);
	size = log_size();
	append(s, "{\"seq\":2}", false);
	assert_int_equal(store_log_read(s, "j000001", collect, got, &info, &m), 0);
	assert_string_equal(got, "{\"seq\":0}|{\"seq\":2}|");
	assert_int_equal(info.lost, 1);
	assert_int_equal(info.lost_bytes, size - one);
	assert_non_null(strstr(info.lost_where, "(over-long record)"));
	assert_int_equal(info.torn_bytes, 0);

	/* 150 MB without a newline (sparse: cheap to plant). */
	size = log_size();
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, size + (150 << 20)), 0);
	close(fd);
	before = max_rss_kb();
	assert_int_equal(store_log_read(s, "j000001", NULL, NULL, &info, &m), 0);
	assert_int_equal(info.lines, 2);
	assert_int_equal(info.good_bytes, size);
	assert_int_equal(info.torn_bytes, 150 << 20);
	assert_string_equal(info.torn_why, "incomplete over-long record");
	if (max_rss_kb() - before > 32 * 1024)
		fail_msg("reading the log took %ld kB more memory", max_rss_kb() - before);
	store_free(s);
}

/* store_log_last: the last record when the log ends with a whole checked
 * one; refused (QUAL_EINVAL) for every end that a whole read must settle. */
static void test_log_last(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	char text[512], *line = NULL;
	size_t len;

	(void)state;
	make_job(s, "j000001", "done");
	assert_int_equal(store_log_last(s, "j000001", &line, &len, &m), QUAL_EINVAL);
	assert_non_null(strstr(m.text, "it is empty"));
	append(s, "{\"a\":1,\"job\":\"j000001\",\"seq\":0}", false);
	append(s, "{\"type\":\"verdict\",\"job\":\"j000001\",\"seq\":1}", false);
	assert_int_equal(store_log_last(s, "j000001", &line, &len, &m), 0);
	assert_string_equal(line, "{\"type\":\"verdict\",\"job\":\"j000001\",\"seq\":1}");
	assert_int_equal(len, strlen(line));
	free(line);
	/* A torn tail: no newline at the end. */
	log_text(text, sizeof text);
	text[strlen(text) - 1] = '\0';
	log_put(text);
	assert_int_equal(store_log_last(s, "j000001", &line, &len, &m), QUAL_EINVAL);
	assert_null(line);
	/* A flipped byte in the last record. */
	log_text(text, sizeof text);
	text[strlen(text) - 5] ^= 1;
	strcat(text, "\n");
	log_put(text);
	assert_int_equal(store_log_last(s, "j000001", &line, &len, &m), QUAL_EINVAL);
	assert_non_null(strstr(m.text, "check"));
	/* A last record without a check (a log from before checks is read
	 * whole). */
	log_put("{\"a\":1}\n{\"type\":\"verdict\"}\n");
	assert_int_equal(store_log_last(s, "j000001", &line, &len, &m), QUAL_EINVAL);
	assert_int_equal(store_log_last(s, "j000009", &line, &len, &m), QUAL_ENOENT);
	store_free(s);
}

/* summary.json: none, a good one, one that is not an object with cases. */
static void test_summary(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	char path[PATH_MAX + 64];
	json_t *cases = NULL;
	FILE *f;

	(void)state;
	make_job(s, "j000001", "done");
	assert_int_equal(store_summary_read(s, "j000001", &cases, &m), QUAL_ENOENT);
	assert_int_equal(store_summary_path(s, "j000001", path, sizeof path, &m), 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"cases\":[{\"case\":\"a\"}]}", f);
	fclose(f);
	assert_int_equal(store_summary_read(s, "j000001", &cases, &m), 0);
	assert_int_equal(json_array_size(cases), 1);
	json_decref(cases);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"cases\":{}}", f);
	fclose(f);
	assert_int_equal(store_summary_read(s, "j000001", &cases, &m), QUAL_EINVAL);
	assert_null(cases);
	assert_non_null(strstr(m.text, "summary.json"));
	/* An entry without its case name: refused, not handed to a lookup. */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"cases\":[{\"case\":\"a\"},1]}", f);
	fclose(f);
	assert_int_equal(store_summary_read(s, "j000001", &cases, &m), QUAL_EINVAL);
	assert_null(cases);
	store_free(s);
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup, teardown)

/* A cursor's read of the log in steps of max_bytes (each record, when 1),
 * putting back every other record once when again is set: the lines
 * collected as collect does. */
struct step_read {
	char *got;
	bool again, put_back;
	int calls;
};

static int step_collect(void *ctx, const char *line, size_t len)
{
	struct step_read *x = ctx;

	x->calls++;
	if (x->again && !x->put_back && x->calls % 2) {
		x->put_back = true;
		return STORE_CURSOR_AGAIN;
	}
	x->put_back = false;
	collect(x->got, line, len);
	return STORE_CURSOR_NEXT;
}

static int cursor_steps(struct store_cursor *c, struct step_read *x, size_t max_bytes)
{
	struct qual_msg m = { "" };
	bool at_end = false;
	int steps = 0;

	while (!at_end) {
		assert_int_equal(store_cursor_read(c, step_collect, x, max_bytes, &at_end, &m), 0);
		assert_true(++steps < 100000);
	}
	return steps;
}

/* A cursor read in steps, paused after each record or put back, hands out
 * exactly what one whole read does (a lost record skipped, a record longer
 * than its first buffer, the torn tail left); then, from where it stopped,
 * the tail once it is complete and records appended after it, and a bad
 * record at the end as lost once a good one follows. */
static void test_log_cursor_resume(void **state)
{
	static char whole[1 << 20], got[1 << 20];
	struct store *s = open_store();
	struct qual_msg m = { "" };
	struct store_log_info info;
	struct store_cursor *c;
	const struct store_log_info *ci;
	char path[PATH_MAX + 64], line[256], *big;
	off_t one = 0;
	size_t max_steps[] = { 1, 100, 70000, SIZE_MAX / 8 };
	FILE *f;
	int c0;

	(void)state;
	make_job(s, "j000001", "running");
	for (int i = 0; i < 40; i++) {
		snprintf(line, sizeof line, "{\"type\":\"pair\",\"pair\":%d,\"seq\":%d}", i, i);
		append(s, line, false);
		if (i == 9)
			one = log_size();
	}
	big = malloc(150000);
	snprintf(big, 150000, "{\"type\":\"note\",\"pad\":\"%0*d\",\"seq\":40}", 140000, 7);
	append(s, big, false);
	append(s, "{\"type\":\"verdict\",\"seq\":41}", false);
	/* Record 10's bytes flipped: lost. A torn tail after the verdict. */
	log_path(path, sizeof path);
	f = fopen(path, "r+");
	assert_non_null(f);
	fseek(f, one + 5, SEEK_SET);
	c0 = fgetc(f);
	fseek(f, one + 5, SEEK_SET);
	fputc(c0 ^ 0x01, f);
	fseek(f, 0, SEEK_END);
	fputs("{\"type\":\"cut", f);
	fclose(f);
	assert_int_equal(store_log_read(s, "j000001", collect, whole, &info, &m), 0);
	assert_int_equal(info.lines, 41);
	assert_int_equal(info.lost, 1);
	assert_true(info.torn_bytes > 0);

	for (size_t k = 0; k < sizeof max_steps / sizeof max_steps[0]; k++)
		for (int again = 0; again < 2; again++) {
			struct step_read x = { got, again, false, 0 };
			int steps;

			got[0] = '\0';
			assert_int_equal(store_cursor_open(s, "j000001", &c, &m), 0);
			steps = cursor_steps(c, &x, max_steps[k]);
			assert_string_equal(got, whole);
			ci = store_cursor_info(c);
			assert_int_equal(ci->lines, info.lines);
			assert_int_equal(ci->lost, info.lost);
			assert_string_equal(ci->lost_where, info.lost_where);
			assert_int_equal(ci->good_bytes, info.good_bytes);
			if (max_steps[k] == 1 && !again)
				assert_true(steps >= 41);
			store_cursor_free(c);
		}

	/* Resumed from the end: the tail, once complete, and what follows. */
	{
		struct step_read x = { got, false, false, 0 };
		bool at_end;

		got[0] = '\0';
		assert_int_equal(store_cursor_open(s, "j000001", &c, &m), 0);
		cursor_steps(c, &x, 4096);
		got[0] = '\0';
		assert_int_equal(truncate(path, info.good_bytes), 0);
		append(s, "{\"type\":\"late\",\"seq\":42}", false);
		cursor_steps(c, &x, 4096);
		assert_string_equal(got, "{\"type\":\"late\",\"seq\":42}|");
		/* A bad record at the end is no line yet; a good one after it
		 * makes it lost. */
		f = fopen(path, "a");
		fputs("{\"bad\":1}{\n", f);
		fclose(f);
		got[0] = '\0';
		assert_int_equal(store_cursor_read(c, step_collect, &x, 4096, &at_end, &m), 0);
		assert_true(at_end);
		assert_string_equal(got, "");
		assert_int_equal(store_cursor_info(c)->lost, 1);
		append(s, "{\"type\":\"later\",\"seq\":43}", false);
		cursor_steps(c, &x, 4096);
		assert_string_equal(got, "{\"type\":\"later\",\"seq\":43}|");
		assert_int_equal(store_cursor_info(c)->lost, 2);
		store_cursor_free(c);
	}
	assert_int_equal(store_cursor_open(s, "j000009", &c, &m), QUAL_ENOENT);

	/* Moved to a resume point: every line after it, few before it. */
	log_put("");
	for (int i = 0; i < 3000; i++) {
		snprintf(line, sizeof line, "{\"type\":\"pair\",\"pair\":%d,\"seq\":%d}", i, i);
		append(s, line, false);
	}
	{
		struct step_read x = { got, false, false, 0 };
		const char *from;

		got[0] = '\0';
		assert_int_equal(store_cursor_open(s, "j000001", &c, &m), 0);
		assert_int_equal(store_cursor_skip_to(c, 2500), 0);
		cursor_steps(c, &x, 4096);
		from = strstr(got, "{\"type\":\"pair\",\"pair\":2501,");
		assert_non_null(from);
		assert_non_null(strstr(from, "\"seq\":2999}|"));
		assert_true(store_cursor_info(c)->lines < 1000);
		assert_int_equal(store_cursor_info(c)->lost, 0);
		store_cursor_free(c);
	}
	free(big);
	store_free(s);
}

QUAL_TESTS(
	T(ids),
	T(create_and_state),
	T(log_append_read),
	T(log_torn_tail),
	T(log_flipped_byte),
	T(log_garbage),
	T(log_repair_after_verdict),
	T(log_legacy),
	T(log_line_shape),
	T(fatal_write),
	T(fatal_sync),
	T(fatal_state),
	T(fatal_log_open),
	T(create_not_fatal),
	T(fatal_default),
	T(scan),
	T(open_errors),
	T(lock),
	T(log_overlong),
	T(log_last),
	T(summary),
	T(log_cursor_resume),
)
