/* qualctl status, list, show, cancel and quarantine (ctl.h): one request,
 * its reply as tables and lines for a person, or as it came with --json. */
#include "client/ctl.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/view.h"
#include "common/lines.h"
#include "proto/line.h"
#include "common/exitcode.h"
#include "common/xalloc.h"
#include "proto/vocab.h"

/* ---- tables ---- */

/* The bytes of a table cell, with its NUL. */
#define CELL_MAX 1024

/* How a column's cell is written from its field. */
enum cell_kind {
	CELL_TEXT,   /* strings as they are, null "-", ... (cell_text) */
	CELL_TIME,   /* seconds since 1970, in UTC */
	CELL_DEVICE, /* a slot's device */
	CELL_JOB,    /* a slot's job, "idle" for none */
	CELL_SHA,    /* a SHA-256: its first 16 hex digits tell them apart */
};

/* A value of a reply as table text: strings as they are, null "-", times
 * (numbers of seconds since 1970, should quald send them so) in UTC. */
static void cell_text(json_t *x, char *buf, size_t len)
{
	if (json_is_string(x)) {
		snprintf(buf, len, "%s", json_string_value(x));
	} else if (json_is_integer(x)) {
		snprintf(buf, len, "%lld", (long long)json_integer_value(x));
	} else if (json_is_number(x)) {
		snprintf(buf, len, "%g", json_number_value(x));
	} else if (json_is_true(x) || json_is_false(x)) {
		snprintf(buf, len, "%s", json_is_true(x) ? "yes" : "no");
	} else if (!x || json_is_null(x)) {
		snprintf(buf, len, "-");
	} else {
		char *s = json_dumps(x, JSON_COMPACT);
		snprintf(buf, len, "%s", s ? s : "?");
		free(s);
	}
}

static void time_cell(json_t *x, char *buf, size_t len)
{
	if (json_is_number(x) && json_number_value(x) > 0) {
		time_t t = (time_t)json_number_value(x);
		struct tm tm;
		if (gmtime_r(&t, &tm) && strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) > 0)
			return;
	}
	cell_text(x, buf, len);
}

/* A slot's device: quald may say it with an ordinal, a name, an object
 * (name, ordinal) or null for a compile-only slot. */
static void device_cell(json_t *x, char *buf, size_t len)
{
	if (json_is_integer(x))
		snprintf(buf, len, "gpu %lld", (long long)json_integer_value(x));
	else if (!x || json_is_null(x))
		snprintf(buf, len, "none (compile only)");
	else if (json_is_object(x) && json_is_string(json_object_get(x, "name")))
		snprintf(buf, len, "%s", json_string_value(json_object_get(x, "name")));
	else
		cell_text(x, buf, len);
}

static void cell_of(json_t *x, enum cell_kind kind, char *buf, size_t len)
{
	switch (kind) {
	case CELL_TIME:
		time_cell(x, buf, len);
		return;
	case CELL_DEVICE:
		device_cell(x, buf, len);
		return;
	case CELL_JOB:
		if (!x || json_is_null(x))
			snprintf(buf, len, "idle");
		else
			cell_text(x, buf, len);
		return;
	case CELL_SHA:
		if (json_is_string(x))
			snprintf(buf, len, "%.16s", json_string_value(x));
		else
			cell_text(x, buf, len);
		return;
	case CELL_TEXT:
		break;
	}
	cell_text(x, buf, len);
}

/* The table of rows (an array of objects): column k shows their field
 * keys[k] (its head too) as kinds[k] says. */
static void print_rows(json_t *rows, const char *const *keys,
		       const enum cell_kind *kinds, size_t ncols)
{
	size_t n = json_array_size(rows);
	char (*text)[CELL_MAX] = xcalloc(n * ncols + 1, sizeof *text);
	const char **cells = xcalloc(n * ncols + 1, sizeof *cells);

	for (size_t i = 0; i < n; i++) {
		json_t *row = json_array_get(rows, i);

		for (size_t k = 0; k < ncols; k++) {
			cell_of(json_object_get(row, keys[k]), kinds[k], text[i * ncols + k],
				sizeof text[0]);
			cells[i * ncols + k] = text[i * ncols + k];
		}
	}
	view_table(stdout, keys, ncols, cells, n);
	free(cells);
	free(text);
}

/* A reply listing what its field key holds: as it came with --json, else
 * none when the list is empty, else its table. */
