/* Prometheus' text format of quald's state and counts (metrics.h). */
#include "daemon/metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/xalloc.h"
#include "daemon/http.h"
#include "daemon/jobs.h"
#include "daemon/replycap.h"
#include "daemon/server.h"
#include "proto/vocab.h"

#ifndef QUAL_VERSION
#define QUAL_VERSION "unknown"
#endif

struct text {
	char *b;
	size_t len, cap;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->b + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < t->cap - t->len)
			break;
		t->cap = t->cap * 2 + (size_t)(n > 0 ? n : 0);
		t->b = xrealloc(t->b, t->cap);
	}
	t->len += (size_t)n;
}

/* A label value as the format wants it: backslash, double quote and
 * newline escaped. */
static void put_label(struct text *t, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			put(t, "\\%c", *v);
		else if (*v == '\n')
			put(t, "\\n");
		else
			put(t, "%c", *v);
	}
}

static void head(struct text *t, const char *name, const char *type, const char *help)
{
	put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A verdict's label: its word, "other" for the last kind (one of no
 * known word). */
static const char *verdict_label(int k)
{
	const char *w = vocab_verdict_name((enum run_verdict)k);

	return w ? w : "other";
}

static void jobs_gauges(struct text *t, struct jobs *j)
{
	json_t *l = jobs_list_json(j, 1 << 30, NULL, 0), *jobs = json_object_get(l, "jobs"), *o;
	long by_state[JOB_STATE_UNKNOWN + 1] = {0}, by_verdict[JOBS_VERDICT_KINDS] = {0};
	size_t i;

	json_array_foreach(jobs, i, o) {
		const char *st = json_string_value(json_object_get(o, "state"));
		const char *v = json_string_value(json_object_get(o, "verdict"));

		by_state[vocab_state_parse(st)]++;
		if (v)
			by_verdict[vocab_verdict_parse(v)]++;
	}
	json_decref(l);
	head(t, "qual_jobs", "gauge", "Jobs in the state directory, by state.");
	for (int k = 0; k < JOB_STATE_UNKNOWN; k++)
		put(t, "qual_jobs{state=\"%s\"} %ld\n", vocab_state_name((enum job_state)k),
		    by_state[k]);
	head(t, "qual_jobs_by_verdict", "gauge",
	     "Jobs in the state directory that have a verdict, by verdict.");
	for (int k = 0; k < JOBS_VERDICT_KINDS; k++)
		put(t, "qual_jobs_by_verdict{verdict=\"%s\"} %ld\n", verdict_label(k),
		    by_verdict[k]);
}

static void slot_gauges(struct text *t, struct jobs *j)
{
	json_t *st = jobs_status_json(j), *slots = json_object_get(st, "slots"), *o;
	long idle = 0, busy = 0, checking = 0, out = 0;
	size_t i;

	head(t, "qual_queue_length", "gauge", "Jobs waiting for a slot.");
	put(t, "qual_queue_length %zu\n", json_array_size(json_object_get(st, vocab_state_name(JOB_QUEUED))));
	head(t, "qual_slot_up", "gauge", "1 while the slot is in service, 0 out of it.");
	json_array_foreach(slots, i, o) {
		json_t *dev = json_object_get(o, "device");
		bool is_out = json_object_get(o, "out_of_service") != NULL;
		bool is_busy = json_is_string(json_object_get(o, "job"));
		bool is_checking = json_is_true(json_object_get(o, "health_check"));
		char device[32];

		if (json_is_integer(dev))
			snprintf(device, sizeof device, "%lld", (long long)json_integer_value(dev));
		else
			snprintf(device, sizeof device, "none");
		put(t, "qual_slot_up{slot=\"%zu\",device=\"%s\"} %d\n", i, device, !is_out);
		if (is_out)
			out++;
		else if (is_checking)
			checking++;
		else if (is_busy)
			busy++;
		else
			idle++;
	}
	head(t, "qual_slot_busy", "gauge", "1 while the slot runs a job.");
	json_array_foreach(slots, i, o) {
		json_t *dev = json_object_get(o, "device");

		put(t, "qual_slot_busy{slot=\"%zu\",device=\"", i);
		if (json_is_integer(dev))
			put(t, "%lld", (long long)json_integer_value(dev));
		else
			put(t, "none");
		put(t, "\"} %d\n", json_is_string(json_object_get(o, "job")));
	}
	head(t, "qual_slots", "gauge", "Slots by state.");
	put(t, "qual_slots{state=\"idle\"} %ld\nqual_slots{state=\"busy\"} %ld\n"
	    "qual_slots{state=\"health_check\"} %ld\nqual_slots{state=\"out_of_service\"} %ld\n",
	    idle, busy, checking, out);
	json_decref(st);
}

