/* The relay of worker lines (relay.h). */
#include "daemon/relay.h"
#include "daemon/oplog.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lines.h"
#include "common/text.h"
#include "common/xalloc.h"
#include "proto/line.h"

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* jansson fails to build or write a line of ours only when it cannot
 * allocate (every string in it is valid UTF-8: it parsed, or we made it);
 * quald is a program, and aborts then as xmalloc does. */
static void *must(void *p)
{
	if (!p) {
		oplog(LOG_ERR, "out of memory making a job line");
		abort();
	}
	return p;
}

struct line *relay_line_own(json_t *o, const char *job, long seq)
{
	return relay_line_own_tagged(o, NULL, job, seq);
}

struct line *relay_line_own_tagged(json_t *o, json_t *tags, const char *job, long seq)
{
	char *text;

	if (tags)
		json_object_update(o, tags);
	/* Removed first, so that they go last whatever o had: the tail every
	 * line quald writes ends with (line_tail_seq). */
	json_object_del(o, "job");
	json_object_del(o, "seq");
	json_object_set_new(o, "job", json_string(job));
	json_object_set_new(o, "seq", json_integer(seq));
	text = must(json_dumps(o, JSON_COMPACT));
	return line_take(o, text, strlen(text));
}

void relay_line_reseq(struct line *l, long seq)
{
	char tail[32];
	size_t keep;
	int n;

	if (l->refs != 1 || l->seq < 0 || line_tail_seq(l->text, l->len) != l->seq) {
		oplog(LOG_ERR, "bug: job '%s': a line to give seq %ld is shared or not "
		      "the relay's", l->job, seq);
		abort();
	}
	/* The old seq's digits and the closing brace end the text. */
	keep = l->len - (size_t)snprintf(tail, sizeof tail, "%ld}", l->seq);
	n = snprintf(tail, sizeof tail, "%ld}", seq);
	l->text = xrealloc(l->text, keep + (size_t)n + 1);
	memcpy(l->text + keep, tail, (size_t)n + 1);
	l->len = keep + (size_t)n;
	l->seq = seq;
	/* A line written anew holds our seq in its object too. */
	if (json_object_get(l->obj, "seq"))
		json_object_set_new(l->obj, "seq", json_integer(seq));
}

/* Whether o has a member of tags (NULL: none). */
static bool has_tag(json_t *o, json_t *tags)
{
	const char *key;
	json_t *v;

	json_object_foreach(tags, key, v)
		if (json_object_get(o, key))
			return true;
	return false;
}

/* The bytes spliced before an object's closing brace: tags' members, then
 * "job" and "seq", and the brace (a new string). */
static char *splice_text(json_t *tags, bool first, const char *job, long seq)
{
	char *members = NULL, *text;

	if (tags && json_object_size(tags)) {
		char *dump = must(json_dumps(tags, JSON_COMPACT));

		/* The members without the braces of their object. */
		dump[strlen(dump) - 1] = '\0';
		members = dump;
	}
	if (asprintf(&text, "%s%s%s\"job\":\"%s\",\"seq\":%ld}", first ? "" : ",",
		     members ? members + 1 : "", members ? "," : "", job, seq) < 0)
		abort();
	free(members);
	return text;
}

int relay_line(const char *in, size_t len, const char *job, long seq,
	       struct line **out, struct qual_msg *msg)
{
	return relay_line_tagged(in, len, NULL, job, seq, out, msg);
}

int relay_line_tagged(const char *in, size_t len, json_t *tags, const char *job, long seq,
		      struct line **out, struct qual_msg *msg)
{
	json_error_t jerr;
	struct line *l;
	size_t outlen;
	char *text;
	json_t *o;

	*out = NULL;
	while (len > 0 && is_space(in[len - 1]))
		len--;
	while (len > 0 && is_space(in[0])) {
		in++;
		len--;
	}
	if (len == 0)
		return 0;
	/* Without JSON_DISABLE_EOF_CHECK jansson refuses anything after the
	 * value but whitespace, trimmed above: an object's last byte is its
	 * closing brace, which the splice below relies on. A NUL byte is
	 * refused here: jansson 2.14 skips one that follows a number or a
	 * literal ({"n":1\0} loads as {"n":1}; akheron/jansson#331), and the
	 * splice would pass it on to every client (found by
	 * tests/fuzz/fuzz_relay.c). */
	o = memchr(in, '\0', len) ? NULL : json_loadb(in, len, 0, &jerr);
	if (!o || !json_is_object(o)) {
		size_t q = len < RELAY_QUOTE_MAX ? len : RELAY_QUOTE_MAX;
		json_t *quote = text_json(in, q);

		json_decref(o);
		qual_fail(msg, QUAL_EINVAL,
			  "worker printed a line that is not a json object: '%s'%s",
			  json_string_value(quote), q < len ? "..." : "");
		json_decref(quote);
		/* Valid UTF-8 (the quote is) and whole: RELAY_QUOTE_MAX is
		 * far below the size of msg->text. */
		o = must(json_pack("{s:s,s:s,s:s,s:n,s:n,s:s}", "type", "error", "stage",
				   "setup", "code", vocab_code_name(LINES_CODE_BAD_LINE),
				   "arm", "case", "message", msg->text));
		*out = relay_line_own_tagged(o, tags, job, seq);
		return QUAL_EINVAL;
	}
	if (json_object_get(o, "job") || json_object_get(o, "seq") || has_tag(o, tags)) {
		/* Not the engine's doing; keep ours authoritative. */
		*out = relay_line_own_tagged(o, tags, job, seq);
	} else {
		/* The engine's bytes as they are, with ours spliced in before
		 * the closing brace. */
		char *ids = splice_text(tags, json_object_size(o) == 0, job, seq);
		size_t n = strlen(ids);

		outlen = len - 1 + n;
		text = xmalloc(outlen + 1);
		memcpy(text, in, len - 1);
		memcpy(text + len - 1, ids, n + 1);
		free(ids);
		/* The object stays the worker's; the ids it goes out with are
		 * the line's own fields. */
		*out = l = line_take(o, text, outlen);
		l->seq = seq;
		snprintf(l->job, sizeof l->job, "%s", job);
	}
	return 0;
}
