/* Calibration in quald (jobs_internal.h; docs/quald.md, "Calibration"). A
 * calibration is a job like any other, submitted with "calibrate": N
 * (submit.c checks and pins its one library exactly as a qualification's);
 * its worker is qual-calibrate, which runs qual-run N times and ends with a
 * verdict line carrying the record (stats/calib.h). When that line is
 * relayed, the record is written to STATE/calibration/<device key>.json
 * through the store's writer (replaced atomically and durably, off the
 * loop), and once written it becomes the latest of the slot's device, kept
 * in memory; a record that cannot be written is not the latest. Every
 * other job's worker gets that file as --calibration (or
 * --no-calibration-because), so its verdict line carries it.
 *
 * The schedule (quald --calibrate-every): at the start and then every
 * CALIB_CHECK_MS, each slot whose device has no record, or one older than
 * the period, gets a calibration submitted, unless one for that slot is
 * being checked, queued or running. The calibration then waits its turn in
 * the queue like any job. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/fsutil.h"
#include "common/sampling.h"
#include "common/xalloc.h"
#include "daemon/jobs_internal.h"
#include "common/calib_record.h"
#include "proto/remote.h"

/* How often the schedule looks for stale records: a minute, or the period
 * itself when that is shorter (a test's). */
#define CALIB_CHECK_MS 60000.0

void calib__key(const struct jobs *j, int s, char *out, size_t cap)
{
	if (j->slots[s].device >= 0)
		snprintf(out, cap, "gpu-%d", j->slots[s].device);
	else
		snprintf(out, cap, "slot-%d", s);
}

static int calib_path(const struct jobs *j, int s, char *out, size_t cap)
{
	char key[48], name[64];

	calib__key(j, s, key, sizeof key);
	snprintf(name, sizeof name, "%s.json", key);
	return fs_path_join(out, cap, j->calib_dir, name, NULL);
}

/* The record in slot s's file, or NULL (none, or not a record: said). */
static json_t *calib_load(const struct jobs *j, int s)
{
	char path[4096];
	struct qual_msg m;
	json_t *rec;
	int rc;

	if (calib_path(j, s, path, sizeof path))
		return NULL;
	rc = calib_record_load(path, &rec, &m);
	if (rc && rc != QUAL_ENOENT)
		oplog_warn("%s: the calibration is left out", m.text);
	return rc ? NULL : rec;
}

static void calib_timer_fired(uv_timer_t *t);

int calib__open(struct jobs *j, const struct jobs_config *cfg, struct qual_msg *msg)
{
	int rc;

	if (asprintf(&j->calib_dir, "%s/calibration", cfg->state_dir) < 0)
		abort();
	if ((rc = fs_mkdir_p(j->calib_dir, 0750, msg)))
		return rc;
	for (int s = 0; s < j->nslots; s++)
		j->slots[s].calib = calib_load(j, s);
	j->calib_every_s = cfg->calibrate_every_h > 0 ? cfg->calibrate_every_h * 3600.0 : 0;
	j->calib_lib = cfg->calibrate_lib ? xstrdup(cfg->calibrate_lib) : NULL;
	j->calib_runs = cfg->calibrate_runs > 0 ? cfg->calibrate_runs : CALIB_DEFAULT_RUNS;
	return 0;
}

void calib__start(struct jobs *j)
{
	uv_timer_init(j->loop, &j->calib_timer);
	j->calib_timer.data = j;
	if (j->calib_every_s > 0 && j->calib_lib) {
		double ms = j->calib_every_s * 1000.0;

		if (ms > CALIB_CHECK_MS)
			ms = CALIB_CHECK_MS;
		uv_timer_start(&j->calib_timer, calib_timer_fired, 0, (uint64_t)(ms < 1 ? 1 : ms));
	}
}

void calib__release(struct jobs *j)
{
	for (int s = 0; j->slots && s < j->nslots; s++) {
		json_decref(j->slots[s].calib);
		free(j->slots[s].calib_unstored);
	}
	free(j->calib_dir);
	free(j->calib_lib);
	free(j->calibrator);
}

void calib__stop(struct jobs *j)
{
	uv_timer_stop(&j->calib_timer);
}

bool calib__fits(const struct job *job, int s)
{
	return !job->args.calibrate || !job->args.has_slot || job->args.slot == s;
}

/* A record being written: it becomes the slot's latest once it is stored. */
struct calib_write {
	struct jobs *j;
	int slot;
	json_t *rec;
};

static void calib_written(void *ctx, const struct writer_done *d)
{
	struct calib_write *cw = ctx;
	struct jobs *j = cw->j;
	struct slot *sl;

	if (cw->slot < 0) {
		/* The Slurm backend's: a record of a node's GPU in the spool,
		 * which the nodes read; no slot keeps it. */
		if (d->status < 0)
			oplog_warn("cannot store a calibration record in the spool: %s", d->message);
		json_decref(cw->rec);
		free(cw);
		return;
	}
	sl = &j->slots[cw->slot];
	free(sl->calib_unstored);
	sl->calib_unstored = NULL;
	if (d->status < 0) {
		oplog_warn("cannot store a calibration record: %s", d->message);
		sl->calib_unstored = xstrdup(d->message);
		json_decref(cw->rec);
	} else {
		json_decref(sl->calib);
		sl->calib = cw->rec;
	}
	free(cw);
}

