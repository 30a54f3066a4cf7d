/* ONNX Resize / Upsample, nearest and linear, over the spatial axes of an
 * NHWC tensor (see aclgraph.h for the coordinate and rounding modes).
 *
 * At add time each output row and column gets its source pixels (and, for
 * linear, their weights), computed in float as onnxruntime does, so that a
 * run only gathers: channels are innermost, so every output pixel is a copy
 * of one input channel vector (nearest) or a weighted sum of four (linear),
 * both contiguous loops over the channels.  Nearest copies runs of output
 * columns that read consecutive input columns as one block, and an output row
 * reading the same input row as the row before it copies that row whole (a 2x
 * upsample computes every other row).  Work is split over (image, output
 * row) pairs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

/* Below this many floats an inline loop beats a call to memcpy. */
#define COPY_INLINE 16
/* Columns per chunk of the planar linear path: two rows of it on the stack. */
#define PLANAR_CHUNK 512
/* How far from a half a nearest coordinate still rounds as a tie. */
#define RESIZE_TIE 1e-6f

typedef struct {
    int linear;
    int n, oh, ow, c, nruns;
    size_t image, out_row;  /* floats of one input image, of one output row */
    const float *x;
    float *y;
    /* Per output row: the input rows read (offsets in floats inside an image)
     * and, for linear, their weights; row1 = row0 for nearest. */
    const int *row0, *row1;
    const float *wy0, *wy1;
    /* linear, per output column: the input columns read (offsets in floats
     * inside a row) and their weights. */
    const int *col0, *col1;
    const float *wx0, *wx1;
    /* nearest: runs of output columns that read consecutive input columns,
     * as (first output column, first input column, length), in floats. */
    const int *runs;
    void *tables;  /* one block holding every table above */
} resize_params;

static inline void copy_floats(float *restrict y, const float *restrict x, size_t n)
{
    if (n >= COPY_INLINE) {
        memcpy(y, x, n * sizeof *y);
        return;
    }
    for (size_t i = 0; i < n; i++) y[i] = x[i];
}

/* Rows are (image, output row) pairs. */
static void nearest_rows(const void *arg, size_t begin, size_t end)
{
    const resize_params *p = arg;
    for (size_t r = begin; r < end; r++) {
        const int oy = (int)(r % (size_t)p->oh);
        float *y = p->y + r * p->out_row;
        /* The previous row is this unit's own work, written already. */
        if (r > begin && oy > 0 && p->row0[oy] == p->row0[oy - 1]) {
            memcpy(y, y - p->out_row, p->out_row * sizeof *y);
            continue;
        }
        const float *x = p->x + (r / (size_t)p->oh) * p->image + (size_t)p->row0[oy];
        for (int i = 0; i < p->nruns; i++) {
            const int *run = p->runs + 3 * i;
            copy_floats(y + run[0], x + run[1], (size_t)run[2]);
        }
    }
}

/* One output pixel from its four source channel vectors, weights as
 * onnxruntime applies them. */
static inline void mix4(float *restrict y, const float *restrict a, const float *restrict b,
                        const float *restrict c, const float *restrict d, float wa, float wb,
                        float wc, float wd, int n)
{
    for (int ch = 0; ch < n; ch++) y[ch] = wa * a[ch] + wb * b[ch] + wc * c[ch] + wd * d[ch];
}

/* Columns [x0, x0 + cols) of input row `row` interpolated along W. */
static void interpolate_row(const resize_params *p, const float *row, int x0, int cols, float *out)
{
    for (int i = 0; i < cols; i++)
        out[i] = p->wx0[x0 + i] * row[p->col0[x0 + i]] + p->wx1[x0 + i] * row[p->col1[x0 + i]];
}

/* Linear resizing of an NCHW map seen as [N*C, H, W, 1], one float per pixel:
 * each output row blends two input rows interpolated along W, computed once
 * for all the output rows in a run that read them (seven in eight of an 8x
 * upsample reuse them), a chunk of columns at a time.  Per pixel that is two
 * multiply-adds of contiguous rows instead of four gathers; it rounds
 * differently from the four products by an ulp or so. */
static void linear_rows_planar(const resize_params *p, size_t begin, size_t end)
{
    float rows[2][PLANAR_CHUNK];
    for (int x0 = 0; x0 < p->ow; x0 += PLANAR_CHUNK) {
        const int cols = acl_min(PLANAR_CHUNK, p->ow - x0);
        float *top = rows[0], *bottom = rows[1];
        const float *top_src = NULL, *bottom_src = NULL;
        for (size_t r = begin; r < end; r++) {
            const int oy = (int)(r % (size_t)p->oh);
            const float *image = p->x + (r / (size_t)p->oh) * p->image;
            const float *t = image + p->row0[oy], *b = image + p->row1[oy];
            if (t == bottom_src && t != top_src) { /* moving down: the bottom row is the new top */
                float *swap = top;
                top = bottom;
                bottom = swap;
                bottom_src = top_src;
                top_src = t;
            }
            if (t != top_src) interpolate_row(p, t, x0, cols, top);
            if (b != bottom_src) interpolate_row(p, b, x0, cols, bottom);
            top_src = t;
            bottom_src = b;
            const float wy0 = p->wy0[oy], wy1 = p->wy1[oy];
            float *y = p->y + r * p->out_row + x0;
            for (int i = 0; i < cols; i++) y[i] = wy0 * top[i] + wy1 * bottom[i];
        }
    }
}

