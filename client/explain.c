/* A code line for a person (explain.h). */
#include "client/explain.h"

#include <string.h>

#include "client/view.h"
#include "proto/line.h"

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

/* A figure's cell: the number, or "-" when unknown. */
static void cell(json_t *v, char *buf, size_t cap)
{
	if (json_is_integer(v))
		snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
	else
		snprintf(buf, cap, "-");
}

static void row(FILE *out, const char *label, json_t *b, json_t *c)
{
	char x[32], y[32], d[32] = "";

	cell(b, x, sizeof x);
	cell(c, y, sizeof y);
	if (json_is_integer(b) && json_is_integer(c) &&
	    json_integer_value(b) != json_integer_value(c)) {
		long long delta = (long long)(json_integer_value(c) - json_integer_value(b));

		if (json_integer_value(b) > 0)
			snprintf(d, sizeof d, "%+lld (%+.1f%%)", delta,
				 100.0 * (double)delta / (double)json_integer_value(b));
		else
			snprintf(d, sizeof d, "%+lld", delta);
	}
	fprintf(out, "  %-24s %12s %12s%s%s\n", label, x, y, d[0] ? "  " : "", d);
}

static void figure(FILE *out, const char *label, json_t *arms[2], const char *key)
{
	row(out, label, json_object_get(arms[0], key), json_object_get(arms[1], key));
}

static void occupancy(FILE *out, json_t *arms[2], json_t *timed)
{
	char cells[2][32];
	json_t *o[2];
	json_t *drv[2] = { json_object_get(json_object_get(timed, "baseline"),
					   "driver_blocks_per_sm"),
			   json_object_get(json_object_get(timed, "candidate"),
					   "driver_blocks_per_sm") };

	for (int i = 0; i < 2; i++) {
		o[i] = json_object_get(arms[i], "occupancy");
		if (json_is_object(o[i]))
			snprintf(cells[i], sizeof cells[i], "%.1f%%",
				 100 * json_number_value(json_object_get(o[i], "fraction")));
		else
			snprintf(cells[i], sizeof cells[i], "-");
	}
	fprintf(out, "  %-24s %12s %12s\n", "occupancy", cells[0], cells[1]);
	row(out, "  blocks per SM", json_object_get(o[0], "blocks_per_sm"),
	    json_object_get(o[1], "blocks_per_sm"));
	/* The driver's own count where the job was timed (docs/explain.md). */
	if (json_is_integer(drv[0]) || json_is_integer(drv[1]))
		row(out, "  by the driver", drv[0], drv[1]);
	row(out, "  warps per SM", json_object_get(o[0], "warps_per_sm"),
	    json_object_get(o[1], "warps_per_sm"));
	fprintf(out, "  %-24s %12s %12s\n", "  limited by", str(o[0], "limited_by"),
		str(o[1], "limited_by"));
}

static void print_diff(FILE *out, json_t *d, bool color)
{
	const char *text = str(d, "text"), *s = text;

	fprintf(out, "\ndiff of the disassemblies, registers and labels renamed in the order\n"
		"of first use: %lld lines added, %lld removed%s%s\n",
		(long long)json_integer_value(json_object_get(d, "added")),
		(long long)json_integer_value(json_object_get(d, "removed")),
		json_is_true(json_object_get(d, "coarse")) ?
		",\ntoo large to match line by line" : "",
		json_is_true(json_object_get(d, "truncated")) ? ";\ncut short in the job's line" : "");
	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);
		const char *on = !color ? "" : *s == '+' ? "\033[32m" : *s == '-' ? "\033[31m" :
				 *s == '@' ? "\033[36m" : "";

		/* A compiler's bytes: its control characters shown escaped. */
		json_t *line = json_stringn_nocheck(s, n);

		view_clean(line);
		fprintf(out, "%s%s%s\n", on, json_string_value(line), *on ? "\033[0m" : "");
		json_decref(line);
		s += n + (nl != NULL);
	}
}

void explain_print(FILE *out, json_t *raw, json_t *timed, bool diff, bool color)
{
	/* Its strings cleaned for a terminal, but for the diff's text, which
	 * is cleaned a line at a time. */
	json_t *code = json_deep_copy(raw);
	json_t *d = json_object_get(raw, "diff");
	json_t *arms[2] = { json_object_get(code, "baseline"), json_object_get(code, "candidate") };
	json_t *tool;
	json_t *mix[2] = { json_object_get(arms[0], "mix"), json_object_get(arms[1], "mix") };
	view_clean(code);
	tool = json_object_get(code, "disassembler");
	fprintf(out, "%s (%s)\nlaunch: %lld threads a block, %lld bytes of dynamic shared "
		"memory\n", str(code, "case"), str(code, "target"),
		(long long)json_integer_value(json_object_get(code, "block_threads")),
		(long long)json_integer_value(json_object_get(code, "dynamic_shared_bytes")));
	fprintf(out, "code: %s\n", json_is_true(json_object_get(code, "identical_code")) ?
		"identical in both arms" : "differs");
	if (json_is_object(tool))
		fprintf(out, "disassembler: %s, %s\n  %s\n", str(tool, "tool"), str(tool, "version"),
			str(tool, "path"));
	if (json_is_string(json_object_get(code, "disassembly_error")))
		fprintf(out, "no disassembly: %s\n", str(code, "disassembly_error"));
	fprintf(out, "\n  %-24s %12s %12s  change\n", "", "baseline", "candidate");
	figure(out, "code bytes", arms, "code_bytes");
	figure(out, "instructions", arms, "instructions");
	figure(out, "registers per thread", arms, "registers");
	figure(out, "spill stores (bytes)", arms, "spill_stores");
	figure(out, "spill loads (bytes)", arms, "spill_loads");
	figure(out, "local memory (bytes)", arms, "local_bytes");
	figure(out, "static shared (bytes)", arms, "shared_bytes");
	occupancy(out, arms, timed);
	if (json_is_object(mix[0]) || json_is_object(mix[1])) {
		/* The classes qual writes, in their order: a key of a file's is
		 * never printed as it is. */
		static const char *const classes[] = {
#define X(e, s) s,
			LINES_CODE_MIX(X)
#undef X
		};

		fprintf(out, "  instruction mix\n");
		for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
			char label[40];

			snprintf(label, sizeof label, "  %s", classes[i]);
			row(out, label, json_object_get(mix[0], classes[i]),
			    json_object_get(mix[1], classes[i]));
		}
	}
	if (diff && json_is_object(d))
		print_diff(out, d, color);
	json_decref(code);
}
