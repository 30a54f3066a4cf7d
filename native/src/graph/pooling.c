/* NHWC max / average pooling (split over output rows) and global average
 * pooling (split over channel blocks).  Channels are innermost, so every
 * window tap is one contiguous vector op over the channels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fold_rows.h"
#include "graph_impl.h"
#include "vector_select.h"

/* A global-average-pool unit: a block of channels (enough to vectorise, few
 * enough to stay in registers) over a chunk of pixels (so that an image of
 * few channels still spreads over the cores), summed in blocks and pairs
 * (fold_rows.h), and the chunks' sums then pairwise. */
#define GAP_CHANNEL_BLOCK 32
#define GAP_PIXEL_CHUNK 1024
/* A pooling window's channels are taken POOL_VECS vectors at a time, held
 * in registers over its taps: a GNU C vector that each ISA lowers to its own
 * registers (one AVX-512 register; one AVX2 or two NEON registers). */
#if defined(__AVX512F__)
#define POOL_LANES 16
#else
#define POOL_LANES 8
#endif
#define POOL_VECS 4
typedef float pool_vec __attribute__((vector_size(POOL_LANES * sizeof(float))));
typedef int pool_mask __attribute__((vector_size(POOL_LANES * sizeof(float))));

typedef struct {
    int max;  /* ACL_POOL_MAX, else average */
    int u8;   /* uint8 tensors (max only): x and y are bytes */
    int include_pad;
    int n, h, w, c, oh, ow;
    int kh, kw, stride_h, stride_w, dil_h, dil_w;
    int pad_top, pad_left, pad_bottom, pad_right;
    int inside_lo, inside_hi;  /* output columns whose windows lie inside the input */
    const float *x;
    float *y;
} pool_params;

/* Taps t in [*t0, *t1) of a k-tap window dilated by dil and starting at
 * `start` that land inside [0, len). */
static void tap_range(int start, int len, int k, int dil, int *t0, int *t1)
{
    const int lo = start < 0 ? (-start + dil - 1) / dil : 0;
    const int hi = start < len ? (len - 1 - start) / dil + 1 : 0;
    *t0 = lo;
    *t1 = acl_max(lo, acl_min(hi, k));
}

/* One axis of the window starting at `start`: its taps inside the input and
 * how many count towards an average (those inside the padded input when
 * count_include_pad). */
static void window_axis(const pool_params *p, int start, int len, int pad_lo, int pad_hi, int k,
                        int dil, int *t0, int *t1, int *count)
{
    tap_range(start, len, k, dil, t0, t1);
    *count = *t1 - *t0;
    if (p->include_pad) {
        int p0, p1;
        tap_range(start + pad_lo, len + pad_lo + pad_hi, k, dil, &p0, &p1);
        *count = p1 - p0;
    }
}

/* One output pixel's window: the taps [th0, th1) x [tw0, tw1) that land
 * inside the image, from input row ih0 and column iw0. */
typedef struct {
    const float *image;
    int ih0, th0, th1, iw0, tw0, tw1;
} pool_window;

static inline const float *pool_tap(const pool_params *p, const pool_window *win, int th, int tw)
{
    return win->image +
           ((size_t)(win->ih0 + th * p->dil_h) * p->w + win->iw0 + tw * p->dil_w) * p->c;
}

static inline pool_vec pool_load(const float *x)
{
    pool_vec v;
    memcpy(&v, x, sizeof v);
    return v;
}

/* As the scalar x > a ? x : a: a NaN tap is skipped. */
static inline pool_vec pool_max(pool_vec a, pool_vec x)
{
    return VEC_SELECT(x > a, x, a, pool_mask);
}

/* `vecs` vectors of channels from c0, maxed (or summed) over the window in
 * registers: with constant `max` and `vecs` the loops have no branch, unroll
 * fully and the accumulators never touch memory. */
static inline __attribute__((always_inline)) void pool_vectors(const pool_params *p,
                                                               const pool_window *win, int max,
                                                               int vecs, float scale, int c0,
                                                               float *restrict y)
{
    pool_vec acc[POOL_VECS];
    for (int v = 0; v < vecs; v++) acc[v] = (pool_vec){0} + (max ? -INFINITY : 0.0f);
    for (int th = win->th0; th < win->th1; th++)
        for (int tw = win->tw0; tw < win->tw1; tw++) {
            const float *x = pool_tap(p, win, th, tw) + c0;
            for (int v = 0; v < vecs; v++) {
                const pool_vec xv = pool_load(x + v * POOL_LANES);
                acc[v] = max ? pool_max(acc[v], xv) : acc[v] + xv;
            }
        }
    for (int v = 0; v < vecs; v++) {
        const pool_vec out = acc[v] * scale;
        memcpy(y + c0 + v * POOL_LANES, &out, sizeof out);
    }
}

