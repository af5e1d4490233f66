/* One worker (jobs_internal.h): the qual-run process that runs a job in its
 * slot, its stdout and stderr, the relay of its lines, and the end of its
 * job.
 *
 * The worker runs in a session of its own (CHILD_SESSION_NEW), so that a
 * cancel or a time limit reaches with one signal to its group everything it
 * started there, and whatever it left there is killed when it exits
 * (child_reap()). Its compile children have process groups of their own
 * (compile/rtc.c, so that a compile's timeout kills all of it), and what a
 * candidate starts may leave both (setsid()). None outlives the job: qual-run
 * is a child subreaper that kills everything below it on every way out
 * (run/qual_run.c), and what it cannot (it was SIGKILLed) is adopted by
 * quald, which kills it when it finds it (children.h, Orphans). Its stdout
 * is cut into lines by lines_splitter.
 *
 * Scratch (worker_scratch.c). Each worker's $TMPDIR is a folder of its own
 * in the daemon's $TMPDIR, named after the state directory and the job,
 * quald-<state>-<job>-XXXXXX (<state>: 16 hex digits of the SHA-256 of the
 * state directory's real path), removed once the worker has exited. When
 * the daemon starts, every folder of its user with its state directory's
 * prefix goes: what the workers of an earlier daemon on that state
 * directory left when it died (there is one daemon a state directory). The
 * folders are not in the state directory: a compile child of another uid
 * (--compile-user) must reach its own folder in there, and systemd keeps
 * the state directory 0700; under systemd $TMPDIR is the unit's private
 * /tmp.
 *
 * Relaying (relay.h). Each stdout line of a worker is parsed; an object is
 * relayed with its bytes unchanged and ,"job":ID,"seq":N spliced in before
 * its closing brace (so numbers keep the engine's exact text). A line that
 * is not a JSON object (an engine bug, or a runtime library printing to
 * stdout) is not dropped: it becomes an error line (stage "setup", code
 * bad_line, arm and case null) whose message quotes its first 200 bytes, and
 * the job goes on. A line over LINES_MAX bytes is an engine bug: the worker
 * is killed and the job ends with an error verdict. A last line without its
 * newline is cut off (the worker died writing it): it is not relayed, and
 * an error line with code cut_off says so. Lines after the engine's verdict
 * line are dropped (every job ends with exactly one verdict line).
 *
 * Lines that are not the engine's. An object that is not one of the output
 * schema's lines (lines_check(): a known type with the fields it requires)
 * was not written by qual-run: something else got hold of its stdout (a
 * compile child that took it; docs/service.md, "Trust model"). It is
 * refused: neither stored nor relayed. One error line (stage "setup", code
 * foreign_line) says how many were refused and why the first was, just
 * before the verdict line (the engine's, or the daemon's when there is
 * none). Once a line of type "verdict" has been refused, no later verdict
 * line is taken either (which of them was the engine's cannot be told): the
 * daemon writes the verdict, error (or fail when a line already blamed the
 * candidate), never a passing one.
 *
 * Decisions read codes (lines.h), never a message's wording: a line blames
 * the candidate when it is an error line with arm "candidate" or a
 * case_verdict "fail" with failed_arm "candidate"; the candidate's compiler
 * crashed when an error line with arm "candidate" has code compile_crashed;
 * the GPU is suspect after an error line with "gpu":"faulted" or "hung".
 *
 * Verdicts the daemon writes, when the worker ended without one:
 *   cancelled    a cancel request stopped it (state cancelled)
 *   interrupted  the daemon shut down while it ran, or died (state
 *                interrupted; found at the next start)
 *   fail         the candidate is to blame: the worker exited with status 2
 *                (QUAL_EXIT_FAIL) but no verdict line, or a line it had
 *                already relayed blamed the candidate, which makes the job a
 *                fail by the engine's own precedence (fail > error) whatever
 *                happened next (a job time limit during the candidate's
 *                compile: qual-run, stopped by QUAL_SIGNAL_TIME_LIMIT, names
 *                the arm in a compile_timeout error line first; a cancel or
 *                a shutdown, SIGTERM, blames no one)
 *   error        anything else: a crash (signal), the job time limit, a line
 *                over the limit, the job log size limit (max_log_bytes), a
 *                usage exit (4: always error, even when an error line named
 *                the candidate's arm) or any other exit without a verdict;
 *                the message says which, with the worker's last stderr line.
 *                A crash is not blamed on the candidate: the compilers run
 *                in qual-compile children, so a crash of the worker itself is
 *                the engine's, the driver's or the machine's (we cannot tell
 *                which arm a GPU fault came from). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/child.h"
#include "common/confine.h"
#include "common/exitcode.h"
#include "common/fsutil.h"
#include "common/lifetime.h"
#include "common/text.h"
#include "common/xalloc.h"
#include "daemon/jobs_internal.h"
#include "daemon/relay.h"
#include "proto/remote.h"
#include "daemon/oplog.h"
#include "proto/line.h"
#include "proto/vocab.h"

/* Bytes of a worker's stderr kept for messages (its last lines). */
#define WORKER_STDERR_KEEP 4096
/* After its verdict line, how long a worker may take to exit before it is
 * stopped (SIGTERM, then SIGKILL): a worker stuck in a GPU runtime's teardown
 * must not hold its slot until the job time limit. The verdict stands. Tearing
 * down a CUDA context takes well under a second. */
