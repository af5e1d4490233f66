/* A stand-in for qual-run in the load benchmark (bench/load/README.md).
 *
 * quald runs it with qual-run's command line, which it ignores. It replays
 * the lines of a real compile-only run (compile_only.jsonl: what qual-run
 * --compile-only printed for nvrtc 13 against itself, 20 lines, 12 KB), with
 * "t_emit_ns" spliced in as each line's first field: CLOCK_MONOTONIC in ns,
 * read just before the line is written, so that a watcher on the same host
 * can tell how long the line took to reach it through quald.
 *
 * Environment (quald passes its own environment on to workers):
 *   QUAL_LOAD_LINES   the lines to replay (required)
 *   QUAL_LOAD_GAP_US  microseconds between two lines (default 0); a real
 *                     compile-only job takes about 4 s for its 20 lines on
 *                     this 2-core machine, so the benchmark's gaps are
 *                     far shorter than the engine's: it loads quald harder
 *   QUAL_LOAD_GATE    when set, wait until this file exists before the
 *                     first line, so that every job can be queued before
 *                     any worker speaks (the "1,000 queued jobs")
 *   QUAL_LOAD_SKIP_LINE  when set to K, line K (from 0) is left out: a loss
 *                     the benchmark must report (a check of its checks)
 *   QUAL_LOAD_TRACE   when set, a file to which each worker appends one
 *                     line when it ends: its pid, what its stdout is (the
 *                     inode of the pipe or socket), bytes and lines written,
 *                     start and end (CLOCK_MONOTONIC, s); for tracing a
 *                     job whose lines quald did not relay
 *
 * Exit status 0 after the verdict line, 3 when it cannot run (with one line
 * on stderr, which quald quotes in the error verdict it then writes). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The gate is polled: 4 slots polling every 2 ms cost nothing measurable,
 * and the wait ends within 2 ms of the gate's creation. */
#define GATE_POLL_NS 2000000L

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	const char *path = getenv("QUAL_LOAD_LINES");
	const char *gap_text = getenv("QUAL_LOAD_GAP_US");
	const char *gate = getenv("QUAL_LOAD_GATE");
	const char *skip_text = getenv("QUAL_LOAD_SKIP_LINE");
	long gap_us = gap_text ? strtol(gap_text, NULL, 10) : 0;
	long skip = skip_text ? strtol(skip_text, NULL, 10) : -1, k = 0;
	char *line = NULL, *out = NULL;
	size_t cap = 0, out_cap = 0;
	ssize_t n;
	FILE *f;
	const char *trace = getenv("QUAL_LOAD_TRACE");
	long long t_start = now_ns(), bytes = 0, lines = 0;
	int first = 1, rc = 3;

	(void)argc;
	(void)argv;
	if (!path) {
		fprintf(stderr, "fake_worker: QUAL_LOAD_LINES is not set\n");
		return 3;
	}
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "fake_worker: cannot open '%s': %s\n", path, strerror(errno));
		return 3;
	}
	if (gate) {
		struct timespec poll = {0, GATE_POLL_NS};
		while (access(gate, F_OK) != 0)
			nanosleep(&poll, NULL);
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		int len;

		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (n < 2 || line[0] != '{' || k++ == skip)
			continue;
		if (!first && gap_us > 0) {
			struct timespec ts = {gap_us / 1000000, (gap_us % 1000000) * 1000};
			nanosleep(&ts, NULL);
		}
		first = 0;
		if (out_cap < (size_t)n + 64) {
			out_cap = (size_t)n + 64;
			out = realloc(out, out_cap);
			if (!out)
				goto cleanup;
		}
		/* {"t_emit_ns":N, then the line after its opening brace. */
		len = snprintf(out, out_cap, "{\"t_emit_ns\":%lld,%s\n", now_ns(), line + 1);
		if (len < 0 || (size_t)len >= out_cap || write_all(1, out, (size_t)len) < 0)
			goto cleanup;
		bytes += len;
		lines++;
	}
	rc = 0;
cleanup:
	if (rc)
		fprintf(stderr, "fake_worker: cannot write a line: %s\n", strerror(errno));
	if (trace) {
		struct stat st;
		FILE *t = fopen(trace, "a");
		if (fstat(1, &st) < 0)
			memset(&st, 0, sizeof st);
		if (t) {
			fprintf(t, "pid %d stdout mode %o ino %lu bytes %lld lines %lld start %.6f end %.6f rc %d\n",
				(int)getpid(), (unsigned)(st.st_mode & S_IFMT), (unsigned long)st.st_ino,
				bytes, lines, t_start / 1e9, now_ns() / 1e9, rc);
			fclose(t);
		}
	}
	fclose(f);
	free(line);
	free(out);
	return rc;
}
