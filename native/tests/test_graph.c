/* Whole-model program tests: every graph operation over random shapes against
 * naive loops, bit-identical arenas across core weights and workloads, and the
 * one-line errors of bad programs.
 *
 *   test_graph [--cases N] [--seed S]   closes with "N passed, N failed"
 *
 * Each case lays its tensors out in a fresh arena filled with random floats,
 * builds the same one-node program under every exec config, and checks the
 * whole arena after a run: the output within tolerance of the reference,
 * every other float untouched.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aclgraph.h"
#include "test_harness.h"

#define TOL_EXACT 1e-5      /* one rounding per element, or sums of a few terms */
#define TOL_GEMM 1e-4       /* long dot products in a different order */

static void fill_random(float *p, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++) p[i] = scale * rnd_float();
}

static size_t volume(int rank, const int *dims)
{
    size_t v = 1;
    for (int i = 0; i < rank; i++) v *= (size_t)dims[i];
    return v;
}

/* ---- exec configs: the first is checked against the reference, the others
 * must reproduce its arena bit for bit ------------------------------------- */

static const int w_1[] = {1}, w_11[] = {1, 1}, w_01[] = {0, 1}, w_21[] = {2, 1};
static const acl_exec configs[] = {
    {1, w_1, 1},
    {2, w_11, 3},
    {2, w_01, 16},
    {2, w_21, 64},
};
#define NCONFIGS (int)(sizeof configs / sizeof configs[0])

/* ---- a trial: one program, its arena before and the expected arena after ---- */

/* Adds the operation under test; ex is the program's exec (convolutions take it too). */
typedef int (*add_fn)(acl_graph *g, const void *spec, const acl_exec *ex);

typedef struct {
    char desc[256];
    size_t arena, used;          /* used: where the next tensor goes */
    float *init, *expected;
    const acl_tensor *out;
    double tol;
} trial;

static void trial_begin(trial *t, double tol, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void trial_begin(trial *t, double tol, const char *fmt, ...)
{
    memset(t, 0, sizeof *t);
    t->tol = tol;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->desc, sizeof t->desc, fmt, ap);
    va_end(ap);
}

/* Places a tensor after the previous one, a random gap apart. */
static void place(trial *t, acl_tensor *x, int rank, const int *dims)
{
    x->rank = rank;
    memcpy(x->dims, dims, (size_t)rank * sizeof *dims);
    t->used += (size_t)rnd(0, 7);
    x->offset = t->used;
    t->used += volume(rank, dims);
}

/* The output of an elementwise case: over its input when in_place, else placed anew. */
static void place_output(trial *t, acl_tensor *out, const acl_tensor *in, int in_place, int rank,
                         const int *dims)
{
    if (in_place) *out = *in;
    else place(t, out, rank, dims);
}

/* Allocates the arena (random contents) once every tensor is placed. */
static float *trial_arena(trial *t)
{
    t->arena = t->used + (size_t)rnd(1, 8);
    t->init = malloc(t->arena * sizeof(float));
    t->expected = malloc(t->arena * sizeof(float));
    fill_random(t->init, t->arena, 1.0f);
    return t->init;
}

/* Input and output of a one-input operation, the expected arena starting as
 * a copy of the placed one; the arena. */
static float *place_in_out(trial *t, acl_tensor *in, acl_tensor *out, int rank, const int *dims,
                           const int *odims)
{
    place(t, in, rank, dims);
    place(t, out, rank, odims);
    float *arena = trial_arena(t);
    memcpy(t->expected, arena, t->arena * sizeof(float));
    return arena;
}

