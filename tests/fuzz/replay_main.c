/* A main() for the fuzz targets without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on each file named, or on each file of each
 * folder named (the seed corpora), so that every build (gcc, the ASan+UBSan
 * build, valgrind) checks the targets' invariants on the corpus. Each input
 * is in a buffer of exactly its size, so that an overread is the sanitizer's
 * to find. Exits 0 when every input ran (a finding aborts), 1 when an input
 * could not be read or there was none. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;
	int rc = -1;

	if (!f) {
		fprintf(stderr, "cannot open '%s': %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0)
		goto out;
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		goto out;
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	rc = 0;
out:
	if (rc < 0)
		fprintf(stderr, "cannot read '%s'\n", path);
	free(buf);
	fclose(f);
	return rc;
}

int main(int argc, char **argv)
{
	int runs = 0, bad = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *e;

		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "cannot open '%s': %s\n", argv[i], strerror(errno));
			bad++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			bad += run_file(argv[i]) < 0;
			runs++;
			continue;
		}
		if (!(d = opendir(argv[i]))) {
			fprintf(stderr, "cannot open '%s': %s\n", argv[i], strerror(errno));
			bad++;
			continue;
		}
		while ((e = readdir(d))) {
			char path[4096];

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
			bad += run_file(path) < 0;
			runs++;
		}
		closedir(d);
	}
	printf("%d inputs, %d unreadable\n", runs, bad);
	return bad || runs == 0 ? 1 : 0;
}
