/* int8 convolution nodes (aclgraph.h's conv_int8): an acl_conv_int8 packed at
 * add time, run on its own split with the program's shared workspace as its
 * scratch, as conv nodes are. */
#include <stdlib.h>

#include "conv_int8.h"
#include "graph_impl.h"

typedef struct {
    const acl_graph *g;  /* for its workspace, which grows as nodes are added */
    acl_conv_int8 *conv;
    acl_exec ex;
    int *ex_weights;
    const uint8_t *x;
    uint8_t *y;
} conv_int8_params;

static int conv_int8_run(const void *arg, const acl_exec *graph_ex)
{
    const conv_int8_params *p = arg;
    if (acl_conv_int8_run(p->conv, &p->ex, p->x, p->y, p->g->workspace) != 0)
        return graph_fail_in("conv_int8");
    return 0;
}

static void conv_int8_release(void *arg)
{
    conv_int8_params *p = arg;
    acl_conv_int8_destroy(p->conv);
    free(p->ex_weights);
}

static int check_tensors(const acl_graph *g, const acl_conv_shape *s, const acl_tensor *in,
                         const acl_tensor *out)
{
    int oh, ow;
    size_t count;
    if (acl_conv_out_size(s, &oh, &ow) != 0) return graph_fail_in("conv_int8");
    const int in_dims[4] = {s->n, s->h, s->w, s->c}, out_dims[4] = {s->n, oh, ow, s->oc};
    return graph_check_tensor_u8(g, "conv_int8", "input", in, &count) ||
           graph_check_dims("conv_int8", "input", in, 4, in_dims) ||
           graph_check_tensor_u8(g, "conv_int8", "output", out, &count) ||
           graph_check_dims("conv_int8", "output", out, 4, out_dims) ||
           graph_check_disjoint_bytes("conv_int8", out, 1, "the input", in, 1);
}

int graph_op_conv_int8(acl_graph *g, const acl_conv_int8_attrs *a, int nin, const acl_tensor *ins,
                       const acl_tensor *out)
{
    const acl_conv_shape *shape = &a->shape;
    /* No split of its own (a fully connected layer, which plans hold none
     * for): the graph's, as its other operations run on. */
    const acl_exec ex = a->core_weights_count
                            ? (acl_exec){a->core_weights_count, a->core_weights, a->workloads}
                            : g->ex;
    if (acl_conv_check(shape, "reference", NULL) != 0) return graph_fail_in("conv_int8");
    if (check_tensors(g, shape, &ins[0], out) != 0) return -1;
    const size_t weights = (size_t)shape->oc * (size_t)(shape->c / shape->group) *
                           (size_t)shape->kh * (size_t)shape->kw;
    if (graph_check_count("conv_int8", "weight", a->weight_count, weights) != 0 ||
        (a->bias &&
         graph_check_count("conv_int8", "bias", (size_t)a->bias_count, (size_t)shape->oc) != 0))
        return -1;
    const acl_conv_int8_quant q = {a->x_scale, a->y_scale,       a->x_zero_point, a->y_zero_point,
                                   a->w_scale, a->w_scale_count, a->bias};
    conv_int8_params *p = calloc(1, sizeof *p);
    if (!p) return acl_fail("conv_int8: out of memory");
    int rc = graph_copy_exec("conv_int8", &ex, &p->ex, &p->ex_weights);
    if (rc == 0 && acl_conv_int8_create(shape, a->ukernel, a->weight, &q, &p->conv) != 0)
        rc = graph_fail_in("conv_int8");
    if (rc == 0) rc = graph_workspace_reserve(g, acl_conv_int8_scratch_bytes(p->conv));
    if (rc != 0) {
        conv_int8_release(p);
        free(p);
        return -1;
    }
    p->g = g;
    p->x = graph_ptr_u8(g, &ins[0]);
    p->y = graph_ptr_u8(g, out);
    return graph_add(g, conv_int8_run, conv_int8_release, p);
}