static void trial_fail(const trial *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void trial_fail(const trial *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(t->desc, fmt, ap);
    va_end(ap);
}

/* The output within tolerance (relative to max|expected|), the rest exact. */
static int check_arena(const trial *t, const float *got)
{
    const size_t o0 = t->out->offset, o1 = o0 + volume(t->out->rank, t->out->dims);
    if (memcmp(got, t->expected, o0 * sizeof *got) != 0 ||
        memcmp(got + o1, t->expected + o1, (t->arena - o1) * sizeof *got) != 0) {
        trial_fail(t, "wrote outside its output [%zu, %zu)", o0, o1);
        return 0;
    }
    float scale = 1e-6f;
    for (size_t i = o0; i < o1; i++)
        if (isfinite(t->expected[i]) && fabsf(t->expected[i]) > scale)
            scale = fabsf(t->expected[i]);
    for (size_t i = o0; i < o1; i++) {
        const float e = t->expected[i], y = got[i];
        if (y == e) continue;  /* also equal infinities */
        if (!(fabs((double)y - e) <= t->tol * scale)) {
            trial_fail(t, "output[%zu] = %.9g, expected %.9g (tolerance %.1e x %.3g)", i - o0,
                       (double)y, (double)e, t->tol, (double)scale);
            return 0;
        }
    }
    return 1;
}

/* Builds and runs the program under every config; counts one pass or fail. */
static void trial_run(trial *t, const acl_tensor *out, add_fn add, const void *spec)
{
    t->out = out;
    float *first = NULL;
    int ok = 1;
    for (int i = 0; ok && i < NCONFIGS; i++) {
        if (configs[i].ncores > acl_cpu_count()) continue;
        acl_graph *g;
        if (acl_graph_create(t->arena, &configs[i], &g) != 0) {
            trial_fail(t, "create: %s", acl_last_error());
            ok = 0;
            break;
        }
        memcpy(acl_graph_arena(g), t->init, t->arena * sizeof(float));
        double ms[1] = {-1.0};
        if (add(g, spec, &configs[i]) != 0 || acl_graph_run(g, ms) != 0) {
            trial_fail(t, "config %d: %s", i, acl_last_error());
            ok = 0;
        } else if (acl_graph_node_count(g) != 1 || !(ms[0] >= 0.0)) {
            trial_fail(t, "node count %d, node time %g", acl_graph_node_count(g), ms[0]);
            ok = 0;
        } else if (!first) {
            ok = check_arena(t, acl_graph_arena(g));
            first = malloc(t->arena * sizeof(float));
            memcpy(first, acl_graph_arena(g), t->arena * sizeof(float));
        } else if (memcmp(first, acl_graph_arena(g), t->arena * sizeof(float)) != 0) {
            trial_fail(t, "the arena under exec config %d differs from config 0", i);
            ok = 0;
        }
        acl_graph_destroy(g);
    }
    passed += ok;
    free(first);
    free(t->init);
    free(t->expected);
}

/* Random dims of a rank; `big` cases are large enough to be split over cores. */
static void random_dims(int rank, int big, int *dims)
{
    const int hi = big ? (rank <= 2 ? 300 : rank == 3 ? 40 : rank == 4 ? 16 : 8) : 5;
    for (int i = 0; i < rank; i++) dims[i] = rnd(big ? hi / 2 : 1, hi);
}

/* A random permutation of [0, n) (Fisher-Yates). */
static void random_perm(int n, int *perm)
{
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = rnd(0, i), tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
}

static const char *dims_str(int rank, const int *dims)
{
    static char buf[8][64];
    static int next;
    char *s = buf[next++ % 8];
    size_t used = (size_t)snprintf(s, 64, "[");
    for (int i = 0; i < rank && used < 64; i++)
        used += (size_t)snprintf(s + used, 64 - used, "%s%d", i ? "," : "", dims[i]);
    if (used < 64) snprintf(s + used, 64 - used, "]");
    return s;
}

/* ---- unary ------------------------------------------------------------------ */

typedef struct {
    int op;
    float a, b;
    acl_tensor in, out;
} unary_spec;

static int add_unary(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const unary_spec *s = spec;
    return acl_graph_add(g, ACL_OP_UNARY, &(acl_unary_attrs){s->op, s->a, s->b}, 1, &s->in, &s->out);
}

static void unary_case(int big)
{
    unary_spec s = {.op = rnd(0, ACL_ACT_COUNT - 1)};
    int dims[ACL_MAX_RANK], rank = rnd(0, 4), in_place = rnd(0, 3) == 0;
    s.a = rnd_float();
    s.b = s.op == ACL_ACT_CLIP ? s.a + (float)rnd(0, 2) * 0.5f : rnd_float();
    random_dims(rank, big, dims);
    trial t;
    trial_begin(&t, TOL_EXACT, "unary %d a=%g b=%g %s%s", s.op, (double)s.a, (double)s.b,
                dims_str(rank, dims), in_place ? " in place" : "");
    place(&t, &s.in, rank, dims);
    place_output(&t, &s.out, &s.in, in_place, rank, dims);
    float *arena = trial_arena(&t);
    const size_t n = volume(rank, dims);
    for (size_t i = 0; i < n; i++) arena[s.in.offset + i] *= 8.0f;  /* reach the clamps */
    memcpy(t.expected, arena, t.arena * sizeof(float));
    for (size_t i = 0; i < n; i++)
        t.expected[s.out.offset + i] = (float)ref_activate(s.op, s.a, s.b, arena[s.in.offset + i]);
    trial_run(&t, &s.out, add_unary, &s);
}

/* The accuracy activation.h states, against float64 libm: each function over
 * its range (evenly spaced points, plus points spread geometrically towards
 * 0 on both sides) through the unary operation, the largest error in ulp of
 * the float nearest the exact value printed and checked against the bound. */
typedef struct {
    int op;
    const char *name;
    double lo, hi, max_ulp;
} accuracy_spec;

static double ref_math(int op, double x)
{
    switch (op) {
    case ACL_UNARY_EXP: return exp(x);
    case ACL_UNARY_ERF: return erf(x);
    case ACL_UNARY_TANH: return tanh(x);
    default: return ref_activate(op, 0, 0, x);
    }
}

static void accuracy_case(void)
{
    static const accuracy_spec specs[] = {
        {ACL_UNARY_EXP, "exp", -87, 88, 2},         {ACL_UNARY_ERF, "erf", -10, 10, 3},
        {ACL_UNARY_TANH, "tanh", -20, 20, 2},       {ACL_ACT_SIGMOID, "sigmoid", -80, 80, 3},
        {ACL_ACT_GELU, "gelu", 0, 12, 4},           {ACL_ACT_GELU, "gelu", -12, 0, 8},
        {ACL_ACT_GELU_TANH, "gelu_tanh", 0, 12, 3}, {ACL_ACT_GELU_TANH, "gelu_tanh", -10, 0, 256},
    };
    enum { EVEN = 400001, NEAR_ZERO = 2 * 2000, N = EVEN + NEAR_ZERO };
    const acl_tensor in = {0, 1, {N}}, out = {N, 1, {N}};
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        const accuracy_spec *sp = &specs[k];
        acl_graph *g;
        if (acl_graph_create(2 * (size_t)N, &configs[1], &g) != 0) {
            check(0, "accuracy %s: create: %s", sp->name, acl_last_error());
            return;
        }
        float *arena = acl_graph_arena(g);
        for (int i = 0; i < EVEN; i++)
            arena[i] = (float)(sp->lo + (sp->hi - sp->lo) * i / (EVEN - 1));
        for (int i = 0; i < NEAR_ZERO / 2; i++) {  /* 1e-30 to 1, each sign in the range */
            const float v = (float)pow(10.0, -30.0 + 30.0 * i / (NEAR_ZERO / 2 - 1));
            arena[EVEN + 2 * i] = sp->hi > 0 ? v : -v;
            arena[EVEN + 2 * i + 1] = sp->lo < 0 ? -v : v;
        }
        const int ok = acl_graph_add(g, ACL_OP_UNARY, &(acl_unary_attrs){.op = sp->op}, 1, &in,
                                     &out) == 0 &&
                       acl_graph_run(g, NULL) == 0;
        check(ok, "accuracy %s: %s", sp->name, ok ? "" : acl_last_error());
        double worst = 0;
        float worst_x = 0;
        for (int i = 0; ok && i < N; i++) {
            const double ref = ref_math(sp->op, arena[i]);
            const float nearest = fabsf((float)ref);
            const double ulp = (double)nextafterf(nearest, INFINITY) - nearest;
            const double err = fabs(arena[N + i] - ref) / ulp;
            if (!(err <= worst)) {  /* NaN counts as worst */
                worst = err;
                worst_x = arena[i];
            }
        }
        printf("accuracy %-9s [%g, %g]: max %.2f ulp (at x = %.9g), bound %g\n", sp->name,
               sp->lo, sp->hi, worst, (double)worst_x, sp->max_ulp);
        check(ok && worst <= sp->max_ulp, "accuracy %s: %.2f ulp at x = %.9g, bound %g", sp->name,
              worst, (double)worst_x, sp->max_ulp);
        acl_graph_destroy(g);
    }
}

/* ---- affine ----------------------------------------------------------------- */

typedef struct {
    acl_affine_attrs attrs;
    acl_tensor x, scale, shift, out;
} affine_spec;

static int add_affine(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const affine_spec *s = spec;
    const acl_tensor ins[3] = {s->x, s->scale, s->shift};
    return acl_graph_add(g, ACL_OP_AFFINE, &s->attrs, 3, ins, &s->out);
}

static void affine_case(int big)
{
    affine_spec s = {.attrs = {.act = rnd(0, ACL_ACT_COUNT - 1), .a = rnd_float()}};
    s.attrs.b = s.attrs.act == ACL_ACT_CLIP ? s.attrs.a + (float)rnd(0, 2) * 0.5f : rnd_float();
    int dims[ACL_MAX_RANK], rank = rnd(1, 4), in_place = rnd(0, 3) == 0;
    random_dims(rank, big, dims);
    const int c = dims[rank - 1];
    trial t;
    trial_begin(&t, TOL_EXACT, "affine act %d %s%s", s.attrs.act, dims_str(rank, dims),
                in_place ? " in place" : "");
    place(&t, &s.x, rank, dims);
    place(&t, &s.scale, 1, &c);
    place(&t, &s.shift, 1, &c);
    place_output(&t, &s.out, &s.x, in_place, rank, dims);
    float *arena = trial_arena(&t);
    const size_t n = volume(rank, dims);
    for (size_t i = 0; i < n; i++) arena[s.x.offset + i] *= 8.0f;  /* reach the clamps */
    memcpy(t.expected, arena, t.arena * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        const size_t ch = i % (size_t)c;
        /* float arithmetic as the op does it: one rounding per step */
        const float v = arena[s.x.offset + i] * arena[s.scale.offset + ch];
        t.expected[s.out.offset + i] = (float)ref_activate(
            s.attrs.act, s.attrs.a, s.attrs.b, v + arena[s.shift.offset + ch]);
    }
    trial_run(&t, &s.out, add_affine, &s);
}

/* ---- layer_norm ------------------------------------------------------------- */

typedef struct {
    float epsilon;
    acl_tensor x, scale, shift, out;
} layer_norm_spec;

static int add_layer_norm(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const layer_norm_spec *s = spec;
    const acl_tensor ins[3] = {s->x, s->scale, s->shift};
    return acl_graph_add(g, ACL_OP_LAYER_NORM, &(acl_layer_norm_attrs){s->epsilon}, 3, ins,
                         &s->out);
}

/* Against float64, rows of 16 or more far from zero mean (an offset of 100
 * over a spread of 1: a one-pass E[x^2] - E[x]^2 would lose 1e-3 of the
 * variance; two passes lose the mean's rounding, ulp(100) / 2 over the
 * spread).  Shorter rows stay near 0, where their spread may be tiny. */
