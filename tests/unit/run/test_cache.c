/* run/cache.c: what a hit returns, what a miss is, bad entries (corrupted
 * code, a meta of another key) turned into misses and removed, two
 * processes writing one cache at once, and eviction of the least recently
 * used. Each test works in a fresh folder under /tmp. */
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
#include "run/cache.h"
#include "tests/unit/test_main.h"

static char dir[64];
static char *warned;      /* what the cache warned, for the test to read */
static size_t nwarned;
static FILE *warn;

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/qual-cache-XXXXXX");
	warn = open_memstream(&warned, &nwarned);
	return mkdtemp(dir) && warn ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	fs_rm_tree(dir);
	fclose(warn);
	free(warned);
	return 0;
}

static void open_cache(struct cache *c, size_t max_bytes)
{
	char path[PATH_MAX];

	/* A folder that does not exist yet: made. */
	snprintf(path, sizeof path, "%s/a/b", dir);
	assert_int_equal(cache_open(c, path, max_bytes, 1 << 20, warn, NULL), 0);
}

/* A key from a source text, every other field fixed. */
static void key_of(const char *source, char key[SHA256_HEX_SIZE])
{
	const char *opts[] = { "-lineinfo" };
	struct cache_key_in in = { "ab12", "nvrtc", "sm_90", "k.cu", source, opts, 1, NULL, NULL };

	cache_key(&in, key);
	assert_int_equal(strlen(key), 64);
}

/* A successful compile's result with code of n bytes of fill. */
static void result_of(struct rtc_result *r, size_t n, int fill)
{
	memset(r, 0, sizeof *r);
	r->code = malloc(n);
	memset(r->code, fill, n);
	r->code_size = n;
	assert_int_equal(sha256_hash_buffer(r->code, n, r->code_sha256, NULL), 0);
	r->log = strdup("ptxas info: Used 40 registers");
	r->log_size = strlen(r->log) + 10;
	r->log_truncated = true;
	r->compile_ms = 123.5;
	r->res = (struct rtc_resources){ 40, -1, 8, 4, 16, 1024 };
}

static void entry_path(const struct cache *c, const char *key, const char *file,
		       char *out)
{
	int n = snprintf(out, PATH_MAX, "%s/%.2s/%s%s%s", c->dir, key, key,
			 file ? "/" : "", file ? file : "");

	assert_true(n > 0 && n < PATH_MAX);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* ---- keys ---------------------------------------------------------------- */

static void test_key_every_field(void **state)
{
	const char *o1[] = { "-a" }, *o2[] = { "-b" }, *o3[] = { "-a", "" };
	struct cache_key_in base = { "ab12", "nvrtc", "sm_90", "k.cu", "src", o1, 1, NULL, NULL };
	struct cache_key_in v[] = {
		{ "ab13", "nvrtc", "sm_90", "k.cu", "src", o1, 1, NULL, NULL },
		{ "ab12", "hiprtc", "sm_90", "k.cu", "src", o1, 1, NULL, NULL },
		{ "ab12", "nvrtc", "sm_90a", "k.cu", "src", o1, 1, NULL, NULL },
		{ "ab12", "nvrtc", "sm_90", "j.cu", "src", o1, 1, NULL, NULL },
		{ "ab12", "nvrtc", "sm_90", "k.cu", "src ", o1, 1, NULL, NULL },
		{ "ab12", "nvrtc", "sm_90", "k.cu", "src", o2, 1, NULL, NULL },
		{ "ab12", "nvrtc", "sm_90", "k.cu", "src", o3, 2, NULL, NULL },
		{ "ab12", "nvrtc", "sm_90", "k.cu", "src", NULL, 0, NULL, NULL },
		/* The separators count: "sm_9" + "0k.cu" is not "sm_90" + "k.cu". */
		{ "ab12", "nvrtc", "sm_9", "0k.cu", "src", o1, 1, NULL, NULL },
		/* The library's folder and the helper take part. */
		{ "ab12", "nvrtc", "sm_90", "k.cu", "src", o1, 1, "f0", NULL },
		{ "ab12", "nvrtc", "sm_90", "k.cu", "src", o1, 1, NULL, "h0" },
	};
	char k0[SHA256_HEX_SIZE], k[SHA256_HEX_SIZE];

	(void)state;
	cache_key(&base, k0);
	cache_key(&base, k);
	assert_string_equal(k0, k);
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		cache_key(&v[i], k);
		assert_string_not_equal(k0, k);
	}
}

/* A file of n bytes at dir/name. */
static void put(const char *name, size_t n)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	assert_non_null(f = fopen(path, "w"));
	for (size_t i = 0; i < n; i++)
		fputc('x', f);
	fclose(f);
}

