/* out = act(x * scale + shift) per channel, the channel axis innermost: rows
 * of one pixel's channels, split over the cores.  One pass where a
 * BatchNormalization (or Paddle's Mul / Add constants) and its activation
 * would otherwise take three. */
#include <stdlib.h>

#include "activation.h"
#include "graph_impl.h"

typedef struct {
    const float *x, *scale, *shift;
    float *y;
    size_t rows;
    int c, act;
    float a, b;
} affine_params;

static void affine_rows(const void *arg, size_t begin, size_t end)
{
    const affine_params *p = arg;
    const size_t c = (size_t)p->c;
    const float *restrict scale = p->scale, *restrict shift = p->shift;
    for (size_t r = begin; r < end; r++) {
        const float *x = p->x + r * c;
        float *y = p->y + r * c;
        for (size_t i = 0; i < c; i++) y[i] = x[i] * scale[i] + shift[i];
        acl_activate(p->act, p->a, p->b, y, y, c);
    }
}

static int affine_run(const void *arg, const acl_exec *ex)
{
    const affine_params *p = arg;
    return graph_parallel(ex, p->rows, (size_t)p->c, affine_rows, p);
}

int graph_op_affine(acl_graph *g, const acl_affine_attrs *a, int nin, const acl_tensor *ins,
                    const acl_tensor *out)
{
    const char *name = "affine";
    const acl_tensor *x = &ins[0];
    if (a->act < 0 || a->act >= ACL_ACT_COUNT)
        return acl_fail("%s: unknown activation %d (0 to %d)", name, a->act, ACL_ACT_COUNT - 1);
    size_t count;
    if (graph_check_like_input(g, name, x, out, 1, &count) != 0) return -1;
    if (x->rank < 1) return acl_fail("%s: the input has no channel axis (rank 0)", name);
    const int c = x->dims[x->rank - 1];
    if (graph_check_scale_shift(g, name, ins, out, c) != 0) return -1;
    affine_params *p = malloc(sizeof *p);
    if (!p) return acl_fail("%s: out of memory", name);
    *p = (affine_params){graph_ptr(g, x),
                         graph_ptr(g, &ins[1]),
                         graph_ptr(g, &ins[2]),
                         graph_ptr(g, out),
                         count / (size_t)c,
                         c,
                         a->act,
                         a->a,
                         a->b};
    return graph_add(g, affine_run, NULL, p);
}
