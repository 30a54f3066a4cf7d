/* Collapsing a walk's shape (see walk.h). */
#include "walk.h"

/* Axis i (size n) continues the walk's last axis when every source steps
 * through the two as through one axis. */
static int continues_last(const graph_walk *w, const ptrdiff_t stride[][ACL_MAX_RANK], int i, int n)
{
    for (int s = 0; s < w->nsrc; s++)
        if (w->stride[s][w->rank - 1] != stride[s][i] * n) return 0;
    return 1;
}

void walk_init(graph_walk *w, int rank, const int *dims, int nsrc,
               const ptrdiff_t stride[][ACL_MAX_RANK])
{
    w->nsrc = nsrc;
    w->rank = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 1) continue;  /* never stepped along */
        if (w->rank > 0 && continues_last(w, stride, i, dims[i])) {
            w->dims[w->rank - 1] *= (size_t)dims[i];
        } else {
            w->dims[w->rank] = (size_t)dims[i];
            w->rank++;
        }
        for (int s = 0; s < nsrc; s++) w->stride[s][w->rank - 1] = stride[s][i];
    }
    if (w->rank == 0) {
        /* A single element: unit steps keep the contiguous fast paths valid. */
        w->rank = 1;
        w->dims[0] = 1;
        for (int s = 0; s < nsrc; s++) w->stride[s][0] = 1;
    }
}
