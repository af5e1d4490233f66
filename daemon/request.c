/* Parsing and validating one request line (docs/protocol.md). Every refusal
 * names the problem precisely enough that a person can fix the request from
 * the message alone: the field, what it must be, and what it was. */
#include "daemon/request.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/sampling.h"
#include "common/xalloc.h"
#include "common/calib_record.h"
#include "proto/fleet.h"
#include "proto/settings.h"
#include "proto/vocab.h"

/* Limits on what a request may carry, beyond the line length. Paths are at
 * most PATH_MAX (4096 on Linux, with the NUL); a case name is short (the
 * longest fixture case is under 40 bytes); an extra compiler option is
 * bounded like a path (an -I or --include-path option carries one). */
#define REQUEST_MAX_PATH 4095
#define REQUEST_MAX_CASE 128
/* Nesting deeper than this is refused before jansson parses the line: a
 * request is two levels deep (the object and a list), and the client's "id"
 * needs no deep structure. jansson's own limit (2048) is far too generous
 * for a line that any connection may send. */
#define REQUEST_MAX_DEPTH 16

/* The job's settings and their bounds are proto/settings.h's, the one
 * table qual-run reads its options by too. */
#define REQUEST_MAX_LIMIT VOCAB_LIST_MAX
#define REQUEST_DEFAULT_LIMIT VOCAB_LIST_DEFAULT
#define REQUEST_MAX_SLOT 1023

static const char *const op_names[] = {
	[OP_SUBMIT] = "submit",
	[OP_WATCH] = "watch",
	[OP_STATUS] = "status",
	[OP_LIST] = "list",
	[OP_SHOW] = "show",
	[OP_CANCEL] = "cancel",
	[OP_AUTH] = "auth",
	[OP_QUARANTINE] = "quarantine",
	[OP_CALIBRATION] = "calibration",
	[OP_HISTORY] = "history",
};

/* The fields each op accepts besides "op" and "id". */
static const char *const submit_fields[] = {
	"baseline", "candidate", "pairs", "cases", "alpha", "margin",
	"baseline_options", "candidate_options", "compile_only", "seed",
	"compile_timeout", "follow", "fixtures", "mode", "max_pairs", "max_seconds",
	"gate_slower", "gate_faster", "undecided", "calibrate", "slot", "labels",
	FLEET_GPU_TYPE_KEY, FLEET_SUBMISSION_KEY, NULL,
};
static const char *const watch_fields[] = {"after_job", "after_seq", NULL};
static const char *const list_fields[] = {"limit", "before", NULL};
static const char *const job_fields[] = {"job", NULL};
static const char *const no_fields[] = {NULL};
static const char *const auth_fields[] = {"token", NULL};
static const char *const quarantine_fields[] = {"action", "sha256", NULL};
static const char *const history_fields[] = {"case", "labels", "limit", FLEET_GPU_TYPE_KEY,
					     NULL};

static const char *const *const op_fields[] = {
	[OP_SUBMIT] = submit_fields,
	[OP_WATCH] = watch_fields,
	[OP_STATUS] = no_fields,
	[OP_LIST] = list_fields,
	[OP_SHOW] = job_fields,
	[OP_CANCEL] = job_fields,
	[OP_AUTH] = auth_fields,
	[OP_QUARANTINE] = quarantine_fields,
	[OP_CALIBRATION] = no_fields,
	[OP_HISTORY] = history_fields,
};

#define clip settings_clip
#define describe settings_describe
#define CLIP_MAX 64
#define CLIP_BUF (CLIP_MAX + 4)

/* The nesting depth of a JSON text, ignoring brackets inside strings; an
 * early exit once it is over the limit. Runs before jansson so that a line of
 * 500000 '[' costs a scan, not a recursion. */
static bool depth_exceeds(const char *s, size_t len, int limit)
{
	int depth = 0;
	bool in_string = false;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
		} else if (c == '"') {
			in_string = true;
		} else if (c == '[' || c == '{') {
			if (++depth > limit)
				return true;
		} else if (c == ']' || c == '}') {
			depth--;
		}
	}
	return false;
}

