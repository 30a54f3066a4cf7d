/* Indirection buffers: the input pixel each tap of each output pixel reads. */
#include <string.h>

#include "conv_impl.h"

/* The pixel indices and the zero row, without the pointers. */
static int pixel_buffers(conv_indirection *ind, const acl_conv *conv, int rows, int ptrs_per_row)
{
    const acl_conv_shape *s = &conv->s;
    ind->rows = rows;
    ind->ptrs_per_row = ptrs_per_row;
    ind->c = s->c;
    ind->pixel = acl_alloc((size_t)rows * ptrs_per_row * sizeof *ind->pixel);
    ind->zero = acl_alloc((size_t)s->c * sizeof(float));
    if (!ind->pixel || !ind->zero) return -1;
    memset(ind->zero, 0, (size_t)s->c * sizeof(float));
    return 0;
}

int conv_indirection_alloc(conv_indirection *ind, acl_conv *conv, int rows, int ptrs_per_row)
{
    ind->ptr_at = conv_scratch_reserve(conv, (size_t)rows * ptrs_per_row * sizeof(const float *));
    return pixel_buffers(ind, conv, rows, ptrs_per_row);
}

static void fill_pixels(conv_indirection *ind, const acl_conv *conv)
{
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
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
}

int conv_indirection_create(conv_indirection *ind, acl_conv *conv)
{
    if (conv_indirection_alloc(ind, conv, conv->s.n * conv->d.oh, conv->d.ow * conv->d.taps) != 0)
        return -1;
    fill_pixels(ind, conv);
    return 0;
}

int conv_indirection_pixels(conv_indirection *ind, const acl_conv *conv)
{
    if (pixel_buffers(ind, conv, conv->s.n * conv->d.oh, conv->d.ow * conv->d.taps) != 0) return -1;
    fill_pixels(ind, conv);
    return 0;
}

typedef struct {
    const conv_indirection *ind;
    const float *x;
    const float **ptr;
} rebase_ctx;

static void rebase_rows(void *arg, int begin, int end, int worker)
{
    const rebase_ctx *ctx = arg;
    const conv_indirection *ind = ctx->ind;
    size_t first = (size_t)begin * ind->ptrs_per_row, last = (size_t)end * ind->ptrs_per_row;
    for (size_t i = first; i < last; i++)
        ctx->ptr[i] = ind->pixel[i] < 0 ? ind->zero : ctx->x + (ptrdiff_t)ind->pixel[i] * ind->c;
}

const float *const *conv_indirection_rebase(const conv_indirection *ind, const acl_exec *ex,
                                            const conv_io *io, double *ms)
{
    rebase_ctx ctx = {ind, io->x, conv_scratch_at(io, ind->ptr_at)};
    return conv_stage(ex, ind->rows, rebase_rows, &ctx, ms) == 0 ? ctx.ptr : NULL;
}

void conv_indirection_destroy(conv_indirection *ind)
{
    acl_free(ind->pixel);
    acl_free(ind->zero);
}
