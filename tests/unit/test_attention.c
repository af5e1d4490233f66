/* The GQA attention oracle and fixture: the oracle against a naive long-double
 * softmax written differently, the builder's geometry and inputs, and the
 * tolerance against both the kernel's arithmetic (emulated here in f32) and
 * plausible kernel bugs, which it must reject by a wide margin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/unit/test_main.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/attention.h"
#include "fixtures/cases.h"
#include "common/err.h"
#include "fixtures/fixture.h"
#include "oracles/half.h"

/* |a - b| <= tol, with both values in the message when not. */
#define assert_close(a, b, tol) assert_close_at((a), (b), (tol), __FILE__, __LINE__)
static void assert_close_at(double a, double b, double tol, const char *file, int line)
{
	if (!(fabs(a - b) <= tol)) {
		print_error("%.17g and %.17g differ by more than %.3g\n", a, b, tol);
		_fail(file, line);
	}
}

#define HEADS 4
#define DIM 128

/* Naive reference: all logits of a row stored, softmax normalised first
 * (two passes over stored values), then the weighted sum, in long double.
 * Options to reproduce kernel bugs: a wrong scale, a key range left out, the
 * wrong query head. */
struct naive_opts {
	long double scale;
	int skip_lo, skip_hi; /* keys [skip_lo, skip_hi) left out */
	int head_shift;       /* use query head (h + head_shift) % heads */
};

static void naive_row(const double *q, const double *k, const double *v,
		      int tokens, int heads, int dim, int t, int h,
		      const struct naive_opts *o, long double *out)
{
	long double *logit = malloc(sizeof(long double) * (size_t)tokens);
	long double mx = -INFINITY, total = 0;
	int hq = (h + o->head_shift) % heads;
	const double *qr = q + ((size_t)t * heads + hq) * dim;

	assert_non_null(logit);
	for (int j = 0; j < tokens; j++) {
		long double s = 0;
		for (int c = 0; c < dim; c++)
			s += (long double)qr[c] * k[(size_t)j * dim + c];
		logit[j] = s * o->scale;
		if (j >= o->skip_lo && j < o->skip_hi)
			continue;
		if (logit[j] > mx)
			mx = logit[j];
	}
	for (int j = 0; j < tokens; j++) {
		if (j >= o->skip_lo && j < o->skip_hi) {
			logit[j] = 0;
			continue;
		}
		logit[j] = expl(logit[j] - mx);
		total += logit[j];
	}
	for (int j = 0; j < tokens; j++)
		logit[j] /= total; /* probabilities */
	for (int c = 0; c < dim; c++) {
		long double acc = 0;
		for (int j = 0; j < tokens; j++)
			acc += logit[j] * v[(size_t)j * dim + c];
		out[c] = acc;
	}
	free(logit);
}

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 11;
}

static double uniform(uint64_t *s, double lo, double hi)
{
	return lo + (hi - lo) * (double)lcg(s) / 9007199254740992.0;
}

/* The oracle against the naive version on small odd shapes with arbitrary
 * (not f16) values, including a row whose logits span a wide range. */
static void test_oracle_matches_naive(void **state)
{
	static const int shapes[][3] = { { 1, 1, 1 }, { 5, 3, 7 }, { 17, 2, 9 },
					  { 33, 4, 16 } };
	uint64_t s = 42;

	(void)state;
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		int tokens = shapes[i][0], heads = shapes[i][1], dim = shapes[i][2];
		size_t qn = (size_t)tokens * heads * dim, kn = (size_t)tokens * dim;
		double *q = malloc(qn * sizeof *q), *k = malloc(kn * sizeof *k);
		double *v = malloc(kn * sizeof *v), *out = malloc(qn * sizeof *out);
		long double row[16];
		double scale = 1.0 / sqrt((double)dim) * 3.0, max_logit = -1;
		double want_max = 0;
		struct naive_opts o = { scale, 0, 0, 0 };

		assert_true(q && k && v && out);
		for (size_t j = 0; j < qn; j++)
			q[j] = uniform(&s, -3, 3);
		for (size_t j = 0; j < kn; j++) {
			k[j] = uniform(&s, -3, 3);
			v[j] = uniform(&s, -1, 1);
		}
		oracle_attention_compute(q, k, v, tokens, heads, dim, scale, out,
					 &max_logit);
		for (int t = 0; t < tokens; t++) {
			for (int h = 0; h < heads; h++) {
				naive_row(q, k, v, tokens, heads, dim, t, h, &o, row);
				for (int c = 0; c < dim; c++)
					assert_close(out[((size_t)t * heads + h) * dim + c],
							    (double)row[c], 1e-12);
				for (int j = 0; j < tokens; j++) {
					double d = 0;
					for (int c = 0; c < dim; c++)
						d += q[((size_t)t * heads + h) * dim + c] *
						     k[(size_t)j * dim + c];
					if (fabs(d * scale) > want_max)
						want_max = fabs(d * scale);
				}
			}
		}
		assert_close(max_logit, want_max, 1e-12 * want_max);
		free(q);
		free(k);
		free(v);
		free(out);
	}
}

