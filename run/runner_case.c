/* The pair runner's cases: one case compiled by both arms (its code from
 * the compile phase), then, when timed, loaded, warmed up, checked
 * (runner_check.c) and timed (runner_time.c), or reported as not applicable
 * to the target or as a fixture that could not be built. */
#include "run/runner_internal.h"

#include <string.h>

#include "common/lines.h"
#include "proto/line.h"
#include "proto/vocab.h"

static int compile_arm(struct run *run, const struct fixture_case *c, int arm,
		       struct arm *a)
{
	const struct compiled *e = runner__compile(run, c, arm);

	a->code = &e->res;
	a->cached = e->cached;
	if (e->res.status != 0)
		return e->res.status;
	a->compiled = true;
	return 0;
}

/* The error line of a case both arms failed to compile with the same code:
 * the same way, so the case shows nothing against the candidate (the same
 * library in both arms, a limit too short for the job, a source neither
 * takes). One line with the arms' common code and arm null (neither arm's:
 * no quarantine strike), naming both failures; the case judged like one
 * whose fixture cannot be built (the run an error, docs/verdicts.md).
 * Failures of different codes are each arm's own (compile_both()). */
static void fail_both(struct run *run, const struct judge_case *jc, enum lines_code code,
		      struct arm arms[2])
{
	char text[2 * sizeof arms[0].code->message + 200];

	snprintf(text, sizeof text, "both arms failed to compile case '%s' the same way "
		 "(%s), so the case is the job's error, not the candidate's fail: "
		 "baseline: %.*s; candidate: %.*s", jc->name, vocab_code_name(code),
		 (int)strcspn(arms[0].code->message, "\n"), arms[0].code->message,
		 (int)strcspn(arms[1].code->message, "\n"), arms[1].code->message);
	runner__emit(run, lines_error_new("compile", code, NULL, jc->name, text));
}

/* Both arms of case c compiled; true when their code is byte-identical
 * (which the judge reads from the case line). Both arms are always
 * attempted (the compile phase queues both; runner__compile() compiles what
 * it did not), whatever their order, so the case is judged on both
 * results. A user fixture (user) that both compilers reject
 * is the fixture's own fault, not an arm's: one bad_fixture line (arm null),
 * the case judged like a fixture that cannot be built (the run an error).
 * Both arms failing with one code is neither arm's either (fail_both()). */
static bool compile_both(struct run *run, const struct fixture_case *c,
			 struct arm arms[2], struct judge_case *jc, bool user)
{
	int rc[2];

	for (int arm = 0; arm < 2; arm++)
		rc[arm] = compile_arm(run, c, arm, &arms[arm]);
	if (user && rc[0] == QUAL_ECOMPILE && rc[1] == QUAL_ECOMPILE) {
		char text[2 * sizeof arms[0].code->message + 160];

		snprintf(text, sizeof text, "user fixture case '%s' compiles with neither "
			 "compiler: baseline: %.*s; candidate: %.*s", c->name,
			 (int)strcspn(arms[0].code->message, "\n"), arms[0].code->message,
			 (int)strcspn(arms[1].code->message, "\n"), arms[1].code->message);
		runner__emit(run, lines_error_new("compile", LINES_CODE_BAD_FIXTURE, NULL,
						  jc->name, text));
	} else if (rc[0] != 0 && rc[1] != 0 &&
		   lines_code_of("compile", rc[0]) == lines_code_of("compile", rc[1])) {
		fail_both(run, jc, lines_code_of("compile", rc[0]), arms);
	} else {
		for (int arm = 0; arm < 2; arm++)
			if (rc[arm] != 0)
				runner__fail_arm(run, jc, arm, "compile", rc[arm],
						 arms[arm].code->message);
	}
	return arms[0].compiled && arms[1].compiled &&
	       strcmp(arms[0].code->code_sha256, arms[1].code->code_sha256) == 0;
}

bool runner__is_user_case(int index)
{
	return index >= fixture_count() - fixture_user_count();
}

/* A case that could not be built: a user fixture's oracle that failed
 * (oracle_failed) or a description that could not be made into inputs
 * (bad_fixture) is neither arm's doing (arm null, the run an error); any
 * other failure is the machine's, charged like the baseline's. */
static void fail_build(struct run *run, struct judge_case *jc, int index, int rc,
		       const char *text)
{
	if (rc == QUAL_EORACLE || runner__is_user_case(index)) {
		runner__emit(run, lines_error_new("setup", rc == QUAL_EORACLE ?
						  LINES_CODE_ORACLE_FAILED : LINES_CODE_BAD_FIXTURE,
						  NULL, jc->name, text));
		return;
	}
	runner__fail_arm(run, jc, 0, "setup", rc, text);
}

/* True when case index cannot run on the run's target (fixture_applies):
 * then it is never built or compiled, and the first call for it (before the
 * sessions, or in the one process) writes its case line and records it as
 * not applicable; later calls (the sessions') only return true. A case
 * whose description cannot be made is left to the build that follows. */