/* The one rule for job ids (proto/vocab.h): ids start at j000001, as the
 * store numbers them, so that this door refuses what the store would. */
static bool is_job_id(const char *s)
{
	return vocab_job_id_parse(s) > 0;
}

/* A string field: absent leaves *out alone and returns 0 (required fields
 * are checked by the caller); otherwise a non-empty string of at most max
 * bytes, copied. jansson refuses \u0000 in strings (no JSON_ALLOW_NUL), so
 * the copy is the whole value. */
static int get_string(json_t *o, const char *key, size_t max, char **out,
		      struct qual_msg *msg)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_string(v))
		return qual_fail(msg, QUAL_EINVAL, "'%s' must be a string", key);
	if (json_string_length(v) == 0)
		return qual_fail(msg, QUAL_EINVAL, "'%s' must not be empty", key);
	if (json_string_length(v) > max)
		return qual_fail(msg, QUAL_EINVAL, "'%s' is longer than %zu bytes",
				 key, max);
	free(*out);
	*out = xstrdup(json_string_value(v));
	return 0;
}

/* An integer field in [lo, hi]; absent leaves *out alone. The message states
 * the bound that was crossed, so a value that is too small reads like
 * "'pairs' must be an integer >= 30, got 5". */
static int get_integer(json_t *o, const char *key, long long lo, long long hi,
		       long long *out, struct qual_msg *msg)
{
	json_t *v = json_object_get(o, key);
	char got[64];
	long long x;

	if (!v)
		return 0;
	if (!json_is_integer(v))
		return qual_fail(msg, QUAL_EINVAL, "'%s' must be an integer >= %lld, got %s",
				 key, lo, describe(v, got, sizeof got));
	x = json_integer_value(v);
	if (x < lo)
		return qual_fail(msg, QUAL_EINVAL, "'%s' must be an integer >= %lld, got %lld",
				 key, lo, x);
	if (x > hi)
		return qual_fail(msg, QUAL_EINVAL, "'%s' must be an integer <= %lld, got %lld",
				 key, hi, x);
	*out = x;
	return 0;
}

static bool label_key_ok(const char *k)
{
	size_t n = strlen(k);

	if (n < 1 || n > REQUEST_MAX_LABEL_KEY)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= 'a' && k[i] <= 'z') ||
		      (k[i] >= '0' && k[i] <= '9') || k[i] == '_' || k[i] == '.' || k[i] == '-'))
			return false;
	return true;
}

/* The byte offset of the first control character of s (C0, DEL, or C1 as
 * UTF-8: 0xC2 0x80-0x9F), or -1. jansson's strings are valid UTF-8. */
static long control_at(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7F)
			return (long)i;
		if (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
		    (unsigned char)s[i + 1] <= 0x9F)
			return (long)i;
	}
	return -1;
}

int request_labels_check(json_t *v, const char *field, struct qual_msg *msg)
{
	char got[64], clipped[CLIP_BUF];
	const char *key;
	json_t *x;

	if (!json_is_object(v))
		return qual_fail(msg, QUAL_EINVAL, "'%s' must be an object of strings, got %s",
				 field, describe(v, got, sizeof got));
	if (json_object_size(v) > REQUEST_MAX_LABELS)
		return qual_fail(msg, QUAL_EINVAL, "'%s' has %zu entries, at most %d are allowed",
				 field, json_object_size(v), REQUEST_MAX_LABELS);
	json_object_foreach(v, key, x) {
		size_t n;
		long at;

		if (!label_key_ok(key))
			return qual_fail(msg, QUAL_EINVAL, "'%s' key '%s' must be 1 to %d of "
					 "A-Z a-z 0-9 _ . -", field, clip(key, clipped, CLIP_MAX),
					 REQUEST_MAX_LABEL_KEY);
		if (!json_is_string(x))
			return qual_fail(msg, QUAL_EINVAL, "'%s' value of '%s' must be a string, "
					 "got %s", field, key, describe(x, got, sizeof got));
		n = json_string_length(x);
		if (n == 0)
			return qual_fail(msg, QUAL_EINVAL, "'%s' value of '%s' is empty", field, key);
		if (n > REQUEST_MAX_LABEL_VALUE)
			return qual_fail(msg, QUAL_EINVAL, "'%s' value of '%s' is longer than %d "
					 "bytes", field, key, REQUEST_MAX_LABEL_VALUE);
		if ((at = control_at(json_string_value(x), n)) >= 0)
			return qual_fail(msg, QUAL_EINVAL, "'%s' value of '%s' has a control "
					 "character at byte %ld", field, key, at);
	}
	return 0;
}

