/* The library policy (daemon/policy.c): whole-component root matching, and
 * each refusal the issue names, with the reason in the message: outside the
 * allowed roots, a symlink out of a root, a world-writable file, a
 * world-writable folder (sticky or not), a group-writable one, a component
 * owned by someone else; then good paths (directly, through a symlink inside
 * a root), the root resolution and quald's --allow-root argument handling.
 * Then fixture directories: a good one (also through a symlink: the real
 * path), one that is not a directory, one outside the roots, one writable
 * by others (itself, or its manifest), one without a fixture.json or with
 * one that is no regular file, and the sticky rule one level higher than a
 * library's.
 *
 * Each test works in a fresh folder under POLICY_TEST_DIR (the build folder:
 * not under /tmp, which is world-writable and so refused by the policy
 * itself). Run one with `test_policy NAME` (ctest: policy_NAME). */
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/policy.h"
#include "tests/unit/test_main.h"

static char dir[PATH_MAX];       /* the test's folder (real path) */
static char root[PATH_MAX];      /* dir/allowed, the one root */
static const char *roots[1];
static char real[POLICY_PATH_MAX];
static struct qual_msg msg;

static void path_of(char *out, size_t cap, const char *rel)
{
	int n = snprintf(out, cap, "%s/%s", dir, rel);
	assert_true(n > 0 && (size_t)n < cap);
}

static void make_file(const char *rel, mode_t mode)
{
	char p[PATH_MAX];
	FILE *f;

	path_of(p, sizeof p, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs("not really a library\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(p, mode), 0);
}

static void make_dir(const char *rel, mode_t mode)
{
	char p[PATH_MAX];

	path_of(p, sizeof p, rel);
	assert_int_equal(mkdir(p, 0755), 0);
	/* chmod: mkdir's mode is cut by the umask. */
	assert_int_equal(chmod(p, mode), 0);
}

static int check(const char *rel)
{
	char p[PATH_MAX];

	path_of(p, sizeof p, rel);
	memset(&msg, 0, sizeof msg);
	real[0] = '\0';
	return policy_check_library(roots, 1, geteuid(), p, real, sizeof real, NULL, &msg);
}

static int setup(void **state)
{
	char tmpl[PATH_MAX];

	(void)state;
	snprintf(tmpl, sizeof tmpl, "%s/policy.XXXXXX", POLICY_TEST_DIR);
	assert_non_null(mkdtemp(tmpl));
	assert_non_null(realpath(tmpl, dir));
	/* mkdtemp makes it 0700; the rules want no other writer, which holds. */
	make_dir("allowed", 0755);
	make_dir("other", 0755);
	path_of(root, sizeof root, "allowed");
	roots[0] = root;
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	(void)state;
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static void test_path_under(void **state)
{
	(void)state;
	assert_true(policy_path_under("/opt/x/lib.so", "/opt"));
	assert_true(policy_path_under("/opt", "/opt"));
	assert_true(policy_path_under("/anything", "/"));
	/* A string prefix is not a component prefix. */
	assert_false(policy_path_under("/optx/lib.so", "/opt"));
	assert_false(policy_path_under("/op", "/opt"));
	assert_false(policy_path_under("/usr/lib.so", "/usr/lib"));
}

static void test_good(void **state)
{
	char want[PATH_MAX];

	(void)state;
	make_dir("allowed/sub", 0755);
	make_file("allowed/sub/lib.so", 0644);
	assert_int_equal(check("allowed/sub/lib.so"), 0);
	path_of(want, sizeof want, "allowed/sub/lib.so");
	assert_string_equal(real, want);
	/* Read-only and executable bits do not matter. */
	make_file("allowed/sub/lib2.so", 0555);
	assert_int_equal(check("allowed/sub/lib2.so"), 0);
}

static void test_outside(void **state)
{
	(void)state;
	make_file("other/lib.so", 0644);
	assert_int_equal(check("other/lib.so"), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "is outside the allowed roots"));
	assert_non_null(strstr(msg.text, "other/lib.so'"));
	/* A sibling whose name starts with the root's name is outside. */
	make_dir("allowedx", 0755);
	make_file("allowedx/lib.so", 0644);
	assert_int_equal(check("allowedx/lib.so"), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "outside the allowed roots"));
}

static void test_symlink_out(void **state)
{
	char target[PATH_MAX], link[PATH_MAX], want[PATH_MAX + 64];

	(void)state;
	make_file("other/lib.so", 0644);
	path_of(target, sizeof target, "other/lib.so");
	path_of(link, sizeof link, "allowed/lib.so");
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(check("allowed/lib.so"), QUAL_EINVAL);
	snprintf(want, sizeof want, "resolves to '%s', outside the allowed roots", target);
	assert_non_null(strstr(msg.text, want));
	/* A folder symlink out of the root, too. */
	path_of(target, sizeof target, "other");
	path_of(link, sizeof link, "allowed/out");
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(check("allowed/out/lib.so"), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "outside the allowed roots"));
}

