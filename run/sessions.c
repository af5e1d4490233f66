/* Sessions (runner.h, "Sessions"): the supervisor. The blocks of a run are
 * shared out among child processes started one after the other through
 * common/child.h in fn mode (a fork of this process, which has never
 * started a GPU runtime: CUDA does not survive fork), each killed if this
 * process dies, each writing its lines into a pipe that this process reads
 * through the one line splitter, relays and judges. The device probe is such
 * a child too. */
#include "run/runner_internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "common/child.h"
#include "common/exitcode.h"
#include "common/fsutil.h"
#include "common/lifetime.h"
#include "common/lines.h"
#include "common/xalloc.h"

/* In a child started with out = CHILD_PIPE: takes the pipe off stdout
 * (stdout then goes where stderr goes), so that nothing a GPU runtime
 * prints can be taken for the child's answer or its lines. Returns the
 * pipe's new descriptor; ends the child when it cannot. */
static int pipe_off_stdout(void)
{
	int fd = dup(STDOUT_FILENO);

	if (fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		_exit(QUAL_EXIT_ERROR);
	return fd;
}

/* Starts fn(arg) in a child killed with this process, its stdout a pipe,
 * and with gated its stdin one too (a session's go: wait_for_go()). */
static int start_fn(struct child *c, int (*fn)(void *arg), void *arg, bool gated,
		    struct qual_msg *msg)
{
	child_init(c);
	c->fn = fn;
	c->arg = arg;
	if (gated)
		c->in = CHILD_PIPE;
	c->out = CHILD_PIPE;
	c->die_with_parent = true;
	return child_start(c, msg);
}

/* How a child ended, for messages: child_exit_text()'s words, or that it
 * could not be seen (wait_rc, child_wait()'s return, is not 0). */
static const char *describe_end(int wait_rc, const struct child_exit *ex, char *buf,
				size_t len)
{
	if (wait_rc) {
		snprintf(buf, len, "unseen (cannot wait for it)");
		return buf;
	}
	return child_exit_text(ex, buf, len);
}

/* ---- the device probe ------------------------------------------------- */

struct probe_answer {
	int ok;
	struct gpu_info info;
	char text[1024];
	/* The clocks the sessions will find (runner__clocks_open). */
	char clocks_source[16];
	char clocks_why[1024];
};

/* The probe: what the device is (no context: gpu_describe) and whether its
 * clocks can be read. Its answer is what the compiles wait for; each session
 * then opens the device for itself. */
static int probe_body(void *arg)
{
	struct run *run = arg;
	struct probe_answer answer;
	struct qual_msg msg = {{0}};
	int fd = pipe_off_stdout();

	memset(&answer, 0, sizeof answer);
	if (gpu_describe(run->cfg->device, &answer.info, &msg) < 0) {
		snprintf(answer.text, sizeof answer.text, "%s", msg.text);
	} else {
		answer.ok = 1;
		runner__clocks_open(run, &answer.info);
		runner__clocks_close(run);
		memcpy(answer.clocks_source, run->clocks_source, sizeof answer.clocks_source);
		memcpy(answer.clocks_why, run->clocks_why, sizeof answer.clocks_why);
	}
	return fs_write_all(fd, &answer, sizeof answer) < 0 ? QUAL_EXIT_ERROR : 0;
}

int runner__probe_start(struct run *run, char *why, size_t whylen)
{
	struct qual_msg msg = {{0}};

	if (start_fn(&run->probe, probe_body, run, false, &msg) < 0) {
		snprintf(why, whylen, "%s", msg.text);
		return -1;
	}
	run->probing = true;
	run->probe_started_s = child_now();
	return 0;
}

static double probe_limit(const struct run *run)
{
	return run->cfg->probe_timeout_s > 0 ? run->cfg->probe_timeout_s :
					       RUNNER_PROBE_TIMEOUT_S;
}

/* Waits until fd can be read or the probe's time (from its start) is up:
 * false then. An answer that came in time is found however late this is
 * asked (the identify before it may take longer than the limit): fd is
 * always looked at once. */
static bool probe_answers(const struct run *run, int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	double left;
	int rc;

	do {
		left = run->probe_started_s + probe_limit(run) - child_now();
		rc = poll(&p, 1, left > 0 ? (int)(left * 1000) + 1 : 0);
		if (rc > 0 || (rc < 0 && errno != EINTR))
			return true;  /* a failed poll: the read that follows says it */
	} while (left > 0);
	return false;
}

/* Ends a probe that did not answer: killed, and reaped when it has ended
 * within CHILD_REAP_GRACE_S. A driver stuck in an uninterruptible call may
 * not end even then: it is left to qual-run's exit (child_kill_orphans())
 * rather than waited for; returns false then. */
/* Reaps a killed child once it has ended, if it does by until (child_now()
 * seconds): true when it was reaped. */
static bool reap_by(struct child *c, double until)
{
	while (!child_exited(c)) {
		if (child_now() >= until)
			return false;
		usleep(2000);
	}
	return child_reap(c, NULL) == 0;
}

static bool probe_kill(struct run *run)
{
	child_kill(&run->probe, SIGKILL);
	return reap_by(&run->probe, child_now() + CHILD_REAP_GRACE_S);
}

int runner__probe_finish(struct run *run, char *why, size_t whylen)
{
	struct probe_answer answer;
	struct child_exit ex;
	char end[96];
	ssize_t n;
	int rc;

	if (!run->probing) {
		snprintf(why, whylen, "the device probe was not started");
		return -1;
	}
	run->probing = false;
	if (!probe_answers(run, run->probe.out_pipe)) {
		close(run->probe.out_pipe);
		snprintf(why, whylen, "the process that finds the gpu (the driver's start, the "
			 "device's attributes and clocks) did not answer within %g s and was "
			 "killed%s", probe_limit(run), probe_kill(run) ? "" :
			 " (it had not ended a second later)");
		return -1;
	}
	n = fs_read_full(run->probe.out_pipe, &answer, sizeof answer);
	close(run->probe.out_pipe);
	rc = child_wait(&run->probe, 0, &ex);
	if (n != (ssize_t)sizeof answer) {
		snprintf(why, whylen, "the process that finds the gpu ended without an "
			 "answer: %s", describe_end(rc, &ex, end, sizeof end));
		return -1;
	}
	if (!answer.ok) {
		snprintf(why, whylen, "%s", answer.text);
		return -1;
	}
	run->probed = answer.info;
	memcpy(run->clocks_source, answer.clocks_source, sizeof run->clocks_source);
	memcpy(run->clocks_why, answer.clocks_why, sizeof run->clocks_why);
	return 0;
}

void runner__probe_abandon(struct run *run)
{
	struct child_exit ex;

	if (!run->probing)
		return;
	run->probing = false;
	close(run->probe.out_pipe);
	child_kill(&run->probe, SIGKILL);
	(void)child_wait(&run->probe, 0, &ex);
}

/* ---- one session ------------------------------------------------------ */

/* The sessions started ahead of their turns, at most: the first look's
 * before the compiles, and each later round's together, at its start
 * (start_batch()): a later round's sessions, at most, so that one batch
 * makes every context of a round (runner__round_sessions()). */
#define SESSIONS_AHEAD RUNNER_ROUND_SESSIONS

/* What a session writes, once only and before any line, when its first
 * try to open the device is over (opened or not): the supervisor waits for
 * it from every session started ahead before it lets the first of them go
 * (await_opened()), so that no context opens while a session times. */
#define SESSION_OPENED 'o'

/* What a session is given: the run as it stands after the compiles (for
 * the first session, forked before them, as it stood then, the rest being
 * in its work file), the cases, and which session it is with its share of
 * the blocks. */
struct session_arg {
	struct run *run;
	const int *sel;
	int nsel;
	int session, block_lo, block_hi;
	/* A session started before the compiles: the file (a memfd) where
	 * it finds them after its go (read_work()); -1 for one forked after. */
	int work_fd;
	/* The go pipes of the sessions started before it (before the
	 * compiles) that this process inherited: closed at once, or the
	 * supervisor's close would never reach them as an end of file. */
	int inherited_go[SESSIONS_AHEAD];
	int ninherited_go;
	/* After its last line the session keeps its context, idle, so that
	 * no close lies between the first look's sessions (docs/verdicts.md,
	 * "Sessions"): it closes it when the supervisor asks (SIGTERM:
	 * linger()), or its end does when the supervisor kills it. */
	bool linger;
};

/* The work of a session started before the compiles, as the supervisor
 * writes it (write_work()): how many cases to run and their indices (of
 * the cases that compiled and apply), then run->cache
 * (runner__cache_pack()). Reads it from a->work_fd into a's cases (cases,
 * owned by the caller) and run->cache: 0, or -1. */
static int read_work(struct session_arg *a, int **cases)
{
	struct stat st;
	unsigned char *buf;
	const unsigned char *at, *end;
	size_t got = 0;
	int n, rc = -1;

	if (fstat(a->work_fd, &st) < 0 || st.st_size < (off_t)sizeof n)
		return -1;
	buf = xmalloc((size_t)st.st_size);
	while (got < (size_t)st.st_size) {
		ssize_t r = pread(a->work_fd, buf + got, (size_t)st.st_size - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			goto out;
		got += (size_t)r;
	}
	at = buf;
	end = buf + got;
	memcpy(&n, at, sizeof n);
	at += sizeof n;
	if (n < 0 || n > a->nsel || (size_t)(end - at) < (size_t)n * sizeof **cases)
		goto out;
	*cases = xcalloc((size_t)n + 1, sizeof **cases);
	memcpy(*cases, at, (size_t)n * sizeof **cases);
	at += (size_t)n * sizeof **cases;
	if (runner__cache_unpack(a->run, &at, end) < 0 || at != end) {
		free(*cases);
		*cases = NULL;
		goto out;
	}
	a->sel = *cases;
	a->nsel = n;
	rc = 0;
out:
	free(buf);
	return rc;
}

/* Waits for the supervisor's go: it closes this session's stdin once the
 * session before this one has ended, context and all, or, lingering, has
 * closed its output, its work over (a close, which
 * cannot raise SIGPIPE in the supervisor as a write to a dead session
 * would). A session not to run is killed instead; one whose supervisor
 * died (its end closed too) is killed with it (die_with_parent), and goes
 * no further should the close come first. */
static bool wait_for_go(pid_t supervisor)
{
	char b;
	ssize_t n;

	while ((n = read(STDIN_FILENO, &b, 1)) < 0 && errno == EINTR)
		;
	return n == 0 && getppid() == supervisor;
}

/* SIGTERM alone, a lingering session's request to close its context. */
static void close_request_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
}

/* Blocks the request in this thread, and so in every thread the GPU
 * runtime and NVML start from it later (they inherit the mask): only
 * linger()'s wait takes it, wherever the kernel would have delivered it. */
static void hold_close_request(void)
{
	sigset_t term;

	close_request_set(&term);
	pthread_sigmask(SIG_BLOCK, &term, NULL);
}

/* A lingering session's last line is out: its pipe is closed (the
 * supervisor's end of file, which it takes as the session's end) and it
 * waits, its context open and idle, until the supervisor asks it to close
 * (SIGTERM, held since the session started: hold_close_request()), kills
 * it, or dies. */
static void linger(FILE *out)
{
	sigset_t term;

	fclose(out);
	close_request_set(&term);
	while (sigwaitinfo(&term, NULL) < 0 && errno == EINTR)
		;
}

/* The body of a session, in the child: its own GPU context, every case that
 * has not failed yet, its share of the blocks; lines into the pipe. The
 * context is opened, and the clocks' source (NVML) started, before the go
 * (the first look's sessions during the compiles; each later one while the
 * one before it closes its own); nothing runs on the device before it.
 * Where the device takes one context at a time (an exclusive compute mode)
 * the open fails until the session before has ended: it is
 * tried again after the go. After a hang it ends without closing the GPU:
 * the end of the process is what stops the kernel (gpu.h, Deadlines). */
static int session_body(void *arg)
{
	struct session_arg *a = arg;
	struct run *run = a->run;
	struct qual_msg msg = {{0}};
	FILE *out = fdopen(pipe_off_stdout(), "w");
	double t = child_now();
	pid_t supervisor = getppid();
	int *cases = NULL, rc;
	bool lingers;

	if (!out)
		return QUAL_EXIT_ERROR;
	if (a->linger)
		hold_close_request();  /* before any thread is started */
	for (int i = 0; i < a->ninherited_go; i++)
		close(a->inherited_go[i]);
	/* This session's own phases, for its session_time line. */
	timesplit_init(&run->split);
	run->out = out;
	run->session = a->session;
	run->block_lo = a->block_lo;
	run->block_hi = a->block_hi;
	rc = gpu_open(run->cfg->device, &run->gpu, &msg);
	if (rc == 0) {
		/* NVML started here too, off the path between sessions. */
		runner__clocks_open(run, gpu_get_info(run->gpu));
		timesplit_add(&run->split, TS_OPEN, t);
	}
	(void)fs_write_all(fileno(out), &(char){ SESSION_OPENED }, 1);
	if (!wait_for_go(supervisor)) {
		if (rc == 0) {
			runner__clocks_close(run);
			gpu_close(run->gpu);
		}
		return 0;
	}
	if (rc < 0) {
		t = child_now();
		memset(&msg, 0, sizeof msg);
		rc = gpu_open(run->cfg->device, &run->gpu, &msg);
		if (rc == 0)
			runner__clocks_open(run, gpu_get_info(run->gpu));
		timesplit_add(&run->split, TS_OPEN, t);
	}
	if (rc < 0) {
		char text[sizeof msg.text + 64];
		snprintf(text, sizeof text, "session %d cannot open the gpu: %s",
			 run->session + 1, msg.text);
		lines_error(out, "setup", LINES_CODE_NO_DEVICE, NULL, NULL, text);
		fflush(out);
		return QUAL_EXIT_ERROR;
	}
	if (a->work_fd >= 0) {
		rc = read_work(a, &cases);
		close(a->work_fd);
		fixture_keep_seal();
		if (rc < 0) {
			char text[96];
			snprintf(text, sizeof text, "session %d cannot read the compiled code "
				 "it was handed", run->session + 1);
			lines_error(out, "setup", LINES_CODE_INTERNAL, NULL, NULL, text);
			fflush(out);
			return QUAL_EXIT_ERROR;
		}
	}
	for (int i = 0; i < a->nsel && !run->gpu_dead; i++)
		if (judge_case_get(&run->judge, fixture_name(a->sel[i]))->failure == JUDGE_OK)
			runner__run_case(run, a->sel[i]);
	runner__clocks_close(run);
	if (run->gpu_dead)
		runner__emit_stop(run);
	free(cases);
	lingers = a->linger && !run->hung && !run->gpu_dead;
	/* The last line: the supervisor starts the next session on it. */
	lines_emit(out, timesplit_session_line(&run->split, run->session + 1));
	fflush(out);
	if (lingers)
		linger(out);
	if (!run->hung)
		gpu_close(run->gpu);
	return 0;
}

/* ---- the relay -------------------------------------------------------- */

struct relay {
	struct run *run;
	struct stats_settings ignored; /* judge_take_line() wants settings */
	bool stop;                     /* a line stopped GPU work */
	/* Called on the session's session_time line, its last, with stop as
	 * it stands then (NULL: nothing to call). */
	void (*on_end)(void *ctx, bool stop);
	void *on_end_ctx;
};

/* One whole line of a session: copied to run->out at once, then applied to
 * the run's judge. */
static int relay_line(void *ctx, const char *line, size_t len)
{
	struct relay *r = ctx;
	struct lines_info info;
	json_error_t je;
	char why[200];
	bool ended;
	json_t *j;

	fwrite(line, 1, len, r->run->out);
	fputc('\n', r->run->out);
	fflush(r->run->out);
	if (!(j = json_loadb(line, len, 0, &je)))
		return 0;
	(void)judge_take_line(&r->run->judge, &r->ignored, j, why, sizeof why);
	ended = timesplit_take_line(&r->run->split, j) == 0;
	lines_classify(j, &info);
	r->stop |= info.gpu_faulted || info.gpu_hung;
	json_decref(j);
	if (ended && r->on_end) {
		r->on_end(r->on_end_ctx, r->stop);
		r->on_end = NULL;
	}
	return 0;
}

/* Relays a session's lines from fd (which it closes) until the session
 * closes it, calling on_end (when not NULL) on its session_time line. True
 * when one of them stopped GPU work (a fault or a hang).
 *
 * A last line without its newline is relayed when it is a whole JSON object;
 * otherwise (the session died writing it) it is not, and that is said
 * (cut_off): lines_splitter_finish()'s rule. A line longer than LINES_MAX is no line
 * of the engine's (one is a few kilobytes): it is reported as bad_line, as
 * quald reports a worker's line that is not a qual line, nothing more of
 * the session is relayed, *over is set and the run stops there; the caller
 * ends the session, whose output no one reads any more. Either way the
 * run's verdict is error (the machine's). */
static bool relay_session(struct run *run, int fd, bool *over,
			  void (*on_end)(void *ctx, bool stop), void *on_end_ctx)
{
	struct relay r = { run, run->cfg->stats, false, on_end, on_end_ctx };
	struct lines_splitter sp;
	char buf[64 * 1024], why[200];
	ssize_t n;
	int rc = 0;

	*over = false;
	lines_splitter_init(&sp, LINES_MAX);
	while (rc != QUAL_ELIMIT && (n = read(fd, buf, sizeof buf)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		rc = lines_splitter_feed(&sp, buf, (size_t)n, relay_line, &r);
	}
	if (rc == QUAL_ELIMIT) {
		snprintf(why, sizeof why, "session %d wrote a line longer than %zu bytes: "
			 "the rest of its output is not relayed", run->session + 1, LINES_MAX);
		lines_error(run->out, "time", LINES_CODE_BAD_LINE, NULL, NULL, why);
		run->judge.machine_error = true;
		*over = true;
		r.stop = true;
	} else if (lines_splitter_finish(&sp, relay_line, &r) == QUAL_EINVAL) {
		snprintf(why, sizeof why, "session %d's output was cut off: its last "
			 "line, %zu bytes, has no end", run->session + 1,
			 lines_splitter_rest(&sp));
		lines_error(run->out, "time", LINES_CODE_CUT_OFF, NULL, NULL, why);
		run->judge.machine_error = true;
	}
	lines_splitter_release(&sp);
	close(fd);
	return r.stop;
}

/* ---- the sessions of a run -------------------------------------------- */

static void session_failed(struct run *run, const char *text)
{
	lines_error(run->out, "time", LINES_CODE_SESSION_FAILED, NULL, NULL, text);
	run->judge.machine_error = true;
}

enum runner_round runner__next_round(const struct stats_settings *s, int blocks_done,
				     int undecided, double elapsed_s, double max_seconds,
				     bool stopped, int *next)
{
	int at[STATS_MAX_LOOKS], k;
	double w[STATS_MAX_LOOKS];

	*next = blocks_done;
	if (stopped)
		return ROUND_STOPPED;
	if (undecided == 0)
		return ROUND_DECIDED;
	k = stats_looks(s, at, w);
	for (int i = 0; i < k; i++) {
		if (at[i] > blocks_done) {
			/* The time cap is checked only where a round would
			 * start: it bounds the start of rounds, not their
			 * length. */
			if (elapsed_s >= max_seconds)
				return ROUND_MAX_SECONDS;
			*next = at[i];
			return ROUND_MORE;
		}
	}
	return ROUND_MAX_PAIRS;
}

/* The cases of sel[0..nsel) that are still undecided, into more[] (the
 * count returned), judged as the run stands. */
static int undecided_cases(struct run *run, const int *sel, int nsel, int *more)
{
	bool *need = xcalloc((size_t)run->judge.ncases + 1, sizeof *need);
	int n = 0;

	(void)judge_undecided(&run->judge, &run->stats, need, run->judge.ncases);
	for (int i = 0; i < nsel; i++) {
		const char *name = fixture_name(sel[i]);

		for (int c = 0; c < run->judge.ncases; c++)
			if (need[c] && strcmp(run->judge.cases[c].name, name) == 0)
				more[n++] = sel[i];
	}
	free(need);
	return n;
}

int runner__round_sessions(int round_blocks, int first_blocks, int first_sessions)
{
	long m;

	if (round_blocks < 1 || first_blocks < 1 || first_sessions < 1)
		return 1;
	m = ((long)round_blocks * first_sessions + first_blocks - 1) / first_blocks;
	if (m > RUNNER_ROUND_SESSIONS)
		m = RUNNER_ROUND_SESSIONS;
	return m > round_blocks ? round_blocks : (int)m;
}

/* The plan of a run's sessions (runner__run_sessions): the first k share
 * the first look's blocks; then, while some case is undecided, each round
 * times those cases alone up to the next look (runner__next_round), its
 * blocks numbered on from where the last round ended and shared out over
 * sessions of about as many blocks as the first look's
 * (runner__round_sessions): blocks inside one process share what stays
 * fixed for its life (docs/verdicts.md, "Sessions"), and the rule assumes
 * blocks that do not. */
struct plan {
	struct run *run;
	const int *sel;
	int nsel;
	int blocks, k, done;
	/* The round under way: blocks [r_lo, r_lo + r_n) of the cases
	 * cur[0..ncur) in r_m sessions, r_i of them planned. */
	int r_lo, r_n, r_m, r_i, ncur;
	const int *cur;
	int *more;
	int s;                  /* sessions planned so far */
	double t0;              /* the start of the timing phase */
};

/* The next session of the plan into *arg, with the sessions so far and in
 * its round (*of, for messages); false when there is none. Asked on the
 * last line of the session before (on_session_end), when the judge has all
 * of that session's lines: the elapsed time it checks against max_seconds
 * leaves out that session's close. */
static bool plan_next(struct plan *p, struct session_arg *arg, int *of)
{
	struct run *run = p->run;

	if (p->r_i == p->r_m) {
		int next, nmore = undecided_cases(run, p->sel, p->nsel, p->more);
		enum runner_round why = runner__next_round(&run->stats, p->done, nmore,
							   child_now() - p->t0, run->max_seconds,
							   run->judge.machine_error, &next);

		if (why != ROUND_MORE)
			return false;
		p->r_lo = p->done;
		p->r_n = next - p->done;
		p->r_m = runner__round_sessions(p->r_n, p->blocks, p->k);
		p->r_i = 0;
		p->cur = p->more;
		p->ncur = nmore;
		p->done = next;
	} else if (p->s >= p->k && child_now() - p->t0 >= run->max_seconds) {
		/* The time cap also ends a round between its sessions: a
		 * round is up to 16 of them. The blocks timed so far are a
		 * look of their own size (docs/verdicts.md). */
		return false;
	}
	*arg = (struct session_arg){ run, p->cur, p->ncur, p->s,
				     p->r_lo + p->r_i * p->r_n / p->r_m,
				     p->r_lo + (p->r_i + 1) * p->r_n / p->r_m, -1, {0}, 0, false };
	*of = p->s - p->r_i + p->r_m;
	p->s++;
	p->r_i++;
	return true;
}

/* A session started and waiting for its go (or not started: live false). */
struct pending {
	struct child c;
	struct session_arg arg;
	int of;
	bool live;
	bool opened;    /* its SESSION_OPENED read (or its output's end) */
	bool first;     /* the first of the sessions started ahead together */
	bool asked;     /* lingering, asked to close (start_batch()) */
};

struct supervisor {
	struct plan plan;
	struct pending next;
	/* Started before the compiles, in order, each waiting for its turn:
	 * ahead[ahead_i..nahead) are still to become next. */
	struct pending ahead[SESSIONS_AHEAD];
	int nahead, ahead_i;
	/* Sessions that wrote their last line and keep their context, idle,
	 * until settle_lingering() (session_arg.linger). */
	struct pending lingering[SESSIONS_AHEAD];
	int nlinger;
	bool ended;             /* the session relayed wrote its last line */
	bool planned_out;       /* plan_next() said there is none */
	bool start_failed;
	int work_fd;            /* the work of the sessions started before the
				 * compiles (a memfd), until they are handed it;
				 * -1: none */
};

/* Starts the session planned in n->arg, after the ones of
 * u->ahead[0..ninherit), whose go pipes it closes; false when it could not
 * be (n->c untouched, msg says why). */
static bool start_session(struct pending *n, const struct pending *ahead, int ninherit,
			  struct qual_msg *msg)
{
	n->arg.ninherited_go = 0;
	for (int i = 0; i < ninherit; i++)
		n->arg.inherited_go[n->arg.ninherited_go++] = ahead[i].c.in_pipe;
	if (start_fn(&n->c, session_body, &n->arg, true, msg) < 0)
		return false;
	n->live = true;
	n->opened = n->asked = false;
	return true;
}

static void abandon(struct pending *n);
static void abandon_ahead(struct supervisor *u);

/* n could not be started (start_session()'s msg): the run says so, and no
 * session starts after it. */
static void start_failed(struct supervisor *u, const struct pending *n,
			 const struct qual_msg *msg)
{
	char text[sizeof msg->text + 64];

	snprintf(text, sizeof text, "session %d of %d: %s", n->arg.session + 1, n->of,
		 msg->text);
	session_failed(u->plan.run, text);
	u->start_failed = true;
}

/* A lingering session is asked to close its context (SIGTERM);
 * settle_lingering() waits for it. */
static void ask_to_close(struct pending *p)
{
	child_kill(&p->c, SIGTERM);
	p->asked = true;
}

/* Where contexts live side by side, the sessions of a round are started
 * together when it begins, as many as SESSIONS_AHEAD, each to linger after
 * its last line: they open their contexts side by side while none times
 * (on the H200 sixteen in 2.3 s, against 5.9 s one after another:
 * bench/ctx_open.py), the sessions still lingering are asked to close
 * meanwhile, and they then go one after the other as the first look's do.
 * A later round is at most SESSIONS_AHEAD sessions (runner__round_sessions),
 * so it is one batch; only a first look of more (--sessions above 16)
 * starts the rest as another batch on the last line of the sixteenth,
 * which closes those before it. False when none
 * was planned (u->planned_out) or none could be started. */
static bool start_batch(struct supervisor *u)
{
	struct qual_msg msg = {{0}};

	u->nahead = u->ahead_i = 0;
	while (u->nahead < SESSIONS_AHEAD && (u->nahead == 0 || u->plan.r_i < u->plan.r_m)) {
		struct pending *n = &u->ahead[u->nahead];

		if (!plan_next(&u->plan, &n->arg, &n->of)) {
			u->planned_out = true;
			break;
		}
		n->arg.work_fd = -1;
		n->arg.linger = true;
		n->first = u->nahead == 0;
		if (!start_session(n, u->ahead, u->nahead, &msg)) {
			start_failed(u, n, &msg);
			abandon_ahead(u);
			return false;
		}
		if (u->nahead == 0)
			for (int i = 0; i < u->nlinger; i++)
				ask_to_close(&u->lingering[i]);
		u->nahead++;
	}
	return u->nahead > 0;
}

/* Makes the next session: the next of those started ahead, or one planned
 * and started now (with those of its round where contexts live side by
 * side: start_batch()); it opens the GPU and waits for its go. The time
 * cap also ends a round between its sessions (a round is up to 16 of them):
 * the blocks timed so far are a look of their own size (docs/verdicts.md),
 * and the round's sessions not yet let go are ended. */
static void start_next(struct supervisor *u)
{
	struct run *run = u->plan.run;
	struct pending *n = &u->next;
	struct qual_msg msg = {{0}};

	if (u->ahead_i < u->nahead) {
		struct pending *a = &u->ahead[u->ahead_i];

		if (!a->first && a->arg.session >= u->plan.k &&
		    child_now() - u->plan.t0 >= run->max_seconds) {
			abandon_ahead(u);
			u->planned_out = true;
			return;
		}
		*n = *a;
		u->ahead_i++;
		return;
	}
	if (run->probed.shared) {
		if (start_batch(u))
			*n = u->ahead[u->ahead_i++];
		return;
	}
	if (!plan_next(&u->plan, &n->arg, &n->of)) {
		u->planned_out = true;
		return;
	}
	n->arg.work_fd = -1;
	n->first = false;
	if (!start_session(n, NULL, 0, &msg))
		start_failed(u, n, &msg);
}

/* Reads p's SESSION_OPENED (or its output's end), once, waiting for as
 * long as it takes, as the relay would for its lines (a session's open
 * that never returns holds the run either way). */
static void await_opened(struct pending *p)
{
	char b;

	if (!p->live || p->opened)
		return;
	while (read(p->c.out_pipe, &b, 1) < 0 && errno == EINTR)
		;
	p->opened = true;
}

/* The relay's on_end: a session wrote its last line and is closing its
 * context (or lingers), so the next one, unless it opened ahead, starts
 * opening its own now, unless GPU work stopped. */
static void on_session_end(void *ctx, bool stop)
{
	struct supervisor *u = ctx;

	u->ended = true;
	if (!stop && !u->next.live && !u->planned_out && !u->start_failed)
		start_next(u);
}

/* Ends a started session that is not to run: killed, reaped, its pipes
 * closed. */
static void abandon(struct pending *n)
{
	struct child_exit ex;

	if (!n->live)
		return;
	n->live = false;
	/* Killed before its stdin closes, which would be its go. */
	child_kill(&n->c, SIGKILL);
	(void)child_wait(&n->c, 0, &ex);
	close(n->c.in_pipe);
	close(n->c.out_pipe);
}

/* Judges a session's end (rc and ex: child_wait()'s): one that did not
 * exit 0 failed the run, and a crash is as if of this process (the GPU it
 * used is to be checked, and no verdict is given). True when it failed. */
static bool session_end_failed(struct run *run, const struct pending *p, int rc,
			       const struct child_exit *ex)
{
	char text[1200], end[96];
	int sig;

	if (rc == 0 && child_exit_code(ex) == 0)
		return false;
	describe_end(rc, ex, end, sizeof end);
	snprintf(text, sizeof text, "session %d of %d ended: %s", p->arg.session + 1, p->of, end);
	session_failed(run, text);
	sig = rc ? 0 : child_exit_signal(ex);
	if (qual_fault_signal(sig)) {
		run->crash_signal = sig;
		snprintf(run->stop_reason, sizeof run->stop_reason,
			 "gpu work stopped: session %d of %d crashed (%s)", p->arg.session + 1,
			 p->of, end);
		runner__emit_stop(run);
	}
	return true;
}

/* How long a session that was asked to close its context, or that ended
 * its work without lingering, may take to end before it is killed and
 * said to have failed: a context closes in well under a second, and the
 * supervisor must not wait for ever on a session lingering where it was
 * not expected to (a last line it could not read). */
#define SESSION_END_S 30.0

/* The lingering sessions that ended on their own (none should: a crash
 * while idle) are reaped, judged and taken off the list. True when one
 * was. */
static bool reap_ended_lingering(struct supervisor *u)
{
	struct run *run = u->plan.run;
	bool failed = false;
	int n = 0;

	for (int i = 0; i < u->nlinger; i++) {
		struct pending *p = &u->lingering[i];
		struct child_exit ex;

		if (!child_exited(&p->c)) {
			u->lingering[n++] = *p;
			continue;
		}
		/* Ended unasked, even with status 0, it is no session's end;
		 * asked (start_batch()), one that exited 0 closed as told. */
		if (session_end_failed(run, p, child_reap(&p->c, &ex), &ex)) {
			failed = true;
		} else if (!p->asked) {
			char text[200];

			snprintf(text, sizeof text, "session %d of %d ended while it was to "
				 "keep its context", p->arg.session + 1, p->of);
			session_failed(run, text);
			failed = true;
		}
	}
	u->nlinger = n;
	return failed;
}

/* Closes the contexts of the lingering sessions, all at once, and reaps
 * them: asked to close (SIGTERM), their ends judged, before a session that
 * did not open ahead gets its go (each within SESSION_END_S); or killed
 * (kill), once GPU work has stopped or the run has its verdict, and reaped
 * as they end within CHILD_REAP_GRACE_S (one stuck in the driver's
 * teardown is left to the end of this process). True when one of them
 * failed. */
static bool settle_lingering(struct supervisor *u, bool kill)
{
	struct run *run = u->plan.run;
	bool failed = false;
	double t = child_now(), until = t + CHILD_REAP_GRACE_S;

	if (u->nlinger == 0)
		return false;
	for (int i = 0; i < u->nlinger; i++)
		child_kill(&u->lingering[i].c, kill ? SIGKILL : SIGTERM);
	for (int i = 0; i < u->nlinger; i++) {
		struct pending *p = &u->lingering[i];
		struct child_exit ex;
		int rc;

		if (kill) {
			(void)reap_by(&p->c, until);
			continue;
		}
		rc = child_wait(&p->c, child_now() + SESSION_END_S, &ex);
		if (session_end_failed(run, p, rc, &ex))
			failed = true;
	}
	u->nlinger = 0;
	timesplit_add(&run->split, TS_CLOSE, t);
	return failed;
}

/* Ends every session started before the compiles that is still waiting
 * for its turn. */
static void abandon_ahead(struct supervisor *u)
{
	while (u->ahead_i < u->nahead)
		abandon(&u->ahead[u->ahead_i++]);
}

/* GPU work stops: every session started and not yet let go is ended. */
static void halt(struct supervisor *u, bool *halted)
{
	*halted = true;
	abandon(&u->next);
	abandon_ahead(u);
}

/* The supervisor of run's sessions over sel, its plan made, its first
 * session not started yet. */
static struct supervisor *supervisor_new(struct run *run, const int *sel, int nsel)
{
	const struct runner_config *cfg = run->cfg;
	int blocks = (cfg->pairs + cfg->pairs_per_block - 1) / cfg->pairs_per_block;
	struct supervisor *u = xcalloc(1, sizeof *u);

	u->plan = (struct plan){ .run = run, .sel = sel, .nsel = nsel, .blocks = blocks,
				 .k = run->nsessions, .done = blocks, .r_n = blocks,
				 .r_m = run->nsessions, .cur = sel, .ncur = nsel,
				 .more = xcalloc((size_t)nsel + 1, sizeof *u->plan.more) };
	u->work_fd = -1;
	return u;
}

void runner__sessions_start(struct run *run, const int *sel, int nsel)
{
	struct supervisor *u;

	if (run->sup)
		return;
	run->sup = u = supervisor_new(run, sel, nsel);
	/* Where they will find their work: when there can be no such file,
	 * they are started after the compiles instead. */
	if ((u->work_fd = memfd_create("qual-session-work", MFD_CLOEXEC)) < 0)
		return;
	/* The first look's sessions, each planned as it would be later; only
	 * the first on a device that takes one process's context at a time
	 * (or may: not known), since a later one could take it first. */
	while (u->nahead < (run->probed.shared ? run->nsessions : 1) &&
	       u->nahead < SESSIONS_AHEAD) {
		struct pending *n = &u->ahead[u->nahead];
		struct qual_msg msg = {{0}};

		if (!plan_next(&u->plan, &n->arg, &n->of))
			break;
		n->arg.work_fd = u->work_fd;
		/* Where contexts of several processes live side by side. */
		n->arg.linger = run->probed.shared;
		n->first = u->nahead == 0;
		if (!start_session(n, u->ahead, u->nahead, &msg)) {
			/* This one and the rest are started later instead,
			 * as if never planned. */
			u->plan.s--;
			u->plan.r_i--;
			break;
		}
		u->nahead++;
	}
	if (u->nahead == 0) {
		close(u->work_fd);
		u->work_fd = -1;
	}
}

/* Writes the work of the sessions started before the compiles into
 * u->work_fd, new and empty (read_work()): the cases of sel that compiled
 * and apply, and run->cache. 0, or -1. */
static int write_work(struct supervisor *u, const int *sel, int nsel)
{
	struct run *run = u->plan.run;
	unsigned char *buf = NULL;
	size_t len = 0, cap = 0;
	int *todo = xcalloc((size_t)nsel + 1, sizeof *todo), n = 0, rc;

	for (int i = 0; i < nsel; i++) {
		const struct judge_case *jc = judge_case_get(&run->judge, fixture_name(sel[i]));
		if (jc->failure == JUDGE_OK && !jc->not_applicable)
			todo[n++] = sel[i];
	}
	XGROW(buf, sizeof n + (size_t)n * sizeof *todo, cap);
	memcpy(buf, &n, sizeof n);
	memcpy(buf + sizeof n, todo, (size_t)n * sizeof *todo);
	len = sizeof n + (size_t)n * sizeof *todo;
	runner__cache_pack(run, &buf, &len, &cap);
	rc = fs_write_all(u->work_fd, buf, len) < 0 ? -1 : 0;
	free(buf);
	free(todo);
	return rc;
}

/* The sessions one after the other, never two at work on the device: a
 * session not started before the compiles is started (and opens its
 * context) when the one before has written its last line, and every
 * session gets its go once the one before has ended, or lingers, idle
 * (session_arg.linger); lingering sessions are ended before the go of one
 * that did not open ahead. */
void runner__run_sessions(struct run *run, const int *sel, int nsel)
{
	struct supervisor *u;
	bool halted = false;
	double t;

	for (int i = 0; i < nsel; i++)
		runner__compile_case(run, sel[i]);
	if (!run->sup)
		run->sup = supervisor_new(run, sel, nsel);
	u = run->sup;
	if (u->work_fd >= 0 && write_work(u, sel, nsel) < 0) {
		/* Started before the compiles, they cannot be handed them:
		 * they go, and the sessions start as they would have (the
		 * plan as if it had never been made). */
		abandon_ahead(u);
		u->nahead = u->ahead_i = 0;
		u->plan.s = u->plan.r_i = 0;
	}
	if (u->work_fd >= 0) {
		close(u->work_fd);  /* the sessions have their own */
		u->work_fd = -1;
	}
	u->plan.t0 = child_now();  /* the timing phase, which max_seconds bounds */
	t = child_now();
	if (!u->next.live && !u->start_failed)
		start_next(u);
	while (u->next.live) {
		struct pending cur = u->next;
		struct child_exit ex;
		bool over, stop;

		u->next.live = false;
		/* No context opens while a session times: the first of the
		 * sessions started together goes once all of them have
		 * opened. */
		if (cur.first)
			for (int i = u->ahead_i; i < u->nahead; i++)
				await_opened(&u->ahead[i]);
		await_opened(&cur);
		/* The lingering sessions close before one that did not open
		 * ahead of its turn gets its go (that one opens meanwhile),
		 * and before the first of a round's sessions started together
		 * does (they were asked to as the round's opened). */
		if ((!cur.arg.linger || cur.first) && u->nlinger && settle_lingering(u, false)) {
			abandon(&cur);
			halt(u, &halted);
			break;
		}
		close(cur.c.in_pipe);  /* its go */
		run->session = cur.arg.session;  /* for relay_session's messages */
		u->ended = false;
		stop = relay_session(run, cur.c.out_pipe, &over, on_session_end, u);
		run->session = 0;
		if (over)
			child_kill(&cur.c, SIGKILL);
		/* One that stopped GPU work does not linger (session_body). */
		if (cur.arg.linger && u->ended && !over && !stop) {
			/* Asked to close at once when the sessions started
			 * together after it are opening (none times before
			 * settle_lingering() has waited for it): fewer contexts
			 * held at once. */
			if (u->next.live && u->next.first)
				ask_to_close(&cur);
			u->lingering[u->nlinger++] = cur;  /* reaped by settle_lingering() */
		} else {
			double tc = child_now();
			/* One started to linger that did not, or not as seen
			 * here, is not waited for for ever. */
			int rc = child_wait(&cur.c, cur.arg.linger ? tc + SESSION_END_S : 0, &ex);

			timesplit_add(&run->split, TS_CLOSE, tc);
			if (!over && session_end_failed(run, &cur, rc, &ex))
				stop = true;
		}
		if (stop || over || u->start_failed) {
			halt(u, &halted);
			break;
		}
		if (!u->next.live && !u->planned_out)
			start_next(u);  /* it ended without its last line */
	}
	/* Lingering sessions that ended on their own are judged here. The
	 * others, when GPU work stopped, are killed now; when no round
	 * followed, they keep their contexts until runner__sessions_end(),
	 * after the verdict: their work is over, their lines judged, and the
	 * driver's teardown of several contexts, one after the other (some
	 * 0.3 s for four on the H200), changes nothing the verdict says. */
	if (reap_ended_lingering(u) && !halted)
		halt(u, &halted);  /* a crash while idle is a crash like any other */
	if (halted)
		(void)settle_lingering(u, true);
	timesplit_add(&run->split, TS_SESSIONS, t);
}

void runner__sessions_end(struct run *run)
{
	struct supervisor *u = run->sup;

	if (!u)
		return;
	abandon(&u->next);
	abandon_ahead(u);
	/* Killed: the end of each process closes its context. */
	(void)settle_lingering(u, true);
	if (u->work_fd >= 0)
		close(u->work_fd);
	free(u->plan.more);
	free(u);
	run->sup = NULL;
}
