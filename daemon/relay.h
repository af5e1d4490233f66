/* The relay of worker lines (docs/protocol.md, "Job lines"): what quald makes
 * of one line a worker (qual-run) printed on stdout before it goes into the
 * job's log and out to followers. Pure: no I/O, no loop; worker.c calls it for
 * each line and the fuzz target (tests/fuzz/fuzz_relay.c) drives it
 * directly. */
#ifndef QUAL_RELAY_H
#define QUAL_RELAY_H

#include <stddef.h>

#include <jansson.h>

#include "common/err.h"
#include "proto/line.h"

/* Bytes of a line that is not a JSON object quoted in the error line made of
 * it: enough to recognise what printed it, short enough for a log line. */
#define RELAY_QUOTE_MAX 200

/* Makes the job line for one worker line: in[0, len), without its newline,
 * any bytes at all. Spaces, tabs, "\r" and "\n" around it are dropped first.
 *
 *   blank          returns 0 with *out NULL: nothing to relay.
 *   a JSON object  returns 0. *out's text is its bytes unchanged with
 *                  ,"job":JOB,"seq":SEQ spliced in before the closing brace
 *                  (so numbers keep the engine's exact text). An object that
 *                  already has "job" or "seq" is not the engine's doing: it
 *                  is written anew (compact, relay_line_own) with ours
 *                  instead, last.
 *   anything else  returns QUAL_EINVAL. *out is the error line that stands
 *                  for it (type "error", stage "setup", code "bad_line", arm
 *                  and case null, job and seq as above) with msg's text as
 *                  its message: "worker printed a line that is not a json
 *                  object: '...'", quoting at most RELAY_QUOTE_MAX bytes of
 *                  it by text.h's rule (bytes that are not valid UTF-8, and
 *                  NUL, as '?').
 *
 * job is a job id (letters and digits, written as they are); seq >= 0.
 * *out is a new line (proto/line.h, one reference for the caller): the one
 * parse of the worker's line in quald, which every later hop (the log, the
 * fanout, the HTTP streams) takes as it is. Its text is what goes on; its
 * seq and job are the given ones; its obj is the parsed input (without the
 * spliced ids) or the error line, for the caller to inspect. */
int relay_line(const char *in, size_t len, const char *job, long seq,
	       struct line **out, struct qual_msg *msg);

/* relay_line, with tags' members (an object, borrowed; NULL: none) put in
 * before "job" and "seq": a job's place in a fleet (proto/fleet.h: its GPU
 * type, its node). An object that has one of them already is written anew
 * with ours. */
int relay_line_tagged(const char *in, size_t len, json_t *tags, const char *job, long seq,
		      struct line **out, struct qual_msg *msg);

/* The line of a JSON object quald made or rewrote (o, taken): o with "job"
 * and "seq" set, last (any it had are removed first), written compact; a
 * new line with one reference. Every line quald writes ends with
 * ,"job":JOB,"seq":SEQ}, spliced (relay_line) or written here, which is
 * what line_tail_seq (proto/line.h) reads a stored line's seq from. */
struct line *relay_line_own(json_t *o, const char *job, long seq);
/* The same with tags' members (borrowed; NULL: none) set in o first. */
struct line *relay_line_own_tagged(json_t *o, json_t *tags, const char *job, long seq);

/* Gives l, a line relay_line or relay_line_own made and no one else holds
 * yet (one reference), seq instead of the one it was made with: its text's
 * tail, its seq and, when its object holds one, the object's, without a
 * parse. For a line that must wait for another to take its seq first (the
 * foreign_line error line before a verdict, daemon/worker.c). A line
 * shared or not made so is a bug of the caller's: quald aborts. */
void relay_line_reseq(struct line *l, long seq);

#endif
