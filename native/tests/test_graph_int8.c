/* The graph suite's uint8 operations: quantize, dequantize and conv_int8
 * against naive loops, exactly (integer sums, and the same float roundings
 * onnxruntime makes: a division for quantize, acc * (x_scale * w_scale /
 * y_scale) for the requantisation), the same bytes under every exec config,
 * and their one-line errors.  uint8 tensors sit in the float arena as
 * aclgraph.h lays them out: offsets in floats, dims in bytes. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_int8/int8.h"
#include "graph_trial.h"

static void fail(const char *desc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(const char *desc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(desc, fmt, ap);
    va_end(ap);
}

/* Floats of the arena a uint8 tensor of n bytes takes. */
static size_t u8_floats(size_t n) { return (n + 3) / 4; }

static uint8_t *bytes_at(void *arena, const acl_tensor *t)
{
    return (uint8_t *)arena + t->offset * sizeof(float);
}

/* Builds the one-node program under every config: the first run's arena must
 * be `expected` byte for byte, and so must every other config's. */
static void run_exact(const char *desc, size_t arena, const float *init, const float *expected,
                      add_fn add, const void *spec)
{
    int ok = 1;
    for (int i = 0; ok && i < NCONFIGS; i++) {
        if (configs[i].ncores > acl_cpu_count()) continue;
        acl_graph *g;
        if (acl_graph_create(arena, &configs[i], &g) != 0) {
            fail(desc, "create: %s", acl_last_error());
            return;
        }
        memcpy(acl_graph_arena(g), init, arena * sizeof(float));
        if (add(g, spec, &configs[i]) != 0 || acl_graph_run(g, NULL) != 0) {
            fail(desc, "config %d: %s", i, acl_last_error());
            ok = 0;
        } else {
            const uint8_t *got = (const uint8_t *)acl_graph_arena(g),
                          *want = (const uint8_t *)expected;
            for (size_t b = 0; ok && b < arena * sizeof(float); b++)
                if (got[b] != want[b]) {
                    fail(desc, "config %d: arena byte %zu is %d, expected %d", i, b, got[b],
                         want[b]);
                    ok = 0;
                }
        }
        acl_graph_destroy(g);
    }
    passed += ok;
}

/* Round half to even, written out: the reference does not lean on nearbyint. */
static double round_even(double v)
{
    const double f = floor(v), d = v - f;
    if (d > 0.5) return f + 1.0;
    if (d < 0.5) return f;
    return fmod(f, 2.0) == 0.0 ? f : f + 1.0;
}

static uint8_t saturate(double v, int lo, int hi)
{
    return (uint8_t)(v < lo ? lo : v > hi ? hi : v);
}

/* ---- quantize / dequantize ------------------------------------------------------ */

typedef struct {
    acl_tensor in, out;
    float scale;
    int zero_point, to_u8;
    int perm[3]; /* a quantize's: out = quantize(transpose(in, perm)) */
} quant_spec;

static int add_quant(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const quant_spec *s = spec;
    const acl_quantize_attrs q = {
        .scale = s->scale, .zero_point = s->zero_point, .perm = s->perm, .perm_count = 3};
    const acl_dequantize_attrs d = {s->scale, s->zero_point};
    return s->to_u8 ? acl_graph_add(g, ACL_OP_QUANTIZE, &q, 1, &s->in, &s->out)
                    : acl_graph_add(g, ACL_OP_DEQUANTIZE, &d, 1, &s->in, &s->out);
}

