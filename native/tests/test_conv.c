/* Convolution tests: every algorithm x every micro-kernel over random shapes
 * against `reference`, bit-identical results across core weights and
 * workloads, and the reasons given for unsupported combinations.
 *
 *   test_conv [--cases N] [--seed S]   the tests; closes with "N passed, N failed"
 *   test_conv --fp16 [...]             only the fp16 micro-kernels' cases (qemu with
 *                                      asimdhp runs the rest already under the
 *                                      default CPU)
 *   test_conv --bench                  single-core timings of a ResNet-18 layer
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aclengine.h"
#include "test_harness.h"

#define TOLERANCE 1e-4

static float *random_floats(size_t count)
{
    float *p = malloc((count ? count : 1) * sizeof *p);
    for (size_t i = 0; i < count; i++) p[i] = rnd_float();
    return p;
}

/* ---- shapes ------------------------------------------------------------------ */

static void describe(const acl_conv_shape *s, char *buf, size_t len)
{
    snprintf(
        buf, len,
        "n%d h%d w%d c%d -> oc%d k%dx%d s%d,%d d%d,%d pad t%d l%d b%d r%d g%d act%d[%g,%g|%g,%g]%s"
        "%s out_pad %d,%d",
        s->n, s->h, s->w, s->c, s->oc, s->kh, s->kw, s->stride_h, s->stride_w, s->dil_h, s->dil_w,
        s->pad_top, s->pad_left, s->pad_bottom, s->pad_right, s->group, s->act, (double)s->act_min,
        (double)s->act_max, (double)s->act_alpha, (double)s->act_beta,
        s->has_residual ? " +res" : "", s->transposed ? " transposed" : "", s->out_pad_h,
        s->out_pad_w);
}

enum {
    FAMILY_GENERAL,
    FAMILY_3X3,
    FAMILY_1D,
    FAMILY_1X1,
    FAMILY_DEPTHWISE,
    FAMILY_GROUPED,
    FAMILY_TRANSPOSED,
    FAMILIES
};

/* A random activation and residual for s.  Clip bounds at 1 to 2 times the
 * output's spread (the std of a sum of K products of U(-1, 1) values is
 * sqrt(K)/3): the tails are clipped at every size while max|ref|, the
 * error's yardstick, stays comparable to the convolution's magnitude. */
static void random_epilogue(acl_conv_shape *s)
{
    float spread = sqrtf((float)(s->c / s->group * s->kh * s->kw)) / 3.0f;
    s->act = rnd(0, ACL_ACT_COUNT - 1);
    s->act_min = -0.5f * spread * (float)rnd(2, 4);
    s->act_max = 0.5f * spread * (float)rnd(2, 4);
    s->act_alpha = 1.0f / (spread * (float)rnd(2, 4));
    s->act_beta = 0.5f;
    s->has_residual = rnd(0, 1);
}

/* A random shape of one family, each family aimed at some algorithms. */
static acl_conv_shape random_shape(int family)
{
    acl_conv_shape s = {0};
    int wide = rnd(0, 9) == 0;  /* enough channels for several K blocks / channel blocks */
    s.n = rnd(1, 2);
    s.h = rnd(1, 13);
    s.w = rnd(1, 13);
    s.c = wide ? rnd(32, 80) : rnd(1, 20);
    /* also few input channels into many outputs: a first layer's several
     * output channel blocks per pass (direct_nhwc) */
    s.oc = wide || rnd(0, 7) == 0 ? rnd(33, 80) : rnd(1, 20);
    s.kh = rnd(1, 5);
    s.kw = rnd(1, 5);
    s.stride_h = rnd(1, 3);
    s.stride_w = rnd(1, 3);
    s.dil_h = rnd(1, 2);
    s.dil_w = rnd(1, 2);
    s.group = 1;
    int max_pad = 2;
    switch (family) {
    case FAMILY_3X3:
    case FAMILY_1D:
        s.kh = family == FAMILY_1D && rnd(0, 1) ? 1 : 3;
        s.kw = s.kh == 1 ? 3 : family == FAMILY_1D ? 1 : 3;
        s.stride_h = s.stride_w = s.dil_h = s.dil_w = 1;
        break;
    case FAMILY_1X1:
        s.kh = s.kw = 1;
        s.stride_h = s.stride_w = rnd(1, 2);
        max_pad = rnd(0, 1);
        break;
    case FAMILY_DEPTHWISE:
        s.group = s.c;
        s.oc = s.c * rnd(1, 3);
        if (rnd(0,
                1)) { /* a dilated kernel's wide padding, or stride 2: borders of several pixels */
            s.oc = s.c;
            s.stride_h = s.stride_w = rnd(0, 2) ? 1 : 2;
            s.kh = s.kw = 3 + 2 * rnd(0, 2);
            s.dil_h = s.dil_w = s.stride_w == 1 ? rnd(1, 3) : 1;
            s.w = rnd(1, 40); /* rows of several interior runs */
            if (rnd(0, 3) == 0) s.group = s.c = s.oc = rnd(257, 290); /* blocks outer, rows inner */
            max_pad = s.dil_w * (s.kw - 1);
        }
        break;
    case FAMILY_GROUPED:
        s.group = rnd(2, 4);
        s.c = s.group * rnd(1, wide ? 20 : 6);
        s.oc = s.group * rnd(1, wide ? 20 : 6);
        if (rnd(0, 1)) s.kh = s.kw = 1;
        break;
    case FAMILY_TRANSPOSED:
        /* Pads up to the kernel's extent, output padding below the stride or
         * the dilation as ONNX allows; a few grouped and depthwise ones. */
        s.transposed = 1;
        s.group = rnd(0, 5) == 0 ? rnd(2, 3) : 1;
        if (rnd(0, 7) == 0) s.group = s.c;
        s.c = s.group == s.c ? s.c : s.group * rnd(1, wide ? 20 : 6);
        s.oc = s.group * rnd(1, wide ? 20 : 6);
        max_pad = s.kh;
        s.out_pad_h = rnd(0, (s.stride_h > s.dil_h ? s.stride_h : s.dil_h) - 1);
        s.out_pad_w = rnd(0, (s.stride_w > s.dil_w ? s.stride_w : s.dil_w) - 1);
        break;
    }
    s.pad_top = rnd(0, max_pad);
    s.pad_left = rnd(0, max_pad);
    s.pad_bottom = rnd(0, max_pad);
    s.pad_right = rnd(0, max_pad);
    random_epilogue(&s);
    return s;
}

