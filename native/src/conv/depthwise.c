/* Direct depthwise convolution (group == c, oc = c * multiplier), two loop
 * orders for the tuner to choose from:
 *   depthwise_pixel          per output pixel: taps outer, all channels inner;
 *   depthwise_channel_block  (oc == c) channels in blocks of one vector: a run
 *                            of pixels keeps its sums in registers and shares
 *                            each tap's weight load.
 * and the same channel blocks for narrow groups (ResNeXt's 32 groups of 4 to
 * 16 channels, RegNet's of 8), which a GEMM per group pads to its tile width:
 *   grouped_channel_block    (cg == ocg, dividing the block) each vector holds
 *                            several whole groups; input channel ci of every
 *                            group is spread over its group's lanes by one
 *                            shuffle of the pixel's vector, then one
 *                            multiply-add per (tap, ci).
 * All run in parallel over output rows and sum the taps in the same order, so
 * a row's result never depends on the worker that computes it. */
#include <stdint.h>
#include <string.h>

#include "channel_blocks.h"

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
    const channel_blocks_ctx *ctx = arg;
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

/* ---- depthwise_channel_block ---------------------------------------------
 * Per output row and channel block, runs of PIXEL_RUN pixels keep their sums
 * in registers and share each tap's weight vector; runs whose taps cross
 * the border take the same code, reading zeros there.  The weights are
 * packed block-major, [block][tap][CHANNEL_BLOCK], and zero-padded like the
 * bias, so a partial last block needs no special weights; only its input
 * loads near the end of the tensor and its stores are shortened. */

/* Above this many channels, a unit's rows are done block by block: a
 * block's input rows (kh of them, up to 9 apart when dilated) then stay in L1
 * while its output rows are computed, where a row of all blocks is too wide
 * to keep them there (LR-ASPP's 960 channels on 32x32, 5x5 at dilation 2:
 * 0.36 -> 0.32 ms). */
#define BLOCKS_OUTER_CHANNELS 256
/* The widest kernel the sliding runs hold in registers: 7 weight vectors
 * beside PIXEL_RUN sums. */
#define SLIDING_KW_MAX 7

static int channel_block_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                               const acl_ukernel *uk)
{
    if (depthwise_check(self, s, d, uk)) return -1;
    if (s->oc != s->c)
        return acl_fail("%s needs one output channel per input channel, got oc=%d with c=%d",
                        self->name, s->oc, s->c);
    return 0;
}

static int grouped_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                         const acl_ukernel *uk)
{
    if (s->group == 1 || s->group == s->c)
        return acl_fail("%s takes grouped convolutions of several channels per group, got "
                        "group=%d with c=%d",
                        self->name, s->group, s->c);
    if (d->cg != d->ocg || CHANNEL_BLOCK % d->cg)
        return acl_fail("%s needs as many output as input channels per group, dividing %d; "
                        "got %d -> %d",
                        self->name, CHANNEL_BLOCK, d->cg, d->ocg);
    return 0;
}

/* The lanes of input channel ci of each group of cg lanes: a shuffle of the
 * pixel's vector, whose lanes are the block's input channels. */
static inline channel_vec group_spread(channel_vec x, const int cg, const int ci)
{
    channel_mask lane;
    for (int l = 0; l < CHANNEL_BLOCK; l++) lane[l] = l / cg * cg + ci;
    return __builtin_shuffle(x, lane);
}

/* A partial block's vector: a whole vector while it stays inside the tensor
 * (the lanes past len are never stored), else only len floats. */
static inline channel_vec load_block(const float *p, int len, const float *end)
{
    if (len == CHANNEL_BLOCK || p + CHANNEL_BLOCK <= end) return load_vec(p);
    return load_lanes(p, len);
}

/* One output row's view of one channel block. */
typedef struct {
    const acl_conv_shape *s;
    const float *x;         /* image b's input at the block's first channel */
    const float *x_end;     /* the end of the whole input */
    const float *residual;  /* the row's residual at the block, or NULL */
    const float *r_end;
    float *y;               /* the row's output at the block */
    const float *weight;    /* the block's packed taps */
    channel_vec bias;
    channel_clamp clamp;    /* a ReLU or Clip, applied in registers */
    int cg;                 /* channels per group: 1 for depthwise */
    int oy, ky0, ky1, len;
} block_row;

