/* Winograd convolution F(m_h x m_w, r_h x r_w), stride 1, dilation 1: one
 * implementation for the 2-D variants (3x3 to 6x6 kernels, 2x2 to 4x4 output
 * tiles) and the 1-D ones (1x3, 3x1); a 1-D variant is the 2-D one with
 * F(1, 1) along the other axis.  Larger tiles need fewer products per output
 * but add transform work and fp32 error (test_conv checks each at C = 512),
 * so every variant is one more algorithm for the tuner to measure.  Not
 * F(6x6, 3x3): it won only on ResNet-18's 56x56x64 layer here (0.62 against
 * 0.75 ms), and as a fourth 3x3 algorithm it thinned the 30-trial search: in
 * one tune of ResNet-18 it missed F(2x2, 3x3) on the 7x7 layers (1.28 against
 * 0.92 ms), and the model ran 4-12% slower than the plan before it. 
 *
 * The output is cut into m_h x m_w tiles (partial tiles at the bottom/right
 * edges), each read as an alpha_h x alpha_w input patch (alpha = m + r - 1)
 * with zeros outside the input, which handles any (asymmetric) pads.
 *   pre   input transform  V[p][tile][c]   = (B^T d B)[p]
 *   gemm  per point p and group: M[p][tile][oc] = V[p] U[p]   (one batch)
 *   post  output transform  y = A^T M A, + bias + residual, activation
 * U[p] = (G w G^T)[p] is computed in double and packed at create.
 *
 * Staged, each step runs over every tile before the next: V and M, points x
 * tiles x channels, are written once and read back.  Fine while they stay in
 * the caches; a large map (a text detector's 184 x 184 x 96) makes them tens
 * of megabytes, and the three steps then wait on memory.  Such a shape runs
 * fused instead: a worker takes a block of tiles through all three steps in
 * its own small V and M, re-reading the packed U for every block, which is
 * cheap while U is small enough to stay in L2.  The choice is made at
 * create, from the shape; either way a tile's sums see the same micro-kernel
 * calls in the same order, and the split only moves whole blocks. */
#include <stdlib.h>
#include <string.h>

#include "conv_impl.h"
#include "winograd_matrices.h"

typedef struct {
    int m_h, m_w, r_h, r_w;
} winograd_variant;

/* Channels per transform step: long vector loops, yet a tile's 6x6 x 128
 * patch (18 KB) stays in L1; 128 beat 32 and 64 at C = 256. */
#define CHANNEL_BLOCK 128
#define PATCH_FLOATS (WINOGRAD_MAX_ALPHA * WINOGRAD_MAX_ALPHA * CHANNEL_BLOCK)

/* Fused when the staged V and M would pass this... */
#define STAGED_MAX_BYTES (4u << 20)
/* ...and the packed U, read again for every block, stays below this (one
 * core's L2 here; measured, one core, F(4x4, 3x3): 184 x 184, 96 -> 24 (U
 * 0.3 MB) 13.4 -> 7.0 ms fused, 112 x 112, 64 -> 64 (U 0.6 MB) 2.7 -> 2.4 ms,
 * but 56 x 56, 128 -> 128 (U 2.4 MB) 1.5 -> 1.7 ms). */
#define FUSED_MAX_U_BYTES (1u << 20)
/* A fused block's V and M fill about this much (half of a 1 MB L2). */
#define FUSED_BLOCK_BYTES (512u << 10)

typedef struct {
    winograd_matrices th, tw;  /* along h and along w */
    /* The transforms' matrices: constant tables where th's and tw's equal
     * them (transform_table), else theirs. */
    const float *bt_h, *bt_w, *at_h, *at_w;
    int points;                /* alpha_h * alpha_w */
    int tiles_h, tiles_w, tiles;
    int fused;
    /* staged */
    size_t v_at;               /* scratch: V, points x tiles x c */
    size_t mt_at;              /* scratch: M, points x tiles x oc */
    /* fused */
    int block_cap;             /* most tiles in one block */
    int workers;               /* per-worker buffers reserved */
    size_t worker_floats;      /* one worker's V, M and A panel */
    size_t workers_at;         /* scratch: workers x worker_floats */
    conv_gemm gemm;            /* job p * group + g */
} winograd_state;

/* F(4, 3) and F(2, 3) as winograd_matrices_init builds them (create checks
 * that they match, entry by entry): transforms through these constant
 * tables compile to their nonzero terms, with no test per coefficient. */
