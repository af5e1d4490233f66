/* shim_hunter: a candidate that goes after other jobs (issue 28's hostile
 * candidate; docs/service.md, "Trust model"). In nvrtcCompileProgram it
 * scans /proc, for $QUAL_SHIM_HUNT_S seconds (default 10), for every
 * qual-compile and qual-run process but its own and every fixture oracle (a
 * command line with an argument ending in case.json), and for each new one:
 *   - reads its command line (what any process may read), and tries to
 *     create a file "planted-by-shim_hunter" in every folder named there (a
 *     path argument, or the folder of one);
 *   - kill()s it with SIGSEGV, which, were it taken for a crash, would be a
 *     quarantine strike against that job's library.
 * Each attempt is a JSON line in $SHIM_HUNTER_RECORD (appended):
 *   {"pid":P,"comm":"qual-compile","uid":U,"cmdline":[...],
 *    "kill":{"ok":B,"errno":E},"planted":["/dir",...]}
 * Then the compile fails (a compile error: no crash of its own). */
#include "shim.h"

#include <ctype.h>
#include <stdbool.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HUNT_MAX 4096

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The whole of /proc/PID/NAME into buf (NUL-terminated); its length, or -1. */
static ssize_t proc_read(int pid, const char *name, char *buf, size_t cap)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/%s", pid, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

static int proc_uid(int pid)
{
	char buf[4096], *p;

	if (proc_read(pid, "status", buf, sizeof buf) < 0 || !(p = strstr(buf, "\nUid:")))
		return -1;
	return atoi(p + 5);
}

/* s as a JSON string into f. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* Tries to plant a file in dir; true when it could. */
static bool plant(const char *dir)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof path, "%s/planted-by-shim_hunter", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* The folder an argument names, into dir: itself, or the folder of a path
 * in it (after an '=' of --opt=PATH too); false when it names none. */
static bool arg_folder(const char *arg, char *dir, size_t cap)
{
	const char *p = strchr(arg, '=') ? strchr(arg, '=') + 1 : arg;
	struct stat st;
	char *slash;

	/* Not through our own /proc/self: that would be our folder. */
	if (p[0] != '/' || !strncmp(p, "/proc/self/", 11))
		return false;
	snprintf(dir, cap, "%s", p);
	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return true;
	if (!(slash = strrchr(dir, '/')) || slash == dir)
		return false;
	*slash = '\0';
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether pid's command line has an argument ending in case.json: a
 * fixture's oracle program (docs/fixtures.md). */
static bool is_oracle(int pid)
{
	char cmd[8192];
	ssize_t n = proc_read(pid, "cmdline", cmd, sizeof cmd);

	for (ssize_t at = 0; n > 0 && at < n; at += (ssize_t)strlen(cmd + at) + 1) {
		size_t k = strlen(cmd + at);

		if (k >= 9 && !strcmp(cmd + at + k - 9, "case.json"))
			return true;
	}
	return false;
}

static void hunt_one(FILE *rec, int pid, const char *comm)
{
	char cmd[8192], dir[4096];
	ssize_t n = proc_read(pid, "cmdline", cmd, sizeof cmd);
	bool first = true;
	int ok, e;

	fprintf(rec, "{\"pid\":%d,\"comm\":", pid);
	json_str(rec, comm);
	fprintf(rec, ",\"uid\":%d,\"cmdline\":[", proc_uid(pid));
	for (ssize_t at = 0; n > 0 && at < n; at += (ssize_t)strlen(cmd + at) + 1) {
		fputs(first ? "" : ",", rec);
		json_str(rec, cmd + at);
		first = false;
	}
	fputs("],\"planted\":[", rec);
	first = true;
	for (ssize_t at = 0; n > 0 && at < n; at += (ssize_t)strlen(cmd + at) + 1)
		if (arg_folder(cmd + at, dir, sizeof dir) && plant(dir)) {
			fputs(first ? "" : ",", rec);
			json_str(rec, dir);
			first = false;
		}
	ok = kill(pid, SIGSEGV) == 0;
	e = ok ? 0 : errno;
	fprintf(rec, "],\"kill\":{\"ok\":%s,\"errno\":%d}}\n", ok ? "true" : "false", e);
	fflush(rec);
}

static int hunt_compile(shim_program prog, int nopts, const char *const *opts)
{
	const char *record = getenv("SHIM_HUNTER_RECORD"), *secs = getenv("QUAL_SHIM_HUNT_S");
	double until = now_s() + (secs && *secs ? atof(secs) : 10.0);
	/* A pid is hunted once per kind (0 qual-compile, 1 qual-run, 2 an
	 * oracle): an oracle is first a fork of its qual-run, and is met
	 * again once it has exec'd. */
	static int seen[HUNT_MAX], seen_kind[HUNT_MAX];
	int nseen = 0, self = (int)getpid();
	FILE *rec = record && *record ? fopen(record, "a") : NULL;

	(void)prog;
	(void)nopts;
	(void)opts;
	if (!rec)
		rec = stderr;
	while (now_s() < until) {
		DIR *d = opendir("/proc");
		struct dirent *e;

		while (d && (e = readdir(d))) {
			char comm[64];
			int pid = atoi(e->d_name), i, kind;

			if (!isdigit((unsigned char)e->d_name[0]) || pid == self ||
			    proc_read(pid, "comm", comm, sizeof comm) < 0)
				continue;
			comm[strcspn(comm, "\n")] = '\0';
			kind = !strcmp(comm, "qual-compile") ? 0 : !strcmp(comm, "qual-run") ? 1 :
			       is_oracle(pid) ? 2 : -1;
			if (kind < 0)
				continue;
			for (i = 0; i < nseen && (seen[i] != pid || seen_kind[i] != kind); i++)
				;
			if (i < nseen)
				continue;
			if (nseen < HUNT_MAX) {
				seen[nseen] = pid;
				seen_kind[nseen++] = kind;
			}
			hunt_one(rec, pid, comm);
		}
		if (d)
			closedir(d);
		usleep(2000);
	}
	if (rec != stderr)
		fclose(rec);
	return SHIM_NVRTC_ERROR_COMPILATION;
}

const struct shim_ops shim_ops = { .compile = hunt_compile };
