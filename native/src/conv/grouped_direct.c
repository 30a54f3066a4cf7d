/* Direct grouped convolution for groups of whole channel blocks (ResNeXt's
 * 32 groups of 16 and 32 channels at 14x14 and 7x7): a GEMM per group has N
 * = 16 or 32 and M = 196 or 49, too small for its tiles and its packing,
 * and grouped_channel_block's rows of 14 or 7 pixels leave a run of 8 half
 * used and take the border pixels one sum at a time.  Here the output pixels
 * of all rows form one sequence, each tap's input pixel looked up in the
 * indirection's pixel indices (the zero row for the padding), so a run of
 * RUN_ACCS / nb pixels crosses the rows with every sum in a register.  A pass covers one or two blocks of one
 * group's output channels; each tap's input channel is broadcast against
 * their weight vectors, packed [block][tap][ci][CHANNEL_BLOCK] at create
 * (channel_blocks.h).  Work is split by pass first, then by run, so a worker
 * keeps a few groups' weights in L1; each pixel sums its taps in one order,
 * so every split gives the same bits. */
#include "channel_blocks.h"

/* Sums a run holds: of AVX-512's 32 registers 14, beside the weights and a
 * broadcast; elsewhere 6, which is 6 of AVX2's 16 or 12 of NEON's 32. */
#if defined(__AVX512F__)
#define RUN_ACCS 14
#else
#define RUN_ACCS 6
#endif
/* Blocks of output channels per pass: two share each broadcast input value
 * (ResNeXt's 32 channels per group); more would shorten the run. */
#define PASS_BLOCKS 2

static int grouped_direct_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                                const acl_ukernel *uk)
{
    if (s->group == 1) return acl_fail("%s takes grouped convolutions, got group=1", self->name);
    if (d->ocg % CHANNEL_BLOCK)
        return acl_fail("%s needs output channels per group in whole blocks of %d, got %d",
                        self->name, CHANNEL_BLOCK, d->ocg);
    return 0;
}

typedef struct {
    channel_blocks blocks;
    conv_indirection ind;
} grouped_direct;

static int grouped_direct_create(acl_conv *conv, const float *weight)
{
    grouped_direct *st = acl_alloc(sizeof *st);
    if (!st) return -1;
    memset(st, 0, sizeof *st);
    conv->impl = st;
    if (channel_blocks_pack(&st->blocks, conv, weight) != 0) return -1;
    return conv_indirection_pixels(&st->ind, conv);
}

static void grouped_direct_destroy(acl_conv *conv)
{
    grouped_direct *st = conv->impl;
    if (!st) return;
    conv_indirection_destroy(&st->ind);
    channel_blocks_free(&st->blocks);
    acl_free(st);
}

/* One pass: nb blocks of one group's output channels. */
typedef struct {
    const acl_conv_shape *s;
    const int32_t *pixel;      /* taps input pixels per output pixel, -1: padding */
    const float *x, *zero;     /* the input and the zero row at the group's first channel */
    const float *weight;       /* the pass's first block of packed taps */
    size_t block_floats;       /* packed floats per block */
    const float *bias;         /* at the pass's first channel */
    const float *residual;     /* the output's residual at the pass's first channel, or NULL */
    float *y;                  /* the output at the pass's first channel */
    channel_clamp clamp;
    float act_a, act_b;
    int taps;
} pass;

/* Output pixels [m, m + count) of a pass, storing those from m + skip on.
 * Inlined with constant count, nb and cg, so the sums stay in registers and
 * the channel loop unrolls. */
static inline __attribute__((always_inline)) void
run_pixels(const pass *r, size_t m, const int count, const int skip, const int nb, const int cg)
{
    const int taps = r->taps;
    channel_vec acc[RUN_ACCS][PASS_BLOCKS];
    for (int p = 0; p < count; p++)
        for (int b = 0; b < nb; b++) acc[p][b] = (channel_vec){0};
    const int32_t *pixel = r->pixel + m * taps;
    const size_t c = (size_t)r->s->c;
    /* A broadcast per multiply-add made a pass of one block wait on its
     * loads (ResNeXt's 16 channels per group at 14x14: 0.165 ms on one core
     * against 0.117 for the same multiply-adds two blocks a pass); a third
     * of its pixels instead load each tap's input vector once and spread its
     * lanes by shuffles, which run beside the loads (0.125 ms; a half or a
     * quarter of the pixels: 0.14, 0.133).  Two blocks a pass gained
     * nothing from it. */
    const int spread = cg % CHANNEL_BLOCK == 0 && nb == 1 ? count / 3 : 0;
    for (int t = 0; t < taps; t++) {
        const float *xp[RUN_ACCS];
        for (int p = 0; p < count; p++) {
            const int32_t i = pixel[(size_t)p * taps + t];
            xp[p] = i < 0 ? r->zero : r->x + (size_t)i * c;
        }
        const float *wt = r->weight + (size_t)t * cg * CHANNEL_BLOCK;
        channel_vec xs[RUN_ACCS];
#pragma GCC unroll 32
        for (int ci = 0; ci < cg; ci++) {
            if (ci % CHANNEL_BLOCK == 0)
                for (int p = 0; p < spread; p++) xs[p] = load_vec(xp[p] + ci);
            channel_vec wv[PASS_BLOCKS];
            for (int b = 0; b < nb; b++)
                wv[b] = load_vec(wt + b * r->block_floats + (size_t)ci * CHANNEL_BLOCK);
            for (int p = 0; p < spread; p++) {
                const channel_vec xv =
                    __builtin_shuffle(xs[p], (channel_mask){0} + ci % CHANNEL_BLOCK);
                for (int b = 0; b < nb; b++) acc[p][b] += xv * wv[b];
            }
            for (int p = spread; p < count; p++) {
                const float xv = xp[p][ci];
                for (int b = 0; b < nb; b++) acc[p][b] += xv * wv[b];
            }
        }
    }
    /* Locals: the stores may alias *r for all the compiler knows. */
    const channel_clamp clamp = r->clamp;
    const float *const residual = r->residual, *const bias = r->bias;
    float *const y = r->y;
    const size_t oc = (size_t)r->s->oc;
    for (int p = skip; p < count; p++)
        for (int b = 0; b < nb; b++) {
            const size_t at = (m + p) * oc + b * CHANNEL_BLOCK;
            channel_vec v = acc[p][b] + load_vec(bias + b * CHANNEL_BLOCK);
            if (residual) v += load_vec(residual + at);
            v = channel_clamp_apply(&clamp, v);
            memcpy(y + at, &v, sizeof v);
        }
    /* Other activations while the run's outputs are in L1. */
    if (clamp.on || r->s->act == ACL_ACT_NONE) return;
    for (int p = skip; p < count; p++) {
        float *yp = y + (m + p) * oc;
        acl_activate(r->s->act, r->act_a, r->act_b, yp, yp, (size_t)nb * CHANNEL_BLOCK);
    }
}

