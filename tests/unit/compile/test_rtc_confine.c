/* The compile folder and the compile child as --compile-user (compile/
 * rtc.c's private folder, qual-compile's confinement; docs/service.md,
 * "Trust model"), as root with the compile children run as nobody:
 *
 * - the folder is root's: nobody may pass through it to its own out/ and
 *   tmp/, and may not add, replace or rename a name in it, so the files
 *   root creates and hands over there (the source, the child's stderr) can
 *   be no link of its; links planted anyway are refused, never followed;
 * - a real identify and compile through qual-compile as nobody: the library
 *   ran as nobody in a user namespace of its own, its uid mapped, and
 *   non-dumpable (the order
 *   qual-compile confines itself in: a non-dumpable process other than root
 *   cannot write its uid map), could not plant a link in its compile
 *   folder, found its folder's name in no argument list, and the links it
 *   left in its own folders were not followed when the folder was removed.
 *
 * Every test skips (77) unless run as root, and fails if a compile folder
 * is left in its TMPDIR. */
#include "tests/unit/test_main.h"

#include "compile/rtc.c"
#include "compile/rtc_child.c"
#include "compile/rtc_parse.c"

#include <dirent.h>
#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>

#define AXPY_SOURCE                                                       \
	"extern \"C\" __global__ void axpy(float a, const float *x, float *y, int n)\n" \
	"{\n"                                                             \
	"	int i = blockIdx.x * blockDim.x + threadIdx.x;\n"          \
	"	if (i < n)\n"                                          \
	"		y[i] = a * x[i] + y[i];\n"                     \
	"}\n"

/* test_tmp: the tests' TMPDIR (0711: nobody passes through to its compile
 * folders); aux: a folder beside it for what the tests keep, the victims
 * root's (0700 folder "victims" with files) and the shim's record. */
static char test_tmp[64], aux[64], victims[PATH_MAX];
static uid_t nobody_uid;
static gid_t nobody_gid;

static void aux_path(char *out, size_t cap, const char *name)
{
	assert_int_equal(fs_path_join(out, cap, aux, name, NULL), 0);
}

static void file_put(const char *path, const char *text, mode_t mode)
{
	assert_int_equal(fs_write_synced(path, text, strlen(text), mode, NULL, NULL), 0);
}

/* That path still holds text, is root's and has mode. */
static void victim_intact(const char *path, const char *text, mode_t mode)
{
	struct stat st;
	char *got = NULL;
	size_t n;

	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, mode);
	assert_int_equal(fs_read_capped(path, 1 << 16, &got, &n, NULL), 0);
	assert_string_equal(got, text);
	free(got);
}

static int setup(void **state)
{
	struct passwd *pw = getpwnam("nobody");
	char p[PATH_MAX + 8];

	(void)state;
	if (geteuid() != 0 || !pw)
		return 0; /* the tests skip */
	nobody_uid = pw->pw_uid;
	nobody_gid = pw->pw_gid;
	snprintf(test_tmp, sizeof test_tmp, "/tmp/qual-rtc-confine-XXXXXX");
	snprintf(aux, sizeof aux, "/tmp/qual-rtc-confine-aux-XXXXXX");
	if (!mkdtemp(test_tmp) || chmod(test_tmp, 0711) || !mkdtemp(aux) || chmod(aux, 0711))
		return -1;
	snprintf(victims, sizeof victims, "%s/victims", aux);
	if (mkdir(victims, 0700))
		return -1;
	snprintf(p, sizeof p, "%s/kept", victims);
	file_put(p, "kept\n", 0600);
	setenv("TMPDIR", test_tmp, 1);
	rtc_set_helper(RTC_TEST_HELPER);
	rtc_set_compile_user(true, nobody_uid, nobody_gid);
	return 0;
}

/* Fails the test when a compile folder was left behind. */
static int teardown(void **state)
{
	struct dirent *e;
	int left = 0;
	DIR *d;

	(void)state;
	if (!test_tmp[0])
		return 0;
	rtc_set_compile_user(false, 0, 0);
	if (!(d = opendir(test_tmp)))
		return -1;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		print_error("left behind in TMPDIR: %s\n", e->d_name);
		left++;
	}
	closedir(d);
	fs_rm_tree(test_tmp);
	fs_rm_tree(aux);
	unsetenv("TMPDIR");
	test_tmp[0] = '\0';
	return left ? -1 : 0;
}