void quantize_case(int big)
{
    int dims[3];
    random_dims(3, big, dims);
    const size_t n = volume(3, dims);
    quant_spec s = {
        .scale = (float)rnd(1, 1000) / 4096.0f, .zero_point = rnd(0, 255), .to_u8 = rnd(0, 1)};
    s.in = (acl_tensor){(size_t)rnd(0, 5), 3, {dims[0], dims[1], dims[2]}};
    const size_t in_floats = s.to_u8 ? n : u8_floats(n);
    s.out = s.in;
    /* A quantize through one of the six orders of the axes (NCHW -> NHWC's
     * kind among them), in order for the others. */
    static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                    {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    memcpy(s.perm, perms[s.to_u8 ? rnd(0, 5) : 0], sizeof s.perm);
    for (int i = 0; i < 3; i++) s.out.dims[i] = dims[s.perm[i]];
    s.out.offset = s.in.offset + in_floats + (size_t)rnd(0, 5);
    const size_t arena = s.out.offset + (s.to_u8 ? u8_floats(n) : n) + (size_t)rnd(1, 4);
    float *init = malloc(arena * sizeof(float)), *expected = malloc(arena * sizeof(float));
    fill_random(init, arena, 1.0f);
    if (s.to_u8) {
        /* Values on the rounding ties (k + 1/2 steps) and far past both ends. */
        float *x = init + s.in.offset;
        for (size_t i = 0; i < n; i++)
            x[i] = rnd(0, 3) == 0 ? ((float)rnd(-300, 300) + 0.5f) * s.scale
                                  : 200.0f * s.scale * rnd_float();
    } else {
        for (size_t i = 0; i < n; i++) bytes_at(init, &s.in)[i] = (uint8_t)rnd(0, 255);
    }
    memcpy(expected, init, arena * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        if (s.to_u8) {
            /* Input element i lands at out[idx[perm[0]]][idx[perm[1]]][idx[perm[2]]]. */
            const int idx[3] = {(int)(i / ((size_t)dims[1] * dims[2])),
                                (int)(i / dims[2] % dims[1]), (int)(i % dims[2])};
            const size_t o =
                ((size_t)idx[s.perm[0]] * s.out.dims[1] + idx[s.perm[1]]) * s.out.dims[2] +
                idx[s.perm[2]];
            const float v = init[s.in.offset + i] / s.scale;  /* in float, as the engine */
            bytes_at(expected, &s.out)[o] = saturate(round_even(v) + s.zero_point, 0, 255);
        } else {
            expected[s.out.offset + i] = (float)(bytes_at(init, &s.in)[i] - s.zero_point) * s.scale;
        }
    }
    char desc[128];
    snprintf(desc, sizeof desc, "%s %s perm %d%d%d scale %g zp %d",
             s.to_u8 ? "quantize" : "dequantize", dims_str(3, dims), s.perm[0], s.perm[1],
             s.perm[2], (double)s.scale, s.zero_point);
    run_exact(desc, arena, init, expected, add_quant, &s);
    free(init);
    free(expected);
}

/* ---- quantized_add ---------------------------------------------------------------- */

typedef struct {
    acl_tensor a, b, out;
    acl_quantized_add_attrs q;
} qadd_spec;

static int add_qadd(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const qadd_spec *s = spec;
    const acl_tensor ins[2] = {s->a, s->b};
    return acl_graph_add(g, ACL_OP_QUANTIZED_ADD, &s->q, 2, ins, &s->out);
}

static float random_scale(void) { return (float)rnd(1, 1000) / 4096.0f; }

void quantized_add_case(int big)
{
    int dims[3];
    random_dims(3, big, dims);
    const size_t n = volume(3, dims), room = u8_floats(n);
    qadd_spec s = {.q = {random_scale(), rnd(0, 255), random_scale(), rnd(0, 255), random_scale(),
                         rnd(0, 255)}};
    s.a = (acl_tensor){(size_t)rnd(0, 5), 3, {dims[0], dims[1], dims[2]}};
    s.b = s.out = s.a;
    s.b.offset = s.a.offset + room + (size_t)rnd(0, 3);
    s.out.offset = s.b.offset + room + (size_t)rnd(0, 3);
    const size_t arena = s.out.offset + room + (size_t)rnd(1, 4);
    float *init = malloc(arena * sizeof(float)), *expected = malloc(arena * sizeof(float));
    fill_random(init, arena, 1.0f);
    for (size_t i = 0; i < n; i++) {
        bytes_at(init, &s.a)[i] = (uint8_t)rnd(0, 255);
        bytes_at(init, &s.b)[i] = (uint8_t)rnd(0, 255);
    }
    if (rnd(0, 1)) s.q.b_scale = s.q.scale = s.q.a_scale;  /* sums on exact half-steps */
    memcpy(expected, init, arena * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        const double v = ((double)(bytes_at(init, &s.a)[i] - s.q.a_zero_point) * s.q.a_scale +
                          (double)(bytes_at(init, &s.b)[i] - s.q.b_zero_point) * s.q.b_scale) /
                         s.q.scale;
        bytes_at(expected, &s.out)[i] = saturate(round_even(v) + s.q.zero_point, 0, 255);
    }
    char desc[160];
    snprintf(desc, sizeof desc, "quantized_add %s scales %g %g -> %g zps %d %d -> %d",
             dims_str(3, dims), (double)s.q.a_scale, (double)s.q.b_scale, (double)s.q.scale,
             s.q.a_zero_point, s.q.b_zero_point, s.q.zero_point);
    run_exact(desc, arena, init, expected, add_qadd, &s);
    free(init);
    free(expected);
}

/* ---- max pool on uint8 ------------------------------------------------------------- */

typedef struct {
    acl_tensor in, out;
    acl_pool_attrs p;
} u8_pool_spec;

static int add_u8_pool(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const u8_pool_spec *s = spec;
    return acl_graph_add(g, ACL_OP_POOL, &s->p, 1, &s->in, &s->out);
}

void u8_max_pool_case(int big)
{
    int kernel[2], strides[2], dilations[2], pads[4];
    const int n = rnd(1, 2), h = rnd(1, big ? 24 : 9), w = rnd(1, big ? 24 : 9),
              c = rnd(1, big ? 80 : 20);
    for (int i = 0; i < 2; i++) {
        kernel[i] = rnd(1, 3);
        strides[i] = rnd(1, 2);
        dilations[i] = rnd(1, 2);
    }
    for (int i = 0; i < 4; i++) pads[i] = rnd(0, kernel[i % 2] - 1);
    const int in_hw[2] = {h, w};
    int out_hw[2];
    for (int i = 0; i < 2; i++) {
        const int span = in_hw[i] + pads[i] + pads[i + 2] - dilations[i] * (kernel[i] - 1) - 1;
        if (span < 0) { /* window larger than the padded input: no such pool */
            kernel[i] = 1;
            dilations[i] = 1;
        }
        out_hw[i] =
            (in_hw[i] + pads[i] + pads[i + 2] - dilations[i] * (kernel[i] - 1) - 1) / strides[i] +
            1;
    }
    u8_pool_spec s = {.p = {.op = ACL_POOL_MAX,
                            .kernel = kernel,
                            .kernel_count = 2,
                            .strides = strides,
                            .strides_count = 2,
                            .dilations = dilations,
                            .dilations_count = 2,
                            .pads = pads,
                            .pads_count = 4,
                            .u8 = 1}};
    s.in = (acl_tensor){(size_t)rnd(0, 5), 4, {n, h, w, c}};
    s.out = (acl_tensor){0, 4, {n, out_hw[0], out_hw[1], c}};
    s.out.offset = s.in.offset + u8_floats(volume(4, s.in.dims)) + (size_t)rnd(0, 3);
    const size_t arena = s.out.offset + u8_floats(volume(4, s.out.dims)) + (size_t)rnd(1, 4);
    float *init = malloc(arena * sizeof(float)), *expected = malloc(arena * sizeof(float));
    fill_random(init, arena, 1.0f);
    const size_t in_n = volume(4, s.in.dims);
    for (size_t i = 0; i < in_n; i++) bytes_at(init, &s.in)[i] = (uint8_t)rnd(0, 255);
    memcpy(expected, init, arena * sizeof(float));
    /* The float max pool over dequantized values, quantized back: the largest
     * byte among the taps inside the input, 0 where there is none. */
    const uint8_t *x = bytes_at(init, &s.in);
    uint8_t *y = bytes_at(expected, &s.out);
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < out_hw[0]; oy++)
            for (int ox = 0; ox < out_hw[1]; ox++)
                for (int ch = 0; ch < c; ch++) {
                    int best = 0;
                    for (int ky = 0; ky < kernel[0]; ky++)
                        for (int kx = 0; kx < kernel[1]; kx++) {
                            const int iy = oy * strides[0] - pads[0] + ky * dilations[0];
                            const int ix = ox * strides[1] - pads[1] + kx * dilations[1];
                            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                            const int v = x[((size_t)(b * h + iy) * w + ix) * c + ch];
                            best = v > best ? v : best;
                        }
                    y[((size_t)(b * out_hw[0] + oy) * out_hw[1] + ox) * c + ch] = (uint8_t)best;
                }
    char desc[160];
    snprintf(desc, sizeof desc, "u8 max pool %s kernel %dx%d strides %d,%d dil %d,%d",
             dims_str(4, s.in.dims), kernel[0], kernel[1], strides[0], strides[1], dilations[0],
             dilations[1]);
    run_exact(desc, arena, init, expected, add_u8_pool, &s);
    free(init);
    free(expected);
}

