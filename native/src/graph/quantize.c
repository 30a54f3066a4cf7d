/* quantize and dequantize: float <-> uint8 tensors of the same dims, and
 * quantized_add of two uint8 tensors, split over the flat range (aclgraph.h
 * gives the arithmetic). */
#include <math.h>
#include <stdlib.h>

#include "graph_impl.h"

typedef struct {
    const void *x;
    void *y;
    float scale;
    int zero_point;
} quant_params;

static void quantize_rows(const void *arg, size_t begin, size_t end)
{
    const quant_params *p = arg;
    /* Locals, restrict: a uint8 store may alias anything, and the compiler
     * would reload p's fields every element rather than vectorise. */
    const float *restrict x = p->x;
    uint8_t *restrict y = p->y;
    const float scale = p->scale;
    const int zp = p->zero_point;
    for (size_t i = begin; i < end; i++) y[i] = graph_quantize(x[i], scale, zp);
}

static void dequantize_rows(const void *arg, size_t begin, size_t end)
{
    const quant_params *p = arg;
    const uint8_t *restrict x = p->x;
    float *restrict y = p->y;
    const float scale = p->scale;
    const int zp = p->zero_point;
    for (size_t i = begin; i < end; i++) y[i] = (float)((int)x[i] - zp) * scale;
}

typedef struct {
    quant_params q;
    graph_rows_fn rows;
    size_t count;
} quant_node;

static int quant_run(const void *arg, const acl_exec *ex)
{
    const quant_node *n = arg;
    return graph_parallel(ex, n->count, 1, n->rows, &n->q);
}

int graph_check_quantization(const char *op, const char *prefix, float scale, int zero_point)
{
    if (!(scale > 0.0f) || !isfinite(scale))
        return acl_fail("%s: %sscale must be positive and finite, got %g", op, prefix,
                        (double)scale);
    if (zero_point < 0 || zero_point > 255)
        return acl_fail("%s: %szero_point must be 0..255 (uint8), got %d", op, prefix, zero_point);
    return 0;
}

/* x is float and out uint8 (quantize), or the other way round. */
static int add_quant(acl_graph *g, const char *op, float scale, int zero_point,
                     const acl_tensor *in, const acl_tensor *out, int to_u8)
{
    size_t count, out_count;
    const int rc = to_u8 ? graph_check_tensor(g, op, "input", in, &count) ||
                               graph_check_tensor_u8(g, op, "output", out, &out_count)
                         : graph_check_tensor_u8(g, op, "input", in, &count) ||
                               graph_check_tensor(g, op, "output", out, &out_count);
    if (rc != 0 || graph_check_dims(op, "output", out, in->rank, in->dims) != 0 ||
        graph_check_disjoint_bytes(op, out, to_u8 ? 1 : 4, "the input", in, to_u8 ? 4 : 1) != 0)
        return -1;
    if (graph_check_quantization(op, "", scale, zero_point) != 0) return -1;
    quant_node *n = malloc(sizeof *n);
    if (!n) return acl_fail("%s: out of memory", op);
    n->q =
        (quant_params){to_u8 ? (const void *)graph_ptr(g, in) : graph_ptr_u8(g, in),
                       to_u8 ? (void *)graph_ptr_u8(g, out) : graph_ptr(g, out), scale, zero_point};
    n->rows = to_u8 ? quantize_rows : dequantize_rows;
    n->count = count;
    return graph_add(g, quant_run, NULL, n);
}

int graph_op_quantize(acl_graph *g, const acl_quantize_attrs *a, int nin, const acl_tensor *ins,
                      const acl_tensor *out)
{
    return add_quant(g, "quantize", a->scale, a->zero_point, ins, out, 1);
}

int graph_op_dequantize(acl_graph *g, const acl_dequantize_attrs *a, int nin, const acl_tensor *ins,
                        const acl_tensor *out)
{
    return add_quant(g, "dequantize", a->scale, a->zero_point, ins, out, 0);
}

typedef struct {
    const uint8_t *a, *b;
    uint8_t *y;
    float a_scale, b_scale, scale;
    int a_zp, b_zp, zp;
    size_t count;
} qadd_params;

/* In double, where each product is exact (9 by 24 bits) and so the sum is
 * rounded once whether or not the compiler contracts it into an FMA: the
 * result is the same under every build. */
