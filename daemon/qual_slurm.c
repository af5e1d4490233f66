/* qual-slurm: quald's bridge to Slurm (docs/qual-slurm.md). In the Slurm
 * backend, the worker quald starts for a job is this program: it stages the
 * job's pinned files in the spool, submits a batch job that runs this same
 * program on a node (--node), and relays the node's lines and Slurm's view
 * of the job until qual-run's exit status comes back (slurm_internal.h). */
#include "daemon/slurm_internal.h"

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/lifetime.h"
#include "common/opts.h"
#include "common/text.h"

#define AT(f) .off = offsetof(struct slurm_args, f)

static int take_stage(void *ctx, const char *arg, struct qual_msg *msg)
{
	(void)msg;
	strv_push(&((struct slurm_args *)ctx)->stage, arg);
	return 0;
}

static int take_stage_dir(void *ctx, const char *arg, struct qual_msg *msg)
{
	(void)msg;
	strv_push(&((struct slurm_args *)ctx)->stage_dir, arg);
	return 0;
}

static int take_attach(void *ctx, const char *arg, struct qual_msg *msg)
{
	return text_parse_long("--attach", arg, 1, 999999999999L,
			       &((struct slurm_args *)ctx)->attach, msg);
}

static int take_skip(void *ctx, const char *arg, struct qual_msg *msg)
{
	return text_parse_long("--skip", arg, 0, LONG_MAX, &((struct slurm_args *)ctx)->skip,
			       msg);
}

static int take_args_fd(void *ctx, const char *arg, struct qual_msg *msg)
{
	(void)ctx;
	(void)arg;
	return qual_fail(msg, QUAL_EINVAL, "--args-fd N takes no other argument: the command "
			 "line is on descriptor N");
}

static const struct opts_entry options[] = {
	{"spool", "DIR", OPTS_STRING, AT(spool), .help =
		"the spool on shared storage (absolute; the same path on\n"
		"every node)"},
	{"job", "ID", OPTS_STRING, AT(job), .help =
		"the qual job id; the Slurm job is named qual-ID"},
	{"gpu-type", "TYPE", OPTS_STRING, AT(gpu_type), .help =
		"one GPU of this GRES type (--gres=gpu:TYPE:1; without it\n"
		"--gres=gpu:1)"},
	{"no-gpu", NULL, OPTS_FLAG, AT(no_gpu), .help =
		"no GPU at all (a compile-only job)"},
	{"partition", "NAME", OPTS_STRING, AT(partition), .help =
		"the Slurm partition"},
	{"time-limit", "SECONDS", OPTS_INT, AT(time_limit), .lo = 1, .hi = 100000000,
	 .help = "Slurm's time limit: a minute more than this, rounded up"},
	{"stage", "PATH=SHA256", OPTS_CALL, .fn = take_stage, .help =
		"copy the pinned library PATH to SPOOL/blobs/SHA256, checking\n"
		"its hash (repeatable)"},
	{"stage-dir", "PATH=N", OPTS_CALL, .fn = take_stage_dir, .help =
		"copy the fixture folder PATH to the job's fixtures/N\n"
		"(repeatable)"},
	{"attach", "SLURMID", OPTS_CALL, .fn = take_attach, .help =
		"follow the job's Slurm job SLURMID, submitted before"},
	{"skip", "N", OPTS_CALL, .fn = take_skip, .help =
		"with --attach: the first N lines were relayed already"},
	{"node", "JOBDIR", OPTS_STRING, AT(node), .help =
		"the batch script's side: check the pins, run qual-run"},
	{"args-fd", "N", OPTS_CALL, .fn = take_args_fd, .help =
		"read the whole command line from descriptor N, each\n"
		"argument ending in a NUL (alone)"},
	{"help", NULL, OPTS_FLAG, AT(help), .stop = true, .letter = 'h'},
};
#define NOPTIONS (sizeof options / sizeof options[0])

static void usage(FILE *f)
{
	fprintf(f, "usage: qual-slurm --spool DIR --job ID [options] -- QUAL-RUN-ARGV...\n"
		"       qual-slurm --spool DIR --job ID --attach SLURMID [--skip N]\n"
		"       qual-slurm --node JOBDIR\n"
		"\n"
		"quald's bridge to Slurm: stages a job's pinned files in the spool, submits\n"
		"it with sbatch, relays its JSON lines to stdout and Slurm's view of it to\n"
		"stderr (\"" REMOTE_STATUS_PREFIX "{...}\" lines), and exits with qual-run's\n"
		"status.\n\n");
	opts_help(f, options, NOPTIONS, 23);
	fprintf(f, "\nexit status: qual-run's own (128+N when signal N ended it); 4 refused\n"
		"(usage, staging, sbatch, a pin on the node); 70 the Slurm job ended before\n"
		"qual-run did\n");
}

int slurm_signalfd(const int *sigs, size_t n, struct qual_msg *msg)
{
	sigset_t set;
	size_t i;
	int fd;

	sigemptyset(&set);
	for (i = 0; i < n; i++)
		sigaddset(&set, sigs[i]);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 ||
	    (fd = signalfd(-1, &set, SFD_CLOEXEC)) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot make a signalfd");
	return fd;
}

