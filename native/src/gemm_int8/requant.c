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

#if defined(__AVX512BW__)
/* The clamp of requant_i32: the output's range [lo, hi] less its zero point,
 * in floats, so that the conversion stays defined.  Rounding (to nearest
 * even) maps [lo - zc, hi - zc], whose ends are integers, onto itself, so
 * clamping before it gives the bytes that clamping the rounded value after
 * adding zc gives, two instructions a vector fewer. */
typedef struct {
    __m512 lo, hi;
    __m512i zc;
} requant_bounds;

static inline requant_bounds bounds_of(int zc, int lo, int hi)
{
    return (requant_bounds){_mm512_set1_ps((float)(lo - zc)), _mm512_set1_ps((float)(hi - zc)),
                            _mm512_set1_epi32(zc)};
}

/* clamp(round(s * scale) + zc, lo, hi) in int32 lanes. */
static inline __m512i requant_i32(__m512i s, __m512 scale, const requant_bounds *b)
{
    __m512 q = _mm512_mul_ps(_mm512_cvtepi32_ps(s), scale);
    q = _mm512_min_ps(_mm512_max_ps(q, b->lo), b->hi);
    return _mm512_add_epi32(
        _mm512_cvt_roundps_epi32(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), b->zc);
}

static inline __m512i requant16_i32(const int32_t *sum, const int32_t *offset, const float *scale,
                                    const requant_bounds *b)
{
    __m512i s = _mm512_loadu_si512(sum);
    if (offset) s = _mm512_add_epi32(s, _mm512_loadu_si512(offset));
    return requant_i32(s, _mm512_loadu_ps(scale), b);
}

/* The last n % 16 of a row under a mask, not the scalar loop: MobileNetV2's
 * 1x1 layers to 24 channels took 0.7x the time. */
static inline void requant_tail(const int32_t *sum, const int32_t *offset, const float *scale,
                                int len, const requant_bounds *b, uint8_t *dst)
{
    const __mmask16 m = (__mmask16)((1u << len) - 1);
    __m512i s = _mm512_maskz_loadu_epi32(m, sum);
    if (offset) s = _mm512_add_epi32(s, _mm512_maskz_loadu_epi32(m, offset));
    _mm512_mask_cvtepi32_storeu_epi8(dst, m, requant_i32(s, _mm512_maskz_loadu_ps(m, scale), b));
}

/* 64 sums to bytes, as requant16 gives them: packs narrow four vectors at
 * once into one 64-byte store (their lanes already lie in [lo, hi], so the
 * packs' saturation changes nothing), where requant16 narrows and stores
 * each (MobileNetV2's depthwise layers, 96 to 960 channels, took 0.97x the
 * time).  The packs interleave the four by 128-bit lane; the permutation
 * puts each back in order. */
static inline void requant64(const int32_t *sum, const int32_t *offset, const float *scale,
                             const requant_bounds *b, uint8_t *dst)
{
    const __m512i w = requant16_i32(sum, offset, scale, b);
    const __m512i x = requant16_i32(sum + 16, offset ? offset + 16 : NULL, scale + 16, b);
    const __m512i y = requant16_i32(sum + 32, offset ? offset + 32 : NULL, scale + 32, b);
    const __m512i z = requant16_i32(sum + 48, offset ? offset + 48 : NULL, scale + 48, b);
    const __m512i v = _mm512_packus_epi16(_mm512_packs_epi32(w, x), _mm512_packs_epi32(y, z));
    _mm512_storeu_si512(
        dst, _mm512_permutexvar_epi32(
                 _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), v));
}
#endif

/* A call's vector constants, made once rather than for every row (a
 * depthwise run requantises 8 rows of 32 channels a call). */
typedef struct {
#if defined(__AVX512BW__)
    requant_bounds b;
#endif
    __m512 zc, lo, hi; /* requant16's */
} requant_consts;

static inline requant_consts consts_of(int zc, uint8_t lo, uint8_t hi)
{
    return (requant_consts){
#if defined(__AVX512BW__)
        bounds_of(zc, lo, hi),
#endif
        _mm512_set1_ps((float)zc), _mm512_set1_ps(lo), _mm512_set1_ps(hi)};
}

/* The row's first channels in vectors; returns how many (the scalar loops
 * do the rest). */
static inline int requant_head(const int32_t *row, const int32_t *offset, const float *scale, int n,
                               const requant_consts *k, uint8_t *dst)
{
    int j = 0;
#if defined(__AVX512BW__)
    for (; j + 64 <= n; j += 64)
        requant64(row + j, offset ? offset + j : NULL, scale + j, &k->b, dst + j);
#endif
    for (; j + 16 <= n; j += 16)
        requant16(row + j, offset ? offset + j : NULL, scale + j, k->zc, k->lo, k->hi, dst + j);
#if defined(__AVX512BW__)
    if (j < n) {
        requant_tail(row + j, offset ? offset + j : NULL, scale + j, n - j, &k->b, dst + j);
        j = n;
    }
#endif
    return j;
}
#define REQUANT_CONSTS const requant_consts k = consts_of(rq->c_zero_point, rq->lo, rq->hi);
#define REQUANT_HEAD(row, offset, dst) j = requant_head(row, offset, scale, n, &k, dst);
#else
#define REQUANT_CONSTS
#define REQUANT_HEAD(row, offset, dst)
#endif

void acl_requantize_u8(const acl_requant *rq, int m, int n, const int32_t *acc, int ldacc,
                       uint8_t *out, int ldo)
{
    /* The struct's pointers in restrict locals, and no bias as zeros: the
     * compiler may then vectorise the row loop (it must otherwise assume
     * that out aliases them and reload every one per element). */
    const float lo = rq->lo, hi = rq->hi, zc = (float)rq->c_zero_point;
    REQUANT_CONSTS
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