static void print_listing(const struct ctl *ctl, const struct reply *r, const char *key,
			  const char *none, const char *const *keys,
			  const enum cell_kind *kinds, size_t ncols)
{
	json_t *rows = json_object_get(r->obj, key);

	if (ctl->json)
		ctl_print_raw(r);
	else if (json_array_size(rows) == 0)
		printf("%s\n", none);
	else
		print_rows(rows, keys, kinds, ncols);
}

static void print_id_list(const char *what, json_t *ids)
{
	char cell[128];
	size_t i;

	printf("%s:", what);
	if (json_array_size(ids) == 0)
		printf(" none");
	for (i = 0; i < json_array_size(ids); i++) {
		cell_text(json_array_get(ids, i), cell, sizeof cell);
		printf(" %s", cell);
	}
	printf("\n");
}

/* ---- the commands ---- */

int ctl_status(struct ctl *ctl, const struct command *cmd, int argc, char **argv)
{
	static const char *const keys[] = {"slot", "device", "job"};
	static const enum cell_kind kinds[] = {CELL_TEXT, CELL_DEVICE, CELL_JOB};
	struct reply r = {0};
	char v[128], sv[128];
	int first, rc;

	rc = ctl_parse_args(ctl, cmd, argc, argv, NULL, ctl_take_nothing, NULL, &first);
	if (rc < 0)
		rc = ctl_no_operands(cmd, argc, argv, first);
	if (rc < 0)
		rc = ctl_request(ctl, json_pack("{s:s}", "op", "status"), &r);
	if (rc >= 0)
		return rc;
	if (ctl->json) {
		ctl_print_raw(&r);
		goto out;
	}
	cell_text(json_object_get(r.obj, "version"), v, sizeof v);
	cell_text(json_object_get(r.obj, "schema_version"), sv, sizeof sv);
	printf("quald %s (lines schema %s) at %s\n", v, sv, ctl->conn.where);
	print_rows(json_object_get(r.obj, "slots"), keys, kinds, sizeof keys / sizeof keys[0]);
	print_id_list(vocab_state_name(JOB_RUNNING),
		      json_object_get(r.obj, vocab_state_name(JOB_RUNNING)));
	print_id_list(vocab_state_name(JOB_QUEUED),
		      json_object_get(r.obj, vocab_state_name(JOB_QUEUED)));
out:
	ctl_reply_release(&r);
	return QUAL_EXIT_PASS;
}

enum {
	OPT_LIMIT = CTL_OPT_OWN,
};

static int take_list(void *st, const struct command *cmd, int opt, const char *arg)
{
	if (opt != OPT_LIMIT)
		return ctl_take_nothing(st, cmd, opt, arg);
	return ctl_parse_long(cmd, "--limit", arg, 1, st);
}

/* A job whose log lost records in a recovery (docs/quald.md) reads
 * "done, damaged" in its state column: a person sees it without --json. */
static void mark_damaged(json_t *jobs)
{
	size_t i;
	json_t *job;

	json_array_foreach(jobs, i, job) {
		const char *state = json_string_value(json_object_get(job, "state"));
		char text[64];

		if (!state || !json_is_true(json_object_get(job, "damaged")))
			continue;
		snprintf(text, sizeof text, "%s, damaged", state);
		json_object_set_new(job, "state", json_string(text));
	}
}

/* The settings summary of a list entry (docs/protocol.md, list) in brief:
 * "60 pairs, compile-only, cases a b, options, 2 fixture dirs". */
static void settings_text(json_t *st, char *buf, size_t len)
{
	json_t *cases = json_object_get(st, "cases"), *c;
	size_t used, i;
	int k;

	k = snprintf(buf, len, "%lld pairs%s", (long long)json_integer_value(
			     json_object_get(st, "pairs")),
		     json_is_true(json_object_get(st, "compile_only")) ? ", compile-only" : "");
	used = k > 0 ? (size_t)k : 0;
	json_array_foreach(cases, i, c) {
		k = snprintf(buf + used, len - used, "%s%s", i ? " " : ", cases ",
			     json_is_string(c) ? json_string_value(c) : "?");
		if (k < 0 || (size_t)k >= len - used)
			return;
		used += (size_t)k;
	}
	if (used < len && (json_object_get(st, "baseline_options") ||
			   json_object_get(st, "candidate_options"))) {
		k = snprintf(buf + used, len - used, ", options");
		used += k > 0 ? (size_t)k : 0;
	}
	if (used < len && json_is_integer(json_object_get(st, "fixtures")))
		snprintf(buf + used, len - used, ", %lld fixture dirs",
			 (long long)json_integer_value(json_object_get(st, "fixtures")));
}

