/* The graph suite's operations that move data: pooling, concat, transpose, slice, shuffle,
 * pad and resize. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_trial.h"

/* ---- pooling ---------------------------------------------------------------- */

typedef struct {
    int op, kh, kw, sh, sw, dh, dw, pads[4], include_pad;
    acl_tensor in, out;
} pool_spec;

static int add_pool(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const pool_spec *s = spec;
    const acl_pool_attrs a = {.op = s->op,
                              .kernel = (const int[]){s->kh, s->kw},
                              .kernel_count = 2,
                              .strides = (const int[]){s->sh, s->sw},
                              .strides_count = 2,
                              .dilations = (const int[]){s->dh, s->dw},
                              .dilations_count = 2,
                              .pads = s->pads,
                              .pads_count = 4,
                              .count_include_pad = s->include_pad};
    return acl_graph_add(g, ACL_OP_POOL, &a, 1, &s->in, &s->out);
}

/* Output size of one axis, floor or ceil; 0 when the window does not fit. */
static int pool_extent(int in, int lo, int hi, int k, int dil, int stride, int ceil_mode)
{
    const int span = in + lo + hi - (dil * (k - 1) + 1);
    if (span < 0) return 0;
    return (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
}

static float pool_ref(const pool_spec *s, const float *x, int n, int oy, int ox, int c)
{
    const int h = s->in.dims[1], w = s->in.dims[2], ch = s->in.dims[3];
    float max = -INFINITY;
    double sum = 0.0;
    int taps = 0, padded_taps = 0;
    for (int i = 0; i < s->kh; i++)
        for (int j = 0; j < s->kw; j++) {
            const int ih = oy * s->sh - s->pads[0] + i * s->dh;
            const int iw = ox * s->sw - s->pads[1] + j * s->dw;
            padded_taps += ih < h + s->pads[2] && iw < w + s->pads[3];
            if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
            const float v = x[(((size_t)n * h + ih) * w + iw) * ch + c];
            max = v > max ? v : max;
            sum += v;
            taps++;
        }
    if (s->op == ACL_POOL_MAX) return max;
    const int divisor = s->include_pad ? padded_taps : taps;
    return divisor ? (float)(sum / divisor) : 0.0f;
}

void pool_case(int big)
{
    pool_spec s = {.op = rnd(ACL_POOL_MAX, ACL_POOL_AVERAGE),
                   .kh = rnd(1, 4),
                   .kw = rnd(1, 4),
                   .sh = rnd(1, 3),
                   .sw = rnd(1, 3),
                   .dh = rnd(1, 2),
                   .dw = rnd(1, 2),
                   .include_pad = rnd(0, 1)};
    const int ceil_mode = rnd(0, 1);
    int in[4] = {rnd(1, 2), rnd(1, big ? 40 : 12), rnd(1, big ? 40 : 12), rnd(1, big ? 96 : 20)};
    int out[4];
    do {
        for (int i = 0; i < 4; i++) s.pads[i] = rnd(0, 2);
        out[1] = pool_extent(in[1], s.pads[0], s.pads[2], s.kh, s.dh, s.sh, ceil_mode);
        out[2] = pool_extent(in[2], s.pads[1], s.pads[3], s.kw, s.dw, s.sw, ceil_mode);
        if (!out[1] || !out[2]) in[1] += 2, in[2] += 2;
    } while (!out[1] || !out[2]);
    out[0] = in[0];
    out[3] = in[3];
    trial t;
    trial_begin(&t, TOL_EXACT, "pool %d %s k%dx%d s%d,%d d%d,%d pads %d,%d,%d,%d incl %d ceil %d",
                s.op, dims_str(4, in), s.kh, s.kw, s.sh, s.sw, s.dh, s.dw, s.pads[0], s.pads[1],
                s.pads[2], s.pads[3], s.include_pad, ceil_mode);
    place(&t, &s.in, 4, in);
    place(&t, &s.out, 4, out);
    float *arena = trial_arena(&t);
    memcpy(t.expected, arena, t.arena * sizeof(float));
    float *y = t.expected + s.out.offset;
    for (int n = 0; n < out[0]; n++)
        for (int oy = 0; oy < out[1]; oy++)
            for (int ox = 0; ox < out[2]; ox++)
                for (int c = 0; c < out[3]; c++)
                    *y++ = pool_ref(&s, arena + s.in.offset, n, oy, ox, c);
    trial_run(&t, &s.out, add_pool, &s);
}

typedef struct {
    acl_tensor in, out;
} io_spec;

static int add_gap(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const io_spec *s = spec;
    return acl_graph_add(g, ACL_OP_GLOBAL_AVERAGE_POOL, NULL, 1, &s->in, &s->out);
}

void global_average_pool_case(int big)
{
    io_spec s;
    /* big: up to 2,500 pixels, several of the op's pixel chunks */
    const int in[4] = {rnd(1, 3), rnd(1, big ? 50 : 7), rnd(1, big ? 50 : 7),
                       rnd(1, big ? 300 : 70)};
    const int out[4] = {in[0], 1, 1, in[3]};
    trial t;
    trial_begin(&t, TOL_EXACT, "global average pool %s", dims_str(4, in));
    place(&t, &s.in, 4, in);
    place(&t, &s.out, 4, out);
    float *arena = trial_arena(&t);
    memcpy(t.expected, arena, t.arena * sizeof(float));
    for (int n = 0; n < in[0]; n++)
        for (int c = 0; c < in[3]; c++) {
            double sum = 0.0;
            for (int p = 0; p < in[1] * in[2]; p++)
                sum += arena[s.in.offset + ((size_t)n * in[1] * in[2] + p) * in[3] + c];
            t.expected[s.out.offset + (size_t)n * in[3] + c] = (float)(sum / (in[1] * in[2]));
        }
    trial_run(&t, &s.out, add_gap, &s);
}

/* ---- concat / transpose / slice / shuffle / pad ------------------------------------------------- */

#define MAX_CONCAT 5

typedef struct {
    int axis, n;
    acl_tensor ins[MAX_CONCAT], out;
} concat_spec;

static int add_concat(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const concat_spec *s = spec;
    return acl_graph_add(g, ACL_OP_CONCAT, &(acl_concat_attrs){.axis = s->axis}, s->n, s->ins,
                         &s->out);
}

void concat_case(int big)
{
    concat_spec s = {.n = rnd(1, MAX_CONCAT)};
    int rank = rnd(1, 5), dims[ACL_MAX_RANK];
    random_dims(rank, big, dims);
    s.axis = rnd(0, rank - 1);
    int total = 0, sizes[MAX_CONCAT];
    for (int i = 0; i < s.n; i++) total += sizes[i] = rnd(1, 6);
    dims[s.axis] = total;
    trial t;
    trial_begin(&t, 0.0, "concat axis %d of %d inputs -> %s", s.axis, s.n, dims_str(rank, dims));
    for (int i = 0; i < s.n; i++) {
        dims[s.axis] = sizes[i];
        place(&t, &s.ins[i], rank, dims);
    }
    dims[s.axis] = total;
    place(&t, &s.out, rank, dims);
    float *arena = trial_arena(&t);
    memcpy(t.expected, arena, t.arena * sizeof(float));
    const size_t outer = volume(s.axis, dims), inner = volume(rank - s.axis - 1, dims + s.axis + 1);
    float *y = t.expected + s.out.offset;
    for (size_t r = 0; r < outer; r++)
        for (int i = 0; i < s.n; i++)
            for (size_t e = 0; e < (size_t)sizes[i] * inner; e++)
                *y++ = arena[s.ins[i].offset + r * sizes[i] * inner + e];
    trial_run(&t, &s.out, add_concat, &s);
}

typedef struct {
    int perm[ACL_MAX_RANK];
    acl_tensor in, out;
} transpose_spec;

static int add_transpose(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const transpose_spec *s = spec;
    const acl_transpose_attrs a = {s->perm, s->in.rank};
    return acl_graph_add(g, ACL_OP_TRANSPOSE, &a, 1, &s->in, &s->out);
}

void transpose_case(int big)
{
    transpose_spec s;
    int rank = rnd(1, 6), dims[ACL_MAX_RANK], odims[ACL_MAX_RANK];
    random_dims(rank, big, dims);
    random_perm(rank, s.perm);
    for (int i = 0; i < rank; i++) odims[i] = dims[s.perm[i]];
    trial t;
    trial_begin(&t, 0.0, "transpose %s perm %s", dims_str(rank, dims), dims_str(rank, s.perm));
    float *arena = place_in_out(&t, &s.in, &s.out, rank, dims, odims);
    for (size_t i = 0; i < volume(rank, odims); i++) {
        size_t rest = i, idx[ACL_MAX_RANK], src = 0;
        for (int d = rank - 1; d >= 0; d--) {
            idx[s.perm[d]] = rest % (size_t)odims[d];
            rest /= (size_t)odims[d];
        }
        for (int d = 0; d < rank; d++) src = src * (size_t)dims[d] + idx[d];
        t.expected[s.out.offset + i] = arena[s.in.offset + src];
    }
    trial_run(&t, &s.out, add_transpose, &s);
}

typedef struct {
    int starts[ACL_MAX_RANK], steps[ACL_MAX_RANK];
    acl_tensor in, out;
} slice_spec;

static int add_slice(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const slice_spec *s = spec;
    const acl_slice_attrs a = {s->starts, s->in.rank, s->steps, s->in.rank};
    return acl_graph_add(g, ACL_OP_SLICE, &a, 1, &s->in, &s->out);
}

/* Random starts, steps (negative too) and sizes inside each axis; some axes whole. */
void slice_case(int big)
{
    slice_spec s;
    int rank = rnd(1, 6), dims[ACL_MAX_RANK], odims[ACL_MAX_RANK];
    random_dims(rank, big, dims);
    for (int d = 0; d < rank; d++) {
        if (rnd(0, 2) == 0) {
            s.starts[d] = 0, s.steps[d] = 1, odims[d] = dims[d];
            continue;
        }
        s.steps[d] = rnd(1, 3) * (rnd(0, 3) ? 1 : -1);
        s.starts[d] = rnd(0, dims[d] - 1);
        const int room = s.steps[d] > 0 ? dims[d] - 1 - s.starts[d] : s.starts[d];
        odims[d] = 1 + rnd(0, room / abs(s.steps[d]));
    }
    trial t;
    trial_begin(&t, 0.0, "slice %s starts %s steps %s", dims_str(rank, dims),
                dims_str(rank, s.starts), dims_str(rank, s.steps));
    float *arena = place_in_out(&t, &s.in, &s.out, rank, dims, odims);
    for (size_t i = 0; i < volume(rank, odims); i++) {
        size_t rest = i, src = 0;
        int idx[ACL_MAX_RANK];
        for (int d = rank - 1; d >= 0; d--) {
            idx[d] = s.starts[d] + (int)(rest % (size_t)odims[d]) * s.steps[d];
            rest /= (size_t)odims[d];
        }
        for (int d = 0; d < rank; d++) src = src * (size_t)dims[d] + (size_t)idx[d];
        t.expected[s.out.offset + i] = arena[s.in.offset + src];
    }
    trial_run(&t, &s.out, add_slice, &s);
}

#define MAX_SHUFFLE 64

typedef struct {
    int axis, index[MAX_SHUFFLE];
    acl_tensor in, out;
} shuffle_spec;

static int add_shuffle(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const shuffle_spec *s = spec;
    const acl_gather_attrs a = {s->axis, s->index, s->out.dims[s->out.rank - 1]};
    return acl_graph_add(g, ACL_OP_GATHER, &a, 1, &s->in, &s->out);
}

/* A gather along the innermost axis by a channel shuffle's table (2, 3, 4
 * and 8 groups take fixed loops, the others the table's) or a random one. */
void gather_shuffle_case(int big)
{
    shuffle_spec s;
    int rank = rnd(1, 4), dims[ACL_MAX_RANK], odims[ACL_MAX_RANK];
    random_dims(rank, big, dims);
    static const int group_counts[] = {1, 2, 3, 4, 5, 8};
    const int groups = group_counts[rnd(0, 5)], per = rnd(1, 8), shuffle = rnd(0, 2) > 0;
    const int cin = dims[rank - 1] = shuffle ? groups * per : rnd(1, MAX_SHUFFLE);
    const int cout = shuffle ? cin : rnd(1, MAX_SHUFFLE);
    for (int j = 0; j < cout; j++)
        s.index[j] = shuffle ? (j % groups) * per + j / groups : rnd(0, cin - 1);
    s.axis = rnd(0, 1) ? rank - 1 : -1;
    memcpy(odims, dims, sizeof dims);
    odims[rank - 1] = cout;
    trial t;
    trial_begin(&t, 0.0, "gather innermost %s -> %s%s", dims_str(rank, dims), dims_str(rank, odims),
                shuffle ? " (shuffle)" : "");
    float *arena = place_in_out(&t, &s.in, &s.out, rank, dims, odims);
    for (size_t r = 0; r < volume(rank - 1, dims); r++)
        for (int j = 0; j < cout; j++)
            t.expected[s.out.offset + r * (size_t)cout + (size_t)j] =
                arena[s.in.offset + r * (size_t)cin + (size_t)s.index[j]];
    trial_run(&t, &s.out, add_shuffle, &s);
}

typedef struct {
    int mode, pads[2 * ACL_MAX_RANK];
    float value;
    acl_tensor in, out;
} pad_spec;

static int add_pad(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const pad_spec *s = spec;
    const acl_pad_attrs a = {s->mode, s->value, s->pads, 2 * s->in.rank};
    return acl_graph_add(g, ACL_OP_PAD, &a, 1, &s->in, &s->out);
}

/* Index i of an axis of size d after folding out-of-range indices back in:
 * reflect bounces off both ends without repeating them. */
static int pad_source(int mode, int i, int d)
{
    if (mode == ACL_PAD_EDGE) return i < 0 ? 0 : i >= d ? d - 1 : i;
    if (d == 1) return 0;
    while (i < 0 || i >= d) i = i < 0 ? -i : 2 * (d - 1) - i;
    return i;
}

void pad_case(int big)
{
    pad_spec s = {.mode = rnd(ACL_PAD_CONSTANT, ACL_PAD_REFLECT), .value = rnd_float()};
    int rank = rnd(1, 4), dims[ACL_MAX_RANK], odims[ACL_MAX_RANK];
    random_dims(rank, big, dims);
    for (int d = 0; d < rank; d++) {
        do {
            s.pads[d] = rnd(0, 3) ? rnd(0, 3) : -rnd(1, 2);
            s.pads[rank + d] = rnd(0, 2) ? rnd(0, 3) : -rnd(1, 2);
            odims[d] = dims[d] + s.pads[d] + s.pads[rank + d];
        } while (odims[d] < 1);
        if (rnd(0, 2) == 0) s.pads[d] = s.pads[rank + d] = 0, odims[d] = dims[d];
    }
    trial t;
    trial_begin(&t, 0.0, "pad mode %d %s pads %s", s.mode, dims_str(rank, dims),
                dims_str(2 * rank, s.pads));
    float *arena = place_in_out(&t, &s.in, &s.out, rank, dims, odims);
    for (size_t i = 0; i < volume(rank, odims); i++) {
        size_t rest = i, src = 0;
        int idx[ACL_MAX_RANK], outside = 0;
        for (int d = rank - 1; d >= 0; d--) {
            idx[d] = (int)(rest % (size_t)odims[d]) - s.pads[d];
            rest /= (size_t)odims[d];
            outside |= idx[d] < 0 || idx[d] >= dims[d];
        }
        for (int d = 0; d < rank; d++)
            src = src * (size_t)dims[d] + pad_source(s.mode, idx[d], dims[d]);
        t.expected[s.out.offset + i] =
            s.mode == ACL_PAD_CONSTANT && outside ? s.value : arena[s.in.offset + src];
    }
    trial_run(&t, &s.out, add_pad, &s);
}

/* ---- resize --------------------------------------------------------------------- */

typedef struct {
    int mode, coordinates, rounding;
    float scales[2];
    acl_tensor in, out;
} resize_spec;

static int add_resize(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const resize_spec *s = spec;
    const acl_resize_attrs a = {s->mode, s->coordinates, s->rounding, s->scales, 2};
    return acl_graph_add(g, ACL_OP_RESIZE, &a, 1, &s->in, &s->out);
}

/* ONNX's input coordinate of output index o (float arithmetic, as onnxruntime). */
static float resize_coordinate(int coordinates, int o, float scale, int in, int out)
{
    const float x = (float)o;
    if (scale == 1.0f) return x;
    switch (coordinates) {
    case ACL_RESIZE_ALIGN_CORNERS: return out == 1 ? 0.0f : x * (float)(in - 1) / (float)(out - 1);
    case ACL_RESIZE_ASYMMETRIC: return x / scale;
    case ACL_RESIZE_TF_HALF_PIXEL_FOR_NN: return (x + 0.5f) / scale;
    case ACL_RESIZE_PYTORCH_HALF_PIXEL:
        if (out == 1) return 0.0f; /* fall through */
    default: return (x + 0.5f) / scale - 0.5f;
    }
}

/* Taps of output index o along an axis: input indices i[2], weights w[2]. */
static void resize_taps(const resize_spec *s, int axis, int o, int in, int out, int i[2],
                        double w[2])
{
    const float scale =
        s->in.dims[1] == s->out.dims[1] && s->in.dims[2] == s->out.dims[2] ? 1.0f : s->scales[axis];
    double v = resize_coordinate(s->coordinates, o, scale, in, out);
    if (s->mode == ACL_RESIZE_NEAREST) {
        const int tie = fabs(v - floor(v) - 0.5) <= 1e-6;
        double r;
        switch (s->rounding) {
        case ACL_RESIZE_FLOOR: r = floor(v); break;
        case ACL_RESIZE_CEIL: r = ceil(v); break;
        case ACL_RESIZE_SIMPLE: r = scale < 1.0f ? ceil(v) : trunc(v); break;
        case ACL_RESIZE_ROUND_PREFER_CEIL: r = tie ? ceil(v) : floor(v + 0.5); break;
        default: r = tie ? floor(v) : floor(v + 0.5); break;
        }
        i[0] = i[1] = r < 0 ? 0 : r > in - 1 ? in - 1 : (int)r;
        w[0] = 1.0;
        w[1] = 0.0;
        return;
    }
    v = v < 0 ? 0 : v > in - 1 ? in - 1 : v;
    i[0] = (int)v;
    i[1] = i[0] + 1 < in ? i[0] + 1 : i[0];
    w[1] = i[0] == i[1] ? 0.5 : v - i[0];
    w[0] = i[0] == i[1] ? 0.5 : 1.0 - w[1];
}

void resize_case(int big)
{
    resize_spec s = {.mode = rnd(ACL_RESIZE_NEAREST, ACL_RESIZE_LINEAR),
                     .coordinates = rnd(ACL_RESIZE_HALF_PIXEL, ACL_RESIZE_TF_HALF_PIXEL_FOR_NN),
                     .rounding = rnd(ACL_RESIZE_ROUND_PREFER_FLOOR, ACL_RESIZE_SIMPLE)};
    const int in[4] = {rnd(1, 2), rnd(1, big ? 40 : 9), rnd(1, big ? 40 : 9),
                       rnd(0, 3) ? rnd(1, big ? 64 : 12) : 1};
    int out[4] = {in[0], 0, 0, in[3]};
    for (int a = 0; a < 2; a++) {
        /* Integer factors up and down, or any ratio (as from sizes). */
        const int style = rnd(0, 2), n = in[1 + a];
        if (style == 0) s.scales[a] = (float)rnd(1, 4);
        else if (style == 1) s.scales[a] = 1.0f / (float)rnd(1, 4);
        else s.scales[a] = (float)rnd(1, 3 * n) / (float)n;
        out[1 + a] = (int)(s.scales[a] * (float)n);
        if (out[1 + a] < 1) out[1 + a] = 1;
    }
    trial t;
    trial_begin(&t, TOL_EXACT, "resize mode %d coordinates %d rounding %d %s -> %s scales %g,%g",
                s.mode, s.coordinates, s.rounding, dims_str(4, in), dims_str(4, out),
                (double)s.scales[0], (double)s.scales[1]);
    place(&t, &s.in, 4, in);
    place(&t, &s.out, 4, out);
    float *arena = trial_arena(&t);
    memcpy(t.expected, arena, t.arena * sizeof(float));
    const float *x = arena + s.in.offset;
    float *y = t.expected + s.out.offset;
    for (int n = 0; n < out[0]; n++)
        for (int oy = 0; oy < out[1]; oy++) {
            int iy[2], ix[2];
            double wy[2], wx[2];
            resize_taps(&s, 0, oy, in[1], out[1], iy, wy);
            for (int ox = 0; ox < out[2]; ox++) {
                resize_taps(&s, 1, ox, in[2], out[2], ix, wx);
                for (int c = 0; c < out[3]; c++) {
                    double sum = 0.0;
                    for (int a = 0; a < 2; a++)
                        for (int b = 0; b < 2; b++)
                            sum += wy[a] * wx[b] *
                                   x[(((size_t)n * in[1] + iy[a]) * in[2] + ix[b]) * in[3] + c];
                    *y++ = (float)sum;
                }
            }
        }
    trial_run(&t, &s.out, add_resize, &s);
}
