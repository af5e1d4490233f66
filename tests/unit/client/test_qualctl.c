/* Unit tests of qualctl's modules: the views of a job (client/view.c) and
 * the connection's line reader and socket choice (client/conn.c). qualctl
 * itself, against a fake quald, is tests/tools/qualctl_fake.py. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "client/conn.h"
#include "common/exitcode.h"
#include "client/view.h"
#include "tests/unit/test_main.h"

/* ---- helpers ---- */

static json_t *parse(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);

	if (!j)
		fail_msg("bad test json: %s: %s", e.text, text);
	return j;
}

/* Feeds lines (NULL-terminated) to v and returns what they print (malloc'd). */
static char *feed(struct view_job *v, unsigned flags, const char *const *lines)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	for (; *lines; lines++) {
		json_t *l = parse(*lines);
		view_job_take(v, l, f, flags);
		json_decref(l);
	}
	fclose(f);
	return text;
}

static char *summary(const struct view_job *v)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	view_summary(f, v);
	fclose(f);
	return text;
}

/* What lines print when fed to a fresh view of job (malloc'd). */
static char *plain(const char *job, unsigned flags, const char *const *lines)
{
	struct view_job v;
	char *out;

	view_job_init(&v, job);
	out = feed(&v, flags, lines);
	view_job_release(&v);
	return out;
}

/* The summary table of a fresh view of job that took lines (malloc'd). */
static char *summary_of(const char *job, const char *const *lines)
{
	struct view_job v;
	char *out;

	view_job_init(&v, job);
	free(feed(&v, 0, lines));
	out = summary(&v);
	view_job_release(&v);
	return out;
}

#define START2 "{\"type\":\"start\",\"timed\":true,\"device\":{\"name\":\"H200\"},\"arch\":\"sm_90\"," \
	"\"settings\":{\"pairs\":3,\"cases\":[\"a-1\",\"b-2\"]}}"
#define CASE_A "{\"type\":\"case\",\"case\":\"a-1\",\"timed\":true,\"identical_code\":false," \
	"\"baseline\":{\"compiled\":true},\"candidate\":{\"compiled\":true}," \
	"\"static\":{\"code_bytes_delta\":-64,\"registers_delta\":0,\"spill_stores_delta\":3}}"
#define PAIR_A(b, c) "{\"type\":\"pair\",\"case\":\"a-1\",\"baseline_ns\":" #b ",\"candidate_ns\":" #c "}"

/* ---- exit statuses ---- */

static void test_exit_status(void **state)
{
	(void)state;
	assert_int_equal(view_exit_status("improvement"), QUAL_EXIT_PASS);
	assert_int_equal(view_exit_status("neutral"), QUAL_EXIT_PASS);
	assert_int_equal(view_exit_status("not_timed"), QUAL_EXIT_PASS);
	assert_int_equal(view_exit_status("regression"), QUAL_EXIT_REGRESSION);
	assert_int_equal(view_exit_status("fail"), QUAL_EXIT_FAIL);
	assert_int_equal(view_exit_status("error"), QUAL_EXIT_ERROR);
	assert_int_equal(view_exit_status("cancelled"), QUAL_EXIT_ERROR);
	assert_int_equal(view_exit_status("interrupted"), QUAL_EXIT_ERROR);
	/* What qualctl does not know must not pass a gate. */
	assert_int_equal(view_exit_status("Neutral"), QUAL_EXIT_ERROR);
	assert_int_equal(view_exit_status(""), QUAL_EXIT_ERROR);
	assert_int_equal(view_exit_status(NULL), QUAL_EXIT_ERROR);
	assert_int_equal(QUAL_EXIT_NO_DAEMON, 5);
}

/* Every control character in every string of a line, however deep, becomes
 * a visible escape; other text (UTF-8 included) and the keys are kept. */
