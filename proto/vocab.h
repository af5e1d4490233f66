/* The vocabulary every program shares (docs/output.md, docs/protocol.md):
 * run and job verdicts, case verdicts, job states, the error lines' codes,
 * the exit status a verdict gives, and the job id. Each is one table below,
 * an X-macro in the manner of libuv's UV_ERRNO_MAP, and every enum, name and
 * property is generated from it: inside a program a verdict is an enum, and
 * a word only on the wire, written by vocab_*_name() and read by
 * vocab_*_parse(). tests/vocab_words.sh fails when one of these words is
 * written as a string literal anywhere else in the C sources. */
#ifndef QUAL_PROTO_VOCAB_H
#define QUAL_PROTO_VOCAB_H

#include <stdbool.h>
#include <stddef.h>

#include "common/exitcode.h"

/* ---- run and job verdicts ------------------------------------------------
 *
 * X(ENUM, word, exit status, notice): a verdict line's "verdict". The first
 * five are a run's (stats/judge.c), not_timed a run that timed nothing, and
 * cancelled and interrupted only quald's (a job it ended). The exit status is
 * what qual-run, qual-judge and qualctl return for it (README, "Exit
 * status"; common/exitcode.h); notice: a gate fails on it, worth an
 * operator's notice in quald's log. */
#define VOCAB_VERDICTS(X)                                                    \
	X(IMPROVEMENT, "improvement", QUAL_EXIT_PASS, false)                 \
	X(NEUTRAL, "neutral", QUAL_EXIT_PASS, false)                         \
	X(REGRESSION, "regression", QUAL_EXIT_REGRESSION, true)              \
	X(FAIL, "fail", QUAL_EXIT_FAIL, true)                                \
	X(ERROR, "error", QUAL_EXIT_ERROR, true)                             \
	X(NOT_TIMED, "not_timed", QUAL_EXIT_PASS, false)                     \
	X(CANCELLED, "cancelled", QUAL_EXIT_ERROR, false)                    \
	X(INTERRUPTED, "interrupted", QUAL_EXIT_ERROR, true)

enum run_verdict {
#define VOCAB_X(e, word, exit, notice) RUN_##e,
	VOCAB_VERDICTS(VOCAB_X)
#undef VOCAB_X
	RUN_VERDICT_UNKNOWN, /* no verdict, or a word of none of the above:
			      * also the number of verdicts */
};

/* "improvement" for RUN_IMPROVEMENT; NULL for RUN_VERDICT_UNKNOWN. */
const char *vocab_verdict_name(enum run_verdict v);

/* The verdict named word; RUN_VERDICT_UNKNOWN for NULL or an unknown word. */
enum run_verdict vocab_verdict_parse(const char *word);

/* The exit status of v: the one mapping from a verdict to an exit status
 * (qual-run, qual-judge, qualctl). An unknown verdict is QUAL_EXIT_ERROR:
 * it must not pass a gate. */
int vocab_verdict_exit(enum run_verdict v);

/* Whether a gate fails on v (regression, fail, error, interrupted). */
bool vocab_verdict_notice(enum run_verdict v);

/* ---- case verdicts --------------------------------------------------------
 *
 * X(ENUM, word, kind): a case_verdict line's "verdict" (stats/stats.h
 * judges them). The kind says what a reader may take from the line: a
 * measured case carries its ratio and p-values, a failed one only its
 * failed_arm, a skipped one (never timed, or not applicable to the target)
 * nothing to count. */
enum case_kind {
	CASE_MEASURED,
	CASE_FAILED,
	CASE_SKIPPED,
};

#define VOCAB_CASE_VERDICTS(X)                                               \
	X(EQUIVALENT, "equivalent", CASE_MEASURED)                           \
	X(FASTER, "faster", CASE_MEASURED)                                   \
	X(SLOWER, "slower", CASE_MEASURED)                                   \
	X(INCONCLUSIVE, "inconclusive", CASE_MEASURED)                       \
	X(IDENTICAL, "identical", CASE_MEASURED)                             \
	X(FAIL, "fail", CASE_FAILED)                                         \
	X(NOT_TIMED, "not_timed", CASE_SKIPPED)                              \
	X(NOT_APPLICABLE, "not_applicable", CASE_SKIPPED)

enum case_verdict {
#define VOCAB_X(e, word, kind) VERDICT_##e,
	VOCAB_CASE_VERDICTS(VOCAB_X)
#undef VOCAB_X
	CASE_VERDICT_UNKNOWN, /* also the number of case verdicts */
};

/* "equivalent" for VERDICT_EQUIVALENT; NULL for CASE_VERDICT_UNKNOWN. */
const char *vocab_case_verdict_name(enum case_verdict v);

/* The case verdict named word; CASE_VERDICT_UNKNOWN for NULL or unknown. */
enum case_verdict vocab_case_verdict_parse(const char *word);

/* v's kind; CASE_SKIPPED for CASE_VERDICT_UNKNOWN (nothing to count). */
enum case_kind vocab_case_verdict_kind(enum case_verdict v);

/* ---- job states ------------------------------------------------------------
 *
 * X(ENUM, word, ended): a job's "state" (state.json, quald's replies, the
 * metrics). A job that ended has its verdict line; one that has not is
 * still in the queue or running. */
