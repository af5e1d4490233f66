/* Child processes: the one way qual starts one. qual-run's compile children
 * and sessions, its device probe, and quald's workers, health checks and
 * submit checks all start here, so that the rules below hold for every one
 * of them (git's run-command.h is the model: "use the API").
 *
 * A child gets stdin, stdout and stderr as the caller asks (also when the
 * caller has some of descriptors 0-2 closed, so that a pipe or a descriptor
 * of its own sits there) and, when asked, a process group or session of its
 * own, so that killing it kills everything it started. Either it execs argv (no PATH search) with env, starting with
 * an empty signal mask and default dispositions (the caller may block or
 * ignore signals; a compiler or a worker should see a plain process), or it
 * runs fn in the forked copy of the caller, as the caller set it up, and
 * exits with fn's return value (qual-run's sessions and probe: the caller
 * must not have started a GPU runtime, which does not survive fork).
 *
 * Waiting comes in two forms. child_wait() blocks until the child exits or a
 * deadline passes (then it kills the whole group). An event loop instead
 * learns that a child may have exited (SIGCHLD), asks child_exited(), and
 * calls child_reap(). Either way, the child is left unreaped until what it
 * left in its group has been killed, so that the group id cannot be reused
 * by an unrelated process while it is being killed.
 *
 * libuv's contract for starting: when child_start() fails nothing runs and
 * no descriptor is left open; when it succeeds the child must be reaped,
 * once, by child_wait() or child_reap(). */
#ifndef QUAL_CHILD_H
#define QUAL_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/err.h"

/* What a standard stream of the child is, where it is not a descriptor of
 * the caller's (which the child gets as it is; the caller keeps its own). */
enum {
	CHILD_INHERIT = -1, /* the caller's own stream */
	CHILD_NULL = -2,    /* /dev/null */
	CHILD_PIPE = -3,    /* a new pipe; the caller's end in in_pipe / out_pipe /
			     * err_pipe (close-on-exec, blocking) */
	CHILD_TO_OUT = -4,  /* stderr only: wherever stdout goes */
};

enum child_group {
	CHILD_GROUP_SAME = 0, /* the caller's process group */
	CHILD_GROUP_NEW,      /* a process group of its own (setpgid) */
	CHILD_SESSION_NEW,    /* a session of its own (setsid): no terminal */
};

struct child {
	/* Set by the caller (child_init() gives the defaults in brackets). */
	const char *const *argv; /* argv[0] is the path run; NULL with fn */
	const char *const *env;  /* the whole environment [NULL: the caller's] */
	const char *name;        /* what it is in child_start()'s message,
				  * "cannot start <name>: <cause>" ("compiler
				  * helper '/x'") [NULL: argv[0] quoted, or "a
				  * child process"]; read by child_start() only */
	int (*fn)(void *arg);    /* instead of argv: run in the forked child */
	void *arg;
	int in, out, err;        /* a descriptor or CHILD_* [CHILD_NULL; out and
				  * err CHILD_INHERIT] */
	int fd3;                 /* a descriptor of the caller's (above 2) that
				  * a program run (not fn) gets as its
				  * descriptor 3 (a folder its arguments name
				  * through /proc/self/fd/3) [-1: none] */
	enum child_group group;  /* [CHILD_GROUP_SAME] */
	const char *cwd;         /* the folder it starts in [NULL: the
				  * caller's] */
	bool die_with_parent;    /* killed (SIGKILL) when the caller's thread
				  * that started it ends (PR_SET_PDEATHSIG) */
	bool set_ids;            /* runs as uid and gid, with gid its only
				  * group, set before exec or fn (a caller
				  * that is root: a compile child as
				  * --compile-user) [false] */
	uid_t uid;
	gid_t gid;

	/* Set by child_start(). */
	pid_t pid;               /* -1 before the start and after the reap */
	int in_pipe, out_pipe, err_pipe; /* the caller's ends, or -1; the caller
					  * closes them */
};

/* How a child ended: the waitpid() status, and whether its deadline passed
 * (child_wait() killed it). */
struct child_exit {
	int status;
	bool timed_out;
};

/* Sets the defaults above. */
void child_init(struct child *c);

/* Starts the child. Returns 0, or QUAL_ENOENT (argv[0] does not exist),
 * QUAL_EIO (fork, pipe, exec failed) or QUAL_EINVAL (neither argv nor fn)
 * with msg naming the child (its name, else its program) and the cause:
 * "cannot start 'qual-compile': No such file or directory". fork() is safe in a process that has opened
 * a GPU when the child execs at once (the child never uses the runtime);
 * fn children must come from a process that has not (gpu/gpu.h). */