static void test_clean_controls(void **state)
{
	json_t *o = json_loads("{\"path\":\"/a\\u001b[2J\\nb\\t\\r\\u007f\\u009bx \\u00e9\","
			       "\"arms\":[{\"path\":\"\\u0007\"}],\"n\":3}", 0, NULL);

	(void)state;
	assert_non_null(o);
	view_clean(o);
	assert_string_equal(json_string_value(json_object_get(o, "path")),
			    "/a\\x1b[2J\\nb\\t\\r\\x7f\\u009bx \xc3\xa9");
	assert_string_equal(json_string_value(json_object_get(
		json_array_get(json_object_get(o, "arms"), 0), "path")), "\\x07");
	assert_int_equal(json_integer_value(json_object_get(o, "n")), 3);
	json_decref(o);
}

/* Not timed: the verdict line's timed false or its not_timed verdict; a
 * verdict line without timed (quald's own) says nothing. */
static void test_not_timed(void **state)
{
	static const struct {
		const char *verdict;
		bool not_timed;
	} cases[] = {
		{"{\"type\":\"verdict\",\"verdict\":\"not_timed\",\"timed\":false}", true},
		{"{\"type\":\"verdict\",\"verdict\":\"not_timed\"}", true},
		{"{\"type\":\"verdict\",\"verdict\":\"neutral\",\"timed\":false}", true},
		{"{\"type\":\"verdict\",\"verdict\":\"neutral\",\"timed\":true}", false},
		{"{\"type\":\"verdict\",\"verdict\":\"cancelled\"}", false},
	};
	struct view_job v;

	(void)state;
	view_job_init(&v, "j1");
	assert_false(view_not_timed(&v));
	view_job_release(&v);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *line = json_loads(cases[i].verdict, 0, NULL);

		view_job_init(&v, "j1");
		view_job_take(&v, line, NULL, 0);
		assert_int_equal(view_not_timed(&v), cases[i].not_timed);
		view_job_release(&v);
		json_decref(line);
	}
	assert_int_equal(QUAL_EXIT_NOT_TIMED, 6);
}

/* ---- the progress line ---- */

static void test_progress_states(void **state)
{
	static const char *const start[] = {START2, NULL};
	static const char *const case_a[] = {CASE_A, PAIR_A(100, 90), PAIR_A(100, 110), NULL};
	static const char *const tie[] = {PAIR_A(100, 100), NULL};
	static const char *const verdict[] = {"{\"type\":\"verdict\",\"verdict\":\"neutral\"}", NULL};
	struct view_job v;
	char buf[256];

	(void)state;
	view_job_init(&v, "j7");
	view_progress(&v, buf, sizeof buf, 0);
	assert_string_equal(buf, "job j7: starting");
	v.position = 2;
	view_progress(&v, buf, sizeof buf, 0);
	assert_string_equal(buf, "job j7: queued, position 2");
	free(feed(&v, 0, start));
	view_progress(&v, buf, sizeof buf, 0);
	assert_string_equal(buf, "job j7: compiling case 1/2");
	free(feed(&v, 0, case_a));
	view_progress(&v, buf, sizeof buf, 0);
	assert_string_equal(buf, "job j7: case 1/2 a-1: pair 2/3, candidate faster 1, slower 1");
	free(feed(&v, 0, tie));
	/* The case's pairs are done: the next case compiles. */
	view_progress(&v, buf, sizeof buf, 0);
	assert_string_equal(buf, "job j7: compiling case 2/2");
	v.case_index = 2;
	view_progress(&v, buf, sizeof buf, 0);
	assert_string_equal(buf, "job j7: judging");
	free(feed(&v, 0, verdict));
	view_progress(&v, buf, sizeof buf, 0);
	assert_string_equal(buf, "");
	view_job_release(&v);
}

