/* qual-slurm --node JOBDIR: the batch script's side, on the node
 * (slurm_internal.h). Every pinned file is checked against its SHA-256
 * before qual-run starts; qual-run runs with its stdout and stderr in the
 * job's folder, a node-local TMPDIR of its own (removed after) and
 * QUAL_DIE_WITH_PARENT naming us, so that it dies with us; SIGTERM, SIGINT
 * and SIGUSR1 (Slurm's cancel, quald's time limit) go on to it; how it ended
 * goes to the exit file, tmp+rename. */
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
#include "common/lifetime.h"
#include "common/sha256.h"

/* The most bytes of pins read (a job pins a few libraries and fixture
 * files: far less). */
#define PINS_MAX ((size_t)16 << 20)

static int write_exit(const char *job_dir, const struct remote_exit *e)
{
	char path[PATH_MAX], text[sizeof e->message + 32];
	struct qual_msg m;
	int len = remote_exit_format(e, text, sizeof text);

	if (len < 0 || fs_path_join(path, sizeof path, job_dir, REMOTE_FILE_EXIT, &m) < 0 ||
	    fs_write_atomic(path, text, (size_t)len, 0644, NULL, &m) < 0) {
		fprintf(stderr, "qual-slurm: cannot write the exit file: %s\n",
			len < 0 ? "too long" : m.text);
		return QUAL_EIO;
	}
	return 0;
}

/* Refuses the job: the exit file says why (what, then why, cut to fit),
 * and so does our stderr. */
static int refuse(const char *job_dir, const char *what, const char *why)
{
	struct remote_exit e = { .end = REMOTE_END_REFUSED };
	size_t n = strnlen(what, sizeof e.message - 1), k;

	memcpy(e.message, what, n);
	k = strnlen(why, sizeof e.message - 1 - n);
	memcpy(e.message + n, why, k);
	e.message[n + k] = '\0';
	fprintf(stderr, "qual-slurm: %s%s\n", what, why);
	write_exit(job_dir, &e);
	return REMOTE_EXIT_REFUSED;
}

/* Each pins line "<sha256> <path>": the file must hash to it. */
static int check_pins(const char *job_dir, struct qual_msg *msg)
{
	char path[PATH_MAX], hex[SHA256_HEX_SIZE], *text, *line, *next;
	size_t size;
	int rc;

	if ((rc = fs_path_join(path, sizeof path, job_dir, REMOTE_FILE_PINS, msg)) ||
	    (rc = fs_read_capped(path, PINS_MAX, &text, &size, msg)))
		return rc;
	for (line = text; rc == 0 && *line; line = next) {
		char *sp, *nl = strchr(line, '\n');

		next = nl ? nl + 1 : line + strlen(line);
		if (nl)
			*nl = '\0';
		if (!*line)
			continue;
		sp = strchr(line, ' ');
		if (!sp || sp - line != 64) {
			rc = qual_fail(msg, QUAL_EINVAL, "pins line '%.200s' is not "
				       "'<sha256> <path>'", line);
			break;
		}
		*sp = '\0';
		if ((rc = sha256_hash_file(sp + 1, hex, msg)) < 0)
			break;
		if (strcmp(hex, line))
			rc = qual_fail(msg, QUAL_EINVAL, "pinned file '%s' has SHA-256 %s, not "
				       "the pinned %s", sp + 1, hex, line);
	}
	free(text);
	return rc;
}

/* Opens JOBDIR/name for appending (created 0644). */
static int open_out(const char *job_dir, const char *name, struct qual_msg *msg)
{
	char path[PATH_MAX];
	int fd, e;

	if (fs_path_join(path, sizeof path, job_dir, name, msg) < 0)
		return QUAL_EINVAL;
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		e = errno;
		return qual_fail(msg, QUAL_EIO, "cannot open '%s': %s", path, strerror(e));
	}
	return fd;
}

/* Waits for qual-run, passing on the signals sigfd gives. */
static void wait_run(struct child *c, int sigfd, struct child_exit *ex)
{
	while (!child_exited(c)) {
		struct pollfd p = { .fd = sigfd, .events = POLLIN };
		struct signalfd_siginfo si;

		if (poll(&p, 1, 1000) > 0 && read(sigfd, &si, sizeof si) == (ssize_t)sizeof si &&
		    si.ssi_signo != SIGCHLD)
			child_kill(c, (int)si.ssi_signo);
	}
	child_reap(c, ex);
}

/* Runs argv with the job's outputs, TMPDIR tmp and us as its parent to die
 * with; how it ended into e. */
static int run_worker(const char *job_dir, char **argv, const char *tmp, int sigfd,
		      struct remote_exit *e, struct qual_msg *msg)
{
	char tmpdir[PATH_MAX + 8], parent[64];
	const char *const drop[] = { "TMPDIR=", QUAL_PARENT_ENV "=", NULL };
	const char *const add[] = { tmpdir, parent, NULL };
	struct child_exit ex;
	struct child c;
	char **env;
	int out = -1, err = -1, rc;

	snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", tmp);
	snprintf(parent, sizeof parent, "%s=%ld", QUAL_PARENT_ENV, (long)getpid());
	if ((out = rc = open_out(job_dir, REMOTE_FILE_OUT, msg)) < 0 ||
	    (err = rc = open_out(job_dir, REMOTE_FILE_ERR, msg)) < 0)
		goto close_out;
	env = child_env_with(drop, add);
	child_init(&c);
	c.argv = (const char *const *)argv;
	c.env = (const char *const *)env;
	c.out = out;
	c.err = err;
	c.group = CHILD_GROUP_NEW;
	c.die_with_parent = true;
	c.name = "qual-run";
	rc = child_start(&c, msg);
	child_env_free(env);
	if (rc < 0)
		goto close_out;
	wait_run(&c, sigfd, &ex);
	/* On disk before the exit file says it ended. */
	fsync(out);
	fsync(err);
	e->end = child_exit_signal(&ex) ? REMOTE_END_SIGNAL : REMOTE_END_STATUS;
	e->value = child_exit_signal(&ex) ? child_exit_signal(&ex) : child_exit_code(&ex);
close_out:
	if (out >= 0)
		close(out);
	if (err >= 0)
		close(err);
	return rc < 0 ? rc : 0;
}

/* argv's REMOTE_NODE_KEY places (proto/remote.h) filled in with this
 * node's and GPU's key: a calibration's --device-key, a qualification's
 * latest record in the spool (SPOOL, two folders above job_dir). */
static int node_calibration(const char *job_dir, struct strv *argv, struct qual_msg *msg)
{
	char host[256] = "", key[REMOTE_FIELD_MAX + 16], path[PATH_MAX], spool[PATH_MAX];
	const char *node = getenv("SLURMD_NODENAME"), *gpus = getenv("SLURM_JOB_GPUS");
	char *slash;
	size_t i;
	int rc;

	/* Only a command line that has a place for the key needs one. */
	for (i = 0; i < argv->n; i++)
		if (!strcmp(argv->v[i], "--device-key=" REMOTE_NODE_KEY) ||
		    !strcmp(argv->v[i], "--calibration=" REMOTE_NODE_KEY))
			break;
	if (i == argv->n)
		return 0;
	if (!node || !*node) {
		gethostname(host, sizeof host - 1);
		node = host;
	}
	if ((rc = remote_device_key(node, gpus, key, sizeof key, msg)) < 0)
		return rc;
	snprintf(spool, sizeof spool, "%s", job_dir);
	for (int up = 0; up < 2 && (slash = strrchr(spool, '/')) && slash != spool; up++)
		*slash = '\0';
	if ((size_t)snprintf(path, sizeof path, "%.*s/%s/%s.json", PATH_MAX / 2, spool,
			     REMOTE_SPOOL_CALIBRATION, key) >= sizeof path)
		return qual_fail(msg, QUAL_EINVAL, "the spool's path is too long");
	for (i = 0; i < argv->n; i++) {
		char *now = NULL;

		if (!strcmp(argv->v[i], "--device-key=" REMOTE_NODE_KEY))
			rc = asprintf(&now, "--device-key=%s", key);
		else if (strcmp(argv->v[i], "--calibration=" REMOTE_NODE_KEY) != 0)
			continue;
		else if (!gpus || !*gpus)
			rc = asprintf(&now, "--no-calibration-because=the job had no GPU of its "
				      "own on node %s", node);
		else if (access(path, R_OK) == 0)
			rc = asprintf(&now, "--calibration=%s", path);
		else
			rc = asprintf(&now, "--no-calibration-because=no calibration of %s (node %s, "
				      "gpu %s) in the spool yet", key, node, gpus);
		if (rc < 0)
			abort();
		free(argv->v[i]);
		argv->v[i] = now;
	}
	return 0;
}

/* The argv file's strings (at least one). */
static int read_argv(const char *job_dir, struct strv *argv, struct qual_msg *msg)
{
	char path[PATH_MAX], *data;
	size_t size;
	int rc;

	if ((rc = fs_path_join(path, sizeof path, job_dir, REMOTE_FILE_ARGV, msg)) ||
	    (rc = fs_read_capped(path, STRV_NUL_MAX, &data, &size, msg)))
		return rc;
	strv_push_nul(argv, data, size);
	free(data);
	if (argv->n == 0 || argv->v[0][0] != '/')
		return qual_fail(msg, QUAL_EINVAL, "'%s' does not start with an absolute "
				 "program path", path);
	return 0;
}

int slurm_node_run(const char *job_dir)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGUSR1, SIGCHLD };
	struct remote_exit e = { .end = REMOTE_END_STATUS };
	char tmp[PATH_MAX];
	const char *base = getenv("TMPDIR");
	struct qual_msg m;
	struct strv argv;
	int sigfd, rc;

	if (check_pins(job_dir, &m) < 0)
		return refuse(job_dir, "pin check failed: ", m.text);
	strv_init(&argv);
	if (read_argv(job_dir, &argv, &m) < 0 || node_calibration(job_dir, &argv, &m) < 0) {
		strv_release(&argv);
		return refuse(job_dir, "", m.text);
	}
	snprintf(tmp, sizeof tmp, "%s/qual-node-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmp)) {
		qual_fail(&m, QUAL_EIO, "cannot make a folder like '%s': %s", tmp,
			  strerror(errno));
		strv_release(&argv);
		return refuse(job_dir, "", m.text);
	}
	if ((sigfd = slurm_signalfd(sigs, sizeof sigs / sizeof sigs[0], &m)) < 0 ||
	    run_worker(job_dir, argv.v, tmp, sigfd, &e, &m) < 0) {
		fs_rm_tree(tmp);
		strv_release(&argv);
		return refuse(job_dir, "", m.text);
	}
	fs_rm_tree(tmp);
	strv_release(&argv);
	close(sigfd);
	rc = write_exit(job_dir, &e);
	return rc < 0 ? REMOTE_EXIT_LOST : remote_exit_status(&e);
}
