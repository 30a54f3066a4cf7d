/* The activations (ACL_ACTIVATIONS) that the convolution and GEMM epilogues
 * and the unary graph operation share.  A row at a time with the switch
 * outside the loops, so that each loop vectorises: exp, erf and tanh are
 * polynomials without branches (both sides of a range split are computed
 * and one is selected) rather than libm's scalar calls, so that GCC turns
 * every loop below into AVX2 / AVX-512 or NEON code.
 *
 * Accuracy against float64 (native/tests/test_graph.c's accuracy_case checks
 * these bounds on every build, AArch64 under qemu included), in ulp of the
 * float nearest the exact value, measured maxima in brackets (the same on
 * x86 AVX-512 and AArch64 NEON):
 *   exp        [-87, 88]   2 ulp (1.0)
 *   erf        [-10, 10]   3 ulp (1.9)
 *   tanh       [-20, 20]   2 ulp (1.2)
 *   sigmoid    [-80, 80]   3 ulp (2.2; below -87 e^-x clamps at e^88)
 *   gelu       [0, 12]     5 ulp (3.4; 4.1 over every fifth float)
 *              [-12, 0]    7 ulp (4.2; 4.6 likewise) of max(|gelu(x)|,
 *                         2^-24 |x|): relative down to -5.3, absolute
 *                         below, where GELU is under half an ulp of x
 *   gelu_tanh  [0, 12]     3 ulp (1.7)
 *              [-10, 0]  256 ulp (206 at -9.7: e^-2u's relative error is |2u|
 *                         times 2u's rounding, ~1.6e-5 at 2u = -87; the tanh
 *                         form evaluated in float cancels to 0 there)
 * Measured maxima are printed by that test. */
#ifndef ACL_ACTIVATION_H
#define ACL_ACTIVATION_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "aclengine.h"

/* e^x = 2^n e^r, given x's split x = n ln2 + r with |r| <= ln2/2 and n in
 * [-126, 127]: e^r by Cephes' degree-7 polynomial, 2^n built in the
 * exponent bits.  Within 2 ulp. */