static bool not_applicable(struct run *run, int index)
{
	struct judge_case *jc = judge_case_get(&run->judge, fixture_name(index));
	struct fixture_case c;
	struct qual_msg msg = {{0}};
	char why[256];
	bool applies;

	if (jc->not_applicable)
		return true;
	if (fixture_spec(index, &c, &msg) < 0)
		return false;
	applies = fixture_applies(&c, run->platform, run->arch, why, sizeof why);
	if (!applies)
		runner__emit_not_applicable(run, &c, why);  /* the judge's not_applicable */
	fixture_release(&c);
	return !applies;
}

void runner__run_case(struct run *run, int index)
{
	struct fixture_case c;
	struct arm arms[2];
	struct bufs bufs;
	struct qual_msg msg = {{0}};
	struct judge_case *jc;
	bool identical, timed = run->gpu && !run->gpu_dead;
	double t, timed_before;
	int rc;

	if (not_applicable(run, index))
		return;
	memset(&c, 0, sizeof c);
	memset(arms, 0, sizeof arms);
	memset(&bufs, 0, sizeof bufs);
	jc = judge_case_get(&run->judge, fixture_name(index));
	t = child_now();
	/* Lent, not copied: the runner only reads a case's inputs and
	 * expected values. */
	rc = fixture_borrow(index, run->cfg->seed, &c, &msg);
	timesplit_add(&run->split, TS_FIXTURES, t);
	if (rc < 0) {
		fail_build(run, jc, index, rc, msg.text[0] ? msg.text : "cannot build fixture");
		return;
	}
	identical = compile_both(run, &c, arms, jc, runner__is_user_case(index));
	timed = timed && arms[0].compiled && arms[1].compiled &&
		runner__case_context(run, jc->name) == 0;
	if (timed) {
		run->context_used = true;
		/* Until the baseline's warm-up has been timed. */
		runner__set_limit(run, run->cfg->hang_floor_ms * RUNNER_BASELINE_ALLOWANCE,
				  "the baseline's warm-up allowance, %g x the %g ms floor",
				  RUNNER_BASELINE_ALLOWANCE, run->cfg->hang_floor_ms);
		t = child_now();
		rc = runner__alloc_bufs(run, &c, &bufs, jc);
		t = timesplit_add(&run->split, TS_ALLOC, t);
		for (int arm = 0; arm < 2 && rc == 0; arm++)
			rc = runner__prepare_arm(run, &c, arm, &arms[arm], &bufs, jc);
		t = timesplit_add(&run->split, TS_LOAD, t);
		if (rc == 0)
			rc = runner__warm_up(run, &c, arms, &bufs, jc);
		timesplit_add(&run->split, TS_WARMUP, t);
		if (run->session == 0)
			runner__emit_case(run, &c, arms, identical, true);
		if (rc == 0) {
			if (run->settle && run->cfg->settle_ms > 0) {
				run->settle = false;
				rc = runner__settle(run, arms, jc);
			}
			/* What runner__time_pairs() does not count as blocks or pairs is
			 * its checks after timing. */
			timed_before = run->split.s[TS_BLOCKS] + run->split.s[TS_TIMING];
			t = child_now();
			if (rc == 0)
				runner__time_pairs(run, &c, arms, &bufs, jc);
			run->split.s[TS_CHECKS] += child_now() - t -
				(run->split.s[TS_BLOCKS] + run->split.s[TS_TIMING] - timed_before);
		}
	} else if (!run->gpu_lost) {
		/* (A case whose context could not be made is not reported
		 * untimed: the error line says why GPU work stopped.) */
		runner__emit_case(run, &c, arms, identical, false);
	}
	t = child_now();
	for (int arm = 0; arm < 2; arm++)
		runner__release_arm(&arms[arm]);
	if (run->gpu)
		runner__release_bufs(run, &bufs);
	fixture_release(&c);
	timesplit_add(&run->split, TS_RELEASE, t);
}

/* Before the sessions (runner_internal.h). */
void runner__compile_case(struct run *run, int index)
{
	struct fixture_case c;
	struct arm arms[2];
	struct judge_case *jc = judge_case_get(&run->judge, fixture_name(index));
	struct qual_msg msg = {{0}};
	int rc;
	bool user = runner__is_user_case(index), identical;

	if (not_applicable(run, index))
		return;
	memset(&c, 0, sizeof c);
	memset(arms, 0, sizeof arms);
	/* A built-in case's description is all its compiles need: its inputs
	 * and its oracle's values are the sessions' (each copies the build
	 * kept for the run: keep_fixtures()). A user case is built (its
	 * registry keeps what its oracle gave), so that an oracle's failure is
	 * reported here, once. */
	rc = user ? fixture_build(index, run->cfg->seed, &c, &msg) : fixture_spec(index, &c, &msg);
	if (rc < 0) {
		fail_build(run, jc, index, rc, msg.text[0] ? msg.text : "cannot build fixture");
		return;
	}
	identical = compile_both(run, &c, arms, jc, user);
	if (!arms[0].compiled || !arms[1].compiled) {
		/* The case line gives the built case's tolerance (attention's
		 * depends on its inputs). */
		if (!user) {
			fixture_release(&c);
			if ((rc = fixture_build(index, run->cfg->seed, &c, &msg)) < 0) {
				fail_build(run, jc, index, rc,
					   msg.text[0] ? msg.text : "cannot build fixture");
				return;
			}
		}
		runner__emit_case(run, &c, arms, identical, false);
	}
	fixture_release(&c);
}