#define VOCAB_JOB_STATES(X)                                                  \
	X(QUEUED, "queued", false)                                           \
	X(RUNNING, "running", false)                                         \
	X(DONE, "done", true)                                                \
	X(CANCELLED, "cancelled", true)                                      \
	X(INTERRUPTED, "interrupted", true)

enum job_state {
#define VOCAB_X(e, word, ended) JOB_##e,
	VOCAB_JOB_STATES(VOCAB_X)
#undef VOCAB_X
	JOB_STATE_UNKNOWN, /* also the number of states */
};

/* "queued" for JOB_QUEUED; NULL for JOB_STATE_UNKNOWN. */
const char *vocab_state_name(enum job_state s);

/* The state named word; JOB_STATE_UNKNOWN for NULL or an unknown word. */
enum job_state vocab_state_parse(const char *word);

/* Whether a job in state s has ended (done, cancelled, interrupted). */
bool vocab_state_ended(enum job_state s);

/* ---- error codes ------------------------------------------------------------
 *
 * X(ENUM, word): an error line's "code", the machine-readable code that a
 * decision reads (quald's blame and quarantine, qualctl), while "message" is
 * for people and may be reworded at will. docs/output.md lists them. */
#define VOCAB_CODES(X)                                                       \
	/* A compiler under test. */                                         \
	X(COMPILE_FAILED, "compile_failed")   /* rejected the source, or no
						 final code */                \
	X(COMPILE_CRASHED, "compile_crashed") /* its child died by a signal */ \
	X(COMPILE_KILLED, "compile_killed")   /* its child died by a signal
						 another process sent: no
						 arm's doing, no crash */     \
	X(COMPILE_TIMEOUT, "compile_timeout") /* ran past the time limit */  \
	X(COMPILE_LIMIT, "compile_limit")     /* a log or code object over
						 the limit */                  \
	X(COMPILE_NO_REPORT, "compile_no_report") /* its child exited without
						     its report: a library
						     that calls exit(), or
						     qual's own helper failing;
						     no crash */               \
	X(NO_ABI, "no_abi")                   /* neither nvrtc's nor hiprtc's
						 entry points */               \
	X(LIBRARY_CHANGED, "library_changed") /* its file is not the library
						 that was checked (another
						 sha256): not loaded */        \
	/* An arm's code on the GPU. */                                      \
	X(LOAD_FAILED, "load_failed")         /* the runtime refused it */    \
	X(WRONG_OUTPUT, "wrong_output")       /* differs from the oracle */   \
	X(GPU_FAULT, "gpu_fault")             /* a runtime error while it ran */ \
	X(GPU_HANG, "gpu_hang")               /* a wait ran past its deadline */ \
	/* The run, the machine, qual itself. */                             \
	X(USAGE, "usage")                     /* a bad option, file or library
						 path */                       \
	X(NO_DEVICE, "no_device")             /* no GPU runtime or no such
						 device */                     \
	X(SESSION_FAILED, "session_failed")   /* a timing session ended badly */ \
	X(CUT_OFF, "cut_off")                 /* a stream ended inside a line */ \
	X(BAD_LINE, "bad_line")               /* a worker wrote what is not a
						 qual line */                  \
	X(FOREIGN_LINE, "foreign_line")       /* a worker wrote objects that are
						 not the engine's lines
						 (lines_check()): refused */   \
	X(INTERRUPTED, "interrupted")         /* the job's worker was lost
						 (quald restart) */            \
	X(INTERNAL, "internal")               /* qual's own trouble (i/o,
						 memory, a bug) */             \
	X(ORACLE_FAILED, "oracle_failed")     /* a case's oracle gave no
						 expected values */            \
	X(BAD_FIXTURE, "bad_fixture")         /* a case could not be built from
						 its description */

enum lines_code {
	LINES_CODE_NONE = 0, /* no code: a line of schema 1 or 2, or an unknown
			      * one */
#define VOCAB_X(e, word) LINES_CODE_##e,
	VOCAB_CODES(VOCAB_X)
#undef VOCAB_X
	LINES_CODE_COUNT
};

/* "compile_crashed" for LINES_CODE_COMPILE_CRASHED; NULL for NONE. */
const char *vocab_code_name(enum lines_code code);

/* The code of a name; LINES_CODE_NONE for NULL or an unknown name. */
enum lines_code vocab_code_parse(const char *name);

/* ---- job ids ----------------------------------------------------------------
 *
 * A job's id is "j" and its number, which starts at 1, in decimal, padded
 * with zeros to six digits ("j000001", "j1234567"): quald's store numbers
 * jobs from 1, and every door (a request's field, an HTTP path, a stored
 * folder's name) takes the same ids by this one rule. Each job has one
 * spelling, the one vocab_job_id_format writes: "j0000001" (a zero more
 * than the padding) is no job id, so that no two names reach one job. */

/* The longest id, with its NUL. */
#define VOCAB_JOB_ID_MAX 32

/* A list request's jobs when it gives no limit, and the most it may ask
 * for (docs/protocol.md, list). */
#define VOCAB_LIST_DEFAULT 20
#define VOCAB_LIST_MAX 1000

/* The number of job id id (>= 1), or -1 when id is NULL or no job id: not
 * "j" and 6 to VOCAB_JOB_ID_MAX - 2 digits, number 0, or a number of more
 * than six digits with a leading zero (not the canonical spelling). */
long vocab_job_id_parse(const char *id);

/* The id of job number num (>= 1) into out ("j000001"). */
void vocab_job_id_format(long num, char *out, size_t cap);

#endif