static void quantized_add_exact(const qadd_params *p, size_t begin, size_t end)
{
    const uint8_t *restrict a = p->a, *restrict b = p->b;
    uint8_t *restrict y = p->y;
    const double as = p->a_scale, bs = p->b_scale, scale = p->scale;
    const int az = p->a_zp, bz = p->b_zp, zp = p->zp;
    const double lo = -zp, hi = 255 - zp;
    for (size_t i = begin; i < end; i++) {
        double v = ((double)((int)a[i] - az) * as + (double)((int)b[i] - bz) * bs) / scale;
        v = v > lo ? v : lo;
        v = v < hi ? v : hi;
        y[i] = (uint8_t)((int)nearbyint(v) + zp);
    }
}

/* quantized_add_exact's bytes, computed in float: (a - az) * ka + (b - bz)
 * * kb with ka = a_scale / scale and kb alike, within `margin` of the
 * double quotient (255 (|ka| + |kb|) 2^-21 bounds the float roundings of
 * the two ratios, the products and the sum, 1e-6 the double's own).
 * Clamping moves neither further, so the two round to the same integer
 * unless the float lies within margin of a half-step: a block of
 * QADD_BLOCK holding one is done again in double.  Twice the speed of
 * the double loop (its vdivpd dear): ResNet-18's adds took twice
 * onnxruntime's time. */
#define QADD_BLOCK 64
static void quantized_add_rows(const void *arg, size_t begin, size_t end)
{
    const qadd_params *p = arg;
    const double ka_d = (double)p->a_scale / p->scale, kb_d = (double)p->b_scale / p->scale;
    const float margin = (float)(255.0 * (fabs(ka_d) + fabs(kb_d)) * 0x1p-21 + 1e-6);
    if (margin > 0.25f) {
        quantized_add_exact(p, begin, end);  /* nearly every value would be near a half-step */
        return;
    }
    const uint8_t *restrict a = p->a, *restrict b = p->b;
    uint8_t *restrict y = p->y;
    const float ka = (float)ka_d, kb = (float)kb_d, edge = 0.5f - margin;
    const int az = p->a_zp, bz = p->b_zp, zp = p->zp;
    const float lo = (float)-zp, hi = (float)(255 - zp);
    for (size_t i0 = begin; i0 < end; i0 += QADD_BLOCK) {
        const size_t i1 = end - i0 < QADD_BLOCK ? end : i0 + QADD_BLOCK;
        int near_tie = 0;
        for (size_t i = i0; i < i1; i++) {
            float v = (float)((int)a[i] - az) * ka + (float)((int)b[i] - bz) * kb;
            v = v > lo ? v : lo;
            v = v < hi ? v : hi;
            const float r = nearbyintf(v);
            near_tie |= fabsf(v - r) > edge;
            y[i] = (uint8_t)((int)r + zp);
        }
        if (near_tie) quantized_add_exact(p, i0, i1);
    }
}

static int qadd_run(const void *arg, const acl_exec *ex)
{
    const qadd_params *p = arg;
    return graph_parallel(ex, p->count, 1, quantized_add_rows, p);
}

int graph_op_quantized_add(acl_graph *g, const acl_quantized_add_attrs *a, int nin,
                           const acl_tensor *ins, const acl_tensor *out)
{
    const char *op = "quantized_add";
    size_t count, other;
    if (graph_check_tensor_u8(g, op, "a", &ins[0], &count) != 0 ||
        graph_check_tensor_u8(g, op, "b", &ins[1], &other) != 0 ||
        graph_check_tensor_u8(g, op, "output", out, &other) != 0 ||
        graph_check_dims(op, "b", &ins[1], ins[0].rank, ins[0].dims) != 0 ||
        graph_check_dims(op, "output", out, ins[0].rank, ins[0].dims) != 0 ||
        graph_check_disjoint_bytes(op, out, 1, "a", &ins[0], 1) != 0 ||
        graph_check_disjoint_bytes(op, out, 1, "b", &ins[1], 1) != 0 ||
        graph_check_quantization(op, "a_", a->a_scale, a->a_zero_point) != 0 ||
        graph_check_quantization(op, "b_", a->b_scale, a->b_zero_point) != 0 ||
        graph_check_quantization(op, "", a->scale, a->zero_point) != 0)
        return -1;
    qadd_params *p = malloc(sizeof *p);
    if (!p) return acl_fail("%s: out of memory", op);
    *p = (qadd_params){graph_ptr_u8(g, &ins[0]),
                       graph_ptr_u8(g, &ins[1]),
                       graph_ptr_u8(g, out),
                       a->a_scale,
                       a->b_scale,
                       a->scale,
                       a->a_zero_point,
                       a->b_zero_point,
                       a->zero_point,
                       count};
    return graph_add(g, qadd_run, NULL, p);
}
