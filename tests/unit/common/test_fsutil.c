/* common/fsutil.c: atomic replacement (the old file or the new one, never a
 * part, no temporary left behind), which step of a write failed, capped
 * reads, folder trees removed without following links, and where our own
 * programs are. Each test works in a fresh folder under /tmp. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/child.h"
#include "common/fsutil.h"
#include "tests/unit/test_main.h"

/* The folder of this test program, as the build put it there (CMake's
 * TARGET_FILE_DIR), to check fs_beside_self against. */
#ifndef FSUTIL_TEST_BIN_DIR
#error "FSUTIL_TEST_BIN_DIR must name the test program's folder"
#endif

static char dir[64];

static int make_dir(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/qual-fsutil-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	(void)state;
	fs_rm_tree(dir);
	return 0;
}

/* dir/name into out. */
static const char *in_dir(char *out, size_t cap, const char *name)
{
	assert_int_equal(fs_path_join(out, cap, dir, name, NULL), 0);
	return out;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* The whole file as a new string. */
static char *slurp(const char *path)
{
	char *out;
	size_t size;

	assert_int_equal(fs_read_capped(path, 1 << 20, &out, &size, NULL), 0);
	return out;
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* ---- writes -------------------------------------------------------------- */

static void test_write_atomic_replaces(void **state)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	enum fs_step failed = FS_STEP_RENAME;
	struct stat st;
	char *text;

	(void)state;
	in_dir(path, sizeof path, "state.json");
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	assert_int_equal(fs_write_atomic(path, "old", 3, 0600, &failed, NULL), 0);
	assert_int_equal(failed, FS_STEP_NONE);
	assert_int_equal(fs_write_atomic(path, "the new one", 11, 0600, &failed, NULL), 0);
	text = slurp(path);
	assert_string_equal(text, "the new one");
	free(text);
	assert_false(exists(tmp));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* Empty data is a file of 0 bytes. */
	assert_int_equal(fs_write_atomic(path, "", 0, 0600, NULL, NULL), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 0);
}

/* What a fork reports of one fs_write_atomic: its result, the step, the
 * message. */
struct attempt {
	const char *path;
	int rc;
	enum fs_step failed;
	struct qual_msg msg;
};

/* In the child: as nobody (root writes anywhere), writes and reports. */
static int attempt_as_nobody(void *arg)
{
	struct attempt *a = arg;

	if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
		return 2;
	a->failed = FS_STEP_NONE;
	a->rc = fs_write_atomic(a->path, "new", 3, 0644, &a->failed, &a->msg);
	return fs_write_all(1, a, sizeof *a) == 0 ? 0 : 3;
}

/* A folder its writer may not write to: the step that failed (creating the
 * temporary file) and its message, and the old file as it was. */
static void test_write_atomic_unwritable(void **state)
{
	char sub[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX + 8], want[PATH_MAX + 64];
	struct attempt a = { 0 };
	struct child c;
	struct child_exit ex;
	char *text;

	(void)state;
	in_dir(sub, sizeof sub, "ro");
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(fs_path_join(path, sizeof path, sub, "f", NULL), 0);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	write_file(path, "old");
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(chmod(sub, 0555), 0);

	a.path = path;
	child_init(&c);
	c.fn = attempt_as_nobody;
	c.arg = &a;
	c.out = CHILD_PIPE;
	assert_int_equal(child_start(&c, NULL), 0);
	assert_int_equal(fs_read_full(c.out_pipe, &a, sizeof a), (ssize_t)sizeof a);
	close(c.out_pipe);
	assert_int_equal(child_wait(&c, child_now() + 10, &ex), 0);
	assert_int_equal(child_exit_code(&ex), 0);

	assert_int_equal(a.rc, QUAL_EIO);
	assert_int_equal(a.failed, FS_STEP_OPEN);
	snprintf(want, sizeof want, "cannot create '%s': Permission denied", tmp);
	assert_string_equal(a.msg.text, want);
	text = slurp(path);
	assert_string_equal(text, "old");
	free(text);
	assert_false(exists(tmp));
	chmod(sub, 0755);
}

/* The rename fails (the target is a folder that is not empty): the step,
 * the message, the target untouched, the temporary file removed. */
static void test_write_atomic_rename_fails(void **state)
{
	char path[PATH_MAX], inner[PATH_MAX], tmp[PATH_MAX + 8], want[PATH_MAX + 64];
	struct qual_msg msg = { { 0 } };
	enum fs_step failed = FS_STEP_NONE;

	(void)state;
	in_dir(path, sizeof path, "taken");
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(fs_path_join(inner, sizeof inner, path, "x", NULL), 0);
	write_file(inner, "x");
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	assert_int_equal(fs_write_atomic(path, "new", 3, 0644, &failed, &msg), QUAL_EIO);
	assert_int_equal(failed, FS_STEP_RENAME);
	snprintf(want, sizeof want, "cannot rename to '%s': Is a directory", path);
	assert_string_equal(msg.text, want);
	assert_false(exists(tmp));
	assert_true(exists(inner));
}

/* A path too long for its temporary name. */
static void test_write_atomic_too_long(void **state)
{
	char path[PATH_MAX + 16];
	struct qual_msg msg = { { 0 } };

	(void)state;
	memset(path, 'a', sizeof path - 1);
	path[sizeof path - 1] = '\0';
	assert_int_equal(fs_write_atomic(path, "x", 1, 0644, NULL, &msg), QUAL_EINVAL);
	assert_int_equal(strncmp(msg.text, "path 'aaaa", 10), 0);
}

/* fs_write_synced: a failed write is the write step (/dev/full). */
static void test_write_synced_steps(void **state)
{
	char path[PATH_MAX], missing[PATH_MAX];
	struct qual_msg msg = { { 0 } };
	enum fs_step failed = FS_STEP_NONE;
	char *text;

	(void)state;
	assert_int_equal(fs_write_synced("/dev/full", "x", 1, 0644, &failed, &msg), QUAL_EIO);
	assert_int_equal(failed, FS_STEP_WRITE);
	assert_string_equal(msg.text, "cannot write '/dev/full': No space left on device");

	in_dir(missing, sizeof missing, "no/such/folder");
	assert_int_equal(fs_write_synced(missing, "x", 1, 0644, &failed, &msg), QUAL_EIO);
	assert_int_equal(failed, FS_STEP_OPEN);

	in_dir(path, sizeof path, "synced");
	assert_int_equal(fs_write_synced(path, "data", 4, 0644, &failed, &msg), 0);
	assert_int_equal(failed, FS_STEP_NONE);
	text = slurp(path);
	assert_string_equal(text, "data");
	free(text);

	assert_int_equal(fs_sync_dir(dir, &msg), 0);
	assert_int_equal(fs_sync_dir(missing, &msg), QUAL_EIO);
	assert_non_null(strstr(msg.text, "cannot open '"));
}

/* Through a pipe: every byte written, a read short only at the end. */
static void test_write_all_read_full(void **state)
{
	char data[100000], back[100001];
	int p[2];

	(void)state;
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (char)(i * 7);
	assert_int_equal(pipe(p), 0);
	if (fork() == 0) {
		close(p[0]);
		_exit(fs_write_all(p[1], data, sizeof data) == 0 ? 0 : 1);
	}
	close(p[1]);
	assert_int_equal(fs_read_full(p[0], back, sizeof back), (ssize_t)sizeof data);
	assert_memory_equal(back, data, sizeof data);
	assert_int_equal(fs_read_full(p[0], back, 10), 0);
	close(p[0]);
	{
		int st;
		assert_true(wait(&st) > 0);
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	assert_int_equal(fs_write_all(-1, "x", 1), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(fs_read_full(-1, back, 1), -1);
}

/* ---- reads --------------------------------------------------------------- */

static void test_read_capped(void **state)
{
	char path[PATH_MAX], want[PATH_MAX + 64];
	struct qual_msg msg = { { 0 } };
	char *out = (char *)1;
	size_t size = 99;

	(void)state;
	in_dir(path, sizeof path, "ten");
	write_file(path, "0123456789");
	/* The cap, and a file smaller than it: what is kept, terminated. */
	for (size_t cap = 0; cap <= 12; cap++) {
		size_t kept = cap < 10 ? cap : 10;

		assert_int_equal(fs_read_capped(path, cap, &out, &size, &msg), 0);
		assert_int_equal(size, kept);
		assert_int_equal(strlen(out), kept);
		assert_memory_equal(out, "0123456789", kept);
		free(out);
	}

	in_dir(path, sizeof path, "absent");
	assert_int_equal(fs_read_capped(path, 10, &out, &size, &msg), QUAL_ENOENT);
	snprintf(want, sizeof want, "cannot open '%s': No such file or directory", path);
	assert_string_equal(msg.text, want);
	assert_null(out);
	assert_int_equal(size, 0);

	/* A folder opens but does not read. */
	assert_int_equal(fs_read_capped(dir, 10, &out, &size, &msg), QUAL_EIO);
	assert_null(out);
}

/* A file whose size the kernel does not know in advance (procfs says 0):
 * its content is read all the same, up to the cap. */
static void test_read_capped_unsized(void **state)
{
	char *out;
	size_t size;

	(void)state;
	assert_int_equal(fs_read_capped("/proc/self/status", 1 << 16, &out, &size, NULL), 0);
	assert_true(size > 0);
	assert_int_equal(strlen(out), size);
	assert_non_null(strstr(out, "Name:"));
	free(out);
	assert_int_equal(fs_read_capped("/proc/self/status", 5, &out, &size, NULL), 0);
	assert_int_equal(size, 5);
	assert_string_equal(out, "Name:");
	free(out);

	/* A pipe (size 0 too) holding more than the first room: all of it, and
	 * then a cap between the first room and the whole. */
	for (size_t k = 0; k < 2; k++) {
		size_t cap = k == 0 ? 1 << 20 : 6000;
		char data[10000], path[64];
		int p[2];

		for (size_t i = 0; i < sizeof data; i++)
			data[i] = (char)('a' + i % 26);
		assert_int_equal(pipe(p), 0);
		assert_int_equal(write(p[1], data, sizeof data), (ssize_t)sizeof data);
		close(p[1]);
		snprintf(path, sizeof path, "/proc/self/fd/%d", p[0]);
		assert_int_equal(fs_read_capped(path, cap, &out, &size, NULL), 0);
		close(p[0]);
		assert_int_equal(size, cap < sizeof data ? cap : sizeof data);
		assert_memory_equal(out, data, size);
		assert_int_equal(out[size], '\0');
		free(out);
	}
}

/* What a process of another uid leaves for us to read: its own regular
 * file of one name is read; a link (even to a file of its), a FIFO (without
 * blocking), a file of another owner and a file of two names (a hard link)
 * are refused, in those words. */
static void test_read_capped_placed(void **state)
{
	char path[PATH_MAX], other[PATH_MAX], want[PATH_MAX + 64];
	struct qual_msg msg = { { 0 } };
	uid_t me = geteuid();
	char *out = NULL;
	size_t size = 0;

	(void)state;
	in_dir(path, sizeof path, "mine");
	write_file(path, "mine");
	assert_int_equal(fs_read_capped_placed(path, me, 64, &out, &size, &msg), 0);
	assert_string_equal(out, "mine");
	free(out);

	/* Another owner: as root the file is given away; otherwise the owner
	 * expected is another. Either way it is not the expected one's. */
	if (me == 0)
		assert_int_equal(chown(path, 65534, 65534), 0);
	assert_int_equal(fs_read_capped_placed(path, me == 0 ? 0 : me + 1, 64, &out, &size,
					       &msg), QUAL_EIO);
	snprintf(want, sizeof want, "cannot read '%s': not the owner's", path);
	assert_string_equal(msg.text, want);
	assert_null(out);
	if (me == 0)
		assert_int_equal(chown(path, 0, 0), 0);

	/* A second name for it: refused under both names. */
	in_dir(other, sizeof other, "second");
	assert_int_equal(link(path, other), 0);
	assert_int_equal(fs_read_capped_placed(other, me, 64, &out, &size, &msg), QUAL_EIO);
	snprintf(want, sizeof want, "cannot read '%s': a file of more than one name", other);
	assert_string_equal(msg.text, want);
	assert_int_equal(fs_read_capped_placed(path, me, 64, &out, &size, &msg), QUAL_EIO);
	assert_int_equal(unlink(other), 0);

	/* A link to it. */
	assert_int_equal(symlink(path, other), 0);
	assert_int_equal(fs_read_capped_placed(other, me, 64, &out, &size, &msg), QUAL_EIO);
	snprintf(want, sizeof want, "cannot open '%s': Too many levels of symbolic links",
		 other);
	assert_string_equal(msg.text, want);
	assert_int_equal(unlink(other), 0);

	/* A FIFO with no writer: refused at once. */
	assert_int_equal(mkfifo(other, 0600), 0);
	assert_int_equal(fs_read_capped_placed(other, me, 64, &out, &size, &msg), QUAL_EIO);
	snprintf(want, sizeof want, "cannot read '%s': not a regular file", other);
	assert_string_equal(msg.text, want);
	assert_null(out);
}

/* A tree of nested folders, links in it at every depth to a folder
 * outside and to folders of the tree itself: removed whole, through folder
 * descriptors, while the folder outside keeps every file. A tree whose
 * folders we may not list (mode 0) goes too when we are root. */
static void test_rm_tree_no_follow(void **state)
{
	char top[PATH_MAX], p[PATH_MAX + 16], outside[PATH_MAX], kept[PATH_MAX];
	char deep[PATH_MAX], *text;

	(void)state;
	in_dir(outside, sizeof outside, "outside");
	assert_int_equal(mkdir(outside, 0700), 0);
	assert_int_equal(fs_path_join(kept, sizeof kept, outside, "kept", NULL), 0);
	write_file(kept, "kept");
	in_dir(top, sizeof top, "top");
	assert_int_equal(mkdir(top, 0700), 0);
	snprintf(deep, sizeof deep, "%s", top);
	for (int i = 0; i < 8; i++) {
		char name[32];

		snprintf(p, sizeof p, "%s/to_outside", deep);
		assert_int_equal(symlink(outside, p), 0);
		snprintf(p, sizeof p, "%s/to_top", deep);
		assert_int_equal(symlink(top, p), 0);
		snprintf(p, sizeof p, "%s/file", deep);
		write_file(p, "x");
		snprintf(name, sizeof name, "/d%d", i);
		assert_true(strlen(deep) + strlen(name) < sizeof deep);
		strcat(deep, name);
		assert_int_equal(mkdir(deep, 0700), 0);
	}
	snprintf(p, sizeof p, "%s/fifo", deep);
	assert_int_equal(mkfifo(p, 0600), 0);
	if (geteuid() == 0)
		assert_int_equal(chmod(deep, 0), 0);
	fs_rm_tree(top);
	assert_int_equal(access(top, F_OK), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(access(kept, F_OK), 0);
	text = slurp(kept);
	assert_string_equal(text, "kept");
	free(text);
}

/* ---- trees --------------------------------------------------------------- */

static void test_rm_tree(void **state)
{
	char top[PATH_MAX], p[PATH_MAX], outside[PATH_MAX], kept[PATH_MAX];

	(void)state;
	in_dir(outside, sizeof outside, "outside");
	assert_int_equal(mkdir(outside, 0755), 0);
	assert_int_equal(fs_path_join(kept, sizeof kept, outside, "kept", NULL), 0);
	write_file(kept, "kept");

	in_dir(top, sizeof top, "top");
	assert_int_equal(mkdir(top, 0755), 0);
	in_dir(p, sizeof p, "top/a");
	assert_int_equal(mkdir(p, 0755), 0);
	in_dir(p, sizeof p, "top/a/b");
	assert_int_equal(mkdir(p, 0700), 0);
	in_dir(p, sizeof p, "top/a/b/deep");
	write_file(p, "deep");
	in_dir(p, sizeof p, "top/file");
	write_file(p, "file");
	/* Links to the folder outside and to a file in it: removed as links. */
	in_dir(p, sizeof p, "top/a/to_dir");
	assert_int_equal(symlink(outside, p), 0);
	in_dir(p, sizeof p, "top/to_file");
	assert_int_equal(symlink(kept, p), 0);
	in_dir(p, sizeof p, "top/dangling");
	assert_int_equal(symlink("/nonexistent/x", p), 0);

	fs_rm_tree(top);
	assert_false(exists(top));
	assert_true(exists(outside));
	assert_true(exists(kept));

	/* A link given as the tree: the link goes, not what it points to. */
	in_dir(p, sizeof p, "link");
	assert_int_equal(symlink(outside, p), 0);
	fs_rm_tree(p);
	assert_false(exists(p));
	assert_true(exists(kept));

	/* A plain file, nothing, and "" are fine. */
	fs_rm_tree(kept);
	assert_false(exists(kept));
	fs_rm_tree(kept);
	fs_rm_tree("");
	fs_rm_tree(NULL);
	assert_true(exists(outside));
}

/* ---- paths --------------------------------------------------------------- */

static void test_path_join(void **state)
{
	char out[8];
	struct qual_msg msg = { { 0 } };

	(void)state;
	assert_int_equal(fs_path_join(out, sizeof out, "ab", "cd", &msg), 0);
	assert_string_equal(out, "ab/cd");
	assert_int_equal(fs_path_join(out, sizeof out, "abc", "defg", &msg), QUAL_EINVAL);
	assert_string_equal(msg.text, "path 'abc/defg' is too long");
	assert_int_equal(fs_path_join(out, sizeof out, "abc", "def", &msg), 0);
	assert_string_equal(out, "abc/def");
}

static void test_beside_self(void **state)
{
	char *p = fs_beside_self("qual-compile");
	char want[PATH_MAX + 16], real[PATH_MAX];

	(void)state;
	assert_non_null(p);
	assert_non_null(realpath(FSUTIL_TEST_BIN_DIR, real));
	snprintf(want, sizeof want, "%s/qual-compile", real);
	assert_string_equal(p, want);
	free(p);
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, make_dir, remove_dir)

QUAL_TESTS(
	T(write_atomic_replaces),
	T(write_atomic_unwritable),
	T(write_atomic_rename_fails),
	T(write_atomic_too_long),
	T(write_synced_steps),
	T(write_all_read_full),
	T(read_capped),
	T(read_capped_unsized),
	T(read_capped_placed),
	T(rm_tree),
	T(rm_tree_no_follow),
	T(path_join),
	T(beside_self),
)
