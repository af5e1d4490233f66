/* qualctl explain JOB CASE: what the two compilers made of one case of a
 * job (docs/qualctl.md, "explain"): the case's code line, read from the
 * job's stored lines through quald, or from a file of a run's lines. */
#include "client/ctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/explain.h"
#include "client/view.h"
#include "common/exitcode.h"
#include "common/lines.h"
#include "proto/vocab.h"

enum { OPT_NO_DIFF = CTL_OPT_OWN };

static const struct option explain_options[] = {
	{"no-diff", no_argument, NULL, OPT_NO_DIFF},
	{NULL, 0, NULL, 0},
};

struct explain_cmd {
	bool no_diff;
	const char *case_name;
	json_t *code;        /* the case's code line, once met, as it came */
	json_t *timed;       /* the case's first timed case line, or NULL */
	char *code_text;     /* and its text, for --json */
	json_t *cases;       /* the names of the cases met, for the message */
	bool compiled_case;  /* a case line of it was met */
};

static int take(void *st, const struct command *cmd, int opt, const char *arg)
{
	struct explain_cmd *e = st;

	(void)cmd;
	(void)arg;
	if (opt == OPT_NO_DIFF)
		e->no_diff = true;
	return 0;
}

/* A line as it came (text, len bytes): not view_clean()ed, since the diff's
 * lines are split at its newlines before they are cleaned (explain.c). */
static void meet(struct explain_cmd *e, const char *text, size_t len)
{
	json_t *line = json_loadb(text, len, 0, NULL);
	const char *type = ctl_type_of(line), *name;

	if (!type || !(name = json_string_value(json_object_get(line, "case")))) {
		json_decref(line);
		return;
	}
	if (!strcmp(type, "case")) {
		json_array_append_new(e->cases, json_string(name));
		if (!strcmp(name, e->case_name)) {
			e->compiled_case = true;
			/* Its arms carry the driver's occupancy count. */
			if (!e->timed && json_is_true(json_object_get(line, "timed")))
				e->timed = json_incref(line);
		}
	} else if (!strcmp(type, "code") && !strcmp(name, e->case_name)) {
		json_decref(e->code);
		free(e->code_text);
		e->code = json_incref(line);
		e->code_text = strndup(text, len);
	}
	json_decref(line);
}

/* The lines of a file of a run's lines ("-": stdin). */
static int from_file(struct explain_cmd *e, const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f) {
		fprintf(stderr, "qualctl explain: cannot read '%s': %s\n", path, strerror(errno));
		return QUAL_EXIT_USAGE;
	}
	while ((n = getline(&buf, &cap, f)) > 0) {
		if (buf[n - 1] == '\n')
			n--;
		meet(e, buf, (size_t)n);
	}
	free(buf);
	if (f != stdin)
		fclose(f);
	return -1;
}

/* The job's stored lines, through quald's show. */
static int from_job(struct ctl *ctl, struct explain_cmd *e, const char *job)
{
	struct reply r = {0}, line = {0};
	json_int_t n;
	int rc;

	rc = ctl_request(ctl, json_pack("{s:s,s:s}", "op", "show", "job", job), &r);
	if (rc >= 0)
		return rc;
	n = json_integer_value(json_object_get(r.obj, "lines"));
	for (json_int_t i = 0; i < n; i++) {
		if ((rc = ctl_read_reply(ctl, &line)) >= 0) {
			fprintf(stderr, "qualctl: quald at %s sent %lld of the %lld lines of job %s\n",
				ctl->conn.where, (long long)i, (long long)n, job);
			ctl_reply_release(&r);
			return rc;
		}
		meet(e, line.text, line.len);
		ctl_reply_release(&line);
	}
	ctl_reply_release(&r);
	return -1;
}

/* Why there is nothing to explain: no such case, or no code line for it. */
static int missing(struct explain_cmd *e, const char *source)
{
	size_t i;
	json_t *v;

	if (e->compiled_case) {
		fprintf(stderr, "qualctl explain: %s has no code line for case '%s': its arms did "
			"not both compile (qualctl show says why), or it ran before code lines "
			"were written\n", source, e->case_name);
		return QUAL_EXIT_USAGE;
	}
	fprintf(stderr, "qualctl explain: %s has no case '%s'", source, e->case_name);
	view_clean(e->cases); /* names from a file: their control characters escaped */
	json_array_foreach(e->cases, i, v)
		fprintf(stderr, "%s%s", i ? ", " : "; its cases: ", json_string_value(v));
	fprintf(stderr, "\n");
	return QUAL_EXIT_USAGE;
}

int ctl_explain(struct ctl *ctl, const struct command *cmd, int argc, char **argv)
{
	struct explain_cmd e = { .cases = json_array() };
	const char *what;
	char source[320];
	int first, rc;

	rc = ctl_parse_args(ctl, cmd, argc, argv, explain_options, take, &e, &first);
	if (rc >= 0)
		goto out;
	if (argc - first != 2) {
		rc = ctl_usage_error(cmd, "%s", "needs a job id (or a file of a run's lines) and "
				     "a case name");
		goto out;
	}
	what = argv[first];
	e.case_name = argv[first + 1];
	if (vocab_job_id_parse(what) >= 0) {
		snprintf(source, sizeof source, "job %s", what);
		rc = from_job(ctl, &e, what);
	} else {
		snprintf(source, sizeof source, "'%.300s'", what);
		rc = from_file(&e, what);
	}
	if (rc >= 0)
		goto out;
	if (!e.code) {
		rc = missing(&e, source);
		goto out;
	}
	if (ctl->json) {
		printf("%s\n", e.code_text);
	} else {
		explain_print(stdout, e.code, e.timed, !e.no_diff, view_color_wanted(stdout));
	}
	rc = QUAL_EXIT_PASS;
out:
	json_decref(e.code);
	json_decref(e.timed);
	free(e.code_text);
	json_decref(e.cases);
	return rc;
}
