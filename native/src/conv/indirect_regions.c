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
 * indirection.  One GEMM job per region and group covers the region's pixels
 * over the batch: its C rows go to a region-ordered copy of the output in
 * the scratch, copied into place afterwards (and the residual out of place
 * before), one run of a row's pixels at a time.  Jobs of one output row's
 * stretch could write in place, but would stream the region's whole B for
 * every few rows, where the macro-kernel reuses it over 128: at rate 12 on
 * 24x24, 48 stretches of 12 pixels each read a B of 2 MB, 96 MB a run
 * against 16 MB.  The x86 host reads that from its L3 at the same speed; a
 * board without one would read it from memory.  Output pixels that no tap
 * reaches (a pad wider than the kernel) take the bias alone. */
#include <stdlib.h>
#include <string.h>

#include "conv_impl.h"

/* Output coordinates [o0, o1) of one axis, whose taps inside are [k0, k1). */
typedef struct {
    int o0, o1, k0, k1;
} tap_segment;

/* Row pointers per rebase unit. */
#define POINTER_CHUNK 1024

typedef struct {
    int nys, nxs;
    tap_segment *ys, *xs;
    int *first;             /* [ys][xs]: the region's first row of the region-ordered output */
    acl_packed_b *b;        /* [ys][xs][group]; no data for a region without taps */
    int njobs;
    acl_gemm_job *jobs;     /* [region with taps][group] */
    size_t *job_ptr;        /* per job: its first row pointer */
    int *job_row;           /* per job: its first row of the region-ordered output */
    int *tapless;           /* output pixels no tap reaches */
    int ntapless;
    float *zero;            /* oc zeros: the sums of a tapless pixel */
    conv_indirection ind;   /* region by region: each pixel's taps */
    size_t out_at, res_at;  /* scratch: the region-ordered output and residual */
} regions_state;

/* The segments of one axis of `out` outputs; returns how many (<= out). */
static int axis_segments(int out, int stride, int pad, int dil, int k, int n, tap_segment *seg)
{
    int count = 0;
    for (int o = 0; o < out; o++) {
        int k0, k1;
        conv_taps_inside(o, stride, pad, dil, k, n, &k0, &k1);
        if (k1 <= k0) k0 = k1 = 0;  /* no tap: one kind of empty */
        if (count && seg[count - 1].k0 == k0 && seg[count - 1].k1 == k1) seg[count - 1].o1 = o + 1;
        else seg[count++] = (tap_segment){o, o + 1, k0, k1};
    }
    return count;
}

static int regions_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                         const acl_ukernel *uk)
{
    if (s->dil_h == 1 && s->dil_w == 1)
        return acl_fail("%s takes dilated kernels (dil_h or dil_w > 1); indirect runs the "
                        "others",
                        self->name);
    return conv_check_row_ukernel(self->name, uk, d->cg, d->ocg);
}

static int taps_of(const tap_segment *y, const tap_segment *x)
{
    return (y->k1 - y->k0) * (x->k1 - x->k0);
}

static int length(const tap_segment *seg) { return seg->o1 - seg->o0; }

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

/* The jobs, each region's rows and row pointers' pixels, and the tapless
 * pixels. */