/* ---- concat of uint8 tensors ------------------------------------------------------ */

typedef struct {
    acl_tensor ins[3], out;
    acl_concat_attrs a;
} u8_concat_spec;

static int add_u8_concat(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const u8_concat_spec *s = spec;
    return acl_graph_add(g, ACL_OP_CONCAT, &s->a, (int)s->a.scales_count - 1, s->ins, &s->out);
}

/* Inputs of their own quantization, or of the output's (copied). */
void u8_concat_case(int big)
{
    int dims[3];
    random_dims(3, big, dims);
    const int n = rnd(1, 3), axis = rnd(0, 2);
    float scales[4];
    int zps[4], total = 0;
    u8_concat_spec s = {.a = {.axis = axis,
                              .u8 = 1,
                              .scales = scales,
                              .scales_count = n + 1,
                              .zero_points = zps,
                              .zero_points_count = n + 1}};
    scales[n] = random_scale();
    zps[n] = rnd(0, 255);
    size_t at = (size_t)rnd(0, 3);
    for (int i = 0; i < n; i++) {
        const int same = rnd(0, 2) == 0;
        scales[i] = same ? scales[n] : random_scale();
        zps[i] = same ? zps[n] : rnd(0, 255);
        s.ins[i] = (acl_tensor){at, 3, {dims[0], dims[1], dims[2]}};
        s.ins[i].dims[axis] = rnd(1, 4);
        total += s.ins[i].dims[axis];
        at += u8_floats(volume(3, s.ins[i].dims)) + (size_t)rnd(0, 2);
    }
    s.out = (acl_tensor){at, 3, {dims[0], dims[1], dims[2]}};
    s.out.dims[axis] = total;
    const size_t arena = at + u8_floats(volume(3, s.out.dims)) + (size_t)rnd(1, 4);
    float *init = malloc(arena * sizeof(float)), *expected = malloc(arena * sizeof(float));
    fill_random(init, arena, 1.0f);
    for (int i = 0; i < n; i++)
        for (size_t e = 0; e < volume(3, s.ins[i].dims); e++)
            bytes_at(init, &s.ins[i])[e] = (uint8_t)rnd(0, 255);
    memcpy(expected, init, arena * sizeof(float));
    const int *od = s.out.dims;
    for (int r0 = 0; r0 < od[0]; r0++)
        for (int r1 = 0; r1 < od[1]; r1++)
            for (int r2 = 0; r2 < od[2]; r2++) {
                int idx[3] = {r0, r1, r2}, i = 0;
                while (idx[axis] >= s.ins[i].dims[axis]) idx[axis] -= s.ins[i++].dims[axis];
                const int *id = s.ins[i].dims;
                const int x =
                    bytes_at(init, &s.ins[i])[((size_t)idx[0] * id[1] + idx[1]) * id[2] + idx[2]];
                /* dequantize, then quantize: in float, as the engine */
                const float v = (float)(x - zps[i]) * scales[i] / scales[n];
                bytes_at(expected, &s.out)[((size_t)r0 * od[1] + r1) * od[2] + r2] =
                    saturate(round_even(v) + zps[n], 0, 255);
            }
    char desc[128];
    snprintf(desc, sizeof desc, "u8 concat of %d on axis %d into %s", n, axis, dims_str(3, od));
    run_exact(desc, arena, init, expected, add_u8_concat, &s);
    free(init);
    free(expected);
}

