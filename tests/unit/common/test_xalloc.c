/* common/xalloc.c: XGROW, the one way an array grows (room doubles, 16 at
 * first, never shrinks, contents kept, never past what an allocation can
 * hold), and allocation failure ending the program with the size said. */
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
	assert_int_equal(xgrow_cap(0, 1, 1), 16);
	assert_int_equal(xgrow_cap(0, 16, 1), 16);
	assert_int_equal(xgrow_cap(0, 17, 1), 32);
	assert_int_equal(xgrow_cap(5, 6, 1), 16);
	assert_int_equal(xgrow_cap(16, 17, 1), 32);
	assert_int_equal(xgrow_cap(100, 101, 1), 200);
	assert_int_equal(xgrow_cap(100, 1000, 1), 1600);
	assert_int_equal(xgrow_cap(0, 1000, 1), 1024);
	/* The item size does not change the count while the bytes fit. */
	assert_int_equal(xgrow_cap(100, 1000, 1 << 20), 1600);
}

/* Near the most bytes an allocation can have (PTRDIFF_MAX), the room stops
 * there rather than doubling past it: its bytes always fit a size_t. */
static void test_grow_cap_limit(void **state)
{
	size_t size = 16, most = (size_t)PTRDIFF_MAX / size;

	(void)state;
	assert_int_equal(xgrow_cap(most / 2 + 1, most / 2 + 2, size), most);
	assert_int_equal(xgrow_cap(0, most, size), most);
	/* Items so large that fewer than 16 fit. */
	size = (size_t)PTRDIFF_MAX / 8;
	assert_int_equal(xgrow_cap(0, 1, size), 8);
	assert_int_equal(xgrow_cap(0, 8, size), 8);
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
	return (int)xgrow_cap(SIZE_MAX / 2, SIZE_MAX, 1);
}

/* Items of a MiB, for XGROW with counts whose bytes pass what an
 * allocation can have. */
struct mib {
	char bytes[1 << 20];
};

/* XGROW to GROW_ITEMS_WRAP MiB items: their bytes would wrap a size_t (to
 * a small allocation that XGROW would then take for the whole room). */
#define GROW_ITEMS_WRAP ((SIZE_MAX >> 20) + 2)
/* And to GROW_ITEMS_PAST: 2^63 bytes, one past PTRDIFF_MAX, no wrap. */
#define GROW_ITEMS_PAST ((size_t)PTRDIFF_MAX / sizeof(struct mib) + 1)

static int grow_items(size_t need)
{
	struct mib *a = NULL;
	size_t cap = 0;

	XGROW(a, need, cap);
	a[cap - 1].bytes[0] = 1;
	free(a);
	return 0;
}

static int grow_items_wrap(void *arg)
{
	(void)arg;
	return grow_items(GROW_ITEMS_WRAP);
}

static int grow_items_past(void *arg)
{
	(void)arg;
	return grow_items(GROW_ITEMS_PAST);
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

/* XGROW of large items ends the program before the count times the item
 * size can wrap or pass PTRDIFF_MAX, saying how much was asked for. */
static void test_grow_items_overflow(void **state)
{
	struct {
		int (*fn)(void *);
		size_t need;
		bool wraps;
	} cases[] = {
		{ grow_items_wrap, GROW_ITEMS_WRAP, true },
		{ grow_items_past, GROW_ITEMS_PAST, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char want[128], *err;

		if (cases[i].wraps)
			snprintf(want, sizeof want,
				 "qual: out of memory allocating %zu items of %zu bytes\n",
				 cases[i].need, sizeof(struct mib));
		else
			snprintf(want, sizeof want, "qual: out of memory allocating %zu bytes\n",
				 cases[i].need * sizeof(struct mib));
		err = aborts(cases[i].fn);
		assert_string_equal(err, want);
		free(err);
	}
}

QUAL_TESTS(
	cmocka_unit_test(test_grow_cap),
	cmocka_unit_test(test_grow_cap_limit),
	cmocka_unit_test(test_xgrow),
	cmocka_unit_test(test_xstrdup),
	cmocka_unit_test(test_out_of_memory),
	cmocka_unit_test(test_grow_overflow),
	cmocka_unit_test(test_grow_items_overflow),
)