/* The Slurm backend: a calibration's record names the node's GPU it ran
 * on (qual-slurm --node put its key in: proto/remote.h); stored in the
 * spool as SPOOL/calibration/<key>.json, the latest of that GPU, which
 * every later job there is given. One that names another node's, or is no
 * record, is not stored. */
static void calib_take_remote(struct jobs *j, const struct job *job, json_t *rec)
{
	const char *key = json_string_value(json_object_get(rec, "device_key"));
	char path[4096];
	struct calib_write *cw;
	struct qual_msg m;
	char *text;

	if (calib_record_check(rec, "calibration record", &m) ||
	    !remote_device_key_of(key, job->remote ? job->remote->node : NULL)) {
		oplog_warn("job '%s': its calibration record is not stored: %s", job->id,
			   calib_record_check(rec, "calibration record", &m) ? m.text :
			   "it is not of a GPU of the node the job ran on");
		return;
	}
	if ((size_t)snprintf(path, sizeof path, "%s/%s/%s.json", j->remote->spool,
			     REMOTE_SPOOL_CALIBRATION, key) >= sizeof path)
		return;
	oplog(LOG_INFO, "job '%s': the calibration of %s goes to '%s'", job->id, key, path);
	cw = xcalloc(1, sizeof *cw);
	cw->j = j;
	cw->slot = -1;
	cw->rec = json_deep_copy(rec);
	if (!(text = json_dumps(rec, JSON_COMPACT)))
		abort(); /* out of memory: a checked record always dumps */
	writer_file_replace(j->writer, path, text, strlen(text), 0644, calib_written, cw);
	free(text);
}

void calib__take_verdict(struct jobs *j, const struct job *job, int s, json_t *line)
{
	json_t *rec = json_object_get(line, "calibration");
	char path[4096], key[48];
	struct calib_write *cw;
	struct qual_msg m;
	char *text;

	if (!job->args.calibrate)
		return;
	/* A calibration that stores nothing (it timed nothing) is not tried
	 * again by the schedule before the period has passed. */
	j->slots[s].calib_tried = time(NULL);
	if (!json_is_object(rec))
		return;
	/* Only timed A/A comparisons make a record of the device. */
	if (!json_is_true(json_object_get(line, "timed")) ||
	    json_integer_value(json_object_get(rec, "comparisons")) <= 0) {
		oplog_warn("job '%s': its calibration record is not stored: it holds no "
			   "timed A/A comparison", job->id);
		return;
	}
	if (j->remote) {
		calib_take_remote(j, job, rec);
		return;
	}
	calib__key(j, s, key, sizeof key);
	/* The worker's record names the device it was given; one that does
	 * not fit (or is no record) is not stored. */
	if (calib_record_check(rec, "calibration record", &m) ||
	    strcmp(json_string_value(json_object_get(rec, "device_key")), key) != 0) {
		oplog_warn("job '%s': its calibration record is not stored: %s", job->id,
			   calib_record_check(rec, "calibration record", &m) ? m.text :
			   "it is not of its slot's device");
		return;
	}
	if (calib_path(j, s, path, sizeof path))
		return;
	/* Until the file is written (or when it cannot be) the slot keeps the
	 * record already stored there, so that a worker is only ever given a
	 * file that holds the record it is told of. */
	cw = xcalloc(1, sizeof *cw);
	cw->j = j;
	cw->slot = s;
	cw->rec = json_deep_copy(rec);
	if (!(text = json_dumps(rec, JSON_COMPACT)))
		abort(); /* out of memory: a checked record always dumps */
	writer_file_replace(j->writer, path, text, strlen(text), 0640, calib_written, cw);
	free(text);
}

void calib__worker_prefix(const struct jobs *j, const struct job *job, int s,
			  struct strv *argv)
{
	char key[48];

	if (!job->args.calibrate)
		return;
	calib__key(j, s, key, sizeof key);
	strv_push(argv, j->calibrator);
	strv_pushf(argv, "--runs=%d", job->args.calibrate);
	/* The Slurm backend: the node says which GPU (proto/remote.h). */
	strv_pushf(argv, "--device-key=%s", j->remote ? REMOTE_NODE_KEY : key);
	strv_push(argv, "--");
}

void calib__worker_args(const struct jobs *j, const struct job *job, int s,
			struct strv *argv)
{
	char path[4096];

	if (job->args.calibrate)
		return;
	/* The Slurm backend: the node gives its GPU's latest record. */
	if (j->remote) {
		strv_push(argv, "--calibration=" REMOTE_NODE_KEY);
		return;
	}
	if (j->slots[s].calib && calib_path(j, s, path, sizeof path) == 0) {
		strv_pushf(argv, "--calibration=%s", path);
		return;
	}
	if (j->slots[s].calib_unstored) {
		strv_pushf(argv, "--no-calibration-because=no calibration of this device is "
			   "stored: the last one could not be written (%s)",
			   j->slots[s].calib_unstored);
		return;
	}
	strv_push(argv, "--no-calibration-because=no calibration of this device yet");
}

