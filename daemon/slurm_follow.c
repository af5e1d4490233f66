/* qual-slurm: a submitted job followed to its end (slurm_internal.h). Its
 * stdout is exactly the complete lines of out.jsonl, in order (a line is
 * held back until its newline arrives); its stderr says each change of the
 * Slurm job's state as a status line (proto/remote.h). The end is the node's
 * exit file, or Slurm saying the job ended without one. */
#include "daemon/slurm_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/child.h"
#include "common/fsutil.h"
#include "common/text.h"
#include "common/xalloc.h"

/* How often out.jsonl is read for new lines. */
#define TAIL_MS 100
/* Slurm asked every QUAL_SLURM_POLL_MS, default and bounds. */
#define POLL_MS_DEFAULT 1000
#define POLL_MS_MIN 50
#define POLL_MS_MAX 60000
/* After Slurm says the job ended, how long the exit file may take to show
 * (shared storage: another host's attribute cache). */
#define EXIT_GRACE_S 5.0
/* After qual-run ended by a signal, how long Slurm may take to say why. */
#define SETTLE_S 10.0
/* After a cancel, how long lines already written are still relayed. */
#define DRAIN_S 2.0
/* How many answers in a row that Slurm does not know the job make it gone
 * (one may come from a slurmctld that restarted without its state). */
#define GONE_ANSWERS 3
/* A line longer than this is passed on in pieces (quald refuses it). */
#define PENDING_MAX ((size_t)16 << 20)

struct follow {
	long slurm_id;
	char out_path[PATH_MAX];
	char exit_path[PATH_MAX];
	off_t offset;           /* out.jsonl read up to here */
	char *pending;          /* bytes after the last newline read */
	size_t npending, cap;
	long skip;              /* lines still to drop (--skip) */
	struct remote_status last;
	bool have_last;
	int sigfd;
	int poll_ms;
	bool submitted;         /* by us, just now (not --attach) */
	int forwarded;          /* the signal we had Slurm send qual-run, or 0 */
	bool exit_ends_wait;    /* a query is given up once the exit file shows */
	int failures;           /* Slurm did not answer, in a row */
	int gone;               /* Slurm did not know the job, in a row */
};

/* Writes data to stdout, or drops it while lines are to be skipped. */
static void relay(struct follow *f, const char *data, size_t len)
{
	while (len && f->skip > 0) {
		const char *nl = memchr(data, '\n', len);

		if (!nl)
			return;
		f->skip--;
		len -= (size_t)(nl + 1 - data);
		data = nl + 1;
	}
	if (len && fs_write_all(STDOUT_FILENO, data, len) < 0)
		fprintf(stderr, "qual-slurm: cannot write to stdout: %s\n", strerror(errno));
}

/* Relays the complete lines that out.jsonl gained since the last call;
 * final: the last bytes too, a line without its newline (cut off) included,
 * so that the reader sees the cut. */
static void tail(struct follow *f, bool final)
{
	char buf[65536];
	ssize_t n;
	int fd;

	/* Opened anew each time: on shared storage, an open sees what the
	 * node closed (close-to-open consistency). */
	fd = open(f->out_path, O_RDONLY | O_CLOEXEC);
	while (fd >= 0 && (n = pread(fd, buf, sizeof buf, f->offset)) > 0) {
		const char *nl = NULL, *p;

		f->offset += n;
		for (p = buf + n; p > buf; p--)
			if (p[-1] == '\n') {
				nl = p - 1;
				break;
			}
		if (!nl) {
			XGROW(f->pending, f->npending + (size_t)n, f->cap);
			memcpy(f->pending + f->npending, buf, (size_t)n);
			f->npending += (size_t)n;
			if (f->npending > PENDING_MAX) {
				relay(f, f->pending, f->npending);
				f->npending = 0;
			}
			continue;
		}
		relay(f, f->pending, f->npending);
		f->npending = 0;
		relay(f, buf, (size_t)(nl + 1 - buf));
		f->npending = (size_t)(buf + n - nl - 1);
		if (f->npending) {
			XGROW(f->pending, f->npending, f->cap);
			memcpy(f->pending, nl + 1, f->npending);
		}
	}
	if (fd >= 0)
		close(fd);
	if (final && f->npending) {
		relay(f, f->pending, f->npending);
		f->npending = 0;
	}
}

