/* Float64 reference for grouped-query attention (non-causal, all tokens).
 * Plain loops over exactly the values the GPU reads (the caller passes the
 * f16 inputs converted to double, which is exact); shares no code with the
 * kernel. */
#ifndef QUAL_ORACLE_ATTENTION_H
#define QUAL_ORACLE_ATTENTION_H

/* For every token t and query head h:
 *   out[t][h][c] = sum_j softmax_j(scale * q[t][h] . k[j]) v[j][c]
 * with q [tokens][heads][dim], k and v [tokens][dim] (one K/V head shared by
 * all query heads), out [tokens][heads][dim] (caller's storage). The scores
 * of a row are computed twice (once for the maximum, once for the weights) so
 * that no scratch memory is needed.
 * *max_abs_logit (if not NULL) receives max |scale * q[t][h] . k[j]| over all
 * t, h, j: the size of the softmax arguments, which the fixture's tolerance
 * derivation needs. Requires tokens, heads, dim >= 1. */
void oracle_attention_compute(const double *q, const double *k,
			      const double *v, int tokens, int heads, int dim,
			      double scale, double *out, double *max_abs_logit);

#endif
