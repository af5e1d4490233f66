/* A line as it enters a process (docs/output.md): parsed once where it comes
 * in (quald's relay of a worker's stdout, a stored log quald reads to decide
 * from it, qualctl's connection) into a struct line that carries what every later reader
 * decides from (its type, seq, job, verdict, error code) with the object
 * and its bytes, so that no later hop parses it again or matches its bytes:
 * the writer, the fanout to followers, the HTTP event streams, the history
 * and the jobs table take the struct. "Parse at the door, pass values
 * inside" (docs/style.md). A stored line that is only passed on is not
 * parsed at all: its seq, which quald writes last, is read from its bytes
 * (line_tail_seq). */
#ifndef QUAL_PROTO_LINE_H
#define QUAL_PROTO_LINE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "common/err.h"
#include "common/lines.h"
#include "proto/vocab.h"

/* ---- what a line is (moved here from common/lines.h, which writes and
 * splits lines: what one says needs the vocabulary) ---- */

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

/* A code line's instruction classes, in order: its "mix" keys (run/explain.c
 * writes them, qualctl explain and the dashboard read them; the opcodes of
 * each are compile/disasm.c's, docs/explain.md lists them). */
#define LINES_CODE_MIX(X)                                                     \
	X(MMA, "mma")         /* tensor cores: HMMA, IMMA, HGMMA, v_mfma */   \
	X(GLOBAL, "global")   /* global memory, TMA, atomics */               \
	X(SHARED, "shared")   /* shared memory (LDS) */                       \
	X(LOCAL, "local")     /* local memory (scratch): spills */            \
	X(CONVERT, "convert") /* conversions between number types */          \
	X(BRANCH, "branch")   /* branches, calls, exits */                    \
	X(BARRIER, "barrier") /* barriers, fences, waits */                   \
	X(OTHER, "other")     /* arithmetic, moves and the rest */

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
	LINES_CODE,      /* what the compilers made of a case (run/explain.c) */
	LINES_BISECT_STEP, /* qual-bisect: one comparison made (run/qual_bisect.c) */
	LINES_BISECT,    /* qual-bisect: the changes found */
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

/* ---- a line parsed once ---- */

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

/* The seq of a line quald wrote, read from its bytes text[0, len) without a
 * parse: every line quald relays or makes ends with ,"job":"ID","seq":N}
 * (daemon/relay.h), so N is read from the end. -1 when the line does not
 * end so (a stored line of an older quald, which put ids it rewrote where
 * the worker had them): its reader parses it instead. For readers of a
 * stored log that only pass bytes on (daemon/jobs_reply.c). */
long line_tail_seq(const char *text, size_t len);

#endif
