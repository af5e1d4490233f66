/* The state directory (daemon/store.c): job ids, atomic job creation and
 * state replacement, append-only logs read back, a torn last line ignored,
 * reported and cut off, and the scan that recovery starts from.
 *
 * Run one test with `test_store NAME` (ctest: store_NAME). Each test works in
 * a fresh temporary folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

static char dir[PATH_MAX];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static int setup(void **state)
{
	(void)state;
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
	nftw(top, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
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

static void test_log_append_read(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	struct store_log_info info;
	char got[256] = "";
	int fd;

	(void)state;
	make_job(s, "j000001", "running");
	assert_int_equal(store_log_open(s, "j000001", &fd, &m), 0);
	assert_int_equal(store_log_append(fd, "{\"seq\":0}", 9, false, &m), 0);
	assert_int_equal(store_log_append(fd, "{\"seq\":1}", 9, true, &m), 0);
	assert_int_equal(store_log_sync(fd, &m), 0);
	close(fd);
	/* Appending again continues the file; nothing is overwritten. */
	assert_int_equal(store_log_open(s, "j000001", &fd, &m), 0);
	assert_int_equal(store_log_append(fd, "{\"seq\":2}", 9, false, &m), 0);
	close(fd);
	assert_int_equal(store_log_read(s, "j000001", collect, got, &info, &m), 0);
	assert_string_equal(got, "{\"seq\":0}|{\"seq\":1}|{\"seq\":2}|");
	assert_int_equal(info.lines, 3);
	assert_int_equal(info.good_bytes, 30);
	assert_int_equal(info.torn_bytes, 0);
	assert_int_equal(store_log_read(s, "j000009", collect, got, &info, &m), QUAL_ENOENT);
	store_free(s);
}

static void test_log_torn_tail(void **state)
{
	struct store *s = open_store();
	struct qual_msg m = { "" };
	struct store_log_info info;
	char path[PATH_MAX + 64], got[256] = "", text[256];
	FILE *f;
	int fd;

	(void)state;
	make_job(s, "j000001", "running");
	snprintf(path, sizeof path, "%s/jobs/j000001/log.jsonl", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	/* The daemon died in the middle of its third line. */
	fputs("{\"a\":1}\n{\"b\":2}\n{\"c\":", f);
	fclose(f);
	assert_int_equal(store_log_read(s, "j000001", collect, got, &info, &m), 0);
	assert_string_equal(got, "{\"a\":1}|{\"b\":2}|");
	assert_int_equal(info.lines, 2);
	assert_int_equal(info.good_bytes, 16);
	assert_int_equal(info.torn_bytes, 5);
	/* Cut off, the next line starts on a line of its own. */
	assert_int_equal(store_log_repair(s, "j000001", &info, &m), 0);
	assert_int_equal(store_log_open(s, "j000001", &fd, &m), 0);
	assert_int_equal(store_log_append(fd, "{\"d\":4}", 7, true, &m), 0);
	close(fd);
	file_text(path, text, sizeof text);
	assert_string_equal(text, "{\"a\":1}\n{\"b\":2}\n{\"d\":4}\n");
	got[0] = '\0';
	assert_int_equal(store_log_read(s, "j000001", collect, got, &info, &m), 0);
	assert_int_equal(info.lines, 3);
	assert_int_equal(info.torn_bytes, 0);
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

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup, teardown)

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		T(ids),
		T(create_and_state),
		T(log_append_read),
		T(log_torn_tail),
		T(scan),
		T(open_errors),
	};
	static char filter[128];
	size_t i;

	if (argc > 1) {
		snprintf(filter, sizeof filter, "test_%s", argv[1]);
		for (i = 0; i < sizeof tests / sizeof tests[0]; i++)
			if (!strcmp(tests[i].name, filter))
				break;
		if (i == sizeof tests / sizeof tests[0]) {
			fprintf(stderr, "test_store: no test named '%s'\n", argv[1]);
			return 2;
		}
		cmocka_set_test_filter(filter);
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
