/* The time split of a run (timesplit.h). */
#include "common/timesplit.h"

#include <math.h>
#include <string.h>

#include "common/child.h"
#include "common/lines.h"

static const char *const names[TS_COUNT] = {
	[TS_IDENTIFY] = "identify",
	[TS_PROBE] = "probe",
	[TS_COMPILE_SETUP] = "compile_setup",
	[TS_USER_FIXTURES] = "user_fixtures",
	[TS_FIXTURES_PREBUILT] = "fixtures_prebuilt",
	[TS_COMPILE] = "compile",
	[TS_COMPILE_CHILDREN] = "compile_children",
	[TS_COMPILE_CALLS] = "compile_calls",
	[TS_SESSIONS] = "sessions",
	[TS_CLOSE] = "close",
	[TS_JUDGE] = "judge",
	[TS_TOTAL] = "total",
	[TS_OPEN] = "open",
	[TS_FIXTURES] = "fixtures",
	[TS_ALLOC] = "alloc",
	[TS_LOAD] = "load",
	[TS_WARMUP] = "warmup",
	[TS_BLOCKS] = "blocks",
	[TS_TIMING] = "timing",
	[TS_REPLAYS_DEVICE] = "replays_device",
	[TS_CHECKS] = "checks",
	[TS_RELEASE] = "release",
};

void timesplit_init(struct timesplit *t)
{
	memset(t, 0, sizeof *t);
}

double timesplit_add(struct timesplit *t, enum timesplit_phase phase, double since)
{
	double now = child_now();

	t->s[phase] += now - since;
	return now;
}

const char *timesplit_name(enum timesplit_phase phase)
{
	return phase < TS_COUNT ? names[phase] : NULL;
}

/* Seconds to the microsecond: a phase is never known better than that, and
 * the lines stay short. */
static json_t *seconds(double s)
{
	return lines_real(round(s * 1e6) / 1e6);
}

json_t *timesplit_session_line(const struct timesplit *t, int session)
{
	json_t *line = lines_new("session_time"), *o = json_object();

	json_object_set_new(line, "session", json_integer(session));
	for (int p = TS_FIRST_SESSION; p < TS_COUNT; p++)
		json_object_set_new(o, names[p], seconds(t->s[p]));
	json_object_set_new(line, "time_s", o);
	return line;
}

int timesplit_take_line(struct timesplit *t, json_t *line)
{
	const char *type = json_string_value(json_object_get(line, "type"));
	json_t *o = json_object_get(line, "time_s");
	double add[TS_COUNT] = {0};

	if (!type || strcmp(type, "session_time") != 0 || !json_is_object(o))
		return -1;
	for (int p = TS_FIRST_SESSION; p < TS_COUNT; p++) {
		json_t *x = json_object_get(o, names[p]);

		if (!x)
			continue;
		if (!json_is_number(x) || !isfinite(json_number_value(x)) ||
		    json_number_value(x) < 0)
			return -1;
		add[p] = json_number_value(x);
	}
	for (int p = TS_FIRST_SESSION; p < TS_COUNT; p++)
		t->s[p] += add[p];
	t->sessions++;
	return 0;
}

json_t *timesplit_json(const struct timesplit *t, bool whole)
{
	json_t *o = json_object();

	for (int p = whole ? 0 : TS_FIRST_SESSION; p < TS_COUNT; p++)
		json_object_set_new(o, names[p], seconds(t->s[p]));
	json_object_set_new(o, "session_count", json_integer(t->sessions));
	return o;
}
