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
 *                  is written anew (compact) with ours in their place.
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

#endif