static void test_symlink_in(void **state)
{
	char link[PATH_MAX];

	(void)state;
	make_file("allowed/lib.so.1", 0644);
	path_of(link, sizeof link, "allowed/lib.so");
	assert_int_equal(symlink("lib.so.1", link), 0);
	assert_int_equal(check("allowed/lib.so"), 0);
	assert_non_null(strstr(real, "allowed/lib.so.1"));
}

static void test_world_writable_file(void **state)
{
	char want[PATH_MAX + 64];

	(void)state;
	make_file("allowed/lib.so", 0646);
	assert_int_equal(check("allowed/lib.so"), QUAL_EINVAL);
	snprintf(want, sizeof want, "'%s/allowed/lib.so' is world-writable", dir);
	assert_non_null(strstr(msg.text, want));
}

static void test_world_writable_folder(void **state)
{
	char want[PATH_MAX + 64];

	(void)state;
	make_dir("allowed/ww", 0777);
	make_file("allowed/ww/lib.so", 0644);
	assert_int_equal(check("allowed/ww/lib.so"), QUAL_EINVAL);
	snprintf(want, sizeof want, "'%s/allowed/ww' is world-writable", dir);
	assert_non_null(strstr(msg.text, want));
	/* The sticky bit does not make the library's own folder acceptable
	 * (anyone may put a file there). */
	make_dir("allowed/tmp", 01777);
	make_file("allowed/tmp/lib.so", 0644);
	assert_int_equal(check("allowed/tmp/lib.so"), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "/allowed/tmp' is world-writable"));
	/* Higher up, a sticky folder (like /tmp holding a checkout) is
	 * admitted: the folder below it is ours and cannot be swapped. A
	 * world-writable folder without the sticky bit never is. */
	make_dir("allowed/tmp/ours", 0755);
	make_dir("allowed/tmp/ours/lib", 0755);
	make_file("allowed/tmp/ours/lib/lib.so", 0644);
	assert_int_equal(check("allowed/tmp/ours/lib/lib.so"), 0);
	make_dir("allowed/ww/ours", 0755);
	make_dir("allowed/ww/ours/lib", 0755);
	make_file("allowed/ww/ours/lib/lib.so", 0644);
	assert_int_equal(check("allowed/ww/ours/lib/lib.so"), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "/allowed/ww' is world-writable"));
	/* The root itself world-writable. */
	assert_int_equal(chmod(root, 0777), 0);
	make_file("allowed/lib.so", 0644);
	assert_int_equal(check("allowed/lib.so"), QUAL_EINVAL);
	snprintf(want, sizeof want, "'%s' is world-writable", root);
	assert_non_null(strstr(msg.text, want));
}

