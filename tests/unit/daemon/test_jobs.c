/* Jobs (daemon/jobs.c) on a real libuv loop with fake workers and a fake
 * compile helper (tests/tools/fake_worker.sh, fake_compile.sh: the name of
 * the candidate library's folder picks what they do), and once with the real
 * qual-compile: lines relayed with job and seq and logged, slots never
 * shared, cancel, crashes, time limits, odd output, submit refusals,
 * recovery after a crash, and a clean shutdown (uv_loop_close() == 0 at the
 * end of every test).
 *
 * Run one test with `test_jobs NAME` (ctest: jobs_NAME). */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/sha256.h"
#include "daemon/jobs.h"
#include "daemon/store.h"
#include "tests/unit/test_main.h"
#include "proto/line.h"

#define MAX_LINES 4096

struct heard {
	char job[JOB_ID_MAX];
	long seq;
	char *text;
};

/* One test's world: a loop, a state directory, and what came out. */
static struct {
	uv_loop_t loop;
	uv_timer_t watchdog;   /* wakes UV_RUN_ONCE up so RUN_UNTIL can time out */
	struct jobs *j;
	struct jobs_config cfg;
	int devices[4];
	char top[PATH_MAX];
	char state[PATH_MAX + 16];
	char libs[PATH_MAX + 16];
	char fake[PATH_MAX + 16];
	char tmp[PATH_MAX + 16];
	struct heard lines[MAX_LINES];
	int nlines;
	bool seq_gap;          /* a line's seq was not the job's next */
	int running, running_max;
	int per_device[8];     /* jobs running per device ("cpu" is 7) */
	bool device_shared;
	int sub_calls, sub_status, sub_position;
	char sub_job[JOB_ID_MAX];
	char sub_message[2048];
	bool sub_in_call;      /* jobs_submit or jobs_close is on the stack */
	bool sub_called_inside;
	bool closed;
	bool closed_inside;
	bool in_close;
} H;

/* jansson's parses in this program, counted for parse_once: this
 * json_loadb is the one the daemon's code (a static library) is linked
 * against, and it calls jansson's. While on, it counts the parses of
 * exactly `bytes` (len of them), or of anything when bytes is NULL. */
static struct {
	bool on;
	const char *bytes;
	size_t len;
	int n;
} loads;

json_t *json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *error)
{
	static json_t *(*real)(const char *, size_t, size_t, json_error_t *);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "json_loadb");
	if (loads.on && (!loads.bytes || (buflen == loads.len &&
					  !memcmp(buffer, loads.bytes, buflen))))
		loads.n++;
	return real(buffer, buflen, flags, error);
}

static void loads_count(const char *bytes)
{
	loads.on = true;
	loads.bytes = bytes;
	loads.len = bytes ? strlen(bytes) : 0;
	loads.n = 0;
}

static uint64_t now_ms(void)
{
	return uv_hrtime() / 1000000u;
}

#define RUN_UNTIL(cond, secs)                                                   \
	do {                                                                    \
		uint64_t end_ = now_ms() + (uint64_t)((secs) * 1000);           \
		while (!(cond)) {                                               \
			uv_run(&H.loop, UV_RUN_ONCE);                           \
			if (now_ms() > end_)                                    \
				fail_msg("timed out waiting for %s", #cond);    \
		}                                                               \
	} while (0)

/* ---- callbacks ---------------------------------------------------------------- */

static int device_index(const char *dev)
{
	if (!dev)
		return 6;
	if (!strcmp(dev, "cpu"))
		return 7;
	return atoi(dev) & 3;
}

static void on_line(void *ctx, const char *job, struct line *l)
{
	const char *line = l->text;
	size_t len = l->len;
	long seq = l->seq;
	long expect = 0;
	json_t *o;
	int i;

	(void)ctx;
	for (i = 0; i < H.nlines; i++)
		if (!strcmp(H.lines[i].job, job))
			expect = H.lines[i].seq + 1;
	if (seq != expect || strlen(line) != len)
		H.seq_gap = true;
	if (H.nlines == MAX_LINES)
		return;
	snprintf(H.lines[H.nlines].job, JOB_ID_MAX, "%s", job);
	H.lines[H.nlines].seq = seq;
	H.lines[H.nlines].text = strndup(line, len);
	H.nlines++;
	o = json_loadb(line, len, 0, NULL);
	/* The line itself carries the same job and seq as the call. */
	if (!o || json_integer_value(json_object_get(o, "seq")) != seq ||
	    !json_is_integer(json_object_get(o, "seq")) ||
	    !json_string_value(json_object_get(o, "job")) ||
	    strcmp(json_string_value(json_object_get(o, "job")), job))
		H.seq_gap = true;
	if (o) {
		const char *type = json_string_value(json_object_get(o, "type"));
		const char *dev = json_string_value(json_object_get(o, "device"));
		if (type && !strcmp(type, "start")) {
			H.running++;
			if (H.running > H.running_max)
				H.running_max = H.running;
			if (++H.per_device[device_index(dev)] > 1)
				H.device_shared = true;
		} else if (type && !strcmp(type, "verdict")) {
			/* Only jobs that started count down; their start line
			 * says which device they ran on. */
			for (i = 0; i < H.nlines - 1; i++) {
				json_t *s;
				if (strcmp(H.lines[i].job, job) || H.lines[i].seq != 0)
					continue;
				s = json_loads(H.lines[i].text, 0, NULL);
				if (s && !strcmp(json_string_value(json_object_get(s, "type")), "start")) {
					H.running--;
					H.per_device[device_index(json_string_value(
						json_object_get(s, "device")))]--;
				}
				json_decref(s);
			}
		}
		json_decref(o);
	}
}

static void on_submit(void *ctx, int status, const char *job, int position,
		      const char *message)
{
	(void)ctx;
	if (H.sub_in_call)
		H.sub_called_inside = true;
	H.sub_calls++;
	H.sub_status = status;
	H.sub_position = position;
	snprintf(H.sub_job, sizeof H.sub_job, "%s", job ? job : "");
	snprintf(H.sub_message, sizeof H.sub_message, "%s", message ? message : "");
}

static void on_closed(void *ctx)
{
	(void)ctx;
	H.closed = true;
	if (H.in_close)
		H.closed_inside = true;
}

static void on_watchdog(uv_timer_t *t)
{
	(void)t;
}

/* ---- setup ---------------------------------------------------------------------- */

static int setup(void **state)
{
	(void)state;
	memset(&H, 0, sizeof H);
	snprintf(H.top, sizeof H.top, "/tmp/test-jobs-XXXXXX");
	if (!mkdtemp(H.top))
		return -1;
	snprintf(H.state, sizeof H.state, "%s/state", H.top);
	snprintf(H.libs, sizeof H.libs, "%s/libs", H.top);
	snprintf(H.fake, sizeof H.fake, "%s/fake", H.top);
	snprintf(H.tmp, sizeof H.tmp, "%s/tmp", H.top);
	if (mkdir(H.libs, 0700) || mkdir(H.fake, 0700) || mkdir(H.tmp, 0700))
		return -1;
	setenv("FAKE_DIR", H.fake, 1);
	/* The submit checks' private folders go here, so a test can see that
	 * none is left behind. */
	setenv("TMPDIR", H.tmp, 1);
	if (uv_loop_init(&H.loop))
		return -1;
	uv_timer_init(&H.loop, &H.watchdog);
	uv_timer_start(&H.watchdog, on_watchdog, 50, 50);
	H.cfg.state_dir = H.state;
	H.cfg.worker = JOBS_TEST_WORKER;
	H.cfg.compile_helper = JOBS_TEST_HELPER;
	H.cfg.nslots = 1;
	H.cfg.devices = NULL;
	H.cfg.job_timeout_s = 60;
	H.cfg.submit_check_timeout_s = 10;
	return 0;
}

static int teardown(void **state)
{
	int i, rc = 0;

	(void)state;
	/* After a failed assertion: shut down what is left. */
	if (H.j && !H.closed) {
		jobs_close(H.j, on_closed, NULL);
		for (i = 0; i < 400 && !H.closed; i++)
			uv_run(&H.loop, UV_RUN_ONCE);
	}
	if (!uv_is_closing((uv_handle_t *)&H.watchdog))
		uv_close((uv_handle_t *)&H.watchdog, NULL);
	uv_run(&H.loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&H.loop) != 0)
		rc = -1;
	for (i = 0; i < H.nlines; i++)
		free(H.lines[i].text);
	fs_rm_tree(H.top);
	unsetenv("TMPDIR");
	return rc;
}

static void open_jobs(void)
{
	struct qual_msg m = { "" };

	H.closed = false;
	if (jobs_open(&H.loop, &H.cfg, on_line, NULL, &H.j, &m))
		fail_msg("jobs_open: %s", m.text);
}

/* Shuts down, and checks that every handle is gone: the loop closes. */
static void close_jobs(void)
{
	H.in_close = true;
	jobs_close(H.j, on_closed, NULL);
	H.in_close = false;
	RUN_UNTIL(H.closed, 10);
	assert_false(H.closed_inside);
	H.j = NULL;
}

static void finish(void)
{
	if (H.j)
		close_jobs();
	assert_false(H.seq_gap);
	uv_close((uv_handle_t *)&H.watchdog, NULL);
	uv_run(&H.loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&H.loop), 0);
	/* teardown's uv_loop_close on a closed loop would fail: start over. */
	assert_int_equal(uv_loop_init(&H.loop), 0);
	uv_timer_init(&H.loop, &H.watchdog);
}

/* A compiler library for the fakes: a real ELF shared object (the submit
 * checks look at the file) under a folder named kind. */
static const char *lib(const char *kind)
{
	static char paths[16][PATH_MAX + 64];
	static int next;
	char *p = paths[next++ % 16];
	char d[PATH_MAX + 32];

	snprintf(d, sizeof d, "%s/%s", H.libs, kind);
	mkdir(d, 0700);
	snprintf(p, PATH_MAX + 64, "%s/libcompiler.so", d);
	if (access(p, F_OK) != 0)
		assert_int_equal(symlink(JOBS_TEST_ELF, p), 0);
	return p;
}

static void args_init(struct submit_args *a, const char *base, const char *cand)
{
	memset(a, 0, sizeof *a);
	a->baseline = (char *)base;
	a->candidate = (char *)cand;
	a->settings.pairs = 30;
	a->settings.alpha = 0.05;
	a->settings.margin = 0.01;
	a->settings.follow = true;
}

/* Submits and waits for the answer: the status (the callback's, or
 * jobs_submit's own when it refused at once; then H.sub_message holds msg). */
static int submit_args_wait(const struct submit_args *a)
{
	struct qual_msg m = { "" };
	int calls = H.sub_calls, rc;

	H.sub_in_call = true;
	rc = jobs_submit(H.j, a, on_submit, NULL, &m);
	H.sub_in_call = false;
	assert_false(H.sub_called_inside);
	if (rc < 0) {
		snprintf(H.sub_message, sizeof H.sub_message, "%s", m.text);
		/* libuv's contract: no callback after a refusal. */
		for (int i = 0; i < 3; i++)
			uv_run(&H.loop, UV_RUN_NOWAIT);
		assert_int_equal(H.sub_calls, calls);
		return rc;
	}
	RUN_UNTIL(H.sub_calls > calls, 10);
	assert_int_equal(H.sub_calls, calls + 1);
	return H.sub_status;
}

/* Submits base against a candidate of the given kind; returns its id. */
static const char *submit_kind(const char *kind)
{
	static char id[8][JOB_ID_MAX];
	static int next;
	struct submit_args a;
	char *out = id[next++ % 8];
	int rc;

	args_init(&a, lib("base"), lib(kind));
	rc = submit_args_wait(&a);
	if (rc)
		fail_msg("submit '%s': %s", kind, H.sub_message);
	snprintf(out, JOB_ID_MAX, "%s", H.sub_job);
	return out;
}

static bool finished(const char *id);

/* Submits a job of the given kind and waits (10 s at most) until it has
 * finished; returns its id. */
static const char *run_kind(const char *kind)
{
	const char *id = submit_kind(kind);

	RUN_UNTIL(finished(id), 10);
	return id;
}

