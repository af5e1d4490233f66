/* qual-load's figures (load.h): quald's memory and CPU from /proc, the
 * checks after a run (every line and job that did not arrive), and the
 * table. */
#include "bench/load/load.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/xalloc.h"

/* ---- quald's memory and CPU ---- */

/* /proc/PID/NAME of quald into buf (len bytes, NUL-terminated); false
 * when it cannot be read (quald is gone). */
static bool quald_proc(const char *name, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/%s", (int)G.quald.pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = fs_read_full(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

long load_quald_kb(const char *field)
{
	char buf[4096];
	size_t flen = strlen(field);

	if (!quald_proc("status", buf, sizeof buf))
		return -1;
	for (char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, field, flen))
			return strtol(p + flen, NULL, 10);
	return -1;
}

/* quald's own CPU seconds (user + system) from /proc/PID/stat. */
static double quald_cpu_s(void)
{
	char buf[2048], *p;
	unsigned long ut = 0, st = 0;

	if (!quald_proc("stat", buf, sizeof buf))
		return -1;
	p = strrchr(buf, ')');
	/* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt
	 * majflt cmajflt utime stime (fields 3 to 15) */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			 &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void idlers_poll(void)
{
	int64_t t = load_now_ns();

	if (!G.drop_seen || G.ndropped_seen == G.o.idlers)
		return;
	for (int i = 0; i < G.nconns; i++) {
		struct lconn *c = G.conns[i];
		struct pollfd pfd = {.events = POLLRDHUP};
		uv_os_fd_t fd;

		if (c->kind != K_IDLER || G.drop_seen[i] ||
		    uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0)
			continue;
		pfd.fd = fd;
		if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
			G.drop_seen[i] = true;
			G.ndropped_seen++;
			if (!G.t_drop_first)
				G.t_drop_first = t;
			G.t_drop_last = t;
		}
	}
}

void load_rss_sample(uv_timer_t *t)
{
	long rss = load_quald_kb("VmRSS:");

	(void)t;
	XGROW(G.rss_series, G.nrss + 1, G.cap_rss);
	G.rss_series[G.nrss++] = rss;
	idlers_poll();
	if (rss > G.rss_max) {
		G.rss_max = rss;
		G.t_rss_max = load_now_ns();
	}
}

/* ---- checks after the run ---- */

/* Drains a never-reading watcher's socket: whether quald had closed it
 * (EOF after the bytes still in the kernel), and the bytes it held. */
static bool idler_dropped(struct lconn *c, uint64_t *bytes)
{
	static char buf[READ_CHUNK];
	uv_os_fd_t fd;

	if (uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0)
		return false;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n > 0) {
			*bytes += (uint64_t)n;
			continue;
		}
		if (n == 0)
			return true;
		if (errno == EINTR)
			continue;
		return errno != EAGAIN;
	}
}

static void check_stored(long num, struct logcheck *lc, int64_t *tsum)
{
	char path[PATH_MAX], why[256] = "";
	FILE *f;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int count = 0, verdicts = 0;
	bool verdict_last = false;
	json_t *st;

	*tsum = 0;
	snprintf(path, sizeof path, "%s/jobs/j%06ld/log.jsonl", G.state, num);
	f = fopen(path, "r");
	if (!f) {
		snprintf(why, sizeof why, "cannot open '%.200s': %s", path, strerror(errno));
		goto done;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		json_t *o = json_loadb(line, (size_t)n, 0, NULL);
		const char *type = json_string_value(json_object_get(o, "type"));
		json_int_t seq = json_integer_value(json_object_get(o, "seq"));

		if (!o) {
			snprintf(why, sizeof why, "line %d is not json", count);
		} else if (seq != count && !why[0]) {
			snprintf(why, sizeof why, "line %d has seq %" JSON_INTEGER_FORMAT, count, seq);
		} else if (!json_object_get(o, "t_emit_ns") && !why[0]) {
			snprintf(why, sizeof why, "line %d is quald's: %.150s", count, line);
		}
		*tsum += json_integer_value(json_object_get(o, "t_emit_ns"));
		verdict_last = type && !strcmp(type, "verdict");
		verdicts += verdict_last;
		count++;
		json_decref(o);
	}
	fclose(f);
	if (!why[0] && count != G.expect_lines)
		snprintf(why, sizeof why, "%d lines, want %d", count, G.expect_lines);
	if (!why[0] && (verdicts != 1 || !verdict_last))
		snprintf(why, sizeof why, "%d verdicts%s", verdicts,
			 verdict_last ? "" : ", not last");
done:
	free(line);
	snprintf(path, sizeof path, "%s/jobs/j%06ld/state.json", G.state, num);
	st = json_load_file(path, 0, NULL);
	if (!st || strcmp(json_string_value(json_object_get(st, "state")) ?: "", "done")) /* vocab:key */
		lc->not_done++;
	json_decref(st);
	if (why[0]) {
		lc->bad++;
		if (!lc->first_bad[0])
			snprintf(lc->first_bad, sizeof lc->first_bad, "j%06ld: %s", num, why);
	} else {
		lc->complete++;
	}
}

