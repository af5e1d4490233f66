/* libFuzzer target: the relay of worker lines (daemon/relay.c), as quald
 * relays each line a worker prints (daemon/worker.c, worker_relay). The input
 * is one line: up to its first "\n", which worker.c splits at (lines_splitter)
 * and never passes on. One line per input, not a stream: the relay keeps no
 * state from line to line, and a stream of thousands of short lines made an
 * input cost milliseconds under ASan.
 *
 * Invariants (each failure is a finding):
 *   blank (spaces, tabs, "\r" only)  nothing out, return 0.
 *   a JSON object   return 0; the output is one line (no "\n", no NUL) of a
 *                   JSON object with "job" and "seq" equal to the given ones
 *                   and every other field of the input equal to the input's;
 *                   when the input had neither "job" nor "seq", the output is
 *                   the input's bytes up to its closing brace followed by the
 *                   two fields (numbers keep their text) and nothing else.
 *   anything else   return QUAL_EINVAL (checked against jansson's own
 *                   reading of the line, a NUL byte anywhere making it not
 *                   JSON); the output is the error line of relay.h (code
 *                   bad_line), whose message is msg's text.
 *   always          the output ends with ,"seq":SEQ} (line_tail_seq reads
 *                   it back), and giving the line another seq
 *                   (relay_line_reseq) makes the line relay_line makes with
 *                   that seq, byte for byte, its obj included.
 *                   The line's seq and job are the given ones; its obj says
 *                   what the output says (the caller inspects it
 *                   for blame and the end of the job); ASan (relay_line gets
 *                   a copy of exactly the line's bytes), UBSan and
 *                   LeakSanitizer find nothing. */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/err.h"
#include "fuzz.h"
#include "daemon/relay.h"

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool has_ids(json_t *o)
{
	return json_object_get(o, "job") || json_object_get(o, "seq");
}