static const char *state_of(const char *id)
{
	struct qual_msg m = { "" };
	enum job_state st;

	if (jobs_read_log(H.j, id, LONG_MAX, JOBS_READ_BYTES, NULL, NULL, &st, &m) < 0)
		fail_msg("jobs_read_log '%s': %s", id, m.text);
	return vocab_state_name(st);
}

static bool finished(const char *id)
{
	const char *st = state_of(id);
	return strcmp(st, "queued") && strcmp(st, "running");
}

/* The relayed lines of one job, in order. */
static int job_lines(const char *id, const char **out, int cap)
{
	int i, n = 0;

	for (i = 0; i < H.nlines && n < cap; i++)
		if (!strcmp(H.lines[i].job, id))
			out[n++] = H.lines[i].text;
	return n;
}

/* The last relayed line of job, parsed (new reference). */
static json_t *last_line(const char *id)
{
	const char *l[512];
	int n = job_lines(id, l, 512);

	assert_true(n > 0);
	return json_loads(l[n - 1], 0, NULL);
}

static void assert_verdict(const char *id, const char *verdict, const char *message_part)
{
	json_t *v = last_line(id);
	const char *msg;

	assert_non_null(v);
	assert_string_equal(json_string_value(json_object_get(v, "type")), "verdict");
	assert_string_equal(json_string_value(json_object_get(v, "verdict")), verdict);
	if (message_part) {
		msg = json_string_value(json_object_get(v, "message"));
		assert_non_null(msg);
		if (!strstr(msg, message_part))
			fail_msg("verdict message '%s' lacks '%s'", msg, message_part);
	}
	json_decref(v);
}

struct collected {
	char *lines[512];
	int n;
};

/* Each line's seq as the read hands it out is the one in its bytes, and a
 * read that parses hands out the line parsed from those bytes. */
static bool collect(void *ctx, const struct jobs_record *rec)
{
	struct collected *c = ctx;
	const char *line = rec->text;
	size_t len = rec->len;
	json_t *o = json_loadb(line, len, 0, NULL);

	assert_int_equal(strlen(line), len);
	assert_int_equal(json_integer_value(json_object_get(o, "seq")), rec->seq);
	json_decref(o);
	if (rec->line) {
		assert_int_equal(rec->line->seq, rec->seq);
		assert_int_equal(rec->line->len, len);
		assert_memory_equal(rec->line->text, line, len);
	}
	if (c->n < 512)
		c->lines[c->n++] = strndup(line, len);
	return false;
}

static void collected_free(struct collected *c)
{
	for (int i = 0; i < c->n; i++)
		free(c->lines[i]);
	c->n = 0;
}

/* The job's log holds exactly the lines relayed for it, in order. */
static void assert_log_matches(const char *id)
{
	struct collected c = { .n = 0 };
	struct qual_msg m = { "" };
	const char *l[512];
	int n = job_lines(id, l, 512), got;

	for (int how = JOBS_READ_BYTES; how <= JOBS_READ_PARSED; how++) {
		got = jobs_read_log(H.j, id, -1, how, collect, &c, NULL, &m);
		assert_int_equal(got, n);
		assert_int_equal(c.n, n);
		for (int i = 0; i < n; i++)
			assert_string_equal(c.lines[i], l[i]);
		collected_free(&c);
	}
}

static json_t *state_file(const char *id)
{
	char path[PATH_MAX + 64];
	json_t *o;

	/* The writer thread replaces it: what was asked for first. */
	if (H.j)
		RUN_UNTIL(jobs_writes_pending(H.j) == 0, 10);
	snprintf(path, sizeof path, "%s/jobs/%s/state.json", H.state, id);
	o = json_load_file(path, 0, NULL);
	assert_non_null(o);
	return o;
}

static bool dir_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n == 0;
}

/* ---- tests ---------------------------------------------------------------------- */

static void test_relay_and_log(void **state)
{
	const char *l[64], *id;
	struct collected c = { .n = 0 };
	struct qual_msg m = { "" };
	json_t *o, *list, *st;
	int n, i;

	(void)state;
	open_jobs();
	id = submit_kind("ok");
	assert_string_equal(id, "j000001");
	assert_int_equal(H.sub_position, 0);
	RUN_UNTIL(finished(id), 10);
	assert_false(H.seq_gap);
	n = job_lines(id, l, 64);
	assert_int_equal(n, 5);
	for (i = 0; i < n; i++) {
		o = json_loads(l[i], 0, NULL);
		assert_non_null(o);
		assert_string_equal(json_string_value(json_object_get(o, "job")), id);
		assert_int_equal(json_integer_value(json_object_get(o, "seq")), i);
		json_decref(o);
	}
	/* The engine's bytes are relayed as they are (a number jansson would
	 * print differently keeps its text), ours appended at the end. */
	assert_non_null(strstr(l[0], "\"p\":0.10000000000000000555,\"job\":\"j000001\",\"seq\":0}"));
	assert_string_equal(l[4], "{\"type\":\"verdict\",\"verdict\":\"neutral\",\"timed\":true,"
			    "\"message\":\"fake\",\"job\":\"j000001\",\"seq\":4}");
	/* The worker's command line, for a compile-only slot. */
	assert_non_null(strstr(l[0], "--pairs=30"));
	assert_non_null(strstr(l[0], "--seed=0"));
	assert_non_null(strstr(l[0], "--compile-only-because=quald runs compile-only slots"));
	assert_null(strstr(l[0], "--device"));
	assert_non_null(strstr(l[0], "\"device\":\"cpu\""));
	assert_log_matches(id);

	/* Resuming after seq 2 gives the last two lines. */
	assert_int_equal(jobs_read_log(H.j, id, 2, JOBS_READ_BYTES, collect, &c, NULL, &m), 2);
	assert_string_equal(c.lines[0], l[3]);
	assert_string_equal(c.lines[1], l[4]);
	collected_free(&c);
	assert_int_equal(jobs_read_log(H.j, "j000099", -1, JOBS_READ_BYTES, collect, &c, NULL, &m), QUAL_ENOENT);

	st = state_file(id);
	assert_string_equal(json_string_value(json_object_get(st, "state")), "done");
	assert_string_equal(json_string_value(json_object_get(st, "verdict")), "neutral");
	assert_true(json_is_string(json_object_get(st, "submitted")));
	assert_true(json_is_string(json_object_get(st, "started")));
	assert_true(json_is_string(json_object_get(st, "finished")));
	assert_int_equal(json_integer_value(json_object_get(st, "slot")), 0);
	assert_true(json_is_null(json_object_get(st, "device")));
	json_decref(st);

	list = jobs_list_json(H.j, 20, NULL, JOBS_LIST_MAX_BYTES);
	o = json_array_get(json_object_get(list, "jobs"), 0);
	assert_int_equal(json_array_size(json_object_get(list, "jobs")), 1);
	assert_string_equal(json_string_value(json_object_get(o, "job")), id);
	assert_string_equal(json_string_value(json_object_get(o, "state")), "done");
	assert_string_equal(json_string_value(json_object_get(o, "verdict")), "neutral");
	assert_string_equal(json_string_value(json_object_get(o, "candidate")), lib("ok"));
	json_decref(list);
	finish();
}

static void test_worker_args(void **state)
{
	char *cases[] = { "gemm_f16-256x512x256", "attention_f16-128", NULL };
	char *bopts[] = { "-O3", NULL };
	char *copts[] = { "--use_fast_math", "-lineinfo", NULL };
	struct submit_args a;
	const char *l[16];

	(void)state;
	H.devices[0] = 3;
	H.cfg.devices = H.devices;
	open_jobs();
	args_init(&a, lib("base"), lib("ok"));
	a.settings.pairs = 40;
	a.settings.seed = 7;
	a.settings.alpha = 0.01;
	a.settings.margin = 0.02;
	a.settings.cases = cases;
	a.settings.baseline_options = bopts;
	a.settings.candidate_options = copts;
	assert_int_equal(submit_args_wait(&a), 0);
	RUN_UNTIL(finished(H.sub_job), 10);
	assert_int_equal(job_lines(H.sub_job, l, 16), 5);
	assert_non_null(strstr(l[0], "\"args\":\" --pairs=40 --alpha=0.01"));
	assert_non_null(strstr(l[0], "--seed=7 --case gemm_f16-256x512x256 --case attention_f16-128 "
			       "--baseline-opt=-O3 --candidate-opt=--use_fast_math "
			       "--candidate-opt=-lineinfo --device=3\""));
	assert_null(strstr(l[0], "--compile-only"));
	assert_null(strstr(l[0], "--mode"));
	assert_non_null(strstr(l[0], "\"device\":\"3\""));

	/* compile_only on a GPU slot still says which device; a mode other
	 * than default is passed on. */
	args_init(&a, lib("base"), lib("ok"));
	a.settings.compile_only = true;
	a.settings.mode = RTC_MODE_WGP;
	assert_int_equal(submit_args_wait(&a), 0);
	RUN_UNTIL(finished(H.sub_job), 10);
	assert_int_equal(job_lines(H.sub_job, l, 16), 5);
	assert_non_null(strstr(l[0], "--mode=wgp --compile-only --device=3\""));

	/* Sampling's caps and the gate, when given, are passed on. */
	args_init(&a, lib("base"), lib("ok"));
	a.settings.max_pairs = 120;
	a.settings.max_seconds = 7.5;
	a.settings.gate_slower = GATE_SIGNIFICANT;
	a.settings.undecided = UNDECIDED_REGRESSION;
	assert_int_equal(submit_args_wait(&a), 0);
	RUN_UNTIL(finished(H.sub_job), 10);
	assert_int_equal(job_lines(H.sub_job, l, 16), 5);
	assert_non_null(strstr(l[0], "--max-pairs=120 --max-seconds=7.5 "
			       "--gate-slower=significant --undecided=regression --device=3\""));
	finish();
}

static void test_one_slot_serial(void **state)
{
	const char *a, *b, *c;
	json_t *st;

	(void)state;
	open_jobs();
	a = submit_kind("slow");
	assert_int_equal(H.sub_position, 0);
	RUN_UNTIL(!strcmp(state_of(a), "running"), 10);
	b = submit_kind("slow");
	assert_int_equal(H.sub_position, 0);
	c = submit_kind("ok");
	assert_int_equal(H.sub_position, 1);
	st = jobs_status_json(H.j);
	assert_int_equal(json_array_size(json_object_get(st, "slots")), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
		json_object_get(st, "slots"), 0), "job")), a);
	assert_true(json_is_null(json_object_get(json_array_get(
		json_object_get(st, "slots"), 0), "device")));
	assert_string_equal(json_string_value(json_array_get(json_object_get(st, "running"), 0)), a);
	assert_int_equal(json_array_size(json_object_get(st, "queued")), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(st, "queued"), 0)), b);
	assert_string_equal(json_string_value(json_array_get(json_object_get(st, "queued"), 1)), c);
	json_decref(st);
	RUN_UNTIL(finished(c), 10);
	assert_true(finished(a) && finished(b));
	assert_int_equal(H.running_max, 1);
	assert_false(H.device_shared);
	assert_false(H.seq_gap);
	assert_verdict(a, "neutral", NULL);
	assert_verdict(b, "neutral", NULL);
	assert_verdict(c, "neutral", NULL);
	assert_log_matches(a);
	assert_log_matches(b);
	assert_log_matches(c);
	assert_true(dir_empty(H.fake));
	finish();
}

static void test_two_slots_parallel(void **state)
{
	const char *id[4];
	const char *l[16];
	json_t *st;
	int i;

	(void)state;
	H.devices[0] = 0;
	H.devices[1] = 1;
	H.cfg.devices = H.devices;
	H.cfg.nslots = 2;
	open_jobs();
	for (i = 0; i < 4; i++)
		id[i] = submit_kind("slow");
	RUN_UNTIL(H.running == 2, 10);
	st = jobs_status_json(H.j);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(
		json_object_get(st, "slots"), 1), "device")), 1);
	assert_int_equal(json_array_size(json_object_get(st, "running")), 2);
	json_decref(st);
	for (i = 0; i < 4; i++)
		RUN_UNTIL(finished(id[i]), 10);
	assert_int_equal(H.running_max, 2);
	assert_false(H.device_shared);
	assert_false(H.seq_gap);
	/* The first two ran side by side on the two devices. */
	assert_int_equal(job_lines(id[0], l, 16), 5);
	assert_non_null(strstr(l[0], "\"device\":\"0\""));
	assert_int_equal(job_lines(id[1], l, 16), 5);
	assert_non_null(strstr(l[0], "\"device\":\"1\""));
	for (i = 0; i < 4; i++) {
		assert_verdict(id[i], "neutral", NULL);
		assert_log_matches(id[i]);
	}
	assert_true(dir_empty(H.fake));
	finish();
}

