/* qual-slurm: a job's spool folder filled before sbatch (slurm_internal.h).
 * Pinned libraries go to SPOOL/blobs/<sha256> by content, shared by jobs,
 * hashed while they are copied so that the blob holds exactly the bytes
 * checked; fixture folders are copied into the job's folder; every file the
 * node will read gets a pins line, which the node checks before qual-run
 * starts (slurm_node.c). */
#include "daemon/slurm_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/sha256.h"
#include "common/text.h"

/* The deepest fixture folder copied (a fixture is a few folders deep). */
#define STAGE_DEPTH_MAX 32

/* "PATH=VALUE" split at its last '=' into path (cap bytes) and *value
 * (borrowed from spec). */
static int split_spec(const char *opt, const char *spec, char *path, size_t cap,
		      const char **value, struct qual_msg *msg)
{
	const char *eq = strrchr(spec, '=');

	if (!eq || eq == spec || !eq[1])
		return qual_fail(msg, QUAL_EINVAL, "--%s '%s' is not PATH=VALUE", opt, spec);
	if ((size_t)(eq - spec) >= cap)
		return qual_fail(msg, QUAL_EINVAL, "--%s '%s': the path is too long", opt, spec);
	memcpy(path, spec, (size_t)(eq - spec));
	path[eq - spec] = '\0';
	*value = eq + 1;
	return 0;
}

/* Copies what src holds to a new file dst (mode 0644), hashing it; the
 * hash in hex. what names the source in messages. The copy is synced. */
static int copy_hashed(int src, const char *dst, const char *what, char hex[SHA256_HEX_SIZE],
		       struct qual_msg *msg)
{
	int out, rc, e;

	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0) {
		e = errno;
		return qual_fail(msg, QUAL_EIO, "cannot create '%s': %s", dst, strerror(e));
	}
	rc = sha256_hash_fd(src, out, what, hex, NULL, msg);
	if (rc == 0 && (fchmod(out, 0644) < 0 || fsync(out) < 0)) {
		e = errno;
		rc = qual_fail(msg, QUAL_EIO, "cannot write '%s': %s", dst, strerror(e));
	}
	close(out);
	if (rc < 0)
		unlink(dst);
	return rc;
}

static int pin(struct strv *pins, const char *hex, const char *path, struct qual_msg *msg)
{
	if (strchr(path, '\n'))
		return qual_fail(msg, QUAL_EINVAL, "'%s' has a newline in its name", path);
	strv_pushf(pins, "%s %s\n", hex, path);
	return 0;
}

/* --stage PATH=SHA256: the library's bytes as SPOOL/blobs/SHA256 (written
 * tmp+rename, so that a blob there is whole), unless it is there already. */
static int stage_blob(const char *spool, const char *spec, struct strv *pins,
		      struct qual_msg *msg)
{
	char path[PATH_MAX], dst[PATH_MAX], tmp[PATH_MAX + 32], hex[SHA256_HEX_SIZE];
	const char *sha;
	int src, rc, e;

