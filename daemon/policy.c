/* Library and fixture directory policy (policy.h). */
#include "daemon/policy.h"

#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/xalloc.h"

int policy_path_under(const char *path, const char *root)
{
	size_t n = strlen(root);

	if (n == 1 && root[0] == '/')
		return path[0] == '/';
	if (strncmp(path, root, n) != 0)
		return 0;
	/* A whole component: "/opt/x" is under "/opt", "/optx" is not. */
	return path[n] == '\0' || path[n] == '/';
}

int policy_root_resolve(const char *dir, char *out, size_t cap,
			struct qual_msg *msg)
{
	char buf[PATH_MAX];
	struct stat st;

	if (!realpath(dir, buf))
		return qual_fail(msg, errno == ENOENT ? QUAL_ENOENT : QUAL_EINVAL,
				 "cannot use allowed root '%s': %s", dir, strerror(errno));
	if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
		return qual_fail(msg, QUAL_EINVAL, "cannot use allowed root '%s': not a directory",
				 dir);
	if (strlen(buf) >= cap)
		return qual_fail(msg, QUAL_EINVAL, "cannot use allowed root '%s': path too long", dir);
	snprintf(out, cap, "%s", buf);
	return 0;
}

/* What is being checked, for the rules and the messages: a compiler
 * library ("cannot load compiler '/x': ...", "compiler '/x' refused: ...")
 * or a fixture directory ("cannot use fixture directory '/d': ..."). */
struct subject {
	const char *noun;     /* "compiler", "fixture directory" */
	const char *verb;     /* "load", "use" */
	bool directory;       /* it must be a directory, else a regular file */
	int sticky_depth;     /* components this far above it may be sticky
			       * world-writable folders (policy_check_component) */
};

/* A library and its own folder (where the loader finds its siblings) never
 * sit in a sticky folder; the folders above may. */
static const struct subject library_subject = { "compiler", "load", false, 2 };
/* A fixture directory is the folder whose files are read (the manifest,
 * the sources, the oracle program): it is never a sticky folder; the folder
 * holding it may be. */
static const struct subject fixture_subject = { "fixture directory", "use", true, 1 };

/* Checks one component (a real path: no symlinks left) for writers other
 * than root and self. Returns 0, or fails naming it. sticky_ok admits a
 * world-writable folder with the sticky bit (like /tmp) above what is
 * checked (struct subject's sticky_depth): there others cannot rename or
 * remove an entry they do not own, and the entry below it is checked to be
 * root's or ours, so the path cannot be swapped. */
static int policy_check_component(const struct subject *what, const char *given,
				  const char *comp, uid_t self, bool sticky_ok,
				  struct qual_msg *msg)
{
	struct stat st;

	if (lstat(comp, &st) != 0)
		return qual_fail(msg, QUAL_EIO, "%s '%s' refused: cannot inspect '%s': %s",
				 what->noun, given, comp, strerror(errno));
	if ((st.st_mode & S_IWOTH) &&
	    !(sticky_ok && S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) &&
	      (st.st_uid == 0 || st.st_uid == self)))
		return qual_fail(msg, QUAL_EINVAL, "%s '%s' refused: '%s' is world-writable",
				 what->noun, given, comp);
	if (st.st_mode & S_IWOTH)
		return 0; /* a sticky folder of root's or ours, as above */
	if ((st.st_mode & S_IWGRP) && st.st_gid != 0)
		return qual_fail(msg, QUAL_EINVAL,
				 "%s '%s' refused: '%s' is writable by group %lu",
				 what->noun, given, comp, (unsigned long)st.st_gid);
	if (st.st_uid != 0 && st.st_uid != self)
		return qual_fail(msg, QUAL_EINVAL,
				 "%s '%s' refused: '%s' is owned by uid %lu, not root or quald's user",
				 what->noun, given, comp, (unsigned long)st.st_uid);
	return 0;
}

/* The rules of policy.h for what (a library or a fixture directory) at
 * path: its real path into real, its stat into *st_out (may be NULL).
 * roots NULL: no policy (the real path and the kind of file only). */
