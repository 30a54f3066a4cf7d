/* ACL's "General" method: copy each output pixel's receptive field into a row
 * of a matrix (im2col), then one GEMM per group with K = kh*kw*Cg.
 *
 * A row is laid out [group][tap][Cg] so that each tap is one contiguous copy
 * from NHWC and each group's slice is a dense A with lda = group*K; the
 * weights are reordered to the same [tap][Cg] order once at create. */
#include <stdlib.h>
#include <string.h>

#include "conv_impl.h"

typedef struct {
    int k;        /* K of one group: taps * Cg */
    float *cols;  /* m x (group * k) */
    conv_gemm gemm;
} im2col_state;

static int im2col_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                        const acl_ukernel *uk)
{
    return conv_check_ukernel(self->name, uk, d->taps * d->cg, d->ocg);
}

static int im2col_create(acl_conv *conv, const float *weight)
{
    const conv_dims *d = &conv->d;
    im2col_state *st = calloc(1, sizeof *st);
    if (!(conv->impl = st)) return acl_fail("out of memory creating im2col");
    st->k = d->taps * d->cg;
    st->cols = acl_alloc((size_t)d->m * st->k * conv->s.group * sizeof(float));
    float *reordered = acl_alloc((size_t)conv->s.oc * st->k * sizeof(float));
    int rc = st->cols && reordered ? 0 : -1;
    if (rc == 0) {
        /* OIHW [oc][Cg][tap] -> [oc][tap][Cg] */
        for (int o = 0; o < conv->s.oc; o++)
            for (int ci = 0; ci < d->cg; ci++)
                for (int t = 0; t < d->taps; t++)
                    reordered[((size_t)o * d->taps + t) * d->cg + ci] =
                        weight[((size_t)o * d->cg + ci) * d->taps + t];
        rc = conv_gemm_create(&st->gemm, conv->uk, conv->s.group, d->m, 1, st->k, d->ocg);
    }
    for (int g = 0; rc == 0 && g < conv->s.group; g++) {
        rc = conv_gemm_pack(&st->gemm, g, reordered + (size_t)g * d->ocg * st->k, st->k, 1, 0);
        st->gemm.jobs[g].a = (acl_a_source){
            .base = st->cols + (size_t)g * st->k,
            .lda = (ptrdiff_t)st->k * conv->s.group,
        };
    }
    acl_free(reordered);
    return rc;
}

typedef struct {
    const acl_conv *conv;
    const float *x;
} im2col_ctx;

static void im2col_rows(void *arg, int begin, int end, int worker)
{
    const im2col_ctx *ctx = arg;
    const acl_conv_shape *s = &ctx->conv->s;
    const conv_dims *d = &ctx->conv->d;
    const im2col_state *st = ctx->conv->impl;
    size_t bytes = (size_t)d->cg * sizeof(float);
    for (int row = begin; row < end; row++) {
        int b = row / d->oh, oy = row % d->oh;
        float *dst = st->cols + (size_t)row * d->ow * st->k * s->group;
        for (int ox = 0; ox < d->ow; ox++)
            for (int g = 0; g < s->group; g++)
                for (int ky = 0; ky < s->kh; ky++)
                    for (int kx = 0; kx < s->kw; kx++, dst += d->cg) {
                        int iy = oy * s->stride_h - s->pad_top + ky * s->dil_h;
                        int ix = ox * s->stride_w - s->pad_left + kx * s->dil_w;
                        if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w)
                            memset(dst, 0, bytes);
                        else
                            memcpy(dst, ctx->x + ((size_t)(b * s->h + iy) * s->w + ix) * s->c +
                                            g * d->cg,
                                   bytes);
                    }
    }
}

static int im2col_run(acl_conv *conv, const acl_exec *ex, const conv_io *io, acl_stage_times *t)
{
    im2col_state *st = conv->impl;
    im2col_ctx ctx = {conv, io->x};
    if (conv_stage(ex, conv->s.n * conv->d.oh, im2col_rows, &ctx, &t->pre_ms) != 0) return -1;
    conv_gemm_group_outputs(&st->gemm, conv, io);
    return conv_gemm_run(&st->gemm, ex, t);
}

static void im2col_destroy(acl_conv *conv)
{
    im2col_state *st = conv->impl;
    conv_gemm_destroy(&st->gemm);
    acl_free(st->cols);
    free(st);
}

const conv_algo conv_im2col = {
    .name = "im2col",
    .uses_ukernel = 1,
    .check = im2col_check,
    .create = im2col_create,
    .run = im2col_run,
    .destroy = im2col_destroy,
};
