/* Direct convolution for few output channels (at most half a vector: 8 with
 * AVX-512, 4 elsewhere): a spectrogram's 8 -> 8 3x39 layer, the 1-channel
 * heads after it, a 1-D filter bank's single output.  The channel-block
 * kernels hold one output channel per lane and leave the rest of the vector
 * idle (15 of 16 lanes for one output channel), and im2col's GEMM pads N to
 * its tile width the same way.
 *
 * With dil_w == 1 the taps of one kernel row of one output pixel are a
 * contiguous run of kw * c floats in NHWC.  A vector here holds `slot` output
 * channels (oc rounded up to a power of two) times `rp` = lanes / slot
 * consecutive floats of that run: rp input floats are broadcast to every
 * slot, multiplied by the packed weights of those rp taps for each output
 * channel, and summed into per-pixel accumulators.  At the end the rp lanes
 * of each slot are added together.  Only the slots past oc idle.
 *
 * The border pixels read a zero-padded copy of the columns they reach (the
 * worker's strip), the others read the input.  The work is split into chunks
 * of a row's pixels, so that a 1-D signal (one row) still runs on every core;
 * each pixel sums its taps in one order, so every split gives the same bits. */
#include "channel_blocks.h"

/* Pixels whose sums stay in registers together: AVX-512: 12 of its 32
 * registers; elsewhere 4 (8 of NEON's 32, 4 of AVX2's 16). */
#if defined(__AVX512F__)
#define DOT_RUN 12
#else
#define DOT_RUN 4
#endif

/* Output pixels of a row per unit of parallel work. */
#define DOT_CHUNK 256

typedef struct {
    float *weight;  /* [kh][groups][CHANNEL_BLOCK]: lane j * rp + t of group g is
                       output j's weight for run float g * rp + t (zero past oc or the run) */
    int rp;         /* lanes per output channel: a vector holds CHANNEL_BLOCK / rp */
    int run;        /* kw * c: the floats of one kernel row */
    int groups;     /* vectors per kernel row, the last one partial when run % rp */
    int strip_cols; /* most columns a border part reads */
    int chunks;     /* units per output row */
    int workers;
    size_t strip_floats; /* per worker: kh strips */
    size_t strip_at;
} dot_state;

static int dot_slot(int oc)
{
    int slot = 1;
    while (slot < oc) slot *= 2;
    return slot;
}

static int dot_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                     const acl_ukernel *uk)
{
    if (s->group != 1) return acl_fail("%s takes group == 1, got group=%d", self->name, s->group);
    if (s->dil_w != 1)
        return acl_fail("%s reads each kernel row as one run and takes dil_w == 1, got %d",
                        self->name, s->dil_w);
    if (s->oc > CHANNEL_BLOCK / 2)
        return acl_fail("%s takes at most %d output channels, got oc=%d", self->name,
                        CHANNEL_BLOCK / 2, s->oc);
    return 0;
}

static int dot_create(acl_conv *conv, const float *weight)
{
    const acl_conv_shape *s = &conv->s;
    dot_state *st = acl_alloc(sizeof *st);
    if (!(conv->impl = st)) return -1;
    memset(st, 0, sizeof *st);
    st->rp = CHANNEL_BLOCK / dot_slot(s->oc);
    st->run = s->kw * s->c;
    st->groups = acl_div_up(st->run, st->rp);
    const size_t floats = (size_t)s->kh * st->groups * CHANNEL_BLOCK;
    if (!(st->weight = acl_alloc(floats * sizeof(float)))) return -1;
    memset(st->weight, 0, floats * sizeof(float));
    for (int ky = 0; ky < s->kh; ky++)
        for (int i = 0; i < st->run; i++) {
            const int kx = i / s->c, ci = i % s->c;
            float *lanes = st->weight + ((size_t)ky * st->groups + i / st->rp) * CHANNEL_BLOCK;
            for (int o = 0; o < s->oc; o++)
                lanes[o * st->rp + i % st->rp] =
                    weight[(((size_t)o * s->c + ci) * s->kh + ky) * s->kw + kx];
        }
    const int ow = conv->d.ow;
    st->chunks = acl_div_up(ow, DOT_CHUNK);
    st->strip_cols = (acl_min(ow, DOT_CHUNK) - 1) * s->stride_w + s->kw;
    st->strip_floats = (size_t)s->kh * st->strip_cols * s->c;
    st->workers = acl_cpu_count();
    st->strip_at = conv_scratch_reserve(conv, st->strip_floats * st->workers * sizeof(float));
    return 0;
}

static void dot_destroy(acl_conv *conv)
{
    dot_state *st = conv->impl;
    if (!st) return;
    acl_free(st->weight);
    acl_free(st);
}

