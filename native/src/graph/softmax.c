/* Softmax and LogSoftmax over the innermost axis, one row per unit of
 * work: numerically stable (the row's max is subtracted before exp, so that
 * exp takes only x <= 0: acl_exp_nonpositive), the max and the sum folded
 * in vectors (fold_rows.h) so that every pass over the row vectorises. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "activation.h"
#include "fold_rows.h"
#include "graph_impl.h"

typedef struct {
    const float *x;
    float *y;
    size_t rows, len;
    int log;
} softmax_params;

/* e^(x - shift) of FOLD_LANES floats at x, stored at y if `store`. */
static inline __attribute__((always_inline)) fold_vec exp_vec(const float *x, fold_vec shift,
                                                              float *y, int store)
{
    fold_vec v = fold_load(x) - shift;
    for (int l = 0; l < FOLD_LANES; l++) v[l] = acl_exp_nonpositive(v[l]);
    if (store) memcpy(y, &v, sizeof v);
    return v;
}

/* The sum of e^(x[i] - max) over a row, each stored in y[i] if `store`:
 * FOLD_LANES sums in each of four vectors, vector j of the row going to sum
 * j % 4, the four added pairwise, then the lanes pairwise, then the tail in
 * order.  One pass that makes and adds the exps; y may be the row x itself,
 * and is left alone unless `store`.
 * Four sums rather than one, so that the adds do not wait each for the one
 * before (4% of a Softmax of 256-float rows). */
static inline __attribute__((always_inline)) float exps(const float *x, float max, float *y,
                                                        size_t len, int store)
{
    const size_t whole = len / FOLD_LANES * FOLD_LANES;
    const fold_vec shift = (fold_vec){0} + max;
    fold_vec s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    size_t i = 0;
    for (; i + 4 * FOLD_LANES <= whole; i += 4 * FOLD_LANES) {
        s0 += exp_vec(x + i, shift, y + i, store);
        s1 += exp_vec(x + i + FOLD_LANES, shift, y + i + FOLD_LANES, store);
        s2 += exp_vec(x + i + 2 * FOLD_LANES, shift, y + i + 2 * FOLD_LANES, store);
        s3 += exp_vec(x + i + 3 * FOLD_LANES, shift, y + i + 3 * FOLD_LANES, store);
    }
    if (i < whole) s0 += exp_vec(x + i, shift, y + i, store), i += FOLD_LANES;
    if (i < whole) s1 += exp_vec(x + i, shift, y + i, store), i += FOLD_LANES;
    if (i < whole) s2 += exp_vec(x + i, shift, y + i, store), i += FOLD_LANES;
    float sum = fold_lanes(ACL_REDUCE_SUM, (s0 + s1) + (s2 + s3));
    for (; i < len; i++) {
        const float e = acl_exp_nonpositive(x[i] - max);
        if (store) y[i] = e;
        sum += e;
    }
    return sum;
}

static void softmax_rows(const void *arg, size_t begin, size_t end)
{
    const softmax_params *p = arg;
    const size_t len = p->len;
    /* The next row's max is found before this row's exps, so that its chain
     * of compares overlaps them; found just before its own exps, which wait
     * for it, it held every row up (MobileViT's 4096 rows of 256 floats,
     * two cores: 0.130 -> 0.101 ms; its model's Softmax nodes 0.60 -> 0.47
     * ms).  That holds for an input in cache, as the node before leaves it;
     * read from memory (evicted), it was 12% slower than the plain order. */
    float next = fold_row(ACL_REDUCE_MAX, p->x + begin * len, len);
    for (size_t r = begin; r < end; r++) {
        const float *x = p->x + r * len;
        float *y = p->y + r * len;
        const float max = next;
        if (r + 1 < end) next = fold_row(ACL_REDUCE_MAX, x + len, len);
        if (p->log) {
            const float log_sum = logf(exps(x, max, y, len, 0));
            for (size_t i = 0; i < len; i++) y[i] = (x[i] - max) - log_sum;
            continue;
        }
        const float scale = 1.0f / exps(x, max, y, len, 1);
        for (size_t i = 0; i < len; i++) y[i] *= scale;
    }
}

static int softmax_run(const void *arg, const acl_exec *ex)
{
    const softmax_params *p = arg;
    return graph_parallel(ex, p->rows, p->len, softmax_rows, p);
}

int graph_op_softmax(acl_graph *g, const acl_softmax_attrs *attrs, int nin, const acl_tensor *in,
                     const acl_tensor *out)
{
    size_t count;
    /* In place is fine: a row's max is found before any of it is written. */
    if (graph_check_like_input(g, "softmax", in, out, 1, &count) != 0) return -1;
    if (in->rank < 1) return acl_fail("softmax: the input must have rank >= 1, not a scalar");
    softmax_params *p = malloc(sizeof *p);
    if (!p) return acl_fail("softmax: out of memory");
    const size_t len = (size_t)in->dims[in->rank - 1];
    *p = (softmax_params){graph_ptr(g, in), graph_ptr(g, out), count / len, len, attrs->log};
    return graph_add(g, softmax_run, NULL, p);
}
