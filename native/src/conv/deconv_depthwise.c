/* Depthwise transposed convolution (group == c), direct: a GEMM per channel
 * would have one column, so each output pixel instead sums, channel-wise,
 * the input pixels landing on it times their taps' weights (the shared
 * transposed walk).  The weights are laid out [tap][oc] at create so that
 * every tap is one contiguous multiply-add over the channels. */
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

/* Adds input pixel `pixel` through `tap`, channel by channel, to y. */
static void land_taps(const conv_transposed_walk *walk, float *restrict y, size_t pixel,
                      int tap)
{
    const int oc = walk->conv->s.oc, ocg = walk->conv->d.ocg;
    const float *restrict x = walk->io->x + pixel * walk->conv->s.c;
    const float *restrict wt = (const float *)walk->conv->impl + (size_t)tap * oc;
    if (ocg == 1)
        for (int o = 0; o < oc; o++) y[o] += x[o] * wt[o];
    else
        for (int o = 0; o < oc; o++) y[o] += x[o / ocg] * wt[o];
}

static int deconv_depthwise_run(acl_conv *conv, const acl_exec *ex, const conv_io *io,
                                acl_stage_times *t)
{
    conv_transposed_walk walk = {conv, io, NULL, land_taps, NULL};
    return conv_stage(ex, conv->s.n * conv->d.oh, conv_transposed_rows, &walk, &t->gemm_ms);
}

static void deconv_depthwise_destroy(acl_conv *conv) { acl_free(conv->impl); }

const conv_algo conv_deconv_depthwise = {
    .name = "deconv_depthwise", .uses_ukernel = 0, .shapes = CONV_TRANSPOSED,
    .check = deconv_depthwise_check, .create = deconv_depthwise_create,
    .run = deconv_depthwise_run, .destroy = deconv_depthwise_destroy,
};
