/* Hybrid micro-kernel template: A read in place through MR row pointers,
 * B packed as kc rows of NR floats (see ukernel.h).  smallk.h reuses it with
 * KMAX defined, which bounds K so that the whole K loop is unrolled. */

/* One lane vector per A row. */
#define A_LANE_VECTORS MR
#include "tile.h"

/* Row i's A value at step k + l, from its lane vector av[i]. */
#define A_ROW_LANE(i) A_LANE(av[i], l)
/* Row i's A value at step k, straight from memory. */
#define A_ROW(i) a[i][k]

#ifdef KMAX
#define K_UNROLL UNROLL
#else
#define K_UNROLL
#endif

void UKERNEL_NAME(size_t kc, const float *const *restrict a_rows, const float *restrict b,
                  float *restrict c, size_t ldc, const acl_ukr_epilogue *restrict ep)
{
#ifdef KMAX
    /* The bound GCC needs to unroll the K loop completely. */
    if (kc > KMAX) __builtin_unreachable();
#endif
    const float *a[MR];
    UNROLL for (int i = 0; i < MR; i++) a[i] = a_rows[i];
    TILE_DECLARE(ep->bias, ep->cols);
    size_t k = 0;
    K_UNROLL for (; k + A_LANES <= kc; k += A_LANES)
    {
        va av[MR];
        UNROLL for (int i = 0; i < MR; i++) av[i] = A_LOAD(a[i] + k);
        UNROLL for (int l = 0; l < A_LANES; l++) TILE_STEP(b + (k + l) * NR, A_ROW_LANE);
    }
    /* The last kc % A_LANES steps: A vectors would read past the rows. */
    UNROLL for (int r = 0; r < A_LANES - 1 && k < kc; r++, k++) TILE_STEP(b + k * NR, A_ROW);
    TILE_STORE(c, ldc, ep);
}
