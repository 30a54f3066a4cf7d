/* A walk over an output tensor in row-major order that carries the matching
 * offsets into up to two sources, each with its own precomputed strides (0
 * along an axis it is broadcast over).  Binary elementwise operations and
 * transposes are such walks.
 *
 * walk_init collapses the shape at add time: axes of size 1 are dropped and
 * neighbouring axes that every source steps through contiguously are merged,
 * so equal shapes become one flat axis and a per-channel operand two axes.
 * A run then handles whole innermost rows: walk_seek once per range, then
 * walk_row / walk_advance per row (walk_runs).
 */
#ifndef ACL_GRAPH_WALK_H
#define ACL_GRAPH_WALK_H

#include <stddef.h>

#include "aclgraph.h"

#define WALK_MAX_SOURCES 2

typedef struct {
    int rank;  /* >= 1 */
    int nsrc;
    size_t dims[ACL_MAX_RANK];
    ptrdiff_t stride[WALK_MAX_SOURCES][ACL_MAX_RANK];
} graph_walk;

typedef struct {
    size_t idx[ACL_MAX_RANK];
    ptrdiff_t off[WALK_MAX_SOURCES];
} walk_cursor;

/* dims: the output's; stride[s][i]: source s's step along output axis i. */
void walk_init(graph_walk *w, int rank, const int *dims, int nsrc,
               const ptrdiff_t stride[][ACL_MAX_RANK]);

/* Positions c at flat output index pos. */
static inline void walk_seek(const graph_walk *w, size_t pos, walk_cursor *c)
{
    for (int s = 0; s < w->nsrc; s++) c->off[s] = 0;
    for (int i = w->rank - 1; i >= 0; i--) {
        c->idx[i] = pos % w->dims[i];
        pos /= w->dims[i];
        for (int s = 0; s < w->nsrc; s++) c->off[s] += (ptrdiff_t)c->idx[i] * w->stride[s][i];
    }
}

/* Elements from c to the end of its innermost row. */
static inline size_t walk_row(const graph_walk *w, const walk_cursor *c)
{
    return w->dims[w->rank - 1] - c->idx[w->rank - 1];
}

/* Moves c forward by n <= walk_row() elements, carrying into outer axes. */
static inline void walk_advance(const graph_walk *w, walk_cursor *c, size_t n)
{
    int i = w->rank - 1;
    c->idx[i] += n;
    for (int s = 0; s < w->nsrc; s++) c->off[s] += (ptrdiff_t)n * w->stride[s][i];
    while (i > 0 && c->idx[i] == w->dims[i]) {
        c->idx[i] = 0;
        c->idx[i - 1]++;
        for (int s = 0; s < w->nsrc; s++)
            c->off[s] += w->stride[s][i - 1] - (ptrdiff_t)w->dims[i] * w->stride[s][i];
        i--;
    }
}

/* Calls run(ctx, pos, c, n) for each run of the output elements [begin, end)
 * that lies within one innermost row: n elements from output index pos, c
 * at the first of them (its sources' offsets in c->off). */
typedef void (*walk_run_fn)(const void *ctx, size_t pos, const walk_cursor *c, size_t n);
static inline void walk_runs(const graph_walk *w, size_t begin, size_t end, walk_run_fn run,
                             const void *ctx)
{
    walk_cursor c;
    walk_seek(w, begin, &c);
    for (size_t pos = begin; pos < end;) {
        size_t n = walk_row(w, &c);
        if (n > end - pos) n = end - pos;
        run(ctx, pos, &c, n);
        walk_advance(w, &c, n);
        pos += n;
    }
}

#endif
