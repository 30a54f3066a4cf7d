/* Direct depthwise convolution (group == c, oc = c * multiplier), two loop
 * orders for the tuner to choose from:
 *   depthwise_pixel          per output pixel: taps outer, all channels inner;
 *   depthwise_channel_block  channels in blocks of one vector: away from the
 *                            borders a run of pixels keeps its sums in
 *                            registers and shares each tap's weight load.
 * Both run in parallel over output rows and sum the taps in the same order, so
 * a row's result never depends on the worker that computes it. */
#include <string.h>

#include "conv_impl.h"

/* Output channels per block: one AVX-512 or four NEON registers, as a GNU C
 * vector that each ISA lowers to its own registers. */
#define CHANNEL_BLOCK 16
typedef float channel_vec __attribute__((vector_size(CHANNEL_BLOCK * sizeof(float))));

/* Output pixels whose sums stay in registers together: 8 of AVX-512's 32
 * registers; elsewhere 4, which is 16 of NEON's 32 or 8 of AVX2's 16. */
#if defined(__AVX512F__)
#define PIXEL_RUN 8
#else
#define PIXEL_RUN 4
#endif

static int depthwise_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                           const acl_ukernel *uk)
{
    if (s->group != s->c)
        return acl_fail("%s needs group == c (one group per input channel), got group=%d with c=%d",
                        self->name, s->group, s->c);
    return 0;
}

/* Weights repacked tap-major, [kh*kw][oc], so a tap's weights are contiguous
 * across channels. */
static int depthwise_create(acl_conv *conv, const float *weight)
{
    int oc = conv->s.oc, taps = conv->d.taps;
    float *w = acl_alloc((size_t)oc * taps * sizeof(float));
    if (!w) return -1;
    for (int o = 0; o < oc; o++)
        for (int t = 0; t < taps; t++) w[(size_t)t * oc + o] = weight[(size_t)o * taps + t];
    conv->impl = w;
    return 0;
}

static void depthwise_destroy(acl_conv *conv) { acl_free(conv->impl); }

/* acc[i] += x[channel of output o0+i] * w[i] for len output channels. */
static inline void multiply_add(float *restrict acc, const float *restrict x,
                                const float *restrict w, int o0, int len, int multiplier)
{
    if (multiplier == 1) {
        x += o0;
        for (int i = 0; i < len; i++) acc[i] += x[i] * w[i];
    } else {
        for (int i = 0; i < len; i++) acc[i] += x[(o0 + i) / multiplier] * w[i];
    }
}

typedef struct {
    const acl_conv *conv;
    const conv_io *io;
} depthwise_ctx;

/* Sums the taps of output pixel (b, oy, ox) for channels [o0, o0 + len). */
static inline void pixel_taps(const acl_conv *conv, const float *x, int b, int oy, int ox, int o0,
                              int len, float *acc)
{
    const acl_conv_shape *s = &conv->s;
    const float *w = conv->impl;
    int multiplier = s->oc / s->c, ky0, ky1, kx0, kx1;
    conv_taps_inside(oy, s->stride_h, s->pad_top, s->dil_h, s->kh, s->h, &ky0, &ky1);
    conv_taps_inside(ox, s->stride_w, s->pad_left, s->dil_w, s->kw, s->w, &kx0, &kx1);
    for (int ky = ky0; ky < ky1; ky++) {
        int iy = oy * s->stride_h - s->pad_top + ky * s->dil_h;
        for (int kx = kx0; kx < kx1; kx++) {
            int ix = ox * s->stride_w - s->pad_left + kx * s->dil_w;
            const float *xp = x + ((size_t)(b * s->h + iy) * s->w + ix) * s->c;
            multiply_add(acc, xp, w + (size_t)(ky * s->kw + kx) * s->oc + o0, o0, len, multiplier);
        }
    }
}

static void pixel_rows(void *arg, int begin, int end, int worker)
{
    const depthwise_ctx *ctx = arg;
    const acl_conv *conv = ctx->conv;
    const acl_conv_shape *s = &conv->s;
    for (int row = begin; row < end; row++)
        for (int ox = 0; ox < conv->d.ow; ox++) {
            size_t at = ((size_t)row * conv->d.ow + ox) * s->oc;
            float *y = ctx->io->y + at;
            memset(y, 0, (size_t)s->oc * sizeof(float));
            pixel_taps(conv, ctx->io->x, row / conv->d.oh, row % conv->d.oh, ox, 0, s->oc, y);
            conv_finish(s, y, y, conv->bias, ctx->io->residual ? ctx->io->residual + at : NULL,
                        s->oc);
        }
}

