/* Framing of the requests a connection sends (docs/protocol.md): one request
 * per line ending in "\n" (a "\r" before it is dropped), blank lines allowed
 * between requests, a line over the limit refused and skipped up to its
 * newline. Pure: no I/O, no loop; the server feeds it the bytes it has read,
 * and the fuzz target (tests/fuzz/fuzz_request.c) feeds it anything. */
#ifndef QUAL_FRAME_H
#define QUAL_FRAME_H

#include <stdbool.h>
#include <stddef.h>

/* A connection's framing state, across reads (caller's storage; zero it to
 * start). */
struct frame {
	bool skipping;  /* discarding an oversize line up to its newline */
};

enum frame_event {
	FRAME_NONE,     /* no complete line in the input: read more */
	FRAME_LINE,     /* one request line */
	FRAME_OVERSIZE, /* a line grew past the limit without its newline:
			 * refuse it; the rest of it, up to its newline, is
			 * skipped by the next calls */
};

/* Finds the next request line in buf[0, avail), the unprocessed input.
 * *used is set to the number of bytes the caller must drop from the front of
 * its input (always, whatever the event; it may be > 0 with FRAME_NONE: the
 * blank lines and skipped bytes consumed). With FRAME_LINE, *line points into
 * buf at the line and *len is its length: no "\n", no trailing "\r", never
 * blank (spaces and tabs only), and at most avail bytes (a line whose newline
 * came in the same read may be longer than max: request_parse refuses it).
 * eof says the peer will send nothing more, so a last line without its
 * newline counts. max is the longest line that may stay buffered without its
 * newline (REQUEST_MAX_LINE). */
enum frame_event frame_next(struct frame *f, const char *buf, size_t avail,
			    bool eof, size_t max, size_t *used,
			    const char **line, size_t *len);

#endif
