/* Sessions (runner.h, "Sessions"): the supervisor, the parent's side. The
 * blocks of a run are shared out among child processes (sessions_child.c)
 * started one after the other, as sessions_plan.c plans them, through
 * common/child.h in fn mode (a fork of this process, which has never
 * started a GPU runtime: CUDA does not survive fork), each killed if this
 * process dies, each writing its lines into a pipe that this process reads
 * through the one line splitter, relays and judges. The device probe
 * (sessions_probe.c) is such a child too. */
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
#include "proto/line.h"
#include "common/xalloc.h"

/* ---- the relay -------------------------------------------------------- */

struct relay {
	struct run *run;
	bool stop;                     /* a line stopped GPU work */
	/* Called on the session's session_time line, its last, with stop as
	 * it stands then (NULL: nothing to call). */
	void (*on_end)(void *ctx, bool stop);
	void *on_end_ctx;
};

/* One whole line of a session, parsed once: written and judged from that
 * value by the run's one way out (runner__emit()), as the one process
 * writes and judges its own; the same bytes out, since both write with
 * lines_emit(). */
static int relay_line(void *ctx, const char *line, size_t len)
{
	struct relay *r = ctx;
	struct lines_info info;
	json_error_t je;
	bool ended;
	json_t *j;

	if (!(j = json_loadb(line, len, 0, &je))) {
		runner__emit_unparsed(r->run, line, len);
		return 0;
	}
	ended = timesplit_take_line(&r->run->split, j) == 0;
	lines_classify(j, &info);
	r->stop |= info.gpu_faulted || info.gpu_hung;
	runner__emit(r->run, j);
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
	struct relay r = { run, false, on_end, on_end_ctx };
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
		runner__emit(run, lines_error_new("time", LINES_CODE_BAD_LINE, NULL, NULL, why));
		*over = true;
		r.stop = true;
	} else if (lines_splitter_finish(&sp, relay_line, &r) == QUAL_EINVAL) {
		snprintf(why, sizeof why, "session %d's output was cut off: its last "
			 "line, %zu bytes, has no end", run->session + 1,
			 lines_splitter_rest(&sp));
		runner__emit(run, lines_error_new("time", LINES_CODE_CUT_OFF, NULL, NULL, why));
	}
	lines_splitter_release(&sp);
	close(fd);
	return r.stop;
}

/* ---- the sessions of a run -------------------------------------------- */

static void session_failed(struct run *run, const char *text)
{
	runner__emit(run, lines_error_new("time", LINES_CODE_SESSION_FAILED, NULL, NULL, text));
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
	bool planned_out;       /* runner__plan_next() said there is none */
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
	if (runner__start_fn(&n->c, runner__session_body, &n->arg, true, msg) < 0)
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

		if (!runner__plan_next(&u->plan, &n->arg, &n->of)) {
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
	if (!runner__plan_next(&u->plan, &n->arg, &n->of)) {
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
	runner__describe_end(rc, ex, end, sizeof end);
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
			(void)runner__reap_by(&p->c, until);
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

		if (!runner__plan_next(&u->plan, &n->arg, &n->of))
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
		/* One that stopped GPU work does not linger (runner__session_body). */
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
