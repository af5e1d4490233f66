/* qual-slurm: Slurm's commands (sbatch, squeue, scontrol, scancel) run as
 * children and their answers read (slurm_internal.h). Slurm's own CLI,
 * never ssh: what it prints is its documented output (-o formats,
 * --parsable, scontrol -o). */
#include "daemon/slurm_internal.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/child.h"
#include "common/fsutil.h"
#include "common/xalloc.h"

/* The most of a command's stdout and stderr kept. */
#define ANSWER_CAP ((size_t)1 << 20)
/* How long Slurm's commands may take: slurmctld answers within its
 * MessageTimeout (10 s by default) or not at all. */
#define QUERY_TIMEOUT_S 30.0
#define SUBMIT_TIMEOUT_S 60.0
/* How often the idle function runs while a command does. */
#define IDLE_MS 100
/* scancel's tries, a second apart. */
#define CANCEL_TRIES 3

/* What Slurm says of a job id it does not know (any more). */
static bool says_unknown(const char *err)
{
	return err && strstr(err, "Invalid job id");
}

void slurm_answer_release(struct slurm_answer *a)
{
	free(a->out);
	free(a->err);
	a->out = a->err = NULL;
	a->status = -1;
}

/* What runs while a command does (slurm_cli_set_wait). */
static int wait_stop_fd = -1;
static bool (*wait_idle)(void *arg);
static void *wait_arg;

void slurm_cli_set_wait(int stop_fd, bool (*idle)(void *arg), void *arg)
{
	wait_stop_fd = stop_fd;
	wait_idle = idle;
	wait_arg = arg;
}

/* Reads the child's stdout into a new buffer (*out) until its end, calling
 * the idle function every IDLE_MS; stops early (QUAL_EKILLED) when the stop
 * descriptor becomes readable or the idle function says so, or at the
 * deadline (QUAL_ETIMEOUT). */
static int read_out(int fd, double deadline, char **out)
{
	size_t kept = 0, cap = 4096;
	char *buf = xmalloc(cap + 1), sink[4096];
	int rc = 0;

	for (;;) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
				       { .fd = wait_stop_fd, .events = POLLIN } };
		ssize_t n;
		int ready;

		if (child_now() >= deadline) {
			rc = QUAL_ETIMEOUT;
			break;
		}
		ready = poll(p, wait_stop_fd >= 0 ? 2 : 1, IDLE_MS);
		if (wait_idle && wait_idle(wait_arg)) {
			rc = QUAL_EKILLED;
			break;
		}
		if (ready < 0 && errno != EINTR) {
			rc = QUAL_EIO;
			break;
		}
		if (ready <= 0)
			continue;
		if (wait_stop_fd >= 0 && p[1].revents) {
			rc = QUAL_EKILLED;
			break;
		}
		if (kept == cap && cap < ANSWER_CAP) {
			cap *= 2;
			buf = xrealloc(buf, cap + 1);
		}
		n = kept < cap ? read(fd, buf + kept, cap - kept) : read(fd, sink, sizeof sink);
		if (n == 0)
			break;
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			rc = QUAL_EIO;
			break;
		}
		if (kept < cap)
			kept += (size_t)n;
	}
	buf[kept] = '\0';
	*out = buf;
	return rc;
}

/* Reads the child's stdout, waits for it, then reads its stderr (a memfd,
 * so that neither stream can block the child while the other is read). */
static int collect(struct child *c, int errfd, double deadline, struct slurm_answer *a,
		   struct qual_msg *msg)
{
	struct child_exit ex;
	size_t len;
	int rc;

	rc = read_out(c->out_pipe, deadline, &a->out);
	close(c->out_pipe);
	c->out_pipe = -1;
	if (rc < 0)
		child_kill(c, SIGKILL);
	if (child_wait(c, rc < 0 ? child_now() : deadline, &ex) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot wait for '%s'", c->argv[0]);
	if (rc == QUAL_EKILLED)
		return qual_fail(msg, rc, "'%s' given up: a signal came, or the job ended",
				 c->argv[0]);
	if (ex.timed_out || rc == QUAL_ETIMEOUT)
		return qual_fail(msg, QUAL_ETIMEOUT, "'%s' did not answer in time", c->argv[0]);
	if (rc < 0)
		return qual_fail(msg, rc, "cannot read what '%s' wrote", c->argv[0]);
	a->status = child_exit_signal(&ex) ? 128 + child_exit_signal(&ex) : child_exit_code(&ex);
	if (lseek(errfd, 0, SEEK_SET) < 0 ||
	    child_read_capped(errfd, ANSWER_CAP, 0, &a->err, &len, NULL) < 0)
		a->err = xstrdup("");
	return 0;
}

int slurm_cli_run(const char *const *args, double timeout_s, struct slurm_answer *a,
		  struct qual_msg *msg)
{
	struct strv argv;
	struct child c;
	char *path;
	int errfd, rc, i;

