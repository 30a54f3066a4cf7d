/* The pass/fail harness and seeded random numbers of the C test programs.
 * Every program closes with "N passed, N failed" alone on a line, which
 * tests/engine/test_native_suites.py reads, and exits non-zero after a failure.
 * Random numbers are splitmix64 from seed 1 unless a --seed sets rng_state,
 * so that a run is reproducible. */
#ifndef ACL_TEST_HARNESS_H
#define ACL_TEST_HARNESS_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "aclengine.h"

/* ---- pass/fail ------------------------------------------------------------ */

/* Defined once, in test_harness.c, for suites built from several files. */
extern int passed, failed;

/* Counts a failure and prints it on one line: "FAIL <context>: <message>",
 * or "FAIL <message>" without a context. */
static inline void vfail(const char *context, const char *fmt, va_list ap)
{
    printf("FAIL ");
    if (context) printf("%s: ", context);
    vprintf(fmt, ap);
    printf("\n");
    failed++;
}

static inline void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Counts a pass, or a failure described by fmt. */
static inline void check(int ok, const char *fmt, ...)
{
    if (ok) {
        passed++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vfail(NULL, fmt, ap);
    va_end(ap);
}

/* Prints the closing line; returns the exit status. */
static inline int test_summary(void)
{
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}

/* ---- random numbers --------------------------------------------------------- */

extern uint64_t rng_state;  /* 1 unless a --seed sets it */

static inline uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static inline int rnd(int lo, int hi) { return lo + (int)(rng_next() % (uint64_t)(hi - lo + 1)); }

/* Uniform in [-1, 1). */
static inline float rnd_float(void)
{
    return (float)((rng_next() >> 40) * (2.0 / (1ull << 24)) - 1.0);
}

/* The activations (ACL_ACTIVATIONS) in double precision with libm, the
 * engine's reference: a, b as acl_activate takes them. */
static inline double ref_activate(int act, double a, double b, double x)
{
    switch (act) {
    case ACL_ACT_RELU: return x > 0 ? x : 0;
    case ACL_ACT_CLIP: return fmin(fmax(x, a), b);
    case ACL_ACT_LEAKY_RELU: return x < 0 ? a * x : x;
    case ACL_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case ACL_ACT_HARD_SIGMOID: return fmax(0.0, fmin(1.0, a * x + b));
    case ACL_ACT_HARD_SWISH: return x * fmax(0.0, fmin(1.0, a * x + b));
    case ACL_ACT_SILU: return x / (1.0 + exp(-x));
    case ACL_ACT_MISH: return x * tanh(log1p(exp(x)));
    case ACL_ACT_GELU: return 0.5 * x * erfc(-x / sqrt(2.0));
    case ACL_ACT_GELU_TANH:  /* x (1 + tanh u) / 2 as x sigmoid(2u): no cancellation in double */
        return x / (1.0 + exp(-2.0 * sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    default: return x;
    }
}

/* ---- shapes ------------------------------------------------------------------ */

/* One image's 3x3 convolution, stride and dilation 1, one group, padded by
 * `pad` on every side: the cases change the rest. */
static inline acl_conv_shape conv3x3_shape(int h, int w, int c, int oc, int pad)
{
    acl_conv_shape s = {.n = 1, .h = h, .w = w, .c = c, .oc = oc, .kh = 3, .kw = 3, .group = 1};
    s.stride_h = s.stride_w = s.dil_h = s.dil_w = 1;
    s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = pad;
    return s;
}

#endif