/* The sums of output pixels [ox, ox + count) of a block row through the
 * epilogue into the output. */
static inline __attribute__((always_inline)) void
store_pixels(const block_row *r, int ox, const int count, const int len, const channel_vec *acc)
{
    /* Locals, as in direct_nhwc.c: the stores may alias *r for all the
     * compiler knows. */
    const channel_clamp clamp = r->clamp;
    const channel_vec bias = r->bias;
    const float *const residual = r->residual, *const r_end = r->r_end;
    float *const y = r->y;
    for (int p = 0; p < count; p++) {
        channel_vec v = acc[p] + bias;
        const size_t at = (size_t)(ox + p) * r->s->oc;
        if (residual) v += load_block(residual + at, len, r_end);
        v = channel_clamp_apply(&clamp, v);
        if (len == CHANNEL_BLOCK) memcpy(y + at, &v, sizeof v);
        else store_lanes(y + at, v, len);
    }
}

/* Zeros for a run's taps in the padding: a bordered run reads them instead of
 * the input, so its pixels keep their sums in registers like an interior
 * run's.  Taps skipped one pixel at a time chained each pixel's sums through
 * one register: ResNeXt's 32 groups of 16 channels on 14x14 spent as long on
 * a row's two border pixels as on its twelve others. */
static const float padding_zeros[CHANNEL_BLOCK];

/* A run of `run` (up to PIXEL_RUN) output pixels of a block row from ox,
 * the first `stored` of them written; `checked`: some of their taps fall in the
 * padding, and read zeros, else all lie inside the input.  Each sum adds its
 * taps in the same order either way, a tap in the padding adding zero, so a
 * pixel's result does not depend on the run that computes it.  Inlined with
 * constant kw, len == CHANNEL_BLOCK, checked, stored, run and cg (1: depthwise),
 * so the sums stay in registers, the full-block loads are plain and each
 * shuffle's lanes are constants. */
static inline __attribute__((always_inline)) void block_pixels(const block_row *r, int ox,
                                                               const int kw, const int len,
                                                               const int checked, const int cg,
                                                               const int run, const int stored)
{
    const acl_conv_shape *s = r->s;
    const size_t c = (size_t)s->c;
    const size_t step = (size_t)s->stride_w * c;
    channel_vec acc[PIXEL_RUN];
    for (int p = 0; p < run; p++) acc[p] = (channel_vec){0};
    for (int ky = r->ky0; ky < r->ky1; ky++) {
        const int iy = r->oy * s->stride_h - s->pad_top + ky * s->dil_h;
        const float *row = r->x + (size_t)iy * s->w * c;
        for (int kx = 0; kx < kw; kx++) {
            const float *wt = r->weight + (size_t)(ky * kw + kx) * cg * CHANNEL_BLOCK;
            const int ix = ox * s->stride_w - s->pad_left + kx * s->dil_w;
            const float *xp = row + (ptrdiff_t)ix * (ptrdiff_t)c;
            /* Pixel p's input, or zeros where it lies in the padding. */
            const float *src[PIXEL_RUN];
            for (int p = 0; p < run; p++) {
                const int at = ix + p * s->stride_w;
                src[p] = !checked || (at >= 0 && at < s->w) ? xp + (ptrdiff_t)p * (ptrdiff_t)step
                                                            : padding_zeros;
            }
            if (cg == CHANNEL_BLOCK) {  /* one group: its inputs broadcast */
                for (int ci = 0; ci < cg; ci++) {
                    const channel_vec wv = load_vec(wt + (size_t)ci * CHANNEL_BLOCK);
                    for (int p = 0; p < run; p++) acc[p] += src[p][ci] * wv;
                }
                continue;
            }
            channel_vec xv[PIXEL_RUN];
            for (int p = 0; p < run; p++)
                xv[p] =
                    src[p] == padding_zeros ? (channel_vec){0} : load_block(src[p], len, r->x_end);
            if (cg == 1) {
                const channel_vec wv = load_vec(wt);
                for (int p = 0; p < run; p++) acc[p] += xv[p] * wv;
                continue;
            }
#pragma GCC unroll 16
            for (int ci = 0; ci < cg; ci++) {
                const channel_vec wv = load_vec(wt + (size_t)ci * CHANNEL_BLOCK);
                for (int p = 0; p < run; p++) acc[p] += group_spread(xv[p], cg, ci) * wv;
            }
        }
    }
    if (stored == run) store_pixels(r, ox, run, len, acc);
    else
        for (int p = 0; p < run; p++)  /* unrolled, so acc stays in registers */
            if (p < stored) store_pixels(r, ox + p, 1, len, &acc[p]);
}

