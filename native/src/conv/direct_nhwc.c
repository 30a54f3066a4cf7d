/* Direct convolution for up to 64 input channels (a first layer over RGB, a
 * spectrogram's single channel, a squeeze layer's output): for few channels
 * im2col's rows would be a few floats per tap, copied for every output
 * pixel, and the GEMM's K tiny; for more, it saves im2col's copy.  A run
 * of output pixels keeps its sums for a block of output channels in
 * registers and reads every tap's input channels straight from the NHWC
 * input, broadcast against a vector of weights, packed [block][tap][c]
 * [CHANNEL_BLOCK] at create (channel_blocks.h).  Rows are split over the
 * workers and each pixel sums its taps in one order, so every split gives
 * the same bits.  It also reads an NCHW input (conv_read_nchw) in the same
 * order, each channel from its own plane: a model's image input then needs
 * no transposed copy into the arena before the first layer. */
#include "channel_blocks.h"

/* Input channels this algorithm takes, for the tuner to weigh against the
 * GEMM algorithms: with 16 or 32 it matched or beat im2col by up to 8% on
 * 3x3 layers here; past 64 a pass's weights (taps x c x 256 bytes) outgrow
 * the L2 cache. */
#define DIRECT_MAX_C 64

static int direct_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                        const acl_ukernel *uk)
{
    if (s->group != 1) return acl_fail("%s takes group == 1, got group=%d", self->name, s->group);
    if (s->c > DIRECT_MAX_C)
        return acl_fail("%s takes at most %d input channels, got c=%d", self->name, DIRECT_MAX_C,
                        s->c);
    return 0;
}

/* Blocks of output channels one pass over a row computes: each broadcast
 * input value feeds DIRECT_BLOCKS multiply-adds and each weight vector
 * DIRECT_RUN pixels, so loads stay well below the multiply-adds (one block
 * at a time needed a broadcast per multiply-add and ran at 0.6x onnxruntime
 * on a first layer).  AVX-512: 4 x 5 sums of its 32 registers (4 x 6 left no
 * room for the weights, which were then re-read per multiply-add: 8-18%
 * slower on first layers); elsewhere 2 x 4, which is 8 of AVX2's 16
 * registers or 16 of NEON's 32. */
#if defined(__AVX512F__)
#define DIRECT_BLOCKS 4
#define DIRECT_RUN 5
#else
#define DIRECT_BLOCKS 2
#define DIRECT_RUN 4
#endif
/* With one or three input channels (compiled as constants) a tap is a few
 * multiply-adds per pixel, and a run of DIRECT_RUN pixels spent about as
 * long again in the taps' loop and its addresses: fewer blocks then take
 * longer runs, as many sums as DIRECT_BLOCKS x DIRECT_RUN, up to 16 pixels
 * (GCC unrolls no loop of more iterations completely).  With more channels
 * longer runs took 1.1-1.4x the time here, with the column stride and the
 * channels compiled as constants too: a 16-pixel run of 32 channels at
 * stride 2 reads 33 columns of 128 bytes per kernel row beside its 18 KB of
 * weights, about all of L1. */
#define DIRECT_SUMS (DIRECT_BLOCKS * DIRECT_RUN)
#define DIRECT_LONG_RUN(nb) (DIRECT_SUMS / (nb) < 16 ? DIRECT_SUMS / (nb) : 16)

/* One output row's view of a pass of up to DIRECT_BLOCKS channel blocks. */
typedef struct {
    const acl_conv_shape *s;
    const float *x;         /* image b's input */
    const float *residual;  /* the row's residual at the pass's first channel, or NULL */
    float *y;               /* the row's output at the pass's first channel */
    const float *weight;    /* the pass's first block of packed taps */
    const float *bias;      /* the pass's first channel's bias */
    size_t block_floats;    /* packed floats per block */
    float act_a, act_b;     /* the activation's parameters (acl_conv_act_params) */
    channel_clamp clamp;    /* a ReLU or Clip, applied in registers */
    int oy, ky0, ky1, len;  /* len: the pass's output channels */
} block_row;

/* Output pixels [ox, ox + count) of nb blocks of a row; `checked`: their
 * column taps are bounded per pixel (count 1), else all lie inside the input;
 * `full`: every block is whole; `nchw`: the input's layout.  Inlined with
 * constant count, c, checked, nb, full and nchw so the sums stay in registers
 * and go to the output without a round trip through the stack. */
