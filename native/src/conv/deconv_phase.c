/* Transposed convolution by phases (sub-pixel decomposition): output pixels
 * whose coordinates have the same residues (oy + pad_top) mod stride_h and
 * (ox + pad_left) mod stride_w receive the same taps, so each such phase is an
 * ordinary stride-1 convolution of the input with the sub-kernel of those
 * taps.  None of the zeros that upsampling the input would insert is
 * multiplied.
 *
 * Each phase runs as the indirect algorithm does: per output pixel, pointers
 * to the input pixels its taps read (a zero row outside the input), the
 * hybrid micro-kernel reading its rows through them tap by tap.  One GEMM job
 * covers one output row's pixels of one column phase (and one group): they are
 * stride_w pixels apart, so C is the real output with ldc = stride_w * oc and
 * the epilogue fuses as in any convolution.  Pixels of a phase without taps
 * (a kernel narrower than the stride) get the epilogue of zero. */
#include <stdlib.h>

#include "conv_impl.h"

/* The taps of one kernel axis by residue: residue r (tap * dil = r mod
 * stride) has taps tap[start[r]] .. tap[start[r + 1] - 1], ascending. */
typedef struct {
    int *start, *tap;
} axis_phases;

/* Where a GEMM job's rows are, within each run's pointers and output. */
typedef struct {
    size_t ptr_at;  /* its first row's pointers, in the indirection buffer */
    size_t out_at;  /* its first pixel's first channel of the group, in the output */
} phase_job;

typedef struct {
    axis_phases ph, pw;
    int empty;                 /* some phase has no taps */
    conv_transposed_map map;   /* when empty: the walk that writes act(bias + residual) */
    conv_indirection ind;      /* rows of one pointer: a job's pointers are not uniform */
    acl_packed_b *b;           /* per (row phase, column phase, group); data NULL without taps */
    int njobs;
    phase_job *where;
    acl_gemm_job *jobs;        /* B, M, A's group offset, ldc and bias set at create */
} phase_state;

static int phase_check(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                       const acl_ukernel *uk)
{
    return conv_check_row_ukernel(self->name, uk, d->cg, d->ocg);
}

static int axis_phases_init(axis_phases *a, int k, int stride, int dil)
{
    a->start = calloc((size_t)stride + 1, sizeof *a->start);
    a->tap = calloc((size_t)k, sizeof *a->tap);
    if (!a->start || !a->tap) return acl_fail("out of memory creating deconv_phase");
    int n = 0;
    for (int r = 0; r < stride; r++) {
        a->start[r] = n;
        for (int t = 0; t < k; t++)
            if ((long)t * dil % stride == r) a->tap[n++] = t;
    }
    a->start[stride] = n;
    return 0;
}

static int axis_count(const axis_phases *a, int r) { return a->start[r + 1] - a->start[r]; }

/* The phase of output coordinate o, and the first output coordinate of phase r. */
static int phase_of(int o, int pad, int stride) { return (o + pad) % stride; }
static int phase_first(int r, int pad, int stride)
{
    return ((r - pad) % stride + stride) % stride;
}

/* Output pixels of column phase rx in one row. */
static int phase_width(const acl_conv *conv, int rx)
{
    const int first = phase_first(rx, conv->s.pad_left, conv->s.stride_w);
    return first < conv->d.ow ? acl_div_up(conv->d.ow - first, conv->s.stride_w) : 0;
}

/* Sub-kernel (ry, rx) of group g packed as B(tap * cg + ci, j). */
static int pack_phase(phase_state *st, const acl_conv *conv, const float *weight, int ry, int rx,
                      int g, float *sub, acl_packed_b *out)
{
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
    const int ny = axis_count(&st->ph, ry), nx = axis_count(&st->pw, rx);
    if (!ny || !nx) return 0;
    for (int a = 0; a < ny; a++)
        for (int c = 0; c < nx; c++) {
            const int ky = st->ph.tap[st->ph.start[ry] + a], kx = st->pw.tap[st->pw.start[rx] + c];
            for (int ci = 0; ci < d->cg; ci++)
                for (int j = 0; j < d->ocg; j++)
                    sub[(((size_t)a * nx + c) * d->cg + ci) * d->ocg + j] =
                        weight[(((size_t)g * d->cg + ci) * d->ocg + j) * d->taps + ky * s->kw + kx];
        }
    return acl_pack_b(conv->uk, ny * nx, d->cg, d->ocg, sub, 1, d->ocg, (ptrdiff_t)d->cg * d->ocg,
                      out);
}

/* Walks the (batch, output row, column phase) triples that have taps and
 * pixels; `fill` set, it writes their pointers' pixels and their jobs,
 * otherwise it only counts them. */
