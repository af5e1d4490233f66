/* A stalled state disk, for quald alone (tests/tools/store_test.py, the
 * stall scenario): loaded with LD_PRELOAD, it makes fsync, fdatasync, and
 * write, writev and pwrite to regular files under $QUAL_STALL_DIR sleep for
 * as long as the file $QUAL_STALL_FLAG exists, as a frozen filesystem would
 * (fsfreeze blocks writers and syncs the same way). The first call it holds
 * creates $QUAL_STALL_FLAG.hit, so the test knows the stall was reached.
 * With $QUAL_STALL_EIO set, nothing is held: a sync of a file under
 * $QUAL_STALL_DIR fails with EIO instead (while the flag exists), as a
 * dying disk's would. With $QUAL_STALL_READ set, only reads of a job's log
 * (a regular file named log.jsonl under $QUAL_STALL_DIR) that begin a whole
 * read are held, as a slow disk holds a long read, and no write or sync: a
 * read(), and a pread() at offset 0 that asks for other than the file's
 * whole size (a log cursor's first buffer); start-up's look at a log's last
 * record (a pread of exactly the rest of the file from where that record
 * may begin, so of the whole file only when it is that small) is not held
 * (tests/tools/store_test.py, start_listens and history_rebuild).
 *
 * Only in a process named quald: the workers and compile children inherit
 * LD_PRELOAD and run unhindered. Sockets and pipes are never held (the
 * check is on the descriptor's file type and path, both cheap). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

extern char *program_invocation_short_name;

/* Prototypes for the interposed functions: they are the libc ones. */
int fsync(int fd);
int fdatasync(int fd);
ssize_t write(int fd, const void *buf, size_t n);
ssize_t writev(int fd, const struct iovec *iov, int n);
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off);
ssize_t read(int fd, void *buf, size_t n);
ssize_t pread(int fd, void *buf, size_t n, off_t off);

static bool enabled(void)
{
	static int on = -1;

	if (on < 0)
		on = getenv("QUAL_STALL_FLAG") && program_invocation_short_name &&
		     !strcmp(program_invocation_short_name, "quald");
	return on;
}

/* Whether fd is a regular file under $QUAL_STALL_DIR (no dir: any) whose
 * name ends with suffix (NULL: any). */
static bool under_dir(int fd, const char *suffix)
{
	const char *dir = getenv("QUAL_STALL_DIR");
	char link[64], path[4096];
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	if (!dir)
		return true;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof path - 1);
	if (n < 0)
		return false;
	path[n] = '\0';
	if (suffix && ((size_t)n < strlen(suffix) ||
		       strcmp(path + n - strlen(suffix), suffix)))
		return false;
	return !strncmp(path, dir, strlen(dir));
}

static void stall(void)
{
	const char *flag = getenv("QUAL_STALL_FLAG");
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	bool said = false;
	int saved = errno;

	while (access(flag, F_OK) == 0) {
		if (!said) {
			char hit[4096];
			int fd;

			snprintf(hit, sizeof hit, "%s.hit", flag);
			fd = open(hit, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
			if (fd >= 0)
				close(fd);
			said = true;
		}
		nanosleep(&ts, NULL);
	}
	errno = saved;
}

#define REAL(name) \
	static __typeof__(&name) real_; \
	if (!real_) \
		real_ = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

/* A sync: held while the flag exists, or in EIO mode failed for a file
 * under the folder. Returns -1 (errno EIO) to fail it, 0 to go on. */
static int sync_held(int fd)
{
	if (!enabled() || getenv("QUAL_STALL_READ"))
		return 0;
	if (!getenv("QUAL_STALL_EIO")) {
		stall();
		return 0;
	}
	if (under_dir(fd, NULL) && access(getenv("QUAL_STALL_FLAG"), F_OK) == 0) {
		errno = EIO;
		return -1;
	}
	return 0;
}

int fsync(int fd)
{
	REAL(fsync);
	return sync_held(fd) < 0 ? -1 : real_(fd);
}

int fdatasync(int fd)
{
	REAL(fdatasync);
	return sync_held(fd) < 0 ? -1 : real_(fd);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	REAL(write);
	if (enabled() && !getenv("QUAL_STALL_EIO") && !getenv("QUAL_STALL_READ") &&
	    under_dir(fd, NULL))
		stall();
	return real_(fd, buf, n);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	REAL(writev);
	if (enabled() && !getenv("QUAL_STALL_EIO") && !getenv("QUAL_STALL_READ") &&
	    under_dir(fd, NULL))
		stall();
	return real_(fd, iov, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	REAL(pwrite);
	if (enabled() && !getenv("QUAL_STALL_EIO") && !getenv("QUAL_STALL_READ") &&
	    under_dir(fd, NULL))
		stall();
	return real_(fd, buf, n, off);
}

ssize_t read(int fd, void *buf, size_t n)
{
	REAL(read);
	if (enabled() && getenv("QUAL_STALL_READ") && under_dir(fd, "/log.jsonl"))
		stall();
	return real_(fd, buf, n);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	struct stat st;

	REAL(pread);
	if (off == 0 && enabled() && getenv("QUAL_STALL_READ") &&
	    under_dir(fd, "/log.jsonl") && fstat(fd, &st) == 0 &&
	    (off_t)n != st.st_size)
		stall();
	return real_(fd, buf, n, off);
}
