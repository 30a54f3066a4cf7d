/* Unary elementwise operations (ONNX numerics), split over the flat range. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

typedef void (*unary_fn)(const float *x, float *y, size_t n, float a, float b);

/* y may be x (in place): every element is read before it is written. */

static void relu(const float *x, float *y, size_t n, float a, float b)
{
    for (size_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* ONNX Clip: min(max(x, lo), hi), so hi wins when lo > hi. */
static void clip(const float *x, float *y, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i] < lo ? lo : x[i];
        y[i] = v > hi ? hi : v;
    }
}

static void leaky_relu(const float *x, float *y, size_t n, float alpha, float b)
{
    for (size_t i = 0; i < n; i++) y[i] = x[i] < 0.0f ? alpha * x[i] : x[i];
}

static void sigmoid(const float *x, float *y, size_t n, float a, float b)
{
    for (size_t i = 0; i < n; i++) y[i] = 1.0f / (1.0f + expf(-x[i]));
}

static inline float unit_clamp(float v) { return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; }

static void hard_sigmoid(const float *x, float *y, size_t n, float alpha, float beta)
{
    for (size_t i = 0; i < n; i++) y[i] = unit_clamp(alpha * x[i] + beta);
}

static void hard_swish(const float *x, float *y, size_t n, float a, float b)
{
    for (size_t i = 0; i < n; i++) y[i] = x[i] * unit_clamp(x[i] * (1.0f / 6.0f) + 0.5f);
}

static void copy(const float *x, float *y, size_t n, float a, float b)
{
    memmove(y, x, n * sizeof *y);
}

static const struct {
    const char *name;
    unary_fn fn;
} ops[] = {
    [ACL_UNARY_RELU] = {"relu", relu},
    [ACL_UNARY_CLIP] = {"clip", clip},
    [ACL_UNARY_LEAKY_RELU] = {"leaky_relu", leaky_relu},
    [ACL_UNARY_SIGMOID] = {"sigmoid", sigmoid},
    [ACL_UNARY_HARD_SIGMOID] = {"hard_sigmoid", hard_sigmoid},
    [ACL_UNARY_HARD_SWISH] = {"hard_swish", hard_swish},
    [ACL_UNARY_COPY] = {"copy", copy},
};
#define NOPS (int)(sizeof ops / sizeof ops[0])

typedef struct {
    unary_fn fn;
    const float *x;
    float *y;
    float a, b;
    size_t count;
} unary_params;

static void unary_rows(const void *arg, size_t begin, size_t end)
{
    const unary_params *p = arg;
    p->fn(p->x + begin, p->y + begin, end - begin, p->a, p->b);
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
    if (op < 0 || op >= NOPS) return acl_fail("unary: unknown operation %d (0 to %d)", op, NOPS - 1);
    const char *name = ops[op].name;
    size_t count, out_count;
    if (graph_check_tensor(g, name, "input", in, &count) != 0 ||
        graph_check_tensor(g, name, "output", out, &out_count) != 0 ||
        graph_check_dims(name, "output", out, in->rank, in->dims) != 0 ||
        graph_check_disjoint(name, out, "the input", in, 1) != 0)
        return -1;
    unary_params *p = malloc(sizeof *p);
    if (!p) return acl_fail("%s: out of memory", name);
    *p = (unary_params){ops[op].fn, graph_ptr(g, in), graph_ptr(g, out), a, b, count};
    return graph_add(g, unary_run, NULL, p);
}