/* Asserts that dir's fingerprint is not was any more, and makes was it. */
static void changed(char was[SHA256_HEX_SIZE])
{
	char now[SHA256_HEX_SIZE];

	assert_int_equal(cache_dir_fingerprint(dir, now), 0);
	assert_string_not_equal(was, now);
	memcpy(was, now, sizeof now);
}

/* The folder's fingerprint changes with any entry's size, mtime, inode or
 * name, and with an entry added; not with nothing changed. */
static void test_dir_fingerprint(void **state)
{
	char a[SHA256_HEX_SIZE], b[SHA256_HEX_SIZE], path[PATH_MAX], other[PATH_MAX];
	struct timespec ts[2] = { { 1000, 5 }, { 1000, 5 } };

	(void)state;
	put("libnvrtc.so.13", 10);
	put("libnvrtc-builtins.so.13.0", 20);
	assert_int_equal(cache_dir_fingerprint(dir, a), 0);
	assert_int_equal(cache_dir_fingerprint(dir, b), 0);
	assert_string_equal(a, b);
	/* A sibling truncated. */
	put("libnvrtc-builtins.so.13.0", 5);
	changed(a);
	/* Only its mtime changed, by a nanosecond. */
	snprintf(path, sizeof path, "%s/libnvrtc-builtins.so.13.0", dir);
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	changed(a);
	ts[0].tv_nsec = ts[1].tv_nsec = 6;
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	changed(a);
	/* Replaced by another file of the same size and mtime: another inode. */
	snprintf(other, sizeof other, "%s/new", dir);
	put("new", 5);
	assert_int_equal(utimensat(AT_FDCWD, other, ts, 0), 0);
	assert_int_equal(rename(other, path), 0);
	changed(a);
	/* An entry added. */
	put("libamd_comgr.so.2", 1);
	changed(a);
	snprintf(path, sizeof path, "%s/none", dir);
	assert_int_equal(cache_dir_fingerprint(path, a), -1);
	assert_string_equal(a, "");
}

/* ---- hits and misses ----------------------------------------------------- */

static void test_hit_returns_the_compile(void **state)
{
	struct cache c;
	struct rtc_result r, got;
	char key[SHA256_HEX_SIZE];

	(void)state;
	open_cache(&c, 1 << 20);
	key_of("hit", key);
	result_of(&r, 5000, 0x5a);
	assert_int_equal(cache_store(&c, key, &r, NULL), 0);
	assert_true(cache_lookup(&c, key, &got));
	assert_int_equal(got.status, 0);
	assert_int_equal(got.code_size, 5000);
	assert_memory_equal(got.code, r.code, 5000);
	assert_string_equal(got.code_sha256, r.code_sha256);
	assert_string_equal(got.log, r.log);
	assert_int_equal(got.log_size, r.log_size);
	assert_true(got.log_truncated);
	assert_true(got.compile_ms == 123.5);
	assert_memory_equal(&got.res, &r.res, sizeof r.res);
	/* A second store of the key keeps the entry. */
	assert_int_equal(cache_store(&c, key, &r, NULL), 0);
	rtc_result_release(&got);
	assert_true(cache_lookup(&c, key, &got));
	rtc_result_release(&got);
	rtc_result_release(&r);
	fflush(warn);
	assert_int_equal(nwarned, 0);
}

static void test_miss_and_failures_not_stored(void **state)
{
	struct cache c;
	struct rtc_result r, got;
	char key[SHA256_HEX_SIZE], path[PATH_MAX];

	(void)state;
	open_cache(&c, 1 << 20);
	key_of("miss", key);
	assert_false(cache_lookup(&c, key, &got));
	assert_null(got.code);
	/* A failed compile is never stored. */
	result_of(&r, 100, 1);
	r.status = QUAL_ECOMPILE;
	assert_int_equal(cache_store(&c, key, &r, NULL), QUAL_EINVAL);
	entry_path(&c, key, NULL, path);
	assert_false(exists(path));
	assert_false(cache_lookup(&c, key, &got));
	rtc_result_release(&r);
	fflush(warn);
	assert_int_equal(nwarned, 0);
}

static void test_open_fails_where_nothing_can_be_made(void **state)
{
	struct cache c;
	struct qual_msg msg;

	(void)state;
	assert_int_equal(cache_open(&c, "/dev/null/cache", 1, 1, warn, &msg), QUAL_EIO);
	assert_non_null(strstr(msg.text, "cannot use artifact cache '/dev/null/cache'"));
}

/* ---- bad entries --------------------------------------------------------- */

