/* The compile phase (runner_internal.h): every arm of every case compiled
 * before any case runs, up to run->compile_jobs at once, and the artifact
 * cache (cache.h) in front of the compiler.
 *
 * Compiles at once are threads of this process, each blocked in
 * rtc_compile() for its own qual-compile child: rtc_compile() is safe to
 * call from several threads. child_start() forks and the child makes only
 * async-signal-safe calls (raw system calls, dup2, sigaction, execve) until
 * it execs, with every descriptor close-on-exec, so a child forked by one
 * thread carries none of another's past its exec; child_wait() waits for its
 * own pid only (waitid(P_PID)); each compile has its own folder (mkdtemp),
 * and rtc.c's process-wide settings (helper, compile user) are only read
 * while compiles run. The threads are joined before anything else runs, so
 * the sessions forked after the compiles are forked from a process of one
 * thread. The first look's sessions are forked before them (sessions.c),
 * from a process of one thread, before the kept fixtures' builders start
 * (fixtures/keep.c), which then run beside the compiles. */
#include "run/runner_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/child.h"
#include "common/xalloc.h"
#include "run/cache.h"

static const char *const arm_name[2] = {"baseline", "candidate"};

/* One compile of the phase. */
struct job {
	int arm;
	char case_name[64];
	char key[SHA256_HEX_SIZE];
	char *src;
	char target[40];
	char program[96];
	struct compiled *e;     /* its result, appended to run->cache after */
	struct qual_msg store;  /* why it could not be cached ("": it was, or
				 * it was not to be) */
	bool running;
	double wall_s;          /* the compile child, start to end */
	/* Its place in the phase: the longest expected first
	 * (fixture_compile_estimate_ms; -1, unknown, before all), then the
	 * order of the cases. */
	double estimate_ms;
	int order;
};

/* The compiles of the phase and the threads that share them out. */
struct pool {
	struct run *run;
	struct job *jobs;
	int njobs, next;
	char reported[1200];    /* what on_compile was last told ("": none) */
	pthread_mutex_t mu;
};

/* run->libdir_fp and run->helper_sha256, once per run: what a compile
 * takes beside its source and options, for its key. */
static void key_extras(struct run *run)
{
	struct qual_msg msg = {{0}};
	char *helper = NULL;

	for (int arm = 0; arm < 2; arm++) {
		char dir[PATH_MAX];
		const char *real = run->id[arm].real_path, *slash = strrchr(real, '/');

		if (!slash)
			continue;
		snprintf(dir, sizeof dir, "%.*s", slash == real ? 1 : (int)(slash - real), real);
		(void)cache_dir_fingerprint(dir, run->libdir_fp[arm]);
	}
	if (rtc_helper_path(&helper, &msg) == 0 &&
	    sha256_hash_file(helper, run->helper_sha256, NULL) < 0)
		run->helper_sha256[0] = '\0';
	free(helper);
}

void runner__compile_setup(struct run *run)
{
	const struct runner_config *cfg = run->cfg;
	struct qual_msg msg = {{0}};
	long cpus;

	run->compile_jobs = cfg->compile_jobs;
	if (run->compile_jobs <= 0) {
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
		run->compile_jobs = cpus < 1 ? 1 : cpus > RUNNER_MAX_COMPILE_JOBS ?
				    RUNNER_MAX_COMPILE_JOBS : (int)cpus;
	}
	if (!cfg->cache_dir)
		return;
	run->artifacts = xmalloc(sizeof *run->artifacts);
	if (cache_open(run->artifacts, cfg->cache_dir, cfg->cache_max_bytes ?
		       cfg->cache_max_bytes : (size_t)CACHE_DEFAULT_MAX_MIB << 20,
		       cfg->limits.log_cap, run->err, &msg) < 0) {
		if (run->err)
			fprintf(run->err, "qual-run: warning: %s: running without a cache\n",
				msg.text);
		free(run->artifacts);
		run->artifacts = NULL;
		return;
	}
	key_extras(run);
}

/* What compiling c with arm takes: its source (new), target, program name
 * and key, into j. */
static void job_init(const struct run *run, const struct fixture_case *c, int arm,
		     struct job *j)
{
	struct cache_key_in in;

	memset(j, 0, sizeof *j);
	j->arm = arm;
	snprintf(j->case_name, sizeof j->case_name, "%s", c->name);
	j->src = fixture_source(c, run->platform);
	fixture_target(c, run->arch, j->target, sizeof j->target);
	snprintf(j->program, sizeof j->program, "%s.cu", c->kernel);
	in.compiler_sha256 = run->id[arm].sha256;
	in.abi = run->id[arm].abi_name;
	in.arch = j->target;
	in.program_name = j->program;
	in.source = j->src;
	in.options = run->opts[arm];
	in.noptions = run->nopts[arm];
	in.libdir_fingerprint = run->libdir_fp[arm];
	in.helper_sha256 = run->helper_sha256;
	cache_key(&in, j->key);
}

