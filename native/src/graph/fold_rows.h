/* Folding many rows of a few floats into one row (a sum, max or min down
 * each column) in blocks and pairs: the rows are taken FOLD_BLOCK at a
 * time in order, and the blocks' results are merged pairwise, as a binary
 * counter of partial results, so that a float32 sum's rounding error grows
 * with FOLD_BLOCK + log2(rows / FOLD_BLOCK) roundings, not with the number
 * of rows (160 x 160 = 25,600 rows: at most 16 + 11 roundings, not 25,599).
 * Every column is its own lane of a vector; the order of the additions
 * depends only on the row count, never on threads. */
#ifndef ACL_GRAPH_FOLD_ROWS_H
#define ACL_GRAPH_FOLD_ROWS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "aclgraph.h"

#define FOLD_BLOCK 16
#define FOLD_MAX_WIDTH 64
#define FOLD_LEVELS 48 /* merges of 2^48 blocks: more rows than memory holds */

static inline __attribute__((always_inline)) float fold_op(int op, float acc, float v)
{
    switch (op) {
    case ACL_REDUCE_MAX: return v > acc ? v : acc;
    case ACL_REDUCE_MIN: return v < acc ? v : acc;
    default: return acc + v;
    }
}

/* The columns are folded FOLD_LANES at a time in GCC vectors: GCC turns the
 * sums of a loop over the columns into vector adds, but leaves a max or min
 * scalar (one vmaxss per column), so ReduceMax and Softmax's row max ran at
 * a third of the speed of a sum. */
#define FOLD_LANES 16
#define FOLD_CHUNKS (FOLD_MAX_WIDTH / FOLD_LANES)
typedef float fold_vec __attribute__((vector_size(FOLD_LANES * sizeof(float))));
typedef int32_t fold_bits __attribute__((vector_size(FOLD_LANES * sizeof(float))));

static inline __attribute__((always_inline)) fold_vec fold_load(const float *x)
{
    fold_vec v;
    memcpy(&v, x, sizeof v);
    return v;
}

/* fold_op on every lane: the same choice, made with a mask. */
static inline __attribute__((always_inline)) fold_vec fold_vop(int op, fold_vec acc, fold_vec v)
{
    fold_bits take;
    switch (op) {
    case ACL_REDUCE_MAX: take = v > acc; break;
    case ACL_REDUCE_MIN: take = v < acc; break;
    default: return acc + v;
    }
    return (fold_vec)(((fold_bits)v & take) | ((fold_bits)acc & ~take));
}

/* acc = the row's w columns (first) or their fold into acc: whole chunks as
 * vectors, the last w % FOLD_LANES columns lane by lane (the lanes past w
 * stay 0). */
static inline __attribute__((always_inline)) void fold_into(int op, fold_vec *acc, const float *row,
                                                            int w, int first)
{
    const int whole = w / FOLD_LANES;
    for (int c = 0; c < whole; c++) {
        const fold_vec v = fold_load(row + c * FOLD_LANES);
        acc[c] = first ? v : fold_vop(op, acc[c], v);
    }
    if (w % FOLD_LANES == 0) return;
    if (first) acc[whole] = (fold_vec){0};
    for (int i = 0; i < w % FOLD_LANES; i++)
        acc[whole][i] = first ? row[whole * FOLD_LANES + i]
                              : fold_op(op, acc[whole][i], row[whole * FOLD_LANES + i]);
}

/* out[0, w) = the fold (sum for ACL_REDUCE_SUM and _MEAN, no scaling) of
 * rows [0, rows) of w <= FOLD_MAX_WIDTH floats, row r at x + r * stride;
 * rows >= 1.  Inlined, so a constant w keeps the columns in registers. */
