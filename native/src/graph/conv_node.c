/* Convolution nodes: an acl_conv packed at add time, run on its own tuned
 * split with the program's shared workspace as its scratch. */
#include <stdlib.h>

#include "graph_impl.h"

typedef struct {
    const acl_graph *g;  /* for its workspace, which grows as nodes are added */
    acl_conv *conv;
    acl_exec ex;
    int *ex_weights;
    const float *x, *residual;
    float *y;
} conv_params;

static int conv_run(const void *arg, const acl_exec *graph_ex)
{
    const conv_params *p = arg;
    if (acl_conv_run_scratch(p->conv, &p->ex, p->x, p->residual, p->y, p->g->workspace, NULL) != 0)
        return graph_fail_in("conv");
    return 0;
}

static void conv_release(void *arg)
{
    conv_params *p = arg;
    acl_conv_destroy(p->conv);
    free(p->ex_weights);
}

/* in (NCHW with x_nchw), out and residual must be the NHWC tensors the shape
 * describes; none of them may overlap the output (direct algorithms
 * accumulate in it). */
static int check_tensors(const acl_graph *g, const acl_conv_shape *s, int x_nchw,
                         const acl_tensor *in, const acl_tensor *residual, const acl_tensor *out)
{
    int oh, ow;
    size_t count;
    if (acl_conv_out_size(s, &oh, &ow) != 0) return graph_fail_in("conv");
    const int nhwc[4] = {s->n, s->h, s->w, s->c}, nchw[4] = {s->n, s->c, s->h, s->w};
    const int *in_dims = x_nchw ? nchw : nhwc, out_dims[4] = {s->n, oh, ow, s->oc};
    if (graph_check_tensor(g, "conv", "input", in, &count) != 0 ||
        graph_check_dims("conv", "input", in, 4, in_dims) != 0 ||
        graph_check_tensor(g, "conv", "output", out, &count) != 0 ||
        graph_check_dims("conv", "output", out, 4, out_dims) != 0 ||
        graph_check_disjoint("conv", out, "the input", in, 0) != 0)
        return -1;
    if (!s->has_residual != !residual)
        return acl_fail("conv: the shape has has_residual=%d but %s residual tensor was given",
                        s->has_residual, residual ? "a" : "no");
    if (residual && (graph_check_tensor(g, "conv", "residual", residual, &count) != 0 ||
                     graph_check_dims("conv", "residual", residual, 4, out_dims) != 0 ||
                     graph_check_disjoint("conv", out, "the residual", residual, 0) != 0))
        return -1;
    return 0;
}

int graph_op_conv(acl_graph *g, const acl_conv_attrs *a, int nin, const acl_tensor *ins,
                  const acl_tensor *out)
{
    const acl_conv_shape *shape = &a->shape;
    const acl_tensor *in = &ins[0], *residual = nin > 1 ? &ins[1] : NULL;
    const acl_exec ex = {a->core_weights_count, a->core_weights, a->workloads};
    if (check_tensors(g, shape, a->x_nchw, in, residual, out) != 0) return -1;
    /* The shape is valid now: group divides c, and the product fits. */
    const size_t weight_floats = (size_t)shape->oc * (size_t)(shape->c / shape->group) *
                                 (size_t)shape->kh * (size_t)shape->kw;
    if (graph_check_count("conv", "weight", a->weight_count, weight_floats) != 0 ||
        (a->bias && graph_check_count("conv", "bias", a->bias_count, (size_t)shape->oc) != 0))
        return -1;
    conv_params *p = calloc(1, sizeof *p);
    if (!p) return acl_fail("conv: out of memory");
    int rc = graph_copy_exec("conv", &ex, &p->ex, &p->ex_weights);
    if (rc == 0 && acl_conv_create_borrowing(shape, a->algorithm, a->ukernel, a->weight, a->bias,
                                             &p->conv) != 0)
        rc = graph_fail_in("conv");
    if (rc == 0 && a->x_nchw && conv_read_nchw(p->conv) != 0) rc = graph_fail_in("conv");
    if (rc == 0) rc = graph_workspace_reserve(g, acl_conv_scratch_bytes(p->conv));
    if (rc != 0) {
        conv_release(p);
        free(p);
        return -1;
    }
    p->g = g;
    p->x = graph_ptr(g, in);
    p->residual = residual ? graph_ptr(g, residual) : NULL;
    p->y = graph_ptr(g, out);
    return graph_add(g, conv_run, conv_release, p);
}