void slurm_die_by(int sig)
{
	sigset_t set;

	fflush(NULL);
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	raise(sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	_exit(128 + sig);
}

static int check_args(struct slurm_args *a, struct qual_msg *msg)
{
	if (!a->spool || a->spool[0] != '/')
		return qual_fail(msg, QUAL_EINVAL, "--spool DIR is required, an absolute path");
	if (!a->job)
		return qual_fail(msg, QUAL_EINVAL, "--job ID is required");
	if (a->gpu_type && a->no_gpu)
		return qual_fail(msg, QUAL_EINVAL, "--gpu-type and --no-gpu exclude each other");
	if (a->skip && !a->attach)
		return qual_fail(msg, QUAL_EINVAL, "--skip goes with --attach only");
	if (!a->attach && !a->worker[0])
		return qual_fail(msg, QUAL_EINVAL, "no QUAL-RUN-ARGV after '--'");
	if (a->attach && a->worker[0])
		return qual_fail(msg, QUAL_EINVAL, "--attach takes no QUAL-RUN-ARGV");
	return 0;
}

/* --attach: the job's folder must be there, and its own record of the
 * Slurm id, where it has one (quald may have found the job by its name),
 * must agree. */
static int check_attach(const struct slurm_args *a, const char *job_dir,
			struct qual_msg *msg)
{
	long recorded;
	int rc;

	if (access(job_dir, F_OK) < 0)
		return qual_fail(msg, QUAL_ENOENT, "job '%s' has no spool folder '%s'", a->job,
				 job_dir);
	rc = remote_slurm_id_read(a->spool, a->job, &recorded, msg);

	if (rc == QUAL_ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	if (recorded != a->attach)
		return qual_fail(msg, QUAL_EINVAL, "job '%s' was submitted as slurm job %ld, "
				 "not %ld", a->job, recorded, a->attach);
	return 0;
}

/* Stages, submits and records the Slurm id; *slurm_id gets it. */
static int submit(const struct slurm_args *a, const char *job_dir, long *slurm_id,
		  struct qual_msg *msg)
{
	char path[PATH_MAX], text[32];
	int rc, len;

	if ((rc = slurm_stage_job(a, job_dir, msg)) ||
	    (rc = slurm_cli_submit(a, job_dir, slurm_id, msg)))
		return rc;
	len = snprintf(text, sizeof text, "%ld\n", *slurm_id);
	if ((rc = fs_path_join(path, sizeof path, job_dir, REMOTE_FILE_SLURM_ID, msg)) ||
	    (rc = fs_write_atomic(path, text, (size_t)len, 0644, NULL, msg))) {
		/* Not followed where it cannot be found again: ended. */
		slurm_cli_cancel(*slurm_id, 0, NULL);
		return rc;
	}
	return 0;
}

/* The bridge's own run (not --node): returns its exit status. */
static int bridge(struct slurm_args *a)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGUSR1 };
	char job_dir[PATH_MAX];
	struct qual_msg m;
	long slurm_id = a->attach;
	int sigfd, status;

	/* A worker of quald dies with the daemon (SIGKILL, as its shutdown:
	 * the Slurm job goes on, for the next quald to attach to). */
	if (!qual_die_with_parent()) {
		qual_fail(&m, QUAL_EIO, "the parent that started us is gone");
		goto refused;
	}
	if (check_args(a, &m) || remote_job_path(job_dir, sizeof job_dir, a->spool, a->job,
						NULL, &m) ||
	    (sigfd = slurm_signalfd(sigs, sizeof sigs / sizeof sigs[0], &m)) < 0)
		goto refused;
	if (a->attach ? check_attach(a, job_dir, &m) : submit(a, job_dir, &slurm_id, &m))
		goto refused;
	status = slurm_follow(slurm_id, job_dir, a->skip, !a->attach, sigfd);
	close(sigfd);
	return status;
refused:
	fprintf(stderr, "qual-slurm: %s\n", m.text);
	return REMOTE_EXIT_REFUSED;
}

int main(int argc, char **argv)
{
	struct slurm_args a = { 0 };
	struct qual_msg m;
	struct strv from_fd;
	int first, status;

	strv_init(&from_fd);
	strv_init(&a.stage);
	strv_init(&a.stage_dir);
	if (strv_args_from_fd(&argc, &argv, &from_fd, &m) < 0) {
		fprintf(stderr, "qual-slurm: %s\n", m.text);
		return REMOTE_EXIT_REFUSED;
	}
	first = opts_parse(options, NOPTIONS, argc, argv, &a, &m);
	if (first < 0) {
		fprintf(stderr, "qual-slurm: %s\n", m.text);
		status = REMOTE_EXIT_REFUSED;
	} else if (a.help) {
		usage(stdout);
		status = 0;
	} else if (a.node) {
		status = slurm_node_run(a.node);
	} else {
		a.worker = argv + first;
		status = bridge(&a);
	}
	strv_release(&a.stage);
	strv_release(&a.stage_dir);
	strv_release(&from_fd);
	return status;
}
