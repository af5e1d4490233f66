#include "common/lines.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/text.h"
#include "common/xalloc.h"

int lines_emit(FILE *out, json_t *line)
{
	int rc = 0;

	if (json_dumpf(line, out, JSON_COMPACT | JSON_ENSURE_ASCII |
		       JSON_REAL_PRECISION(LINES_REAL_DIGITS)) != 0 ||
	    fputc('\n', out) == EOF || fflush(out) != 0)
		rc = QUAL_EIO;
	json_decref(line);
	return rc;
}

void lines_round_reals(json_t *v)
{
	const char *key;
	json_t *x;
	size_t i;

	if (json_is_real(v)) {
		char text[64];

		/* jansson writes "%.*g" (then ".0" where it would read as an
		 * integer), which strtod reads back to this. */
		snprintf(text, sizeof text, "%.*g", LINES_REAL_DIGITS, json_real_value(v));
		json_real_set(v, strtod(text, NULL));
	} else if (json_is_object(v)) {
		json_object_foreach(v, key, x)
			lines_round_reals(x);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x)
			lines_round_reals(x);
	}
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
	return text_json_str(s);
}

void lines_splitter_init(struct lines_splitter *s, size_t max)
{
	memset(s, 0, sizeof *s);
	s->max = max;
}

void lines_splitter_release(struct lines_splitter *s)
{
	free(s->buf);
	memset(s, 0, sizeof *s);
}

int lines_splitter_feed(struct lines_splitter *s, const char *data, size_t n,
			int (*fn)(void *ctx, const char *line, size_t len), void *ctx)
{
	const char *p = data, *end = data + n;
	int rc;

	while (p < end && !s->over) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t take = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (s->len + take > s->max) {
			s->over = true;
			s->len = 0;
			return QUAL_ELIMIT;
		}
		if (nl && s->len == 0) {
			/* The whole line is in data: no copy. */
			if ((rc = fn(ctx, p, take)) != 0)
				return rc;
		} else {
			XGROW(s->buf, s->len + take, s->cap);
			memcpy(s->buf + s->len, p, take);
			s->len += take;
			if (nl) {
				size_t len = s->len;
				s->len = 0;
				if ((rc = fn(ctx, s->buf, len)) != 0)
					return rc;
			}
		}
		p += take + (nl ? 1 : 0);
	}
	return s->over ? QUAL_ELIMIT : 0;
}

size_t lines_splitter_rest(const struct lines_splitter *s)
{
	return s->len;
}

int lines_splitter_finish(struct lines_splitter *s,
			  int (*fn)(void *ctx, const char *line, size_t len), void *ctx)
{
	size_t len = s->len;
	json_t *o;
	bool whole;

	if (s->over || len == 0)
		return 0;
	o = json_loadb(s->buf, len, JSON_REJECT_DUPLICATES, NULL);
	whole = json_is_object(o);
	json_decref(o);
	if (!whole)
		return QUAL_EINVAL;
	s->len = 0;
	return fn(ctx, s->buf, len);
}