#define WORKER_AFTER_VERDICT_MS 5000
/* After a worker exits, how long its pipes may stay open (held by something
 * it left behind) before the daemon stops reading them. */
#define WORKER_DRAIN_MS 2000
/* Read buffer per stdout read. */
#define WORKER_READ_CHUNK 65536

/* What a worker's relayed lines said, for its job's end. */
struct worker_lines {
	enum run_verdict verdict;  /* its verdict line's; RUN_VERDICT_UNKNOWN:
				    * none yet */
	bool blames_candidate;     /* a line blamed the candidate */
	bool candidate_crashed;    /* an error line: the candidate's compiler
				    * crashed (code compile_crashed); struck */
	bool gpu_bad;              /* an error line said "gpu":"faulted"|"hung" */
	long long bytes;           /* bytes of its lines in the log */
	long dropped;              /* lines not relayed: after its verdict, or
				    * past the log limit */
	long refused;              /* objects that are not the engine's lines */
	bool verdict_refused;      /* one of them was of type "verdict" */
	bool refused_said;         /* the foreign_line error line is written */
	char refused_why[160];     /* lines_check()'s reason for the first */
};

struct worker {
	struct jobs *j;
	struct job *job;           /* NULL once its job has ended */
	int slot;
	struct child child;
	struct child_watch watch;
	uv_pipe_t out, err;
	uv_timer_t timer;          /* job limit or the grace after the verdict,
				    * then the kill grace, then the drain */
	int handles;               /* open handles */
	enum worker_stop stop;
	bool exited, out_done, err_done;
	struct child_exit ex;      /* once exited */
	struct worker_lines seen;
	struct lines_splitter split;
	struct qual_msg start_error; /* WORKER_STOP_UNSTARTED: why */
	char tmpdir[PATH_MAX];     /* the worker's own $TMPDIR; "" = none */
	char errtail[WORKER_STDERR_KEEP];
	size_t errtail_len;
	char chunk[WORKER_READ_CHUNK];
	char errchunk[WORKER_STDERR_KEEP];
	struct remote_feed rfeed;  /* the Slurm backend: the bridge's status lines */
	json_t *calib_verdict;     /* the Slurm backend: its verdict line's
				    * object, for the calibration record it
				    * may hold, taken once the bridge has said
				    * everything (the node it ran on) */
	bool detached;             /* its Slurm job goes on without it: quald
				    * stopped (its job stays running, to be
				    * followed again at the next start) */
};

static void worker_timer(uv_timer_t *t);

/* A verdict line's calibration record (calibration.c): at once, or in the
 * Slurm backend when the worker concludes, since the record must name the
 * node the job ran on and the bridge may say the node only as it ends. */
static void worker_calib_verdict(struct worker *w, json_t *verdict)
{
	if (!w->j->remote) {
		calib__take_verdict(w->j, w->job, w->slot, verdict);
		return;
	}
	json_decref(w->calib_verdict);
	w->calib_verdict = json_incref(verdict);
}
static void worker_remote_started(struct worker *w);
static void worker_err_text(void *ctx, const char *line, size_t len);

struct job *worker__job(const struct worker *w)
{
	return w->job;
}

static void worker_handle_closed(uv_handle_t *h)
{
	struct worker *w = h->data;
	struct jobs *j = w->j;

	if (--w->handles > 0)
		return;
	/* The worker has exited: what a worker stopped by a signal left in
	 * its $TMPDIR (its compile folders, what a library wrote there) goes
	 * now, off the loop. */
	jobs__remove_later(j, w->tmpdir, false);
	j->slots[w->slot].state = SLOT_IDLE;
	j->slots[w->slot].w = NULL;
	j->nworkers--;
	lines_splitter_release(&w->split);
	json_decref(w->calib_verdict);
	free(w);
	jobs__schedule_soon(j);
	jobs__close_check(j);
}

/* Records why, when it outranks the reason so far (jobs_internal.h). */
static void worker_stop_for(struct worker *w, enum worker_stop why)
{
	if (w->stop == WORKER_RUNNING || why < w->stop)
		w->stop = why;
}

/* Stops it at once: SIGKILL to its session. What it started outside its
 * session it cannot end then: quald adopts and kills that (children.h,
 * Orphans). */
static void worker_kill_for(struct worker *w, enum worker_stop why)
{
	worker_stop_for(w, why);
	if (!w->exited)
		child_kill(&w->child, SIGKILL);
}

