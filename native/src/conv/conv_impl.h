/* What the convolution algorithms share: the convolution object, the
 * per-algorithm vtable and the helpers every algorithm builds on.
 *
 * conv.c owns the public API: it validates the shape, resolves the algorithm
 * and micro-kernel, copies the bias and times the whole run; an algorithm only
 * checks its own support rules and does its stages.
 */
#ifndef ACL_CONV_IMPL_H
#define ACL_CONV_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "aclengine.h"
#include "activation.h"
#include "gemm.h"
#include "internal.h"
#include "pool.h"

/* Sizes derived once from the shape. */
typedef struct {
    int oh, ow;
    int cg, ocg;  /* input / output channels per group */
    int taps;     /* kh * kw */
    int m;        /* output pixels over the batch: n * oh * ow */
} conv_dims;

/* The tensors of one run, and its scratch: conv->scratch_bytes that the run
 * may overwrite, its own or lent by the caller (ACL_ALIGN-aligned). */
typedef struct {
    const float *x;
    const float *residual;  /* NULL without a residual */
    float *y;
    char *scratch;
} conv_io;

struct acl_conv;

/* The shapes an algorithm runs (resolve() refuses the others before check()). */
enum conv_shapes { CONV_ORDINARY, CONV_TRANSPOSED, CONV_EITHER };

typedef struct conv_algo conv_algo;
struct conv_algo {
    const char *name;
    int uses_ukernel;
    int shapes;           /* enum conv_shapes; 0, ordinary, when not set */
    int fp16;             /* takes an fp16 micro-kernel (ukernel.h): a GEMM on packed A */
    int reads_nchw;       /* reads an NCHW input too (conv_read_nchw) */
    const void *variant;  /* parameters shared implementations read (Winograd's F(m, r)) */
    /* 0 if the algorithm supports the (already valid) shape with uk (NULL for
     * direct algorithms); otherwise acl_fail with the reason. */
    int (*check)(const conv_algo *self, const acl_conv_shape *s, const conv_dims *d,
                 const acl_ukernel *uk);
    /* Packs the weights into conv->impl and reserves the run's buffers in
     * the scratch (conv_scratch_reserve); persistent state stays in impl. */
    int (*create)(struct acl_conv *conv, const float *weight);
    /* Runs the stages, adding each stage's wall time to t. */
    int (*run)(struct acl_conv *conv, const acl_exec *ex, const conv_io *io, acl_stage_times *t);
    void (*destroy)(struct acl_conv *conv);
};

struct acl_conv {
    acl_conv_shape s;
    conv_dims d;
    const conv_algo *algo;
    const acl_ukernel *uk;  /* NULL for direct algorithms */
    float *bias;            /* oc floats, zeros when the model has none */
    void *impl;             /* the algorithm's own state */
    size_t scratch_bytes;   /* what a run overwrites, reserved at create */
    void *own_scratch;      /* NULL when the caller lends the scratch per run */
    int x_nchw;             /* the input is NCHW, not NHWC (conv_read_nchw) */
};

/* ---- scratch ----------------------------------------------------------------
 * At create an algorithm reserves each run buffer and keeps its offset; at
 * run it finds the buffer at that offset of io->scratch. */
size_t conv_scratch_reserve(struct acl_conv *conv, size_t bytes);

static inline void *conv_scratch_at(const conv_io *io, size_t offset)
{
    return io->scratch + offset;
}

/* Every algorithm, each defined as conv_<name> by its own file, in the order
 * acl_algorithm_get() lists them. */
#define CONV_ALGORITHMS(X)                                                                  \
    X(reference) X(im2col) X(gemm1x1) X(indirect) X(winograd_2x2_3x3) X(winograd_4x4_3x3) \
    X(winograd_1x2_1x3) X(winograd_1x4_1x3) X(winograd_2x1_3x1) X(winograd_4x1_3x1)        \
    X(depthwise_pixel) X(depthwise_channel_block) X(deconv_col2im) X(deconv_phase)         \
    X(deconv_depthwise) X(deconv_dot) X(direct_nhwc) X(indirect_regions)                   \
    X(grouped_channel_block) X(grouped_direct) X(direct_dot) X(winograd_3x3_4x4)           \
    X(winograd_2x2_5x5) X(winograd_4x4_5x5) X(winograd_2x2_6x6) X(winograd_3x3_6x6)
#define CONV_DECLARE_ALGORITHM(name) extern const conv_algo conv_##name;
CONV_ALGORITHMS(CONV_DECLARE_ALGORITHM)

/* The taps [*k0, *k1) of one kernel axis whose input coordinate
 * o * stride - pad + k * dil lies inside [0, n): direct algorithms skip the
 * padding through their loop bounds instead of a test per tap. */
