/* Depthwise transposed convolution (group == c), direct: a GEMM per channel
 * would have one column, so each output pixel instead sums, channel-wise,
 * the input pixels its taps land from times the taps' weights.  The weights
 * are laid out [tap][oc] at create so that every tap is one contiguous
 * multiply-add over the channels; taps are summed in a fixed order on one
 * thread per output row, so every split gives the same bits. */
#include "conv_impl.h"

static int deconv_depthwise_check(const conv_algo *self, const acl_conv_shape *s,
                                  const conv_dims *d, const acl_ukernel *uk)
{
    if (s->group != s->c)
        return acl_fail("%s needs group == c (depthwise), got group=%d c=%d", self->name,
                        s->group, s->c);
    return 0;
}

static int deconv_depthwise_create(acl_conv *conv, const float *weight)
{
    const int oc = conv->s.oc, taps = conv->d.taps;
    float *w = acl_alloc((size_t)taps * oc * sizeof(float));
    if (!(conv->impl = w)) return -1;
    /* c x ocg x taps with one input channel per group is oc x taps. */
    for (int o = 0; o < oc; o++)
        for (int t = 0; t < taps; t++) w[(size_t)t * oc + o] = weight[(size_t)o * taps + t];
    return 0;
}

typedef struct {
    const acl_conv *conv;
    const conv_io *io;
} rows_ctx;

static void deconv_depthwise_rows(void *arg, int begin, int end, int worker)
{
    const rows_ctx *ctx = arg;
    const acl_conv *conv = ctx->conv;
    const acl_conv_shape *s = &conv->s;
    const int oc = s->oc, ocg = conv->d.ocg;
    const float *w = conv->impl;
    for (int r = begin; r < end; r++) {
        const int b = r / conv->d.oh, oy = r % conv->d.oh;
        for (int ox = 0; ox < conv->d.ow; ox++) {
            const size_t at = ((size_t)r * conv->d.ow + ox) * oc;
            float *restrict y = ctx->io->y + at;
            for (int o = 0; o < oc; o++) y[o] = 0.0f;
            for (int ky = 0; ky < s->kh; ky++) {
                const int iy =
                    conv_transposed_source(oy, ky, s->stride_h, s->pad_top, s->dil_h, s->h);
                for (int kx = 0; iy >= 0 && kx < s->kw; kx++) {
                    const int ix =
                        conv_transposed_source(ox, kx, s->stride_w, s->pad_left, s->dil_w, s->w);
                    if (ix < 0) continue;
                    const float *restrict x =
                        ctx->io->x + ((size_t)(b * s->h + iy) * s->w + ix) * s->c;
                    const float *restrict wt = w + (size_t)(ky * s->kw + kx) * oc;
                    if (ocg == 1)
                        for (int o = 0; o < oc; o++) y[o] += x[o] * wt[o];
                    else
                        for (int o = 0; o < oc; o++) y[o] += x[o / ocg] * wt[o];
                }
            }
            conv_finish(s, y, y, conv->bias, ctx->io->residual ? ctx->io->residual + at : NULL,
                        oc);
        }
    }
}

static int deconv_depthwise_run(acl_conv *conv, const acl_exec *ex, const conv_io *io,
                                acl_stage_times *t)
{
    rows_ctx ctx = {conv, io};
    return conv_stage(ex, conv->s.n * conv->d.oh, deconv_depthwise_rows, &ctx, &t->gemm_ms);
}

static void deconv_depthwise_destroy(acl_conv *conv) { acl_free(conv->impl); }

const conv_algo conv_deconv_depthwise = {
    .name = "deconv_depthwise", .uses_ukernel = 0, .shapes = CONV_TRANSPOSED,
    .check = deconv_depthwise_check, .create = deconv_depthwise_create,
    .run = deconv_depthwise_run, .destroy = deconv_depthwise_destroy,
};