static const float BT_4_3[6 * 6] = {1, -1.5f, -2,    1.5f,  1, 0, 0, -1, 0.5f,  2.5f, 1,    0,
                                    0, 1,     -2.5f, 0.5f,  1, 0, 0, -2, -1,    2,    1,    0,
                                    0, 0.5f,  -1,    -0.5f, 1, 0, 0, 1,  -1.5f, -2,   1.5f, 1};
static const float AT_4_3[4 * 6] = {1, 1, 1, 1,     1, 0, 0, 1, -1, 0.5f,   -2, 0,
                                    0, 1, 1, 0.25f, 4, 0, 0, 1, -1, 0.125f, -8, 1};
static const float BT_2_3[4 * 4] = {-1, 0, 1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, -1, 0, 1};
static const float AT_2_3[2 * 4] = {1, 1, 1, 0, 0, 1, -1, 1};

/* The table of t's B^T (bt) or A^T (!bt) where one equals it, else t's own. */
static const float *transform_table(const winograd_matrices *t, int bt)
{
    const float *built = bt ? t->bt : t->at, *known = NULL;
    if (t->r == 3 && t->m == 4) known = bt ? BT_4_3 : AT_4_3;
    if (t->r == 3 && t->m == 2) known = bt ? BT_2_3 : AT_2_3;
    if (!known) return built;
    const int n = (bt ? t->alpha : t->m) * t->alpha;
    for (int i = 0; i < n; i++)
        if (built[i] != known[i]) return built;
    return known;
}

static int winograd_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                          const acl_ukernel *uk)
{
    const winograd_variant *v = self->variant;
    if (s->kh != v->r_h || s->kw != v->r_w)
        return acl_fail("%s needs a %dx%d kernel, got kh=%d kw=%d", self->name, v->r_h, v->r_w,
                        s->kh, s->kw);
    if (s->stride_h != 1 || s->stride_w != 1)
        return acl_fail("%s needs stride 1, got %s=%d", self->name,
                        s->stride_h != 1 ? "stride_h" : "stride_w",
                        s->stride_h != 1 ? s->stride_h : s->stride_w);
    if (s->dil_h != 1 || s->dil_w != 1)
        return acl_fail("%s needs dilation 1, got %s=%d", self->name,
                        s->dil_h != 1 ? "dil_h" : "dil_w", s->dil_h != 1 ? s->dil_h : s->dil_w);
    return conv_check_ukernel(self->name, uk, d->cg, d->ocg);
}

/* U[p][o][ci] = (G_h w[o][ci] G_w^T)[p] for the one point p = (a, b). */
static void transform_point(const winograd_state *st, const acl_conv *conv, const float *weight,
                            int a, int b, float *u)
{
    const winograd_matrices *th = &st->th, *tw = &st->tw;
    int cg = conv->d.cg, oc = conv->s.oc;
    for (int o = 0; o < oc; o++)
        for (int ci = 0; ci < cg; ci++) {
            const float *w = weight + ((size_t)o * cg + ci) * conv->d.taps;
            double sum = 0.0;
            for (int i = 0; i < th->r; i++)
                for (int j = 0; j < tw->r; j++)
                    sum += th->g[a * th->r + i] * w[i * tw->r + j] * tw->g[b * tw->r + j];
            u[(size_t)o * cg + ci] = (float)sum;
        }
}

