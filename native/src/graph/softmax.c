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

/* The sum of e^(x[i] - max) over a row, each stored in y[i] if `store`:
 * FOLD_LANES sums in a vector, each of every FOLD_LANES-th term in order,
 * then the lanes pairwise, then the tail in order.  One pass that makes and
 * adds the exps; y may be the row x itself. */
static inline __attribute__((always_inline)) float exps(const float *x, float max, float *y,
                                                        size_t len, int store)
{
    const size_t whole = len / FOLD_LANES * FOLD_LANES;
    const fold_vec shift = (fold_vec){0} + max;
    fold_vec sums = {0};
    for (size_t i = 0; i < whole; i += FOLD_LANES) {
        fold_vec v = fold_load(x + i) - shift;
        for (int l = 0; l < FOLD_LANES; l++) v[l] = acl_exp_nonpositive(v[l]);
        if (store) memcpy(y + i, &v, sizeof v);
        sums += v;
    }
    float lanes[FOLD_LANES];
    memcpy(lanes, &sums, sizeof lanes);
    for (int half = FOLD_LANES / 2; half >= 1; half /= 2)
        for (int l = 0; l < half; l++) lanes[l] += lanes[l + half];
    float sum = lanes[0];
    for (size_t i = whole; i < len; i++) {
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
    for (size_t r = begin; r < end; r++) {
        const float *x = p->x + r * len;
        float *y = p->y + r * len;
        const float max = fold_row(ACL_REDUCE_MAX, x, len);
        if (p->log) {
            const float log_sum = logf(exps(x, max, NULL, len, 0));
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