static void linear_rows(const void *arg, size_t begin, size_t end)
{
    const resize_params *p = arg;
    const int c = p->c;
    if (c == 1) {
        linear_rows_planar(p, begin, end);
        return;
    }
    for (size_t r = begin; r < end; r++) {
        const int oy = (int)(r % (size_t)p->oh);
        const float *image = p->x + (r / (size_t)p->oh) * p->image;
        const float *top = image + p->row0[oy], *bottom = image + p->row1[oy];
        const float wy0 = p->wy0[oy], wy1 = p->wy1[oy];
        float *y = p->y + r * p->out_row;
        for (int ox = 0; ox < p->ow; ox++, y += c) {
            const int c0 = p->col0[ox], c1 = p->col1[ox];
            const float w0 = p->wx0[ox], w1 = p->wx1[ox];
            mix4(y, top + c0, top + c1, bottom + c0, bottom + c1, w0 * wy0, w1 * wy0, w0 * wy1,
                 w1 * wy1, c);
        }
    }
}

static int resize_run(const void *arg, const acl_exec *ex)
{
    const resize_params *p = arg;
    return graph_parallel(ex, (size_t)p->n * p->oh, p->out_row * (p->linear ? 4 : 1),
                          p->linear ? linear_rows : nearest_rows, p);
}

static void resize_release(void *arg)
{
    resize_params *p = arg;
    free(p->tables);
}

/* The input coordinate output pixel o reads along an axis (before clamping). */
static float source_coordinate(int coordinates, int o, float scale, int in, int out)
{
    const float xo = (float)o;
    switch (coordinates) {
    case ACL_RESIZE_PYTORCH_HALF_PIXEL: return out > 1 ? (xo + 0.5f) / scale - 0.5f : 0.0f;
    case ACL_RESIZE_ALIGN_CORNERS: return out == 1 ? 0.0f : xo * (float)(in - 1) / (float)(out - 1);
    case ACL_RESIZE_ASYMMETRIC: return xo / scale;
    case ACL_RESIZE_TF_HALF_PIXEL_FOR_NN: return (xo + 0.5f) / scale;
    default: return (xo + 0.5f) / scale - 0.5f; /* half_pixel */
    }
}

/* The input pixel nearest mode picks for coordinate v, clamped into [0, in).
 * A coordinate within RESIZE_TIE of a half counts as the half, as in
 * onnxruntime: a tie computed in float can land an ulp either side of it. */
static int nearest_source(int rounding, float v, float scale, int in)
{
    /* Clamping first leaves the clamped result alone and keeps v in int range. */
    v = fminf(fmaxf(v, -1.0f), (float)in);
    const float down = floorf(v);
    float r;
    switch (rounding) {
    case ACL_RESIZE_FLOOR: r = down; break;
    case ACL_RESIZE_CEIL: r = ceilf(v); break;
    case ACL_RESIZE_SIMPLE: r = scale < 1.0f ? ceilf(v) : truncf(v); break;
    default: /* round_prefer_floor, round_prefer_ceil */
        if (fabsf(v - down - 0.5f) <= RESIZE_TIE)
            r = rounding == ACL_RESIZE_ROUND_PREFER_CEIL ? down + 1.0f : down;
        else r = roundf(v);
        break;
    }
    return acl_max(0, acl_min((int)r, in - 1));
}

/* Output pixel o of an axis: its source pixels i0, i1 and their weights w0,
 * w1 (nearest: i1 = i0, w0 = 1, w1 = 0). */
static void axis_sources(const acl_resize_attrs *a, int o, float scale, int in, int out, int *i0,
                         int *i1, float *w0, float *w1)
{
    const float v =
        scale == 1.0f ? (float)o : source_coordinate(a->coordinate_mode, o, scale, in, out);
    if (a->mode == ACL_RESIZE_NEAREST) {
        *i0 = *i1 =
            scale == 1.0f ? acl_min(o, in - 1) : nearest_source(a->nearest_mode, v, scale, in);
        *w0 = 1.0f;
        *w1 = 0.0f;
        return;
    }
    const float clamped = fmaxf(0.0f, fminf(v, (float)(in - 1)));
    *i0 = acl_min((int)clamped, in - 1);
    *i1 = acl_min(*i0 + 1, in - 1);
    if (*i0 == *i1) {
        *w0 = *w1 = 0.5f;
        return;
    }
    /* Each pixel weighs the distance to the other one. */
    *w0 = fabsf(clamped - (float)*i1);
    *w1 = fabsf(clamped - (float)*i0);
}