static void walk_jobs(phase_state *st, const acl_conv *conv, int fill, size_t *pointers)
{
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
    int32_t *pixel = fill ? st->ind.pixel : NULL;
    size_t ptr = 0;
    int job = 0;
    for (int b = 0; b < s->n; b++)
        for (int oy = 0; oy < d->oh; oy++) {
            const int ry = phase_of(oy, s->pad_top, s->stride_h), ny = axis_count(&st->ph, ry);
            for (int rx = 0; rx < s->stride_w; rx++) {
                const int nx = axis_count(&st->pw, rx), width = phase_width(conv, rx);
                if (!ny || !nx || !width) continue;
                const int ox0 = phase_first(rx, s->pad_left, s->stride_w);
                for (int g = 0; fill && g < s->group; g++) {
                    const size_t pixel0 = (size_t)(b * d->oh + oy) * d->ow + ox0;
                    st->where[job + g] = (phase_job){ptr, pixel0 * s->oc + (size_t)g * d->ocg};
                    st->jobs[job + g] = (acl_gemm_job){
                        .b = &st->b[(ry * s->stride_w + rx) * s->group + g],
                        .a = {.offset = (ptrdiff_t)g * d->cg},
                        .m = width,
                        .ldc = (ptrdiff_t)s->stride_w * s->oc,
                        .ep = conv_gemm_epilogue(conv, (ptrdiff_t)g * d->ocg, NULL),
                    };
                }
                job += s->group;
                if (!fill) {
                    ptr += (size_t)width * ny * nx;
                    continue;
                }
                for (int p = 0; p < width; p++) {
                    const int ox = ox0 + p * s->stride_w;
                    for (int a = 0; a < ny; a++) {
                        /* Exact: the tap is of this row's phase. */
                        const int iy =
                            (oy + s->pad_top - st->ph.tap[st->ph.start[ry] + a] * s->dil_h) /
                            s->stride_h;
                        for (int c = 0; c < nx; c++) {
                            const int ix =
                                (ox + s->pad_left - st->pw.tap[st->pw.start[rx] + c] * s->dil_w) /
                                s->stride_w;
                            const int inside = iy >= 0 && iy < s->h && ix >= 0 && ix < s->w;
                            pixel[ptr++] = inside ? (b * s->h + iy) * s->w + ix : -1;
                        }
                    }
                }
            }
        }
    st->njobs = job;
    *pointers = ptr;
}

static int phase_create(acl_conv *conv, const float *weight)
{
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
    phase_state *st = calloc(1, sizeof *st);
    if (!(conv->impl = st)) return acl_fail("out of memory creating deconv_phase");
    if (axis_phases_init(&st->ph, s->kh, s->stride_h, s->dil_h) != 0 ||
        axis_phases_init(&st->pw, s->kw, s->stride_w, s->dil_w) != 0)
        return -1;
    for (int r = 0; r < s->stride_h; r++) st->empty |= !axis_count(&st->ph, r);
    for (int r = 0; r < s->stride_w; r++) st->empty |= !axis_count(&st->pw, r);
    if (st->empty && conv_transposed_map_init(&st->map, conv) != 0) return -1;
    size_t pointers;
    walk_jobs(st, conv, 0, &pointers);
    if (pointers > INT32_MAX)
        return acl_fail("deconv_phase: %zu indirection pointers, more than %d", pointers,
                        INT32_MAX);
    if (conv_indirection_alloc(&st->ind, conv, (int)pointers, 1) != 0) return -1;
    const int nb = s->stride_h * s->stride_w * s->group;
    st->b = calloc((size_t)nb, sizeof *st->b);
    st->where = calloc((size_t)st->njobs + 1, sizeof *st->where);
    st->jobs = calloc((size_t)st->njobs + 1, sizeof *st->jobs);
    float *sub = acl_alloc((size_t)d->taps * d->cg * d->ocg * sizeof(float));
    int rc = 0;
    if (!st->b || !st->where || !st->jobs || !sub)
        rc = acl_fail("out of memory creating deconv_phase");
    for (int i = 0; rc == 0 && i < nb; i++)
        rc = pack_phase(st, conv, weight, i / s->group / s->stride_w, i / s->group % s->stride_w,
                        i % s->group, sub, &st->b[i]);
    acl_free(sub);
    if (rc != 0) return -1;
    walk_jobs(st, conv, 1, &pointers);
    return 0;
}

static int phase_run(acl_conv *conv, const acl_exec *ex, const conv_io *io, acl_stage_times *t)
{
    phase_state *st = conv->impl;
    const acl_conv_shape *s = &conv->s;
    const conv_dims *d = &conv->d;
    if (st->empty) {
        /* Every pixel gets act(bias + residual), which the GEMM overwrites
         * where the taps land: one more pass over the output for the rare
         * kernel narrower than its stride. */
        conv_transposed_walk walk = {conv, &st->map, io, NULL, NULL};
        if (conv_stage(ex, s->n * d->oh, conv_transposed_rows, &walk, &t->pre_ms) != 0) return -1;
    }
    if (!st->njobs) return 0;
    const float *const *rows = conv_indirection_rebase(&st->ind, ex, io, &t->pre_ms);
    if (!rows) return -1;
    for (int j = 0; j < st->njobs; j++) {
        const phase_job *w = &st->where[j];
        st->jobs[j].a.rows = rows + w->ptr_at;
        st->jobs[j].c = io->y + w->out_at;
        st->jobs[j].ep.residual = io->residual ? io->residual + w->out_at : NULL;
    }
    acl_gemm_batch batch;
    if (acl_gemm_batch_init(&batch, st->jobs, st->njobs, ex->workloads) != 0) return -1;
    double ms = 0;
    if (acl_gemm_batch_compute(&batch, ex, &ms) != 0) return -1;
    t->gemm_ms += ms;
    return 0;
}

static void phase_destroy(acl_conv *conv)
{
    phase_state *st = conv->impl;
    for (int i = 0; st->b && i < conv->s.stride_h * conv->s.stride_w * conv->s.group; i++)
        acl_packed_b_free(&st->b[i]);
    free(st->b);
    free(st->where);
    free(st->jobs);
    conv_indirection_destroy(&st->ind);
    free(st->ph.start);
    free(st->ph.tap);
    free(st->pw.start);
    free(st->pw.tap);
    conv_transposed_map_free(&st->map);
    free(st);
}

const conv_algo conv_deconv_phase = {
    .name = "deconv_phase",
    .uses_ukernel = 1,
    .shapes = CONV_TRANSPOSED,
    .check = phase_check,
    .create = phase_create,
    .run = phase_run,
    .destroy = phase_destroy,
};