/* rp consecutive floats at p in every slot of a vector. */
static inline __attribute__((always_inline)) channel_vec group_load(const float *p, const int rp)
{
    if (rp == CHANNEL_BLOCK) return load_vec(p);
#if defined(__AVX512F__)
    if (rp == 8) return (channel_vec)_mm512_broadcast_f64x4(_mm256_loadu_pd((const double *)p));
    if (rp == 4) return (channel_vec)_mm512_broadcast_f32x4(_mm_loadu_ps(p));
    double pair;
    memcpy(&pair, p, sizeof pair);
    return (channel_vec)_mm512_set1_pd(pair);
#elif defined(__AVX2__)
    if (rp == 4) return (channel_vec)_mm256_broadcast_ps((const __m128 *)p);
    double pair;
    memcpy(&pair, p, sizeof pair);
    return (channel_vec)_mm256_set1_pd(pair);
#else
    channel_vec v;
    for (int l = 0; l < CHANNEL_BLOCK; l++) v[l] = p[l % rp];
    return v;
#endif
}

/* The same for the last rem < rp floats of a run, zeros after them: no read
 * past the run, whose next floats may lie past the tensor. */
static inline __attribute__((always_inline)) channel_vec group_tail(const float *p, int rem,
                                                                    const int rp)
{
    const channel_vec v = load_lanes(p, rem);
    if (rp == CHANNEL_BLOCK) return v;
    channel_mask lane;
    for (int l = 0; l < CHANNEL_BLOCK; l++) lane[l] = l % rp;
    return __builtin_shuffle(v, lane);
}

/* One part of an output row: pixels p whose valid kernel rows k start at
 * rows[k] + p * step (in the input, or in the worker's strips). */
typedef struct {
    const acl_conv_shape *s;
    const float *weight;   /* the first valid kernel row's groups */
    const float *const *rows;
    size_t step;           /* floats from one pixel's run to the next's */
    int nrows;             /* valid kernel rows */
    int groups, rem;       /* whole groups per kernel row, floats of the partial one */
    float *y;              /* the part's first output pixel */
    const float *residual; /* the same pixel's residual, or NULL */
    const float *bias;
    channel_clamp clamp;
} dot_part;

/* Output pixels [p0, p0 + count) of a part.  The loops over the run's pixels
 * are unrolled by pragma: GCC left the one folding the sums rolled, indexing
 * acc, which then lived on the stack and was reloaded around every kernel
 * row (a 5x5 8 -> 1 layer on 172x264 took 0.59 ms, unrolled 0.29). */
static inline __attribute__((always_inline)) void dot_pixels(const dot_part *r, int p0,
                                                             const int count, const int rp)
{
    channel_vec acc[DOT_RUN];
#pragma GCC unroll 16
    for (int p = 0; p < count; p++) acc[p] = (channel_vec){0};
    const int groups = r->groups, rem = r->rem;
    const size_t step = r->step;
    const float *wt = r->weight;
    for (int k = 0; k < r->nrows; k++) {
        const float *x = r->rows[k] + (size_t)p0 * step;
        for (int g = 0; g < groups; g++, wt += CHANNEL_BLOCK) {
            const channel_vec w = load_vec(wt);
#pragma GCC unroll 16
            for (int p = 0; p < count; p++) acc[p] += group_load(x + p * step + g * rp, rp) * w;
        }
        if (rem) {
            const channel_vec w = load_vec(wt);
            wt += CHANNEL_BLOCK;
#pragma GCC unroll 16
            for (int p = 0; p < count; p++)
                acc[p] += group_tail(x + p * step + groups * rp, rem, rp) * w;
        }
    }
    /* Locals: the stores may alias *r for all the compiler knows. */
    const int oc = r->s->oc;
    const channel_clamp clamp = r->clamp;
    const channel_vec bias = load_lanes(r->bias, oc);
    const float *const residual = r->residual;
    float *const y = r->y;
#pragma GCC unroll 16
    for (int p = 0; p < count; p++) {
        channel_vec v = acc[p];
        /* Each slot's rp lanes added into its first, then the slots' first
         * lanes gathered to the front. */
        for (int half = rp / 2; half >= 1; half /= 2) {
            channel_mask lane;
            for (int l = 0; l < CHANNEL_BLOCK; l++) lane[l] = (l + half) % CHANNEL_BLOCK;
            v += __builtin_shuffle(v, lane);
        }
        channel_mask front;
        for (int l = 0; l < CHANNEL_BLOCK; l++) front[l] = l * rp % CHANNEL_BLOCK;
        v = __builtin_shuffle(v, front);
        const size_t at = (size_t)(p0 + p) * oc;
        v += bias;
        if (residual) v += load_lanes(residual + at, oc);
        v = channel_clamp_apply(&clamp, v);
        store_lanes(y + at, v, oc);
    }
    /* Other activations while the run's outputs are in L1. */
    if (clamp.on || r->s->act == ACL_ACT_NONE) return;
    conv_activate_in_place(r->s, y + (size_t)p0 * oc, (size_t)count * oc);
}

/* Pixels [0, n) of a part by runs; the pixels a whole run does not reach take
 * one more run ending at n, which recomputes some pixels to the values they
 * already hold (on this thread: a part is one worker's). */
static inline __attribute__((always_inline)) void dot_runs(const dot_part *r, int n, const int rp)
{
    int p = 0;
    for (; p + DOT_RUN <= n; p += DOT_RUN) dot_pixels(r, p, DOT_RUN, rp);
    if (p < n && n >= DOT_RUN) dot_pixels(r, n - DOT_RUN, DOT_RUN, rp);
    else
        for (; p < n; p++) dot_pixels(r, p, 1, rp);
}

