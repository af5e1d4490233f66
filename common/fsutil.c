/* Files (fsutil.h). */
#include "common/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/xalloc.h"

int fs_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t put = write(fd, p, len);
		if (put < 0 && errno == EINTR)
			continue;
		if (put < 0)
			return -1;
		p += put;
		len -= (size_t)put;
	}
	return 0;
}

ssize_t fs_read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static int step_fail(enum fs_step *failed, enum fs_step step, struct qual_msg *msg,
		     const char *what, const char *path, int e)
{
	if (failed)
		*failed = step;
	return qual_fail(msg, QUAL_EIO, "cannot %s '%s': %s", what, path, strerror(e));
}

int fs_write_synced(const char *path, const void *data, size_t len, mode_t mode,
		    enum fs_step *failed, struct qual_msg *msg)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	int e;

	if (failed)
		*failed = FS_STEP_NONE;
	if (fd < 0)
		return step_fail(failed, FS_STEP_OPEN, msg, "create", path, errno);
	if (fs_write_all(fd, data, len) < 0) {
		e = errno;
		close(fd);
		return step_fail(failed, FS_STEP_WRITE, msg, "write", path, e);
	}
	if (fsync(fd) < 0) {
		e = errno;
		close(fd);
		return step_fail(failed, FS_STEP_SYNC, msg, "sync", path, e);
	}
	if (close(fd) < 0)
		return step_fail(failed, FS_STEP_WRITE, msg, "write", path, errno);
	return 0;
}

int fs_sync_dir(const char *path, struct qual_msg *msg)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return qual_fail(msg, QUAL_EIO, "cannot open '%s' to sync it: %s", path,
				 strerror(errno));
	if (fsync(fd) < 0)
		rc = qual_fail(msg, QUAL_EIO, "cannot sync '%s': %s", path, strerror(errno));
	close(fd);
	return rc;
}

int fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
		    enum fs_step *failed, struct qual_msg *msg)
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	char *slash;
	int rc;

	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
		return qual_fail(msg, QUAL_EINVAL, "path '%s' is too long", path);
	if ((rc = fs_write_synced(tmp, data, len, mode, failed, msg)) < 0) {
		unlink(tmp);
		return rc;
	}
	if (rename(tmp, path) < 0) {
		rc = step_fail(failed, FS_STEP_RENAME, msg, "rename to", path, errno);
		unlink(tmp);
		return rc;
	}
	snprintf(dir, sizeof dir, "%s", path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		dir[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof dir, ".");
	if ((rc = fs_sync_dir(dir, msg)) < 0 && failed)
		*failed = FS_STEP_SYNC;
	return rc;
}

/* The first room for a read of a file of st_size bytes, up to cap: its size
 * and one byte more (so that the end of file is seen without growing), or a
 * page where the size is unknown (procfs and sysfs say 0 for files that have
 * content). The size is a hint only: a file may grow or shrink meanwhile. */
static size_t first_room(off_t st_size, size_t cap)
{
	size_t want = st_size > 0 ? (size_t)st_size + 1 : 4096;

	return want < cap ? want : cap;
}

/* What read_capped() refuses besides a file it cannot read. */
enum read_kind {
	READ_ANY,     /* fs_read_capped(): any file, through links */
	READ_REGULAR, /* fs_read_capped_regular(): a link as the last
		       * component, anything but a regular file */
	READ_PLACED,  /* fs_read_capped_placed(): as READ_REGULAR, and another
		       * owner than owner, a file of more than one name */
};

static int read_capped(const char *path, enum read_kind kind, uid_t owner, size_t cap,
		       char **out, size_t *size, struct qual_msg *msg)
{
	struct stat st;
	size_t room, got = 0;
	char *buf;
	int fd;

	*out = NULL;
	*size = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | (kind != READ_ANY ? O_NOFOLLOW | O_NONBLOCK : 0));
	if (fd < 0)
		return qual_fail(msg, errno == ENOENT ? QUAL_ENOENT : QUAL_EIO,
				 "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return qual_fail(msg, QUAL_EIO, "cannot stat '%s': %s", path, strerror(e));
	}
	if ((kind != READ_ANY && !S_ISREG(st.st_mode)) ||
	    (kind == READ_PLACED && (st.st_uid != owner || st.st_nlink != 1))) {
		close(fd);
		return qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", path,
				 !S_ISREG(st.st_mode) ? "not a regular file" :
				 st.st_uid != owner ? "not the owner's" :
				 "a file of more than one name");
	}
	room = first_room(st.st_size, cap);
	buf = xmalloc(room + 1);
	for (;;) {
		ssize_t n = fs_read_full(fd, buf + got, room - got);

		if (n < 0) {
			int e = errno;
			free(buf);
			close(fd);
			return qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", path, strerror(e));
		}
		got += (size_t)n;
		if (got < room || room == cap) /* the end of the file, or the cap */
			break;
		room = room > cap / 2 ? cap : room * 2;
		buf = xrealloc(buf, room + 1);
	}
	close(fd);
	buf[got] = '\0';
	*out = buf;
	*size = got;
	return 0;
}

