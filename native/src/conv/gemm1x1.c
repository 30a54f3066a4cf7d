/* 1x1 convolution as a GEMM that reads A straight from the input: a dense A
 * (lda = c) when every output pixel is an input pixel (stride 1, no pads),
 * otherwise row pointers from an indirection buffer (strided pixels, zero
 * rows for padding).  Groups select their channels through the A offset. */
#include <stdlib.h>

#include "conv_impl.h"

typedef struct {
    int dense;
    conv_indirection ind;
    conv_gemm gemm;
} gemm1x1_state;

static int gemm1x1_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                         const acl_ukernel *uk)
{
    if (s->kh != 1 || s->kw != 1)
        return acl_fail("%s needs a 1x1 kernel, got kh=%d kw=%d", self->name, s->kh, s->kw);
    return conv_check_ukernel(self->name, uk, d->cg, d->ocg);
}

static int gemm1x1_create(acl_conv *conv, const float *weight)
{
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
    gemm1x1_state *st = calloc(1, sizeof *st);
    if (!(conv->impl = st)) return acl_fail("out of memory creating gemm1x1");
    st->dense = s->stride_h == 1 && s->stride_w == 1 && !s->pad_top && !s->pad_left &&
                !s->pad_bottom && !s->pad_right;
    if (!st->dense && conv_indirection_create(&st->ind, conv) != 0) return -1;
    if (conv_gemm_create(&st->gemm, conv, s->group, d->m, 1, d->cg, d->ocg) != 0) return -1;
    for (int g = 0; g < s->group; g++)
        if (conv_gemm_pack(&st->gemm, g, weight + (size_t)g * d->ocg * d->cg, d->cg, 1, 0) != 0)
            return -1;
    return 0;
}

static int gemm1x1_run(acl_conv *conv, const acl_exec *ex, const conv_io *io, acl_stage_times *t)
{
    gemm1x1_state *st = conv->impl;
    const float *const *rows = NULL;
    if (!st->dense && !(rows = conv_indirection_rebase(&st->ind, ex, io, &t->pre_ms))) return -1;
    for (int g = 0; g < conv->s.group; g++) {
        ptrdiff_t channel = (ptrdiff_t)g * conv->d.cg;
        st->gemm.jobs[g].a = st->dense ? (acl_a_source){.base = io->x + channel, .lda = conv->s.c}
                                       : (acl_a_source){.rows = rows, .offset = channel};
    }
    conv_gemm_group_outputs(&st->gemm, conv, io);
    return conv_gemm_run(&st->gemm, ex, io, t);
}

static void gemm1x1_destroy(acl_conv *conv)
{
    gemm1x1_state *st = conv->impl;
    conv_gemm_destroy(&st->gemm);
    conv_indirection_destroy(&st->ind);
    free(st);
}

const conv_algo conv_gemm1x1 = {
    .name = "gemm1x1",
    .uses_ukernel = 1,
    .fp16 = 1,
    .check = gemm1x1_check,
    .create = gemm1x1_create,
    .run = gemm1x1_run,
    .destroy = gemm1x1_destroy,
};