/* Asks it to stop: SIGTERM to its session (QUAL_SIGNAL_TIME_LIMIT for the
 * job time limit; qual-run then kills everything below it and exits),
 * SIGKILL JOBS_KILL_GRACE_MS later (the timer). Only
 * the first request signals; a later one may only change the reason. */
static void worker_term_for(struct worker *w, enum worker_stop why)
{
	bool first = w->stop == WORKER_RUNNING;

	worker_stop_for(w, why);
	if (!first || w->exited)
		return;
	child_kill(&w->child, why == WORKER_STOP_TIMEOUT ? QUAL_SIGNAL_TIME_LIMIT : SIGTERM);
	uv_timer_start(&w->timer, worker_timer, JOBS_KILL_GRACE_MS, 0);
}

bool worker__stop(struct worker *w, enum worker_stop why)
{
	if (!w->job)
		return false;
	if (w->exited) {
		/* Its last output is still being read: too late for a cancel,
		 * but a shutdown still records the job interrupted (its lines
		 * may be incomplete). */
		if (why == WORKER_STOP_SHUTDOWN)
			worker_stop_for(w, why);
		return false;
	}
	if (why == WORKER_STOP_SHUTDOWN && w->j->remote && w->stop == WORKER_RUNNING) {
		/* The Slurm backend: its Slurm job goes on, and the next start
		 * follows it again (remote__recover). SIGKILL, which the
		 * bridge cannot take for a cancel. A worker already asked to
		 * stop (a cancel, the time limit: its bridge is cancelling the
		 * Slurm job) is not detached: that ends as it began. */
		w->detached = true;
		worker_kill_for(w, why);
		return true;
	}
	worker_term_for(w, why);
	return true;
}

/* The last non-empty line of the worker's stderr, into out. */
static void worker_stderr_last(const struct worker *w, char *out, size_t cap)
{
	text_last_line(w->errtail, w->errtail_len, out, cap);
}

/* Notes what a relayed line says about blame and the end of the job, from
 * its type, verdict, arm and code. */
static void worker_inspect(struct worker *w, const struct line *l)
{
	const struct lines_info *info = &l->info;

	switch (l->type) {
	case LINES_VERDICT:
		/* lines_check() took only a verdict of the table. */
		w->seen.verdict = l->verdict != RUN_VERDICT_UNKNOWN ? l->verdict : RUN_ERROR;
		break;
	case LINES_ERROR:
		w->seen.gpu_bad |= info->gpu_faulted || info->gpu_hung;
		if (lines_blames_candidate(info)) {
			w->seen.blames_candidate = true;
			/* One strike a job, counted now: the engine's verdict
			 * line may reach the submitter, who may submit again,
			 * before the worker has exited. */
			if (info->code == LINES_CODE_COMPILE_CRASHED &&
			    !w->seen.candidate_crashed) {
				w->seen.candidate_crashed = true;
				quarantine__strike(&w->j->quarantine, w->job->id,
						   &w->job->args);
			}
		}
		break;
	case LINES_CASE_VERDICT:
		if (l->case_verdict == VERDICT_FAIL && lines_blames_candidate(info))
			w->seen.blames_candidate = true;
		break;
	default:
		break;
	}
}

/* Counts a refused line (l: borrowed; why: lines_check()'s). */
static void worker_refuse(struct worker *w, const struct line *l, const struct qual_msg *why)
{
	if (line_is_verdict(l))
		w->seen.verdict_refused = true;
	if (w->seen.refused++ == 0) {
		snprintf(w->seen.refused_why, sizeof w->seen.refused_why, "%.*s",
			 (int)sizeof w->seen.refused_why - 1, why->text);
		oplog_warn("job '%s': refused a worker line that is not the engine's: %s",
			   w->job->id, why->text);
	}
}

/* Writes the foreign_line error line, once, when lines were refused. */
static void worker_say_refused(struct worker *w)
{
	char text[400];
	long n = w->seen.refused;

	if (!n || w->seen.refused_said)
		return;
	w->seen.refused_said = true;
	snprintf(text, sizeof text, "worker printed %ld line%s that %s not the engine's, "
		 "refused%s (the first: %s)", n, n == 1 ? "" : "s", n == 1 ? "is" : "are",
		 w->seen.verdict_refused ? ", among them a verdict line" : "",
		 w->seen.refused_why);
	jobs__put_error(w->j, w->job, LINES_CODE_FOREIGN_LINE, text, true);
}

enum run_verdict jobs__verdict(const struct job *job)
{
	if (job->verdict != RUN_VERDICT_UNKNOWN || !job->w)
		return job->verdict;
	return job->w->seen.verdict;
}

/* Relays one worker line (len bytes, no newline): parsed here once
 * (relay_line), and the struct line goes on to the log and the followers. */
