/* A line as it enters a process (docs/output.md): parsed once where it comes
 * in (quald's relay of a worker's stdout, a stored log quald reads, qualctl's
 * connection) into a struct line that carries what every later reader
 * decides from (its type, seq, job, verdict, error code) with the object
 * and its bytes, so that no later hop parses it again or matches its bytes:
 * the writer, the fanout to followers, the HTTP event streams, the history
 * and the jobs table take the struct. "Parse at the door, pass values
 * inside" (STYLE.md). */
#ifndef QUAL_PROTO_LINE_H
#define QUAL_PROTO_LINE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "common/lines.h"
#include "proto/vocab.h"

struct line {
	int refs;
	enum lines_type type;
	long seq;                       /* "seq" (quald's), -1 when none */
	char job[VOCAB_JOB_ID_MAX];     /* "job" (quald's), "" when none */
	enum run_verdict verdict;       /* a verdict line's "verdict";
					 * RUN_VERDICT_UNKNOWN otherwise */
	enum case_verdict case_verdict; /* a case_verdict line's "verdict";
					 * CASE_VERDICT_UNKNOWN otherwise */
	enum lines_code code;           /* an error line's "code" */
	struct lines_info info;         /* the rest a reader decides from (its
					 * arm, case, gpu): strings borrowed
					 * from obj */
	json_t *obj;                    /* the object (the line's reference) */
	char *text;                     /* its bytes as on the wire, without
					 * the newline, NUL-terminated */
	size_t len;                     /* bytes of text before the NUL */
};

/* Parses text[0, len) (no newline; any bytes) into *out, a new line with one
 * reference and a copy of the bytes: the one parse of a line in a process.
 * Returns 0, or QUAL_EINVAL with *out NULL when it is not one JSON object
 * (a NUL byte anywhere is refused: jansson 2.14 skips one after a number,
 * akheron/jansson#331). */
int line_parse(const char *text, size_t len, struct line **out);

/* A new line (one reference) of an object already parsed and its bytes:
 * takes obj's reference and text (xmalloc'd, NUL-terminated, len bytes
 * before it) on every path. For the relay, which parses the worker's line
 * and writes the bytes that go on (daemon/relay.c). */
struct line *line_take(json_t *obj, char *text, size_t len);

/* Reads l's fields from its object again, after its owner changed the
 * object in place (qualctl's view_clean escapes control characters in its
 * strings, which frees those info borrowed): no parse. */
void line_reread(struct line *l);

/* Another reference to l; returns l. */
struct line *line_ref(struct line *l);

/* Drops a reference; the last frees l. NULL is ignored. */
void line_unref(struct line *l);

/* Whether l is a verdict line: its job's (or run's) last. */
bool line_is_verdict(const struct line *l);

#endif
