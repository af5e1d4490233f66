/* Confinement of quald, its workers (qual-run as a job's worker) and their
 * compile children (qual-compile): the compiler libraries loaded there are
 * untrusted code (docs/service.md, "Trust model"). */
#ifndef QUAL_CONFINE_H
#define QUAL_CONFINE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/err.h"

/* quald sets this to "1" in its workers' environment. */
#define QUAL_CONFINE_ENV "QUAL_CONFINE"
/* Open files a confined worker may hold: a run needs a few dozen (pipes,
 * compile folders, the GPU driver's device files); 1024 is the usual default
 * soft limit. */
#define QUAL_CONFINE_NOFILE 1024

/* When $QUAL_CONFINE is "1": no core dumps (RLIMIT_CORE 0: a crashing
 * compiler must not fill the disk), at most QUAL_CONFINE_NOFILE open files
 * (soft and hard), and a network namespace of its own (unshare(CLONE_NEWNET):
 * only a loopback, down) where the kernel lets us (it needs CAP_SYS_ADMIN;
 * under systemd the unit's PrivateNetwork=yes already does it). Must run
 * before any thread starts. A namespace that cannot be had is no error: the
 * reason is said once on stderr. Writes what it did into desc (for logs) and
 * returns whether a network namespace was entered. Does nothing (desc "none")
 * when the variable is not "1". */
bool qual_confine_worker(char *desc, size_t cap);

/* Makes the calling process non-dumpable (prctl(PR_SET_DUMPABLE, 0)): no
 * process without CAP_SYS_PTRACE over it may ptrace it, take its descriptors
 * (pidfd_getfd) or open its /proc/PID/fd links, even one of its own uid, and
 * it leaves no core dump. execve() makes a process dumpable again, so every
 * program of qual's that holds something a compiler under test must not
 * reach (quald, qual-run, qual-compile) calls this first thing in main().
 * prog names the program in the message when it fails (it never does on
 * Linux); the failure is said on stderr and is no error. */
void qual_confine_nondumpable(const char *prog);

/* "0" in the environment once a process found that user namespaces are
 * refused here (qual_confine_userns_probe()): its children, which inherit
 * it, then skip theirs without a word. */
#define QUAL_CONFINE_USERNS_ENV "QUAL_CONFINE_USERNS"

/* Enters a user namespace of its own (unshare(CLONE_NEWUSER)) with our uid
 * and gid mapped to themselves and setgroups denied, so that the process
 * keeps its uid for files but holds no capability outside the namespace:
 * even as root it can no longer ptrace, pidfd_getfd or open /proc/PID/fd of
 * quald and its workers, nor of any process outside the namespace (the
 * kernel asks for CAP_SYS_PTRACE in the target's namespace), nor override
 * the permissions of files whose owner is not mapped. qual-compile does it
 * before it loads the library under test. Must run before any thread
 * starts, and before qual_confine_nondumpable(): the maps are written
 * through /proc/self, whose files belong to root while the process is
 * non-dumpable, so that a process other than root could not write them
 * (EACCES) and would stay outside any namespace. qual-compile therefore
 * enters the namespace first, while it holds nothing but its arguments
 * (the library is not loaded yet), then becomes non-dumpable. Where the kernel refuses (user.max_user_namespaces 0,
 * kernel.unprivileged_userns_clone 0, systemd's RestrictNamespaces=yes, an
 * LSM) the reason is said on stderr, prefixed by prog, unless
 * $QUAL_CONFINE_USERNS is "0" (a parent has said it already), and the
 * caller goes on: returns false then, true once inside. */
bool qual_confine_userns(const char *prog);

/* Whether qual_confine_userns() works here: tried in a child process
 * (child.h), unless $QUAL_CONFINE_USERNS is "0" already, in qual-compile's
 * order (dumpable, as a program just started is, then the namespace, then
 * non-dumpable), so that a non-dumpable caller (quald, qual-run) as any
 * user finds what its compile children will find. When it does not,
 * says so once on stderr (prefixed by prog; the compile children will run
 * without a namespace of their own) and sets $QUAL_CONFINE_USERNS to "0" for
 * our children. quald and qual-run call it at their start, so a machine
 * without user namespaces gets one warning per daemon or run, not one per
 * compile. Before any thread starts (it forks). */
bool qual_confine_userns_probe(const char *prog);

/* The uid and gid (its primary group) of user name, for compile children
 * run as a user of their own (--compile-user; docs/service.md); a name that
 * is no user but a number is that uid, with the same number as its gid
 * (quald's --compile-users: a uid per slot, no account). Refused
 * (QUAL_EINVAL with msg) when we are not root (only root may switch), when
 * there is no such user, and for uid 0 (no separation). */
int qual_confine_user(const char *name, uid_t *uid, gid_t *gid, struct qual_msg *msg);

#endif