static void need_root(void)
{
	if (geteuid() != 0)
		qual_test_skip("needs root, to run compile children as nobody");
}

/* Runs fn(arg) as nobody (its only group nogroup) in a child; its exit
 * status. */
static int as_nobody(int (*fn)(const char *), const char *arg)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(nobody_gid, nobody_gid, nobody_gid) ||
		    setresuid(nobody_uid, nobody_uid, nobody_uid))
			_exit(100);
		_exit(fn(arg));
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* As nobody in the compile folder dir: every name root makes there, and
 * any other, refuses a link (EACCES), as do a new folder and a rename of
 * its own folders; in its own out/ and tmp/ it may write. 0, or which step
 * went otherwise. */
static int plant_in(const char *dir)
{
	static const char *const names[] = { RTC__SOURCE_FILE, RTC__STDERR_FILE,
					     RTC__RESULT_FILE, "planted" };
	char p[PATH_MAX + 32], q[PATH_MAX + 32];
	int fd;

	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		if (symlink(victims, p) == 0 || errno != EACCES)
			return 1 + i;
	}
	snprintf(p, sizeof p, "%s/new", dir);
	if (mkdir(p, 0700) == 0 || errno != EACCES)
		return 10;
	snprintf(p, sizeof p, "%s/" RTC__OUT_DIR, dir);
	snprintf(q, sizeof q, "%s/moved", dir);
	if (rename(p, q) == 0 || errno != EACCES)
		return 11;
	snprintf(p, sizeof p, "%s/" RTC__OUT_DIR "/mine", dir);
	if ((fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600)) < 0)
		return 20;
	close(fd);
	snprintf(p, sizeof p, "%s/" RTC_TMP_DIR "/mine", dir);
	if ((fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600)) < 0)
		return 21;
	close(fd);
	return 0;
}

static void test_folder_closed(void **state)
{
	char dir[PATH_MAX], p[PATH_MAX + 32], src_victim[PATH_MAX], err_victim[PATH_MAX];
	const char *argv[] = { RTC_TEST_HELPER, NULL };
	struct qual_msg msg = { "" };
	struct child c;
	struct stat st;

	(void)state;
	need_root();
	aux_path(src_victim, sizeof src_victim, "victim_src");
	aux_path(err_victim, sizeof err_victim, "victim_err");
	file_put(src_victim, "root's source\n", 0600);
	file_put(err_victim, "root's errors\n", 0600);
	assert_int_equal(rtc__workdir_new(dir, sizeof dir, &msg), 0);
	/* nobody, as the compile child, between the folder's making and its
	 * use (the race the reviewer won on a folder given to nobody). */
	assert_int_equal(as_nobody(plant_in, dir), 0);

	/* The folder is root's, passable by nobody's group only, in a folder
	 * of root's that nobody may pass through but not list; its two
	 * folders are nobody's. */
	snprintf(p, sizeof p, "%s/..", dir);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(st.st_uid == 0 && (st.st_mode & 07777) == 0711);
	assert_int_equal(lstat(dir, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_gid, nobody_gid);
	assert_int_equal(st.st_mode & 07777, 0710);
	snprintf(p, sizeof p, "%s/" RTC__OUT_DIR, dir);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode) && st.st_uid == nobody_uid && (st.st_mode & 0777) == 0700);
	snprintf(p, sizeof p, "%s/" RTC_TMP_DIR, dir);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode) && st.st_uid == nobody_uid && (st.st_mode & 0777) == 0700);

	/* Links planted anyway (by a hole elsewhere; here by root): the source
	 * and the child's stderr are refused, not written through them. */
	snprintf(p, sizeof p, "%s/" RTC__SOURCE_FILE, dir);
	assert_int_equal(symlink(src_victim, p), 0);
	snprintf(p, sizeof p, "%s/" RTC__STDERR_FILE, dir);
	assert_int_equal(symlink(err_victim, p), 0);
	assert_int_equal(rtc__workdir_put(dir, RTC__SOURCE_FILE, "x", 1, p, sizeof p, &msg), QUAL_EIO);
	assert_non_null(strstr(msg.text, "File exists"));
	assert_int_equal(rtc__helper_start(&c, argv, "/", dir, -1, &msg), QUAL_EIO);
	assert_non_null(strstr(msg.text, "File exists"));
	assert_int_equal(c.pid, -1);
	rtc_workdir_remove(dir);
	victim_intact(src_victim, "root's source\n", 0600);
	victim_intact(err_victim, "root's errors\n", 0600);

	/* A fresh folder: the source is root's, readable by nobody's group. */
	assert_int_equal(rtc__workdir_new(dir, sizeof dir, &msg), 0);
	assert_int_equal(rtc__workdir_put(dir, RTC__SOURCE_FILE, "x", 1, p, sizeof p, &msg), 0);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(st.st_uid == 0 && st.st_gid == nobody_gid && (st.st_mode & 0777) == 0640);
	rtc_workdir_remove(dir);
}