	if ((rc = split_spec("stage", spec, path, sizeof path, &sha, msg)) ||
	    (rc = remote_blob_path(dst, sizeof dst, spool, sha, msg)))
		return rc;
	if (access(dst, F_OK) == 0)
		return pin(pins, sha, dst, msg);
	if ((src = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		e = errno;
		return qual_fail(msg, QUAL_EIO, "cannot open '%s': %s", path, strerror(e));
	}
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", dst, (long)getpid());
	unlink(tmp);
	rc = copy_hashed(src, tmp, path, hex, msg);
	close(src);
	if (rc < 0)
		return rc;
	if (strcmp(hex, sha)) {
		unlink(tmp);
		return qual_fail(msg, QUAL_EINVAL, "'%s' has SHA-256 %s, not the pinned %s", path,
				 hex, sha);
	}
	if (rename(tmp, dst) < 0) {
		e = errno;
		unlink(tmp);
		return qual_fail(msg, QUAL_EIO, "cannot rename '%s' to '%s': %s", tmp, dst,
				 strerror(e));
	}
	return pin(pins, sha, dst, msg);
}

static int copy_tree(int srcdir, const char *src, const char *dst, int depth,
		     struct strv *pins, struct qual_msg *msg);

/* One entry of a fixture folder: a folder (copied in turn) or a regular
 * file (copied, hashed, pinned); anything else is refused. */
static int copy_entry(int srcdir, const char *src, const char *dst, const char *name,
		      int depth, struct strv *pins, struct qual_msg *msg)
{
	char from[PATH_MAX], to[PATH_MAX], hex[SHA256_HEX_SIZE];
	struct stat st;
	int fd, rc, e;

	if ((rc = fs_path_join(from, sizeof from, src, name, msg)) ||
	    (rc = fs_path_join(to, sizeof to, dst, name, msg)))
		return rc;
	if (fstatat(srcdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		e = errno;
		return qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", from, strerror(e));
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return qual_fail(msg, QUAL_EINVAL, "fixture folder entry '%s' is neither a "
				 "regular file nor a folder (links are refused)", from);
	fd = openat(srcdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
		    (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
	if (fd < 0) {
		e = errno;
		return qual_fail(msg, QUAL_EIO, "cannot open '%s': %s", from, strerror(e));
	}
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(to, 0755) < 0) {
			e = errno;
			rc = qual_fail(msg, QUAL_EIO, "cannot make '%s': %s", to, strerror(e));
		} else {
			rc = copy_tree(fd, from, to, depth + 1, pins, msg);
		}
	} else if ((rc = copy_hashed(fd, to, from, hex, msg)) == 0) {
		rc = pin(pins, hex, to, msg);
	}
	close(fd);
	return rc;
}

/* Copies the folder open at srcdir (src names it) into the existing folder
 * dst. Takes nothing: srcdir stays the caller's. */
static int copy_tree(int srcdir, const char *src, const char *dst, int depth,
		     struct strv *pins, struct qual_msg *msg)
{
	struct dirent *ent;
	DIR *d;
	int fd, rc = 0;

	if (depth > STAGE_DEPTH_MAX)
		return qual_fail(msg, QUAL_ELIMIT, "fixture folder '%s' is more than %d folders "
				 "deep", src, STAGE_DEPTH_MAX);
	if ((fd = dup(srcdir)) < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return qual_fail(msg, QUAL_EIO, "cannot list '%s'", src);
	}
	while (rc == 0 && (ent = readdir(d))) {
		if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, ".."))
			continue;
		rc = copy_entry(srcdir, src, dst, ent->d_name, depth, pins, msg);
	}
	closedir(d);
	return rc;
}

/* --stage-dir PATH=N: the folder copied to JOBDIR/fixtures/N. */
static int stage_dir(const char *job_dir, const char *spec, struct strv *pins,
		     struct qual_msg *msg)
{
	char path[PATH_MAX], fixtures[PATH_MAX], dst[PATH_MAX];
	const char *num;
	long n;
	int fd, rc, e;

	if ((rc = split_spec("stage-dir", spec, path, sizeof path, &num, msg)))
		return rc;
	if (text_parse_long("--stage-dir's N", num, 0, 999, &n, msg) < 0)
		return QUAL_EINVAL;
	if ((rc = fs_path_join(fixtures, sizeof fixtures, job_dir, REMOTE_DIR_FIXTURES, msg)) ||
	    (rc = fs_path_join(dst, sizeof dst, fixtures, num, msg)))
		return rc;
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		e = errno;
		return qual_fail(msg, QUAL_EIO, "cannot open fixture folder '%s': %s", path,
				 strerror(e));
	}
	if ((rc = fs_mkdir_p(fixtures, 0755, msg)) == 0) {
		if (mkdir(dst, 0755) < 0) {
			e = errno;
			rc = qual_fail(msg, QUAL_EIO, "cannot make '%s': %s", dst, strerror(e));
		} else {
			rc = copy_tree(fd, path, dst, 0, pins, msg);
		}
	}
	close(fd);
	return rc;
}

