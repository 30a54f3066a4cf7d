/* Winograd convolution F(m_h x m_w, r_h x r_w), stride 1, dilation 1: one
 * implementation for the 2-D (F(2x2,3x3), F(4x4,3x3)) and 1-D (1x3, 3x1)
 * variants; a 1-D variant is the 2-D one with F(1, 1) along the other axis.
 *
 * The output is cut into m_h x m_w tiles (partial tiles at the bottom/right
 * edges), each read as an alpha_h x alpha_w input patch (alpha = m + r - 1)
 * with zeros outside the input, which handles any (asymmetric) pads.
 *   pre   input transform  V[p][tile][c]   = (B^T d B)[p]
 *   gemm  per point p and group: M[p][tile][oc] = V[p] U[p]   (one batch)
 *   post  output transform  y = A^T M A, + bias + residual, activation
 * U[p] = (G w G^T)[p] is computed in double and packed at create. */
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

typedef struct {
    winograd_matrices th, tw;  /* along h and along w */
    int points;                /* alpha_h * alpha_w */
    int tiles_h, tiles_w, tiles;
    size_t v_at;               /* scratch: V, points x tiles x c */
    size_t mt_at;              /* scratch: M, points x tiles x oc */
    conv_gemm gemm;            /* job p * group + g */
} winograd_state;

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
    st->points = st->th.alpha * st->tw.alpha;
    st->tiles_h = acl_div_up(d->oh, v->m_h);
    st->tiles_w = acl_div_up(d->ow, v->m_w);
    st->tiles = s->n * st->tiles_h * st->tiles_w;
    st->v_at = conv_scratch_reserve(conv, (size_t)st->points * st->tiles * s->c * sizeof(float));
    st->mt_at = conv_scratch_reserve(conv, (size_t)st->points * st->tiles * s->oc * sizeof(float));
    /* One point's U at a time: the packed U is already points x the
     * weights, a whole unpacked copy beside it would double that at load. */
    float *u = acl_alloc((size_t)s->oc * d->cg * sizeof(float));
    int rc = u ? conv_gemm_create(&st->gemm, conv, st->points * s->group, st->tiles, 1, d->cg,
                                  d->ocg)
               : -1;
    for (int p = 0; rc == 0 && p < st->points; p++) {
        transform_point(st, conv, weight, p / st->tw.alpha, p % st->tw.alpha, u);
        for (int g = 0; rc == 0 && g < s->group; g++)
            rc = conv_gemm_pack(&st->gemm, p * s->group + g, u + (size_t)g * d->ocg * d->cg,
                                d->cg, 1, 0);
    }
    acl_free(u);
    return rc;
}

/* Job (p, g): V[p]'s group-g channels times U[p]'s group-g block into M[p]'s
 * group-g columns; bias and activation wait for the output transform, which
 * is linear only before them. */
static void point_jobs(winograd_state *st, const acl_conv *conv, float *v, float *mt)
{
    const acl_conv_shape *s = &conv->s;
    for (int p = 0; p < st->points; p++)
        for (int g = 0; g < s->group; g++) {
            acl_gemm_job *job = &st->gemm.jobs[p * s->group + g];
            job->a = (acl_a_source){
                .base = v + ((size_t)p * st->tiles * s->c + (size_t)g * conv->d.cg),
                .lda = s->c,
            };
            job->c = mt + ((size_t)p * st->tiles * s->oc + (size_t)g * conv->d.ocg);
            job->ldc = s->oc;
        }
}

/* dst row i = sum_k mat[i][k] * src row k, rows of len floats; zero
 * coefficients (most of B^T and A^T) are skipped. */
static void combine_rows(const float *mat, int rows, int cols, const float *src,
                         ptrdiff_t src_stride, float *dst, ptrdiff_t dst_stride, int len)
{
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
    float *v, *mt;  /* in the run's scratch */
} winograd_ctx;

/* patch[a][e][len] = x[iy0 + a][ix0 + e][c0 .. c0 + len), zero outside. */
static void gather_patch(const float *x, const acl_conv_shape *s, int b, int iy0, int ix0,
                         int alpha_h, int alpha_w, int c0, int len, float *patch)
{
    size_t bytes = (size_t)len * sizeof(float);
    for (int a = 0; a < alpha_h; a++)
        for (int e = 0; e < alpha_w; e++, patch += len) {
            int iy = iy0 + a, ix = ix0 + e;
            if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w)
                memset(patch, 0, bytes);
            else
                memcpy(patch, x + ((size_t)(b * s->h + iy) * s->w + ix) * s->c + c0, bytes);
        }
}