static void layer_norm_case(int big)
{
    layer_norm_spec s = {.epsilon = rnd(0, 1) ? 1e-5f : 0.5f};
    int dims[ACL_MAX_RANK], rank = rnd(1, 4);
    random_dims(rank, big, dims);
    if (rnd(0, 1)) dims[rank - 1] = rnd(1, 300);  /* rows of every length, tails included */
    const int d = dims[rank - 1];
    trial t;
    const float offset = d >= 16 ? 100.0f : 0.0f;
    trial_begin(&t, TOL_GEMM, "layer_norm eps %g %s + %g", (double)s.epsilon,
                dims_str(rank, dims), (double)offset);
    place(&t, &s.x, rank, dims);
    place(&t, &s.scale, 1, &d);
    place(&t, &s.shift, 1, &d);
    place(&t, &s.out, rank, dims);
    float *arena = trial_arena(&t);
    const size_t n = volume(rank, dims);
    for (size_t i = 0; i < n; i++) arena[s.x.offset + i] += offset;
    memcpy(t.expected, arena, t.arena * sizeof(float));
    for (size_t row = 0; row < n / (size_t)d; row++) {
        const float *x = arena + s.x.offset + row * d;
        double mean = 0, var = 0;
        for (int i = 0; i < d; i++) mean += x[i];
        mean /= d;
        for (int i = 0; i < d; i++) var += (x[i] - mean) * (x[i] - mean);
        const double rstd = 1.0 / sqrt(var / d + s.epsilon);
        for (int i = 0; i < d; i++)
            t.expected[s.out.offset + row * d + i] =
                (float)((x[i] - mean) * rstd * arena[s.scale.offset + i] +
                        arena[s.shift.offset + i]);
    }
    trial_run(&t, &s.out, add_layer_norm, &s);
}

/* ---- binary ----------------------------------------------------------------- */

typedef struct {
    int op;
    acl_tensor a, b, out;
} binary_spec;

static int add_binary(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const binary_spec *s = spec;
    const acl_tensor ins[2] = {s->a, s->b};
    return acl_graph_add(g, ACL_OP_BINARY, &(acl_binary_attrs){s->op}, 2, ins, &s->out);
}

/* Offset of output element i in a broadcast operand x. */
static size_t broadcast_offset(const acl_tensor *out, const acl_tensor *x, size_t i)
{
    size_t off = 0, stride = 1;
    for (int d = out->rank - 1; d >= 0; d--) {
        const size_t idx = i % (size_t)out->dims[d];
        i /= (size_t)out->dims[d];
        if (x->dims[d] != 1) off += idx * stride;
        stride *= (size_t)x->dims[d];
    }
    return off;
}

static void binary_case(int big)
{
    binary_spec s = {.op = rnd(0, 4) ? rnd(ACL_BINARY_ADD, ACL_BINARY_DIV) : ACL_BINARY_DIV_NO_NAN};
    int rank = rnd(0, 6), dims[ACL_MAX_RANK], da[ACL_MAX_RANK], db[ACL_MAX_RANK];
    random_dims(rank, big && rank <= 4, dims);
    const int style = rnd(0, 3);  /* 0: equal shapes, 1: per-channel b, 2-3: any broadcast */
    for (int d = 0; d < rank; d++) {
        da[d] = db[d] = dims[d];
        if (style == 1 && d < rank - 1) db[d] = 1;
        if (style >= 2 && rnd(0, 2) == 0) (rnd(0, 1) ? da : db)[d] = 1;
    }
    const int in_place = volume(rank, da) == volume(rank, dims) && rnd(0, 2) == 0;
    trial t;
    trial_begin(&t, TOL_EXACT, "binary %d a%s b%s -> %s%s", s.op, dims_str(rank, da),
                dims_str(rank, db), dims_str(rank, dims), in_place ? " in place" : "");
    place(&t, &s.a, rank, da);
    place(&t, &s.b, rank, db);
    place_output(&t, &s.out, &s.a, in_place, rank, dims);
    float *arena = trial_arena(&t);
    /* Divisors kept away from 0, but for div_no_nan's every third, 0. */
    for (size_t i = 0; i < volume(rank, db); i++)
        arena[s.b.offset + i] = s.op == ACL_BINARY_DIV_NO_NAN && i % 3 == 0
                                    ? 0.0f
                                    : copysignf(0.5f + fabsf(arena[s.b.offset + i]),
                                                arena[s.b.offset + i]);
    memcpy(t.expected, arena, t.arena * sizeof(float));
    for (size_t i = 0; i < volume(rank, dims); i++) {
        const float x = arena[s.a.offset + broadcast_offset(&s.out, &s.a, i)];
        const float y = arena[s.b.offset + broadcast_offset(&s.out, &s.b, i)];
        const float r = s.op == ACL_BINARY_ADD ? x + y
                        : s.op == ACL_BINARY_MUL ? x * y
                        : s.op == ACL_BINARY_SUB ? x - y
                        : s.op == ACL_BINARY_DIV_NO_NAN && y == 0.0f ? 0.0f
                                                 : x / y;
        t.expected[s.out.offset + i] = r;
    }
    trial_run(&t, &s.out, add_binary, &s);
}

/* ---- pooling ---------------------------------------------------------------- */

typedef struct {
    int op, kh, kw, sh, sw, dh, dw, pads[4], include_pad;
    acl_tensor in, out;
} pool_spec;

static int add_pool(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const pool_spec *s = spec;
    const acl_pool_attrs a = {.op = s->op,
                              .kernel = (const int[]){s->kh, s->kw}, .kernel_count = 2,
                              .strides = (const int[]){s->sh, s->sw}, .strides_count = 2,
                              .dilations = (const int[]){s->dh, s->dw}, .dilations_count = 2,
                              .pads = s->pads, .pads_count = 4,
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

static void pool_case(int big)
{
    pool_spec s = {.op = rnd(ACL_POOL_MAX, ACL_POOL_AVERAGE), .kh = rnd(1, 4), .kw = rnd(1, 4),
                   .sh = rnd(1, 3), .sw = rnd(1, 3), .dh = rnd(1, 2), .dw = rnd(1, 2),
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

static void global_average_pool_case(int big)
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
    return acl_graph_add(g, ACL_OP_CONCAT, &(acl_concat_attrs){s->axis}, s->n, s->ins, &s->out);
}

static void concat_case(int big)
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

static void transpose_case(int big)
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
static void slice_case(int big)
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
static void gather_shuffle_case(int big)
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
    trial_begin(&t, 0.0, "gather innermost %s -> %s%s", dims_str(rank, dims),
                dims_str(rank, odims), shuffle ? " (shuffle)" : "");
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

static void pad_case(int big)
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
        for (int d = 0; d < rank; d++) src = src * (size_t)dims[d] + pad_source(s.mode, idx[d], dims[d]);
        t.expected[s.out.offset + i] =
            s.mode == ACL_PAD_CONSTANT && outside ? s.value : arena[s.in.offset + src];
    }
    trial_run(&t, &s.out, add_pad, &s);
}

/* ---- softmax / LRN ----------------------------------------------------------- */

typedef struct {
    int log;
    acl_tensor in, out;
} softmax_spec;

static int add_softmax(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const softmax_spec *s = spec;
    const acl_softmax_attrs a = {s->log};
    return acl_graph_add(g, ACL_OP_SOFTMAX, &a, 1, &s->in, &s->out);
}

static void softmax_case(int big)
{
    softmax_spec s = {.log = rnd(0, 1)};
    int rank = rnd(1, 4), dims[ACL_MAX_RANK], in_place = rnd(0, 3) == 0;
    random_dims(rank, big, dims);
    dims[rank - 1] = rnd(1, big ? 1000 : 40);
    /* Large logits: exp overflows unless the max is subtracted, and the
     * smallest probabilities round to 0, whose log LogSoftmax never takes. */
    const float scale = rnd(0, 1) ? 200.0f : 4.0f;
    trial t;
    trial_begin(&t, TOL_EXACT, "%s %s x%g%s", s.log ? "log softmax" : "softmax",
                dims_str(rank, dims), (double)scale, in_place ? " in place" : "");
    place(&t, &s.in, rank, dims);
    place_output(&t, &s.out, &s.in, in_place, rank, dims);
    float *arena = trial_arena(&t);
    const size_t len = (size_t)dims[rank - 1], rows = volume(rank, dims) / len;
    for (size_t i = 0; i < rows * len; i++) arena[s.in.offset + i] *= scale;
    memcpy(t.expected, arena, t.arena * sizeof(float));
    for (size_t r = 0; r < rows; r++) {
        const float *x = arena + s.in.offset + r * len;
        float max = x[0];
        for (size_t i = 1; i < len; i++) max = x[i] > max ? x[i] : max;
        double sum = 0.0;
        for (size_t i = 0; i < len; i++) sum += exp((double)x[i] - max);
        for (size_t i = 0; i < len; i++)
            t.expected[s.out.offset + r * len + i] =
                s.log ? (float)((double)x[i] - max - log(sum))
                      : (float)(exp((double)x[i] - max) / sum);
    }
    trial_run(&t, &s.out, add_softmax, &s);
}

typedef struct {
    int size;
    float alpha, beta, bias;
    acl_tensor in, out;
} lrn_spec;

static int add_lrn(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const lrn_spec *s = spec;
    const acl_lrn_attrs a = {s->size, s->alpha, s->beta, s->bias};
    return acl_graph_add(g, ACL_OP_LRN, &a, 1, &s->in, &s->out);
}

static void lrn_case(int big)
{
    lrn_spec s = {.size = rnd(1, 7), .alpha = 1e-4f * (float)rnd(1, 10000),
                  .beta = 0.25f * (float)rnd(1, 4), .bias = 0.5f * (float)rnd(1, 4)};
    int rank = rnd(1, 4), dims[ACL_MAX_RANK];
    random_dims(rank, big, dims);
    dims[rank - 1] = rnd(1, 40);
    trial t;
    trial_begin(&t, TOL_EXACT, "lrn %s size %d alpha %g beta %g bias %g", dims_str(rank, dims),
                s.size, (double)s.alpha, (double)s.beta, (double)s.bias);
    place(&t, &s.in, rank, dims);
    place(&t, &s.out, rank, dims);
    float *arena = trial_arena(&t);
    memcpy(t.expected, arena, t.arena * sizeof(float));
    const int c = dims[rank - 1];
    for (size_t px = 0; px < volume(rank, dims) / (size_t)c; px++) {
        const float *x = arena + s.in.offset + px * c;
        for (int ch = 0; ch < c; ch++) {
            double sum = 0.0;
            for (int j = ch - (s.size - 1) / 2; j <= ch + s.size / 2; j++)
                if (j >= 0 && j < c) sum += (double)x[j] * x[j];
            t.expected[s.out.offset + px * c + ch] =
                (float)(x[ch] / pow(s.bias + s.alpha / s.size * sum, s.beta));
        }
    }
    trial_run(&t, &s.out, add_lrn, &s);
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
    case ACL_RESIZE_PYTORCH_HALF_PIXEL: if (out == 1) return 0.0f; /* fall through */
    default: return (x + 0.5f) / scale - 0.5f;
    }
}