/* A case small enough to work by hand: one head, one channel, two tokens,
 * scale 1. Row 0: logits q0*k = (1*ln3, 1*0) -> weights (3/4, 1/4), output
 * 3/4 * 2 + 1/4 * (-2) = 1. Row 1 with q = 0: equal weights, output 0. */
static void test_oracle_by_hand(void **state)
{
	double q[2] = { 1.0, 0.0 }, k[2] = { log(3.0), 0.0 }, v[2] = { 2.0, -2.0 };
	double out[2], max_logit;

	(void)state;
	oracle_attention_compute(q, k, v, 2, 1, 1, 1.0, out, &max_logit);
	assert_close(out[0], 1.0, 1e-15);
	assert_close(out[1], 0.0, 1e-15);
	assert_close(max_logit, log(3.0), 1e-15);
}

/* The inputs of a built case as doubles. */
struct inputs {
	double *q, *k, *v;
	int tokens;
};

static void inputs_load(const struct fixture_case *c, struct inputs *in)
{
	size_t qn, kn;

	in->tokens = (int)c->scalars[0];
	qn = (size_t)in->tokens * HEADS * DIM;
	kn = (size_t)in->tokens * DIM;
	in->q = malloc(qn * sizeof(double));
	in->k = malloc(kn * sizeof(double));
	in->v = malloc(kn * sizeof(double));
	assert_true(in->q && in->k && in->v);
	for (size_t i = 0; i < qn; i++)
		in->q[i] = half_to_double(((const uint16_t *)c->buffers[0].host)[i]);
	for (size_t i = 0; i < kn; i++) {
		in->k[i] = half_to_double(((const uint16_t *)c->buffers[1].host)[i]);
		in->v[i] = half_to_double(((const uint16_t *)c->buffers[2].host)[i]);
	}
}

static void inputs_release(struct inputs *in)
{
	free(in->q);
	free(in->k);
	free(in->v);
}

/* True when bits has period p over its whole length. */
static bool periodic(const uint16_t *bits, size_t n, size_t p)
{
	for (size_t i = 0; i + p < n; i++)
		if (bits[i] != bits[i + p])
			return false;
	return true;
}

