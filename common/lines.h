/* JSON lines: the output contract of the engine (docs/output.md, schema in
 * docs/schema/lines.schema.json). Every line is one compact JSON object with a
 * "type"; this module writes them. */
#ifndef QUAL_LINES_H
#define QUAL_LINES_H

#include <stdio.h>

#include <jansson.h>

/* Version of the line format; in every start line as "schema_version".
 * Incremented only by incompatible changes; fields may be added freely. */
#define QUAL_SCHEMA_VERSION 2

/* Writes line (steals the reference) as one compact line and flushes, so a
 * reader following the stream sees it at once. Returns 0 or QUAL_EIO. */
int lines_emit(FILE *out, json_t *line);

/* A new object {"type": type}. */
json_t *lines_new(const char *type);

/* A JSON number, or null when x is NaN or infinite (JSON has no NaN). */
json_t *lines_real(double x);

/* A JSON string of s; bytes that are not valid UTF-8 (compiler logs may hold
 * any) become '?', so text is never dropped. NULL gives null. */
json_t *lines_text(const char *s);

/* An error line: stage ("setup", "compile", "load", "check", "time"), arm
 * ("baseline", "candidate" or NULL), case name or NULL, message. */
int lines_error(FILE *out, const char *stage, const char *arm,
		 const char *case_name, const char *message);

#endif
