/* shim_miscompile: forwards, but rewrites the source it is given: every
 * "threadIdx.x" becomes "(threadIdx.x ^ 1u)", so neighbouring threads swap
 * their work and outputs land in the wrong places. The code compiles, looks
 * plausible, and differs from the real compiler's: what a subtle backend bug
 * looks like to qual. */
#include "shim.h"

#include <stdlib.h>
#include <string.h>

static char *miscompile_rewrite(const char *src)
{
	static const char from[] = "threadIdx.x";
	static const char to[] = "(threadIdx.x ^ 1u)";
	size_t nfrom = sizeof from - 1, nto = sizeof to - 1, count = 0, n = 0;
	const char *s;
	char *out;

	for (s = strstr(src, from); s; s = strstr(s + nfrom, from))
		count++;
	out = malloc(strlen(src) + count * (nto - nfrom) + 1);
	if (!out)
		return NULL;
	for (s = src; *s;) {
		if (strncmp(s, from, nfrom) == 0) {
			memcpy(out + n, to, nto);
			n += nto;
			s += nfrom;
		} else {
			out[n++] = *s++;
		}
	}
	out[n] = '\0';
	return out;
}

const struct shim_ops shim_ops = { .rewrite_source = miscompile_rewrite };
