/* proto/vocab.c: every word of the tables reads back as its enum, unknown
 * words are refused, each verdict's exit status is the README's, and the
 * job id rule (ids start at j000001). */
#include <limits.h>
#include <string.h>

#include "proto/vocab.h"
#include "tests/unit/test_main.h"

static void test_verdict_round_trip(void **state)
{
	(void)state;
	for (int v = 0; v < RUN_VERDICT_UNKNOWN; v++) {
		const char *w = vocab_verdict_name((enum run_verdict)v);

		assert_non_null(w);
		assert_int_equal(vocab_verdict_parse(w), v);
	}
	assert_string_equal(vocab_verdict_name(RUN_REGRESSION), "regression");
	assert_string_equal(vocab_verdict_name(RUN_NOT_TIMED), "not_timed");
	assert_null(vocab_verdict_name(RUN_VERDICT_UNKNOWN));
	assert_null(vocab_verdict_name((enum run_verdict)-1));
	assert_int_equal(vocab_verdict_parse(NULL), RUN_VERDICT_UNKNOWN);
	assert_int_equal(vocab_verdict_parse("Neutral"), RUN_VERDICT_UNKNOWN);
	assert_int_equal(vocab_verdict_parse("equivalent"), RUN_VERDICT_UNKNOWN);
	assert_int_equal(vocab_verdict_parse(""), RUN_VERDICT_UNKNOWN);
}

/* README, "Exit status": pass 0 (improvement, neutral, not_timed),
 * regression 1, fail 2, error 3 (error, cancelled, interrupted, unknown). */
static void test_verdict_exit(void **state)
{
	static const struct {
		const char *word;
		int exit;
		bool notice;
	} want[] = {
		{ "improvement", 0, false }, { "neutral", 0, false },
		{ "not_timed", 0, false }, { "regression", 1, true },
		{ "fail", 2, true }, { "error", 3, true },
		{ "cancelled", 3, false }, { "interrupted", 3, true },
	};

	(void)state;
	assert_int_equal(sizeof want / sizeof want[0], RUN_VERDICT_UNKNOWN);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		enum run_verdict v = vocab_verdict_parse(want[i].word);

		assert_int_not_equal(v, RUN_VERDICT_UNKNOWN);
		assert_int_equal(vocab_verdict_exit(v), want[i].exit);
		assert_int_equal(vocab_verdict_notice(v), want[i].notice);
	}
	assert_int_equal(vocab_verdict_exit(RUN_VERDICT_UNKNOWN), QUAL_EXIT_ERROR);
	assert_int_equal(vocab_verdict_exit(vocab_verdict_parse("bogus")), QUAL_EXIT_ERROR);
}

static void test_case_verdicts(void **state)
{
	(void)state;
	for (int v = 0; v < CASE_VERDICT_UNKNOWN; v++)
		assert_int_equal(vocab_case_verdict_parse(
				 vocab_case_verdict_name((enum case_verdict)v)), v);
	assert_int_equal(vocab_case_verdict_parse("slower"), VERDICT_SLOWER);
	assert_int_equal(vocab_case_verdict_parse("neutral"), CASE_VERDICT_UNKNOWN);
	assert_int_equal(vocab_case_verdict_parse(NULL), CASE_VERDICT_UNKNOWN);
	assert_null(vocab_case_verdict_name(CASE_VERDICT_UNKNOWN));
	assert_int_equal(vocab_case_verdict_kind(VERDICT_IDENTICAL), CASE_MEASURED);
	assert_int_equal(vocab_case_verdict_kind(VERDICT_INCONCLUSIVE), CASE_MEASURED);
	assert_int_equal(vocab_case_verdict_kind(VERDICT_FAIL), CASE_FAILED);
	assert_int_equal(vocab_case_verdict_kind(VERDICT_NOT_TIMED), CASE_SKIPPED);
	assert_int_equal(vocab_case_verdict_kind(VERDICT_NOT_APPLICABLE), CASE_SKIPPED);
	assert_int_equal(vocab_case_verdict_kind(CASE_VERDICT_UNKNOWN), CASE_SKIPPED);
}

static void test_states(void **state)
{
	(void)state;
	for (int s = 0; s < JOB_STATE_UNKNOWN; s++)
		assert_int_equal(vocab_state_parse(vocab_state_name((enum job_state)s)), s);
	assert_int_equal(vocab_state_parse("running"), JOB_RUNNING);
	assert_int_equal(vocab_state_parse("ended"), JOB_STATE_UNKNOWN);
	assert_false(vocab_state_ended(JOB_QUEUED));
	assert_false(vocab_state_ended(JOB_RUNNING));
	assert_true(vocab_state_ended(JOB_DONE));
	assert_true(vocab_state_ended(JOB_CANCELLED));
	assert_true(vocab_state_ended(JOB_INTERRUPTED));
	assert_false(vocab_state_ended(JOB_STATE_UNKNOWN));
}

/* One rule at every door: "j", 6 or more digits, number >= 1, shorter than
 * VOCAB_JOB_ID_MAX. */
static void test_job_id(void **state)
{
	char id[VOCAB_JOB_ID_MAX + 8];

	(void)state;
	assert_int_equal(vocab_job_id_parse("j000001"), 1);
	/* One spelling per job: no zeros beyond the six-digit padding. */
	assert_int_equal(vocab_job_id_parse("j0000000012"), -1);
	assert_int_equal(vocab_job_id_parse("j0000001"), -1);
	assert_int_equal(vocab_job_id_parse("j01234567"), -1);
	assert_int_equal(vocab_job_id_parse("j000012"), 12);
	assert_int_equal(vocab_job_id_parse("j1000000"), 1000000);
	assert_int_equal(vocab_job_id_parse("j1234567"), 1234567);
	assert_int_equal(vocab_job_id_parse("j000000"), -1); /* ids start at 1 */
	assert_int_equal(vocab_job_id_parse("j00001"), -1);
	assert_int_equal(vocab_job_id_parse("job1"), -1);
	assert_int_equal(vocab_job_id_parse("J000001"), -1);
	assert_int_equal(vocab_job_id_parse("j00000a1"), -1);
	assert_int_equal(vocab_job_id_parse(""), -1);
	assert_int_equal(vocab_job_id_parse(NULL), -1);
	/* Padded past six digits to the longest that fits VOCAB_JOB_ID_MAX, and
	 * one byte more: no job id either way. */
	memset(id, '0', sizeof id);
	id[0] = 'j';
	id[VOCAB_JOB_ID_MAX - 2] = '7';
	id[VOCAB_JOB_ID_MAX - 1] = '\0';
	assert_int_equal(vocab_job_id_parse(id), -1);
	id[VOCAB_JOB_ID_MAX - 1] = '7';
	id[VOCAB_JOB_ID_MAX] = '\0';
	assert_int_equal(vocab_job_id_parse(id), -1);
	/* A number of 18 digits, written as quald writes it. */
	vocab_job_id_format(LONG_MAX / 10, id, sizeof id);
	assert_int_equal(vocab_job_id_parse(id), LONG_MAX / 10);
	vocab_job_id_format(1, id, sizeof id);
	assert_string_equal(id, "j000001");
	vocab_job_id_format(12345678, id, sizeof id);
	assert_string_equal(id, "j12345678");
	assert_int_equal(vocab_job_id_parse(id), 12345678);
}

QUAL_TESTS(
	cmocka_unit_test(test_verdict_round_trip),
	cmocka_unit_test(test_verdict_exit),
	cmocka_unit_test(test_case_verdicts),
	cmocka_unit_test(test_states),
	cmocka_unit_test(test_job_id),
)