int fs_read_capped(const char *path, size_t cap, char **out, size_t *size,
		   struct qual_msg *msg)
{
	return read_capped(path, READ_ANY, 0, cap, out, size, msg);
}

int fs_read_capped_regular(const char *path, size_t cap, char **out, size_t *size,
			   struct qual_msg *msg)
{
	return read_capped(path, READ_REGULAR, 0, cap, out, size, msg);
}

int fs_read_capped_placed(const char *path, uid_t owner, size_t cap, char **out,
			  size_t *size, struct qual_msg *msg)
{
	return read_capped(path, READ_PLACED, owner, cap, out, size, msg);
}

int fs_path_join(char *out, size_t cap, const char *dir, const char *name,
		 struct qual_msg *msg)
{
	if ((size_t)snprintf(out, cap, "%s/%s", dir, name) >= cap)
		return qual_fail(msg, QUAL_EINVAL, "path '%s/%s' is too long", dir, name);
	return 0;
}

/* The deepest folder fs_rm_tree() descends to: each level holds one
 * descriptor, and a worker may hold QUAL_CONFINE_NOFILE (1024). */
#define FS_RM_DEPTH 256

/* Removes everything in the open folder fd (which it closes), depth levels
 * deep at most. Each name is unlinked as what it is now: a name that is no
 * folder (a link, a file, a FIFO) is unlinked at once, never followed; a
 * folder is opened by name relative to fd with O_NOFOLLOW, so a folder
 * swapped for a link meanwhile fails to open as one (ELOOP, ENOTDIR) and is
 * unlinked in turn. */
static void remove_in(int fd, int depth)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;

	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d))) {
		const char *name = e->d_name;
		int sub;

		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (unlinkat(fd, name, 0) == 0 || (errno != EISDIR && errno != EPERM))
			continue;
		if (depth <= 0)
			continue;
		sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			if (errno == ELOOP || errno == ENOTDIR)
				unlinkat(fd, name, 0);
			continue;
		}
		remove_in(sub, depth - 1);
		unlinkat(fd, name, AT_REMOVEDIR);
	}
	closedir(d);
}

void fs_rm_tree(const char *path)
{
	int fd;

	if (!path || !path[0])
		return;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		/* A link or a file: the name goes, what it names stays. */
		if (errno == ELOOP || errno == ENOTDIR)
			unlink(path);
		return;
	}
	remove_in(fd, FS_RM_DEPTH);
	rmdir(path);
}

static bool runnable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

char *fs_find_on_path(const char *name)
{
	const char *path = getenv("PATH");
	char *dirs, *dir, *save = NULL, *found = NULL;

	if (strchr(name, '/'))
		return runnable(name) ? xstrdup(name) : NULL;
	dirs = xstrdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (dir = strtok_r(dirs, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
		char *p;

		if (asprintf(&p, "%s/%s", *dir ? dir : ".", name) < 0)
			continue;
		if (runnable(p))
			found = p;
		else
			free(p);
	}
	free(dirs);
	return found;
}

char *fs_beside_self(const char *name)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	char *slash, *out;

	if (n < 0)
		return NULL;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	if (asprintf(&out, "%s/%s", slash ? self : ".", name) < 0)
		abort();
	return out;
}

int fs_mkdir_p(const char *path, mode_t mode, struct qual_msg *msg)
{
	char buf[PATH_MAX];
	char *p;

	if (strlen(path) >= sizeof buf)
		return qual_fail(msg, QUAL_EINVAL, "path '%s' is too long", path);
	strcpy(buf, path);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return qual_fail(msg, QUAL_EIO, "cannot create '%s': %s", buf,
					 strerror(errno));
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return qual_fail(msg, QUAL_EIO, "cannot create '%s': %s", buf,
				 strerror(errno));
	return 0;
}
