/* Child processes that must not outlive their parent. */
#ifndef QUAL_LIFETIME_H
#define QUAL_LIFETIME_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#define QUAL_PARENT_ENV "QUAL_DIE_WITH_PARENT"

/* When $QUAL_DIE_WITH_PARENT holds our parent's pid, asks the kernel to kill
 * us with SIGKILL when that parent dies (PR_SET_PDEATHSIG). Returns false when
 * the parent has already gone (then the caller should exit at once). A quald
 * worker left running on a GPU would disturb the next job's timings; a compile
 * child left behind would hold its temporary folder. */
bool qual_die_with_parent(void);

/* The same for a child that knows its parent's pid (a fork): killed when
 * parent dies; false when it has died already. */
bool qual_die_with(pid_t parent);

/* A signal that says a process crashed (a fault in its code or in a library
 * it called), as opposed to one sent to stop it: SIGSEGV, SIGBUS, SIGILL,
 * SIGFPE, SIGABRT, SIGSYS, SIGTRAP. */
bool qual_fault_signal(int sig);

/* Whether the signal described by si (a handler's, SA_SIGINFO) is this
 * process's own doing: the kernel raised it here (si_code > 0, which the
 * kernel refuses to let another process send), or this process raised it
 * itself (si_code SI_USER or SI_TKILL with si_pid its own: kill(getpid()),
 * raise(), abort()). Not one another process sent, nor SI_QUEUE, whose
 * si_pid the sender chooses (docs/quald.md, "Quarantine").
 * Async-signal-safe. */
bool qual_signal_own(const siginfo_t *si);

#endif
