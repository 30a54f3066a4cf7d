/* ACL's "General" method: copy each output pixel's receptive field into a row
 * of a matrix (im2col), then one GEMM per group with K = kh*kw*Cg.
 *
 * A row is laid out [group][tap][Cg] so that each tap is one contiguous copy
 * from NHWC and each group's slice is a dense A with lda = group*K; the
 * weights are reordered to the same [tap][Cg] order once at create.
 *
 * The matrix is never built whole: each worker copies a block of output
 * pixels into its own buffer and runs the block's GEMMs straight away, while
 * the rows are still in L2 (the whole matrix of ResNet's 7x7 first layer is
 * 7 MB, written once and read back from memory).  Blocks only cut M, so an
 * output element's sums do not depend on the split. */
#include <stdlib.h>
#include <string.h>

#include "conv_impl.h"

/* A block's rows fill about this many floats (128 KB, half of L2)... */
#define BLOCK_FLOATS (32 * 1024)
/* ...but never fewer pixels than this, so that large-K layers still reuse
 * each B panel over as many rows as the macro-kernel's row blocks do. */
#define MIN_BLOCK_PIXELS 128

typedef struct {
    int k;           /* K of one group: taps * Cg */
    int block_cap;   /* most output pixels in one block, a multiple of MR */
    int workers;     /* per-worker buffers reserved */
    size_t cols_floats, packed_floats;  /* per worker */
    size_t cols_at;   /* scratch: workers x block_cap x (group * k) */
    size_t packed_at; /* scratch: workers x interleaved A panels of one block and group */
    conv_gemm gemm;  /* the packed weights and, per run, each group's output */
} im2col_state;

static int im2col_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                        const acl_ukernel *uk)
{
    return conv_check_ukernel(self->name, uk, d->taps * d->cg, d->ocg);
}

static int round_up(int a, int b) { return acl_div_up(a, b) * b; }

static int im2col_create(acl_conv *conv, const float *weight)
{
    const conv_dims *d = &conv->d;
    const int mr = conv->uk->mr;
    im2col_state *st = calloc(1, sizeof *st);
    if (!(conv->impl = st)) return acl_fail("out of memory creating im2col");
    st->k = d->taps * d->cg;
    const int row = st->k * conv->s.group;
    st->block_cap =
        acl_min(round_up(acl_max(MIN_BLOCK_PIXELS, BLOCK_FLOATS / row), mr), round_up(d->m, mr));
    st->workers = acl_cpu_count();
    st->cols_floats = (size_t)st->block_cap * row;
    st->packed_floats = acl_gemm_packed_a_floats(conv->uk, st->block_cap, st->k);
    st->cols_at = conv_scratch_reserve(conv, st->cols_floats * st->workers * sizeof(float));
    if (st->packed_floats)
        st->packed_at = conv_scratch_reserve(conv, st->packed_floats * st->workers * sizeof(float));
    float *reordered = acl_alloc((size_t)conv->s.oc * st->k * sizeof(float));
    int rc = reordered ? 0 : -1;
    if (rc == 0) {
        /* OIHW [oc][Cg][tap] -> [oc][tap][Cg] */
        for (int o = 0; o < conv->s.oc; o++)
            for (int ci = 0; ci < d->cg; ci++)
                for (int t = 0; t < d->taps; t++)
                    reordered[((size_t)o * d->taps + t) * d->cg + ci] =
                        weight[((size_t)o * d->cg + ci) * d->taps + t];
        /* M = 0: the jobs' A and M are set per block. */
        rc = conv_gemm_create(&st->gemm, conv, conv->s.group, 0, 1, st->k, d->ocg);
    }
    for (int g = 0; rc == 0 && g < conv->s.group; g++)
        rc = conv_gemm_pack(&st->gemm, g, reordered + (size_t)g * d->ocg * st->k, st->k, 1, 0);
    acl_free(reordered);
    return rc;
}

