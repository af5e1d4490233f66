#include "common/lines.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/xalloc.h"

int lines_emit(FILE *out, json_t *line)
{
	int rc = 0;

	if (json_dumpf(line, out, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(12)) != 0 ||
	    fputc('\n', out) == EOF || fflush(out) != 0)
		rc = QUAL_EIO;
	json_decref(line);
	return rc;
}

json_t *lines_new(const char *type)
{
	return json_pack("{s:s}", "type", type);
}

json_t *lines_real(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

json_t *lines_text(const char *s)
{
	json_t *j;
	char *copy;
	size_t n;

	if (!s)
		return json_null();
	j = json_string(s);
	if (j)
		return j;
	n = strlen(s);
	copy = xmalloc(n + 1);
	for (size_t i = 0; i <= n; i++)
		copy[i] = (s[i] & 0x80) ? '?' : s[i];
	j = json_string(copy);
	free(copy);
	return j;
}

int lines_error(FILE *out, const char *stage, const char *arm,
		 const char *case_name, const char *message)
{
	json_t *line = lines_new("error");

	json_object_set_new(line, "stage", json_string(stage));
	json_object_set_new(line, "arm", arm ? json_string(arm) : json_null());
	json_object_set_new(line, "case", case_name ? json_string(case_name) : json_null());
	json_object_set_new(line, "message", lines_text(message));
	return lines_emit(out, line);
}