static void test_progress_ties_and_width(void **state)
{
	static const char *const lines[] = {START2, CASE_A, PAIR_A(5, 5), NULL};
	struct view_job v;
	char buf[256], small[12];

	(void)state;
	view_job_init(&v, "j8");
	free(feed(&v, 0, lines));
	view_progress(&v, buf, sizeof buf, 0);
	assert_string_equal(buf, "job j8: case 1/2 a-1: pair 1/3, candidate faster 0, slower 0, even 1");
	/* A terminal 20 columns wide gets 19: never the last column. */
	view_progress(&v, buf, sizeof buf, 20);
	assert_string_equal(buf, "job j8: case 1/2 a-");
	/* A small buffer is cut, not overrun. */
	view_progress(&v, small, sizeof small, 0);
	assert_string_equal(small, "job j8: cas");
	view_job_release(&v);
}

/* ---- plain lines ---- */

static void test_plain_lines(void **state)
{
	static const char *const lines[] = {
		START2, CASE_A, PAIR_A(100, 90), PAIR_A(100, 110), PAIR_A(100, 120),
		"{\"type\":\"case\",\"case\":\"b-2\",\"timed\":false,\"identical_code\":false,"
		"\"baseline\":{\"compiled\":true},\"candidate\":{\"compiled\":false}}",
		"{\"type\":\"error\",\"stage\":\"compile\",\"arm\":\"candidate\",\"case\":\"b-2\","
		"\"message\":\"cannot compile 'b-2': syntax error\"}",
		"{\"type\":\"error\",\"stage\":\"setup\",\"arm\":null,\"case\":null,\"message\":\"no device\"}",
		NULL,
	};
	char *out;

	(void)state;
	out = plain("j1", 0, lines);
	assert_string_equal(out,
		"start: 2 cases, 3 pairs each on 'H200' for sm_90; baseline ? ? '?', candidate ? ? '?'\n"
		"case a-1: compiled (code differs: code -64 bytes, spill stores +3)\n"
		"case a-1: 3 pairs, candidate faster in 1, slower in 2\n"
		"case b-2: candidate did not compile\n"
		"error: case b-2: candidate compile: cannot compile 'b-2': syntax error\n"
		"error: setup: no device\n");
	free(out);
}

static void test_plain_sessions(void **state)
{
	/* Pairs that come session by session are summed up per session. */
	static const char *const lines[] = {
		"{\"type\":\"start\",\"device\":null,\"arch\":\"sm_90\",\"settings\":"
		"{\"pairs\":4,\"sessions\":2,\"cases\":[\"a-1\"]}}",
		"{\"type\":\"pair\",\"case\":\"a-1\",\"pair\":0,\"block\":1,\"session\":1,"
		"\"baseline_ns\":100,\"candidate_ns\":90}",
		"{\"type\":\"pair\",\"case\":\"a-1\",\"pair\":1,\"block\":1,\"session\":1,"
		"\"baseline_ns\":100,\"candidate_ns\":110}",
		"{\"type\":\"pair\",\"case\":\"a-1\",\"pair\":2,\"block\":2,\"session\":2,"
		"\"baseline_ns\":100,\"candidate_ns\":120}",
		"{\"type\":\"pair\",\"case\":\"a-1\",\"pair\":3,\"block\":2,\"session\":2,"
		"\"baseline_ns\":100,\"candidate_ns\":130}",
		"{\"type\":\"error\",\"stage\":\"time\",\"arm\":null,\"case\":null,\"message\":\"x\"}",
		NULL,
	};
	char *out;

	(void)state;
	out = plain("j3", 0, lines);
	assert_non_null(strstr(out, "case a-1: session 1 of 2: 2 pairs, candidate faster in 1, slower in 1\n"
				    "case a-1: session 2 of 2: 2 pairs, candidate faster in 0, slower in 2\n"));
	free(out);
}

static void test_plain_partial_pairs(void **state)
{
	/* Pairs cut short by an error are summed up when the error comes. */
	static const char *const lines[] = {
		START2, CASE_A, PAIR_A(100, 90),
		"{\"type\":\"error\",\"stage\":\"time\",\"arm\":\"candidate\",\"case\":\"a-1\",\"message\":\"fault\"}",
		NULL,
	};
	char *out;

	(void)state;
	out = plain("j2", 0, lines);
	assert_non_null(strstr(out, "case a-1: 1 pairs, candidate faster in 1, slower in 0\n"
				    "error: case a-1: candidate time: fault\n"));
	free(out);
}