/* Taps of output index o along an axis: input indices i[2], weights w[2]. */
static void resize_taps(const resize_spec *s, int axis, int o, int in, int out, int i[2],
                        double w[2])
{
    const float scale = s->in.dims[1] == s->out.dims[1] && s->in.dims[2] == s->out.dims[2]
                            ? 1.0f
                            : s->scales[axis];
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

static void resize_case(int big)
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

/* ---- matmul / conv ------------------------------------------------------------ */

typedef struct {
    const char *ukernel;
    int k, n, act;
    float act_a, act_b;
    float *b, *bias;
    acl_tensor in, out;
} matmul_spec;

static int add_matmul(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const matmul_spec *s = spec;
    const acl_matmul_attrs a = {.ukernel = s->ukernel, .k = s->k, .n = s->n, .b = s->b,
                                .b_count = (size_t)s->k * s->n, .bias = s->bias,
                                .bias_count = s->bias ? (size_t)s->n : 0, .act = s->act,
                                .act_a = s->act_a, .act_b = s->act_b};
    return acl_graph_add(g, ACL_OP_MATMUL, &a, 1, &s->in, &s->out);
}

static void matmul_case(int big)
{
    acl_ukernel_info info;
    if (acl_ukernel_count() == 0) return;
    acl_ukernel_get(rnd(0, acl_ukernel_count() - 1), &info);
    /* Any activation in the epilogue; clip's bounds ordered. */
    matmul_spec s = {.ukernel = info.name, .act = rnd(0, ACL_ACT_COUNT - 1),
                     .act_a = -0.5f * (float)rnd(0, 2), .act_b = 0.5f * (float)rnd(0, 2)};
    s.k = rnd(info.kmin + 1, info.kmax ? info.kmax : info.kmin + 150);
    s.n = info.n_multiple * rnd(1, 80 / info.n_multiple + 1);
    int rank = rnd(1, 3), in[ACL_MAX_RANK], out[ACL_MAX_RANK];
    random_dims(rank, 0, in);
    if (big) in[0] = rnd(100, 300);
    in[rank - 1] = s.k;
    memcpy(out, in, sizeof out);
    out[rank - 1] = s.n;
    s.b = malloc((size_t)s.k * s.n * sizeof(float));
    fill_random(s.b, (size_t)s.k * s.n, 1.0f);
    if (rnd(0, 3)) {
        s.bias = malloc((size_t)s.n * sizeof(float));
        fill_random(s.bias, (size_t)s.n, 1.0f);
    }
    trial t;
    trial_begin(&t, TOL_GEMM, "matmul %s %s x [%d,%d]%s act %d", s.ukernel, dims_str(rank, in),
                s.k, s.n, s.bias ? " + bias" : "", s.act);
    place(&t, &s.in, rank, in);
    place(&t, &s.out, rank, out);
    float *arena = trial_arena(&t);
    memcpy(t.expected, arena, t.arena * sizeof(float));
    for (size_t m = 0; m < volume(rank, in) / (size_t)s.k; m++)
        for (int j = 0; j < s.n; j++) {
            double acc = s.bias ? s.bias[j] : 0.0;
            for (int k = 0; k < s.k; k++)
                acc += (double)arena[s.in.offset + m * s.k + k] * s.b[(size_t)k * s.n + j];
            t.expected[s.out.offset + m * s.n + j] = (float)ref_activate(s.act, s.act_a, s.act_b,
                                                                          acc);
        }
    trial_run(&t, &s.out, add_matmul, &s);
    free(s.b);
    free(s.bias);
}

/* ---- batch_matmul / gather -------------------------------------------------- */

/* A tensor of logical dims held transposed by perm: placed with the permuted
 * dims; stride receives each logical axis's step. */
static void place_held(trial *t, acl_tensor *x, int rank, const int *dims, const int *perm,
                       size_t *stride)
{
    int held[ACL_MAX_RANK];
    for (int i = 0; i < rank; i++) held[i] = dims[perm[i]];
    place(t, x, rank, held);
    size_t step = 1;
    for (int i = rank - 1; i >= 0; i--) {
        stride[perm[i]] = step;
        step *= (size_t)held[i];
    }
}

enum { BMM_A, BMM_B, BMM_OUT };

typedef struct {
    const char *ukernel;
    int rank, perm[3][ACL_MAX_RANK], given[3];  /* given: the perm is passed, else in order */
    acl_tensor t[3];
} bmm_spec;

static int add_batch_matmul(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const bmm_spec *s = spec;
    const acl_batch_matmul_attrs a = {
        s->ukernel,
        s->perm[BMM_A], s->given[BMM_A] ? s->rank : 0,
        s->perm[BMM_B], s->given[BMM_B] ? s->rank : 0,
        s->perm[BMM_OUT], s->given[BMM_OUT] ? s->rank : 0,
    };
    return acl_graph_add(g, ACL_OP_BATCH_MATMUL, &a, 2, s->t, &s->t[BMM_OUT]);
}

/* Random broadcast batch dims and layouts; a's K and out's N stay innermost
 * (a perm not passed is the identity). */
static void batch_matmul_case(int big)
{
    acl_ukernel_info info;
    if (acl_ukernel_count() == 0) return;
    acl_ukernel_get(rnd(0, acl_ukernel_count() - 1), &info);
    bmm_spec s = {.ukernel = info.name, .rank = rnd(2, 5)};
    const int r = s.rank, m = big ? rnd(30, 90) : rnd(1, 20);
    const int k = rnd(info.kmin + 1, info.kmax ? info.kmax : info.kmin + 70);
    const int n = info.n_multiple * rnd(1, 50 / info.n_multiple + 1);
    int dims[3][ACL_MAX_RANK];
    for (int i = 0; i < r - 2; i++) {
        const int d = rnd(1, 3), broadcast = rnd(0, 3);
        dims[BMM_OUT][i] = d;
        dims[BMM_A][i] = broadcast == 0 ? 1 : d;
        dims[BMM_B][i] = broadcast == 1 ? 1 : d;
    }
    const int mats[3][2] = {{m, k}, {k, n}, {m, n}};
    for (int x = 0; x < 3; x++) {
        dims[x][r - 2] = mats[x][0];
        dims[x][r - 1] = mats[x][1];
        s.given[x] = rnd(0, 2) != 0;
        random_perm(x == BMM_B ? r : r - 1, s.perm[x]);
        if (x != BMM_B) s.perm[x][r - 1] = r - 1;
        if (!s.given[x])
            for (int i = 0; i < r; i++) s.perm[x][i] = i;
    }
    trial t;
    trial_begin(&t, TOL_GEMM, "batch_matmul %s a %s perm %s x b %s perm %s -> perm %s", s.ukernel,
                dims_str(r, dims[BMM_A]), dims_str(r, s.perm[BMM_A]), dims_str(r, dims[BMM_B]),
                dims_str(r, s.perm[BMM_B]), dims_str(r, s.perm[BMM_OUT]));
    size_t stride[3][ACL_MAX_RANK];
    for (int x = 0; x < 3; x++) place_held(&t, &s.t[x], r, dims[x], s.perm[x], stride[x]);
    float *arena = trial_arena(&t);
    memcpy(t.expected, arena, t.arena * sizeof(float));
    const size_t batches = volume(r - 2, dims[BMM_OUT]);
    for (size_t bi = 0; bi < batches; bi++) {
        size_t off[3] = {s.t[0].offset, s.t[1].offset, s.t[2].offset}, rest = bi;
        for (int i = r - 3; i >= 0; i--) {
            const size_t idx = rest % (size_t)dims[BMM_OUT][i];
            rest /= (size_t)dims[BMM_OUT][i];
            for (int x = 0; x < 3; x++) off[x] += (dims[x][i] == 1 ? 0 : idx) * stride[x][i];
        }
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double acc = 0.0;
                for (int c = 0; c < k; c++)
                    acc += (double)arena[off[BMM_A] + i * stride[BMM_A][r - 2] +
                                         c * stride[BMM_A][r - 1]] *
                           arena[off[BMM_B] + c * stride[BMM_B][r - 2] +
                                 j * stride[BMM_B][r - 1]];
                t.expected[off[BMM_OUT] + i * stride[BMM_OUT][r - 2] +
                           j * stride[BMM_OUT][r - 1]] = (float)acc;
            }
    }
    trial_run(&t, &s.t[BMM_OUT], add_batch_matmul, &s);
}