static inline void conv_taps_inside(int o, int stride, int pad, int dil, int k, int n, int *k0,
                                    int *k1)
{
    const int base = o * stride - pad;
    *k0 = base >= 0 ? 0 : acl_min(k, (dil - 1 - base) / dil);
    *k1 = base >= n ? *k0 : acl_max(*k0, acl_min(k, (n - base + dil - 1) / dil));
}

/* The output columns [*lo, *hi) of a row (ow wide) whose taps all fall
 * inside the input: the direct algorithms' unchecked runs. */
static inline void conv_interior_columns(const acl_conv_shape *s, int ow, int *lo, int *hi)
{
    const int first = acl_div_up(s->pad_left, s->stride_w);
    const int reach = s->w - 1 + s->pad_left - (s->kw - 1) * s->dil_w;
    const int last = reach < 0 ? -1 : reach / s->stride_w;  /* inclusive */
    *lo = acl_min(first, ow);
    *hi = acl_max(*lo, acl_min(last + 1, ow));
}

/* For a transposed shape: the input coordinate whose tap k lands on output
 * coordinate o (o = i * stride - pad + k * dil), or -1 when none does. */
static inline int conv_transposed_source(int o, int k, int stride, int pad, int dil, int n)
{
    const int v = o + pad - k * dil;
    if (v < 0 || v % stride) return -1;
    return v / stride < n ? v / stride : -1;
}

/* ---- epilogue -------------------------------------------------------------
 * y[i] = act(acc[i] + bias[i] + residual[i]) in the same order of operations
 * as the GEMM's fused epilogue.  residual may be NULL; y may be acc (direct
 * algorithms accumulate in the output row).  Its two steps apart let a row
 * of small pixels take the activation in one call. */
static inline void conv_add_bias(float *y, const float *acc, const float *restrict bias,
                                 const float *restrict residual, int len)
{
    if (residual)
        for (int i = 0; i < len; i++) y[i] = acc[i] + bias[i] + residual[i];
    else
        for (int i = 0; i < len; i++) y[i] = acc[i] + bias[i];
}

static inline void conv_activate_in_place(const acl_conv_shape *s, float *y, size_t n)
{
    float a, b;
    acl_conv_act_params(s, &a, &b);
    acl_activate(s->act, a, b, y, y, n);
}

/* Whether the activation is a clamp (ReLU, Clip), which conv_finish applies
 * in the pass that adds the bias. */
static inline int conv_act_is_clamp(const acl_conv_shape *s)
{
    return s->act == ACL_ACT_RELU || s->act == ACL_ACT_CLIP;
}

/* A clamp in the bias pass, written as acl_activate writes it (the same
 * bits): the output is stored once, where a second pass read it back
 * (Winograd's output transform on a 256x256 map spent a third of its time
 * in the ReLU's loads of what it had just stored). */
static inline void conv_finish(const acl_conv_shape *s, float *y, const float *acc,
                               const float *restrict bias, const float *restrict residual, int len)
{
    if (!conv_act_is_clamp(s)) {
        conv_add_bias(y, acc, bias, residual, len);
        conv_activate_in_place(s, y, (size_t)len);
        return;
    }
    float lo, hi;
    acl_conv_act_params(s, &lo, &hi);
    const int relu = s->act == ACL_ACT_RELU;
    for (int i = 0; i < len; i++) {  /* -O3 unswitches the invariant tests */
        float v = acc[i] + bias[i];
        if (residual) v += residual[i];
        if (relu) {
            y[i] = v > 0.0f ? v : 0.0f;
        } else {
            v = v < lo ? lo : v;
            y[i] = v > hi ? hi : v;
        }
    }
}

/* ---- stages ---------------------------------------------------------------- */

/* Runs fn over rows [0, rows) on the pool, cut like the GEMM's tiles into
 * min(workloads, rows) contiguous units that acl_parallel hands out by core
 * weight; the stage's wall time is added to *ms. */
int conv_stage(const acl_exec *ex, int rows, acl_task_fn fn, void *ctx, double *ms);

/* ---- transposed gathers (deconv_walk.c) --------------------------------------
 * Where a transposed convolution's taps land, worked out once at create so
 * that a run divides nothing: output row oy receives the (tap, input row)
 * pairs [row_start[oy], row_start[oy + 1]), taps ascending; column tap kx
 * takes input columns col_in[kx] + j to output columns col_first[kx] +
 * stride_w * j, j < col_count[kx]. */
typedef struct {
    int *row_start, *row_tap, *row_in;
    int *col_first, *col_in, *col_count;
    float *bias_row;  /* the bias of every pixel of an output row: one add per row */
} conv_transposed_map;

int conv_transposed_map_init(conv_transposed_map *map, const struct acl_conv *conv);
void conv_transposed_map_free(conv_transposed_map *map);

