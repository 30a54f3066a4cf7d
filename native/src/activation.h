/* The activations (ACL_ACTIVATIONS) that the convolution and GEMM epilogues
 * and the unary graph operation share.  A row at a time with the switch
 * outside the loops, so that each loop vectorises; exp is a polynomial
 * rather than libm's expf for the same reason. */
#ifndef ACL_ACTIVATION_H
#define ACL_ACTIVATION_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "aclengine.h"

/* e^x within 2 ulp for x in [-87, 88] (clamped outside): x = n ln2 + r with
 * |r| <= ln2/2, e^r by Cephes' degree-7 polynomial, 2^n built in the
 * exponent bits. */
static inline float acl_exp(float x)
{
    x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
    const float n = __builtin_rintf(x * 1.44269504088896341f);
    const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
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

static inline float acl_unit_clamp(float v) { return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; }

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
