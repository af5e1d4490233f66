/* The workers' scratch (jobs_internal.h, worker.c "Scratch"): where each
 * worker's $TMPDIR folder is made, and what workers of an earlier daemon on
 * the same state directory left there, removed at start. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/sha256.h"
#include "common/xalloc.h"
#include "daemon/jobs_internal.h"
#include "daemon/oplog.h"

int worker__scratch_open(struct jobs *j, const char *state_dir, struct qual_msg *msg)
{
	const char *tmp = getenv("TMPDIR");
	char real[PATH_MAX], hex[SHA256_HEX_SIZE], path[PATH_MAX];
	struct dirent *e;
	int rc, removed = 0;
	DIR *d;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (!realpath(state_dir, real))
		return qual_fail(msg, QUAL_EIO, "cannot resolve '%s': %s", state_dir,
				 strerror(errno));
	if ((rc = sha256_hash_buffer(real, strlen(real), hex, msg)))
		return rc;
	j->scratch = xstrdup(tmp);
	if (asprintf(&j->scratch_prefix, "quald-%.16s-", hex) < 0)
		abort();
	d = opendir(tmp);
	if (!d) {
		oplog_warn("cannot read '%s' for what earlier workers left: %s", tmp,
			   strerror(errno));
		return 0;
	}
	while ((e = readdir(d))) {
		struct stat st;

		/* Only real folders of ours: never through a link, never what
		 * another user put there under our name. */
		if (strncmp(e->d_name, j->scratch_prefix, strlen(j->scratch_prefix)) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
		    fs_path_join(path, sizeof path, tmp, e->d_name, NULL))
			continue;
		fs_rm_tree(path);
		removed++;
	}
	closedir(d);
	if (removed)
		oplog_warn("removed %d temporary folder%s that workers of an earlier run left in "
			   "'%s'", removed, removed == 1 ? "" : "s", tmp);
	return 0;
}