typedef struct {
    int axis, n, indices[8];
    acl_tensor in, out;
} gather_spec;

static int add_gather(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const gather_spec *s = spec;
    return acl_graph_add(g, ACL_OP_GATHER, &(acl_gather_attrs){s->axis, s->indices, s->n}, 1,
                         &s->in, &s->out);
}

/* Indices repeated, in any order, negative ones counted from the end. */
static void gather_case(int big)
{
    gather_spec s = {.n = rnd(1, 8)};
    int rank = rnd(1, 5), dims[ACL_MAX_RANK], odims[ACL_MAX_RANK];
    random_dims(rank, big, dims);
    const int axis = rnd(0, rank - 1), extent = dims[axis];
    s.axis = rnd(0, 1) ? axis : axis - rank;
    for (int i = 0; i < s.n; i++) s.indices[i] = rnd(-extent, extent - 1);
    memcpy(odims, dims, sizeof odims);
    odims[axis] = s.n;
    trial t;
    trial_begin(&t, 0.0, "gather %s axis %d of %d indices", dims_str(rank, dims), s.axis, s.n);
    float *arena = place_in_out(&t, &s.in, &s.out, rank, dims, odims);
    const size_t outer = volume(axis, dims), inner = volume(rank - axis - 1, dims + axis + 1);
    float *y = t.expected + s.out.offset;
    for (size_t o = 0; o < outer; o++)
        for (int i = 0; i < s.n; i++) {
            const int index = s.indices[i] < 0 ? s.indices[i] + extent : s.indices[i];
            memcpy(y, arena + s.in.offset + (o * extent + index) * inner, inner * sizeof *y);
            y += inner;
        }
    trial_run(&t, &s.out, add_gather, &s);
}

/* A convolution through acl_graph_add; the weight's size follows the shape. */
static int add_conv_op(acl_graph *g, const acl_conv_shape *shape, const char *algorithm,
                       const char *ukernel, const acl_exec *ex, const float *w, const float *bias,
                       const acl_tensor *ins, int nin, const acl_tensor *out)
{
    const acl_conv_attrs a = {
        .shape = *shape, .algorithm = algorithm, .ukernel = ukernel,
        .core_weights = ex->weights, .core_weights_count = ex->ncores, .workloads = ex->workloads,
        .weight = w, .weight_count = (size_t)shape->oc * (shape->c / shape->group) * shape->kh *
                                     shape->kw,
        .bias = bias, .bias_count = bias ? (size_t)shape->oc : 0};
    return acl_graph_add(g, ACL_OP_CONV, &a, nin, ins, out);
}

typedef struct {
    acl_conv_shape shape;
    const char *algorithm, *ukernel;
    float *w, *bias;
    acl_tensor in, residual, out;
} conv_spec;

static int add_conv(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const conv_spec *s = spec;
    const acl_tensor ins[2] = {s->in, s->residual};
    return add_conv_op(g, &s->shape, s->algorithm, s->ukernel, ex, s->w, s->bias, ins,
                       1 + s->shape.has_residual, &s->out);
}

/* Some algorithm (and micro-kernel) that runs the shape; "reference" always does. */
static void pick_algorithm(conv_spec *s)
{
    for (int tries = 0; tries < 20; tries++) {
        const char *algorithm = acl_algorithm_name(rnd(0, acl_algorithm_count() - 1));
        const char *ukernel = NULL;
        acl_ukernel_info info;
        if (acl_algorithm_uses_ukernel(algorithm) && acl_ukernel_count() > 0) {
            acl_ukernel_get(rnd(0, acl_ukernel_count() - 1), &info);
            ukernel = info.name;
        }
        if (acl_conv_check(&s->shape, algorithm, ukernel) == 0) {
            s->algorithm = algorithm;
            s->ukernel = ukernel;
            return;
        }
    }
    s->algorithm = "reference";
    s->ukernel = NULL;
}