static int worker_relay(void *ctx, const char *line, size_t len)
{
	struct worker *w = ctx;
	struct jobs *j = w->j;
	struct job *job = w->job;
	struct qual_msg m;
	struct line *l;
	json_t *tags;
	int rc;

	/* The Slurm backend: every line of the bridge's counts, relayed or
	 * not (what a re-attach skips), and a line means Slurm runs it. */
	if (j->remote && remote__line_taken(job))
		worker_remote_started(w);
	if (w->seen.verdict != RUN_VERDICT_UNKNOWN || w->stop == WORKER_STOP_LOG_OVER) {
		w->seen.dropped++;
		return 0;
	}
	tags = remote__tags(job);
	rc = relay_line_tagged(line, len, tags, job->id, job->next_seq, &l, &m);
	json_decref(tags);
	if (!l)
		return 0; /* a blank line */
	/* An object of the worker's (not the error line relay_line() made of
	 * a line that is no object) must be one of the engine's lines; after
	 * a refused verdict line no verdict line is taken. */
	if (rc == 0) {
		int bad = lines_check(l->obj, &m);

		if (!bad && w->seen.verdict_refused && line_is_verdict(l))
			bad = qual_fail(&m, QUAL_EINVAL, "a verdict line after a refused one");
		if (bad) {
			worker_refuse(w, l, &m);
			line_unref(l);
			return 0;
		}
		if (line_is_verdict(l) && w->seen.refused && !w->seen.refused_said) {
			/* The foreign_line error line goes before the verdict,
			 * which then takes the next seq: the line parsed
			 * above, with its seq changed (not parsed again). */
			worker_say_refused(w);
			relay_line_reseq(l, job->next_seq);
		}
	}
	if (w->seen.bytes + (long long)l->len + 1 > j->max_log_bytes) {
		/* The line is not logged; the daemon's verdict line follows
		 * (a few hundred bytes past the limit at most). */
		w->seen.dropped++;
		worker_kill_for(w, WORKER_STOP_LOG_OVER);
		line_unref(l);
		return 0;
	}
	w->seen.bytes += (long long)l->len + 1;
	/* A line that was not an object became an error line with code
	 * bad_line and arm null: it blames no one and ends nothing. */
	worker_inspect(w, l);
	if (line_is_verdict(l))
		worker_calib_verdict(w, l->obj);
	if (w->seen.verdict != RUN_VERDICT_UNKNOWN && !w->exited &&
	    w->stop == WORKER_RUNNING) {
		double limit_ms = 1000.0 * j->job_timeout_s;
		uv_timer_start(&w->timer, worker_timer,
			       limit_ms < WORKER_AFTER_VERDICT_MS ? (uint64_t)limit_ms :
			       WORKER_AFTER_VERDICT_MS, 0);
	}
	jobs__put(j, job, l, l->type == LINES_CASE_VERDICT || line_is_verdict(l), true);
	line_unref(l);
	return 0;
}

/* The signal qual-run died of without the daemon sending it, or 0: the
 * worker's own, or in the Slurm backend qual-run's on the node (the
 * bridge exits 128 + N for it; the bridge's own death is not qual-run's). */
static int worker_crash_signal(const struct worker *w)
{
	int status = child_exit_code(&w->ex);

	if (!w->j->remote)
		return w->stop == WORKER_CRASHED ? child_exit_signal(&w->ex) : 0;
	if (w->stop != WORKER_EXITED || child_exit_signal(&w->ex) || status <= 128 ||
	    status >= 128 + 65)
		return 0;
	return status - 128;
}

/* The verdict and message of a job whose worker ended without a verdict
 * line, from why it stopped. */