static void dot_part_run(const dot_part *r, int n, int rp)
{
    switch (rp) {
    case 2: dot_runs(r, n, 2); break;
    case 4: dot_runs(r, n, 4); break;
    case 8: dot_runs(r, n, 8); break;
#if CHANNEL_BLOCK == 16
    case 16: dot_runs(r, n, 16); break;
#endif
    }
}

typedef struct {
    const acl_conv *conv;
    const conv_io *io;
} dot_ctx;

/* Output pixels [a, b) of row oy of image `img`: the ones whose taps reach
 * into the padding (a < lo or b > hi) from strips of the columns they read,
 * zero outside the input, built per valid kernel row in `strip`. */
static void dot_segment(const dot_ctx *ctx, int img, int oy, int a, int b, int inside, float *strip)
{
    if (a >= b) return;
    const acl_conv *conv = ctx->conv;
    const acl_conv_shape *s = &conv->s;
    const dot_state *st = conv->impl;
    const size_t c = (size_t)s->c;
    int ky0, ky1;
    conv_taps_inside(oy, s->stride_h, s->pad_top, s->dil_h, s->kh, s->h, &ky0, &ky1);
    const float *rows[ky1 > ky0 ? ky1 - ky0 : 1];
    const int col0 = a * s->stride_w - s->pad_left;
    const int cols = (b - 1 - a) * s->stride_w + s->kw;
    for (int ky = ky0; ky < ky1; ky++) {
        const int iy = oy * s->stride_h - s->pad_top + ky * s->dil_h;
        const float *in = ctx->io->x + ((size_t)img * s->h + iy) * s->w * c;
        if (inside) {
            rows[ky - ky0] = in + (ptrdiff_t)col0 * (ptrdiff_t)c;
            continue;
        }
        float *dst = strip + (size_t)(ky - ky0) * st->strip_cols * c;
        const int lo = acl_min(cols, acl_max(0, -col0));
        const int hi = acl_max(lo, acl_min(cols, s->w - col0));
        memset(dst, 0, (size_t)lo * c * sizeof(float));
        memcpy(dst + lo * c, in + (size_t)(col0 + lo) * c, (size_t)(hi - lo) * c * sizeof(float));
        memset(dst + hi * c, 0, (size_t)(cols - hi) * c * sizeof(float));
        rows[ky - ky0] = dst;
    }
    const size_t out_at = (((size_t)img * conv->d.oh + oy) * conv->d.ow + a) * s->oc;
    dot_part r = {
        .s = s,
        .weight = st->weight + (size_t)ky0 * st->groups * CHANNEL_BLOCK,
        .rows = rows,
        .step = (size_t)s->stride_w * c,
        .nrows = ky1 - ky0,
        .groups = st->run / st->rp,
        .rem = st->run % st->rp,
        .y = ctx->io->y + out_at,
        .residual = ctx->io->residual ? ctx->io->residual + out_at : NULL,
        .bias = conv->bias,
        .clamp = channel_clamp_of(s),
    };
    dot_part_run(&r, b - a, st->rp);
}

static void dot_chunks(void *arg, int begin, int end, int worker)
{
    const dot_ctx *ctx = arg;
    const acl_conv *conv = ctx->conv;
    const dot_state *st = conv->impl;
    const int ow = conv->d.ow, oh = conv->d.oh;
    float *strip = (float *)conv_scratch_at(ctx->io, st->strip_at) + st->strip_floats * worker;
    int lo, hi;
    conv_interior_columns(&conv->s, ow, &lo, &hi);
    hi = acl_max(lo, hi);
    for (int unit = begin; unit < end; unit++) {
        const int row = unit / st->chunks, chunk = unit % st->chunks;
        const int a = chunk * DOT_CHUNK, b = acl_min(ow, a + DOT_CHUNK);
        const int img = row / oh, oy = row % oh;
        dot_segment(ctx, img, oy, a, acl_min(b, lo), 0, strip);
        dot_segment(ctx, img, oy, acl_max(a, lo), acl_min(b, hi), 1, strip);
        dot_segment(ctx, img, oy, acl_max(a, hi), b, 0, strip);
    }
}

static int dot_run(acl_conv *conv, const acl_exec *ex, const conv_io *io, acl_stage_times *t)
{
    const dot_state *st = conv->impl;
    if (acl_exec_active(ex) > st->workers)
        return acl_fail("direct_dot has strips for %d workers, the split uses %d", st->workers,
                        acl_exec_active(ex));
    dot_ctx ctx = {conv, io};
    return conv_stage(ex, conv->s.n * conv->d.oh * st->chunks, dot_chunks, &ctx, &t->gemm_ms);
}

const conv_algo conv_direct_dot = {
    .name = "direct_dot",
    .uses_ukernel = 0,
    .check = dot_check,
    .create = dot_create,
    .run = dot_run,
    .destroy = dot_destroy,
};
