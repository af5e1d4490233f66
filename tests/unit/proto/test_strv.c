/* proto/strv.c: arguments that travel out of sight of /proc/PID/cmdline
 * (NUL-terminated strings on a descriptor or in a file) read back exactly,
 * empty ones and ones with spaces, quotes and newlines included; a sealed
 * memfd cannot be changed once made; and --args-fd takes only itself. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/strv.h"
#include "tests/unit/test_main.h"

static const char *const sample[] = {
	"qual-run", "--case", "gemm_f16-256x512x256", "", "a b", "it's \"quoted\"",
	"two\nlines", "--candidate-opt=-DX=1", NULL,
};

static void assert_same(char *const *got, const char *const *want)
{
	size_t i;

	for (i = 0; want[i]; i++) {
		assert_non_null(got[i]);
		assert_string_equal(got[i], want[i]);
	}
	assert_null(got[i]);
}

static void test_join_push(void **state)
{
	struct strv sv;
	size_t len;
	char *data;

	(void)state;
	data = strv_join_nul(sample, &len);
	assert_int_equal(data[len - 1], '\0');
	strv_init(&sv);
	strv_push_nul(&sv, data, len);
	assert_same(sv.v, sample);
	strv_release(&sv);
	/* A last string without its NUL is taken whole; nothing is nothing. */
	strv_push_nul(&sv, "a\0b", 3);
	assert_int_equal(sv.n, 2);
	assert_string_equal(sv.v[1], "b");
	strv_release(&sv);
	strv_push_nul(&sv, "", 0);
	assert_int_equal(sv.n, 0);
	strv_release(&sv);
	free(data);
}

/* strv_args_memfd() and strv_args_from_fd(): what one writes the other
 * reads, argv[0] kept; the memfd refuses writes (sealed). */
static void test_args_fd(void **state)
{
	struct qual_msg m;
	struct strv keep;
	char fdtext[16], *argv0[] = { "qual-run", "--args-fd", fdtext, NULL };
	char **argv = argv0;
	int argc = 3, fd;

	(void)state;
	fd = strv_args_memfd(sample, &m);
	assert_true(fd > 2);
	assert_int_equal(write(fd, "x", 1), -1);
	assert_int_equal(errno, EPERM);
	snprintf(fdtext, sizeof fdtext, "%d", fd);
	strv_init(&keep);
	assert_int_equal(strv_args_from_fd(&argc, &argv, &keep, &m), 0);
	assert_int_equal(argc, 8);
	assert_same(argv, sample);
	/* It closed the descriptor. */
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	strv_release(&keep);
}

static void test_args_fd_refused(void **state)
{
	struct qual_msg m;
	struct strv keep;
	char *other[] = { "qual-run", "--args-fd", "0", "--help", NULL };
	char *bad[] = { "qual-run", "--args-fd", "x", NULL };
	char *none[] = { "qual-run", "--help", NULL };
	char **argv;
	int argc;

	(void)state;
	strv_init(&keep);
	argv = other;
	argc = 4;
	assert_int_equal(strv_args_from_fd(&argc, &argv, &keep, &m), QUAL_EINVAL);
	assert_string_equal(m.text, "--args-fd N takes no other argument: the command line "
			    "is on descriptor N");
	argv = bad;
	argc = 3;
	assert_int_equal(strv_args_from_fd(&argc, &argv, &keep, &m), QUAL_EINVAL);
	assert_string_equal(m.text, "--args-fd must be a descriptor from 0 to 1023, got 'x'");
	/* Without --args-fd first the command line is the command line. */
	argv = none;
	argc = 2;
	assert_int_equal(strv_args_from_fd(&argc, &argv, &keep, &m), 0);
	assert_ptr_equal(argv, none);
	assert_int_equal(keep.n, 0);
}

/* More than cap bytes on the descriptor: refused, naming it. */
static void test_read_cap(void **state)
{
	struct qual_msg m;
	struct strv sv;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "abc\0def\0", 8), 8);
	close(p[1]);
	strv_init(&sv);
	assert_int_equal(strv_read_nul_fd(&sv, p[0], 7, &m), QUAL_ELIMIT);
	assert_non_null(strstr(m.text, "are over 7 bytes"));
	assert_int_equal(sv.n, 0);
	close(p[0]);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "abc\0def\0", 8), 8);
	close(p[1]);
	assert_int_equal(strv_read_nul_fd(&sv, p[0], 8, &m), 0);
	assert_int_equal(sv.n, 2);
	assert_string_equal(sv.v[1], "def");
	close(p[0]);
	strv_release(&sv);
}

QUAL_TESTS(
	cmocka_unit_test(test_join_push),
	cmocka_unit_test(test_args_fd),
	cmocka_unit_test(test_args_fd_refused),
	cmocka_unit_test(test_read_cap),
)
