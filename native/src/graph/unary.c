/* Unary elementwise operations (ONNX numerics), split over the flat range:
 * the activations the convolution epilogue fuses (activation.h; "none"
 * copies), then the math functions. */
#include <math.h>
#include <stdlib.h>

#include "activation.h"
#include "graph_impl.h"

#define OP_NAME(constant, name) [constant] = #name,
static const char *const names[] = {ACL_UNARY_OPS(OP_NAME)};

/* y = f(x) (y may be x); pow's exponent is a. */
static void math(int op, float a, const float *x, float *y, size_t n)
{
    switch (op) {
    case ACL_UNARY_SQRT:
        for (size_t i = 0; i < n; i++) y[i] = sqrtf(x[i]);
        return;
    case ACL_UNARY_LOG:
        for (size_t i = 0; i < n; i++) y[i] = logf(x[i]);
        return;
    case ACL_UNARY_EXP:
        for (size_t i = 0; i < n; i++) y[i] = acl_exp(x[i]);
        return;
    case ACL_UNARY_ABS:
        for (size_t i = 0; i < n; i++) y[i] = fabsf(x[i]);
        return;
    case ACL_UNARY_NEG:
        for (size_t i = 0; i < n; i++) y[i] = -x[i];
        return;
    case ACL_UNARY_RECIPROCAL:
        for (size_t i = 0; i < n; i++) y[i] = 1.0f / x[i];
        return;
    case ACL_UNARY_TANH:
        for (size_t i = 0; i < n; i++) y[i] = acl_tanh(x[i]);
        return;
    case ACL_UNARY_SOFTPLUS:
        for (size_t i = 0; i < n; i++) y[i] = log1pf(expf(x[i]));
        return;
    case ACL_UNARY_ERF:
        for (size_t i = 0; i < n; i++) y[i] = acl_erf(x[i]);
        return;
    case ACL_UNARY_POW:
        if (a == 2.0f) {  /* the usual exponent: a variance, a power spectrum */
            for (size_t i = 0; i < n; i++) y[i] = x[i] * x[i];
        } else if (a == 0.5f) {
            for (size_t i = 0; i < n; i++) y[i] = sqrtf(x[i]);
        } else {
            for (size_t i = 0; i < n; i++) y[i] = powf(x[i], a);
        }
        return;
    }
}

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
    if (p->op < ACL_ACT_COUNT)
        acl_activate(p->op, p->a, p->b, p->x + begin, p->y + begin, end - begin);
    else math(p->op, p->a, p->x + begin, p->y + begin, end - begin);
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
    if (op < 0 || op >= ACL_UNARY_COUNT)
        return acl_fail("unary: unknown operation %d (0 to %d)", op, ACL_UNARY_COUNT - 1);
    const char *name = names[op];
    size_t count;
    if (graph_check_like_input(g, name, in, out, 1, &count) != 0) return -1;
    unary_params *p = malloc(sizeof *p);
    if (!p) return acl_fail("%s: out of memory", name);
    *p = (unary_params){op, graph_ptr(g, in), graph_ptr(g, out), a, b, count};
    return graph_add(g, unary_run, NULL, p);
}