static inline __attribute__((always_inline)) void row_pixels(const block_row *r, int ox,
                                                             const int count, const int c,
                                                             const int checked, const int nb,
                                                             const int full, const int nchw)
{
    const acl_conv_shape *s = r->s;
    const int kw = s->kw;
    const ptrdiff_t pixel = nchw ? 1 : c, channel = nchw ? (ptrdiff_t)s->h * s->w : 1;
    /* Hoisted, with each channel's base below: computed in the loop, they cost
     * an NCHW first layer 8% (its channels' rows lie a plane apart). */
    const ptrdiff_t step = (ptrdiff_t)s->stride_w * pixel;
    int kx0 = 0, kx1 = kw;
    if (checked) conv_taps_inside(ox, s->stride_w, s->pad_left, s->dil_w, kw, s->w, &kx0, &kx1);
    channel_vec acc[DIRECT_LONG_RUN(1)][DIRECT_BLOCKS];
    for (int p = 0; p < count; p++)
        for (int b = 0; b < nb; b++) acc[p][b] = (channel_vec){0};
    for (int ky = r->ky0; ky < r->ky1; ky++) {
        const int iy = r->oy * s->stride_h - s->pad_top + ky * s->dil_h;
        const float *row = r->x + (ptrdiff_t)iy * s->w * pixel;
        for (int kx = kx0; kx < kx1; kx++) {
            const float *wt = r->weight + (size_t)(ky * kw + kx) * c * CHANNEL_BLOCK;
            const float *xp =
                row + (ptrdiff_t)(ox * s->stride_w - s->pad_left + kx * s->dil_w) * pixel;
            for (int ci = 0; ci < c; ci++) {
                channel_vec wv[DIRECT_BLOCKS];
                for (int b = 0; b < nb; b++)
                    wv[b] = load_vec(wt + b * r->block_floats + (size_t)ci * CHANNEL_BLOCK);
                const float *xc = xp + ci * channel;
                for (int p = 0; p < count; p++) {
                    const float xv = xc[p * step];
                    for (int b = 0; b < nb; b++) acc[p][b] += xv * wv[b];
                }
            }
        }
    }
    /* Locals: the stores below may alias *r for all the compiler knows, and
     * it reloaded the clamp bounds and residual pointer for every vector
     * (a first layer took 13% longer). */
    const channel_clamp clamp = r->clamp;
    const float *const residual = r->residual, *const bias = r->bias;
    float *const y = r->y;
    const int row_len = r->len;
    /* Unrolled whatever the body's size: a loop left rolled indexes the sums
     * with a variable and keeps them in memory (16 pixels of one block went
     * through the stack after every run). */
#pragma GCC unroll 16
    for (int p = 0; p < count; p++) {
        const size_t at = (size_t)(ox + p) * s->oc;
        for (int b = 0; b < nb; b++) {
            const int o = b * CHANNEL_BLOCK;
            const int len = full ? CHANNEL_BLOCK : acl_min(CHANNEL_BLOCK, row_len - o);
            channel_vec v = acc[p][b] + load_vec(bias + o);
            if (len == CHANNEL_BLOCK) {  /* whole vectors: no copy of a variable length */
                if (residual) v += load_vec(residual + at + o);
                v = channel_clamp_apply(&clamp, v);
                memcpy(y + at + o, &v, sizeof v);
                continue;
            }
            if (residual) v += load_lanes(residual + at + o, len);
            v = channel_clamp_apply(&clamp, v);
            store_lanes(y + at + o, v, len);
        }
    }
    /* Other activations while the run's outputs are in L1, not in a pass over
     * the row; not on the sums in registers, where the switch made the
     * compiler spill them. */
    if (r->clamp.on || s->act == ACL_ACT_NONE) return;
    for (int p = 0; p < count; p++) {
        float *y = r->y + (size_t)(ox + p) * s->oc;
        acl_activate(s->act, r->act_a, r->act_b, y, y, (size_t)r->len);
    }
}

/* The interior pixels [lo, hi) by runs of `run`, the rest by runs of
 * DIRECT_TAIL, the last ending at hi and recomputing up to 3 pixels to the
 * values they already hold.  A whole run ending at hi would recompute up to
 * 15 of a long one; pixels one at a time load a weight vector per
 * multiply-add (9% of a 55-pixel row, a quarter of its time). */
#define DIRECT_TAIL 4
static inline
    __attribute__((always_inline)) void interior_runs(const block_row *r, int lo, int hi,
                                                      const int c, const int nb, const int run,
                                                      const int full, const int nchw)
{
    int ox = lo;
    for (; ox + run <= hi; ox += run) row_pixels(r, ox, run, c, 0, nb, full, nchw);
    for (; ox < hi; ox += DIRECT_TAIL)
        row_pixels(r, acl_min(ox, hi - DIRECT_TAIL), DIRECT_TAIL, c, 0, nb, full, nchw);
}

/* The row's pixels for nb blocks: the interior by runs (an interior
 * narrower than DIRECT_TAIL takes none), the rest one at a time through one
 * inlined copy (each call site of row_pixels is one). */