static void check_built(int tokens)
{
	struct fixture_case c;
	char name[64];
	size_t qn = (size_t)tokens * HEADS * DIM, kn = (size_t)tokens * DIM;
	struct fixture_case again;

	memset(&c, 0, sizeof c);
	assert_int_equal(fixture_attention_build(tokens, 1234, &c), 0);
	snprintf(name, sizeof name, "attention_f16-%d", tokens);
	assert_string_equal(c.name, name);
	assert_string_equal(c.family, "attention");
	assert_string_equal(c.kernel, "attention_gqa_f16");
	assert_ptr_equal(c.source, fixture_src_attention);
	assert_non_null(strstr(c.source, "attention_gqa_f16("));
	/* 64 (token, head) rows per block, 128 threads. */
	assert_int_equal(c.grid[0], (unsigned)tokens / 16);
	assert_int_equal(c.grid[1], 1);
	assert_int_equal(c.grid[2], 1);
	assert_int_equal(c.block[0], 128);
	assert_int_equal(c.block[1] * c.block[2], 1);
	assert_int_equal(c.nbuffers, 4);
	assert_int_equal(c.buffers[0].bytes, qn * 2);
	assert_int_equal(c.buffers[1].bytes, kn * 2);
	assert_int_equal(c.buffers[2].bytes, kn * 2);
	assert_int_equal(c.buffers[3].bytes, qn * 2);
	for (int i = 0; i < 4; i++)
		assert_int_equal(c.buffers[i].output, i == 3);
	assert_int_equal(c.output, 3);
	assert_int_equal(c.nscalars, 1);
	assert_int_equal(c.scalars[0], (uint32_t)tokens);
	assert_int_equal(c.elem, FIXTURE_F16);
	assert_int_equal(c.count, qn);
	assert_int_equal(c.row_length, DIM);
	assert_close(c.flops, 4.0 * HEADS * tokens * (double)tokens * DIM, 0);
	assert_non_null(c.tolerance_why);
	/* The derived bound is below 10^-3 for these inputs. */
	assert_true(c.tolerance > 4e-4 && c.tolerance < 1e-3);

	/* Inputs: in range, on their grid, not periodic, and each buffer
	 * different from the others. */
	for (int b = 0; b < 3; b++) {
		const uint16_t *bits = c.buffers[b].host;
		size_t n = c.buffers[b].bytes / 2;
		double unit = b < 2 ? 0x1p-5 : 0x1p-6, lim = b < 2 ? 2.25 : 1.0;
		double maxabs = 0;

		for (size_t i = 0; i < n; i++) {
			double x = half_to_double(bits[i]);
			assert_true(fabs(x) <= lim);
			assert_true(x / unit == rint(x / unit));
			if (fabs(x) > maxabs)
				maxabs = fabs(x);
		}
		assert_true(maxabs == lim); /* the range is used */
		for (size_t p = 1; p <= 4096 && p < n; p++)
			assert_false(periodic(bits, n, p));
	}
	assert_memory_not_equal(c.buffers[1].host, c.buffers[2].host, kn * 2);
	for (size_t i = 0; i < qn; i++)
		assert_true(isfinite(c.expected[i]) && fabs(c.expected[i]) <= 1.0);

	/* Deterministic in the seed; another seed gives other inputs. */
	memset(&again, 0, sizeof again);
	assert_int_equal(fixture_attention_build(tokens, 1234, &again), 0);
	assert_memory_equal(c.buffers[0].host, again.buffers[0].host, qn * 2);
	assert_memory_equal(c.expected, again.expected, qn * sizeof(double));
	fixture_release(&again);
	memset(&again, 0, sizeof again);
	assert_int_equal(fixture_attention_build(tokens, 1235, &again), 0);
	assert_memory_not_equal(c.buffers[0].host, again.buffers[0].host, qn * 2);
	fixture_release(&again);
	fixture_release(&c);
}

static void test_build_128(void **state)
{
	(void)state;
	check_built(128);
}

static void test_build_512(void **state)
{
	(void)state;
	check_built(512);
}

static void test_build_rejects(void **state)
{
	struct fixture_case c;

	(void)state;
	memset(&c, 0, sizeof c);
	assert_int_equal(fixture_attention_build(0, 1, &c), QUAL_EINVAL);
	assert_int_equal(fixture_attention_build(100, 1, &c), QUAL_EINVAL);
	assert_int_equal(fixture_attention_build(-64, 1, &c), QUAL_EINVAL);
	assert_null(c.expected);
}

/* Both names resolve through the case table and build. */
static void test_table(void **state)
{
	static const char *const names[] = { "attention_f16-128", "attention_f16-512" };

	(void)state;
	for (int i = 0; i < 2; i++) {
		struct fixture_case c;
		int index = fixture_find(names[i]);

		assert_true(index >= 0);
		assert_int_equal(fixture_build(index, 0, &c), 0);
		assert_string_equal(c.name, names[i]);
		assert_string_equal(c.family, "attention");
		fixture_release(&c);
	}
}

/* One output row as the kernel computes it, in f32: scores (exact), scaled
 * into base-2 exponents with the kernel's f32 constant, online softmax over
 * tiles of 64 keys with f32 row sums, P rounded to f16 for the products, f32
 * accumulation, division by the row sum, f16 output. exp2f stands in for
 * ex2.approx (both within the derivation's 2^-21). */
