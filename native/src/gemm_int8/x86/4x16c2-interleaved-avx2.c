/* AVX2 has no u8 x s8 dot product that is exact: vpmaddubsw adds two u8 x s8
 * products into an int16 and saturates (255 * -128 * 2 = -65280).  So the
 * bytes are widened to int16 first and multiplied with vpmaddwd, which adds
 * two int16 products into an int32 lane without saturating: B comes packed
 * in K pairs (KR = 2), and each row's A pair is broadcast as one int32. */
#include <immintrin.h>

#include "int8.h"

#define MR 4
#define NR 16

ACL_UKR_INT8(acl_ukr_int8_4x16c2_avx2)
{
    const int8_t *b = (const int8_t *)(b_panel + NR);
    __m256i acc[MR][2];
#pragma GCC unroll 16
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    for (size_t g = 0; g < kgroups; g++, a += MR * 2, b += NR * 2) {
        const __m256i b_lo = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b));
        const __m256i b_hi = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + 16)));
#pragma GCC unroll 16
        for (int r = 0; r < MR; r++) {
            const __m256i pair = _mm256_set1_epi32(a[2 * r] | a[2 * r + 1] << 16);
            acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(pair, b_lo));
            acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(pair, b_hi));
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; r++) {
        _mm256_storeu_si256((__m256i *)(c + r * ldc), acc[r][0]);
        _mm256_storeu_si256((__m256i *)(c + r * ldc + 8), acc[r][1]);
    }
}
