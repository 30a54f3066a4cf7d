/* int8 convolutions (conv_int8.h): packing at create, the three algorithms'
 * runs.  Work is cut along output pixels only (blocks of them for the GEMM
 * algorithms, output rows for depthwise), and every output value is summed
 * in one fixed order whatever the split, so every core split gives the same
 * bytes. */
#include <math.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "conv_int8.h"
#include "int8.h"
#include "internal.h"
#include "pool.h"
#include "requant.h"

/* A block's im2col rows fill about this many bytes (half of a 128 KB L2 slice
 * leaves room for the packed B panels streaming past)... */
#define BLOCK_BYTES (64 * 1024)
/* ...but never fewer pixels than this, so each B panel serves several A panels. */
#define MIN_BLOCK_PIXELS 64
/* ...nor more than fill this many bytes of int32 sums, so that they are still
 * in L2 when the requantisation reads them back: MobileNetV2's 112x112
 * 16 -> 96 pointwise (K = 16, so its time is the epilogue's as much as the
 * GEMM's) had 4096-pixel blocks, 1.5 MB of sums, and took 0.077 ms where
 * 455-pixel ones take 0.068.  Blocks down to 64 pixels, 16 KB here, were
 * faster still for that layer but slowed the 56x56 24 -> 144 ones by 15%. */
#define ACC_BYTES (256 * 1024)
#define SCRATCH_ALIGN 64
/* Bytes past a block's im2col rows that copy_run may write. */
#define COLS_SLACK 64
/* The GEMM work is cut panel by panel (gemm_range) where a group's packed B
 * is larger than its A rows and than this: a B that stays in a core's L2
 * gains nothing, and cores writing the two halves of every output row slowed
 * MobileNetV2's 14x14 64 -> 384 pointwise from 0.013 to 0.024 ms (its
 * requantisation three times slower). */
#define PANEL_SPLIT_BYTES (512 * 1024)
/* Depthwise: channels in blocks of DW_BLOCK int32 lanes (one AVX-512
 * register, two AVX2 or four NEON ones), DW_RUN output pixels' sums of a
 * block kept in registers while the taps go by, as the fp32
 * depthwise_channel_block does: each input vector is loaded once per tap
 * and pixel, each weight vector once per tap and run, and nothing but the
 * finished sums goes through memory. */
#define DW_BLOCK 16
#define DW_RUN 8
typedef int32_t dw_vec __attribute__((vector_size(DW_BLOCK * sizeof(int32_t))));
typedef uint8_t dw_bytes __attribute__((vector_size(DW_BLOCK)));
/* Taps a weight vector covers.  With VNNI, four: vpdpbusd adds four u8 x s8
 * products into each int32 lane, so the four taps' bytes of a channel are
 * interleaved into one lane (dw_gather4) and its weights packed alike, where
 * widening each tap and multiplying in int32 took three instructions per tap
 * (MobileNetV2's 112x112 depthwise layers ran slower than onnxruntime's). */
#if defined(__AVX512VNNI__) && defined(__AVX512VBMI__) && defined(__AVX512BW__) &&                 \
    defined(__AVX512VL__)
#define DW_STEP 4
#else
#define DW_STEP 1
#endif

enum { ALGO_POINTWISE, ALGO_IM2COL, ALGO_DEPTHWISE };
static const char *const algo_names[] = {"pointwise", "im2col", "depthwise"};

struct acl_conv_int8 {
    acl_conv_shape s;
    int oh, ow, m;         /* m: output pixels, n * oh * ow */
    int cg, ocg, taps, k;  /* per group: input and output channels; k = taps * cg */
    int kg;                /* the K the GEMM is given (kgemm_of) */
    int algo;
    const acl_ukernel_int8 *uk;   /* NULL for depthwise */
    uint8_t *packed;              /* GEMM: group after group, group_bytes each */
    size_t group_bytes;
    int32_t *dw_weight;           /* depthwise: [block][step][DW_BLOCK], zero-padded */
    int32_t *dw_start;            /* depthwise: what its sums start from (pack_depthwise) */
    uint8_t *dw_pad;              /* depthwise: za bytes, what a padding tap reads */
    int32_t *colsum;              /* oc: each output channel's weight sum */
    int32_t *offset;              /* GEMM: oc, bias - za * colsum where int32 holds it, or NULL */
    float *scale;                 /* oc: x_scale * w_scale[o] / y_scale */
    int32_t *bias;                /* oc, or NULL */
    int32_t za, zc;
    uint8_t lo, hi;               /* the fused activation as a uint8 range */
    int block_cap;                /* GEMM: most output pixels in one block, a multiple of MR */
    int workers;                  /* scratch slices reserved */
    int dw_folded;                /* depthwise: dw_start holds bias - za * colsum */
    size_t cols_bytes, acc_bytes, apack_bytes, worker_bytes;  /* one worker's slice */
};

static size_t align_up(size_t n) { return (n + SCRATCH_ALIGN - 1) & ~(size_t)(SCRATCH_ALIGN - 1); }

static int round_up(int a, int b) { return acl_div_up(a, b) * b; }

