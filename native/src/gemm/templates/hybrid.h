/* Hybrid micro-kernel template: A read in place through MR row pointers,
 * B packed as kc rows of NR floats (see ukernel.h).  smallk.h reuses it with
 * KMAX defined, which bounds K so that the whole K loop is unrolled.
 *
 * Besides the MR-row kernel, UKERNEL_NAME_rows computes the first `rows`
 * (1..MR-1) rows of a tile, each row count its own unrolled code, so that
 * the last tile of an M that is no multiple of MR (a 7x7 layer's 49 rows:
 * one row after 48) costs its rows, not a whole tile. */

/* One lane vector per A row. */
#define A_LANE_VECTORS MR
/* The tile macros loop over hybrid_tile's constant rows and column vectors. */
#define TILE_ROWS rows
#define TILE_VECTORS vectors
#define TILE_HALVES halves
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

static inline __attribute__((always_inline)) void
hybrid_tile(const int rows, const int vectors, const int halves, size_t kc,
            const float *const *restrict a_rows, const float *restrict b, float *restrict c,
            size_t ldc, const acl_ukr_epilogue *restrict ep)
{
#ifdef KMAX
    /* The bound GCC needs to unroll the K loop completely. */
    if (kc > KMAX) __builtin_unreachable();
#endif
    const float *a[MR];
    UNROLL for (int i = 0; i < rows; i++) a[i] = a_rows[i];
    TILE_DECLARE(ep->bias, ep->cols);
    size_t k = 0;
    K_UNROLL for (; k + A_LANES <= kc; k += A_LANES)
    {
        va av[MR];
        UNROLL for (int i = 0; i < rows; i++) av[i] = A_LOAD(a[i] + k);
        UNROLL for (int l = 0; l < A_LANES; l++) TILE_STEP(b + (k + l) * NR, A_ROW_LANE);
    }
    /* The last kc % A_LANES steps: A vectors would read past the rows. */
    UNROLL for (int r = 0; r < A_LANES - 1 && k < kc; r++, k++) TILE_STEP(b + k * NR, A_ROW);
    TILE_STORE(c, ldc, ep);
}

void UKERNEL_NAME(size_t kc, const float *const *restrict a_rows, const float *restrict b,
                  float *restrict c, size_t ldc, const acl_ukr_epilogue *restrict ep)
{
#define HYBRID_WIDTH(vectors, halves) hybrid_tile(MR, vectors, halves, kc, a_rows, b, c, ldc, ep)
    TILE_BY_WIDTH(ep->cols, HYBRID_WIDTH);
#undef HYBRID_WIDTH
}

#define HYBRID_ROWS_NAME_(name) name##_rows
#define HYBRID_ROWS_NAME(name) HYBRID_ROWS_NAME_(name)
/* Each case below MR inlines hybrid_tile with its constant; the others fold away. */
#define HYBRID_ROWS_CASE(n)                                                    \
    case n:                                                                    \
        if ((n) < MR) hybrid_tile((n) < MR ? (n) : 1, NV, NH, kc, a_rows, b, c, ldc, ep); \
        break;

void HYBRID_ROWS_NAME(UKERNEL_NAME)(int rows, size_t kc, const float *const *restrict a_rows,
                                    const float *restrict b, float *restrict c, size_t ldc,
                                    const acl_ukr_epilogue *restrict ep)
{
    switch (rows) {
        HYBRID_ROWS_CASE(1)
        HYBRID_ROWS_CASE(2)
        HYBRID_ROWS_CASE(3)
        HYBRID_ROWS_CASE(4)
        HYBRID_ROWS_CASE(5)
        HYBRID_ROWS_CASE(6)
        HYBRID_ROWS_CASE(7)
        HYBRID_ROWS_CASE(8)
        HYBRID_ROWS_CASE(9)
        HYBRID_ROWS_CASE(10)
        HYBRID_ROWS_CASE(11)
        HYBRID_ROWS_CASE(12)
        HYBRID_ROWS_CASE(13)
        HYBRID_ROWS_CASE(14)
        HYBRID_ROWS_CASE(15)
    }
}