static void say_status(struct follow *f, const struct remote_status *st)
{
	char line[1024];

	if (f->have_last && remote_status_equal(&f->last, st))
		return;
	f->last = *st;
	f->have_last = true;
	if (remote_status_format(st, line, sizeof line) > 0)
		fputs(line, stderr);
}

/* The job ended without an exit file: the node's, Slurm's or an admin's
 * doing. The cut-off last line goes out, then the reason. */
static int lost(struct follow *f, bool known)
{
	tail(f, true);
	if (known)
		fprintf(stderr, "qual-slurm: slurm job %ld ended %s (reason: %s) on node %s "
			"before qual-run finished\n", f->slurm_id, f->last.state,
			f->last.reason[0] ? f->last.reason : "None",
			f->last.node[0] ? f->last.node : "(none)");
	else
		fprintf(stderr, "qual-slurm: slurm job %ld is no longer known to slurm and "
			"left no exit file: it ended before qual-run finished\n", f->slurm_id);
	return REMOTE_EXIT_LOST;
}

/* qual-run ended by a signal we did not send: whether Slurm stopped it
 * (a node set down, an admin's scancel, Slurm's time limit), asking Slurm
 * until it says the job ended (for at most SETTLE_S). */
static bool stopped_by_slurm(struct follow *f)
{
	double end = child_now() + SETTLE_S;
	struct remote_status st;

	for (;;) {
		int rc = slurm_cli_query(f->slurm_id, &st, NULL);

		if (rc == 1)
			say_status(f, &st);
		if (rc == 1 && remote_state_phase(st.state) == REMOTE_PHASE_ENDED)
			return remote_state_fault(st.state);
		if (rc == 0 || rc == QUAL_EKILLED || child_now() >= end)
			return false;
		poll(NULL, 0, f->poll_ms);
	}
}

/* How qual-run ended, from the exit file: the bridge's exit status, or -1
 * when there is no exit file (yet). */
static int read_exit(struct follow *f)
{
	struct remote_exit e;
	struct qual_msg m;
	size_t size;
	char *text;

	if (fs_read_capped(f->exit_path, 4096, &text, &size, &m) < 0)
		return -1;
	if (remote_exit_parse(text, size, &e, &m) < 0) {
		fprintf(stderr, "qual-slurm: '%s': %s\n", f->exit_path, m.text);
		free(text);
		return REMOTE_EXIT_LOST;
	}
	free(text);
	if (e.end == REMOTE_END_SIGNAL && e.value != f->forwarded && stopped_by_slurm(f))
		return lost(f, true);
	tail(f, true);
	/* A job that ran between two polls was never seen on its node: Slurm
	 * is asked once more, so that quald learns the node before the bridge
	 * ends (a calibration's record is stored by it). */
	if (!f->have_last || !f->last.node[0]) {
		struct remote_status st;

		if (slurm_cli_query(f->slurm_id, &st, &m) > 0)
			say_status(f, &st);
	}
	if (e.end == REMOTE_END_REFUSED)
		fprintf(stderr, "qual-slurm: qual-run was not started on node %s: %s\n",
			f->have_last && f->last.node[0] ? f->last.node : "(unknown)", e.message);
	return remote_exit_status(&e);
}

/* Relays for up to s seconds, until the exit file shows. Returns the exit
 * status it gives, or -1 when it did not show. */
static int wait_exit(struct follow *f, double s)
{
	double end = child_now() + s;
	int status;

	for (;;) {
		tail(f, false);
		if ((status = read_exit(f)) >= 0)
			return status;
		if (child_now() >= end)
			return -1;
		poll(NULL, 0, TAIL_MS);
	}
}

/* While Slurm's commands run: lines go on, and the exit file, once there,
 * makes Slurm's answer moot. */
static bool idle_tail(void *arg)
{
	struct follow *f = arg;

	tail(f, false);
	return f->exit_ends_wait && access(f->exit_path, F_OK) == 0;
}

/* A signal for us: SIGTERM and SIGINT cancel the job and end us by the
 * same signal; SIGUSR1 (quald's job time limit) goes on to qual-run, which
 * names what it was doing, while we keep relaying. */