/* A real bound quantised with the output's scale, as a uint8 clamp. */
static uint8_t quantize_bound(float real, float scale, int zero_point)
{
    const float q = fminf(fmaxf(real / scale, -512.0f), 512.0f);
    const int v = (int)nearbyintf(q) + zero_point;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static int check_shape(const acl_conv_shape *s)
{
    if (acl_conv_check(s, "reference", NULL) != 0) return -1;
    if (s->transposed) return acl_fail("a transposed convolution has no int8 algorithm");
    if (s->has_residual)
        return acl_fail("a residual Add is not fused into an int8 convolution (has_residual=1)");
    if (s->act != ACL_ACT_NONE && s->act != ACL_ACT_RELU && s->act != ACL_ACT_CLIP)
        return acl_fail("activation %d cannot be fused into an int8 convolution (none, relu "
                        "and clip can: they are clamps of the uint8 output)",
                        s->act);
    return 0;
}

static int check_quant(const acl_conv_shape *s, const acl_conv_int8_quant *q)
{
    if (!(q->x_scale > 0.0f) || !isfinite(q->x_scale) || !(q->y_scale > 0.0f) ||
        !isfinite(q->y_scale))
        return acl_fail("x_scale and y_scale must be positive and finite, got %g and %g",
                        (double)q->x_scale, (double)q->y_scale);
    if (q->x_zero_point < 0 || q->x_zero_point > 255 || q->y_zero_point < 0 ||
        q->y_zero_point > 255)
        return acl_fail("x_zero_point and y_zero_point must be 0..255 (uint8), got %d and %d",
                        q->x_zero_point, q->y_zero_point);
    if (!q->w_scale || (q->w_scale_count != 1 && q->w_scale_count != (size_t)s->oc))
        return acl_fail("w_scale must hold 1 or oc = %d values, got %zu", s->oc,
                        q->w_scale ? q->w_scale_count : 0);
    for (size_t i = 0; i < q->w_scale_count; i++)
        if (!(q->w_scale[i] > 0.0f) || !isfinite(q->w_scale[i]))
            return acl_fail("w_scale[%zu] = %g: weight scales must be positive and finite", i,
                            (double)q->w_scale[i]);
    return 0;
}

/* weight (OIHW floats) -> int8 in [group][tap][Cg] rows, one per output channel. */
static int int8_weights(const acl_conv_int8 *c, const float *weight, int8_t *rows)
{
    for (int o = 0; o < c->s.oc; o++)
        for (int ci = 0; ci < c->cg; ci++)
            for (int t = 0; t < c->taps; t++) {
                const size_t i = ((size_t)o * c->cg + ci) * c->taps + t;
                const float v = weight[i];
                if (!(v >= -128.0f && v <= 127.0f) || v != nearbyintf(v))
                    return acl_fail("weight[%zu] = %g is not an int8 value", i, (double)v);
                rows[((size_t)o * c->taps + t) * c->cg + ci] = (int8_t)v;
            }
    return 0;
}

/* The GEMM algorithms: each group's B (K x ocg, row k = tap * Cg + ci) packed. */
static int pack_gemm(acl_conv_int8 *c, const int8_t *rows)
{
    const int k = c->k, ocg = c->ocg;
    c->group_bytes = acl_gemm_int8_packed_b_size(c->uk, k, ocg);
    c->packed = acl_alloc(c->group_bytes * (size_t)c->s.group);
    int8_t *b = acl_alloc((size_t)k * ocg);
    int rc = c->packed && b ? 0 : -1;
    for (int g = 0; rc == 0 && g < c->s.group; g++) {
        for (int j = 0; j < ocg; j++)
            for (int kk = 0; kk < k; kk++)
                b[(size_t)kk * ocg + j] = rows[((size_t)g * ocg + j) * k + kk];
        uint8_t *packed = c->packed + (size_t)g * c->group_bytes;
        acl_gemm_int8_pack_b(c->uk, k, ocg, b, ocg, packed);
        acl_gemm_int8_column_sums(c->uk, ocg, k, packed, c->colsum + (size_t)g * ocg);
    }
    acl_free(b);
    return rc;
}

/* Depthwise: a block of DW_BLOCK channels' weights step after step
 * ([block][step][lane]), the last block and step zero-padded, so each
 * step's weights are one aligned vector: an int32 per tap, or with DW_STEP 4
 * the four taps' int8 in a lane's bytes, tap t in byte t % 4 (the byte
 * dw_gather4 puts its input in).  dw_pad, what a padding tap reads, is za
 * over whole blocks and as far on as a run's last pixel reads (depthwise_rows). */
static int pack_depthwise(acl_conv_int8 *c, const int8_t *rows)
{
    const int ch = c->s.oc, padded = round_up(ch, DW_BLOCK), steps = acl_div_up(c->taps, DW_STEP);
    c->dw_weight = acl_alloc((size_t)steps * padded * sizeof(int32_t));
    const size_t pad_bytes = (size_t)padded + (size_t)(DW_RUN - 1) * c->s.stride_w * ch;
    c->dw_pad = acl_alloc(pad_bytes);
    if (!c->dw_weight || !c->dw_pad) return -1;
    memset(c->dw_pad, c->za, pad_bytes);
    memset(c->dw_weight, 0, (size_t)steps * padded * sizeof(int32_t));
    for (int o = 0; o < ch; o++) {
        c->colsum[o] = 0;
        int32_t *w = c->dw_weight + (size_t)(o / DW_BLOCK) * steps * DW_BLOCK + o % DW_BLOCK;
        for (int t = 0; t < c->taps; t++) {
            const int8_t v = rows[(size_t)o * c->taps + t];
            int32_t *lane = w + (size_t)(t / DW_STEP) * DW_BLOCK;
            if (DW_STEP == 1) *lane = v;
            else ((int8_t *)(void *)lane)[t % DW_STEP] = v;
            c->colsum[o] += v;
        }
    }
    return 0;
}

/* A depthwise convolution's sums start from bias - za * colsum, which the
 * epilogue would add in int64 otherwise; its requantisation then converts
 * them from int32 straight away (requant.c), the same float.  Where the start
 * and taps * 255 * 128 could overflow int32, they start from 0 and the
 * epilogue does it all. */
static int depthwise_start(acl_conv_int8 *c)
{
    const int ch = c->s.oc, padded = round_up(ch, DW_BLOCK);
    if (!(c->dw_start = acl_alloc((size_t)padded * sizeof(int32_t)))) return -1;
    memset(c->dw_start, 0, (size_t)padded * sizeof(int32_t));
    const int64_t room = INT32_MAX - (int64_t)c->taps * 255 * 128;
    int fits = 1;
    for (int o = 0; o < ch; o++) {
        const int64_t v = (c->bias ? c->bias[o] : 0) - (int64_t)c->za * c->colsum[o];
        fits &= v <= room && v >= -room;
    }
    for (int o = 0; fits && o < ch; o++)
        c->dw_start[o] = (int32_t)((c->bias ? c->bias[o] : 0) - (int64_t)c->za * c->colsum[o]);
    c->dw_folded = fits;
    return 0;
}

static int channel_slack(const acl_conv_int8 *c) { return c->uk ? c->uk->nr : 0; }

/* The GEMM epilogue's bias - za * colsum in int32 (requant.h's offset) where
 * no sum, |sum| <= K * 255 * 128, plus it can leave int32: the epilogue then
 * adds it in int32 rather than in int64, ResNet-18's layers everywhere. */
static int gemm_offset(acl_conv_int8 *c)
{
    const int64_t room = INT32_MAX - (int64_t)c->k * 255 * 128;
    for (int o = 0; o < c->s.oc; o++) {
        const int64_t v = (c->bias ? c->bias[o] : 0) - (int64_t)c->za * c->colsum[o];
        if (v > room || v < -room) return 0;
    }
    if (!(c->offset = acl_alloc((size_t)(c->s.oc + channel_slack(c)) * sizeof(int32_t)))) return -1;
    memset(c->offset, 0, (size_t)(c->s.oc + channel_slack(c)) * sizeof(int32_t));
    for (int o = 0; o < c->s.oc; o++)
        c->offset[o] = (int32_t)((c->bias ? c->bias[o] : 0) - (int64_t)c->za * c->colsum[o]);
    return 0;
}

static int pick_kernel(acl_conv_int8 *c, const char *ukernel)
{
    if (ukernel && *ukernel) {
        c->uk = acl_int8_ukernel_find(ukernel);
        if (!c->uk)
            return acl_fail("int8 micro-kernel '%s' is unknown or this CPU cannot run it", ukernel);
    } else {
        const acl_ukernel_int8 *const *list;
        const int n = acl_int8_ukernels_available(&list);
        if (n < 1) return acl_fail("this CPU runs no int8 micro-kernel");
        /* Fastest first; but where a group has 16 output channels or fewer,
         * the first 16 columns wide: a wider one computes columns for
         * nothing (MobileNetV2's 112x112 32 -> 16 pointwise: 0.107 ms on
         * 8x32c4-rows, 0.051 on 8x16c4-rows, one core). */
        c->uk = list[0];
        for (int i = 0; c->ocg <= 16 && c->uk->nr > 16 && i < n; i++)
            if (list[i]->nr == 16) c->uk = list[i];
    }
    return acl_gemm_int8_check(c->uk, c->k);
}

/* Per-worker scratch: im2col rows, int32 sums and a packed A panel. */
static void plan_scratch(acl_conv_int8 *c)
{
    c->workers = acl_cpu_count();
    if (c->algo == ALGO_DEPTHWISE) {
        /* A run's finished sums (every channel block's), then its pixels'
         * tap pointers and the output row's input rows. */
        c->acc_bytes = align_up((size_t)DW_RUN * round_up(c->s.oc, DW_BLOCK) * sizeof(int32_t));
        c->worker_bytes =
            c->acc_bytes + align_up((size_t)(DW_RUN * c->taps + c->s.kh) * sizeof(const uint8_t *));
        return;
    }
    const int mr = c->uk->mr, row = c->kg * c->s.group;
    const int acc_cap = (int)(ACC_BYTES / (c->ocg * sizeof(int32_t)));
    c->block_cap =
        acl_min(round_up(acl_max(MIN_BLOCK_PIXELS, acl_min(BLOCK_BYTES / row, acc_cap)), mr),
                round_up(c->m, mr));
    c->cols_bytes = c->algo == ALGO_IM2COL ? align_up((size_t)c->block_cap * row + COLS_SLACK) : 0;
    c->acc_bytes = align_up((size_t)c->block_cap * c->ocg * sizeof(int32_t));
    c->apack_bytes = align_up(acl_gemm_int8_packed_a_bytes(c->uk, c->block_cap, c->kg));
    c->worker_bytes = c->cols_bytes + c->acc_bytes + c->apack_bytes;
}

/* k, except for a rows kernel's one-group im2col: k rounded up to KR, the
 * im2col rows padded to match (at za, which meets B's zero padding), so
 * that they hold whole K groups and the GEMM reads them in place rather
 * than copying every row (a first layer's K = 147). */
static int kgemm_of(const acl_conv_int8 *c)
{
    return c->algo == ALGO_IM2COL && c->s.group == 1 && c->uk->rows_fn ? round_up(c->k, c->uk->kr)
                                                                       : c->k;
}

static int setup(acl_conv_int8 *c, const acl_conv_shape *s, const char *ukernel,
                 const float *weight, const acl_conv_int8_quant *q)
{
    if (check_shape(s) != 0 || check_quant(s, q) != 0) return -1;
    c->s = *s;
    acl_conv_out_size(s, &c->oh, &c->ow);
    c->m = s->n * c->oh * c->ow;
    c->cg = s->c / s->group;
    c->ocg = s->oc / s->group;
    c->taps = s->kh * s->kw;
    c->k = c->taps * c->cg;
    c->za = q->x_zero_point;
    c->zc = q->y_zero_point;
    c->lo = s->act == ACL_ACT_NONE   ? 0
            : s->act == ACL_ACT_RELU ? (uint8_t)c->zc
                                     : quantize_bound(s->act_min, q->y_scale, c->zc);
    c->hi = s->act == ACL_ACT_CLIP ? quantize_bound(s->act_max, q->y_scale, c->zc) : 255;
    if (c->cg == 1 && c->ocg == 1) c->algo = ALGO_DEPTHWISE;
    else if (s->kh == 1 && s->kw == 1 && s->stride_h == 1 && s->stride_w == 1 && !s->pad_top &&
             !s->pad_left && !s->pad_bottom && !s->pad_right)
        c->algo = ALGO_POINTWISE;
    else c->algo = ALGO_IM2COL;
    if (c->algo != ALGO_DEPTHWISE && pick_kernel(c, ukernel) != 0) return -1;
    c->kg = c->algo == ALGO_DEPTHWISE ? c->k : kgemm_of(c);
    c->colsum = acl_alloc((size_t)s->oc * sizeof(int32_t));
    /* NR entries past the last channel: a requantising kernel's last panel
     * reads a whole NR of scales and offsets (int8.h). */
    c->scale = acl_alloc((size_t)(s->oc + channel_slack(c)) * sizeof(float));
    if (!c->colsum || !c->scale) return -1;
    memset(c->scale, 0, (size_t)(s->oc + channel_slack(c)) * sizeof(float));
    /* In float and in this order, as onnxruntime's QLinearConv folds them. */
    for (int o = 0; o < s->oc; o++)
        c->scale[o] = q->x_scale * q->w_scale[q->w_scale_count == 1 ? 0 : o] / q->y_scale;
    if (q->bias) {
        if (!(c->bias = acl_alloc((size_t)s->oc * sizeof(int32_t)))) return -1;
        for (int o = 0; o < s->oc; o++) c->bias[o] = q->bias[o];
    }
    int8_t *rows = acl_alloc((size_t)s->oc * c->k);
    int rc = rows ? int8_weights(c, weight, rows) : -1;
    if (rc == 0) rc = c->algo == ALGO_DEPTHWISE ? pack_depthwise(c, rows) : pack_gemm(c, rows);
    if (rc == 0 && c->algo == ALGO_DEPTHWISE) rc = depthwise_start(c);
    if (rc == 0 && c->algo != ALGO_DEPTHWISE) rc = gemm_offset(c);
    acl_free(rows);
    if (rc == 0) plan_scratch(c);
    return rc;
}

int acl_conv_int8_create(const acl_conv_shape *s, const char *ukernel, const float *weight,
                         const acl_conv_int8_quant *q, acl_conv_int8 **out)
{
    *out = NULL;
    acl_conv_int8 *c = calloc(1, sizeof *c);
    if (!c) return acl_fail("out of memory creating an int8 convolution");
    if (setup(c, s, ukernel, weight, q) != 0) {
        acl_conv_int8_destroy(c);
        return -1;
    }
    *out = c;
    return 0;
}

void acl_conv_int8_destroy(acl_conv_int8 *c)
{
    if (!c) return;
    acl_free(c->packed);
    acl_free(c->dw_weight);
    acl_free(c->dw_start);
    acl_free(c->dw_pad);
    acl_free(c->colsum);
    acl_free(c->offset);
    acl_free(c->scale);
    acl_free(c->bias);
    free(c);
}

size_t acl_conv_int8_scratch_bytes(const acl_conv_int8 *c)
{
    return c->worker_bytes * (size_t)c->workers;
}

const char *acl_conv_int8_algorithm(const acl_conv_int8 *c) { return algo_names[c->algo]; }

const char *acl_conv_int8_ukernel(const acl_conv_int8 *c) { return c->uk ? c->uk->name : ""; }

/* ---- runs ---------------------------------------------------------------------- */

typedef struct {
    const acl_conv_int8 *c;
    const uint8_t *x;
    uint8_t *y;
    uint8_t *scratch;
    long rows;        /* GEMM: tiles (gemm_range); depthwise: output rows */
    int units;        /* rows cut into units */
    int panels;       /* GEMM: NR-column panels of a group */
    int by_panel;     /* GEMM: the tiles ordered panel by panel (gemm_range) */
} run_ctx;

/* Output pixel p's receptive field into dst ([group][tap][Cg]), padding at za. */
static void copy_pixel(const acl_conv_int8 *c, const uint8_t *x, int p, uint8_t *dst)
{
    const acl_conv_shape *s = &c->s;
    const int ox = p % c->ow, oy = p / c->ow % c->oh, b = p / (c->ow * c->oh);
    const int ix0 = ox * s->stride_w - s->pad_left;
    if (s->group == 1 && s->dil_w == 1) {
        /* A kernel row's taps are one run of kw * C bytes in NHWC: one copy
         * per kernel row, not per tap (a first layer's taps are 3 bytes). */
        const int lo = acl_min(s->kw, acl_max(0, -ix0)),
                  hi = acl_max(lo, acl_min(s->kw, s->w - ix0));
        const size_t ch = (size_t)s->c;
        for (int ky = 0; ky < s->kh; ky++, dst += s->kw * ch) {
            const int iy = oy * s->stride_h - s->pad_top + ky * s->dil_h;
            if (iy < 0 || iy >= s->h) {
                memset(dst, c->za, s->kw * ch);
                continue;
            }
            if (lo) memset(dst, c->za, lo * ch);
            memcpy(dst + lo * ch, x + ((size_t)(b * s->h + iy) * s->w + ix0 + lo) * ch,
                   (hi - lo) * ch);
            if (hi < s->kw) memset(dst + hi * ch, c->za, (s->kw - hi) * ch);
        }
        if (c->kg > c->k) memset(dst, c->za, (size_t)(c->kg - c->k));
        return;
    }
    for (int g = 0; g < s->group; g++)
        for (int ky = 0; ky < s->kh; ky++) {
            const int iy = oy * s->stride_h - s->pad_top + ky * s->dil_h;
            for (int kx = 0; kx < s->kw; kx++, dst += c->cg) {
                const int ix = ix0 + kx * s->dil_w;
                if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w) memset(dst, c->za, (size_t)c->cg);
                else
                    memcpy(dst, x + ((size_t)(b * s->h + iy) * s->w + ix) * s->c + g * c->cg,
                           (size_t)c->cg);
            }
        }
    if (c->kg > c->k) memset(dst, c->za, (size_t)(c->kg - c->k));
}

