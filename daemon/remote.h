/* The Slurm backend, quald's side (docs/cluster.md). With --backend slurm
 * each job's worker is the bridge qual-slurm (daemon/qual_slurm.c), which
 * stages the job's pinned libraries and fixture folders in the spool on
 * shared storage, submits one Slurm batch job that runs qual-run on a node
 * with one GPU (of the job's GPU type), and relays qual-run's lines as
 * qual-run would. quald keeps the queue, the store, the relay and its
 * checks, watchers, history and access unchanged: only the worker's command
 * line, what the bridge says of the Slurm job on its stderr (status lines,
 * proto/remote.h), the time limit's start (when Slurm runs the job), a
 * shutdown (the Slurm job goes on) and recovery (re-attach) differ.
 *
 * Internal to daemon/jobs*.c, worker.c and recover.c (jobs_internal.h). */
#ifndef QUAL_DAEMON_REMOTE_H
#define QUAL_DAEMON_REMOTE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "common/err.h"
#include "proto/strv.h"

/* quald --backend slurm's settings (jobs.h's jobs_config.remote). */
struct remote_config {
	const char *bridge;      /* qual-slurm's path */
	const char *spool;       /* the spool on shared storage, absolute */
	const char *partition;   /* sbatch -p, or NULL: Slurm's default */
};

/* What the bridge last said of a job's Slurm job (its status lines): words
 * as Slurm prints them, "" when not said. */
struct remote_job {
	char id[32];             /* Slurm's job id */
	char state[32];          /* PENDING, RUNNING, ..., NODE_FAIL */
	char reason[256];        /* Slurm's Reason ("Resources"), "" for None */
	char node[256];          /* the node it runs on, once known */
	bool ran;                /* it has been RUNNING (the time limit runs) */
	/* Lines of the bridge's stdout quald has taken, relayed or not (a
	 * re-attach's --skip): counted as they come, and saved with each
	 * state save together with the job's next seq then (lines_at). At a
	 * start, the saved count plus the lines stored after that save (lines
	 * quald itself wrote meanwhile are rare: the foreign-line note, just
	 * before a verdict); without a saved count, the lines stored. */
	long lines_read;
	long lines_at;
	bool lines_known;        /* lines_read and lines_at were read back */
};

/* Bytes of a status line kept (a longer stderr line is no status line). */
#define REMOTE_STATUS_MAX 2048

/* A worker's stderr, split into lines to find the bridge's status lines. */
struct remote_feed {
	char line[REMOTE_STATUS_MAX];
	size_t len;
	bool over;               /* the current line passed REMOTE_STATUS_MAX */
};

#endif
