#include "stats/judge.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/exitcode.h"
#include "common/lines.h"
#include "common/xalloc.h"
#include "proto/settings.h"
#include "proto/vocab.h"

void judge_init(struct judge *j)
{
	memset(j, 0, sizeof *j);
}

void judge_release(struct judge *j)
{
	for (int i = 0; i < j->ncases; i++)
		free(j->cases[i].pairs);
	free(j->cases);
	json_decref(j->verdict_extra);
	memset(j, 0, sizeof *j);
}

/* Keeps extra (borrowed: a new reference) as the members judge_finish's
 * verdict line gets back (struct judge, verdict_extra). */
static void keep_verdict_extra(struct judge *j, json_t *extra)
{
	json_incref(extra);
	json_decref(j->verdict_extra);
	j->verdict_extra = extra;
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

void judge_case_block(struct judge_case *c, int block, int retake, bool throttled)
{
	int k = 0;

	c->blocks_retaken += retake > 0;
	if (block > c->last_block_line)
		c->last_block_line = block;
	if (!throttled)
		return;
	c->blocks_throttled++;
	for (int i = 0; i < c->npairs; i++)
		if (c->pairs[i].block != block)
			c->pairs[k++] = c->pairs[i];
	c->pairs_dropped += c->npairs - k;
	c->npairs = k;
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
static bool verdict_untimed(enum case_verdict v)
{
	return vocab_case_verdict_kind(v) != CASE_MEASURED;
}

/* The layout test of a case (stats/layout.h), null when it has fewer than
 * two blocks with a pair of each order. */
static json_t *layout_json(const struct stats_layout *l)
{
	if (l->blocks < 2)
		return json_null();
	return json_pack("{s:i,s:o,s:o,s:o,s:o,s:o,s:b}", "blocks", l->blocks,
			 "between_sd", lines_real(l->between_sd), "within_sd",
			 lines_real(l->within_sd), "f", lines_real(l->f), "p",
			 lines_real(l->p), "p_holm", lines_real(l->p_holm),
			 "sensitive", l->sensitive);
}

/* Whether a case's rounds agree (stats.h, struct stats_case): null
 * without later rounds. */
static json_t *rounds_json(const struct judge_case *c)
{
	const struct stats_case *st = &c->st;

	if (st->rounds_later == 0)
		return json_null();
	return json_pack("{s:i,s:i,s:o,s:o,s:o,s:o,s:o,s:b}", "first_blocks", st->rounds_first,
			 "later_blocks", st->rounds_later, "first_ratio",
			 lines_real(st->rounds_first_ratio), "later_ratio",
			 lines_real(st->rounds_later_ratio), "shift", lines_real(st->rounds_shift),
			 "p", lines_real(st->rounds_p), "p_holm", lines_real(st->rounds_p_holm),
			 "agree", !st->rounds_disagree);
}

/* The layout test of every timed case, Holm-adjusted across them; a case
 * is layout-sensitive when its adjusted p is below alpha. */
static void judge_layout(struct judge *j, const struct stats_settings *s)
{
	double *p = xcalloc((size_t)(j->ncases ? j->ncases : 1), sizeof *p);

	for (int i = 0; i < j->ncases; i++) {
		struct judge_case *c = &j->cases[i];

		stats_layout_test(c->pairs, verdict_untimed(c->st.verdict) ? 0 : c->npairs,
				  &c->layout);
		p[i] = c->layout.p;
	}
	stats_holm(p, j->ncases);
	for (int i = 0; i < j->ncases; i++) {
		j->cases[i].layout.p_holm = p[i];
		j->cases[i].layout.sensitive = !isnan(p[i]) && p[i] < s->alpha;
	}
	free(p);
}

/* The highest block planned for c: among its pairs and its block lines,
 * a block whose pairs were excluded (throttled) included (0: none
 * numbered). */
static int last_block(const struct judge_case *c)
{
	int b = c->last_block_line;

	for (int i = 0; i < c->npairs; i++)
		b = c->pairs[i].block > b ? c->pairs[i].block : b;
	return b;
}

/* Why a timed case's sampling stopped: decided, or the cap in pairs
 * (its planned blocks reached the last look, or the fixed-sample rule), or
 * else, short of its last look, a stop of GPU work (a fault, a hang, or a
 * machine error such as a failed session: what ends the runner's rounds,
 * runner__next_round's ROUND_STOPPED, as the lines say it) or the cap in
 * seconds (the one other way the rounds end). */
static const char *stop_name(const struct judge *j, const struct judge_case *c,
			     const struct stats_settings *s)
{
	int at[STATS_MAX_LOOKS];
	double w[STATS_MAX_LOOKS];
	int k = stats_looks(s, at, w);

	if (c->st.decided)
		return "decided";
	if (k == 1 || last_block(c) >= at[k - 1])
		return "max_pairs";
	if (j->gpu_stopped || j->machine_error)
		return "gpu_stopped";
	return "max_seconds";
}

static json_t *case_verdict_line(const struct judge *j, const struct judge_case *c,
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
	/* Throttled attempts and their retakes (docs/verdicts.md,
	 * "Throttling"); excluded: blocks whose last attempt throttled. */
	if (c->blocks_throttled || c->blocks_retaken)
		json_object_set_new(line, "throttling", json_pack(
			"{s:i,s:i,s:i}", "throttled_blocks", c->blocks_throttled,
			"retaken_blocks", c->blocks_retaken, "excluded_blocks",
			c->blocks_throttled > c->blocks_retaken ?
			c->blocks_throttled - c->blocks_retaken : 0));
	if (verdict_untimed(st->verdict))
		return line;
	json_object_set_new(line, "layout", layout_json(&c->layout));
	json_object_set_new(line, "rounds", rounds_json(c));
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
	/* Sequential sampling (docs/verdicts.md): the looks taken, the last
	 * one's own p, whether the case is decided and why sampling stopped. */
	json_object_set_new(line, "looks", json_integer(st->looks));
	json_object_set_new(line, "look_p", lines_real(st->look_p));
	json_object_set_new(line, "decided", json_boolean(st->decided));
	json_object_set_new(line, "stopped", json_string(stop_name(j, c, s)));
	if (st->within_margin)
		json_object_set_new(line, "within_margin",
				    json_string(vocab_case_verdict_name(st->within_margin > 0 ?
							      VERDICT_SLOWER : VERDICT_FASTER)));
	json_object_set_new(line, "beyond_margin", json_boolean(st->beyond_margin));
	/* What the timing alone says of identical code (an A/A control). */
	if (c->identical_code)
		json_object_set_new(line, "timing_verdict",
				    json_string(stats_verdict_name(st->timing_verdict)));
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

/* One of judge_finish's lines (stolen) out: to j->emit, or to out. */
static void judge_write(const struct judge *j, FILE *out, json_t *line)
{
	if (j->emit)
		(void)j->emit(j->emit_ctx, line);
	else
		(void)lines_emit(out, line);
}

/* Summarises and judges every case into j->cases[i].st, as judge_finish
 * does; *cand_failed and *base_failed gather the cases' failures (on top of
 * what they hold), and the number of not-applicable cases is returned. */
static long judge_compute(struct judge *j, const struct stats_settings *s,
			  bool *cand_failed, bool *base_failed)
{
	struct stats_case *all = xcalloc((size_t)(j->ncases ? j->ncases : 1), sizeof *all);
	long n_not_applicable = 0;

	for (int i = 0; i < j->ncases; i++) {
		struct judge_case *c = &j->cases[i];

		memset(&c->st, 0, sizeof c->st);
		if (c->failure != JUDGE_OK) {
			c->st.verdict = VERDICT_FAIL;
			*cand_failed |= c->failure == JUDGE_FAIL_CANDIDATE;
			*base_failed |= c->failure == JUDGE_FAIL_BASELINE;
		} else if (c->not_applicable) {
			c->st.verdict = VERDICT_NOT_APPLICABLE;
			n_not_applicable++;
		} else if (!c->timed || c->npairs == 0) {
			c->st.verdict = VERDICT_NOT_TIMED;
		} else {
			stats_case_summarise(c->pairs, c->npairs, s, &c->st);
		}
		c->st.identical_code = c->identical_code;
		all[i] = c->st;
	}
	stats_judge_run(all, j->ncases, s);
	for (int i = 0; i < j->ncases; i++)
		j->cases[i].st = all[i];
	judge_layout(j, s);
	free(all);
	return n_not_applicable;
}

int judge_undecided(struct judge *j, const struct stats_settings *s, bool *need, int n)
{
	bool cand = false, base = false;
	int k = 0;

	(void)judge_compute(j, s, &cand, &base);
	for (int i = 0; i < n; i++)
		need[i] = false;
	for (int i = 0; i < j->ncases; i++) {
		if (j->cases[i].st.decided)
			continue;
		if (i < n)
			need[i] = true;
		k++;
	}
	return k;
}

/* The verdict line's "gate": the rules in force and the cases that made a
 * regression or an improvement under them. */
static json_t *gate_json(const struct judge *j, const struct stats_settings *s)
{
	json_t *reg = json_array(), *imp = json_array();

	for (int i = 0; i < j->ncases; i++) {
		if (stats_gate_regression(&j->cases[i].st, s))
			json_array_append_new(reg, json_string(j->cases[i].name));
		else if (stats_gate_improvement(&j->cases[i].st, s))
			json_array_append_new(imp, json_string(j->cases[i].name));
	}
	return json_pack("{s:s,s:s,s:s,s:o,s:o}",
			 "slower", gate_rule_name(s->gate_slower), /* vocab:key */
			 "faster", gate_rule_name(s->gate_faster), /* vocab:key */
			 "undecided", gate_undecided_name(s->undecided),
			 "regression_cases", reg, "improvement_cases", imp);
}

enum run_verdict judge_finish(struct judge *j, const struct stats_settings *s,
			      FILE *out, bool *not_timed)
{
	bool cand_failed = j->candidate_error, base_failed = j->machine_error;
	bool any_timed = false, no_valid;
	long npairs = 0, nvalid = 0, ndropped = 0, n_not_applicable;
	struct stats_case *all;
	enum run_verdict v;
	json_t *line, *cases;
	const char *name;

	n_not_applicable = judge_compute(j, s, &cand_failed, &base_failed);
	for (int i = 0; i < j->ncases; i++) {
		any_timed |= j->cases[i].npairs > 0;
		judge_write(j, out, case_verdict_line(j, &j->cases[i], s));
	}
	all = xcalloc((size_t)(j->ncases ? j->ncases : 1), sizeof *all);
	for (int i = 0; i < j->ncases; i++)
		all[i] = j->cases[i].st;
	v = stats_run_verdict_gate(all, j->ncases, s, cand_failed, base_failed);
	/* Pairs were timed but not one of them is valid (every timing NaN,
	 * infinite or <= 0): nothing was measured, and a run that measured
	 * nothing must not pass as neutral. The machine's failure, not the
	 * candidate's: an error, unless a case already failed. */
	for (int i = 0; i < j->ncases; i++) {
		npairs += j->cases[i].npairs + j->cases[i].pairs_dropped;
		ndropped += j->cases[i].pairs_dropped;
		nvalid += j->cases[i].st.n;
	}
	no_valid = j->no_valid_pair = npairs > 0 && nvalid == 0 && v != RUN_FAIL;
	if (no_valid)
		v = RUN_ERROR;
	any_timed |= j->timed;
	*not_timed = !any_timed;

	name = vocab_verdict_name(*not_timed && v != RUN_FAIL && v != RUN_ERROR ? RUN_NOT_TIMED :
				  v);
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
			/* The layout spread (docs/verdicts.md, "Layout"). */
			if (c->layout.blocks >= 2) {
				json_object_set_new(e, "layout_between_sd",
						    lines_real(c->layout.between_sd));
				json_object_set_new(e, "layout_within_sd",
						    lines_real(c->layout.within_sd));
			}
		}
		json_array_append_new(cases, e);
	}
	json_object_set_new(line, "cases", cases);
	cases = json_array();
	for (int i = 0; i < j->ncases; i++)
		if (j->cases[i].layout.sensitive)
			json_array_append_new(cases, json_string(j->cases[i].name));
	json_object_set_new(line, "layout_sensitive", cases);
	cases = json_array();
	for (int i = 0; i < j->ncases; i++)
		if (j->cases[i].st.rounds_disagree)
			json_array_append_new(cases, json_string(j->cases[i].name));
	json_object_set_new(line, "rounds_disagree", cases);
	if (n_not_applicable > 0)
		json_object_set_new(line, vocab_case_verdict_name(VERDICT_NOT_APPLICABLE),
				    json_integer(n_not_applicable));
	json_object_set_new(line, "alpha", json_real(s->alpha));
	json_object_set_new(line, "margin", json_real(s->margin));
	json_object_set_new(line, "gate", gate_json(j, s));
	if (j->verdict_extra)
		json_object_update_missing(line, j->verdict_extra);
	if (no_valid) {
		char text[200];

		if (ndropped)
			snprintf(text, sizeof text, "no valid pair: of the %ld timed pairs, %ld "
				 "were timed while the gpu throttled (left out) and the rest have "
				 "timings that are not finite and positive", npairs, ndropped);
		else
			snprintf(text, sizeof text, "no valid pair: every one of the %ld timed "
				 "pairs has a timing that is not finite and positive", npairs);
		json_object_set_new(line, "message", json_string(text));
	} else if (*not_timed) {
		json_object_set_new(line, "message", json_string(
			"nothing was timed: this is a static comparison of the compiled code only"));
	}
	if (j->on_verdict)
		j->on_verdict(j->on_verdict_ctx, line);
	judge_write(j, out, line);
	free(all);
	return v;
}

/* An integer setting of a start line: *to keeps its value when the field
 * is missing or null; 0, or -1 with why when it is not an integer in
 * [lo, hi]. */
static int take_int(json_t *settings, const char *key, int lo, int hi, int *to,
		    char *why, size_t whylen)
{
	json_t *x = json_object_get(settings, key);

	if (!x || json_is_null(x))
		return 0;
	if (!json_is_integer(x) || json_integer_value(x) < lo || json_integer_value(x) > hi) {
		snprintf(why, whylen, "start line's settings.%s must be an integer from %d to %d",
			 key, lo, hi);
		return -1;
	}
	*to = (int)json_integer_value(x);
	return 0;
}

/* A rule of the gate: *to keeps its value when the field is missing or
 * null; 0, or -1 with why when it is not one of the rule's words. */
static int take_rule(json_t *settings, const char *key, bool undecided, int *to,
		     char *why, size_t whylen)
{
	json_t *x = json_object_get(settings, key);
	const char *w = json_string_value(x);
	enum gate_rule g;
	enum gate_undecided u;

	if (!x || json_is_null(x))
		return 0;
	if (undecided ? gate_undecided_parse(w, &u) < 0 : gate_rule_parse(w, &g) < 0) {
		snprintf(why, whylen, "start line's settings.%s must be %s", key,
			 undecided ? "\"pass\" or \"regression\"" :
				     "\"beyond\" or \"significant\"");
		return -1;
	}
	*to = undecided ? (int)u : (int)g;
	return 0;
}

/* The settings of sequential sampling and of the gate from a start line's
 * settings (docs/verdicts.md): the looks follow from pairs, pairs_per_block
 * and max_pairs as qual-run made them (first look: the blocks of pairs;
 * last: the blocks of max_pairs, each look between look_growth times the
 * one before); a line without max_pairs was judged with one look, and still
 * is, and one without look_growth with doubling looks. */
static int take_sampling(json_t *settings, struct stats_settings *s, char *why, size_t whylen)
{
	int pairs = 0, per = 0, max_pairs = 0, slower = (int)s->gate_slower;
	int growth = STATS_LOOK_GROWTH_UNSTATED;
	int faster = (int)s->gate_faster, undecided = (int)s->undecided;
	json_t *x;

	if (take_int(settings, "pairs", 1, INT_MAX, &pairs, why, whylen) < 0 ||
	    take_int(settings, "pairs_per_block", 1, INT_MAX, &per, why, whylen) < 0 ||
	    take_int(settings, "max_pairs", 1, INT_MAX, &max_pairs, why, whylen) < 0 ||
	    take_int(settings, "look_growth", STATS_LOOK_GROWTH_MIN, STATS_LOOK_GROWTH_MAX,
		     &growth, why, whylen) < 0 ||
	    take_rule(settings, "gate_slower", false, &slower, why, whylen) < 0 ||
	    take_rule(settings, "gate_faster", false, &faster, why, whylen) < 0 ||
	    take_rule(settings, "undecided", true, &undecided, why, whylen) < 0)
		return -1;
	if (max_pairs && pairs && max_pairs < pairs) {
		snprintf(why, whylen, "start line's settings.max_pairs (%d) is below its "
			 "pairs (%d)", max_pairs, pairs);
		return -1;
	}
	s->gate_slower = (enum gate_rule)slower;
	s->gate_faster = (enum gate_rule)faster;
	s->undecided = (enum gate_undecided)undecided;
	x = json_object_get(settings, "sample_identical");
	if (x && !json_is_null(x) && !json_is_boolean(x)) {
		snprintf(why, whylen, "start line's settings.sample_identical must be a boolean");
		return -1;
	}
	s->sample_identical = json_is_true(x);
	s->look_growth = growth;
	stats_set_looks(s, pairs, per, json_is_true(json_object_get(settings, "one_load")) ?
			0 : max_pairs);
	return 0;
}

/* A real setting f of a start line's settings: *to keeps its value when
 * the field is missing or null; 0, or -1 with why when it is not a finite
 * number within f's bounds (settings_in_range, its floor included). */
static int take_real(json_t *settings, const struct settings_field *f, double *to,
		     char *why, size_t whylen)
{
	json_t *x = json_object_get(settings, f->key);
	char got[64], floor[64] = "";

	if (!x || json_is_null(x))
		return 0; /* not recorded: the default */
	if (json_is_number(x) && settings_in_range(f, json_number_value(x))) {
		*to = json_number_value(x);
		return 0;
	}
	if (json_is_number(x))
		snprintf(got, sizeof got, "%g", json_number_value(x));
	else
		snprintf(got, sizeof got, "a %s", json_is_string(x) ? "string" :
			 json_is_boolean(x) ? "boolean" : "non-number");
	if (f->floor > f->lo && f->lo_open)
		snprintf(floor, sizeof floor, ", at least %g", f->floor);
	else if (f->floor > f->lo)
		snprintf(floor, sizeof floor, ", %g or at least %g", f->lo, f->floor);
	snprintf(why, whylen, "start line's settings.%s must be a number in %c%g, %g%c%s, got %s",
		 f->key, f->lo_open ? '(' : '[', f->lo, f->hi, f->hi_open ? ')' : ']', floor, got);
	return -1;
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
		/* The ranges qual-run and quald accept, from the settings table
		 * (proto/settings.h), and conf's own: a file is outside input,
		 * and an alpha of 5 or a margin of -1 would judge anything the
		 * file's writer wanted. */
		static const struct settings_field conf = {
			.key = "conf", .kind = SETTINGS_REAL, .lo = 0, .lo_open = true, .hi = 1,
			.hi_open = true,
		};
		const struct {
			const struct settings_field *f;
			double *to;
		} fields[] = {
			{settings_find_key("alpha"), &run_settings->alpha},
			{settings_find_key("margin"), &run_settings->margin},
			{&conf, &run_settings->conf},
		};
		/* As qual-run sets it: the run had a GPU to time on. */
		j->timed = json_is_true(json_object_get(line, "timed"));
		for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
			if (take_real(s, fields[i].f, fields[i].to, why, whylen) < 0)
				return -1;
		if (take_sampling(s, run_settings, why, whylen) < 0)
			return -1;
	} else if (strcmp(type, "verdict") == 0 && json_object_get(line, "calibration")) {
		json_t *extra = json_object();

		json_object_set(extra, "calibration", json_object_get(line, "calibration"));
		if (json_object_get(line, "calibration_because"))
			json_object_set(extra, "calibration_because",
					json_object_get(line, "calibration_because"));
		keep_verdict_extra(j, extra);
		json_decref(extra);
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
	} else if (strcmp(type, "block") == 0) {
		json_t *blk = json_object_get(line, "block");
		json_t *retake = json_object_get(line, "retake");
		json_t *thr = json_object_get(line, "throttled");

		if (!name || !json_is_integer(blk) || json_integer_value(blk) < 1 ||
		    json_integer_value(blk) > INT_MAX || !json_is_boolean(thr)) {
			snprintf(why, whylen, "block line needs \"case\", \"block\" (an integer "
				 "from 1 to %d) and \"throttled\" (a boolean)", INT_MAX);
			return -1;
		}
		if (retake && (!json_is_integer(retake) || json_integer_value(retake) < 0 ||
			       json_integer_value(retake) > INT_MAX)) {
			snprintf(why, whylen, "block line's \"retake\" must be an integer from 0 "
				 "to %d", INT_MAX);
			return -1;
		}
		judge_case_block(judge_case_get(j, name), (int)json_integer_value(blk),
				 retake ? (int)json_integer_value(retake) : 0, json_is_true(thr));
	} else if (strcmp(type, "error") == 0 && json_object_get(line, "gpu")) {
		/* The line that stops GPU work after a fault or a hang: the
		 * failure itself is in the case's own error line before it. */
		j->gpu_stopped = true;
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
	return vocab_verdict_exit(v);
}