/* Holds v in a register from here on: GCC otherwise folds its load into
 * every multiply-add that uses it, one load per tap where the sliding run
 * loads each input pixel once (x86's vfmadd takes a memory operand; 3x3 on
 * 112x112x16: 24 loads per kernel row of a run instead of 10).  At stride 1
 * only: at stride 2 a pixel feeds one or two taps, and holding it made
 * MobileNetV3's 3x3 on 112x112x64 slower. */
static inline __attribute__((always_inline)) void keep_in_register(channel_vec *v)
{
#if defined(__AVX2__) || defined(__AVX512F__)
    __asm__("" : "+v"(*v));
#else
    (void)v;
#endif
}

/* How a sliding run meets the row's borders.  CHECK_ANY: the input columns
 * it may read are found at run time, and a bit test guards each one.
 * CHECK_LEFT / CHECK_RIGHT: exactly the "same" padding's columns,
 * (kw - 1) * dil / 2 of them, lie outside, at the run's start / end; known at
 * compile time, so those columns drop out of the code and the rest run as an
 * interior run's do.  At stride 1, every border run of a row at least a run
 * and two paddings wide is one of them.  DeepLabV3's 5x5 at dilation 2 on
 * 24x24x960: two of a row's three runs of 8 pixels, each 8% slower than the
 * interior one for 15% fewer multiply-adds while checked column by column;
 * the layer 0.204 -> 0.187-0.193 ms. */
enum { CHECK_NONE, CHECK_ANY, CHECK_LEFT, CHECK_RIGHT };

/* The input columns a sliding run of PIXEL_RUN pixels reads, and the
 * "same" padding on either side of a row. */
static inline int sliding_span(const int kw, const int stride, const int dil)
{
    return (PIXEL_RUN - 1) * stride + (kw - 1) * dil + 1;
}
static inline int same_padding(const int kw, const int dil) { return (kw - 1) * dil / 2; }

/* A depthwise row's run: each input pixel is loaded once and multiplied
 * into every sum of the run that reads it, the row's kw weight vectors held
 * in registers, where block_pixels loads it once per tap (ConvNeXt's 7x7: 14
 * loads per kernel row instead of 56).  Each sum still adds its taps in the
 * same order, so the results are the same bit for bit.  kw, len, stride, dil
 * and checked are constants where inlined, so the lanes each load feeds are
 * known at compile time.  `checked` (CHECK_*): the run reaches into the
 * border, and the input columns outside the input are skipped, their taps
 * with them, as block_pixels skips a bordered pixel's; a dilated kernel's
 * border is several pixels wide (5x5 at dilation 2: 4 on each side of a 24-wide row),
 * too many to take one pixel, and one accumulator, at a time.  Only the
 * first `stored` pixels are written: a row narrower than a run (7x7 maps)
 * computes the pixels past its end from the inputs inside it and drops
 * them, where one pixel at a time chained each pixel's taps through one
 * accumulator (MobileNetV4's 5x5 on 7x7x512 took twice onnxruntime's time). */
