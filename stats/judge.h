/* Judging a run: collects each case's pairs and failures, then computes the
 * statistics, the per-case verdicts (Holm across the run's cases) and the run
 * verdict, and writes the case_verdict and verdict lines. The same code serves
 * qual-run at the end of a run and qual-judge re-reading stored lines. */
#ifndef QUAL_JUDGE_H
#define QUAL_JUDGE_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "stats/layout.h"
#include "stats/stats.h"

enum judge_failure {
	JUDGE_OK = 0,
	JUDGE_FAIL_CANDIDATE, /* candidate wrong, did not compile, or faulted */
	JUDGE_FAIL_BASELINE,  /* baseline or machine failed: run error */
};

struct judge_case {
	char name[64];
	bool identical_code;
	bool timed;               /* pairs are expected (a GPU was used) */
	enum judge_failure failure;
	bool not_applicable;      /* judge_case_not_applicable */
	char not_applicable_because[256];
	struct stats_pair *pairs;
	int npairs, cap;
	/* Block lines (judge_case_block): attempts timed while the GPU
	 * throttled, and attempts that were retakes of a throttled one. */
	int blocks_throttled, blocks_retaken;
	int last_block_line;  /* the highest block of its block lines, kept or not */
	int pairs_dropped;        /* pairs of throttled attempts, left out */
	struct stats_case st;
	struct stats_layout layout; /* set by judge_finish */
};

struct judge {
	struct judge_case *cases;
	int ncases, cap;
	bool timed;     /* the run had a GPU to time on (set by its owner) */
	bool machine_error; /* an error outside any case (setup, device) */
	bool candidate_error; /* a failure of the candidate outside any case */
	bool gpu_stopped; /* GPU work stopped: an error line with "gpu" (a fault
			   * or a hang stopped it); with machine_error, why a
			   * case's sampling ended short of its last look */
	bool no_valid_pair; /* set by judge_finish: pairs were timed, none valid */
	/* A stored verdict line's "calibration" and "calibration_because"
	 * (judge_take_line), which judge_finish's verdict line gets back, so
	 * that qual-judge writes them as they were; or NULL. */
	json_t *verdict_extra;
	/* Called with the verdict line just before judge_finish writes it, so
	 * that its owner can add fields of its own (qual-run's time split and
	 * the device's calibration, qual-judge's sessions' split); NULL:
	 * none. */
	void (*on_verdict)(void *ctx, json_t *line);
	void *on_verdict_ctx;
	/* Where judge_finish's lines go: NULL, to its out (lines_emit());
	 * else emit(emit_ctx, line), which takes the line's reference: the
	 * writer of its owner (qual-run's one way out, run/runner_emit.c),
	 * which must not feed them back to this judge. */
	int (*emit)(void *ctx, json_t *line);
	void *emit_ctx;
};

void judge_init(struct judge *j);
void judge_release(struct judge *j);

/* The case called name, added (untimed, no failure) if new. */
struct judge_case *judge_case_get(struct judge *j, const char *name);

/* block: the load the pair was timed in, numbered from 1 (stats.h); 0 for
 * a pair that stands alone (lines written before loads were numbered). */
void judge_case_add_pair(struct judge_case *c, double baseline_ns,
			 double candidate_ns, bool candidate_first, int block);

/* A block's line (docs/output.md, "block"): retake is the attempt (0 the
 * first, k the k-th retake); a throttled attempt's pairs, those of block
 * received so far, are dropped from the case, never judged. So a retake's
 * pairs, which follow the line of the attempt they replace, are what stays
 * of the block; a block whose last attempt was throttled stays out. */
void judge_case_block(struct judge_case *c, int block, int retake, bool throttled);

/* Records a failure; a candidate failure outranks a baseline one. */
void judge_case_fail(struct judge_case *c, enum judge_failure f);

/* Marks a case that cannot run on the run's target (fixture_applies said
 * no; why says what it needs): its verdict is not_applicable, it is left
 * out of Holm's correction and of the run verdict, and it does not by
 * itself make a timed run not_timed. A failure recorded against the case
 * still outranks it. */
void judge_case_not_applicable(struct judge_case *c, const char *why);

/* Computes every verdict and writes one case_verdict line per case and the
 * verdict line to out (or hands them to j->emit). Returns the run verdict; *not_timed is set when no case
 * was timed (compile-only), in which case the verdict line says so. A run
 * with pairs none of which is valid (stats.h: a timing NaN, infinite or
 * <= 0; or left out with a throttled block) measured nothing: its verdict
 * is error (fail still outranks it),
 * its message says "no valid pair", and j->no_valid_pair is set. */
enum run_verdict judge_finish(struct judge *j, const struct stats_settings *s,
			      FILE *out, bool *not_timed);

/* Between rounds of sampling: judges the cases as they stand (as
 * judge_finish would, writing nothing) and sets need[i], for the first n
 * cases in the order judge_case_get() added them, to whether case i is
 * undecided (stats.h: struct stats_case's decided) and so needs more blocks.
 * Returns the number of undecided cases. */
int judge_undecided(struct judge *j, const struct stats_settings *s, bool *need, int n);

/* Applies one qual line (as qual-run writes it) to the judge: a start line's
 * timed flag and alpha, margin and conf (into *run_settings), a case line's
 * identical_code (and "applicable": false, with its not_applicable_because),
 * a pair, a block (judge_case_block: "block", "throttled" and "retake"), an
 * error's failure; other lines are ignored.
 * Returns 0, or -1 with why for a line that is not a qual line, or a start
 * line whose settings are out of range: alpha and margin out of their
 * fields' bounds in proto/settings.h (those of qual-run and quald), conf
 * out of (0, 1), each finite (a missing or null one keeps the
 * default); why names the field. The start line's pairs, pairs_per_block
 * and max_pairs give the looks (first_look, last_look: blocks of pairs and
 * of max_pairs; one look without max_pairs or under one_load), and its
 * gate_slower, gate_faster and undecided the gate; a bad one is refused the
 * same way. Shared by qual-judge and by qual-run
 * gathering its sessions' lines. */
int judge_take_line(struct judge *j, struct stats_settings *run_settings,
		    json_t *line, char *why, size_t whylen);

/* The exit status for a run verdict (common/exitcode.h). */
int judge_exit_status(enum run_verdict v);

#endif
