/* shim_sibling: forwards everything unchanged (the code is byte-identical to
 * the real nvrtc's), but needs a sibling library, libshim_sibling_dep.so, that
 * sits in the same folder and is found only through LD_LIBRARY_PATH (no
 * RPATH): the situation of an nvrtc wheel with its libnvrtc-builtins beside
 * it. Loading it proves that the child runs with the library's own folder on
 * the library path. */
#include "shim.h"

#include <stddef.h>

int shim_sibling_dep_marker(void);

static char *sibling_rewrite(const char *src)
{
	(void)src;
	/* A real use of the sibling, so the dependency cannot be dropped. */
	return shim_sibling_dep_marker() == 42 ? NULL : NULL;
}

const struct shim_ops shim_ops = { .rewrite_source = sibling_rewrite };
