/* Gather with constant indices: each output row (one position of the dims
 * before the axis, one index) is the input's slice at that index, copied
 * whole; the rows are split over the cores. */
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

typedef struct {
    const float *x;
    float *y;
    size_t rows;    /* outer positions x indices */
    size_t inner;   /* floats of one slice: the dims after the axis */
    size_t extent;  /* the input's size along the axis */
    int n;
    int indices[];  /* n, made non-negative */
} gather_params;

static void gather_rows(const void *arg, size_t begin, size_t end)
{
    const gather_params *p = arg;
    for (size_t r = begin; r < end; r++) {
        const size_t outer = r / (size_t)p->n, index = (size_t)p->indices[r % (size_t)p->n];
        memcpy(p->y + r * p->inner, p->x + (outer * p->extent + index) * p->inner,
               p->inner * sizeof(float));
    }
}

static int gather_run(const void *arg, const acl_exec *ex)
{
    const gather_params *p = arg;
    return graph_parallel(ex, p->rows, p->inner, gather_rows, p);
}

int graph_op_gather(acl_graph *g, const acl_gather_attrs *a, int nin, const acl_tensor *in,
                    const acl_tensor *out)
{
    int axis = a->axis;
    const int n = a->indices_count;
    size_t count;
    if (graph_check_tensor(g, "gather", "input", in, &count) != 0 ||
        graph_check_tensor(g, "gather", "output", out, &count) != 0)
        return -1;
    if (axis < -in->rank || axis >= in->rank)
        return acl_fail("gather: axis %d is out of range for the input's rank %d", axis,
                        in->rank);
    if (axis < 0) axis += in->rank;
    if (n < 1 || !a->indices) return acl_fail("gather: no indices given");
    int want[ACL_MAX_RANK];
    memcpy(want, in->dims, sizeof want);
    want[axis] = n;
    if (graph_check_dims("gather", "output", out, in->rank, want) != 0 ||
        graph_check_disjoint("gather", out, "the input", in, 0) != 0)
        return -1;
    const int extent = in->dims[axis];
    gather_params *p = malloc(sizeof *p + (size_t)n * sizeof p->indices[0]);
    if (!p) return acl_fail("gather: out of memory");
    for (int i = 0; i < n; i++) {
        const int index = a->indices[i];
        if (index < -extent || index >= extent) {
            free(p);
            return acl_fail("gather: indices[%d] = %d is out of range for axis %d of size %d", i,
                            index, axis, extent);
        }
        p->indices[i] = index < 0 ? index + extent : index;
    }
    p->x = graph_ptr(g, in);
    p->y = graph_ptr(g, out);
    p->rows = graph_volume(in->dims, 0, axis) * (size_t)n;
    p->inner = graph_volume(in->dims, axis + 1, in->rank);
    p->extent = (size_t)extent;
    p->n = n;
    return graph_add(g, gather_run, NULL, p);
}