static void test_corrupted_code_is_a_miss_and_removed(void **state)
{
	struct cache c;
	struct rtc_result r, got;
	char key[SHA256_HEX_SIZE], key2[SHA256_HEX_SIZE], path[PATH_MAX];
	int fd;

	(void)state;
	open_cache(&c, 1 << 20);
	key_of("corrupt", key);
	key_of("corrupt2", key2);
	result_of(&r, 4096, 7);
	assert_int_equal(cache_store(&c, key, &r, NULL), 0);
	assert_int_equal(cache_store(&c, key2, &r, NULL), 0);
	/* One byte changed in place: same size, another digest. */
	entry_path(&c, key, "code", path);
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "x", 1, 100), 1);
	close(fd);
	assert_false(cache_lookup(&c, key, &got));
	assert_null(got.code);
	entry_path(&c, key, NULL, path);
	assert_false(exists(path));
	/* Cut short: also a miss, removed, and no second warning. */
	entry_path(&c, key2, "code", path);
	assert_int_equal(truncate(path, 10), 0);
	assert_false(cache_lookup(&c, key2, &got));
	entry_path(&c, key2, NULL, path);
	assert_false(exists(path));
	fflush(warn);
	assert_non_null(strstr(warned, "does not match its digest"));
	assert_null(strstr(warned, "another size"));
	/* One warning line for the two. */
	assert_ptr_equal(strchr(warned, '\n'), warned + nwarned - 1);
	/* Stored again, it hits. */
	assert_int_equal(cache_store(&c, key, &r, NULL), 0);
	assert_true(cache_lookup(&c, key, &got));
	rtc_result_release(&got);
	rtc_result_release(&r);
}

/* Descriptors used up (EMFILE) and a file gone while another process trims
 * (ENOENT): plain misses, the entry left as it is and no warning. */
