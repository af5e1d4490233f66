/* The quarantine (jobs.h: jobs_quarantine_json): strikes against the
 * SHA-256 of a candidate library whose compiler or worker crashed, kept in
 * state_dir/quarantine.json (replaced atomically and durably), and the
 * refusal at submit of a library with JOBS_QUARANTINE_STRIKES of them.
 * Nothing here reads a library: the hashes are quald's own, of the file
 * each submit opened (submit.c, in libuv's thread pool), and are stored with
 * each job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "daemon/jobs_internal.h"

/* Crashes after which a library is quarantined (refused at submit until an
 * operator clears it). */
#define JOBS_QUARANTINE_STRIKES 3
#define JOBS_QUARANTINE_FILE "quarantine.json"

static void quarantine_saved(void *ctx, const struct writer_done *d)
{
	const char *path = ctx;

	if (d->status < 0)
		oplog_warn("cannot replace '%s': %s", path, d->message);
}

/* Replaces quarantine.json (fs_write_atomic: a temporary file synced,
 * renamed over it, the folder synced), in the writer's thread once it runs,
 * so that a strike never waits on the disk. A failure is logged: the
 * strikes stay in memory. */
static void quarantine_save(struct quarantine *q)
{
	struct qual_msg m;
	char *text = json_dumps(q->map, JSON_SORT_KEYS | JSON_COMPACT);

	if (!text) {
		oplog_warn("cannot encode '%s'", q->path);
		return;
	}
	if (q->writer)
		writer_file_replace(q->writer, q->path, text, strlen(text), 0640,
				    quarantine_saved, q->path);
	else if (fs_write_atomic(q->path, text, strlen(text), 0640, NULL, &m) < 0)
		oplog_warn("cannot replace '%s': %s", q->path, m.text);
	free(text);
}

void quarantine__load(struct quarantine *q, const char *state_dir)
{
	json_error_t e;

	if (asprintf(&q->path, "%s/%s", state_dir, JOBS_QUARANTINE_FILE) < 0)
		abort();
	q->map = NULL;
	if (access(q->path, F_OK) == 0) {
		q->map = json_load_file(q->path, 0, &e);
		if (!json_is_object(q->map)) {
			oplog_warn("'%s' is unreadable (%s): starting with no quarantine",
				   q->path, e.text);
			json_decref(q->map);
			q->map = NULL;
		}
	}
	if (!q->map)
		q->map = json_object();
}

void quarantine__release(struct quarantine *q)
{
	json_decref(q->map);
	free(q->path);
	memset(q, 0, sizeof *q);
}

/* The hash charged is the one pinned at submit, which is what the worker
 * ran (qual-run refuses other bytes): never the path's file now, which
 * anyone who may write there could have swapped since. */
void quarantine__strike(struct quarantine *q, const char *job,
			const struct submit_args *args)
{
	const char *hex = args->candidate_sha256;
	char when[32];
	json_t *e;
	long strikes;

	if (!hex) {
		oplog_warn("job '%s': no pinned hash of '%s' (stored by an older quald): "
			   "its crash is not counted", job, args->candidate);
		return;
	}
	e = json_object_get(q->map, hex);
	strikes = e ? (long)json_integer_value(json_object_get(e, "strikes")) : 0;
	strikes++;
	jobs__now(when);
	json_object_set_new(q->map, hex,
			    json_pack("{s:I,s:s,s:s}", "strikes", (json_int_t)strikes,
				      "library", args->candidate, "last", when));
	quarantine_save(q);
	if (strikes == JOBS_QUARANTINE_STRIKES)
		oplog_warn("compiler '%s' (sha256 %s) quarantined after %ld crashes",
			   args->candidate, hex, strikes);
}

int quarantine__check(struct quarantine *q, const char *path, const char *sha256,
		      struct qual_msg *msg)
{
	json_t *hit = json_object_get(q->map, sha256);

	if (hit && json_integer_value(json_object_get(hit, "strikes")) >= JOBS_QUARANTINE_STRIKES)
		return qual_fail(msg, QUAL_EINVAL,
				 "compiler '%s' (sha256 %s) is quarantined after %d crashes; "
				 "clear with: qualctl quarantine clear %s",
				 path, sha256, (int)json_integer_value(json_object_get(hit, "strikes")),
				 sha256);
	return 0;
}

json_t *jobs_quarantine_json(struct jobs *j)
{
	json_t *list = json_array(), *e;
	const char *key;

	json_object_foreach(j->quarantine.map, key, e) {
		json_int_t strikes = json_integer_value(json_object_get(e, "strikes"));
		json_array_append_new(list, json_pack(
			"{s:s,s:I,s:b,s:O,s:O}", "sha256", key, "strikes", strikes,
			"quarantined", strikes >= JOBS_QUARANTINE_STRIKES,
			"library", json_object_get(e, "library"),
			"last", json_object_get(e, "last")));
	}
	return json_pack("{s:o}", "quarantine", list);
}

int jobs_quarantine_clear(struct jobs *j, const char *sha256, struct qual_msg *msg)
{
	if (!sha256 || !json_object_get(j->quarantine.map, sha256))
		return qual_fail(msg, QUAL_ENOENT, "no library with sha256 '%s' has crashed",
				 sha256 ? sha256 : "");
	json_object_del(j->quarantine.map, sha256);
	quarantine_save(&j->quarantine);
	return 0;
}