static void conv_case(int big)
{
    conv_spec s = {.shape = {.n = rnd(1, 2), .h = rnd(1, big ? 24 : 10),
                             .w = rnd(1, big ? 24 : 10), .kh = rnd(1, 3), .stride_h = rnd(1, 2),
                             .stride_w = rnd(1, 2), .dil_h = 1, .dil_w = 1, .group = 1,
                             .act = rnd(0, ACL_ACT_COUNT - 1), .act_min = -0.5f, .act_max = 0.5f,
                             .act_alpha = 0.2f, .act_beta = 0.5f,
                             .has_residual = rnd(0, 1)}};
    acl_conv_shape *sh = &s.shape;
    sh->kw = sh->kh;
    sh->pad_top = sh->pad_left = sh->pad_bottom = sh->pad_right = sh->kh / 2;
    if (rnd(0, 3) == 0) {
        sh->group = sh->c = rnd(1, 16);
        sh->oc = sh->c;
    } else {
        sh->c = rnd(1, 24);
        sh->oc = rnd(1, 24);
    }
    int oh, ow;
    if (acl_conv_out_size(sh, &oh, &ow) != 0) return;
    pick_algorithm(&s);
    const int in[4] = {sh->n, sh->h, sh->w, sh->c}, out[4] = {sh->n, oh, ow, sh->oc};
    const size_t wcount = (size_t)sh->oc * (sh->c / sh->group) * sh->kh * sh->kw;
    s.w = malloc(wcount * sizeof(float));
    s.bias = malloc((size_t)sh->oc * sizeof(float));
    fill_random(s.w, wcount, 1.0f);
    fill_random(s.bias, (size_t)sh->oc, 1.0f);
    trial t;
    trial_begin(&t, TOL_GEMM, "conv %s %s %s -> %s k%d s%d g%d act %d%s", s.algorithm,
                s.ukernel ? s.ukernel : "", dims_str(4, in), dims_str(4, out), sh->kh,
                sh->stride_h, sh->group, sh->act, sh->has_residual ? " +res" : "");
    place(&t, &s.in, 4, in);
    place(&t, &s.residual, 4, out);
    place(&t, &s.out, 4, out);
    float *arena = trial_arena(&t);
    memcpy(t.expected, arena, t.arena * sizeof(float));
    acl_conv *ref;
    if (acl_conv_create(sh, "reference", NULL, s.w, s.bias, &ref) != 0 ||
        acl_conv_run(ref, &configs[0], arena + s.in.offset,
                     sh->has_residual ? arena + s.residual.offset : NULL,
                     t.expected + s.out.offset, NULL) != 0) {
        trial_fail(&t, "reference: %s", acl_last_error());
        free(t.init);
        free(t.expected);
    } else {
        acl_conv_destroy(ref);
        trial_run(&t, &s.out, add_conv, &s);
    }
    free(s.w);
    free(s.bias);
}

/* ---- a program of several nodes ----------------------------------------------- */

/* relu(x) -> r; r + x -> s; transpose(s) -> y: nodes run in order on shared
 * tensors, each timed. */
static void chain_case(void)
{
    const int dims[3] = {4, 5, 6}, tdims[3] = {6, 4, 5}, perm[3] = {2, 0, 1};
    const acl_tensor x = {0, 3, {4, 5, 6}}, r = {120, 3, {4, 5, 6}}, s = {240, 3, {4, 5, 6}},
                     y = {360, 3, {6, 4, 5}};
    acl_graph *g;
    double ms[3] = {-1, -1, -1};
    if (acl_graph_create(480, &configs[0], &g) != 0) {
        check(0, "chain: create: %s", acl_last_error());
        return;
    }
    float *arena = acl_graph_arena(g);
    fill_random(arena, 120, 1.0f);
    const acl_tensor rx[2] = {r, x};
    int ok = acl_graph_add(g, ACL_OP_UNARY, &(acl_unary_attrs){.op = ACL_ACT_RELU}, 1, &x, &r) == 0 &&
             acl_graph_add(g, ACL_OP_BINARY, &(acl_binary_attrs){ACL_BINARY_ADD}, 2, rx, &s) == 0 &&
             acl_graph_add(g, ACL_OP_TRANSPOSE, &(acl_transpose_attrs){perm, 3}, 1, &s, &y) == 0 &&
             acl_graph_run(g, ms) == 0;
    if (!ok) printf("FAIL chain: %s\n", acl_last_error());
    for (int i = 0; ok && i < 3; i++) ok = ms[i] >= 0.0;
    ok = ok && acl_graph_node_count(g) == 3;
    for (int i = 0; ok && i < 120; i++) {
        const int a = i / (dims[1] * dims[2]), b = i / dims[2] % dims[1], c = i % dims[2];
        const float v = arena[i] > 0 ? 2 * arena[i] : arena[i];
        ok = arena[360 + (c * tdims[1] + a) * tdims[2] + b] == v;
    }
    check(ok, "chain: wrong result or node times");
    acl_graph_destroy(g);
}

/* ---- shared packed weights ---------------------------------------------------- */

/* Three matmuls of one input: B1, a copy of B1 in another array (packed once
 * with it: an unrolled RNN's steps), and B3 of the same shape but other
 * values (never taken for B1).  Each output against its own plain product. */
static void shared_b_case(void)
{
    enum { M = 5, K = 19, N = 37 };
    static float b1[K * N], b1_copy[K * N], b3[K * N];
    fill_random(b1, K * N, 1.0f);
    memcpy(b1_copy, b1, sizeof b1);
    memcpy(b3, b1, sizeof b1);
    b3[K * N / 2] += 1.0f;  /* one weight apart */
    const float *bs[3] = {b1, b1_copy, b3};
    acl_ukernel_info info;
    int found = 0;
    for (int i = 0; !found && i < acl_ukernel_count(); i++) {
        acl_ukernel_get(i, &info);
        found = info.kmin < K && (!info.kmax || K <= info.kmax) && N % info.n_multiple == 0;
    }
    if (!found) return;
    const acl_tensor x = {0, 2, {M, K}};
    acl_graph *g;
    if (acl_graph_create(M * K + 3 * M * N, &configs[1], &g) != 0) {
        check(0, "shared b: create: %s", acl_last_error());
        return;
    }
    float *arena = acl_graph_arena(g);
    fill_random(arena, M * K, 1.0f);
    int ok = 1;
    for (int i = 0; ok && i < 3; i++) {
        const acl_tensor y = {(size_t)(M * K + i * M * N), 2, {M, N}};
        const acl_matmul_attrs a = {.ukernel = info.name, .k = K, .n = N, .b = bs[i],
                                    .b_count = K * N};
        ok = acl_graph_add(g, ACL_OP_MATMUL, &a, 1, &x, &y) == 0;
    }
    ok = ok && acl_graph_run(g, NULL) == 0;
    if (!ok) printf("FAIL shared b: %s\n", acl_last_error());
    double worst = 0;
    for (int i = 0; ok && i < 3; i++)
        for (int r = 0; r < M; r++)
            for (int c = 0; c < N; c++) {
                double want = 0;
                for (int k = 0; k < K; k++) want += (double)arena[r * K + k] * bs[i][k * N + c];
                const double got = arena[M * K + i * M * N + r * N + c];
                const double err = fabs(got - want) / (fabs(want) + 1.0);
                if (!(err <= worst)) worst = err;  /* NaN counts as worst */
            }
    check(ok && worst < 1e-4, "shared b: outputs off by %g", worst);
    acl_graph_destroy(g);
}

/* ---- the shared workspace ------------------------------------------------------ */

/* A micro-kernel both algorithms run the shape with (NULL: none). */
static const char *common_ukernel(const acl_conv_shape *a, const char *algo_a,
                                  const acl_conv_shape *b, const char *algo_b)
{
    for (int k = 0; k < acl_ukernel_count(); k++) {
        acl_ukernel_info info;
        acl_ukernel_get(k, &info);
        if (acl_conv_check(a, algo_a, info.name) == 0 && acl_conv_check(b, algo_b, info.name) == 0)
            return info.name;
    }
    return NULL;
}

/* x -> im2col 3x3 -> y1 -> winograd F(4x4, 3x3) -> y2: the program's
 * workspace is the larger convolution's scratch, not the sum, and running both
 * on it (twice) gives exactly what two convolutions with their own scratch give. */
