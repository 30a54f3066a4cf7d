/* ONNX ReduceSum / Mean / Max / Min over axes adjacent in the stored order,
 * so the input is [outer, len, inner]: each output row of `inner` floats
 * folds `len` input rows, in blocks and pairs (fold_rows.h), vectorised
 * along inner, or along lanes of a contiguous row when inner is 1 (a
 * LayerNorm's mean over its last axis).  The work is split over outer rows
 * and, when inner is wider than one tile, over its tiles of columns (a
 * ReduceMean over the pixels of one image still spreads over the cores). */
#include <stdlib.h>

#include "fold_rows.h"
#include "graph_impl.h"

typedef struct {
    int op;
    const float *x;
    float *y;
    size_t outer, len, inner, tiles; /* tiles: of FOLD_MAX_WIDTH columns per outer row */
} reduce_params;

/* Unit u: one outer row's tile of columns; written once, instantiated per
 * op so each loop vectorises. */
static inline __attribute__((always_inline)) void reduce_unit(int op, const reduce_params *p,
                                                              size_t u)
{
    const size_t o = u / p->tiles, i0 = u % p->tiles * FOLD_MAX_WIDTH;
    const float *x = p->x + o * p->len * p->inner + i0;
    float *y = p->y + o * p->inner + i0;
    const size_t w = p->inner - i0 < FOLD_MAX_WIDTH ? p->inner - i0 : FOLD_MAX_WIDTH;
    if (p->inner == 1) y[0] = fold_row(op, x, p->len);
    else if (w == FOLD_MAX_WIDTH)  /* a constant width stays in registers */
        fold_rows(op, x, p->len, p->inner, FOLD_MAX_WIDTH, y);
    else fold_rows(op, x, p->len, p->inner, (int)w, y);
    if (op == ACL_REDUCE_MEAN) {
        const float scale = 1.0f / (float)p->len;
        for (size_t i = 0; i < w; i++) y[i] *= scale;
    }
}

static void reduce_units(const void *arg, size_t begin, size_t end)
{
    const reduce_params *p = arg;
    for (size_t u = begin; u < end; u++) switch (p->op) {
        case ACL_REDUCE_MAX: reduce_unit(ACL_REDUCE_MAX, p, u); break;
        case ACL_REDUCE_MIN: reduce_unit(ACL_REDUCE_MIN, p, u); break;
        case ACL_REDUCE_MEAN: reduce_unit(ACL_REDUCE_MEAN, p, u); break;
        default: reduce_unit(ACL_REDUCE_SUM, p, u); break;
        }
}

static int reduce_run(const void *arg, const acl_exec *ex)
{
    const reduce_params *p = arg;
    const size_t width = p->inner < FOLD_MAX_WIDTH ? p->inner : FOLD_MAX_WIDTH;
    return graph_parallel(ex, p->outer * p->tiles, p->len * width, reduce_units, p);
}

int graph_op_reduce(acl_graph *g, const acl_reduce_attrs *attrs, int nin, const acl_tensor *in,
                    const acl_tensor *out)
{
    size_t count, out_count;
    if (graph_check_tensor(g, "reduce", "input", in, &count) != 0 ||
        graph_check_tensor(g, "reduce", "output", out, &out_count) != 0 ||
        graph_check_disjoint("reduce", out, "the input", in, 0) != 0)
        return -1;
    if (attrs->op < ACL_REDUCE_SUM || attrs->op > ACL_REDUCE_MIN)
        return acl_fail("reduce: unknown operation %d", attrs->op);
    if (attrs->axes_count < 1) return acl_fail("reduce: axes must name at least one axis");
    const int first = attrs->axes[0], last = attrs->axes[attrs->axes_count - 1];
    int dims[ACL_MAX_RANK];
    for (int a = 0; a < in->rank; a++) dims[a] = in->dims[a];
    for (int i = 0; i < attrs->axes_count; i++) {
        if (first < 0 || attrs->axes[i] != first + i || attrs->axes[i] >= in->rank)
            return acl_fail("reduce: axes must be adjacent, ascending axes of the rank-%d "
                            "input",
                            in->rank);
        dims[attrs->axes[i]] = 1;
    }
    if (graph_check_dims("reduce", "output", out, in->rank, dims) != 0) return -1;
    size_t outer = 1, len = 1, inner = 1;
    for (int a = 0; a < in->rank; a++)
        *(a < first ? &outer : a <= last ? &len : &inner) *= (size_t)in->dims[a];
    if (len == 0 || count == 0) return acl_fail("reduce: the input is empty");
    reduce_params *p = malloc(sizeof *p);
    if (!p) return acl_fail("reduce: out of memory");
    *p = (reduce_params){attrs->op,
                         graph_ptr(g, in),
                         graph_ptr(g, out),
                         outer,
                         len,
                         inner,
                         (inner + FOLD_MAX_WIDTH - 1) / FOLD_MAX_WIDTH};
    return graph_add(g, reduce_run, NULL, p);
}