static struct compiled *find(const struct run *run, int arm, const char *key)
{
	for (int i = 0; i < run->ncache; i++)
		if (run->cache[i]->arm == arm && strcmp(run->cache[i]->key, key) == 0)
			return run->cache[i];
	return NULL;
}

static struct compiled *entry_new(const struct job *j)
{
	struct compiled *e = xcalloc(1, sizeof *e);

	e->arm = j->arm;
	memcpy(e->key, j->key, sizeof e->key);
	return e;
}

static void append(struct run *run, struct compiled *e)
{
	XGROW(run->cache, run->ncache + 1, run->capcache);
	run->cache[run->ncache++] = e;
}

/* The artifact cache can be used for the key of arm: a library known by
 * its hash, its folder and the helper by theirs. */
static bool cacheable(const struct run *run, const struct job *j)
{
	return run->artifacts && j->key[0] && run->id[j->arm].sha256[0] &&
	       run->libdir_fp[j->arm][0] && run->helper_sha256[0];
}

/* The artifact cache's entry for j, when j may be served from it: the
 * baseline's only. The candidate is what is qualified, so it is always
 * compiled (its successes are still stored, for when it is a baseline). An
 * entry whose compile took longer than this run's compile limit is a miss:
 * compiled again, under the limit. */
static bool lookup(struct run *run, const struct job *j, struct compiled *e)
{
	if (j->arm != 0 || !cacheable(run, j))
		return false;
	if (!cache_lookup(run->artifacts, j->key, &e->res))
		return false;
	if (e->res.compile_ms > run->cfg->limits.timeout_s * 1000) {
		rtc_result_release(&e->res);
		memset(&e->res, 0, sizeof e->res);
		return false;
	}
	e->cached = true;
	return true;
}

/* Runs j's compile into j->e (a result even when rtc_compile() could not
 * run its child: that status and message), and caches a success. */
static void job_run(const struct run *run, struct job *j)
{
	struct rtc_request req = {0};
	struct qual_msg msg = {{0}};
	int rc;

	req.compiler = &run->id[j->arm];
	req.source = j->src;
	req.program_name = j->program;
	req.arch = j->target;
	req.options = run->opts[j->arm];
	req.noptions = run->nopts[j->arm];
	j->wall_s = child_now();
	rc = rtc_compile(&req, &run->cfg->limits, &j->e->res, &msg);
	j->wall_s = child_now() - j->wall_s;
	if (rc < 0) {
		memset(&j->e->res, 0, sizeof j->e->res);
		j->e->res.status = rc;
		/* Cut to the result's room, as a compiler's message is. */
		memcpy(j->e->res.message, msg.text, sizeof j->e->res.message - 1);
		return;
	}
	if (j->e->res.status == 0 && cacheable(run, j) &&
	    cache_store(run->artifacts, j->key, &j->e->res, &j->store) == 0)
		j->store.text[0] = '\0';
}

/* The other arm's compile of job i's case, ended by its time limit (a
 * compile of the phase, finished: QUAL_ETIMEOUT), or NULL. With p->mu
 * held. */
static const struct job *other_timed_out(const struct pool *p, int i)
{
	for (int k = 0; k < p->njobs; k++) {
		const struct job *o = &p->jobs[k];

		if (o->arm != p->jobs[i].arm && !o->running && o->e->res.status == QUAL_ETIMEOUT &&
		    !strcmp(o->case_name, p->jobs[i].case_name))
			return o;
	}
	return NULL;
}

/* Tells on_compile which compiles are now in flight, if that changed: the
 * first, and every one when both arms are among them. Also neither arm when
 * the one in flight is the second of its case to compile, the other's
 * having run past its time limit: a stop then finds both arms unfinished
 * the same way, in whatever order they ran (docs/verdicts.md, "Blame").
 * With p->mu held. */
