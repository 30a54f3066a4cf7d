/* ONNX ReduceSum / Mean / Max / Min over axes adjacent in the stored order,
 * so the input is [outer, len, inner]: each output row of `inner` floats
 * folds `len` input rows, which vectorises along inner (along len when inner
 * is 1: a LayerNorm's mean over its last axis). */
#include <stdlib.h>

#include "graph_impl.h"

typedef struct {
    int op;
    const float *x;
    float *y;
    size_t outer, len, inner;
} reduce_params;

static inline __attribute__((always_inline)) float fold(int op, float acc, float v)
{
    switch (op) {
    case ACL_REDUCE_MAX: return v > acc ? v : acc;
    case ACL_REDUCE_MIN: return v < acc ? v : acc;
    default: return acc + v;
    }
}

/* One outer index; written once, instantiated per op so each loop vectorises. */
static inline __attribute__((always_inline)) void reduce_one(int op, const reduce_params *p,
                                                             size_t o)
{
    const float *x = p->x + o * p->len * p->inner;
    float *y = p->y + o * p->inner;
    if (p->inner == 1) {
        float acc = x[0];
        for (size_t r = 1; r < p->len; r++) acc = fold(op, acc, x[r]);
        y[0] = acc;
    } else {
        for (size_t i = 0; i < p->inner; i++) y[i] = x[i];
        for (size_t r = 1; r < p->len; r++)
            for (size_t i = 0; i < p->inner; i++) y[i] = fold(op, y[i], x[r * p->inner + i]);
    }
    if (op == ACL_REDUCE_MEAN) {
        const float scale = 1.0f / (float)p->len;
        for (size_t i = 0; i < p->inner; i++) y[i] *= scale;
    }
}

static void reduce_rows(const void *arg, size_t begin, size_t end)
{
    const reduce_params *p = arg;
    for (size_t o = begin; o < end; o++) switch (p->op) {
        case ACL_REDUCE_MAX: reduce_one(ACL_REDUCE_MAX, p, o); break;
        case ACL_REDUCE_MIN: reduce_one(ACL_REDUCE_MIN, p, o); break;
        case ACL_REDUCE_MEAN: reduce_one(ACL_REDUCE_MEAN, p, o); break;
        default: reduce_one(ACL_REDUCE_SUM, p, o); break;
        }
}

static int reduce_run(const void *arg, const acl_exec *ex)
{
    const reduce_params *p = arg;
    return graph_parallel(ex, p->outer, p->len * p->inner, reduce_rows, p);
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
                            "input", in->rank);
        dims[attrs->axes[i]] = 1;
    }
    if (graph_check_dims("reduce", "output", out, in->rank, dims) != 0) return -1;
    size_t outer = 1, len = 1, inner = 1;
    for (int a = 0; a < in->rank; a++)
        *(a < first ? &outer : a <= last ? &len : &inner) *= (size_t)in->dims[a];
    if (len == 0 || count == 0) return acl_fail("reduce: the input is empty");
    reduce_params *p = malloc(sizeof *p);
    if (!p) return acl_fail("reduce: out of memory");
    *p = (reduce_params){attrs->op, graph_ptr(g, in), graph_ptr(g, out), outer, len, inner};
    return graph_add(g, reduce_run, NULL, p);
}
