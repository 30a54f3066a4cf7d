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

/* Channels per multiply-add of a dot product: one AVX2 or two NEON
 * registers.  Also the pixels whose dot products are finished together: their
 * lane vectors folded pairwise into one vector of DOT_LANES sums (fold_dots),
 * 7 folds for 8 dot products where reducing each vector alone took 7 scalar
 * steps (PP-OCR's 16 -> 1 score head at 736x736: 2.7 ms, onnxruntime 0.37). */
#define DOT_LANES 8
typedef float dot_vec __attribute__((vector_size(DOT_LANES * sizeof(float))));

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

static inline dot_vec load_tail(const float *p, int n)
{
    dot_vec v = {0};
    memcpy(&v, p, (size_t)n * sizeof(float));
    return v;
}

/* v[i]: the products x_i[k] * w[k], k < cg, of pixel i < n (x_i at x + i *
 * c) summed into DOT_LANES lanes, lane l holding those with k % DOT_LANES
 * == l in order of k; zero for i >= n.  A whole batch goes chunk by chunk,
 * each weight vector loaded once for its DOT_LANES pixels. */
static inline void batch_dots(dot_vec v[DOT_LANES], const float *restrict x, size_t c,
                              const float *restrict w, int cg, int n)
{
    const int whole = cg / DOT_LANES * DOT_LANES, tail = cg - whole;
    for (int i = 0; i < DOT_LANES; i++) v[i] = (dot_vec){0};
    if (n == DOT_LANES) {
        for (int k = 0; k < whole; k += DOT_LANES) {
            const dot_vec wk = load_lanes(w + k);
#pragma GCC unroll 8
            for (int i = 0; i < DOT_LANES; i++) v[i] += load_lanes(x + i * c + k) * wk;
        }
    } else {
        for (int i = 0; i < n; i++)
            for (int k = 0; k < whole; k += DOT_LANES)
                v[i] += load_lanes(x + i * c + k) * load_lanes(w + k);
    }
    if (tail) {
        const dot_vec wk = load_tail(w + whole, tail);
        for (int i = 0; i < n; i++) v[i] += load_tail(x + i * c + whole, tail) * wk;
    }
}

/* DOT_LANES lane vectors into one vector of their sums, v[p]'s in lane p:
 * each fold adds the two halves of every block of both vectors, the blocks
 * (one per vector folded in so far) halving and doubling in number, in order. */
static inline dot_vec fold_dots(const dot_vec v[DOT_LANES])
{
    dot_vec h[4], q[2];
    for (int i = 0; i < 4; i++)
        h[i] = __builtin_shufflevector(v[2 * i], v[2 * i + 1], 0, 1, 2, 3, 8, 9, 10, 11) +
               __builtin_shufflevector(v[2 * i], v[2 * i + 1], 4, 5, 6, 7, 12, 13, 14, 15);
    for (int i = 0; i < 2; i++)
        q[i] = __builtin_shufflevector(h[2 * i], h[2 * i + 1], 0, 1, 4, 5, 8, 9, 12, 13) +
               __builtin_shufflevector(h[2 * i], h[2 * i + 1], 2, 3, 6, 7, 10, 11, 14, 15);
    return __builtin_shufflevector(q[0], q[1], 0, 2, 4, 6, 8, 10, 12, 14) +
           __builtin_shufflevector(q[0], q[1], 1, 3, 5, 7, 9, 11, 13, 15);
}

/* Adds input pixels pixel + i through `tap` to the output pixels at
 * y + i * y_step: per group and output channel, one dot product, DOT_LANES
 * pixels' at a time.  A pixel's sum is the same whichever pixels share its
 * fold (each lane adds only its own vector's lanes), so every split gives
 * the same bits. */
static void land_dots(const conv_transposed_walk *walk, float *y, ptrdiff_t y_step, size_t pixel,
                      int count, int tap)
{
    const acl_conv *conv = walk->conv;
    const conv_dims *d = &conv->d;
    const int c = conv->s.c;
    const float *w = ((const dot_state *)conv->impl)->w;
    for (int i0 = 0; i0 < count; i0 += DOT_LANES) {
        const int n = count - i0 < DOT_LANES ? count - i0 : DOT_LANES;
        const float *x = walk->io->x + (pixel + i0) * c;
        float *out = y + i0 * y_step;
        for (int g = 0; g < conv->s.group; g++) {
            const float *wt = w + ((size_t)g * d->taps + tap) * d->ocg * d->cg;
            for (int j = 0; j < d->ocg; j++) {
                dot_vec v[DOT_LANES];
                batch_dots(v, x + g * d->cg, (size_t)c, wt + (size_t)j * d->cg, d->cg, n);
                const dot_vec sums = fold_dots(v);
                for (int i = 0; i < n; i++) out[i * y_step + g * d->ocg + j] += sums[i];
            }
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