static int winograd_create(acl_conv *conv, const float *weight)
{
    const winograd_variant *v = conv->algo->variant;
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
    winograd_state *st = calloc(1, sizeof *st);
    if (!(conv->impl = st)) return acl_fail("out of memory creating %s", conv->algo->name);
    winograd_matrices_init(&st->th, v->m_h, v->r_h);
    winograd_matrices_init(&st->tw, v->m_w, v->r_w);
    st->bt_h = transform_table(&st->th, 1);
    st->bt_w = transform_table(&st->tw, 1);
    st->at_h = transform_table(&st->th, 0);
    st->at_w = transform_table(&st->tw, 0);
    st->points = st->th.alpha * st->tw.alpha;
    st->tiles_h = acl_div_up(d->oh, v->m_h);
    st->tiles_w = acl_div_up(d->ow, v->m_w);
    st->tiles = s->n * st->tiles_h * st->tiles_w;
    const size_t tile_bytes = (size_t)st->points * (s->c + s->oc) * sizeof(float);
    const size_t u_bytes = (size_t)st->points * s->oc * d->cg * sizeof(float);
    st->fused = tile_bytes * st->tiles > STAGED_MAX_BYTES && u_bytes <= FUSED_MAX_U_BYTES;
    int rc;
    if (st->fused) {
        st->block_cap = acl_max(1, (int)(FUSED_BLOCK_BYTES / tile_bytes));
        st->workers = acl_cpu_count();
        st->worker_floats = (size_t)st->points * st->block_cap * (s->c + s->oc) +
                            acl_gemm_packed_a_floats(conv->uk, st->block_cap, d->cg);
        st->workers_at =
            conv_scratch_reserve(conv, st->worker_floats * st->workers * sizeof(float));
        /* M = 0: each block sets its jobs' A, M and C. */
        rc = conv_gemm_create(&st->gemm, conv, st->points * s->group, 0, 1, d->cg, d->ocg);
    } else {
        st->v_at =
            conv_scratch_reserve(conv, (size_t)st->points * st->tiles * s->c * sizeof(float));
        st->mt_at =
            conv_scratch_reserve(conv, (size_t)st->points * st->tiles * s->oc * sizeof(float));
        rc = conv_gemm_create(&st->gemm, conv, st->points * s->group, st->tiles, 1, d->cg, d->ocg);
    }
    /* One point's U at a time: the packed U is already points x the
     * weights, a whole unpacked copy beside it would double that at load. */
    float *u = rc == 0 ? acl_alloc((size_t)s->oc * d->cg * sizeof(float)) : NULL;
    if (!u) rc = -1;
    for (int p = 0; rc == 0 && p < st->points; p++) {
        transform_point(st, conv, weight, p / st->tw.alpha, p % st->tw.alpha, u);
        for (int g = 0; rc == 0 && g < s->group; g++)
            rc = conv_gemm_pack(&st->gemm, p * s->group + g, u + (size_t)g * d->ocg * d->cg, d->cg,
                                1, 0);
    }
    acl_free(u);
    return rc;
}

/* Job (p, g): V[p]'s group-g channels times U[p]'s group-g block into M[p]'s
 * group-g columns; bias and activation wait for the output transform, which
 * is linear only before them.  V[p] and M[p] hold `slots` tiles each. */
static void point_job(acl_gemm_job *job, const acl_conv *conv, int p, int g, size_t slots, float *v,
                      float *mt)
{
    const acl_conv_shape *s = &conv->s;
    job->a = (acl_a_source){
        .base = v + ((size_t)p * slots * s->c + (size_t)g * conv->d.cg),
        .lda = s->c,
    };
    job->c = mt + ((size_t)p * slots * s->oc + (size_t)g * conv->d.ocg);
    job->ldc = s->oc;
}

/* A transform's rows go through in vectors of this many floats. */
#if defined(__AVX512F__)
#define TRANSFORM_FLOATS 16
#else
#define TRANSFORM_FLOATS 8
#endif
typedef float transform_vec __attribute__((vector_size(TRANSFORM_FLOATS * sizeof(float))));

/* combine_rows over a vector of every source row at a time, the sources held
 * in registers while each output row is summed: inlined with a constant
 * `cols`, where a loop of len floats per coefficient cost more than its
 * arithmetic at few channels (U-Net's 16 -> 16 on 256x256, F(4x4, 3x3):
 * 3.7 ms, 2.6 times the direct convolution's).  The same sums in the same
 * order as the scalar loop. */
static inline __attribute__((always_inline)) void combine_vectors(const float *mat, int rows,
                                                                  const int cols, const float *src,
                                                                  ptrdiff_t src_stride, float *dst,
                                                                  ptrdiff_t dst_stride, int len)
{
    for (int e = 0; e < len; e += TRANSFORM_FLOATS) {
        transform_vec in[WINOGRAD_MAX_ALPHA];
#pragma GCC unroll 8
        for (int k = 0; k < cols; k++) memcpy(&in[k], src + k * src_stride + e, sizeof in[k]);
#pragma GCC unroll 8
        for (int i = 0; i < rows; i++) {
            transform_vec out = {0};
            int written = 0;
#pragma GCC unroll 8
            for (int k = 0; k < cols; k++) {
                const float c = mat[i * cols + k];
                if (c == 0.0f) continue;
                out = written ? out + c * in[k] : c * in[k];
                written = 1;
            }
            memcpy(dst + i * dst_stride + e, &out, sizeof out);
        }
    }
}