static void test_cancel(void **state)
{
	struct qual_msg m = { "" };
	const char *a, *b, *c, *l[16];
	int before;
	json_t *st;

	(void)state;
	open_jobs();
	a = submit_kind("hang");
	RUN_UNTIL(job_lines(a, l, 16) == 1, 10);
	b = submit_kind("ok");
	/* A queued job: its cancelled verdict line comes once it is on disk
	 * (the writer's callback), and until then it reads as queued. */
	before = H.nlines;
	assert_int_equal(jobs_cancel(H.j, b, &m), 0);
	assert_int_equal(H.nlines, before);
	assert_string_equal(state_of(b), "queued");
	RUN_UNTIL(H.nlines == before + 1, 5);
	assert_int_equal(job_lines(b, l, 16), 1);
	assert_string_equal(state_of(b), "cancelled");
	assert_verdict(b, "cancelled", "queued");
	assert_log_matches(b);
	st = state_file(b);
	assert_string_equal(json_string_value(json_object_get(st, "state")), "cancelled");
	assert_string_equal(json_string_value(json_object_get(st, "verdict")), "cancelled");
	json_decref(st);

	/* A running one: SIGTERM to its group, then the verdict. */
	assert_int_equal(jobs_cancel(H.j, a, &m), 0);
	RUN_UNTIL(finished(a), 5);
	assert_string_equal(state_of(a), "cancelled");
	assert_int_equal(job_lines(a, l, 16), 2);
	assert_verdict(a, "cancelled", "running");
	assert_log_matches(a);
	assert_false(H.seq_gap);

	assert_int_equal(jobs_cancel(H.j, a, &m), QUAL_EINVAL);
	assert_string_equal(m.text, "job 'j000001' has already finished (cancelled)");
	assert_int_equal(jobs_cancel(H.j, "j000077", &m), QUAL_ENOENT);
	assert_int_equal(jobs_cancel(H.j, "bogus", &m), QUAL_ENOENT);

	/* The slot is free again. */
	c = run_kind("ok");
	assert_verdict(c, "neutral", NULL);
	finish();
}

static void test_crash(void **state)
{
	const char *id;

	(void)state;
	open_jobs();
	id = run_kind("crash");
	assert_string_equal(state_of(id), "done");
	assert_verdict(id, "error", "worker crashed: killed by signal SIGSEGV");
	assert_log_matches(id);
	/* The next job runs. */
	id = run_kind("ok");
	assert_verdict(id, "neutral", NULL);
	finish();
}

static void test_blame(void **state)
{
	const char *id;
	json_t *st;

	(void)state;
	open_jobs();
	/* The candidate had already failed when the worker crashed. */
	id = run_kind("candfail");
	assert_verdict(id, "fail", "SIGSEGV");
	st = state_file(id);
	assert_string_equal(json_string_value(json_object_get(st, "verdict")), "fail");
	json_decref(st);
	/* Exit status 2 (fail) without a verdict line. */
	id = run_kind("fail2");
	assert_verdict(id, "fail", "worker exited with status 2 without a verdict");
	finish();
}

static void test_timeout(void **state)
{
	const char *id;
	uint64_t t0;

	(void)state;
	H.cfg.job_timeout_s = 0.3;
	open_jobs();
	t0 = now_ms();
	id = submit_kind("hang");
	RUN_UNTIL(finished(id), 5);
	assert_true(now_ms() - t0 < 3000);
	assert_string_equal(state_of(id), "done");
	assert_verdict(id, "error", "worker did not finish within the job time limit of 0.3 s");
	assert_log_matches(id);
	/* A worker that wrote its verdict and then hung is stopped; the
	 * verdict stands. */
	id = submit_kind("linger");
	RUN_UNTIL(finished(id), 5);
	assert_string_equal(state_of(id), "done");
	assert_verdict(id, "neutral", NULL);
	assert_log_matches(id);
	finish();
}

static void test_exits(void **state)
{
	const char *id;

	(void)state;
	open_jobs();
	id = run_kind("noverdict");
	assert_verdict(id, "error", "worker exited with status 3 without a verdict; "
		       "last stderr line: qual-run: something broke");
	id = run_kind("usage");
	assert_verdict(id, "error", "worker refused the job: qual-run: unknown case 'nope-1'");
	/* Its error line named the candidate; a usage exit is still not the
	 * candidate's result. */
	{
		const char *l[4];
		assert_int_equal(job_lines(id, l, 4), 2);
		assert_non_null(strstr(l[1], "\"seq\":1}"));
	}
	finish();
}

static void test_odd_lines(void **state)
{
	const char *id, *l[16];
	json_t *o;

	(void)state;
	open_jobs();
	/* Lines that are not JSON objects become error lines; the job goes on. */
	id = run_kind("garbage");
	assert_int_equal(job_lines(id, l, 16), 7);
	o = json_loads(l[1], 0, NULL);
	assert_string_equal(json_string_value(json_object_get(o, "type")), "error");
	assert_string_equal(json_string_value(json_object_get(o, "stage")), "setup");
	assert_string_equal(json_string_value(json_object_get(o, "code")), "bad_line");
	assert_true(json_is_null(json_object_get(o, "arm")));
	assert_string_equal(json_string_value(json_object_get(o, "message")),
			    "worker printed a line that is not a json object: 'this is not json'");
	assert_int_equal(json_integer_value(json_object_get(o, "seq")), 1);
	json_decref(o);
	o = json_loads(l[2], 0, NULL);
	assert_non_null(strstr(json_string_value(json_object_get(o, "message")), "'[1,2]'"));
	json_decref(o);
	assert_verdict(id, "neutral", NULL);
	assert_log_matches(id);

	/* A line over the limit ends the job. */
	id = run_kind("longline");
	assert_int_equal(job_lines(id, l, 16), 2);
	assert_verdict(id, "error", "worker printed a line over 1048576 bytes");

	/* A last line without its newline still counts when it is a whole
	 * object (lines_splitter_finish()). */
	id = run_kind("partial");
	assert_int_equal(job_lines(id, l, 16), 2);
	assert_verdict(id, "neutral", NULL);

	/* One that is not is cut off: not relayed (here the start of a
	 * verdict line, which therefore does not count), and an error line
	 * with code cut_off says so; the worker exited 0 without a verdict. */
	id = run_kind("cutoff");
	assert_int_equal(job_lines(id, l, 16), 3);
	o = json_loads(l[1], 0, NULL);
	assert_string_equal(json_string_value(json_object_get(o, "type")), "error");
	assert_string_equal(json_string_value(json_object_get(o, "code")), "cut_off");
	assert_true(json_is_null(json_object_get(o, "arm")));
	assert_non_null(strstr(json_string_value(json_object_get(o, "message")),
			       "cut off: its last line, 61 bytes, has no end"));
	json_decref(o);
	assert_verdict(id, "error", "worker exited with status 0 without a verdict");
	assert_log_matches(id);

	/* Nothing after the verdict line. */
	id = run_kind("after");
	assert_int_equal(job_lines(id, l, 16), 2);
	assert_verdict(id, "neutral", NULL);
	assert_log_matches(id);
	assert_false(H.seq_gap);
	finish();
}

/* Objects that are not the engine's lines (lines_check()) are refused: not
 * stored, not relayed; one foreign_line error line before the verdict says
 * how many. After a refused verdict line no verdict line is taken: the job
 * ends with the daemon's error, whatever the worker printed next. */
static void test_foreign_lines(void **state)
{
	const char *id, *l[16];
	json_t *o;

	(void)state;
	open_jobs();
	/* start, case, pair, case_verdict, the error line, the verdict. */
	id = run_kind("foreign");
	assert_int_equal(job_lines(id, l, 16), 6);
	for (int i = 0; i < 6; i++) {
		assert_null(strstr(l[i], "\"case\":\"x\""));
		assert_null(strstr(l[i], "bogus"));
	}
	o = json_loads(l[4], 0, NULL);
	assert_string_equal(json_string_value(json_object_get(o, "type")), "error");
	assert_string_equal(json_string_value(json_object_get(o, "stage")), "setup");
	assert_string_equal(json_string_value(json_object_get(o, "code")), "foreign_line");
	assert_true(json_is_null(json_object_get(o, "arm")));
	assert_string_equal(json_string_value(json_object_get(o, "message")),
			    "worker printed 2 lines that are not the engine's, refused (the "
			    "first: a line of type 'case' without 'family')");
	json_decref(o);
	assert_verdict(id, "neutral", "fake");
	assert_log_matches(id);

	/* A malformed verdict, then a well-formed improvement and exit 0. */
	id = run_kind("forged");
	assert_int_equal(job_lines(id, l, 16), 6);
	for (int i = 0; i < 6; i++)
		assert_null(strstr(l[i], "improvement"));
	assert_non_null(strstr(l[4], "\"code\":\"foreign_line\""));
	assert_non_null(strstr(l[4], "worker printed 2 lines"));
	assert_verdict(id, "error", "worker's verdict line was refused");
	assert_log_matches(id);
	finish();
}

/* A reader of a log that stops after `left` lines (0: reads all), counting
 * what it was handed. */
struct counted {
	int n, left;
};

static bool count_each(void *ctx, const struct jobs_record *rec)
{
	struct counted *k = ctx;

	(void)rec;
	k->n++;
	return k->left && --k->left == 0;
}

/* Each line a worker prints is parsed once in quald: also a verdict line
 * after refused ones, which waits for the foreign_line error line to take
 * its seq first (relay_line_reseq, not a second parse). A read of a stored
 * log for its bytes parses none of its lines (their seq is read from their
 * tail), a read that parses parses each line it hands out once and none it
 * skips, and a reader that pauses stops the read. */
static void test_parse_once(void **state)
{
	static const char verdict[] =
		"{\"type\":\"verdict\",\"verdict\":\"neutral\",\"timed\":true,"
		"\"message\":\"fake\"}";
	static const char case_verdict[] =
		"{\"type\":\"case_verdict\",\"case\":\"gemm_f16-256x512x256\","
		"\"verdict\":\"equivalent\",\"identical_code\":false,\"n\":1}";
	struct qual_msg m = { "" };
	struct counted k = { 0, 0 };
	const char *id, *l[16];
	int n;

	(void)state;
	open_jobs();
	/* tests/tools/fake_worker.sh's lines, as the relay gets them. */
	loads_count(verdict);
	id = run_kind("ok");
	assert_int_equal(loads.n, 1);
	loads_count(verdict);
	id = run_kind("foreign");
	assert_int_equal(loads.n, 1);
	loads_count(case_verdict);
	id = run_kind("foreign");
	assert_int_equal(loads.n, 1);
	loads.on = false;
	n = job_lines(id, l, 16);
	assert_int_equal(n, 6);
	assert_non_null(strstr(l[4], "\"code\":\"foreign_line\""));
	assert_non_null(strstr(l[5], "\"type\":\"verdict\""));
	assert_log_matches(id);
	assert_false(H.seq_gap);

	loads_count(NULL);
	assert_int_equal(jobs_read_log(H.j, id, -1, JOBS_READ_BYTES, count_each, &k, NULL, &m), n);
	assert_int_equal(k.n, n);
	assert_int_equal(loads.n, 0);
	loads_count(NULL);
	k = (struct counted){ 0, 0 };
	assert_int_equal(jobs_read_log(H.j, id, -1, JOBS_READ_PARSED, count_each, &k, NULL, &m), n);
	assert_int_equal(loads.n, n);
	loads_count(NULL);
	k = (struct counted){ 0, 0 };
	assert_int_equal(jobs_read_log(H.j, id, n - 3, JOBS_READ_PARSED, count_each, &k, NULL, &m),
			 2);
	assert_int_equal(loads.n, 2);
	loads_count(NULL);
	k = (struct counted){ 0, 2 };
	assert_int_equal(jobs_read_log(H.j, id, -1, JOBS_READ_PARSED, count_each, &k, NULL, &m), 2);
	assert_int_equal(k.n, 2);
	assert_int_equal(loads.n, 2);
	loads.on = false;
	finish();
}