static void test_plain_verdicts_prefixed(void **state)
{
	static const char *const lines[] = {
		"{\"type\":\"case_verdict\",\"case\":\"a-1\",\"verdict\":\"slower\",\"n\":30,"
		"\"identical_code\":false,\"ratio_median\":1.05,\"ratio_lo\":1.04,\"ratio_hi\":1.06,"
		"\"p_holm\":0.000123}",
		"{\"type\":\"case_verdict\",\"case\":\"b-2\",\"verdict\":\"fail\",\"failed_arm\":\"candidate\","
		"\"n\":0,\"identical_code\":false}",
		"{\"type\":\"case_verdict\",\"case\":\"c-3\",\"verdict\":\"equivalent\",\"n\":30,"
		"\"identical_code\":true,\"ratio_median\":null,\"ratio_lo\":null,\"ratio_hi\":null,\"p_holm\":1}",
		"{\"type\":\"verdict\",\"verdict\":\"fail\",\"message\":\"the candidate failed\"}",
		NULL,
	};
	struct view_job v;
	char *out;

	(void)state;
	out = plain("j3", VIEW_VERDICTS | VIEW_PREFIX, lines);
	assert_string_equal(out,
		"[j3] case a-1: 30 pairs, verdict slower, ratio 1.0500 [1.0400, 1.0600], p_holm 0.000123 (code differs)\n"
		"[j3] case b-2: verdict fail (candidate) (code differs)\n"
		"[j3] case c-3: 30 pairs, verdict equivalent, ratio -, p_holm 1 (identical code)\n"
		"[j3] verdict: fail (1 slower, 1 fail, 1 equivalent)\n"
		"[j3]   the candidate failed\n");
	free(out);
	/* Without VIEW_VERDICTS they are kept for the table, not printed. */
	view_job_init(&v, "j3");
	out = feed(&v, 0, lines);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(json_array_size(v.case_verdicts), 3);
	assert_non_null(v.verdict);
	view_job_release(&v);
}

static void test_verdict_tally_all_cases(void **state)
{
	/* A watch that began late saw one case_verdict of two: the run
	 * verdict's tally still counts both, from the verdict line. */
	static const char *const lines[] = {
		"{\"type\":\"case_verdict\",\"case\":\"b-2\",\"verdict\":\"not_timed\",\"n\":0}",
		"{\"type\":\"verdict\",\"verdict\":\"not_timed\",\"cases\":["
		"{\"case\":\"a-1\",\"verdict\":\"not_timed\"},{\"case\":\"b-2\",\"verdict\":\"not_timed\"}]}",
		NULL,
	};
	char *out;

	(void)state;
	out = plain("j9", VIEW_VERDICTS, lines);
	assert_string_equal(out, "case b-2: verdict not_timed\nverdict: not_timed (2 not_timed)\n");
	free(out);
}

/* A case the target cannot run: its reason, no code comparison (it was
 * never compiled), "-" for its code in the table, and the tally counts it. */
