/* A program's options as one table: each entry its long name, its
 * argument's name, its help text and what it sets. getopt_long's table,
 * the parse and the --help listing are all made from it, so that --help
 * cannot list an option the parser does not take or miss one it does (the
 * man pages are checked against --help: tests/man.cmake). Used by quald's
 * main (daemon/main.c), the judge command (client/judge_cmd.c) and qual-run
 * (run/qual_run_args.c). */
#ifndef QUAL_COMMON_OPTS_H
#define QUAL_COMMON_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/err.h"

/* What an entry does with its argument, at off in the parse's ctx. */
enum opts_kind {
	OPTS_FLAG,    /* bool: true; the option takes no argument */
	OPTS_STRING,  /* const char *: the argument, borrowed from argv; the
		       * last one given counts */
	OPTS_INT,     /* int: a whole number in [lo, hi] (text_parse_long) */
	OPTS_REAL,    /* double: a finite number in [lo, hi] (text_parse_double) */
	OPTS_CALL,    /* fn(ctx, arg): anything else (arg NULL for no argument) */
	OPTS_ENTRY,   /* fn_entry(ctx, entry, arg): one handler for several
		       * entries, which tells them apart by the entry (qual-run's
		       * settings, each read by its field of proto/settings.h) */
	OPTS_LISTED,  /* read before opts_parse by a parser of its own, which
		       * takes it out of argv (quald's --allow-root: policy.h):
		       * listed in the help only */
};

struct opts_entry {
	const char *name;     /* the long option, without "--" */
	const char *arg;      /* its argument's name in the help ("PATH"), or
			       * NULL: it takes none */
	enum opts_kind kind;
	size_t off;           /* where in ctx it sets (offsetof) */
	double lo, hi;        /* OPTS_INT, OPTS_REAL: the range */
	/* OPTS_CALL: 0, or a negative code with msg saying why arg is not a
	 * value of the option. */
	int (*fn)(void *ctx, const char *arg, struct qual_msg *msg);
	/* OPTS_ENTRY: the same, told which entry (borrowed) it is for. */
	int (*fn_entry)(void *ctx, const struct opts_entry *e, const char *arg,
			struct qual_msg *msg);
	bool stop;            /* parsing stops once it is read (--help,
			       * --version: what follows is not looked at) */
	char letter;          /* a short option as well ('h'), or 0 */
	const char *help;     /* its lines in the help, '\n' between them; NULL:
			       * not listed */
};

/* Parses the options of argv (from argv[1], GNU getopt_long's way: long
 * names may be abbreviated, operands may come between options and end up
 * last, "--" ends the options) into ctx by the n entries of t. Returns the
 * index in argv of the first operand (argc when there is none), or a
 * negative code with msg: QUAL_ENOENT for an unknown option ("unknown
 * option '--x'"), QUAL_EINVAL for a missing value ("option '--x' needs a
 * value"), a value given to an option that takes none ("option '--x' takes
 * no value") or a value out of range (text.h's message), or an OPTS_CALL
 * handler's code. Restarts getopt, so it may follow other getopt parsing. */
int opts_parse(const struct opts_entry *t, size_t n, int argc, char **argv, void *ctx,
	       struct qual_msg *msg);

/* Writes the listed entries of t to f in the table's order, one option a
 * line: "  --name ARG", then its help from column col (on the same line
 * when there is room for two spaces, else from the next), each further
 * line of the help indented to col. */
void opts_help(FILE *f, const struct opts_entry *t, size_t n, int col);

#endif