static void on_signal(struct follow *f, int sig)
{
	struct qual_msg m;

	if (sig == SIGUSR1 && f->have_last &&
	    remote_state_phase(f->last.state) == REMOTE_PHASE_RUNNING) {
		if (slurm_cli_cancel(f->slurm_id, SIGUSR1, &m) < 0)
			fprintf(stderr, "qual-slurm: %s\n", m.text);
		f->forwarded = SIGUSR1;
		return;
	}
	f->forwarded = SIGTERM; /* what scancel sends qual-run */
	slurm_cli_set_wait(-1, idle_tail, f); /* a second signal waits */
	if (slurm_cli_cancel(f->slurm_id, 0, &m) < 0)
		fprintf(stderr, "qual-slurm: %s\n", m.text);
	wait_exit(f, DRAIN_S);
	slurm_die_by(sig);
}

/* Asks Slurm once. Returns the exit status when the job is over, else -1. */
static int poll_slurm(struct follow *f)
{
	struct remote_status st;
	struct qual_msg m;
	int rc, status;

	if ((status = read_exit(f)) >= 0)
		return status;
	f->exit_ends_wait = true;
	rc = slurm_cli_query(f->slurm_id, &st, &m);
	f->exit_ends_wait = false;
	if (rc == QUAL_EKILLED)
		return -1; /* a signal came: the loop reads it */
	if (rc < 0 && f->submitted && !f->have_last) {
		/* sbatch took it: the first status line says so even when
		 * squeue does not answer yet. */
		char id[32];

		snprintf(id, sizeof id, "%ld", f->slurm_id);
		remote_status_set(&st, "slurm", id, "PENDING", NULL, NULL);
		say_status(f, &st);
	}
	if (rc < 0) {
		/* slurmctld restarting: the node goes on; so do we. */
		if (f->failures++ % 30 == 0)
			fprintf(stderr, "qual-slurm: %s (asking again)\n", m.text);
		return -1;
	}
	f->failures = 0;
	if (rc == 0) {
		if (++f->gone < GONE_ANSWERS)
			return -1;
		status = wait_exit(f, EXIT_GRACE_S);
		return status >= 0 ? status : lost(f, false);
	}
	f->gone = 0;
	say_status(f, &st);
	if (remote_state_phase(st.state) != REMOTE_PHASE_ENDED)
		return -1;
	status = wait_exit(f, EXIT_GRACE_S);
	return status >= 0 ? status : lost(f, true);
}

static int poll_ms(void)
{
	const char *s = getenv("QUAL_SLURM_POLL_MS");
	struct qual_msg m;
	long v;

	if (!s || text_parse_long("QUAL_SLURM_POLL_MS", s, POLL_MS_MIN, POLL_MS_MAX, &v, &m) < 0)
		return POLL_MS_DEFAULT;
	return (int)v;
}

int slurm_follow(long slurm_id, const char *job_dir, long skip, bool submitted, int sigfd)
{
	struct follow f = { .slurm_id = slurm_id, .skip = skip, .submitted = submitted,
			    .sigfd = sigfd };
	struct qual_msg m;
	double next_poll;
	int status = -1;

	f.poll_ms = poll_ms();
	if (fs_path_join(f.out_path, sizeof f.out_path, job_dir, REMOTE_FILE_OUT, &m) ||
	    fs_path_join(f.exit_path, sizeof f.exit_path, job_dir, REMOTE_FILE_EXIT, &m)) {
		fprintf(stderr, "qual-slurm: %s\n", m.text);
		return REMOTE_EXIT_REFUSED;
	}
	slurm_cli_set_wait(sigfd, idle_tail, &f);
	next_poll = child_now();
	while (status < 0) {
		struct pollfd p = { .fd = sigfd, .events = POLLIN };
		struct signalfd_siginfo si;

		if (poll(&p, 1, TAIL_MS) > 0 &&
		    read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
			on_signal(&f, (int)si.ssi_signo);
		tail(&f, false);
		if (child_now() >= next_poll) {
			status = poll_slurm(&f);
			next_poll = child_now() + f.poll_ms / 1000.0;
		}
	}
	slurm_cli_set_wait(-1, NULL, NULL);
	free(f.pending);
	return status;
}