static void test_not_applicable(void **state)
{
	static const char *const lines[] = {
		"{\"type\":\"case\",\"case\":\"w-2\",\"applicable\":false,\"not_applicable_because\":"
		"\"case 'w-2' runs on sm_90a only, the target is sm_80\",\"identical_code\":false,"
		"\"baseline\":{\"compiled\":false},\"candidate\":{\"compiled\":false}}",
		"{\"type\":\"case_verdict\",\"case\":\"a-1\",\"verdict\":\"equivalent\",\"n\":30,"
		"\"identical_code\":false,\"ratio_median\":1.0,\"ratio_lo\":0.999,\"ratio_hi\":1.001,"
		"\"p_holm\":1}",
		"{\"type\":\"case_verdict\",\"case\":\"w-2\",\"verdict\":\"not_applicable\",\"n\":0,"
		"\"identical_code\":false,\"not_applicable_because\":\"case 'w-2' runs on sm_90a only, "
		"the target is sm_80\"}",
		"{\"type\":\"verdict\",\"verdict\":\"neutral\",\"not_applicable\":1}",
		NULL,
	};
	char *out;

	(void)state;
	out = plain("j5", VIEW_VERDICTS, lines);
	assert_string_equal(out,
		"case w-2: not applicable: case 'w-2' runs on sm_90a only, the target is sm_80\n"
		"case a-1: 30 pairs, verdict equivalent, ratio 1.0000 [0.9990, 1.0010], p_holm 1 (code differs)\n"
		"case w-2: verdict not_applicable: case 'w-2' runs on sm_90a only, the target is sm_80\n"
		"verdict: neutral (1 equivalent, 1 not_applicable)\n");
	free(out);
	out = summary_of("j5", lines);
	assert_string_equal(out,
		"case  verdict         code     baseline us  candidate us  change [lo, hi]          p_holm  detectable\n"
		"a-1   equivalent      differs  -            -             +0.00% [-0.10%, +0.10%]  1       -\n"
		"w-2   not_applicable  -        -            -             -                        -       -\n"
		"geomean over 1 timed case: +0.00% (candidate against baseline)\n"
		"verdict: neutral (1 equivalent, 1 not_applicable)\n");
	free(out);
}

/* ---- the summary table ---- */

static void test_summary_table(void **state)
{
	static const char *const lines[] = {
		"{\"type\":\"case_verdict\",\"case\":\"gemm_f16-1\",\"verdict\":\"slower\",\"n\":30,"
		"\"identical_code\":false,\"ratio_median\":1.05,\"ratio_lo\":1.045,\"ratio_hi\":1.055,"
		"\"p_holm\":1.86e-08}",
		"{\"type\":\"case_verdict\",\"case\":\"conv3x3_f16-7x7\",\"verdict\":\"identical\",\"n\":30,"
		"\"identical_code\":true,\"ratio_median\":1.0,\"ratio_lo\":0.99,\"ratio_hi\":1.01,\"p_holm\":1}",
		"{\"type\":\"verdict\",\"verdict\":\"regression\"}",
		NULL,
	};
	char *out;

	(void)state;
	out = summary_of("j4", lines);
	assert_string_equal(out,
		"case             verdict    code       baseline us  candidate us  change [lo, hi]          p_holm    detectable\n"
		"gemm_f16-1       slower     differs    -            -             +5.00% [+4.50%, +5.50%]  1.86e-08  -\n"
		"conv3x3_f16-7x7  identical  identical  -            -             +0.00% [-1.00%, +1.00%]  1         -\n"
		"geomean over 2 timed cases: +2.47% (candidate against baseline)\n"
		"verdict: regression (1 slower, 1 identical)\n");
	free(out);
}

static void test_summary_from_verdict_line(void **state)
{
	/* No case_verdict lines (a stored log cut short, quald's own verdict):
	 * the verdict line's cases, which carry no interval. */
	static const char *const lines[] = {
		"{\"type\":\"verdict\",\"verdict\":\"interrupted\",\"message\":\"quald stopped\","
		"\"cases\":[{\"case\":\"a-1\",\"verdict\":\"faster\",\"ratio_median\":0.9,\"p_holm\":0.01}]}",
		NULL,
	};
	static const char *const bare[] = {"{\"type\":\"verdict\",\"verdict\":\"cancelled\"}", NULL};
	char *out;

	(void)state;
	out = summary_of("j5", lines);
	assert_string_equal(out,
		"case  verdict  code  baseline us  candidate us  change [lo, hi]  p_holm  detectable\n"
		"a-1   faster   -     -            -             -10.00%          0.01    -\n"
		"geomean over 1 timed case: -10.00% (candidate against baseline)\n"
		"verdict: interrupted (1 faster)\n"
		"  quald stopped\n");
	free(out);
	/* Nothing at all but a verdict: just the verdict. */
	out = summary_of("j6", bare);
	assert_string_equal(out, "verdict: cancelled\n");
	free(out);
}

