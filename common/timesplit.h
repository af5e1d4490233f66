/* The time split of a run: where a job's wall time goes, phase by phase, on
 * the monotonic clock, in seconds (docs/output.md, "time_s"). The process
 * that runs the job adds up its own phases; each timing session (a child
 * process) adds up its own and hands them to the supervisor in a
 * session_time line, which the supervisor (and qual-judge, re-reading the
 * lines) sums. Nothing here changes what is measured or judged. */
#ifndef QUAL_TIMESPLIT_H
#define QUAL_TIMESPLIT_H

#include <stdbool.h>

#include <jansson.h>

/* The phases, in the order the verdict line lists them. The first group is
 * the supervisor's (the process that runs the job); the second is what the
 * sessions do, summed over them (in a run of one process, that process's). */
enum timesplit_phase {
	/* The supervisor. */
	TS_IDENTIFY,         /* the libraries pinned, hashed and identified */
	TS_PROBE,            /* waiting for the device probe's answer (a
			      * child that opens the gpu, started first) */
	TS_COMPILE_SETUP,    /* the artifact cache opened, the key inputs hashed */
	TS_USER_FIXTURES,    /* user fixtures' inputs and oracles built */
	TS_FIXTURES_PREBUILT,/* waiting, after the compiles, for the built-in
			      * cases' inputs and oracles, built once for
			      * every session beside the probe and compiles */
	TS_COMPILE,          /* the compile phase, wall */
	TS_COMPILE_CHILDREN, /* the compile children, each start to end, summed */
	TS_COMPILE_CALLS,    /* the compiler calls in them, summed (compile_ms) */
	TS_SESSIONS,         /* the sessions, wall, each start to end; in a run
			      * of one process, its cases one after the other */
	TS_CLOSE,            /* in TS_SESSIONS: waiting for sessions' contexts
			      * to close after their last lines */
	TS_JUDGE,            /* the statistics and the verdict lines */
	TS_TOTAL,            /* the job, wall, up to its verdict line */
	/* The sessions, summed. */
	TS_OPEN,             /* the gpu opened (context created) and, in a
			      * session, the clocks' source started */
	TS_FIXTURES,         /* cases' inputs and oracles built */
	TS_ALLOC,            /* device buffers allocated */
	TS_LOAD,             /* modules loaded and graphs built, first block */
	TS_WARMUP,           /* warm-up replays and their checks */
	TS_BLOCKS,           /* the setups of later blocks (reload, rebuild,
			      * untimed rounds) */
	TS_TIMING,           /* the timed pairs, wall, block setups left out */
	TS_REPLAYS_DEVICE,   /* the timed replays' own device time, from the
			      * pairs */
	TS_CHECKS,           /* the checks after timing */
	TS_RELEASE,          /* modules, graphs and buffers freed */
	TS_COUNT
};

/* The first phase of the sessions' group. */
#define TS_FIRST_SESSION TS_OPEN

struct timesplit {
	double s[TS_COUNT];  /* seconds; < 0: not known */
	int sessions;        /* session_time lines summed in */
};

/* All phases 0, no session. */
void timesplit_init(struct timesplit *t);

/* Adds the time from since (child_now()'s: common/child.h, the monotonic
 * clock in seconds) to now to phase; returns
 * now, so that one phase can follow another: t = timesplit_add(.., t). */
double timesplit_add(struct timesplit *t, enum timesplit_phase phase, double since);

/* The phase's name in the lines: "identify", "replays_device", ... */
const char *timesplit_name(enum timesplit_phase phase);

/* A new session_time line (a new reference) carrying the sessions' group
 * of t, for session (from 1). */
json_t *timesplit_session_line(const struct timesplit *t, int session);

/* Adds the phases of a session_time line (borrowed) into the sessions'
 * group of t. Returns 0, or -1 for a line that is not a session_time line
 * or whose time_s holds a phase that is not a finite number >= 0 (nothing
 * is added then). Unknown phases are ignored. */
int timesplit_take_line(struct timesplit *t, json_t *line);

/* The verdict line's "time_s" (a new reference): every phase of t, and
 * "session_count", the session_time lines summed in; when whole is false
 * (qual-judge: only the session lines are known), the sessions' group
 * only. */
json_t *timesplit_json(const struct timesplit *t, bool whole);

#endif
