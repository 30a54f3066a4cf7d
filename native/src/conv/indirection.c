/* Indirection buffers: the input pixel each tap of each output pixel reads. */
#include <string.h>

#include "conv_impl.h"

int conv_indirection_create(conv_indirection *ind, const acl_conv_shape *s, const conv_dims *d)
{
    ind->rows = s->n * d->oh;
    ind->ptrs_per_row = d->ow * d->taps;
    ind->c = s->c;
    size_t count = (size_t)d->m * d->taps;
    ind->pixel = acl_alloc(count * sizeof *ind->pixel);
    ind->ptr = acl_alloc(count * sizeof *ind->ptr);
    ind->zero = acl_alloc((size_t)s->c * sizeof(float));
    if (!ind->pixel || !ind->ptr || !ind->zero) return -1;
    memset(ind->zero, 0, (size_t)s->c * sizeof(float));
    int32_t *p = ind->pixel;
    for (int b = 0; b < s->n; b++)
        for (int oy = 0; oy < d->oh; oy++)
            for (int ox = 0; ox < d->ow; ox++)
                for (int ky = 0; ky < s->kh; ky++)
                    for (int kx = 0; kx < s->kw; kx++) {
                        int iy = oy * s->stride_h - s->pad_top + ky * s->dil_h;
                        int ix = ox * s->stride_w - s->pad_left + kx * s->dil_w;
                        int inside = iy >= 0 && iy < s->h && ix >= 0 && ix < s->w;
                        *p++ = inside ? (b * s->h + iy) * s->w + ix : -1;
                    }
    return 0;
}

typedef struct {
    conv_indirection *ind;
    const float *x;
} rebase_ctx;

static void rebase_rows(void *arg, int begin, int end, int worker)
{
    const rebase_ctx *ctx = arg;
    const conv_indirection *ind = ctx->ind;
    size_t first = (size_t)begin * ind->ptrs_per_row, last = (size_t)end * ind->ptrs_per_row;
    for (size_t i = first; i < last; i++)
        ind->ptr[i] = ind->pixel[i] < 0 ? ind->zero : ctx->x + (ptrdiff_t)ind->pixel[i] * ind->c;
}

int conv_indirection_rebase(conv_indirection *ind, const acl_exec *ex, const float *x, double *ms)
{
    rebase_ctx ctx = {ind, x};
    return conv_stage(ex, ind->rows, rebase_rows, &ctx, ms);
}

void conv_indirection_destroy(conv_indirection *ind)
{
    acl_free(ind->pixel);
    acl_free(ind->ptr);
    acl_free(ind->zero);
}
