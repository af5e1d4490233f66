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
#include "daemon/oplog.h"
#include "daemon/replycap.h"
#include "daemon/server.h"
#include "daemon/store.h"
#include "proto/fleet.h"

#ifndef QUAL_VERSION
#define QUAL_VERSION "unknown"
#endif

/* ---- the API ---- */

struct list_params {
	long limit;
	char before[JOB_ID_MAX];   /* "" for the newest jobs */
};

static int list_param(void *ctx, const char *key, const char *value, char *why, size_t whylen)
{
	struct list_params *p = ctx;
	char *end;

	if (!strcmp(key, "before")) {
		if (strlen(value) >= sizeof p->before || store_id_parse(value) < 0) {
			snprintf(why, whylen, "'before' must be a job id, got '%.32s'", value);
			return -1;
		}
		snprintf(p->before, sizeof p->before, "%s", value);
		return 0;
	}
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
	return http__respond_json(req, 200, "OK",
				  jobs_list_json(h->jobs, (int)p.limit, p.before[0] ? p.before : NULL,
						 JOBS_LIST_MAX_BYTES));
}

/* A job's JSON, {"job":...,<show's members>,"lines":[...],"state":S}, sent
 * as the client reads it: the lines are JSON objects already, so they are
 * joined, not parsed, a chunk at a time from a cursor over the log
 * (replycap.h). The state is the one the job is in when the cursor has read
 * every line there is, so a state that says ended comes with the verdict
 * line. Allocated in the request's pool: it lives as long as the request. */
struct jobbody {
	h2o_generator_t gen;       /* first: H2O hands it back */
	h2o_req_t *req;
	struct http *http;
	struct jobs_cursor *cur;   /* NULL once every line is read */
	struct replycap_waiter waiter;
	char *out;                 /* the next bytes to send */
	size_t outlen, outcap;
	char *inflight;            /* handed to H2O until it proceeds */
	size_t inflight_len;
	bool first;                /* no line is in the array yet */
	bool sending, ended;
};

static void body_put(struct jobbody *jb, const char *s, size_t len)
{
	if (jb->outlen + len > jb->outcap) {
		while (jb->outlen + len > jb->outcap)
			jb->outcap = jb->outcap ? jb->outcap * 2 : REPLYCAP_CHUNK + 256;
		jb->out = xrealloc(jb->out, jb->outcap);
	}
	memcpy(jb->out + jb->outlen, s, len);
	jb->outlen += len;
}

static bool body_line(void *ctx, const struct jobs_record *rec)
{
	struct jobbody *jb = ctx;

	if (!jb->first)
		body_put(jb, ",", 1);
	jb->first = false;
	body_put(jb, rec->text, rec->len);
	return false;
}

/* Reads the next chunk into out; the end of the text once the cursor has
 * read every line. False when the read failed. */
static bool body_read(struct jobbody *jb)
{
	struct qual_msg msg = {{0}};
	enum job_state state;
	bool done = false;
	json_t *word;
	char *text;
	int rc;

	/* Until a chunk gives a line: one of bad records gives none, and an
	 * empty send would wait for a proceed that may not come. */
	do
		rc = jobs_cursor_next(jb->http->jobs, jb->cur, REPLYCAP_CHUNK, body_line, jb,
				      &done, &state, &msg);
	while (rc == 0 && !done);
	if (rc < 0) {
		oplog_warn("cannot send the lines of a job: %s", msg.text);
		return false;
	}
	if (!done)
		return true;
	jobs_cursor_free(jb->cur);
	jb->cur = NULL;
	body_put(jb, "],\"state\":", 10);
	word = json_string(state != JOB_STATE_UNKNOWN ? vocab_state_name(state) : "unknown");
	text = json_dumps(word, JSON_ENCODE_ANY);
	json_decref(word);
	body_put(jb, text, strlen(text));
	free(text);
	body_put(jb, "}", 1);
	return true;
}

/* Hands the next chunk to H2O, unless a send is in flight (then proceed
 * does) or there is no room for it (then the bound's wake does). */
