/* Transpose as a strided walk (walk.h) over the output: each output row reads
 * the input with the permuted stride of its innermost axis (a plain copy when
 * the permutation keeps that axis innermost). */
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"
#include "walk.h"

typedef struct {
    const float *x;
    float *y;
    size_t count;
    graph_walk walk;
} transpose_params;

static void transpose_rows(const void *arg, size_t begin, size_t end)
{
    const transpose_params *p = arg;
    const graph_walk *w = &p->walk;
    const ptrdiff_t step = w->stride[0][w->rank - 1];
    walk_cursor c;
    walk_seek(w, begin, &c);
    for (size_t pos = begin; pos < end;) {
        size_t n = walk_row(w, &c);
        if (n > end - pos) n = end - pos;
        const float *restrict x = p->x + c.off[0];
        float *restrict y = p->y + pos;
        if (step == 1)
            memcpy(y, x, n * sizeof *y);
        else
            for (size_t i = 0; i < n; i++) y[i] = x[(ptrdiff_t)i * step];
        walk_advance(w, &c, n);
        pos += n;
    }
}

static int transpose_run(const void *arg, const acl_exec *ex)
{
    const transpose_params *p = arg;
    return graph_parallel(ex, p->count, 1, transpose_rows, p);
}

int acl_graph_transpose(acl_graph *g, const int *perm, const acl_tensor *in,
                        const acl_tensor *out)
{
    if (!g) return acl_fail("transpose: no program given");
    size_t count;
    if (graph_check_tensor(g, "transpose", "input", in, &count) != 0 ||
        graph_check_tensor(g, "transpose", "output", out, &count) != 0)
        return -1;
    if (!perm && in->rank > 0) return acl_fail("transpose: no permutation given");
    int seen = 0, want[ACL_MAX_RANK];
    for (int i = 0; i < in->rank; i++) {
        if (perm[i] < 0 || perm[i] >= in->rank || (seen >> perm[i] & 1))
            return acl_fail("transpose: perm[%d] = %d: the perm must order each of the %d axes "
                            "once", i, perm[i], in->rank);
        seen |= 1 << perm[i];
        want[i] = in->dims[perm[i]];
    }
    if (graph_check_dims("transpose", "output", out, in->rank, want) != 0 ||
        graph_check_disjoint("transpose", out, "the input", in, 0) != 0)
        return -1;
    ptrdiff_t in_stride[ACL_MAX_RANK], stride[1][ACL_MAX_RANK];
    ptrdiff_t step = 1;
    for (int i = in->rank - 1; i >= 0; i--) {
        in_stride[i] = step;
        step *= in->dims[i];
    }
    for (int i = 0; i < in->rank; i++) stride[0][i] = in_stride[perm[i]];
    transpose_params *p = malloc(sizeof *p);
    if (!p) return acl_fail("transpose: out of memory");
    *p = (transpose_params){.x = graph_ptr(g, in), .y = graph_ptr(g, out), .count = count};
    walk_init(&p->walk, out->rank, out->dims, 1, stride);
    return graph_add(g, transpose_run, NULL, p);
}