static void test_sigkill(void **state)
{
	struct qual_msg m = { "" };
	const char *id, *l[4];
	uint64_t t0;

	(void)state;
	open_jobs();
	id = submit_kind("trap");
	RUN_UNTIL(job_lines(id, l, 4) == 1, 10);
	t0 = now_ms();
	assert_int_equal(jobs_cancel(H.j, id, &m), 0);
	RUN_UNTIL(finished(id), 9);
	/* It ignored SIGTERM: SIGKILL came after the 5 s grace. */
	assert_true(now_ms() - t0 >= 4900);
	assert_verdict(id, "cancelled", NULL);
	finish();
}

/* Writes a job into the state directory the way a daemon that died would
 * have left it; pinned as submit pins (both arms: the test ELF's real path
 * and hash), or not, as a quald before pins stored it. */
static void plant_job_pinned(struct store *s, const char *id, const char *kind,
			     const char *state, const char *log, bool pinned)
{
	struct submit_args a;
	struct qual_msg m = { "" };
	json_t *req, *st;
	char path[PATH_MAX + 64], real[PATH_MAX], hex[SHA256_HEX_SIZE];
	FILE *f;

	args_init(&a, lib("base"), lib(kind));
	req = request_submit_to_json(&a);
	if (pinned) {
		assert_non_null(realpath(JOBS_TEST_ELF, real));
		assert_int_equal(sha256_hash_file(real, hex, &m), 0);
		request_submit_set_pin(req, 0, real, hex);
		request_submit_set_pin(req, 1, real, hex);
	}
	st = json_pack("{s:s,s:s}", "state", state, "submitted", "2026-11-29T10:00:00Z");
	if (store_job_create(s, id, req, st, &m))
		fail_msg("plant '%s': %s", id, m.text);
	json_decref(req);
	json_decref(st);
	snprintf(path, sizeof path, "%s/jobs/%s/log.jsonl", H.state, id);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(log, f);
	fclose(f);
}

static void plant_job(struct store *s, const char *id, const char *kind,
		      const char *state, const char *log)
{
	plant_job_pinned(s, id, kind, state, log, true);
}

static void test_recovery(void **state)
{
	struct store *s = NULL;
	struct qual_msg m = { "" };
	struct collected c = { .n = 0 };
	char path[PATH_MAX + 64];
	const char *l[16], *id;
	json_t *o, *st;
	FILE *f;

	(void)state;
	assert_int_equal(store_open(H.state, &s, &m), 0);
	/* Running when the daemon died, in the middle of writing a line. */
	plant_job(s, "j000001", "ok", "running",
		  "{\"type\":\"start\",\"job\":\"j000001\",\"seq\":0}\n"
		  "{\"type\":\"case\",\"job\":\"j000001\",\"seq\":1}\n{\"type\":\"pa");
	plant_job(s, "j000002", "ok", "queued", "");
	plant_job(s, "j000003", "ok", "done",
		  "{\"type\":\"verdict\",\"verdict\":\"neutral\",\"job\":\"j000003\",\"seq\":0}\n");
	/* Its verdict was written, its state not yet. */
	plant_job(s, "j000004", "ok", "running",
		  "{\"type\":\"start\",\"job\":\"j000004\",\"seq\":0}\n"
		  "{\"type\":\"verdict\",\"verdict\":\"regression\",\"job\":\"j000004\",\"seq\":1}\n");
	plant_job(s, "j000005", "ok", "queued",
		  "{\"type\":\"verdict\",\"verdict\":\"cancelled\",\"job\":\"j000005\",\"seq\":0}\n");
	plant_job(s, "j000006", "ok", "queued", "");
	plant_job(s, "j000007", "ok", "queued", "");
	/* Unreadable: skipped, but its number is not handed out again. */
	snprintf(path, sizeof path, "%s/jobs/j000007/state.json", H.state);
	f = fopen(path, "w");
	fputs("{\"state\":", f);
	fclose(f);
	store_free(s);

	open_jobs();
	/* Settled before the loop runs, and not relayed (no one is there). */
	assert_int_equal(H.nlines, 0);
	assert_string_equal(state_of("j000001"), "interrupted");
	/* Its torn tail cut off and recorded (store.h) before the verdict. */
	assert_int_equal(jobs_read_log(H.j, "j000001", -1, JOBS_READ_BYTES, collect, &c, NULL, &m), 4);
	assert_string_equal(c.lines[2], "{\"type\":\"error\",\"stage\":\"setup\","
			    "\"code\":\"interrupted\","
			    "\"arm\":null,\"case\":null,\"message\":\"stored log was torn at "
			    "byte 81 (incomplete record): 11 bytes dropped\",\"job\":\"j000001\","
			    "\"seq\":2}");
	o = json_loads(c.lines[3], 0, NULL);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "verdict")), "interrupted");
	assert_string_equal(json_string_value(json_object_get(o, "message")),
			    "the daemon stopped while this job ran");
	assert_int_equal(json_integer_value(json_object_get(o, "seq")), 3);
	assert_string_equal(json_string_value(json_object_get(o, "job")), "j000001");
	json_decref(o);
	collected_free(&c);
	st = state_file("j000001");
	assert_string_equal(json_string_value(json_object_get(st, "state")), "interrupted");
	assert_string_equal(json_string_value(json_object_get(st, "verdict")), "interrupted");
	assert_true(json_is_string(json_object_get(st, "finished")));
	json_decref(st);
	assert_string_equal(state_of("j000003"), "done");
	assert_string_equal(state_of("j000004"), "done");
	st = state_file("j000004");
	assert_string_equal(json_string_value(json_object_get(st, "verdict")), "regression");
	json_decref(st);
	assert_string_equal(state_of("j000005"), "cancelled");
	assert_int_equal(jobs_read_log(H.j, "j000005", -1, JOBS_READ_BYTES, NULL, NULL, NULL, &m), 1);
	assert_int_equal(jobs_read_log(H.j, "j000007", -1, JOBS_READ_BYTES, NULL, NULL, NULL, &m), QUAL_ENOENT);

	/* The queued ones run, in order. */
	assert_string_equal(state_of("j000002"), "queued");
	RUN_UNTIL(finished("j000002") && finished("j000006"), 10);
	assert_verdict("j000002", "neutral", NULL);
	assert_verdict("j000006", "neutral", NULL);
	assert_int_equal(job_lines("j000002", l, 16), 5);
	assert_log_matches("j000002");
	assert_false(H.seq_gap);
	id = submit_kind("ok");
	assert_string_equal(id, "j000008");
	RUN_UNTIL(finished(id), 10);

	/* ids after j000003, for a watch that resumes there. */
	{
		char **ids;
		int n;
		assert_int_equal(jobs_ids_after(H.j, "j000003", &ids, &n), 0);
		assert_int_equal(n, 4);
		assert_string_equal(ids[0], "j000004");
		assert_string_equal(ids[3], "j000008");
		jobs_ids_free(ids, n);
		assert_int_equal(jobs_ids_after(H.j, NULL, &ids, &n), 0);
		assert_int_equal(n, 7);
		jobs_ids_free(ids, n);
		assert_int_equal(jobs_ids_after(H.j, "nope", &ids, &n), QUAL_EINVAL);
	}
	o = jobs_list_json(H.j, 2, NULL, JOBS_LIST_MAX_BYTES);
	assert_int_equal(json_array_size(json_object_get(o, "jobs")), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
		json_object_get(o, "jobs"), 0), "job")), "j000008");
	json_decref(o);
	finish();
}

