/* Confinement of quald's workers (qual-run as a job's worker): the compiler
 * libraries they load are untrusted code. */
#ifndef QUAL_CONFINE_H
#define QUAL_CONFINE_H

#include <stdbool.h>
#include <stddef.h>

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

#endif