/* Runs [first, last) of a pass over `pixels` output pixels: whole runs, the
 * last one ending at the last pixel, computing again the pixels it shares
 * with the one before but storing only its own (another thread may be
 * storing the others, and an activation is applied in place after the
 * store); fewer pixels than a run, one at a time. */
static inline __attribute__((always_inline)) void
pass_runs(const pass *r, int first, int last, size_t pixels, const int nb, const int cg)
{
    const int run = RUN_ACCS / nb;
    if (pixels < (size_t)run) {
        for (size_t m = 0; m < pixels; m++) run_pixels(r, m, 1, 0, nb, cg);
        return;
    }
    for (int i = first; i < last; i++) {
        const size_t m = acl_min((size_t)i * run, pixels - run);
        run_pixels(r, m, run, (int)((size_t)i * run - m), nb, cg);
    }
}

static inline __attribute__((always_inline)) void pass_blocks(const pass *r, int first, int last,
                                                              size_t pixels, int nb, const int cg)
{
    if (nb == 2) pass_runs(r, first, last, pixels, 2, cg);
    else pass_runs(r, first, last, pixels, 1, cg);
}

/* Specialised for ResNeXt's and RegNet's channels per group. */
static void pass_dispatch(const pass *r, int first, int last, size_t pixels, int nb, int cg)
{
    switch (cg) {
    case 8: pass_blocks(r, first, last, pixels, nb, 8); break;
    case 16: pass_blocks(r, first, last, pixels, nb, 16); break;
    case 32: pass_blocks(r, first, last, pixels, nb, 32); break;
    default: pass_blocks(r, first, last, pixels, nb, cg); break;
    }
}

/* The blocks of every pass: two where a group's blocks pair up, else one. */
static inline int pass_blocks_of(const acl_conv *conv)
{
    return conv->d.ocg / CHANNEL_BLOCK % PASS_BLOCKS ? 1 : PASS_BLOCKS;
}

/* Runs of a pass over the output pixels. */
static inline int pass_run_count(const acl_conv *conv)
{
    return acl_max(1, acl_div_up(conv->d.m, RUN_ACCS / pass_blocks_of(conv)));
}

/* Jobs: pass-major, then runs, a pass being nb blocks of one group. */
static void grouped_jobs(void *arg, int begin, int end, int worker)
{
    const channel_blocks_ctx *ctx = arg;
    const acl_conv *conv = ctx->conv;
    const acl_conv_shape *s = &conv->s;
    const grouped_direct *st = conv->impl;
    const int nb = pass_blocks_of(conv), runs = pass_run_count(conv);
    const int passes = conv->d.ocg / (nb * CHANNEL_BLOCK); /* per group */
    const size_t block_floats = (size_t)conv->d.taps * conv->d.cg * CHANNEL_BLOCK;
    pass r = {.s = s,
              .pixel = st->ind.pixel,
              .block_floats = block_floats,
              .taps = conv->d.taps,
              .clamp = channel_clamp_of(s)};
    acl_conv_act_params(s, &r.act_a, &r.act_b);
    for (int job = begin; job < end;) {
        const int pass_index = job / runs, first = job % runs;
        const int last = acl_min(runs, first + (end - job));
        const int g = pass_index / passes;
        const int o0 = pass_index * nb * CHANNEL_BLOCK;
        r.x = ctx->io->x + (size_t)g * conv->d.cg;
        r.zero = st->ind.zero + (size_t)g * conv->d.cg;
        r.weight = st->blocks.weight + (size_t)(o0 / CHANNEL_BLOCK) * block_floats;
        r.bias = st->blocks.bias + o0;
        r.residual = ctx->io->residual ? ctx->io->residual + o0 : NULL;
        r.y = ctx->io->y + o0;
        pass_dispatch(&r, first, last, (size_t)conv->d.m, nb, conv->d.cg);
        job += last - first;
    }
}

static int grouped_direct_run(acl_conv *conv, const acl_exec *ex, const conv_io *io,
                              acl_stage_times *t)
{
    channel_blocks_ctx ctx = {conv, io};
    const int passes = conv->s.oc / (pass_blocks_of(conv) * CHANNEL_BLOCK);
    return conv_stage(ex, passes * pass_run_count(conv), grouped_jobs, &ctx, &t->gemm_ms);
}

const conv_algo conv_grouped_direct = {
    .name = "grouped_direct",
    .uses_ukernel = 0,
    .check = grouped_direct_check,
    .create = grouped_direct_create,
    .run = grouped_direct_run,
    .destroy = grouped_direct_destroy,
};