static void report(struct pool *p)
{
	void (*cb)(const char *, const char *, const char *) = p->run->cfg->on_compile;
	char all[sizeof p->reported] = "";
	bool arms[2] = { false, false };
	const struct job *other = NULL;
	int first = -1;
	size_t n = 0;

	if (!cb)
		return;
	for (int i = 0; i < p->njobs; i++) {
		if (!p->jobs[i].running)
			continue;
		if (first < 0)
			first = i;
		arms[p->jobs[i].arm] = true;
		if (n < sizeof all)
			n += (size_t)snprintf(all + n, sizeof all - n, "%s%s (%s)", n ? ", " : "",
					      p->jobs[i].case_name, arm_name[p->jobs[i].arm]);
	}
	if (first >= 0 && !(arms[0] && arms[1]) && (other = other_timed_out(p, first)))
		snprintf(all, sizeof all, "%s (%s), after the %s's compile of the case ran "
			 "past the compile time limit", p->jobs[first].case_name,
			 arm_name[p->jobs[first].arm], arm_name[other->arm]);
	else if (first >= 0 && !(arms[0] && arms[1]))
		/* Only the first matters while one arm is in flight. */
		snprintf(all, sizeof all, "%s (%s)", p->jobs[first].case_name,
			 arm_name[p->jobs[first].arm]);
	if (strcmp(all, p->reported) == 0)
		return;
	memcpy(p->reported, all, sizeof all);
	if (first < 0)
		cb(NULL, NULL, NULL);
	else
		cb(p->jobs[first].case_name, (arms[0] && arms[1]) || other ? NULL :
		   arm_name[p->jobs[first].arm], all);
}

