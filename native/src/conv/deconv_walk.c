/* The output-pixel walk of the transposed algorithms that gather: per output
 * pixel, the (input pixel, tap) pairs landing on it. */
#include "conv_impl.h"

void conv_transposed_rows(void *arg, int begin, int end, int worker)
{
    const conv_transposed_walk *walk = arg;
    const acl_conv *conv = walk->conv;
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
    for (int r = begin; r < end; r++) {
        const int b = r / d->oh, oy = r % d->oh;
        for (int ox = 0; ox < d->ow; ox++) {
            if (walk->wanted && !walk->wanted(conv, oy, ox)) continue;
            const size_t at = ((size_t)r * d->ow + ox) * s->oc;
            float *restrict y = walk->io->y + at;
            for (int o = 0; o < s->oc; o++) y[o] = 0.0f;
            for (int ky = 0; walk->land && ky < s->kh; ky++) {
                const int iy =
                    conv_transposed_source(oy, ky, s->stride_h, s->pad_top, s->dil_h, s->h);
                for (int kx = 0; iy >= 0 && kx < s->kw; kx++) {
                    const int ix =
                        conv_transposed_source(ox, kx, s->stride_w, s->pad_left, s->dil_w, s->w);
                    if (ix >= 0)
                        walk->land(walk, y, (size_t)(b * s->h + iy) * s->w + ix,
                                   ky * s->kw + kx);
                }
            }
            conv_finish(s, y, y, conv->bias, walk->io->residual ? walk->io->residual + at : NULL,
                        s->oc);
        }
    }
}
