/* Armv8.0 NEON (Cortex-A53, A72, A73) has no byte dot product: B's bytes are
 * widened to int16 (sxtl) and A's to uint16, whose 0..255 read the same as
 * int16, and SMLAL/SMLAL2 by element accumulate int16 x int16 into int32
 * lanes, exactly.  KR = 1: each K step is one row of 16 B bytes and the 4
 * rows' A bytes; 16 accumulators, 4 B halves and one A vector. */
#include <arm_neon.h>
#include <string.h>

#include "int8.h"

#define MR 4
#define NR 16

/* Lanes of SMLAL by element must be constants, hence a macro per row. */
#define ROW(r)                                                    \
    do {                                                          \
        acc[r][0] = vmlal_lane_s16(acc[r][0], vget_low_s16(b0), va, r); \
        acc[r][1] = vmlal_high_lane_s16(acc[r][1], b0, va, r);    \
        acc[r][2] = vmlal_lane_s16(acc[r][2], vget_low_s16(b1), va, r); \
        acc[r][3] = vmlal_high_lane_s16(acc[r][3], b1, va, r);    \
    } while (0)

void acl_ukr_int8_4x16c1_neon(size_t kgroups, const uint8_t *a, const int32_t *b_panel,
                              int32_t *c, size_t ldc)
{
    const int8_t *b = (const int8_t *)(b_panel + NR);
    int32x4_t acc[MR][4];
    for (int r = 0; r < MR; r++)
        for (int q = 0; q < 4; q++) acc[r][q] = vdupq_n_s32(0);
    for (size_t g = 0; g < kgroups; g++, a += MR, b += NR) {
        const int8x16_t vb = vld1q_s8(b);
        const int16x8_t b0 = vmovl_s8(vget_low_s8(vb)), b1 = vmovl_high_s8(vb);
        uint32_t quad;
        memcpy(&quad, a, sizeof quad);
        const int16x4_t va = vget_low_s16(vreinterpretq_s16_u16(
            vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(quad)))));
        ROW(0);
        ROW(1);
        ROW(2);
        ROW(3);
    }
    for (int r = 0; r < MR; r++)
        for (int q = 0; q < 4; q++) vst1q_s32(c + r * ldc + 4 * q, acc[r][q]);
}