static void ended(struct text *t, const struct jobs_stats *s)
{
	unsigned long long cum = 0;

	head(t, "qual_jobs_ended_total", "counter",
	     "Jobs that ended since quald started, by verdict.");
	for (int k = 0; k < JOBS_VERDICT_KINDS; k++)
		put(t, "qual_jobs_ended_total{verdict=\"%s\"} %llu\n", verdict_label(k),
		    s->ended[k]);
	head(t, "qual_job_duration_seconds", "histogram",
	     "Seconds from a job's worker start to its verdict, jobs ended since quald started.");
	for (int b = 0; b < JOBS_DURATION_BUCKETS; b++) {
		cum += s->duration_bucket[b];
		put(t, "qual_job_duration_seconds_bucket{le=\"%g\"} %llu\n", jobs_duration_le[b],
		    cum);
	}
	cum += s->duration_bucket[JOBS_DURATION_BUCKETS];
	put(t, "qual_job_duration_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
	put(t, "qual_job_duration_seconds_sum %.3f\n", s->duration_sum_s);
	put(t, "qual_job_duration_seconds_count %llu\n", s->ran);
}

char *metrics_render(struct jobs *j, const struct server_stats *server,
		     const struct http_stats *http, size_t *len)
{
	struct text t = {.cap = 8192};

	t.b = xmalloc(t.cap);
	t.b[0] = '\0';
	head(&t, "qual_info", "gauge", "quald's version.");
	put(&t, "qual_info{version=\"");
	put_label(&t, QUAL_VERSION);
	put(&t, "\"} 1\n");
	jobs_gauges(&t, j);
	slot_gauges(&t, j);
	ended(&t, jobs_stats(j));
	if (server) {
		head(&t, "qual_lines_relayed_total", "counter",
		     "Job lines written to the job logs and relayed, since quald started.");
		put(&t, "qual_lines_relayed_total %llu\n", server->lines_relayed);
		head(&t, "qual_clients_dropped_total", "counter",
		     "Control connections dropped for not reading the lines they follow or watch.");
		put(&t, "qual_clients_dropped_total %llu\n", server->clients_dropped);
		head(&t, "qual_connections", "gauge", "Control connections open.");
		put(&t, "qual_connections %d\n", server->connections);
		head(&t, "qual_watchers", "gauge", "Control connections watching every job.");
		put(&t, "qual_watchers %d\n", server->watchers);
	}
	head(&t, "qual_reply_queued_bytes", "gauge",
	     "Bytes of job lines queued for replies that send a job's log (show, watch replay, "
	     "/api/jobs/ID, event-stream replay), not yet written.");
	put(&t, "qual_reply_queued_bytes %zu\n", replycap_queued());
	if (http) {
		head(&t, "qual_http_requests_total", "counter", "HTTP requests answered.");
		put(&t, "qual_http_requests_total %llu\n", http->requests);
		head(&t, "qual_http_refused_total", "counter",
		     "HTTP connections refused: the peer is not allowed.");
		put(&t, "qual_http_refused_total %llu\n", http->refused);
		head(&t, "qual_http_streams", "gauge", "Event streams open.");
		put(&t, "qual_http_streams %d\n", http->streams);
		head(&t, "qual_http_streams_dropped_total", "counter",
		     "Event streams ended for not reading.");
		put(&t, "qual_http_streams_dropped_total %llu\n", http->streams_dropped);
	}
	*len = t.len;
	return t.b;
}