/* A list's labels and settings as the text of their columns. */
static void list_texts(json_t *jobs)
{
	char text[CELL_MAX];
	size_t i;
	json_t *job;

	json_array_foreach(jobs, i, job) {
		ctl_labels_text(json_object_get(job, "labels"), text, sizeof text);
		json_object_set_new(job, "labels", json_string(text));
		if (json_is_object(json_object_get(job, "settings"))) {
			settings_text(json_object_get(job, "settings"), text, sizeof text);
			json_object_set_new(job, "settings", json_string(text));
		}
	}
}

/* A list reply holds what fits in one line (docs/protocol.md, list): a page
 * cut short says "next", and the jobs before that one are asked for on the
 * same connection until the limit is reached (the protocol's default when
 * none was given) or there are no more. The pages' jobs go into r's, as one reply; with
 * --json it prints as one. Returns -1, or the exit status. */
static int list_follow_pages(struct ctl *ctl, struct reply *r, long limit)
{
	json_t *jobs = json_object_get(r->obj, "jobs");
	json_t *next = json_object_get(r->obj, "next");
	bool paged = false;

	if (limit <= 0)
		limit = VOCAB_LIST_DEFAULT;
	while (json_is_string(next) && json_is_array(jobs) &&
	       (long)json_array_size(jobs) < limit) {
		struct reply page = {0};
		json_t *req = json_pack("{s:s,s:s}", "op", "list", "before", json_string_value(next));
		int rc;

		json_object_set_new(req, "limit", json_integer(limit - (long)json_array_size(jobs)));
		if ((rc = ctl_request_again(ctl, req, &page)) >= 0)
			return rc;
		json_array_extend(jobs, json_object_get(page.obj, "jobs"));
		next = json_object_get(page.obj, "next");
		json_object_set(r->obj, "next", json_is_string(next) ? next : json_null());
		next = json_object_get(r->obj, "next");
		ctl_reply_release(&page);
		paged = true;
	}
	if (paged) {
		json_object_del(r->obj, "next");
		free(r->text);
		r->text = json_dumps(r->obj, JSON_COMPACT);
		r->len = r->text ? strlen(r->text) : 0;
	}
	return -1;
}

int ctl_list(struct ctl *ctl, const struct command *cmd, int argc, char **argv)
{
	static const struct option own[] = {
		{"limit", required_argument, NULL, OPT_LIMIT},
		{NULL, 0, NULL, 0},
	};
	static const char *const keys[] = {"job", "state", "verdict", "submitted",
					   "finished", "baseline", "candidate", "labels",
					   "settings"};
	static const enum cell_kind kinds[] = {CELL_TEXT, CELL_TEXT, CELL_TEXT, CELL_TIME,
					       CELL_TIME, CELL_TEXT, CELL_TEXT, CELL_TEXT,
					       CELL_TEXT};
	struct reply r = {0};
	json_t *req;
	long limit = -1;
	int first, rc;

	rc = ctl_parse_args(ctl, cmd, argc, argv, own, take_list, &limit, &first);
	if (rc < 0)
		rc = ctl_no_operands(cmd, argc, argv, first);
	if (rc >= 0)
		return rc;
	req = json_pack("{s:s}", "op", "list");
	if (limit > 0)
		json_object_set_new(req, "limit", json_integer(limit));
	rc = ctl_request(ctl, req, &r);
	if (rc >= 0)
		return rc;
	if ((rc = list_follow_pages(ctl, &r, limit)) >= 0) {
		ctl_reply_release(&r);
		return rc;
	}
	if (!ctl->json) {
		mark_damaged(json_object_get(r.obj, "jobs"));
		list_texts(json_object_get(r.obj, "jobs"));
	}
	print_listing(ctl, &r, "jobs", "no jobs", keys, kinds, sizeof keys / sizeof keys[0]);
	ctl_reply_release(&r);
	return QUAL_EXIT_PASS;
}

/* show and cancel: one job id, the operand, sent as {"op":NAME,"job":ID}.
 * Returns -1 with the reply in *r, its job (else the operand) in *job and
 * its state (or NULL) in *state; or the exit status. */
static int job_request(struct ctl *ctl, const struct command *cmd, int argc, char **argv,
		       struct reply *r, const char **job, const char **state)
{
	const char *operand;
	int rc;