/* ---- conv_int8 ------------------------------------------------------------------- */

typedef struct {
    acl_conv_shape shape;
    acl_tensor in, out;
    const char *ukernel;
    float *w, *w_scale, x_scale, y_scale;
    int *bias, x_zp, y_zp, w_scales;
} qconv_spec;

static int add_qconv(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const qconv_spec *s = spec;
    const int oc = s->shape.oc;
    const size_t wn = (size_t)oc * (s->shape.c / s->shape.group) * s->shape.kh * s->shape.kw;
    const acl_conv_int8_attrs a = {.shape = s->shape,
                                   .ukernel = s->ukernel,
                                   .core_weights = ex->weights,
                                   .core_weights_count = ex->ncores,
                                   .workloads = ex->workloads,
                                   .weight = s->w,
                                   .weight_count = wn,
                                   .bias = s->bias,
                                   .bias_count = s->bias ? oc : 0,
                                   .x_scale = s->x_scale,
                                   .x_zero_point = s->x_zp,
                                   .w_scale = s->w_scale,
                                   .w_scale_count = (size_t)s->w_scales,
                                   .y_scale = s->y_scale,
                                   .y_zero_point = s->y_zp};
    return acl_graph_add(g, ACL_OP_CONV_INT8, &a, 1, &s->in, &s->out);
}

