/* Library policy: which compiler libraries quald agrees to have loaded (in
 * its workers and submit-check children; the daemon itself never loads one),
 * and which fixture directories its workers may read (and whose oracle
 * programs they may run).
 *
 * A library is accepted only when all of these hold, checked in this order:
 *   1. its real path (realpath(3): every symlink resolved) lies under one of
 *      the allowed roots, compared by whole path components ("/opt/x" is not
 *      under "/opt/xy"); a path that is itself under a root but resolves
 *      (through a symlink) outside every root is refused as such;
 *   2. it is a regular file;
 *   3. no component of the real path (the file, then each parent up to "/")
 *      can be written by anyone but root and the daemon's user:
 *        - not world-writable (S_IWOTH), sticky bit or not ("/tmp" is refused:
 *          anyone may put files there, so a file there is not vouched for);
 *        - not group-writable (S_IWGRP) unless the group is root's (gid 0);
 *        - owned by root (uid 0) or the daemon's user.
 * The roots themselves are resolved with realpath when configured.
 *
 * A fixture directory (docs/fixtures.md) gets the same rules, with "a
 * directory" for 2; the sticky exception of 3 starts at the folder holding
 * it (the directory itself is where the manifest, the sources and the oracle
 * are read: no one else may add or rename files there). Then its
 * POLICY_FIXTURE_MANIFEST must be a regular file in it (not a symlink),
 * checked as a component by 3. The other files it names are read by the
 * worker and not checked here.
 *
 * Pure apart from realpath/lstat/stat: no global state, so that it can be
 * unit-tested with temporary folders. */
#ifndef QUAL_POLICY_H
#define QUAL_POLICY_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "common/err.h"

/* Roots used when none is given with --allow-root: the system library
 * folders and the usual places for vendor toolkits (CUDA's /usr/local/cuda,
 * ROCm's /opt/rocm). main.c adds the tree quald runs from. */
#define POLICY_DEFAULT_ROOTS { "/usr/lib", "/usr/lib64", "/usr/local", "/opt" }

/* The longest real path accepted (PATH_MAX). */
#define POLICY_PATH_MAX 4096

/* Resolves a root folder (realpath) into out (cap >= POLICY_PATH_MAX).
 * QUAL_ENOENT when it does not exist, QUAL_EINVAL when it is not a folder. */
int policy_root_resolve(const char *dir, char *out, size_t cap,
			struct qual_msg *msg);

/* Checks path against the rules above. roots: nroots resolved roots (from
 * policy_root_resolve). self: the daemon's user (geteuid()). On success
 * writes the real path into real (cap >= POLICY_PATH_MAX) and the file's
 * stat there into *st (may be NULL: quald's submit checks that the file its
 * identify child reads is this one, by device and inode), and returns 0; else
 * a negative QUAL_E* code (QUAL_ENOENT: missing; QUAL_EINVAL: refused by a
 * rule) and msg names the library and the reason, e.g.
 * "compiler '/x/lib.so' resolves to '/tmp/lib.so', outside the allowed roots"
 * or "compiler '/srv/libs/lib.so' refused: '/srv/libs' is world-writable". */
int policy_check_library(const char *const *roots, int nroots, uid_t self,
			 const char *path, char *real, size_t cap, struct stat *st,
			 struct qual_msg *msg);

/* The manifest a fixture directory holds. */
#define POLICY_FIXTURE_MANIFEST "fixture.json"

/* Checks the fixture directory at path against the rules above (roots,
 * nroots, self as for policy_check_library; roots NULL: no policy, only
 * the real path, that it is a directory and its manifest a regular file).
 * On success writes its real path into real (cap >= POLICY_PATH_MAX) and
 * returns 0; else a negative QUAL_E* code (QUAL_ENOENT: it or its manifest
 * is missing; QUAL_EINVAL: refused by a rule) and msg names the directory
 * as given and the reason, e.g. "fixture directory '/srv/fx' refused:
 * '/srv/fx' is world-writable" or "cannot use fixture directory '/srv/fx':
 * it holds no fixture.json". */
int policy_check_fixture_dir(const char *const *roots, int nroots, uid_t self,
			     const char *path, char *real, size_t cap, struct qual_msg *msg);

/* True when path (a real path) is root itself or inside it, by whole
 * components. Both absolute, without trailing slash (except "/"). */
int policy_path_under(const char *path, const char *root);

/* quald's --allow-root DIR (repeatable; also --allow-root=DIR): takes
 * those arguments out of argv (so that the daemon's own option parser never
 * sees them; *argc shrinks) and builds the root list: the defaults
 * (POLICY_DEFAULT_ROOTS), the tree quald runs from (the folder above the one
 * holding its executable: /usr/local for /usr/local/bin/quald, the build
 * folder for build/bin/quald), then each DIR given. *roots is a new
 * NULL-terminated array of *nroots new strings (policy_roots_free). Returns
 * 0, or QUAL_EINVAL for --allow-root without a value (msg says so). */
int policy_args_take(int *argc, char **argv, char ***roots, int *nroots,
		     struct qual_msg *msg);
void policy_roots_free(char **roots);

#endif
