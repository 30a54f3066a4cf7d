/* vpdpbusd multiplies 4 unsigned bytes of one operand by 4 signed bytes of
 * the other and adds the 4 products to an int32 lane, exactly: u8 x s8 is
 * int8.h's contract without any correction.  One B vector is a K group of
 * 16 columns; each row's 4 A bytes are broadcast to all lanes. */
#include <immintrin.h>
#include <string.h>

#include "int8.h"

#define MR 8
#define NR 16

ACL_UKR_INT8(acl_ukr_int8_8x16c4_avx512vnni)
{
    const int8_t *b = (const int8_t *)(b_panel + NR);
    __m512i acc[MR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; r++) acc[r] = _mm512_setzero_si512();
    for (size_t g = 0; g < kgroups; g++, a += MR * 4, b += NR * 4) {
        const __m512i vb = _mm512_loadu_si512(b);
#pragma GCC unroll 16
        for (int r = 0; r < MR; r++) {
            int32_t quad;
            memcpy(&quad, a + r * 4, sizeof quad);
            acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_set1_epi32(quad), vb);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; r++) _mm512_storeu_si512(c + r * ldc, acc[r]);
}