/* Appends checked records (store.h) to a planted job's log. */
static off_t plant_lines(struct store *s, const char *id, const char *const *lines)
{
	struct qual_msg m = { "" };
	struct stat st;
	char path[PATH_MAX + 64];
	int fd;

	assert_int_equal(store_log_open(s, id, &fd, &m), 0);
	for (; *lines; lines++)
		assert_int_equal(store_log_append(fd, NULL, *lines, strlen(*lines), false, &m), 0);
	close(fd);
	snprintf(path, sizeof path, "%s/jobs/%s/log.jsonl", H.state, id);
	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

static void plant_state(struct store *s, const char *id, const char *verdict)
{
	struct qual_msg m = { "" };
	json_t *st = json_pack("{s:s,s:s,s:s,s:s}", "state", "done", "verdict", verdict,
			       "submitted", "2026-11-29T10:00:00Z", "finished",
			       "2026-11-29T10:01:00Z");

	assert_int_equal(store_state_write(s, id, st, &m), 0);
	json_decref(st);
}

static void flip_byte(const char *id, off_t at)
{
	char path[PATH_MAX + 64];
	FILE *f;
	int c;

	snprintf(path, sizeof path, "%s/jobs/%s/log.jsonl", H.state, id);
	f = fopen(path, "r+");
	assert_non_null(f);
	fseek(f, at, SEEK_SET);
	c = fgetc(f);
	fseek(f, at, SEEK_SET);
	fputc(c ^ 0x01, f);
	fclose(f);
}

static json_t *list_entry(const char *id)
{
	json_t *list = jobs_list_json(H.j, 100, NULL, JOBS_LIST_MAX_BYTES), *e, *found = NULL;
	size_t i;

	json_array_foreach(json_object_get(list, "jobs"), i, e)
		if (!strcmp(json_string_value(json_object_get(e, "job")), id))
			found = json_incref(e);
	json_decref(list);
	assert_non_null(found);
	return found;
}

/* A corrupt record in the middle of a finished job's log: the records after
 * it are kept (its verdict with them), the job is damaged (state.json and
 * list say so) and a line at the end of its log names the lost bytes; once,
 * not again at the next start. A finished job whose verdict record was lost
 * gets the daemon's error verdict: no job is left without one. */
static void test_recovery_damaged(void **state)
{
	const char *a[] = {
		"{\"type\":\"start\",\"job\":\"j000001\",\"seq\":0}",
		"{\"type\":\"case\",\"job\":\"j000001\",\"seq\":1}",
		"{\"type\":\"verdict\",\"verdict\":\"neutral\",\"job\":\"j000001\",\"seq\":2}",
		NULL,
	};
	const char *b[] = {
		"{\"type\":\"start\",\"job\":\"j000002\",\"seq\":0}",
		"{\"type\":\"verdict\",\"verdict\":\"regression\",\"job\":\"j000002\",\"seq\":1}",
		NULL,
	};
	struct store *s = NULL;
	struct qual_msg m = { "" };
	struct collected c = { .n = 0 };
	char where[128];
	off_t one, two;
	json_t *o, *st;

	(void)state;
	assert_int_equal(store_open(H.state, &s, &m), 0);
	plant_job(s, "j000001", "ok", "done", "");
	plant_state(s, "j000001", "neutral");
	one = plant_lines(s, "j000001", (const char *[]){ a[0], NULL });
	two = plant_lines(s, "j000001", (const char *[]){ a[1], NULL });
	plant_lines(s, "j000001", (const char *[]){ a[2], NULL });
	flip_byte("j000001", one + 10);
	plant_job(s, "j000002", "ok", "done", "");
	plant_state(s, "j000002", "regression");
	plant_lines(s, "j000002", (const char *[]){ b[0], NULL });
	flip_byte("j000002", plant_lines(s, "j000002", (const char *[]){ b[1], NULL }) - 20);
	store_free(s);

	open_jobs();
	assert_string_equal(state_of("j000001"), "done");
	o = list_entry("j000001");
	assert_string_equal(json_string_value(json_object_get(o, "verdict")), "neutral");
	/* Its log ends with its verdict: start-up read its last record only,
	 * and its middle is checked off the loop, after the start. */
	assert_false(json_is_true(json_object_get(o, "damaged")));
	json_decref(o);
	/* A show before that check counts the lines written (3), without a
	 * whole read on the loop; its cursor then hands out 2 (the lost
	 * record's line is not there), which the show takes as the end of a
	 * reply it cannot complete (fanout.c). */
	{
		struct jobs_cursor *cur = NULL;
		long lines = -1;

		assert_int_equal(jobs_cursor_open(H.j, "j000001", -1, JOBS_READ_BYTES, true, &cur,
						  &lines, NULL, &m), 0);
		assert_int_equal(lines, 3);
		assert_int_equal(jobs_read_log(H.j, "j000001", -1, JOBS_READ_BYTES, NULL, NULL,
					       NULL, &m), 2);
		jobs_cursor_free(cur);
	}
	RUN_UNTIL(jobs_read_log(H.j, "j000001", -1, JOBS_READ_BYTES, NULL, NULL, NULL, &m) == 3,
		  10);
	o = list_entry("j000001");
	assert_true(json_is_true(json_object_get(o, "damaged")));
	json_decref(o);
	assert_int_equal(jobs_read_log(H.j, "j000001", -1, JOBS_READ_BYTES, collect, &c, NULL, &m), 3);
	assert_string_equal(c.lines[0], a[0]);
	assert_string_equal(c.lines[1], a[2]);
	o = json_loads(c.lines[2], 0, NULL);
	assert_string_equal(json_string_value(json_object_get(o, "type")), "error");
	assert_string_equal(json_string_value(json_object_get(o, "code")), "internal");
	assert_int_equal(json_integer_value(json_object_get(o, "seq")), 3);
	snprintf(where, sizeof where, "stored log lost 1 record (%lld bytes) that did not "
		 "check out, skipped: bytes %lld-%lld (check mismatch)",
		 (long long)(two - one), (long long)one, (long long)two);
	assert_string_equal(json_string_value(json_object_get(o, "message")), where);
	json_decref(o);
	collected_free(&c);
	/* Resuming after seq 1 (the lost one) gives what follows it. */
	assert_int_equal(jobs_read_log(H.j, "j000001", 1, JOBS_READ_BYTES, NULL, NULL, NULL, &m), 2);
	st = state_file("j000001");
	assert_true(json_is_true(json_object_get(st, "damaged")));
	assert_string_equal(json_string_value(json_object_get(st, "verdict")), "neutral");
	json_decref(st);

	/* Its verdict lost (a torn tail here): the daemon's error verdict. */
	o = list_entry("j000002");
	assert_string_equal(json_string_value(json_object_get(o, "state")), "done");
	assert_string_equal(json_string_value(json_object_get(o, "verdict")), "error");
	assert_true(json_is_true(json_object_get(o, "damaged")));
	json_decref(o);
	assert_int_equal(jobs_read_log(H.j, "j000002", -1, JOBS_READ_BYTES, collect, &c, NULL, &m), 3);
	o = json_loads(c.lines[2], 0, NULL);
	assert_string_equal(json_string_value(json_object_get(o, "type")), "verdict");
	assert_string_equal(json_string_value(json_object_get(o, "verdict")), "error");
	assert_non_null(strstr(json_string_value(json_object_get(o, "message")),
			       "verdict record of this job was lost"));
	json_decref(o);
	collected_free(&c);

	/* The next start adds nothing. */
	close_jobs();
	open_jobs();
	assert_int_equal(jobs_read_log(H.j, "j000001", -1, JOBS_READ_BYTES, NULL, NULL, NULL, &m), 3);
	assert_int_equal(jobs_read_log(H.j, "j000002", -1, JOBS_READ_BYTES, NULL, NULL, NULL, &m), 3);
	o = list_entry("j000001");
	assert_true(json_is_true(json_object_get(o, "damaged")));
	json_decref(o);
	finish();
}

/* The lines of a job's stored log (what recovery left): how many are
 * verdicts, and how many are notes of lost records. */
static void count_log(const char *id, int *lines, int *verdicts, int *notes)
{
	struct collected c = { .n = 0 };
	struct qual_msg m = { "" };

	*lines = jobs_read_log(H.j, id, -1, JOBS_READ_BYTES, collect, &c, NULL, &m);
	*verdicts = *notes = 0;
	for (int i = 0; i < c.n; i++) {
		json_t *o = json_loads(c.lines[i], 0, NULL);
		const char *type = json_string_value(json_object_get(o, "type"));
		const char *msg = json_string_value(json_object_get(o, "message"));

		assert_non_null(type);
		*verdicts += !strcmp(type, "verdict");
		*notes += !strcmp(type, "error") && msg && !strncmp(msg, "stored log lost ", 16);
		json_decref(o);
	}
	collected_free(&c);
}

/* A running job whose worker's verdict was logged, then a start that found
 * a lost middle record wrote its note after the verdict and died before
 * the state said done: the verdict line is found though it is not the last
 * line, the note is not written again, and no second ("interrupted")
 * verdict follows. */
static void test_recovery_noted(void **state)
{
	const char *a[] = {
		"{\"type\":\"start\",\"job\":\"j000001\",\"seq\":0}",
		"{\"type\":\"case\",\"job\":\"j000001\",\"seq\":1}",
		"{\"type\":\"verdict\",\"verdict\":\"improvement\",\"job\":\"j000001\","
		"\"seq\":2}",
	};
	struct store *s = NULL;
	struct qual_msg m = { "" };
	char note[512], where[256], *dumped;
	int lines, verdicts, notes;
	off_t one, two;
	json_t *o, *st;

	(void)state;
	assert_int_equal(store_open(H.state, &s, &m), 0);
	plant_job(s, "j000001", "ok", "running", "");
	one = plant_lines(s, "j000001", (const char *[]){ a[0], NULL });
	two = plant_lines(s, "j000001", (const char *[]){ a[1], NULL });
	plant_lines(s, "j000001", (const char *[]){ a[2], NULL });
	snprintf(where, sizeof where, "stored log lost 1 record (%lld bytes) that did not "
		 "check out, skipped: bytes %lld-%lld (check mismatch)",
		 (long long)(two - one), (long long)one, (long long)two);
	o = json_pack("{s:s,s:s,s:s,s:n,s:n,s:s,s:s,s:i}", "type", "error", "stage", "setup",
		      "code", "internal", "arm", "case", "message", where, "job", "j000001",
		      "seq", 3);
	dumped = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	snprintf(note, sizeof note, "%s", dumped);
	free(dumped);
	json_decref(o);
	plant_lines(s, "j000001", (const char *[]){ note, NULL });
	flip_byte("j000001", one + 10);
	store_free(s);

	open_jobs();
	assert_string_equal(state_of("j000001"), "done");
	count_log("j000001", &lines, &verdicts, &notes);
	assert_int_equal(lines, 3);
	assert_int_equal(verdicts, 1);
	assert_int_equal(notes, 1);
	o = list_entry("j000001");
	assert_string_equal(json_string_value(json_object_get(o, "verdict")), "improvement");
	assert_true(json_is_true(json_object_get(o, "damaged")));
	json_decref(o);
	st = state_file("j000001");
	assert_string_equal(json_string_value(json_object_get(st, "state")), "done");
	assert_string_equal(json_string_value(json_object_get(st, "verdict")), "improvement");
	json_decref(st);
	/* And the next start adds nothing either. */
	close_jobs();
	open_jobs();
	count_log("j000001", &lines, &verdicts, &notes);
	assert_int_equal(lines, 3);
	finish();
}

/* A queued job stored by a quald before pins (request.json without the
 * pin fields) would have its worker resolve the library paths again: it is
 * ended at start with the daemon's error, never run; a pinned job queued
 * after it runs. */
static void test_recovery_unpinned(void **state)
{
	const char *why = "stored without pinned libraries by an older quald: "
			  "submit it again";
	struct store *s = NULL;
	struct qual_msg m = { "" };
	struct collected c = { .n = 0 };
	const char *l[16];
	json_t *o, *st;

	(void)state;
	assert_int_equal(store_open(H.state, &s, &m), 0);
	plant_job_pinned(s, "j000001", "ok", "queued", "", false);
	plant_job(s, "j000002", "ok", "queued", "");
	store_free(s);

	open_jobs();
	assert_string_equal(state_of("j000001"), "done");
	RUN_UNTIL(finished("j000002"), 10);
	assert_verdict("j000002", "neutral", NULL);
	/* No worker ran it: nothing relayed, no start line, only the
	 * daemon's error and verdict. */
	assert_int_equal(job_lines("j000001", l, 16), 0);
	assert_int_equal(jobs_read_log(H.j, "j000001", -1, JOBS_READ_BYTES, collect, &c, NULL, &m), 2);
	o = json_loads(c.lines[0], 0, NULL);
	assert_string_equal(json_string_value(json_object_get(o, "type")), "error");
	assert_string_equal(json_string_value(json_object_get(o, "code")), "usage");
	assert_string_equal(json_string_value(json_object_get(o, "message")), why);
	json_decref(o);
	o = json_loads(c.lines[1], 0, NULL);
	assert_string_equal(json_string_value(json_object_get(o, "type")), "verdict");
	assert_string_equal(json_string_value(json_object_get(o, "verdict")), "error");
	assert_string_equal(json_string_value(json_object_get(o, "message")), why);
	json_decref(o);
	collected_free(&c);
	st = state_file("j000001");
	assert_string_equal(json_string_value(json_object_get(st, "state")), "done");
	assert_string_equal(json_string_value(json_object_get(st, "verdict")), "error");
	assert_true(json_is_null(json_object_get(st, "started")));
	json_decref(st);
	finish();
}

static void test_submit_refusals(void **state)
{
	struct submit_args a;
	char *bad_case[] = { "gemm_f16-256x512x256", "nope-1", NULL };
	char path[PATH_MAX + 64];
	const char *text;
	FILE *f;

	(void)state;
	H.cfg.submit_check_timeout_s = 0.5;
	open_jobs();
	/* At once, without a callback. */
	args_init(&a, lib("base"), "/nonexistent/libnvrtc.so");
	assert_int_equal(submit_args_wait(&a), QUAL_ENOENT);
	assert_string_equal(H.sub_message, "cannot load compiler '/nonexistent/libnvrtc.so': no such file");
	args_init(&a, H.libs, lib("ok"));
	assert_int_equal(submit_args_wait(&a), QUAL_EINVAL);
	assert_non_null(strstr(H.sub_message, "': is a directory"));
	snprintf(path, sizeof path, "%s/readme.txt", H.libs);
	f = fopen(path, "w");
	fputs("not a library\n", f);
	fclose(f);
	args_init(&a, lib("base"), path);
	assert_int_equal(submit_args_wait(&a), QUAL_EINVAL);
	assert_non_null(strstr(H.sub_message, "readme.txt': not an ELF shared object"));
	args_init(&a, lib("base"), lib("ok"));
	a.settings.cases = bad_case;
	assert_int_equal(submit_args_wait(&a), QUAL_EINVAL);
	assert_string_equal(H.sub_message, "unknown case 'nope-1'");
	args_init(&a, lib("base"), lib("ok"));
	a.settings.seed = 1LL << 40;
	assert_int_equal(submit_args_wait(&a), QUAL_EINVAL);
	assert_non_null(strstr(H.sub_message, "'seed'"));

	/* Through the callback, with the helper's words. */
	args_init(&a, lib("base"), lib("helpernoabi"));
	assert_int_equal(submit_args_wait(&a), QUAL_EABI);
	text = H.sub_message;
	assert_non_null(strstr(text, "helpernoabi/libcompiler.so': no nvrtc or hiprtc entry points"));
	assert_string_equal(H.sub_job, "");
	args_init(&a, lib("base"), lib("hiprtc"));
	assert_int_equal(submit_args_wait(&a), QUAL_EINVAL);
	assert_string_equal(H.sub_message,
			    "baseline is nvrtc but candidate is hiprtc: both must use one abi");

	/* A library that crashes or hangs while loading is a result, not a
	 * refusal: the job runs (the fake worker knows no such kind: error). */
	args_init(&a, lib("base"), lib("helpercrash"));
	assert_int_equal(submit_args_wait(&a), 0);
	assert_string_equal(H.sub_job, "j000001");
	args_init(&a, lib("base"), lib("helperhang"));
	assert_int_equal(submit_args_wait(&a), 0);
	assert_string_equal(H.sub_job, "j000002");
	RUN_UNTIL(finished("j000001") && finished("j000002"), 10);
	/* Nothing refused was stored; no check left a folder behind. */
	assert_int_equal(jobs_read_log(H.j, "j000003", -1, JOBS_READ_BYTES, NULL, NULL, NULL, NULL), QUAL_ENOENT);
	RUN_UNTIL(dir_empty(H.tmp), 5); /* removed in the thread pool */
	finish();
}

static void test_submit_real_helper(void **state)
{
	struct submit_args a;

	(void)state;
	H.cfg.compile_helper = JOBS_REAL_HELPER;
	open_jobs();
	args_init(&a, JOBS_TEST_ELF, JOBS_TEST_ELF);
	assert_int_equal(submit_args_wait(&a), QUAL_EABI);
	assert_string_equal(H.sub_message, "cannot load compiler '" JOBS_TEST_ELF
			    "': no nvrtc or hiprtc entry points");
	if (access(JOBS_TEST_NVRTC, R_OK) == 0) {
		args_init(&a, JOBS_TEST_NVRTC, JOBS_TEST_NVRTC);
		assert_int_equal(submit_args_wait(&a), 0);
		assert_string_equal(H.sub_job, "j000001");
		/* The fake worker does not know this one: an error verdict. */
		RUN_UNTIL(finished("j000001"), 10);
		args_init(&a, JOBS_TEST_NVRTC, JOBS_TEST_ELF);
		assert_int_equal(submit_args_wait(&a), QUAL_EABI);
	}
	RUN_UNTIL(dir_empty(H.tmp), 5); /* removed in the thread pool */
	finish();
}

static void test_close_running(void **state)
{
	const char *a, *b, *l[16];
	json_t *st;

	(void)state;
	open_jobs();
	a = submit_kind("hang");
	RUN_UNTIL(job_lines(a, l, 16) == 1, 10);
	b = submit_kind("ok");
	close_jobs();
	/* The running job was stopped and recorded; its verdict went out. */
	assert_int_equal(job_lines(a, l, 16), 2);
	assert_verdict(a, "interrupted", "the daemon stopped while this job ran");
	st = state_file(a);
	assert_string_equal(json_string_value(json_object_get(st, "state")), "interrupted");
	json_decref(st);
	/* The queued one stays queued for the next start. */
	st = state_file(b);
	assert_string_equal(json_string_value(json_object_get(st, "state")), "queued");
	json_decref(st);
	assert_int_equal(job_lines(b, l, 16), 0);
	finish();

	/* The next daemon runs it. */
	uv_timer_start(&H.watchdog, on_watchdog, 50, 50);
	open_jobs();
	assert_string_equal(state_of(a), "interrupted");
	RUN_UNTIL(finished(b), 10);
	assert_verdict(b, "neutral", NULL);
	assert_log_matches(b);
	finish();
}

/* A shutdown while the submits' libraries are being hashed (in libuv's
 * thread pool; the loop has not run since the submits, so no hash has been
 * called back): each submit gets exactly one callback, refused, none
 * starts an identify child, and the close ends with every hash called
 * back (finish: uv_loop_close is 0). */
/* The hashes of a submit have the check's time limit too (a stalled
 * filesystem): a limit that is up before they are in refuses the submit,
 * names the library, and the submit still goes cleanly. */
static void test_hash_time_limit(void **state)
{
	struct submit_args a;
	struct qual_msg m = { "" };

	(void)state;
	H.cfg.submit_check_timeout_s = 0.0001; /* a 0 ms timer: it runs before
						* the pool's answer is taken */
	open_jobs();
	args_init(&a, lib("base"), lib("ok"));
	assert_int_equal(jobs_submit(H.j, &a, on_submit, NULL, &m), 0);
	RUN_UNTIL(H.sub_calls == 1, 5);
	assert_int_equal(H.sub_status, QUAL_ETIMEOUT);
	if (!strstr(H.sub_message, "cannot hash compiler '") ||
	    !strstr(H.sub_message, "': no answer within 0.0001 s"))
		fail_msg("submit refused with '%s'", H.sub_message);
	close_jobs();
	assert_int_equal(H.sub_calls, 1);
	RUN_UNTIL(dir_empty(H.tmp), 5); /* removed in the thread pool */
	finish();
}

static void test_close_during_hash(void **state)
{
	struct submit_args a;
	struct qual_msg m = { "" };
	int i;

	(void)state;
	open_jobs();
	for (i = 0; i < 8; i++) {
		args_init(&a, lib("base"), lib("ok"));
		assert_int_equal(jobs_submit(H.j, &a, on_submit, NULL, &m), 0);
	}
	assert_int_equal(H.sub_calls, 0);
	close_jobs();
	assert_int_equal(H.sub_calls, 8);
	assert_true(H.sub_status < 0);
	assert_string_equal(H.sub_message, "quald is shutting down");
	RUN_UNTIL(dir_empty(H.tmp), 5); /* removed in the thread pool */
	finish();
	assert_int_equal(H.sub_calls, 8);
}

static void test_close_during_check(void **state)
{
	struct submit_args a;
	struct qual_msg m = { "" };
	uint64_t t0;

	(void)state;
	open_jobs();
	args_init(&a, lib("base"), lib("helperhang"));
	assert_int_equal(jobs_submit(H.j, &a, on_submit, NULL, &m), 0);
	for (int i = 0; i < 3; i++)
		uv_run(&H.loop, UV_RUN_NOWAIT);
	assert_int_equal(H.sub_calls, 0);
	t0 = now_ms();
	close_jobs();
	assert_true(now_ms() - t0 < 2000);
	assert_int_equal(H.sub_calls, 1);
	assert_true(H.sub_status < 0);
	assert_string_equal(H.sub_message, "quald is shutting down");
	RUN_UNTIL(dir_empty(H.tmp), 5); /* removed in the thread pool */
	finish();
}

static void test_spawn_failure(void **state)
{
	const char *a, *b;

	(void)state;
	H.cfg.worker = "/nonexistent/qual-run";
	open_jobs();
	a = submit_kind("ok");
	b = submit_kind("ok");
	RUN_UNTIL(finished(a) && finished(b), 10);
	assert_verdict(a, "error", "cannot start worker '/nonexistent/qual-run': No such file");
	assert_verdict(b, "error", "cannot start worker");
	assert_string_equal(state_of(a), "done");
	assert_log_matches(a);
	finish();

	/* Without its compile helper a submit is refused once its libraries
	 * are hashed (through the callback), in rtc.h's words
	 * (rtc_identify_start), and nothing of the check is left. */
	uv_timer_start(&H.watchdog, on_watchdog, 50, 50);
	H.cfg.compile_helper = "/nonexistent/qual-compile";
	open_jobs();
	{
		struct submit_args s;
		args_init(&s, lib("base"), lib("ok"));
		assert_int_equal(submit_args_wait(&s), QUAL_ENOENT);
		assert_string_equal(H.sub_message, "cannot start compiler helper "
				    "'/nonexistent/qual-compile': No such file or directory");
	}
	RUN_UNTIL(dir_empty(H.tmp), 5); /* removed in the thread pool */
	finish();
}

static void test_close_idle(void **state)
{
	struct submit_args a;
	struct qual_msg m = { "" };

	(void)state;
	open_jobs();
	H.in_close = true;
	jobs_close(H.j, on_closed, NULL);
	H.in_close = false;
	assert_false(H.closed);
	RUN_UNTIL(H.closed, 2);
	H.j = NULL;
	finish();
	/* Opening the same state directory again works; a submit after close
	 * is not possible (the handle is gone), so check the refusal on a
	 * second instance that is closing. */
	uv_timer_start(&H.watchdog, on_watchdog, 50, 50);
	open_jobs();
	jobs_close(H.j, on_closed, NULL);
	args_init(&a, lib("base"), lib("ok"));
	assert_int_equal(jobs_submit(H.j, &a, on_submit, NULL, &m), QUAL_EINVAL);
	assert_string_equal(m.text, "quald is shutting down");
	H.closed = false;
	RUN_UNTIL(H.closed, 2);
	H.j = NULL;
	finish();
}

/* The job log size limit: a worker whose next line would take the log past
 * it is killed, and the job ends with an error verdict naming the limit. The
 * fake "ok" worker writes five lines of about 100-350 bytes each. */
static void test_log_limit(void **state)
{
	const char *id;
	long lines;

	(void)state;
	H.cfg.max_log_bytes = 450;
	open_jobs();
	id = run_kind("ok");
	assert_string_equal(state_of(id), "done");
	assert_verdict(id, "error", "worker stopped: the job log reached its limit of 450 bytes");
	assert_log_matches(id);
	/* The start line fits, the rest do not: start + the daemon's verdict. */
	lines = jobs_read_log(H.j, id, -1, JOBS_READ_BYTES, NULL, NULL, &(enum job_state){JOB_STATE_UNKNOWN}, &(struct qual_msg){""});
	assert_true(lines >= 2 && lines < 5);
	/* With room, the same worker's job ends with the engine's verdict.
	 * The killed fake may have left its slot marker (SIGKILL skips its
	 * trap). */
	{
		char marker[PATH_MAX + 32];
		snprintf(marker, sizeof marker, "%s/slot-none", H.fake);
		rmdir(marker);
		snprintf(marker, sizeof marker, "%s/slot-cpu", H.fake);
		rmdir(marker);
	}
	close_jobs();
	H.cfg.max_log_bytes = 1 << 20;
	open_jobs();
	id = run_kind("ok");
	assert_verdict(id, "neutral", NULL);
	finish();
}

/* The library policy at submit (policy.h; its rules are unit-tested in
 * test_policy): the fakes' libraries are symlinks into the build folder, so
 * with their own folder as the only root they resolve outside it; a copy in
 * a world-writable folder under it is refused; with the build folder as a
 * root the submit goes through. */
static void test_policy(void **state)
{
	const char *roots[1];
	char elfdir[PATH_MAX], copy[PATH_MAX + 32], cmd[3 * PATH_MAX];
	struct submit_args a;

	(void)state;
	roots[0] = H.libs;
	H.cfg.allow_roots = roots;
	H.cfg.nallow_roots = 1;
	open_jobs();
	args_init(&a, lib("base"), lib("ok"));
	assert_int_equal(submit_args_wait(&a), QUAL_EINVAL);
	assert_non_null(strstr(H.sub_message, "resolves to '"));
	assert_non_null(strstr(H.sub_message, "', outside the allowed roots"));
	snprintf(copy, sizeof copy, "%s/ww", H.libs);
	assert_int_equal(mkdir(copy, 0777), 0);
	assert_int_equal(chmod(copy, 0777), 0);
	snprintf(copy, sizeof copy, "%s/ww/libcopy.so", H.libs);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", JOBS_TEST_ELF, copy);
	assert_int_equal(system(cmd), 0);
	args_init(&a, copy, copy);
	assert_int_equal(submit_args_wait(&a), QUAL_EINVAL);
	assert_non_null(strstr(H.sub_message, "/ww' is world-writable"));
	close_jobs();
	snprintf(elfdir, sizeof elfdir, "%s", JOBS_TEST_ELF);
	*strrchr(elfdir, '/') = '\0';
	roots[0] = elfdir;
	open_jobs();
	args_init(&a, lib("base"), lib("ok"));
	assert_int_equal(submit_args_wait(&a), 0);
	RUN_UNTIL(finished(H.sub_job), 10);
	assert_verdict(H.sub_job, "neutral", NULL);
	finish();
}

/* Quarantine: three jobs whose worker dies by a signal (the fake "crash"
 * kind; "candfail" writes a candidate error line and crashes) are three
 * strikes against the candidate's SHA-256; then a submit naming a file with
 * that hash is refused at once, with the hash and the way to clear it, also
 * after a restart (quarantine.json); clearing lets it through. Every fake
 * library is a link to one ELF file, so the baseline shares the hash. */
static void test_quarantine(void **state)
{
	struct submit_args a;
	struct qual_msg m = { "" };
	json_t *q, *e;
	char sha[65];
	const char *id;
	int i;

	(void)state;
	open_jobs();
	for (i = 0; i < 2; i++) {
		id = run_kind(i ? "candfail" : "crash");
	}
	/* Two strikes: not yet quarantined. */
	q = jobs_quarantine_json(H.j);
	assert_int_equal(json_array_size(json_object_get(q, "quarantine")), 1);
	e = json_array_get(json_object_get(q, "quarantine"), 0);
	assert_int_equal(json_integer_value(json_object_get(e, "strikes")), 2);
	assert_false(json_boolean_value(json_object_get(e, "quarantined")));
	snprintf(sha, sizeof sha, "%s", json_string_value(json_object_get(e, "sha256")));
	json_decref(q);
	assert_int_equal(strlen(sha), 64);
	/* A cancelled or timed-out job is no strike. */
	id = submit_kind("hang");
	RUN_UNTIL(strcmp(state_of(id), "running") == 0, 10);
	assert_int_equal(jobs_cancel(H.j, id, &m), 0);
	RUN_UNTIL(finished(id), 10);
	args_init(&a, lib("base"), lib("ok"));
	assert_int_equal(submit_args_wait(&a), 0);
	RUN_UNTIL(finished(H.sub_job), 10);
	id = run_kind("crash");
	args_init(&a, lib("base"), lib("ok"));
	assert_int_equal(submit_args_wait(&a), QUAL_EINVAL);
	assert_non_null(strstr(H.sub_message, "is quarantined after 3 crashes; "
			       "clear with: qualctl quarantine clear "));
	assert_non_null(strstr(H.sub_message, sha));
	assert_non_null(strstr(H.sub_message, "compiler '"));
	/* Kept across a restart. */
	close_jobs();
	open_jobs();
	assert_int_equal(submit_args_wait(&a), QUAL_EINVAL);
	assert_non_null(strstr(H.sub_message, "quarantined"));
	assert_int_equal(jobs_quarantine_clear(H.j, "0123", &m), QUAL_ENOENT);
	assert_int_equal(jobs_quarantine_clear(H.j, sha, &m), 0);
	assert_int_equal(submit_args_wait(&a), 0);
	RUN_UNTIL(finished(H.sub_job), 10);
	assert_verdict(H.sub_job, "neutral", NULL);
	q = jobs_quarantine_json(H.j);
	assert_int_equal(json_array_size(json_object_get(q, "quarantine")), 0);
	json_decref(q);
	finish();
}

/* Decisions read codes, not words (lines.h). A candidate error line with
 * code compile_failed whose message reads like a crash ("crashed: killed by
 * signal", the words the daemon once searched for) blames the candidate but
 * is no crash: no strike, nor is one coded compile_no_report (a compiler
 * child that exited without its report), nor one coded compile_killed (arm
 * null: a child another process killed). One with code compile_crashed whose message says
 * nothing of a crash is a crash: three of them quarantine the library.
 * Both workers end without a verdict, so the daemon's verdict says fail:
 * their error line blamed the candidate. */
static void test_crash_code(void **state)
{
	struct submit_args a;
	const char *id, *l[8];
	json_t *q, *e, *o;
	int i, n;

	(void)state;
	open_jobs();
	id = run_kind("compfailmsg");
	n = job_lines(id, l, 8);
	assert_int_equal(n, 3);
	o = json_loads(l[1], 0, NULL);
	assert_string_equal(json_string_value(json_object_get(o, "code")), "compile_failed");
	assert_non_null(strstr(json_string_value(json_object_get(o, "message")),
			       "crashed: killed by signal "));
	json_decref(o);
	assert_verdict(id, "fail", "worker exited with status 3 without a verdict");
	q = jobs_quarantine_json(H.j);
	assert_int_equal(json_array_size(json_object_get(q, "quarantine")), 0);
	json_decref(q);
	/* A compiler child that exited without its report is no crash either
	 * (a full disk, a helper of another version are qual's trouble). */
	id = run_kind("compnoreport");
	n = job_lines(id, l, 8);
	assert_int_equal(n, 3);
	o = json_loads(l[1], 0, NULL);
	assert_string_equal(json_string_value(json_object_get(o, "code")), "compile_no_report");
	json_decref(o);
	assert_verdict(id, "fail", "worker exited with status 3 without a verdict");
	q = jobs_quarantine_json(H.j);
	assert_int_equal(json_array_size(json_object_get(q, "quarantine")), 0);
	json_decref(q);
	/* A compiler child that another process killed (compile_killed, arm
	 * null, whatever its message says of signals) blames no one and is no
	 * crash: the job is an error, no strike. */
	id = run_kind("compkilled");
	n = job_lines(id, l, 8);
	assert_int_equal(n, 3);
	o = json_loads(l[1], 0, NULL);
	assert_string_equal(json_string_value(json_object_get(o, "code")), "compile_killed");
	assert_true(json_is_null(json_object_get(o, "arm")));
	json_decref(o);
	assert_verdict(id, "error", "worker exited with status 3 without a verdict");
	q = jobs_quarantine_json(H.j);
	assert_int_equal(json_array_size(json_object_get(q, "quarantine")), 0);
	json_decref(q);

	for (i = 1; i <= 3; i++) {
		id = run_kind("compcrash");
		n = job_lines(id, l, 8);
		assert_int_equal(n, 3);
		o = json_loads(l[1], 0, NULL);
		assert_string_equal(json_string_value(json_object_get(o, "code")),
				    "compile_crashed");
		assert_null(strstr(json_string_value(json_object_get(o, "message")), "crash"));
		assert_null(strstr(json_string_value(json_object_get(o, "message")), "signal"));
		json_decref(o);
		assert_verdict(id, "fail", "worker exited with status 3 without a verdict");
		q = jobs_quarantine_json(H.j);
		assert_int_equal(json_array_size(json_object_get(q, "quarantine")), 1);
		e = json_array_get(json_object_get(q, "quarantine"), 0);
		assert_int_equal(json_integer_value(json_object_get(e, "strikes")), i);
		assert_int_equal(json_boolean_value(json_object_get(e, "quarantined")), i == 3);
		assert_string_equal(json_string_value(json_object_get(e, "library")),
				    lib("compcrash"));
		json_decref(q);
	}
	args_init(&a, lib("base"), lib("ok"));
	assert_int_equal(submit_args_wait(&a), QUAL_EINVAL);
	assert_non_null(strstr(H.sub_message, "is quarantined after 3 crashes"));
	finish();
}

/* GPU health (fake_health_worker.sh): after a job that reported "gpu":"hung"
 * the slot's GPU is checked (qual-run --health --device N) before its next
 * job. A passing check puts it back in service: the next job runs. */
static int health_calls(void)
{
	char path[PATH_MAX + 32], line[64];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof path, "%s/health-calls", H.fake);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		assert_string_equal(line, "7\n");
		n++;
	}
	fclose(f);
	return n;
}