static void shared_workspace_case(void)
{
    const acl_conv_shape a = {.n = 1, .h = 10, .w = 10, .c = 8, .oc = 16, .kh = 3, .kw = 3,
                              .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1,
                              .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1,
                              .group = 1, .act = ACL_ACT_RELU};
    acl_conv_shape b = a;
    b.c = 16;
    b.oc = 8;
    b.act = ACL_ACT_NONE;
    const char *algo_a = "im2col", *algo_b = "winograd_4x4_3x3";
    const char *uk = common_ukernel(&a, algo_a, &b, algo_b);
    if (!uk) algo_a = algo_b = "reference";
    const acl_tensor x = {0, 4, {1, 10, 10, 8}}, y1 = {800, 4, {1, 10, 10, 16}},
                     y2 = {2400, 4, {1, 10, 10, 8}};
    const size_t arena = 3200;
    float wa[16 * 8 * 9], wb[8 * 16 * 9], ba[16], bb[8], *x0 = malloc(800 * sizeof(float));
    fill_random(wa, 16 * 8 * 9, 0.3f);
    fill_random(wb, 8 * 16 * 9, 0.3f);
    fill_random(ba, 16, 1.0f);
    fill_random(bb, 8, 1.0f);
    fill_random(x0, 800, 1.0f);
    const acl_exec *ex = &configs[acl_cpu_count() >= 2 ? NCONFIGS - 1 : 0];

    /* The expected y2, from convolutions owning their scratch. */
    acl_conv *ca = NULL, *cb = NULL;
    float *e1 = malloc(1600 * sizeof(float)), *e2 = malloc(800 * sizeof(float));
    int ok = acl_conv_create(&a, algo_a, uk, wa, ba, &ca) == 0 &&
             acl_conv_create(&b, algo_b, uk, wb, bb, &cb) == 0 &&
             acl_conv_run(ca, ex, x0, NULL, e1, NULL) == 0 &&
             acl_conv_run(cb, ex, e1, NULL, e2, NULL) == 0;
    if (!ok) printf("FAIL shared workspace: standalone %s: %s\n", algo_a, acl_last_error());
    const size_t sa = ok ? acl_conv_scratch_bytes(ca) : 0, sb = ok ? acl_conv_scratch_bytes(cb) : 0;

    acl_graph *g = NULL;
    ok = ok && acl_graph_create(arena, ex, &g) == 0;
    if (ok) {
        memcpy(acl_graph_arena(g), x0, 800 * sizeof(float));
        ok = add_conv_op(g, &a, algo_a, uk, ex, wa, ba, &x, 1, &y1) == 0 &&
             add_conv_op(g, &b, algo_b, uk, ex, wb, bb, &y1, 1, &y2) == 0;
        if (!ok) printf("FAIL shared workspace: add: %s\n", acl_last_error());
    }
    if (ok && (sa == 0 || sb == 0 || acl_graph_workspace_bytes(g) != (sa > sb ? sa : sb))) {
        printf("FAIL shared workspace: %zu bytes for convolutions needing %zu and %zu\n",
               acl_graph_workspace_bytes(g), sa, sb);
        ok = 0;
    }
    for (int run = 0; ok && run < 2; run++) {
        ok = acl_graph_run(g, NULL) == 0;
        if (!ok) printf("FAIL shared workspace: run: %s\n", acl_last_error());
        else if (memcmp(acl_graph_arena(g) + y2.offset, e2, 800 * sizeof(float)) != 0) {
            printf("FAIL shared workspace: run %d differs from convolutions with their own "
                   "scratch\n", run);
            ok = 0;
        }
    }
    check(ok, "shared workspace: see above");
    acl_graph_destroy(g);
    acl_conv_destroy(ca);
    acl_conv_destroy(cb);
    free(x0);
    free(e1);
    free(e2);
}

/* ---- errors: add-time checks fail in one line that names the problem ---------- */

static void expect_error(int rc, const char *part)
{
    const char *msg = acl_last_error();
    check(rc != 0 && strstr(msg, part) && !strchr(msg, '\n'),
          "expected an error mentioning '%s', got rc %d '%s'", part, rc, msg);
}