/* ---- one convolution problem ---------------------------------------------- */

typedef struct {
    acl_conv_shape s;
    int oh, ow;
    size_t in_count, out_count, weight_count;
    float *x, *w, *bias, *residual, *expected;
    double expected_max;
    float *magnitude; /* per output, sum |x w| + |bias| + |residual|; with fp16 kernels only */
} problem;

static const int one_core[] = {1};
static const acl_exec single = {1, one_core, 1};

/* NULL where none runs (a core without asimdhp, x86). */
static const char *first_fp16_ukernel(void)
{
    static acl_ukernel_info info;
    for (int k = 0; k < acl_ukernel_count(); k++)
        if (acl_ukernel_get(k, &info) == 0 && strcmp(info.precision, "fp16") == 0) return info.name;
    return NULL;
}

static float *absolute(const float *v, size_t count)
{
    if (!v) return NULL;
    float *a = malloc((count ? count : 1) * sizeof *a);
    for (size_t i = 0; i < count; i++) a[i] = fabsf(v[i]);
    return a;
}

/* The reference convolution of |x|, |w|, |bias| and |residual| without the
 * activation: every output's sum of magnitudes. */
static int problem_magnitude(problem *p)
{
    acl_conv_shape s = p->s;
    s.act = ACL_ACT_NONE;
    float *x = absolute(p->x, p->in_count), *w = absolute(p->w, p->weight_count);
    float *bias = absolute(p->bias, (size_t)s.oc), *res = absolute(p->residual, p->out_count);
    p->magnitude = malloc((p->out_count ? p->out_count : 1) * sizeof(float));
    acl_conv *ref;
    int rc = acl_conv_create(&s, "reference", NULL, w, bias, &ref);
    if (rc == 0) rc = acl_conv_run(ref, &single, x, res, p->magnitude, NULL);
    if (rc == 0) acl_conv_destroy(ref);
    free(x);
    free(w);
    free(bias);
    free(res);
    return rc;
}

static int problem_init(problem *p, const acl_conv_shape *s, int with_bias)
{
    memset(p, 0, sizeof *p);
    p->s = *s;
    if (acl_conv_out_size(s, &p->oh, &p->ow) != 0) {
        check(0, "output size: %s", acl_last_error());
        return -1;
    }
    p->in_count = (size_t)s->n * s->h * s->w * s->c;
    p->out_count = (size_t)s->n * p->oh * p->ow * s->oc;
    p->weight_count = (size_t)s->oc * (s->c / s->group) * s->kh * s->kw;
    p->x = random_floats(p->in_count);
    p->w = random_floats(p->weight_count);
    p->bias = with_bias ? random_floats((size_t)s->oc) : NULL;
    p->residual = s->has_residual ? random_floats(p->out_count) : NULL;
    p->expected = malloc(p->out_count * sizeof(float));
    acl_conv *ref;
    if (acl_conv_create(s, "reference", NULL, p->w, p->bias, &ref) != 0 ||
        acl_conv_run(ref, &single, p->x, p->residual, p->expected, NULL) != 0) {
        check(0, "reference: %s", acl_last_error());
        return -1;
    }
    acl_conv_destroy(ref);
    if (first_fp16_ukernel() && problem_magnitude(p) != 0) {
        check(0, "reference of magnitudes: %s", acl_last_error());
        return -1;
    }
    /* A float running max: aarch64 gcc 12's vectorizer crashes on fmax of doubles here. */
    float max = 0.0f;
    for (size_t i = 0; i < p->out_count; i++)
        if (fabsf(p->expected[i]) > max) max = fabsf(p->expected[i]);
    p->expected_max = max;
    return 0;
}