/* One line of the shim's record. */
struct look {
	long uid;
	char userns[128];
	char map[96];
	int dumpable;
	int argv;
	int plant;
};

static int records_read(const char *path, struct look *out, int max)
{
	char line[512];
	int n = 0;
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	while (n < max && fgets(line, sizeof line, f)) {
		assert_int_equal(sscanf(line, "uid=%ld userns=%127s map=%95s dumpable=%d "
					"argv=%d plant=%d", &out[n].uid, out[n].userns,
					out[n].map, &out[n].dumpable, &out[n].argv,
					&out[n].plant), 6);
		n++;
	}
	fclose(f);
	return n;
}

static void test_compile_as_user(void **state)
{
	char record[PATH_MAX], ours[128] = "", kept[PATH_MAX + 8], map[96];
	struct rtc_request req = { 0 };
	struct qual_msg msg = { "" };
	struct rtc_identity id;
	struct rtc_result res;
	struct look looks[4];
	ssize_t n;
	int fd, k;

	(void)state;
	need_root();
	aux_path(record, sizeof record, "record");
	fd = open(record, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, nobody_uid, nobody_gid), 0);
	close(fd);
	setenv("SHIM_CONFINE_RECORD", record, 1);
	setenv("SHIM_CONFINE_VICTIM", victims, 1);
	n = readlink("/proc/self/ns/user", ours, sizeof ours - 1);
	assert_true(n > 0);
	ours[n] = '\0';

	if (rtc_identify(RTC_SHIM_CONFINE, NULL, NULL, NULL, &id, &msg))
		fail_msg("identify: %s", msg.text);
	req.compiler = &id;
	req.source = AXPY_SOURCE;
	req.program_name = "axpy.cu";
	req.arch = "sm_90";
	if (rtc_compile(&req, NULL, &res, &msg))
		fail_msg("compile: %s", msg.text);
	assert_int_equal(res.status, 0);
	assert_true(res.code_size > 0);
	rtc_result_release(&res);
	rtc_identity_release(&id);
	unsetenv("SHIM_CONFINE_RECORD");
	unsetenv("SHIM_CONFINE_VICTIM");

	/* One look per load: the identify and the compile. */
	assert_int_equal(records_read(record, looks, 4), 2);
	/* Its namespace has its uid mapped to itself: qual-compile wrote the
	 * map, which it cannot once it is non-dumpable (then the map is empty
	 * and the child is the overflow uid, which nobody's uid also is). */
	snprintf(map, sizeof map, "%lu,%lu,1", (unsigned long)nobody_uid,
		 (unsigned long)nobody_uid);
	for (k = 0; k < 2; k++) {
		assert_int_equal(looks[k].uid, (long)nobody_uid);
		if (!strcmp(looks[k].userns, ours))
			fail_msg("load %d: the compile child is in our user namespace %s", k, ours);
		assert_string_equal(looks[k].map, map);
		assert_int_equal(looks[k].dumpable, 0);
		/* Its folder's name is in no argument list, which any other
		 * compile child could read. */
		assert_int_equal(looks[k].argv, 0);
		assert_int_equal(looks[k].plant, EACCES);
	}
	/* The links it left in its own folders went with them; what they
	 * pointed to stayed. */
	snprintf(kept, sizeof kept, "%s/kept", victims);
	victim_intact(kept, "kept\n", 0600);
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup, teardown)

QUAL_TESTS(
	T(folder_closed),
	T(compile_as_user),
)