/* out[...] by int64 sums over every tap, padding at the zero point. */
static void qconv_reference(const qconv_spec *s, const uint8_t *x, uint8_t *y, int oh, int ow)
{
    const acl_conv_shape *sh = &s->shape;
    const int cg = sh->c / sh->group, ocg = sh->oc / sh->group;
    int lo = 0, hi = 255;
    if (sh->act == ACL_ACT_RELU) lo = s->y_zp;
    if (sh->act == ACL_ACT_CLIP) {
        lo = (int)saturate(round_even(sh->act_min / s->y_scale) + s->y_zp, 0, 255);
        hi = (int)saturate(round_even(sh->act_max / s->y_scale) + s->y_zp, 0, 255);
    }
    for (int b = 0; b < sh->n; b++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++)
                for (int o = 0; o < sh->oc; o++) {
                    const int g = o / ocg;
                    int64_t acc = s->bias ? s->bias[o] : 0;
                    for (int ci = 0; ci < cg; ci++)
                        for (int ky = 0; ky < sh->kh; ky++)
                            for (int kx = 0; kx < sh->kw; kx++) {
                                const int iy = oy * sh->stride_h - sh->pad_top + ky * sh->dil_h;
                                const int ix = ox * sh->stride_w - sh->pad_left + kx * sh->dil_w;
                                if (iy < 0 || iy >= sh->h || ix < 0 || ix >= sh->w) continue;
                                const int xv = x[((size_t)(b * sh->h + iy) * sh->w + ix) * sh->c +
                                                 g * cg + ci];
                                const int wv =
                                    (int)s->w[(((size_t)o * cg + ci) * sh->kh + ky) * sh->kw + kx];
                                acc += (int64_t)(xv - s->x_zp) * wv;
                            }
                    const float scale =
                        s->x_scale * s->w_scale[s->w_scales == 1 ? 0 : o] / s->y_scale;
                    const float v = (float)acc * scale;
                    y[((size_t)(b * oh + oy) * ow + ox) * sh->oc + o] =
                        saturate(round_even(v) + s->y_zp, lo, hi);
                }
}

static void random_qconv_shape(acl_conv_shape *sh, int big)
{
    *sh = (acl_conv_shape){.n = rnd(1, 2),
                           .h = rnd(1, big ? 20 : 9),
                           .w = rnd(1, big ? 20 : 9),
                           .kh = rnd(1, 3),
                           .kw = rnd(1, 3),
                           .stride_h = rnd(1, 2),
                           .stride_w = rnd(1, 2),
                           .dil_h = rnd(1, 2),
                           .dil_w = 1,
                           .group = 1,
                           .act = rnd(0, 2),
                           .act_min = -0.3f,
                           .act_max = 0.4f};
    if (rnd(0, 2) == 0) sh->kh = sh->kw = 1, sh->stride_h = sh->stride_w = 1;  /* pointwise */
    sh->pad_top = rnd(0, sh->kh / 2 + 1);
    sh->pad_bottom = rnd(0, sh->kh / 2);
    sh->pad_left = sh->pad_right = sh->kw / 2;
    const int kind = rnd(0, 3);
    if (kind == 0) { /* depthwise */
        sh->group = sh->c = sh->oc = rnd(1, big ? 40 : 20);
    } else if (kind == 1) { /* grouped, several channels a group */
        sh->group = rnd(2, 3);
        sh->c = sh->group * rnd(1, 6);
        sh->oc = sh->group * rnd(1, 12);
    } else {
        sh->c = rnd(1, big ? 70 : 24);
        sh->oc = rnd(1, big ? 70 : 40);
    }
}