/* Channels [c0, c) one at a time: an image of fewer channels than a vector. */
static void pool_scalars(const pool_params *p, const pool_window *win, float scale, int c0,
                         float *restrict y)
{
    for (int ch = c0; ch < p->c; ch++) {
        float acc = p->max ? -INFINITY : 0.0f;
        for (int th = win->th0; th < win->th1; th++)
            for (int tw = win->tw0; tw < win->tw1; tw++) {
                const float x = pool_tap(p, win, th, tw)[ch];
                acc = p->max ? (x > acc ? x : acc) : acc + x;
            }
        y[ch] = acc * scale;
    }
}

/* `inside`: the window's columns all lie inside the input (count_w = kw), so
 * their bounds need no divisions. */
static void pool_pixel(const pool_params *p, const float *image, int ih0, int th0, int th1,
                       int count_h, int ox, int inside, float *restrict y)
{
    pool_window win = {image, ih0, th0, th1, ox * p->stride_w - p->pad_left, 0, p->kw};
    int count_w = p->kw;
    if (!inside)
        window_axis(p, win.iw0, p->w, p->pad_left, p->pad_right, p->kw, p->dil_w, &win.tw0,
                    &win.tw1, &count_w);
    /* A window with no taps inside the input averages to 0. */
    const float scale = p->max || count_h * count_w == 0 ? 1.0f : 1.0f / (float)(count_h * count_w);
    const int c = p->c;
    int c0 = 0;
    /* The last channels as one whole vector that overlaps the ones before
     * (24 channels: 0-15, then 8-23): a channel computed twice gets the same
     * value, and one vector of taps costs less than the scalar loop's. */
#define POOL_CHANNELS(max)                                                     \
    for (; c0 + POOL_VECS * POOL_LANES <= c; c0 += POOL_VECS * POOL_LANES)      \
        pool_vectors(p, &win, max, POOL_VECS, scale, c0, y);                    \
    for (; c0 + POOL_LANES <= c; c0 += POOL_LANES)                              \
        pool_vectors(p, &win, max, 1, scale, c0, y);                            \
    if (c0 < c && c >= POOL_LANES) {                                            \
        pool_vectors(p, &win, max, 1, scale, c - POOL_LANES, y);                \
        c0 = c;                                                                 \
    }
    if (p->max) {
        POOL_CHANNELS(1)
    } else {
        POOL_CHANNELS(0)
    }
#undef POOL_CHANNELS
    pool_scalars(p, &win, scale, c0, y);
}

/* Output pixels [lo, hi) of a row whose windows' columns all lie inside the
 * input, for channels a multiple of the vector: no per-pixel window bounds,
 * and with kw and max constant the taps unroll (a 2x2 max pool of 16
 * channels took 25 cycles a pixel through pool_pixel). */
static inline __attribute__((always_inline)) void
pool_inside(const pool_params *p, const float *image, int ih0, int th0, int th1, float scale,
            int lo, int hi, float *restrict y, const int kw, const int max)
{
    const size_t c = (size_t)p->c, row = (size_t)p->w * c * p->dil_h, tap = c * p->dil_w;
    for (int ox = lo; ox < hi; ox++) {
        const float *x =
            image + ((size_t)ih0 * p->w + (size_t)(ox * p->stride_w - p->pad_left)) * c;
        for (size_t c0 = 0; c0 < c; c0 += POOL_LANES) {
            pool_vec acc = (pool_vec){0} + (max ? -INFINITY : 0.0f);
            for (int th = th0; th < th1; th++)
                for (int tw = 0; tw < kw; tw++) {
                    const pool_vec xv = pool_load(x + th * row + tw * tap + c0);
                    acc = max ? pool_max(acc, xv) : acc + xv;
                }
            const pool_vec out = acc * scale;
            memcpy(y + ox * c + c0, &out, sizeof out);
        }
    }
}

static void pool_inside_kw(const pool_params *p, const float *image, int ih0, int th0, int th1,
                           float scale, float *restrict y)
{
    const int lo = p->inside_lo, hi = p->inside_hi;
    if (p->max && p->kw == 2) pool_inside(p, image, ih0, th0, th1, scale, lo, hi, y, 2, 1);
    else if (p->max && p->kw == 3) pool_inside(p, image, ih0, th0, th1, scale, lo, hi, y, 3, 1);
    else if (p->max) pool_inside(p, image, ih0, th0, th1, scale, lo, hi, y, p->kw, 1);
    else if (p->kw == 2) pool_inside(p, image, ih0, th0, th1, scale, lo, hi, y, 2, 0);
    else if (p->kw == 3) pool_inside(p, image, ih0, th0, th1, scale, lo, hi, y, 3, 0);
    else pool_inside(p, image, ih0, th0, th1, scale, lo, hi, y, p->kw, 0);
}

