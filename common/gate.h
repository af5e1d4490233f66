/* The words of the gate (docs/verdicts.md, "The gate"): which case outcomes
 * make a run's regression or improvement, and what a case that stopped
 * undecided does. Shared by the verdict rules (stats/), qual-run's and
 * qualctl's options and quald's submit requests, which all carry them as
 * these words. */
#ifndef QUAL_GATE_H
#define QUAL_GATE_H

/* GATE_BEYOND: a slower (faster) case counts only when its interval lies
 * wholly beyond the margin, above 1 + margin (below 1 - margin);
 * GATE_SIGNIFICANT: any slower (faster) case counts. */
enum gate_rule {
	GATE_BEYOND,
	GATE_SIGNIFICANT,
};

/* What a case that stopped undecided does to the run: nothing (PASS), or it
 * counts as a regression. */
enum gate_undecided {
	UNDECIDED_PASS,
	UNDECIDED_REGRESSION,
};

/* "beyond", "significant"; "pass", "regression"; "unknown" outside the
 * enum. */
const char *gate_rule_name(enum gate_rule r);
const char *gate_undecided_name(enum gate_undecided u);

/* The words of each, in the enums' order and NULL-terminated: the one
 * spelling that the names, the parsers and the settings table
 * (proto/settings.c) use. */
extern const char *const gate_rule_words[];
extern const char *const gate_undecided_words[];

/* The word s (NULL: none) into *out: 0, or -1 for any other word. */
int gate_rule_parse(const char *s, enum gate_rule *out);
int gate_undecided_parse(const char *s, enum gate_undecided *out);

#endif