static inline __attribute__((always_inline)) void
block_pixels_sliding(const block_row *r, int ox, const int kw, const int len, const int stride,
                     const int dil, const int checked, const int stored)
{
    const acl_conv_shape *s = r->s;
    const size_t c = (size_t)s->c;
    const int span = sliding_span(kw, stride, dil), ix0 = ox * stride - s->pad_left;
    const int same_pad = same_padding(kw, dil);
    /* Bit j: input column j of the run lies inside the input.  A bit test per
     * column where a flag per column was kept in memory. */
    const int j0 = acl_min(acl_max(0, -ix0), span), j1 = acl_max(acl_min(span, s->w - ix0), 0);
    const uint64_t inside =
        checked == CHECK_ANY ? ((UINT64_C(1) << j1) - 1) & ~((UINT64_C(1) << j0) - 1) : 0;
    const int first = checked == CHECK_LEFT ? same_pad : 0;
    const int last = checked == CHECK_RIGHT ? span - same_pad : span;
    channel_vec acc[PIXEL_RUN], wv[SLIDING_KW_MAX];
    for (int p = 0; p < PIXEL_RUN; p++) acc[p] = (channel_vec){0};
    for (int ky = r->ky0; ky < r->ky1; ky++) {
        const int iy = r->oy * s->stride_h - s->pad_top + ky * s->dil_h;
        /* The run's first input column, in the padding where checked, hence
         * signed there; the interior runs keep the unsigned form, with which
         * their addressing needed a register less (signed, MobileNetV3's 3x3
         * stride 2 on 112x112x64 ran 4% slower). */
        const float *xp = checked != CHECK_NONE ? r->x + ((ptrdiff_t)iy * s->w + ix0) * (ptrdiff_t)c
                                                : r->x + ((size_t)iy * s->w + (size_t)ix0) * c;
        for (int kx = 0; kx < kw; kx++)
            wv[kx] = load_vec(r->weight + (size_t)(ky * kw + kx) * CHANNEL_BLOCK);
#pragma GCC unroll 32
        for (int j = 0; j < span; j++) {
            if (j < first || j >= last || (checked == CHECK_ANY && !(inside >> j & 1))) continue;
            channel_vec xv = load_block(xp + (size_t)j * c, len, r->x_end);
            if (stride == 1) keep_in_register(&xv);
#pragma GCC unroll 8
            for (int kx = 0; kx < kw; kx++) {
                const int at = j - kx * dil, p = at / stride;
                if (at >= 0 && at % stride == 0 && p < PIXEL_RUN) acc[p] += xv * wv[kx];
            }
        }
    }
    if (stored == PIXEL_RUN) store_pixels(r, ox, PIXEL_RUN, len, acc);
    else
        for (int p = 0; p < PIXEL_RUN; p++)  /* unrolled, so acc stays in registers */
            if (p < stored) store_pixels(r, ox + p, 1, len, &acc[p]);
}

/* The sliding runs a depthwise row's stride and dilation have. */
enum { SLIDE_NONE, SLIDE_STRIDE1, SLIDE_DILATED2, SLIDE_STRIDE2 };

static inline int row_sliding(const acl_conv_shape *s)
{
    if (s->stride_w == 1 && s->dil_w == 1) return SLIDE_STRIDE1;
    if (s->stride_w == 1 && s->dil_w == 2) return SLIDE_DILATED2;
    if (s->stride_w == 2 && s->dil_w == 1) return SLIDE_STRIDE2;
    return SLIDE_NONE;
}

/* The check a sliding border run from output column `at` needs (see
 * CHECK_LEFT). */
static inline int border_check(const acl_conv_shape *s, int at, const int sliding, const int kw)
{
    const int stride = sliding == SLIDE_STRIDE2 ? 2 : 1, dil = sliding == SLIDE_DILATED2 ? 2 : 1;
    const int span = sliding_span(kw, stride, dil), ix0 = at * stride - s->pad_left;
    const int same_pad = same_padding(kw, dil);
    if (ix0 == -same_pad && s->w - ix0 >= span) return CHECK_LEFT;
    if (ix0 >= 0 && s->w - ix0 == span - same_pad) return CHECK_RIGHT;
    return CHECK_ANY;
}

/* One run of pixels, sliding (see row_sliding: PIXEL_RUN of them) or tap by
 * tap (`run` of them). */
static inline __attribute__((always_inline)) void
run_pixels(const block_row *r, int ox, const int kw, const int len, const int cg, const int sliding,
           const int checked, const int run, const int stored)
{
    switch (sliding) {
    case SLIDE_STRIDE1: block_pixels_sliding(r, ox, kw, len, 1, 1, checked, stored); break;
    case SLIDE_DILATED2: block_pixels_sliding(r, ox, kw, len, 1, 2, checked, stored); break;
    case SLIDE_STRIDE2: block_pixels_sliding(r, ox, kw, len, 2, 1, checked, stored); break;
    default: block_pixels(r, ox, kw, len, checked, cg, run, stored); break;
    }
}