static void body_send(struct jobbody *jb)
{
	h2o_iovec_t buf;
	bool final;

	if (jb->sending || jb->ended)
		return;
	if (jb->cur && !jb->outlen) {
		if (!replycap_room()) {
			replycap_wait(&jb->waiter);
			return;
		}
		if (!body_read(jb)) {
			jb->ended = true;
			h2o_send(jb->req, NULL, 0, H2O_SEND_STATE_ERROR);
			return;
		}
	}
	final = !jb->cur;
	free(jb->inflight);
	jb->inflight = jb->out;
	jb->inflight_len = jb->outlen;
	replycap_take(jb->outlen);
	buf = h2o_iovec_init(jb->out, jb->outlen);
	jb->out = NULL;
	jb->outlen = jb->outcap = 0;
	jb->sending = true;
	jb->ended = final;
	h2o_send(jb->req, &buf, buf.len ? 1 : 0,
		 final ? H2O_SEND_STATE_FINAL : H2O_SEND_STATE_IN_PROGRESS);
}

/* The previous chunk is written: its bytes leave the bound. */
static void body_sent(struct jobbody *jb)
{
	size_t n = jb->inflight_len;

	jb->sending = false;
	free(jb->inflight);
	jb->inflight = NULL;
	jb->inflight_len = 0;
	replycap_give(n);
}

static void body_proceed(h2o_generator_t *g, h2o_req_t *req)
{
	struct jobbody *jb = (struct jobbody *)g;

	(void)req;
	body_sent(jb);
	body_send(jb);
}

static void body_stop(h2o_generator_t *g, h2o_req_t *req)
{
	struct jobbody *jb = (struct jobbody *)g;

	(void)req;
	jb->ended = true;
	replycap_unwait(&jb->waiter);
}

static void body_wake(struct replycap_waiter *w)
{
	body_send(container_of(w, struct jobbody, waiter));
}

static void body_dispose(void *p)
{
	struct jobbody *jb = p;

	replycap_unwait(&jb->waiter);
	jobs_cursor_free(jb->cur);
	free(jb->out);
	body_sent(jb);
}

int http__api_job(struct http *h, h2o_req_t *req, const char *id)
{
	struct qual_msg msg = {{0}};
	struct jobs_cursor *cur;
	struct jobbody *jb;
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
	if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"))) {
		/* The headers a GET would have (no length: the body is sent
		 * as it is read); nothing of the log is read. */
		static h2o_generator_t head_only = {NULL, NULL};

		json_decref(head);
		http__start(req, 200, "OK", "application/json");
		h2o_start_response(req, &head_only);
		h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
		return 0;
	}
	rc = jobs_cursor_open(h->jobs, id, -1, JOBS_READ_BYTES, false, &cur, NULL, NULL, &msg);
	if (rc < 0) {
		json_decref(head);
		return http__respond_error(req, rc == QUAL_ENOENT ? 404 : 500,
					   rc == QUAL_ENOENT ? "Not Found" :
							       "Internal Server Error",
					   "%s", msg.text[0] ? msg.text : qual_strerror(rc));
	}
	jb = h2o_mem_alloc_shared(&req->pool, sizeof *jb, body_dispose);
	memset(jb, 0, sizeof *jb);
	jb->gen.proceed = body_proceed;
	jb->gen.stop = body_stop;
	jb->req = req;
	jb->http = h;
	jb->cur = cur;
	jb->first = true;
	replycap_waiter_init(&jb->waiter, body_wake);
	/* {"job":...,<show's members>,"lines":[ */
	text = json_dumps(head, JSON_COMPACT);
	json_decref(head);
	body_put(jb, text, strlen(text) - 1);
	free(text);
	body_put(jb, ",\"lines\":[", 10);
	http__start(req, 200, "OK", "application/json");
	h2o_start_response(req, &jb->gen);
	body_send(jb);
	return 0;
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
	char *gpu_type;
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
	} else if (!strcmp(key, FLEET_GPU_TYPE_KEY)) {
		struct qual_msg m;

		if (fleet_gpu_type_check(value, &m) < 0) {
			snprintf(why, whylen, "%s", m.text);
			return -1;
		}
		free(p->gpu_type);
		p->gpu_type = xstrdup(value);
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
		p.q.gpu_type = p.gpu_type;
		rc = http__respond_json(req, 200, "OK", jobs_history_json(h->jobs, &p.q));
	}
	json_decref(p.q.labels);
	free(p.case_name);
	free(p.gpu_type);
	return rc;
}