/* One case of the shape `shape`, its quantization and data random. */
static void qconv_case(const acl_conv_shape *shape)
{
    qconv_spec s = {.shape = *shape,
                    .x_scale = (float)rnd(1, 100) / 512.0f,
                    .y_scale = (float)rnd(1, 100) / 64.0f,
                    .x_zp = rnd(0, 255),
                    .y_zp = rnd(0, 255)};
    acl_conv_shape *sh = &s.shape;
    int oh, ow;
    if (acl_conv_out_size(sh, &oh, &ow) != 0) return;
    const acl_ukernel_int8 *const *kernels;
    const int nk = acl_int8_ukernels_available(&kernels);
    s.ukernel = nk ? kernels[rnd(0, nk - 1)]->name : "";
    const size_t wn = (size_t)sh->oc * (sh->c / sh->group) * sh->kh * sh->kw;
    s.w = malloc(wn * sizeof(float));
    for (size_t i = 0; i < wn; i++) s.w[i] = (float)rnd(-128, 127);
    s.w_scales = rnd(0, 3) == 0 ? 1 : sh->oc;
    s.w_scale = malloc((size_t)s.w_scales * sizeof(float));
    for (int i = 0; i < s.w_scales; i++) s.w_scale[i] = (float)rnd(1, 200) / 16384.0f;
    if (rnd(0, 3) != 0) {
        s.bias = malloc((size_t)sh->oc * sizeof(int));
        /* Now and then biases near int32's bound: a depthwise convolution
         * whose sums could then overflow int32 leaves bias - za * colsum to
         * the epilogue rather than starting its sums from it. */
        const int huge = rnd(0, 3) == 0;
        for (int i = 0; i < sh->oc; i++)
            s.bias[i] = huge && rnd(0, 3) == 0 ? (rnd(0, 1) ? 1 : -1) * (INT32_MAX - rnd(0, 10))
                                               : rnd(-20000, 20000);
    }
    const int in[4] = {sh->n, sh->h, sh->w, sh->c}, out[4] = {sh->n, oh, ow, sh->oc};
    const size_t nin = volume(4, in), nout = volume(4, out);
    s.in = (acl_tensor){(size_t)rnd(0, 5), 4, {in[0], in[1], in[2], in[3]}};
    s.out = (acl_tensor){
        s.in.offset + u8_floats(nin) + (size_t)rnd(0, 5), 4, {out[0], out[1], out[2], out[3]}};
    const size_t arena = s.out.offset + u8_floats(nout) + (size_t)rnd(1, 4);
    float *init = malloc(arena * sizeof(float)), *expected = malloc(arena * sizeof(float));
    fill_random(init, arena, 1.0f);
    for (size_t i = 0; i < nin; i++) bytes_at(init, &s.in)[i] = (uint8_t)rnd(0, 255);
    memcpy(expected, init, arena * sizeof(float));
    qconv_reference(&s, bytes_at(init, &s.in), bytes_at(expected, &s.out), oh, ow);
    char desc[256];
    snprintf(desc, sizeof desc, "conv_int8 %s %s -> %s k%dx%d s%d d%d g%d act %d zp %d/%d",
             s.ukernel, dims_str(4, in), dims_str(4, out), sh->kh, sh->kw, sh->stride_h, sh->dil_h,
             sh->group, sh->act, s.x_zp, s.y_zp);
    run_exact(desc, arena, init, expected, add_qconv, &s);
    free(init);
    free(expected);
    free(s.w);
    free(s.w_scale);
    free(s.bias);
}

void conv_int8_case(int big)
{
    acl_conv_shape sh;
    random_qconv_shape(&sh, big);
    qconv_case(&sh);
}

/* A packed B past conv_int8.c's PANEL_SPLIT_BYTES (2304 x 320, 739 KB) and
 * larger than the A rows of a 7x7 map: the split cuts the 7 pixel tiles x
 * 10 panels panel by panel, and the configs of three and of 64 workloads
 * start a core's range inside a panel's tiles. */
