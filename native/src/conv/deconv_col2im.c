/* Transposed convolution as ACL's GEMM deconvolution: one GEMM per group,
 * x[n*h*w, Cg] x W[Cg, taps*OCg], gives every input pixel's contribution
 * through every tap (the columns); col2im then gathers, for each output
 * pixel, the columns landing on it and applies the epilogue.
 *
 * A gather rather than a scatter-add: each output pixel sums its taps in a
 * fixed order on one thread, so every split gives the same bits, and the
 * epilogue runs while the pixel is still in cache.  The columns are laid out
 * [input pixel][group][tap][OCg] so that one tap's contribution to a group's
 * channels is one contiguous run; the weights are reordered from
 * [c][OCg][tap] to [c][tap][OCg] once at create to match. */
#include <stdlib.h>

#include "conv_impl.h"

typedef struct {
    int row;         /* floats per input pixel's columns: group * taps * ocg */
    size_t cols_at;  /* scratch: n*h*w rows of `row` floats */
    conv_gemm gemm;
    conv_transposed_map map;
} col2im_state;

static int col2im_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                        const acl_ukernel *uk)
{
    return conv_check_ukernel(self->name, uk, d->cg, d->taps * d->ocg);
}

static int col2im_create(acl_conv *conv, const float *weight)
{
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
    col2im_state *st = calloc(1, sizeof *st);
    if (!(conv->impl = st)) return acl_fail("out of memory creating %s", conv->algo->name);
    const int n_cols = d->taps * d->ocg, pixels = s->n * s->h * s->w;
    st->row = s->group * n_cols;
    st->cols_at = conv_scratch_reserve(conv, (size_t)pixels * st->row * sizeof(float));
    float *reordered = acl_alloc((size_t)s->c * n_cols * sizeof(float));
    int rc = reordered && conv_transposed_map_init(&st->map, conv) == 0
                 ? conv_gemm_create(&st->gemm, conv, s->group, pixels, 1, d->cg, n_cols)
                 : -1;
    if (rc == 0)
        for (int ci = 0; ci < s->c; ci++)
            for (int j = 0; j < d->ocg; j++)
                for (int t = 0; t < d->taps; t++)
                    reordered[((size_t)ci * d->taps + t) * d->ocg + j] =
                        weight[((size_t)ci * d->ocg + j) * d->taps + t];
    for (int g = 0; rc == 0 && g < s->group; g++)
        rc = conv_gemm_pack(&st->gemm, g, reordered + (size_t)g * d->cg * n_cols, 1, n_cols, 0);
    acl_free(reordered);
    return rc;
}

/* Adds the columns (walk->data) of input pixels pixel + i through `tap`,
 * every group's, to the output pixels at y + i * y_step. */
static void land_columns(const conv_transposed_walk *walk, float *y, ptrdiff_t y_step, size_t pixel,
                         int count, int tap)
{
    const acl_conv *conv = walk->conv;
    const col2im_state *st = conv->impl;
    const int ocg = conv->d.ocg, group_cols = conv->d.taps * ocg;
    for (int i = 0; i < count; i++) {
        float *restrict out = y + i * y_step;
        const float *restrict col = walk->data + (pixel + i) * st->row + (size_t)tap * ocg;
        for (int g = 0; g < conv->s.group; g++)
            for (int j = 0; j < ocg; j++) out[g * ocg + j] += col[g * group_cols + j];
    }
}

static int col2im_run(acl_conv *conv, const acl_exec *ex, const conv_io *io, acl_stage_times *t)
{
    col2im_state *st = conv->impl;
    const conv_dims *d = &conv->d;
    float *cols = conv_scratch_at(io, st->cols_at);
    for (int g = 0; g < conv->s.group; g++) {
        acl_gemm_job *job = &st->gemm.jobs[g];
        job->a = (acl_a_source){.base = io->x + (ptrdiff_t)g * d->cg, .lda = conv->s.c};
        job->c = cols + (ptrdiff_t)g * d->taps * d->ocg;
        job->ldc = st->row;
    }
    if (conv_gemm_run(&st->gemm, ex, io, t) != 0) return -1;
    conv_transposed_walk walk = {conv, &st->map, io, land_columns, cols};
    return conv_stage(ex, conv->s.n * d->oh, conv_transposed_rows, &walk, &t->post_ms);
}

static void col2im_destroy(acl_conv *conv)
{
    col2im_state *st = conv->impl;
    conv_gemm_destroy(&st->gemm);
    conv_transposed_map_free(&st->map);
    free(st);
}

const conv_algo conv_deconv_col2im = {
    .name = "deconv_col2im",
    .uses_ukernel = 1,
    .shapes = CONV_TRANSPOSED,
    .check = col2im_check,
    .create = col2im_create,
    .run = col2im_run,
    .destroy = col2im_destroy,
};
