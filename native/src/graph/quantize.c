/* quantize and dequantize: float <-> uint8 tensors of the same dims (a
 * quantize also through a transposition), and quantized_add of two uint8
 * tensors, split over the flat range (aclgraph.h gives the arithmetic). */
#include <math.h>
#include <stdlib.h>

#include "graph_impl.h"
#include "walk.h"

typedef struct {
    const void *x;
    void *y;
    float scale;
    int zero_point;
    /* quantize with a perm: a walk over the output (walk.h) whose source
     * steps through x; two_d: it is out[r][c] = x[c * step + r], cols = dims[1]. */
    graph_walk walk;
    int two_d;
} quant_params;

/* Locals, restrict: a uint8 store may alias anything, and the compiler would
 * reload the parameters every element rather than vectorise. */
static inline void quantize_span(const float *restrict x, uint8_t *restrict y, size_t n,
                                 float scale, int zp)
{
    for (size_t i = 0; i < n; i++) y[i] = graph_quantize(x[i], scale, zp);
}

static void quantize_rows(const void *arg, size_t begin, size_t end)
{
    const quant_params *p = arg;
    quantize_span((const float *)p->x + begin, (uint8_t *)p->y + begin, end - begin, p->scale,
                  p->zero_point);
}

/* Output pixels per block of the 2-D path: each channel's run quantized
 * contiguously (vectorised) into a row of bytes, then spread to its pixels. */
#define QUANT_BLOCK 64

/* Channels the 2-D path interleaves from registers (an image's 1 to 4). */
#define QUANT_FEW 4

/* The pixels of a block of few channels, each channel's run already
 * quantized into runs[c]: written pixel after pixel, in order.  Inlined with
 * constant cols, so each pixel's bytes are one short store run. */
static inline __attribute__((always_inline)) void
interleave_few(uint8_t *restrict y, const uint8_t runs[QUANT_FEW][QUANT_BLOCK], size_t rows,
               const size_t cols)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) y[r * cols + c] = runs[c][r];
}

/* Output rows [begin, end) of a 2-D transposing quantize (an NCHW image into
 * NHWC bytes: rows are pixels, columns channels).  With few channels, every
 * channel's run of the block is quantized first and the pixels are written in
 * order: one strided byte store per value, a channel at a time, took twice
 * onnxruntime's QuantizeLinear on MobileNetV2's 224x224 input. */
static void quantize_2d_rows(const void *arg, size_t begin, size_t end)
{
    const quant_params *p = arg;
    const size_t cols = p->walk.dims[1];
    const ptrdiff_t step = p->walk.stride[0][1];
    uint8_t runs[QUANT_FEW][QUANT_BLOCK]; /* each channel's run of the block */
    for (size_t r0 = begin; r0 < end; r0 += QUANT_BLOCK) {
        const size_t rows = end - r0 < QUANT_BLOCK ? end - r0 : QUANT_BLOCK;
        uint8_t *restrict y = (uint8_t *)p->y + r0 * cols;
        const float *x = (const float *)p->x + (ptrdiff_t)r0;
        if (cols <= QUANT_FEW) {
            for (size_t c = 0; c < cols; c++)
                quantize_span(x + (ptrdiff_t)c * step, runs[c], rows, p->scale, p->zero_point);
            switch (cols) {
            case 1: interleave_few(y, runs, rows, 1); break;
            case 3: interleave_few(y, runs, rows, 3); break;
            default: interleave_few(y, runs, rows, cols); break;
            }
            continue;
        }
        for (size_t c = 0; c < cols; c++) {
            quantize_span(x + (ptrdiff_t)c * step, runs[0], rows, p->scale, p->zero_point);
            for (size_t r = 0; r < rows; r++) y[r * cols + c] = runs[0][r];
        }
    }
}

/* Output elements [pos, pos + n) of one row of any other transposing quantize. */
static void quantize_run_of_row(const void *arg, size_t pos, const walk_cursor *c, size_t n)
{
    const quant_params *p = arg;
    const ptrdiff_t step = p->walk.stride[0][p->walk.rank - 1];
    const float *x = (const float *)p->x + c->off[0];
    uint8_t *y = (uint8_t *)p->y + pos;
    for (size_t i = 0; i < n; i++)
        y[i] = graph_quantize(x[(ptrdiff_t)i * step], p->scale, p->zero_point);
}