/* len bytes from src to dst, and with AVX-512 up to 63 bytes past dst's
 * end: each run is a masked load and a whole-vector store, which a later
 * run, the row's K padding or the scratch's slack (COLS_SLACK) overwrites.
 * An im2col row's runs are short (a first layer's kernel row of 7 pixels x
 * 3 channels is 21 bytes), and a library call for each, with the per-pixel
 * index arithmetic, took two fifths of ResNet-18's conv1 and twice the
 * GEMM's time in MobileNetV2's first layer; a masked store was itself half
 * the copy's time on Zen. */
static inline void copy_run(uint8_t *dst, const uint8_t *src, size_t len)
{
#if defined(__AVX512BW__)
    for (; len >= 64; len -= 64, src += 64, dst += 64)
        _mm512_storeu_si512(dst, _mm512_loadu_si512(src));
    if (len) _mm512_storeu_si512(dst, _mm512_maskz_loadu_epi8(~0ull >> (64 - len), src));
#else
    memcpy(dst, src, len);
#endif
}

/* The im2col rows of output pixels [p0, p1) into cols (row bytes apart):
 * a one-group, horizontally undilated pixel whose taps all lie inside the
 * input is kh runs of kw * C bytes, its position stepped along rather than
 * divided out per pixel; the others go through copy_pixel. */