static int check_attributes(const acl_resize_attrs *a)
{
    if (a->mode != ACL_RESIZE_NEAREST && a->mode != ACL_RESIZE_LINEAR)
        return acl_fail("resize: unknown mode %d (0: nearest, 1: linear)", a->mode);
    if (a->coordinate_mode < ACL_RESIZE_HALF_PIXEL ||
        a->coordinate_mode > ACL_RESIZE_TF_HALF_PIXEL_FOR_NN)
        return acl_fail("resize: unknown coordinate_mode %d (0 to %d)", a->coordinate_mode,
                        ACL_RESIZE_TF_HALF_PIXEL_FOR_NN);
    if (a->nearest_mode < ACL_RESIZE_ROUND_PREFER_FLOOR || a->nearest_mode > ACL_RESIZE_SIMPLE)
        return acl_fail("resize: unknown nearest_mode %d (0 to %d)", a->nearest_mode,
                        ACL_RESIZE_SIMPLE);
    if (graph_check_count("resize", "scales", a->scales_count, 2) != 0) return -1;
    for (int i = 0; i < 2; i++)
        if (!(isfinite(a->scales[i]) && a->scales[i] > 0.0f))
            return acl_fail("resize: scales must be finite and > 0, got %g (%s)",
                            (double)a->scales[i], i ? "width" : "height");
    return 0;
}

int graph_op_resize(acl_graph *g, const acl_resize_attrs *a, int nin, const acl_tensor *in,
                    const acl_tensor *out)
{
    size_t count;
    if (check_attributes(a) != 0 || graph_check_ranked(g, "resize", "input", in, 4, &count) != 0 ||
        graph_check_ranked(g, "resize", "output", out, 4, &count) != 0)
        return -1;
    const int n = in->dims[0], h = in->dims[1], w = in->dims[2], c = in->dims[3];
    const int oh = out->dims[1], ow = out->dims[2];
    const int want[4] = {n, oh, ow, c};
    if (graph_check_dims("resize", "output", out, 4, want) != 0 ||
        graph_check_disjoint("resize", out, "the input", in, 0) != 0)
        return -1;
    resize_params *p = malloc(sizeof *p);
    /* int and float tables of 4 bytes each: rows 4 x oh, columns 4 x ow, runs 3 x ow. */
    void *tables = malloc(((size_t)4 * oh + (size_t)7 * ow) * 4);
    if (!p || !tables) {
        free(p);
        free(tables);
        return acl_fail("resize: out of memory");
    }
    int *row0 = tables, *row1 = row0 + oh;
    float *wy0 = (float *)(row1 + oh), *wy1 = wy0 + oh;
    int *col0 = (int *)(wy1 + oh), *col1 = col0 + ow;
    float *wx0 = (float *)(col1 + ow), *wx1 = wx0 + ow;
    int *runs = (int *)(wx1 + ow), nruns = 0;
    /* onnxruntime copies an output of the input's size, whatever the scales,
     * and maps an axis of scale 1 onto itself, whatever the mode. */
    const int same = oh == h && ow == w;
    const float scale_h = same ? 1.0f : a->scales[0], scale_w = same ? 1.0f : a->scales[1];
    for (int oy = 0; oy < oh; oy++) {
        int i0, i1;
        axis_sources(a, oy, scale_h, h, oh, &i0, &i1, &wy0[oy], &wy1[oy]);
        row0[oy] = i0 * w * c;
        row1[oy] = i1 * w * c;
    }
    for (int ox = 0; ox < ow; ox++) {
        int i0, i1;
        axis_sources(a, ox, scale_w, w, ow, &i0, &i1, &wx0[ox], &wx1[ox]);
        col0[ox] = i0 * c;
        col1[ox] = i1 * c;
        /* A nearest run goes on while the source column steps by one. */
        if (nruns > 0 && col0[ox] == runs[3 * nruns - 2] + runs[3 * nruns - 1]) {
            runs[3 * nruns - 1] += c;
        } else {
            runs[3 * nruns] = ox * c;
            runs[3 * nruns + 1] = col0[ox];
            runs[3 * nruns + 2] = c;
            nruns++;
        }
    }
    *p = (resize_params){
        .linear = a->mode == ACL_RESIZE_LINEAR,
        .n = n,
        .oh = oh,
        .ow = ow,
        .c = c,
        .nruns = nruns,
        .image = (size_t)h * w * c,
        .out_row = (size_t)ow * c,
        .x = graph_ptr(g, in),
        .y = graph_ptr(g, out),
        .row0 = row0,
        .row1 = row1,
        .wy0 = wy0,
        .wy1 = wy1,
        .col0 = col0,
        .col1 = col1,
        .wx0 = wx0,
        .wx1 = wx1,
        .runs = runs,
        .tables = tables,
    };
    return graph_add(g, resize_run, resize_release, p);
}