static void quantize_walk(const void *arg, size_t begin, size_t end)
{
    const quant_params *p = arg;
    walk_runs(&p->walk, begin, end, quantize_run_of_row, p);
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
    size_t count, per_row;  /* the rows graph_parallel splits, elements in each */
} quant_node;

static int quant_run(const void *arg, const acl_exec *ex)
{
    const quant_node *n = arg;
    return graph_parallel(ex, n->count, n->per_row, n->rows, &n->q);
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

/* How a quantize walks x in the order of transpose(x, perm) (n->q.walk's
 * source), and the split that suits the walk: flat where the walk is x's
 * own order, by pixel rows where it is a 2-D transpose, else by elements. */
static void plan_transpose(quant_node *n, const acl_tensor *in, const int *perm,
                           const acl_tensor *out)
{
    ptrdiff_t in_stride[ACL_MAX_RANK], stride[1][ACL_MAX_RANK], step = 1;
    for (int i = in->rank - 1; i >= 0; i--) {
        in_stride[i] = step;
        step *= in->dims[i];
    }
    for (int i = 0; i < out->rank; i++) stride[0][i] = in_stride[perm[i]];
    walk_init(&n->q.walk, out->rank, out->dims, 1, stride);
    const graph_walk *w = &n->q.walk;
    if (w->rank == 1 && w->stride[0][0] == 1) return; /* x's own order after all */
    n->q.two_d = w->rank == 2 && w->stride[0][0] == 1;
    n->rows = n->q.two_d ? quantize_2d_rows : quantize_walk;
    n->per_row = n->q.two_d ? w->dims[1] : 1;
    if (n->q.two_d) n->count = w->dims[0];
}

/* x is float and out uint8 (quantize, perm NULL for x's order), or the other
 * way round. */
static int add_quant(acl_graph *g, const char *op, float scale, int zero_point,
                     const acl_tensor *in, const acl_tensor *out, int to_u8, const int *perm)
{
    size_t count, out_count;
    const int rc = to_u8 ? graph_check_tensor(g, op, "input", in, &count) ||
                               graph_check_tensor_u8(g, op, "output", out, &out_count)
                         : graph_check_tensor_u8(g, op, "input", in, &count) ||
                               graph_check_tensor(g, op, "output", out, &out_count);
    if (rc != 0) return -1;
    int want[ACL_MAX_RANK];
    for (int i = 0; i < in->rank; i++) want[i] = in->dims[perm ? perm[i] : i];
    if (graph_check_dims(op, "output", out, in->rank, want) != 0 ||
        graph_check_disjoint_bytes(op, out, to_u8 ? 1 : 4, "the input", in, to_u8 ? 4 : 1) != 0)
        return -1;
    if (graph_check_quantization(op, "", scale, zero_point) != 0) return -1;
    quant_node *n = calloc(1, sizeof *n);
    if (!n) return acl_fail("%s: out of memory", op);
    n->q = (quant_params){.x = to_u8 ? (const void *)graph_ptr(g, in) : graph_ptr_u8(g, in),
                          .y = to_u8 ? (void *)graph_ptr_u8(g, out) : graph_ptr(g, out),
                          .scale = scale,
                          .zero_point = zero_point};
    n->rows = to_u8 ? quantize_rows : dequantize_rows;
    n->count = count;
    n->per_row = 1;
    if (perm) plan_transpose(n, in, perm, out);
    return graph_add(g, quant_run, NULL, n);
}

int graph_op_quantize(acl_graph *g, const acl_quantize_attrs *a, int nin, const acl_tensor *ins,
                      const acl_tensor *out)
{
    if (a->perm_count &&
        (graph_check_count("quantize", "perm", (size_t)a->perm_count, (size_t)ins->rank) != 0 ||
         graph_check_perm("quantize", "perm", ins->rank, a->perm) != 0))
        return -1;
    return add_quant(g, "quantize", a->scale, a->zero_point, ins, out, 1,
                     a->perm_count ? a->perm : NULL);
}

int graph_op_dequantize(acl_graph *g, const acl_dequantize_attrs *a, int nin, const acl_tensor *ins,
                        const acl_tensor *out)
{
    return add_quant(g, "dequantize", a->scale, a->zero_point, ins, out, 0, NULL);
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