	rc = ctl_job_operand(ctl, cmd, argc, argv, &operand);
	if (rc >= 0)
		return rc;
	rc = ctl_request(ctl, json_pack("{s:s,s:s}", "op", cmd->name, "job", operand), r);
	if (rc >= 0)
		return rc;
	*job = json_string_value(json_object_get(r->obj, "job"));
	if (!*job)
		*job = operand;
	*state = json_string_value(json_object_get(r->obj, "state"));
	return -1;
}

int ctl_show(struct ctl *ctl, const struct command *cmd, int argc, char **argv)
{
	struct reply r = {0}, line = {0};
	struct view_job v;
	const char *job, *state;
	json_int_t n;
	int rc;

	rc = job_request(ctl, cmd, argc, argv, &r, &job, &state);
	if (rc >= 0)
		return rc;
	n = json_integer_value(json_object_get(r.obj, "lines"));
	view_job_init(&v, job);
	if (report_open("qualctl", &ctl->rep) < 0) {
		rc = QUAL_EXIT_USAGE;
		goto out;
	}
	if (!ctl->json) {
		json_t *fixtures = json_object_get(r.obj, "fixtures");
		size_t i;
		json_t *d;

		char labels[CELL_MAX];

		printf("job %s: %s, %lld lines\n", v.job, state ? state : "?", (long long)n);
		if (json_object_size(json_object_get(r.obj, "labels"))) {
			ctl_labels_text(json_object_get(r.obj, "labels"), labels, sizeof labels);
			printf("labels: %s\n", labels);
		}
		json_array_foreach(fixtures, i, d)
			if (json_is_string(d))
				printf("fixtures: '%s'\n", json_string_value(d));
	}
	for (json_int_t i = 0; i < n; i++) {
		rc = ctl_read_reply(ctl, &line);
		if (rc >= 0) {
			fprintf(stderr, "qualctl: quald at %s sent %lld of the %lld lines of job %s\n",
				ctl->conn.where, (long long)i, (long long)n, v.job);
			goto out;
		}
		report_line(&ctl->rep, line.text, line.len);
		if (ctl->json)
			ctl_print_raw(&line);
		/* The view takes every line: its verdict is the exit status
		 * and the reports', with --json too. */
		view_job_take(&v, line.obj, ctl->json ? NULL : stdout, 0);
		ctl_reply_release(&line);
	}
	if (!ctl->json && v.verdict) {
		v.color = view_color_wanted(stdout);
		view_summary(stdout, &v);
	}
	/* The job's verdict status, as submit gives it; 0 while it has none
	 * (queued or running: 'qualctl wait' gates on it). */
	if (v.verdict) {
		struct lines_info info;

		lines_classify(v.verdict, &info);
		rc = view_exit_status(info.verdict);
	} else {
		rc = QUAL_EXIT_PASS;
	}
	if ((ctl->rep.junit || ctl->rep.markdown) && !v.verdict) {
		fprintf(stderr, "qualctl: job %s has no verdict yet (%s): no --junit or --markdown "
			"report written ('qualctl wait %s' waits for it)\n", v.job,
			state ? state : "?", v.job);
		rc = QUAL_EXIT_ERROR;
		report_abandon(&ctl->rep);
	} else if (report_finish("qualctl", &ctl->rep, &v) < 0) {
		rc = report_status(rc);
	}
out:
	report_abandon(&ctl->rep);
	view_job_release(&v);
	ctl_reply_release(&r);
	return rc;
}

int ctl_cancel(struct ctl *ctl, const struct command *cmd, int argc, char **argv)
{
	struct reply r = {0};
	const char *job, *state;
	int rc;

	rc = job_request(ctl, cmd, argc, argv, &r, &job, &state);
	if (rc >= 0)
		return rc;
	if (ctl->json)
		ctl_print_raw(&r);
	else
		printf("job %s: %s\n", job, state ? state : vocab_state_name(JOB_CANCELLED));
	ctl_reply_release(&r);
	return QUAL_EXIT_PASS;
}

/* quarantine list | clear SHA256: the libraries whose candidate runs
 * crashed (docs/quald.md). The hash is checked by quald, which refuses a
 * malformed one precisely; a refusal exits 4 like a usage error. */
