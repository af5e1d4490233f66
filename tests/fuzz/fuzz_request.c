/* libFuzzer target: request framing and parsing, as quald reads a connection
 * (daemon/server.c, conn_process). The input is the bytes a client sends. It
 * is framed twice, as one read and as reads of a few bytes each, with
 * frame_next() and the server's loop around it; every line of the first
 * framing goes through request_parse().
 *
 * Invariants (each failure is a finding):
 *   framing   every event maps onto the stream split at "\n" (the reference
 *             model, pieces_of): a line is a whole piece less its "\r", never
 *             blank; an oversize refusal is a piece longer than the limit; a
 *             piece with no event is blank; events are in stream order; after
 *             the loop stops nothing complete is left behind, at most the
 *             limit is held, and at EOF nothing is held at all.
 *   parsing   success means every field is within the limits docs/protocol.md
 *             states (restated below, not taken from request.c), the line
 *             has no NUL byte, and a submit's stored form reads back to
 *             the same arguments;
 *             failure means QUAL_EINVAL or QUAL_ELIMIT, a known op or none,
 *             and a message that is non-empty, lower case and not cut.
 *   memory    ASan and UBSan, and LeakSanitizer after every input. frame_next
 *             may read only the bytes the server holds: in the copy of the
 *             stream it is given, the bytes not yet received are poisoned,
 *             and those already consumed (to ASan's 8-byte granules). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sanitizer/asan_interface.h> /* no-ops without ASan */

#include "common/err.h"
#include "daemon/frame.h"
#include "fuzz.h"
#include "daemon/request.h"

/* The limits of docs/protocol.md, stated again so that the oracle does not
 * share request.c's constants. */
#define DOC_MAX_PATH 4095
#define DOC_MAX_CASE 128
#define DOC_MAX_OPTION 4095
#define DOC_MAX_LIST 64
#define DOC_MIN_PAIRS 30
#define DOC_MAX_PAIRS 1000000
#define DOC_MIN_ALPHA 1e-9
#define DOC_MAX_SEED 2147483647LL
#define DOC_MIN_COMPILE_TIMEOUT 0.1
#define DOC_MAX_COMPILE_TIMEOUT 86400.0
#define DOC_MAX_LIMIT 1000

/* The framing limit here: small, so that inputs of a few hundred bytes reach
 * the oversize path (quald's is REQUEST_MAX_LINE, 1 MiB, beyond the sizes
 * libFuzzer tries). frame_next takes it as an argument. */
#define FUZZ_FRAME_MAX 256

/* A piece of the stream: the bytes between two newlines (or the start, or
 * the end), start and length excluding the newline. */
struct piece {
	size_t start, len;
};

struct event {
	enum frame_event ev;
	size_t start, len; /* stream offsets */
};

struct events {
	struct event *v;
	size_t n, cap;
};

static void events_add(struct events *e, enum frame_event ev, size_t start,
		       size_t len)
{
	if (e->n == e->cap) {
		e->cap = e->cap ? 2 * e->cap : 16;
		e->v = realloc(e->v, e->cap * sizeof *e->v);
		FUZZ_CHECK(e->v);
	}
	e->v[e->n++] = (struct event){ev, start, len};
}

/* The reference framing: split at every "\n"; the bytes after the last one
 * are a piece when there are any (a last request without its newline). */
static size_t pieces_of(const char *d, size_t n, struct piece **out)
{
	struct piece *p = malloc((n + 1) * sizeof *p);
	size_t np = 0, start = 0;

	FUZZ_CHECK(p);
	for (size_t i = 0; i < n; i++) {
		if (d[i] == '\n') {
			p[np++] = (struct piece){start, i - start};
			start = i + 1;
		}
	}
	if (start < n)
		p[np++] = (struct piece){start, n - start};
	*out = p;
	return np;
}

/* A piece's length less one trailing "\r". */
static size_t stripped_len(const char *d, const struct piece *p)
{
	return p->len > 0 && d[p->start + p->len - 1] == '\r' ? p->len - 1 : p->len;
}

