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

/* The machine-readable code of an error line, its "code" field: what a
 * decision reads (quald's blame and quarantine, qualctl), while "message"
 * is for people and may be reworded at will. docs/output.md lists them. */
enum lines_code {
	LINES_CODE_NONE = 0,     /* no code: a line of schema 1 or 2, or an
				  * unknown one */
	/* A compiler under test. */
	LINES_CODE_COMPILE_FAILED,  /* rejected the source, or no final code */
	LINES_CODE_COMPILE_CRASHED, /* its child died by a signal */
	LINES_CODE_COMPILE_TIMEOUT, /* its child ran past the time limit */
	LINES_CODE_COMPILE_LIMIT,   /* a log or code object over the limit */
	LINES_CODE_COMPILE_NO_REPORT, /* its child exited without its report: a
				       * library that calls exit(), or qual's
				       * own helper failing (no space, a helper
				       * of another version); no crash */
	LINES_CODE_NO_ABI,          /* neither nvrtc's nor hiprtc's entry points */
	LINES_CODE_LIBRARY_CHANGED, /* its file is not the library that was
				     * checked (another sha256): not loaded */
	/* An arm's code on the GPU. */
	LINES_CODE_LOAD_FAILED,     /* the runtime refused to load it */
	LINES_CODE_WRONG_OUTPUT,    /* differs from the oracle */
	LINES_CODE_GPU_FAULT,       /* a runtime error while it ran */
	LINES_CODE_GPU_HANG,        /* a wait ran past its deadline */
	/* The run, the machine, qual itself. */
	LINES_CODE_USAGE,           /* a bad option, file or library path */
	LINES_CODE_NO_DEVICE,       /* no GPU runtime or no such device */
	LINES_CODE_SESSION_FAILED,  /* a timing session ended badly */
	LINES_CODE_CUT_OFF,         /* a stream ended inside a line */
	LINES_CODE_BAD_LINE,        /* a worker wrote what is not a qual line */
	LINES_CODE_FOREIGN_LINE,    /* a worker wrote objects that are not the
				     * engine's lines (lines_check()): refused */
	LINES_CODE_INTERRUPTED,     /* the job's worker was lost (quald restart) */
	LINES_CODE_INTERNAL,        /* qual's own trouble (i/o, memory, a bug) */
	LINES_CODE_ORACLE_FAILED,   /* a case's oracle gave no expected values */
	LINES_CODE_BAD_FIXTURE,     /* a case could not be built from its description */
	LINES_CODE_COUNT
};

/* "compile_crashed" for LINES_CODE_COMPILE_CRASHED; NULL for NONE. */
const char *lines_code_name(enum lines_code code);

/* The code of a name; LINES_CODE_NONE for NULL or an unknown name. */
enum lines_code lines_code_parse(const char *name);

/* The code for a failure with QUAL_E* err at stage ("setup", "compile",
 * "load", "check", "time"): QUAL_ECRASH, QUAL_ETIMEOUT, QUAL_ELIMIT and
 * QUAL_EEXIT are a compiler child's (compile_crashed, ...), QUAL_ECHECK is wrong_output,
 * QUAL_EHANG gpu_hang, QUAL_EGPU gpu_fault except at load (load_failed), and
 * so on; what is none of those is internal. */
enum lines_code lines_code_of(const char *stage, int err);

/* An error line (new reference): stage ("setup", "compile", "load",
 * "check", "time"), code, arm ("baseline", "candidate" or NULL), case name
 * or NULL, message. lines_error() writes it to out (lines_emit()). */
json_t *lines_error_new(const char *stage, enum lines_code code, const char *arm,
			const char *case_name, const char *message);
int lines_error(FILE *out, const char *stage, enum lines_code code, const char *arm,
		const char *case_name, const char *message);

/* ---- reading ---------------------------------------------------------- */

enum lines_type {
	LINES_OTHER = 0, /* not an object, no type, or a type of no one's */
	LINES_START,
	LINES_CASE,
	LINES_PAIR,
	LINES_CASE_VERDICT,
	LINES_VERDICT,
	LINES_ERROR,
	LINES_BLOCK,     /* after each block of a case's pairs: placement, clocks */
	LINES_SESSION_TIME, /* a timing session's phases (common/timesplit.h) */
	LINES_CALIBRATION_RUN, /* how one run of a calibration ended
				* (run/qual_calibrate.c) */
};

/* What a line says, for a reader that decides. Strings are borrowed from
 * the line and live as long as it does. */
struct lines_info {
	enum lines_type type;
	const char *verdict;   /* a verdict's or case_verdict's "verdict" */
	const char *arm;       /* an error's "arm", a case_verdict's
				* "failed_arm"; NULL when none */
	const char *case_name; /* "case", when a string */
	enum lines_code code;  /* an error's "code" */
	bool gpu_faulted;      /* an error with "gpu": "faulted" */
	bool gpu_hung;         /* an error with "gpu": "hung" */
};

/* Fills info from line (borrowed; may be NULL or not an object). */
void lines_classify(json_t *line, struct lines_info *info);

/* Whether line (borrowed) is one of the output schema's lines, as far as a
 * reader that decides needs to know (docs/schema/lines.schema.json): an
 * object with a known "type", every field that type requires at its top
 * level with its JSON kind (a start line's "device" is not read and may be
 * anything), "schema_version" from 1 to QUAL_SCHEMA_VERSION, and the values
 * decisions read from their fixed sets: a verdict's "verdict", a
 * case_verdict's "verdict" and the "failed_arm" a fail requires, an error's
 * "stage", "arm", "code" and "gpu" (the last two when present). Nested
 * objects and optional fields are not checked. Returns 0, or QUAL_EINVAL
 * with msg saying the first thing wrong ("a line of type 'verdict' without
 * 'timed'"). quald refuses a worker's line that fails (daemon/worker.c). */
int lines_check(json_t *line, struct qual_msg *msg);

/* True when info names the candidate arm. */
bool lines_blames_candidate(const struct lines_info *info);

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
