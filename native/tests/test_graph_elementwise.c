/* The graph suite's elementwise operations: unary (and its accuracy against float64), affine,
 * layer_norm, binary, softmax and LRN. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_trial.h"

/* ---- unary ------------------------------------------------------------------ */

typedef struct {
    int op;
    float a, b;
    acl_tensor in, out;
} unary_spec;

static int add_unary(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const unary_spec *s = spec;
    return acl_graph_add(g, ACL_OP_UNARY, &(acl_unary_attrs){s->op, s->a, s->b}, 1, &s->in,
                         &s->out);
}

void unary_case(int big)
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
 * the float nearest the exact value, or of floor |x| where that is larger
 * (GELU's absolute bound where it is tiny), printed and checked against the
 * bound. */
typedef struct {
    int op;
    const char *name;
    double lo, hi, max_ulp, floor;
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

void accuracy_case(void)
{
    static const accuracy_spec specs[] = {
        {ACL_UNARY_EXP, "exp", -87, 88, 2, 0},
        {ACL_UNARY_ERF, "erf", -10, 10, 3, 0},
        {ACL_UNARY_TANH, "tanh", -20, 20, 2, 0},
        {ACL_ACT_SIGMOID, "sigmoid", -80, 80, 3, 0},
        {ACL_ACT_GELU, "gelu", 0, 12, 5, 0},
        {ACL_ACT_GELU, "gelu", -12, 0, 7, 0x1p-24},
        {ACL_ACT_GELU_TANH, "gelu_tanh", 0, 12, 3, 0},
        {ACL_ACT_GELU_TANH, "gelu_tanh", -10, 0, 256, 0},
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
        const int ok =
            acl_graph_add(g, ACL_OP_UNARY, &(acl_unary_attrs){.op = sp->op}, 1, &in, &out) == 0 &&
            acl_graph_run(g, NULL) == 0;
        check(ok, "accuracy %s: %s", sp->name, ok ? "" : acl_last_error());
        double worst = 0;
        float worst_x = 0;
        for (int i = 0; ok && i < N; i++) {
            const double ref = ref_math(sp->op, arena[i]);
            const float nearest = (float)fmax(fabs(ref), sp->floor * fabsf(arena[i]));
            const double ulp = (double)nextafterf(nearest, INFINITY) - nearest;
            const double err = fabs(arena[N + i] - ref) / ulp;
            if (!(err <= worst)) {  /* NaN counts as worst */
                worst = err;
                worst_x = arena[i];
            }
        }
        printf("accuracy %-9s [%g, %g]: max %.2f ulp (at x = %.9g), bound %g", sp->name, sp->lo,
               sp->hi, worst, (double)worst_x, sp->max_ulp);
        printf(sp->floor > 0 ? " of max(|f|, %a |x|)\n" : "\n", sp->floor);
        check(ok && worst <= sp->max_ulp, "accuracy %s: %.2f ulp at x = %.9g, bound %g", sp->name,
              worst, (double)worst_x, sp->max_ulp);
        acl_graph_destroy(g);
    }
}

/* ---- affine / layer_norm: x and a scale and shift over its innermost axis -- */

typedef struct {
    int op;
    const void *attrs;
    acl_tensor x, scale, shift, out;
} scale_shift_spec;

static int add_scale_shift(acl_graph *g, const void *spec, const acl_exec *ex)
{
    const scale_shift_spec *s = spec;
    const acl_tensor ins[3] = {s->x, s->scale, s->shift};
    return acl_graph_add(g, s->op, s->attrs, 3, ins, &s->out);
}

/* x of these dims, its scale and shift, and the output (over x when in_place);
 * the arena. */
static float *place_scale_shift(trial *t, scale_shift_spec *s, int rank, const int *dims,
                                int in_place)
{
    place(t, &s->x, rank, dims);
    place(t, &s->scale, 1, &dims[rank - 1]);
    place(t, &s->shift, 1, &dims[rank - 1]);
    place_output(t, &s->out, &s->x, in_place, rank, dims);
    return trial_arena(t);
}

void affine_case(int big)
{
    acl_affine_attrs attrs = {.act = rnd(0, ACL_ACT_COUNT - 1), .a = rnd_float()};
    attrs.b = attrs.act == ACL_ACT_CLIP ? attrs.a + (float)rnd(0, 2) * 0.5f : rnd_float();
    scale_shift_spec s = {.op = ACL_OP_AFFINE, .attrs = &attrs};
    int dims[ACL_MAX_RANK], rank = rnd(1, 4), in_place = rnd(0, 3) == 0;
    random_dims(rank, big, dims);
    const int c = dims[rank - 1];
    trial t;
    trial_begin(&t, TOL_EXACT, "affine act %d %s%s", attrs.act, dims_str(rank, dims),
                in_place ? " in place" : "");
    float *arena = place_scale_shift(&t, &s, rank, dims, in_place);
    const size_t n = volume(rank, dims);
    for (size_t i = 0; i < n; i++) arena[s.x.offset + i] *= 8.0f;  /* reach the clamps */
    memcpy(t.expected, arena, t.arena * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        const size_t ch = i % (size_t)c;
        /* float arithmetic as the op does it: one rounding per step */
        const float v = arena[s.x.offset + i] * arena[s.scale.offset + ch];
        t.expected[s.out.offset + i] =
            (float)ref_activate(attrs.act, attrs.a, attrs.b, v + arena[s.shift.offset + ch]);
    }
    trial_run(&t, &s.out, add_scale_shift, &s);
}

/* Against float64, rows of 16 or more far from zero mean (an offset of 100
 * over a spread of 1: a one-pass E[x^2] - E[x]^2 would lose 1e-3 of the
 * variance; two passes lose the mean's rounding, ulp(100) / 2 over the
 * spread).  Shorter rows stay near 0, where their spread may be tiny. */
void layer_norm_case(int big)
{
    const acl_layer_norm_attrs attrs = {rnd(0, 1) ? 1e-5f : 0.5f};
    scale_shift_spec s = {.op = ACL_OP_LAYER_NORM, .attrs = &attrs};
    int dims[ACL_MAX_RANK], rank = rnd(1, 4);
    random_dims(rank, big, dims);
    if (rnd(0, 1)) dims[rank - 1] = rnd(1, 300);  /* rows of every length, tails included */
    const int d = dims[rank - 1];
    trial t;
    const float offset = d >= 16 ? 100.0f : 0.0f;
    trial_begin(&t, TOL_GEMM, "layer_norm eps %g %s + %g", (double)attrs.epsilon,
                dims_str(rank, dims), (double)offset);
    float *arena = place_scale_shift(&t, &s, rank, dims, 0);
    const size_t n = volume(rank, dims);
    for (size_t i = 0; i < n; i++) arena[s.x.offset + i] += offset;
    memcpy(t.expected, arena, t.arena * sizeof(float));
    for (size_t row = 0; row < n / (size_t)d; row++) {
        const float *x = arena + s.x.offset + row * d;
        double mean = 0, var = 0;
        for (int i = 0; i < d; i++) mean += x[i];
        mean /= d;
        for (int i = 0; i < d; i++) var += (x[i] - mean) * (x[i] - mean);
        const double rstd = 1.0 / sqrt(var / d + attrs.epsilon);
        for (int i = 0; i < d; i++)
            t.expected[s.out.offset + row * d + i] =
                (float)((x[i] - mean) * rstd * arena[s.scale.offset + i] +
                        arena[s.shift.offset + i]);
    }
    trial_run(&t, &s.out, add_scale_shift, &s);
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

void binary_case(int big)
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
        arena[s.b.offset + i] =
            s.op == ACL_BINARY_DIV_NO_NAN && i % 3 == 0
                ? 0.0f
                : copysignf(0.5f + fabsf(arena[s.b.offset + i]), arena[s.b.offset + i]);
    memcpy(t.expected, arena, t.arena * sizeof(float));
    for (size_t i = 0; i < volume(rank, dims); i++) {
        const float x = arena[s.a.offset + broadcast_offset(&s.out, &s.a, i)];
        const float y = arena[s.b.offset + broadcast_offset(&s.out, &s.b, i)];
        const float r = s.op == ACL_BINARY_ADD                       ? x + y
                        : s.op == ACL_BINARY_MUL                     ? x * y
                        : s.op == ACL_BINARY_SUB                     ? x - y
                        : s.op == ACL_BINARY_DIV_NO_NAN && y == 0.0f ? 0.0f
                                                                     : x / y;
        t.expected[s.out.offset + i] = r;
    }
    trial_run(&t, &s.out, add_binary, &s);
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

void softmax_case(int big)
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
            t.expected[s.out.offset + r * len + i] = s.log ? (float)((double)x[i] - max - log(sum))
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

void lrn_case(int big)
{
    lrn_spec s = {.size = rnd(1, 7),
                  .alpha = 1e-4f * (float)rnd(1, 10000),
                  .beta = 0.25f * (float)rnd(1, 4),
                  .bias = 0.5f * (float)rnd(1, 4)};
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
