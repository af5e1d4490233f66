/* Text: the one rule for turning bytes into a JSON string, and the one
 * parser of numbers given as text (options, key=value files). */
#ifndef QUAL_TEXT_H
#define QUAL_TEXT_H

#include <stddef.h>

#include <jansson.h>

#include "common/err.h"

/* A JSON string of the first len bytes of s (a new reference): the bytes as
 * they are where they are valid UTF-8, and '?' for each byte that is not and
 * for each NUL, so that text (a compiler log may hold any bytes) is never
 * dropped and never cut short. Other control characters are kept (JSON
 * escapes them). NULL gives null. */
json_t *text_json(const char *s, size_t len);

/* text_json() of a NUL-terminated string. */
json_t *text_json_str(const char *s);

/* The last line of the first len bytes of s that holds more than white
 * space, its trailing spaces and carriage returns cut, into out (cap
 * bytes); "" when there is none. What a message quotes of a child's stderr
 * ("exited with status 3: qual-compile: cannot write ..."). */
void text_last_line(const char *s, size_t len, char *out, size_t cap);

/* Parses s, which must be a whole decimal integer in [lo, hi], into *out.
 * Returns 0, or QUAL_EINVAL with msg saying what was wrong, naming what:
 * "--pairs must be an integer in [1, 1000000], got 'x'" (">= lo" when hi is
 * LONG_MAX). */
int text_parse_long(const char *what, const char *s, long lo, long hi, long *out,
		    struct qual_msg *msg);

/* The same for a finite number (strtod's syntax) in [lo, hi]: "--alpha must
 * be a number in [0, 1], got 'x'" (">= lo" when hi is infinite, no range
 * when both are). */
int text_parse_double(const char *what, const char *s, double lo, double hi,
		      double *out, struct qual_msg *msg);

#endif
