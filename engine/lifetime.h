/* Child processes that must not outlive their parent. */
#ifndef QUAL_LIFETIME_H
#define QUAL_LIFETIME_H

#include <stdbool.h>

#define QUAL_PARENT_ENV "QUAL_DIE_WITH_PARENT"

/* When $QUAL_DIE_WITH_PARENT holds our parent's pid, asks the kernel to kill
 * us with SIGKILL when that parent dies (PR_SET_PDEATHSIG). Returns false when
 * the parent has already gone (then the caller should exit at once). A quald
 * worker left running on a GPU would disturb the next job's timings; a compile
 * child left behind would hold its temporary folder. */
bool qual_die_with_parent(void);

#endif