static void test_table(void **state)
{
	static const char *const head[] = {"slot", "device", "job"};
	static const char *const cells[] = {"0", "gpu 0", "j000001", "12", "none", "idle"};
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	/* Columns as wide as their widest cell, the last not padded. */
	f = open_memstream(&text, &len);
	view_table(f, head, 3, cells, 2);
	fclose(f);
	assert_string_equal(text,
		"slot  device  job\n"
		"0     gpu 0   j000001\n"
		"12    none    idle\n");
	free(text);
	/* No rows: the head alone. */
	text = NULL;
	f = open_memstream(&text, &len);
	view_table(f, head, 3, cells, 0);
	fclose(f);
	assert_string_equal(text, "slot  device  job\n");
	free(text);
}

/* ---- the connection's line reader ---- */

/* A connection to a socketpair's other end, and what the last read gave. */
struct pair_conn {
	struct conn c;
	int peer;
	char *line;
	size_t len;
	struct qual_msg msg;
};

static void pair_open(struct pair_conn *p)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	conn_init(&p->c);
	p->c.fd = sv[0];
	snprintf(p->c.where, sizeof p->c.where, "'test'");
	p->peer = sv[1];
}

static void pair_close(struct pair_conn *p)
{
	if (p->peer >= 0)
		close(p->peer);
	conn_release(&p->c);
}

static void put(int fd, const char *s)
{
	assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

/* conn_read_line() into p's line, len and msg. */
static int next_line(struct pair_conn *p, int timeout_ms)
{
	return conn_read_line(&p->c, timeout_ms, &p->line, &p->len, &p->msg);
}

/* The peer closes its end. */
static void peer_close(struct pair_conn *p)
{
	close(p->peer);
	p->peer = -1;
}

static void test_read_lines(void **state)
{
	struct pair_conn p;

	(void)state;
	pair_open(&p);
	put(p.peer, "{\"a\":1}\n{\"b\":");
	assert_int_equal(next_line(&p, 1000), CONN_LINE);
	assert_string_equal(p.line, "{\"a\":1}");
	assert_int_equal(p.len, 7);
	put(p.peer, "2}\n\n");
	assert_int_equal(next_line(&p, 1000), CONN_LINE);
	assert_string_equal(p.line, "{\"b\":2}");
	assert_int_equal(next_line(&p, 1000), CONN_LINE);
	assert_int_equal(p.len, 0);
	/* Nothing comes: the timeout. */
	assert_int_equal(next_line(&p, 50), QUAL_ETIMEOUT);
	assert_non_null(strstr(p.msg.text, "did not answer"));
	/* A clean end between lines. */
	peer_close(&p);
	assert_int_equal(next_line(&p, 1000), CONN_EOF);
	pair_close(&p);
}

static void test_read_eof_mid_line(void **state)
{
	struct pair_conn p;

	(void)state;
	pair_open(&p);
	put(p.peer, "{\"cut\":");
	peer_close(&p);
	assert_int_equal(next_line(&p, 1000), QUAL_EIO);
	assert_string_equal(p.msg.text, "quald at 'test' closed the connection in the middle of a line");
	pair_close(&p);
}

static void test_read_line_limit(void **state)
{
	struct pair_conn p;

	(void)state;
	pair_open(&p);
	p.c.line_max = 8;
	put(p.peer, "12345678\n123456789\n");
	assert_int_equal(next_line(&p, 1000), CONN_LINE);
	assert_string_equal(p.line, "12345678"); /* exactly line_max: accepted */
	assert_int_equal(next_line(&p, 1000), QUAL_ELIMIT);
	assert_string_equal(p.msg.text, "quald at 'test' sent a line over 8 bytes");
	pair_close(&p);
}

/* A line far larger than the first buffer and the socket's buffer, written
 * by a child in small pieces while the reader grows its buffer. */
static void test_read_long_line(void **state)
{
	enum { N = 3 << 20 };
	struct pair_conn p;
	pid_t pid;
	int status;

	(void)state;
	pair_open(&p);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static char chunk[4093]; /* odd size: newlines land anywhere */
		size_t left = N;
		memset(chunk, 'x', sizeof chunk);
		while (left > 0) {
			size_t n = left < sizeof chunk ? left : sizeof chunk;
			if (write(p.peer, chunk, n) != (ssize_t)n)
				_exit(1);
			left -= n;
		}
		_exit(write(p.peer, "\nnext\n", 6) == 6 ? 0 : 1);
	}
	peer_close(&p);
	assert_int_equal(next_line(&p, 10000), CONN_LINE);
	assert_int_equal(p.len, N);
	assert_int_equal(p.line[0], 'x');
	assert_int_equal(p.line[N - 1], 'x');
	assert_int_equal(p.line[N], '\0');
	assert_int_equal(next_line(&p, 10000), CONN_LINE);
	assert_string_equal(p.line, "next");
	assert_int_equal(next_line(&p, 10000), CONN_EOF);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	pair_close(&p);
}