/* The Slurm backend's records: one per node's GPU in the spool, by key
 * (small files, read when asked: an operator's question), at most this
 * many. */
#define CALIB_REMOTE_MAX 1024
static json_t *calib_remote_json(struct jobs *j)
{
	json_t *list = json_array();
	char dir[4096], path[4096 + 256];
	struct dirent **names;
	int n;

	snprintf(dir, sizeof dir, "%s/%s", j->remote->spool, REMOTE_SPOOL_CALIBRATION);
	n = scandir(dir, &names, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		size_t len = strlen(names[i]->d_name);
		const char *key;
		struct qual_msg m;
		json_t *rec;

		/* At most CALIB_REMOTE_MAX records; each a record whose key is
		 * its file's name. */
		if (i < CALIB_REMOTE_MAX && len > 5 && !strcmp(names[i]->d_name + len - 5, ".json") &&
		    snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name) > 0 &&
		    calib_record_load(path, &rec, &m) == 0) {
			key = json_string_value(json_object_get(rec, "device_key"));
			if (key && strlen(key) == len - 5 && !strncmp(key, names[i]->d_name, len - 5))
				json_array_append_new(list, json_pack("{s:n,s:n,s:s,s:o}", "slot",
					"device", "device_key", key, "record", rec));
			else
				json_decref(rec);
		}
		free(names[i]);
	}
	free(n >= 0 ? names : NULL);
	return json_pack("{s:o}", "calibrations", list);
}

json_t *jobs_calibration_json(struct jobs *j)
{
	json_t *list = json_array();
	char key[48];

	if (j->remote) {
		json_decref(list);
		return calib_remote_json(j);
	}

	for (int s = 0; s < j->nslots; s++) {
		calib__key(j, s, key, sizeof key);
		json_array_append_new(list, json_pack("{s:i,s:o,s:s,s:O?}", "slot", s,
			"device", j->slots[s].device >= 0 ? json_integer(j->slots[s].device) :
							    json_null(),
			"device_key", key, "record", j->slots[s].calib));
	}
	return json_pack("{s:o}", "calibrations", list);
}

/* ---- the schedule -------------------------------------------------------- */

/* Whether slot s's record is missing or older than the period, and no
 * calibration of it ended within the period. */
static bool calib_stale(const struct jobs *j, int s)
{
	const json_t *rec = j->slots[s].calib;
	const char *t = rec ? json_string_value(json_object_get(rec, "time")) : NULL;
	struct tm tm;

	if (j->slots[s].calib_tried &&
	    difftime(time(NULL), j->slots[s].calib_tried) < j->calib_every_s)
		return false;
	memset(&tm, 0, sizeof tm);
	if (!t || !strptime(t, "%Y-%m-%dT%H:%M:%SZ", &tm))
		return true;
	return difftime(time(NULL), timegm(&tm)) >= j->calib_every_s;
}

/* Whether a calibration of slot s is queued or running. */
static bool calib_queued(const struct jobs *j, int s)
{
	for (int i = 0; i < j->njobs; i++) {
		const struct job *job = j->all[i];

		if (!job->args.calibrate)
			continue;
		if (job->state == JOB_QUEUED && (!job->args.has_slot || job->args.slot == s))
			return true;
		if (job->state == JOB_RUNNING && job->slot == s)
			return true;
	}
	return false;
}

struct calib_submit {
	struct jobs *j;
	int slot;
};

static void calib_submitted(void *ctx, int status, const char *job, int position,
			    const char *message)
{
	struct calib_submit *cs = ctx;
	char key[48];

	(void)position;
	cs->j->slots[cs->slot].calib_submitting = false;
	calib__key(cs->j, cs->slot, key, sizeof key);
	if (status < 0)
		oplog_warn("cannot queue the calibration of %s: %s", key, message);
	else
		oplog_warn("queued calibration '%s' of %s", job, key);
	free(cs);
}

static void calib_timer_fired(uv_timer_t *t)
{
	struct jobs *j = t->data;

	if (j->closing)
		return;
	for (int s = 0; s < j->nslots; s++) {
		struct submit_args a;
		struct calib_submit *cs;
		struct qual_msg m;

		if (j->slots[s].calib_submitting || j->slots[s].state == SLOT_OUT ||
		    !calib_stale(j, s) || calib_queued(j, s))
			continue;
		memset(&a, 0, sizeof a);
		a.baseline = a.candidate = j->calib_lib;
		settings_init(&a.settings); /* the default rule, as a calibration measures */
		a.calibrate = j->calib_runs;
		a.has_slot = true;
		a.slot = s;
		cs = xcalloc(1, sizeof *cs);
		cs->j = j;
		cs->slot = s;
		j->slots[s].calib_submitting = true;
		if (jobs_submit(j, &a, calib_submitted, cs, &m) < 0) {
			j->slots[s].calib_submitting = false;
			oplog_warn("cannot queue the calibration of slot %d: %s", s, m.text);
			free(cs);
		}
	}
}
