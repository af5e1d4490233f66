/* shim_forge: forwards every call, and when loaded by a compile child of
 * qual-run tries, as a hostile candidate would, to reach its worker's stdout
 * (the job's verdict) and write a forged verdict line there:
 *
 *   ptrace_parent       ptrace(PTRACE_ATTACH) on qual-run (then detaches)
 *   ptrace_grandparent  the same on qual-run's parent (quald)
 *   pidfd_getfd         pidfd_open(qual-run) and pidfd_getfd(its stdout)
 *   proc_fd             open("/proc/<qual-run>/fd/1")
 *
 * writing the forged line into every descriptor it gets. Each attempt is
 * recorded as one JSON line, {"attempt":..., "target":PID, "ok":BOOL,
 * "errno":N}, appended to the file $SHIM_FORGE_RECORD, or beside the library
 * (<path>.record) when that is unset. A child of anything but qual-run (a
 * submit check in quald) attempts nothing. tests/tools/forge_test.py reads
 * the records: with quald, qual-run and qual-compile non-dumpable and the
 * compile child in a user namespace of its own, every attempt fails (EPERM
 * or EACCES) and the job's verdict is the engine's. */
#include "shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

const struct shim_ops shim_ops = { 0 };

static const char forged[] =
	"{\"type\":\"verdict\",\"verdict\":\"improvement\",\"timed\":true,"
	"\"message\":\"forged by shim_forge\"}\n";

/* The command name of pid into out ("" when unreadable). */
static void comm_of(pid_t pid, char *out, size_t cap)
{
	char path[64];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof path, "/proc/%ld/comm", (long)pid);
	if (!(f = fopen(path, "r")))
		return;
	if (fgets(out, (int)cap, f))
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

/* The parent of pid, from /proc/PID/stat (its fourth field); -1 if none. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	long ppid = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	if (fgets(buf, sizeof buf, f) && (p = strrchr(buf, ')')) &&
	    sscanf(p + 1, " %*c %ld", &ppid) != 1)
		ppid = -1;
	fclose(f);
	return (pid_t)ppid;
}

static void record(const char *attempt, pid_t target, bool ok, int err)
{
	const char *path = getenv("SHIM_FORGE_RECORD");
	char beside[4096];
	Dl_info info;
	FILE *f;

	if (!path || !*path) {
		if (!dladdr((void *)record, &info) || !info.dli_fname)
			return;
		snprintf(beside, sizeof beside, "%s.record", info.dli_fname);
		path = beside;
	}
	if (!(f = fopen(path, "a")))
		return;
	fprintf(f, "{\"attempt\":\"%s\",\"target\":%ld,\"ok\":%s,\"errno\":%d}\n", attempt,
		(long)target, ok ? "true" : "false", ok ? 0 : err);
	fclose(f);
}

/* Writes the forged line into fd, and says whether it all went. */
static bool forge_into(int fd)
{
	return write(fd, forged, sizeof forged - 1) == (ssize_t)(sizeof forged - 1);
}

static void try_ptrace(const char *attempt, pid_t target)
{
	int st;

	if (ptrace(PTRACE_ATTACH, target, NULL, NULL) != 0) {
		record(attempt, target, false, errno);
		return;
	}
	/* Attached: it stops; let it go again at once. */
	waitpid(target, &st, __WALL);
	ptrace(PTRACE_DETACH, target, NULL, NULL);
	record(attempt, target, true, 0);
}

static void try_pidfd(pid_t target)
{
	int pidfd = (int)syscall(SYS_pidfd_open, target, 0), fd;

	if (pidfd < 0) {
		record("pidfd_getfd", target, false, errno);
		return;
	}
	fd = (int)syscall(SYS_pidfd_getfd, pidfd, 1, 0);
	if (fd < 0) {
		record("pidfd_getfd", target, false, errno);
	} else {
		record("pidfd_getfd", target, forge_into(fd), errno);
		close(fd);
	}
	close(pidfd);
}

static void try_proc_fd(pid_t target)
{
	char path[64];
	int fd;

	snprintf(path, sizeof path, "/proc/%ld/fd/1", (long)target);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		record("proc_fd", target, false, errno);
		return;
	}
	record("proc_fd", target, forge_into(fd), errno);
	close(fd);
}

__attribute__((constructor)) static void forge(void)
{
	pid_t parent = getppid();
	char comm[32];

	comm_of(parent, comm, sizeof comm);
	if (strcmp(comm, "qual-run"))
		return;
	try_ptrace("ptrace_parent", parent);
	try_ptrace("ptrace_grandparent", parent_of(parent));
	try_pidfd(parent);
	try_proc_fd(parent);
}