static void test_group_writable(void **state)
{
	char p[PATH_MAX];

	(void)state;
	make_file("allowed/lib.so", 0664);
	path_of(p, sizeof p, "allowed/lib.so");
	if (getegid() == 0 && geteuid() != 0) {
		/* Cannot make a non-root group here: only the root case. */
		assert_int_equal(check("allowed/lib.so"), 0);
		return;
	}
	if (geteuid() == 0) {
		assert_int_equal(chown(p, (uid_t)-1, 12345), 0);
		assert_int_equal(check("allowed/lib.so"), QUAL_EINVAL);
		assert_non_null(strstr(msg.text, "is writable by group 12345"));
		/* Root's group may write. */
		assert_int_equal(chown(p, (uid_t)-1, 0), 0);
		assert_int_equal(check("allowed/lib.so"), 0);
	} else {
		/* Our own (non-root) group. */
		assert_int_equal(check("allowed/lib.so"), QUAL_EINVAL);
		assert_non_null(strstr(msg.text, "is writable by group"));
	}
}

static void test_other_owner(void **state)
{
	char p[PATH_MAX];

	(void)state;
	make_file("allowed/lib.so", 0644);
	path_of(p, sizeof p, "allowed/lib.so");
	if (geteuid() == 0) {
		assert_int_equal(chown(p, 12345, (gid_t)-1), 0);
		assert_int_equal(check("allowed/lib.so"), QUAL_EINVAL);
		assert_non_null(strstr(msg.text, "is owned by uid 12345, not root or quald's user"));
	} else {
		/* As if the daemon ran as another user: our file is then
		 * someone else's. */
		memset(&msg, 0, sizeof msg);
		assert_int_equal(policy_check_library(roots, 1, geteuid() + 1, p, real,
						      sizeof real, NULL, &msg), QUAL_EINVAL);
		assert_non_null(strstr(msg.text, "not root or quald's user"));
	}
}

static void test_not_regular(void **state)
{
	(void)state;
	make_dir("allowed/d.so", 0755);
	assert_int_equal(check("allowed/d.so"), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "not a regular file"));
	assert_int_equal(check("allowed/missing.so"), QUAL_ENOENT);
	assert_non_null(strstr(msg.text, "missing.so"));
}

/* ---- fixture directories ---- */

static int check_fixture_dir(const char *rel)
{
	char p[PATH_MAX];

	path_of(p, sizeof p, rel);
	memset(&msg, 0, sizeof msg);
	real[0] = '\0';
	return policy_check_fixture_dir(roots, 1, geteuid(), p, real, sizeof real, &msg);
}

/* A fixture directory rel with its manifest (mode 0644). */
static void make_fixture_dir(const char *rel, mode_t mode)
{
	char manifest[PATH_MAX];

	make_dir(rel, mode);
	snprintf(manifest, sizeof manifest, "%s/fixture.json", rel);
	make_file(manifest, 0644);
}

static void test_fixture_dir_good(void **state)
{
	char want[PATH_MAX], link[PATH_MAX];

	(void)state;
	make_fixture_dir("allowed/fx", 0755);
	assert_int_equal(check_fixture_dir("allowed/fx"), 0);
	path_of(want, sizeof want, "allowed/fx");
	assert_string_equal(real, want);
	/* Through a symlink (inside the root): the real path. */
	path_of(link, sizeof link, "allowed/fxlink");
	assert_int_equal(symlink("fx", link), 0);
	assert_int_equal(check_fixture_dir("allowed/fxlink"), 0);
	assert_string_equal(real, want);
	/* Without a policy: only its kind and its manifest. */
	make_fixture_dir("other/fx", 0777);
	path_of(link, sizeof link, "other/fx");
	assert_int_equal(policy_check_fixture_dir(NULL, 0, geteuid(), link, real, sizeof real,
						  &msg), 0);
	assert_string_equal(real, link);
}