static void test_health_pass(void **state)
{
	const char *id;

	(void)state;
	H.devices[0] = 7;
	H.cfg.devices = H.devices;
	H.cfg.worker = JOBS_TEST_HEALTH_WORKER;
	setenv("FAKE_HEALTH_EXIT", "0", 1);
	open_jobs();
	id = run_kind("ok");
	assert_int_equal(health_calls(), 0);
	id = run_kind("gpuhung");
	assert_verdict(id, "error", NULL);
	id = run_kind("ok");
	assert_verdict(id, "neutral", NULL);
	assert_int_equal(health_calls(), 1);
	/* A worker crash also calls for a check. */
	id = run_kind("crash");
	id = run_kind("ok");
	assert_int_equal(health_calls(), 2);
	unsetenv("FAKE_HEALTH_EXIT");
	finish();
}

/* A failing check takes the GPU out of service: status says so and why, the
 * next job stays queued, and status says why it waits. */
static void test_health_fail(void **state)
{
	const char *next;
	json_t *st, *slot;
	int i;

	(void)state;
	H.devices[0] = 7;
	H.cfg.devices = H.devices;
	H.cfg.worker = JOBS_TEST_HEALTH_WORKER;
	setenv("FAKE_HEALTH_EXIT", "3", 1);
	open_jobs();
	(void)run_kind("gpuhung");
	next = submit_kind("ok");
	RUN_UNTIL(health_calls() == 1, 10);
	/* Give the scheduler time to (wrongly) start it. */
	for (i = 0; i < 20; i++) {
		uv_run(&H.loop, UV_RUN_NOWAIT);
		usleep(10000);
	}
	assert_string_equal(state_of(next), "queued");
	st = jobs_status_json(H.j);
	slot = json_array_get(json_object_get(st, "slots"), 0);
	assert_non_null(strstr(json_string_value(json_object_get(slot, "out_of_service")),
			       "gpu 7 failed its health check (exit status 3)"));
	assert_non_null(strstr(json_string_value(json_object_get(st, "waiting")),
			       "no slot is in service"));
	json_decref(st);
	assert_int_equal(health_calls(), 1);
	unsetenv("FAKE_HEALTH_EXIT");
	finish();
}