void conv_int8_wide_b_case(void)
{
    acl_conv_shape sh = conv3x3_shape(7, 7, 256, 320, 1);
    sh.act = ACL_ACT_RELU;
    qconv_case(&sh);
}

/* Depthwise shapes whose taps leave every remainder of the four a VNNI step
 * sums (conv_int8.c's DW_STEP): 9 (two steps and one tap), 4, 2, 3, 6 and
 * 25; rows of whole runs of pixels and a partial one, whole channel blocks
 * and a partial one, strided and padded, and runs inside a row's width
 * (their pixels' taps found from the first's) at stride 1 and 2, in padding
 * rows too. */
void conv_int8_depthwise_case(void)
{
    static const int k[][7] = {
        /* h, w, channels, kh, kw, stride, pad */
        {11, 19, 48, 3, 3, 1, 1}, {7, 7, 32, 3, 3, 2, 1},  {9, 10, 37, 2, 2, 1, 0},
        {6, 12, 16, 1, 2, 1, 0},  {6, 12, 16, 1, 3, 1, 1}, {8, 9, 21, 2, 3, 2, 1},
        {12, 12, 20, 5, 5, 1, 2}, {5, 36, 24, 3, 3, 2, 1}, {6, 21, 16, 5, 5, 1, 2}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        acl_conv_shape sh = conv3x3_shape(k[i][0], k[i][1], k[i][2], k[i][2], 1);
        sh.group = k[i][2];
        sh.kh = k[i][3];
        sh.kw = k[i][4];
        sh.stride_h = sh.stride_w = k[i][5];
        sh.pad_top = sh.pad_bottom = sh.pad_left = sh.pad_right = k[i][6];
        sh.act = (int)(i % 3);
        sh.act_min = -0.3f;
        sh.act_max = 0.4f;
        qconv_case(&sh);
    }
}

/* im2col rows whose kernel rows are copied as runs of kw * C bytes
 * (conv_int8.c's copy_block): a first layer's 7x7 and 3x3 over 3 channels
 * at stride 2, their K no multiple of 4 (a rows kernel's row then padded),
 * a map small enough that most pixels touch the padding and large enough
 * that some do not, and runs past 64 bytes (kw * C = 99 and 128). */
void conv_int8_im2col_runs_case(void)
{
    /* h, w, c, oc, kernel, stride; padding kernel / 2 */
    static const int k[][6] = {
        {23, 20, 3, 40, 7, 2}, {17, 18, 3, 32, 3, 2}, {9, 11, 33, 20, 3, 1}, {8, 8, 64, 24, 2, 1}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        acl_conv_shape sh = conv3x3_shape(k[i][0], k[i][1], k[i][2], k[i][3], 1);
        sh.kh = sh.kw = k[i][4];
        sh.stride_h = sh.stride_w = k[i][5];
        sh.pad_top = sh.pad_bottom = sh.pad_left = sh.pad_right = k[i][4] / 2;
        sh.act = ACL_ACT_RELU;
        qconv_case(&sh);
    }
}

/* ---- errors ------------------------------------------------------------------------- */

static void expect(int rc, const char *part)
{
    const char *msg = acl_last_error();
    check(rc != 0 && strstr(msg, part) && !strchr(msg, '\n'),
          "expected an error mentioning '%s', got rc %d '%s'", part, rc, msg);
}

