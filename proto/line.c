/* A line parsed once (line.h). */
#include "proto/line.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/xalloc.h"

/* Fills l's fields from its object. */
static void line_read(struct line *l)
{
	const struct lines_info *info = &l->info;
	const char *job = json_string_value(json_object_get(l->obj, "job"));
	json_t *seq = json_object_get(l->obj, "seq");

	lines_classify(l->obj, &l->info);
	l->type = info->type;
	l->code = info->code;
	l->verdict = RUN_VERDICT_UNKNOWN;
	l->case_verdict = CASE_VERDICT_UNKNOWN;
	if (info->type == LINES_VERDICT)
		l->verdict = vocab_verdict_parse(info->verdict);
	else if (info->type == LINES_CASE_VERDICT)
		l->case_verdict = vocab_case_verdict_parse(info->verdict);
	l->seq = json_is_integer(seq) && json_integer_value(seq) >= 0 ?
		 (long)json_integer_value(seq) : -1;
	snprintf(l->job, sizeof l->job, "%s", job && strlen(job) < sizeof l->job ? job : "");
}

struct line *line_take(json_t *obj, char *text, size_t len)
{
	struct line *l = xcalloc(1, sizeof *l);

	l->refs = 1;
	l->obj = obj;
	l->text = text;
	l->len = len;
	line_read(l);
	return l;
}

int line_parse(const char *text, size_t len, struct line **out)
{
	json_t *o;
	char *copy;

	*out = NULL;
	o = memchr(text, '\0', len) ? NULL : json_loadb(text, len, 0, NULL);
	if (!json_is_object(o)) {
		json_decref(o);
		return QUAL_EINVAL;
	}
	copy = xmalloc(len + 1);
	memcpy(copy, text, len);
	copy[len] = '\0';
	*out = line_take(o, copy, len);
	return 0;
}

void line_reread(struct line *l)
{
	line_read(l);
}

struct line *line_ref(struct line *l)
{
	l->refs++;
	return l;
}

void line_unref(struct line *l)
{
	if (!l || --l->refs > 0)
		return;
	json_decref(l->obj);
	free(l->text);
	free(l);
}

bool line_is_verdict(const struct line *l)
{
	return l->type == LINES_VERDICT;
}
