/* The files a summary also goes to (report.h). */
#include "client/report.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "common/exitcode.h"

int report_open(const char *prog, struct report_files *r)
{
	const char *made[2] = {r->junit, r->markdown};
	const char *what[2] = {"JUnit report", "markdown summary"};

	r->lines = NULL;
	r->failed = false;
	for (int i = 0; i < 2; i++) {
		FILE *f = made[i] ? fopen(made[i], "we") : NULL;

		if (made[i] && !f) {
			fprintf(stderr, "%s: cannot write the %s to '%s': %s\n", prog, what[i],
				made[i], strerror(errno));
			return -1;
		}
		if (f)
			fclose(f);
	}
	r->made = r->junit || r->markdown;
	if (!r->json_out)
		return 0;
	/* Close-on-exec: no child (the run, its compilers) inherits it. */
	r->lines = fopen(r->json_out, "we");
	if (!r->lines) {
		fprintf(stderr, "%s: cannot write the lines to '%s': %s\n", prog, r->json_out,
			strerror(errno));
		return -1;
	}
	return 0;
}

int report_status(int status)
{
	return status == QUAL_EXIT_PASS ? QUAL_EXIT_USAGE : status;
}

void report_line(struct report_files *r, const char *text, size_t len)
{
	if (!r->lines)
		return;
	fwrite(text, 1, len, r->lines);
	fputc('\n', r->lines);
	fflush(r->lines); /* a person may tail it while the job runs */
}

/* Writes path with fn(f, v); -1 (said) when it cannot be written in full. */
static int write_file(const char *prog, const char *path, const char *what,
		      void (*fn)(FILE *, const struct view_job *), const struct view_job *v)
{
	FILE *f = fopen(path, "we");
	int bad;

	if (!f) {
		fprintf(stderr, "%s: cannot write the %s to '%s': %s\n", prog, what, path,
			strerror(errno));
		return -1;
	}
	fn(f, v);
	bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		fprintf(stderr, "%s: cannot write the %s to '%s'\n", prog, what, path);
		return -1;
	}
	return 0;
}

static void junit_fn(FILE *f, const struct view_job *v)
{
	view_junit(f, v, "qual");
}

static int close_lines(const char *prog, struct report_files *r)
{
	int bad;

	if (!r->lines)
		return 0;
	bad = ferror(r->lines);
	if (fclose(r->lines) != 0 || bad) {
		fprintf(stderr, "%s: cannot write the lines to '%s'\n", prog, r->json_out);
		r->lines = NULL;
		return -1;
	}
	r->lines = NULL;
	return 0;
}

int report_finish(const char *prog, struct report_files *r, const struct view_job *v)
{
	int rc = close_lines(prog, r);

	r->made = false;
	if (r->junit && write_file(prog, r->junit, "JUnit report", junit_fn, v) < 0)
		rc = -1;
	if (r->markdown && write_file(prog, r->markdown, "markdown summary", view_markdown, v) < 0)
		rc = -1;
	return rc;
}

void report_abandon(struct report_files *r)
{
	if (r->lines)
		fclose(r->lines);
	r->lines = NULL;
	if (r->made) {
		if (r->junit)
			unlink(r->junit);
		if (r->markdown)
			unlink(r->markdown);
		r->made = false;
	}
}
