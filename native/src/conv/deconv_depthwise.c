/* Depthwise transposed convolution (group == c), direct: a GEMM per channel
 * would have one column, so each output pixel instead sums, channel-wise,
 * the input pixels landing on it times their taps' weights (the shared
 * transposed walk).  The weights are laid out [tap][oc] at create so that
 * every tap is one contiguous multiply-add over the channels. */
#include <stdlib.h>

#include "conv_impl.h"

typedef struct {
    float *w;  /* taps x oc */
    conv_transposed_map map;
} depthwise_state;

static int deconv_depthwise_check(const conv_algo *self, const acl_conv_shape *s,
                                  const conv_dims *d, const acl_ukernel *uk)
{
    if (s->group != s->c)
        return acl_fail("%s needs group == c (depthwise), got group=%d c=%d", self->name, s->group,
                        s->c);
    return 0;
}

static int deconv_depthwise_create(acl_conv *conv, const float *weight)
{
    const int oc = conv->s.oc, taps = conv->d.taps;
    depthwise_state *st = calloc(1, sizeof *st);
    if (!(conv->impl = st)) return acl_fail("out of memory creating deconv_depthwise");
    if (!(st->w = acl_alloc((size_t)taps * oc * sizeof(float))) ||
        conv_transposed_map_init(&st->map, conv) != 0)
        return -1;
    /* c x ocg x taps with one input channel per group is oc x taps. */
    for (int o = 0; o < oc; o++)
        for (int t = 0; t < taps; t++) st->w[(size_t)t * oc + o] = weight[(size_t)o * taps + t];
    return 0;
}

/* Adds input pixels pixel + i through `tap`, channel by channel, to the
 * output pixels at y + i * y_step. */
static void land_taps(const conv_transposed_walk *walk, float *y, ptrdiff_t y_step, size_t pixel,
                      int count, int tap)
{
    const int oc = walk->conv->s.oc, ocg = walk->conv->d.ocg;
    const float *restrict wt = ((const depthwise_state *)walk->conv->impl)->w + (size_t)tap * oc;
    for (int i = 0; i < count; i++) {
        float *restrict out = y + i * y_step;
        const float *restrict x = walk->io->x + (pixel + i) * walk->conv->s.c;
        if (ocg == 1)
            for (int o = 0; o < oc; o++) out[o] += x[o] * wt[o];
        else
            for (int o = 0; o < oc; o++) out[o] += x[o / ocg] * wt[o];
    }
}

static int deconv_depthwise_run(acl_conv *conv, const acl_exec *ex, const conv_io *io,
                                acl_stage_times *t)
{
    depthwise_state *st = conv->impl;
    conv_transposed_walk walk = {conv, &st->map, io, land_taps, NULL};
    return conv_stage(ex, conv->s.n * conv->d.oh, conv_transposed_rows, &walk, &t->gemm_ms);
}

static void deconv_depthwise_destroy(acl_conv *conv)
{
    depthwise_state *st = conv->impl;
    acl_free(st->w);
    conv_transposed_map_free(&st->map);
    free(st);
}

const conv_algo conv_deconv_depthwise = {
    .name = "deconv_depthwise",
    .uses_ukernel = 0,
    .shapes = CONV_TRANSPOSED,
    .check = deconv_depthwise_check,
    .create = deconv_depthwise_create,
    .run = deconv_depthwise_run,
    .destroy = deconv_depthwise_destroy,
};
