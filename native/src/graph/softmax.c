/* Softmax and LogSoftmax over the innermost axis, one row per unit of
 * work: numerically stable (the row's max is subtracted before exp), with
 * the activations' vectorisable exp, the max and the sum folded in lanes
 * (fold_rows.h) so that every pass over the row vectorises. */
#include <math.h>
#include <stdlib.h>

#include "activation.h"
#include "fold_rows.h"
#include "graph_impl.h"

typedef struct {
    const float *x;
    float *y;
    size_t rows, len;
    int log;
} softmax_params;

/* sum e^y[i] over a row: FOLD_LANES sums, each of every FOLD_LANES-th term
 * in order, then the lanes pairwise, then the tail in order: the exps are
 * not stored, so that y may be the row x itself. */
static float sum_exp(const float *y, size_t len)
{
    const size_t whole = len / FOLD_LANES * FOLD_LANES;
    float lanes[FOLD_LANES] = {0};
    for (size_t i = 0; i < whole; i += FOLD_LANES)
        for (int l = 0; l < FOLD_LANES; l++) lanes[l] += acl_exp(y[i + l]);
    for (int half = FOLD_LANES / 2; half >= 1; half /= 2)
        for (int l = 0; l < half; l++) lanes[l] += lanes[l + half];
    float sum = lanes[0];
    for (size_t i = whole; i < len; i++) sum += acl_exp(y[i]);
    return sum;
}

static void softmax_rows(const void *arg, size_t begin, size_t end)
{
    const softmax_params *p = arg;
    for (size_t r = begin; r < end; r++) {
        const float *x = p->x + r * p->len;
        float *y = p->y + r * p->len;
        const float max = fold_row(ACL_REDUCE_MAX, x, p->len);
        if (p->log) {
            for (size_t i = 0; i < p->len; i++) y[i] = x[i] - max;
            const float log_sum = logf(sum_exp(y, p->len));
            for (size_t i = 0; i < p->len; i++) y[i] -= log_sum;
            continue;
        }
        for (size_t i = 0; i < p->len; i++) y[i] = acl_exp(x[i] - max);
        const float scale = 1.0f / fold_row(ACL_REDUCE_SUM, y, p->len);
        for (size_t i = 0; i < p->len; i++) y[i] *= scale;
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
    size_t count, out_count;
    if (graph_check_tensor(g, "softmax", "input", in, &count) != 0 ||
        graph_check_tensor(g, "softmax", "output", out, &out_count) != 0 ||
        graph_check_dims("softmax", "output", out, in->rank, in->dims) != 0 ||
        /* In place is fine: a row's max is found before any of it is written. */
        graph_check_disjoint("softmax", out, "the input", in, 1) != 0)
        return -1;
    if (in->rank < 1) return acl_fail("softmax: the input must have rank >= 1, not a scalar");
    softmax_params *p = malloc(sizeof *p);
    if (!p) return acl_fail("softmax: out of memory");
    const size_t len = (size_t)in->dims[in->rank - 1];
    *p = (softmax_params){graph_ptr(g, in), graph_ptr(g, out), count / len, len, attrs->log};
    return graph_add(g, softmax_run, NULL, p);
}