/* labels of o, checked, into *out (kept when absent; an empty object is
 * NULL). */
static int get_labels(json_t *o, json_t **out, struct qual_msg *msg)
{
	json_t *v = json_object_get(o, "labels");
	int rc;

	if (!v)
		return 0;
	if ((rc = request_labels_check(v, "labels", msg)) < 0)
		return rc;
	json_decref(*out);
	*out = json_object_size(v) ? json_deep_copy(v) : NULL;
	return 0;
}

static void submit_release(struct submit_args *s)
{
	free(s->baseline);
	free(s->candidate);
	settings_release(&s->settings);
	free(s->baseline_real);
	free(s->candidate_real);
	free(s->baseline_sha256);
	free(s->candidate_sha256);
	json_decref(s->labels);
	free(s->gpu_type);
	free(s->submission);
	memset(s, 0, sizeof *s);
}

static void submit_defaults(struct submit_args *s)
{
	memset(s, 0, sizeof *s);
	settings_init(&s->settings);
}

/* A calibration measures the false alarms of the default rule on timed A/A
 * runs of the default cases (docs/quald.md, "Calibration"): what would
 * change what it measures, or make it time nothing, is refused, naming the
 * field. Values are compared with the defaults (not the fields' presence),
 * as the stored form spells pairs, alpha, margin and compile_only always. */
static int check_calibration(const struct submit_args *s, struct qual_msg *msg)
{
	const struct qual_settings *q = &s->settings;
	struct qual_settings d;
	const char *field = NULL;

	settings_init(&d);
	if (q->compile_only)
		return qual_fail(msg, QUAL_EINVAL, "'compile_only' cannot be used with a "
				 "calibration ('calibrate'): a calibration times A/A runs, and a "
				 "compile-only run times nothing");
	if (q->pairs != d.pairs)
		field = "pairs";
	else if (q->alpha != d.alpha)
		field = "alpha";
	else if (q->margin != d.margin)
		field = "margin";
	else if (q->max_pairs)
		field = "max_pairs";
	else if (q->max_seconds > 0)
		field = "max_seconds";
	else if (q->gate_slower != d.gate_slower)
		field = "gate_slower";
	else if (q->gate_faster != d.gate_faster)
		field = "gate_faster";
	else if (q->undecided != d.undecided)
		field = "undecided";
	else if (q->cases && q->cases[0])
		field = "cases";
	else if (q->fixtures && q->fixtures[0])
		field = "fixtures";
	else if (q->baseline_options && q->baseline_options[0])
		field = "baseline_options";
	else if (q->candidate_options && q->candidate_options[0])
		field = "candidate_options";
	else if (q->mode != d.mode)
		field = "mode"; /* cu / wgp change both arms' compile options */
	if (field)
		return qual_fail(msg, QUAL_EINVAL, "'%s' cannot be used with a calibration "
				 "('calibrate'): a calibration measures the default rule (%d "
				 "pairs, alpha %g, margin %g) on the default cases", field,
				 d.pairs, d.alpha, d.margin);
	return 0;
}

/* The submit fields of o into s (which holds the defaults). Fields other
 * than the submit fields are the caller's business. */
