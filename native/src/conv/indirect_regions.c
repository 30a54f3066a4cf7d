/* Indirect convolution without its padding taps, for dilated kernels.  A
 * dilated convolution reads mostly padding: a 3x3 at rate 24 on a 24x24 map
 * is a 1x1 on every output pixel, and at rate 12 each pixel reads 4 of its 9
 * taps; indirect multiplies a zero row for each of the others.
 *
 * Along one axis the taps inside the input, [k0, k1) (conv_taps_inside),
 * only move down as the output coordinate grows, so an axis is a few
 * segments of output coordinates with the same taps, and the output a grid of
 * regions, one per (row segment, column segment).  Each region's B holds its
 * taps alone, packed at create; A reads only those taps through the
 * indirection.  A GEMM job is one output row's stretch of a column segment
 * and one group, so that its C rows are evenly spaced.  Output pixels that no
 * tap reaches (a pad wider than the kernel) take the bias alone. */
#include <stdlib.h>
#include <string.h>

#include "conv_impl.h"

/* Output coordinates [o0, o1) of one axis, whose taps inside are [k0, k1). */
typedef struct {
    int o0, o1, k0, k1;
} tap_segment;

/* Where a job's operands are, fixed at create; the run adds the tensors. */
typedef struct {
    size_t ptr;  /* first row pointer of the job's pixels */
    int pixel;   /* first output pixel */
    int group;
} region_job;

typedef struct {
    int nys, nxs;
    tap_segment *ys, *xs;
    acl_packed_b *b;        /* [ys][xs][group]; no data for a region without taps */
    int njobs;
    region_job *where;      /* per job */
    acl_gemm_job *jobs;     /* per job, pointed at each run's tensors */
    int *tapless;           /* output pixels no tap reaches */
    int ntapless;
    float *zero;            /* oc zeros: the sums of a tapless pixel */
    conv_indirection ind;   /* per output row: its segments' pixels and taps in turn */
} regions_state;

/* The segments of one axis of `out` outputs; returns how many (<= out). */
static int axis_segments(int out, int stride, int pad, int dil, int k, int n, tap_segment *seg)
{
    int count = 0;
    for (int o = 0; o < out; o++) {
        int k0, k1;
        conv_taps_inside(o, stride, pad, dil, k, n, &k0, &k1);
        if (k1 <= k0) k0 = k1 = 0;  /* no tap: one kind of empty */
        if (count && seg[count - 1].k0 == k0 && seg[count - 1].k1 == k1)
            seg[count - 1].o1 = o + 1;
        else
            seg[count++] = (tap_segment){o, o + 1, k0, k1};
    }
    return count;
}

static int regions_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                         const acl_ukernel *uk)
{
    if (s->dil_h == 1 && s->dil_w == 1)
        return acl_fail("%s takes dilated kernels (dil_h or dil_w > 1); indirect runs the "
                        "others", self->name);
    return conv_check_row_ukernel(self->name, uk, d->cg, d->ocg);
}

static int taps_of(const tap_segment *y, const tap_segment *x)
{
    return (y->k1 - y->k0) * (x->k1 - x->k0);
}

/* Packs every region's B: its taps of each group, ky then kx as indirect's. */
static int pack_regions(acl_conv *conv, regions_state *st, const float *weight)
{
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
    float *taps = acl_alloc((size_t)s->oc * d->cg * d->taps * sizeof(float));
    if (!taps) return -1;
    int rc = 0;
    for (int i = 0; rc == 0 && i < st->nys * st->nxs; i++) {
        const tap_segment *ys = &st->ys[i / st->nxs], *xs = &st->xs[i % st->nxs];
        const int ks = taps_of(ys, xs);
        if (!ks) continue;
        /* OIHW [oc][Cg][kh][kw] -> [oc][Cg][the region's taps] */
        float *dst = taps;
        for (size_t oc_ci = 0; oc_ci < (size_t)s->oc * d->cg; oc_ci++)
            for (int ky = ys->k0; ky < ys->k1; ky++)
                for (int kx = xs->k0; kx < xs->k1; kx++)
                    *dst++ = weight[oc_ci * d->taps + ky * s->kw + kx];
        const size_t group_floats = (size_t)d->ocg * d->cg * ks;
        for (int g = 0; rc == 0 && g < s->group; g++)
            rc = acl_pack_b(conv->uk, ks, d->cg, d->ocg, taps + g * group_floats,
                            (ptrdiff_t)d->cg * ks, ks, 1, &st->b[(size_t)i * s->group + g]);
    }
    acl_free(taps);
    return rc;
}