static void *worker(void *arg)
{
	struct pool *p = arg;

	pthread_mutex_lock(&p->mu);
	while (p->next < p->njobs) {
		struct job *j = &p->jobs[p->next++];

		j->running = true;
		report(p);
		pthread_mutex_unlock(&p->mu);
		job_run(p->run, j);
		pthread_mutex_lock(&p->mu);
		j->running = false;
		report(p);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Runs every job of p, up to run->compile_jobs at once: on this thread
 * alone for one, else on that many threads (fewer when there are fewer
 * jobs). A thread that cannot be started leaves its share to the others. */
static void pool_run(struct pool *p)
{
	int n = p->run->compile_jobs < p->njobs ? p->run->compile_jobs : p->njobs;
	pthread_t *threads;
	int started = 0;

	pthread_mutex_init(&p->mu, NULL);
	p->reported[0] = '\0';
	if (n <= 1) {
		worker(p);
	} else {
		threads = xcalloc((size_t)n, sizeof *threads);
		for (int i = 0; i < n; i++)
			if (pthread_create(&threads[started], NULL, worker, p) == 0)
				started++;
		if (started == 0)
			worker(p);
		for (int i = 0; i < started; i++)
			pthread_join(threads[i], NULL);
		free(threads);
	}
	pthread_mutex_destroy(&p->mu);
}

static int longest_first(const void *a, const void *b)
{
	const struct job *x = a, *y = b;
	double ex = x->estimate_ms < 0 ? INFINITY : x->estimate_ms;
	double ey = y->estimate_ms < 0 ? INFINITY : y->estimate_ms;

	if (ex != ey)
		return ex > ey ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

void runner__compile_all(struct run *run, const int *sel, int nsel)
{
	struct pool p = { .run = run };
	int cap = 0;
	bool store_warned = false;

	for (int i = 0; i < nsel; i++) {
		struct fixture_case c;
		struct qual_msg msg = {{0}};
		char why[200];

		memset(&c, 0, sizeof c);
		/* A case that cannot be described, or does not apply, is left
		 * for the case to report when it runs. */
		if (fixture_spec(sel[i], &c, &msg) < 0)
			continue;
		if (!fixture_applies(&c, run->platform, run->arch, why, sizeof why)) {
			fixture_release(&c);
			continue;
		}
		for (int arm = 0; arm < 2; arm++) {
			struct job j;
			bool queued = false;

			job_init(run, &c, arm, &j);
			for (int k = 0; k < p.njobs && !queued; k++)
				queued = p.jobs[k].arm == arm && !strcmp(p.jobs[k].key, j.key);
			if (queued || find(run, arm, j.key)) {
				free(j.src);
				continue;
			}
			j.e = entry_new(&j);
			if (lookup(run, &j, j.e)) {
				append(run, j.e);
				free(j.src);
				continue;
			}
			j.estimate_ms = fixture_compile_estimate_ms(sel[i]);
			j.order = p.njobs;
			XGROW(p.jobs, p.njobs + 1, cap);
			p.jobs[p.njobs++] = j;
		}
		fixture_release(&c);
	}
	/* Longest first: the phase ends with the last compile to end, and in
	 * the cases' order a long one can be among the last to start (list
	 * schedules of the 26 compile times of a full job measured on the
	 * H200's host, on 16 CPUs: 1.48 s in the cases' order, 1.28 s
	 * longest first). */
	if (p.njobs > 1)  /* p.jobs is NULL with none */
		qsort(p.jobs, (size_t)p.njobs, sizeof *p.jobs, longest_first);
	pool_run(&p);
	for (int k = 0; k < p.njobs; k++) {
		struct job *j = &p.jobs[k];

		append(run, j->e);
		free(j->src);
		run->split.s[TS_COMPILE_CHILDREN] += j->wall_s;
		run->split.s[TS_COMPILE_CALLS] += j->e->res.compile_ms / 1e3;
		if (j->store.text[0] && !store_warned && run->err) {
			fprintf(run->err, "qual-run: warning: cannot write to the artifact cache: "
				"%s\n", j->store.text);
			store_warned = true;
		}
	}
	free(p.jobs);
	if (run->artifacts && p.njobs > 0)
		cache_trim(run->artifacts);
}

const struct compiled *runner__compile(struct run *run, const struct fixture_case *c,
				       int arm)
{
	struct pool p = { .run = run, .njobs = 1 };
	struct compiled *e;
	struct job j;

	job_init(run, c, arm, &j);
	if ((e = find(run, arm, j.key))) {
		free(j.src);
		return e;
	}
	e = entry_new(&j);
	if (lookup(run, &j, e)) {
		free(j.src);
		append(run, e);
		return e;
	}
	j.e = e;
	p.jobs = &j;
	{
		/* One compile, on this thread, reported as the phase's are. */
		int jobs = run->compile_jobs;

		run->compile_jobs = 1;
		pool_run(&p);
		run->compile_jobs = jobs;
	}
	free(j.src);
	append(run, e);
	return e;
}

/* ---- handing the results to a process forked before them ---- */

static void put(unsigned char **buf, size_t *len, size_t *cap, const void *p, size_t n)
{
	XGROW(*buf, *len + n, *cap);
	if (n)
		memcpy(*buf + *len, p, n);
	*len += n;
}

void runner__cache_pack(const struct run *run, unsigned char **buf, size_t *len,
			size_t *cap)
{
	put(buf, len, cap, &run->ncache, sizeof run->ncache);
	for (int i = 0; i < run->ncache; i++) {
		const struct compiled *e = run->cache[i];
		size_t log = e->res.log ? strlen(e->res.log) + 1 : 0;

		/* As it is in memory: the reader is this program, forked
		 * from this process; its pointers are replaced on reading. */
		put(buf, len, cap, e, sizeof *e);
		put(buf, len, cap, e->res.code, e->res.code ? e->res.code_size : 0);
		put(buf, len, cap, &log, sizeof log);
		put(buf, len, cap, e->res.log, log);
	}
}

/* n bytes at *at of what is left of [*at, end), or NULL (short). */
static const unsigned char *take(const unsigned char **at, const unsigned char *end, size_t n)
{
	const unsigned char *p = *at;

	if ((size_t)(end - p) < n)
		return NULL;
	*at += n;
	return p;
}

int runner__cache_unpack(struct run *run, const unsigned char **at, const unsigned char *end)
{
	const unsigned char *p;
	int n;

	if (!(p = take(at, end, sizeof n)))
		return -1;
	memcpy(&n, p, sizeof n);
	for (int i = 0; i < n; i++) {
		struct compiled *e = xcalloc(1, sizeof *e);
		const unsigned char *code, *log = NULL;
		size_t loglen;
		bool had_code;

		if (!(p = take(at, end, sizeof *e))) {
			free(e);
			return -1;
		}
		memcpy(e, p, sizeof *e);
		had_code = e->res.code != NULL;
		code = had_code ? take(at, end, e->res.code_size) : NULL;
		e->res.code = NULL;
		e->res.log = NULL;
		if ((had_code && !code) || !(p = take(at, end, sizeof loglen))) {
			free(e);
			return -1;
		}
		memcpy(&loglen, p, sizeof loglen);
		if (loglen && !(log = take(at, end, loglen))) {
			free(e);
			return -1;
		}
		if (code) {
			e->res.code = xmalloc(e->res.code_size ? e->res.code_size : 1);
			memcpy(e->res.code, code, e->res.code_size);
		}
		if (loglen) {
			e->res.log = xmalloc(loglen);
			memcpy(e->res.log, log, loglen);
			e->res.log[loglen - 1] = '\0';
		}
		append(run, e);
	}
	return 0;
}

void runner__compile_release(struct run *run)
{
	for (int i = 0; i < run->ncache; i++) {
		rtc_result_release(&run->cache[i]->res);
		free(run->cache[i]);
	}
	free(run->cache);
	run->cache = NULL;
	run->ncache = run->capcache = 0;
	free(run->artifacts);
	run->artifacts = NULL;
}
