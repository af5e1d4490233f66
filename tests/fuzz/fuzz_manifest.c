/* libFuzzer target: a user fixture's manifest (fixtures/manifest.c), as
 * qual-run --fixtures reads DIR/fixture.json. The input is the manifest's
 * bytes, written into a fixture folder made once, which holds a source
 * (k.cu), an executable oracle (oracle.py), an input file of 8 bytes (x.bin)
 * and a link leading out of it (out.cu -> /etc/hostname).
 *
 * Invariants (each failure is a finding):
 *   success   every limit docs/fixtures.md states holds (restated below, not
 *             taken from manifest.c): 1 to 64 cases named NAME-LABEL
 *             (^[a-z0-9_]+-[0-9x]+$, under 64 characters, none "taken-1",
 *             which the target says is taken), 1 to 8 buffers with exactly
 *             one output, the one checked, at most 1 GiB each, at most 8
 *             scalars, at most 24 constants whose values hold no newline,
 *             quote, backslash, '#' or comment, a tolerance >= 0 with its
 *             reason, some platform, an oracle program inside the folder;
 *   failure   QUAL_EINVAL, QUAL_ENOENT or QUAL_EIO, and a message naming the
 *             manifest first ("'DIR/fixture.json': ...") for QUAL_EINVAL;
 *   memory    ASan and UBSan, and LeakSanitizer after every input. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "common/fsutil.h"
#include "fixtures/manifest.h"
#include "fuzz.h"

#define DOC_MAX_CASES 64
#define DOC_MAX_BUFFER_BYTES ((size_t)1 << 30)

static char folder[256];
static char manifest[300];

static void put(const char *name, const char *text, mode_t mode)
{
	char path[400];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", folder, name);
	f = fopen(path, "w");
	FUZZ_CHECK(f != NULL);
	fputs(text, f);
	fclose(f);
	FUZZ_CHECK(chmod(path, mode) == 0);
}

static void remove_folder(void)
{
	fs_rm_tree(folder);
}

static void make_folder(void)
{
	char link[400];

	snprintf(folder, sizeof folder, "%s/qual-fuzz-manifest-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	FUZZ_CHECK(mkdtemp(folder) != NULL);
	{
		char *real = realpath(folder, NULL);
		FUZZ_CHECK(real != NULL);
		snprintf(folder, sizeof folder, "%s", real);
		free(real);
	}
	snprintf(manifest, sizeof manifest, "%s/fixture.json", folder);
	atexit(remove_folder);
	put("k.cu", "QUAL_KERNEL void k(float *o) { o[0] = 1.0f; }\n", 0644);
	put("oracle.py", "#!/bin/sh\nexit 1\n", 0755);
	put("x.bin", "12345678", 0644);
	snprintf(link, sizeof link, "%s/out.cu", folder);
	(void)symlink("/etc/hostname", link);
}

static bool taken(const char *name)
{
	return strcmp(name, "taken-1") == 0;
}

static bool case_name_ok(const char *s)
{
	const char *dash = strrchr(s, '-');

	if (!dash || dash == s || !dash[1] || strlen(s) >= 64)
		return false;
	for (const char *p = s; p < dash; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return strspn(dash + 1, "0123456789x") == strlen(dash + 1);
}

static void check_fixture(const struct user_fixture *f)
{
	FUZZ_CHECK(f->ncases >= 1 && f->ncases <= DOC_MAX_CASES);
	FUZZ_CHECK(f->platforms != 0 && (f->platforms & ~3u) == 0);
	FUZZ_CHECK(f->entry && f->entry[0] && f->source);
	FUZZ_CHECK(strcmp(f->dir, folder) == 0);
	if (f->oracle == FIXTURE_ORACLE_HOST) {
		size_t n = strlen(folder);
		FUZZ_CHECK(f->oracle_program && !strncmp(f->oracle_program, folder, n) &&
			   f->oracle_program[n] == '/');
	}
	for (int i = 0; i < f->ncases; i++) {
		const struct manifest_case *c = &f->cases[i];
		int outputs = 0;

		FUZZ_CHECK(case_name_ok(c->name));
		FUZZ_CHECK(strcmp(c->name, "taken-1") != 0);
		FUZZ_CHECK(!strncmp(c->name, f->name, strlen(f->name)));
		for (int k = 0; k < i; k++)
			FUZZ_CHECK(strcmp(c->name, f->cases[k].name) != 0);
		FUZZ_CHECK(c->nbuffers >= 1 && c->nbuffers <= 8);
		FUZZ_CHECK(c->nscalars >= 0 && c->nscalars <= 8);
		FUZZ_CHECK(c->ndefines >= 0 && c->ndefines <= 24);
		for (int b = 0; b < c->nbuffers; b++) {
			const struct manifest_buffer *bf = &c->buffers[b];
			outputs += bf->output;
			FUZZ_CHECK(bf->count >= 1 &&
				   bf->count * fixture_elem_size(bf->elem) <= DOC_MAX_BUFFER_BYTES);
			FUZZ_CHECK(bf->output == (bf->init == MANIFEST_INIT_NONE));
		}
		FUZZ_CHECK(outputs == 1);
		FUZZ_CHECK(c->output >= 0 && c->output < c->nbuffers && c->buffers[c->output].output);
		for (int d = 0; d < c->ndefines; d++) {
			const char *v = c->defines[d].value;
			FUZZ_CHECK(v[0] && !strpbrk(v, "\n\r\"'\\#") && !strstr(v, "/*") &&
				   !strstr(v, "//"));
		}
		FUZZ_CHECK(c->tolerance >= 0 && c->tolerance_why && c->tolerance_why[0]);
		FUZZ_CHECK(c->block[0] * c->block[1] * c->block[2] <= 1024);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct user_fixture *f = NULL;
	struct qual_msg msg = {{0}};
	FILE *out;
	int rc;

	if (!folder[0])
		make_folder();
	out = fopen(manifest, "wb");
	FUZZ_CHECK(out != NULL);
	FUZZ_CHECK(fwrite(data, 1, size, out) == size);
	fclose(out);
	rc = manifest_load(folder, taken, &f, &msg);
	if (rc == 0) {
		FUZZ_CHECK(f != NULL);
		check_fixture(f);
		manifest_free(f);
		return 0;
	}
	FUZZ_CHECK(f == NULL);
	FUZZ_CHECK(rc == QUAL_EINVAL || rc == QUAL_ENOENT || rc == QUAL_EIO);
	FUZZ_CHECK(msg.text[0] != '\0');
	if (rc == QUAL_EINVAL) {
		char head[320];
		snprintf(head, sizeof head, "'%s': ", manifest);
		FUZZ_CHECK(strncmp(msg.text, head, strlen(head)) == 0);
	}
	return 0;
}