static bool is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t')
			return false;
	return true;
}

/* The server's loop (conn_process) over a stream arriving chunk bytes per
 * read, then EOF. [pos, received) of the stream is what the server holds:
 * in a copy of the stream, the only bytes frame_next may read. */
static void frame_stream(const char *data, size_t size, size_t chunk,
			 struct events *evs)
{
	struct frame f = {0};
	size_t pos = 0, received = 0;
	bool eof = false;
	char *copy = malloc(size ? size : 1);

	FUZZ_CHECK(copy);
	memcpy(copy, data, size);

	for (;;) {
		size_t rest;

		if (received < size)
			received += size - received < chunk ? size - received : chunk;
		else
			eof = true;
		for (;;) {
			size_t avail = received - pos, used = (size_t)-1, len = 0;
			const char *buf = copy + pos, *line = NULL, *nl;
			enum frame_event ev;

			ASAN_POISON_MEMORY_REGION(copy, pos);
			ASAN_POISON_MEMORY_REGION(copy + received, size - received);
			ev = frame_next(&f, buf, avail, eof, FUZZ_FRAME_MAX, &used,
					&line, &len);
			ASAN_UNPOISON_MEMORY_REGION(copy, size);
			FUZZ_CHECK(used <= avail);
			if (ev == FRAME_LINE) {
				FUZZ_CHECK(line >= buf && len <= avail &&
					   (size_t)(line - buf) + len <= used);
				events_add(evs, ev, pos + (size_t)(line - buf), len);
			} else if (ev == FRAME_OVERSIZE) {
				/* Whatever it had, it took; the refused line
				 * starts after the last newline it saw. */
				FUZZ_CHECK(used == avail && line == NULL);
				size_t start = 0;

				for (nl = buf; (nl = memchr(nl, '\n', avail - (size_t)(nl - buf)));
				     nl++)
					start = (size_t)(nl - buf) + 1;
				FUZZ_CHECK(avail - start > FUZZ_FRAME_MAX);
				events_add(evs, ev, pos + start, avail - start);
			} else {
				FUZZ_CHECK(ev == FRAME_NONE && line == NULL);
			}
			pos += used;
			if (ev != FRAME_LINE)
				break;
		}
		/* The loop stopped: nothing it could have handled is left. */
		rest = received - pos;
		if (f.skipping) {
			FUZZ_CHECK(rest == 0);
		} else {
			FUZZ_CHECK(!memchr(data + pos, '\n', rest));
			FUZZ_CHECK(rest <= FUZZ_FRAME_MAX);
		}
		if (eof) {
			FUZZ_CHECK(rest == 0);
			break;
		}
	}
	free(copy);
}

/* The events against the reference pieces. */
static void check_framing(const char *data, const struct piece *p, size_t np,
			  const struct events *evs)
{
	size_t k = 0;

	for (size_t i = 0; i < evs->n; i++) {
		const struct event *e = &evs->v[i];

		while (k < np && p[k].start < e->start) {
			FUZZ_CHECK(is_blank(data + p[k].start, stripped_len(data, &p[k])));
			k++;
		}
		FUZZ_CHECK(k < np && p[k].start == e->start);
		if (e->ev == FRAME_LINE) {
			FUZZ_CHECK(e->len == stripped_len(data, &p[k]));
			FUZZ_CHECK(!is_blank(data + e->start, e->len));
		} else {
			FUZZ_CHECK(p[k].len > FUZZ_FRAME_MAX);
		}
		k++;
	}
	for (; k < np; k++)
		FUZZ_CHECK(is_blank(data + p[k].start, stripped_len(data, &p[k])));
}

