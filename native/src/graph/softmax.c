/* Softmax over the innermost axis, one row per unit of work: numerically
 * stable (the row's max is subtracted before exp), with the activations'
 * vectorisable exp, the max and the sum folded in lanes (fold_rows.h) so
 * that every pass over the row vectorises. */
#include <stdlib.h>

#include "activation.h"
#include "fold_rows.h"
#include "graph_impl.h"

typedef struct {
    const float *x;
    float *y;
    size_t rows, len;
} softmax_params;

static void softmax_rows(const void *arg, size_t begin, size_t end)
{
    const softmax_params *p = arg;
    for (size_t r = begin; r < end; r++) {
        const float *x = p->x + r * p->len;
        float *y = p->y + r * p->len;
        const float max = fold_row(ACL_REDUCE_MAX, x, p->len);
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
    *p = (softmax_params){graph_ptr(g, in), graph_ptr(g, out), count / len, len};
    return graph_add(g, softmax_run, NULL, p);
}