static int parse_submit(json_t *o, struct submit_args *s, struct qual_msg *msg)
{
	long long x;
	int rc;

	if (!json_object_get(o, "baseline"))
		return qual_fail(msg, QUAL_EINVAL, "missing 'baseline'");
	if (!json_object_get(o, "candidate"))
		return qual_fail(msg, QUAL_EINVAL, "missing 'candidate'");
	if ((rc = get_string(o, "baseline", REQUEST_MAX_PATH, &s->baseline, msg)) < 0 ||
	    (rc = get_string(o, "candidate", REQUEST_MAX_PATH, &s->candidate, msg)) < 0)
		return rc;

	if ((rc = settings_from_json(&s->settings, o, SETTINGS_QUALD, msg)) < 0)
		return rc;
	if ((rc = get_labels(o, &s->labels, msg)) < 0)
		return rc;
	if ((rc = get_string(o, FLEET_GPU_TYPE_KEY, FLEET_MAX_TYPE_LEN, &s->gpu_type, msg)) < 0 ||
	    (s->gpu_type && (rc = fleet_gpu_type_check(s->gpu_type, msg)) < 0) ||
	    (rc = get_string(o, FLEET_SUBMISSION_KEY, FLEET_MAX_TYPE_LEN, &s->submission,
			     msg)) < 0 ||
	    (s->submission && (rc = fleet_submission_check(s->submission, msg)) < 0))
		return rc;
	x = 0;
	if ((rc = get_integer(o, "calibrate", 1, CALIB_MAX_RUNS, &x, msg)) < 0)
		return rc;
	s->calibrate = (int)x;
	if (json_object_get(o, "slot")) {
		if (!s->calibrate)
			return qual_fail(msg, QUAL_EINVAL, "'slot' is only for a calibration "
					 "(with 'calibrate')");
		if ((rc = get_integer(o, "slot", 0, REQUEST_MAX_SLOT, &x, msg)) < 0)
			return rc;
		s->has_slot = true;
		s->slot = (int)x;
	}
	if (s->calibrate && strcmp(s->baseline, s->candidate) != 0)
		return qual_fail(msg, QUAL_EINVAL, "a calibration runs one library against "
				 "itself: 'baseline' and 'candidate' must be the same path");
	if (s->calibrate && (rc = check_calibration(s, msg)) < 0)
		return rc;
	/* quald's working directory is not the client's: a relative path
	 * would name another folder (qualctl makes them absolute). */
	for (size_t i = 0; s->settings.fixtures && s->settings.fixtures[i]; i++)
		if (s->settings.fixtures[i][0] != '/')
			return qual_fail(msg, QUAL_EINVAL,
					 "'fixtures' entry %zu must be an absolute path", i);
	return 0;
}

static int get_job(json_t *o, const char *key, bool required, char **out,
		   struct qual_msg *msg)
{
	char clipped[CLIP_BUF];
	json_t *v = json_object_get(o, key);
	int rc;

	if (!v)
		return required ? qual_fail(msg, QUAL_EINVAL, "missing '%s'", key) : 0;
	if ((rc = get_string(o, key, 64 * 1024, out, msg)) < 0)
		return rc;
	if (!is_job_id(*out))
		return qual_fail(msg, QUAL_EINVAL, "'%s' must be a job id like 'j000001', got '%s'",
				 key, clip(*out, clipped, CLIP_MAX));
	return 0;
}

/* A SHA-256 as the quarantine names it: exactly 64 lower-case hex digits
 * (sha256sum's spelling), so that a clear matches the stored key byte for
 * byte. */