static void test_socket_path(void **state)
{
	char buf[256];

	(void)state;
	unsetenv("QUAL_SOCKET");
	unsetenv("RUNTIME_DIRECTORY");
	assert_string_equal(conn_socket_path(NULL, buf, sizeof buf), "/run/qual/quald.sock");
	setenv("RUNTIME_DIRECTORY", "/run/a:/run/b", 1);
	assert_string_equal(conn_socket_path(NULL, buf, sizeof buf), "/run/a/quald.sock");
	setenv("QUAL_SOCKET", "/tmp/q.sock", 1);
	assert_string_equal(conn_socket_path(NULL, buf, sizeof buf), "/tmp/q.sock");
	assert_string_equal(conn_socket_path("/given.sock", buf, sizeof buf), "/given.sock");
	setenv("QUAL_SOCKET", "", 1); /* empty: as if unset */
	assert_string_equal(conn_socket_path(NULL, buf, sizeof buf), "/run/a/quald.sock");
	unsetenv("QUAL_SOCKET");
	unsetenv("RUNTIME_DIRECTORY");
}

static void test_unreachable(void **state)
{
	struct conn c;
	struct qual_msg msg;
	char path[200];

	(void)state;
	conn_init(&c);
	assert_int_equal(conn_open_unix(&c, "/nonexistent/quald.sock", &msg), QUAL_EIO);
	assert_string_equal(msg.text,
		"cannot reach quald at '/nonexistent/quald.sock': no such file or directory");
	memset(path, 'x', sizeof path - 1);
	path[0] = '/';
	path[sizeof path - 1] = '\0';
	assert_int_equal(conn_open_unix(&c, path, &msg), QUAL_EINVAL);
	assert_int_equal(conn_open_tcp(&c, "localhost", &msg), QUAL_EINVAL);
	assert_int_equal(conn_open_tcp(&c, ":7", &msg), QUAL_EINVAL);
	assert_int_equal(c.fd, -1);
	conn_release(&c);
}

QUAL_TESTS(
	cmocka_unit_test(test_exit_status),
	cmocka_unit_test(test_clean_controls),
	cmocka_unit_test(test_not_timed),
	cmocka_unit_test(test_progress_states),
	cmocka_unit_test(test_progress_ties_and_width),
	cmocka_unit_test(test_plain_lines),
	cmocka_unit_test(test_plain_partial_pairs),
	cmocka_unit_test(test_plain_sessions),
	cmocka_unit_test(test_plain_verdicts_prefixed),
	cmocka_unit_test(test_verdict_tally_all_cases),
	cmocka_unit_test(test_summary_table),
	cmocka_unit_test(test_not_applicable),
	cmocka_unit_test(test_summary_from_verdict_line),
	cmocka_unit_test(test_table),
	cmocka_unit_test(test_read_lines),
	cmocka_unit_test(test_read_eof_mid_line),
	cmocka_unit_test(test_read_line_limit),
	cmocka_unit_test(test_read_long_line),
	cmocka_unit_test(test_socket_path),
	cmocka_unit_test(test_unreachable),
)