static enum job_state worker_verdict(const struct worker *w, enum run_verdict *verdict,
				     char *message, size_t cap)
{
	const struct jobs *j = w->j;
	char tail[512], how[64];
	int sig = child_exit_signal(&w->ex), status = child_exit_code(&w->ex);
	bool blame = w->seen.blames_candidate ||
		     (w->exited && !sig && status == QUAL_EXIT_FAIL);

	worker_stderr_last(w, tail, sizeof tail);
	*verdict = blame ? RUN_FAIL : RUN_ERROR;
	switch (w->stop) {
	case WORKER_STOP_UNSTARTED:
		*verdict = RUN_ERROR;
		snprintf(message, cap, "%s", w->start_error.text);
		break;
	case WORKER_STOP_CANCELLED:
		*verdict = RUN_CANCELLED;
		snprintf(message, cap, "cancelled while running");
		return JOB_CANCELLED;
	case WORKER_STOP_SHUTDOWN:
		*verdict = RUN_INTERRUPTED;
		snprintf(message, cap, "the daemon stopped while this job ran");
		return JOB_INTERRUPTED;
	case WORKER_STOP_LINE_OVER:
		snprintf(message, cap, "worker printed a line over %zu bytes", LINES_MAX);
		break;
	case WORKER_STOP_LOG_OVER:
		snprintf(message, cap,
			 "worker stopped: the job log reached its limit of %lld bytes",
			 j->max_log_bytes);
		break;
	case WORKER_STOP_TIMEOUT:
	case WORKER_STOP_AFTER_VERDICT: /* its verdict stands: not read */
		snprintf(message, cap,
			 "worker did not finish within the job time limit of %g s",
			 j->job_timeout_s);
		break;
	case WORKER_CRASHED:
		snprintf(message, cap, "worker crashed: %s%s%s",
			 child_exit_text(&w->ex, how, sizeof how),
			 tail[0] ? "; last stderr line: " : "", tail);
		break;
	case WORKER_RUNNING:
	case WORKER_EXITED:
		if (status == QUAL_EXIT_USAGE) {
			/* Never the candidate's result, even when the engine's
			 * error line names its arm (a library gone missing
			 * since the submit). */
			*verdict = RUN_ERROR;
			snprintf(message, cap, "worker refused the job%s%s",
				 tail[0] ? ": " : "", tail);
		} else if (j->remote && status == REMOTE_EXIT_LOST && tail[0]) {
			/* The Slurm job ended before qual-run did (a node
			 * failure, a node set down, Slurm's time limit, an
			 * admin's scancel): the bridge's words name Slurm's
			 * state and reason. */
			const char *prefix = "qual-slurm: ";
			size_t n = strlen(prefix);

			snprintf(message, cap, "%s", strncmp(tail, prefix, n) ? tail : tail + n);
		} else if (worker_crash_signal(w)) {
			snprintf(message, cap, "qual-run crashed on node %s: signal %d (%s)%s%s",
				 w->job->remote && w->job->remote->node[0] ? w->job->remote->node :
				 "(unknown)", worker_crash_signal(w), strsignal(worker_crash_signal(w)),
				 tail[0] ? "; last stderr line: " : "", tail);
		} else if (w->seen.verdict_refused) {
			snprintf(message, cap, "worker's verdict line was refused: it is "
				 "not the engine's");
		} else {
			snprintf(message, cap,
				 "worker exited with status %d without a verdict%s%s",
				 status, tail[0] ? "; last stderr line: " : "", tail);
		}
		break;
	}
	return JOB_DONE;
}

/* Writes the job's end: its verdict line when the worker left none, its
 * state; closes its log; counts a crash against the candidate and asks for
 * a GPU check where one is due. */
static void worker_conclude(struct worker *w)
{
	struct jobs *j = w->j;
	struct job *job = w->job;
	enum job_state state = JOB_DONE;
	char message[1024];
	enum run_verdict verdict;

	if (!job)
		return;
	if (w->detached && w->seen.verdict == RUN_VERDICT_UNKNOWN) {
		/* Still running in Slurm: no verdict; its state stays running. */
		oplog(LOG_INFO, "job '%s': left running in slurm: followed again at the next "
		      "start", job->id);
		jobs__log_close(j, job);
		job->w = NULL;
		jobs__state_save(j, job);
		w->job = NULL;
		return;
	}
	/* The Slurm backend: a bridge that could not end its Slurm job
	 * (SIGKILLed: a line or the log over its limit, a grace run out; or
	 * refused to follow it again) leaves it running: it is ended here. */
	if (j->remote && job->remote && job->remote->id[0] && w->stop != WORKER_STOP_UNSTARTED &&
	    (child_exit_signal(&w->ex) == SIGKILL ||
	     (job->attach && !child_exit_signal(&w->ex) &&
	      child_exit_code(&w->ex) == REMOTE_EXIT_REFUSED)))
		remote__scancel(j, job, "its bridge ended without ending it");
	if (w->calib_verdict)
		calib__take_verdict(j, job, w->slot, w->calib_verdict);
	if (w->seen.verdict != RUN_VERDICT_UNKNOWN) {
		job->verdict = w->seen.verdict;
		if (w->seen.dropped)
			oplog_warn("job '%s': dropped %ld worker line%s after its verdict",
				   job->id, w->seen.dropped, w->seen.dropped == 1 ? "" : "s");
	} else {
		state = worker_verdict(w, &verdict, message, sizeof message);
		worker_say_refused(w);
		jobs__put_verdict(j, job, verdict, message, true);
	}
	jobs__log_close(j, job);
	/* However a calibration ended (a verdict, a crash, a time limit), the
	 * schedule does not try the slot again within the period. */
	if (job->args.calibrate)
		j->slots[w->slot].calib_tried = time(NULL);
	/* A crash counts against the candidate, once a job: its compiler
	 * child crashed (the engine's error line says so by its code; counted
	 * when the line came), or the worker itself died by a fault signal
	 * (qual_fault_signal: not SIGKILL or SIGTERM from outside) the daemon
	 * did not send (cancel, shutdown, limits). */
	if (!w->seen.candidate_crashed && qual_fault_signal(worker_crash_signal(w)))
		quarantine__strike(&j->quarantine, job->id, &job->args);
	/* The GPU is checked before its next job after a fault or hang the
	 * engine reported, a worker crash, or a time limit (a hang), but not
	 * after a cancel or a shutdown. */
	if (j->slots[w->slot].device >= 0 && w->stop != WORKER_STOP_CANCELLED &&
	    w->stop != WORKER_STOP_SHUTDOWN &&
	    (w->seen.gpu_bad || w->stop == WORKER_STOP_TIMEOUT ||
	     w->stop == WORKER_STOP_AFTER_VERDICT || w->stop == WORKER_CRASHED))
		j->slots[w->slot].needs_check = true;
	job->state = state;
	job->w = NULL;
	jobs__now(job->finished);
	jobs__state_save(j, job);
	jobs__log_ended(j, job);
	w->job = NULL;
}