	a->status = -1;
	a->out = a->err = NULL;
	if (!(path = fs_find_on_path(args[0])))
		return qual_fail(msg, QUAL_ENOENT, "'%s' is not on PATH", args[0]);
	strv_init(&argv);
	strv_push(&argv, path);
	for (i = 1; args[i]; i++)
		strv_push(&argv, args[i]);
	free(path);
	errfd = memfd_create("slurm-stderr", MFD_CLOEXEC);
	if (errfd < 0) {
		strv_release(&argv);
		return qual_fail(msg, QUAL_EIO, "cannot make a memfd for '%s'", args[0]);
	}
	child_init(&c);
	c.argv = (const char *const *)argv.v;
	c.out = CHILD_PIPE;
	c.err = errfd;
	c.die_with_parent = true;
	rc = child_start(&c, msg);
	if (rc == 0)
		rc = collect(&c, errfd, child_now() + timeout_s, a, msg);
	close(errfd);
	strv_release(&argv);
	if (rc < 0)
		slurm_answer_release(a);
	return rc;
}

/* s's lines, empty ones dropped, joined with "; " into msg's text. */
static void join_lines(const char *s, char *out, size_t cap)
{
	size_t n = 0;

	out[0] = '\0';
	while (*s && n + 1 < cap) {
		size_t len = strcspn(s, "\n");

		if (len) {
			int w = snprintf(out + n, cap - n, "%s%.*s", n ? "; " : "", (int)len, s);
			if (w < 0)
				break;
			n += (size_t)w < cap - n ? (size_t)w : cap - n - 1;
		}
		s += len;
		if (*s)
			s++;
	}
}

int slurm_cli_submit(const struct slurm_args *a, const char *job_dir, long *slurm_id,
		     struct qual_msg *msg)
{
	struct slurm_answer ans;
	struct strv args;
	char said[800], *end;
	int rc;