static void copy_block(const acl_conv_int8 *c, const uint8_t *x, int p0, int p1, uint8_t *cols,
                       int row)
{
    const acl_conv_shape *s = &c->s;
    if (s->group != 1 || s->dil_w != 1) {
        for (int p = p0; p < p1; p++) copy_pixel(c, x, p, cols + (size_t)(p - p0) * row);
        return;
    }
    /* Locals, as the byte stores could otherwise alias c and s. */
    const int kh = s->kh, kw = s->kw, h = s->h, w = s->w, ow = c->ow, oh = c->oh;
    const int sw = s->stride_w, sh = s->stride_h, pl = s->pad_left, pt = s->pad_top;
    const size_t run = (size_t)kw * s->c, pad = (size_t)(c->kg - c->k);
    const size_t krow = (size_t)s->dil_h * w * s->c;
    const int za = c->za, ylast = (kh - 1) * s->dil_h;
    int ox = p0 % ow, oy = p0 / ow % oh, b = p0 / (ow * oh);
    for (int p = p0; p < p1; p++) {
        uint8_t *dst = cols + (size_t)(p - p0) * row;
        const int ix0 = ox * sw - pl, iy0 = oy * sh - pt;
        if (ix0 >= 0 && ix0 + kw <= w && iy0 >= 0 && iy0 + ylast < h) {
            const uint8_t *src = x + ((size_t)(b * h + iy0) * w + ix0) * s->c;
            for (int ky = 0; ky < kh; ky++) copy_run(dst + ky * run, src + ky * krow, run);
            if (pad) memset(dst + kh * run, za, pad);
        } else copy_pixel(c, x, p, dst);
        if (++ox == ow) {
            ox = 0;
            if (++oy == oh) oy = 0, b++;
        }
    }
}

