/* Armv8.2 dotprod (Cortex-A55, A76): SDOT by element adds 4 int8 x int8
 * products into each int32 lane.  It is signed on both sides, so the u8
 * activations are flipped to a - 128 (xor of the top bit) and the
 * accumulators start from 128 * colsum(B), which restores sum a b exactly:
 * sum (a - 128) b + 128 sum b.  A K group is 4 B vectors (4 columns x 4 K
 * each) and one A vector (4 rows x 4 K); this file alone is compiled with
 * +dotprod, so the rest of the engine runs on any Armv8.0 core. */
#include "int8.h"
#include "tile_4x16.h"

#define MAC(acc, q, r) acc = vdotq_laneq_s32(acc, bq[q], va, r)

ACL_UKR_INT8(acl_ukr_int8_4x16c4_neondot)
{
    const int8_t *b = (const int8_t *)(b_panel + NR);
    int32x4_t acc[MR][4];
    for (int q = 0; q < 4; q++) {
        const int32x4_t start = vshlq_n_s32(vld1q_s32(b_panel + 4 * q), 7);
        for (int r = 0; r < MR; r++) acc[r][q] = start;
    }
    const uint8x16_t flip = vdupq_n_u8(0x80);
    for (size_t g = 0; g < kgroups; g++, a += MR * 4, b += NR * 4) {
        const int8x16_t va = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(a), flip));
        const int8x16_t bq[4] = {vld1q_s8(b), vld1q_s8(b + 16), vld1q_s8(b + 32), vld1q_s8(b + 48)};
        TILE_4X16_MAC(MAC)
    }
    tile_4x16_store(acc, c, ldc);
}
