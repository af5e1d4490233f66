/* What the files of qual-load share (bench/load/README.md):
 *   qual_load.c     options, quald's start and stop, the phases of a run
 *   load_clients.c  the watchers and submitters on this process's loop
 *   load_report.c   quald's memory and CPU, the checks after the run, the
 *                   table of figures
 * One run at a time: its state is the one struct bench, G. */
#ifndef QUAL_LOAD_H
#define QUAL_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

#include <uv.h>

#include "common/child.h"

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* RSS is sampled this often (ms): reading /proc/PID/status costs ~20 us. */
#define RSS_PERIOD_MS 10
#define READ_CHUNK (64u << 10)
/* Lines written this close to the drops of the never-reading watchers are
 * reported apart too (a drop frees that watcher's unsent writes on quald's
 * loop). */
#define DROP_WINDOW_NS 2000000000LL

/* When a line was written, and how long it took to reach a watcher (ns). */
struct sample {
	int64_t t_emit, delay;
};

enum kind { K_READER, K_IDLER, K_SUBMITTER };

struct lconn {
	uv_pipe_t pipe;
	enum kind kind;
	int index;
	bool got_reply, eof, closing;
	char eof_why[96];
	char *part;                /* an incomplete line carried to the next read */
	size_t part_len, part_cap;
	/* a reading watcher: per job number, the next seq expected, the
	 * distinct lines seen and the verdicts seen */
	int32_t *next_seq, *got;
	uint8_t *verdicts;
	int64_t *tsum;             /* sum of the job's t_emit_ns seen, to compare
				    * with its stored log */
	long cap_jobs;
	long lines, gaps, dups, after_verdict, unstamped, other, verdict_jobs;
	uint64_t bytes;
	bool complete;
	/* a submitter: the request in flight */
	uv_write_t wreq;
	char req[8192];
	int64_t t_sent;
	bool busy;
};

struct opts {
	const char *quald, *worker, *helper, *lines, *lib;
	int jobs, submitters, readers, idlers, slots;
	long gap_us;
	long client_buffer;        /* 0: quald's default */
	bool gate;
	double timeout_s;
	bool keep;
	const char *tmp;           /* where the temporary folder goes */
	double hold_s;             /* seconds to keep quald up after the run */
};

struct bench {
	struct opts o;
	uv_loop_t *loop;
	/* short, so that every path made from them fits (a socket path has at
	 * most 107 bytes) */
	char dir[64], sock[96], state[96], gatefile[96], logpath[96];
	struct child quald;
	int expect_lines;          /* lines per job in the template */
	struct lconn **conns;
	int nconns, conns_cap;
	/* phases */
	int watch_replies;
	int next_submit, acked, refused;
	long *acked_num;           /* job numbers, in ack order */
	int64_t *ack_ns;           /* ack latency of each */
	int readers_done;
	bool submitting_done, finished, timed_out;
	int64_t t0, t_watchers, t_submit0, t_acked, t_end;
	/* the delays: when each line was written, and how long it took */
	struct sample *delay;
	size_t ndelay, cap_delay;
	/* quald's memory, kB */
	uv_timer_t rss_timer, deadline;
	long rss_max, rss_idle, rss_queued, rss_end, hwm;
	int64_t t_rss_max;
	long *rss_series;          /* kB, one per RSS_PERIOD_MS */
	size_t nrss, cap_rss;
	int64_t delay_max;         /* and where it was */
	long delay_max_job, delay_max_seq;
	long queued_seen;          /* the status request's count of queued jobs */
	bool settling;             /* every verdict is in: waiting for quald to
				    * record every job's end (state.json is
				    * written when the worker has exited, after
				    * its verdict line went out) */
	uv_timer_t settle_timer;
	struct lconn *status_conn;
	/* when quald dropped the never-reading watchers (seen with
	 * POLLRDHUP, which a Unix socket reports once the peer has shut
	 * down, whatever is still unread), ns; 0 = none */
	int64_t t_drop_first, t_drop_last;
	int ndropped_seen;
	bool *drop_seen;
	char first_refusal[512];
};


extern struct bench G;

/* ---- qual_load.c ---- */

/* "qual-load: " and the message on stderr; kills quald and exits 2. */
void load_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* CLOCK_MONOTONIC in ns, the clock of the fake worker's "t_emit_ns". */
int64_t load_now_ns(void);

/* Every reading watcher has every verdict (or is gone): the run is over
 * once quald says no job is queued or running. */
void load_settle(void);

/* Ends the run: stops the timers and the loop. */
void load_finish(void);

/* ---- load_clients.c ---- */

/* A connection to quald's socket (a blocking connect: it waits while the
 * listen backlog is full) on the loop, with first (may be NULL) written. */
struct lconn *load_conn_open(enum kind kind, int index, const char *first);

/* A submitter's next submit, while there are jobs to submit. */
void load_submit_next(struct lconn *c);

/* The connection's handle is closed: frees it. */
void load_conn_closed(uv_handle_t *h);

/* ---- load_report.c ---- */

/* A field "VmRSS:" or "VmHWM:" of quald's /proc/PID/status, in kB; -1 when
 * it is gone. */
long load_quald_kb(const char *field);

/* The RSS timer: a sample of quald's memory, and a look at which
 * never-reading watchers quald has dropped. */
void load_rss_sample(uv_timer_t *t);

/* What a run came to, gathered after it (while quald is still up) and when
 * quald has stopped. */
struct tally {
	struct logcheck {
		int complete;      /* logs with every line, in order, one verdict last */
		int bad;
		int not_done;      /* state.json not "done" */
		char first_bad[512];
	} lc;
	long lines_lost, gaps, dups, after, unstamped, lines_total;
	long verdict_missing, verdict_extra, jobs_lost, readers_eof, differ;
	int idlers_dropped, log_dropped;
	uint64_t idler_bytes, reader_bytes;
	double quald_cpu, load_start, load_end;
	int quald_status;          /* its wait status after SIGTERM */
	struct rusage ru_before, ru_self, ru_children;
	time_t wallclock;
};

/* How many lines of the file at path hold needle; -1 when it cannot be
 * read. */
int load_count_lines(const char *path, const char *needle);

/* The load average over the last minute, -1 when unknown. */
double load_avg1(void);

/* Once every verdict is in: quald's memory and CPU, what every watcher
 * got, and every acknowledged job's stored log against it. */
void load_tally(struct tally *t);

/* Prints the figures; returns whether anything was lost. */
bool load_report(struct tally *t);

#endif