void check_int8_errors(void)
{
    acl_graph *g;
    if (acl_graph_create(1000, &configs[0], &g) != 0) {
        check(0, "creating the error-case program: %s", acl_last_error());
        return;
    }
    const acl_tensor f = {0, 1, {100}}, q = {100, 1, {100}}, q_far = {990, 1, {100}};
    expect(acl_graph_add(g, ACL_OP_QUANTIZE, &(acl_quantize_attrs){.scale = 0.0f}, 1, &f, &q),
           "quantize: scale must be positive");
    expect(acl_graph_add(g, ACL_OP_DEQUANTIZE, &(acl_dequantize_attrs){1.0f, 256}, 1, &q, &f),
           "dequantize: zero_point must be 0..255");
    expect(acl_graph_add(g, ACL_OP_QUANTIZE, &(acl_quantize_attrs){.scale = 1.0f}, 1, &f, &q_far),
           "quantize: output uint8 [100] at offset 990 runs past the end");
    /* 100 bytes at float 10 end inside the 100 floats from 0. */
    expect(acl_graph_add(g, ACL_OP_QUANTIZE, &(acl_quantize_attrs){.scale = 1.0f}, 1, &f,
                         &(acl_tensor){10, 1, {100}}),
           "quantize: the output (bytes [40, 140)) overlaps the input");
    const acl_tensor q2[2] = {q, {130, 1, {100}}};
    expect(acl_graph_add(g, ACL_OP_QUANTIZED_ADD,
                         &(acl_quantized_add_attrs){1.0f, 0, 1.0f, 0, 1.0f, 300}, 2, q2,
                         &(acl_tensor){160, 1, {100}}),
           "quantized_add: zero_point must be 0..255");
    expect(acl_graph_add(g, ACL_OP_QUANTIZED_ADD,
                         &(acl_quantized_add_attrs){1.0f, 0, -1.0f, 0, 1.0f, 0}, 2, q2,
                         &(acl_tensor){160, 1, {100}}),
           "quantized_add: b_scale must be positive");
    expect(acl_graph_add(g, ACL_OP_QUANTIZED_ADD,
                         &(acl_quantized_add_attrs){1.0f, 0, 1.0f, 0, 1.0f, 0}, 2,
                         (acl_tensor[2]){q, {130, 1, {99}}}, &(acl_tensor){160, 1, {100}}),
           "quantized_add: b has dims");
    expect(acl_graph_add(g, ACL_OP_POOL,
                         &(acl_pool_attrs){.op = ACL_POOL_AVERAGE,
                                           .kernel = (int[]){2, 2},
                                           .kernel_count = 2,
                                           .strides = (int[]){1, 1},
                                           .strides_count = 2,
                                           .dilations = (int[]){1, 1},
                                           .dilations_count = 2,
                                           .pads = (int[]){0, 0, 0, 0},
                                           .pads_count = 4,
                                           .u8 = 1},
                         1, &(acl_tensor){0, 4, {1, 4, 4, 2}}, &(acl_tensor){100, 4, {1, 3, 3, 2}}),
           "average pool: no uint8 form");
    acl_conv_shape sh = conv3x3_shape(4, 4, 8, 8, 1);
    sh.act = ACL_ACT_SIGMOID;
    float w[8 * 8 * 9] = {0}, ws[1] = {0.1f};
    acl_conv_int8_attrs a = {.shape = sh,
                             .core_weights = configs[0].weights,
                             .core_weights_count = 1,
                             .workloads = 1,
                             .weight = w,
                             .weight_count = 8 * 8 * 9,
                             .x_scale = 1.0f,
                             .w_scale = ws,
                             .w_scale_count = 1,
                             .y_scale = 1.0f};
    const acl_tensor x = {0, 4, {1, 4, 4, 8}}, y = {100, 4, {1, 4, 4, 8}};
    expect(acl_graph_add(g, ACL_OP_CONV_INT8, &a, 1, &x, &y),
           "conv_int8: activation 4 cannot be fused");
    a.shape.act = ACL_ACT_NONE;
    w[5] = 0.5f;
    expect(acl_graph_add(g, ACL_OP_CONV_INT8, &a, 1, &x, &y),
           "conv_int8: weight[5] = 0.5 is not an int8 value");
    w[5] = 0.0f;
    a.ukernel = "9x9c9-interleaved-none";
    expect(acl_graph_add(g, ACL_OP_CONV_INT8, &a, 1, &x, &y),
           "'9x9c9-interleaved-none' is unknown");
    a.ukernel = NULL;
    a.w_scale_count = 3;
    expect(acl_graph_add(g, ACL_OP_CONV_INT8, &a, 1, &x, &y), "w_scale must hold 1 or oc = 8");
    a.w_scale_count = 1;
    const acl_tensor y_bad = {100, 4, {1, 4, 4, 9}};
    expect(acl_graph_add(g, ACL_OP_CONV_INT8, &a, 1, &x, &y_bad), "conv_int8: output has dims");
    check(acl_graph_add(g, ACL_OP_CONV_INT8, &a, 1, &x, &y) == 0 && acl_graph_node_count(g) == 1,
          "a valid conv_int8 after the failed ones: %s", acl_last_error());
    acl_graph_destroy(g);
}
