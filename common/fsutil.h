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

/* fs_read_capped() for a file that a process of another uid may have put
 * there (a compile child run as --compile-user, in the compile folder it
 * owns): a symbolic link as its last component, or anything but a regular
 * file (a FIFO), is refused (QUAL_EIO) without being followed or blocking,
 * so that such a child cannot have us read a file only we may read. */
int fs_read_capped_placed(const char *path, size_t cap, char **out, size_t *size,
			  struct qual_msg *msg);

/* "dir/name" into out (cap bytes). Returns 0 or QUAL_EINVAL when it does
 * not fit. */
int fs_path_join(char *out, size_t cap, const char *dir, const char *name,
		 struct qual_msg *msg);

/* Removes path and everything under it, not following links; "" or a path
 * that does not exist is nothing to remove. */
void fs_rm_tree(const char *path);

/* The path of name in the folder of our own executable (a new string), or
 * NULL when /proc/self/exe cannot be read. Our programs are installed side
 * by side, and built side by side into bin/ of the build folder. */
char *fs_beside_self(const char *name);

#endif
