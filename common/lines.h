/* JSON lines: the output contract (docs/output.md, schema in
 * docs/schema/lines.schema.json). Every line is one compact JSON object with
 * a "type". This module writes them, splits a stream into them with a cap
 * on their length, and says what one is: its type, its verdict, its arm and
 * its error code, so that every reader decides from the same fields and no
 * one from a message's wording. */
#ifndef QUAL_LINES_H
#define QUAL_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "common/err.h"

/* Version of the line format; in every start line as "schema_version".
 * Incremented only by incompatible changes; fields may be added freely.
 * Readers accept 1 to QUAL_SCHEMA_VERSION. 3: error lines carry "code".
 * 4: case lines carry "specialization", "target" and "oracle", and may say
 * "applicable": false (case verdict "not_applicable"); fixtures of the
 * user's own (family: their name). 5: block lines (placement, clocks,
 * throttling; a throttled block's pairs are not judged), pairs of a retake
 * carry "retake". */
#define QUAL_SCHEMA_VERSION 5

/* The longest line a reader takes (newline not counted). A line from the
 * engine is a few kilobytes; a longer one is a bug, or not the engine. */
#define LINES_MAX ((size_t)1 << 20)

/* ---- writing ---------------------------------------------------------- */

/* The significant digits of a real in a line: enough for any timing
 * (a picosecond in a second), and a line stays short. */
#define LINES_REAL_DIGITS 12

/* Writes line (steals the reference) as one compact line and flushes, so a
 * reader following the stream sees it at once. Returns 0 or QUAL_EIO. */
int lines_emit(FILE *out, json_t *line);

/* Rounds every real in v (borrowed; objects and arrays throughout) to what
 * lines_emit() writes of it, LINES_REAL_DIGITS significant digits, so
 * that the value in hand is the one a reader of the line parses; what
 * lines_emit() then writes is unchanged. For a writer that also judges
 * what it writes (run/runner_emit.c). */
void lines_round_reals(json_t *v);

/* A new object {"type": type}. */
json_t *lines_new(const char *type);

/* A JSON number, or null when x is NaN or infinite (JSON has no NaN). */
json_t *lines_real(double x);

/* A JSON string of s by text.h's rule (bytes that are not valid UTF-8
 * become '?'; compiler logs may hold any). NULL gives null. */
json_t *lines_text(const char *s);

/* A stream cut into lines, each at most max bytes. */
struct lines_splitter {
	size_t max;
	char *buf;            /* the unfinished line so far */
	size_t len, cap;
	bool over;            /* a line ran past max: nothing more is taken */
};

void lines_splitter_init(struct lines_splitter *s, size_t max);
void lines_splitter_release(struct lines_splitter *s);

/* Takes n more bytes of the stream and calls fn(ctx, line, len) for each
 * whole line, newline removed (a line wholly inside data is passed without
 * a copy). Returns 0; QUAL_ELIMIT when a line ran past max (s->over is set
 * and every later call takes nothing); or the first nonzero value fn
 * returned, which stops it there. */
int lines_splitter_feed(struct lines_splitter *s, const char *data, size_t n,
			int (*fn)(void *ctx, const char *line, size_t len), void *ctx);

/* The bytes of an unfinished last line taken so far. */
size_t lines_splitter_rest(const struct lines_splitter *s);

/* At the end of the stream: an unfinished last line that is one whole JSON
 * object (its writer ended without a final newline) is a line, passed to fn
 * like the others; anything else there was cut off and is never passed on.
 * Returns 0 (no rest, or it was passed on: fn's value otherwise), or
 * QUAL_EINVAL when the rest, lines_splitter_rest() bytes, was cut off. The
 * one rule for a stream's last line, in qual-run's and in quald's relays. */
int lines_splitter_finish(struct lines_splitter *s,
			  int (*fn)(void *ctx, const char *line, size_t len), void *ctx);

#endif