/* s quoted for sh into buf: '...' with each ' as '\''. */
static int sh_quote(const char *s, char *buf, size_t cap)
{
	size_t n = 0;

	buf[n++] = '\'';
	for (; *s; s++) {
		if (n + 6 >= cap)
			return QUAL_EINVAL;
		if (*s == '\'') {
			memcpy(buf + n, "'\\''", 4);
			n += 4;
		} else {
			buf[n++] = *s;
		}
	}
	buf[n++] = '\'';
	buf[n] = '\0';
	return 0;
}

/* job.sh: the node's side of this same program on this job's folder. The
 * program's path must be the same on the nodes (shared storage, or the
 * same package installed everywhere). */
static int write_script(const char *job_dir, struct qual_msg *msg)
{
	char self[PATH_MAX], qself[PATH_MAX * 4 + 3], qdir[PATH_MAX * 4 + 3], path[PATH_MAX];
	char text[sizeof qself + sizeof qdir + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	int len, rc;

	if (n <= 0)
		return qual_fail(msg, QUAL_EIO, "cannot read /proc/self/exe");
	self[n] = '\0';
	if (sh_quote(self, qself, sizeof qself) || sh_quote(job_dir, qdir, sizeof qdir))
		return qual_fail(msg, QUAL_EINVAL, "path too long for the batch script");
	len = snprintf(text, sizeof text, "#!/bin/sh\nexec %s --node %s\n", qself, qdir);
	if ((rc = fs_path_join(path, sizeof path, job_dir, REMOTE_FILE_SCRIPT, msg)))
		return rc;
	return fs_write_atomic(path, text, (size_t)len, 0755, NULL, msg);
}

/* The argv and pins files, then the script. */
static int write_files(const struct slurm_args *a, const char *job_dir, struct strv *pins,
		       struct qual_msg *msg)
{
	char path[PATH_MAX], *data;
	size_t len = 0, i;
	int rc;

	data = strv_join_nul((const char *const *)a->worker, &len);
	if ((rc = fs_path_join(path, sizeof path, job_dir, REMOTE_FILE_ARGV, msg)) == 0)
		rc = fs_write_atomic(path, data, len, 0644, NULL, msg);
	free(data);
	if (rc)
		return rc;
	len = 0;
	for (i = 0; i < pins->n; i++)
		len += strlen(pins->v[i]);
	data = calloc(1, len + 1);
	if (!data)
		return qual_fail(msg, QUAL_ENOMEM, "no memory for the pins");
	for (i = 0; i < pins->n; i++)
		strcat(data, pins->v[i]);
	if ((rc = fs_path_join(path, sizeof path, job_dir, REMOTE_FILE_PINS, msg)) == 0)
		rc = fs_write_atomic(path, data, len, 0644, NULL, msg);
	free(data);
	return rc ? rc : write_script(job_dir, msg);
}

int slurm_stage_job(const struct slurm_args *a, const char *job_dir, struct qual_msg *msg)
{
	char path[PATH_MAX], blobs[PATH_MAX];
	struct strv pins;
	size_t i;
	int rc;

	if ((rc = fs_path_join(path, sizeof path, job_dir, REMOTE_FILE_SLURM_ID, msg)))
		return rc;
	/* A folder with a Slurm id is a job submitted already: it is attached
	 * to (--attach), never submitted twice. Any other is a staging that
	 * did not finish: made anew. */
	if (access(path, F_OK) == 0)
		return qual_fail(msg, QUAL_EINVAL, "job '%s' was submitted already ('%s' exists)",
				 a->job, path);
	fs_rm_tree(job_dir);
	if ((rc = fs_mkdir_p(job_dir, 0755, msg)))
		return rc;
	if ((rc = fs_path_join(blobs, sizeof blobs, a->spool, REMOTE_SPOOL_BLOBS, msg)) ||
	    (rc = fs_mkdir_p(blobs, 0755, msg)))
		return rc;
	strv_init(&pins);
	for (i = 0; rc == 0 && i < a->stage.n; i++)
		rc = stage_blob(a->spool, a->stage.v[i], &pins, msg);
	for (i = 0; rc == 0 && i < a->stage_dir.n; i++)
		rc = stage_dir(job_dir, a->stage_dir.v[i], &pins, msg);
	if (rc == 0)
		rc = write_files(a, job_dir, &pins, msg);
	strv_release(&pins);
	return rc;
}
