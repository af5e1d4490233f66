/* libFuzzer target: quald's HTTP endpoint (daemon/http.c) as a client
 * reaches it. The input is the bytes a client sends on one connection (a
 * request, several, or anything); they go through a socketpair into the real
 * endpoint (H2O's parser, quald's routing, query parsing, the API over a
 * real jobs module on a state directory holding one finished job, event
 * streams, /metrics), whose loop runs until it has answered; then the
 * endpoint is closed, as at a stop, and must finish.
 *
 * Invariants (each failure is a finding):
 *   the endpoint answers with nothing, or with bytes that start
 *   "HTTP/1.1 NNN " (a status of three digits);
 *   a 2xx status only for a GET or a HEAD (it is read-only);
 *   a whole request for /api/status or the stored job is answered 200
 *   when it names the endpoint (Host: x, a name the target gives as
 *   --http-host would), 421 when it names another host (evil.example),
 *   and 404 for the stored job spelled with a zero more (j0000001);
 *   a single HEAD request served 2xx is answered with headers and nothing
 *   after them;
 *   the connection ends (every response closes it) and http_close's done
 *   runs, with every handle of the endpoint closed;
 *   ASan, UBSan and LeakSanitizer find nothing. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>

#include "common/err.h"
#include "daemon/http.h"
#include "daemon/jobs.h"
#include "daemon/store.h"
#include "fuzz.h"

static uv_loop_t loop;
static struct jobs *jobs;
static char root[] = "/tmp/qual-fuzz-http-XXXXXX";
static char sock_path[128];

static void on_line(void *ctx, const char *job, struct line *line)
{
	(void)ctx, (void)job, (void)line;
}

/* One finished job in the store, so that the job routes have lines. */
static void make_job(const char *state_dir)
{
	static const char *const lines[] = {
		"{\"type\":\"start\",\"schema_version\":5,\"job\":\"j000001\",\"seq\":0}",
		"{\"type\":\"pair\",\"case\":\"gemm_f16-256x512x256\",\"baseline_ns\":1000,"
		"\"candidate_ns\":990,\"job\":\"j000001\",\"seq\":1}",
		"{\"type\":\"case_verdict\",\"case\":\"gemm_f16-256x512x256\",\"verdict\":"
		"\"equivalent\",\"ratio\":0.99,\"job\":\"j000001\",\"seq\":2}",
		"{\"type\":\"verdict\",\"verdict\":\"neutral\",\"job\":\"j000001\",\"seq\":3}",
	};
	struct qual_msg msg = {{0}};
	struct store *s;
	json_t *req, *st;
	int fd;

	FUZZ_CHECK(store_open(state_dir, &s, &msg) == 0);
	req = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:{s:s}}",
			"baseline", "/usr/lib/a.so", "candidate", "/usr/lib/b.so",
			"baseline_real_path", "/usr/lib/a.so",
			"candidate_real_path", "/usr/lib/b.so",
			"baseline_sha256",
			"0000000000000000000000000000000000000000000000000000000000000000",
			"candidate_sha256",
			"1111111111111111111111111111111111111111111111111111111111111111",
			"pairs", 30, "labels", "build", "fuzz");
	st = json_pack("{s:s,s:s,s:s,s:s,s:s,s:i}", "state", "done", "verdict", "neutral",
		       "submitted", "2026-12-04T00:00:00Z", "started", "2026-12-04T00:00:01Z",
		       "finished", "2026-12-04T00:00:02Z", "slot", 0);
	FUZZ_CHECK(store_job_create(s, "j000001", req, st, &msg) == 0);
	FUZZ_CHECK(store_log_open(s, "j000001", &fd, &msg) == 0);
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		FUZZ_CHECK(store_log_append(fd, NULL, lines[i], strlen(lines[i]), true, &msg) == 0);
	close(fd);
	json_decref(req);
	json_decref(st);
	store_free(s);
}

static void setup(void)
{
	struct jobs_config cfg = {0};
	struct qual_msg msg = {{0}};
	char state_dir[160];

	FUZZ_CHECK(mkdtemp(root));
	snprintf(state_dir, sizeof state_dir, "%s/state", root);
	snprintf(sock_path, sizeof sock_path, "%s/http.sock", root);
	make_job(state_dir);
	FUZZ_CHECK(uv_loop_init(&loop) == 0);
	cfg.state_dir = state_dir;
	cfg.worker = "/bin/false";
	cfg.compile_helper = "/bin/false";
	cfg.nslots = 1;
	if (jobs_open(&loop, &cfg, on_line, NULL, &jobs, &msg) < 0) {
		fprintf(stderr, "fuzz_http: %s\n", msg.text);
		abort();
	}
}

static bool closed;

static void on_closed(void *ctx)
{
	(void)ctx;
	closed = true;
}