/* Rows are (image, output row) pairs. */
static void pool_rows(const void *arg, size_t begin, size_t end)
{
    const pool_params *p = arg;
    for (size_t r = begin; r < end; r++) {
        const int n = (int)(r / (size_t)p->oh), oy = (int)(r % (size_t)p->oh);
        const int ih0 = oy * p->stride_h - p->pad_top;
        int th0, th1, count_h;
        window_axis(p, ih0, p->h, p->pad_top, p->pad_bottom, p->kh, p->dil_h, &th0, &th1, &count_h);
        const float *image = p->x + (size_t)n * p->h * p->w * p->c;
        float *y = p->y + r * p->ow * p->c;
        const int vectors = p->c % POOL_LANES == 0;
        for (int ox = 0; ox < p->ow; ox++) {
            const int inside = ox >= p->inside_lo && ox < p->inside_hi;
            if (inside && vectors) {
                const int count = count_h * p->kw;
                const float scale = p->max || count == 0 ? 1.0f : 1.0f / (float)count;
                pool_inside_kw(p, image, ih0, th0, th1, scale, y);
                ox = p->inside_hi - 1;
                continue;
            }
            pool_pixel(p, image, ih0, th0, th1, count_h, ox, inside, y + (size_t)ox * p->c);
        }
    }
}

/* The uint8 max pool's rows: bytes compare as the values they hold (one
 * scale, zero point), and a pad as 0, the least byte, changes no max of a
 * window with a tap inside and gives an empty one -inf's quantized value. */
static void pool_rows_u8(const void *arg, size_t begin, size_t end)
{
    const pool_params *p = arg;
    const uint8_t *x = (const uint8_t *)p->x;
    const size_t c = (size_t)p->c;
    for (size_t r = begin; r < end; r++) {
        const int n = (int)(r / (size_t)p->oh), oy = (int)(r % (size_t)p->oh);
        const int ih0 = oy * p->stride_h - p->pad_top;
        int th0, th1;
        tap_range(ih0, p->h, p->kh, p->dil_h, &th0, &th1);
        const uint8_t *image = x + (size_t)n * p->h * p->w * c;
        uint8_t *y = (uint8_t *)p->y + r * p->ow * c;
        for (int ox = 0; ox < p->ow; ox++) {
            const int iw0 = ox * p->stride_w - p->pad_left;
            int tw0, tw1;
            tap_range(iw0, p->w, p->kw, p->dil_w, &tw0, &tw1);
            uint8_t *restrict out = y + (size_t)ox * c;
            memset(out, 0, c);
            for (int th = th0; th < th1; th++)
                for (int tw = tw0; tw < tw1; tw++) {
                    const uint8_t *restrict tap =
                        image +
                        ((size_t)(ih0 + th * p->dil_h) * p->w + (size_t)(iw0 + tw * p->dil_w)) * c;
                    for (size_t ch = 0; ch < c; ch++)
                        out[ch] = tap[ch] > out[ch] ? tap[ch] : out[ch];
                }
        }
    }
}

static int pool_run(const void *arg, const acl_exec *ex)
{
    const pool_params *p = arg;
    return graph_parallel(ex, (size_t)p->n * p->oh, (size_t)p->ow * p->c * p->kh * p->kw,
                          p->u8 ? pool_rows_u8 : pool_rows, p);
}

/* One spatial axis: the output may have the floor (ceil_mode=0) or the ceil
 * (ceil_mode=1) size. */
static int check_axis(const char *op, const char *axis, int in, int pad_lo, int pad_hi, int k,
                      int dil, int stride, int out)
{
    const long window = (long)dil * (k - 1) + 1, span = (long)in + pad_lo + pad_hi - window;
    if (span < 0)
        return acl_fail("%s: the dilated window %s (%ld) is larger than the padded input %s (%ld)",
                        op, axis, window, axis, (long)in + pad_lo + pad_hi);
    const long floor_size = span / stride + 1, ceil_size = (span + stride - 1) / stride + 1;
    if (out < floor_size || out > ceil_size) {
        if (floor_size == ceil_size)
            return acl_fail("%s: output %s is %d but must be %ld", op, axis, out, floor_size);
        return acl_fail("%s: output %s is %d but must be %ld (or %ld with ceil_mode)", op, axis,
                        out, floor_size, ceil_size);
    }
    return 0;
}

