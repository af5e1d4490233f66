#include "common/gate.h"

#include <stddef.h>
#include <string.h>

const char *const gate_rule_words[] = { "beyond", "significant", NULL };
/* The policy's names (an undecided case passes, or counts as a regression);
 * common/ is below the vocabulary's layer. */
const char *const gate_undecided_words[] = { "pass", "regression", NULL }; /* vocab:key */
#define rule_names gate_rule_words
#define undecided_names gate_undecided_words
_Static_assert(sizeof gate_rule_words / sizeof gate_rule_words[0] == GATE_SIGNIFICANT + 2,
	       "a name for every gate_rule");
_Static_assert(sizeof gate_undecided_words / sizeof gate_undecided_words[0] ==
	       UNDECIDED_REGRESSION + 2, "a name for every gate_undecided");

/* The index of s among the two names, or -1. */
static int index_of(const char *const names[2], const char *s)
{
	for (int i = 0; s && i < 2; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

const char *gate_rule_name(enum gate_rule r)
{
	return (int)r >= 0 && (int)r < 2 ? rule_names[r] : "unknown";
}

const char *gate_undecided_name(enum gate_undecided u)
{
	return (int)u >= 0 && (int)u < 2 ? undecided_names[u] : "unknown";
}

int gate_rule_parse(const char *s, enum gate_rule *out)
{
	int i = index_of(rule_names, s);

	if (i < 0)
		return -1;
	*out = (enum gate_rule)i;
	return 0;
}

int gate_undecided_parse(const char *s, enum gate_undecided *out)
{
	int i = index_of(undecided_names, s);

	if (i < 0)
		return -1;
	*out = (enum gate_undecided)i;
	return 0;
}