/* dst row i = sum_k mat[i][k] * src row k, rows of len floats; zero
 * coefficients (most of B^T and A^T) are skipped.  Done `count` times, the
 * n-th from src + n * src_step into dst + n * dst_step: a tile's pass is one
 * call, where a call per row of the tile cost as much as the arithmetic at
 * few channels. */
static void combine_rows(const float *mat, int rows, int cols, const float *src,
                         ptrdiff_t src_stride, float *dst, ptrdiff_t dst_stride, int len, int count,
                         ptrdiff_t src_step, ptrdiff_t dst_step)
{
    if (len % TRANSFORM_FLOATS == 0) {
        /* A constant table or `cols`, so that combine_vectors folds them. */
#define COMBINE_EACH(m, r, n)                                                                \
    do {                                                                                     \
        for (int t = 0; t < count; t++)                                                      \
            combine_vectors(m, r, n, src + t * src_step, src_stride, dst + t * dst_step,     \
                            dst_stride, len);                                                \
        return;                                                                              \
    } while (0)
        if (mat == BT_4_3) COMBINE_EACH(BT_4_3, 6, 6);
        if (mat == AT_4_3) COMBINE_EACH(AT_4_3, 4, 6);
        if (mat == BT_2_3) COMBINE_EACH(BT_2_3, 4, 4);
        if (mat == AT_2_3) COMBINE_EACH(AT_2_3, 2, 4);
        switch (cols) {
        case 4: COMBINE_EACH(mat, rows, 4);
        case 6: COMBINE_EACH(mat, rows, 6);
        case 8: COMBINE_EACH(mat, rows, 8);
        }
#undef COMBINE_EACH
    }
    for (int t = 0; t < count; t++, src += src_step, dst += dst_step)
        for (int i = 0; i < rows; i++) {
            float *restrict out = dst + i * dst_stride;
            int written = 0;
            for (int k = 0; k < cols; k++) {
                float c = mat[i * cols + k];
                if (c == 0.0f) continue;
                const float *restrict in = src + k * src_stride;
                if (written)
                    for (int e = 0; e < len; e++) out[e] += c * in[e];
                else
                    for (int e = 0; e < len; e++) out[e] = c * in[e];
                written = 1;
            }
            if (!written) memset(out, 0, (size_t)len * sizeof(float));
        }
}

typedef struct {
    const acl_conv *conv;
    const conv_io *io;
    float *v, *mt;  /* in the run's scratch: staged V and M, or the workers' buffers */
    int block;      /* fused: tiles per block */
} winograd_ctx;

/* patch[a][e][len] = x[iy0 + a][ix0 + e][c0 .. c0 + len), zero outside. */
static void gather_patch(const float *x, const acl_conv_shape *s, int b, int iy0, int ix0,
                         int alpha_h, int alpha_w, int c0, int len, float *patch)
{
    size_t bytes = (size_t)len * sizeof(float);
    for (int a = 0; a < alpha_h; a++)
        for (int e = 0; e < alpha_w; e++, patch += len) {
            int iy = iy0 + a, ix = ix0 + e;
            if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w) memset(patch, 0, bytes);
            else memcpy(patch, x + ((size_t)(b * s->h + iy) * s->w + ix) * s->c + c0, bytes);
        }
}

/* Tile `tile`'s V into slot `slot` of v (points x slots x c).  Interior
 * tiles are transformed straight from the input; edge tiles from a
 * zero-padded copy. */