static inline channel_vec load_vec(const float *p)
{
    channel_vec v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The output pixels [lo, hi) of a row whose taps all fall inside the input. */
static void interior_columns(const acl_conv_shape *s, int ow, int *lo, int *hi)
{
    int first = acl_div_up(s->pad_left, s->stride_w);
    int last = (s->w - 1 + s->pad_left - (s->kw - 1) * s->dil_w) / s->stride_w;  /* inclusive */
    if (s->w - 1 + s->pad_left - (s->kw - 1) * s->dil_w < 0) last = -1;
    *lo = acl_min(first, ow);
    *hi = acl_max(*lo, acl_min(last + 1, ow));
}

/* Sums the taps of `count` (<= PIXEL_RUN) interior pixels from ox for channels
 * [o0, o0 + CHANNEL_BLOCK), taps in the same order as pixel_taps, and finishes
 * them.  Inlined with a constant count so the sums stay in registers. */
static inline __attribute__((always_inline)) void interior_run(const acl_conv *conv,
                                                               const conv_io *io, int b, int oy,
                                                               int ox, int o0, int count)
{
    const acl_conv_shape *s = &conv->s;
    const float *w = conv->impl;
    const size_t c = (size_t)s->c, step = (size_t)s->stride_w * c;
    channel_vec acc[PIXEL_RUN];
    for (int p = 0; p < count; p++) acc[p] = (channel_vec){0};
    int ky0, ky1;
    conv_taps_inside(oy, s->stride_h, s->pad_top, s->dil_h, s->kh, s->h, &ky0, &ky1);
    for (int ky = ky0; ky < ky1; ky++) {
        int iy = oy * s->stride_h - s->pad_top + ky * s->dil_h;
        const float *row = io->x + ((size_t)(b * s->h + iy) * s->w) * c + o0;
        for (int kx = 0; kx < s->kw; kx++) {
            const channel_vec wv = load_vec(w + (size_t)(ky * s->kw + kx) * s->oc + o0);
            const float *xp = row + (size_t)(ox * s->stride_w - s->pad_left + kx * s->dil_w) * c;
            for (int p = 0; p < count; p++) acc[p] += load_vec(xp + p * step) * wv;
        }
    }
    for (int p = 0; p < count; p++) {
        size_t at = ((size_t)(b * conv->d.oh + oy) * conv->d.ow + ox + p) * s->oc + o0;
        float sums[CHANNEL_BLOCK];
        memcpy(sums, &acc[p], sizeof sums);
        conv_finish(s, io->y + at, sums, conv->bias + o0, io->residual ? io->residual + at : NULL,
                    CHANNEL_BLOCK);
    }
}

/* Channels [o0, o0 + len) of output pixel (b, oy, ox) through the checked path. */
static void checked_pixel(const acl_conv *conv, const conv_io *io, int b, int oy, int ox, int o0,
                          int len)
{
    const acl_conv_shape *s = &conv->s;
    size_t at = ((size_t)(b * conv->d.oh + oy) * conv->d.ow + ox) * s->oc + o0;
    float acc[CHANNEL_BLOCK] = {0};
    pixel_taps(conv, io->x, b, oy, ox, o0, len, acc);
    conv_finish(s, io->y + at, acc, conv->bias + o0, io->residual ? io->residual + at : NULL, len);
}

/* Every channel block of output pixels [ox, ox + count), count a constant. */
static inline __attribute__((always_inline)) void interior_pixels(const acl_conv *conv,
                                                                  const conv_io *io, int b,
                                                                  int oy, int ox, int count)
{
    for (int o0 = 0; o0 < conv->s.oc; o0 += CHANNEL_BLOCK)
        interior_run(conv, io, b, oy, ox, o0, count);
}

static void checked_pixels(const acl_conv *conv, const conv_io *io, int b, int oy, int ox0,
                           int ox1)
{
    for (int ox = ox0; ox < ox1; ox++)
        for (int o0 = 0; o0 < conv->s.oc; o0 += CHANNEL_BLOCK)
            checked_pixel(conv, io, b, oy, ox, o0, acl_min(CHANNEL_BLOCK, conv->s.oc - o0));
}

/* Pixel runs outer, channel blocks inner: a run's input rows and all the
 * weights stay in L1 while its channels are done. */
static void channel_block_rows(void *arg, int begin, int end, int worker)
{
    const depthwise_ctx *ctx = arg;
    const acl_conv *conv = ctx->conv;
    const acl_conv_shape *s = &conv->s;
    const int ow = conv->d.ow;
    int lo, hi;
    interior_columns(s, ow, &lo, &hi);
    /* Channel multipliers and a partial channel block take the checked path. */
    if (s->oc != s->c || s->oc % CHANNEL_BLOCK) lo = hi = 0;
    for (int row = begin; row < end; row++) {
        const int b = row / conv->d.oh, oy = row % conv->d.oh;
        checked_pixels(conv, ctx->io, b, oy, 0, lo);
        int ox = lo;
        for (; ox + PIXEL_RUN <= hi; ox += PIXEL_RUN)
            interior_pixels(conv, ctx->io, b, oy, ox, PIXEL_RUN);
        if (PIXEL_RUN > 4 && ox + 4 <= hi) {
            interior_pixels(conv, ctx->io, b, oy, ox, 4);
            ox += 4;
        }
        for (; ox < hi; ox++) interior_pixels(conv, ctx->io, b, oy, ox, 1);
        checked_pixels(conv, ctx->io, b, oy, ox, ow);
    }
}

static int depthwise_run(const acl_conv *conv, const acl_exec *ex, const conv_io *io,
                         acl_stage_times *t, acl_task_fn rows)
{
    depthwise_ctx ctx = {conv, io};
    return conv_stage(ex, conv->s.n * conv->d.oh, rows, &ctx, &t->gemm_ms);
}

static int pixel_run(acl_conv *conv, const acl_exec *ex, const conv_io *io, acl_stage_times *t)
{
    return depthwise_run(conv, ex, io, t, pixel_rows);
}

static int channel_block_run(acl_conv *conv, const acl_exec *ex, const conv_io *io,
                             acl_stage_times *t)
{
    return depthwise_run(conv, ex, io, t, channel_block_rows);
}

const conv_algo conv_depthwise_pixel = {
    .name = "depthwise_pixel", .uses_ukernel = 0,
    .check = depthwise_check, .create = depthwise_create,
    .run = pixel_run, .destroy = depthwise_destroy,
};

const conv_algo conv_depthwise_channel_block = {
    .name = "depthwise_channel_block", .uses_ukernel = 0,
    .check = depthwise_check, .create = depthwise_create,
    .run = channel_block_run, .destroy = depthwise_destroy,
};
