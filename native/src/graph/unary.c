/* Unary elementwise operations: the activations the convolution epilogue
 * fuses (activation.h, ONNX numerics), split over the flat range; "none"
 * copies. */
#include <stdlib.h>

#include "activation.h"
#include "graph_impl.h"

#define ACT_NAME(constant, name) [constant] = #name,
static const char *const names[] = {ACL_ACTIVATIONS(ACT_NAME)};

typedef struct {
    int op;
    const float *x;
    float *y;
    float a, b;
    size_t count;
} unary_params;

static void unary_rows(const void *arg, size_t begin, size_t end)
{
    const unary_params *p = arg;
    acl_activate(p->op, p->a, p->b, p->x + begin, p->y + begin, end - begin);
}

static int unary_run(const void *arg, const acl_exec *ex)
{
    const unary_params *p = arg;
    return graph_parallel(ex, p->count, 1, unary_rows, p);
}

int graph_op_unary(acl_graph *g, const acl_unary_attrs *attrs, int nin, const acl_tensor *in,
                   const acl_tensor *out)
{
    const int op = attrs->op;
    const float a = attrs->a, b = attrs->b;
    if (op < 0 || op >= ACL_ACT_COUNT)
        return acl_fail("unary: unknown operation %d (0 to %d)", op, ACL_ACT_COUNT - 1);
    const char *name = names[op];
    size_t count, out_count;
    if (graph_check_tensor(g, name, "input", in, &count) != 0 ||
        graph_check_tensor(g, name, "output", out, &out_count) != 0 ||
        graph_check_dims(name, "output", out, in->rank, in->dims) != 0 ||
        graph_check_disjoint(name, out, "the input", in, 1) != 0)
        return -1;
    unary_params *p = malloc(sizeof *p);
    if (!p) return acl_fail("%s: out of memory", name);
    *p = (unary_params){op, graph_ptr(g, in), graph_ptr(g, out), a, b, count};
    return graph_add(g, unary_run, NULL, p);
}