/* The block row's pixels in runs of `run` from the row's start, the last one
 * ending at ow (recomputing the pixels it shares with the one before to the
 * values they hold), those reaching into a border checked; a row narrower
 * than a run is one checked run storing ow pixels. */
static inline __attribute__((always_inline)) void block_row_runs(const block_row *r, int ow, int lo,
                                                                 int hi, const int kw,
                                                                 const int len, const int cg,
                                                                 const int sliding, const int run)
{
    if (ow < run) {
        run_pixels(r, 0, kw, len, cg, sliding, CHECK_ANY, run, ow);
        return;
    }
    for (int ox = 0; ox < ow; ox += run) {
        const int at = acl_min(ox, ow - run);
        /* Full blocks only: the partial block's copies would add code for
         * one block of a layer. */
        const int check = at >= lo && at + run <= hi ? CHECK_NONE
                          : sliding != SLIDE_NONE && len == CHANNEL_BLOCK
                              ? border_check(r->s, at, sliding, kw)
                              : CHECK_ANY;
        switch (check) {
        case CHECK_NONE: run_pixels(r, at, kw, len, cg, sliding, CHECK_NONE, run, run); break;
        case CHECK_LEFT: run_pixels(r, at, kw, len, cg, sliding, CHECK_LEFT, run, run); break;
        case CHECK_RIGHT: run_pixels(r, at, kw, len, cg, sliding, CHECK_RIGHT, run, run); break;
        default: run_pixels(r, at, kw, len, cg, sliding, CHECK_ANY, run, run); break;
        }
    }
}

/* Sliding where the row's stride and dilation allow it (row_sliding), else
 * tap by tap, in runs of one pixel fewer where that many divide the row and
 * a whole run does not: the 7, 14 and 28 pixels of a 224-pixel image's later
 * maps then take no overlapping last run, which recomputed a seventh of
 * ResNeXt's and RegNet's grouped layers. */
static inline __attribute__((always_inline)) void block_row_pixels(const block_row *r, int ow,
                                                                   int lo, int hi, const int kw,
                                                                   const int len, const int cg)
{
    const int sliding = cg == 1 && __builtin_constant_p(kw) && kw <= SLIDING_KW_MAX
                            ? row_sliding(r->s)
                            : SLIDE_NONE;
    if (sliding == SLIDE_NONE && ow % PIXEL_RUN != 0 && ow % (PIXEL_RUN - 1) == 0)
        block_row_runs(r, ow, lo, hi, kw, len, cg, sliding, PIXEL_RUN - 1);
    else block_row_runs(r, ow, lo, hi, kw, len, cg, sliding, PIXEL_RUN);
}

/* Specialised for the common kernel widths, and for full blocks. */
static inline __attribute__((always_inline)) void block_row_kw(const block_row *r, int ow, int lo,
                                                               int hi, const int len, const int cg)
{
    switch (r->s->kw) {
    case 3: block_row_pixels(r, ow, lo, hi, 3, len, cg); break;
    case 5: block_row_pixels(r, ow, lo, hi, 5, len, cg); break;
    case 7: block_row_pixels(r, ow, lo, hi, 7, len, cg); break;
    default: block_row_pixels(r, ow, lo, hi, r->s->kw, len, cg); break;
    }
}

static inline __attribute__((always_inline)) void block_row_widths(const block_row *r, int ow,
                                                                   int lo, int hi, const int cg)
{
    if (r->len == CHANNEL_BLOCK) block_row_kw(r, ow, lo, hi, CHANNEL_BLOCK, cg);
    else block_row_kw(r, ow, lo, hi, r->len, cg);
}

/* Grouped rows, for each group width that divides a block (grouped_check),
 * out of line: inlined beside depthwise's, they made it 3-5% slower. */
static __attribute__((noinline)) void grouped_block_row(const block_row *r, int ow, int lo, int hi)
{
    switch (r->cg) {
    case 2: block_row_widths(r, ow, lo, hi, 2); break;
    case 4: block_row_widths(r, ow, lo, hi, 4); break;
    case 8: block_row_widths(r, ow, lo, hi, 8); break;
#if CHANNEL_BLOCK == 16
    case 16: block_row_widths(r, ow, lo, hi, 16); break;
#endif
    }
}