static int policy_check_path(const struct subject *what, const char *const *roots,
			     int nroots, uid_t self, const char *path, char *real,
			     size_t cap, struct stat *st_out, struct qual_msg *msg)
{
	char buf[PATH_MAX], abs[PATH_MAX], *slash;
	struct stat st;
	int i, rc, under = 0, named_under = 0;

	if (!realpath(path, buf))
		return qual_fail(msg, errno == ENOENT ? QUAL_ENOENT : QUAL_EIO,
				 "cannot %s %s '%s': %s", what->verb, what->noun, path,
				 errno == ENOENT && what->directory ? "no such directory" :
				 strerror(errno));
	if (strlen(buf) >= cap)
		return qual_fail(msg, QUAL_EINVAL, "cannot %s %s '%s': path too long",
				 what->verb, what->noun, path);
	for (i = 0; roots && i < nroots; i++)
		under |= policy_path_under(buf, roots[i]);
	if (roots && !under) {
		/* Say "resolves to" when the name given sits in a root (its
		 * folder resolved) but a symlink leads out; else plainly
		 * outside. */
		snprintf(abs, sizeof abs, "%s", path);
		slash = strrchr(abs, '/');
		if (slash && slash != abs) {
			char dir[PATH_MAX];
			*slash = '\0';
			if (realpath(abs, dir))
				for (i = 0; i < nroots; i++)
					named_under |= policy_path_under(dir, roots[i]);
		}
		if (named_under || strcmp(buf, path) != 0)
			return qual_fail(msg, QUAL_EINVAL,
					 "%s '%s' resolves to '%s', outside the allowed roots",
					 what->noun, path, buf);
		return qual_fail(msg, QUAL_EINVAL, "%s '%s' is outside the allowed roots",
				 what->noun, path);
	}
	if (stat(buf, &st) != 0)
		return qual_fail(msg, QUAL_EIO, "cannot %s %s '%s': %s", what->verb, what->noun,
				 path, strerror(errno));
	if (what->directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
		return qual_fail(msg, QUAL_EINVAL, "cannot %s %s '%s': not a %s", what->verb,
				 what->noun, path, what->directory ? "directory" : "regular file");
	/* It, then each parent up to "/". */
	snprintf(abs, sizeof abs, "%s", buf);
	for (int depth = 0; roots; depth++) {
		if ((rc = policy_check_component(what, path, abs[0] ? abs : "/", self,
						 depth >= what->sticky_depth, msg)))
			return rc;
		if (!abs[0] || strcmp(abs, "/") == 0)
			break;
		slash = strrchr(abs, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
	snprintf(real, cap, "%s", buf);
	if (st_out)
		*st_out = st;
	return 0;
}

int policy_check_library(const char *const *roots, int nroots, uid_t self,
			 const char *path, char *real, size_t cap, struct stat *st_out,
			 struct qual_msg *msg)
{
	return policy_check_path(&library_subject, roots, nroots, self, path, real, cap,
				 st_out, msg);
}

int policy_check_fixture_dir(const char *const *roots, int nroots, uid_t self,
			     const char *path, char *real, size_t cap, struct qual_msg *msg)
{
	char manifest[PATH_MAX + sizeof "/" POLICY_FIXTURE_MANIFEST];
	struct stat st;
	int rc;

	if ((rc = policy_check_path(&fixture_subject, roots, nroots, self, path, real, cap,
				    NULL, msg)))
		return rc;
	/* The manifest itself, not through a link: a link could lead out of
	 * the directory that was checked. */
	snprintf(manifest, sizeof manifest, "%s/" POLICY_FIXTURE_MANIFEST, real);
	if (lstat(manifest, &st) != 0) {
		if (errno == ENOENT)
			return qual_fail(msg, QUAL_ENOENT, "cannot use fixture directory '%s': "
					 "it holds no " POLICY_FIXTURE_MANIFEST, path);
		return qual_fail(msg, QUAL_EIO, "cannot use fixture directory '%s': cannot "
				 "inspect '%s': %s", path, manifest, strerror(errno));
	}
	if (!S_ISREG(st.st_mode))
		return qual_fail(msg, QUAL_EINVAL,
				 "cannot use fixture directory '%s': '%s' is not a regular file%s",
				 path, manifest, S_ISLNK(st.st_mode) ? " (a symbolic link)" : "");
	if (roots && (rc = policy_check_component(&fixture_subject, path, manifest, self,
						  false, msg)))
		return rc;
	return 0;
}

/* Appends a copy of dir to the NULL-terminated list *roots (*n items, room
 * for *cap). */
static void roots_push(char ***roots, int *n, size_t *cap, const char *dir)
{
	XGROW(*roots, (size_t)*n + 2, *cap);
	(*roots)[(*n)++] = xstrdup(dir);
	(*roots)[*n] = NULL;
}

int policy_args_take(int *argc, char **argv, char ***roots, int *nroots,
		     struct qual_msg *msg)
{
	static const char *const defaults[] = POLICY_DEFAULT_ROOTS;
	static const char opt[] = "--allow-root";
	char self[PATH_MAX], *slash;
	ssize_t len;
	int i, out = 1;
	size_t k, cap = 0;

	*roots = NULL;
	*nroots = 0;
	for (k = 0; k < sizeof defaults / sizeof defaults[0]; k++)
		roots_push(roots, nroots, &cap, defaults[k]);
	len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len > 0) {
		self[len] = '\0';
		for (k = 0; k < 2 && (slash = strrchr(self, '/')); k++)
			*slash = '\0';
		if (k == 2 && self[0])
			roots_push(roots, nroots, &cap, self);
	}
	for (i = 1; i < *argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			/* Leave the rest to the daemon's parser. */
			while (i < *argc)
				argv[out++] = argv[i++];
			break;
		}
		if (strcmp(a, opt) == 0) {
			if (i + 1 >= *argc) {
				policy_roots_free(*roots);
				*roots = NULL;
				*nroots = 0;
				return qual_fail(msg, QUAL_EINVAL, "--allow-root needs a folder");
			}
			roots_push(roots, nroots, &cap, argv[++i]);
			continue;
		}
		if (strncmp(a, opt, sizeof opt - 1) == 0 && a[sizeof opt - 1] == '=') {
			roots_push(roots, nroots, &cap, a + sizeof opt);
			continue;
		}
		argv[out++] = argv[i];
	}
	argv[out] = NULL;
	*argc = out;
	return 0;
}

void policy_roots_free(char **roots)
{
	if (!roots)
		return;
	for (char **r = roots; *r; r++)
		free(*r);
	free(roots);
}