static void kernel_row(const struct inputs *in, int t, int h, double *out)
{
	const float c = (float)(1.4426950408889634 / sqrt(128.0));
	const double *qr = in->q + ((size_t)t * HEADS + h) * DIM;
	float m = -1e30f, l = 0, acc[DIM];

	for (int i = 0; i < DIM; i++)
		acc[i] = 0;
	for (int j0 = 0; j0 < in->tokens; j0 += 64) {
		float s[64], mx = m, alpha;

		for (int j = 0; j < 64; j++) {
			double d = 0;
			for (int i = 0; i < DIM; i++)
				d += qr[i] * in->k[(size_t)(j0 + j) * DIM + i];
			s[j] = (float)d; /* exact */
			if (s[j] * c > mx)
				mx = s[j] * c;
		}
		alpha = exp2f(m - mx);
		m = mx;
		l *= alpha;
		for (int i = 0; i < DIM; i++)
			acc[i] *= alpha;
		for (int j = 0; j < 64; j++) {
			float p = exp2f(s[j] * c - m);
			float p16 = (float)half_to_double(half_from_double(p));
			l += p;
			for (int i = 0; i < DIM; i++)
				acc[i] += p16 * (float)in->v[(size_t)(j0 + j) * DIM + i];
		}
	}
	for (int i = 0; i < DIM; i++)
		out[i] = half_to_double(half_from_double(acc[i] * (1.0f / l)));
}

/* Largest |expected - f(row)| over sampled rows, f given by naive options. */
static double bug_error(const struct fixture_case *c, const struct inputs *in,
			const struct naive_opts *o)
{
	long double row[DIM];
	double worst = 0;

	for (int t = 0; t < in->tokens; t += 7) {
		for (int h = 0; h < HEADS; h++) {
			naive_row(in->q, in->k, in->v, in->tokens, HEADS, DIM, t, h, o, row);
			for (int i = 0; i < DIM; i++) {
				double e = fabs((double)row[i] -
						c->expected[((size_t)t * HEADS + h) * DIM + i]);
				if (e > worst)
					worst = e;
			}
		}
	}
	return worst;
}

static void check_tolerance(int tokens)
{
	struct fixture_case c;
	struct inputs in;
	const long double scale = 1.0L / sqrtl(128.0L);
	struct naive_opts right = { scale, 0, 0, 0 };
	struct naive_opts bugs[] = {
		{ scale * 1.4426950408889634L, 0, 0, 0 }, /* log2(e) folded twice */
		{ scale / 1.4426950408889634L, 0, 0, 0 }, /* log2(e) not folded */
		{ 1.0L / sqrtl(64.0L), 0, 0, 0 },        /* wrong head size */
		{ scale, 64, 128, 0 },                   /* a K/V tile dropped */
		{ scale, 0, 0, 1 },                      /* the wrong query head */
	};
	double worst = 0, hardest = INFINITY;

	memset(&c, 0, sizeof c);
	assert_int_equal(fixture_attention_build(tokens, 0x5eed, &c), 0);
	inputs_load(&c, &in);
	/* The expected values are the naive reference's (rows sampled). */
	assert_true(bug_error(&c, &in, &right) < 1e-12);
	/* The kernel's arithmetic stays inside the tolerance. */
	for (int t = 0; t < tokens; t += 3) {
		for (int h = 0; h < HEADS; h++) {
			double row[DIM];
			kernel_row(&in, t, h, row);
			for (int i = 0; i < DIM; i++) {
				double e = fabs(row[i] - c.expected[((size_t)t * HEADS + h) * DIM + i]);
				if (e > worst)
					worst = e;
			}
		}
	}
	print_message("attention_f16-%d: tolerance %.3g, emulated kernel error %.3g\n",
		      tokens, c.tolerance, worst);
	assert_true(worst <= c.tolerance);
	assert_true(worst > 0); /* the emulation does round */
	/* Plausible bugs miss it by more than an order of magnitude. */
	for (size_t b = 0; b < sizeof bugs / sizeof bugs[0]; b++) {
		double e = bug_error(&c, &in, &bugs[b]);
		if (e < hardest)
			hardest = e;
	}
	print_message("attention_f16-%d: smallest bug error %.3g (%.0fx tolerance)\n",
		      tokens, hardest, hardest / c.tolerance);
	assert_true(hardest > 20 * c.tolerance);
	inputs_release(&in);
	fixture_release(&c);
}

static void test_tolerance_128(void **state)
{
	(void)state;
	check_tolerance(128);
}

static void test_tolerance_512(void **state)
{
	(void)state;
	check_tolerance(512);
}

QUAL_TESTS(
	cmocka_unit_test(test_oracle_matches_naive),
	cmocka_unit_test(test_oracle_by_hand),
	cmocka_unit_test(test_build_128),
	cmocka_unit_test(test_build_512),
	cmocka_unit_test(test_build_rejects),
	cmocka_unit_test(test_table),
	cmocka_unit_test(test_tolerance_128),
	cmocka_unit_test(test_tolerance_512),
)
