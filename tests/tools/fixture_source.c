/* fixture-source CASE cuda|hip OUT [bare]: writes the full source of a
 * fixture case (platform prelude, the case's constant block, kernel, as
 * fixture_source() assembles it) to OUT, so that tests can compile it with a
 * real compiler library (rtc_check.py). "bare" leaves the constant block
 * out, to check that a kernel refuses to compile without its constants.
 * Exits 0 on success, 1 on failure, 2 on usage errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures/fixture.h"

int main(int argc, char **argv)
{
	struct fixture_case c;
	enum fixture_platform p;
	char *src;
	FILE *f;
	int index, rc = 1;

	if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "bare") != 0) ||
	    (strcmp(argv[2], "cuda") != 0 && strcmp(argv[2], "hip") != 0)) {
		fprintf(stderr, "usage: fixture-source CASE cuda|hip OUT [bare]\n");
		return 2;
	}
	p = strcmp(argv[2], "hip") == 0 ? FIXTURE_HIP : FIXTURE_CUDA;
	index = fixture_find(argv[1]);
	if (index < 0) {
		fprintf(stderr, "no fixture case '%s'\n", argv[1]);
		return 2;
	}
	if (fixture_spec(index, &c, NULL) < 0) {
		fprintf(stderr, "cannot describe case '%s'\n", argv[1]);
		return 1;
	}
	if (argc == 5)
		c.ndefines = 0;
	src = fixture_source(&c, p);
	if (!src) {
		fprintf(stderr, "cannot assemble the source of case '%s'\n", argv[1]);
		goto release;
	}
	f = fopen(argv[3], "w");
	if (!f) {
		fprintf(stderr, "cannot write '%s'\n", argv[3]);
		goto free_src;
	}
	rc = fputs(src, f) >= 0 ? 0 : 1;
	if (fclose(f) != 0)
		rc = 1;
	if (rc)
		fprintf(stderr, "cannot write '%s'\n", argv[3]);
free_src:
	free(src);
release:
	fixture_release(&c);
	return rc;
}