static void worker_close(struct worker *w)
{
	uv_close((uv_handle_t *)&w->out, worker_handle_closed);
	uv_close((uv_handle_t *)&w->err, worker_handle_closed);
	uv_close((uv_handle_t *)&w->timer, worker_handle_closed);
}

/* The job ends once the worker has exited and both pipes are drained. */
static void worker_maybe_finish(struct worker *w)
{
	size_t rest;

	if (!w->job || !w->exited || !w->out_done || !w->err_done)
		return;
	uv_timer_stop(&w->timer);
	if (w->rfeed.len) /* the bridge's last stderr line, without its newline */
		worker_err_text(w, w->rfeed.line, w->rfeed.len);
	rest = lines_splitter_rest(&w->split);
	/* A detached bridge's unfinished line is not its last: the bridge
	 * that follows the job again writes it whole. */
	if (!w->detached && lines_splitter_finish(&w->split, worker_relay, w) == QUAL_EINVAL) {
		/* A last line without its newline that is no whole object:
		 * the worker died writing it. Not relayed (the one rule,
		 * lines_splitter_finish(), as in qual-run's own relay). */
		char text[160];

		if (w->seen.verdict != RUN_VERDICT_UNKNOWN || w->stop == WORKER_STOP_LOG_OVER) {
			w->seen.dropped++;
		} else {
			snprintf(text, sizeof text, "worker's output was cut off: its last "
				 "line, %zu bytes, has no end", rest);
			jobs__put_error(w->j, w->job, LINES_CODE_CUT_OFF, text, true);
		}
	}
	worker_conclude(w);
	worker_close(w);
}

static void worker_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct worker *w = h->data;

	(void)suggested;
	if (h == (uv_handle_t *)&w->out)
		*buf = uv_buf_init(w->chunk, sizeof w->chunk);
	else
		*buf = uv_buf_init(w->errchunk, sizeof w->errchunk);
}

/* Takes n bytes of stdout: relays its whole lines. A line over LINES_MAX
 * stops the reading and the worker. */
static void worker_take(struct worker *w, const char *data, size_t n)
{
	if (lines_splitter_feed(&w->split, data, n, worker_relay, w) != QUAL_ELIMIT)
		return;
	uv_read_stop((uv_stream_t *)&w->out);
	w->out_done = true;
	worker_kill_for(w, WORKER_STOP_LINE_OVER);
	worker_maybe_finish(w);
}

static void worker_out_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct worker *w = s->data;

	if (nread < 0) {
		uv_read_stop(s);
		w->out_done = true;
		worker_maybe_finish(w);
		return;
	}
	worker_take(w, buf->base, (size_t)nread);
}

/* The Slurm backend: Slurm runs the job (a status line said so, or its
 * first line came): the job's time limit starts, unless the worker is
 * stopping or its verdict's grace runs already. */
static void worker_remote_started(struct worker *w)
{
	if (w->stop == WORKER_RUNNING && !w->exited && w->seen.verdict == RUN_VERDICT_UNKNOWN)
		uv_timer_start(&w->timer, worker_timer, (uint64_t)(w->j->job_timeout_s * 1000.0), 0);
}

/* Keeps the last WORKER_STDERR_KEEP bytes of the worker's stderr. */
static void worker_err_keep(struct worker *w, const char *data, size_t n)
{
	size_t keep;

	if (n >= WORKER_STDERR_KEEP) {
		memcpy(w->errtail, data + n - WORKER_STDERR_KEEP, WORKER_STDERR_KEEP);
		w->errtail_len = WORKER_STDERR_KEEP;
		return;
	}
	keep = w->errtail_len + n > WORKER_STDERR_KEEP ? WORKER_STDERR_KEEP - n :
							  w->errtail_len;
	memmove(w->errtail, w->errtail + w->errtail_len - keep, keep);
	memcpy(w->errtail + keep, data, n);
	w->errtail_len = keep + n;
}