/* The row pointers' pixels, the jobs and the tapless pixels. */
static int map_regions(acl_conv *conv, regions_state *st)
{
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
    int row_ptrs = 0;  /* the most pointers an output row needs */
    for (int y = 0; y < st->nys; y++) {
        int ptrs = 0;
        for (int x = 0; x < st->nxs; x++)
            ptrs += (st->xs[x].o1 - st->xs[x].o0) * taps_of(&st->ys[y], &st->xs[x]);
        row_ptrs = acl_max(row_ptrs, ptrs);
    }
    if (conv_indirection_alloc(&st->ind, conv, s->n * d->oh, acl_max(1, row_ptrs)) != 0)
        return -1;
    const int rows = s->n * d->oh;
    st->where = calloc((size_t)rows * st->nxs * s->group, sizeof *st->where);
    st->jobs = calloc((size_t)rows * st->nxs * s->group, sizeof *st->jobs);
    st->tapless = calloc((size_t)d->m, sizeof *st->tapless);
    if (!st->where || !st->jobs || !st->tapless)
        return acl_fail("out of memory creating %s", conv->algo->name);
    for (int row = 0; row < rows; row++) {
        const int b = row / d->oh, oy = row % d->oh;
        int y = 0;
        while (oy >= st->ys[y].o1) y++;
        const tap_segment *ys = &st->ys[y];
        int32_t *p = st->ind.pixel + (size_t)row * st->ind.ptrs_per_row;
        int32_t *end = p + st->ind.ptrs_per_row;
        for (int x = 0; x < st->nxs; x++) {
            const tap_segment *xs = &st->xs[x];
            const int pixel = row * d->ow + xs->o0;
            if (!taps_of(ys, xs)) {
                for (int ox = xs->o0; ox < xs->o1; ox++)
                    st->tapless[st->ntapless++] = pixel + ox - xs->o0;
                continue;
            }
            for (int g = 0; g < s->group; g++) {
                const acl_packed_b *bg = &st->b[((size_t)y * st->nxs + x) * s->group + g];
                st->where[st->njobs] = (region_job){
                    .ptr = (size_t)(p - st->ind.pixel), .pixel = pixel, .group = g};
                st->jobs[st->njobs++] = (acl_gemm_job){.b = bg, .m = xs->o1 - xs->o0,
                                                       .ldc = s->oc};
            }
            for (int ox = xs->o0; ox < xs->o1; ox++)
                for (int ky = ys->k0; ky < ys->k1; ky++)
                    for (int kx = xs->k0; kx < xs->k1; kx++) {
                        const int iy = oy * s->stride_h - s->pad_top + ky * s->dil_h;
                        const int ix = ox * s->stride_w - s->pad_left + kx * s->dil_w;
                        *p++ = (b * s->h + iy) * s->w + ix;
                    }
        }
        while (p < end) *p++ = -1;  /* rows with fewer taps than the most */
    }
    if (st->ntapless) {
        st->zero = acl_alloc((size_t)s->oc * sizeof(float));
        if (!st->zero) return -1;
        memset(st->zero, 0, (size_t)s->oc * sizeof(float));
    }
    return 0;
}

static int regions_create(acl_conv *conv, const float *weight)
{
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
    regions_state *st = calloc(1, sizeof *st);
    if (!(conv->impl = st)) return acl_fail("out of memory creating %s", conv->algo->name);
    st->ys = calloc((size_t)d->oh, sizeof *st->ys);
    st->xs = calloc((size_t)d->ow, sizeof *st->xs);
    if (!st->ys || !st->xs) return acl_fail("out of memory creating %s", conv->algo->name);
    st->nys = axis_segments(d->oh, s->stride_h, s->pad_top, s->dil_h, s->kh, s->h, st->ys);
    st->nxs = axis_segments(d->ow, s->stride_w, s->pad_left, s->dil_w, s->kw, s->w, st->xs);
    st->b = calloc((size_t)st->nys * st->nxs * s->group, sizeof *st->b);
    if (!st->b) return acl_fail("out of memory creating %s", conv->algo->name);
    if (pack_regions(conv, st, weight) != 0) return -1;
    return map_regions(conv, st);
}

static int regions_run(acl_conv *conv, const acl_exec *ex, const conv_io *io, acl_stage_times *t)
{
    regions_state *st = conv->impl;
    const acl_conv_shape *s = &conv->s;
    const float *const *ptrs = conv_indirection_rebase(&st->ind, ex, io, &t->pre_ms);
    if (!ptrs) return -1;
    for (int j = 0; j < st->njobs; j++) {
        const region_job *w = &st->where[j];
        const ptrdiff_t at = (ptrdiff_t)w->pixel * s->oc + (ptrdiff_t)w->group * conv->d.ocg;
        acl_gemm_job *job = &st->jobs[j];
        job->a = (acl_a_source){.rows = ptrs + w->ptr, .offset = (ptrdiff_t)w->group * conv->d.cg};
        job->c = io->y + at;
        job->ep = conv_gemm_epilogue(conv, (ptrdiff_t)w->group * conv->d.ocg,
                                     io->residual ? io->residual + at : NULL);
    }
    for (int i = 0; i < st->ntapless; i++) {
        const size_t at = (size_t)st->tapless[i] * s->oc;
        conv_finish(s, io->y + at, st->zero, conv->bias, io->residual ? io->residual + at : NULL,
                    s->oc);
    }
    acl_gemm_batch batch;
    if (acl_gemm_batch_init(&batch, st->jobs, st->njobs, ex->workloads) != 0) return -1;
    return acl_gemm_batch_compute(&batch, ex, &t->gemm_ms);
}

static void regions_destroy(acl_conv *conv)
{
    regions_state *st = conv->impl;
    for (size_t i = 0; st->b && i < (size_t)st->nys * st->nxs * conv->s.group; i++)
        if (st->b[i].data) acl_packed_b_free(&st->b[i]);
    conv_indirection_destroy(&st->ind);
    free(st->b);
    free(st->ys);
    free(st->xs);
    free(st->where);
    free(st->jobs);
    free(st->tapless);
    acl_free(st->zero);
    free(st);
}

const conv_algo conv_indirect_regions = {
    .name = "indirect_regions", .uses_ukernel = 1,
    .check = regions_check, .create = regions_create,
    .run = regions_run, .destroy = regions_destroy,
};