/* Output pixels [p0, p1) for the output channels [j0, j1) of every group:
 * their im2col rows (unless pointwise), one GEMM per group on the packed B
 * panels of those channels, the sums requantised into y. */
static void gemm_span(const run_ctx *r, int p0, int p1, int j0, int j1, uint8_t *slice)
{
    const acl_conv_int8 *c = r->c;
    const int row = c->kg * c->s.group, oc = c->s.oc, rows = p1 - p0;
    uint8_t *cols = slice;
    int32_t *acc = (int32_t *)(void *)(slice + c->cols_bytes);
    uint8_t *apack = slice + c->cols_bytes + c->acc_bytes;
    const uint8_t *a;
    int lda;
    if (c->algo == ALGO_POINTWISE) {
        a = r->x + (size_t)p0 * c->s.c;  /* 1x1 unstrided: the pixels are the rows */
        lda = c->s.c;
    } else {
        copy_block(c, r->x, p0, p1, cols, row);
        a = cols;
        lda = row;
    }
    /* Panels are contiguous, so the ones from channel j0 on start where a
     * packed B of j0 columns would end. */
    const size_t skip = acl_gemm_int8_packed_b_size(c->uk, c->kg, j0);
    for (int g = 0; g < c->s.group; g++) {
        const int o0 = g * c->ocg + j0;
        const uint8_t *ag = a + (size_t)g * (c->algo == ALGO_POINTWISE ? c->cg : c->k);
        const void *bg = c->packed + (size_t)g * c->group_bytes + skip;
        uint8_t *yg = r->y + (size_t)p0 * oc + o0;
        if (c->offset && c->uk->rows_requant_fn) {
            const acl_int8_tile_requant q = {c->offset + o0, c->scale + o0, c->zc, c->lo, c->hi};
            acl_gemm_int8_requant(c->uk, rows, j1 - j0, c->kg, ag, lda, bg, &q, yg, oc, apack);
            continue;
        }
        acl_gemm_int8_scratch(c->uk, rows, j1 - j0, c->kg, ag, lda, bg, acc, c->ocg, apack);
        const acl_requant rq = {
            c->scale + o0, c->bias ? c->bias + o0 : NULL,    c->colsum + o0, c->za, c->zc, c->lo,
            c->hi,         c->offset ? c->offset + o0 : NULL};
        acl_requantize_u8(&rq, rows, j1 - j0, acc, c->ocg, yg, oc);
    }
}

