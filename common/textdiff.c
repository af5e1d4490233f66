/* A line diff in the unified format (textdiff.h). */
#include "common/textdiff.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

enum op { OP_SAME, OP_DEL, OP_ADD };

struct out {
	char *buf;
	size_t len, cap, max;
	bool cut;
};

static void put(struct out *o, char mark, const char *s)
{
	size_t n = strlen(s) + 2;

	if (o->cut)
		return;
	if (o->len + n > o->max) {
		o->cut = true;
		return;
	}
	XGROW(o->buf, o->len + n + 1, o->cap);
	o->buf[o->len] = mark;
	memcpy(o->buf + o->len + 1, s, n - 2);
	o->buf[o->len + n - 1] = '\n';
	o->len += n;
	o->buf[o->len] = '\0';
}

static void put_header(struct out *o, size_t a0, size_t alen, size_t b0, size_t blen)
{
	char h[96];

	/* diff -u's numbering: a range's first line, counted from 1; an empty
	 * range names the line before it. */
	snprintf(h, sizeof h, "@ -%zu,%zu +%zu,%zu @@", alen ? a0 + 1 : a0, alen,
		 blen ? b0 + 1 : b0, blen);
	put(o, '@', h);
}

/* The edit script of the middle a[0..n) -> b[0..m): a longest common
 * subsequence from a table of directions (0: both lines, 1: a's, 2: b's),
 * filled from the end with two rows of lengths. */
static size_t match(const char *const *a, size_t n, const char *const *b, size_t m,
		    unsigned char *ops)
{
	unsigned char *dir = xmalloc(n > 0 && m > 0 ? n * m : 1);
	uint32_t *next = xcalloc(m + 1, sizeof *next), *row = xcalloc(m + 1, sizeof *row);
	size_t i, j, k = 0;

	for (i = n; i-- > 0;) {
		row[m] = 0;
		for (j = m; j-- > 0;) {
			if (strcmp(a[i], b[j]) == 0) {
				row[j] = next[j + 1] + 1;
				dir[i * m + j] = 0;
			} else if (next[j] >= row[j + 1]) {
				row[j] = next[j];
				dir[i * m + j] = 1;
			} else {
				row[j] = row[j + 1];
				dir[i * m + j] = 2;
			}
		}
		uint32_t *t = next;
		next = row;
		row = t;
	}
	for (i = 0, j = 0; i < n || j < m;) {
		if (i == n) {
			ops[k++] = OP_ADD, j++;
		} else if (j == m) {
			ops[k++] = OP_DEL, i++;
		} else if (dir[i * m + j] == 0) {
			ops[k++] = OP_SAME, i++, j++;
		} else if (dir[i * m + j] == 1) {
			ops[k++] = OP_DEL, i++;
		} else {
			ops[k++] = OP_ADD, j++;
		}
	}
	free(dir);
	free(next);
	free(row);
	return k;
}

/* The hunks of the script ops[0..nops) (over all of a and b). */
static void format(const char *const *a, const char *const *b, const unsigned char *ops,
		   size_t nops, size_t context, struct out *o)
{
	size_t *ai = xmalloc((nops + 1) * sizeof *ai), *bi = xmalloc((nops + 1) * sizeof *bi);
	size_t k, x = 0, y = 0;

	/* Where each step of the script starts in a and in b. */
	for (k = 0; k < nops; k++) {
		ai[k] = x, bi[k] = y;
		x += ops[k] != OP_ADD;
		y += ops[k] != OP_DEL;
	}
	ai[nops] = x, bi[nops] = y;
	k = 0;
	while (k < nops) {
		size_t first, last, start, end, s;

		while (k < nops && ops[k] == OP_SAME)
			k++;
		if (k == nops)
			break;
		first = k;
		last = k;
		/* A hunk goes on while at most twice the context of unchanged
		 * lines lie between its last change and the next (diff -u's
		 * rule: their contexts would touch). */
		for (s = k + 1; s < nops; s++) {
			if (ops[s] == OP_SAME)
				continue;
			if (s - last - 1 > 2 * context)
				break;
			last = s;
		}
		start = first > context ? first - context : 0;
		end = last + 1 + context < nops ? last + 1 + context : nops;
		put_header(o, ai[start], ai[end] - ai[start], bi[start], bi[end] - bi[start]);
		for (s = start; s < end; s++)
			put(o, ops[s] == OP_SAME ? ' ' : ops[s] == OP_DEL ? '-' : '+',
			    ops[s] == OP_ADD ? b[bi[s]] : a[ai[s]]);
		k = end;
	}
	free(ai);
	free(bi);
}

void textdiff_unified(const char *const *a, size_t na, const char *const *b, size_t nb,
		      size_t context, size_t max_bytes, struct textdiff *out)
{
	size_t p = 0, s = 0, n, m, nops = 0, k;
	unsigned char *ops = xmalloc(na + nb + 1);
	struct out o = { .max = max_bytes };

	memset(out, 0, sizeof *out);
	while (p < na && p < nb && strcmp(a[p], b[p]) == 0)
		p++;
	while (s < na - p && s < nb - p && strcmp(a[na - 1 - s], b[nb - 1 - s]) == 0)
		s++;
	n = na - p - s;
	m = nb - p - s;
	memset(ops, OP_SAME, p);
	nops = p;
	if (n && m && n <= TEXTDIFF_CELLS_MAX / m) {
		nops += match(a + p, n, b + p, m, ops + nops);
	} else {
		out->coarse = n && m;
		memset(ops + nops, OP_DEL, n);
		memset(ops + nops + n, OP_ADD, m);
		nops += n + m;
	}
	memset(ops + nops, OP_SAME, s);
	nops += s;
	for (k = 0; k < nops; k++) {
		out->added += ops[k] == OP_ADD;
		out->removed += ops[k] == OP_DEL;
	}
	format(a, b, ops, nops, context, &o);
	free(ops);
	out->text = o.buf ? o.buf : xstrdup("");
	out->len = o.len;
	out->truncated = o.cut;
}

void textdiff_release(struct textdiff *d)
{
	free(d->text);
	memset(d, 0, sizeof *d);
}