static void test_fixture_dir_not_dir(void **state)
{
	char want[PATH_MAX + 96];

	(void)state;
	make_file("allowed/fixture.json", 0644);
	assert_int_equal(check_fixture_dir("allowed/fixture.json"), QUAL_EINVAL);
	snprintf(want, sizeof want, "cannot use fixture directory '%s/allowed/fixture.json': "
		 "not a directory", dir);
	assert_string_equal(msg.text, want);
	assert_int_equal(check_fixture_dir("allowed/missing"), QUAL_ENOENT);
	assert_non_null(strstr(msg.text, "cannot use fixture directory '"));
	assert_non_null(strstr(msg.text, "allowed/missing': no such directory"));
}

static void test_fixture_dir_outside(void **state)
{
	char target[PATH_MAX], link[PATH_MAX], want[2 * PATH_MAX + 96];

	(void)state;
	make_fixture_dir("other/fx", 0755);
	path_of(target, sizeof target, "other/fx");
	assert_int_equal(check_fixture_dir("other/fx"), QUAL_EINVAL);
	snprintf(want, sizeof want, "fixture directory '%s' is outside the allowed roots",
		 target);
	assert_string_equal(msg.text, want);
	/* A symlink in the root that leads out of it. */
	path_of(link, sizeof link, "allowed/out");
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(check_fixture_dir("allowed/out"), QUAL_EINVAL);
	snprintf(want, sizeof want, "fixture directory '%s' resolves to '%s', outside the "
		 "allowed roots", link, target);
	assert_string_equal(msg.text, want);
}

static void test_fixture_dir_writable(void **state)
{
	char p[PATH_MAX], want[2 * PATH_MAX + 96];

	(void)state;
	/* The directory itself, sticky or not: others could add or rename its
	 * files. */
	make_fixture_dir("allowed/ww", 0777);
	path_of(p, sizeof p, "allowed/ww");
	assert_int_equal(check_fixture_dir("allowed/ww"), QUAL_EINVAL);
	snprintf(want, sizeof want, "fixture directory '%s' refused: '%s' is world-writable",
		 p, p);
	assert_string_equal(msg.text, want);
	make_fixture_dir("allowed/sticky", 01777);
	assert_int_equal(check_fixture_dir("allowed/sticky"), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "/allowed/sticky' is world-writable"));
	/* The folder holding it may be a sticky one of ours (like /tmp). */
	make_fixture_dir("allowed/sticky/fx", 0755);
	assert_int_equal(check_fixture_dir("allowed/sticky/fx"), 0);
	/* A folder above it writable by others without the sticky bit. */
	make_fixture_dir("allowed/ww/fx", 0755);
	assert_int_equal(check_fixture_dir("allowed/ww/fx"), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "/allowed/ww' is world-writable"));
	/* Its manifest writable by others. */
	make_fixture_dir("allowed/fx", 0755);
	path_of(p, sizeof p, "allowed/fx/fixture.json");
	assert_int_equal(chmod(p, 0666), 0);
	assert_int_equal(check_fixture_dir("allowed/fx"), QUAL_EINVAL);
	snprintf(want, sizeof want, "'%s' is world-writable", p);
	assert_non_null(strstr(msg.text, want));
	/* Owned by someone else (as root: chown; else as if the daemon ran as
	 * another user). */
	assert_int_equal(chmod(p, 0644), 0);
	path_of(p, sizeof p, "allowed/fx");
	memset(&msg, 0, sizeof msg);
	if (geteuid() == 0) {
		assert_int_equal(chown(p, 12345, (gid_t)-1), 0);
		assert_int_equal(check_fixture_dir("allowed/fx"), QUAL_EINVAL);
		assert_non_null(strstr(msg.text, "is owned by uid 12345, not root or quald's user"));
	} else {
		assert_int_equal(policy_check_fixture_dir(roots, 1, geteuid() + 1, p, real,
							  sizeof real, &msg), QUAL_EINVAL);
		assert_non_null(strstr(msg.text, "not root or quald's user"));
	}
	assert_non_null(strstr(msg.text, "fixture directory '"));
}