static double rusage_s(const struct rusage *r)
{
	return (double)r->ru_utime.tv_sec + r->ru_utime.tv_usec / 1e6 +
	       (double)r->ru_stime.tv_sec + r->ru_stime.tv_usec / 1e6;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The q-quantile of sorted v (nearest rank). */
static int64_t quantile(const int64_t *v, size_t n, double q)
{
	size_t k;

	if (n == 0)
		return 0;
	k = (size_t)(q * (double)n + 0.999999);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

int load_count_lines(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	int n = 0;

	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0)
		n += strstr(line, needle) != NULL;
	free(line);
	fclose(f);
	return n;
}

double load_avg1(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

/* ---- the figures ---- */

void load_tally(struct tally *t)
{
	/* quald's memory first, while it is still up. */
	t->load_end = load_avg1();
	G.hwm = load_quald_kb("VmHWM:");
	G.rss_end = load_quald_kb("VmRSS:");
	t->quald_cpu = quald_cpu_s();
	for (int i = 0; i < G.nconns; i++) {
		struct lconn *c = G.conns[i];
		if (c->kind == K_IDLER)
			t->idlers_dropped += idler_dropped(c, &t->idler_bytes);
		if (c->kind != K_READER)
			continue;
		t->reader_bytes += c->bytes;
		t->readers_eof += c->eof;
		t->gaps += c->gaps;
		t->dups += c->dups;
		t->after += c->after_verdict;
		t->unstamped += c->unstamped;
		t->lines_total += c->lines;
	}
	/* Per acknowledged job: every reading watcher has all its lines and
	 * exactly one verdict, and so has its stored log. */
	for (int k = 0; k < G.acked; k++) {
		long num = G.acked_num[k];
		int64_t stored_sum = 0;
		int bad = t->lc.bad;
		bool lost;

		check_stored(num, &t->lc, &stored_sum);
		lost = t->lc.bad != bad;
		for (int i = 0; i < G.nconns; i++) {
			struct lconn *c = G.conns[i];
			int got = 0, v = 0;
			if (c->kind != K_READER)
				continue;
			if (num >= 0 && num < c->cap_jobs) {
				got = c->got[num];
				v = c->verdicts[num];
			}
			if (got < G.expect_lines)
				t->lines_lost += G.expect_lines - got;
			if (v == 0)
				t->verdict_missing++;
			if (v > 1)
				t->verdict_extra += v - 1;
			if (v != 1)
				lost = true;
			if (num >= 0 && num < c->cap_jobs && c->tsum[num] != stored_sum) {
				t->differ++;
				lost = true;
			}
		}
		t->jobs_lost += lost;
	}
	t->log_dropped = load_count_lines(G.logpath, "not reading");
}

bool load_report(struct tally *t)
{
	char cbtext[64], when[32];
	int64_t *d_all, *d_calm, t_max_emit = 0;
	struct statfs sfs;
	struct utsname un;
	size_t ncalm = 0;
	double wall;

	/* The delays, all of them and apart from the lines written within
	 * DROP_WINDOW_NS of the drops of the never-reading watchers. */
	d_all = xcalloc(G.ndelay, sizeof *d_all);
	d_calm = xcalloc(G.ndelay, sizeof *d_calm);
	for (size_t k = 0; k < G.ndelay; k++) {
		d_all[k] = G.delay[k].delay;
		if (!G.t_drop_first || G.delay[k].t_emit < G.t_drop_first - DROP_WINDOW_NS ||
		    G.delay[k].t_emit > G.t_drop_last + DROP_WINDOW_NS)
			d_calm[ncalm++] = G.delay[k].delay;
		if (G.delay[k].delay == G.delay_max)
			t_max_emit = G.delay[k].t_emit;
	}
	qsort(d_all, G.ndelay, sizeof *d_all, cmp_i64);
	qsort(d_calm, ncalm, sizeof *d_calm, cmp_i64);
	qsort(G.ack_ns, (size_t)G.acked, sizeof *G.ack_ns, cmp_i64);
	wall = (double)(G.t_end - G.t0) / 1e9;

	if (G.o.client_buffer)
		snprintf(cbtext, sizeof cbtext, "%ld bytes", G.o.client_buffer);
	else
		snprintf(cbtext, sizeof cbtext, "8 MiB (quald's default)");
	if (G.first_refusal[0])
		printf("first refusal: %s\n", G.first_refusal);
	if (t->lc.first_bad[0])
		printf("first bad stored log: %s\n", t->lc.first_bad);
	printf("quald RSS (MiB) at each tenth of the run:");
	for (int k = 0; k <= 10 && G.nrss; k++)
		printf(" %.0f", G.rss_series[(G.nrss - 1) * (size_t)k / 10] / 1024.0);
	printf("\nlargest delay: j%06ld seq %ld (%.1f ms), written %.2f s after the last ack\n",
	       G.delay_max_job, G.delay_max_seq, G.delay_max / 1e6,
	       (double)(t_max_emit - G.t_acked) / 1e9);
	if (G.t_drop_first)
		printf("never-reading watchers dropped (%d seen) from %.2f s to %.2f s after the last ack\n",
		       G.ndropped_seen, (double)(G.t_drop_first - G.t_acked) / 1e9,
		       (double)(G.t_drop_last - G.t_acked) / 1e9);
	strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&t->wallclock));
	uname(&un);
	printf("machine: %s, Linux %s, %ld cores, load average %.2f at the start, %.2f at the end; "
	       "state directory on %s\n", when, un.release, sysconf(_SC_NPROCESSORS_ONLN),
	       t->load_start, t->load_end,
	       statfs(G.dir, &sfs) < 0 ? "?" : sfs.f_type == 0x01021994 ? "tmpfs" :
	       sfs.f_type == 0xEF53 ? "ext4" : "another file system");
	printf("\nqual-load: %d jobs of %d lines (%s), %d submitters, %d watchers "
	       "(%d reading, %d never reading), %d slots, %ld us between a worker's lines, "
	       "%s, client buffer %s\n\n",
	       G.o.jobs, G.expect_lines, G.o.gate ? "all queued before any runs" :
	       "running while submitted", G.o.submitters, G.o.readers + G.o.idlers,
	       G.o.readers, G.o.idlers, G.o.slots, G.o.gap_us,
	       strstr(G.o.helper, "fake") ? "fake identify" : "real qual-compile identify",
	       cbtext);
	printf("| figure | value |\n| --- | --- |\n");
	printf("| wall time, quald start to last verdict | %.2f s%s |\n", wall,
	       G.timed_out ? " (timed out)" : "");
	printf("| submit phase: %d acknowledged, %d refused | %.2f s (ack p50 %.1f ms, p99 %.1f ms, max %.1f ms) |\n",
	       G.acked, G.refused, (double)(G.t_acked - G.t_submit0) / 1e9,
	       quantile(G.ack_ns, (size_t)G.acked, 0.5) / 1e6,
	       quantile(G.ack_ns, (size_t)G.acked, 0.99) / 1e6,
	       G.acked ? G.ack_ns[G.acked - 1] / 1e6 : 0.0);
	printf("| queued when the last was acknowledged (status) | %ld |\n", G.queued_seen);
	printf("| run phase, last ack to last verdict | %.2f s |\n",
	       (double)(G.t_end - G.t_acked) / 1e9);
	printf("| quald peak RSS (VmHWM) | %.1f MiB |\n", G.hwm / 1024.0);
	printf("| quald RSS: idle / all queued / sampled max / end | %.1f / %.1f / %.1f / %.1f MiB |\n",
	       G.rss_idle / 1024.0, G.rss_queued / 1024.0, G.rss_max / 1024.0,
	       G.rss_end / 1024.0);
	printf("| quald CPU (itself) / with its children | %.2f s / %.2f s |\n", t->quald_cpu,
	       rusage_s(&t->ru_children) - rusage_s(&t->ru_before));
	printf("| qual-load CPU | %.2f s |\n", rusage_s(&t->ru_self));
	printf("| lines to reading watchers | %ld (%.1f MB), %zu stamped |\n", t->lines_total,
	       (double)t->reader_bytes / 1e6, G.ndelay);
	printf("| delay worker line -> reading watcher: p50 / p99 / p99.9 / max | %.2f / %.2f / %.2f / %.2f ms |\n",
	       quantile(d_all, G.ndelay, 0.5) / 1e6, quantile(d_all, G.ndelay, 0.99) / 1e6,
	       quantile(d_all, G.ndelay, 0.999) / 1e6,
	       G.ndelay ? d_all[G.ndelay - 1] / 1e6 : 0.0);
	if (G.t_drop_first)
		printf("| the same, lines written more than %.0f s from the drops (%zu) | %.2f / %.2f / %.2f / %.2f ms |\n",
		       DROP_WINDOW_NS / 1e9, ncalm,
		       quantile(d_calm, ncalm, 0.5) / 1e6, quantile(d_calm, ncalm, 0.99) / 1e6,
		       quantile(d_calm, ncalm, 0.999) / 1e6,
		       ncalm ? d_calm[ncalm - 1] / 1e6 : 0.0);
	printf("| never-reading watchers dropped by quald | %d of %d |\n", t->idlers_dropped,
	       G.o.idlers);
	printf("| connections quald logged as 'not reading' | %d |\n", t->log_dropped);
	printf("| reading watchers that lost their connection | %ld |\n", t->readers_eof);
	printf("| stored logs complete / bad / state not done | %d / %d / %d |\n", t->lc.complete,
	       t->lc.bad, t->lc.not_done);
	printf("| missing / extra verdicts at reading watchers | %ld / %ld |\n",
	       t->verdict_missing, t->verdict_extra);
	printf("| gaps / duplicates / after verdict / written by quald | %ld / %ld / %ld / %ld |\n",
	       t->gaps, t->dups, t->after, t->unstamped);
	printf("| (watcher, job) streams that differ from the stored log | %ld |\n", t->differ);
	printf("| quald exit status after SIGTERM | %d |\n",
	       WIFEXITED(t->quald_status) ? WEXITSTATUS(t->quald_status) :
	       128 + WTERMSIG(t->quald_status));
	printf("| **jobs lost** | **%ld** |\n", t->jobs_lost + (G.o.jobs - G.acked - G.refused));
	printf("| **lines lost** | **%ld** |\n", t->lines_lost);
	free(d_all);
	free(d_calm);
	return t->jobs_lost || t->lines_lost || G.acked + G.refused != G.o.jobs || G.refused ||
	       t->readers_eof || t->gaps || t->dups || t->after || t->unstamped || t->lc.bad ||
	       t->lc.not_done || t->differ || G.timed_out;
}
