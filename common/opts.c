/* Options from a table (opts.h). */
#include "common/opts.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "common/xalloc.h"

/* getopt_long's value of entry i: its letter, or past every char. */
#define OPTS_VAL_BASE 256

/* Entry e's argument arg (NULL for none) into ctx. */
static int take(const struct opts_entry *e, const char *arg, void *ctx, struct qual_msg *msg)
{
	char *at = (char *)ctx + e->off, what[96];
	double d;
	long x;
	int rc;

	snprintf(what, sizeof what, "--%s", e->name);
	switch (e->kind) {
	case OPTS_FLAG:
		*(bool *)at = true;
		return 0;
	case OPTS_STRING:
		*(const char **)at = arg;
		return 0;
	case OPTS_INT:
		rc = text_parse_long(what, arg, (long)e->lo, (long)e->hi, &x, msg);
		if (rc == 0)
			*(int *)at = (int)x;
		return rc;
	case OPTS_REAL:
		rc = text_parse_double(what, arg, e->lo, e->hi, &d, msg);
		if (rc == 0)
			*(double *)at = d;
		return rc;
	case OPTS_CALL:
		return e->fn(ctx, arg, msg);
	case OPTS_ENTRY:
		return e->fn_entry(ctx, e, arg, msg);
	case OPTS_LISTED:
		break;
	}
	return qual_fail(msg, QUAL_EINVAL, "option '%s' is not read here", what);
}

/* The entry getopt_long answers val for, or NULL. */
static const struct opts_entry *entry_of(const struct opts_entry *t, size_t n, int val)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].kind != OPTS_LISTED &&
		    (t[i].letter ? t[i].letter == val : OPTS_VAL_BASE + (int)i == val))
			return &t[i];
	return NULL;
}

int opts_parse(const struct opts_entry *t, size_t n, int argc, char **argv, void *ctx,
	       struct qual_msg *msg)
{
	struct option *lo = xcalloc(n + 1, sizeof *lo);
	char *shorts = xmalloc(2 * n + 2), *s = shorts;
	size_t k = 0;
	int opt, rc = 0;

	*s++ = ':'; /* a missing value is ':', told apart from an unknown option */
	for (size_t i = 0; i < n; i++) {
		if (t[i].kind == OPTS_LISTED)
			continue;
		lo[k].name = t[i].name;
		lo[k].has_arg = t[i].arg ? required_argument : no_argument;
		lo[k].val = t[i].letter ? t[i].letter : OPTS_VAL_BASE + (int)i;
		k++;
		if (t[i].letter) {
			*s++ = t[i].letter;
			if (t[i].arg)
				*s++ = ':';
		}
	}
	*s = '\0';
	optind = 0; /* GNU: start afresh, whatever parsed argv before */
	opterr = 0; /* our own messages, naming the option */
	while (rc == 0 && (opt = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		const struct opts_entry *e;

		if (opt == ':') {
			rc = qual_fail(msg, QUAL_EINVAL, "option '%s' needs a value",
				       argv[optind - 1]);
			break;
		}
		e = entry_of(t, n, opt);
		if (!e && optopt && entry_of(t, n, optopt)) {
			/* getopt tells "--flag=x" by the option's own value. */
			rc = qual_fail(msg, QUAL_EINVAL, "option '--%s' takes no value",
				       entry_of(t, n, optopt)->name);
			break;
		}
		if (!e) {
			if (optopt)
				rc = qual_fail(msg, QUAL_ENOENT, "unknown option '-%c'", optopt);
			else
				rc = qual_fail(msg, QUAL_ENOENT, "unknown option '%s'",
					       argv[optind - 1]);
			break;
		}
		rc = take(e, optarg, ctx, msg);
		if (rc == 0 && e->stop)
			break;
	}
	free(lo);
	free(shorts);
	return rc < 0 ? rc : optind;
}

void opts_help(FILE *f, const struct opts_entry *t, size_t n, int col)
{
	for (size_t i = 0; i < n; i++) {
		const char *h = t[i].help, *nl;
		int w;

		if (!h)
			continue;
		w = fprintf(f, "  --%s%s%s", t[i].name, t[i].arg ? " " : "",
			    t[i].arg ? t[i].arg : "");
		if (w + 2 > col)
			fprintf(f, "  ");
		else
			fprintf(f, "%*s", col - w, "");
		for (;;) {
			nl = strchr(h, '\n');
			fprintf(f, "%.*s\n", (int)(nl ? nl - h : (long)strlen(h)), h);
			if (!nl || !nl[1])
				break;
			h = nl + 1;
			fprintf(f, "%*s", col, "");
		}
	}
}