/* A free-text line of the bridge's stderr (the Slurm backend). */
static void worker_err_text(void *ctx, const char *line, size_t len)
{
	worker_err_keep(ctx, line, len);
	worker_err_keep(ctx, "\n", 1);
}

static void worker_err_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct worker *w = s->data;

	if (nread < 0) {
		uv_read_stop(s);
		w->err_done = true;
		worker_maybe_finish(w);
		return;
	}
	if (!w->j->remote) {
		worker_err_keep(w, buf->base, (size_t)nread);
		return;
	}
	/* The Slurm backend: the bridge's status lines, apart from its
	 * messages; the job's time limit starts once Slurm runs it. */
	if (remote__feed(w->j, w->job, &w->rfeed, buf->base, (size_t)nread, worker_err_text, w))
		worker_remote_started(w);
}

/* children.c: the worker has exited and been reaped, and what it left in
 * its session killed. */
static void worker_exit(struct child_watch *cw, const struct child_exit *ex)
{
	struct worker *w = cw->data;

	w->exited = true;
	w->ex = *ex;
	worker_stop_for(w, child_exit_signal(ex) ? WORKER_CRASHED : WORKER_EXITED);
	uv_timer_stop(&w->timer);
	if (!w->out_done || !w->err_done) {
		/* The loop's clock may be as old as the start of a long batch of
		 * events: the drain time counts from now. */
		uv_update_time(w->j->loop);
		uv_timer_start(&w->timer, worker_timer, WORKER_DRAIN_MS, 0);
	}
	worker_maybe_finish(w);
}

/* Reads what is left in the worker's stdout pipe without waiting and relays
 * it. The loop can learn of the exit (SIGCHLD) in the same batch of events
 * as, or before, the last data in its pipe, and a process the worker left
 * outside its session can hold the pipe open past the drain time; the lines
 * already in the pipe must not be lost then (the load benchmark lost whole
 * jobs that way). */
static void worker_drain_out(struct worker *w)
{
	/* Bounded: a process the worker left behind that keeps writing must
	 * not hold the loop here. A pipe holds 64 KiB by default, so this is
	 * everything a worker that has exited can have left. */
	size_t budget = 4 * 1024 * 1024;
	uv_os_fd_t fd;

	if (w->out_done || uv_fileno((uv_handle_t *)&w->out, &fd) != 0)
		return;
	while (!w->out_done && budget > 0) {
		ssize_t n = read(fd, w->chunk, sizeof w->chunk);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		worker_take(w, w->chunk, (size_t)n);
		budget = (size_t)n < budget ? budget - (size_t)n : 0;
	}
}

static void worker_timer(uv_timer_t *t)
{
	struct worker *w = t->data;

	if (w->exited) {
		/* Draining took too long: something it left holds the pipes.
		 * Take what the pipe already holds, then stop. */
		worker_drain_out(w);
		uv_read_stop((uv_stream_t *)&w->out);
		uv_read_stop((uv_stream_t *)&w->err);
		w->out_done = w->err_done = true;
		worker_maybe_finish(w);
		return;
	}
	if (w->stop == WORKER_RUNNING) {
		/* The job's time limit, or the grace after its verdict line
		 * (then the verdict stands). */
		worker_term_for(w, w->seen.verdict != RUN_VERDICT_UNKNOWN ? WORKER_STOP_AFTER_VERDICT :
					WORKER_STOP_TIMEOUT);
		return;
	}
	/* The grace after SIGTERM is over. */
	child_kill(&w->child, SIGKILL);
}

/* A fixture directory is not pinned by its content (docs/quald.md, "Fixture
 * directories"): the worker reads it when it starts. So each is checked
 * against the policy again now, and must still be the directory submit
 * checked (its real path unchanged). Returns 0, or fails naming it. */
static int worker_fixtures_allowed(const struct jobs *j, const struct job *job,
				   struct qual_msg *msg)
{
	char *const *stored = job->args.settings.fixtures;
	struct qual_msg why;
	char **now;
	int rc = 0;

	if (!stored)
		return 0;
	if ((rc = submit__check_fixtures(j, stored, &now, &why)))
		return qual_fail(msg, rc, "not started: %s", why.text);
	for (size_t i = 0; now[i]; i++)
		if (strcmp(now[i], stored[i]) != 0) {
			rc = qual_fail(msg, QUAL_EINVAL, "not started: fixture directory '%s' "
				       "now resolves to '%s', not the directory submit checked",
				       stored[i], now[i]);
			break;
		}
	child_env_free(now);
	return rc;
}

