/* Folding many rows of a few floats into one row (a sum, max or min down
 * each column) in blocks and pairs: the rows are taken FOLD_BLOCK at a
 * time in order, and the blocks' results are merged pairwise, as a binary
 * counter of partial results, so that a float32 sum's rounding error grows
 * with FOLD_BLOCK + log2(rows / FOLD_BLOCK) roundings, not with the number
 * of rows (160 x 160 = 25,600 rows: at most 16 + 11 roundings, not 25,599).
 * Every column is its own lane, so each loop vectorises along the row; the
 * order of the additions depends only on the row count, never on threads. */
#ifndef ACL_GRAPH_FOLD_ROWS_H
#define ACL_GRAPH_FOLD_ROWS_H

#include <stddef.h>
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

/* out[0, w) = the fold (sum for ACL_REDUCE_SUM and _MEAN, no scaling) of
 * rows [0, rows) of w <= FOLD_MAX_WIDTH floats, row r at x + r * stride;
 * rows >= 1.  Inlined, so a constant w keeps the columns in registers. */
static inline __attribute__((always_inline)) void fold_rows(int op, const float *x,
                                                            size_t rows, size_t stride, int w,
                                                            float *out)
{
    float level[FOLD_LEVELS][FOLD_MAX_WIDTH];
    size_t blocks = 0;
    for (size_t r0 = 0; r0 < rows; r0 += FOLD_BLOCK, blocks++) {
        const size_t r1 = r0 + FOLD_BLOCK < rows ? r0 + FOLD_BLOCK : rows;
        float acc[FOLD_MAX_WIDTH];
        const float *row = x + r0 * stride;
        for (int i = 0; i < w; i++) acc[i] = row[i];
        for (size_t r = r0 + 1; r < r1; r++) {
            row += stride;
            for (int i = 0; i < w; i++) acc[i] = fold_op(op, acc[i], row[i]);
        }
        /* Block number `blocks` completes a pair at every level where its
         * bit is set: merge with the partial waiting there and carry up. */
        int l = 0;
        for (; (blocks >> l) & 1; l++)
            for (int i = 0; i < w; i++) acc[i] = fold_op(op, level[l][i], acc[i]);
        memcpy(level[l], acc, (size_t)w * sizeof(float));
    }
    /* The partials left, one per set bit of the block count, smallest first. */
    int l = 0;
    while (!((blocks >> l) & 1)) l++;
    memcpy(out, level[l], (size_t)w * sizeof(float));
    for (l++; l < FOLD_LEVELS && (blocks >> l); l++)
        if ((blocks >> l) & 1)
            for (int i = 0; i < w; i++) out[i] = fold_op(op, level[l][i], out[i]);
}

/* A contiguous row is folded as rows of FOLD_LANES columns, then the lanes
 * pairwise. */
#define FOLD_LANES 16

/* The fold of one contiguous row of len >= 1 floats: its whole rows of lanes
 * folded, then the lanes pairwise, then the last len % FOLD_LANES floats in
 * order. */
static inline __attribute__((always_inline)) float fold_row(int op, const float *x, size_t len)
{
    size_t r = len / FOLD_LANES * FOLD_LANES;
    float acc = x[0];
    if (r > 0) {
        float lanes[FOLD_LANES];
        fold_rows(op, x, r / FOLD_LANES, FOLD_LANES, FOLD_LANES, lanes);
        for (int half = FOLD_LANES / 2; half >= 1; half /= 2)
            for (int i = 0; i < half; i++) lanes[i] = fold_op(op, lanes[i], lanes[i + half]);
        acc = lanes[0];
    } else {
        r = 1;
    }
    for (; r < len; r++) acc = fold_op(op, acc, x[r]);
    return acc;
}

#endif
