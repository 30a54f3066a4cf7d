/* Transposed convolution with few output channels per group (a decoder's
 * last layer: one score map, a mask), direct: the GEMM of deconv_col2im or
 * deconv_phase would have only taps * OCg or OCg columns, most of every
 * micro-kernel tile wasted.  Each input pixel landing on an output pixel
 * instead adds, for each output channel, the dot product of its channels with
 * the tap's weights (the shared transposed walk).  The weights are laid out
 * [group][tap][OCg][Cg] at create so that each dot product reads contiguous
 * weights; the products are summed in a fixed order, so every split gives
 * the same bits. */
#include <stdlib.h>
#include <string.h>

#include "conv_impl.h"

/* Output channels per group this algorithm takes: beyond them a GEMM's
 * columns are no longer mostly wasted. */
#define DOT_MAX_OCG 4

/* Channels per multiply-add of a dot product: one AVX2 or two NEON registers. */
#define DOT_LANES 8
typedef float dot_vec __attribute__((vector_size(DOT_LANES * sizeof(float))));
typedef float quarter_vec __attribute__((vector_size(DOT_LANES / 2 * sizeof(float))));

typedef struct {
    float *w;  /* [group][tap][ocg][cg] */
    conv_transposed_map map;
} dot_state;

static int deconv_dot_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                            const acl_ukernel *uk)
{
    if (d->ocg > DOT_MAX_OCG)
        return acl_fail("%s takes at most %d output channels per group, got %d", self->name,
                        DOT_MAX_OCG, d->ocg);
    return 0;
}

static int deconv_dot_create(acl_conv *conv, const float *weight)
{
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
    dot_state *st = calloc(1, sizeof *st);
    if (!(conv->impl = st)) return acl_fail("out of memory creating %s", conv->algo->name);
    if (!(st->w = acl_alloc((size_t)s->c * d->ocg * d->taps * sizeof(float))) ||
        conv_transposed_map_init(&st->map, conv) != 0)
        return -1;
    /* ONNX's [c][ocg][tap], with channel c = g * cg + ci. */
    for (int g = 0; g < s->group; g++)
        for (int t = 0; t < d->taps; t++)
            for (int j = 0; j < d->ocg; j++)
                for (int ci = 0; ci < d->cg; ci++)
                    st->w[(((size_t)g * d->taps + t) * d->ocg + j) * d->cg + ci] =
                        weight[(((size_t)g * d->cg + ci) * d->ocg + j) * d->taps + t];
    return 0;
}

static inline dot_vec load_lanes(const float *p)
{
    dot_vec v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* sum x[i] * w[i] for i < n: lanes of DOT_LANES, the lanes added as a tree
 * (halves, then quarters: a short dependency chain), then the tail. */
static inline float dot(const float *restrict x, const float *restrict w, int n)
{
    dot_vec acc = {0};
    int i = 0;
    for (; i + DOT_LANES <= n; i += DOT_LANES) acc += load_lanes(x + i) * load_lanes(w + i);
    quarter_vec lo, hi;
    memcpy(&lo, &acc, sizeof lo);
    memcpy(&hi, (const char *)&acc + sizeof lo, sizeof hi);
    const quarter_vec half = lo + hi;
    float sum = (half[0] + half[2]) + (half[1] + half[3]);
    for (; i < n; i++) sum += x[i] * w[i];
    return sum;
}

/* Adds input pixels pixel + i through `tap` to the output pixels at
 * y + i * y_step: per group and output channel, one dot product. */
static void land_dots(const conv_transposed_walk *walk, float *y, ptrdiff_t y_step, size_t pixel,
                      int count, int tap)
{
    const acl_conv *conv = walk->conv;
    const conv_dims *d = &conv->d;
    const float *w = ((const dot_state *)conv->impl)->w;
    for (int i = 0; i < count; i++) {
        float *out = y + i * y_step;
        const float *x = walk->io->x + (pixel + i) * conv->s.c;
        for (int g = 0; g < conv->s.group; g++) {
            const float *wt = w + ((size_t)g * d->taps + tap) * d->ocg * d->cg;
            for (int j = 0; j < d->ocg; j++)
                out[g * d->ocg + j] += dot(x + (size_t)g * d->cg, wt + (size_t)j * d->cg, d->cg);
        }
    }
}

static int deconv_dot_run(acl_conv *conv, const acl_exec *ex, const conv_io *io, acl_stage_times *t)
{
    dot_state *st = conv->impl;
    conv_transposed_walk walk = {conv, &st->map, io, land_dots, NULL};
    return conv_stage(ex, conv->s.n * conv->d.oh, conv_transposed_rows, &walk, &t->gemm_ms);
}

static void deconv_dot_destroy(acl_conv *conv)
{
    dot_state *st = conv->impl;
    acl_free(st->w);
    conv_transposed_map_free(&st->map);
    free(st);
}

const conv_algo conv_deconv_dot = {
    .name = "deconv_dot",
    .uses_ukernel = 0,
    .shapes = CONV_TRANSPOSED,
    .check = deconv_dot_check,
    .create = deconv_dot_create,
    .run = deconv_dot_run,
    .destroy = deconv_dot_destroy,
};
