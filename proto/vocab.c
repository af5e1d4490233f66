/* The shared vocabulary (vocab.h): every table here is generated from the
 * X-macros there, so a word, its enum and its properties are written once. */
#include "proto/vocab.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* The index of word in names[0, n), or n when it is none of them. */
static int word_index(const char *const *names, int n, const char *word)
{
	int i = 0;

	while (word && i < n && strcmp(word, names[i]))
		i++;
	return word ? i : n;
}

/* names[i] of the n names, or NULL for an index outside them. */
static const char *word_at(const char *const *names, int n, int i)
{
	return i >= 0 && i < n ? names[i] : NULL;
}

/* ---- run and job verdicts ---- */

static const struct {
	int exit;
	bool notice;
} verdicts[] = {
#define VOCAB_X(e, word, exit, notice) { exit, notice },
	VOCAB_VERDICTS(VOCAB_X)
#undef VOCAB_X
};
static const char *const verdict_words[] = {
#define VOCAB_X(e, word, exit, notice) word,
	VOCAB_VERDICTS(VOCAB_X)
#undef VOCAB_X
};
_Static_assert(sizeof verdicts / sizeof verdicts[0] == RUN_VERDICT_UNKNOWN,
	       "one entry for every run_verdict");

static bool verdict_known(enum run_verdict v)
{
	return (int)v >= 0 && v < RUN_VERDICT_UNKNOWN;
}

const char *vocab_verdict_name(enum run_verdict v)
{
	return word_at(verdict_words, RUN_VERDICT_UNKNOWN, (int)v);
}

enum run_verdict vocab_verdict_parse(const char *word)
{
	return (enum run_verdict)word_index(verdict_words, RUN_VERDICT_UNKNOWN, word);
}

int vocab_verdict_exit(enum run_verdict v)
{
	return verdict_known(v) ? verdicts[v].exit : QUAL_EXIT_ERROR;
}

bool vocab_verdict_notice(enum run_verdict v)
{
	return verdict_known(v) ? verdicts[v].notice : true;
}

/* ---- case verdicts ---- */

static const char *const case_words[] = {
#define VOCAB_X(e, word, kind) word,
	VOCAB_CASE_VERDICTS(VOCAB_X)
#undef VOCAB_X
};
static const enum case_kind case_kinds[] = {
#define VOCAB_X(e, word, kind) kind,
	VOCAB_CASE_VERDICTS(VOCAB_X)
#undef VOCAB_X
};
_Static_assert(sizeof case_words / sizeof case_words[0] == CASE_VERDICT_UNKNOWN,
	       "one word for every case_verdict");

const char *vocab_case_verdict_name(enum case_verdict v)
{
	return word_at(case_words, CASE_VERDICT_UNKNOWN, (int)v);
}

enum case_verdict vocab_case_verdict_parse(const char *word)
{
	return (enum case_verdict)word_index(case_words, CASE_VERDICT_UNKNOWN, word);
}

enum case_kind vocab_case_verdict_kind(enum case_verdict v)
{
	return word_at(case_words, CASE_VERDICT_UNKNOWN, (int)v) ? case_kinds[v] : CASE_SKIPPED;
}

/* ---- job states ---- */

static const char *const state_words[] = {
#define VOCAB_X(e, word, ended) word,
	VOCAB_JOB_STATES(VOCAB_X)
#undef VOCAB_X
};
static const bool state_ended[] = {
#define VOCAB_X(e, word, ended) ended,
	VOCAB_JOB_STATES(VOCAB_X)
#undef VOCAB_X
};
_Static_assert(sizeof state_words / sizeof state_words[0] == JOB_STATE_UNKNOWN,
	       "one word for every job_state");

const char *vocab_state_name(enum job_state s)
{
	return word_at(state_words, JOB_STATE_UNKNOWN, (int)s);
}

enum job_state vocab_state_parse(const char *word)
{
	return (enum job_state)word_index(state_words, JOB_STATE_UNKNOWN, word);
}

bool vocab_state_ended(enum job_state s)
{
	return word_at(state_words, JOB_STATE_UNKNOWN, (int)s) && state_ended[s];
}

/* ---- error codes ---- */

static const char *const code_words[LINES_CODE_COUNT] = {
	NULL, /* LINES_CODE_NONE */
#define VOCAB_X(e, word) word,
	VOCAB_CODES(VOCAB_X)
#undef VOCAB_X
};

const char *vocab_code_name(enum lines_code code)
{
	return code > LINES_CODE_NONE ? word_at(code_words, LINES_CODE_COUNT, (int)code) : NULL;
}

enum lines_code vocab_code_parse(const char *name)
{
	int c = word_index(code_words + 1, LINES_CODE_COUNT - 1, name);

	return c < LINES_CODE_COUNT - 1 ? (enum lines_code)(c + 1) : LINES_CODE_NONE;
}

/* ---- job ids ---- */

long vocab_job_id_parse(const char *id)
{
	const char *p;
	long num = 0;

	if (!id || id[0] != 'j')
		return -1;
	for (p = id + 1; *p; p++) {
		if (*p < '0' || *p > '9' || num > (LONG_MAX - 9) / 10)
			return -1;
		num = num * 10 + (*p - '0');
	}
	if (p - (id + 1) < 6 || p - id > VOCAB_JOB_ID_MAX - 1 || num < 1)
		return -1;
	/* One spelling per job: zeros only to pad the number to six digits
	 * (j0000001 is not j000001, nor any job). */
	if (p - (id + 1) > 6 && id[1] == '0')
		return -1;
	return num;
}

void vocab_job_id_format(long num, char *out, size_t cap)
{
	snprintf(out, cap, "j%06ld", num);
}
