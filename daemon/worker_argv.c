/* A worker's command line and environment (jobs_internal.h): qual-run's
 * options from the job's request (or the bridge's and the node's, in the
 * Slurm backend: remote.c), moved off the command line onto a sealed memfd,
 * and the environment it runs in. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/child.h"
#include "common/confine.h"
#include "common/lifetime.h"
#include "daemon/jobs_internal.h"
#include "daemon/oplog.h"

/* The worker's command line: qual-run's options from the request, then the
 * two paths after "--" (so a path may start with '-'). Options of the arms
 * are passed as --baseline-opt=OPT so that one starting with '-' is never
 * taken for an option of qual-run's. */
void worker__engine_argv(const struct jobs *j, const struct job *job, int slot,
			 const struct submit_args *a, const char *cache, struct strv *argv)
{
	struct qual_settings set;

	calib__worker_prefix(j, job, slot, argv);
	strv_push(argv, j->worker);
	/* The settings as proto/settings.h spells them: the table qual-run
	 * reads them back by. The fixture directories are the real paths
	 * submit checked and worker_fixtures_allowed checked again. */
	set = a->settings; /* lists borrowed: set is never released */
	set.compile_only = false; /* said below, with a compile-only slot's why */
	settings_to_argv(&set, argv);
	/* A compile-only slot says why in the start line when the job did
	 * not ask for it: that job is not timed, and qualctl exits 6. */
	if (a->settings.compile_only)
		strv_push(argv, "--compile-only");
	else if (j->slots[slot].device < 0 && !j->remote)
		strv_pushf(argv, "--compile-only-because=%s", j->no_gpu_because);
	if (j->slots[slot].device >= 0)
		strv_pushf(argv, "--device=%d", j->slots[slot].device);
	/* A user of the slot's own (--compile-users: the range's first is
	 * quald's submit checks'), else the one compile user, if any. */
	if (j->compile_uids)
		strv_pushf(argv, "--compile-user=%u", j->compile_uid_first + 1u + (unsigned)slot);
	else if (j->compile_user)
		strv_pushf(argv, "--compile-user=%s", j->compile_user);
	/* The artifact cache of the state directory, shared by every worker
	 * (run/cache.h: entries appear whole, and each is checked on use). */
	if (cache)
		strv_pushf(argv, "--cache=%s", cache);
	else
		strv_push(argv, "--no-cache");
	/* Each arm's library as submit checked it (docs/quald.md, "Pinned
	 * libraries"): the worker reads that file, not the path again, and
	 * refuses bytes of another hash. Every job that runs has both pins:
	 * submit stores them, and recovery ends a job stored without them
	 * (recover.c) instead of queueing it. */
	if (!a->baseline_sha256 || !a->candidate_sha256 || !a->baseline_real ||
	    !a->candidate_real) {
		oplog(LOG_ERR, "bug: job '%s' reached its worker without pinned "
			"libraries", job->id);
		abort();
	}
	strv_pushf(argv, "--baseline-real-path=%s", a->baseline_real);
	strv_pushf(argv, "--baseline-sha256=%s", a->baseline_sha256);
	strv_pushf(argv, "--candidate-real-path=%s", a->candidate_real);
	strv_pushf(argv, "--candidate-sha256=%s", a->candidate_sha256);
	calib__worker_args(j, job, slot, argv);
	strv_push(argv, "--");
	strv_push(argv, a->baseline);
	strv_push(argv, a->candidate);
}

char **worker__argv(const struct jobs *j, const struct job *job, int slot)
{
	struct strv argv;

	if (j->remote)
		return remote__argv(j, job, slot);
	strv_init(&argv);
	worker__engine_argv(j, job, slot, &job->args, j->cache_dir, &argv);
	return strv_detach(&argv);
}

/* Moves argv[1..] (a job's request: paths, hashes, options) out of the
 * command line, which every process may read (/proc/PID/cmdline), onto a
 * sealed memfd that becomes the worker's stdin (strv_args_memfd): argv is
 * then its program and "--args-fd 0" (qual-run and qual-calibrate read the
 * rest there). Returns the memfd for child.in, or CHILD_NULL when it could
 * not be made: then the worker fails at once, saying so, and never runs
 * with its request in the open. */
int worker__args_hide(const struct job *job, char ***argvp)
{
	char **argv = *argvp;
	struct qual_msg m;
	struct strv shown;
	int fd;

	if (!argv[0] || !argv[1])
		return CHILD_NULL;
	if ((fd = strv_args_memfd((const char *const *)argv, &m)) < 0) {
		oplog_warn("job '%s': %s", job->id, m.text);
		fd = CHILD_NULL;
	}
	strv_init(&shown);
	strv_push(&shown, argv[0]);
	strv_push(&shown, "--args-fd");
	strv_push(&shown, "0");
	strv_free_array(argv);
	*argvp = strv_detach(&shown);
	return fd;
}

/* The worker's environment: ours less what is meant for the daemon alone
 * (systemd's, the compile helper's), plus QUAL_DIE_WITH_PARENT (qual-run
 * then sets PR_SET_PDEATHSIG for its own children too), our compile helper,
 * QUAL_CONFINE (qual-run confines itself: common/confine.h: no core dumps,
 * bounded open files, a network namespace where the kernel allows), and
 * TMPDIR when the worker has a folder of its own. */
char **worker__env(const struct jobs *j, const char *tmpdir)
{
	const char *drop[] = { "QUAL_DIE_WITH_PARENT=", "QUAL_COMPILE=", "LISTEN_FDS=",
			       "LISTEN_PID=", "LISTEN_FDNAMES=", "NOTIFY_SOCKET=",
			       "WATCHDOG_USEC=", "WATCHDOG_PID=", "QUAL_CONFINE=",
			       tmpdir[0] ? "TMPDIR=" : NULL, NULL };
	char die[64], helper[PATH_MAX + 16], tmpenv[PATH_MAX + 16];
	const char *add[] = { die, helper, QUAL_CONFINE_ENV "=1",
			      tmpdir[0] ? tmpenv : NULL, NULL };

	snprintf(die, sizeof die, QUAL_PARENT_ENV "=%ld", (long)getpid());
	snprintf(helper, sizeof helper, "QUAL_COMPILE=%s", j->helper);
	snprintf(tmpenv, sizeof tmpenv, "TMPDIR=%s", tmpdir);
	return child_env_with(drop, add);
}