static int map_regions(acl_conv *conv, regions_state *st)
{
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
    const int nregions = st->nys * st->nxs;
    st->first = calloc((size_t)nregions, sizeof *st->first);
    st->jobs = calloc((size_t)nregions * s->group, sizeof *st->jobs);
    st->job_ptr = calloc((size_t)nregions * s->group, sizeof *st->job_ptr);
    st->job_row = calloc((size_t)nregions * s->group, sizeof *st->job_row);
    st->tapless = calloc((size_t)d->m, sizeof *st->tapless);
    if (!st->first || !st->jobs || !st->job_ptr || !st->job_row || !st->tapless)
        return acl_fail("out of memory creating %s", conv->algo->name);
    size_t ptrs = 0;
    int rows = 0;
    for (int i = 0; i < nregions; i++) {
        const tap_segment *ys = &st->ys[i / st->nxs], *xs = &st->xs[i % st->nxs];
        const int ks = taps_of(ys, xs), m = s->n * length(ys) * length(xs);
        st->first[i] = rows;
        if (!ks) continue;
        for (int g = 0; g < s->group; g++, st->njobs++) {
            st->job_ptr[st->njobs] = ptrs;
            st->job_row[st->njobs] = rows;
            st->jobs[st->njobs] =
                (acl_gemm_job){.b = &st->b[(size_t)i * s->group + g], .m = m, .ldc = s->oc};
        }
        ptrs += (size_t)m * ks;
        rows += m;
    }
    const int chunks = (int)acl_max(1, (ptrs + POINTER_CHUNK - 1) / POINTER_CHUNK);
    if (conv_indirection_alloc(&st->ind, conv, chunks, POINTER_CHUNK) != 0) return -1;
    st->out_at = conv_scratch_reserve(conv, (size_t)rows * s->oc * sizeof(float));
    if (s->has_residual)
        st->res_at = conv_scratch_reserve(conv, (size_t)rows * s->oc * sizeof(float));
    int32_t *p = st->ind.pixel;
    for (int i = 0; i < nregions; i++) {
        const tap_segment *ys = &st->ys[i / st->nxs], *xs = &st->xs[i % st->nxs];
        for (int b = 0; b < s->n; b++)
            for (int oy = ys->o0; oy < ys->o1; oy++)
                for (int ox = xs->o0; ox < xs->o1; ox++) {
                    if (!taps_of(ys, xs)) {
                        st->tapless[st->ntapless++] = (b * d->oh + oy) * d->ow + ox;
                        continue;
                    }
                    for (int ky = ys->k0; ky < ys->k1; ky++)
                        for (int kx = xs->k0; kx < xs->k1; kx++) {
                            const int iy = oy * s->stride_h - s->pad_top + ky * s->dil_h;
                            const int ix = ox * s->stride_w - s->pad_left + kx * s->dil_w;
                            *p++ = (b * s->h + iy) * s->w + ix;
                        }
                }
    }
    for (int32_t *end = st->ind.pixel + (size_t)chunks * POINTER_CHUNK; p < end;) *p++ = -1;
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

/* Copies between the output's (or residual's) rows and the region order:
 * each output row's run of pixels in each region with taps is one copy. */
typedef struct {
    const acl_conv *conv;
    float *tensor;   /* NHWC output, or the residual */
    float *ordered;  /* region-ordered rows */
    int to_tensor;
} reorder_ctx;

static void reorder_rows(void *arg, int begin, int end, int worker)
{
    const reorder_ctx *ctx = arg;
    const acl_conv *conv = ctx->conv;
    const regions_state *st = conv->impl;
    const int oh = conv->d.oh, ow = conv->d.ow, oc = conv->s.oc;
    for (int row = begin; row < end; row++) {
        const int b = row / oh, oy = row % oh;
        int y = 0;
        while (oy >= st->ys[y].o1) y++;
        const tap_segment *ys = &st->ys[y];
        for (int x = 0; x < st->nxs; x++) {
            const tap_segment *xs = &st->xs[x];
            if (!taps_of(ys, xs)) continue;
            const int ordered_row =
                st->first[y * st->nxs + x] + (b * length(ys) + oy - ys->o0) * length(xs);
            float *t = ctx->tensor + ((size_t)row * ow + xs->o0) * oc;
            float *o = ctx->ordered + (size_t)ordered_row * oc;
            const size_t bytes = (size_t)length(xs) * oc * sizeof(float);
            if (ctx->to_tensor) memcpy(t, o, bytes);
            else memcpy(o, t, bytes);
        }
    }
}

static int regions_run(acl_conv *conv, const acl_exec *ex, const conv_io *io, acl_stage_times *t)
{
    regions_state *st = conv->impl;
    const acl_conv_shape *s = &conv->s;
    const int rows = s->n * conv->d.oh;
    const float *const *ptrs = conv_indirection_rebase(&st->ind, ex, io, &t->pre_ms);
    if (!ptrs) return -1;
    float *out = conv_scratch_at(io, st->out_at);
    float *res = io->residual ? conv_scratch_at(io, st->res_at) : NULL;
    if (res) {
        reorder_ctx in = {conv, (float *)io->residual, res, 0};
        if (conv_stage(ex, rows, reorder_rows, &in, &t->pre_ms) != 0) return -1;
    }
    for (int j = 0; j < st->njobs; j++) {
        const int g = j % s->group;
        const ptrdiff_t at = (ptrdiff_t)st->job_row[j] * s->oc + (ptrdiff_t)g * conv->d.ocg;
        acl_gemm_job *job = &st->jobs[j];
        job->a = (acl_a_source){.rows = ptrs + st->job_ptr[j], .offset = (ptrdiff_t)g * conv->d.cg};
        job->c = out + at;
        job->ep = conv_gemm_epilogue(conv, (ptrdiff_t)g * conv->d.ocg, res ? res + at : NULL);
    }
    for (int i = 0; i < st->ntapless; i++) {
        const size_t at = (size_t)st->tapless[i] * s->oc;
        conv_finish(s, io->y + at, st->zero, conv->bias, io->residual ? io->residual + at : NULL,
                    s->oc);
    }
    acl_gemm_batch batch;
    if (st->njobs && (acl_gemm_batch_init(&batch, st->jobs, st->njobs, ex->workloads) != 0 ||
                      acl_gemm_batch_compute(&batch, ex, &t->gemm_ms) != 0))
        return -1;
    reorder_ctx back = {conv, io->y, out, 1};
    return conv_stage(ex, rows, reorder_rows, &back, &t->post_ms);
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
    free(st->first);
    free(st->jobs);
    free(st->job_ptr);
    free(st->job_row);
    free(st->tapless);
    acl_free(st->zero);
    free(st);
}

const conv_algo conv_indirect_regions = {
    .name = "indirect_regions",
    .uses_ukernel = 1,
    .check = regions_check,
    .create = regions_create,
    .run = regions_run,
    .destroy = regions_destroy,
};