static void check_errors(void)
{
    static const int idle[] = {0};
    const acl_exec no_core = {1, idle, 1};
    acl_graph *g;
    expect_error(acl_graph_create(100, &no_core, &g), "every core weight is 0");
    expect_error(acl_graph_create(0, &configs[0], &g), "at least one float");
    if (acl_graph_create(20000, &configs[0], &g) != 0) {
        check(0, "creating the error-case program: %s", acl_last_error());
        return;
    }
    const acl_tensor a = {0, 4, {1, 7, 7, 64}}, b = {4000, 4, {1, 7, 7, 32}},
                     c = {6000, 4, {1, 7, 7, 3}}, far = {19950, 2, {10, 10}},
                     deep = {0, 7, {1, 1, 1, 1, 1, 1}}, wide = {19000, 1, {64}};
    const acl_tensor out96 = {8000, 4, {1, 7, 7, 96}}, cat_in[2] = {a, c};
    const acl_concat_attrs axis3 = {3};
    expect_error(acl_graph_add(g, ACL_OP_CONCAT, &axis3, 2, cat_in, &out96),
                 "concat: the inputs add up to 67 along axis 3 but the output has 96");
    const acl_tensor cat_bad[2] = {a, {4000, 4, {1, 7, 6, 32}}};
    expect_error(acl_graph_add(g, ACL_OP_CONCAT, &axis3, 2, cat_bad, &out96),
                 "concat: input 1 has dims [1,7,6,32] but axis 3 needs the other dims of "
                 "[1,7,7,96]");
    const acl_unary_attrs relu = {.op = ACL_ACT_RELU}, sigmoid = {.op = ACL_ACT_SIGMOID},
                          copy = {.op = ACL_ACT_NONE}, unknown = {.op = 99};
    expect_error(acl_graph_add(g, ACL_OP_UNARY, &relu, 1, &far, &wide), "past the end of the arena");
    expect_error(acl_graph_add(g, ACL_OP_UNARY, &relu, 1, &deep, &deep), "rank 7");
    expect_error(acl_graph_add(g, ACL_OP_UNARY, &unknown, 1, &a, &a), "unknown operation 99");
    expect_error(acl_graph_add(g, ACL_OP_UNARY, &sigmoid, 1, &a, &b), "sigmoid: output has dims");
    expect_error(acl_graph_add(g, ACL_OP_UNARY, &relu, 2, cat_in, &a), "unary: takes 1 input, got 2");
    expect_error(acl_graph_add(g, ACL_OP_COUNT, &relu, 1, &a, &b), "unknown operation");
    const acl_tensor ab[2] = {a, b};
    expect_error(acl_graph_add(g, ACL_OP_BINARY, &(acl_binary_attrs){ACL_BINARY_ADD}, 2, ab, &a),
                 "do not broadcast");
    const acl_tensor shifted = {10, 4, {1, 7, 7, 64}};
    expect_error(acl_graph_add(g, ACL_OP_UNARY, &copy, 1, &a, &shifted), "overlaps");
    const int perm_bad[4] = {0, 1, 1, 3};
    expect_error(acl_graph_add(g, ACL_OP_TRANSPOSE, &(acl_transpose_attrs){perm_bad, 4}, 1, &a, &b),
                 "perm[2] = 1");
    expect_error(acl_graph_add(g, ACL_OP_TRANSPOSE, &(acl_transpose_attrs){perm_bad, 3}, 1, &a, &b),
                 "transpose: perm must hold 4 values, got 3");
    const int starts[4] = {0, 0, 0, 60}, steps[4] = {1, 1, 1, 2}, zero[4] = {0, 0, 0, 0};
    expect_error(acl_graph_add(g, ACL_OP_SLICE, &(acl_slice_attrs){starts, 4, steps, 4}, 1, &a, &b),
                 "slice: axis 3 reads indices 60 to 122 (step 2) of the input [1,7,7,64]");
    expect_error(acl_graph_add(g, ACL_OP_SLICE, &(acl_slice_attrs){zero, 4, zero, 4}, 1, &a, &b),
                 "slice: steps[0] is 0");
    expect_error(acl_graph_add(g, ACL_OP_SLICE, &(acl_slice_attrs){zero, 3, steps, 4}, 1, &a, &b),
                 "slice: starts must hold 4 values, got 3");
    const int pads[4] = {0, 0, 0, 0}, two[2] = {2, 2}, ones[2] = {1, 1}, tall[2] = {9, 2};
    const acl_tensor pooled = {13000, 4, {1, 2, 2, 64}};
    acl_pool_attrs pool = {ACL_POOL_MAX, two, 2, two, 2, ones, 2, pads, 4, 0};
    expect_error(acl_graph_add(g, ACL_OP_POOL, &pool, 1, &a, &pooled),
                 "max pool: output height is 2 but must be 3 (or 4 with ceil_mode)");
    pool = (acl_pool_attrs){ACL_POOL_AVERAGE, tall, 2, ones, 2, ones, 2, pads, 4, 0};
    expect_error(acl_graph_add(g, ACL_OP_POOL, &pool, 1, &a, &pooled), "window height");
    expect_error(acl_graph_add(g, ACL_OP_LRN, &(acl_lrn_attrs){0, 1, 1, 1}, 1, &a, &out96),
                 "lrn: size");
    const int pad_neg[8] = {0, 0, -7, 0, 0, 0, 0, 0};
    expect_error(acl_graph_add(g, ACL_OP_PAD, &(acl_pad_attrs){ACL_PAD_REFLECT, 0, pad_neg, 8}, 1,
                               &a, &out96),
                 "empty");
    acl_resize_attrs resize = {ACL_RESIZE_LINEAR, 0, 0, (const float[]){2.0f, 2.0f}, 1};
    expect_error(acl_graph_add(g, ACL_OP_RESIZE, &resize, 1, &a, &out96),
                 "resize: scales must hold 2 values, got 1");
    resize.scales_count = 2;
    expect_error(acl_graph_add(g, ACL_OP_RESIZE, &resize, 1, &a, &out96),
                 "resize: output has dims [1,7,7,96] but must have [1,7,7,64]");
    resize.coordinate_mode = 9;
    expect_error(acl_graph_add(g, ACL_OP_RESIZE, &resize, 1, &a, &out96),
                 "resize: unknown coordinate_mode 9");
    float weights[64 * 8] = {0};
    acl_matmul_attrs mm = {.ukernel = "no-such-kernel", .k = 64, .n = 8, .b = weights,
                           .b_count = 64 * 8};
    expect_error(acl_graph_add(g, ACL_OP_MATMUL, &mm, 1, &a, &b), "unknown micro-kernel");
    mm.b_count = 7;
    expect_error(acl_graph_add(g, ACL_OP_MATMUL, &mm, 1, &a, &b), "matmul: b must hold 512 values");
    mm.act = ACL_ACT_COUNT;
    expect_error(acl_graph_add(g, ACL_OP_MATMUL, &mm, 1, &a, &b), "matmul: unknown activation");
    const acl_tensor norm_in[3] = {a, wide, {19100, 1, {32}}}, norm_out = {8000, 4, {1, 7, 7, 64}};
    expect_error(acl_graph_add(g, ACL_OP_LAYER_NORM, &(acl_layer_norm_attrs){1e-5f}, 3, norm_in,
                               &norm_out),
                 "layer_norm: shift has dims [32] but must have [64]");
    expect_error(acl_graph_add(g, ACL_OP_LAYER_NORM, &(acl_layer_norm_attrs){-1.0f}, 3, norm_in,
                               &norm_out),
                 "layer_norm: epsilon must be >= 0");
    const char *uk = NULL;
    if (acl_ukernel_count() > 0) {
        acl_ukernel_info info;
        acl_ukernel_get(0, &info);
        uk = info.name;
    }
    /* a [1,7,7,64] x b [1,7,7,32]: K = 64 against b's 7 rows. */
    const acl_tensor products[2] = {a, b}, mm_out = {15000, 4, {1, 7, 7, 32}};
    const int swap_last[4] = {0, 1, 3, 2}, twice[4] = {0, 1, 1, 3};
    acl_batch_matmul_attrs mm_attrs = {.ukernel = uk};
    expect_error(acl_graph_add(g, ACL_OP_BATCH_MATMUL, &mm_attrs, 2, products, &mm_out),
                 "batch_matmul: a [1,7,7,64] times b [1,7,7,32] does not give the output's "
                 "[1,7,7,32]");
    /* c [1,7,7,3] held transposed is a [1,7,3,7]: its K axis is not innermost. */
    const acl_tensor held[2] = {c, b}, held_out = {15000, 4, {1, 7, 3, 32}};
    mm_attrs = (acl_batch_matmul_attrs){.ukernel = uk, .a_perm = swap_last, .a_perm_count = 4};
    expect_error(acl_graph_add(g, ACL_OP_BATCH_MATMUL, &mm_attrs, 2, held, &held_out),
                 "batch_matmul: a's K axis must be innermost in its layout");
    mm_attrs = (acl_batch_matmul_attrs){.ukernel = uk, .b_perm = twice, .b_perm_count = 4};
    expect_error(acl_graph_add(g, ACL_OP_BATCH_MATMUL, &mm_attrs, 2, products, &mm_out),
                 "batch_matmul: b_perm[2] = 1");
    mm_attrs.b_perm_count = 3;
    expect_error(acl_graph_add(g, ACL_OP_BATCH_MATMUL, &mm_attrs, 2, products, &mm_out),
                 "batch_matmul: b_perm must hold 4 values, got 3");
    const int last = 6, wrong = -8;
    const acl_tensor row = {16000, 4, {1, 7, 1, 64}}, rows = {16000, 4, {1, 7, 2, 64}};
    expect_error(acl_graph_add(g, ACL_OP_GATHER, &(acl_gather_attrs){2, &last, 1}, 1, &a, &rows),
                 "gather: output has dims [1,7,2,64] but must have [1,7,1,64]");
    expect_error(acl_graph_add(g, ACL_OP_GATHER, &(acl_gather_attrs){-2, &wrong, 1}, 1, &a, &row),
                 "gather: indices[0] = -8 is out of range for axis 2 of size 7");
    acl_conv_shape shape = {.n = 1, .h = 7, .w = 7, .c = 32, .oc = 8, .kh = 1, .kw = 1,
                            .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1, .group = 1};
    const acl_tensor conv_out = {14000, 4, {1, 7, 7, 8}};
    expect_error(add_conv_op(g, &shape, "reference", NULL, &configs[0], weights, NULL, &a, 1,
                             &conv_out),
                 "conv: input has dims [1,7,7,64] but must have [1,7,7,32]");
    const acl_tensor with_residual[2] = {b, conv_out};
    expect_error(add_conv_op(g, &shape, "reference", NULL, &configs[0], weights, NULL,
                             with_residual, 2, &conv_out),
                 "has_residual=0");
    expect_error(add_conv_op(g, &shape, "no_such", NULL, &configs[0], weights, NULL, &b, 1,
                             &conv_out),
                 "conv: unknown algorithm");
    check(acl_graph_node_count(g) == 0, "rejected operations left %d nodes",
          acl_graph_node_count(g));
    acl_graph_destroy(g);
}

/* ---- main ------------------------------------------------------------------------ */

static void (*const op_cases[])(int big) = {
    unary_case,   affine_case,  binary_case, pool_case,    global_average_pool_case, concat_case,
    transpose_case, pad_case,  softmax_case, lrn_case,                 matmul_case,
    conv_case,    resize_case, batch_matmul_case, gather_case,
    slice_case,   gather_shuffle_case, layer_norm_case,
};
#define NOPS (int)(sizeof op_cases / sizeof op_cases[0])

int main(int argc, char **argv)
{
    int cases = 200;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc) cases = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            rng_state = strtoull(argv[++i], NULL, 0);
        else {
            fprintf(stderr, "usage: %s [--cases N] [--seed S]\n", argv[0]);
            return 2;
        }
    }
    check_errors();
    accuracy_case();
    chain_case();
    shared_b_case();
    shared_workspace_case();
    /* `cases` random cases per operation, one in four big enough to be split. */
    for (int i = 0; i < cases; i++)
        for (int op = 0; op < NOPS; op++) op_cases[op](i % 4 == 3);
    return test_summary();
}
