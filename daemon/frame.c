/* Request framing (frame.h). */
#include "daemon/frame.h"

#include <string.h>

/* Whether a line (its "\r" already dropped) holds only spaces and tabs: such
 * lines separate requests and are not requests themselves. */
static bool is_blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t')
			return false;
	return true;
}

enum frame_event frame_next(struct frame *f, const char *buf, size_t avail,
			    bool eof, size_t max, size_t *used,
			    const char **line, size_t *len)
{
	size_t pos = 0;

	*line = NULL;
	*len = 0;
	while (pos < avail) {
		const char *start = buf + pos;
		size_t rest = avail - pos, n;
		const char *nl = memchr(start, '\n', rest);

		if (!nl) {
			if (f->skipping) {
				pos = avail;
				break;
			}
			if (rest > max) {
				/* The client may never send the newline: hold no
				 * more than max bytes of one line. */
				f->skipping = true;
				*used = avail;
				return FRAME_OVERSIZE;
			}
			if (!eof)
				break;
			/* A last request without its newline. */
			n = rest;
			pos = avail;
		} else {
			n = (size_t)(nl - start);
			pos += n + 1;
			if (f->skipping) {
				f->skipping = false;
				continue;
			}
		}
		if (n > 0 && start[n - 1] == '\r')
			n--;
		if (is_blank(start, n))
			continue;
		*used = pos;
		*line = start;
		*len = n;
		return FRAME_LINE;
	}
	*used = pos;
	return FRAME_NONE;
}
