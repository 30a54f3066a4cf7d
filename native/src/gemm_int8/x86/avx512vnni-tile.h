/* The body of every vpdpbusd kernel, for an MR x (16 * NB) tile: included by
 * each kernel's file with MR, NB and the kernel's name defined.  vpdpbusd
 * multiplies 4 unsigned bytes of one operand by 4 signed bytes of the other
 * and adds the 4 products to an int32 lane, exactly: u8 x s8 is int8.h's
 * contract without any correction.  Per K group, NB B vectors (16 columns
 * each) are loaded once and each row's 4 A bytes broadcast once, for MR * NB
 * vpdpbusd.  A wider tile than 8x16 is what reaches the instruction's peak:
 * MR * NB independent accumulators cover its latency at two per cycle, and
 * each load feeds more of them. */
#include <immintrin.h>
#include <string.h>

#include "int8.h"

#ifndef KS
#define KS 1
#endif
/* One K group g of the MR x NB tile into acc (MR x NB accumulators), the
 * group's B vectors at b. */
#define TILE_STEP(acc, g)                                                                  \
    do {                                                                                   \
        __m512i vb[NB];                                                                    \
        _Pragma("GCC unroll 4") for (int j = 0; j < NB; j++) vb[j] =                       \
            _mm512_loadu_si512(b + j * 64);                                                \
        _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) {                            \
            int32_t quad;                                                                  \
            memcpy(&quad, A_QUAD(r, g), sizeof quad);                                      \
            const __m512i va = _mm512_set1_epi32(quad);                                    \
            _Pragma("GCC unroll 4") for (int j = 0; j < NB; j++) (acc)[r][j] =             \
                _mm512_dpbusd_epi32((acc)[r][j], va, vb[j]);                               \
        }                                                                                  \
    } while (0)

#if defined(TILE_ROWS) && defined(TILE_REQUANT)
/* A read in place, the sums requantised to bytes (int8.h's rows twins). */
#define A_QUAD(r, g) (a + (r) * lda + (g) * 4)
ACL_UKR_INT8_ROWS_REQUANT(TILE_NAME)
#elif defined(TILE_ROWS)
/* A read in place: row r of the tile at a + r * lda (int8.h's rows kernels). */
#define A_QUAD(r, g) (a + (r) * lda + (g) * 4)
ACL_UKR_INT8_ROWS(TILE_NAME)
#else
#define A_QUAD(r, g) (a + (g) * MR * 4 + (r) * 4)
ACL_UKR_INT8(TILE_NAME)
#endif
{
    const int8_t *b = (const int8_t *)(b_panel + 16 * NB);
    /* KS sets of accumulators take the K groups in turn and are summed at
     * the end (exact in integers, so the same sums): a one-row tile has NB
     * vpdpbusd chains alone, too few to cover the instruction's latency. */
    __m512i acc[KS][MR][NB];
#pragma GCC unroll 4
    for (int s = 0; s < KS; s++)
#pragma GCC unroll 16
        for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
            for (int j = 0; j < NB; j++) acc[s][r][j] = _mm512_setzero_si512();
    size_t g = 0;
    for (; g + KS <= kgroups; g += KS)
#pragma GCC unroll 4
        for (int s = 0; s < KS; s++, b += NB * 64) TILE_STEP(acc[s], g + s);
    for (; g < kgroups; g++, b += NB * 64) TILE_STEP(acc[0], g);
#pragma GCC unroll 4
    for (int s = 1; s < KS; s++)
#pragma GCC unroll 16
        for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
            for (int j = 0; j < NB; j++)
                acc[0][r][j] = _mm512_add_epi32(acc[0][r][j], acc[s][r][j]);
#ifdef TILE_REQUANT
    /* requant.c's requant_i32 with requant_bounds, lane for lane: the same
     * float operations in the same order, so the same bytes. */
    __m512i offset[NB];
    __m512 scale[NB];
#pragma GCC unroll 4
    for (int j = 0; j < NB; j++) {
        offset[j] = _mm512_loadu_si512(q->offset + j * 16);
        scale[j] = _mm512_loadu_ps(q->scale + j * 16);
    }
    const __m512i zc = _mm512_set1_epi32(q->zc);
    const __m512 lo = _mm512_set1_ps((float)(q->lo - q->zc)),
                 hi = _mm512_set1_ps((float)(q->hi - q->zc));
#pragma GCC unroll 16
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int j = 0; j < NB; j++) {
            __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(acc[0][r][j], offset[j])),
                                     scale[j]);
            v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
            const __m512i u = _mm512_add_epi32(
                _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zc);
            _mm_storeu_si128((__m128i *)(void *)(c + r * ldc + j * 16), _mm512_cvtepi32_epi8(u));
        }
#else
#pragma GCC unroll 16
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int j = 0; j < NB; j++) _mm512_storeu_si512(c + r * ldc + j * 16, acc[0][r][j]);
#endif
}