static bool is_job_id(const char *s)
{
	size_t n = strlen(s);

	if (n < 7 || n > 31 || s[0] != 'j')
		return false;
	for (size_t i = 1; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static void check_string(const char *s, size_t max)
{
	FUZZ_CHECK(s);
	FUZZ_CHECK(s[0] != '\0' && strlen(s) <= max);
}

/* NULL, or 1 to DOC_MAX_LIST strings of 1 to max bytes. */
static void check_list(char **list, size_t max)
{
	size_t n = 0;

	if (!list)
		return;
	for (; list[n]; n++)
		check_string(list[n], max);
	FUZZ_CHECK(n >= 1 && n <= DOC_MAX_LIST);
}

static bool lists_equal(char **a, char **b)
{
	if (!a || !b)
		return a == b;
	for (; *a && *b; a++, b++)
		if (strcmp(*a, *b))
			return false;
	return !*a && !*b;
}

static void check_submit(const struct submit_args *s)
{
	check_string(s->baseline, DOC_MAX_PATH);
	check_string(s->candidate, DOC_MAX_PATH);
	FUZZ_CHECK(s->settings.pairs >= DOC_MIN_PAIRS && s->settings.pairs <= DOC_MAX_PAIRS);
	FUZZ_CHECK(s->settings.alpha >= DOC_MIN_ALPHA && s->settings.alpha <= 0.5);
	FUZZ_CHECK(s->settings.margin >= 0 && s->settings.margin <= 0.5);
	FUZZ_CHECK(s->settings.seed >= 0 && s->settings.seed <= DOC_MAX_SEED);
	FUZZ_CHECK(s->settings.compile_timeout_s == 0 ||
		   (s->settings.compile_timeout_s >= DOC_MIN_COMPILE_TIMEOUT &&
		    s->settings.compile_timeout_s <= DOC_MAX_COMPILE_TIMEOUT));
	check_list(s->settings.cases, DOC_MAX_CASE);
	check_list(s->settings.baseline_options, DOC_MAX_OPTION);
	check_list(s->settings.candidate_options, DOC_MAX_OPTION);
}

/* The stored form (as the store writes it: text) reads back to the same
 * arguments; follow is not stored. */
static void check_submit_round_trip(const struct submit_args *s)
{
	struct submit_args back;
	struct qual_msg msg = {{0}};
	json_t *o = request_submit_to_json(s), *again;
	char *text = json_dumps(o, JSON_COMPACT);

	FUZZ_CHECK(text);
	again = json_loads(text, 0, NULL);
	FUZZ_CHECK(again);
	FUZZ_CHECK(request_submit_from_json(again, &back, &msg) == 0);
	FUZZ_CHECK(!strcmp(back.baseline, s->baseline));
	FUZZ_CHECK(!strcmp(back.candidate, s->candidate));
	FUZZ_CHECK(back.settings.pairs == s->settings.pairs && back.settings.alpha == s->settings.alpha &&
		   back.settings.margin == s->settings.margin && back.settings.seed == s->settings.seed &&
		   back.settings.compile_only == s->settings.compile_only &&
		   back.settings.compile_timeout_s == s->settings.compile_timeout_s);
	FUZZ_CHECK(lists_equal(back.settings.cases, s->settings.cases));
	FUZZ_CHECK(lists_equal(back.settings.baseline_options, s->settings.baseline_options));
	FUZZ_CHECK(lists_equal(back.settings.candidate_options, s->settings.candidate_options));
	FUZZ_CHECK(s->labels ? json_equal(back.labels, s->labels) : !back.labels);
	/* back is released the way request_release releases a submit. */
	{
		struct request r = {0};

		r.submit = back;
		request_release(&r);
	}
	free(text);
	json_decref(again);
	json_decref(o);
}

static void check_request(const struct request *r)
{
	switch (r->op) {
	case OP_SUBMIT:
		check_submit(&r->submit);
		check_submit_round_trip(&r->submit);
		break;
	case OP_WATCH:
		if (r->after_job)
			FUZZ_CHECK(is_job_id(r->after_job) && r->after_seq >= -1);
		else
			FUZZ_CHECK(r->after_seq == -1);
		break;
	case OP_LIST:
		FUZZ_CHECK(r->limit >= 1 && r->limit <= DOC_MAX_LIMIT);
		FUZZ_CHECK(!r->before || is_job_id(r->before));
		break;
	case OP_SHOW:
	case OP_CANCEL:
		FUZZ_CHECK(r->job && is_job_id(r->job));
		break;
	case OP_HISTORY:
		/* docs/protocol.md: limit in [1, 10000]; labels checked as a
		 * submit's (at most 32, none empty). */
		FUZZ_CHECK(r->limit >= 1 && r->limit <= 10000);
		FUZZ_CHECK(!r->case_name || strlen(r->case_name) >= 1);
		FUZZ_CHECK(!r->labels || (json_is_object(r->labels) &&
					  json_object_size(r->labels) >= 1 &&
					  json_object_size(r->labels) <= 32));
		break;
	case OP_STATUS:
	case OP_CALIBRATION:
		break;
	case OP_AUTH:
		FUZZ_CHECK(r->token && strlen(r->token) >= 1 &&
			   strlen(r->token) <= REQUEST_MAX_TOKEN);
		break;
	case OP_QUARANTINE:
		if (r->action == QUARANTINE_CLEAR) {
			FUZZ_CHECK(r->sha256 && strlen(r->sha256) == REQUEST_SHA256_HEX);
			for (size_t i = 0; r->sha256 && r->sha256[i]; i++)
				FUZZ_CHECK((r->sha256[i] >= '0' && r->sha256[i] <= '9') ||
					   (r->sha256[i] >= 'a' && r->sha256[i] <= 'f'));
		} else {
			FUZZ_CHECK(r->action == QUARANTINE_LIST && !r->sha256);
		}
		break;
	default:
		FUZZ_CHECK(!"an op outside enum request_op");
	}
}

static void parse_line(const char *line, size_t len)
{
	static const char *const ops[] = {
		"submit", "watch", "status", "list", "show", "cancel", "auth",
		"quarantine", "calibration", "history",
	};
	struct qual_msg msg = {{0}};
	const char *op_name = (const char *)&msg; /* must be overwritten */
	struct request r;
	int rc;

	rc = request_parse(line, len, &r, &op_name, &msg);
	if (rc == 0) {
		/* No NUL byte is JSON (outside strings jansson 2.14 may skip
		 * one: request.c refuses it first). */
		FUZZ_CHECK(!memchr(line, '\0', len));
		check_request(&r);
		FUZZ_CHECK(op_name && !strcmp(op_name, ops[r.op]));
	} else {
		size_t n = strlen(msg.text);
		bool known = op_name == NULL;

		FUZZ_CHECK(rc == QUAL_EINVAL || rc == QUAL_ELIMIT);
		for (size_t i = 0; i < sizeof ops / sizeof ops[0] && !known; i++)
			known = !strcmp(op_name, ops[i]);
		FUZZ_CHECK(known);
		FUZZ_CHECK(n > 0 && n < sizeof msg.text - 1);
		FUZZ_CHECK(!(msg.text[0] >= 'A' && msg.text[0] <= 'Z'));
	}
	request_release(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *d = (const char *)data;
	struct events whole = {0}, chunked = {0};
	struct piece *p;
	size_t np = pieces_of(d, size, &p);
	/* 1 to 16 bytes per read, chosen by the input so that the mutator
	 * explores it without a control byte in the stream. */
	size_t chunk = 1 + (size * 2654435761u >> 7) % 16;

	frame_stream(d, size, size > 0 ? size : 1, &whole);
	check_framing(d, p, np, &whole);
	frame_stream(d, size, chunk, &chunked);
	check_framing(d, p, np, &chunked);

	for (size_t i = 0; i < whole.n; i++)
		if (whole.v[i].ev == FRAME_LINE)
			parse_line(d + whole.v[i].start, whole.v[i].len);

	free(whole.v);
	free(chunked.v);
	free(p);
	return 0;
}
