/* LayerNormalization over the innermost axis: one row of D floats per unit
 * of work, split over the cores.  Each row's mean, then its variance as the
 * mean of the centred squares, are sums in blocks and pairs (fold_row),
 * so that their rounding error does not grow with D; the squares are made
 * in the output row, which the normalised values then overwrite. */
#include <math.h>
#include <stdlib.h>

#include "fold_rows.h"
#include "graph_impl.h"

typedef struct {
    const float *x, *scale, *shift;
    float *y;
    size_t rows, len;
    float epsilon;
} layer_norm_params;

static void layer_norm_rows(const void *arg, size_t begin, size_t end)
{
    const layer_norm_params *p = arg;
    const size_t n = p->len;
    const float *restrict scale = p->scale, *restrict shift = p->shift;
    for (size_t row = begin; row < end; row++) {
        const float *restrict x = p->x + row * n;
        float *restrict y = p->y + row * n;
        const float mean = fold_row(ACL_REDUCE_SUM, x, n) / (float)n;
        for (size_t i = 0; i < n; i++) y[i] = (x[i] - mean) * (x[i] - mean);
        const float rstd = 1.0f / sqrtf(fold_row(ACL_REDUCE_SUM, y, n) / (float)n + p->epsilon);
        for (size_t i = 0; i < n; i++) y[i] = (x[i] - mean) * rstd * scale[i] + shift[i];
    }
}

static int layer_norm_run(const void *arg, const acl_exec *ex)
{
    const layer_norm_params *p = arg;
    return graph_parallel(ex, p->rows, 4 * p->len, layer_norm_rows, p);
}

int graph_op_layer_norm(acl_graph *g, const acl_layer_norm_attrs *a, int nin, const acl_tensor *ins,
                        const acl_tensor *out)
{
    const char *name = "layer_norm";
    const acl_tensor *x = &ins[0];
    size_t count;
    if (graph_check_like_input(g, name, x, out, 0, &count) != 0) return -1;
    if (x->rank < 1) return acl_fail("%s: the input has no axis to normalise (rank 0)", name);
    if (!(a->epsilon >= 0.0f))
        return acl_fail("%s: epsilon must be >= 0, got %g", name, (double)a->epsilon);
    const int d = x->dims[x->rank - 1];
    if (graph_check_scale_shift(g, name, ins, out, d) != 0) return -1;
    layer_norm_params *p = malloc(sizeof *p);
    if (!p) return acl_fail("%s: out of memory", name);
    *p = (layer_norm_params){graph_ptr(g, x),   graph_ptr(g, &ins[1]), graph_ptr(g, &ins[2]),
                             graph_ptr(g, out), count / (size_t)d,     (size_t)d,
                             a->epsilon};
    return graph_add(g, layer_norm_run, NULL, p);
}