/* Pixel tiles [t0, t1) x panels [q0, q1), in blocks of at most block_cap
 * pixels (the im2col rows and sums the scratch holds). */
static void gemm_rect(const run_ctx *r, int t0, int t1, int q0, int q1, uint8_t *slice)
{
    const acl_conv_int8 *c = r->c;
    const int mr = c->uk->mr, nr = c->uk->nr, cap = c->block_cap / mr;
    for (int t = t0; t < t1; t += cap)
        gemm_span(r, t * mr, acl_min(c->m, acl_min(t1, t + cap) * mr), q0 * nr,
                  acl_min(c->ocg, q1 * nr), slice);
}

/* Work [w0, w1) of the MR x NR tiles, ordered pixel tile by pixel tile (each
 * tile's panels in turn) or, where a group's packed B outweighs its A rows,
 * panel by panel: a range that starts or ends inside a tile's panels (or a
 * panel's tiles) takes only those there, so every unit gets the same number
 * of tiles to within one.  Whole pixel blocks gave ResNet-18's 14x14 layers
 * 128 and 68 pixels on two cores, its 7x7 ones 32 and 17; and a split by
 * panels lets each core stream only its share of B (2.4 MB in a 3x3 with
 * 512 channels, past a core's L2), at the price of copying all the A rows
 * (PANEL_SPLIT_BYTES). */
static void gemm_range(const run_ctx *r, long w0, long w1, uint8_t *slice)
{
    const int tiles = acl_div_up(r->c->m, r->c->uk->mr);
    const int inner = r->by_panel ? tiles : r->panels;
    for (long w = w0; w < w1;) {
        const int o = (int)(w / inner), i0 = (int)(w % inner);
        const long left = w1 - w;
        /* outer [o, o1) x inner [i0, i1) */
        int o1 = o + 1, i1 = left < inner - i0 ? i0 + (int)left : inner;
        if (i0 == 0 && left >= inner) o1 = o + (int)(left / inner), i1 = inner;
        if (r->by_panel) gemm_rect(r, i0, i1, o, o1, slice);
        else gemm_rect(r, o, o1, i0, i1, slice);
        w += (long)(o1 - o) * (i1 - i0);
    }
}

/* Where output pixel ox of the row whose input rows are rows[ky] (NULL
 * outside the input) reads each tap's channels: its input pixel, or the
 * row of za bytes for a padding tap (which the epilogue's - za * colsum
 * then cancels), so the sums below need no branch.  A pixel whose taps all
 * lie inside the row's width skips the column checks: finding the pointers
 * with them cost more than the sums of a 32-channel map. */
static void dw_taps(const acl_conv_int8 *c, const uint8_t *const *rows, int ox,
                    const uint8_t **taps)
{
    const acl_conv_shape *s = &c->s;
    const int ix0 = ox * s->stride_w - s->pad_left;
    const size_t ch = (size_t)s->c;
    if (ix0 >= 0 && ix0 + (s->kw - 1) * s->dil_w < s->w) {
        for (int ky = 0; ky < s->kh; ky++)
            for (int kx = 0; kx < s->kw; kx++)
                *taps++ = rows[ky] ? rows[ky] + (size_t)(ix0 + kx * s->dil_w) * ch : c->dw_pad;
        return;
    }
    for (int ky = 0; ky < s->kh; ky++)
        for (int kx = 0; kx < s->kw; kx++) {
            const int ix = ix0 + kx * s->dil_w;
            *taps++ = rows[ky] && ix >= 0 && ix < s->w ? rows[ky] + (size_t)ix * ch : c->dw_pad;
        }
}

/* 16 bytes widened to int32 lanes.  GCC turns __builtin_convertvector of
 * bytes into a byte-by-byte extraction (slower than the whole direct loop
 * was), so x86 says vpmovzxbd itself. */
static inline dw_vec dw_widen(const uint8_t *p)
{
    dw_vec out;
#if defined(__AVX512F__)
    const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
    memcpy(&out, &v, sizeof out);
#elif defined(__AVX2__)
    const __m256i lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
    const __m256i hi =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(p + 8)));
    memcpy(&out, &lo, sizeof lo);
    memcpy((char *)&out + sizeof lo, &hi, sizeof hi);
