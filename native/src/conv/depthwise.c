/* Direct depthwise convolution (group == c, oc = c * multiplier), two loop
 * orders for the tuner to choose from:
 *   depthwise_pixel          per output pixel: taps outer, all channels inner;
 *   depthwise_channel_block  per block of output channels, the block's weights
 *                            stay hot while the row's pixels stream past.
 * Both run in parallel over output rows and sum the taps in the same order, so
 * a row's result never depends on the worker that computes it. */
#include <string.h>

#include "conv_impl.h"

/* Output channels per block: two AVX-512 or eight NEON registers. */
#define CHANNEL_BLOCK 32

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
    int multiplier = s->oc / s->c;
    for (int ky = 0; ky < s->kh; ky++) {
        int iy = oy * s->stride_h - s->pad_top + ky * s->dil_h;
        if (iy < 0 || iy >= s->h) continue;
        for (int kx = 0; kx < s->kw; kx++) {
            int ix = ox * s->stride_w - s->pad_left + kx * s->dil_w;
            if (ix < 0 || ix >= s->w) continue;
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

static void channel_block_rows(void *arg, int begin, int end, int worker)
{
    const depthwise_ctx *ctx = arg;
    const acl_conv *conv = ctx->conv;
    const acl_conv_shape *s = &conv->s;
    for (int row = begin; row < end; row++)
        for (int o0 = 0; o0 < s->oc; o0 += CHANNEL_BLOCK) {
            int len = acl_min(CHANNEL_BLOCK, s->oc - o0);
            for (int ox = 0; ox < conv->d.ow; ox++) {
                size_t at = ((size_t)row * conv->d.ow + ox) * s->oc + o0;
                float acc[CHANNEL_BLOCK] = {0};
                /* A constant length lets the compiler keep the block's sums in registers. */
                if (len == CHANNEL_BLOCK)
                    pixel_taps(conv, ctx->io->x, row / conv->d.oh, row % conv->d.oh, ox, o0,
                               CHANNEL_BLOCK, acc);
                else
                    pixel_taps(conv, ctx->io->x, row / conv->d.oh, row % conv->d.oh, ox, o0, len,
                               acc);
                conv_finish(s, ctx->io->y + at, acc, conv->bias + o0,
                            ctx->io->residual ? ctx->io->residual + at : NULL, len);
            }
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
    .name = "depthwise_pixel",
    .uses_ukernel = 0,
    .check = depthwise_check,
    .create = depthwise_create,
    .run = pixel_run,
    .destroy = depthwise_destroy,
};

const conv_algo conv_depthwise_channel_block = {
    .name = "depthwise_channel_block",
    .uses_ukernel = 0,
    .check = depthwise_check,
    .create = depthwise_create,
    .run = channel_block_run,
    .destroy = depthwise_destroy,
};
