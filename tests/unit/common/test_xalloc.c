/* common/xalloc.c: XGROW, the one way an array grows (room doubles, 16 at
 * first, never shrinks, contents kept), and allocation failure ending the
 * program with the size said. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/child.h"
#include "common/xalloc.h"
#include "tests/unit/test_main.h"

static void test_grow_cap(void **state)
{
	(void)state;
	assert_int_equal(xgrow_cap(0, 1), 16);
	assert_int_equal(xgrow_cap(0, 16), 16);
	assert_int_equal(xgrow_cap(0, 17), 32);
	assert_int_equal(xgrow_cap(5, 6), 16);
	assert_int_equal(xgrow_cap(16, 17), 32);
	assert_int_equal(xgrow_cap(100, 101), 200);
	assert_int_equal(xgrow_cap(100, 1000), 1600);
	assert_int_equal(xgrow_cap(0, 1000), 1024);
}

static void test_xgrow(void **state)
{
	int *a = NULL;
	unsigned short cap = 0; /* any integer type */
	int *before;
	size_t nothing = 0;

	(void)state;
	XGROW(a, 1, cap);
	assert_non_null(a);
	assert_int_equal(cap, 16);
	for (int i = 0; i < 16; i++)
		a[i] = i * 3;
	/* Room enough: nothing moves. */
	before = a;
	XGROW(a, 16, cap);
	assert_ptr_equal(a, before);
	assert_int_equal(cap, 16);
	XGROW(a, nothing, cap);
	assert_int_equal(cap, 16);
	/* More: doubled, contents kept. */
	XGROW(a, 17, cap);
	assert_int_equal(cap, 32);
	for (int i = 0; i < 16; i++)
		assert_int_equal(a[i], i * 3);
	XGROW(a, 1000, cap);
	assert_int_equal(cap, 1024);
	for (int i = 0; i < 16; i++)
		assert_int_equal(a[i], i * 3);
	a[1023] = 7; /* the whole room is there (the sanitizer build checks) */
	free(a);
}

static void test_xstrdup(void **state)
{
	char *s = xstrdup("copy");
	char *e = xstrdup("");

	(void)state;
	assert_string_equal(s, "copy");
	assert_string_equal(e, "");
	free(s);
	free(e);
	/* Zero sizes give something to free. */
	free(xmalloc(0));
	free(xcalloc(0, 8));
	free(xrealloc(NULL, 0));
}

/* In the child: asks for more than any machine has. */
static int ask_too_much(void *arg)
{
	(void)arg;
	free(xmalloc(SIZE_MAX / 2));
	return 0;
}

static int grow_too_far(void *arg)
{
	(void)arg;
	return (int)xgrow_cap(SIZE_MAX / 2, SIZE_MAX);
}

/* Runs fn in a child; returns its stderr, checks it died by SIGABRT. */
static char *aborts(int (*fn)(void *))
{
	struct child c;
	struct child_exit ex;
	char *err;
	size_t len;

	child_init(&c);
	c.fn = fn;
	c.err = CHILD_PIPE;
	assert_int_equal(child_start(&c, NULL), 0);
	assert_int_equal(child_read_capped(c.err_pipe, 4096, child_now() + 10, &err, &len,
					   NULL), 0);
	close(c.err_pipe);
	assert_int_equal(child_wait(&c, child_now() + 10, &ex), 0);
	assert_int_equal(child_exit_signal(&ex), SIGABRT);
	return err;
}

static void test_out_of_memory(void **state)
{
	char want[128], *err;

	(void)state;
#if defined(__SANITIZE_ADDRESS__)
	/* ASan reports a request this large itself, before malloc could fail. */
	qual_test_skip("under AddressSanitizer");
#endif
	err = aborts(ask_too_much);
	snprintf(want, sizeof want, "qual: out of memory allocating %zu bytes\n", SIZE_MAX / 2);
	assert_non_null(strstr(err, want));
	free(err);
}

static void test_grow_overflow(void **state)
{
	char want[128], *err;

	(void)state;
	err = aborts(grow_too_far);
	snprintf(want, sizeof want, "qual: out of memory allocating %zu bytes\n", SIZE_MAX);
	assert_string_equal(err, want);
	free(err);
}

QUAL_TESTS(
	cmocka_unit_test(test_grow_cap),
	cmocka_unit_test(test_xgrow),
	cmocka_unit_test(test_xstrdup),
	cmocka_unit_test(test_out_of_memory),
	cmocka_unit_test(test_grow_overflow),
)