/* Output rows of a transposed convolution: each is zeroed, land() adds what
 * every (row tap, column tap) pair brings, in that order, then the epilogue
 * applies in place.  A row is done on one thread, so every split gives the
 * same bits.  land NULL: nothing lands (phases without taps). */
typedef struct conv_transposed_walk conv_transposed_walk;
struct conv_transposed_walk {
    const struct acl_conv *conv;
    const conv_transposed_map *map;
    const conv_io *io;
    /* Adds input pixels in_pixel + j through `tap` to the output pixels at
     * y + j * y_step, j < count. */
    void (*land)(const conv_transposed_walk *walk, float *y, ptrdiff_t y_step, size_t in_pixel,
                 int count, int tap);
    const float *data;  /* what land() reads besides the input (the run's columns) */
};

/* conv_stage's fn over the n * oh output rows; arg: a conv_transposed_walk. */
void conv_transposed_rows(void *arg, int begin, int end, int worker);

/* ---- GEMM batches (conv_gemm.c) ---------------------------------------------
 * One batch of equally shaped GEMMs (one per group, or per group and Winograd
 * point): B packed once per job at create, A panels for interleaved
 * micro-kernels reserved in the scratch, A/C pointers filled per run. */
typedef struct {
    const acl_ukernel *uk;
    int njobs, ks, kc, n;
    acl_packed_b *b;
    acl_gemm_job *jobs;
    size_t panel_floats;  /* one job's A panels, 0 for non-interleaved kernels */
    size_t a_packed_at;   /* scratch offset of njobs panels */
} conv_gemm;

int conv_gemm_create(conv_gemm *g, struct acl_conv *conv, int njobs, int m, int ks, int kc, int n);
/* Packs job j's B from OIHW-like strides (see acl_pack_b). */
int conv_gemm_pack(conv_gemm *g, int j, const float *src, ptrdiff_t stride_n, ptrdiff_t stride_c,
                   ptrdiff_t stride_t);
/* The fused epilogue of the output columns from `col` on: the bias, the
 * activation and `residual` (NULL for none). */
acl_epilogue conv_gemm_epilogue(const struct acl_conv *conv, ptrdiff_t col, const float *residual);
/* Points job g (one per group) at group g's columns of the run's output, with
 * the fused epilogue. */
void conv_gemm_group_outputs(conv_gemm *g, const struct acl_conv *conv, const conv_io *io);
/* Points the jobs at their A panels in io's scratch and runs the batch;
 * pack_a counts as pre, compute as gemm. */
int conv_gemm_run(conv_gemm *g, const acl_exec *ex, const conv_io *io, acl_stage_times *t);
void conv_gemm_destroy(conv_gemm *g);

/* Fails with "<algorithm> with <ukernel>: <reason>" unless uk runs per-call K x N. */
int conv_check_ukernel(const char *algorithm, const acl_ukernel *uk, int k, int n);
/* The same for an algorithm reading A through row pointers, which needs a
 * hybrid or smallk micro-kernel. */
int conv_check_row_ukernel(const char *algorithm, const acl_ukernel *uk, int k, int n);

/* ---- indirection (indirection.c) --------------------------------------------
 * For each output pixel, kh*kw pointers to the input pixels its taps read (a
 * zero row for padding).  Pixel indices are computed at create; the pointers
 * live in the scratch and are rebased on each run's input in a parallel pre
 * stage: one store per pointer, 18 us for a 56x56 3x3 layer against 1.7 ms of
 * GEMM, so there is no point caching them across runs. */
typedef struct {
    int ptrs_per_row;   /* per output row: ow * taps */
    int rows;           /* output rows: n * oh; the rebase's parallel split */
    int c;              /* floats per input pixel */
    int32_t *pixel;     /* input pixel index, -1 for padding */
    size_t ptr_at;      /* scratch offset of the pointers */
    float *zero;        /* c zeros */
} conv_indirection;

int conv_indirection_create(conv_indirection *ind, struct acl_conv *conv);
/* The pixel indices and the zero row alone, for an algorithm that reads
 * the indices itself (no pointers, no rebase). */
int conv_indirection_pixels(conv_indirection *ind, const struct acl_conv *conv);
/* The buffers alone, rows x ptrs_per_row entries, for an algorithm that fills
 * ind->pixel itself (a transposed convolution's taps). */
int conv_indirection_alloc(conv_indirection *ind, struct acl_conv *conv, int rows,
                           int ptrs_per_row);
/* Writes the pointers for io's input into io's scratch and returns them
 * (NULL on failure). */
const float *const *conv_indirection_rebase(const conv_indirection *ind, const acl_exec *ex,
                                            const conv_io *io, double *ms);
void conv_indirection_destroy(conv_indirection *ind);

#endif
