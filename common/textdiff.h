/* A line diff of two texts, in the unified format of diff -u: what
 * `qualctl explain` shows of two disassemblies (run/explain.c).
 *
 * The lines both texts begin and end with are set aside first; what is left
 * between them is matched by a longest common subsequence when it is small
 * enough (TEXTDIFF_CELLS_MAX cells of its table, one byte each), else
 * reported whole, every line of it removed and added (coarse). */
#ifndef QUAL_TEXTDIFF_H
#define QUAL_TEXTDIFF_H

#include <stdbool.h>
#include <stddef.h>

/* The largest table the matching makes: 16 MiB. Two listings of 4,000
 * lines each that differ throughout fit. */
#define TEXTDIFF_CELLS_MAX ((size_t)16 << 20)

struct textdiff {
	char *text;      /* "@@ -a,n +b,m @@\n" hunks of " ", "-" and "+"
			  * lines; "" when the texts are the same */
	size_t len;
	long added, removed; /* lines, all of them, also past a cut */
	bool truncated;  /* text stops at max_bytes, at a line's end */
	bool coarse;     /* the middle was too large to match */
};

/* Diffs a[0..na) against b[0..nb) (lines without their newline), with
 * context lines around each change, keeping at most max_bytes of text. */
void textdiff_unified(const char *const *a, size_t na, const char *const *b, size_t nb,
		      size_t context, size_t max_bytes, struct textdiff *out);

void textdiff_release(struct textdiff *d);

#endif
