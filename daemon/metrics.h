/* quald's metrics in Prometheus' text exposition format (version 0.0.4),
 * served at /metrics by the HTTP endpoint (http.h). Every name starts
 * with qual_; docs/http.md lists them:
 *
 *   qual_info{version}                        1
 *   qual_jobs{state}                          jobs in the state directory
 *   qual_jobs_by_verdict{verdict}             of them, those with a verdict
 *   qual_queue_length                         jobs waiting for a slot
 *   qual_slots{state}                         idle, busy, health_check,
 *                                             out_of_service
 *   qual_slot_up{slot,device}                 1 in service, 0 out of it
 *   qual_slot_busy{slot,device}               1 running a job
 *   qual_jobs_ended_total{verdict}            since quald started
 *   qual_job_duration_seconds                 histogram: worker start to
 *                                             verdict, since quald started
 *   qual_lines_relayed_total                  job lines written and relayed
 *   qual_clients_dropped_total                followers and watchers dropped
 *                                             for not reading
 *   qual_connections, qual_watchers           control connections open now
 *   qual_http_requests_total, qual_http_refused_total,
 *   qual_http_streams, qual_http_streams_dropped_total */
#ifndef QUAL_DAEMON_METRICS_H
#define QUAL_DAEMON_METRICS_H

#include <stddef.h>

struct jobs;
struct server_stats;
struct http_stats;

/* The exposition text (new, free()) of *len bytes. server and http may be
 * NULL (their metrics are left out). */
char *metrics_render(struct jobs *j, const struct server_stats *server,
		     const struct http_stats *http, size_t *len);

#endif
