/* shim_slow_g: forwards, adding -G (device debug information, which turns
 * off device optimisation). nvrtc 13.0 still returns a CUBIN with it. */
#include "shim.h"

#include <stddef.h>

static const char *const debug_options[] = { "-G", NULL };

const struct shim_ops shim_ops = { .extra_options = debug_options };