/* Unit: one row of tiles of one image.  Interior tiles are transformed
 * straight from the input; edge tiles from a zero-padded copy. */
static void input_transform(void *arg, int begin, int end, int worker)
{
    const winograd_ctx *ctx = arg;
    const acl_conv_shape *s = &ctx->conv->s;
    const winograd_state *st = ctx->conv->impl;
    const winograd_matrices *th = &st->th, *tw = &st->tw;
    float patch[PATCH_FLOATS], half[PATCH_FLOATS];
    ptrdiff_t point_stride = (ptrdiff_t)st->tiles * s->c;
    for (int unit = begin; unit < end; unit++) {
        int b = unit / st->tiles_h, iy0 = unit % st->tiles_h * th->m - s->pad_top;
        for (int tx = 0; tx < st->tiles_w; tx++) {
            int tile = unit * st->tiles_w + tx, ix0 = tx * tw->m - s->pad_left;
            int interior = iy0 >= 0 && iy0 + th->alpha <= s->h && ix0 >= 0 &&
                           ix0 + tw->alpha <= s->w;
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
                for (int a = 0; a < th->alpha; a++)
                    combine_rows(tw->bt, tw->alpha, tw->alpha, src + a * row_stride, pixel_stride,
                                 half + a * tw->alpha * len, len, len);
                /* along h, column by column into V[(i, j)][tile] */
                for (int j = 0; j < tw->alpha; j++)
                    combine_rows(th->bt, th->alpha, th->alpha, half + j * len,
                                 (ptrdiff_t)tw->alpha * len,
                                 ctx->v + j * point_stride + (size_t)tile * s->c + c0,
                                 tw->alpha * point_stride, len);
            }
        }
    }
}

static void output_transform(void *arg, int begin, int end, int worker)
{
    const winograd_ctx *ctx = arg;
    const acl_conv *conv = ctx->conv;
    const acl_conv_shape *s = &conv->s;
    const winograd_state *st = conv->impl;
    const winograd_matrices *th = &st->th, *tw = &st->tw;
    float half[PATCH_FLOATS], out[PATCH_FLOATS];
    ptrdiff_t point_stride = (ptrdiff_t)st->tiles * s->oc;
    for (int unit = begin; unit < end; unit++) {
        int b = unit / st->tiles_h, ty = unit % st->tiles_h;
        for (int tx = 0; tx < st->tiles_w; tx++) {
            int tile = unit * st->tiles_w + tx;
            for (int o0 = 0; o0 < s->oc; o0 += CHANNEL_BLOCK) {
                int len = acl_min(CHANNEL_BLOCK, s->oc - o0);
                for (int a = 0; a < th->alpha; a++)
                    combine_rows(tw->at, tw->m, tw->alpha,
                                 ctx->mt + a * tw->alpha * point_stride + (size_t)tile * s->oc + o0,
                                 point_stride, half + a * tw->m * len, len, len);
                int row = tw->m * len;
                combine_rows(th->at, th->m, th->alpha, half, row, out, row, row);
                for (int i = 0; i < th->m && ty * th->m + i < conv->d.oh; i++)
                    for (int j = 0; j < tw->m && tx * tw->m + j < conv->d.ow; j++) {
                        size_t at = (((size_t)b * conv->d.oh + ty * th->m + i) * conv->d.ow +
                                     tx * tw->m + j) * s->oc + o0;
                        const float *res = ctx->io->residual ? ctx->io->residual + at : NULL;
                        conv_finish(s, ctx->io->y + at, out + (i * tw->m + j) * len,
                                    conv->bias + o0, res, len);
                    }
            }
        }
    }
}

static int winograd_run(acl_conv *conv, const acl_exec *ex, const conv_io *io, acl_stage_times *t)
{
    winograd_state *st = conv->impl;
    int units = conv->s.n * st->tiles_h;
    winograd_ctx ctx = {conv, io, conv_scratch_at(io, st->v_at), conv_scratch_at(io, st->mt_at)};
    point_jobs(st, conv, ctx.v, ctx.mt);
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