static int check_attributes(const char *op, int kh, int kw, int stride_h, int stride_w, int dil_h,
                            int dil_w, const int pads[4])
{
    if (kh < 1 || kw < 1 || stride_h < 1 || stride_w < 1 || dil_h < 1 || dil_w < 1)
        return acl_fail("%s: kernel %dx%d, strides %d,%d and dilations %d,%d must all be >= 1", op,
                        kh, kw, stride_h, stride_w, dil_h, dil_w);
    if (!pads) return acl_fail("%s: no pads given", op);
    if (pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0)
        return acl_fail("%s: pads (top %d, left %d, bottom %d, right %d) must be >= 0", op, pads[0],
                        pads[1], pads[2], pads[3]);
    return 0;
}

/* A 4-D tensor of floats, or of bytes for a uint8 pool. */
static int check_pool_tensor(const acl_graph *g, const char *op, const char *what,
                             const acl_tensor *t, int u8)
{
    size_t count;
    if (!u8) return graph_check_ranked(g, op, what, t, 4, &count);
    if (graph_check_tensor_u8(g, op, what, t, &count) != 0) return -1;
    return t->rank == 4 ? 0 : acl_fail("%s: %s must have rank 4, got %d", op, what, t->rank);
}

int graph_op_pool(acl_graph *g, const acl_pool_attrs *a, int nin, const acl_tensor *in,
                  const acl_tensor *out)
{
    const int op = a->op;
    if (graph_check_count("pool", "kernel", (size_t)a->kernel_count, 2) != 0 ||
        graph_check_count("pool", "strides", (size_t)a->strides_count, 2) != 0 ||
        graph_check_count("pool", "dilations", (size_t)a->dilations_count, 2) != 0 ||
        graph_check_count("pool", "pads", (size_t)a->pads_count, 4) != 0)
        return -1;
    const int kh = a->kernel[0], kw = a->kernel[1], stride_h = a->strides[0],
              stride_w = a->strides[1], dil_h = a->dilations[0], dil_w = a->dilations[1];
    const int *pads = a->pads, count_include_pad = a->count_include_pad;
    if (op != ACL_POOL_MAX && op != ACL_POOL_AVERAGE)
        return acl_fail("pool: unknown operation %d (0: max, 1: average)", op);
    const char *name = op == ACL_POOL_MAX ? "max pool" : "average pool";
    if (a->u8 && op != ACL_POOL_MAX)
        return acl_fail("average pool: no uint8 form (u8 is max only)");
    if (check_attributes(name, kh, kw, stride_h, stride_w, dil_h, dil_w, pads) != 0 ||
        check_pool_tensor(g, name, "input", in, a->u8) != 0 ||
        check_pool_tensor(g, name, "output", out, a->u8) != 0 ||
        check_axis(name, "height", in->dims[1], pads[0], pads[2], kh, dil_h, stride_h,
                   out->dims[1]) != 0 ||
        check_axis(name, "width", in->dims[2], pads[1], pads[3], kw, dil_w, stride_w,
                   out->dims[2]) != 0)
        return -1;
    const int want[4] = {in->dims[0], out->dims[1], out->dims[2], in->dims[3]};
    if (graph_check_dims(name, "output", out, 4, want) != 0 ||
        graph_check_disjoint_bytes(name, out, a->u8 ? 1 : 4, "the input", in, a->u8 ? 1 : 4) != 0)
        return -1;
    pool_params *p = malloc(sizeof *p);
    if (!p) return acl_fail("%s: out of memory", name);
    *p = (pool_params){
        .max = op == ACL_POOL_MAX,
        .u8 = a->u8 != 0,
        .include_pad = count_include_pad != 0,
        .n = in->dims[0],
        .h = in->dims[1],
        .w = in->dims[2],
        .c = in->dims[3],
        .oh = out->dims[1],
        .ow = out->dims[2],
        .kh = kh,
        .kw = kw,
        .stride_h = stride_h,
        .stride_w = stride_w,
        .dil_h = dil_h,
        .dil_w = dil_w,
        .pad_top = pads[0],
        .pad_left = pads[1],
        .pad_bottom = pads[2],
        .pad_right = pads[3],
        /* A uint8 tensor's bytes, for pool_rows_u8 to read as such. */
        .x = a->u8 ? (const float *)(const void *)graph_ptr_u8(g, in) : graph_ptr(g, in),
        .y = a->u8 ? (float *)(void *)graph_ptr_u8(g, out) : graph_ptr(g, out),
    };
    /* ox * stride_w - pad_left >= 0 and its last tap before the input's end */
    const int last = p->w - 1 - (kw - 1) * dil_w + pads[1];
    p->inside_lo = acl_min((pads[1] + stride_w - 1) / stride_w, p->ow);
    p->inside_hi =
        last < 0 ? p->inside_lo : acl_max(p->inside_lo, acl_min(last / stride_w + 1, p->ow));
    return graph_add(g, pool_run, NULL, p);
}