static inline float acl_exp_reduced(float n, float r)
{
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/* ln2 = LN2_HI + LN2_LO, LN2_HI with few enough bits that n LN2_HI is exact
 * (Cody and Waite's reduction). */
#define ACL_LN2_HI 0.693359375f
#define ACL_LN2_LO -2.12194440e-4f

/* e^x, x clamped into [-87, 88]. */
static inline float acl_exp(float x)
{
    x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
    const float n = __builtin_rintf(x * 1.44269504088896341f);
    return acl_exp_reduced(n, (x - n * ACL_LN2_HI) - n * ACL_LN2_LO);
}

/* 2^(n - k) from biased = n + 1.5 * 2^23 + 127 - k, the sum that rounded
 * a float to the integer n (n - k in [-126, 127]): its low bits are
 * n + 127 - k, which shifted into the exponent field are that power of 2
 * (an add to round and a shift, where rint and an integer conversion would
 * take three). */
static inline float acl_exp2_biased(float biased)
{
    uint32_t bits;
    memcpy(&bits, &biased, sizeof bits);
    bits <<= 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return scale;
}

/* e^x for x <= 0, as Softmax takes it (x less its row's max), e^-87 below
 * -87: x log2(e) rounded to n by adding 1.5 * 2^23 + 127, which gives 2^n
 * as well (acl_exp2_biased), and e^r by a degree-5 polynomial fitted to it
 * on [-ln2/2, ln2/2].  Within 3 ulp (measured 2.2) on [-87, 0]; twice as
 * fast as acl_exp's clamps, rounding and degree 7, which is most of a
 * Softmax. */
static inline float acl_exp_nonpositive(float x)
{
    const float bias = 12582912.0f + 127.0f;
    x = x < -87.0f ? -87.0f : x;
    const float biased = x * 1.44269504088896341f + bias, n = biased - bias;
    const float r = (x - n * ACL_LN2_HI) - n * ACL_LN2_LO;
    float p = 8.3125170620e-3f;
    p = p * r + 4.1890117442e-2f;
    p = p * r + 1.6667114575e-1f;
    p = p * r + 4.9999231764e-1f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    return p * acl_exp2_biased(biased);
}

/* e^(hi + lo) for hi + lo in [-87, 88], which the caller guarantees, lo
 * small (|lo| < 4): r is taken from hi and lo apart (hi - n LN2_HI is
 * exact), so that an argument known as a sum (erfc's -a^2 + small) is not
 * rounded first: that rounding, up to 4e-6 at -87, would be the result's
 * relative error. */
static inline float acl_exp_sum(float hi, float lo)
{
    const float n = __builtin_rintf((hi + lo) * 1.44269504088896341f);
    return acl_exp_reduced(n, (hi - n * ACL_LN2_HI) + (lo - n * ACL_LN2_LO));
}

static inline float acl_unit_clamp(float v) { return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; }

/* erf(z) for |z| <= 1: z (c0 + s p(s)) with s = z^2, the polynomial fitted
 * (minimax on relative error) to erf(z) / z within 1.2e-9, the leading term
 * added last in one FMA. */
static inline float acl_erf_small(float z)
{
    const float s = z * z;
    float p = 7.8540039696e-5f;
    p = p * s - 8.0102406558e-4f;
    p = p * s + 5.1883336587e-3f;
    p = p * s - 2.6853815582e-2f;
    p = p * s + 1.1283585257e-1f;
    p = p * s - 3.7612625838e-1f;
    return z * 1.1283791657f + z * (s * p);
}

/* The rounding error of sq = a * a: exact where the ISA has an FMA (every
 * AArch64, x86 with FMA3), else 0 (only erfc's last bits suffer). */
static inline float acl_square_error(float a, float sq)
{
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
    return __builtin_fmaf(a, a, -sq);
#else
    (void)a, (void)sq;
    return 0.0f;
#endif
}

/* erfc(a) for a in [0, 9.2], given a^2 as sq_hi + sq_lo: t e^(w Q(w) - a^2)
 * with t = 2 / (2 + a) and w = a / (2 + a) = 1 - t, Q a degree-8 polynomial
 * in w - 5/12 (centred, so that its terms do not cancel) fitted so that
 * w Q(w) is log(erfc(a) / t) + a^2 within 4.8e-8: erfc's relative error
 * from the fit.  One formula from 0 to 9.2 with nothing cancelling (exactly
 * 1 at 0); the exponent stays in range (no clamps) and goes to e^ as -sq_hi
 * plus the rest, unrounded (acl_exp_sum), a^2 in two parts because its
 * rounding, times a^2, would be the result's relative error.  Q by Estrin's
 * scheme rather than Horner's: the whole function is one chain of dependent
 * operations, and its depth, not the operation count, bounds the throughput
 * (GELU, when it took erfc: 0.26 -> 0.22 ms over 500k floats, one core). */
static inline float acl_erfc(float a, float sq_hi, float sq_lo)
{
    const float d = 1.0f / (2.0f + a), w = a * d, v = w - 0.41666666667f;
    const float v2 = v * v, v4 = v2 * v2;
    const float q01 = -1.3406289558e+0f - 6.7459067429e-2f * v;
    const float q23 = 3.7959272704e-1f + 6.6702293498e-2f * v;
    const float q45 = -2.4477434485e-1f - 1.2036519546e-1f * v;
    const float q67 = 1.8543527881e-1f + 1.3741315011e-1f * v;
    const float q = (q01 + v2 * q23) + v4 * ((q45 + v2 * q67) - v4 * 1.3842271374e-1f);
    return 2.0f * d * acl_exp_sum(-sq_hi, w * q - sq_lo);
}

static inline float acl_erf(float x)
{
    const float a = fabsf(x) > 9.0f ? 9.0f : fabsf(x), sq = a * a;
    const float tail = 1.0f - acl_erfc(a, sq, acl_square_error(a, sq));
    return fabsf(x) < 1.0f ? acl_erf_small(x) : x < 0.0f ? -tail : tail;
}

/* tanh: x p(x^2) below 0.625 (fitted within 4e-9), else 1 - 2 / (e^2|x| + 1)
 * with x's sign (e^2|x| clamps at e^88, where the quotient is 1). */
static inline float acl_tanh(float x)
{
    const float s = x * x;
    float p = -5.6601263283e-3f;
    p = p * s + 2.0591137082e-2f;
    p = p * s - 5.3721126612e-2f;
    p = p * s + 1.3331128546e-1f;
    p = p * s - 3.3333260598e-1f;
    p = p * s + 9.9999999609e-1f;
    const float big = 1.0f - 2.0f / (acl_exp(2.0f * fabsf(x)) + 1.0f);
    return fabsf(x) < 0.625f ? x * p : x < 0.0f ? -big : big;
}

/* GELU, x Phi(x) with Phi(x) = (1 + erf(x / sqrt 2)) / 2, from the tail
 * Q(a) = Phi(-a) at a = |x|: x Q(a) for x < 0, else x (1 - Q(a)), where
 * Q <= 1/2 cancels nothing.  Q(a) = e^(-a^2/2 + L(a)) / 4 with L a degree-11
 * polynomial in u = a - 3/2, fitted by Lawson's weighted minimax in float64
 * to log Q(a) + a^2/2 + 2 ln 2 on [0, 8] within 3.5e-8 (Q's relative error)
 * under the weight min(1, 2^25 Q(a)), the contract below with a margin.  The
 * 1/4 (a 2^-2 in the exponent's bias) keeps L within [-1.7, 0.7], half the
 * size of log Q + a^2/2's [-3.1, -0.7], and so its rounding.  L by Horner's
 * scheme in u^2 over pairs of terms, the upper four pairs by Estrin's: the
 * depth of Estrin's scheme (the chain's depth bounds the throughput) with
 * the larger low terms summed last (Estrin's whole scheme, 7% faster, errs
 * by 1.5 ulp more at x = -4.4, where its partial sums cancel).  -a^2/2 and
 * the rounding error of a^2 (acl_square_error) go to the reduction apart,
 * as in acl_exp_sum; e^r by a degree-6 polynomial fitted to it (relative
 * 3e-9) on [-ln2/2, ln2/2], rounded with acl_exp_nonpositive's bias.  No
 * division and no range split: 1.6 times as fast (one core, AVX-512) as the
 * erfc form it replaced (t = 2 / (2 + a), Q's relative error kept down to
 * x = -12).
 *
 * Accuracy is in ulp of max(|gelu(x)|, 2^-24 |x|): relative while GELU is at
 * least half an ulp of x (Phi(x) >= 2^-24, x >= -5.3), absolute below,
 * where any sum with a value of x's size absorbs it and only its size
 * matters (onnxruntime's erf bounds Phi's absolute error at about 2^-24;
 * here it is a few times 2^-47).  a is clamped at 8, Q(8) = 6e-16 being
 * under that floor. */
static inline float acl_gelu(float x)
{
    const float a = fabsf(x) < 8.0f ? fabsf(x) : 8.0f, u = a - 1.5f;
    const float u2 = u * u, u4 = u2 * u2;
    const float l01 = -1.9465000927e-1f - 4.3867719173e-1f * u;
    const float l23 = 7.4772901833e-2f - 1.3858441263e-2f * u;
    const float l45 = 2.3624736350e-3f - 3.3451343188e-4f * u;
    const float l67 = 3.0412278647e-5f + 1.5789911458e-6f * u;
    const float l89 = -1.3992786307e-6f + 3.0221531233e-7f * u;
    const float lab = -3.3151767553e-8f + 1.5262556774e-9f * u;
    const float l = l01 + u2 * (l23 + u2 * ((l45 + u2 * l67) + u4 * (l89 + u2 * lab)));
    const float sq = a * a, hi = -0.5f * sq, lo = l - 0.5f * acl_square_error(a, sq);
    const float bias = 12582912.0f + 127.0f - 2.0f;
    const float biased = (hi + lo) * 1.44269504088896341f + bias, n = biased - bias;
    const float r = (hi - n * ACL_LN2_HI) + (lo - n * ACL_LN2_LO);
    float p = 1.3814612757e-3f;
    p = p * r + 8.3687100559e-3f;
    p = p * r + 4.1668388993e-2f;
    p = p * r + 1.6666521132e-1f;
    p = p * r + 4.9999994040e-1f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const float q = p * acl_exp2_biased(biased);
    return x * (x < 0.0f ? q : 1.0f - q);
}

/* GELU's tanh form, x (1 + tanh(u)) / 2 with u = sqrt(2 / pi) (x + 0.044715
 * x^3): (1 + tanh(u)) / 2 is sigmoid(2u), which has no cancellation. */
static inline float acl_gelu_tanh(float x)
{
    const float two_u = x * (1.5957691216057308f + 0.0713548162726009f * x * x);
    return x / (1.0f + acl_exp(-two_u));
}

/* y = act(x) over n floats (y may be x).  a, b are the parameters: clip's
 * min and max, leaky_relu's alpha, hard_sigmoid's and hard_swish's alpha and
 * beta (y = x * clamp(alpha x + beta, 0, 1), ONNX HardSwish being 1/6, 1/2). */
static inline void acl_activate(int act, float a, float b, const float *x, float *y, size_t n)
{
    switch (act) {
    case ACL_ACT_NONE:
        if (y != x) memcpy(y, x, n * sizeof *y);
        return;
    case ACL_ACT_RELU:
        for (size_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
        return;
    case ACL_ACT_CLIP:  /* ONNX: min(max(x, a), b), so b wins when a > b */
        for (size_t i = 0; i < n; i++) {
            const float v = x[i] < a ? a : x[i];
            y[i] = v > b ? b : v;
        }
        return;
    case ACL_ACT_LEAKY_RELU:
        for (size_t i = 0; i < n; i++) y[i] = x[i] < 0.0f ? a * x[i] : x[i];
        return;
    case ACL_ACT_SIGMOID:
        for (size_t i = 0; i < n; i++) y[i] = 1.0f / (1.0f + acl_exp(-x[i]));
        return;
    case ACL_ACT_HARD_SIGMOID:
        for (size_t i = 0; i < n; i++) y[i] = acl_unit_clamp(a * x[i] + b);
        return;
    case ACL_ACT_HARD_SWISH:
        for (size_t i = 0; i < n; i++) y[i] = x[i] * acl_unit_clamp(a * x[i] + b);
        return;
    case ACL_ACT_SILU:
        for (size_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + acl_exp(-x[i]));
        return;
    case ACL_ACT_MISH:
        /* tanh(softplus(x)) = (e^2x + 2e^x) / (e^2x + 2e^x + 2); e^x is capped
         * at x = 20, where the ratio is 1 in float, so that it cannot overflow. */
        for (size_t i = 0; i < n; i++) {
            const float e = acl_exp(x[i] < 20.0f ? x[i] : 20.0f), q = e * (e + 2.0f);
            y[i] = x[i] * q / (q + 2.0f);
        }
        return;
    case ACL_ACT_GELU:
        for (size_t i = 0; i < n; i++) y[i] = acl_gelu(x[i]);
        return;
    case ACL_ACT_GELU_TANH:
        for (size_t i = 0; i < n; i++) y[i] = acl_gelu_tanh(x[i]);
        return;
    }
}

/* A ReLU or Clip as the bounds [*lo, *hi] that a kernel applies to its sums
 * in registers, with a and b as acl_activate takes them; 0 for the other
 * activations, which stay a pass of acl_activate over the output. */
static inline int acl_act_bounds(int act, float a, float b, float *lo, float *hi)
{
    if (act != ACL_ACT_RELU && act != ACL_ACT_CLIP) return 0;
    *lo = act == ACL_ACT_RELU ? 0.0f : a;
    *hi = act == ACL_ACT_RELU ? INFINITY : b;
    return 1;
}

/* A convolution's activation parameters as acl_activate takes them. */
static inline void acl_conv_act_params(const acl_conv_shape *s, float *a, float *b)
{
    *a = s->act == ACL_ACT_CLIP ? s->act_min : s->act_alpha;
    *b = s->act == ACL_ACT_CLIP ? s->act_max : s->act_beta;
}

#endif