static void problem_free(problem *p)
{
    free(p->x);
    free(p->w);
    free(p->bias);
    free(p->residual);
    free(p->expected);
    free(p->magnitude);
}

/* ---- checking one algorithm + micro-kernel ---------------------------------- */

/* Core-weight vectors and workloads every case runs under; the first is
 * compared with the reference, the others must match it bit for bit. */
static const int w_1[] = {1}, w_11[] = {1, 1}, w_01[] = {0, 1}, w_21[] = {2, 1};
static const acl_exec configs[] = {
    {1, w_1, 1},
    {2, w_11, 3},
    {2, w_01, 16},
    {2, w_21, 16},
};
#define NCONFIGS (int)(sizeof configs / sizeof configs[0])

/* Worst relative error seen per algorithm, for the summary. */
#define MAX_ALGORITHMS 32
static double worst_error[MAX_ALGORITHMS];

static void fail(const problem *p, const char *algorithm, const char *ukernel, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fail(const problem *p, const char *algorithm, const char *ukernel, const char *fmt, ...)
{
    char shape[256], context[320];
    describe(&p->s, shape, sizeof shape);
    snprintf(context, sizeof context, "%s %s [%s]", algorithm, ukernel ? ukernel : "", shape);
    va_list ap;
    va_start(ap, fmt);
    vfail(context, fmt, ap);
    va_end(ap);
}

/* The same convolution created borrowing its scratch needs as much as the one
 * owning it, and run on a lent scratch full of NaNs (nothing may be read
 * before the run writes it) reproduces `expected` (config 0's output) bit
 * for bit. */
static int check_borrowed(const problem *p, const char *algorithm, const char *ukernel,
                          const acl_conv *owner, const float *expected)
{
    acl_conv *conv;
    if (acl_conv_create_borrowing(&p->s, algorithm, ukernel, p->w, p->bias, &conv) != 0) {
        fail(p, algorithm, ukernel, "create borrowing: %s", acl_last_error());
        return 0;
    }
    const size_t bytes = acl_conv_scratch_bytes(conv);
    int ok = bytes == acl_conv_scratch_bytes(owner);
    if (!ok)
        fail(p, algorithm, ukernel, "borrowing needs %zu bytes of scratch, owning %zu", bytes,
             acl_conv_scratch_bytes(owner));
    void *scratch = NULL;
    float *out = malloc(p->out_count * sizeof(float));
    if (ok && posix_memalign(&scratch, 64, bytes ? bytes : 64) != 0) scratch = NULL;
    if (ok && scratch) {
        memset(scratch, 0xff, bytes);
        /* The widest split, so that per-worker buffers all land in it. */
        const acl_exec *ex = acl_cpu_count() >= 2 ? &configs[NCONFIGS - 1] : &single;
        if (acl_conv_run_scratch(conv, ex, p->x, p->residual, out, scratch, NULL) != 0) {
            fail(p, algorithm, ukernel, "run on lent scratch: %s", acl_last_error());
            ok = 0;
        } else if (memcmp(out, expected, p->out_count * sizeof(float)) != 0) {
            fail(p, algorithm, ukernel, "output on a lent scratch differs from its own");
            ok = 0;
        }
    }
    free(scratch);
    free(out);
    acl_conv_destroy(conv);
    return ok;
}

/* max|out - expected| / max|ref| for an fp32 kernel; for an fp16 one, the
 * largest difference over TOLERANCE x max|ref| plus its own bound
 * (acl_fp16_error_bound), in units of TOLERANCE, so both pass below it. */
static double output_error(const problem *p, const float *out, int fp16)
{
    const double steps = acl_fp16_error_bound(p->s.c / p->s.group * p->s.kh * p->s.kw);
    const double scale = fmax(p->expected_max, 1e-6);
    double worst = 0.0;
    for (size_t e = 0; e < p->out_count; e++) {
        const double d = fabs((double)out[e] - p->expected[e]);
        const double r =
            fp16 ? TOLERANCE * d / (TOLERANCE * scale + steps * p->magnitude[e]) : d / scale;
        worst = r > worst || r != r ? r : worst; /* a NaN sticks */
    }
    return worst;
}

static void check_one(const problem *p, int algorithm_index, const char *ukernel, int fp16)
{
    const char *algorithm = acl_algorithm_name(algorithm_index);
    if (acl_conv_check(&p->s, algorithm, ukernel) != 0) return; /* unsupported: not a case */
    acl_conv *conv;
    if (acl_conv_create(&p->s, algorithm, ukernel, p->w, p->bias, &conv) != 0) {
        fail(p, algorithm, ukernel, "create: %s", acl_last_error());
        return;
    }
    float *first = malloc(p->out_count * sizeof(float));
    float *again = malloc(p->out_count * sizeof(float));
    int ncpu = acl_cpu_count(), ok = 1;
    for (int i = 0; ok && i < NCONFIGS; i++) {
        if (configs[i].ncores > ncpu) continue;
        float *out = i == 0 ? first : again;
        memset(out, 0xff, p->out_count * sizeof(float)); /* NaN: unwritten outputs show */
        if (acl_conv_run(conv, &configs[i], p->x, p->residual, out, NULL) != 0) {
            fail(p, algorithm, ukernel, "run: %s", acl_last_error());
            ok = 0;
        } else if (i == 0) {
            const double rel = output_error(p, out, fp16);
            if (!(rel <= TOLERANCE)) {
                fail(p, algorithm, ukernel, "%s = %.3g",
                     fp16 ? "TOLERANCE x |diff| / fp16 bound" : "max|diff| / max|ref|", rel);
                ok = 0;
            }
            if (!fp16 && algorithm_index < MAX_ALGORITHMS && rel > worst_error[algorithm_index])
                worst_error[algorithm_index] = rel;
        } else if (memcmp(first, again, p->out_count * sizeof(float)) != 0) {
            fail(p, algorithm, ukernel, "output of exec config %d differs from config 0", i);
            ok = 0;
        }
    }
    ok = ok && check_borrowed(p, algorithm, ukernel, conv, first);
    passed += ok;
    free(first);
    free(again);
    acl_conv_destroy(conv);
}

static int only_fp16; /* --fp16 */
static int per_style; /* --kernel-per-style: the random shapes too (TSan: threads, not kernels) */
static int fp16_cases; /* convolutions checked on an fp16 micro-kernel */

/* The random shapes check every algorithm with every micro-kernel.  A fixed
 * case checks the algorithm family it was written for (`only`, a name
 * prefix) with one micro-kernel per packing style and precision: the rest
 * would repeat the random shapes' work at sizes that cost minutes under qemu
 * and the sanitizers. */
static void check_all_algorithms(const problem *p, const char *only)
{
    for (int a = 0; a < acl_algorithm_count(); a++) {
        const char *algorithm = acl_algorithm_name(a);
        if (only && strncmp(algorithm, only, strlen(only)) != 0) continue;
        if (!acl_algorithm_uses_ukernel(algorithm)) {
            if (!only_fp16) check_one(p, a, NULL, 0);
            continue;
        }
        char seen[256] = "";
        for (int k = 0; k < acl_ukernel_count(); k++) {
            acl_ukernel_info info;
            acl_ukernel_get(k, &info);
            const int fp16 = strcmp(info.precision, "fp16") == 0;
            const int accepted = acl_conv_check(&p->s, algorithm, info.name) == 0;
            char kind[64];
            snprintf(kind, sizeof kind, "/%s-%s/", info.style, info.precision);
            if ((only || per_style) && accepted && strstr(seen, kind)) continue;
            if (accepted && strlen(seen) + strlen(kind) < sizeof seen) strcat(seen, kind);
            if (fp16 || !only_fp16) check_one(p, a, info.name, fp16);
            fp16_cases += fp16 && accepted;
        }
    }
}

static void run_case(const acl_conv_shape *s, const char *only)
{
    problem p;
    if (problem_init(&p, s, rnd(0, 3) != 0) == 0) check_all_algorithms(&p, only);
    problem_free(&p);
}

/* Winograd's error grows with the channel count and the tile (alpha points per
 * axis): every kernel size at C = 512, and channel counts that end in a
 * partial transform block (C = 300, OC = 140), on an 11 x 11 map, where
 * every output tile size leaves a partial tile. */
static void run_wide_winograd_cases(void)
{
    static const int cases[][4] = {/* kh, kw, c, oc */
                                   {3, 3, 512, 16},  {1, 3, 512, 16},  {3, 1, 512, 16},
                                   {4, 4, 512, 16},  {5, 5, 512, 16},  {6, 6, 512, 16},
                                   {3, 3, 300, 140}, {1, 3, 300, 140}, {3, 1, 300, 140}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int kh = cases[i][0], kw = cases[i][1];
        acl_conv_shape s = {.n = 1,
                            .h = 11,
                            .w = 11,
                            .c = cases[i][2],
                            .oc = cases[i][3],
                            .kh = kh,
                            .kw = kw,
                            .stride_h = 1,
                            .stride_w = 1,
                            .dil_h = 1,
                            .dil_w = 1,
                            .pad_top = kh / 2,
                            .pad_bottom = (kh - 1) / 2,
                            .pad_left = kw / 2,
                            .pad_right = (kw - 1) / 2,
                            .group = 1};
        run_case(&s, "winograd");
    }
}

/* A map large enough that Winograd runs fused (winograd.c: V and M past 4 MB
 * staged, a small U), with partial tiles at the right and bottom edges,
 * asymmetric pads, and the epilogue (a residual and an activation, drawn by
 * problem_init) applied per block. */
static void run_fused_winograd_cases(void)
{
    static const int sizes[][4] = {{70, 71, 96, 24}, {41, 90, 64, 40}};
    for (int i = 0; i < 2; i++) {
        acl_conv_shape s = conv3x3_shape(sizes[i][0], sizes[i][1], sizes[i][2], sizes[i][3], 1);
        s.pad_left = 2;
        s.pad_bottom = 0;
        run_case(&s, "winograd");
    }
}

/* Depthwise rows against the sliding runs' edges (depthwise.c).
 * Rows narrower than a run of pixels (MobileNets' 7x7 maps): one run,
 * reaching into both borders, stores only the row's pixels; the ones past
 * its end would land on the next row.  At stride 1 and 2, dilated, with a
 * partial channel block and a residual.
 * Rows wide enough for interior runs: a border run whose outside columns are
 * exactly the "same" padding's is compiled with them known (CHECK_LEFT,
 * CHECK_RIGHT), any other checked column by column: symmetric and lopsided
 * paddings, stride 1 (dilated or not) and 2, full blocks and a partial one. */
static void run_depthwise_row_cases(void)
{
    static const int cases[][9] = {
        /* n, h=w, c, k, stride, dilation, pad top/left, pad bottom/right, residual */
        {2, 7, 48, 5, 1, 1, 2, 2, 1},
        {2, 7, 20, 3, 1, 1, 1, 1, 1},
        {2, 13, 20, 3, 2, 1, 1, 1, 1},
        {2, 6, 17, 5, 1, 2, 4, 4, 1},
        {2, 3, 16, 3, 1, 1, 1, 1, 1},
        {2, 14, 33, 5, 2, 1, 2, 2, 1},
        /* no sliding run: tap by tap, bordered runs reading zeros */
        {2, 7, 20, 3, 1, 3, 3, 3, 1},
        {2, 12, 17, 3, 2, 2, 2, 2, 1},
        /* wide rows */
        {1, 24, 32, 5, 1, 2, 4, 4, 0},
        {1, 32, 17, 3, 1, 1, 1, 1, 0},
        {1, 26, 16, 7, 1, 1, 3, 3, 0},
        {1, 33, 16, 3, 2, 1, 1, 1, 0},
        {1, 30, 16, 5, 2, 1, 2, 2, 0},
        {1, 24, 16, 5, 1, 2, 4, 0, 0},
        {1, 24, 16, 5, 1, 2, 0, 4, 0},
        {1, 20, 16, 3, 1, 1, 2, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int *c = cases[i];
        acl_conv_shape s = {.n = c[0],
                            .h = c[1],
                            .w = c[1],
                            .c = c[2],
                            .oc = c[2],
                            .kh = c[3],
                            .kw = c[3],
                            .stride_h = c[4],
                            .stride_w = c[4],
                            .dil_h = c[5],
                            .dil_w = c[5],
                            .pad_top = c[6],
                            .pad_left = c[6],
                            .pad_bottom = c[7],
                            .pad_right = c[7],
                            .group = c[2],
                            .has_residual = c[8]};
        run_case(&s, "depthwise");
    }
}

/* Grouped shapes the random ones seldom draw, each with a random epilogue.
 * grouped_direct's groups of whole channel blocks (multiples of 16 output
 * channels): ResNeXt's 16 and 32 channels per group on small maps (one and
 * two blocks a pass), more output than input channels per group (several
 * passes), stride 2, two images (runs across them) and a map smaller than a
 * run.  grouped_channel_block's rows, all in runs, those reaching into a
 * border reading zeros there: 16 channels per group (one group a vector,
 * broadcast) on 14x14 and on a map narrower than a run, and 2, 4 and 8
 * (several a vector, shuffled), strided and dilated.  16 channels per group
 * fill grouped_channel_block's vector with AVX-512 only (NEON's and AVX2's
 * blocks are 8): refused elsewhere, and only those. */
static void run_grouped_cases(void)
{
    static const struct {
        const char *algorithm;
        int h, w, group, cg, ocg, stride, dilation, n;
    } cases[] = {
        {"grouped_direct", 14, 14, 4, 16, 16, 1, 1, 1},
        {"grouped_direct", 7, 7, 3, 32, 32, 1, 1, 1},
        {"grouped_direct", 9, 11, 2, 5, 48, 1, 1, 2},
        {"grouped_direct", 13, 12, 2, 16, 16, 2, 1, 1},
        {"grouped_direct", 3, 3, 2, 8, 32, 1, 1, 1},
        {"grouped_channel_block", 14, 14, 4, 16, 16, 1, 1, 1},
        {"grouped_channel_block", 7, 7, 3, 16, 16, 1, 1, 2},
        {"grouped_channel_block", 9, 11, 5, 4, 4, 2, 1, 1},
        {"grouped_channel_block", 5, 6, 6, 8, 8, 1, 2, 1},
        {"grouped_channel_block", 12, 10, 9, 2, 2, 1, 3, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int group = cases[i].group, dil = cases[i].dilation;
        acl_conv_shape s =
            conv3x3_shape(cases[i].h, cases[i].w, group * cases[i].cg, group * cases[i].ocg, dil);
        s.group = group;
        s.stride_h = s.stride_w = cases[i].stride;
        s.dil_h = s.dil_w = dil;
        s.n = cases[i].n;
        random_epilogue(&s);
        const int accepted = acl_conv_check(&s, cases[i].algorithm, NULL) == 0;
        check(accepted ||
                  (cases[i].cg == 16 && strcmp(cases[i].algorithm, "grouped_channel_block") == 0),
              "%s refused case %zu: %s", cases[i].algorithm, i, acl_last_error());
        if (accepted) run_case(&s, cases[i].algorithm);
    }
}

/* Few output channels, which direct_dot takes (at most 4 everywhere, 8 with
 * AVX-512) and the random shapes draw only on small maps: rows wider than
 * its 256-pixel chunks (the right border in a later chunk), a kernel row's
 * run that ends in a partial vector, a spectrogram's 3x39 kernel, a 1-D
 * filter bank's long strided row, all pixels in the padding's reach, oc = 8
 * (two lanes per output channel with AVX-512), two images. */
static void run_direct_dot_cases(void)
{
    static const int cases[][11] = {
        /* n, h, w, c, oc, kh, kw, stride_w, pad_h, pad_w, dil_h */
        {1, 5, 300, 8, 4, 3, 39, 1, 1, 19, 1}, {1, 5, 300, 8, 8, 3, 39, 1, 1, 19, 1},
        {1, 1, 700, 1, 1, 1, 67, 2, 0, 0, 1},  {2, 9, 20, 33, 1, 3, 3, 1, 1, 1, 1},
        {1, 7, 11, 5, 3, 5, 5, 2, 2, 2, 2},    {1, 3, 4, 2, 2, 3, 7, 1, 1, 5, 1},
        {1, 6, 270, 8, 1, 5, 5, 1, 2, 2, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int *k = cases[i];
        acl_conv_shape s = {.n = k[0],
                            .h = k[1],
                            .w = k[2],
                            .c = k[3],
                            .oc = k[4],
                            .kh = k[5],
                            .kw = k[6],
                            .stride_h = 1,
                            .stride_w = k[7],
                            .dil_h = k[10],
                            .dil_w = 1,
                            .pad_top = k[8],
                            .pad_bottom = k[8],
                            .pad_left = k[9],
                            .pad_right = k[9],
                            .group = 1};
        random_epilogue(&s);
        if (s.oc <= 4)
            check(acl_conv_check(&s, "direct_dot", NULL) == 0, "direct_dot refused case %zu: %s", i,
                  acl_last_error());
        run_case(&s, "direct_dot");
    }
}

/* direct_nhwc's rows wider than its runs, which the random shapes (at most
 * 13 pixels) never draw: with one or three input channels runs of up to 16
 * pixels (fewer as the blocks a pass grow), else of 5 (AVX-512) or 4, the
 * rest by runs of 4 ending at the row's end; over the channel counts
 * compiled as constants (1, 3, 16, 32) and the others (8, 64), strides 1, 2
 * and 3, one to four blocks a pass, a partial block, two images, each with a
 * random epilogue. */
static void run_long_row_direct_cases(void)
{
    static const int cases[][6] = {
        /* h, w, c, oc, stride, n */
        {3, 45, 32, 16, 2, 1}, {4, 40, 3, 16, 1, 2}, {3, 37, 16, 8, 1, 1},  {3, 30, 16, 40, 2, 1},
        {3, 29, 32, 24, 1, 1}, {3, 33, 8, 16, 1, 2}, {2, 50, 32, 64, 3, 1}, {3, 19, 3, 16, 2, 1},
        {3, 41, 64, 16, 1, 1}, {3, 45, 1, 16, 1, 1}, {3, 52, 1, 40, 2, 2},  {3, 37, 3, 32, 1, 1},
        {3, 61, 3, 24, 2, 1},  {2, 47, 1, 64, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int *k = cases[i];
        acl_conv_shape s = conv3x3_shape(k[0], k[1], k[2], k[3], 1);
        s.stride_h = s.stride_w = k[4];
        s.n = k[5];
        random_epilogue(&s);
        check(acl_conv_check(&s, "direct_nhwc", NULL) == 0, "direct_nhwc refused case %zu: %s", i,
              acl_last_error());
        run_case(&s, "direct_nhwc");
    }
}

/* ---- unsupported combinations name their reason ----------------------------- */

static const char *first_ukernel(const char *style)
{
    static acl_ukernel_info info;
    for (int k = 0; k < acl_ukernel_count(); k++)
        if (acl_ukernel_get(k, &info) == 0 && strcmp(info.style, style) == 0) return info.name;
    return NULL;
}

static void expect_rejected(const acl_conv_shape *s, const char *algorithm, const char *ukernel,
                            const char *reason_part)
{
    if (acl_conv_check(s, algorithm, ukernel) == 0)
        check(0, "%s %s accepted a shape it should reject (%s)", algorithm, ukernel ? ukernel : "",
              reason_part);
    else
        check(strstr(acl_last_error(), reason_part) != NULL,
              "%s %s: reason '%s' does not mention '%s'", algorithm, ukernel ? ukernel : "",
              acl_last_error(), reason_part);
}

static void expect_run_rejected(acl_conv *conv, const acl_exec *ex, const float *x,
                                const float *residual, float *y, const char *reason_part)
{
    const int rc = acl_conv_run(conv, ex, x, residual, y, NULL);
    check(rc != 0 && strstr(acl_last_error(), reason_part),
          "acl_conv_run should fail mentioning '%s', got '%s'", reason_part, acl_last_error());
}

/* acl_conv_run refuses a bad execution config or a missing residual. */
static void check_run_rejections(const acl_conv_shape *shape)
{
    acl_conv_shape s = *shape;
    s.has_residual = 1;
    problem p;
    acl_conv *conv;
    static const int idle[] = {0, 0};
    const acl_exec no_core = {2, idle, 1}, no_workload = {1, one_core, 0};
    if (problem_init(&p, &s, 1) != 0 ||
        acl_conv_create(&s, "im2col", first_ukernel("hybrid"), p.w, p.bias, &conv) != 0) {
        check(0, "creating the run-rejection case: %s", acl_last_error());
        return;
    }
    float *y = malloc(p.out_count * sizeof(float));
    expect_run_rejected(conv, &no_core, p.x, p.residual, y, "every core weight is 0");
    expect_run_rejected(conv, &no_workload, p.x, p.residual, y, "workloads");
    expect_run_rejected(conv, &single, p.x, NULL, y, "residual");
    free(y);
    acl_conv_destroy(conv);
    if (acl_conv_create_borrowing(&s, "im2col", first_ukernel("hybrid"), p.w, p.bias, &conv) != 0) {
        check(0, "creating the borrowing run-rejection case: %s", acl_last_error());
    } else {
        y = malloc(p.out_count * sizeof(float));
        expect_run_rejected(conv, &single, p.x, p.residual, y, "acl_conv_run_scratch");
        const int rc = acl_conv_run_scratch(conv, &single, p.x, p.residual, y, NULL, NULL);
        check(rc != 0 && strstr(acl_last_error(), "none was given"),
              "a borrowing run without scratch should fail, got '%s'", acl_last_error());
        free(y);
        acl_conv_destroy(conv);
    }
    problem_free(&p);
}

/* expect_rejected on s, a copy of base with `change` made to it: each case
 * states all it changes, and no case inherits another's. */
#define EXPECT_REJECTED_WITH(change, algorithm, ukernel, reason_part) \
    do {                                                              \
        acl_conv_shape s = base;                                      \
        change;                                                       \
        expect_rejected(&s, algorithm, ukernel, reason_part);         \
    } while (0)

static void check_rejections(void)
{
    const char *hybrid = first_ukernel("hybrid"), *interleaved = first_ukernel("interleaved");
    const acl_conv_shape base = conv3x3_shape(8, 8, 8, 8, 0);
    EXPECT_REJECTED_WITH(s.stride_h = 2, "winograd_4x4_3x3", hybrid, "stride_h=2");
    EXPECT_REJECTED_WITH(s.dil_w = 2, "winograd_2x2_3x3", hybrid, "dil_w=2");
    expect_rejected(&base, "winograd_1x4_1x3", hybrid, "1x3 kernel");
    expect_rejected(&base, "gemm1x1", hybrid, "1x1 kernel");
    expect_rejected(&base, "indirect", interleaved, "hybrid or smallk");
    expect_rejected(&base, "depthwise_pixel", NULL, "group == c");
    expect_rejected(&base, "depthwise_channel_block", hybrid, "takes no micro-kernel");
    EXPECT_REJECTED_WITH((s.group = 8, s.oc = 16), "depthwise_channel_block", NULL,
                         "oc=16 with c=8");
    expect_rejected(&base, "grouped_direct", NULL, "group=1");
    EXPECT_REJECTED_WITH((s.group = 2, s.oc = 12), "grouped_direct", NULL, "got 6");
    EXPECT_REJECTED_WITH(s.oc = 17, "direct_dot", NULL, "oc=17");
    EXPECT_REJECTED_WITH((s.oc = 4, s.dil_w = 2), "direct_dot", NULL, "dil_w == 1");
    EXPECT_REJECTED_WITH((s.oc = 4, s.group = 2), "direct_dot", NULL, "group=2");
    expect_rejected(&base, "im2col", NULL, "micro-kernel");
    expect_rejected(&base, "no_such_algorithm", NULL, "unknown algorithm");
    EXPECT_REJECTED_WITH(s.group = 3, "reference", NULL, "group=3");
    EXPECT_REJECTED_WITH(s.pad_left = -1, "reference", NULL, "pad_left");
    EXPECT_REJECTED_WITH(s.kw = 12, "reference", NULL, "width");
    expect_rejected(&base, "deconv_col2im", hybrid, "runs transposed convolutions only");
    EXPECT_REJECTED_WITH(s.out_pad_h = 1, "reference", NULL,
                         "apply to transposed convolutions only");
    EXPECT_REJECTED_WITH(s.transposed = 1, "im2col", hybrid, "runs ordinary convolutions only");
    EXPECT_REJECTED_WITH(s.transposed = 1, "deconv_phase", interleaved, "hybrid or smallk");
    EXPECT_REJECTED_WITH((s.transposed = 1, s.pad_top = s.pad_bottom = 9), "reference", NULL,
                         "leave no output");
    EXPECT_REJECTED_WITH(s.transposed = 2, "reference", NULL, "transposed must be 0 or 1");
    const char *fp16 = first_fp16_ukernel();
    if (fp16) {
        expect_rejected(&base, "winograd_2x2_3x3", fp16, "computes in fp32 only");
        EXPECT_REJECTED_WITH(s.transposed = 1, "deconv_col2im", fp16, "computes in fp32 only");
    }
    check_run_rejections(&base);
}

/* ---- bench --------------------------------------------------------------- */

static double best_run_ms(acl_conv *conv, const problem *p, float *out, acl_stage_times *best)
{
    acl_stage_times t;
    best->total_ms = INFINITY;
    acl_conv_run(conv, &single, p->x, p->residual, out, &t); /* warm-up */
    for (int r = 0; r < 20; r++) {
        acl_conv_run(conv, &single, p->x, p->residual, out, &t);
        if (t.total_ms < best->total_ms) *best = t;
    }
    return best->total_ms;
}

static int bench(void)
{
    acl_conv_shape s = conv3x3_shape(56, 56, 64, 64, 1);
    s.act = ACL_ACT_RELU;
    static const char *algorithms[] = {"im2col", "indirect", "winograd_2x2_3x3",
                                       "winograd_4x4_3x3"};
    problem p;
    if (problem_init(&p, &s, 1) != 0) return 1;
    double gflop = 2.0 * p.out_count * (s.c / s.group) * s.kh * s.kw * 1e-9;
    float *out = malloc(p.out_count * sizeof(float));
    printf("ResNet-18 conv 1x56x56x64 -> 64, 3x3 pad 1, relu; one core, one workload (%s);\n"
           "GFLOP/s counts the direct convolution's 2*M*N*K flops\n",
           acl_isa());
    for (size_t a = 0; a < sizeof algorithms / sizeof algorithms[0]; a++) {
        acl_stage_times best = {.total_ms = INFINITY}, t;
        const char *best_kernel = "(none)";
        for (int k = 0; k < acl_ukernel_count(); k++) {
            acl_ukernel_info info;
            acl_conv *conv;
            acl_ukernel_get(k, &info);
            if (acl_conv_create(&s, algorithms[a], info.name, p.w, p.bias, &conv) != 0) continue;
            if (best_run_ms(conv, &p, out, &t) < best.total_ms) {
                best = t;
                best_kernel = info.name;
            }
            acl_conv_destroy(conv);
        }
        printf("  %-17s %-22s %7.3f ms (pre %.3f gemm %.3f post %.3f)  %6.1f GFLOP/s\n",
               algorithms[a], best_kernel, best.total_ms, best.pre_ms, best.gemm_ms, best.post_ms,
               gflop / (best.total_ms * 1e-3));
    }
    free(out);
    problem_free(&p);
    return 0;
}

int main(int argc, char **argv)
{
    int cases = 300;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bench") == 0) return bench();
        if (strcmp(argv[i], "--fp16") == 0) only_fp16 = 1;
        else if (strcmp(argv[i], "--kernel-per-style") == 0) per_style = 1;
        else if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc) cases = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            rng_state = strtoull(argv[++i], NULL, 0);
        else {
            fprintf(stderr,
                    "usage: %s [--fp16] [--kernel-per-style] [--cases N] [--seed S] | --bench\n",
                    argv[0]);
            return 2;
        }
    }
    check_rejections();
    if (!only_fp16) {
        run_wide_winograd_cases();
        run_fused_winograd_cases();
        run_depthwise_row_cases();
        run_grouped_cases();
        run_direct_dot_cases();
        run_long_row_direct_cases();
    }
    for (int i = 0; i < cases; i++) {
        acl_conv_shape s;
        int oh, ow;
        do s = random_shape(i % FAMILIES);
        while (acl_conv_out_size(&s, &oh, &ow) != 0);
        run_case(&s, NULL);
    }
    for (int a = 0; a < acl_algorithm_count() && a < MAX_ALGORITHMS; a++)
        printf("  %-24s worst max|diff|/max|ref| %.2e\n", acl_algorithm_name(a), worst_error[a]);
    printf("fp16 cases checked: %d\n", fp16_cases);
    return test_summary();
}
