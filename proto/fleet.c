/* A job's place in a fleet (fleet.h). */
#include <string.h>

#include "proto/fleet.h"
#include "proto/vocab.h"

/* 0 when s is 1 to FLEET_MAX_TYPE_LEN characters of A-Z a-z 0-9 _ . -,
 * else QUAL_EINVAL with msg naming key. */
static int word_check(const char *key, const char *s, struct qual_msg *msg)
{
	size_t n = strlen(s);

	if (n >= 1 && n <= FLEET_MAX_TYPE_LEN &&
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n)
		return 0;
	return qual_fail(msg, QUAL_EINVAL, "'%s' must be 1 to %d characters of A-Z a-z 0-9 _ . -, "
			 "got '%.*s%s'", key, FLEET_MAX_TYPE_LEN, n > 80 ? 80 : (int)n, s,
			 n > 80 ? "..." : "");
}

int fleet_gpu_type_check(const char *s, struct qual_msg *msg)
{
	return word_check(FLEET_GPU_TYPE_KEY, s, msg);
}

int fleet_submission_check(const char *s, struct qual_msg *msg)
{
	return word_check(FLEET_SUBMISSION_KEY, s, msg);
}

/* A verdict's rank for fleet_overall; unknown ranks above all. */
static int overall_rank(int v)
{
	switch (v) {
	case RUN_NEUTRAL:
		return 0;
	case RUN_IMPROVEMENT:
		return 1;
	case RUN_NOT_TIMED:
		return 2;
	case RUN_REGRESSION:
		return 3;
	case RUN_ERROR:
	case RUN_CANCELLED:
	case RUN_INTERRUPTED:
		return 4;
	case RUN_FAIL:
		return 5;
	default:
		return 6;
	}
}

int fleet_overall(int so_far, int verdict)
{
	/* cancelled and interrupted read as error once combined. */
	int v = verdict == RUN_CANCELLED || verdict == RUN_INTERRUPTED ? RUN_ERROR : verdict;

	return overall_rank(v) > overall_rank(so_far) ? v : so_far;
}