#else
    dw_bytes v;
    memcpy(&v, p, sizeof v);
    out = __builtin_convertvector(v, dw_vec);
#endif
    return out;
}

/* DW_BLOCK channels' bytes from p widened to int32; a partial last block
 * (len < DW_BLOCK) reads only its len bytes, so no load runs past the
 * tensor, and its other lanes meet zero weights. */
static inline __attribute__((always_inline)) dw_vec dw_load(const uint8_t *p, int len)
{
    if (len == DW_BLOCK) return dw_widen(p);
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    /* One masked load: the copy below, a library call per pixel and tap,
     * made GhostNet's 8-channel 3x3 on 112x112 take 1.4 ms. */
    const __m512i w = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8((__mmask16)((1u << len) - 1), p));
    dw_vec out;
    memcpy(&out, &w, sizeof out);
    return out;
#endif
    uint8_t v[DW_BLOCK] = {0};
    memcpy(v, p, (size_t)len);
    return dw_widen(v);
}

#if DW_STEP == 4
/* The bytes of the block o0 bytes past the tap pointers p[0..3], interleaved:
 * lane c holds channel c's byte of p[0], p[1], p[2] and p[3], in this
 * order.  A partial block (len < DW_BLOCK) reads only its len bytes. */
static inline __attribute__((always_inline)) __m512i dw_gather4(const uint8_t *const *p, size_t o0,
                                                                int len)
{
#define DW_LANE(c) c, 16 + c, 32 + c, 48 + c
    static const uint8_t interleave[64] __attribute__((aligned(64))) = {
        DW_LANE(0),  DW_LANE(1),  DW_LANE(2),  DW_LANE(3), DW_LANE(4),  DW_LANE(5),
        DW_LANE(6),  DW_LANE(7),  DW_LANE(8),  DW_LANE(9), DW_LANE(10), DW_LANE(11),
        DW_LANE(12), DW_LANE(13), DW_LANE(14), DW_LANE(15)};
#undef DW_LANE
    __m512i v;
    if (len == DW_BLOCK) {
        v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(const void *)(p[0] + o0)));
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(const void *)(p[1] + o0)), 1);
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(const void *)(p[2] + o0)), 2);
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(const void *)(p[3] + o0)), 3);
    } else {
        const __mmask16 m = (__mmask16)((1u << len) - 1);
        v = _mm512_castsi128_si512(_mm_maskz_loadu_epi8(m, p[0] + o0));
        v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(m, p[1] + o0), 1);
        v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(m, p[2] + o0), 2);
        v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(m, p[3] + o0), 3);
    }
    return _mm512_permutexvar_epi8(_mm512_load_si512(interleave), v);
}
#endif

/* The sums of `pixels` (<= DW_RUN) output pixels for the channel block at
 * o0 into acc[p * ldacc + lane].  Pixel p's tap t reads from
 * taps[p * tstride + t] + p * step: its own pointers (step 0), or the first
 * pixel's (tstride 0) step bytes on per pixel. */
static inline __attribute__((always_inline)) void
dw_run(const uint8_t *const *taps, int ntaps, int tstride, size_t step, int pixels, int o0, int len,
       const int32_t *w, const int32_t *start, int32_t *acc, int ldacc)
{
    dw_vec sum[DW_RUN], first;
    memcpy(&first, start, sizeof first);
#pragma GCC unroll 8
    for (int p = 0; p < DW_RUN; p++) sum[p] = first;
#if DW_STEP == 4
    int t = 0;
    for (; t + 4 <= ntaps; t += 4, w += DW_BLOCK) {
        const __m512i wv = _mm512_load_si512(w);
#pragma GCC unroll 8
        for (int p = 0; p < DW_RUN; p++)
            if (p < pixels)
                sum[p] = (dw_vec)_mm512_dpbusd_epi32(
                    (__m512i)sum[p], dw_gather4(taps + p * tstride + t, o0 + p * step, len), wv);
    }
    if (t < ntaps) {
        /* The last 1..3 taps, their weights' other bytes zero.  One tap
         * (every odd square kernel's case) is its bytes widened, zero in the
         * lanes' other bytes; two or three read the last tap again. */
        const __m512i wv = _mm512_load_si512(w);
        const int last = ntaps - 1;
#pragma GCC unroll 8
        for (int p = 0; p < DW_RUN; p++) {
            if (p >= pixels) continue;
            const uint8_t *const *q = taps + p * tstride;
            const size_t off = o0 + p * step;
            const __m512i x =
                t == last ? (__m512i)dw_load(q[t] + off, len)
                          : dw_gather4((const uint8_t *const[4]){q[t], q[t + 1],
                                                                 q[acl_min(t + 2, last)], q[last]},
                                       off, len);
            sum[p] = (dw_vec)_mm512_dpbusd_epi32((__m512i)sum[p], x, wv);
        }
    }
#else
    for (int t = 0; t < ntaps; t++) {
        dw_vec wv;
        memcpy(&wv, w + (size_t)t * DW_BLOCK, sizeof wv);
#pragma GCC unroll 8
        for (int p = 0; p < DW_RUN; p++)
            if (p < pixels) sum[p] += dw_load(taps[p * tstride + t] + o0 + p * step, len) * wv;
    }
#endif
#pragma GCC unroll 8
    for (int p = 0; p < DW_RUN; p++)
        if (p < pixels) memcpy(acc + (size_t)p * ldacc, &sum[p], sizeof sum[p]);
}

