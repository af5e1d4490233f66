/* Sessions (runner.h, "Sampling until decided"): the plan of a run's
 * sessions. The first look's blocks are shared out among the first
 * sessions; after them, while some case is undecided, each round times the
 * undecided cases up to the next planned look in as many sessions as the
 * first look's (at least RUNNER_SESSIONS), each of more blocks as the
 * rounds grow. The decisions are pure where they can be
 * (runner__next_round, runner__round_sessions), for the tests. */
#include "run/runner_internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/child.h"
#include "common/xalloc.h"

enum runner_round runner__next_round(const struct stats_settings *s, int blocks_done,
				     int undecided, double elapsed_s, double max_seconds,
				     bool stopped, int *next)
{
	int at[STATS_MAX_LOOKS], k;
	double w[STATS_MAX_LOOKS];

	*next = blocks_done;
	if (stopped)
		return ROUND_STOPPED;
	if (undecided == 0)
		return ROUND_DECIDED;
	k = stats_looks(s, at, w);
	for (int i = 0; i < k; i++) {
		if (at[i] > blocks_done) {
			/* The time cap is checked only where a round would
			 * start: it bounds the start of rounds, not their
			 * length. */
			if (elapsed_s >= max_seconds)
				return ROUND_MAX_SECONDS;
			*next = at[i];
			return ROUND_MORE;
		}
	}
	return ROUND_MAX_PAIRS;
}

/* The cases of sel[0..nsel) that are still undecided, into more[] (the
 * count returned), judged as the run stands. */
static int undecided_cases(struct run *run, const int *sel, int nsel, int *more)
{
	bool *need = xcalloc((size_t)run->judge.ncases + 1, sizeof *need);
	int n = 0;

	(void)judge_undecided(&run->judge, &run->stats, need, run->judge.ncases);
	for (int i = 0; i < nsel; i++) {
		const char *name = fixture_name(sel[i]);

		for (int c = 0; c < run->judge.ncases; c++)
			if (need[c] && strcmp(run->judge.cases[c].name, name) == 0)
				more[n++] = sel[i];
	}
	free(need);
	return n;
}

int runner__round_sessions(int round_blocks, int first_blocks, int first_sessions)
{
	long m, most = first_sessions > RUNNER_SESSIONS ? first_sessions : RUNNER_SESSIONS;

	if (round_blocks < 1 || first_blocks < 1 || first_sessions < 1)
		return 1;
	m = ((long)round_blocks * first_sessions + first_blocks - 1) / first_blocks;
	/* No more sessions than the first look's, or RUNNER_SESSIONS if that
	 * is more (fewer than 4 a round fails the simulation's coverage with
	 * a shift per session: docs/verdicts.md): longer sessions, fewer
	 * contexts made and closed. */
	if (most > RUNNER_ROUND_SESSIONS)
		most = RUNNER_ROUND_SESSIONS;
	if (m > most)
		m = most;
	return m > round_blocks ? round_blocks : (int)m;
}

bool runner__plan_next(struct plan *p, struct session_arg *arg, int *of)
{
	struct run *run = p->run;

	if (p->r_i == p->r_m) {
		int next, nmore = undecided_cases(run, p->sel, p->nsel, p->more);
		enum runner_round why = runner__next_round(&run->stats, p->done, nmore,
							   child_now() - p->t0, run->max_seconds,
							   run->judge.machine_error, &next);

		if (why != ROUND_MORE)
			return false;
		p->r_lo = p->done;
		p->r_n = next - p->done;
		p->r_m = runner__round_sessions(p->r_n, p->blocks, p->k);
		p->r_i = 0;
		p->cur = p->more;
		p->ncur = nmore;
		p->done = next;
	} else if (p->s >= p->k && child_now() - p->t0 >= run->max_seconds) {
		/* The time cap also ends a round between its sessions: a
		 * round is up to 16 of them. The blocks timed so far are a
		 * look of their own size (docs/verdicts.md). */
		return false;
	}
	*arg = (struct session_arg){ .run = run, .sel = p->cur, .nsel = p->ncur, .session = p->s,
				     .block_lo = p->r_lo + p->r_i * p->r_n / p->r_m,
				     .block_hi = p->r_lo + (p->r_i + 1) * p->r_n / p->r_m,
				     .settle = p->r_i == 0, .work_fd = -1 };
	*of = p->s - p->r_i + p->r_m;
	p->s++;
	p->r_i++;
	return true;
}
