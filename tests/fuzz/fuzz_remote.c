/* libFuzzer target: a line of the Slurm bridge's stderr and the node's exit
 * file (proto/remote.c), as quald reads the first (remote_status_parse)
 * and the bridge the second (remote_exit_parse). The input is both.
 *
 * Invariants (each failure is a finding):
 *   status    0 (free text: the input does not start with the prefix), 1
 *             (a status: every field NUL-terminated within its array, the
 *             state not empty, and written again by remote_status_format
 *             it reads back the same), or QUAL_EINVAL with a message;
 *   exit      0 (the end read back the same once written again, the
 *             bridge's status in 0..255) or QUAL_EINVAL with a message;
 *   memory    ASan and UBSan, and LeakSanitizer after every input. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "proto/remote.h"

static void check_status(const uint8_t *data, size_t size)
{
	struct remote_status st, back;
	struct qual_msg m = { .text = "" };
	char line[2048];
	int rc = remote_status_parse((const char *)data, size, &st, &m), n;

	FUZZ_CHECK(rc == 0 || rc == 1 || rc == QUAL_EINVAL);
	FUZZ_CHECK(rc != QUAL_EINVAL || m.text[0]);
	FUZZ_CHECK(rc != 0 || size < strlen(REMOTE_STATUS_PREFIX) ||
		   memcmp(data, REMOTE_STATUS_PREFIX, strlen(REMOTE_STATUS_PREFIX)));
	if (rc != 1)
		return;
	FUZZ_CHECK(memchr(st.backend, '\0', sizeof st.backend));
	FUZZ_CHECK(memchr(st.id, '\0', sizeof st.id));
	FUZZ_CHECK(memchr(st.state, '\0', sizeof st.state) && st.state[0]);
	FUZZ_CHECK(memchr(st.reason, '\0', sizeof st.reason));
	FUZZ_CHECK(memchr(st.node, '\0', sizeof st.node));
	n = remote_status_format(&st, line, sizeof line);
	FUZZ_CHECK(n > 0);
	FUZZ_CHECK(remote_status_parse(line, (size_t)n, &back, &m) == 1);
	/* Values cut to fit stay valid UTF-8, so they can be written again. */
	FUZZ_CHECK(remote_status_equal(&st, &back));
}

static void check_exit(const uint8_t *data, size_t size)
{
	struct remote_exit e, back;
	struct qual_msg m = { .text = "" };
	char text[1024];
	int rc = remote_exit_parse((const char *)data, size, &e, &m), n, status;

	FUZZ_CHECK(rc == 0 || rc == QUAL_EINVAL);
	if (rc < 0) {
		FUZZ_CHECK(m.text[0]);
		return;
	}
	status = remote_exit_status(&e);
	FUZZ_CHECK(status >= 0 && status <= 255);
	n = remote_exit_format(&e, text, sizeof text);
	FUZZ_CHECK(n > 0);
	FUZZ_CHECK(remote_exit_parse(text, (size_t)n, &back, &m) == 0);
	FUZZ_CHECK(back.end == e.end && back.value == e.value &&
		   !strcmp(back.message, e.message));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_status(data, size);
	check_exit(data, size);
	return 0;
}
