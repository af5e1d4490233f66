/* What the fuzz targets share: the libFuzzer entry point's prototype (the
 * targets are built with -Wmissing-prototypes) and the check that stops a run
 * with a finding. */
#ifndef QUAL_FUZZ_H
#define QUAL_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant that failed is a finding: say which, then abort() so that
 * libFuzzer saves the input as a crash artifact (and the corpus replay
 * without libFuzzer, tests/fuzz/replay_main.c, fails). */
#define FUZZ_CHECK(cond)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: invariant failed: %s\n",    \
				__FILE__, __LINE__, #cond);                  \
			abort();                                             \
		}                                                            \
	} while (0)

#endif
