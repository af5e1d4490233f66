/* Files: durable writes (the data, then the folder entry, on disk before a
 * write is called done), reads with a cap, folder trees, and where our own
 * programs are. store.h's durability rules rest on these. */
#ifndef QUAL_FSUTIL_H
#define QUAL_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

#include "common/err.h"

/* Which step of a write failed, for callers whose policy depends on it
 * (store.c: a failed sync is fatal, a failed create is not always). */
enum fs_step {
	FS_STEP_NONE = 0,
	FS_STEP_OPEN,
	FS_STEP_WRITE,
	FS_STEP_SYNC,
	FS_STEP_RENAME,
};

/* Writes all of len bytes to fd, through short writes and EINTR. Returns 0
 * or -1 with errno set. */
int fs_write_all(int fd, const void *data, size_t len);

/* Reads up to len bytes from fd, through short reads and EINTR; returns the
 * bytes read (less than len only at end of file) or -1 with errno set. */
ssize_t fs_read_full(int fd, void *buf, size_t len);

/* Creates (or truncates) path with mode, writes data and fsyncs it. Returns 0
 * or QUAL_EIO with msg naming the file; *failed (may be NULL) says which
 * step failed. */
int fs_write_synced(const char *path, const void *data, size_t len, mode_t mode,
		    enum fs_step *failed, struct qual_msg *msg);

/* fsyncs the folder path, so that the entries made in it are on disk. */
int fs_sync_dir(const char *path, struct qual_msg *msg);

/* Replaces path atomically and durably: writes "path.tmp" synced, renames it
 * over path, then syncs the folder holding path. A reader sees the old file
 * or the new one, never a part. On failure the temporary file is removed. */
int fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
		    enum fs_step *failed, struct qual_msg *msg);

/* Reads at most cap bytes of the file (all of it when smaller) into a new
 * NUL-terminated buffer; *size gets the bytes read. Returns 0, QUAL_ENOENT
 * or QUAL_EIO with msg naming the file. */
int fs_read_capped(const char *path, size_t cap, char **out, size_t *size,
		   struct qual_msg *msg);

/* fs_read_capped() for a file that must be a regular file of its own name
 * (a user fixture's manifest): a symbolic link as its last component and
 * anything but a regular file (a FIFO, a device) are refused (QUAL_EIO)
 * without being followed or blocking. */
int fs_read_capped_regular(const char *path, size_t cap, char **out, size_t *size,
			   struct qual_msg *msg);

/* fs_read_capped() for a file that a process of another uid may have put
 * there (a compile child, in the folder of its own that it writes): a
 * symbolic link as its last component, anything but a regular file (a
 * FIFO), a file whose owner is not owner (one only we may read, linked in
 * by a hole elsewhere) and a file with more than one name (st_nlink > 1: a
 * hard link to a file of its that it may rewrite through the other name, or
 * to one of ours) are refused (QUAL_EIO) without being followed or blocking,
 * so that such a child cannot have us read a file only we may read. The
 * folders above the last component must be ones that child cannot change
 * (rtc.c: the compile folder is ours, not writable by it). */
int fs_read_capped_placed(const char *path, uid_t owner, size_t cap, char **out,
			  size_t *size, struct qual_msg *msg);

/* Creates path and every missing folder above it with mode (an existing
 * one is fine). Returns 0, QUAL_EINVAL (too long) or QUAL_EIO with msg
 * naming the folder that cannot be made. */
int fs_mkdir_p(const char *path, mode_t mode, struct qual_msg *msg);

/* "dir/name" into out (cap bytes). Returns 0 or QUAL_EINVAL when it does
 * not fit. */
int fs_path_join(char *out, size_t cap, const char *dir, const char *name,
		 struct qual_msg *msg);

/* Removes path and everything under it, never following a link: safe in a
 * tree that a process of another uid can change while we remove it (a
 * compile child's own folders). It works through folder descriptors
 * (openat(O_NOFOLLOW | O_DIRECTORY), unlinkat()), so a folder swapped for a
 * link between the listing and the descent is unlinked, not entered, and
 * nothing outside the tree is ever removed. Only path's own last component
 * is looked up by name, so the folders above it must be ones that no such
 * process can change. "" or a path that does not exist is nothing to
 * remove; what cannot be removed (a tree deeper than 256 folders) stays. */
void fs_rm_tree(const char *path);

/* The path of name in the folder of our own executable (a new string), or
 * NULL when /proc/self/exe cannot be read. Our programs are installed side
 * by side, and built side by side into bin/ of the build folder. */
char *fs_beside_self(const char *name);

/* name's path on $PATH (a new string): the first executable regular file of
 * that name in its folders (an empty folder is "."; no PATH:
 * /usr/local/bin:/usr/bin:/bin); a name with a '/' is taken as it is when
 * it is one. NULL when there is none. */
char *fs_find_on_path(const char *name);

#endif
