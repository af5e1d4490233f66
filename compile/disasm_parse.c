/* Reading a disassembler's listing (disasm.h): instructions counted by
 * class, and each line normalised for a diff. */
#include "compile/disasm.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

/* Names given in the order of first use: "R12" -> "R0" (registers of one
 * kind, labels). An open-addressed table of the names met. */
struct renamer {
	struct name { char *key; int id; } *tab;
	size_t cap, n;
	int next[8];
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int rename_id(struct renamer *r, const char *key, int kind)
{
	size_t i;

	if (2 * (r->n + 1) > r->cap) {
		struct renamer g = { .cap = r->cap ? 2 * r->cap : 256 };

		memcpy(g.next, r->next, sizeof g.next);
		g.tab = xcalloc(g.cap, sizeof *g.tab);
		for (i = 0; i < r->cap; i++) {
			size_t k;

			if (!r->tab[i].key)
				continue;
			for (k = hash(r->tab[i].key) & (g.cap - 1); g.tab[k].key; k = (k + 1) & (g.cap - 1))
				;
			g.tab[k] = r->tab[i];
		}
		free(r->tab);
		g.n = r->n;
		*r = g;
	}
	for (i = hash(key) & (r->cap - 1); r->tab[i].key; i = (i + 1) & (r->cap - 1))
		if (!strcmp(r->tab[i].key, key))
			return r->tab[i].id;
	r->tab[i].key = xstrdup(key);
	r->tab[i].id = r->next[kind]++;
	r->n++;
	return r->tab[i].id;
}

static void renamer_release(struct renamer *r)
{
	for (size_t i = 0; i < r->cap; i++)
		free(r->tab[i].key);
	free(r->tab);
	memset(r, 0, sizeof *r);
}

/* A growing string. */
struct buf {
	char *s;
	size_t len, cap;
};

static void add(struct buf *b, const char *s, size_t n)
{
	XGROW(b->s, b->len + n + 1, b->cap);
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void add_str(struct buf *b, const char *s)
{
	add(b, s, strlen(s));
}

static bool word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

static bool all_digits(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* The kind of a register name of SASS (R12, UR4, P0, UP1, B2), or -1. */
static int sass_register(const char *w, size_t n, size_t *prefix)
{
	static const char *const kinds[] = { "UR", "UP", "R", "P", "B" };

	for (int k = 0; k < 5; k++) {
		size_t p = strlen(kinds[k]);

		if (n > p && !strncmp(w, kinds[k], p) && all_digits(w + p, n - p)) {
			*prefix = p;
			return k;
		}
	}
	return -1;
}

static void put_renamed(struct buf *b, struct renamer *r, const char *w, size_t n,
			const char *as, int kind)
{
	char key[64], out[80];

	snprintf(key, sizeof key, "%.*s", (int)(n < 60 ? n : 60), w);
	snprintf(out, sizeof out, "%s%d", as, rename_id(r, key, kind));
	add_str(b, out);
}

/* A SASS instruction's text with registers and labels renamed and reuse
 * flags (operand cache hints) dropped. */
static void sass_normalise(const char *s, size_t len, struct renamer *r, struct buf *b)
{
	static const char *const kinds[] = { "UR", "UP", "R", "P", "B" };
	size_t i = 0;

	while (i < len) {
		size_t n = 0, p = 0;
		int k;

		if (!strncmp(s + i, ".reuse", 6) && (i + 6 == len || !word_char(s[i + 6]))) {
			i += 6;
			continue;
		}
		if (!strncmp(s + i, ".L_x_", 5)) {
			for (n = 5; i + n < len && word_char(s[i + n]); n++)
				;
			put_renamed(b, r, s + i, n, "L", 5);
			i += n;
			continue;
		}
		if (word_char(s[i]) && (i == 0 || !word_char(s[i - 1]))) {
			while (i + n < len && word_char(s[i + n]))
				n++;
			if ((k = sass_register(s + i, n, &p)) >= 0)
				put_renamed(b, r, s + i, n, kinds[k], k);
			else
				add(b, s + i, n);
			i += n;
			continue;
		}
		add(b, s + i, 1);
		i++;
	}
}

/* An AMDGPU instruction's operands with registers (v7, s[4:5], a[0:15])
 * renamed, and a branch's offset replaced. */
static void amdgpu_normalise(const char *s, size_t len, bool branch, struct renamer *r,
			     struct buf *b)
{
	static const char kinds[] = "vsa";
	size_t i = 0;

	while (i < len) {
		const char *k = NULL;
		size_t n = 0;

		if (s[i] == '<') { /* a symbolic target: <name+0x40> */
			while (i < len && s[i] != '>')
				i++;
			i += i < len;
			continue;
		}
		if (word_char(s[i]) && (i == 0 || !word_char(s[i - 1]))) {
			while (i + n < len && word_char(s[i + n]))
				n++;
			if (n == 1 && (k = strchr(kinds, s[i])) && i + 1 < len && s[i + 1] == '[') {
				while (i + n < len && s[i + n] != ']')
					n++;
				n += i + n < len;
				put_renamed(b, r, s + i, n, (char[]){ *k, '\0' }, (int)(k - kinds));
			} else if (n > 1 && (k = strchr(kinds, s[i])) && all_digits(s + i + 1, n - 1)) {
				put_renamed(b, r, s + i, n, (char[]){ *k, '\0' }, (int)(k - kinds));
			} else if (branch && all_digits(s + i, n)) {
				add_str(b, "off");
			} else {
				add(b, s + i, n);
			}
			i += n;
			continue;
		}
		add(b, s + i, 1);
		i++;
	}
}

static void trim(const char **s, size_t *n)
{
	while (*n && isspace((unsigned char)**s))
		(*s)++, (*n)--;
	while (*n && isspace((unsigned char)(*s)[*n - 1]))
		(*n)--;
}

struct parse {
	enum rtc_abi abi;
	struct disasm_listing *out;
	struct renamer names;
	size_t cap;
};

static void keep(struct parse *p, struct buf *b)
{
	struct disasm_listing *l = p->out;

	XGROW(l->lines, l->nlines + 1, p->cap);
	l->lines[l->nlines++] = b->s ? b->s : xstrdup("");
	b->s = NULL;
	b->len = b->cap = 0;
}

static void count(struct parse *p, const char *opcode, size_t n)
{
	char op[64];

	snprintf(op, sizeof op, "%.*s", (int)(n < 63 ? n : 63), opcode);
	p->out->count[disasm_classify(p->abi, op)]++;
	p->out->instructions++;
}

/* One line of nvdisasm -c: "        /xx0070xx/   @P0 BRA `(.L_x_3) ;" (with
 * slashes and stars), ".L_x_3:", "kernel:", or a directive (skipped). */
static void sass_line(struct parse *p, const char *s, size_t n)
{
	const char *open, *close, *body, *semi;
	struct buf b = { 0 };
	size_t blen, op;

	trim(&s, &n);
	if (n > 4 && !strncmp(s, "/*", 2) && (close = memmem(s + 2, n - 2, "*/", 2))) {
		body = close + 2;
		blen = n - (size_t)(body - s);
		for (semi = body + blen; semi > body && semi[-1] != ';'; semi--)
			;
		if (semi > body)
			blen = (size_t)(semi - 1 - body);
		trim(&body, &blen);
		if (!blen)
			return;
		open = body;
		if (*open == '@')
			while (open < body + blen && !isspace((unsigned char)*open))
				open++;
		while (open < body + blen && isspace((unsigned char)*open))
			open++;
		for (op = 0; open + op < body + blen && !isspace((unsigned char)open[op]) &&
			     open[op] != ';'; op++)
			;
		count(p, open, op);
		sass_normalise(body, blen, &p->names, &b);
		keep(p, &b);
		return;
	}
	if (n > 1 && s[n - 1] == ':' && !memchr(s, ' ', n) && !memchr(s, '\t', n)) {
		if (!strncmp(s, ".L_x_", 5)) {
			sass_normalise(s, n, &p->names, &b);
			keep(p, &b);
		} else if (s[0] != '.') {
			/* A kernel's entry: its names are its own, so that a change
			 * in one kernel renames nothing in the next. */
			renamer_release(&p->names);
			add(&b, s, n);
			keep(p, &b);
		}
	}
}

/* One line of llvm-objdump -d: "0000000000001000 <kernel>:", or an
 * instruction "\ts_load_dwordx4 s[8:11], s[4:5], 0x0  // 000000001000: ...". */
static void amdgpu_line(struct parse *p, const char *s, size_t n)
{
	const char *lt, *gt, *c;
	struct buf b = { 0 };
	bool indented = n && isspace((unsigned char)s[0]);
	size_t op;

	if ((c = memchr(s, '/', n)) && (size_t)(c - s) + 1 < n && c[1] == '/')
		n = (size_t)(c - s);
	trim(&s, &n);
	if (!n)
		return;
	if (!indented) {
		if (s[n - 1] == ':' && (lt = memchr(s, '<', n)) && (gt = memchr(lt, '>', n - (size_t)(lt - s)))) {
			renamer_release(&p->names); /* a kernel's names are its own */
			add(&b, lt + 1, (size_t)(gt - lt - 1));
			add_str(&b, ":");
			keep(p, &b);
		}
		return;
	}
	for (op = 0; op < n && (islower((unsigned char)s[op]) || isdigit((unsigned char)s[op]) ||
				s[op] == '_'); op++)
		;
	if (op == 0 || (op < n && !isspace((unsigned char)s[op])) || !islower((unsigned char)s[0]))
		return;
	count(p, s, op);
	add(&b, s, op);
	amdgpu_normalise(s + op, n - op, !strncmp(s, "s_branch", 8) || !strncmp(s, "s_cbranch", 9),
			 &p->names, &b);
	keep(p, &b);
}

int disasm_parse(enum rtc_abi abi, const char *text, size_t len, struct disasm_listing *out,
		 struct qual_msg *msg)
{
	struct parse p = { .abi = abi, .out = out };
	const char *s = text, *end = text + len;

	memset(out, 0, sizeof *out);
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);

		if (abi == RTC_ABI_HIPRTC)
			amdgpu_line(&p, s, n);
		else
			sass_line(&p, s, n);
		s += n + (nl != NULL);
	}
	renamer_release(&p.names);
	if (out->instructions == 0) {
		disasm_listing_release(out);
		return qual_fail(msg, QUAL_EINVAL, "no instructions in the disassembly");
	}
	return 0;
}

void disasm_listing_release(struct disasm_listing *l)
{
	for (size_t i = 0; i < l->nlines; i++)
		free(l->lines[i]);
	free(l->lines);
	memset(l, 0, sizeof *l);
}
