#include "stats/judge.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/exitcode.h"
#include "common/lines.h"
#include "common/xalloc.h"

void judge_init(struct judge *j)
{
	memset(j, 0, sizeof *j);
}

void judge_release(struct judge *j)
{
	for (int i = 0; i < j->ncases; i++)
		free(j->cases[i].pairs);
	free(j->cases);
	memset(j, 0, sizeof *j);
}

struct judge_case *judge_case_get(struct judge *j, const char *name)
{
	struct judge_case *c;

	for (int i = 0; i < j->ncases; i++)
		if (strcmp(j->cases[i].name, name) == 0)
			return &j->cases[i];
	XGROW(j->cases, j->ncases + 1, j->cap);
	c = &j->cases[j->ncases++];
	memset(c, 0, sizeof *c);
	snprintf(c->name, sizeof c->name, "%s", name);
	return c;
}

void judge_case_add_pair(struct judge_case *c, double baseline_ns,
			 double candidate_ns, bool candidate_first, int block)
{
	XGROW(c->pairs, c->npairs + 1, c->cap);
	c->pairs[c->npairs++] = (struct stats_pair){
		.baseline_ns = baseline_ns,
		.candidate_ns = candidate_ns,
		.candidate_first = candidate_first,
		.block = block,
	};
	c->timed = true;
}

void judge_case_fail(struct judge_case *c, enum judge_failure f)
{
	if (f == JUDGE_FAIL_CANDIDATE || c->failure == JUDGE_OK)
		c->failure = f;
}

void judge_case_not_applicable(struct judge_case *c, const char *why)
{
	c->not_applicable = true;
	snprintf(c->not_applicable_because, sizeof c->not_applicable_because, "%s",
		 why ? why : "");
}

/* Verdicts without statistics: nothing was timed. */
static bool verdict_untimed(enum stats_verdict v)
{
	return v == VERDICT_FAIL || v == VERDICT_NOT_TIMED || v == VERDICT_NOT_APPLICABLE;
}

static json_t *case_verdict_line(const struct judge_case *c,
				 const struct stats_settings *s)
{
	const struct stats_case *st = &c->st;
	json_t *line = lines_new("case_verdict");

	json_object_set_new(line, "case", json_string(c->name));
	json_object_set_new(line, "verdict", json_string(stats_verdict_name(st->verdict)));
	if (st->verdict == VERDICT_FAIL)
		json_object_set_new(line, "failed_arm",
				    json_string(c->failure == JUDGE_FAIL_CANDIDATE ?
						"candidate" : "baseline"));
	json_object_set_new(line, "identical_code", json_boolean(c->identical_code));
	json_object_set_new(line, "n", json_integer(st->n));
	if (st->verdict == VERDICT_NOT_APPLICABLE)
		json_object_set_new(line, "not_applicable_because",
				    json_string(c->not_applicable_because));
	if (verdict_untimed(st->verdict))
		return line;
	json_object_set_new(line, "candidate_faster", json_integer(st->faster));
	json_object_set_new(line, "candidate_slower", json_integer(st->slower));
	json_object_set_new(line, "ties", json_integer(st->ties));
	json_object_set_new(line, "pair_p", lines_real(st->pair_p));
	/* The units of the test and the interval: the blocks (stats.h). */
	json_object_set_new(line, "blocks", json_integer(st->units));
	json_object_set_new(line, "blocks_faster", json_integer(st->unit_faster));
	json_object_set_new(line, "blocks_slower", json_integer(st->unit_slower));
	json_object_set_new(line, "blocks_tied", json_integer(st->unit_ties));
	json_object_set_new(line, "p", lines_real(st->p));
	json_object_set_new(line, "p_holm", lines_real(st->p_holm));
	json_object_set_new(line, "ratio_median", lines_real(st->ratio_median));
	json_object_set_new(line, "ratio_lo", lines_real(st->ratio_lo));
	json_object_set_new(line, "ratio_hi", lines_real(st->ratio_hi));
	json_object_set_new(line, "conf", json_real(s->conf));
	json_object_set_new(line, "ratio_coverage", lines_real(st->ratio_coverage));
	json_object_set_new(line, "invalid_pairs", json_integer(st->invalid));
	json_object_set_new(line, "wilcoxon_p", lines_real(st->wilcoxon_p));
	json_object_set_new(line, "hl_ratio", lines_real(exp(st->hl_log_ratio)));
	json_object_set_new(line, "order_p", lines_real(st->order_p));
	json_object_set_new(line, "order_diff", lines_real(st->order_diff));
	json_object_set_new(line, "log_ratio_sd", lines_real(st->log_ratio_sd));
	json_object_set_new(line, "block_log_ratio_sd", lines_real(st->unit_log_ratio_sd));
	/* What this run could have seen: the smallest slowdown the sign test
	 * over these blocks detects with 80% power at their measured spread. */
	json_object_set_new(line, "detectable_ratio", lines_real(
		stats_sign_test_mde(st->units, st->unit_log_ratio_sd, s->alpha, 0.8)));
	return line;
}

