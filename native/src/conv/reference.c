/* The oracle: a plain loop nest on the calling thread, accumulating in double
 * so that it is more accurate than anything it checks. */
#include <string.h>

#include "conv_impl.h"

static int reference_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                           const acl_ukernel *uk)
{
    return 0;
}

/* impl: the weights as given; the scratch: one pixel's accumulators (oc floats). */
static int reference_create(acl_conv *conv, const float *weight)
{
    size_t bytes = (size_t)conv->s.oc * conv->d.cg * conv->d.taps * sizeof(float);
    if (!(conv->impl = acl_alloc(bytes))) return -1;
    memcpy(conv->impl, weight, bytes);
    conv_scratch_reserve(conv, (size_t)conv->s.oc * sizeof(float));
    return 0;
}

/* One output pixel, all channels, before the epilogue. */
static void reference_pixel(const acl_conv *conv, const float *x, int b, int oy, int ox, float *acc)
{
    const acl_conv_shape *s = &conv->s;
    const float *w = conv->impl;
    int ky0, ky1, kx0, kx1;
    conv_taps_inside(oy, s->stride_h, s->pad_top, s->dil_h, s->kh, s->h, &ky0, &ky1);
    conv_taps_inside(ox, s->stride_w, s->pad_left, s->dil_w, s->kw, s->w, &kx0, &kx1);
    for (int o = 0; o < s->oc; o++) {
        int g = o / conv->d.ocg;
        double sum = 0.0;
        for (int ci = 0; ci < conv->d.cg; ci++)
            for (int ky = ky0; ky < ky1; ky++) {
                int iy = oy * s->stride_h - s->pad_top + ky * s->dil_h;
                for (int kx = kx0; kx < kx1; kx++) {
                    int ix = ox * s->stride_w - s->pad_left + kx * s->dil_w;
                    size_t pixel = (size_t)(b * s->h + iy) * s->w + ix;
                    float xv = x[pixel * s->c + g * conv->d.cg + ci];
                    float wv = w[((size_t)o * conv->d.cg + ci) * conv->d.taps + ky * s->kw + kx];
                    sum += (double)xv * wv;
                }
            }
        acc[o] = (float)sum;
    }
}

/* The same for a transposed shape: every (input pixel, tap) landing on the
 * output pixel; weights are c x ocg x kh x kw. */
static void reference_transposed_pixel(const acl_conv *conv, const float *x, int b, int oy, int ox,
                                       float *acc)
{
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
    const float *w = conv->impl;
    for (int o = 0; o < s->oc; o++) {
        const int g = o / d->ocg, j = o % d->ocg;
        double sum = 0.0;
        for (int ky = 0; ky < s->kh; ky++) {
            const int iy = conv_transposed_source(oy, ky, s->stride_h, s->pad_top, s->dil_h, s->h);
            for (int kx = 0; iy >= 0 && kx < s->kw; kx++) {
                const int ix =
                    conv_transposed_source(ox, kx, s->stride_w, s->pad_left, s->dil_w, s->w);
                if (ix < 0) continue;
                const float *xp = x + ((size_t)(b * s->h + iy) * s->w + ix) * s->c + g * d->cg;
                const float *wp = w + ((size_t)g * d->cg * d->ocg + j) * d->taps + ky * s->kw + kx;
                for (int ci = 0; ci < d->cg; ci++)
                    sum += (double)xp[ci] * wp[(size_t)ci * d->ocg * d->taps];
            }
        }
        acc[o] = (float)sum;
    }
}

static int reference_run(acl_conv *conv, const acl_exec *ex, const conv_io *io, acl_stage_times *t)
{
    const acl_conv_shape *s = &conv->s;
    float *acc = conv_scratch_at(io, 0);
    double start = acl_now_ms();
    for (int b = 0; b < s->n; b++)
        for (int oy = 0; oy < conv->d.oh; oy++)
            for (int ox = 0; ox < conv->d.ow; ox++) {
                size_t at = ((size_t)(b * conv->d.oh + oy) * conv->d.ow + ox) * s->oc;
                if (s->transposed) reference_transposed_pixel(conv, io->x, b, oy, ox, acc);
                else reference_pixel(conv, io->x, b, oy, ox, acc);
                conv_finish(s, io->y + at, acc, conv->bias, io->residual ? io->residual + at : NULL,
                            s->oc);
            }
    t->gemm_ms += acl_now_ms() - start;
    return 0;
}

static void reference_destroy(acl_conv *conv) { acl_free(conv->impl); }

const conv_algo conv_reference = {
    .name = "reference",
    .uses_ukernel = 0,
    .shapes = CONV_EITHER,
    .check = reference_check,
    .create = reference_create,
    .run = reference_run,
    .destroy = reference_destroy,
};