/* ---- history and retention ---------------------------------------------------- */

/* A job that ended: its request with labels (JSON text, or NULL), its
 * checked log lines, and a done state that finished at finished. */
static void plant_ended(struct store *s, const char *id, const char *labels,
			const char *finished, const char *const *lines)
{
	struct submit_args a;
	struct qual_msg m = { "" };
	json_t *req, *st;

	args_init(&a, lib("base"), lib("ok"));
	req = request_submit_to_json(&a);
	if (labels)
		json_object_set_new(req, "labels", json_loads(labels, 0, NULL));
	request_submit_set_pin(req, 0, "/base.so", "0000000000000000000000000000000000000000000000000000000000000000");
	request_submit_set_pin(req, 1, "/cand.so", "1111111111111111111111111111111111111111111111111111111111111111");
	st = json_pack("{s:s,s:s,s:s,s:s}", "state", "done", "verdict",
		       "neutral", "submitted", finished, "finished", finished);
	if (store_job_create(s, id, req, st, &m))
		fail_msg("plant '%s': %s", id, m.text);
	json_decref(req);
	json_decref(st);
	plant_lines(s, id, lines);
}

/* A history reply once no summary is pending (the loop runs meanwhile). */
static json_t *history(const char *case_name, const char *labels, int limit)
{
	json_t *l = labels ? json_loads(labels, 0, NULL) : NULL;
	struct jobs_history_query q = { case_name, l, limit, NULL };
	json_t *h = NULL;

	RUN_UNTIL((json_decref(h), h = jobs_history_json(H.j, &q),
		   !json_object_get(h, "incomplete")), 10);
	json_decref(l);
	return h;
}

static bool summary_stored(const char *id)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof path, "%s/jobs/%s/summary.json", H.state, id);
	return access(path, F_OK) == 0;
}

/* The job ids of a history reply, "j1 j2 ..." by number. */
static const char *history_ids(json_t *h)
{
	static char out[256];
	size_t i, used = 0;
	json_t *job;

	out[0] = '\0';
	json_array_foreach(json_object_get(h, "jobs"), i, job)
		used += (size_t)snprintf(out + used, sizeof out - used, "%sj%ld", i ? " " : "",
					 atol(json_string_value(json_object_get(job, "job")) + 1));
	json_decref(h);
	return out;
}

static double num(json_t *o, const char *key)
{
	assert_true(json_is_number(json_object_get(o, key)));
	return json_number_value(json_object_get(o, key));
}