static void test_unreadable_is_a_plain_miss(void **state)
{
	struct cache c;
	struct rtc_result r, got;
	char key[SHA256_HEX_SIZE], path[PATH_MAX];
	struct rlimit old, low;
	int fds[64], n = 0;

	(void)state;
	open_cache(&c, 1 << 20);
	key_of("unreadable", key);
	result_of(&r, 4096, 9);
	assert_int_equal(cache_store(&c, key, &r, NULL), 0);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 48;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (n < 64 && (fds[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		n++;
	assert_true(n < 64);
	assert_false(cache_lookup(&c, key, &got));
	while (n > 0)
		close(fds[--n]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_null(got.code);
	entry_path(&c, key, NULL, path);
	assert_true(exists(path));
	assert_true(cache_lookup(&c, key, &got));
	rtc_result_release(&got);
	/* The code removed, as by a trim under way. */
	entry_path(&c, key, "code", path);
	assert_int_equal(unlink(path), 0);
	assert_false(cache_lookup(&c, key, &got));
	entry_path(&c, key, "meta.json", path);
	assert_true(exists(path));
	fflush(warn);
	assert_int_equal(nwarned, 0);
	/* Such a half-removed entry would stay a miss for good: the next store
	 * of its key takes its place, and the key hits again. */
	assert_int_equal(cache_store(&c, key, &r, NULL), 0);
	assert_true(cache_lookup(&c, key, &got));
	assert_int_equal(got.code_size, r.code_size);
	rtc_result_release(&got);
	rtc_result_release(&r);
}

static void test_meta_of_another_key_is_a_miss(void **state)
{
	struct cache c;
	struct rtc_result r, got;
	char a[SHA256_HEX_SIZE], b[SHA256_HEX_SIZE], pa[PATH_MAX], pb[PATH_MAX];
	char shard[PATH_MAX];

	(void)state;
	open_cache(&c, 1 << 20);
	key_of("key a", a);
	key_of("key b", b);
	result_of(&r, 300, 3);
	assert_int_equal(cache_store(&c, a, &r, NULL), 0);
	/* a's entry where b's belongs: its code is intact, its key is not b. */
	entry_path(&c, a, NULL, pa);
	entry_path(&c, b, NULL, pb);
	assert_true(snprintf(shard, sizeof shard, "%s/%.2s", c.dir, b) < (int)sizeof shard);
	(void)mkdir(shard, 0755);
	assert_int_equal(rename(pa, pb), 0);
	assert_false(cache_lookup(&c, b, &got));
	assert_false(exists(pb));
	fflush(warn);
	assert_non_null(strstr(warned, "another key"));
	rtc_result_release(&r);
}

/* ---- two writers --------------------------------------------------------- */

#define RACE_KEYS 40

/* A writer process: stores every key, its own code (fill) under each. */
static void writer(const struct cache *shared, int fill)
{
	struct cache c = *shared;
	struct rtc_result r;
	char key[SHA256_HEX_SIZE], src[32];

	result_of(&r, 20000 + (size_t)fill, fill);
	for (int i = 0; i < RACE_KEYS; i++) {
		snprintf(src, sizeof src, "race %d", i);
		key_of(src, key);
		if (cache_store(&c, key, &r, NULL) != 0)
			_exit(1);
	}
	_exit(0);
}

static void test_concurrent_writers(void **state)
{
	struct cache c;
	pid_t pids[2];
	char key[SHA256_HEX_SIZE], src[32];

	(void)state;
	open_cache(&c, (size_t)64 << 20);
	fflush(NULL);
	for (int w = 0; w < 2; w++) {
		pids[w] = fork();
		assert_true(pids[w] >= 0);
		if (pids[w] == 0)
			writer(&c, w + 1);
	}
	for (int w = 0; w < 2; w++) {
		int status;

		assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	/* Every entry is whole and one writer's: its code matches its meta. */
	for (int i = 0; i < RACE_KEYS; i++) {
		struct rtc_result got;

		snprintf(src, sizeof src, "race %d", i);
		key_of(src, key);
		assert_true(cache_lookup(&c, key, &got));
		assert_true(got.code_size == 20001 || got.code_size == 20002);
		assert_int_equal(((unsigned char *)got.code)[0], got.code_size - 20000);
		rtc_result_release(&got);
	}
	fflush(warn);
	assert_int_equal(nwarned, 0);
	/* No writer left a temporary folder. */
	{
		char cmd[PATH_MAX + 64];

		snprintf(cmd, sizeof cmd, "test -z \"$(find '%s' -name '.tmp-*')\"", c.dir);
		assert_int_equal(system(cmd), 0);
	}
}

/* ---- eviction ------------------------------------------------------------ */

static void set_mtime(const struct cache *c, const char *key, time_t t)
{
	char path[PATH_MAX];
	struct timespec ts[2] = { { t, 0 }, { t, 0 } };

	entry_path(c, key, NULL, path);
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void test_trim_evicts_least_recently_used(void **state)
{
	struct cache c;
	struct rtc_result r, got;
	char k[3][SHA256_HEX_SIZE], path[PATH_MAX], src[8];
	struct stat st;
	size_t entry;

	(void)state;
	open_cache(&c, (size_t)1 << 30);
	result_of(&r, 10000, 9);
	for (int i = 0; i < 3; i++) {
		snprintf(src, sizeof src, "lru %d", i);
		key_of(src, k[i]);
		assert_int_equal(cache_store(&c, k[i], &r, NULL), 0);
		set_mtime(&c, k[i], 1000000 + 1000 * i); /* k0 oldest, k2 newest */
	}
	entry_path(&c, k[0], "meta.json", path);
	assert_int_equal(stat(path, &st), 0);
	entry = 10000 + (size_t)st.st_size;
	/* k0 used now: k1 is the least recently used. */
	assert_true(cache_lookup(&c, k[0], &got));
	rtc_result_release(&got);
	c.max_bytes = 2 * entry + entry / 2;
	cache_trim(&c);
	for (int i = 0; i < 3; i++) {
		entry_path(&c, k[i], NULL, path);
		assert_int_equal(exists(path), i != 1);
	}
	/* Within the bound: nothing more goes. */
	cache_trim(&c);
	entry_path(&c, k[2], NULL, path);
	assert_true(exists(path));
	/* Room for one: k2 (older than k0's use) goes. */
	c.max_bytes = entry;
	cache_trim(&c);
	entry_path(&c, k[2], NULL, path);
	assert_false(exists(path));
	entry_path(&c, k[0], NULL, path);
	assert_true(exists(path));
	rtc_result_release(&r);
}

QUAL_TESTS(
	cmocka_unit_test(test_key_every_field),
	cmocka_unit_test_setup_teardown(test_dir_fingerprint, setup, teardown),
	cmocka_unit_test_setup_teardown(test_hit_returns_the_compile, setup, teardown),
	cmocka_unit_test_setup_teardown(test_miss_and_failures_not_stored, setup, teardown),
	cmocka_unit_test_setup_teardown(test_open_fails_where_nothing_can_be_made, setup, teardown),
	cmocka_unit_test_setup_teardown(test_corrupted_code_is_a_miss_and_removed, setup, teardown),
	cmocka_unit_test_setup_teardown(test_meta_of_another_key_is_a_miss, setup, teardown),
	cmocka_unit_test_setup_teardown(test_unreadable_is_a_plain_miss, setup, teardown),
	cmocka_unit_test_setup_teardown(test_concurrent_writers, setup, teardown),
	cmocka_unit_test_setup_teardown(test_trim_evicts_least_recently_used, setup, teardown),
)
