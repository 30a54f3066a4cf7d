/* The register tile of the NEON int8 kernels: 4 rows x 16 int32 columns in
 * 16 accumulators, acc[row][quarter].  A kernel defines MAC(acc, q, r), the
 * multiply-accumulate of column quarter q by A's lane r, and runs it over the
 * tile with TILE_4X16_MAC: lanes of by-element instructions must be
 * constants, hence the rows written out. */
#ifndef ACL_INT8_TILE_4X16_H
#define ACL_INT8_TILE_4X16_H

#include <arm_neon.h>
#include <stddef.h>

#define MR 4
#define NR 16

#define TILE_4X16_MAC(MAC)              \
    for (int q = 0; q < 4; q++) {       \
        MAC(acc[0][q], q, 0);           \
        MAC(acc[1][q], q, 1);           \
        MAC(acc[2][q], q, 2);           \
        MAC(acc[3][q], q, 3);           \
    }

static inline void tile_4x16_store(int32x4_t acc[4][4], int32_t *c, size_t ldc)
{
    for (int r = 0; r < 4; r++)
        for (int q = 0; q < 4; q++) vst1q_s32(c + r * ldc + 4 * q, acc[r][q]);
}

#endif