static bool is_sha256(const char *s)
{
	size_t n = strlen(s);

	if (n != REQUEST_SHA256_HEX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* quarantine: "action" is "list" (the default) or "clear"; a clear needs
 * "sha256", and a list refuses one (it would be silently ignored). */
static int parse_quarantine(json_t *o, struct request *r, struct qual_msg *msg)
{
	char clipped[CLIP_BUF];
	json_t *v = json_object_get(o, "action");
	const char *a;

	r->action = QUARANTINE_LIST;
	if (v) {
		if (!json_is_string(v))
			return qual_fail(msg, QUAL_EINVAL,
					 "'action' must be \"list\" or \"clear\"");
		a = json_string_value(v);
		if (!strcmp(a, "clear"))
			r->action = QUARANTINE_CLEAR;
		else if (strcmp(a, "list"))
			return qual_fail(msg, QUAL_EINVAL,
					 "'action' must be \"list\" or \"clear\", got '%s'",
					 clip(a, clipped, CLIP_MAX));
	}
	if (r->action == QUARANTINE_LIST) {
		if (json_object_get(o, "sha256"))
			return qual_fail(msg, QUAL_EINVAL,
					 "'sha256' is for action \"clear\", not \"list\"");
		return 0;
	}
	if (!json_object_get(o, "sha256"))
		return qual_fail(msg, QUAL_EINVAL, "missing 'sha256'");
	if (get_string(o, "sha256", 64 * 1024, &r->sha256, msg) < 0)
		return QUAL_EINVAL;
	if (!is_sha256(r->sha256))
		return qual_fail(msg, QUAL_EINVAL, "'sha256' must be 64 lower-case hex "
				 "digits, got '%s'", clip(r->sha256, clipped, CLIP_MAX));
	return 0;
}

/* "limit" of o, an integer in [1, max], into *out (kept when absent). */
static int get_limit(json_t *o, int max, int *out, struct qual_msg *msg)
{
	json_t *v = json_object_get(o, "limit");
	char got[64];

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max)
		return qual_fail(msg, QUAL_EINVAL, "'limit' must be an integer in [1, %d], "
				 "got %s", max, describe(v, got, sizeof got));
	*out = (int)json_integer_value(v);
	return 0;
}

/* The column of p in line as jansson counts them: in characters, from 1. */
static int column_of(const char *line, const char *p)
{
	int column = 1;

	for (const char *q = line; q < p; q++)
		column += ((unsigned char)*q & 0xC0) != 0x80;
	return column;
}

int request_parse(const char *line, size_t len, struct request *r,
		  const char **op_name, struct qual_msg *msg)
{
	const char *const *fields;
	char clipped[CLIP_BUF];
	json_error_t jerr;
	json_t *root = NULL, *v;
	const char *key, *op, *nul;
	long long x;
	int rc = QUAL_EINVAL;
	int i, k;

	memset(r, 0, sizeof *r);
	submit_defaults(&r->submit);
	r->after_seq = -1;
	r->limit = REQUEST_DEFAULT_LIMIT;
	*op_name = NULL;

	if (len > REQUEST_MAX_LINE) {
		qual_fail(msg, QUAL_ELIMIT, "request line over %d bytes", REQUEST_MAX_LINE);
		goto out;
	}
	if (depth_exceeds(line, len, REQUEST_MAX_DEPTH)) {
		qual_fail(msg, rc, "json nested deeper than %d levels", REQUEST_MAX_DEPTH);
		goto out;
	}
	/* jansson 2.14 skips a NUL byte that follows a number or a literal
	 * ({"limit":3\0} loads; akheron/jansson#331): refuse any NUL first, as
	 * jansson refuses the others. The column counts characters, as
	 * jansson's do. */
	if ((nul = memchr(line, '\0', len))) {
		qual_fail(msg, rc, "malformed json at column %d: nul byte", column_of(line, nul));
		goto out;
	}
	root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (!root) {
		qual_fail(msg, rc, "malformed json at column %d: %s", jerr.column, jerr.text);
		goto out;
	}
	if (!json_is_object(root)) {
		char got[64];

		qual_fail(msg, rc, "a request must be a json object, got %s",
			  describe(root, got, sizeof got));
		goto out;
	}
	if ((v = json_object_get(root, "id")))
		r->id = json_incref(v);

	v = json_object_get(root, "op");
	if (!v) {
		qual_fail(msg, rc, "missing 'op'");
		goto out;
	}
	if (!json_is_string(v)) {
		qual_fail(msg, rc, "'op' must be a string");
		goto out;
	}
	op = json_string_value(v);
	for (i = 0; i < (int)(sizeof op_names / sizeof op_names[0]); i++)
		if (!strcmp(op, op_names[i]))
			break;
	if (i == (int)(sizeof op_names / sizeof op_names[0])) {
		qual_fail(msg, rc, "unknown op '%s'", clip(op, clipped, CLIP_MAX));
		goto out;
	}
	r->op = (enum request_op)i;
	*op_name = op_names[i];

	/* Unknown fields are refused rather than ignored: a misspelt "pair"
	 * silently running 30 pairs would be worse than a refusal. */
	fields = op_fields[r->op];
	json_object_foreach(root, key, v) {
		if (!strcmp(key, "op") || !strcmp(key, "id"))
			continue;
		for (k = 0; fields[k]; k++)
			if (!strcmp(key, fields[k]))
				break;
		if (!fields[k]) {
			qual_fail(msg, rc, "unknown field '%s' in a %s request",
				  clip(key, clipped, CLIP_MAX), op_names[r->op]);
			goto out;
		}
	}

	switch (r->op) {
	case OP_SUBMIT:
		if (parse_submit(root, &r->submit, msg) < 0)
			goto out;
		break;
	case OP_WATCH:
		if (get_job(root, "after_job", false, &r->after_job, msg) < 0)
			goto out;
		if (json_object_get(root, "after_seq") && !r->after_job) {
			qual_fail(msg, rc, "'after_seq' needs 'after_job'");
			goto out;
		}
		/* after_job alone resumes after the whole job: none of its
		 * lines, stored or still to come. */
		x = LONG_MAX;
		if (get_integer(root, "after_seq", -1, LONG_MAX, &x, msg) < 0)
			goto out;
		r->after_seq = r->after_job ? (long)x : -1;
		break;
	case OP_LIST:
		if (get_limit(root, REQUEST_MAX_LIMIT, &r->limit, msg) < 0 ||
		    get_job(root, "before", false, &r->before, msg) < 0)
			goto out;
		break;
	case OP_HISTORY:
		r->limit = REQUEST_DEFAULT_HISTORY;
		if (get_limit(root, REQUEST_MAX_HISTORY, &r->limit, msg) < 0 ||
		    get_string(root, "case", REQUEST_MAX_CASE, &r->case_name, msg) < 0 ||
		    get_labels(root, &r->labels, msg) < 0 ||
		    get_string(root, FLEET_GPU_TYPE_KEY, FLEET_MAX_TYPE_LEN, &r->gpu_type, msg) < 0 ||
		    (r->gpu_type && fleet_gpu_type_check(r->gpu_type, msg) < 0))
			goto out;
		break;
	case OP_SHOW:
	case OP_CANCEL:
		if (get_job(root, "job", true, &r->job, msg) < 0)
			goto out;
		break;
	case OP_STATUS:
	case OP_CALIBRATION:
		break;
	case OP_AUTH:
		v = json_object_get(root, "token");
		if (!json_is_string(v) || json_string_length(v) == 0 ||
		    json_string_length(v) > REQUEST_MAX_TOKEN) {
			qual_fail(msg, rc, "'token' must be a string of 1 to %d bytes",
				  REQUEST_MAX_TOKEN);
			goto out;
		}
		r->token = xstrdup(json_string_value(v));
		break;
	case OP_QUARANTINE:
		if (parse_quarantine(root, r, msg) < 0)
			goto out;
		break;
	}
	rc = 0;
out:
	json_decref(root);
	if (rc < 0) {
		/* Keep the id for the refusal; drop whatever else was copied. */
		json_t *id = r->id;

		r->id = NULL;
		request_release(r);
		r->id = id;
	}
	return rc;
}

void request_release(struct request *r)
{
	char *strings[] = {r->job, r->after_job, r->token, r->sha256, r->case_name, r->before,
			   r->gpu_type};

	submit_release(&r->submit);
	json_decref(r->id);
	json_decref(r->labels);
	for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
		free(strings[i]);
	memset(r, 0, sizeof *r);
}

json_t *request_list_json(char *const *list)
{
	return settings_list_json(list);
}

json_t *request_submit_to_json(const struct submit_args *s)
{
	json_t *o = json_object();

	json_object_set_new(o, "baseline", json_string(s->baseline));
	json_object_set_new(o, "candidate", json_string(s->candidate));
	settings_to_json(&s->settings, o);
	/* follow is the submitter's, not the job's. */
	json_object_del(o, "follow");
	if (s->calibrate)
		json_object_set_new(o, "calibrate", json_integer(s->calibrate));
	if (s->has_slot)
		json_object_set_new(o, "slot", json_integer(s->slot));
	if (s->labels)
		json_object_set_new(o, "labels", json_deep_copy(s->labels));
	if (s->gpu_type)
		json_object_set_new(o, FLEET_GPU_TYPE_KEY, json_string(s->gpu_type));
	if (s->submission)
		json_object_set_new(o, FLEET_SUBMISSION_KEY, json_string(s->submission));
	if (s->baseline_sha256)
		request_submit_set_pin(o, 0, s->baseline_real, s->baseline_sha256);
	if (s->candidate_sha256)
		request_submit_set_pin(o, 1, s->candidate_real, s->candidate_sha256);
	return o;
}

/* The stored keys of each arm's pin. */
static const char *const pin_real_keys[2] = { "baseline_real_path", "candidate_real_path" };
static const char *const pin_sha_keys[2] = { "baseline_sha256", "candidate_sha256" };

void request_submit_set_pin(json_t *o, int arm, const char *real_path, const char *sha256)
{
	json_object_set_new(o, pin_real_keys[arm], json_string(real_path));
	json_object_set_new(o, pin_sha_keys[arm], json_string(sha256));
}

void request_submit_set_fixtures(json_t *o, char *const *real)
{
	json_object_set_new(o, "fixtures", request_list_json(real));
}

/* The pins of a stored request: both keys of an arm or neither (a job of a
 * quald before pins); an absolute path and a well-formed hash. */
static int parse_pins(json_t *o, struct submit_args *s, struct qual_msg *msg)
{
	char **real[2] = { &s->baseline_real, &s->candidate_real };
	char **sha[2] = { &s->baseline_sha256, &s->candidate_sha256 };
	int arm, rc;

	for (arm = 0; arm < 2; arm++) {
		bool has_real = json_object_get(o, pin_real_keys[arm]) != NULL;
		bool has_sha = json_object_get(o, pin_sha_keys[arm]) != NULL;

		if (!has_real && !has_sha)
			continue;
		if (has_real != has_sha)
			return qual_fail(msg, QUAL_EINVAL, "stored request has '%s' without '%s'",
					 has_real ? pin_real_keys[arm] : pin_sha_keys[arm],
					 has_real ? pin_sha_keys[arm] : pin_real_keys[arm]);
		if ((rc = get_string(o, pin_real_keys[arm], REQUEST_MAX_PATH, real[arm], msg)) < 0 ||
		    (rc = get_string(o, pin_sha_keys[arm], REQUEST_SHA256_HEX, sha[arm], msg)) < 0)
			return rc;
		if ((*real[arm])[0] != '/')
			return qual_fail(msg, QUAL_EINVAL, "'%s' must be an absolute path",
					 pin_real_keys[arm]);
		if (!is_sha256(*sha[arm]))
			return qual_fail(msg, QUAL_EINVAL, "'%s' must be 64 lower-case hex digits",
					 pin_sha_keys[arm]);
	}
	return 0;
}

/* The stored form is read with the same checks as a request, so a file
 * edited by hand cannot smuggle in what a client could not send; fields it
 * does not know are ignored (a later version may store more). */
int request_submit_from_json(json_t *o, struct submit_args *s, struct qual_msg *msg)
{
	int rc;

	submit_defaults(s);
	if (!json_is_object(o))
		return qual_fail(msg, QUAL_EINVAL, "stored request is not a json object");
	rc = parse_submit(o, s, msg);
	if (rc == 0)
		rc = parse_pins(o, s, msg);
	if (rc < 0)
		submit_release(s);
	return rc;
}