static inline __attribute__((always_inline)) void fold_rows(int op, const float *x, size_t rows,
                                                            size_t stride, int w, float *out)
{
    const int chunks = (w + FOLD_LANES - 1) / FOLD_LANES;
    fold_vec level[FOLD_LEVELS][FOLD_CHUNKS];
    size_t blocks = 0;
    for (size_t r0 = 0; r0 < rows; r0 += FOLD_BLOCK, blocks++) {
        const size_t r1 = r0 + FOLD_BLOCK < rows ? r0 + FOLD_BLOCK : rows;
        fold_vec acc[FOLD_CHUNKS];
        const float *row = x + r0 * stride;
        fold_into(op, acc, row, w, 1);
        for (size_t r = r0 + 1; r < r1; r++) {
            row += stride;
            fold_into(op, acc, row, w, 0);
        }
        /* Block number `blocks` completes a pair at every level where its
         * bit is set: merge with the partial waiting there and carry up. */
        int l = 0;
        for (; (blocks >> l) & 1; l++)
            for (int c = 0; c < chunks; c++) acc[c] = fold_vop(op, level[l][c], acc[c]);
        memcpy(level[l], acc, (size_t)chunks * sizeof(fold_vec));
    }
    /* The partials left, one per set bit of the block count, smallest first. */
    int l = 0;
    while (!((blocks >> l) & 1)) l++;
    fold_vec result[FOLD_CHUNKS];
    memcpy(result, level[l], (size_t)chunks * sizeof(fold_vec));
    for (l++; l < FOLD_LEVELS && (blocks >> l); l++)
        if ((blocks >> l) & 1)
            for (int c = 0; c < chunks; c++) result[c] = fold_vop(op, level[l][c], result[c]);
    memcpy(out, result, (size_t)w * sizeof(float));
}

/* The max or min of n floats, n a nonzero multiple of FOLD_LANES, lane by
 * lane: four vectors at a time in four independent chains, so that the
 * comparisons overlap instead of each waiting for the one before (a max or
 * a min of numbers is the same in any order; 2.3x as fast as one chain on a
 * Softmax's 256-float rows). */
static inline __attribute__((always_inline)) fold_vec fold_extreme(int op, const float *x, size_t n)
{
    fold_vec a = fold_load(x);
    size_t i = FOLD_LANES;
    if (n >= 4 * FOLD_LANES) {
        fold_vec b = fold_load(x + FOLD_LANES), c = fold_load(x + 2 * FOLD_LANES),
                 d = fold_load(x + 3 * FOLD_LANES);
        for (i = 4 * FOLD_LANES; i + 4 * FOLD_LANES <= n; i += 4 * FOLD_LANES) {
            a = fold_vop(op, a, fold_load(x + i));
            b = fold_vop(op, b, fold_load(x + i + FOLD_LANES));
            c = fold_vop(op, c, fold_load(x + i + 2 * FOLD_LANES));
            d = fold_vop(op, d, fold_load(x + i + 3 * FOLD_LANES));
        }
        a = fold_vop(op, fold_vop(op, a, b), fold_vop(op, c, d));
    }
    for (; i < n; i += FOLD_LANES) a = fold_vop(op, a, fold_load(x + i));
    return a;
}

/* The lanes of v folded pairwise (lane i with lane i + half, half = 8, 4,
 * 2, 1), as vector operations on shuffled copies: kept as an array of
 * lanes, GCC did the halving through the stack (3.5% of a Softmax of
 * 256-float rows). */
static inline __attribute__((always_inline)) float fold_lanes(int op, fold_vec v)
{
    _Static_assert(FOLD_LANES == 16, "fold_lanes halves 16 lanes");
    v = fold_vop(
        op, v,
        __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15));
    v = fold_vop(op, v,
                 __builtin_shufflevector(v, v, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7));
    v = fold_vop(op, v,
                 __builtin_shufflevector(v, v, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3));
    v = fold_vop(op, v,
                 __builtin_shufflevector(v, v, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1));
    return v[0];
}

/* The fold of one contiguous row of len >= 1 floats: its whole rows of
 * FOLD_LANES columns folded (a sum by fold_rows' blocks and pairs), then the
 * lanes pairwise, then the last len % FOLD_LANES floats in order. */
static inline __attribute__((always_inline)) float fold_row(int op, const float *x, size_t len)
{
    size_t r = len / FOLD_LANES * FOLD_LANES;
    float acc = x[0];
    if (r > 0) {
        fold_vec v;
        if (op == ACL_REDUCE_MAX || op == ACL_REDUCE_MIN) {
            v = fold_extreme(op, x, r);
        } else {
            float lanes[FOLD_LANES];
            fold_rows(op, x, r / FOLD_LANES, FOLD_LANES, FOLD_LANES, lanes);
            v = fold_load(lanes);
        }
        acc = fold_lanes(op, v);
    } else {
        r = 1;
    }
    for (; r < len; r++) acc = fold_op(op, acc, x[r]);
    return acc;
}

#endif
