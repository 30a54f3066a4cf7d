/* Armv8.0 NEON (Cortex-A53, A72, A73) has no byte dot product: B's bytes are
 * widened to int16 (sxtl) and A's to uint16, whose 0..255 read the same as
 * int16, and SMLAL/SMLAL2 by element accumulate int16 x int16 into int32 lanes,
 * exactly.  KR = 1: each K step is one row of 16 B bytes and the 4 rows' A
 * bytes; 16 accumulators, 2 B halves and one A vector. */
#include <string.h>

#include "int8.h"
#include "tile_4x16.h"

/* Odd quarters are the high halves of the widened B: SMLAL2, no extraction. */
#define MAC(acc, q, r)                                                             \
    acc = (q) % 2 ? vmlal_high_lane_s16(acc, bh[(q) / 2], va, r)                   \
                  : vmlal_lane_s16(acc, vget_low_s16(bh[(q) / 2]), va, r)

ACL_UKR_INT8(acl_ukr_int8_4x16c1_neon)
{
    const int8_t *b = (const int8_t *)(b_panel + NR);
    int32x4_t acc[MR][4];
    for (int r = 0; r < MR; r++)
        for (int q = 0; q < 4; q++) acc[r][q] = vdupq_n_s32(0);
    for (size_t g = 0; g < kgroups; g++, a += MR, b += NR) {
        const int8x16_t vb = vld1q_s8(b);
        const int16x8_t bh[2] = {vmovl_s8(vget_low_s8(vb)), vmovl_high_s8(vb)};
        uint32_t quad;
        memcpy(&quad, a, sizeof quad);
        const int16x4_t va =
            vget_low_s16(vreinterpretq_s16_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(quad)))));
        TILE_4X16_MAC(MAC)
    }
    tile_4x16_store(acc, c, ldc);
}
