/* The requantising epilogue of an int8 layer: int32 sums back to uint8.
 *
 *   q = saturate_u8(round_half_even((acc - za * colsum[n] + bias[n]) * scale[n]) + zc)
 *
 * scale[n] = sa * sb[n] / sc folds the activation, per-channel weight and
 * output scales; bias is in int32 units of sa * sb[n], as QLinearConv and a
 * quantised Conv's bias initializer are.  Ties round to even, as
 * onnxruntime's QuantizeLinear does (std::nearbyint in the default rounding
 * mode), so the engine's output matches its bits. */
#ifndef ACL_REQUANT_H
#define ACL_REQUANT_H

#include <stdint.h>

typedef struct {
    const float *scale;      /* N, per output channel */
    const int32_t *bias;     /* N, or NULL */
    const int32_t *colsum;   /* N: B's column sums (acl_gemm_int8_column_sums) */
    int32_t a_zero_point;
    int32_t c_zero_point;
    /* A fused ReLU or Clip as a quantised range: out in [lo, hi] of 0..255 */
    uint8_t lo, hi;
    /* N, or NULL: bias[n] - za * colsum[n] in int32, for a caller that has
     * checked that no sum plus it can leave int32; then used in their stead,
     * the sum and it added in int32 (the same value, so the same float). */
    const int32_t *offset;
} acl_requant;

/* out (M x N, row stride ldo) from acc (M x N, row stride ldacc). */
void acl_requantize_u8(const acl_requant *rq, int m, int n, const int32_t *acc, int ldacc,
                       uint8_t *out, int ldo);

#endif