static inline __attribute__((always_inline)) void block_row_run(const block_row *r, int ow, int lo,
                                                                int hi, const int c, const int nb,
                                                                const int run, const int nchw)
{
    if (hi - lo < DIRECT_TAIL) hi = lo;
    for (int ox = 0; ox < ow; ox++) {
        if (ox == lo && lo < hi) {
            if (r->len == nb * CHANNEL_BLOCK) interior_runs(r, lo, hi, c, nb, run, 1, nchw);
            else interior_runs(r, lo, hi, c, nb, run, 0, nchw);
            ox = hi - 1;
            continue;
        }
        row_pixels(r, ox, 1, c, 1, nb, 0, nchw);
    }
}

/* `few`: c is one or three, which take DIRECT_LONG_RUN. */
#define BLOCK_RUN(nb) block_row_run(r, ow, lo, hi, c, nb, few ? DIRECT_LONG_RUN(nb) : DIRECT_RUN, nchw)
static inline
    __attribute__((always_inline)) void block_row_blocks(const block_row *r, int ow, int lo, int hi,
                                                         const int c, int nb, const int few,
                                                         const int nchw)
{
    switch (nb) {
    case 1: BLOCK_RUN(1); break;
#if DIRECT_BLOCKS > 2
    case 2: BLOCK_RUN(2); break;
    case 3: BLOCK_RUN(3); break;
#endif
    default: BLOCK_RUN(DIRECT_BLOCKS); break;
    }
}

/* Specialised for one and three input channels (a spectrogram, RGB) and for
 * 16 and 32 (a squeeze layer's output); an NCHW input for RGB (one channel
 * is laid out alike either way). */
static void block_row_dispatch(const block_row *r, int ow, int lo, int hi, int nb, int nchw)
{
    if (nchw && r->s->c != 1) {
        if (r->s->c == 3) block_row_blocks(r, ow, lo, hi, 3, nb, 1, 1);
        else block_row_blocks(r, ow, lo, hi, r->s->c, nb, 0, 1);
        return;
    }
    switch (r->s->c) {
    case 1: block_row_blocks(r, ow, lo, hi, 1, nb, 1, 0); break;
    case 3: block_row_blocks(r, ow, lo, hi, 3, nb, 1, 0); break;
    case 16: block_row_blocks(r, ow, lo, hi, 16, nb, 0, 0); break;
    case 32: block_row_blocks(r, ow, lo, hi, 32, nb, 0, 0); break;
    default: block_row_blocks(r, ow, lo, hi, r->s->c, nb, 0, 0); break;
    }
}

static void direct_rows(void *arg, int begin, int end, int worker)
{
    const channel_blocks_ctx *ctx = arg;
    const acl_conv *conv = ctx->conv;
    const acl_conv_shape *s = &conv->s;
    const channel_blocks *st = conv->impl;
    const int ow = conv->d.ow, oh = conv->d.oh, oc = s->oc;
    int lo, hi;
    conv_interior_columns(s, ow, &lo, &hi);
    for (int row = begin; row < end; row++) {
        const size_t out_at = (size_t)row * ow * oc;
        block_row r = {
            .s = s, .oy = row % oh, .x = ctx->io->x + (size_t)(row / oh) * s->h * s->w * s->c};
        conv_taps_inside(r.oy, s->stride_h, s->pad_top, s->dil_h, s->kh, s->h, &r.ky0, &r.ky1);
        const size_t block_floats = (size_t)conv->d.taps * s->c * CHANNEL_BLOCK;
        acl_conv_act_params(s, &r.act_a, &r.act_b);
        r.clamp = channel_clamp_of(s);
        for (int o0 = 0; o0 < oc; o0 += DIRECT_BLOCKS * CHANNEL_BLOCK) {
            r.residual = ctx->io->residual ? ctx->io->residual + out_at + o0 : NULL;
            r.y = ctx->io->y + out_at + o0;
            r.weight = st->weight + (size_t)(o0 / CHANNEL_BLOCK) * block_floats;
            r.bias = st->bias + o0;
            r.block_floats = block_floats;
            r.len = acl_min(DIRECT_BLOCKS * CHANNEL_BLOCK, oc - o0);
            block_row_dispatch(&r, ow, lo, hi, acl_div_up(r.len, CHANNEL_BLOCK), conv->x_nchw);
        }
    }
}

static int direct_run(acl_conv *conv, const acl_exec *ex, const conv_io *io, acl_stage_times *t)
{
    channel_blocks_ctx ctx = {conv, io};
    return conv_stage(ex, conv->s.n * conv->d.oh, direct_rows, &ctx, &t->gemm_ms);
}

const conv_algo conv_direct_nhwc = {
    .name = "direct_nhwc",
    .uses_ukernel = 0,
    .reads_nchw = 1,
    .check = direct_check,
    .create = channel_blocks_create,
    .run = direct_run,
    .destroy = channel_blocks_destroy,
};
