/* Indirect convolution (Dukhan; ACL's hybrid indirect GEMM): no im2col copy.
 * Each output pixel has kh*kw pointers to the input pixels its taps read (a
 * zero row for padding); the hybrid micro-kernel reads its MR rows through
 * them tap by tap, so the per-call K is Cg and the weights are packed straight
 * from OIHW. */
#include <stdlib.h>

#include "conv_impl.h"

typedef struct {
    conv_indirection ind;
    conv_gemm gemm;
} indirect_state;

static int indirect_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                          const acl_ukernel *uk)
{
    return conv_check_row_ukernel(self->name, uk, d->cg, d->ocg);
}

static int indirect_create(acl_conv *conv, const float *weight)
{
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
    indirect_state *st = calloc(1, sizeof *st);
    if (!(conv->impl = st)) return acl_fail("out of memory creating indirect");
    if (conv_indirection_create(&st->ind, conv) != 0) return -1;
    if (conv_gemm_create(&st->gemm, conv, s->group, d->m, d->taps, d->cg, d->ocg) != 0) return -1;
    size_t group_floats = (size_t)d->ocg * d->cg * d->taps;
    for (int g = 0; g < s->group; g++)
        if (conv_gemm_pack(&st->gemm, g, weight + g * group_floats, (ptrdiff_t)d->cg * d->taps,
                           d->taps, 1) != 0)
            return -1;
    return 0;
}

static int indirect_run(acl_conv *conv, const acl_exec *ex, const conv_io *io, acl_stage_times *t)
{
    indirect_state *st = conv->impl;
    const float *const *rows = conv_indirection_rebase(&st->ind, ex, io, &t->pre_ms);
    if (!rows) return -1;
    for (int g = 0; g < conv->s.group; g++)
        st->gemm.jobs[g].a = (acl_a_source){.rows = rows, .offset = (ptrdiff_t)g * conv->d.cg};
    conv_gemm_group_outputs(&st->gemm, conv, io);
    return conv_gemm_run(&st->gemm, ex, io, t);
}

static void indirect_destroy(acl_conv *conv)
{
    indirect_state *st = conv->impl;
    conv_gemm_destroy(&st->gemm);
    conv_indirection_destroy(&st->ind);
    free(st);
}

const conv_algo conv_indirect = {
    .name = "indirect",
    .uses_ukernel = 1,
    .check = indirect_check,
    .create = indirect_create,
    .run = indirect_run,
    .destroy = indirect_destroy,
};