/* Output rows [begin, end) (of n * oh): DW_RUN pixels of a row at a time,
 * their tap pointers found once, every channel block summed, then the run
 * requantised at once (a call per block of 16 channels cost more than the
 * sums). */
static void depthwise_rows(const run_ctx *r, int begin, int end, uint8_t *slice)
{
    const acl_conv_int8 *c = r->c;
    const int ch = c->s.c, ntaps = c->taps, ldacc = round_up(ch, DW_BLOCK);
    const int steps = acl_div_up(ntaps, DW_STEP);
    const size_t step = (size_t)c->s.stride_w * ch;
    int32_t *acc = (int32_t *)(void *)slice;
    const acl_requant rq =
        c->dw_folded
            ? (acl_requant){c->scale, NULL, c->colsum, 0, c->zc, c->lo, c->hi, NULL}
            : (acl_requant){c->scale, c->bias, c->colsum, c->za, c->zc, c->lo, c->hi, NULL};
    const uint8_t **taps = (const uint8_t **)(void *)(slice + c->acc_bytes);
    const uint8_t **in_rows = taps + DW_RUN * ntaps;
    const acl_conv_shape *s = &c->s;
    for (int orow = begin; orow < end; orow++) {
        const int b = orow / c->oh, oy = orow % c->oh;
        for (int ky = 0; ky < s->kh; ky++) {
            const int iy = oy * s->stride_h - s->pad_top + ky * s->dil_h;
            in_rows[ky] = iy < 0 || iy >= s->h ? NULL : r->x + (size_t)(b * s->h + iy) * s->w * ch;
        }
        for (int ox0 = 0; ox0 < c->ow; ox0 += DW_RUN) {
            const int pixels = acl_min(DW_RUN, c->ow - ox0);
            /* A whole run whose taps all lie inside the row's width: the
             * first pixel's tap pointers serve every pixel, step bytes on
             * for each (a padding row's too: dw_pad reaches that far).
             * Finding each pixel's own took over a third of MobileNetV2's
             * 112x112 32-channel layer's time. */
            const int ix0 = ox0 * s->stride_w - s->pad_left;
            const int inner = pixels == DW_RUN && ix0 >= 0 &&
                              ix0 + (DW_RUN - 1) * s->stride_w + (s->kw - 1) * s->dil_w < s->w;
            if (inner) dw_taps(c, in_rows, ox0, taps);
            else
                for (int p = 0; p < pixels; p++) dw_taps(c, in_rows, ox0 + p, taps + p * ntaps);
            uint8_t *y = r->y + ((size_t)orow * c->ow + ox0) * ch;
            for (int o0 = 0; o0 < ch; o0 += DW_BLOCK) {
                const int len = acl_min(DW_BLOCK, ch - o0);
                const int32_t *w = c->dw_weight + (size_t)o0 * steps;
                /* Whole blocks and a 3x3's taps as constants: the loops
                 * then unroll without a test per pixel or load (MobileNetV2's
                 * depthwise layers took 0.7x the time with them). */
                const int32_t *start = c->dw_start + o0;
                if (inner && len == DW_BLOCK && ntaps == 9)
                    dw_run(taps, 9, 0, step, DW_RUN, o0, DW_BLOCK, w, start, acc + o0, ldacc);
                else if (inner)
                    dw_run(taps, ntaps, 0, step, DW_RUN, o0, len, w, start, acc + o0, ldacc);
                else if (len == DW_BLOCK && ntaps == 9 && pixels == DW_RUN)
                    dw_run(taps, 9, 9, 0, DW_RUN, o0, DW_BLOCK, w, start, acc + o0, ldacc);
                else if (len == DW_BLOCK && ntaps == 9)
                    dw_run(taps, 9, 9, 0, pixels, o0, DW_BLOCK, w, start, acc + o0, ldacc);
                else dw_run(taps, ntaps, ntaps, 0, pixels, o0, len, w, start, acc + o0, ldacc);
            }
            acl_requantize_u8(&rq, pixels, ch, acc, ldacc, y, ch);
        }
    }
}

static void run_units(void *arg, int unit_begin, int unit_end, int worker)
{
    const run_ctx *r = arg;
    const long begin = (long)((long long)unit_begin * r->rows / r->units);
    const long end = (long)((long long)unit_end * r->rows / r->units);
    if (begin >= end) return;
    uint8_t *slice = r->scratch + (size_t)worker * r->c->worker_bytes;
    if (r->c->algo == ALGO_DEPTHWISE) depthwise_rows(r, (int)begin, (int)end, slice);
    else gemm_range(r, begin, end, slice);
}

int acl_conv_int8_run(const acl_conv_int8 *c, const acl_exec *ex, const uint8_t *x, uint8_t *y,
                      void *scratch)
{
    if (acl_exec_active(ex) > c->workers)
        return acl_fail("the int8 convolution has scratch for %d workers, the split uses %d",
                        c->workers, acl_exec_active(ex));
    run_ctx r = {c, x, y, scratch, 0, 0, 0, 0};
    if (c->algo == ALGO_DEPTHWISE) r.rows = c->s.n * c->oh;
    else {
        r.panels = acl_div_up(c->ocg, c->uk->nr);
        r.rows = (long)acl_div_up(c->m, c->uk->mr) * r.panels;
        r.by_panel = c->group_bytes > (size_t)c->m * c->kg && c->group_bytes > PANEL_SPLIT_BYTES;
    }
    r.units = r.rows < ex->workloads ? (int)r.rows : ex->workloads;
    return acl_parallel(ex, r.units, run_units, &r);
}