/* Copies the receptive field of output pixel `pixel` into dst ([group][tap][Cg]). */
static void copy_pixel(const acl_conv *conv, const float *x, int pixel, float *dst)
{
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
    const int ox = pixel % d->ow, oy = pixel / d->ow % d->oh, b = pixel / (d->ow * d->oh);
    const int ix0 = ox * s->stride_w - s->pad_left;
    if (s->group == 1 && s->dil_w == 1) {
        /* A kernel row's taps are one run of kw*C floats in NHWC: one copy per
         * kernel row instead of one per tap (C = 3 makes taps 12 bytes). */
        const int lo = acl_min(s->kw, acl_max(0, -ix0)),
                  hi = acl_max(lo, acl_min(s->kw, s->w - ix0));
        const size_t c = (size_t)s->c;
        for (int ky = 0; ky < s->kh; ky++, dst += s->kw * c) {
            const int iy = oy * s->stride_h - s->pad_top + ky * s->dil_h;
            if (iy < 0 || iy >= s->h) {
                memset(dst, 0, s->kw * c * sizeof(float));
                continue;
            }
            /* Only border pixels have padding taps: skip the empty calls. */
            if (lo) memset(dst, 0, lo * c * sizeof(float));
            memcpy(dst + lo * c, x + ((size_t)(b * s->h + iy) * s->w + ix0 + lo) * c,
                   (hi - lo) * c * sizeof(float));
            if (hi < s->kw) memset(dst + hi * c, 0, (s->kw - hi) * c * sizeof(float));
        }
        return;
    }
    const size_t bytes = (size_t)d->cg * sizeof(float);
    for (int g = 0; g < s->group; g++)
        for (int ky = 0; ky < s->kh; ky++)
            for (int kx = 0; kx < s->kw; kx++, dst += d->cg) {
                const int iy = oy * s->stride_h - s->pad_top + ky * s->dil_h;
                const int ix = ix0 + kx * s->dil_w;
                if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w) memset(dst, 0, bytes);
                else
                    memcpy(dst, x + ((size_t)(b * s->h + iy) * s->w + ix) * s->c + g * d->cg,
                           bytes);
            }
}

typedef struct {
    const acl_conv *conv;
    const float *x;
    int block;      /* output pixels per block */
    float *cols;    /* the workers' buffers in this run's scratch */
    float *packed;  /* NULL for non-interleaved micro-kernels */
} im2col_ctx;

static void im2col_blocks(void *arg, int begin, int end, int worker)
{
    const im2col_ctx *ctx = arg;
    const acl_conv *conv = ctx->conv;
    const im2col_state *st = conv->impl;
    const int row = st->k * conv->s.group;
    float *cols = ctx->cols + st->cols_floats * worker;
    for (int blk = begin; blk < end; blk++) {
        const int p0 = blk * ctx->block, p1 = acl_min(conv->d.m, p0 + ctx->block);
        for (int p = p0; p < p1; p++) copy_pixel(conv, ctx->x, p, cols + (size_t)(p - p0) * row);
        for (int g = 0; g < conv->s.group; g++) {
            acl_gemm_job job = st->gemm.jobs[g];  /* the group's output and epilogue */
            job.a = (acl_a_source){.base = cols + (size_t)g * st->k, .lda = row};
            job.m = p1 - p0;
            job.c += (ptrdiff_t)p0 * job.ldc;
            if (job.ep.residual) job.ep.residual += (ptrdiff_t)p0 * job.ldc;
            job.a_packed = ctx->packed ? ctx->packed + st->packed_floats * worker : NULL;
            acl_gemm_job_run(&job);
        }
    }
}

static int im2col_run(acl_conv *conv, const acl_exec *ex, const conv_io *io, acl_stage_times *t)
{
    im2col_state *st = conv->impl;
    if (acl_exec_active(ex) > st->workers)
        return acl_fail("im2col has buffers for %d workers, the split uses %d", st->workers,
                        acl_exec_active(ex));
    /* Enough blocks for every workload, none larger than the buffers. */
    const int mr = conv->uk->mr;
    const int block = acl_min(st->block_cap, round_up(acl_div_up(conv->d.m, ex->workloads), mr));
    im2col_ctx ctx = {conv, io->x, block, conv_scratch_at(io, st->cols_at),
                      st->packed_floats ? conv_scratch_at(io, st->packed_at) : NULL};
    conv_gemm_group_outputs(&st->gemm, conv, io);
    return conv_stage(ex, acl_div_up(conv->d.m, block), im2col_blocks, &ctx, &t->gemm_ms);
}

static void im2col_destroy(acl_conv *conv)
{
    im2col_state *st = conv->impl;
    conv_gemm_destroy(&st->gemm);
    free(st);
}

const conv_algo conv_im2col = {
    .name = "im2col",
    .uses_ukernel = 1,
    .fp16 = 1,
    .check = im2col_check,
    .create = im2col_create,
    .run = im2col_run,
    .destroy = im2col_destroy,
};