static void test_history(void **state)
{
	static const char *const j1[] = {
		"{\"type\":\"start\",\"job\":\"j000001\",\"seq\":0}",
		"{\"type\":\"pair\",\"case\":\"gemm-1\",\"pair\":0,\"baseline_ns\":100.0,\"candidate_ns\":110.0,\"job\":\"j000001\",\"seq\":1}",
		"{\"type\":\"pair\",\"case\":\"gemm-1\",\"pair\":1,\"baseline_ns\":300.0,\"candidate_ns\":290.0,\"job\":\"j000001\",\"seq\":2}",
		"{\"type\":\"pair\",\"case\":\"gemm-1\",\"pair\":2,\"baseline_ns\":200.0,\"candidate_ns\":210.0,\"job\":\"j000001\",\"seq\":3}",
		"{\"type\":\"block\",\"case\":\"gemm-1\",\"block\":1,\"pairs\":3,\"job\":\"j000001\",\"seq\":4}",
		"{\"type\":\"case_verdict\",\"case\":\"gemm-1\",\"verdict\":\"equivalent\",\"identical_code\":false,\"n\":3,\"ratio_median\":1.05,\"ratio_lo\":0.99,\"ratio_hi\":1.1,\"p_holm\":0.3,\"job\":\"j000001\",\"seq\":5}",
		"{\"type\":\"case_verdict\",\"case\":\"conv-2\",\"verdict\":\"not_timed\",\"identical_code\":true,\"n\":0,\"job\":\"j000001\",\"seq\":6}",
		"{\"type\":\"verdict\",\"verdict\":\"neutral\",\"job\":\"j000001\",\"seq\":7}",
		NULL,
	};
	static const char *const j2[] = {
		"{\"type\":\"pair\",\"case\":\"gemm-1\",\"pair\":0,\"baseline_ns\":100.0,\"candidate_ns\":150.0,\"job\":\"j000002\",\"seq\":0}",
		"{\"type\":\"pair\",\"case\":\"gemm-1\",\"pair\":1,\"baseline_ns\":120.0,\"candidate_ns\":null,\"job\":\"j000002\",\"seq\":1}",
		"{\"type\":\"case_verdict\",\"case\":\"gemm-1\",\"verdict\":\"slower\",\"identical_code\":false,\"n\":2,\"ratio_median\":1.5,\"ratio_lo\":1.4,\"ratio_hi\":1.6,\"p_holm\":0.001,\"job\":\"j000002\",\"seq\":2}",
		"{\"type\":\"verdict\",\"verdict\":\"regression\",\"job\":\"j000002\",\"seq\":3}",
		NULL,
	};
	static const char *const j3[] = {
		"{\"type\":\"case_verdict\",\"case\":\"conv-2\",\"verdict\":\"identical\",\"identical_code\":true,\"n\":0,\"job\":\"j000003\",\"seq\":0}",
		"{\"type\":\"verdict\",\"verdict\":\"neutral\",\"job\":\"j000003\",\"seq\":1}",
		NULL,
	};
	struct store *s = NULL;
	struct qual_msg m = { "" };
	char path[PATH_MAX + 64];
	json_t *h, *job, *c, *o;
	FILE *f;

	(void)state;
	assert_int_equal(store_open(H.state, &s, &m), 0);
	plant_ended(s, "j000001", "{\"branch\":\"main\",\"build\":\"n1\"}", "2026-12-01T01:00:00Z", j1);
	plant_ended(s, "j000002", "{\"branch\":\"main\",\"build\":\"n2\"}", "2026-12-02T01:00:00Z", j2);
	plant_ended(s, "j000003", "{\"branch\":\"dev\"}", "2026-12-03T01:00:00Z", j3);
	store_free(s);
	open_jobs();

	/* No summary stored: the first reply, before the loop has run, leaves
	 * the three out and says so; their logs are read off the loop. */
	{
		struct jobs_history_query q = { NULL, NULL, 100, NULL };

		h = jobs_history_json(H.j, &q);
		assert_int_equal(json_array_size(json_object_get(h, "jobs")), 0);
		assert_true(json_is_true(json_object_get(h, "incomplete")));
		assert_int_equal(json_integer_value(json_object_get(h, "pending")), 3);
		json_decref(h);
	}

	/* Oldest first; each job's cases from its case_verdict lines. */
	h = history(NULL, NULL, 100);
	job = json_array_get(json_object_get(h, "jobs"), 0);
	assert_string_equal(json_string_value(json_object_get(job, "verdict")), "neutral");
	assert_string_equal(json_string_value(json_object_get(job, "finished")),
			    "2026-12-01T01:00:00Z");
	assert_string_equal(json_string_value(json_object_get(json_object_get(job, "labels"),
							       "build")), "n1");
	assert_string_equal(json_string_value(json_object_get(json_object_get(job, "candidate"),
							       "sha256")),
			    "1111111111111111111111111111111111111111111111111111111111111111");
	assert_int_equal(json_array_size(json_object_get(job, "cases")), 2);
	c = json_array_get(json_object_get(job, "cases"), 0);
	assert_string_equal(json_string_value(json_object_get(c, "case")), "gemm-1");
	assert_string_equal(json_string_value(json_object_get(c, "verdict")), "equivalent");
	assert_true(num(c, "ratio") == 1.05 && num(c, "ci_low") == 0.99 &&
		    num(c, "ci_high") == 1.1 && num(c, "p_holm") == 0.3);
	/* The medians of the case's pair lines (the block line is none). */
	assert_true(num(c, "baseline_ns") == 200.0 && num(c, "candidate_ns") == 210.0);
	assert_true(json_is_true(json_object_get(c, "timed")));
	c = json_array_get(json_object_get(job, "cases"), 1);
	assert_true(json_is_null(json_object_get(c, "ratio")) &&
		    json_is_null(json_object_get(c, "baseline_ns")) &&
		    json_is_false(json_object_get(c, "timed")));
	/* A null timing is left out of its arm's median. */
	c = json_array_get(json_object_get(json_array_get(json_object_get(h, "jobs"), 1),
					   "cases"), 0);
	assert_true(num(c, "baseline_ns") == 110.0 && num(c, "candidate_ns") == 150.0);
	assert_string_equal(history_ids(h), "j1 j2 j3");

	/* Filters, and the newest `limit` of what matches. */
	assert_string_equal(history_ids(history(NULL, "{\"branch\":\"main\"}", 100)), "j1 j2");
	assert_string_equal(history_ids(history(NULL, "{\"branch\":\"main\",\"build\":\"n2\"}",
						100)), "j2");
	assert_string_equal(history_ids(history(NULL, "{\"nope\":\"main\"}", 100)), "");
	assert_string_equal(history_ids(history("conv-2", NULL, 100)), "j1 j3");
	assert_string_equal(history_ids(history("gemm-1", NULL, 1)), "j2");
	assert_string_equal(history_ids(history(NULL, NULL, 2)), "j2 j3");
	h = history("conv-2", NULL, 100);
	job = json_array_get(json_object_get(h, "jobs"), 0);
	assert_int_equal(json_array_size(json_object_get(job, "cases")), 1);
	json_decref(h);

	/* The summaries are in memory: a log changed under quald (it never
	 * is) does not change the history, which reads no log again. */
	snprintf(path, sizeof path, "%s/jobs/j000001/log.jsonl", H.state);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	h = history("gemm-1", NULL, 100);
	c = json_array_get(json_object_get(json_array_get(json_object_get(h, "jobs"), 0),
					   "cases"), 0);
	assert_true(num(c, "baseline_ns") == 200.0);
	json_decref(h);

	/* show and list carry the labels; list the settings summary. */
	o = jobs_show_json(H.j, "j000003");
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "labels"),
							       "branch")), "dev");
	json_decref(o);
	o = jobs_list_json(H.j, 1, NULL, JOBS_LIST_MAX_BYTES);
	job = json_array_get(json_object_get(o, "jobs"), 0);
	assert_true(json_is_object(json_object_get(job, "labels")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(job, "settings"),
							     "pairs")), 30);
	assert_true(json_is_false(json_object_get(json_object_get(job, "settings"),
						  "compile_only")));
	json_decref(o);

	/* The rebuilt summaries are stored; a start reads them, not the logs:
	 * j000001's log is empty now, its history stays. One whose
	 * summary.json is gone is rebuilt again. */
	RUN_UNTIL(summary_stored("j000001") && summary_stored("j000002") &&
		  summary_stored("j000003"), 10);
	close_jobs();
	snprintf(path, sizeof path, "%s/jobs/j000002/summary.json", H.state);
	assert_int_equal(unlink(path), 0);
	open_jobs();
	{
		struct jobs_history_query q = { NULL, NULL, 100, NULL };

		h = jobs_history_json(H.j, &q);
		assert_int_equal(json_integer_value(json_object_get(h, "pending")), 1);
		assert_string_equal(history_ids(h), "j1 j3"); /* takes h */
	}
	h = history("gemm-1", NULL, 100);
	assert_int_equal(json_array_size(json_object_get(h, "jobs")), 2);
	c = json_array_get(json_object_get(json_array_get(json_object_get(h, "jobs"), 0),
					   "cases"), 0);
	assert_true(num(c, "baseline_ns") == 200.0);
	json_decref(h);
	RUN_UNTIL(summary_stored("j000002"), 10);

	/* A job of this run joins the history once its verdict is written,
	 * its summary made from its lines (no read) and stored. */
	{
		struct jobs_history_query q = { NULL, NULL, 1, NULL };
		const char *id = run_kind("ok");

		h = jobs_history_json(H.j, &q);
		assert_null(json_object_get(h, "incomplete"));
		assert_string_equal(history_ids(h), "j4"); /* takes h */
		assert_string_equal(id, "j000004");
		RUN_UNTIL(summary_stored(id), 10);
	}
	finish();
}

static bool folder_exists(const char *id)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof path, "%s/jobs/%s", H.state, id);
	return access(path, F_OK) == 0;
}

static void test_retention_jobs(void **state)
{
	static const char *const lines[] = {
		"{\"type\":\"verdict\",\"verdict\":\"neutral\",\"job\":\"j\",\"seq\":0}", NULL,
	};
	struct store *s = NULL;
	struct qual_msg m = { "" };
	const char *id;
	json_t *o;

	(void)state;
	assert_int_equal(store_open(H.state, &s, &m), 0);
	plant_ended(s, "j000001", NULL, "2026-12-01T01:00:00Z", lines);
	plant_ended(s, "j000002", NULL, "2026-12-01T02:00:00Z", lines);
	plant_ended(s, "j000003", NULL, "2026-12-01T03:00:00Z", lines);
	plant_ended(s, "j000004", NULL, "2026-12-01T04:00:00Z", lines);
	store_free(s);
	H.cfg.keep_jobs = 2;
	open_jobs();
	/* At start: the oldest two of four finished jobs. */
	assert_null(jobs_show_json(H.j, "j000001"));
	assert_null(jobs_show_json(H.j, "j000002"));
	RUN_UNTIL(!folder_exists("j000001") && !folder_exists("j000002"), 10);
	assert_true(folder_exists("j000003") && folder_exists("j000004"));
	assert_true(jobs_gone(H.j, "j000001"));
	assert_false(jobs_gone(H.j, "j000003"));
	assert_false(jobs_gone(H.j, "j000009"));
	o = jobs_list_json(H.j, 10, NULL, JOBS_LIST_MAX_BYTES);
	assert_int_equal(json_array_size(json_object_get(o, "jobs")), 2);
	json_decref(o);
	/* After a job ends: the oldest again. */
	id = run_kind("ok");
	assert_string_equal(id, "j000005");
	RUN_UNTIL(!folder_exists("j000003"), 10);
	assert_true(folder_exists("j000004") && folder_exists("j000005"));
	close_jobs();
	/* Ids go on from the newest, which is never pruned. */
	open_jobs();
	id = run_kind("ok");
	assert_string_equal(id, "j000006");
	RUN_UNTIL(!folder_exists("j000004"), 10);
	finish();
}

static void test_retention_days(void **state)
{
	static const char *const lines[] = {
		"{\"type\":\"verdict\",\"verdict\":\"neutral\",\"job\":\"j\",\"seq\":0}", NULL,
	};
	struct store *s = NULL;
	struct qual_msg m = { "" };

	(void)state;
	assert_int_equal(store_open(H.state, &s, &m), 0);
	plant_ended(s, "j000001", NULL, "2020-01-01T00:00:00Z", lines);
	plant_ended(s, "j000002", NULL, "2099-01-01T00:00:00Z", lines);
	plant_ended(s, "j000003", NULL, "2020-01-02T00:00:00Z", lines);
	plant_job(s, "j000004", "ok", "queued", "");
	plant_ended(s, "j000005", NULL, "2020-01-03T00:00:00Z", lines);
	store_free(s);
	H.cfg.keep_days = 30;
	open_jobs();
	/* The old ones go; a queued job and the newest (old too) stay. */
	RUN_UNTIL(!folder_exists("j000001") && !folder_exists("j000003"), 10);
	assert_true(folder_exists("j000002") && folder_exists("j000004") &&
		    folder_exists("j000005"));
	RUN_UNTIL(finished("j000004"), 10);
	finish();
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup, teardown)

QUAL_TESTS(
	T(relay_and_log),
	T(worker_args),
	T(one_slot_serial),
	T(two_slots_parallel),
	T(cancel),
	T(crash),
	T(blame),
	T(timeout),
	T(exits),
	T(odd_lines),
	T(foreign_lines),
	T(parse_once),
	T(sigkill),
	T(recovery),
	T(recovery_damaged),
	T(recovery_noted),
	T(recovery_unpinned),
	T(submit_refusals),
	T(submit_real_helper),
	T(close_running),
	T(close_during_check),
	T(hash_time_limit),
	T(close_during_hash),
	T(spawn_failure),
	T(close_idle),
	T(log_limit),
	T(policy),
	T(quarantine),
	T(crash_code),
	T(health_pass),
	T(health_fail),
	T(history),
	T(retention_jobs),
	T(retention_days),
)