static void input_tile(const winograd_ctx *ctx, int tile, float *v, size_t slots, size_t slot)
{
    const acl_conv_shape *s = &ctx->conv->s;
    const winograd_state *st = ctx->conv->impl;
    const winograd_matrices *th = &st->th, *tw = &st->tw;
    float patch[PATCH_FLOATS], half[PATCH_FLOATS];
    const ptrdiff_t point_stride = (ptrdiff_t)slots * s->c;
    const int row = tile / st->tiles_w, tx = tile % st->tiles_w;
    const int b = row / st->tiles_h, iy0 = row % st->tiles_h * th->m - s->pad_top;
    const int ix0 = tx * tw->m - s->pad_left;
    const int interior = iy0 >= 0 && iy0 + th->alpha <= s->h && ix0 >= 0 && ix0 + tw->alpha <= s->w;
    for (int c0 = 0; c0 < s->c; c0 += CHANNEL_BLOCK) {
        int len = acl_min(CHANNEL_BLOCK, s->c - c0);
        const float *src = patch;
        ptrdiff_t pixel_stride = len, row_stride = (ptrdiff_t)tw->alpha * len;
        if (interior) {
            src = ctx->io->x + ((size_t)(b * s->h + iy0) * s->w + ix0) * s->c + c0;
            pixel_stride = s->c;
            row_stride = (ptrdiff_t)s->w * s->c;
        } else {
            gather_patch(ctx->io->x, s, b, iy0, ix0, th->alpha, tw->alpha, c0, len, patch);
        }
        /* along w, input row by row into half[a][j][len] */
        combine_rows(st->bt_w, tw->alpha, tw->alpha, src, pixel_stride, half, len, len, th->alpha,
                     row_stride, (ptrdiff_t)tw->alpha * len);
        /* along h, column by column into V[(i, j)][slot] */
        combine_rows(st->bt_h, th->alpha, th->alpha, half, (ptrdiff_t)tw->alpha * len,
                     v + slot * s->c + c0, tw->alpha * point_stride, len, tw->alpha, len,
                     point_stride);
    }
}

/* Tile `tile`'s output from slot `slot` of mt (points x slots x oc), with
 * bias, residual and activation. */
static void output_tile(const winograd_ctx *ctx, int tile, const float *mt, size_t slots,
                        size_t slot)
{
    const acl_conv *conv = ctx->conv;
    const acl_conv_shape *s = &conv->s;
    const winograd_state *st = conv->impl;
    const winograd_matrices *th = &st->th, *tw = &st->tw;
    float half[PATCH_FLOATS], out[PATCH_FLOATS];
    const ptrdiff_t point_stride = (ptrdiff_t)slots * s->oc;
    const int row = tile / st->tiles_w, tx = tile % st->tiles_w;
    const int b = row / st->tiles_h, ty = row % st->tiles_h;
    for (int o0 = 0; o0 < s->oc; o0 += CHANNEL_BLOCK) {
        int len = acl_min(CHANNEL_BLOCK, s->oc - o0);
        combine_rows(st->at_w, tw->m, tw->alpha, mt + slot * s->oc + o0, point_stride, half, len,
                     len, th->alpha, tw->alpha * point_stride, (ptrdiff_t)tw->m * len);
        int width = tw->m * len;
        combine_rows(st->at_h, th->m, th->alpha, half, width, out, width, width, 1, 0, 0);
        /* The tile row's pixels lie next to each other in y where the block
         * holds every channel: one activation call for them all, not one per
         * pixel of len floats (a clamp goes with the bias, conv_finish). */
        const int pixels = acl_min(tw->m, conv->d.ow - tx * tw->m);
        const int row_at_once = len == s->oc && !conv_act_is_clamp(s);
        for (int i = 0; i < th->m && ty * th->m + i < conv->d.oh; i++) {
            const size_t row_at =
                (((size_t)b * conv->d.oh + ty * th->m + i) * conv->d.ow + tx * tw->m) * s->oc + o0;
            for (int j = 0; j < pixels; j++) {
                const size_t at = row_at + (size_t)j * s->oc;
                const float *res = ctx->io->residual ? ctx->io->residual + at : NULL;
                float *y = ctx->io->y + at;
                const float *acc = out + (i * tw->m + j) * len;
                if (row_at_once) conv_add_bias(y, acc, conv->bias + o0, res, len);
                else conv_finish(s, y, acc, conv->bias + o0, res, len);
            }
            if (row_at_once) conv_activate_in_place(s, ctx->io->y + row_at, (size_t)pixels * s->oc);
        }
    }
}

/* Staged units: one row of tiles of one image. */
static void input_transform(void *arg, int begin, int end, int worker)
{
    const winograd_ctx *ctx = arg;
    const winograd_state *st = ctx->conv->impl;
    for (int tile = begin * st->tiles_w; tile < end * st->tiles_w; tile++)
        input_tile(ctx, tile, ctx->v, (size_t)st->tiles, (size_t)tile);
}

static void output_transform(void *arg, int begin, int end, int worker)
{
    const winograd_ctx *ctx = arg;
    const winograd_state *st = ctx->conv->impl;
    for (int tile = begin * st->tiles_w; tile < end * st->tiles_w; tile++)
        output_tile(ctx, tile, ctx->mt, (size_t)st->tiles, (size_t)tile);
}