/* ---- global average pooling ------------------------------------------------ */

typedef struct {
    int n, pixels, c, blocks, chunks;  /* per image: channel blocks, pixel chunks */
    const float *x;
    float *y;
    float partial[];  /* [n][chunks][c]: each chunk's sums */
} gap_params;

/* Rows are (image, channel block, pixel chunk) triples, a fixed cut whatever
 * the threads, so the chunks' sums, added in order, give the same bits. */
static void gap_rows(const void *arg, size_t begin, size_t end)
{
    const gap_params *p = arg;
    const size_t per_image = (size_t)p->blocks * p->chunks;
    for (size_t r = begin; r < end; r++) {
        const int n = (int)(r / per_image), block = (int)(r % per_image / (size_t)p->chunks);
        const int chunk = (int)(r % (size_t)p->chunks), c0 = block * GAP_CHANNEL_BLOCK;
        const int len = acl_min(GAP_CHANNEL_BLOCK, p->c - c0);
        const int px1 = acl_min(p->pixels, (chunk + 1) * GAP_PIXEL_CHUNK);
        const float *x =
            p->x + ((size_t)n * p->pixels + (size_t)chunk * GAP_PIXEL_CHUNK) * p->c + c0;
        const size_t pixels = (size_t)(px1 - chunk * GAP_PIXEL_CHUNK);
        float *sum = (float *)p->partial + ((size_t)n * p->chunks + chunk) * p->c + c0;
        if (len == GAP_CHANNEL_BLOCK)  /* a constant width stays in registers */
            fold_rows(ACL_REDUCE_SUM, x, pixels, (size_t)p->c, GAP_CHANNEL_BLOCK, sum);
        else fold_rows(ACL_REDUCE_SUM, x, pixels, (size_t)p->c, len, sum);
    }
}

static int gap_run(const void *arg, const acl_exec *ex)
{
    const gap_params *p = arg;
    const size_t rows = (size_t)p->n * p->blocks * p->chunks;
    if (graph_parallel(ex, rows, (size_t)GAP_PIXEL_CHUNK * GAP_CHANNEL_BLOCK, gap_rows, p) != 0)
        return -1;
    /* The chunks' sums pairwise, in place: chunk k takes k + step's. */
    const float scale = 1.0f / (float)p->pixels;
    for (int n = 0; n < p->n; n++) {
        float *chunk = (float *)p->partial + (size_t)n * p->chunks * p->c;
        for (int step = 1; step < p->chunks; step *= 2)
            for (int k = 0; k + step < p->chunks; k += 2 * step) {
                float *restrict to = chunk + (size_t)k * p->c;
                const float *restrict from = chunk + (size_t)(k + step) * p->c;
                for (int ch = 0; ch < p->c; ch++) to[ch] += from[ch];
            }
        float *restrict y = p->y + (size_t)n * p->c;
        for (int ch = 0; ch < p->c; ch++) y[ch] = chunk[ch] * scale;
    }
    return 0;
}

int graph_op_global_average_pool(acl_graph *g, const acl_global_average_pool_attrs *a, int nin,
                                 const acl_tensor *in, const acl_tensor *out)
{
    const char *name = "global average pool";
    size_t count;
    if (graph_check_ranked(g, name, "input", in, 4, &count) != 0 ||
        graph_check_tensor(g, name, "output", out, &count) != 0)
        return -1;
    const int want[4] = {in->dims[0], 1, 1, in->dims[3]};
    if (graph_check_dims(name, "output", out, 4, want) != 0 ||
        graph_check_disjoint(name, out, "the input", in, 0) != 0)
        return -1;
    const int n = in->dims[0], pixels = in->dims[1] * in->dims[2], c = in->dims[3];
    const int chunks = acl_max(1, acl_div_up(pixels, GAP_PIXEL_CHUNK));
    gap_params *p = malloc(sizeof *p + (size_t)n * chunks * c * sizeof(float));
    if (!p) return acl_fail("%s: out of memory", name);
    *p = (gap_params){n,
                      pixels,
                      c,
                      acl_div_up(c, GAP_CHANNEL_BLOCK),
                      chunks,
                      graph_ptr(g, in),
                      graph_ptr(g, out)};
    return graph_add(g, gap_run, NULL, p);
}