enum run_verdict judge_finish(struct judge *j, const struct stats_settings *s,
			      FILE *out, bool *not_timed)
{
	struct stats_case *all = xcalloc((size_t)(j->ncases ? j->ncases : 1), sizeof *all);
	bool cand_failed = j->candidate_error, base_failed = j->machine_error;
	bool any_timed = false, no_valid;
	long npairs = 0, nvalid = 0, n_not_applicable = 0;
	enum run_verdict v;
	json_t *line, *cases;
	const char *name;

	for (int i = 0; i < j->ncases; i++) {
		struct judge_case *c = &j->cases[i];

		memset(&c->st, 0, sizeof c->st);
		if (c->failure != JUDGE_OK) {
			c->st.verdict = VERDICT_FAIL;
			cand_failed |= c->failure == JUDGE_FAIL_CANDIDATE;
			base_failed |= c->failure == JUDGE_FAIL_BASELINE;
		} else if (c->not_applicable) {
			c->st.verdict = VERDICT_NOT_APPLICABLE;
			n_not_applicable++;
		} else if (!c->timed || c->npairs == 0) {
			c->st.verdict = VERDICT_NOT_TIMED;
		} else {
			stats_case_summarise(c->pairs, c->npairs, s, &c->st);
		}
		any_timed |= c->npairs > 0;
		c->st.identical_code = c->identical_code;
		all[i] = c->st;
	}
	stats_judge_run(all, j->ncases, s);
	for (int i = 0; i < j->ncases; i++) {
		j->cases[i].st = all[i];
		lines_emit(out, case_verdict_line(&j->cases[i], s));
	}
	v = stats_run_verdict(all, j->ncases, cand_failed, base_failed);
	/* Pairs were timed but not one of them is valid (every timing NaN,
	 * infinite or <= 0): nothing was measured, and a run that measured
	 * nothing must not pass as neutral. The machine's failure, not the
	 * candidate's: an error, unless a case already failed. */
	for (int i = 0; i < j->ncases; i++) {
		npairs += j->cases[i].npairs;
		nvalid += j->cases[i].st.n;
	}
	no_valid = j->no_valid_pair = npairs > 0 && nvalid == 0 && v != RUN_FAIL;
	if (no_valid)
		v = RUN_ERROR;
	any_timed |= j->timed;
	*not_timed = !any_timed;

	name = stats_run_verdict_name(v);
	if (*not_timed && v != RUN_FAIL && v != RUN_ERROR)
		name = "not_timed";
	line = lines_new("verdict");
	json_object_set_new(line, "verdict", json_string(name));
	json_object_set_new(line, "timed", json_boolean(any_timed));
	cases = json_array();
	for (int i = 0; i < j->ncases; i++) {
		const struct judge_case *c = &j->cases[i];
		json_t *e = json_pack("{s:s,s:s}", "case", c->name, "verdict",
				      stats_verdict_name(c->st.verdict));
		if (!verdict_untimed(c->st.verdict)) {
			json_object_set_new(e, "ratio_median", lines_real(c->st.ratio_median));
			json_object_set_new(e, "p_holm", lines_real(c->st.p_holm));
		}
		json_array_append_new(cases, e);
	}
	json_object_set_new(line, "cases", cases);
	if (n_not_applicable > 0)
		json_object_set_new(line, "not_applicable", json_integer(n_not_applicable));
	json_object_set_new(line, "alpha", json_real(s->alpha));
	json_object_set_new(line, "margin", json_real(s->margin));
	if (no_valid) {
		char text[160];

		snprintf(text, sizeof text, "no valid pair: every one of the %ld timed pairs "
			 "has a timing that is not finite and positive", npairs);
		json_object_set_new(line, "message", json_string(text));
	} else if (*not_timed) {
		json_object_set_new(line, "message", json_string(
			"nothing was timed: this is a static comparison of the compiled code only"));
	}
	if (j->on_verdict)
		j->on_verdict(j->on_verdict_ctx, line);
	lines_emit(out, line);
	free(all);
	return v;
}