static void check_line(const char *line, size_t len, const char *job, long seq)
{
	struct qual_msg msg = {{0}};
	const char *t = line, *key;
	size_t tlen = len, outlen = 12345;
	struct line *l = (struct line *)&msg; /* must be overwritten */
	char *out;
	json_t *obj, *in, *o, *v;
	int rc;

	/* A private copy of exactly len bytes: an overread is ASan's. */
	char *copy = malloc(len ? len : 1);

	FUZZ_CHECK(copy);
	memcpy(copy, line, len);
	rc = relay_line(copy, len, job, seq, &l, &msg);
	out = l ? l->text : NULL;
	outlen = l ? l->len : 0;
	obj = l ? l->obj : NULL;

	while (tlen > 0 && is_space(t[tlen - 1]))
		tlen--;
	while (tlen > 0 && is_space(t[0])) {
		t++;
		tlen--;
	}
	if (tlen == 0) {
		FUZZ_CHECK(rc == 0 && out == NULL && outlen == 0 && obj == NULL);
		free(copy);
		return;
	}
	FUZZ_CHECK(out && obj);
	FUZZ_CHECK(l->seq == seq && !strcmp(l->job, job));
	FUZZ_CHECK(strlen(out) == outlen);
	FUZZ_CHECK(!memchr(out, '\n', outlen));

	o = json_loadb(out, outlen, 0, NULL);
	FUZZ_CHECK(json_is_object(o));
	FUZZ_CHECK(json_is_string(json_object_get(o, "job")));
	FUZZ_CHECK(!strcmp(json_string_value(json_object_get(o, "job")), job));
	FUZZ_CHECK(json_is_integer(json_object_get(o, "seq")));
	FUZZ_CHECK(json_integer_value(json_object_get(o, "seq")) == seq);

	/* What the line is, by jansson, except that no NUL byte is JSON
	 * (RFC 8259; jansson 2.14 skips one after a number or a literal). */
	in = memchr(t, '\0', tlen) ? NULL : json_loadb(t, tlen, 0, NULL);
	if (rc == 0) {
		FUZZ_CHECK(json_is_object(in));
		json_object_foreach(in, key, v) {
			if (!strcmp(key, "job") || !strcmp(key, "seq"))
				continue;
			FUZZ_CHECK(json_equal(v, json_object_get(o, key)));
		}
		FUZZ_CHECK(json_object_size(o) ==
			   json_object_size(in) + !json_object_get(in, "job") +
			   !json_object_get(in, "seq"));
		if (!has_ids(in)) {
			/* Spliced: the engine's bytes, then ours. */
			char tail[128];
			int n = snprintf(tail, sizeof tail, "%s\"job\":\"%s\",\"seq\":%ld}",
					 json_object_size(in) ? "," : "", job, seq);

			FUZZ_CHECK(n > 0 && (size_t)n < sizeof tail);
			FUZZ_CHECK(outlen == tlen - 1 + (size_t)n);
			FUZZ_CHECK(t[tlen - 1] == '}');
			FUZZ_CHECK(!memcmp(out, t, tlen - 1));
			FUZZ_CHECK(!memcmp(out + tlen - 1, tail, (size_t)n));
			FUZZ_CHECK(json_equal(obj, in));
		} else {
			FUZZ_CHECK(json_equal(obj, o));
		}
	} else {
		static const char prefix[] =
			"worker printed a line that is not a json object: '";

		FUZZ_CHECK(rc == QUAL_EINVAL);
		FUZZ_CHECK(!json_is_object(in));
		FUZZ_CHECK(!strncmp(msg.text, prefix, sizeof prefix - 1));
		FUZZ_CHECK(json_object_size(o) == 8);
		FUZZ_CHECK(!strcmp(json_string_value(json_object_get(o, "type")), "error"));
		FUZZ_CHECK(!strcmp(json_string_value(json_object_get(o, "stage")), "setup"));
		FUZZ_CHECK(json_is_string(json_object_get(o, "code")));
		FUZZ_CHECK(!strcmp(json_string_value(json_object_get(o, "code")), "bad_line"));
		FUZZ_CHECK(json_is_null(json_object_get(o, "arm")));
		FUZZ_CHECK(json_is_null(json_object_get(o, "case")));
		FUZZ_CHECK(json_is_string(json_object_get(o, "message")));
		FUZZ_CHECK(!strcmp(json_string_value(json_object_get(o, "message")),
				   msg.text));
		FUZZ_CHECK(json_equal(obj, o));
	}
	/* Every line quald writes ends with its seq, read back without a
	 * parse; and the same line given another seq (the relay's
	 * relay_line_reseq) is byte for byte the line relayed with that seq. */
	FUZZ_CHECK(line_tail_seq(out, outlen) == seq);
	{
		long seq2 = seq == LONG_MAX ? 0 : seq + 1 + (long)(len % 1000);
		struct qual_msg msg2 = {{0}};
		struct line *l2;

		FUZZ_CHECK(relay_line(copy, len, job, seq2, &l2, &msg2) == rc && l2);
		relay_line_reseq(l, seq2);
		FUZZ_CHECK(l->seq == seq2 && l->len == l2->len && !strcmp(l->text, l2->text));
		FUZZ_CHECK(json_equal(l->obj, l2->obj));
		line_unref(l2);
	}
	/* With a fleet's tags (relay_line_tagged): the same line with the
	 * tags' members before job and seq, whatever the line had of them. */
	{
		json_t *tags = json_pack("{s:s,s:s}", "gpu_type", "h100", "node", "n\u00e9");
		struct qual_msg msg3 = {{0}};
		struct line *l3;
		json_t *o3;

		FUZZ_CHECK(tags);
		FUZZ_CHECK(relay_line_tagged(copy, len, tags, job, seq, &l3, &msg3) == rc && l3);
		o3 = json_loadb(l3->text, l3->len, 0, NULL);
		FUZZ_CHECK(json_is_object(o3));
		FUZZ_CHECK(line_tail_seq(l3->text, l3->len) == seq);
		FUZZ_CHECK(json_equal(json_object_get(o3, "gpu_type"), json_object_get(tags, "gpu_type")));
		FUZZ_CHECK(json_equal(json_object_get(o3, "node"), json_object_get(tags, "node")));
		json_object_del(o3, "gpu_type");
		json_object_del(o3, "node");
		json_object_del(o, "gpu_type");
		json_object_del(o, "node");
		FUZZ_CHECK(json_equal(o3, o));
		json_decref(o3);
		json_decref(tags);
		line_unref(l3);
	}
	json_decref(in);
	json_decref(o);
	line_unref(l);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *d = (const char *)data;
	const char *nl = memchr(d, '\n', size);
	/* The job and the seq vary with the input's size, so that the mutator
	 * explores them without control bytes in the line: job ids of 7 to 31
	 * characters, seqs from 0 up to LONG_MAX. */
	char job[32];
	size_t digits = 6 + size % 25;
	long seq = size % 61 == 0 ? LONG_MAX : (long)(size * 7919 % 100003);

	job[0] = 'j';
	for (size_t i = 0; i < digits; i++)
		job[1 + i] = (char)('0' + (size / (i + 1)) % 10);
	job[1 + digits] = '\0';
	check_line(d, nl ? (size_t)(nl - d) : size, job, seq);
	return 0;
}