static void test_fixture_dir_no_manifest(void **state)
{
	char p[PATH_MAX], target[PATH_MAX], want[2 * PATH_MAX + 96];

	(void)state;
	make_dir("allowed/empty", 0755);
	path_of(p, sizeof p, "allowed/empty");
	assert_int_equal(check_fixture_dir("allowed/empty"), QUAL_ENOENT);
	snprintf(want, sizeof want, "cannot use fixture directory '%s': it holds no "
		 "fixture.json", p);
	assert_string_equal(msg.text, want);
	/* A folder named fixture.json. */
	make_dir("allowed/empty/fixture.json", 0755);
	assert_int_equal(check_fixture_dir("allowed/empty"), QUAL_EINVAL);
	snprintf(want, sizeof want, "cannot use fixture directory '%s': '%s/fixture.json' is "
		 "not a regular file", p, p);
	assert_string_equal(msg.text, want);
	/* A symlink to a manifest elsewhere. */
	make_dir("allowed/linked", 0755);
	make_file("other/fixture.json", 0644);
	path_of(target, sizeof target, "other/fixture.json");
	path_of(p, sizeof p, "allowed/linked/fixture.json");
	assert_int_equal(symlink(target, p), 0);
	assert_int_equal(check_fixture_dir("allowed/linked"), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "is not a regular file (a symbolic link)"));
}

static void test_root_resolve(void **state)
{
	char out[POLICY_PATH_MAX], p[PATH_MAX], link[PATH_MAX];

	(void)state;
	path_of(link, sizeof link, "rootlink");
	assert_int_equal(symlink(root, link), 0);
	assert_int_equal(policy_root_resolve(link, out, sizeof out, &msg), 0);
	assert_string_equal(out, root);
	path_of(p, sizeof p, "nope");
	assert_int_equal(policy_root_resolve(p, out, sizeof out, &msg), QUAL_ENOENT);
	make_file("afile", 0644);
	path_of(p, sizeof p, "afile");
	assert_int_equal(policy_root_resolve(p, out, sizeof out, &msg), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "not a directory"));
}

static void test_args_take(void **state)
{
	char a0[] = "quald", a1[] = "--socket", a2[] = "/s", a3[] = "--allow-root",
	     a4[] = "/srv/a", a5[] = "--allow-root=/srv/b", a6[] = "--slots", a7[] = "2";
	char *argv[] = {a0, a1, a2, a3, a4, a5, a6, a7, NULL};
	char *bad[] = {a0, a3, NULL};
	int argc = 8, n, i, found_a = 0, found_b = 0, found_opt = 0, badc = 2;
	char **r;

	(void)state;
	assert_int_equal(policy_args_take(&argc, argv, &r, &n, &msg), 0);
	assert_int_equal(argc, 5);
	assert_string_equal(argv[1], "--socket");
	assert_string_equal(argv[2], "/s");
	assert_string_equal(argv[3], "--slots");
	assert_string_equal(argv[4], "2");
	assert_null(argv[5]);
	for (i = 0; i < n; i++) {
		assert_non_null(r[i]);
		found_a += !strcmp(r[i], "/srv/a");
		found_b += !strcmp(r[i], "/srv/b");
		found_opt += !strcmp(r[i], "/opt");
	}
	assert_null(r[n]);
	assert_int_equal(found_a, 1);
	assert_int_equal(found_b, 1);
	assert_int_equal(found_opt, 1);
	policy_roots_free(r);
	assert_int_equal(policy_args_take(&badc, bad, &r, &n, &msg), QUAL_EINVAL);
	assert_non_null(strstr(msg.text, "--allow-root needs a folder"));
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup, teardown)

QUAL_TESTS(
	T(path_under),
	T(good),
	T(outside),
	T(symlink_out),
	T(symlink_in),
	T(world_writable_file),
	T(world_writable_folder),
	T(group_writable),
	T(other_owner),
	T(not_regular),
	T(fixture_dir_good),
	T(fixture_dir_not_dir),
	T(fixture_dir_outside),
	T(fixture_dir_writable),
	T(fixture_dir_no_manifest),
	T(root_resolve),
	T(args_take),
)
