/* Interleaved micro-kernel template: A comes packed as kc columns of MR
 * floats, B as kc rows of NR floats (see ukernel.h). */

/* A column is MR / 4 lane vectors; a ragged one cannot be loaded by lanes. */
#define A_LANE_VECTORS (MR % 4 ? 99 : MR / 4)
/* The tile macros compute interleaved_tile's constant column vectors. */
#define TILE_VECTORS vectors
#define TILE_HALVES halves
#include "tile.h"

/* Row i's value in the current A column, held in av. */
#define A_PACKED(i) A_LANE(av[(i) / A_LANES], (i) % A_LANES)

static inline __attribute__((always_inline)) void
interleaved_tile(const int vectors, const int halves, size_t kc, const float *restrict a,
                 const float *restrict b, float *restrict c, size_t ldc,
                 const acl_ukr_epilogue *restrict ep)
{
    TILE_DECLARE(ep->bias, ep->cols);
    for (size_t k = 0; k < kc; k++) {
        va av[MR / A_LANES];
        UNROLL for (int q = 0; q < MR / A_LANES; q++) av[q] = A_LOAD(a + q * A_LANES);
        TILE_STEP(b, A_PACKED);
        a += MR;
        b += NR;
    }
    TILE_STORE(c, ldc, ep);
}

void UKERNEL_NAME(size_t kc, const float *restrict a, const float *restrict b, float *restrict c,
                  size_t ldc, const acl_ukr_epilogue *restrict ep)
{
#define INTERLEAVED_WIDTH(vectors, halves) interleaved_tile(vectors, halves, kc, a, b, c, ldc, ep)
    TILE_BY_WIDTH(ep->cols, INTERLEAVED_WIDTH);
#undef INTERLEAVED_WIDTH
}
