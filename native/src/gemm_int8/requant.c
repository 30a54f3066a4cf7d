/* The requantising epilogue (requant.h). */
#include <math.h>
#include <stddef.h>

#include "requant.h"

#if defined(__AVX512F__)
#include <immintrin.h>

/* 16 int32 sums (plus their offsets, if any) to bytes, as the scalar loops
 * below do it: GCC vectorises those loops 64 elements at a time (its vector
 * factor follows the uint8 output), so a row of fewer than 64 channels, a
 * MobileNet's 16 or 32, ran scalar and the epilogue outweighed the GEMM.
 * Rounding to nearest even here is nearbyintf's in the default mode. */
static inline void requant16(const int32_t *sum, const int32_t *offset, const float *scale,
                             __m512 zc, __m512 lo, __m512 hi, uint8_t *dst)
{
    __m512i s = _mm512_loadu_si512(sum);
    if (offset) s = _mm512_add_epi32(s, _mm512_loadu_si512(offset));
    __m512 q = _mm512_mul_ps(_mm512_cvtepi32_ps(s), _mm512_loadu_ps(scale));
    q = _mm512_add_ps(_mm512_roundscale_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zc);
    q = _mm512_min_ps(_mm512_max_ps(q, lo), hi);
    _mm_storeu_si128((__m128i *)(void *)dst, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(q)));
}
#define REQUANT_HEAD(row, offset, dst)                                                        \
    for (; j + 16 <= n; j += 16)                                                             \
        requant16(row + j, offset ? offset + j : NULL, scale + j, _mm512_set1_ps(zc),        \
                  _mm512_set1_ps(lo), _mm512_set1_ps(hi), dst + j);
#else
#define REQUANT_HEAD(row, offset, dst)
#endif

void acl_requantize_u8(const acl_requant *rq, int m, int n, const int32_t *acc, int ldacc,
                       uint8_t *out, int ldo)
{
    /* The struct's pointers in restrict locals, and no bias as zeros: the
     * compiler may then vectorise the row loop (it must otherwise assume
     * that out aliases them and reload every one per element). */
    const float lo = rq->lo, hi = rq->hi, zc = (float)rq->c_zero_point;
    const float *restrict scale = rq->scale;
    const int32_t *restrict colsum = rq->colsum, *restrict bias = rq->bias;
    const int64_t za = rq->a_zero_point;
    if (rq->offset) {
        /* int32 throughout: twice the lanes of the int64 sum below. */
        const int32_t *restrict offset = rq->offset;
        for (int i = 0; i < m; i++) {
            const int32_t *restrict row = acc + (size_t)i * ldacc;
            uint8_t *restrict dst = out + (size_t)i * ldo;
            int j = 0;
            REQUANT_HEAD(row, offset, dst)
            for (; j < n; j++) {
                const float q = nearbyintf((float)(row[j] + offset[j]) * scale[j]) + zc;
                dst[j] = (uint8_t)(q < lo ? lo : q > hi ? hi : q);
            }
        }
        return;
    }
    if (za == 0 && !bias) {
        /* The sums alone (the depthwise convolution folds the rest into
         * them): int32 straight to float, as many lanes at a time as floats,
         * where the int64 sum below takes half as many; the same float, as
         * an int32 converts exactly to int64. */
        for (int i = 0; i < m; i++) {
            const int32_t *restrict row = acc + (size_t)i * ldacc;
            uint8_t *restrict dst = out + (size_t)i * ldo;
            int j = 0;
            REQUANT_HEAD(row, (const int32_t *)NULL, dst)
            for (; j < n; j++) {
                const float q = nearbyintf((float)row[j] * scale[j]) + zc;
                dst[j] = (uint8_t)(q < lo ? lo : q > hi ? hi : q);
            }
        }
        return;
    }
    for (int i = 0; i < m; i++) {
        const int32_t *restrict row = acc + (size_t)i * ldacc;
        uint8_t *restrict dst = out + (size_t)i * ldo;
        for (int j = 0; j < n; j++) {
            /* int64: the int32 sum plus any bias need not fit in int32. */
            const int64_t sum = (int64_t)row[j] - za * colsum[j] + (bias ? bias[j] : 0);
            /* nearbyintf rounds in the current mode, to nearest with ties to
             * even unless someone changed it; clamping the float first keeps
             * the conversion defined for any sum. */
            const float q = nearbyintf((float)sum * scale[j]) + zc;
            dst[j] = (uint8_t)(q < lo ? lo : q > hi ? hi : q);
        }
    }
}