/* The k-th of a unit's `rows` rows to compute: at stride 1 and dilation d,
 * output rows d apart share all but one of their input rows and neighbours
 * none, so the rows go by their index modulo d (0, 2, 4, .., 1, 3, ..): the
 * input rows a block's output rows read then stay in L1 from one to the
 * next, where in order they alternate between two sets of kh rows. */
static inline int row_in_order(const acl_conv_shape *s, int k, int rows)
{
    const int d = s->stride_h == 1 ? s->dil_h : 1;
    if (d == 1) return k;
    for (int first = 0;; first++) {
        const int count = (rows - first + d - 1) / d;
        if (k < count) return first + k * d;
        k -= count;
    }
}

/* Rows outer, channel blocks inner: a row's input rows stay in cache while
 * its blocks are done; an activation other than ReLU or Clip then runs over
 * the whole row at once. */
static void channel_block_rows(void *arg, int begin, int end, int worker)
{
    const channel_blocks_ctx *ctx = arg;
    const acl_conv *conv = ctx->conv;
    const acl_conv_shape *s = &conv->s;
    const channel_blocks *st = conv->impl;
    const int ow = conv->d.ow, oh = conv->d.oh, oc = s->oc;
    const float *x_end = ctx->io->x + (size_t)s->n * s->h * s->w * s->c;
    const float *r_end = ctx->io->residual ? ctx->io->residual + (size_t)conv->d.m * oc : NULL;
    const channel_clamp clamp = channel_clamp_of(s);
    int lo, hi;
    conv_interior_columns(s, ow, &lo, &hi);
    const int outer = oc > BLOCKS_OUTER_CHANNELS;
    const int nb = acl_div_up(oc, CHANNEL_BLOCK), rows = end - begin;
    /* Built once: the fields set per block row are set one by one, where a
     * fresh struct per block row was stored a field at a time and copied
     * back whole, each copy stalling on the small stores it read (a tenth of
     * LR-ASPP's 5x5 at dilation 2). */
    block_row r = {.s = s, .x_end = x_end, .r_end = r_end, .clamp = clamp, .cg = conv->d.cg};
    for (int it = 0; it < rows * nb; it++) {
        const int row = begin + row_in_order(s, outer ? it % rows : it / nb, rows);
        const int o0 = (outer ? it / rows : it % nb) * CHANNEL_BLOCK;
        const int b = row / oh;
        const size_t out_at = (size_t)row * ow * oc;
        r.oy = row % oh;
        conv_taps_inside(r.oy, s->stride_h, s->pad_top, s->dil_h, s->kh, s->h, &r.ky0, &r.ky1);
        r.x = ctx->io->x + (size_t)b * s->h * s->w * s->c + o0;
        r.residual = ctx->io->residual ? ctx->io->residual + out_at + o0 : NULL;
        r.y = ctx->io->y + out_at + o0;
        r.weight =
            st->weight + (size_t)(o0 / CHANNEL_BLOCK) * conv->d.taps * conv->d.cg * CHANNEL_BLOCK;
        r.bias = load_vec(st->bias + o0);
        r.len = acl_min(CHANNEL_BLOCK, oc - o0);
        if (r.cg == 1) block_row_widths(&r, ow, lo, hi, 1);
        else grouped_block_row(&r, ow, lo, hi);
    }
    if (!clamp.on)
        conv_activate_in_place(s, ctx->io->y + (size_t)begin * ow * oc, (size_t)rows * ow * oc);
}

static int depthwise_run(const acl_conv *conv, const acl_exec *ex, const conv_io *io,
                         acl_stage_times *t, acl_task_fn rows)
{
    channel_blocks_ctx ctx = {conv, io};
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

/* The two channel-block algorithms differ only in the convolutions they take. */
#define CHANNEL_BLOCK_ALGO(label, check_fn)                                          \
    {                                                                                \
        .name = label, .uses_ukernel = 0, .check = check_fn,                         \
        .create = channel_blocks_create, .run = channel_block_run,                    \
        .destroy = channel_blocks_destroy                                            \
    }

const conv_algo conv_depthwise_channel_block =
    CHANNEL_BLOCK_ALGO("depthwise_channel_block", channel_block_check);
const conv_algo conv_grouped_channel_block =
    CHANNEL_BLOCK_ALGO("grouped_channel_block", grouped_check);
