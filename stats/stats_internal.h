/* What stays inside stats/: what stats.c (per case and per run) and
 * stats_nonparam.c (the tests and estimates) share. Nothing outside stats/
 * includes this. */
#ifndef QUAL_STATS_INTERNAL_H
#define QUAL_STATS_INTERNAL_H

#include <stddef.h>

#include "stats/stats.h"

/* Scratch allocation; failure aborts (stats.h says why). */
void *stats__alloc(size_t n, size_t size);

#endif
