/* Text (text.h). */
#include "common/text.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

/* The length of the valid UTF-8 sequence at s (n bytes left), or 0 when
 * none starts there (RFC 3629: no overlong forms, no surrogates, nothing
 * above U+10FFFF). NUL counts as invalid: it would end the text early. */
static size_t utf8_valid(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned lo = 0x80, hi = 0xBF;

	if (s[0] == 0)
		return 0;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		len = 2;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		len = 3;
		if (s[0] == 0xE0)
			lo = 0xA0;
		else if (s[0] == 0xED)
			hi = 0x9F;
	} else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		len = 4;
		if (s[0] == 0xF0)
			lo = 0x90;
		else if (s[0] == 0xF4)
			hi = 0x8F;
	} else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return len;
}

json_t *text_json(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	char *copy;
	json_t *v;
	size_t i = 0;

	if (!s)
		return json_null();
	if (!memchr(s, '\0', len) && (v = json_stringn(s, len)))
		return v;
	copy = xmalloc(len + 1);
	while (i < len) {
		size_t k = utf8_valid(u + i, len - i);
		if (k == 0) {
			copy[i++] = '?';
			continue;
		}
		memcpy(copy + i, s + i, k);
		i += k;
	}
	copy[len] = '\0';
	v = json_stringn(copy, len);
	free(copy);
	return v;
}

json_t *text_json_str(const char *s)
{
	return s ? text_json(s, strlen(s)) : json_null();
}

void text_last_line(const char *s, size_t len, char *out, size_t cap)
{
	size_t end = len, start;

	while (end > 0 && (s[end - 1] == '\n' || s[end - 1] == '\r' || s[end - 1] == ' '))
		end--;
	start = end;
	while (start > 0 && s[start - 1] != '\n')
		start--;
	snprintf(out, cap, "%.*s", (int)(end - start), s + start);
}

int text_parse_long(const char *what, const char *s, long lo, long hi, long *out,
		    struct qual_msg *msg)
{
	char *end;
	long x;

	/* strtol and strtod skip leading white space: a whole number has none. */
	errno = 0;
	x = strtol(s, &end, 10);
	if (errno || end == s || *end || isspace((unsigned char)s[0]) || x < lo || x > hi) {
		if (hi == LONG_MAX)
			return qual_fail(msg, QUAL_EINVAL, "%s must be an integer >= %ld, got '%s'",
					 what, lo, s);
		return qual_fail(msg, QUAL_EINVAL, "%s must be an integer in [%ld, %ld], got '%s'",
				 what, lo, hi, s);
	}
	*out = x;
	return 0;
}

int text_parse_double(const char *what, const char *s, double lo, double hi,
		      double *out, struct qual_msg *msg)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(s, &end);
	if (errno || end == s || *end || isspace((unsigned char)s[0]) || !isfinite(x) ||
	    x < lo || x > hi) {
		if (isinf(lo) && isinf(hi))
			return qual_fail(msg, QUAL_EINVAL, "%s must be a number, got '%s'",
					 what, s);
		if (isinf(hi))
			return qual_fail(msg, QUAL_EINVAL, "%s must be a number >= %g, got '%s'",
					 what, lo, s);
		return qual_fail(msg, QUAL_EINVAL, "%s must be a number in [%g, %g], got '%s'",
				 what, lo, hi, s);
	}
	*out = x;
	return 0;
}