int judge_take_line(struct judge *j, struct stats_settings *run_settings,
		     json_t *line, char *why, size_t whylen)
{
	const char *type = json_string_value(json_object_get(line, "type"));
	const char *name;
	struct judge_case *c;

	if (!json_is_object(line) || !type) {
		snprintf(why, whylen, "not a qual line: no \"type\"");
		return -1;
	}
	name = json_string_value(json_object_get(line, "case"));
	if (strcmp(type, "start") == 0) {
		json_t *s = json_object_get(line, "settings");
		/* The ranges qual-run and quald accept (docs/verdicts.md): a
		 * file is outside input, and an alpha of 5 or a margin of -1
		 * would judge anything the file's writer wanted. */
		const struct {
			const char *key;
			double lo, hi;
			bool lo_open, hi_open;
			double *to;
		} fields[] = {
			{"alpha", 0, 0.5, true, false, &run_settings->alpha},
			{"margin", 0, 0.5, false, false, &run_settings->margin},
			{"conf", 0, 1, true, true, &run_settings->conf},
		};
		/* As qual-run sets it: the run had a GPU to time on. */
		j->timed = json_is_true(json_object_get(line, "timed"));
		for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
			json_t *x = json_object_get(s, fields[i].key);
			double v = json_number_value(x);

			if (!x || json_is_null(x))
				continue; /* not recorded: the default */
			if (!json_is_number(x) || !isfinite(v) ||
			    (fields[i].lo_open ? v <= fields[i].lo : v < fields[i].lo) ||
			    (fields[i].hi_open ? v >= fields[i].hi : v > fields[i].hi)) {
				char got[64];

				if (json_is_number(x))
					snprintf(got, sizeof got, "%g", v);
				else
					snprintf(got, sizeof got, "a %s", json_is_string(x) ? "string" :
						 json_is_boolean(x) ? "boolean" : "non-number");
				snprintf(why, whylen, "start line's settings.%s must be a number in "
					 "%c%g, %g%c, got %s", fields[i].key,
					 fields[i].lo_open ? '(' : '[', fields[i].lo, fields[i].hi,
					 fields[i].hi_open ? ')' : ']', got);
				return -1;
			}
			*fields[i].to = v;
		}
	} else if (strcmp(type, "case") == 0) {
		if (!name) {
			snprintf(why, whylen, "case line without \"case\"");
			return -1;
		}
		c = judge_case_get(j, name);
		c->identical_code = json_is_true(json_object_get(line, "identical_code"));
		if (json_is_false(json_object_get(line, "applicable")))
			judge_case_not_applicable(c, json_string_value(json_object_get(
							     line, "not_applicable_because")));
	} else if (strcmp(type, "pair") == 0) {
		json_t *b = json_object_get(line, "baseline_ns");
		json_t *k = json_object_get(line, "candidate_ns");
		json_t *blk = json_object_get(line, "block");
		const char *order = json_string_value(json_object_get(line, "order"));
		json_int_t block = 0;
		if (!name || !json_is_number(b) || !json_is_number(k) || !order) {
			snprintf(why, whylen, "pair line needs \"case\", \"order\", \"baseline_ns\" and \"candidate_ns\"");
			return -1;
		}
		/* Lines of schema 1 have no block: each pair stands alone, as
		 * it was judged then. */
		if (blk) {
			if (!json_is_integer(blk) || json_integer_value(blk) < 1 ||
			    json_integer_value(blk) > INT_MAX) {
				snprintf(why, whylen, "pair line's \"block\" must be an integer from 1 to %d",
					 INT_MAX);
				return -1;
			}
			block = json_integer_value(blk);
		}
		c = judge_case_get(j, name);
		judge_case_add_pair(c, json_number_value(b), json_number_value(k),
				    strcmp(order, "candidate_first") == 0, (int)block);
	} else if (strcmp(type, "error") == 0 && json_object_get(line, "gpu")) {
		/* The line that stops GPU work after a fault or a hang: the
		 * failure itself is in the case's own error line before it. */
	} else if (strcmp(type, "error") == 0) {
		const char *arm = json_string_value(json_object_get(line, "arm"));
		bool cand = arm && strcmp(arm, "candidate") == 0;
		if (name)
			judge_case_fail(judge_case_get(j, name),
					cand ? JUDGE_FAIL_CANDIDATE : JUDGE_FAIL_BASELINE);
		else if (cand)
			j->candidate_error = true;
		else
			j->machine_error = true;
	}
	/* case_verdict and verdict lines are what we recompute; others (quald's
	 * reply lines, fields added by newer versions) are ignored. */
	return 0;
}

int judge_exit_status(enum run_verdict v)
{
	switch (v) {
	case RUN_IMPROVEMENT:
	case RUN_NEUTRAL:
		return QUAL_EXIT_PASS;
	case RUN_REGRESSION:
		return QUAL_EXIT_REGRESSION;
	case RUN_FAIL:
		return QUAL_EXIT_FAIL;
	case RUN_ERROR:
		break;
	}
	return QUAL_EXIT_ERROR;
}