/* Whether the request line names GET or HEAD. The parser skips an empty
 * line before a request line (RFC 9112 2.2), so leading CR and LF bytes
 * do not count. */
static bool is_safe_method(const uint8_t *data, size_t size)
{
	while (size > 0 && (*data == '\r' || *data == '\n')) {
		data++;
		size--;
	}
	return (size >= 4 && !memcmp(data, "GET ", 4)) || (size >= 5 && !memcmp(data, "HEAD ", 5));
}

/* Whether the input is exactly one well-formed GET of path for host,
 * HTTP/1.1. */
static bool is_whole_get(const uint8_t *data, size_t size, const char *path, const char *host)
{
	char want[160];
	int n = snprintf(want, sizeof want, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, host);

	return size == (size_t)n && !memcmp(data, want, size);
}

/* Whether the answer's status is status ("200"). */
static bool answered(const char *resp, size_t got, const char *status)
{
	return got >= 13 && !memcmp(resp, "HTTP/1.1 ", 9) && !memcmp(resp + 9, status, 3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const hosts[] = {"x"};
	struct http_config hcfg = {.listen = sock_path, .rule = {false, 0, "qual"},
				   .hosts = hosts, .nhosts = 1};
	struct qual_msg msg = {{0}};
	struct http *h;
	static char resp[1 << 16];
	size_t got = 0, sent = 0;
	int sv[2], idle = 0;
	bool eof = false;

	if (!jobs)
		setup();
	FUZZ_CHECK(http_open(&loop, &hcfg, &h, &msg) == 0);
	http_attach(h, jobs, NULL, NULL);
	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	FUZZ_CHECK(fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
	FUZZ_CHECK(http_adopt_fd(h, sv[0]) == 0);
	/* Send, let the endpoint read and answer, read what it answers, until
	 * it closes or nothing moves for a while (an event stream stays open:
	 * the close below ends it). */
	while (!eof && idle < 50) {
		bool moved = false;
		ssize_t n;

		if (sent < size) {
			n = write(sv[1], data + sent, size - sent);
			if (n > 0) {
				sent += (size_t)n;
				moved = true;
			}
			if (sent == size)
				shutdown(sv[1], SHUT_WR);
		} else if (size == 0 && sent == 0) {
			shutdown(sv[1], SHUT_WR);
			sent = 1;
		}
		uv_run(&loop, UV_RUN_NOWAIT);
		n = read(sv[1], resp + got, got < sizeof resp ? sizeof resp - got : 0);
		if (n > 0) {
			got += (size_t)n;
			moved = true;
			if (got == sizeof resp)
				got = 16; /* keep the status line, drop the rest */
		} else if (n == 0 && got < sizeof resp) {
			eof = true;
		}
		idle = moved ? 0 : idle + 1;
	}
	if (got > 0) {
		FUZZ_CHECK(got >= 13 && !memcmp(resp, "HTTP/1.1 ", 9));
		FUZZ_CHECK(resp[9] >= '1' && resp[9] <= '5' && resp[10] >= '0' && resp[10] <= '9' &&
			   resp[11] >= '0' && resp[11] <= '9' && resp[12] == ' ');
		if (resp[9] == '2')
			FUZZ_CHECK(is_safe_method(data, size));
	}
	/* A HEAD that was served (2xx: H2O parsed it as one; a request it
	 * cannot parse gets its own 400 with a body) is answered with headers
	 * alone. */
	if (got > 13 && resp[9] == '2' && size >= 5 && !memcmp(data, "HEAD ", 5) &&
	    memmem(data, size, "\r\n\r\n", 4) == (const void *)(data + size - 4)) {
		const char *end = memmem(resp, got, "\r\n\r\n", 4);

		FUZZ_CHECK(end && (size_t)(end + 4 - resp) == got);
	}
	if (is_whole_get(data, size, "/api/status", "x") ||
	    is_whole_get(data, size, "/api/jobs/j000001", "x") ||
	    is_whole_get(data, size, "/api/jobs/j000001", "localhost"))
		FUZZ_CHECK(answered(resp, got, "200"));
	if (is_whole_get(data, size, "/api/status", "evil.example") ||
	    is_whole_get(data, size, "/api/jobs/j000001/events", "evil.example") ||
	    is_whole_get(data, size, "/", "evil.example"))
		FUZZ_CHECK(answered(resp, got, "421"));
	if (is_whole_get(data, size, "/api/jobs/j0000001", "x") ||
	    is_whole_get(data, size, "/api/jobs/j0000001/events", "x"))
		FUZZ_CHECK(answered(resp, got, "404"));
	closed = false;
	http_close(h, on_closed, NULL);
	close(sv[1]);
	for (int i = 0; i < 100000 && !closed; i++)
		uv_run(&loop, UV_RUN_ONCE);
	FUZZ_CHECK(closed);
	http_free(h);
	return 0;
}