int ctl_quarantine(struct ctl *ctl, const struct command *cmd, int argc, char **argv)
{
	static const char *const keys[] = {"sha256", "strikes", "quarantined", "library",
					   "last"};
	static const enum cell_kind kinds[] = {CELL_SHA, CELL_TEXT, CELL_TEXT, CELL_TEXT,
					       CELL_TIME};
	struct reply r = {0};
	json_t *req;
	const char *action, *sha;
	int first, rc;

	rc = ctl_parse_args(ctl, cmd, argc, argv, NULL, ctl_take_nothing, NULL, &first);
	if (rc >= 0)
		return rc;
	if (first >= argc)
		return ctl_usage_error(cmd, "%s", "needs an action: list or clear SHA256");
	action = argv[first];
	if (strcmp(action, "list") == 0) {
		if (argc - first != 1)
			return ctl_usage_error(cmd, "list takes no operands, got '%s'", argv[first + 1]);
		req = json_pack("{s:s,s:s}", "op", "quarantine", "action", "list");
	} else if (strcmp(action, "clear") == 0) {
		if (argc - first != 2)
			return ctl_usage_error(cmd, "%s", "clear needs one SHA256 (64 hex digits)");
		req = json_pack("{s:s,s:s,s:s}", "op", "quarantine", "action", "clear",
				"sha256", argv[first + 1]);
	} else {
		return ctl_usage_error(cmd, "unknown action '%s': list or clear", action);
	}
	rc = ctl_request(ctl, req, &r);
	if (rc >= 0)
		return rc;
	sha = json_string_value(json_object_get(r.obj, "sha256"));
	if (!ctl->json && strcmp(action, "clear") == 0)
		printf("cleared %s: its library may be submitted again\n",
		       sha ? sha : argv[first + 1]);
	else
		print_listing(ctl, &r, "quarantine", "no library has crashed", keys, kinds,
			      sizeof keys / sizeof keys[0]);
	ctl_reply_release(&r);
	return QUAL_EXIT_PASS;
}

/* One number of a record for a person: "-" for null. */
static void print_rate(const char *label, json_t *v)
{
	if (json_is_number(v))
		printf("%s %.4g", label, json_number_value(v));
	else
		printf("%s -", label);
}

int ctl_calibration(struct ctl *ctl, const struct command *cmd, int argc, char **argv)
{
	struct reply r = {0};
	json_t *list;
	size_t i, k;
	int first, rc;

	rc = ctl_parse_args(ctl, cmd, argc, argv, NULL, ctl_take_nothing, NULL, &first);
	if (rc >= 0)
		return rc;
	if ((rc = ctl_no_operands(cmd, argc, argv, first)) >= 0)
		return rc;
	rc = ctl_request(ctl, json_pack("{s:s}", "op", "calibration"), &r);
	if (rc >= 0)
		return rc;
	if (ctl->json) {
		ctl_print_raw(&r);
		ctl_reply_release(&r);
		return QUAL_EXIT_PASS;
	}
	list = json_object_get(r.obj, "calibrations");
	for (i = 0; i < json_array_size(list); i++) {
		json_t *e = json_array_get(list, i), *rec = json_object_get(e, "record");
		json_t *cases = json_object_get(rec, "cases");
		const char *key = json_string_value(json_object_get(e, "device_key"));

		printf("slot %lld (%s): ", (long long)json_integer_value(json_object_get(e, "slot")),
		       key ? key : "?");
		if (!json_is_object(rec)) {
			printf("no calibration yet\n");
			continue;
		}
		printf("%s, %lld runs, %lld A/A comparisons, %lld slower, %lld faster,",
		       json_string_value(json_object_get(rec, "time")),
		       (long long)json_integer_value(json_object_get(rec, "runs")),
		       (long long)json_integer_value(json_object_get(rec, "comparisons")),
		       (long long)json_integer_value(json_object_get(rec, "slower")), /* vocab:key */
		       (long long)json_integer_value(json_object_get(rec, "faster"))); /* vocab:key */
		print_rate(" false-alarm rate", json_object_get(rec, "false_alarm_rate"));
		print_rate(", at most", json_object_get(rec, "false_alarm_upper"));
		printf(" (95%%)\n");
		for (k = 0; k < json_array_size(cases); k++) {
			json_t *c = json_array_get(cases, k);

			printf("  %-32s %4lld comparisons, %3lld alarms,",
			       json_string_value(json_object_get(c, "case")),
			       (long long)json_integer_value(json_object_get(c, "comparisons")),
			       (long long)(json_integer_value(json_object_get(c, "slower")) + /* vocab:key */
					   json_integer_value(json_object_get(c, "faster")))); /* vocab:key */
			print_rate(" at most", json_object_get(c, "false_alarm_upper"));
			print_rate(", detectable ratio", json_object_get(c, "detectable_ratio"));
			printf("\n");
		}
	}
	ctl_reply_release(&r);
	return QUAL_EXIT_PASS;
}