	strv_init(&args);
	strv_push(&args, "sbatch");
	strv_push(&args, "--parsable");
	strv_pushf(&args, "--job-name=qual-%s", a->job);
	strv_pushf(&args, "--chdir=%s", job_dir);
	strv_pushf(&args, "--output=%s/%s", job_dir, REMOTE_FILE_NODE_LOG);
	/* A job that lost its node is a verdict (an error naming Slurm's
	 * reason), never run again behind quald's back over the same
	 * out.jsonl. */
	strv_push(&args, "--no-requeue");
	if (a->gpu_type)
		strv_pushf(&args, "--gres=gpu:%s:1", a->gpu_type);
	else if (!a->no_gpu)
		strv_push(&args, "--gres=gpu:1");
	if (a->partition)
		strv_pushf(&args, "--partition=%s", a->partition);
	if (a->time_limit > 0)
		strv_pushf(&args, "--time=%d", (a->time_limit + 59) / 60 + 1);
	strv_pushf(&args, "%s/%s", job_dir, REMOTE_FILE_SCRIPT);
	rc = slurm_cli_run((const char *const *)args.v, SUBMIT_TIMEOUT_S, &ans, msg);
	strv_release(&args);
	if (rc < 0)
		return rc;
	if (ans.status != 0) {
		join_lines(ans.err, said, sizeof said);
		rc = qual_fail(msg, QUAL_EINVAL, "sbatch refused the job: %s",
			       *said ? said : "no message, exit status nonzero");
	} else {
		*slurm_id = strtol(ans.out, &end, 10);
		if (end == ans.out || *slurm_id <= 0 || (*end && *end != ';' && *end != '\n'))
			rc = qual_fail(msg, QUAL_EIO, "sbatch answered '%.100s', not a job id",
				       ans.out);
	}
	slurm_answer_release(&ans);
	return rc;
}

/* The value of KEY in scontrol's one-line record ("... KEY=value ..."),
 * into out (cap bytes); "" when it is not there. */
static void record_value(const char *rec, const char *key, char *out, size_t cap)
{
	size_t klen = strlen(key);
	const char *p = rec;

	out[0] = '\0';
	while ((p = strstr(p, key))) {
		if ((p == rec || p[-1] == ' ') && p[klen] == '=') {
			p += klen + 1;
			snprintf(out, cap, "%.*s", (int)strcspn(p, " \n"), p);
			return;
		}
		p += klen;
	}
}

/* scontrol show job -o ID: 1 with st, 0 for a job Slurm no longer knows. */
static int query_scontrol(long slurm_id, struct remote_status *st, struct qual_msg *msg)
{
	char id[32], state[64], reason[REMOTE_FIELD_MAX], node[REMOTE_FIELD_MAX];
	const char *args[] = { "scontrol", "show", "job", "-o", id, NULL };
	struct slurm_answer ans;
	int rc;

	snprintf(id, sizeof id, "%ld", slurm_id);
	if ((rc = slurm_cli_run(args, QUERY_TIMEOUT_S, &ans, msg)) < 0)
		return rc;
	if (ans.status != 0 || !strstr(ans.out, "JobState=")) {
		rc = says_unknown(ans.err) ? 0 :
		     qual_fail(msg, QUAL_EIO, "scontrol did not answer: %.300s", ans.err);
		slurm_answer_release(&ans);
		return rc;
	}
	record_value(ans.out, "JobState", state, sizeof state);
	record_value(ans.out, "Reason", reason, sizeof reason);
	record_value(ans.out, "NodeList", node, sizeof node);
	if (!node[0] || !strcmp(node, "(null)"))
		record_value(ans.out, "BatchHost", node, sizeof node);
	remote_status_set(st, "slurm", id, state, reason, node);
	slurm_answer_release(&ans);
	return 1;
}

int slurm_cli_query(long slurm_id, struct remote_status *st, struct qual_msg *msg)
{
	char id[32], line[1024], *bar1, *bar2;
	const char *args[] = { "squeue", "-h", "-j", id, "-o", "%T|%r|%N", NULL };
	struct slurm_answer ans;
	int rc;

	snprintf(id, sizeof id, "%ld", slurm_id);
	if ((rc = slurm_cli_run(args, QUERY_TIMEOUT_S, &ans, msg)) < 0)
		return rc;
	if (ans.status != 0 && !says_unknown(ans.err)) {
		rc = qual_fail(msg, QUAL_EIO, "squeue did not answer: %.300s", ans.err);
		slurm_answer_release(&ans);
		return rc;
	}
	snprintf(line, sizeof line, "%.*s", (int)strcspn(ans.out ? ans.out : "", "\n"),
		 ans.out ? ans.out : "");
	slurm_answer_release(&ans);
	bar1 = strchr(line, '|');
	bar2 = strrchr(line, '|');
	if (!bar1 || bar1 == bar2)
		return query_scontrol(slurm_id, st, msg);
	*bar1 = *bar2 = '\0';
	remote_status_set(st, "slurm", id, line, bar1 + 1, bar2 + 1);
	if (remote_state_phase(st->state) == REMOTE_PHASE_ENDED) {
		/* scontrol has the end's own reason and node. */
		struct remote_status full;

		if (query_scontrol(slurm_id, &full, NULL) == 1)
			*st = full;
	}
	return 1;
}

int slurm_cli_cancel(long slurm_id, int sig, struct qual_msg *msg)
{
	char id[32], signal_opt[32];
	const char *args[6];
	struct slurm_answer ans;
	int tries, rc = 0, n = 0;

	snprintf(id, sizeof id, "%ld", slurm_id);
	args[n++] = "scancel";
	if (sig) {
		snprintf(signal_opt, sizeof signal_opt, "--signal=%d", sig);
		args[n++] = "--batch";
		args[n++] = signal_opt;
	}
	args[n++] = id;
	args[n] = NULL;
	for (tries = 0; tries < CANCEL_TRIES; tries++) {
		if (tries)
			sleep(1);
		if ((rc = slurm_cli_run(args, QUERY_TIMEOUT_S, &ans, msg)) < 0)
			continue;
		if (ans.status == 0 || says_unknown(ans.err) ||
		    strstr(ans.err, "already completing or completed")) {
			slurm_answer_release(&ans);
			return 0;
		}
		rc = qual_fail(msg, QUAL_EIO, "scancel %s failed: %.300s", id, ans.err);
		slurm_answer_release(&ans);
	}
	return rc;
}