int child_start(struct child *c, struct qual_msg *msg);

/* Sends sig to the child's whole group (or session) when it has its own,
 * else to the child alone. Does nothing once it has been reaped. */
void child_kill(struct child *c, int sig);

/* True once the child has exited (without reaping it), or when there is no
 * such child to wait for (then child_reap() fails). Never blocks. */
bool child_exited(struct child *c);

/* For a child that has exited: kills (SIGKILL) whatever is left in its own
 * group, then reaps it into ex (may be NULL). Returns 0, or QUAL_EIO. */
int child_reap(struct child *c, struct child_exit *ex);

/* Blocks until the child exits or deadline (child_now() seconds; 0 for
 * none) passes; past the deadline its whole group is killed (SIGKILL) and
 * ex->timed_out is set. Then child_reap(). Returns 0, or QUAL_EIO. */
int child_wait(struct child *c, double deadline, struct child_exit *ex);

/* Orphans. A process that is a child subreaper (child_become_subreaper():
 * PR_SET_CHILD_SUBREAPER) adopts whatever is orphaned below it: a process
 * whose parent dies is reparented to its nearest living subreaper ancestor
 * instead of init, including one that left its process group and session
 * (setsid() after a double fork), which neither a group kill nor
 * PR_SET_PDEATHSIG (not inherited across fork) reaches. qual-run and quald
 * are subreapers, so that every descendant of a job can be found and killed
 * (docs/quald.md, "Process lifetime").
 *
 * Returns 0, or QUAL_EIO with msg when the kernel refuses (before 3.4). */
int child_become_subreaper(struct qual_msg *msg);

/* Kills (SIGKILL) every child of this process whose pid is not one of the
 * nkeep in keep (keep may be NULL), and reaps those that have exited;
 * children are found by a scan of /proc (the ppid of /proc/PID/stat), so
 * that adopted orphans, which no struct child describes, are found too.
 * A child that leads its own process group is killed with that group,
 * before it is reaped (so that the id cannot have been reused); one in a
 * group it does not lead is killed alone, since that group is not its own
 * to end: a kept child's (a grandchild left in it), this process's, or one
 * it joined (setpgid). No kill ever reaches this process's group or the
 * group of a kept child (read with getpgid() at the start of each pass).
 *
 * deadline 0: one pass that never blocks; a killed child still exiting is
 * reaped by a later call (its SIGCHLD says when). deadline > 0 (child_now()
 * seconds): kills, reaps and looks again, since the children of a killed
 * child are adopted in turn, until no such child is left or the deadline
 * passes. Returns 0, or QUAL_EIO when /proc cannot be read.
 * Async-signal-safe (system calls only): a signal handler may call it. */
int child_kill_orphans(const pid_t *keep, size_t nkeep, double deadline);

/* How long a process on its way out waits for what child_kill_orphans()
 * killed to be reaped: SIGKILL ends a process within milliseconds unless it
 * is stuck in the kernel (a GPU driver); a subreaper above takes over what
 * is left then. */
#define CHILD_REAP_GRACE_S 1.0

/* Seconds on a monotonic clock, for deadlines. */
double child_now(void);

/* The signal that ended the child (0 when it exited), and its exit status
 * (-1 when a signal ended it). */
int child_exit_signal(const struct child_exit *ex);
int child_exit_code(const struct child_exit *ex);

/* One way to say how a child ended, for messages: "exited with status 3",
 * "killed by signal SIGSEGV". Into buf (cap bytes); returns buf. */
const char *child_exit_text(const struct child_exit *ex, char *buf, size_t cap);

/* "SIGSEGV" for a signal number, or "signal 77" for one without a name. */
const char *child_signal_name(int sig, char *buf, size_t cap);

/* The caller's environment less every entry starting with one of drop's
 * strings ("LD_LIBRARY_PATH=") and plus add's entries ("KEY=value", in that
 * order), as a new NULL-terminated array for child.env; child_env_free()
 * frees it. drop and add may be NULL. */
char **child_env_with(const char *const *drop, const char *const *add);
void child_env_free(char **env);

/* Reads fd until end of file or deadline (child_now() seconds; 0 for none),
 * keeping the first cap bytes in a new NUL-terminated buffer (*out, *len)
 * and reading, not keeping, the rest; *total (may be NULL) counts every
 * byte read. Returns 0, QUAL_ETIMEOUT when the deadline passed first (what
 * was read is kept), or QUAL_EIO. */
int child_read_capped(int fd, size_t cap, double deadline, char **out,
		      size_t *len, size_t *total);

#endif