void worker__start(struct jobs *j, struct job *job, int slot)
{
	struct worker *w;
	char **argv, **env;
	char what[PATH_MAX + 32];
	struct qual_msg why;

	/* A fixture directory the policy no longer allows ends the job here,
	 * before any worker reads it, as recovery ends an unpinned one: an
	 * error line saying why, then the verdict (error). The slot stays
	 * free for the next job. */
	if (!job->attach && worker_fixtures_allowed(j, job, &why) < 0) {
		oplog_warn("job '%s': %s: ended with an error", job->id, why.text);
		jobs__put_error(j, job, LINES_CODE_USAGE, why.text, true);
		jobs__end_here(j, job, JOB_DONE, RUN_ERROR, why.text, true);
		jobs__schedule_soon(j);
		return;
	}
	w = xcalloc(1, sizeof *w);
	w->j = j;
	w->job = job;
	w->seen.verdict = RUN_VERDICT_UNKNOWN;
	w->slot = slot;
	j->slots[slot].state = SLOT_RUNNING;
	j->slots[slot].w = w;
	j->nworkers++;
	job->w = w;
	job->state = JOB_RUNNING;
	job->slot = slot;
	job->device = j->slots[slot].device;
	if (!job->attach || !job->started[0])
		jobs__now(job->started);
	job->started_ms = uv_now(j->loop);
	jobs__state_save(j, job);
	jobs__log_started(j, job);

	lines_splitter_init(&w->split, LINES_MAX);
	uv_pipe_init(j->loop, &w->out, 0);
	uv_pipe_init(j->loop, &w->err, 0);
	uv_timer_init(j->loop, &w->timer);
	w->out.data = w->err.data = w->timer.data = w;
	w->handles = 3;

	/* A $TMPDIR of the worker's own, removed once it has exited
	 * (worker_handle_closed): the engine removes its compile folders
	 * itself, but not when a cancel, the time limit or a shutdown stops
	 * it with a signal. Without one, it uses ours. Not in the Slurm
	 * backend: the bridge writes nothing there, and its environment
	 * reaches the node (sbatch exports it), whose qual-run must not work
	 * in a folder of quald's that quald removes when it stops or starts. */
	if (j->remote) {
		w->tmpdir[0] = '\0';
	} else if ((size_t)snprintf(w->tmpdir, sizeof w->tmpdir, "%s/%s%s-XXXXXX", j->scratch,
			     j->scratch_prefix, job->id) >= sizeof w->tmpdir ||
	    !mkdtemp(w->tmpdir)) {
		oplog_warn("job '%s': cannot create a temporary folder in '%s': %s", job->id,
			   j->scratch, strerror(errno));
		w->tmpdir[0] = '\0';
	} else if ((j->compile_user || j->compile_uids) && chmod(w->tmpdir, 0711) < 0) {
		/* Its compile children, of another uid, must pass through to
		 * the folders qual-run gives them there (not list it). */
		oplog_warn("job '%s': cannot open '%s' to the compile user: %s", job->id,
			   w->tmpdir, strerror(errno));
	}
	argv = worker__argv(j, job, slot);
	env = worker__env(j, w->tmpdir);
	child_init(&w->child);
	w->child.in = worker__args_hide(job, &argv);
	w->child.argv = (const char *const *)argv;
	w->child.env = (const char *const *)env;
	w->child.out = CHILD_PIPE;
	w->child.err = CHILD_PIPE;
	/* A session of its own: one signal reaches everything it started. */
	w->child.group = CHILD_SESSION_NEW;
	w->child.die_with_parent = true;
	/* argv[0]: qual-run, or qual-calibrate for a calibration. */
	snprintf(what, sizeof what, "worker '%s'", argv[0]);
	w->child.name = what;
	if (child_start(&w->child, &w->start_error) < 0) {
		w->stop = WORKER_STOP_UNSTARTED;
		w->exited = w->out_done = w->err_done = true;
	}
	w->child.name = NULL; /* what was ours to say, on the stack */
	if (w->child.in >= 0)
		close(w->child.in);
	strv_free_array(argv);
	child_env_free(env);
	if (w->stop == WORKER_STOP_UNSTARTED) {
		/* Its Slurm job, which nothing follows now, goes too. */
		if (job->attach)
			remote__scancel(j, job, "its bridge could not be started");
		worker_conclude(w);
		worker_close(w);
		return;
	}
	w->watch.data = w;
	children_watch(&j->children, &w->watch, &w->child, worker_exit);
	if (uv_pipe_open(&w->out, w->child.out_pipe) < 0) {
		close(w->child.out_pipe);
		w->out_done = true;
	} else {
		uv_read_start((uv_stream_t *)&w->out, worker_alloc, worker_out_read);
	}
	if (uv_pipe_open(&w->err, w->child.err_pipe) < 0) {
		close(w->child.err_pipe);
		w->err_done = true;
	} else {
		uv_read_start((uv_stream_t *)&w->err, worker_alloc, worker_err_read);
	}
	/* In the Slurm backend the limit starts once Slurm runs the job
	 * (worker_err_read); Slurm's own --time backs it. */
	if (!j->remote || (job->remote && job->remote->ran))
		uv_timer_start(&w->timer, worker_timer, (uint64_t)(j->job_timeout_s * 1000.0), 0);
}
