/* A job's place in a fleet (fleet.h). */
#include <string.h>

#include "proto/fleet.h"

int fleet_gpu_type_check(const char *s, struct qual_msg *msg)
{
	size_t n = strlen(s);

	if (n >= 1 && n <= FLEET_MAX_TYPE_LEN &&
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n)
		return 0;
	return qual_fail(msg, QUAL_EINVAL, "'" FLEET_GPU_TYPE_KEY "' must be 1 to %d characters "
			 "of A-Z a-z 0-9 _ . -, got '%.*s%s'", FLEET_MAX_TYPE_LEN,
			 n > 80 ? 80 : (int)n, s, n > 80 ? "..." : "");
}