/* Fused units: blocks of ctx->block tiles, each through all three steps in
 * the worker's own V, M and A panel. */
static void fused_blocks(void *arg, int begin, int end, int worker)
{
    const winograd_ctx *ctx = arg;
    const acl_conv *conv = ctx->conv;
    const winograd_state *st = conv->impl;
    const size_t slots = (size_t)ctx->block;
    float *v = ctx->v + st->worker_floats * worker;
    float *mt = v + (size_t)st->points * slots * conv->s.c;
    float *packed = mt + (size_t)st->points * slots * conv->s.oc;
    for (int blk = begin; blk < end; blk++) {
        const int t0 = blk * ctx->block, t1 = acl_min(st->tiles, t0 + ctx->block);
        for (int tile = t0; tile < t1; tile++) input_tile(ctx, tile, v, slots, tile - t0);
        for (int j = 0; j < st->points * conv->s.group; j++) {
            acl_gemm_job job = st->gemm.jobs[j];  /* the packed U of (point, group) */
            point_job(&job, conv, j / conv->s.group, j % conv->s.group, slots, v, mt);
            job.m = t1 - t0;
            job.a_packed = packed;
            acl_gemm_job_run(&job);
        }
        for (int tile = t0; tile < t1; tile++) output_tile(ctx, tile, mt, slots, tile - t0);
    }
}

static int winograd_run(acl_conv *conv, const acl_exec *ex, const conv_io *io, acl_stage_times *t)
{
    winograd_state *st = conv->impl;
    if (st->fused) {
        if (acl_exec_active(ex) > st->workers)
            return acl_fail("%s has buffers for %d workers, the split uses %d", conv->algo->name,
                            st->workers, acl_exec_active(ex));
        /* Enough blocks for every workload, none larger than the buffers. */
        const int block = acl_min(st->block_cap, acl_div_up(st->tiles, ex->workloads));
        float *workers = conv_scratch_at(io, st->workers_at);
        winograd_ctx ctx = {conv, io, workers, NULL, block};
        return conv_stage(ex, acl_div_up(st->tiles, block), fused_blocks, &ctx, &t->gemm_ms);
    }
    int units = conv->s.n * st->tiles_h;
    winograd_ctx ctx = {conv, io, conv_scratch_at(io, st->v_at), conv_scratch_at(io, st->mt_at), 0};
    for (int j = 0; j < st->points * conv->s.group; j++)
        point_job(&st->gemm.jobs[j], conv, j / conv->s.group, j % conv->s.group, (size_t)st->tiles,
                  ctx.v, ctx.mt);
    if (conv_stage(ex, units, input_transform, &ctx, &t->pre_ms) != 0) return -1;
    if (conv_gemm_run(&st->gemm, ex, io, t) != 0) return -1;
    return conv_stage(ex, units, output_transform, &ctx, &t->post_ms);
}

static void winograd_destroy(acl_conv *conv)
{
    winograd_state *st = conv->impl;
    conv_gemm_destroy(&st->gemm);
    free(st);
}

#define WINOGRAD(ident, mh, mw, rh, rw)                                   \
    static const winograd_variant ident##_variant = {mh, mw, rh, rw};     \
    const conv_algo conv_##ident = {                                      \
        .name = #ident,                                                   \
        .uses_ukernel = 1,                                                \
        .variant = &ident##_variant,                                      \
        .check = winograd_check,                                          \
        .create = winograd_create,                                        \
        .run = winograd_run,                                              \
        .destroy = winograd_destroy,                                      \
    };

WINOGRAD(winograd_2x2_3x3, 2, 2, 3, 3)
WINOGRAD(winograd_4x4_3x3, 4, 4, 3, 3)
WINOGRAD(winograd_1x2_1x3, 1, 2, 1, 3)
WINOGRAD(winograd_1x4_1x3, 1, 4, 1, 3)
WINOGRAD(winograd_2x1_3x1, 2, 1, 3, 1)
WINOGRAD(winograd_4x1_3x1, 4, 1, 3, 1)
WINOGRAD(winograd_3x3_4x4, 3, 3, 4, 4)
WINOGRAD(winograd_2x2_5x5, 2, 2, 5, 5)
WINOGRAD(winograd_4x4_5x5, 4, 4, 5, 5)
WINOGRAD(winograd_2x2_6x6, 2, 2, 6, 6)
WINOGRAD(winograd_3x3_6x6, 3, 3, 6, 6)
