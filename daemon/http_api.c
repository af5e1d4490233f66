/* quald's HTTP endpoint: the JSON API (the control socket's replies) and
 * /metrics (http_internal.h). */
#include "daemon/http_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/lines.h"
#include "common/xalloc.h"
#include "daemon/metrics.h"
#include "daemon/server.h"

#ifndef QUAL_VERSION
#define QUAL_VERSION "unknown"
#endif

/* ---- the API ---- */

struct list_params {
	long limit;
};

static int list_param(void *ctx, const char *key, const char *value, char *why, size_t whylen)
{
	struct list_params *p = ctx;
	char *end;

	if (strcmp(key, "limit"))
		return 0; /* others are ignored, as unknown JSON fields are */
	errno = 0;
	p->limit = strtol(value, &end, 10);
	if (errno || end == value || *end || p->limit < 1 || p->limit > 1000) {
		snprintf(why, whylen, "'limit' must be an integer from 1 to 1000, got '%.32s'",
			 value);
		return -1;
	}
	return 0;
}

int http__api_status(struct http *h, h2o_req_t *req)
{
	json_t *o = json_pack("{s:s,s:i}", "version", QUAL_VERSION, "schema_version",
			      QUAL_SCHEMA_VERSION);
	json_t *st = jobs_status_json(h->jobs);

	if (json_is_object(st))
		json_object_update_missing(o, st);
	json_decref(st);
	return http__respond_json(req, 200, "OK", o);
}

int http__api_list(struct http *h, h2o_req_t *req)
{
	struct list_params p = {.limit = 20};
	char why[160];

	if (http__query_each(req, list_param, &p, why, sizeof why) < 0)
		return http__respond_error(req, 400, "Bad Request", "%s", why);
	return http__respond_json(req, 200, "OK", jobs_list_json(h->jobs, (int)p.limit));
}

/* A job's stored lines as one JSON text: the lines are JSON objects
 * already, so they are joined, not parsed. */
struct joined {
	char *b;
	size_t len, cap;
};

static void joined_put(struct joined *x, const char *s, size_t len)
{
	if (x->len + len + 1 > x->cap) {
		while (x->len + len + 1 > x->cap)
			x->cap = x->cap ? x->cap * 2 : 64 << 10;
		x->b = xrealloc(x->b, x->cap);
	}
	memcpy(x->b + x->len, s, len);
	x->len += len;
	x->b[x->len] = '\0';
}

static bool join_line(void *ctx, const struct jobs_record *rec)
{
	struct joined *x = ctx;

	if (x->b[x->len - 1] != '[')
		joined_put(x, ",", 1);
	joined_put(x, rec->text, rec->len);
	return false;
}

int http__api_job(struct http *h, h2o_req_t *req, const char *id)
{
	struct joined x = {0};
	struct qual_msg msg = {{0}};
	enum job_state state;
	json_t *head, *extra;
	char *text;
	int rc;

	head = json_pack("{s:s}", "job", id);
	extra = jobs_show_json(h->jobs, id);
	if (!extra) {
		json_decref(head);
		return http__respond_error(req, 404, "Not Found", "unknown job '%s'", id);
	}
	json_object_update_missing(head, extra);
	json_decref(extra);
	text = json_dumps(head, JSON_COMPACT);
	json_decref(head);
	/* {"job":...,<show's members>,"state":S,"lines":[...]} */
	joined_put(&x, text, strlen(text) - 1);
	free(text);
	joined_put(&x, ",\"lines\":[", 10);
	rc = jobs_read_log(h->jobs, id, -1, JOBS_READ_BYTES, join_line, &x, &state, &msg);
	if (rc < 0) {
		free(x.b);
		return http__respond_error(req, rc == QUAL_ENOENT ? 404 : 500,
					   rc == QUAL_ENOENT ? "Not Found" :
							       "Internal Server Error",
					   "%s", msg.text[0] ? msg.text : qual_strerror(rc));
	}
	joined_put(&x, "],\"state\":", 10);
	head = json_string(state != JOB_STATE_UNKNOWN ? vocab_state_name(state) : "unknown");
	text = json_dumps(head, JSON_ENCODE_ANY);
	json_decref(head);
	joined_put(&x, text, strlen(text));
	free(text);
	joined_put(&x, "}", 1);
	rc = http__respond(req, 200, "OK", "application/json", x.b, x.len);
	free(x.b);
	return rc;
}

int http__api_metrics(struct http *h, h2o_req_t *req)
{
	struct http_stats st = h->st;
	size_t len;
	char *text;
	int rc;

	st.requests++; /* this one counts in what it shows */
	text = metrics_render(h->jobs, h->stats ? h->stats(h->stats_ctx) : NULL, &st, &len);
	rc = http__respond(req, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", text, len);
	free(text);
	return rc;
}

/* ---- history (the jobs module's, as the history request) ---- */

struct history_params {
	struct jobs_history_query q;
	char *case_name;
};

static int history_param(void *ctx, const char *key, const char *value, char *why,
			 size_t whylen)
{
	struct history_params *p = ctx;
	const char *eq;
	char *end;

	if (!strcmp(key, "case")) {
		free(p->case_name);
		p->case_name = xstrdup(value);
	} else if (!strcmp(key, "label")) {
		eq = strchr(value, '=');
		if (!eq || eq == value) {
			snprintf(why, whylen, "'label' must be KEY=VALUE, got '%.64s'", value);
			return -1;
		}
		char *k = xstrdup(value);
		int rc;

		k[eq - value] = '\0';
		rc = json_object_set_new(p->q.labels, k, json_string(eq + 1));
		free(k);
		if (rc < 0) {
			snprintf(why, whylen, "'label' must be UTF-8 KEY=VALUE");
			return -1;
		}
	} else if (!strcmp(key, "limit")) {
		long v;

		errno = 0;
		v = strtol(value, &end, 10);
		if (errno || end == value || *end || v < 1 || v > 10000) {
			snprintf(why, whylen, "'limit' must be an integer from 1 to 10000, got '%.32s'",
				 value);
			return -1;
		}
		p->q.limit = (int)v;
	}
	return 0;
}

int http__api_history(struct http *h, h2o_req_t *req)
{
	struct history_params p = {.q = {.limit = 100}};
	char why[160];
	int rc;

	p.q.labels = json_object();
	if (http__query_each(req, history_param, &p, why, sizeof why) < 0) {
		rc = http__respond_error(req, 400, "Bad Request", "%s", why);
	} else {
		p.q.case_name = p.case_name;
		rc = http__respond_json(req, 200, "OK", jobs_history_json(h->jobs, &p.q));
	}
	json_decref(p.q.labels);
	free(p.case_name);
	return rc;
}
