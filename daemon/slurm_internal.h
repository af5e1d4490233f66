/* qual-slurm, quald's bridge to Slurm (docs/qual-slurm.md): what its parts
 * share. qual_slurm.c reads the command line and runs one of the two modes;
 * slurm_cli.c runs Slurm's commands and reads their answers;
 * slurm_stage.c fills a job's spool folder; slurm_follow.c follows a
 * submitted job, relaying its lines and status; slurm_node.c is the batch
 * script's side on the node. Nothing outside these files uses it. */
#ifndef QUAL_DAEMON_SLURM_INTERNAL_H
#define QUAL_DAEMON_SLURM_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "proto/remote.h"
#include "proto/strv.h"

/* The command line (qual_slurm.c). Strings are borrowed from argv. */
struct slurm_args {
	const char *spool;      /* --spool, absolute */
	const char *job;        /* --job, a qual job id */
	const char *gpu_type;   /* --gpu-type, or NULL */
	bool no_gpu;            /* --no-gpu */
	const char *partition;  /* --partition, or NULL */
	int time_limit;         /* --time-limit seconds, 0: none */
	struct strv stage;      /* --stage PATH=SHA256, each */
	struct strv stage_dir;  /* --stage-dir PATH=N, each */
	long attach;            /* --attach SLURMID, 0: submit */
	long skip;              /* --skip N */
	const char *node;       /* --node JOBDIR: the node's side */
	bool help;
	char **worker;          /* WORKER-ARGV, NULL-terminated */
};

/* A Slurm command's answer (slurm_cli.c). */
struct slurm_answer {
	int status;  /* its exit status, or 128+N for signal N; -1: not run */
	char *out;   /* its stdout (NUL-terminated, capped) */
	char *err;   /* its stderr (NUL-terminated, capped) */
};

void slurm_answer_release(struct slurm_answer *a);

/* Runs Slurm's command name (found on PATH) with the arguments of args
 * (args[0] is the name) under a deadline of timeout_s seconds, into a.
 * Returns 0 when it ran (whatever its status), or a negative code with msg
 * when it could not be started or did not end in time. */
int slurm_cli_run(const char *const *args, double timeout_s, struct slurm_answer *a,
		  struct qual_msg *msg);

/* While a command of slurm_cli_run() runs: idle(arg) is called every
 * 100 ms (the follower relays lines meanwhile: a command can take seconds
 * while slurmctld is away), and the command is given up (killed; the call
 * fails with QUAL_EKILLED) as soon as stop_fd becomes readable (the
 * signalfd: quald's SIGTERM is not kept waiting) or idle returns true (the
 * exit file is there: Slurm's answer is not needed). stop_fd -1 and idle
 * NULL: neither. */
void slurm_cli_set_wait(int stop_fd, bool (*idle)(void *arg), void *arg);

/* Submits the job's batch script (SPOOL/jobs/ID/job.sh) with sbatch; the
 * id in *slurm_id. Returns 0, or QUAL_EINVAL with msg "sbatch refused the
 * job: <sbatch's stderr>" (final: never retried), or another code. */
int slurm_cli_submit(const struct slurm_args *a, const char *job_dir, long *slurm_id,
		     struct qual_msg *msg);

/* What Slurm says of a job now: 1 with st filled (squeue, or scontrol for
 * a job squeue no longer lists); 0 when Slurm no longer knows the job at
 * all; or a negative code with msg when Slurm did not answer (slurmctld
 * restarting: the caller asks again later). */
int slurm_cli_query(long slurm_id, struct remote_status *st, struct qual_msg *msg);

/* Ends the job (scancel; with sig, only sends it to the batch script's
 * processes: scancel --batch --signal). Tries a few times. Returns 0, or
 * a negative code with msg. */
int slurm_cli_cancel(long slurm_id, int sig, struct qual_msg *msg);

/* Fills the job's spool folder (slurm_stage.c): blobs, fixture copies,
 * pins, argv and the batch script. Returns 0, or a negative code with msg
 * naming what failed (a hash mismatch, a link in a fixture folder). */
int slurm_stage_job(const struct slurm_args *a, const char *job_dir, struct qual_msg *msg);

/* Follows Slurm job slurm_id of the job in job_dir (slurm_follow.c):
 * writes out.jsonl's lines to stdout (less the first skip), status lines
 * to stderr, until the exit file says how qual-run ended or Slurm says the
 * job ended without one; submitted: sbatch took it just now (the first
 * status line is PENDING even when squeue does not answer yet); sigfd is a
 * signalfd for SIGTERM, SIGINT and SIGUSR1. Returns the bridge's exit
 * status; on SIGTERM or SIGINT it cancels the job and ends by that signal
 * instead. */
int slurm_follow(long slurm_id, const char *job_dir, long skip, bool submitted, int sigfd);

/* The node's side (slurm_node.c): checks the pins, runs qual-run, writes
 * the exit file. Returns the exit status. */
int slurm_node_run(const char *job_dir);

/* A signalfd for sigs (blocked first, for the process), close-on-exec;
 * QUAL_EIO with msg when it cannot be made. */
int slurm_signalfd(const int *sigs, size_t n, struct qual_msg *msg);

/* Ends this process by sig's default action (unblocked and reset). */
void slurm_die_by(int sig) __attribute__((noreturn));

#endif
